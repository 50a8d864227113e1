//! NPU hardware abstraction: the [`NpuDevice`] trait and the deterministic
//! [`StubNpu`] used on the host and on boards without an NPU.
//!
//! State machine of every device:
//!
//! ```text
//! Off --init--> Idle --invoke_async--> Busy --poll/complete--> Idle
//!                 |  \--invoke fails--> Error --clear_error--> Idle
//!                 \--suspend--> Suspended --resume--> Idle
//! any --deinit--> Off
//! ```
//!
//! The trait takes a model *descriptor* (flash offset and size, tensor
//! metadata), not a Rust model object, and copies input and output through
//! byte slices, so a real driver (eIQ Neutron, Ethos-U) fits behind it: a
//! driver may complete [`NpuDevice::invoke_async`] from its interrupt and
//! make [`NpuDevice::poll`] a no-op.
//!
//! # The stub's device model
//!
//! * **Output** is a pure function of (seed, model id, input), see
//!   [`stub_output_byte`]: byte `i` of the output is
//!   `fmix32(h ^ i.wrapping_mul(0x9E37_79B9)) >> 24`, where `h` is 32-bit
//!   FNV-1a over the seed (4 bytes LE), the model id (4 bytes LE) and the
//!   input bytes, and `fmix32` is MurmurHash3's finaliser. Read as `i8` it is
//!   a stable pseudo-random int8 tensor: the same input always gives the same
//!   output, a one-bit change gives a different one.
//! * **Latency** is a fixed number of microseconds per invoke
//!   ([`StubNpu::set_latency_us`]), consumed through the [`Delay`] time
//!   source by [`NpuDevice::invoke`] (a fake clock simply advances) and
//!   measured against the [`Clock`] by the asynchronous path.
//!   The stub keeps no tensor: `set_input` reduces the input to that hash
//!   (and the byte sum and first byte its other rules read), and
//!   `get_output` computes the output from the digest of the last
//!   completed run, so it costs a few words of RAM whatever sizes it
//!   accepts.
//! * **Null mode** ([`StubNpu::set_null`]), for measuring what surrounds the
//!   device: `set_input` checks the length but reads nothing, every
//!   invoke takes the same latency, and `get_output` checks the buffer and
//!   reports the output length but writes nothing (the buffer keeps what
//!   it held). No work is done on the data in either direction, so a
//!   benchmark through it measures the transport's share alone.
//! * **Command queue** ([`StubNpu::set_command_queue`], off by default),
//!   as NPUs with a command ring have: while one run is in flight, one
//!   more command (its input staged with `set_input`, then
//!   `invoke_async`) may be queued for the loaded model. It starts the
//!   moment the running one ends, in device time, whenever `poll` is
//!   called; `poll` completes one run per call, and the completed run's
//!   output stays readable with `get_output` while the next one runs,
//!   until the next completion. A fault drops the queued command (without
//!   its callback; the caller puts it back), as [`NpuDevice::withdraw`]
//!   does on request.
//! * **Faults** on demand: every `n`th invoke ([`StubNpu::fail_every`]), and,
//!   when enabled with [`StubNpu::fail_on_marker`], any input whose first
//!   byte is [`FAIL_MARKER`] (`0x7F`). A failed invoke returns
//!   [`NpuError::DeviceFault`] and leaves the device in
//!   [`NpuState::Error`] until [`NpuDevice::clear_error`].

use core::num::NonZeroU32;

use synaptic_abi::Errno;

use crate::arena::{DType, TensorMeta};
use crate::time::{Clock, Delay};

/// Power and activity state of an NPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpuState {
    /// Not initialised (before `init`, after `deinit`).
    Off,
    /// Ready for a model, an input or an invoke.
    Idle,
    /// An asynchronous invoke is in flight.
    Busy,
    /// The last invoke failed; `clear_error` returns to `Idle`.
    Error,
    /// Clocks gated; `resume` returns to `Idle`. The loaded model is kept.
    Suspended,
}

/// What a device can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpuCapabilities {
    /// Largest input tensor in bytes.
    pub max_input_bytes: usize,
    /// Largest output tensor in bytes.
    pub max_output_bytes: usize,
    /// Element types the device accepts, one bit per [`DType`] in declaration order.
    pub dtype_mask: u8,
    /// Whether [`NpuDevice::invoke_async`] completes without blocking.
    pub async_invoke: bool,
    /// Whether an asynchronous invoke progresses only inside
    /// [`NpuDevice::poll`], a bounded slice of work per call, on the
    /// caller's core (the CPU interpreter,
    /// [`TfliteDevice`](crate::device::TfliteDevice)); `false` for a device
    /// that progresses by itself (an NPU). The scheduler starts a sliced CPU
    /// device asynchronously in overlap mode and polls it every step,
    /// counting each slice as work done; a device that is not sliced is run
    /// synchronously when it is the CPU device, as before.
    pub sliced: bool,
    /// Models resident at once.
    pub max_resident_models: u8,
    /// Commands the device holds at once: 1, or more for a device with a
    /// command queue. With room in its queue, a `Busy` device accepts
    /// [`NpuDevice::set_input`] and [`NpuDevice::invoke_async`] for its
    /// loaded model and runs them back to back; [`NpuDevice::poll`]
    /// completes one per call, and [`NpuDevice::get_output`] gives the
    /// last completed run's output while the next runs
    /// ([`NpuDevice::in_flight`] counts what is accepted and not done).
    pub queue_depth: u8,
}

impl NpuCapabilities {
    /// The bit of `dtype` in [`NpuCapabilities::dtype_mask`].
    pub const fn dtype_bit(dtype: DType) -> u8 {
        1 << (dtype as u8)
    }

    /// Whether `dtype` is supported.
    pub const fn supports(&self, dtype: DType) -> bool {
        self.dtype_mask & Self::dtype_bit(dtype) != 0
    }
}

/// A model as the device sees it: where its image lives and its tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpuModel {
    /// Caller-chosen identity (the registry passes its raw handle).
    pub id: u32,
    /// Input tensor.
    pub input: TensorMeta,
    /// Output tensor.
    pub output: TensorMeta,
    /// Offset of the compiled model in flash.
    pub flash_offset: u32,
    /// Size of the compiled model in flash.
    pub flash_size: u32,
    /// The model's image where a device reads it in place (the CPU
    /// interpreter's `.tflite` flatbuffer); empty for a device that loads
    /// from `flash_offset` (the stub ignores it).
    pub image: &'static [u8],
}

