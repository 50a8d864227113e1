//! Priority scheduler: jobs run a pipeline step by step, and the choice of
//! what runs next is made again at every stage boundary.
//!
//! Rules and limits:
//!
//! * Higher [`Priority`] first; FIFO (submission order) within a class.
//! * A job runs one step (a stage or the model) per [`Scheduler::step`].
//!   Between steps the scheduler picks again, so a `RealTime` job arriving
//!   while a *preemptible* job runs starts at the next stage boundary: its
//!   wait is bounded by one stage, not one job. A non-preemptible job keeps
//!   the CPU until it finishes.
//! * At most `max_concurrent` jobs are started and unfinished at once
//!   (default `J`); a preempted job counts, so with 1 nothing is preempted.
//! * At most `J` jobs exist ([`DEFAULT_MAX_JOBS`]), queued, running or
//!   finished-but-unclaimed. Each job slot owns two equal halves of its
//!   share of the caller's work buffer for intermediate tensors (ping-pong);
//!   the input is read in place (zero-copy) and is borrowed for the
//!   scheduler's lifetime.
//! * A job with a completion callback is reclaimed right after the callback;
//!   one without keeps its result until [`Scheduler::get_result`] or
//!   [`Scheduler::release`].
//! * [`JobId`]s carry a generation: an id kept after its job was reclaimed
//!   is rejected with [`SchedError::StaleJob`].
//! * A job whose deadline has passed when it is picked fails with
//!   [`JobError::DeadlineMissed`] instead of running another step.
//! * Nothing here blocks or spawns: the caller's thread drives
//!   [`Scheduler::step`] (or [`Scheduler::wait`], [`Scheduler::run_sync`]),
//!   and time comes from the [`Clock`] in [`Env`].

use synaptic_abi::{Errno, Priority};

use crate::arena::{TensorMeta, TensorRef, ALIGN};
use crate::npu::{NpuDevice, NpuError};
use crate::pipeline::{PipelineError, PipelineId, PipelinePool, Step};
use crate::process::ProcessError;
use crate::prof::{InferenceProfile, Profiler};
use crate::registry::{Registry, RegistryError};
use crate::time::Clock;

/// Default number of job slots.
pub const DEFAULT_MAX_JOBS: usize = 4;

/// A submitted job: slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId {
    index: u16,
    generation: u16,
}

impl JobId {
    /// Generation in the high half, slot in the low.
    pub const fn raw(self) -> u32 {
        ((self.generation as u32) << 16) | self.index as u32
    }

    /// Decodes a raw id; the scheduler validates it on use.
    pub const fn from_raw(raw: u32) -> JobId {
        JobId {
            index: raw as u16,
            generation: (raw >> 16) as u16,
        }
    }
}

/// Completion callback: `(job, output or error, context)`.
pub type JobCallback = fn(JobId, Result<TensorRef<'_>, JobError>, usize);

/// What to run, how urgently, and whom to tell.
#[derive(Clone, Copy, Debug)]
pub struct JobRequest<'a> {
    /// A built pipeline.
    pub pipeline: PipelineId,
    /// The input, read in place.
    pub input: TensorRef<'a>,
    /// Scheduling class.
    pub priority: Priority,
    /// Absolute deadline on the scheduler's clock, microseconds.
    pub deadline_us: Option<u64>,
    /// Whether higher-priority work may run between this job's steps.
    pub preemptible: bool,
    /// Called on completion with the output (or error) and the context word.
    pub callback: Option<(JobCallback, usize)>,
}

impl<'a> JobRequest<'a> {
    /// A `Normal`, preemptible job without deadline or callback.
    pub fn new(pipeline: PipelineId, input: TensorRef<'a>) -> Self {
        JobRequest {
            pipeline,
            input,
            priority: Priority::Normal,
            deadline_us: None,
            preemptible: true,
            callback: None,
        }
    }
}

