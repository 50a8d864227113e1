//! Suite `sched`: the stage-preemptive priority scheduler against the stub
//! NPU, in fake time: priority and FIFO order, preemption at stage
//! boundaries (and its absence for non-preemptible jobs or one concurrent
//! job), waiting with a timeout, cancelling, callbacks, NPU faults,
//! deadlines and buffer limits.
//!
//! The stages here are plain functions, so the fake clock they advance is
//! the suite's `static` [`SharedClock`]; every case starts it at 0. The stub
//! NPU takes [`NPU_US`] per invoke and the slow stage [`STAGE_US`].

use synaptic_abi::{Errno, Priority};
use synaptic_check::{check, check_eq, Failure, Outcome};
use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
use synaptic_runtime::npu::{stub_output, NpuDevice, NpuError, StubNpu, FAIL_MARKER};
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Stage};
use synaptic_runtime::process::stages::{StageConfig, StageFn};
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry, RegistryError};
use synaptic_runtime::sched::{
    Env, JobError, JobId, JobRequest, JobStatus, SchedError, Scheduler, StepOutcome,
};
use synaptic_runtime::time::Clock;

use crate::support::{Exclusive, SharedClock};

cases![
    run_sync_gives_the_stub_output_through_every_stage,
    higher_priority_runs_first_and_fifo_within_a_class,
    realtime_job_starts_at_the_next_stage_boundary,
    non_preemptible_job_runs_to_completion_first,
    max_concurrent_one_disables_preemption,
    wait_times_out_then_completes,
    cancel_queued_and_running_jobs,
    callback_gets_the_output_and_the_slot_is_reclaimed,
    npu_fault_fails_the_job_and_the_next_job_still_runs,
    missed_deadline_and_submit_errors,
    small_work_buffer_and_stale_model_fail_cleanly,
];

/// Fake time one slow stage takes.
pub const STAGE_US: u64 = 200;
/// Fake time one stub NPU invoke takes.
pub const NPU_US: u64 = 1000;
const SEED: u32 = 7;

static CLOCK: SharedClock = SharedClock::new();

type Npu = StubNpu<&'static SharedClock, 64, 16>;
type Call = (JobId, Result<[u8; 4], JobError>, usize);
static CALLS: Exclusive<heapless::Vec<Call, 8>> = Exclusive::new(heapless::Vec::new());

/// Copies its input and takes [`STAGE_US`] of fake time.
fn slow_identity(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    CLOCK.advance(STAGE_US);
    let n = input.data().len();
    let Some(out) = out.get_mut(..n) else {
        return Err(ProcessError::OutputTooSmall {
            needed: n,
            actual: out.len(),
        });
    };
    out.copy_from_slice(input.data());
    Ok(input.meta())
}

/// Adds 1 to every byte, in no time (makes the stage's effect visible).
fn increment(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    for (o, &i) in out.iter_mut().zip(input.data()) {
        *o = i.wrapping_add(1);
    }
    Ok(input.meta())
}

fn stage(func: StageFn) -> Stage {
    Stage {
        name: "test",
        func,
        config: StageConfig::None,
    }
}

fn record(id: JobId, result: Result<TensorRef<'_>, JobError>, context: usize) {
    let result = result.map(|t| {
        let mut b = [0u8; 4];
        for (o, i) in b.iter_mut().zip(t.data()) {
            *o = *i;
        }
        b
    });
    if let Some(mut calls) = CALLS.claim() {
        // A full record shows up as a missing call in the case's check.
        let _ = calls.push((id, result, context));
    }
}

fn clear_calls() -> Outcome {
    claim!(CALLS).clear();
    Ok(())
}

/// Registry, stub NPU, pipeline pool and profiler around one 8 -> 4 byte
/// model; sized to what the cases use (a larger pool costs stack).
struct Rig {
    registry: Registry<2>,
    npu: Npu,
    pool: PipelinePool<3, 6>,
    model: ModelHandle,
    profiler: Profiler,
}

