//! Execution devices: which device runs a model step, and the CPU
//! interpreter device ([`TfliteDevice`]) beside the NPU.
//!
//! Two devices implement [`NpuDevice`]: the NPU (the stub NPU on the host
//! and on boards without one) and [`TfliteDevice`], CPU0's own core running
//! `synaptic-tflite` on the model's `.tflite` flatbuffer. A model names the
//! devices it may run on in [`ModelDesc::devices`](crate::registry::ModelDesc)
//! (a [`DeviceMask`]); the CPU device also needs the flatbuffer bytes
//! ([`ModelDesc::image`](crate::registry::ModelDesc)).
//!
//! # Why `Option<&mut dyn NpuDevice>` in `Env`
//!
//! The scheduler's [`Env`](crate::sched::Env) keeps its generic NPU `N` and
//! gains `cpu: Option<&mut dyn NpuDevice>`. A second generic parameter
//! would ripple into every function that names `Env`, `Runtime` or the
//! serving layer (and into every caller's type annotations) for a device
//! that is called once per model step, where one indirect call is nothing
//! next to an inference. `None` is the board without the interpreter. Its
//! code is another matter: the paths to the CPU device (placement among
//! devices, staging, starting, running and collecting on it) are 4 KB of
//! CPU0's flash, so a firmware without the device builds its
//! [`Scheduler`](crate::sched::Scheduler) with `CPU = false` (a const
//! parameter, `true` by default) and those paths compile away.
//!
//! # Placement
//!
//! The scheduler asks a [`Placement`] function, once per model step when
//! it is first picked to run, which device runs it, passing a
//! [`PlacementQuery`] (the model's allowed devices, the devices present,
//! which of them are busy, the model's predicted service time on each
//! device, the predicted work already on each device, a random word). A
//! step placed on a busy device waits for it and keeps its placement (a
//! policy's answer, random or not, is not asked again every step). The default,
//! [`prefer_npu`], is: **the NPU when the model allows it, else the CPU
//! interpreter**; a model whose allowed devices are all absent fails with
//! [`JobError::NoDevice`](crate::sched::JobError::NoDevice) (`-ENODEV`).
//! [`Policy`] names the shipped policies (NPU only, CPU only, busy-aware,
//! random, earliest finish time), selectable at run time with
//! [`Scheduler::set_policy`](crate::sched::Scheduler::set_policy);
//! [`Scheduler::set_placement`](crate::sched::Scheduler::set_placement) is
//! the seam for any other function. A policy that names a device the model
//! does not allow or that is absent is refused the same way, so no policy
//! can run a model where it was not registered. Remote (CPU1) requests are
//! jobs of the same scheduler as CPU0's local ones, so they are placed by
//! the same policy. Without a CPU device in `Env` the NPU is the only
//! candidate and the policy is not consulted (the offload path, issue 9,
//! pays no lookup for placement); a model that does not allow the NPU then
//! fails with `NoDevice` when its step is staged.
//!
//! # The CPU device's model
//!
//! * Sliced: [`NpuDevice::invoke`] runs the whole network before it
//!   returns; [`NpuDevice::invoke_async`] plans the run, copies the staged
//!   input in and returns with the device `Busy`; each
//!   [`NpuDevice::poll`] then runs **one step** of the interpreter (an
//!   operator, or `synaptic_tflite::STEP_ROWS` output rows of a
//!   convolution: [`synaptic_tflite::Interpreter::step`], resumed from a
//!   [`synaptic_tflite::Checkpoint`]) and the last one copies the output
//!   out, calls `done` and returns the device to `Idle`. Capabilities say
//!   `async_invoke: true, sliced: true`: the device progresses only when
//!   polled, on the caller's core, so the scheduler (overlap mode) polls
//!   it once per step and can hand the NPU its next job between two
//!   operators instead of after a whole network. [`NpuDevice::abort`]
//!   drops a run in flight (a cancelled job). The sliced output is the
//!   same bytes as `invoke`'s (the interpreter's golden tests check both).
//!   The largest slice is the network's largest operator.
//! * Its arena is one caller-given slice, laid out as the interpreter's
//!   plan (tensors, bookkeeping, activations), then the model's output, then
//!   the staged input at the end: `set_input` copies the input there, and
//!   `invoke` plans the interpreter in front of it, copies the input into
//!   the input tensor, runs, and copies the output out, so nothing depends
//!   on where the interpreter puts its tensors between calls.
//!   [`TfliteDevice::arena_needed`] says how large the slice must be
//!   (for the shipped person detector: its 78,752-byte plan plus 9,216
//!   input and 2 output bytes).
//! * `load_model` parses (validates) the flatbuffer, checks its first input
//!   and output against the registered tensor sizes, and plans once to check
//!   the arena; every error is a [`NpuError`], never a panic.
//! * `latency_us` of [`NpuRun`] is 0 (the device has no clock of its own);
//!   the scheduler measures the step on its clock and books it as
//!   interpreter time
//!   ([`InferenceProfile::interpreter_us`](crate::prof::InferenceProfile)):
//!   a sliced step as the sum of its slices (the device's busy time).

