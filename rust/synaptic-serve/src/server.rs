//! The CPU0 serving layer: answers CPU1's requests from the exchange slot,
//! running remote inferences in the same priority space as local jobs.
//!
//! # Invariants
//!
//! * **The peer is untrusted.** Every request is decoded with `TryFrom`; its
//!   payload must lie inside the payload pool and name the exchange slot;
//!   the slot header is copied once ([`Exchange::read_header`]) and only the
//!   copy is checked and used: `input_len <= 27_648`, the name
//!   NUL-terminated within 32 bytes, the handle a registered (not stale),
//!   exported model whose input size is `input_len`. A violation is answered
//!   with a negative errno, counted in [`ServeStats::violations`], and never
//!   panics or touches memory outside the region.
//! * **Zero copy in.** An accepted `INFER_REQ` wraps `slot.input` as the
//!   job's input tensor ([`TensorRef::wrap`]); the only copy is the NPU
//!   driver's own `set_input`. The output is written once, into
//!   `slot.output`.
//! * **One request in the slot.** From accepting an `INFER_REQ` until
//!   pushing its `INFER_RESP` the server holds the slot; a slot request
//!   arriving meanwhile is answered `-EBUSY` without reading the slot. The
//!   job is reclaimed from the scheduler (so its borrow of `slot.input`
//!   ends) before the reply is pushed.
//! * **Same priority space.** The job is submitted with the message's
//!   priority class; the scheduler picks again at every stage boundary, so a
//!   remote `RealTime` request waits at most one stage of a preemptible
//!   local job.
//! * **FIFO.** Requests are handled in the order given, on one thread; a
//!   `STATUS_RESP` reports whether the slot is held (see
//!   [`crate::protocol`]).
//! * Only models exported with [`Server::export`] are visible to CPU1.

use core::ops::Range;

use heapless::Vec;
use synaptic_abi::{
    Errno, ExchangeError, Message, MessageError, MessageType, Priority, ValidMessage,
    EXCHANGE_HEADER_SIZE, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_OFFSET, EXCHANGE_OUTPUT_SIZE,
};
use synaptic_ipc::{Doorbell, Inbox, Semaphore, Sender, Timeout};
use synaptic_runtime::arena::TensorRef;
use synaptic_runtime::npu::NpuDevice;
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Step};
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{ModelHandle, Registry, RegistryError};
use synaptic_runtime::sched::{
    Env, JobId, JobRequest, JobStatus, SchedError, Scheduler, StepOutcome,
};
use synaptic_runtime::time::Clock;

use crate::protocol::{self, STATUS_SLOT_FREE, STATUS_SLOT_HELD};
use crate::region::{Exchange, SharedRegion};

/// Default number of models a server can export.
pub const DEFAULT_EXPORTS: usize = 8;

/// Why the server refused or failed a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeError {
    /// A slot request arrived while the slot holds another one (`-EBUSY`).
    Busy,
    /// The message did not decode (bad type or priority byte) (`-EBADMSG`),
    /// or its payload lies outside the payload pool (`-EFAULT`).
    Message(MessageError),
    /// The payload is inside the pool but does not start at the exchange
    /// slot (the only one ABI v1 has) or does not cover its header
    /// (`-EFAULT`).
    NotExchangeSlot {
        /// The payload offset the message named.
        offset: u32,
    },
    /// The payload length disagrees with the header it describes
    /// (`-EBADMSG`).
    PayloadMismatch {
        /// `payload_len` of the message.
        payload_len: u16,
        /// What the header (or the request type) implies.
        expected: u16,
    },
    /// A header field is out of range: `input_len` too long (`-E2BIG`), name
    /// not NUL-terminated (`-EINVAL`).
    Exchange(ExchangeError),
    /// The model name is empty or not UTF-8 (`-EINVAL`).
    BadName,
    /// The model handle or name is unknown or stale (`-ENOENT`, `-EINVAL`).
    Registry(RegistryError),
    /// The model exists but CPU0 does not offer it to CPU1 (`-ENOENT`).
    NotExported,
    /// `input_len` differs from the model's input size (`-EINVAL`).
    InputSizeMismatch {
        /// The model's input size.
        expected: usize,
        /// What the header said.
        actual: usize,
    },
    /// The model's tensors do not fit the exchange slot (`-E2BIG`).
    ModelTooLarge,
    /// The export table is full (`-ENOSPC`).
    ExportsFull,
    /// The serving pipeline could not be made (`-EEXIST`, `-ENOSPC`, ...).
    Pipeline(PipelineError),
    /// The scheduler refused or failed the job (its errno: `-EAGAIN` when
    /// full, the runtime's errno when the job failed, e.g. `-EIO` for an NPU
    /// fault).
    Sched(SchedError),
    /// A raw handle too large for the positive half of the status word
    /// (`-EOVERFLOW`).
    HandleOverflow,
    /// CPU0 does not serve this message type (`-ENOTSUP`).
    Unsupported(MessageType),
}