impl Rig {
    fn new() -> Result<Rig, Failure> {
        CLOCK.set(0);
        let mut registry = Registry::new();
        let model = ok!(registry.register(&ModelDesc {
            name: "m",
            version: 1,
            input: ok!(TensorMeta::vector(DType::Int8, 8)),
            output: ok!(TensorMeta::vector(DType::Int8, 4)),
            flash_offset: 0,
            flash_size: 0,
            sram_needed: 0,
            crc32: 0,
            devices: synaptic_runtime::device::DeviceMask::NPU,
            image: &[],
        }));
        let mut npu = StubNpu::new(&CLOCK, SEED);
        ok!(npu.init());
        npu.set_latency_us(NPU_US);
        let mut profiler = Profiler::new();
        profiler.enable(&CLOCK);
        Ok(Rig {
            registry,
            npu,
            pool: PipelinePool::new(),
            model,
            profiler,
        })
    }

    /// `pre` stages, the model, then `post` stages, built.
    fn pipeline(
        &mut self,
        name: &str,
        pre: &[StageFn],
        post: &[StageFn],
    ) -> Result<PipelineId, PipelineError> {
        let id = self.pool.create(name)?;
        for f in pre {
            self.pool.add_preprocess(id, stage(*f))?;
        }
        self.pool.add_model(id, self.model)?;
        for f in post {
            self.pool.add_postprocess(id, stage(*f))?;
        }
        self.pool.build(id)?;
        Ok(id)
    }

    fn env(&mut self) -> Env<'_, Npu, SharedClock, 2, 3, 6> {
        Env {
            registry: &mut self.registry,
            npu: &mut self.npu,
            cpu: None,
            pipelines: &self.pool,
            clock: &CLOCK,
            profiler: Some(&mut self.profiler),
        }
    }
}

fn input(bytes: &[u8; 8]) -> Result<TensorRef<'_>, Failure> {
    let meta = ok!(TensorMeta::vector(DType::Int8, 8));
    Ok(ok!(TensorRef::wrap(meta, bytes)))
}

fn expected(model: ModelHandle, input: &[u8]) -> [u8; 4] {
    let mut out = [0u8; 4];
    stub_output(SEED, model.raw(), input, &mut out);
    out
}

fn with(request: JobRequest<'_>, priority: Priority, preemptible: bool) -> JobRequest<'_> {
    JobRequest {
        priority,
        preemptible,
        ..request
    }
}

/// A job through a pre stage, the model and a post stage gives the stub's
/// output of the preprocessed input, postprocessed; the profile records the
/// NPU time and the working memory.
pub fn run_sync_gives_the_stub_output_through_every_stage() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[increment], &[increment]));
    let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    check_eq!(sched.buffer_len(), 64);
    let mut out = [0u8; 16];
    let (meta, n) =
        ok!(sched.run_sync(JobRequest::new(p, input(&data)?), &mut out, &mut rig.env()));
    check!(meta.dtype == DType::Int8);
    check_eq!(n, 4);
    let mut e = expected(rig.model, &[2, 3, 4, 5, 6, 7, 8, 9]);
    e.iter_mut().for_each(|b| *b = b.wrapping_add(1));
    check!(out[..4] == e);
    let last = some!(rig.profiler.last());
    check_eq!(last.npu_us, NPU_US);
    check_eq!(last.total_us, NPU_US);
    // The model step holds its 8-byte input and 4-byte output buffers.
    check_eq!(last.memory_peak, 12);
    Ok(())
}

/// Jobs submitted BestEffort, Normal, Normal, RealTime run RealTime first,
/// then the two Normal ones in submission order, then BestEffort.
pub fn higher_priority_runs_first_and_fifo_within_a_class() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[], &[]));
    let data = [0u8; 8];
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    let classes = [
        Priority::BestEffort,
        Priority::Normal,
        Priority::Normal,
        Priority::RealTime,
    ];
    let mut ids: heapless::Vec<JobId, 4> = heapless::Vec::new();
    for class in classes {
        let req = with(JobRequest::new(p, input(&data)?), class, true);
        check!(ids.push(ok!(sched.submit(req, &rig.pool, &CLOCK))).is_ok());
    }
    let mut order: heapless::Vec<JobId, 4> = heapless::Vec::new();
    let mut env = rig.env();
    while let StepOutcome::Ran { job, .. } = sched.step(&mut env) {
        check!(order.push(job).is_ok());
    }
    check!(order == [ids[3], ids[1], ids[2], ids[0]]);
    Ok(())
}