use synaptic_tflite::{Checkpoint, Interpreter, Model};

use crate::arena::DType;
use crate::npu::{NpuCallback, NpuCapabilities, NpuDevice, NpuError, NpuModel, NpuRun, NpuState};

/// An execution device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The NPU (`Env::npu`).
    Npu,
    /// CPU0's core running the TFLite interpreter (`Env::cpu`).
    CpuInterpreter,
}

impl Device {
    /// Both devices, in [`Device::index`] order.
    pub const ALL: [Device; 2] = [Device::Npu, Device::CpuInterpreter];

    /// Position in per-device tables (`Npu` 0, `CpuInterpreter` 1).
    pub const fn index(self) -> usize {
        match self {
            Device::Npu => 0,
            Device::CpuInterpreter => 1,
        }
    }

    /// Lower-case name, for logs and the shell.
    pub const fn name(self) -> &'static str {
        match self {
            Device::Npu => "npu",
            Device::CpuInterpreter => "cpu",
        }
    }
}

/// A set of [`Device`]s.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::device::{Device, DeviceMask};
/// let both = DeviceMask::NPU.with(DeviceMask::CPU_INTERPRETER);
/// assert!(both.contains(Device::Npu) && both.contains(Device::CpuInterpreter));
/// assert!(!DeviceMask::NPU.contains(Device::CpuInterpreter));
/// assert!(DeviceMask::NONE.is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeviceMask(u8);

impl DeviceMask {
    /// No device.
    pub const NONE: DeviceMask = DeviceMask(0);
    /// The NPU only.
    pub const NPU: DeviceMask = DeviceMask(1);
    /// The CPU interpreter only.
    pub const CPU_INTERPRETER: DeviceMask = DeviceMask(2);
    /// Both devices.
    pub const ALL: DeviceMask = DeviceMask(3);

    /// The mask of one device.
    pub const fn of(device: Device) -> DeviceMask {
        match device {
            Device::Npu => DeviceMask::NPU,
            Device::CpuInterpreter => DeviceMask::CPU_INTERPRETER,
        }
    }

    /// Both sets together.
    pub const fn with(self, other: DeviceMask) -> DeviceMask {
        DeviceMask(self.0 | other.0)
    }

    /// The devices in both sets.
    pub const fn and(self, other: DeviceMask) -> DeviceMask {
        DeviceMask(self.0 & other.0)
    }

    /// Whether `device` is in the set.
    pub const fn contains(self, device: Device) -> bool {
        self.0 & DeviceMask::of(device).0 != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 & DeviceMask::ALL.0 == 0
    }

    /// The raw bits (bit 0 NPU, bit 1 CPU interpreter).
    pub const fn bits(self) -> u8 {
        self.0
    }
}

/// What a [`Placement`] decides on. New fields may be added (a policy reads
/// the ones it needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacementQuery {
    /// Raw handle of the model the step runs.
    pub model: u32,
    /// The devices the model was registered for.
    pub allowed: DeviceMask,
    /// The devices the scheduler's `Env` has.
    pub present: DeviceMask,
    /// Whether the NPU has an asynchronous invoke in flight (overlap mode).
    pub npu_busy: bool,
    /// Whether the CPU interpreter has a sliced invoke in flight (overlap
    /// mode with a sliced CPU device; a synchronous one is never busy when
    /// a step is placed).
    pub cpu_busy: bool,
    /// The model's predicted service time on each device, microseconds, by
    /// [`Device::index`] (`None` before its first run there; see
    /// [`crate::predict`]).
    pub predicted_us: [Option<u32>; 2],
    /// Predicted work already placed on each device and not finished,
    /// microseconds, by [`Device::index`]: the step in flight there, its
    /// prediction less what it has run (at least 0), plus the predictions
    /// of the steps placed there and waiting for it that will run first
    /// (of the step's class or a higher one). The NPU's "has run" is the
    /// time since it started; a sliced CPU step's is the time of its slices
    /// so far (it runs only when polled).
    pub backlog_us: [u64; 2],
    /// A fresh pseudo-random word per query (the scheduler's xorshift32,
    /// [`Scheduler::set_random_seed`](crate::sched::Scheduler::set_random_seed)).
    pub random: u32,
}