impl ServeError {
    /// The errno this error becomes on the wire.
    pub fn to_errno(self) -> Errno {
        match self {
            ServeError::Busy => Errno::Busy,
            ServeError::Message(e) => e.errno(),
            ServeError::NotExchangeSlot { .. } => Errno::Fault,
            ServeError::PayloadMismatch { .. } => Errno::BadMsg,
            ServeError::Exchange(e) => e.errno(),
            ServeError::BadName => Errno::Inval,
            ServeError::Registry(e) => e.to_errno(),
            ServeError::NotExported => Errno::NoEnt,
            ServeError::InputSizeMismatch { .. } => Errno::Inval,
            ServeError::ModelTooLarge => Errno::TooBig,
            ServeError::ExportsFull => Errno::NoSpc,
            ServeError::Pipeline(e) => e.to_errno(),
            ServeError::Sched(e) => e.to_errno(),
            ServeError::HandleOverflow => Errno::Overflow,
            ServeError::Unsupported(_) => Errno::NotSup,
        }
    }

    /// Whether the request itself broke the contract (as opposed to the
    /// runtime failing a valid one).
    pub fn is_violation(self) -> bool {
        !matches!(
            self,
            ServeError::Sched(_) | ServeError::HandleOverflow | ServeError::ExportsFull
        )
    }
}

impl From<RegistryError> for ServeError {
    fn from(e: RegistryError) -> Self {
        ServeError::Registry(e)
    }
}

impl From<ExchangeError> for ServeError {
    fn from(e: ExchangeError) -> Self {
        ServeError::Exchange(e)
    }
}

impl From<MessageError> for ServeError {
    fn from(e: MessageError) -> Self {
        ServeError::Message(e)
    }
}

/// What the server has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeStats {
    /// Messages handed to the server (every type).
    pub requests: u32,
    /// Inferences answered with an output.
    pub served: u32,
    /// Requests answered with a negative status (violations included).
    pub errors: u32,
    /// Requests that broke the contract (subset of `errors`).
    pub violations: u32,
    /// Slot requests refused because the slot held another (subset of
    /// `violations`).
    pub busy: u32,
    /// `MODEL_LOAD` requests resolved.
    pub lookups: u32,
    /// `STATUS_REQ` requests answered.
    pub status: u32,
    /// Messages CPU0 does not serve (responses arriving at CPU0), dropped.
    pub ignored: u32,
    /// Replies that could not be pushed (ring toward CPU1 full or corrupt).
    pub reply_failures: u32,
    /// Inferences whose latency was measured (served and runtime failures).
    pub timed: u32,
    /// Sum of measured latencies, microseconds (accept to reply).
    pub latency_total_us: u64,
    /// Largest measured latency, microseconds.
    pub latency_max_us: u64,
}

impl ServeStats {
    /// Average inference latency in microseconds (0 before the first).
    pub fn latency_average_us(&self) -> u64 {
        self.latency_total_us
            .checked_div(u64::from(self.timed))
            .unwrap_or(0)
    }
}

/// What the server did with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Answered at once with this status (a lookup, a status, a refusal).
    Answered {
        /// The reply's status word.
        status: i32,
    },
    /// An inference was submitted; [`Server::complete`] answers it.
    Accepted {
        /// The scheduler job.
        job: JobId,
    },
    /// Not a request CPU0 serves; dropped and counted.
    Ignored,
}

/// An answered inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The request's id (and the reply's).
    pub msg_id: u32,
    /// The reply's status: output length or negative errno.
    pub status: i32,
    /// Accept-to-reply latency on the runtime's clock, microseconds.
    pub latency_us: u64,
}

/// What the server borrows from CPU0's runtime while it works: the
/// scheduler it shares with local jobs, and what the scheduler needs.
pub struct Runtime<'e, 'a, Npu, C, const M: usize, const P: usize, const S: usize, const J: usize> {
    /// The scheduler local and remote jobs share.
    pub scheduler: &'e mut Scheduler<'a, J>,
    /// The model registry.
    pub registry: &'e mut Registry<M>,
    /// The NPU.
    pub npu: &'e mut Npu,
    /// The pipelines (the serving pipelines among them).
    pub pipelines: &'e mut PipelinePool<P, S>,
    /// The clock latencies are measured on.
    pub clock: &'e C,
    /// Optional profiler for every job the scheduler completes.
    pub profiler: Option<&'e mut Profiler>,
}