/// Result of one completed invoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpuRun {
    /// Device time the invoke took, in microseconds.
    pub latency_us: u64,
}

/// Completion callback of [`NpuDevice::invoke_async`]: `(context, result)`.
pub type NpuCallback = fn(usize, Result<NpuRun, NpuError>);

/// Errors of an NPU device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NpuError {
    /// The operation is not allowed in the current state.
    WrongState(NpuState),
    /// No model is loaded.
    NoModel,
    /// A tensor of the model exceeds the device's buffers.
    ModelTooLarge,
    /// A tensor of the model has an element type the device lacks.
    UnsupportedDtype(DType),
    /// The input length differs from the loaded model's input size.
    InputSizeMismatch {
        /// Bytes the model takes.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// `invoke` without `set_input` since the model was loaded.
    NoInput,
    /// `get_output` before a successful invoke.
    NoOutput,
    /// The caller's output buffer is shorter than the model's output.
    OutputTooSmall {
        /// Bytes the output has.
        needed: usize,
        /// Bytes the buffer has.
        actual: usize,
    },
    /// The device reported a fault (the stub's injected failures too).
    DeviceFault,
    /// The model's image is missing, malformed, or disagrees with the
    /// registered tensors (the CPU interpreter validates it on load).
    InvalidImage,
}

impl NpuError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            NpuError::WrongState(NpuState::Off) => Errno::NoDev,
            NpuError::WrongState(NpuState::Busy) => Errno::Busy,
            NpuError::WrongState(NpuState::Suspended) => Errno::Again,
            NpuError::WrongState(_) | NpuError::DeviceFault => Errno::Io,
            NpuError::NoModel | NpuError::NoOutput => Errno::NoEnt,
            NpuError::ModelTooLarge => Errno::TooBig,
            NpuError::UnsupportedDtype(_) => Errno::NotSup,
            NpuError::InputSizeMismatch { .. } | NpuError::NoInput => Errno::Inval,
            NpuError::OutputTooSmall { .. } => Errno::NoBufs,
            NpuError::InvalidImage => Errno::NoExec,
        }
    }
}

/// The NPU hardware abstraction.
pub trait NpuDevice {
    /// Powers up and enters `Idle`.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] when already initialised; driver faults.
    fn init(&mut self) -> Result<(), NpuError>;

    /// Powers down (drops the model and any in-flight work) and enters `Off`.
    fn deinit(&mut self);

    /// What the device can do.
    fn capabilities(&self) -> NpuCapabilities;

    /// Current state.
    fn state(&self) -> NpuState;

    /// Makes `model` the resident model, replacing any other.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Idle`; [`NpuError::ModelTooLarge`],
    /// [`NpuError::UnsupportedDtype`] when the device cannot run it.
    fn load_model(&mut self, model: &NpuModel) -> Result<(), NpuError>;

    /// Whether the device could run `model` (a check, nothing loaded):
    /// what a new version must pass before it replaces one the device
    /// serves. By default its tensors against [`capabilities`]: element
    /// types and sizes; a device that reads the image checks the image.
    ///
    /// # Errors
    ///
    /// As [`load_model`](Self::load_model) for a model it cannot run.
    ///
    /// [`capabilities`]: Self::capabilities
    fn can_run(&self, model: &NpuModel) -> Result<(), NpuError> {
        let caps = self.capabilities();
        for (t, max) in [
            (model.input, caps.max_input_bytes),
            (model.output, caps.max_output_bytes),
        ] {
            if !caps.supports(t.dtype) {
                return Err(NpuError::UnsupportedDtype(t.dtype));
            }
            if t.byte_len() > max {
                return Err(NpuError::ModelTooLarge);
            }
        }
        Ok(())
    }

    /// Drops the resident model (no-op without one).
    fn unload_model(&mut self);

    /// Id of the resident model.
    fn loaded_model(&self) -> Option<u32>;

    /// Copies the input tensor into the device.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Idle` (or `Busy` with room in its
    /// queue, [`NpuCapabilities::queue_depth`]); [`NpuError::NoModel`];
    /// [`NpuError::InputSizeMismatch`].
    fn set_input(&mut self, input: &[u8]) -> Result<(), NpuError>;

    /// Runs the model on the staged input and blocks until done.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`], [`NpuError::NoModel`], [`NpuError::NoInput`];
    /// [`NpuError::DeviceFault`] (the device is then in `Error`).
    fn invoke(&mut self) -> Result<NpuRun, NpuError>;

    /// Starts the model and returns; `done(context, result)` is called on
    /// completion (from [`NpuDevice::poll`] or the driver's interrupt).
    ///
    /// # Errors
    ///
    /// As [`NpuDevice::invoke`], for the checks made before starting.
    fn invoke_async(&mut self, done: NpuCallback, context: usize) -> Result<(), NpuError>;

    /// Completes an asynchronous invoke whose time has come; returns
    /// whether one completed during this call.
    fn poll(&mut self) -> bool;

    /// Copies the output of the last successful invoke; returns its length.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Idle` (or `Busy` with a queue);
    /// [`NpuError::NoOutput`]; [`NpuError::OutputTooSmall`].
    fn get_output(&mut self, output: &mut [u8]) -> Result<usize, NpuError>;

    /// Gates the clocks; the model stays loaded.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Idle`.
    fn suspend(&mut self) -> Result<(), NpuError>;

    /// Leaves `Suspended`.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Suspended`.
    fn resume(&mut self) -> Result<(), NpuError>;

    /// Leaves `Error` after a failed invoke.
    ///
    /// # Errors
    ///
    /// [`NpuError::WrongState`] unless `Error`.
    fn clear_error(&mut self) -> Result<(), NpuError>;

    /// Abandons the asynchronous invoke in flight, if the device can:
    /// returns `true` when it did (the device is then `Idle`, without an
    /// output, and its callback is not called). The default cannot: a
    /// device that runs by itself finishes and its result is dropped. A
    /// sliced device implements it, so that a cancelled job does not keep
    /// taking slices of the CPU.
    fn abort(&mut self) -> bool {
        false
    }