impl PlacementQuery {
    /// A query without predictions, backlog or random word (for policies'
    /// own tests; the `with_` methods add them).
    pub const fn new(model: u32, allowed: DeviceMask, present: DeviceMask, npu_busy: bool) -> Self {
        PlacementQuery {
            model,
            allowed,
            present,
            npu_busy,
            cpu_busy: false,
            predicted_us: [None; 2],
            backlog_us: [0; 2],
            random: 0,
        }
    }

    /// The query with `device` busy or not.
    pub const fn with_busy(mut self, device: Device, busy: bool) -> Self {
        match device {
            Device::Npu => self.npu_busy = busy,
            Device::CpuInterpreter => self.cpu_busy = busy,
        }
        self
    }

    /// Whether `device` has a step in flight.
    pub const fn is_busy(&self, device: Device) -> bool {
        match device {
            Device::Npu => self.npu_busy,
            Device::CpuInterpreter => self.cpu_busy,
        }
    }

    /// The query with `device`'s predicted service time.
    pub const fn with_prediction(mut self, device: Device, us: Option<u32>) -> Self {
        self.predicted_us[device.index()] = us;
        self
    }

    /// The query with `device`'s backlog.
    pub const fn with_backlog(mut self, device: Device, us: u64) -> Self {
        self.backlog_us[device.index()] = us;
        self
    }

    /// The query with its random word.
    pub const fn with_random(mut self, random: u32) -> Self {
        self.random = random;
        self
    }

    /// The devices that may run the step: allowed and present.
    pub const fn usable(&self) -> DeviceMask {
        self.allowed.and(self.present)
    }

    /// Predicted finish time of the step on `device`, microseconds from
    /// now: its backlog plus the model's predicted service time there (an
    /// unmeasured device counts 0, so each device is tried once before the
    /// predictions decide).
    pub const fn finish_us(&self, device: Device) -> u64 {
        let run = match self.predicted_us[device.index()] {
            Some(us) => us as u64,
            None => 0,
        };
        self.backlog_us[device.index()].saturating_add(run)
    }
}

/// A placement policy: the device that runs a model step, or `None` when no
/// usable device exists. The scheduler refuses an answer outside
/// [`PlacementQuery::usable`].
pub type Placement = fn(&PlacementQuery) -> Option<Device>;

/// The policies this crate ships, for selection at run time
/// ([`Scheduler::set_policy`](crate::sched::Scheduler::set_policy)) by
/// value or by name.
///
/// Every policy picks only among the model's usable devices: "NPU only" and
/// "CPU only" are about models registered for both, and a model registered
/// for one device runs there whatever the policy. Local jobs and remote
/// (CPU1) requests go through the same scheduler, so one policy places
/// both.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::device::{Device, DeviceMask, Policy, PlacementQuery};
/// let q = PlacementQuery::new(1, DeviceMask::ALL, DeviceMask::ALL, true)
///     .with_prediction(Device::Npu, Some(1_000))
///     .with_prediction(Device::CpuInterpreter, Some(1_500))
///     .with_backlog(Device::Npu, 800);
/// // NPU: 800 + 1000 later; CPU: 1500 later.
/// assert_eq!((Policy::EarliestFinish.placement())(&q), Some(Device::CpuInterpreter));
/// assert_eq!((Policy::NpuOnly.placement())(&q), Some(Device::Npu));
/// assert_eq!(Policy::from_name("eft"), Some(Policy::EarliestFinish));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Policy {
    /// [`prefer_npu`], the default.
    #[default]
    NpuOnly,
    /// [`prefer_cpu`].
    CpuOnly,
    /// [`busy_aware`] (Fuse's policy).
    BusyAware,
    /// [`random`].
    Random,
    /// [`earliest_finish`] (MEERKAT's EFT).
    EarliestFinish,
}

