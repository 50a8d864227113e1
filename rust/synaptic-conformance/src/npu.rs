//! Suite `npu`: the NPU hardware abstraction through the deterministic stub:
//! its documented output function, state machine, size and dtype checks,
//! latency, injected faults and asynchronous completion.

use core::num::NonZeroU32;

use synaptic_abi::Errno;
use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{DType, TensorMeta};
use synaptic_runtime::npu::{
    stub_input_hash, NpuDevice, NpuError, NpuModel, NpuRun, NpuState, StubNpu, FAIL_MARKER,
};
use synaptic_runtime::time::{Clock, FakeClock};

use crate::support::Exclusive;

cases![
    output_is_the_documented_function,
    state_machine_transitions,
    size_and_dtype_checks,
    latency_is_consumed_through_the_time_source,
    fails_every_nth_invoke_and_recovers,
    fails_on_the_marker_byte_only_when_enabled,
    async_invoke_completes_on_poll_after_latency,
    async_invoke_whose_model_was_unloaded_completes_with_an_error,
];

type Npu<'c> = StubNpu<&'c FakeClock, 64, 16>;

/// Output of the stub for seed 0, model 1, input `[1, 2, 3, 4]`: computed
/// independently of the runtime from the documented function.
const KNOWN_OUTPUT: [u8; 4] = [187, 115, 110, 65];

fn model(id: u32, n_in: usize, n_out: usize) -> Option<NpuModel> {
    Some(NpuModel {
        id,
        input: TensorMeta::vector(DType::Int8, n_in).ok()?,
        output: TensorMeta::vector(DType::Int8, n_out).ok()?,
        flash_offset: 0,
        flash_size: 0,
        image: &[],
    })
}

fn ready(clock: &FakeClock) -> Option<Npu<'_>> {
    let mut n: Npu<'_> = StubNpu::new(clock, 0);
    n.init().ok()?;
    n.load_model(&model(1, 4, 4)?).ok()?;
    Some(n)
}

/// The output is the documented hash of (seed, model, input): a known
/// answer, the same again for the same input, different for one changed bit.
pub fn output_is_the_documented_function() -> Outcome {
    check_eq!(stub_input_hash(0, 1, &[1, 2, 3, 4]), 0xE132_6688u32);
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    ok!(n.set_input(&[1, 2, 3, 4]));
    ok!(n.invoke());
    let mut out = [0u8; 8];
    check!(n.get_output(&mut out) == Ok(4));
    check!(out[..4] == KNOWN_OUTPUT);
    ok!(n.set_input(&[1, 2, 3, 4]));
    ok!(n.invoke());
    let mut again = [0u8; 4];
    ok!(n.get_output(&mut again));
    check!(again == KNOWN_OUTPUT);
    ok!(n.set_input(&[1, 2, 3, 5]));
    ok!(n.invoke());
    ok!(n.get_output(&mut again));
    check!(again != KNOWN_OUTPUT);
    Ok(())
}

/// Off, Idle, Suspended and back, with each operation refused in the
/// states where it is not allowed; deinit drops the model.
pub fn state_machine_transitions() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n: Npu<'_> = StubNpu::new(&clock, 0);
    let m = some!(model(1, 4, 4));
    check!(n.state() == NpuState::Off);
    check!(n.load_model(&m) == Err(NpuError::WrongState(NpuState::Off)));
    ok!(n.init());
    check!(n.init() == Err(NpuError::WrongState(NpuState::Idle)));
    check!(n.set_input(&[0; 4]) == Err(NpuError::NoModel));
    ok!(n.load_model(&m));
    check!(n.invoke() == Err(NpuError::NoInput));
    let mut out = [0u8; 4];
    check!(n.get_output(&mut out) == Err(NpuError::NoOutput));
    ok!(n.suspend());
    check!(n.state() == NpuState::Suspended);
    check!(n.set_input(&[0; 4]) == Err(NpuError::WrongState(NpuState::Suspended)));
    check!(n.suspend() == Err(NpuError::WrongState(NpuState::Suspended)));
    ok!(n.resume());
    check!(n.resume() == Err(NpuError::WrongState(NpuState::Idle)));
    check!(n.loaded_model() == Some(1));
    n.deinit();
    check!(n.state() == NpuState::Off);
    check!(n.loaded_model().is_none());
    check!(NpuError::WrongState(NpuState::Off).to_errno() == Errno::NoDev);
    Ok(())
}

/// Input length must match the model; tensors must fit the device's
/// buffers and dtypes; a short output buffer is refused.
pub fn size_and_dtype_checks() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    check!(
        n.set_input(&[0; 5])
            == Err(NpuError::InputSizeMismatch {
                expected: 4,
                actual: 5
            })
    );
    check!(n.load_model(&some!(model(2, 65, 1))) == Err(NpuError::ModelTooLarge));
    check!(n.load_model(&some!(model(2, 1, 17))) == Err(NpuError::ModelTooLarge));
    let mut f = some!(model(2, 1, 1));
    f.output = ok!(TensorMeta::vector(DType::Float32, 1));
    check!(n.load_model(&f) == Err(NpuError::UnsupportedDtype(DType::Float32)));
    check!(!n.capabilities().supports(DType::Float32));
    check!(n.capabilities().supports(DType::Int8));
    check_eq!(n.capabilities().max_input_bytes, 64);
    check_eq!(n.capabilities().max_output_bytes, 16);
    ok!(n.set_input(&[0; 4]));
    ok!(n.invoke());
    let mut short = [0u8; 3];
    check!(
        n.get_output(&mut short)
            == Err(NpuError::OutputTooSmall {
                needed: 4,
                actual: 3
            })
    );
    Ok(())
}