/// What [`preemption_scenario`] observed.
struct Scenario {
    /// Fake time from B's submission to B's completion.
    b_latency_us: u64,
    /// (job, step) in the order the scheduler ran them.
    trace: heapless::Vec<(JobId, u8), 8>,
    a: JobId,
    b: JobId,
    /// A's output.
    a_output: [u8; 4],
}

/// Job A (Normal): a slow pre stage, the model, three slow post stages. Job
/// B (RealTime, the model only) arrives after A's first stage.
fn preemption_scenario(preemptible: bool) -> Result<Scenario, Failure> {
    let mut rig = Rig::new()?;
    let slow = slow_identity as StageFn;
    let a = ok!(rig.pipeline("a", &[slow], &[slow, slow, slow]));
    let b = ok!(rig.pipeline("b", &[], &[]));
    let a_data = [9u8; 8];
    let b_data = [3u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    let request = with(
        JobRequest::new(a, input(&a_data)?),
        Priority::Normal,
        preemptible,
    );
    let ja = ok!(sched.submit(request, &rig.pool, &CLOCK));
    let mut trace: heapless::Vec<(JobId, u8), 8> = heapless::Vec::new();
    let StepOutcome::Ran { job, step, .. } = sched.step(&mut rig.env()) else {
        fail!("the first step ran nothing");
    };
    check!(trace.push((job, step)).is_ok());
    check_eq!(CLOCK.now_us(), STAGE_US);
    let request = with(
        JobRequest::new(b, input(&b_data)?),
        Priority::RealTime,
        true,
    );
    let jb = ok!(sched.submit(request, &rig.pool, &CLOCK));
    let arrived = CLOCK.now_us();
    let mut b_done = None;
    while let StepOutcome::Ran {
        job,
        step,
        finished,
    } = sched.step(&mut rig.env())
    {
        check!(trace.push((job, step)).is_ok());
        if job == jb && finished {
            b_done = Some(CLOCK.now_us());
        }
    }
    let mut a_output = [0u8; 4];
    ok!(sched.get_result(ja, &mut a_output));
    check!(a_output == expected(rig.model, &a_data));
    let mut b_output = [0u8; 4];
    ok!(sched.get_result(jb, &mut b_output));
    check!(b_output == expected(rig.model, &b_data));
    Ok(Scenario {
        b_latency_us: some!(b_done) - arrived,
        trace,
        a: ja,
        b: jb,
        a_output,
    })
}

/// A RealTime job arriving while a preemptible Normal job runs starts at the
/// next stage boundary: its latency is exactly its own NPU time (1000 us of
/// fake time), and A resumes where it stopped.
pub fn realtime_job_starts_at_the_next_stage_boundary() -> Outcome {
    let s = preemption_scenario(true)?;
    check_eq!(s.b_latency_us, NPU_US);
    let (a, b) = (s.a, s.b);
    check!(s.trace == [(a, 0), (b, 0), (a, 1), (a, 2), (a, 3), (a, 4)]);
    Ok(())
}

/// A non-preemptible job keeps the CPU: the RealTime job waits for A's model
/// and three post stages (1000 + 3 x 200 us), then takes its own 1000 us;
/// preemption does not change A's output.
pub fn non_preemptible_job_runs_to_completion_first() -> Outcome {
    let s = preemption_scenario(false)?;
    check_eq!(s.b_latency_us, NPU_US + 3 * STAGE_US + NPU_US);
    let (a, b) = (s.a, s.b);
    check!(s.trace == [(a, 0), (a, 1), (a, 2), (a, 3), (a, 4), (b, 0)]);
    check!(s.a_output == preemption_scenario(true)?.a_output);
    Ok(())
}

/// With at most one started job, a RealTime arrival waits in the queue
/// until the running job finishes; the limit must be 1 to `J`.
pub fn max_concurrent_one_disables_preemption() -> Outcome {
    let mut rig = Rig::new()?;
    let a = ok!(rig.pipeline("a", &[slow_identity], &[]));
    let b = ok!(rig.pipeline("b", &[], &[]));
    let data = [0u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    check!(sched.set_max_concurrent(0) == Err(SchedError::InvalidArgument));
    check!(sched.set_max_concurrent(3) == Err(SchedError::InvalidArgument));
    ok!(sched.set_max_concurrent(1));
    let ja = ok!(sched.submit(JobRequest::new(a, input(&data)?), &rig.pool, &CLOCK));
    sched.step(&mut rig.env());
    let request = with(JobRequest::new(b, input(&data)?), Priority::RealTime, true);
    let jb = ok!(sched.submit(request, &rig.pool, &CLOCK));
    check!(
        sched.step(&mut rig.env())
            == StepOutcome::Ran {
                job: ja,
                step: 1,
                finished: true
            }
    );
    check!(sched.status(jb) == Ok(JobStatus::Queued));
    Ok(())
}

/// `wait` gives up between steps once the timeout has passed (the job
/// continues), and a later wait collects the result; the result is
/// readable in place, copied only into a large enough buffer, and released.
pub fn wait_times_out_then_completes() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[slow_identity], &[slow_identity]));
    let data = [5u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    let id = ok!(sched.submit(JobRequest::new(p, input(&data)?), &rig.pool, &CLOCK));
    check!(sched.wait(id, 500, &mut rig.env()) == Err(SchedError::TimedOut));
    // One stage (200 us) is under 500 us, the model (1000 us) crosses it.
    check_eq!(CLOCK.now_us(), STAGE_US + NPU_US);
    check!(sched.status(id) == Ok(JobStatus::Running { next_step: 2 }));
    check!(sched.get_result(id, &mut [0; 4]) == Err(SchedError::NotFinished));
    let meta = ok!(sched.wait(id, 10_000, &mut rig.env()));
    check_eq!(meta.byte_len(), 4);
    check!(ok!(sched.output(id)).data() == expected(rig.model, &data));
    check!(
        sched.get_result(id, &mut [0; 3])
            == Err(SchedError::OutputTooSmall {
                needed: 4,
                actual: 3
            })
    );
    ok!(sched.release(id));
    check!(sched.status(id) == Err(SchedError::StaleJob));
    Ok(())
}