impl<Npu: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize, const J: usize>
    Runtime<'_, '_, Npu, C, M, P, S, J>
{
    /// One scheduler step (the most urgent job's next stage).
    pub fn step(&mut self) -> StepOutcome {
        let mut env = Env {
            registry: &mut *self.registry,
            npu: &mut *self.npu,
            pipelines: &*self.pipelines,
            clock: self.clock,
            profiler: self.profiler.as_deref_mut(),
        };
        self.scheduler.step(&mut env)
    }
}

#[derive(Clone, Copy, Debug)]
struct Export {
    model: ModelHandle,
    pipeline: PipelineId,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    msg_id: u32,
    priority: Priority,
    job: JobId,
    accepted_us: u64,
}

/// The CPU0 serving layer for one exchange slot. `E` bounds the exported
/// models.
pub struct Server<'a, const E: usize = DEFAULT_EXPORTS> {
    exchange: Exchange<'a>,
    slot_offset: usize,
    pool: Range<usize>,
    exports: Vec<Export, E>,
    in_flight: Option<InFlight>,
    stats: ServeStats,
}

impl<'a, const E: usize> Server<'a, E> {
    /// A server for the exchange slot of `region`, exporting nothing yet.
    pub fn new<const N: usize>(region: &SharedRegion<'a, N>) -> Self {
        Server {
            exchange: region.exchange(),
            slot_offset: region.exchange_offset(),
            pool: region.payload_pool(),
            exports: Vec::new(),
            in_flight: None,
            stats: ServeStats::default(),
        }
    }

    /// Offer `model` to CPU1: make (or reuse) a built pipeline named after
    /// the model that runs the model alone. Exports whose model has since
    /// been unregistered are dropped first (their pipelines destroyed).
    ///
    /// # Errors
    ///
    /// [`ServeError::Registry`] for a bad handle; [`ServeError::ModelTooLarge`]
    /// when the input or output does not fit the slot;
    /// [`ServeError::ExportsFull`]; [`ServeError::Pipeline`] when the pool
    /// is full or the name is taken by a different pipeline.
    pub fn export<const M: usize, const P: usize, const S: usize>(
        &mut self,
        registry: &Registry<M>,
        pipelines: &mut PipelinePool<P, S>,
        model: ModelHandle,
    ) -> Result<(), ServeError> {
        let info = registry.info(model)?;
        if info.input_size() > EXCHANGE_INPUT_SIZE || info.output_size() > EXCHANGE_OUTPUT_SIZE {
            return Err(ServeError::ModelTooLarge);
        }
        let mut k = 0;
        while k < self.exports.len() {
            let e = self.exports[k];
            if registry.info(e.model).is_err() {
                let _ = pipelines.destroy(e.pipeline);
                self.exports.swap_remove(k);
            } else {
                k += 1;
            }
        }
        if self.exported(model).is_some() {
            return Ok(());
        }
        if self.exports.is_full() {
            return Err(ServeError::ExportsFull);
        }
        let name = info.name.as_str();
        let pipeline = match pipelines.find(name) {
            Some(id) => {
                let p = pipelines.get(id).map_err(ServeError::Pipeline)?;
                let model_only = matches!(p.steps(), [Step::Model(m)] if *m == model);
                if !(model_only && p.is_built()) {
                    return Err(ServeError::Pipeline(PipelineError::DuplicateName));
                }
                id
            }
            None => {
                let id = pipelines.create(name).map_err(ServeError::Pipeline)?;
                let built = pipelines
                    .add_model(id, model)
                    .and_then(|()| pipelines.build(id));
                if let Err(e) = built {
                    let _ = pipelines.destroy(id);
                    return Err(ServeError::Pipeline(e));
                }
                id
            }
        };
        self.exports
            .push(Export { model, pipeline })
            .map_err(|_| ServeError::ExportsFull)
    }

    fn exported(&self, model: ModelHandle) -> Option<PipelineId> {
        self.exports
            .iter()
            .find(|e| e.model == model)
            .map(|e| e.pipeline)
    }