    /// The last completed invoke's device time, when the device measures it
    /// itself (a driver that stamps its completion interrupt, a cycle
    /// counter); `None` after a failed invoke, and by default. The
    /// scheduler learns a model's service time from it rather than from
    /// when it collected the run: a CPU slice on the serving thread can
    /// delay the collection by a whole slice.
    fn last_run(&self) -> Option<NpuRun> {
        None
    }

    /// Asynchronous invokes accepted and not yet completed: 1 while `Busy`
    /// by default; up to [`NpuCapabilities::queue_depth`] for a device with
    /// a command queue, where it tells a completion the state does not
    /// (the device stays `Busy` with the next run).
    fn in_flight(&self) -> u8 {
        u8::from(self.state() == NpuState::Busy)
    }

    /// Takes back the command queued behind the running one: returns
    /// whether there was one (its callback is not called). The default
    /// has no queue.
    fn withdraw(&mut self) -> bool {
        false
    }
}

/// Forwards [`NpuDevice`] methods unchanged to a field: a wrapper device
/// that changes a few of them names, inside its `impl NpuDevice`, the field
/// and the methods it does not change. The signatures live here once.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::forward_npu_device;
/// use synaptic_runtime::npu::{NpuCapabilities, NpuDevice, NpuState, StubNpu};
/// use synaptic_runtime::time::FakeClock;
///
/// /// A stub that says it is sliced; everything else is the stub's.
/// struct Sliced<'c>(StubNpu<&'c FakeClock>);
///
/// impl NpuDevice for Sliced<'_> {
///     forward_npu_device!(0: init, deinit, state, load_model, unload_model,
///         loaded_model, set_input, invoke, invoke_async, poll, get_output,
///         suspend, resume, clear_error, abort, last_run, in_flight, withdraw);
///     fn capabilities(&self) -> NpuCapabilities {
///         NpuCapabilities { sliced: true, ..self.0.capabilities() }
///     }
/// }
///
/// let clock = FakeClock::new(0);
/// let mut device = Sliced(StubNpu::new(&clock, 1));
/// device.init().unwrap();
/// assert_eq!(device.state(), NpuState::Idle);
/// assert!(device.capabilities().sliced);
/// ```
#[macro_export]
macro_rules! forward_npu_device {
    ($field:tt: $($method:ident),+ $(,)?) => {
        $($crate::forward_npu_device!(@ $field $method);)+
    };
    (@ $f:tt init) => {
        fn init(&mut self) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.init()
        }
    };
    (@ $f:tt deinit) => {
        fn deinit(&mut self) {
            self.$f.deinit()
        }
    };
    (@ $f:tt capabilities) => {
        fn capabilities(&self) -> $crate::npu::NpuCapabilities {
            self.$f.capabilities()
        }
    };
    (@ $f:tt state) => {
        fn state(&self) -> $crate::npu::NpuState {
            self.$f.state()
        }
    };
    (@ $f:tt can_run) => {
        fn can_run(
            &self,
            model: &$crate::npu::NpuModel,
        ) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.can_run(model)
        }
    };
    (@ $f:tt load_model) => {
        fn load_model(
            &mut self,
            model: &$crate::npu::NpuModel,
        ) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.load_model(model)
        }
    };
    (@ $f:tt unload_model) => {
        fn unload_model(&mut self) {
            self.$f.unload_model()
        }
    };
    (@ $f:tt loaded_model) => {
        fn loaded_model(&self) -> ::core::option::Option<u32> {
            self.$f.loaded_model()
        }
    };
    (@ $f:tt set_input) => {
        fn set_input(&mut self, input: &[u8]) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.set_input(input)
        }
    };
    (@ $f:tt invoke) => {
        fn invoke(
            &mut self,
        ) -> ::core::result::Result<$crate::npu::NpuRun, $crate::npu::NpuError> {
            self.$f.invoke()
        }
    };
    (@ $f:tt invoke_async) => {
        fn invoke_async(
            &mut self,
            done: $crate::npu::NpuCallback,
            context: usize,
        ) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.invoke_async(done, context)
        }
    };
    (@ $f:tt poll) => {
        fn poll(&mut self) -> bool {
            self.$f.poll()
        }
    };
    (@ $f:tt get_output) => {
        fn get_output(
            &mut self,
            output: &mut [u8],
        ) -> ::core::result::Result<usize, $crate::npu::NpuError> {
            self.$f.get_output(output)
        }
    };
    (@ $f:tt suspend) => {
        fn suspend(&mut self) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.suspend()
        }
    };
    (@ $f:tt resume) => {
        fn resume(&mut self) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.resume()
        }
    };
    (@ $f:tt clear_error) => {
        fn clear_error(&mut self) -> ::core::result::Result<(), $crate::npu::NpuError> {
            self.$f.clear_error()
        }
    };
    (@ $f:tt abort) => {
        fn abort(&mut self) -> bool {
            self.$f.abort()
        }
    };
    (@ $f:tt last_run) => {
        fn last_run(&self) -> ::core::option::Option<$crate::npu::NpuRun> {
            self.$f.last_run()
        }
    };
    (@ $f:tt in_flight) => {
        fn in_flight(&self) -> u8 {
            self.$f.in_flight()
        }
    };
    (@ $f:tt withdraw) => {
        fn withdraw(&mut self) -> bool {
            self.$f.withdraw()
        }
    };
}

/// First input byte that makes the stub fail when [`StubNpu::fail_on_marker`] is on.
pub const FAIL_MARKER: u8 = 0x7F;

/// Default largest input a stub accepts, bytes (a 96x96x3 frame fits).
pub const DEFAULT_STUB_INPUT: usize = 32 * 1024;

/// Default largest output a stub gives, bytes.
pub const DEFAULT_STUB_OUTPUT: usize = 1024;

/// MurmurHash3's 32-bit finaliser.
const fn fmix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 13;
    x = x.wrapping_mul(0xC2B2_AE35);
    x ^= x >> 16;
    x
}