/// Why a job failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobError {
    /// The pipeline was destroyed or is not built.
    Pipeline(PipelineError),
    /// The model handle is bad or the model could not be loaded.
    Registry(RegistryError),
    /// The NPU failed.
    Npu(NpuError),
    /// A processing stage failed.
    Stage {
        /// Step index in the pipeline.
        step: u8,
        /// What went wrong.
        error: ProcessError,
    },
    /// A step output does not fit the job's work buffer.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes per work buffer.
        available: usize,
    },
    /// The deadline passed before the job finished.
    DeadlineMissed,
    /// [`Scheduler::cancel`] was called.
    Cancelled,
}

impl JobError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            JobError::Pipeline(e) => e.to_errno(),
            JobError::Registry(e) => e.to_errno(),
            JobError::Npu(e) => e.to_errno(),
            JobError::Stage { error, .. } => error.to_errno(),
            JobError::BufferTooSmall { .. } => Errno::NoMem,
            JobError::DeadlineMissed => Errno::TimedOut,
            JobError::Cancelled => Errno::Canceled,
        }
    }
}

/// Errors of the scheduler's own operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedError {
    /// Every job slot is in use.
    Full,
    /// The pipeline cannot be run.
    Pipeline(PipelineError),
    /// The id names no slot or an empty one.
    InvalidJob,
    /// The id's job was reclaimed.
    StaleJob,
    /// The job has not finished.
    NotFinished,
    /// The job already finished (it cannot be cancelled).
    AlreadyFinished,
    /// `wait` ran out of time; the job continues.
    TimedOut,
    /// The caller's buffer is shorter than the output.
    OutputTooSmall {
        /// Bytes of output.
        needed: usize,
        /// Bytes of buffer.
        actual: usize,
    },
    /// An argument is out of range.
    InvalidArgument,
    /// The job failed.
    Job(JobError),
}

impl SchedError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            SchedError::Full => Errno::Again,
            SchedError::Pipeline(e) => e.to_errno(),
            SchedError::InvalidJob | SchedError::InvalidArgument => Errno::Inval,
            SchedError::StaleJob => Errno::NoEnt,
            SchedError::NotFinished => Errno::Busy,
            SchedError::AlreadyFinished => Errno::Already,
            SchedError::TimedOut => Errno::TimedOut,
            SchedError::OutputTooSmall { .. } => Errno::NoBufs,
            SchedError::Job(e) => e.to_errno(),
        }
    }
}

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting to start.
    Queued,
    /// Started; `next_step` is the step it runs next.
    Running {
        /// Index of the next step.
        next_step: u8,
    },
    /// Finished with an output.
    Done(TensorMeta),
    /// Finished with an error.
    Failed(JobError),
}

/// What one [`Scheduler::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Nothing was runnable.
    Idle,
    /// A step of `job` ran (or the job was failed before running it).
    Ran {
        /// The job.
        job: JobId,
        /// Index of the step.
        step: u8,
        /// Whether the job is now finished.
        finished: bool,
    },
}

/// What the scheduler needs from the rest of the runtime while it works.
pub struct Env<'e, N, C, const M: usize, const P: usize, const S: usize> {
    /// Model registry (models are loaded on demand).
    pub registry: &'e mut Registry<M>,
    /// The NPU.
    pub npu: &'e mut N,
    /// The pipelines.
    pub pipelines: &'e PipelinePool<P, S>,
    /// Time source.
    pub clock: &'e C,
    /// Optional profiler; every successful job is recorded.
    pub profiler: Option<&'e mut Profiler>,
}

#[derive(Clone, Copy, Debug)]
enum State {
    Free,
    Queued,
    Running {
        next: u8,
        /// Which work buffer holds the current tensor (`None`: the input).
        current: Option<u8>,
        meta: TensorMeta,
    },
    Finished(Result<(u8, TensorMeta), JobError>),
}