impl Policy {
    /// Every policy, in declaration order.
    pub const ALL: [Policy; 5] = [
        Policy::NpuOnly,
        Policy::CpuOnly,
        Policy::BusyAware,
        Policy::Random,
        Policy::EarliestFinish,
    ];

    /// The policy's function.
    pub const fn placement(self) -> Placement {
        match self {
            Policy::NpuOnly => prefer_npu,
            Policy::CpuOnly => prefer_cpu,
            Policy::BusyAware => busy_aware,
            Policy::Random => random,
            Policy::EarliestFinish => earliest_finish,
        }
    }

    /// Short name, for the shell and Kconfig: `npu`, `cpu`, `busy`,
    /// `random`, `eft`.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::NpuOnly => "npu",
            Policy::CpuOnly => "cpu",
            Policy::BusyAware => "busy",
            Policy::Random => "random",
            Policy::EarliestFinish => "eft",
        }
    }

    /// The policy called `name` ([`Policy::name`]).
    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The first of `order` that is usable.
fn first_usable(query: &PlacementQuery, order: [Device; 2]) -> Option<Device> {
    let usable = query.usable();
    order.into_iter().find(|d| usable.contains(*d))
}

/// The default placement: the NPU when the model allows it and it is
/// present, else the CPU interpreter when allowed and present, else none.
/// It does not look at `npu_busy`: a model that may use the NPU waits for
/// it.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::device::{prefer_npu, Device, DeviceMask, PlacementQuery};
/// let q = |allowed, present| PlacementQuery::new(1, allowed, present, false);
/// assert_eq!(prefer_npu(&q(DeviceMask::ALL, DeviceMask::ALL)), Some(Device::Npu));
/// assert_eq!(prefer_npu(&q(DeviceMask::ALL, DeviceMask::CPU_INTERPRETER)), Some(Device::CpuInterpreter));
/// assert_eq!(prefer_npu(&q(DeviceMask::CPU_INTERPRETER, DeviceMask::NPU)), None);
/// ```
pub fn prefer_npu(query: &PlacementQuery) -> Option<Device> {
    first_usable(query, [Device::Npu, Device::CpuInterpreter])
}

/// The CPU interpreter when usable, else the NPU (a model not registered
/// for the CPU still runs).
pub fn prefer_cpu(query: &PlacementQuery) -> Option<Device> {
    first_usable(query, [Device::CpuInterpreter, Device::Npu])
}

/// Busy-aware (Fuse): the NPU when it is idle, the CPU interpreter while
/// the NPU is busy and the CPU is not; with both busy, the NPU (the faster
/// device, so the shorter wait as a rule). A model usable on one device
/// only goes there (and waits for it).
pub fn busy_aware(query: &PlacementQuery) -> Option<Device> {
    if query.npu_busy && !query.cpu_busy {
        prefer_cpu(query)
    } else {
        prefer_npu(query)
    }
}

/// Random: one of the usable devices, chosen by the top bit of the query's
/// random word (deterministic for a given seed).
pub fn random(query: &PlacementQuery) -> Option<Device> {
    if query.random >> 31 == 0 {
        prefer_npu(query)
    } else {
        prefer_cpu(query)
    }
}

/// Earliest finish time (MEERKAT's EFT): the usable device with the
/// smallest [`PlacementQuery::finish_us`] (backlog plus predicted service
/// time); a tie goes to the NPU.
pub fn earliest_finish(query: &PlacementQuery) -> Option<Device> {
    let usable = query.usable();
    Device::ALL
        .into_iter()
        .filter(|d| usable.contains(*d))
        // `min_by_key` keeps the first of equal keys: the NPU.
        .min_by_key(|d| query.finish_us(*d))
}

/// Stack bytes of [`TfliteDevice`]'s `can_run` plan: the exact plan of a
/// model of up to 128 tensors (the MLPerf Tiny networks have at most 90),
/// else the plan's upper bound.
const CHECK_SCRATCH: usize = 128 * 16;

/// A [`TfliteDevice`] arena split: the plan's part, the output, the staged input.
type Parts<'x> = (&'x mut [u8], &'x mut [u8], &'x mut [u8]);

/// The resident model of a [`TfliteDevice`].
#[derive(Clone, Copy)]
struct Resident {
    id: u32,
    model: Model<'static>,
    input_len: usize,
    output_len: usize,
}