/// Cancel reclaims a queued job (its callback sees Cancelled) and a running
/// one; a finished job cannot be cancelled.
pub fn cancel_queued_and_running_jobs() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[slow_identity], &[]));
    let data = [0u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    clear_calls()?;
    let queued = ok!(sched.submit(
        JobRequest {
            callback: Some((record, 11)),
            ..JobRequest::new(p, input(&data)?)
        },
        &rig.pool,
        &CLOCK
    ));
    ok!(sched.cancel(queued));
    check!(claim!(CALLS).as_slice() == [(queued, Err(JobError::Cancelled), 11)]);
    check!(sched.cancel(queued) == Err(SchedError::StaleJob));
    let running = ok!(sched.submit(JobRequest::new(p, input(&data)?), &rig.pool, &CLOCK));
    sched.step(&mut rig.env());
    ok!(sched.cancel(running));
    check_eq!(sched.pending(), 0);
    check_eq!(sched.run_until_idle(&mut rig.env()), 0);
    let done = ok!(sched.submit(JobRequest::new(p, input(&data)?), &rig.pool, &CLOCK));
    sched.run_until_idle(&mut rig.env());
    check!(sched.cancel(done) == Err(SchedError::AlreadyFinished));
    check!(JobError::Cancelled.to_errno() == Errno::Canceled);
    Ok(())
}