#[derive(Clone, Copy, Debug)]
struct Slot<'a> {
    generation: u16,
    state: State,
    request: Option<JobRequest<'a>>,
    seq: u64,
    submitted_us: u64,
    profile: InferenceProfile,
}

/// The scheduler: `J` job slots over a caller-provided work buffer.
pub struct Scheduler<'a, const J: usize = DEFAULT_MAX_JOBS> {
    slots: [Slot<'a>; J],
    work: &'a mut [u8],
    buffer_len: usize,
    next_seq: u64,
    max_concurrent: usize,
    current: Option<usize>,
}

impl<'a, const J: usize> Scheduler<'a, J> {
    const FITS: () = assert!(J > 0 && J <= u16::MAX as usize, "1..=65535 jobs");

    /// A scheduler whose jobs share `work`: each slot gets two buffers of
    /// `work.len() / (2 J)` bytes rounded down to [`ALIGN`].
    pub fn new(work: &'a mut [u8]) -> Self {
        let () = Self::FITS;
        let buffer_len = (work.len() / (2 * J)) & !(ALIGN - 1);
        Scheduler {
            slots: [Slot {
                generation: 1,
                state: State::Free,
                request: None,
                seq: 0,
                submitted_us: 0,
                profile: InferenceProfile::default(),
            }; J],
            work,
            buffer_len,
            next_seq: 0,
            max_concurrent: J,
            current: None,
        }
    }

    /// Bytes of each intermediate buffer.
    pub fn buffer_len(&self) -> usize {
        self.buffer_len
    }

    /// Limits how many jobs may be started and unfinished at once.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidArgument`] unless `1 <= n <= J`.
    pub fn set_max_concurrent(&mut self, n: usize) -> Result<(), SchedError> {
        if n == 0 || n > J {
            return Err(SchedError::InvalidArgument);
        }
        self.max_concurrent = n;
        Ok(())
    }

    /// Queues a job.
    ///
    /// # Errors
    ///
    /// [`SchedError::Pipeline`] when the pipeline is not runnable;
    /// [`SchedError::Full`] when every slot is in use.
    pub fn submit<C: Clock, const P: usize, const S: usize>(
        &mut self,
        request: JobRequest<'a>,
        pipelines: &PipelinePool<P, S>,
        clock: &C,
    ) -> Result<JobId, SchedError> {
        pipelines
            .runnable(request.pipeline)
            .map_err(SchedError::Pipeline)?;
        let index = self
            .slots
            .iter()
            .position(|s| matches!(s.state, State::Free))
            .ok_or(SchedError::Full)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = &mut self.slots[index];
        slot.state = State::Queued;
        slot.request = Some(request);
        slot.seq = seq;
        slot.submitted_us = clock.now_us();
        slot.profile = InferenceProfile::default();
        Ok(JobId {
            index: index as u16,
            generation: slot.generation,
        })
    }

    fn index(&self, id: JobId) -> Result<usize, SchedError> {
        let i = usize::from(id.index);
        let slot = self.slots.get(i).ok_or(SchedError::InvalidJob)?;
        if id.generation == 0 || id.generation > slot.generation {
            Err(SchedError::InvalidJob)
        } else if id.generation < slot.generation {
            Err(SchedError::StaleJob)
        } else if matches!(slot.state, State::Free) {
            Err(SchedError::InvalidJob)
        } else {
            Ok(i)
        }
    }

    fn id_of(&self, i: usize) -> JobId {
        JobId {
            index: i as u16,
            generation: self.slots[i].generation,
        }
    }

    /// Where a job is.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidJob`], [`SchedError::StaleJob`].
    pub fn status(&self, id: JobId) -> Result<JobStatus, SchedError> {
        let i = self.index(id)?;
        Ok(match self.slots[i].state {
            State::Free => return Err(SchedError::InvalidJob),
            State::Queued => JobStatus::Queued,
            State::Running { next, .. } => JobStatus::Running { next_step: next },
            State::Finished(Ok((_, meta))) => JobStatus::Done(meta),
            State::Finished(Err(e)) => JobStatus::Failed(e),
        })
    }