/// The CPU interpreter as an execution device: `synaptic-tflite` over its
/// own arena slice (see the module documentation for its model).
///
/// # Examples
///
/// ```
/// use synaptic_runtime::arena::{DType, TensorMeta};
/// use synaptic_runtime::device::TfliteDevice;
/// use synaptic_runtime::npu::{NpuDevice, NpuError, NpuModel};
///
/// let mut arena = [0u8; 256];
/// let mut cpu = TfliteDevice::new(&mut arena);
/// cpu.init().unwrap();
/// let not_a_model = NpuModel {
///     id: 1,
///     input: TensorMeta::vector(DType::Int8, 4).unwrap(),
///     output: TensorMeta::vector(DType::Int8, 2).unwrap(),
///     flash_offset: 0,
///     flash_size: 0,
///     image: b"not a flatbuffer",
/// };
/// assert_eq!(cpu.load_model(&not_a_model), Err(NpuError::InvalidImage));
/// ```
pub struct TfliteDevice<'d> {
    arena: &'d mut [u8],
    state: NpuState,
    resident: Option<Resident>,
    input_valid: bool,
    output_valid: bool,
    invokes: u32,
    /// The sliced run in flight (state `Busy`) and whom to tell.
    run: Option<SlicedRun>,
}

/// A [`TfliteDevice`]'s asynchronous invoke between two polls.
#[derive(Clone, Copy)]
struct SlicedRun {
    checkpoint: Checkpoint,
    done: NpuCallback,
    context: usize,
}

impl<'d> TfliteDevice<'d> {
    /// A device in state `Off` over `arena`.
    pub fn new(arena: &'d mut [u8]) -> Self {
        TfliteDevice {
            arena,
            state: NpuState::Off,
            resident: None,
            input_valid: false,
            output_valid: false,
            invokes: 0,
            run: None,
        }
    }

    /// Arena bytes the device needs for `image` (the interpreter's plan plus
    /// the model's first input and output), planned in this device's arena.
    /// Exact when the arena holds the plan's bookkeeping, else an upper
    /// bound that always suffices. Any staged input is dropped.
    ///
    /// # Errors
    ///
    /// [`NpuError::InvalidImage`] when the image does not parse or plan;
    /// [`NpuError::WrongState`] unless `Idle`.
    pub fn arena_needed(&mut self, image: &[u8]) -> Result<usize, NpuError> {
        self.expect(NpuState::Idle)?;
        let model = Model::parse(image).map_err(|_| NpuError::InvalidImage)?;
        let io = Self::io_len(&model)?;
        self.input_valid = false;
        self.output_valid = false;
        let plan = match Interpreter::new(&model, self.arena) {
            Ok(i) => i.arena_required(),
            Err(synaptic_tflite::Error::ArenaTooSmall { needed, .. }) => needed,
            Err(_) => return Err(NpuError::InvalidImage),
        };
        Ok(plan + io.0 + io.1)
    }

    /// Inferences run so far (failed ones included).
    pub fn invoke_count(&self) -> u32 {
        self.invokes
    }

    /// `model` parsed, its tensors checked against its image.
    fn resident(model: &NpuModel) -> Result<Resident, NpuError> {
        for t in [model.input, model.output] {
            if t.dtype != DType::Int8 {
                return Err(NpuError::UnsupportedDtype(t.dtype));
            }
        }
        let parsed = Model::parse(model.image).map_err(|_| NpuError::InvalidImage)?;
        let (input_len, output_len) = Self::io_len(&parsed)?;
        if input_len != model.input.byte_len() || output_len != model.output.byte_len() {
            return Err(NpuError::InvalidImage);
        }
        Ok(Resident {
            id: model.id,
            model: parsed,
            input_len,
            output_len,
        })
    }

    /// Bytes of the model's first input and first output.
    fn io_len(model: &Model<'_>) -> Result<(usize, usize), NpuError> {
        let input = model.input(0).map_err(|_| NpuError::InvalidImage)?;
        let output = model.output(0).map_err(|_| NpuError::InvalidImage)?;
        Ok((input.byte_len(), output.byte_len()))
    }

    fn expect(&self, state: NpuState) -> Result<(), NpuError> {
        if self.state == state {
            Ok(())
        } else {
            Err(NpuError::WrongState(self.state))
        }
    }

    /// The resident model, when the device is idle with an input staged.
    fn ready_to_run(&self) -> Result<Resident, NpuError> {
        self.expect(NpuState::Idle)?;
        let r = self.resident.ok_or(NpuError::NoModel)?;
        if !self.input_valid {
            return Err(NpuError::NoInput);
        }
        Ok(r)
    }