/// A blocking invoke consumes exactly the configured latency of the time
/// source (here a fake clock: 750 us pass, no real waiting).
pub fn latency_is_consumed_through_the_time_source() -> Outcome {
    let clock = FakeClock::new(1_000);
    let mut n = some!(ready(&clock));
    n.set_latency_us(750);
    ok!(n.set_input(&[9; 4]));
    check!(n.invoke() == Ok(NpuRun { latency_us: 750 }));
    check_eq!(clock.now_us(), 1_750);
    Ok(())
}

/// With `fail_every(3)` the third invoke faults, the device stays in Error
/// (refusing work) until cleared, then works again.
pub fn fails_every_nth_invoke_and_recovers() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    n.fail_every(NonZeroU32::new(3));
    ok!(n.set_input(&[0; 4]));
    check!(n.invoke().is_ok());
    check!(n.invoke().is_ok());
    check!(n.invoke() == Err(NpuError::DeviceFault));
    check!(n.state() == NpuState::Error);
    check!(n.invoke() == Err(NpuError::WrongState(NpuState::Error)));
    let mut out = [0u8; 4];
    check!(n.get_output(&mut out) == Err(NpuError::WrongState(NpuState::Error)));
    ok!(n.clear_error());
    check!(n.invoke().is_ok());
    check_eq!(n.invoke_count(), 4);
    check!(NpuError::DeviceFault.to_errno() == Errno::Io);
    Ok(())
}

/// The fail marker byte faults only when enabled, and only as the first byte.
pub fn fails_on_the_marker_byte_only_when_enabled() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    ok!(n.set_input(&[FAIL_MARKER, 0, 0, 0]));
    check!(n.invoke().is_ok());
    n.fail_on_marker(true);
    check!(n.invoke() == Err(NpuError::DeviceFault));
    ok!(n.clear_error());
    ok!(n.set_input(&[0, FAIL_MARKER, 0, 0]));
    check!(n.invoke().is_ok());
    Ok(())
}

/// What the completion callback of the asynchronous cases saw.
static DONE: Exclusive<Option<(usize, Result<NpuRun, NpuError>)>> = Exclusive::new(None);

fn done(context: usize, result: Result<NpuRun, NpuError>) {
    if let Some(mut d) = DONE.claim() {
        *d = Some((context, result));
    }
}

fn last_done() -> Option<Option<(usize, Result<NpuRun, NpuError>)>> {
    DONE.claim().map(|d| *d)
}

/// An asynchronous invoke keeps the device Busy until the latency has
/// passed on the clock; then `poll` completes it once, calling back with
/// the context, and the output is the same as a blocking invoke's.
pub fn async_invoke_completes_on_poll_after_latency() -> Outcome {
    *claim!(DONE) = None;
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    n.set_latency_us(100);
    ok!(n.set_input(&[1, 2, 3, 4]));
    ok!(n.invoke_async(done, 42));
    check!(n.state() == NpuState::Busy);
    check!(n.set_input(&[0; 4]) == Err(NpuError::WrongState(NpuState::Busy)));
    clock.advance(99);
    check!(!n.poll());
    check!(some!(last_done()).is_none());
    clock.advance(1);
    check!(n.poll());
    check!(some!(last_done()) == Some((42, Ok(NpuRun { latency_us: 100 }))));
    check!(n.state() == NpuState::Idle);
    let mut out = [0u8; 4];
    ok!(n.get_output(&mut out));
    check!(out == KNOWN_OUTPUT);
    check!(!n.poll());
    Ok(())
}

/// An asynchronous invoke whose model is unloaded while in flight still
/// completes (the callback sees `NoModel`), and the device returns to Idle
/// and accepts a model again.
pub fn async_invoke_whose_model_was_unloaded_completes_with_an_error() -> Outcome {
    *claim!(DONE) = None;
    let clock = FakeClock::new(0);
    let mut n = some!(ready(&clock));
    n.set_latency_us(10);
    ok!(n.set_input(&[1, 2, 3, 4]));
    ok!(n.invoke_async(done, 5));
    n.unload_model();
    check!(n.state() == NpuState::Busy);
    clock.advance(10);
    check!(n.poll());
    check!(some!(last_done()) == Some((5, Err(NpuError::NoModel))));
    check!(n.state() == NpuState::Idle);
    check!(n.load_model(&some!(model(1, 4, 4))).is_ok());
    check_eq!(n.invoke_count(), 0);
    Ok(())
}