    fn free(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        slot.state = State::Free;
        slot.request = None;
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        if self.current == Some(i) {
            self.current = None;
        }
    }

    fn buffer_range(&self, slot: usize, buffer: u8) -> core::ops::Range<usize> {
        let start = (2 * slot + usize::from(buffer)) * self.buffer_len;
        start..start + self.buffer_len
    }

    fn finish<N, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        i: usize,
        result: Result<(u8, TensorMeta), JobError>,
        env: &mut Env<'_, N, C, M, P, S>,
    ) {
        let now = env.clock.now_us();
        let slot = &mut self.slots[i];
        slot.profile.total_us = now.saturating_sub(slot.submitted_us);
        if result.is_ok() {
            if let Some(p) = env.profiler.as_deref_mut() {
                p.record(slot.profile);
            }
        }
        slot.state = State::Finished(result);
        if self.current == Some(i) {
            self.current = None;
        }
        let callback = slot.request.and_then(|r| r.callback);
        if let Some((f, context)) = callback {
            let id = self.id_of(i);
            match result {
                Ok((buffer, meta)) => {
                    let range = self.buffer_range(i, buffer);
                    let view = TensorRef::wrap(meta, &self.work[range]);
                    // The view fits: every step checked its output length.
                    f(
                        id,
                        view.map_err(|_| JobError::BufferTooSmall {
                            needed: meta.byte_len(),
                            available: self.buffer_len,
                        }),
                        context,
                    );
                }
                Err(e) => f(id, Err(e), context),
            }
            self.free(i);
        }
    }

    fn pick(&self) -> Option<usize> {
        if let Some(i) = self.current {
            if let (State::Running { .. }, Some(r)) = (self.slots[i].state, self.slots[i].request) {
                if !r.preemptible {
                    return Some(i);
                }
            }
        }
        let started = self
            .slots
            .iter()
            .filter(|s| matches!(s.state, State::Running { .. }))
            .count();
        let may_start = started < self.max_concurrent;
        let mut best: Option<(Priority, u64, usize)> = None;
        for (i, s) in self.slots.iter().enumerate() {
            let eligible = match s.state {
                State::Running { .. } => true,
                State::Queued => may_start,
                _ => false,
            };
            let Some(r) = s.request else { continue };
            if !eligible {
                continue;
            }
            let better =
                best.is_none_or(|(p, seq, _)| r.priority > p || (r.priority == p && s.seq < seq));
            if better {
                best = Some((r.priority, s.seq, i));
            }
        }
        best.map(|(_, _, i)| i)
    }

    /// Runs one step of the most urgent job.
    pub fn step<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> StepOutcome {
        let Some(i) = self.pick() else {
            return StepOutcome::Idle;
        };
        let id = self.id_of(i);
        let Some(request) = self.slots[i].request else {
            return StepOutcome::Idle;
        };
        let (next, current, meta) = match self.slots[i].state {
            State::Running {
                next,
                current,
                meta,
            } => (next, current, meta),
            _ => (0, None, request.input.meta()),
        };
        self.current = Some(i);
        let done = |finished| StepOutcome::Ran {
            job: id,
            step: next,
            finished,
        };
        if request.deadline_us.is_some_and(|d| env.clock.now_us() > d) {
            self.finish(i, Err(JobError::DeadlineMissed), env);
            return done(true);
        }
        let pipeline = match env.pipelines.runnable(request.pipeline) {
            Ok(p) => p,
            Err(e) => {
                self.finish(i, Err(JobError::Pipeline(e)), env);
                return done(true);
            }
        };
        let steps = pipeline.steps();
        let Some(step) = steps.get(usize::from(next)).copied() else {
            self.finish(i, Err(JobError::Pipeline(PipelineError::NoModel)), env);
            return done(true);
        };
        let last = usize::from(next) + 1 == steps.len();
        let out_buffer = match current {
            Some(b) => 1 - b,
            None => 0,
        };
        // Split this slot's region into the current tensor and the output.
        let base = self.buffer_range(i, 0).start;
        let len = self.buffer_len;
        let region = &mut self.work[base..base + 2 * len];
        let (first, second) = region.split_at_mut(len);
        let (input_bytes, output): (&[u8], &mut [u8]) = match current {
            None => (request.input.data(), first),
            Some(0) => (&first[..meta.byte_len()], second),
            Some(_) => (&second[..meta.byte_len()], first),
        };
        let started = env.clock.now_us();
        let result = match TensorRef::wrap(meta, input_bytes) {
            Err(_) => Err(JobError::BufferTooSmall {
                needed: meta.byte_len(),
                available: len,
            }),
            Ok(input) => run_step(&step, next, &input, output, env),
        };
        let elapsed = env.clock.now_us().saturating_sub(started);
        let profile = &mut self.slots[i].profile;
        match step {
            Step::Pre(_) => profile.preprocess_us += elapsed,
            Step::Model(_) => profile.npu_us += elapsed,
            Step::Post(_) => profile.postprocess_us += elapsed,
        }
        match result {
            Err(e) => {
                self.finish(i, Err(e), env);
                done(true)
            }
            Ok(out_meta) => {
                let profile = &mut self.slots[i].profile;
                let in_use = out_meta.byte_len()
                    + if current.is_some() {
                        meta.byte_len()
                    } else {
                        0
                    };
                profile.memory_peak = profile.memory_peak.max(in_use);
                if last {
                    self.finish(i, Ok((out_buffer, out_meta)), env);
                    done(true)
                } else {
                    self.slots[i].state = State::Running {
                        next: next + 1,
                        current: Some(out_buffer),
                        meta: out_meta,
                    };
                    done(false)
                }
            }
        }
    }

    /// Steps until nothing is runnable; returns the number of steps.
    pub fn run_until_idle<
        N: NpuDevice,
        C: Clock,
        const M: usize,
        const P: usize,
        const S: usize,
    >(
        &mut self,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> usize {
        let mut n = 0;
        while self.step(env) != StepOutcome::Idle {
            n += 1;
        }
        n
    }

    /// Drives the scheduler until `id` finishes or `timeout_us` passes on
    /// the clock (checked between steps); returns the output descriptor.
    /// The result stays claimable with [`Scheduler::get_result`].
    ///
    /// # Errors
    ///
    /// [`SchedError::TimedOut`] (the job continues); [`SchedError::Job`]
    /// when it failed; id errors (a job with a callback is reclaimed on
    /// completion, so its id turns stale).
    pub fn wait<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        id: JobId,
        timeout_us: u64,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Result<TensorMeta, SchedError> {
        let start = env.clock.now_us();
        loop {
            match self.status(id)? {
                JobStatus::Done(meta) => return Ok(meta),
                JobStatus::Failed(e) => return Err(SchedError::Job(e)),
                _ => {}
            }
            if env.clock.now_us().saturating_sub(start) >= timeout_us {
                return Err(SchedError::TimedOut);
            }
            if self.step(env) == StepOutcome::Idle {
                return Err(SchedError::TimedOut);
            }
        }
    }

    /// The output of a finished job, borrowed; the job stays claimable.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`]; [`SchedError::Job`].
    pub fn output(&self, id: JobId) -> Result<TensorRef<'_>, SchedError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Finished(Ok((buffer, meta))) => {
                TensorRef::wrap(meta, &self.work[self.buffer_range(i, buffer)]).map_err(|_| {
                    SchedError::Job(JobError::BufferTooSmall {
                        needed: meta.byte_len(),
                        available: self.buffer_len,
                    })
                })
            }
            State::Finished(Err(e)) => Err(SchedError::Job(e)),
            _ => Err(SchedError::NotFinished),
        }
    }

    /// Copies a finished job's output into `out`, reclaims the job, and
    /// returns the output descriptor and length. A failed job is reclaimed
    /// and its error returned.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`];
    /// [`SchedError::OutputTooSmall`] (the job stays claimable);
    /// [`SchedError::Job`].
    pub fn get_result(
        &mut self,
        id: JobId,
        out: &mut [u8],
    ) -> Result<(TensorMeta, usize), SchedError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Finished(Ok((buffer, meta))) => {
                let n = meta.byte_len();
                if out.len() < n {
                    return Err(SchedError::OutputTooSmall {
                        needed: n,
                        actual: out.len(),
                    });
                }
                let start = self.buffer_range(i, buffer).start;
                out[..n].copy_from_slice(&self.work[start..start + n]);
                self.free(i);
                Ok((meta, n))
            }
            State::Finished(Err(e)) => {
                self.free(i);
                Err(SchedError::Job(e))
            }
            _ => Err(SchedError::NotFinished),
        }
    }

    /// Reclaims a finished job without reading it.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`].
    pub fn release(&mut self, id: JobId) -> Result<(), SchedError> {
        let i = self.index(id)?;
        if matches!(self.slots[i].state, State::Finished(_)) {
            self.free(i);
            Ok(())
        } else {
            Err(SchedError::NotFinished)
        }
    }

    /// Cancels a queued or running job (between steps, so at once); its
    /// callback, if any, sees [`JobError::Cancelled`]. The job is reclaimed.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::AlreadyFinished`].
    pub fn cancel(&mut self, id: JobId) -> Result<(), SchedError> {
        let i = self.index(id)?;
        if matches!(self.slots[i].state, State::Finished(_)) {
            return Err(SchedError::AlreadyFinished);
        }
        if let Some((f, context)) = self.slots[i].request.and_then(|r| r.callback) {
            f(id, Err(JobError::Cancelled), context);
        }
        self.free(i);
        Ok(())
    }

    /// Submits, runs to completion and copies the output into `out`
    /// (any callback in `request` is ignored).
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`] and [`Scheduler::get_result`].
    pub fn run_sync<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        mut request: JobRequest<'a>,
        out: &mut [u8],
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Result<(TensorMeta, usize), SchedError> {
        request.callback = None;
        let id = self.submit(request, env.pipelines, env.clock)?;
        match self.wait(id, u64::MAX, env) {
            Ok(_) | Err(SchedError::Job(_)) => self.get_result(id, out),
            Err(e) => {
                let _ = self.cancel(id);
                Err(e)
            }
        }
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, State::Queued | State::Running { .. }))
            .count()
    }
}

fn run_step<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
    step: &Step,
    index: u8,
    input: &TensorRef<'_>,
    output: &mut [u8],
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    match step {
        Step::Pre(stage) | Step::Post(stage) => {
            (stage.func)(input, output, &stage.config).map_err(|error| match error {
                ProcessError::OutputTooSmall { needed, .. } => JobError::BufferTooSmall {
                    needed,
                    available: output.len(),
                },
                error => JobError::Stage { step: index, error },
            })
        }
        Step::Model(handle) => {
            let info = env.registry.info(*handle).map_err(JobError::Registry)?;
            let out_meta = info.output;
            let needed = out_meta.byte_len();
            if output.len() < needed {
                return Err(JobError::BufferTooSmall {
                    needed,
                    available: output.len(),
                });
            }
            env.registry
                .load(*handle, env.npu)
                .map_err(JobError::Registry)?;
            env.npu.set_input(input.data()).map_err(JobError::Npu)?;
            if let Err(e) = env.npu.invoke() {
                // Leave the device usable for the next job.
                let _ = env.npu.clear_error();
                return Err(JobError::Npu(e));
            }
            env.npu
                .get_output(&mut output[..needed])
                .map_err(JobError::Npu)?;
            Ok(out_meta)
        }
    }
}