    /// The plan's part of the arena, the output and the staged input.
    fn split(&mut self, r: &Resident) -> Result<Parts<'_>, NpuError> {
        let len = self.arena.len();
        let io = r.input_len + r.output_len;
        let plan_len = len.checked_sub(io).ok_or(NpuError::ModelTooLarge)?;
        let (plan, rest) = self.arena.split_at_mut(plan_len);
        let (output, input) = rest.split_at_mut(r.output_len);
        Ok((plan, output, input))
    }

    /// An interpreter planned in `plan` with `input` copied in.
    fn planned<'m, 'a>(
        model: &'m Model<'m>,
        plan: &'a mut [u8],
        input: &[u8],
    ) -> Result<Interpreter<'m, 'a>, NpuError> {
        let mut interpreter = Interpreter::new(model, plan).map_err(|_| NpuError::ModelTooLarge)?;
        interpreter
            .input_mut(0)
            .map_err(|_| NpuError::DeviceFault)?
            .copy_from_slice(input);
        Ok(interpreter)
    }

    /// Copies a finished run's output out of the interpreter.
    fn copy_out(interpreter: &Interpreter<'_, '_>, output: &mut [u8]) -> Result<(), NpuError> {
        let out = interpreter.output(0).map_err(|_| NpuError::DeviceFault)?;
        if out.len() != output.len() {
            return Err(NpuError::DeviceFault);
        }
        output.copy_from_slice(out);
        Ok(())
    }

    /// A whole run in one call (the synchronous invoke).
    fn run(&mut self, r: Resident) -> Result<(), NpuError> {
        let (plan, output, input) = self.split(&r)?;
        let mut interpreter = Self::planned(&r.model, plan, input)?;
        interpreter.invoke().map_err(|_| NpuError::DeviceFault)?;
        Self::copy_out(&interpreter, output)
    }

    /// Plans a sliced run and copies the staged input in.
    fn begin(&mut self, r: Resident) -> Result<Checkpoint, NpuError> {
        let (plan, _, input) = self.split(&r)?;
        Ok(Self::planned(&r.model, plan, input)?.checkpoint())
    }

    /// One step of the sliced run; the checkpoint after it, and on the
    /// last one the output copied out.
    fn slice(&mut self, r: Resident, at: Checkpoint) -> Result<Checkpoint, NpuError> {
        let (plan, output, _) = self.split(&r)?;
        let mut interpreter =
            Interpreter::resume(&r.model, plan, at).map_err(|_| NpuError::DeviceFault)?;
        if interpreter.step().map_err(|_| NpuError::DeviceFault)? {
            Self::copy_out(&interpreter, output)?;
        }
        Ok(interpreter.checkpoint())
    }
}

