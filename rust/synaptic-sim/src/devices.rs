//! Stub execution devices on one fake clock, for scheduling scenarios (the
//! placement benchmark, the REALTIME hand-over tests).
//!
//! [`TimedStub`] is the runtime's stub NPU with two additions: its latency
//! follows the resident model (a table of model id and µs, set at load),
//! and it books the busy time that falls inside a measuring window. Made
//! [`sliced`](TimedStub::sliced), it stands for the CPU interpreter
//! (`synaptic_runtime::device::TfliteDevice`): an asynchronous invoke
//! advances only in `poll`, which runs at most one slice of it on the
//! caller's thread (the clock advances by up to the slice during the
//! poll).

use synaptic_runtime::npu::{
    NpuCallback, NpuCapabilities, NpuDevice, NpuError, NpuModel, NpuRun, NpuState, StubNpu,
};
use synaptic_runtime::pipeline::PipelinePool;
use synaptic_runtime::registry::Registry;
use synaptic_runtime::sched::{Env, Scheduler, StepOutcome};
use synaptic_runtime::time::{Clock, FakeClock};

/// One scheduler step over `npu` and the CPU device `cpu`, on the fake
/// clock, with no profiler: a scenario's turn.
pub fn step<N: NpuDevice, const J: usize, const M: usize, const P: usize, const S: usize>(
    sched: &mut Scheduler<'_, J>,
    registry: &mut Registry<M>,
    npu: &mut N,
    cpu: &mut dyn NpuDevice,
    pipelines: &PipelinePool<P, S>,
    clock: &FakeClock,
) -> StepOutcome {
    sched.step(&mut Env {
        registry,
        npu,
        cpu: Some(cpu),
        pipelines,
        clock,
        profiler: None,
    })
}

/// The stub under a [`TimedStub`]: 64-byte inputs, 16-byte outputs.
pub type Stub = StubNpu<&'static FakeClock, 64, 16>;

/// A stub device timed by model, optionally sliced (see the module docs).
pub struct TimedStub {
    /// The stub itself (its latency may also be set directly).
    pub stub: Stub,
    clock: &'static FakeClock,
    /// (raw model id, latency µs), applied at `load_model`.
    latency: Vec<(u32, u64)>,
    /// Most device time one `poll` runs; `None`: the stub's own timing.
    slice_us: Option<u64>,
    window_us: u64,
    busy_until_us: u64,
    busy_in_window_us: u64,
}

impl TimedStub {
    /// An initialised stub with output seed `seed`, booking busy time
    /// before `window_us` (`u64::MAX`: all of it).
    ///
    /// # Panics
    ///
    /// If the stub does not initialise (it always does from `Off`).
    pub fn new(clock: &'static FakeClock, seed: u32, window_us: u64) -> TimedStub {
        let mut stub = StubNpu::new(clock, seed);
        stub.init().expect("a new stub initialises");
        TimedStub {
            stub,
            clock,
            latency: Vec::new(),
            slice_us: None,
            window_us,
            busy_until_us: 0,
            busy_in_window_us: 0,
        }
    }

    /// Each model's latency: (raw model id, µs).
    pub fn with_latencies(mut self, latency: &[(u32, u64)]) -> TimedStub {
        self.latency = latency.to_vec();
        self
    }

    /// A sliced device: a run advances only in `poll`, `slice_us` a poll.
    pub fn sliced(mut self, slice_us: u64) -> TimedStub {
        self.slice_us = Some(slice_us);
        self
    }

    /// When the run started last ends by the clock, µs.
    pub fn busy_until_us(&self) -> u64 {
        self.busy_until_us
    }

    /// Device time booked inside the window so far, µs.
    pub fn busy_in_window_us(&self) -> u64 {
        self.busy_in_window_us
    }

    fn book(&mut self) {
        let start = self.clock.now_us();
        let end = start + self.stub.latency_us();
        self.busy_until_us = end;
        self.busy_in_window_us += end.min(self.window_us) - start.min(self.window_us);
    }
}

impl NpuDevice for TimedStub {
    synaptic_runtime::forward_npu_device!(stub: init, deinit, state, can_run, unload_model, loaded_model,
        set_input, get_output, suspend, resume, clear_error, last_run);
    fn capabilities(&self) -> NpuCapabilities {
        NpuCapabilities {
            sliced: self.slice_us.is_some(),
            ..self.stub.capabilities()
        }
    }
    fn load_model(&mut self, model: &NpuModel) -> Result<(), NpuError> {
        self.stub.load_model(model)?;
        if let Some((_, us)) = self.latency.iter().find(|(id, _)| *id == model.id) {
            self.stub.set_latency_us(*us);
        }
        Ok(())
    }
    fn invoke(&mut self) -> Result<NpuRun, NpuError> {
        self.book();
        self.stub.invoke()
    }
    fn invoke_async(&mut self, done: NpuCallback, context: usize) -> Result<(), NpuError> {
        self.book();
        self.stub.invoke_async(done, context)
    }
    fn poll(&mut self) -> bool {
        if let Some(slice_us) = self.slice_us {
            if self.stub.state() != NpuState::Busy {
                return false;
            }
            // One slice of the run: the stub completes when the clock
            // reaches the run's end.
            let left = self.busy_until_us.saturating_sub(self.clock.now_us());
            self.clock.advance(left.min(slice_us));
        }
        self.stub.poll()
    }
}