fn fnv1a(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The stub's input hash `h`: FNV-1a (offset basis `0x811C_9DC5`) over
/// `seed` LE, `model_id` LE, then `input`.
pub fn stub_input_hash(seed: u32, model_id: u32, input: &[u8]) -> u32 {
    let h = fnv1a(0x811C_9DC5, &seed.to_le_bytes());
    let h = fnv1a(h, &model_id.to_le_bytes());
    fnv1a(h, input)
}

/// Byte `index` of the stub's output for `input_hash` (see [`stub_input_hash`]).
pub const fn stub_output_byte(input_hash: u32, index: u32) -> u8 {
    (fmix32(input_hash ^ index.wrapping_mul(0x9E37_79B9)) >> 24) as u8
}

/// Fills `input` with deterministic test tensor number `seq` (an xorshift
/// sequence: every `seq` differs, so a stale output cannot pass for a
/// fresh one) whose first byte is never [`FAIL_MARKER`]. For tests and
/// simulations that check outputs against [`stub_output`].
pub fn test_input(seq: u32, input: &mut [u8]) {
    let mut x = seq.wrapping_mul(0x9E37_79B9) | 1;
    for chunk in input.chunks_mut(4) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    if input.first() == Some(&FAIL_MARKER) {
        input[0] = 0;
    }
}

/// Fills `output` by the reference implementation's stub rule (see
/// [`StubNpu::set_reference_rule`]): all zeros but byte
/// `sum(input) % output.len()`, which is 127.
pub fn reference_output(input: &[u8], output: &mut [u8]) {
    output.fill(0);
    if output.is_empty() {
        return;
    }
    let sum = input
        .iter()
        .fold(0u32, |acc, &b| acc.wrapping_add(u32::from(b)));
    output[sum as usize % output.len()] = 127;
}

/// Fills `output` with the stub's output for (`seed`, `model_id`, `input`).
pub fn stub_output(seed: u32, model_id: u32, input: &[u8], output: &mut [u8]) {
    let h = stub_input_hash(seed, model_id, input);
    for (i, o) in output.iter_mut().enumerate() {
        *o = stub_output_byte(h, i as u32);
    }
}

/// What the stub keeps of a staged input: everything its output rules and
/// its fault injection read. Neither the input nor an output is stored: an
/// output is computed from the digest of its run when it is read, so a
/// stub costs a few words of RAM whatever tensor sizes it accepts.
#[derive(Clone, Copy, Debug)]
struct Digest {
    /// [`stub_input_hash`] of (seed, model id, input); 0 in null mode.
    hash: u32,
    /// Sum of the input bytes, for the reference rule; 0 in null mode.
    sum: u32,
    /// Whether the input starts with [`FAIL_MARKER`].
    marked: bool,
}

/// An accepted asynchronous invoke.
#[derive(Clone, Copy, Debug)]
struct Command {
    digest: Digest,
    callback: NpuCallback,
    context: usize,
}

/// The command running, and when it is done (0: at once).
#[derive(Clone, Copy, Debug)]
struct Pending {
    done_at_us: u64,
    command: Command,
}

/// The deterministic stub NPU (see the module documentation for its exact model).
///
/// `T` is the time source (a [`crate::time::FakeClock`] reference on the
/// host); `IN` and `OUT` bound the model's input and output bytes.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::arena::{DType, TensorMeta};
/// use synaptic_runtime::npu::{stub_output, NpuDevice, NpuModel, StubNpu};
/// use synaptic_runtime::time::{Clock, FakeClock};
///
/// let clock = FakeClock::new(0);
/// let mut npu: StubNpu<&FakeClock, 64, 16> = StubNpu::new(&clock, 0);
/// npu.set_latency_us(250);
/// npu.init().unwrap();
/// let model = NpuModel {
///     id: 1,
///     input: TensorMeta::vector(DType::Int8, 4).unwrap(),
///     output: TensorMeta::vector(DType::Int8, 3).unwrap(),
///     flash_offset: 0,
///     flash_size: 0,
///     image: &[],
/// };
/// npu.load_model(&model).unwrap();
/// npu.set_input(&[1, 2, 3, 4]).unwrap();
/// npu.invoke().unwrap();
/// assert_eq!(clock.now_us(), 250);
/// let mut out = [0u8; 3];
/// npu.get_output(&mut out).unwrap();
/// let mut expected = [0u8; 3];
/// stub_output(0, 1, &[1, 2, 3, 4], &mut expected);
/// assert_eq!(out, expected);
/// ```
#[derive(Debug)]
pub struct StubNpu<T, const IN: usize = DEFAULT_STUB_INPUT, const OUT: usize = DEFAULT_STUB_OUTPUT>
{
    time: T,
    seed: u32,
    state: NpuState,
    model: Option<NpuModel>,
    /// The input staged for the next invoke.
    staged: Option<Digest>,
    /// The last completed run's input: its output is readable.
    last: Option<Digest>,
    latency_us: u64,
    fail_every: Option<NonZeroU32>,
    fail_on_marker: bool,
    null: bool,
    reference_rule: bool,
    invokes: u32,
    pending: Option<Pending>,
    /// The command queued behind `pending` ([`StubNpu::set_command_queue`]).
    queued: Option<Command>,
    /// `false` by default. One byte (in the struct's padding), no more:
    /// firmware builds the stub in place in a zeroed static, which a
    /// larger value has been seen to turn into a copy through the stack.
    untimed: bool,
    /// A command queue of two; `false` by default (same reason).
    queue: bool,
}

impl<T: Clock + Delay, const IN: usize, const OUT: usize> StubNpu<T, IN, OUT> {
    /// A stub in state `Off`, latency 0, no fault injection, no command
    /// queue. `const`, so a firmware can keep it in a static.
    pub const fn new(time: T, seed: u32) -> Self {
        StubNpu {
            time,
            seed,
            state: NpuState::Off,
            model: None,
            staged: None,
            last: None,
            latency_us: 0,
            fail_every: None,
            fail_on_marker: false,
            null: false,
            reference_rule: false,
            invokes: 0,
            pending: None,
            queued: None,
            untimed: false,
            queue: false,
        }
    }

    /// Sets the seed of the output function (see the module docs).
    pub fn set_seed(&mut self, seed: u32) {
        self.seed = seed;
    }

    /// Whether the stub reports each run's device time
    /// ([`NpuDevice::last_run`]: its latency), as a driver that stamps its
    /// completion interrupt does; on from [`StubNpu::new`]. Off, it models
    /// a device that does not, which the scheduler times to collection.
    pub fn set_timed(&mut self, timed: bool) {
        self.untimed = !timed;
    }

    /// Null mode: no work on the data (no input hash, no output write; see
    /// the module docs).
    pub fn set_null(&mut self, null: bool) {
        self.null = null;
    }

    /// The reference implementation's output rule instead of the hash
    /// ([`reference_output`]: a one-hot int8 tensor at
    /// `sum(input bytes) % output bytes`, value 127), so C programs written
    /// against the reference's stub see the same classes.
    pub fn set_reference_rule(&mut self, enabled: bool) {
        self.reference_rule = enabled;
    }

    /// A command queue of two (off by default; see the module docs): while
    /// `Busy` with the queue empty, the device accepts `set_input` and
    /// `invoke_async` for the loaded model and starts that run the moment
    /// the running one ends, in device time. Turning it off drops nothing:
    /// a command already queued still runs.
    pub fn set_command_queue(&mut self, enabled: bool) {
        self.queue = enabled;
    }

    /// Sets the device time each invoke takes.
    pub fn set_latency_us(&mut self, latency_us: u64) {
        self.latency_us = latency_us;
    }

    /// The device time each invoke takes.
    pub fn latency_us(&self) -> u64 {
        self.latency_us
    }

    /// Makes every `n`th invoke (counting from 1 since creation) fail; `None` never.
    pub fn fail_every(&mut self, n: Option<NonZeroU32>) {
        self.fail_every = n;
    }

    /// Makes invokes whose input starts with [`FAIL_MARKER`] fail.
    pub fn fail_on_marker(&mut self, enabled: bool) {
        self.fail_on_marker = enabled;
    }

    /// Invokes attempted so far (failed ones included).
    pub fn invoke_count(&self) -> u32 {
        self.invokes
    }

    /// The seed of the output function.
    pub fn seed(&self) -> u32 {
        self.seed
    }

    fn expect(&self, state: NpuState) -> Result<(), NpuError> {
        if self.state == state {
            Ok(())
        } else {
            Err(NpuError::WrongState(self.state))
        }
    }

    /// Whether a command may be staged and started now: `Idle`, or `Busy`
    /// with room in the queue.
    fn accepts(&self) -> Result<(), NpuError> {
        match self.state {
            NpuState::Busy if self.queue && self.queued.is_none() => Ok(()),
            _ => self.expect(NpuState::Idle),
        }
    }

    /// The staged input of an invoke that may start now. Inlined: a
    /// `Result` of the digest would be copied byte-wise through the stack
    /// (two `memcpy` calls per invoke, seen in an emulated trace).
    #[inline(always)]
    fn ready_input(&self) -> Result<Digest, NpuError> {
        self.accepts()?;
        match (&self.model, self.staged) {
            (None, _) => Err(NpuError::NoModel),
            (Some(_), None) => Err(NpuError::NoInput),
            (Some(_), Some(digest)) => Ok(digest),
        }
    }

    /// When a run started at `from_us` is done (0: at once, no clock read).
    fn due(&self, from_us: u64) -> u64 {
        match self.latency_us {
            0 => 0,
            us => from_us.saturating_add(us),
        }
    }

    /// The result of a run of the loaded model on `digest`: a fault (the
    /// device is then in `Error`, and a queued command is dropped), or
    /// its output made readable.
    fn execute(&mut self, digest: Digest) -> Result<NpuRun, NpuError> {
        if self.model.is_none() {
            return Err(NpuError::NoModel);
        }
        self.invokes = self.invokes.wrapping_add(1);
        let every = self.fail_every.is_some_and(|n| self.invokes % n.get() == 0);
        if every || (self.fail_on_marker && digest.marked) {
            self.state = NpuState::Error;
            self.last = None;
            self.queued = None;
            return Err(NpuError::DeviceFault);
        }
        self.last = Some(digest);
        Ok(NpuRun {
            latency_us: self.latency_us,
        })
    }
}

impl<T: Clock + Delay, const IN: usize, const OUT: usize> NpuDevice for StubNpu<T, IN, OUT> {
    fn init(&mut self) -> Result<(), NpuError> {
        self.expect(NpuState::Off)?;
        self.state = NpuState::Idle;
        Ok(())
    }

    fn deinit(&mut self) {
        self.state = NpuState::Off;
        self.model = None;
        self.staged = None;
        self.last = None;
        self.pending = None;
        self.queued = None;
    }

    fn capabilities(&self) -> NpuCapabilities {
        NpuCapabilities {
            max_input_bytes: IN,
            max_output_bytes: OUT,
            dtype_mask: NpuCapabilities::dtype_bit(DType::Int8)
                | NpuCapabilities::dtype_bit(DType::UInt8)
                | NpuCapabilities::dtype_bit(DType::Int16),
            async_invoke: true,
            sliced: false,
            max_resident_models: 1,
            queue_depth: if self.queue { 2 } else { 1 },
        }
    }

    fn state(&self) -> NpuState {
        self.state
    }

    fn load_model(&mut self, model: &NpuModel) -> Result<(), NpuError> {
        self.expect(NpuState::Idle)?;
        let caps = self.capabilities();
        for t in [model.input, model.output] {
            if !caps.supports(t.dtype) {
                return Err(NpuError::UnsupportedDtype(t.dtype));
            }
        }
        if model.input.byte_len() > IN || model.output.byte_len() > OUT {
            return Err(NpuError::ModelTooLarge);
        }
        self.model = Some(*model);
        self.staged = None;
        self.last = None;
        Ok(())
    }

    fn unload_model(&mut self) {
        self.model = None;
        self.staged = None;
        self.last = None;
    }

    fn loaded_model(&self) -> Option<u32> {
        self.model.map(|m| m.id)
    }

    fn set_input(&mut self, input: &[u8]) -> Result<(), NpuError> {
        self.accepts()?;
        let model = self.model.as_ref().ok_or(NpuError::NoModel)?;
        let expected = model.input.byte_len();
        if input.len() != expected {
            return Err(NpuError::InputSizeMismatch {
                expected,
                actual: input.len(),
            });
        }
        let (hash, sum) = if self.null {
            (0, 0)
        } else {
            let sum = input
                .iter()
                .fold(0u32, |acc, &b| acc.wrapping_add(u32::from(b)));
            (stub_input_hash(self.seed, model.id, input), sum)
        };
        self.staged = Some(Digest {
            hash,
            sum,
            marked: input.first() == Some(&FAIL_MARKER),
        });
        Ok(())
    }

    fn invoke(&mut self) -> Result<NpuRun, NpuError> {
        self.expect(NpuState::Idle)?;
        let digest = self.ready_input()?;
        self.time.delay_us(self.latency_us);
        let run = self.execute(digest);
        if run.is_ok() {
            self.state = NpuState::Idle;
        }
        run
    }

    fn invoke_async(&mut self, done: NpuCallback, context: usize) -> Result<(), NpuError> {
        let digest = self.ready_input()?;
        let command = Command {
            digest,
            callback: done,
            context,
        };
        if self.state == NpuState::Busy {
            // Room in the queue (`ready_input` checked): it starts when
            // the running command ends.
            self.queued = Some(command);
            return Ok(());
        }
        self.state = NpuState::Busy;
        self.last = None;
        // Without latency the run is done at once: no clock read (0 is
        // "already due" to `poll`).
        let done_at_us = match self.latency_us {
            0 => 0,
            _ => self.due(self.time.now_us()),
        };
        self.pending = Some(Pending {
            done_at_us,
            command,
        });
        Ok(())
    }

    /// Completes at most one command per call; a queued command then
    /// starts at the moment the completed one ended.
    fn poll(&mut self) -> bool {
        let Some(p) = self.pending else {
            return false;
        };
        if p.done_at_us > 0 && self.time.now_us() < p.done_at_us {
            return false;
        }
        self.pending = None;
        let result = self.execute(p.command.digest);
        match (&result, self.queued.take()) {
            (Ok(_), Some(next)) => {
                let done_at_us = match (self.latency_us, p.done_at_us) {
                    (0, _) => 0,
                    (_, 0) => self.due(self.time.now_us()),
                    (_, ended) => self.due(ended),
                };
                self.pending = Some(Pending {
                    done_at_us,
                    command: next,
                });
            }
            (Ok(_), None) => self.state = NpuState::Idle,
            // The model was unloaded while the invoke was in flight:
            // complete it with an error instead of losing the callback
            // and leaving the device Busy (a queued command goes too).
            (Err(NpuError::NoModel), _) => {
                self.state = NpuState::Idle;
                self.last = None;
            }
            // A fault: `Error`, the queue dropped (`execute`).
            (Err(_), _) => {}
        }
        (p.command.callback)(p.command.context, result);
        true
    }

    fn get_output(&mut self, output: &mut [u8]) -> Result<usize, NpuError> {
        // With a queue, the last completed run's output stays readable
        // while the next one runs.
        if !(self.queue && self.state == NpuState::Busy) {
            self.expect(NpuState::Idle)?;
        }
        let model = self.model.as_ref().ok_or(NpuError::NoModel)?;
        let digest = self.last.ok_or(NpuError::NoOutput)?;
        let needed = model.output.byte_len();
        let Some(output) = output.get_mut(..needed) else {
            return Err(NpuError::OutputTooSmall {
                needed,
                actual: output.len(),
            });
        };
        if !self.null {
            if self.reference_rule {
                output.fill(0);
                if let Some(hot) = output.get_mut(digest.sum as usize % needed.max(1)) {
                    *hot = 127;
                }
            } else {
                for (i, o) in output.iter_mut().enumerate() {
                    *o = stub_output_byte(digest.hash, i as u32);
                }
            }
        }
        Ok(needed)
    }

    fn suspend(&mut self) -> Result<(), NpuError> {
        self.expect(NpuState::Idle)?;
        self.state = NpuState::Suspended;
        Ok(())
    }

    fn resume(&mut self) -> Result<(), NpuError> {
        self.expect(NpuState::Suspended)?;
        self.state = NpuState::Idle;
        Ok(())
    }

    fn clear_error(&mut self) -> Result<(), NpuError> {
        self.expect(NpuState::Error)?;
        self.state = NpuState::Idle;
        Ok(())
    }

    fn in_flight(&self) -> u8 {
        u8::from(self.pending.is_some()) + u8::from(self.queued.is_some())
    }

    fn withdraw(&mut self) -> bool {
        self.queued.take().is_some()
    }

    /// The modelled latency, while the last run's output is valid (a
    /// failed or abandoned run has none).
    fn last_run(&self) -> Option<NpuRun> {
        (self.last.is_some() && !self.untimed).then_some(NpuRun {
            latency_us: self.latency_us,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_input_differs_per_seq_and_avoids_the_marker() {
        let (mut a, mut b) = ([0u8; 37], [0u8; 37]);
        test_input(1, &mut a);
        test_input(2, &mut b);
        assert_ne!(a, b);
        for seq in 0..4096 {
            test_input(seq, &mut a);
            assert_ne!(a[0], FAIL_MARKER);
        }
    }
    use crate::time::FakeClock;
    use core::cell::Cell;

    type Npu<'c> = StubNpu<&'c FakeClock, 64, 16>;

    fn model(id: u32, n_in: usize, n_out: usize) -> NpuModel {
        NpuModel {
            id,
            input: TensorMeta::vector(DType::Int8, n_in).unwrap(),
            output: TensorMeta::vector(DType::Int8, n_out).unwrap(),
            flash_offset: 0,
            flash_size: 0,
            image: &[],
        }
    }

    fn ready(clock: &FakeClock) -> Npu<'_> {
        let mut n: Npu<'_> = StubNpu::new(clock, 0);
        n.init().unwrap();
        n.load_model(&model(1, 4, 4)).unwrap();
        n
    }

    #[test]
    fn reference_rule_is_one_hot_at_the_input_sum() {
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_reference_rule(true);
        // 200 + 100 + 3 + 0 = 303, 303 % 4 = 3.
        n.set_input(&[200, 100, 3, 0]).unwrap();
        n.invoke().unwrap();
        let mut out = [0xAAu8; 4];
        assert_eq!(n.get_output(&mut out), Ok(4));
        assert_eq!(out, [0, 0, 0, 127]);
        n.set_input(&[0; 4]).unwrap();
        n.invoke().unwrap();
        n.get_output(&mut out).unwrap();
        assert_eq!(out, [127, 0, 0, 0]);
        let mut ten = [1u8; 10];
        reference_output(&[255; 3], &mut ten);
        assert_eq!(ten, [0, 0, 0, 0, 0, 127, 0, 0, 0, 0]);
    }

    #[test]
    fn output_is_the_documented_function() {
        // Known answers computed independently of this crate.
        assert_eq!(stub_input_hash(0, 1, &[1, 2, 3, 4]), 0xE132_6688);
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_input(&[1, 2, 3, 4]).unwrap();
        n.invoke().unwrap();
        let mut out = [0u8; 8];
        assert_eq!(n.get_output(&mut out), Ok(4));
        assert_eq!(&out[..4], &[187, 115, 110, 65]);
        // Same input, same output; one changed bit, different output.
        n.set_input(&[1, 2, 3, 4]).unwrap();
        n.invoke().unwrap();
        let mut again = [0u8; 4];
        n.get_output(&mut again).unwrap();
        assert_eq!(again, [187, 115, 110, 65]);
        n.set_input(&[1, 2, 3, 5]).unwrap();
        n.invoke().unwrap();
        n.get_output(&mut again).unwrap();
        assert_ne!(again, [187, 115, 110, 65]);
    }

    #[test]
    fn state_machine_transitions() {
        let clock = FakeClock::new(0);
        let mut n: Npu<'_> = StubNpu::new(&clock, 0);
        assert_eq!(n.state(), NpuState::Off);
        assert_eq!(
            n.load_model(&model(1, 4, 4)),
            Err(NpuError::WrongState(NpuState::Off))
        );
        n.init().unwrap();
        assert_eq!(n.init(), Err(NpuError::WrongState(NpuState::Idle)));
        assert_eq!(n.set_input(&[0; 4]), Err(NpuError::NoModel));
        n.load_model(&model(1, 4, 4)).unwrap();
        assert_eq!(n.invoke(), Err(NpuError::NoInput));
        let mut out = [0u8; 4];
        assert_eq!(n.get_output(&mut out), Err(NpuError::NoOutput));
        n.suspend().unwrap();
        assert_eq!(n.state(), NpuState::Suspended);
        assert_eq!(
            n.set_input(&[0; 4]),
            Err(NpuError::WrongState(NpuState::Suspended))
        );
        assert_eq!(n.suspend(), Err(NpuError::WrongState(NpuState::Suspended)));
        n.resume().unwrap();
        assert_eq!(n.resume(), Err(NpuError::WrongState(NpuState::Idle)));
        assert_eq!(n.loaded_model(), Some(1));
        n.deinit();
        assert_eq!((n.state(), n.loaded_model()), (NpuState::Off, None));
    }

    #[test]
    fn size_and_dtype_checks() {
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        assert_eq!(
            n.set_input(&[0; 5]),
            Err(NpuError::InputSizeMismatch {
                expected: 4,
                actual: 5
            })
        );
        assert_eq!(n.load_model(&model(2, 65, 1)), Err(NpuError::ModelTooLarge));
        assert_eq!(n.load_model(&model(2, 1, 17)), Err(NpuError::ModelTooLarge));
        let mut f = model(2, 1, 1);
        f.output = TensorMeta::vector(DType::Float32, 1).unwrap();
        assert_eq!(
            n.load_model(&f),
            Err(NpuError::UnsupportedDtype(DType::Float32))
        );
        assert!(!n.capabilities().supports(DType::Float32));
        assert!(n.capabilities().supports(DType::Int8));
        n.set_input(&[0; 4]).unwrap();
        n.invoke().unwrap();
        let mut short = [0u8; 3];
        assert_eq!(
            n.get_output(&mut short),
            Err(NpuError::OutputTooSmall {
                needed: 4,
                actual: 3
            })
        );
    }

    #[test]
    fn null_mode_does_no_work_on_input_or_output() {
        let clock = FakeClock::new(0);
        let mut npu = ready(&clock);
        npu.set_null(true);
        npu.set_latency_us(40);
        npu.set_input(&[0x55; 4]).unwrap();
        let run = npu.invoke().unwrap();
        assert_eq!(run.latency_us, 40);
        assert_eq!(clock.now_us(), 40);
        let mut out = [0xAA; 4];
        assert_eq!(npu.get_output(&mut out), Ok(4));
        assert_eq!(out, [0xAA; 4], "the buffer keeps what it held");
        assert!(npu.get_output(&mut [0; 3]).is_err(), "still checked");
        // Still checked: a wrong input length is refused.
        assert!(npu.set_input(&[0; 3]).is_err());
    }

    #[test]
    fn latency_is_consumed_through_the_time_source() {
        let clock = FakeClock::new(1_000);
        let mut n = ready(&clock);
        n.set_latency_us(750);
        n.set_input(&[9; 4]).unwrap();
        assert_eq!(n.invoke(), Ok(NpuRun { latency_us: 750 }));
        assert_eq!(clock.now_us(), 1_750);
    }

    #[test]
    fn fails_every_nth_invoke_and_recovers() {
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.fail_every(NonZeroU32::new(3));
        n.set_input(&[0; 4]).unwrap();
        assert!(n.invoke().is_ok());
        assert!(n.invoke().is_ok());
        assert_eq!(n.invoke(), Err(NpuError::DeviceFault));
        assert_eq!(n.state(), NpuState::Error);
        assert_eq!(n.invoke(), Err(NpuError::WrongState(NpuState::Error)));
        let mut out = [0u8; 4];
        assert_eq!(
            n.get_output(&mut out),
            Err(NpuError::WrongState(NpuState::Error))
        );
        n.clear_error().unwrap();
        assert!(n.invoke().is_ok());
        assert_eq!(n.invoke_count(), 4);
        assert_eq!(NpuError::DeviceFault.to_errno(), Errno::Io);
    }

    #[test]
    fn fails_on_the_marker_byte_only_when_enabled() {
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_input(&[FAIL_MARKER, 0, 0, 0]).unwrap();
        assert!(n.invoke().is_ok());
        n.fail_on_marker(true);
        assert_eq!(n.invoke(), Err(NpuError::DeviceFault));
        n.clear_error().unwrap();
        n.set_input(&[0, FAIL_MARKER, 0, 0]).unwrap();
        assert!(n.invoke().is_ok());
    }

    #[test]
    fn async_invoke_whose_model_was_unloaded_completes_with_an_error() {
        std::thread_local! {
            static DONE: Cell<Option<(usize, Result<NpuRun, NpuError>)>> = const { Cell::new(None) };
        }
        fn done(ctx: usize, r: Result<NpuRun, NpuError>) {
            DONE.with(|d| d.set(Some((ctx, r))));
        }
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_latency_us(10);
        n.set_input(&[1, 2, 3, 4]).unwrap();
        n.invoke_async(done, 5).unwrap();
        n.unload_model();
        clock.advance(10);
        assert!(n.poll());
        assert_eq!(DONE.with(Cell::get), Some((5, Err(NpuError::NoModel))));
        assert_eq!(n.state(), NpuState::Idle);
        assert!(n.load_model(&model(1, 4, 4)).is_ok());
        assert_eq!(n.invoke_count(), 0);
    }

    #[test]
    fn async_invoke_completes_on_poll_after_latency() {
        std::thread_local! {
            static DONE: Cell<Option<(usize, Result<NpuRun, NpuError>)>> = const { Cell::new(None) };
        }
        fn done(ctx: usize, r: Result<NpuRun, NpuError>) {
            DONE.with(|d| d.set(Some((ctx, r))));
        }
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_latency_us(100);
        n.set_input(&[1, 2, 3, 4]).unwrap();
        n.invoke_async(done, 42).unwrap();
        assert_eq!(n.state(), NpuState::Busy);
        assert_eq!(
            n.set_input(&[0; 4]),
            Err(NpuError::WrongState(NpuState::Busy))
        );
        clock.advance(99);
        assert!(!n.poll());
        assert_eq!(DONE.with(Cell::get), None);
        clock.advance(1);
        assert!(n.poll());
        assert_eq!(
            DONE.with(Cell::get),
            Some((42, Ok(NpuRun { latency_us: 100 })))
        );
        assert_eq!(n.state(), NpuState::Idle);
        let mut out = [0u8; 4];
        n.get_output(&mut out).unwrap();
        assert_eq!(out, [187, 115, 110, 65]);
        assert!(!n.poll());
    }

    #[test]
    fn command_queue_runs_back_to_back_and_keeps_the_last_output_readable() {
        std::thread_local! {
            static DONE: Cell<(u32, usize, bool)> = const { Cell::new((0, 0, false)) };
        }
        fn done(ctx: usize, r: Result<NpuRun, NpuError>) {
            DONE.with(|d| d.set((d.get().0 + 1, ctx, r.is_ok())));
        }
        let stub = |input: [u8; 4]| {
            let mut out = [0u8; 4];
            stub_output(0, 1, &input, &mut out);
            out
        };
        let output = |n: &mut Npu<'_>| {
            let mut out = [0u8; 4];
            n.get_output(&mut out).map(|_| out)
        };
        let clock = FakeClock::new(0);
        let mut n = ready(&clock);
        n.set_latency_us(100);
        n.set_input(&[1, 2, 3, 4]).unwrap();
        n.invoke_async(done, 1).unwrap();
        // No queue by default: a busy device takes nothing more.
        assert_eq!(n.capabilities().queue_depth, 1);
        assert_eq!(n.in_flight(), 1);
        let busy = Err(NpuError::WrongState(NpuState::Busy));
        assert_eq!(n.set_input(&[0; 4]), busy);
        n.set_command_queue(true);
        assert_eq!(n.capabilities().queue_depth, 2);
        n.set_input(&[5, 6, 7, 8]).unwrap();
        n.invoke_async(done, 2).unwrap();
        assert_eq!(n.in_flight(), 2);
        assert_eq!(n.set_input(&[0; 4]), busy, "the queue holds one");
        assert_eq!(n.invoke_async(done, 3), busy);
        // Polled late: the first run is done, and the second started when
        // it ended (at 100), not at the poll.
        clock.advance(150);
        assert!(n.poll());
        assert_eq!(DONE.with(Cell::get), (1, 1, true));
        assert_eq!((n.state(), n.in_flight()), (NpuState::Busy, 1));
        assert_eq!(
            output(&mut n),
            Ok(stub([1, 2, 3, 4])),
            "readable while busy"
        );
        clock.advance(49);
        assert!(!n.poll());
        clock.advance(1);
        assert!(n.poll());
        assert_eq!(DONE.with(Cell::get), (2, 2, true));
        assert_eq!((n.state(), n.in_flight()), (NpuState::Idle, 0));
        assert_eq!(output(&mut n), Ok(stub([5, 6, 7, 8])));
        // A queued command can be taken back; the running one cannot.
        n.set_input(&[1; 4]).unwrap();
        n.invoke_async(done, 4).unwrap();
        n.set_input(&[2; 4]).unwrap();
        n.invoke_async(done, 5).unwrap();
        assert!(n.withdraw());
        assert!(!n.withdraw());
        assert_eq!(n.in_flight(), 1);
        clock.advance(100);
        assert!(n.poll());
        assert_eq!(DONE.with(Cell::get), (3, 4, true));
        assert_eq!(n.state(), NpuState::Idle);
        // A fault drops the queued command, without its callback.
        n.fail_every(NonZeroU32::new(1));
        n.set_input(&[3; 4]).unwrap();
        n.invoke_async(done, 6).unwrap();
        n.set_input(&[4; 4]).unwrap();
        n.invoke_async(done, 7).unwrap();
        clock.advance(100);
        assert!(n.poll());
        assert_eq!(DONE.with(Cell::get), (4, 6, false));
        assert_eq!((n.state(), n.in_flight()), (NpuState::Error, 0));
        clock.advance(100);
        assert!(!n.poll());
        assert_eq!(DONE.with(Cell::get).0, 4);
    }
}