impl NpuDevice for TfliteDevice<'_> {
    fn init(&mut self) -> Result<(), NpuError> {
        self.expect(NpuState::Off)?;
        self.state = NpuState::Idle;
        Ok(())
    }

    fn deinit(&mut self) {
        self.state = NpuState::Off;
        self.resident = None;
        self.input_valid = false;
        self.output_valid = false;
        self.run = None;
    }

    fn capabilities(&self) -> NpuCapabilities {
        NpuCapabilities {
            max_input_bytes: self.arena.len(),
            max_output_bytes: self.arena.len(),
            dtype_mask: NpuCapabilities::dtype_bit(DType::Int8),
            async_invoke: true,
            sliced: true,
            max_resident_models: 1,
            queue_depth: 1,
        }
    }

    fn state(&self) -> NpuState {
        self.state
    }

    /// The interpreter's own check, in whatever state: the tensors int8,
    /// the image parsed (every operator supported), its first input and
    /// output the registered sizes, and its plan (made on the stack, not in
    /// the arena: a run in flight keeps it) within the arena with them.
    fn can_run(&self, model: &NpuModel) -> Result<(), NpuError> {
        let r = Self::resident(model)?;
        let mut scratch = [0u8; CHECK_SCRATCH];
        let plan = match Interpreter::arena_needed(&r.model, &mut scratch) {
            Ok(needed) => needed,
            // More tensors than the scratch holds: the plan's bound.
            Err(synaptic_tflite::Error::ArenaTooSmall { .. }) => {
                match Interpreter::new(&r.model, &mut []) {
                    Err(synaptic_tflite::Error::ArenaTooSmall { needed, .. }) => needed,
                    _ => return Err(NpuError::InvalidImage),
                }
            }
            Err(_) => return Err(NpuError::InvalidImage),
        };
        match plan.checked_add(r.input_len + r.output_len) {
            Some(needed) if needed <= self.arena.len() => Ok(()),
            _ => Err(NpuError::ModelTooLarge),
        }
    }

    fn load_model(&mut self, model: &NpuModel) -> Result<(), NpuError> {
        self.expect(NpuState::Idle)?;
        let resident = Self::resident(model)?;
        // Plan once now, so a too-small arena is refused at load time.
        let (plan, _, _) = self.split(&resident)?;
        Interpreter::new(&resident.model, plan).map_err(|_| NpuError::ModelTooLarge)?;
        self.resident = Some(resident);
        self.input_valid = false;
        self.output_valid = false;
        Ok(())
    }

    fn unload_model(&mut self) {
        // A run in flight then fails at its next poll (no model to go on).
        self.resident = None;
        self.input_valid = false;
        self.output_valid = false;
    }

    fn loaded_model(&self) -> Option<u32> {
        self.resident.map(|r| r.id)
    }

    fn set_input(&mut self, input: &[u8]) -> Result<(), NpuError> {
        self.expect(NpuState::Idle)?;
        let r = self.resident.ok_or(NpuError::NoModel)?;
        if input.len() != r.input_len {
            return Err(NpuError::InputSizeMismatch {
                expected: r.input_len,
                actual: input.len(),
            });
        }
        let (_, _, staged) = self.split(&r)?;
        staged.copy_from_slice(input);
        self.input_valid = true;
        self.output_valid = false;
        Ok(())
    }

    fn invoke(&mut self) -> Result<NpuRun, NpuError> {
        let r = self.ready_to_run()?;
        self.invokes = self.invokes.wrapping_add(1);
        match self.run(r) {
            Ok(()) => {
                self.output_valid = true;
                Ok(NpuRun { latency_us: 0 })
            }
            Err(e) => {
                self.state = NpuState::Error;
                self.output_valid = false;
                Err(e)
            }
        }
    }

    fn invoke_async(&mut self, done: NpuCallback, context: usize) -> Result<(), NpuError> {
        let r = self.ready_to_run()?;
        self.invokes = self.invokes.wrapping_add(1);
        self.output_valid = false;
        match self.begin(r) {
            Ok(checkpoint) => {
                self.run = Some(SlicedRun {
                    checkpoint,
                    done,
                    context,
                });
                self.state = NpuState::Busy;
                Ok(())
            }
            Err(e) => {
                self.state = NpuState::Error;
                Err(e)
            }
        }
    }

    /// Runs one step of the run in flight; `true` when that finished
    /// it (`done` has been called).
    fn poll(&mut self) -> bool {
        let Some(run) = self.run.filter(|_| self.state == NpuState::Busy) else {
            return false;
        };
        let result = match self.resident {
            Some(r) => self.slice(r, run.checkpoint),
            None => Err(NpuError::NoModel),
        };
        let outcome = match result {
            Ok(checkpoint) if !checkpoint.is_done() => {
                self.run = Some(SlicedRun { checkpoint, ..run });
                return false;
            }
            Ok(_) => {
                self.state = NpuState::Idle;
                self.output_valid = true;
                Ok(NpuRun { latency_us: 0 })
            }
            Err(e) => {
                self.state = NpuState::Error;
                Err(e)
            }
        };
        self.run = None;
        (run.done)(run.context, outcome);
        true
    }

    fn abort(&mut self) -> bool {
        if self.state != NpuState::Busy {
            return false;
        }
        self.run = None;
        self.output_valid = false;
        self.state = NpuState::Idle;
        true
    }

    fn get_output(&mut self, output: &mut [u8]) -> Result<usize, NpuError> {
        self.expect(NpuState::Idle)?;
        let r = self.resident.ok_or(NpuError::NoModel)?;
        if !self.output_valid {
            return Err(NpuError::NoOutput);
        }
        let Some(dst) = output.get_mut(..r.output_len) else {
            return Err(NpuError::OutputTooSmall {
                needed: r.output_len,
                actual: output.len(),
            });
        };
        let (_, out, _) = self.split(&r)?;
        dst.copy_from_slice(out);
        Ok(r.output_len)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: DeviceMask = DeviceMask::ALL;
    const NPU: Device = Device::Npu;
    const CPU: Device = Device::CpuInterpreter;

    fn query(allowed: DeviceMask, npu_busy: bool) -> PlacementQuery {
        PlacementQuery::new(1, allowed, BOTH, npu_busy)
    }

    #[test]
    fn every_policy_answers_only_usable_devices() {
        for policy in Policy::ALL {
            let place = policy.placement();
            for busy in [false, true] {
                for random in [0, u32::MAX] {
                    let q = |allowed| query(allowed, busy).with_random(random);
                    assert_eq!(place(&q(DeviceMask::NPU)), Some(NPU), "{policy:?}");
                    assert_eq!(
                        place(&q(DeviceMask::CPU_INTERPRETER)),
                        Some(CPU),
                        "{policy:?}"
                    );
                    assert_eq!(place(&q(DeviceMask::NONE)), None, "{policy:?}");
                    let absent =
                        PlacementQuery::new(1, DeviceMask::CPU_INTERPRETER, DeviceMask::NPU, busy);
                    assert_eq!(place(&absent), None, "{policy:?}");
                }
            }
        }
    }

    #[test]
    fn policies_for_a_model_on_both_devices() {
        let (idle, busy) = (query(BOTH, false), query(BOTH, true));
        assert_eq!(
            (prefer_npu(&idle), prefer_npu(&busy)),
            (Some(NPU), Some(NPU))
        );
        assert_eq!(
            (prefer_cpu(&idle), prefer_cpu(&busy)),
            (Some(CPU), Some(CPU))
        );
        assert_eq!(
            (busy_aware(&idle), busy_aware(&busy)),
            (Some(NPU), Some(CPU))
        );
        // Both busy: wait for the NPU; only the CPU busy: the NPU.
        let both_busy = busy.with_busy(CPU, true);
        assert!(both_busy.is_busy(NPU) && both_busy.is_busy(CPU));
        assert_eq!(busy_aware(&both_busy), Some(NPU));
        assert_eq!(busy_aware(&idle.with_busy(CPU, true)), Some(NPU));
        // Random: the top bit of the word.
        assert_eq!(random(&idle.with_random(0x7FFF_FFFF)), Some(NPU));
        assert_eq!(random(&idle.with_random(0x8000_0000)), Some(CPU));
    }

    #[test]
    fn earliest_finish_adds_backlog_to_the_prediction_and_ties_go_to_the_npu() {
        let q = query(BOTH, true)
            .with_prediction(NPU, Some(1_000))
            .with_prediction(CPU, Some(1_500));
        // NPU idle: 1000 against 1500.
        assert_eq!(earliest_finish(&q), Some(NPU));
        // 600 left on the NPU: 1600 against 1500.
        let q = q.with_backlog(NPU, 600);
        assert_eq!((q.finish_us(NPU), q.finish_us(CPU)), (1_600, 1_500));
        assert_eq!(earliest_finish(&q), Some(CPU));
        // 500 left: 1500 each, the NPU wins the tie.
        assert_eq!(earliest_finish(&q.with_backlog(NPU, 500)), Some(NPU));
        // A device never measured counts 0: it is tried.
        let unmeasured = q.with_prediction(CPU, None).with_backlog(NPU, 0);
        assert_eq!(earliest_finish(&unmeasured), Some(CPU));
        assert_eq!(earliest_finish(&query(BOTH, false)), Some(NPU));
        // Only usable devices compete, however fast the other would be.
        let npu_only = PlacementQuery::new(1, DeviceMask::NPU, BOTH, true)
            .with_prediction(NPU, Some(9_000))
            .with_prediction(CPU, Some(1));
        assert_eq!(earliest_finish(&npu_only), Some(NPU));
        // No overflow on absurd figures.
        let huge = q.with_backlog(NPU, u64::MAX);
        assert_eq!(huge.finish_us(NPU), u64::MAX);
        assert_eq!(earliest_finish(&huge), Some(CPU));
    }

    #[test]
    fn policies_by_name() {
        for policy in Policy::ALL {
            assert_eq!(Policy::from_name(policy.name()), Some(policy));
        }
        assert_eq!(Policy::from_name("fastest"), None);
        assert_eq!(Policy::default(), Policy::NpuOnly);
        assert_eq!(Device::ALL.map(Device::index), [0, 1]);
    }
}