    /// Whether an inference holds the slot.
    pub fn is_busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// The job of the inference in flight, if any.
    pub fn in_flight_job(&self) -> Option<JobId> {
        self.in_flight.map(|f| f.job)
    }

    /// Counters so far.
    pub fn stats(&self) -> ServeStats {
        self.stats
    }

    /// Handle one raw message from CPU1: decode it, then as
    /// [`handle_valid`](Self::handle_valid). A message whose type byte is a
    /// request but whose priority byte is not a class is answered
    /// `-EBADMSG`; one whose type byte names nothing is ignored.
    pub fn handle<
        Npu,
        C,
        Db,
        const R: usize,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
    >(
        &mut self,
        raw: Message,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J>,
        sender: &mut Sender<'_, R, Db>,
    ) -> Disposition
    where
        Npu: NpuDevice,
        C: Clock,
        Db: Doorbell,
    {
        match ValidMessage::try_from(raw) {
            Ok(msg) => self.handle_valid(&msg, rt, sender),
            Err(error) => {
                self.stats.requests = self.stats.requests.wrapping_add(1);
                let reply_type = match MessageType::try_from(raw.msg_type) {
                    Ok(MessageType::InferReq) => MessageType::InferResp,
                    Ok(MessageType::ModelLoad) => MessageType::ModelLoad,
                    Ok(MessageType::ModelUnload) => MessageType::ModelUnload,
                    Ok(MessageType::StatusReq) => MessageType::StatusResp,
                    _ => {
                        self.stats.ignored = self.stats.ignored.wrapping_add(1);
                        return Disposition::Ignored;
                    }
                };
                let reply = reply_to(raw.msg_id, reply_type, Priority::Normal);
                let status = self.refuse(ServeError::Message(error), reply, rt.clock, sender);
                Disposition::Answered { status }
            }
        }
    }

    /// Handle one decoded message from CPU1 (in ring order, on one thread).
    pub fn handle_valid<
        Npu,
        C,
        Db,
        const R: usize,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
    >(
        &mut self,
        msg: &ValidMessage,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J>,
        sender: &mut Sender<'_, R, Db>,
    ) -> Disposition
    where
        Npu: NpuDevice,
        C: Clock,
        Db: Doorbell,
    {
        self.stats.requests = self.stats.requests.wrapping_add(1);
        match msg.msg_type {
            MessageType::InferReq => {
                let reply = reply_to(msg.msg_id, MessageType::InferResp, msg.priority);
                match self.accept(msg, rt) {
                    Ok(job) => {
                        self.in_flight = Some(InFlight {
                            msg_id: msg.msg_id,
                            priority: msg.priority,
                            job,
                            accepted_us: rt.clock.now_us(),
                        });
                        Disposition::Accepted { job }
                    }
                    Err(e) => Disposition::Answered {
                        status: self.refuse(e, reply, rt.clock, sender),
                    },
                }
            }
            MessageType::ModelLoad => {
                let reply = reply_to(msg.msg_id, MessageType::ModelLoad, msg.priority);
                match self.lookup(msg, rt.registry) {
                    Ok(status) => {
                        self.stats.lookups = self.stats.lookups.wrapping_add(1);
                        self.send(sender, rt.clock, ValidMessage { status, ..reply });
                        Disposition::Answered { status }
                    }
                    Err(e) => Disposition::Answered {
                        status: self.refuse(e, reply, rt.clock, sender),
                    },
                }
            }
            MessageType::StatusReq => {
                self.stats.status = self.stats.status.wrapping_add(1);
                let status = if self.is_busy() {
                    STATUS_SLOT_HELD
                } else {
                    STATUS_SLOT_FREE
                };
                let reply = ValidMessage {
                    status,
                    // The requester's timestamp, echoed for its round trip.
                    timestamp_us: msg.timestamp_us,
                    ..reply_to(msg.msg_id, MessageType::StatusResp, msg.priority)
                };
                self.send_stamped(sender, reply);
                Disposition::Answered { status }
            }
            MessageType::ModelUnload => {
                let reply = reply_to(msg.msg_id, MessageType::ModelUnload, msg.priority);
                let e = ServeError::Unsupported(MessageType::ModelUnload);
                Disposition::Answered {
                    status: self.refuse(e, reply, rt.clock, sender),
                }
            }
            MessageType::InferResp | MessageType::StatusResp => {
                self.stats.ignored = self.stats.ignored.wrapping_add(1);
                Disposition::Ignored
            }
        }
    }