/// A job with a callback hands its output to the callback with the context
/// word, and its slot is reclaimed at once (the id turns stale).
pub fn callback_gets_the_output_and_the_slot_is_reclaimed() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[], &[]));
    let data = [8u8; 8];
    let mut work = [0u8; 128];
    let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut work);
    clear_calls()?;
    let req = JobRequest {
        callback: Some((record, 99)),
        ..JobRequest::new(p, input(&data)?)
    };
    let id = ok!(sched.submit(req, &rig.pool, &CLOCK));
    check!(sched.submit(req, &rig.pool, &CLOCK) == Err(SchedError::Full));
    check!(SchedError::Full.to_errno() == Errno::Again);
    sched.run_until_idle(&mut rig.env());
    check!(claim!(CALLS).as_slice() == [(id, Ok(expected(rig.model, &data)), 99)]);
    check!(sched.status(id) == Err(SchedError::StaleJob));
    let again = ok!(sched.submit(req, &rig.pool, &CLOCK));
    check!(again != id);
    Ok(())
}

/// An NPU fault fails its job with `-EIO` and records no profile; the
/// device is cleared and the next job runs.
pub fn npu_fault_fails_the_job_and_the_next_job_still_runs() -> Outcome {
    let mut rig = Rig::new()?;
    rig.npu.fail_on_marker(true);
    let p = ok!(rig.pipeline("p", &[], &[increment]));
    let bad = [FAIL_MARKER, 0, 0, 0, 0, 0, 0, 0];
    let good = [1u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    let mut out = [0u8; 4];
    let e = sched.run_sync(JobRequest::new(p, input(&bad)?), &mut out, &mut rig.env());
    check!(e == Err(SchedError::Job(JobError::Npu(NpuError::DeviceFault))));
    check!(e.err().map(SchedError::to_errno) == Some(Errno::Io));
    check_eq!(rig.profiler.summary().count, 0);
    check!(sched
        .run_sync(JobRequest::new(p, input(&good)?), &mut out, &mut rig.env())
        .is_ok());
    check_eq!(rig.profiler.summary().count, 1);
    Ok(())
}

/// An unbuilt pipeline cannot be submitted; a job whose deadline passes
/// during its first stage fails before the model runs (`-ETIMEDOUT`).
pub fn missed_deadline_and_submit_errors() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[slow_identity], &[]));
    let unbuilt = ok!(rig.pool.create("unbuilt"));
    let data = [0u8; 8];
    let mut work = [0u8; 256];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    check!(
        sched.submit(JobRequest::new(unbuilt, input(&data)?), &rig.pool, &CLOCK)
            == Err(SchedError::Pipeline(PipelineError::NotBuilt))
    );
    let req = JobRequest {
        deadline_us: Some(STAGE_US / 2),
        ..JobRequest::new(p, input(&data)?)
    };
    let id = ok!(sched.submit(req, &rig.pool, &CLOCK));
    check!(
        sched.wait(id, u64::MAX, &mut rig.env()) == Err(SchedError::Job(JobError::DeadlineMissed))
    );
    check_eq!(CLOCK.now_us(), STAGE_US);
    check_eq!(rig.npu.invoke_count(), 0);
    check!(JobError::DeadlineMissed.to_errno() == Errno::TimedOut);
    Ok(())
}

/// A work buffer too small for a step's output, and a model unregistered
/// after the pipeline was built, fail the job with a clear error.
pub fn small_work_buffer_and_stale_model_fail_cleanly() -> Outcome {
    let mut rig = Rig::new()?;
    let p = ok!(rig.pipeline("p", &[], &[]));
    let data = [0u8; 8];
    let mut out = [0u8; 4];
    let mut tiny = [0u8; 8];
    let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut tiny);
    check_eq!(sched.buffer_len(), 0);
    check!(
        sched.run_sync(JobRequest::new(p, input(&data)?), &mut out, &mut rig.env())
            == Err(SchedError::Job(JobError::BufferTooSmall {
                needed: 4,
                available: 0
            }))
    );
    let mut work = [0u8; 128];
    let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut work);
    let model = rig.model;
    ok!(rig.registry.unregister(model));
    check!(
        sched.run_sync(JobRequest::new(p, input(&data)?), &mut out, &mut rig.env())
            == Err(SchedError::Job(JobError::Registry(
                RegistryError::StaleHandle
            )))
    );
    Ok(())
}