    /// The slot range a request's payload names, checked: inside the pool,
    /// starting at the exchange slot, exactly `expected` bytes long.
    fn check_payload(&self, msg: &ValidMessage, expected: u16) -> Result<(), ServeError> {
        let range = msg.payload_range(self.pool.clone())?;
        if msg.payload_len != 0 && range.start != self.slot_offset {
            return Err(ServeError::NotExchangeSlot {
                offset: msg.payload_offset,
            });
        }
        if msg.payload_len != expected {
            return Err(ServeError::PayloadMismatch {
                payload_len: msg.payload_len,
                expected,
            });
        }
        Ok(())
    }

    /// Validate an `INFER_REQ` and submit its job.
    fn accept<Npu, C, const M: usize, const P: usize, const S: usize, const J: usize>(
        &mut self,
        msg: &ValidMessage,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J>,
    ) -> Result<JobId, ServeError>
    where
        C: Clock,
    {
        if self.is_busy() {
            return Err(ServeError::Busy);
        }
        // The payload must at least cover the header before it is read.
        let range = msg.payload_range(self.pool.clone())?;
        if range.start != self.slot_offset || range.len() < EXCHANGE_HEADER_SIZE {
            return Err(ServeError::NotExchangeSlot {
                offset: msg.payload_offset,
            });
        }
        // The one read of the header; only `header` is used from here on.
        let header = self.exchange.read_header();
        let input_len = header.input_len()?;
        let expected = protocol::infer_payload_len(input_len).ok_or(ServeError::Exchange(
            ExchangeError::InputTooLong(header.input_len),
        ))?;
        self.check_payload(msg, expected)?;
        let model = ModelHandle::from_raw(header.model);
        let info = rt.registry.info(model)?;
        let pipeline = self.exported(model).ok_or(ServeError::NotExported)?;
        if info.input_size() != input_len {
            return Err(ServeError::InputSizeMismatch {
                expected: info.input_size(),
                actual: input_len,
            });
        }
        // SAFETY: CPU1 handed the slot over with this request and takes it
        // back only with our reply; `complete` reclaims the job (ending the
        // scheduler's use of this slice) before pushing that reply, and
        // nothing on this core writes the input area.
        let input = unsafe { self.exchange.input() };
        let tensor = TensorRef::wrap(info.input, &input[..input_len]).map_err(|_| {
            ServeError::InputSizeMismatch {
                expected: info.input_size(),
                actual: input_len,
            }
        })?;
        let request = JobRequest {
            pipeline,
            input: tensor,
            priority: msg.priority,
            deadline_us: None,
            preemptible: true,
            callback: None,
        };
        rt.scheduler
            .submit(request, &*rt.pipelines, rt.clock)
            .map_err(ServeError::Sched)
    }

    /// Resolve a `MODEL_LOAD`: the status is the raw handle.
    fn lookup<const M: usize>(
        &self,
        msg: &ValidMessage,
        registry: &Registry<M>,
    ) -> Result<i32, ServeError> {
        if self.is_busy() {
            return Err(ServeError::Busy);
        }
        self.check_payload(msg, protocol::LOOKUP_PAYLOAD_LEN)?;
        // The one read of the header.
        let header = self.exchange.read_header();
        let name = header.model_name()?;
        let name = core::str::from_utf8(name).map_err(|_| ServeError::BadName)?;
        if name.is_empty() {
            return Err(ServeError::BadName);
        }
        let model = registry.find(name)?;
        if self.exported(model).is_none() {
            return Err(ServeError::NotExported);
        }
        i32::try_from(model.raw()).map_err(|_| ServeError::HandleOverflow)
    }

    /// Answer the inference in flight if its job has finished: output into
    /// `slot.output`, result words into the header, job reclaimed, slot
    /// released, `INFER_RESP` pushed. Returns what was answered.
    pub fn complete<
        Npu,
        C,
        Db,
        const R: usize,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
    >(
        &mut self,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J>,
        sender: &mut Sender<'_, R, Db>,
    ) -> Option<Completion>
    where
        C: Clock,
        Db: Doorbell,
    {
        let flight = self.in_flight?;
        let result = match rt.scheduler.status(flight.job) {
            Ok(JobStatus::Done(_) | JobStatus::Failed(_)) => {
                // SAFETY: CPU0 holds the slot until the reply below; nothing
                // else on this core holds a slice of the output area.
                let output = unsafe { self.exchange.output_mut() };
                rt.scheduler.get_result(flight.job, output)
            }
            Ok(JobStatus::Queued | JobStatus::Running { .. }) => return None,
            // Reclaimed behind our back (cancelled): the slot is free again.
            Err(e) => Err(e),
        };
        let status = match result {
            Ok((_, len)) => {
                self.exchange.set_result(len as u32, 0);
                self.stats.served = self.stats.served.wrapping_add(1);
                len as i32
            }
            Err(e) => {
                let errno = ServeError::Sched(e).to_errno().negative();
                self.exchange.set_result(0, errno);
                self.stats.errors = self.stats.errors.wrapping_add(1);
                errno
            }
        };
        let latency_us = rt.clock.now_us().saturating_sub(flight.accepted_us);
        self.stats.timed = self.stats.timed.wrapping_add(1);
        self.stats.latency_total_us = self.stats.latency_total_us.saturating_add(latency_us);
        self.stats.latency_max_us = self.stats.latency_max_us.max(latency_us);
        // The job is reclaimed: the slot is CPU1's again once the reply is out.
        self.in_flight = None;
        let (payload_offset, payload_len) = if status > 0 {
            (
                (self.slot_offset + EXCHANGE_OUTPUT_OFFSET) as u32,
                status as u16,
            )
        } else {
            (0, 0)
        };
        let reply = ValidMessage {
            status,
            payload_offset,
            payload_len,
            ..reply_to(flight.msg_id, MessageType::InferResp, flight.priority)
        };
        self.send(sender, rt.clock, reply);
        Some(Completion {
            msg_id: flight.msg_id,
            status,
            latency_us,
        })
    }

    /// One turn of CPU0's serving thread: take every request waiting in
    /// `inbox`, run one scheduler step, answer a finished inference; when
    /// there was nothing to do, wait up to `idle` for a request. Returns the
    /// number of things done (0: idle).
    pub fn poll<
        Sem,
        Npu,
        C,
        Db,
        const Q: usize,
        const R: usize,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
    >(
        &mut self,
        inbox: &Inbox<Sem, Q>,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J>,
        sender: &mut Sender<'_, R, Db>,
        idle: Timeout,
    ) -> usize
    where
        Sem: Semaphore,
        Npu: NpuDevice,
        C: Clock,
        Db: Doorbell,
    {
        let mut work = 0;
        while let Ok(msg) = inbox.receive(Timeout::NoWait) {
            self.handle_valid(&msg, rt, sender);
            work += 1;
        }
        if let StepOutcome::Ran { .. } = rt.step() {
            work += 1;
        }
        if self.complete(rt, sender).is_some() {
            work += 1;
        }
        if work == 0 {
            if let Ok(msg) = inbox.receive(idle) {
                self.handle_valid(&msg, rt, sender);
                work += 1;
            }
        }
        work
    }

    /// Count and answer a refused request; returns the status sent.
    fn refuse<C: Clock, Db: Doorbell, const R: usize>(
        &mut self,
        error: ServeError,
        reply: ValidMessage,
        clock: &C,
        sender: &mut Sender<'_, R, Db>,
    ) -> i32 {
        self.stats.errors = self.stats.errors.wrapping_add(1);
        if error.is_violation() {
            self.stats.violations = self.stats.violations.wrapping_add(1);
        }
        if error == ServeError::Busy {
            self.stats.busy = self.stats.busy.wrapping_add(1);
        } else if reply.msg_type == MessageType::InferResp {
            // The slot is ours until the reply: record why, for a C reader.
            self.exchange.set_result(0, error.to_errno().negative());
        }
        let status = error.to_errno().negative();
        self.send(sender, clock, ValidMessage { status, ..reply });
        status
    }

    fn send<C: Clock, Db: Doorbell, const R: usize>(
        &mut self,
        sender: &mut Sender<'_, R, Db>,
        clock: &C,
        reply: ValidMessage,
    ) {
        let reply = ValidMessage {
            timestamp_us: clock.now_us() as u32,
            ..reply
        };
        self.send_stamped(sender, reply);
    }

    fn send_stamped<Db: Doorbell, const R: usize>(
        &mut self,
        sender: &mut Sender<'_, R, Db>,
        reply: ValidMessage,
    ) {
        if sender.reply(reply).is_err() {
            self.stats.reply_failures = self.stats.reply_failures.wrapping_add(1);
        }
    }
}

/// A reply of `msg_type` to request `msg_id`, no payload, status 0.
fn reply_to(msg_id: u32, msg_type: MessageType, priority: Priority) -> ValidMessage {
    ValidMessage {
        msg_id,
        ..ValidMessage::new(msg_type, priority)
    }
}
