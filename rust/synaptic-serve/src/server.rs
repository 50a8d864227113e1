//! The CPU0 serving layer: answers CPU1's slot requests, running remote
//! inferences in the same priority space as local jobs, up to one per
//! exchange slot at a time.
//!
//! # Invariants
//!
//! * **The peer is untrusted.** Every request is decoded with `TryFrom`; its
//!   payload must lie inside the payload pool and start at an exchange slot;
//!   that slot's header is copied once
//!   ([`Exchange::read_header`](crate::Exchange::read_header)) and only
//!   the copy is checked and used: `input_len` within the slot's capacity,
//!   the name NUL-terminated within 32 bytes, the handle a registered (not
//!   stale), exported model whose input size is `input_len` and whose output
//!   fits the slot. A violation is answered with a negative errno, counted
//!   in [`ServeStats::violations`], and never panics or touches memory
//!   outside the region.
//! * **Zero copy in and out.** An accepted `INFER_REQ` wraps the slot's
//!   input as the job's input tensor ([`TensorRef::wrap`]); the only copy
//!   in is the NPU driver's own `set_input`. The job's last step writes its
//!   output straight into the slot (`Scheduler::submit_into`): the only
//!   copy out is the driver's `get_output`.
//! * **One request per slot, K slots in flight.** From accepting a request
//!   on slot `i` until pushing its reply the server holds slot `i`; another
//!   request on slot `i` meanwhile is answered `-EBUSY` without reading the
//!   slot. The job is reclaimed from the scheduler (so its borrow of the
//!   slot's input ends) before the reply is pushed, and the slot's
//!   [`SlotLedger`] mark is cleared only after the push (the slot is marked
//!   handed back just before it, so a request CPU1 sends the moment it has
//!   the reply is not refused).
//! * **Same priority space.** Each job is submitted with its message's
//!   priority class; the scheduler picks again at every stage boundary, so
//!   a remote `RealTime` request waits at most one stage of a preemptible
//!   job, and replies may complete out of order.
//! * **Service-time estimates.** After each answered inference the server
//!   folds its accept-to-reply time into a per-model running estimate
//!   (`est += (sample - est) / 4`) and publishes it in the region's
//!   service-time table, where CPU1 reads it to choose polling or sleeping.
//! * Only models exported with [`Server::export`] are visible to CPU1.

use core::ops::Range;

use heapless::Vec;
use synaptic_abi::{
    Errno, ExchangeError, Message, MessageError, MessageType, ValidMessage, EXCHANGE_HEADER_SIZE,
    EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_SIZE, MAX_EXCHANGE_SLOTS, REQUEST_FLAGS_KNOWN,
};
use synaptic_ipc::{Inbox, Semaphore, Timeout};
use synaptic_runtime::arena::TensorMeta;
use synaptic_runtime::arena::TensorRef;
use synaptic_runtime::device::{Device, DeviceMask};
use synaptic_runtime::npu::{NpuDevice, NpuError, NpuModel};
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Step};
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry, RegistryError};
use synaptic_runtime::sched::{Alone, Env, JobId, JobRequest, SchedError, Scheduler, StepOutcome};
use synaptic_runtime::time::Clock;

use crate::intake::{reply_to, reply_type, wants_poll, Reply, ReplyPort, SlotLedger};
use crate::protocol;
use crate::region::{Exchange, SharedRegion};
use crate::update::ModelUpdates;

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
    /// The payload does not start at an exchange slot or does not cover
    /// its header (`-EFAULT`).
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
    /// The request's flags word has bits this version does not define
    /// (`-EINVAL`).
    UnknownFlags(i32),
    /// The serving thread's queue is full (`-EAGAIN`); cannot happen while
    /// the inbox has an entry per slot.
    Backlog,
    /// A `MODEL_UPDATE` step the store refused, with its errno (`-EBUSY`
    /// also while a model's previous swap still runs).
    Update(Errno),
    /// A `MODEL_UPDATE` whose `update_op` names no step (`-EINVAL`).
    UnknownUpdateOp(u32),
    /// No device that serves the model could run its new version (the
    /// element types, the sizes, for the CPU interpreter the operators,
    /// its arena, an image it can read): the activation is refused and the
    /// served version keeps serving (`-ENOEXEC`). The last device's
    /// refusal.
    Unrunnable(NpuError),
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
            ServeError::UnknownFlags(_) => Errno::Inval,
            ServeError::Backlog => Errno::Again,
            ServeError::Update(e) => e,
            ServeError::UnknownUpdateOp(_) => Errno::Inval,
            ServeError::Unrunnable(_) => Errno::NoExec,
        }
    }

    /// Whether the request itself broke the contract (as opposed to the
    /// runtime failing a valid one).
    pub fn is_violation(self) -> bool {
        !matches!(
            self,
            ServeError::Sched(_)
                | ServeError::HandleOverflow
                | ServeError::ExportsFull
                | ServeError::Backlog
                | ServeError::Update(_)
                | ServeError::Unrunnable(_)
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
    /// `MODEL_UPDATE` steps done.
    pub updates: u32,
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
    /// Slot requests the intake handed to the serving thread.
    pub forwarded: u32,
    /// Corrupt ring indices the intake saw (each one a resynchronisation).
    pub corrupt: u32,
    /// Shared words this core owns (control block, ring indices,
    /// service-time table) found altered by the peer and rewritten.
    pub repairs: u32,
}

impl ServeStats {
    /// The sum of two sets of counters (the intake's and the serving
    /// layer's); the larger maximum.
    pub fn merged(&self, other: &ServeStats) -> ServeStats {
        let add = |a: u32, b: u32| a.wrapping_add(b);
        ServeStats {
            requests: add(self.requests, other.requests),
            served: add(self.served, other.served),
            errors: add(self.errors, other.errors),
            violations: add(self.violations, other.violations),
            busy: add(self.busy, other.busy),
            lookups: add(self.lookups, other.lookups),
            updates: add(self.updates, other.updates),
            status: add(self.status, other.status),
            ignored: add(self.ignored, other.ignored),
            reply_failures: add(self.reply_failures, other.reply_failures),
            timed: add(self.timed, other.timed),
            latency_total_us: self.latency_total_us.saturating_add(other.latency_total_us),
            latency_max_us: self.latency_max_us.max(other.latency_max_us),
            forwarded: add(self.forwarded, other.forwarded),
            corrupt: add(self.corrupt, other.corrupt),
            repairs: add(self.repairs, other.repairs),
        }
    }

    /// Count a refused request.
    pub(crate) fn count_refusal(&mut self, error: ServeError) {
        self.errors = self.errors.wrapping_add(1);
        if error.is_violation() {
            self.violations = self.violations.wrapping_add(1);
        }
        if error == ServeError::Busy {
            self.busy = self.busy.wrapping_add(1);
        }
    }

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
pub struct Runtime<
    'e,
    'a,
    Npu,
    C,
    const M: usize,
    const P: usize,
    const S: usize,
    const J: usize,
    const CPU: bool = true,
> {
    /// The scheduler local and remote jobs share.
    pub scheduler: &'e mut Scheduler<'a, J, CPU>,
    /// The model registry.
    pub registry: &'e mut Registry<M>,
    /// The NPU.
    pub npu: &'e mut Npu,
    /// The CPU interpreter device, if any (`Env::cpu` of the runtime).
    /// `'static` (a device over a static arena, as firmware has it) keeps
    /// `Runtime` covariant in `'e`.
    pub cpu: Option<&'e mut (dyn NpuDevice + 'static)>,
    /// The pipelines (the serving pipelines among them).
    pub pipelines: &'e mut PipelinePool<P, S>,
    /// The clock latencies are measured on.
    pub clock: &'e C,
    /// Optional profiler for every job the scheduler completes.
    pub profiler: Option<&'e mut Profiler>,
    /// The model store `MODEL_UPDATE` writes, if any (without one the
    /// request is refused with `-ENOTSUP`).
    pub updates: Option<&'e mut (dyn ModelUpdates + 'a)>,
}

impl<
        'a,
        Npu: NpuDevice,
        C: Clock,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    > Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>
{
    /// One scheduler step (the most urgent job's next stage).
    pub fn step(&mut self) -> StepOutcome {
        let (scheduler, mut env) = self.parts();
        scheduler.step(&mut env)
    }

    /// The scheduler, and the rest as the scheduler's environment.
    fn parts(&mut self) -> (&mut Scheduler<'a, J, CPU>, Env<'_, Npu, C, M, P, S>) {
        let env = Env {
            registry: &mut *self.registry,
            npu: &mut *self.npu,
            // A reborrow for this call.
            cpu: match self.cpu {
                Some(ref mut cpu) => Some(&mut **cpu),
                None => None,
            },
            pipelines: &*self.pipelines,
            clock: self.clock,
            profiler: self.profiler.as_deref_mut(),
        };
        (&mut *self.scheduler, env)
    }
}

/// An accepted inference: a job to answer when it finishes, or already
/// run (the output in the slot, or why it failed).
enum Accepted {
    Job(JobId),
    Done(Result<(TensorMeta, usize), SchedError>),
}

#[derive(Clone, Copy, Debug)]
struct Export {
    /// The handle CPU1 names the model by: the first version's, kept across
    /// hot swaps ([`Server::replace`]).
    model: ModelHandle,
    /// The registry's handle of the version requests run now.
    serving: ModelHandle,
    pipeline: PipelineId,
    /// Running estimate of the accept-to-reply time, µs (0: none yet).
    estimate_us: u32,
    /// The version a hot swap replaced, with its pipeline, until no job
    /// uses them.
    retiring: Option<(ModelHandle, PipelineId)>,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    reply: Reply,
    /// The exported model (CPU1's handle).
    model: ModelHandle,
    /// The version it runs on.
    runs: ModelHandle,
    job: JobId,
    accepted_us: u64,
}

/// The CPU0 serving layer for the exchange slots of one region. `E` bounds
/// the exported models.
pub struct Server<'a, const N: usize, const E: usize = DEFAULT_EXPORTS> {
    region: SharedRegion<'a, N>,
    /// Every slot's view, made once: the request path names a slot two or
    /// three times per inference.
    exchanges: [Option<Exchange<'a>>; MAX_EXCHANGE_SLOTS],
    pool: Range<usize>,
    exports: Vec<Export, E>,
    in_flight: [Option<InFlight>; MAX_EXCHANGE_SLOTS],
    /// Bit k set: `in_flight[k]` is `Some` (the completion scan visits
    /// only these).
    busy: u32,
    /// Whether an export has a version to retire (the completion path
    /// looks no further when not).
    retiring: bool,
    stats: ServeStats,
}

impl<'a, const N: usize, const E: usize> Server<'a, N, E> {
    /// A server for the exchange slots of `region`, exporting nothing yet.
    pub fn new(region: &SharedRegion<'a, N>) -> Self {
        const { assert!(E <= synaptic_abi::SERVICE_TIME_ENTRIES) };
        Server {
            region: *region,
            exchanges: core::array::from_fn(|k| region.exchange(k)),
            pool: region.payload_pool(),
            exports: Vec::new(),
            in_flight: [None; MAX_EXCHANGE_SLOTS],
            busy: 0,
            retiring: false,
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
    /// when the input or output does not fit the frame slot;
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
            if registry.info(e.serving).is_err() {
                let _ = pipelines.destroy(e.pipeline);
                self.exports.swap_remove(k);
            } else {
                k += 1;
            }
        }
        if self
            .exports
            .iter()
            .any(|e| e.model == model || e.serving == model)
        {
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
            .push(Export {
                model,
                serving: model,
                pipeline,
                estimate_us: 0,
                retiring: None,
            })
            .map_err(|_| ServeError::ExportsFull)?;
        // The table row of a re-used index still names the dropped model.
        self.publish_estimates();
        Ok(())
    }

    /// Hot swap: `desc`, a new version of the exported `model` (same name),
    /// is what CPU1's requests for `model` run from now on, under the
    /// handle CPU1 already has. Requests accepted before finish on the old
    /// version; it is retired (unloaded, its pipeline destroyed,
    /// unregistered) as soon as no job uses it: here when none does, else
    /// after the completion that frees it. None fails for the swap. Returns
    /// the registry's handle of the new version.
    ///
    /// # Errors
    ///
    /// [`ServeError::NotExported`]; [`ServeError::Busy`] while the previous
    /// swap's old version still runs; [`ServeError::BadName`] when `desc`
    /// names another model; [`ServeError::ModelTooLarge`];
    /// [`ServeError::Registry`] when the registry refuses `desc` (full,
    /// no device, ...); [`ServeError::Pipeline`] when the pool is full. On
    /// an error nothing changed.
    pub fn replace<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        model: ModelHandle,
        desc: &ModelDesc<'_>,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<ModelHandle, ServeError>
    where
        Npu: NpuDevice,
    {
        let index = self.export_index(model).ok_or(ServeError::NotExported)?;
        let desc = self.successor(index, desc, rt)?;
        let Export {
            serving: old,
            pipeline: old_pipeline,
            ..
        } = self.exports[index];
        rt.registry.supersede(old)?;
        let new = match rt.registry.register(&desc) {
            Ok(new) => new,
            Err(e) => {
                let _ = rt.registry.reinstate(old);
                return Err(e.into());
            }
        };
        let pipeline = match successor_pipeline(rt.pipelines, old_pipeline, desc.name, new) {
            Ok(pipeline) => pipeline,
            Err(e) => {
                let _ = rt.registry.unregister(new);
                let _ = rt.registry.reinstate(old);
                return Err(ServeError::Pipeline(e));
            }
        };
        let e = &mut self.exports[index];
        e.serving = new;
        e.pipeline = pipeline;
        e.retiring = Some((old, old_pipeline));
        self.retiring = true;
        self.retire(rt);
        Ok(new)
    }

    /// `desc` as export `index`'s next version registers it, on the
    /// devices the served version runs on that `desc` offers and that can
    /// run it ([`NpuDevice::can_run`]): what [`replace`](Self::replace)
    /// checks, and `MODEL_UPDATE` before the store activates anything.
    ///
    /// # Errors
    ///
    /// As [`replace`](Self::replace) before it changes anything, in this
    /// order: [`ServeError::BadName`], [`ServeError::ModelTooLarge`],
    /// [`ServeError::Unrunnable`] (what the version is, whatever the
    /// service's state), then [`ServeError::Busy`], [`ServeError::Registry`]
    /// and [`ServeError::Pipeline`] when either is full.
    fn successor<
        'd,
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &self,
        index: usize,
        desc: &ModelDesc<'d>,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<ModelDesc<'d>, ServeError>
    where
        Npu: NpuDevice,
    {
        let export = &self.exports[index];
        let served = rt.registry.info(export.serving)?;
        if served.name.as_str() != desc.name {
            return Err(ServeError::BadName);
        }
        if desc.input.byte_len() > EXCHANGE_INPUT_SIZE
            || desc.output.byte_len() > EXCHANGE_OUTPUT_SIZE
        {
            return Err(ServeError::ModelTooLarge);
        }
        // What the version is, first (for good: `Unrunnable`); then what
        // the service lacks for the swap now (`Busy`, `Full`).
        let devices = Self::runnable_on(served.devices, desc, rt)?;
        if export.retiring.is_some() {
            return Err(ServeError::Busy);
        }
        // Room for the new version next to the old one until it retires.
        if rt.registry.len() >= rt.registry.capacity() {
            return Err(ServeError::Registry(RegistryError::Full));
        }
        if rt.pipelines.is_full() {
            return Err(ServeError::Pipeline(PipelineError::PoolFull));
        }
        Ok(ModelDesc { devices, ..*desc })
    }

    /// The devices among `serving` (the served version's) that `desc`
    /// offers and that can run it ([`NpuDevice::can_run`]: the tensors'
    /// types and sizes; for the CPU interpreter its image, every operator
    /// of it, its plan within the arena).
    ///
    /// # Errors
    ///
    /// [`ServeError::Unrunnable`] when none can, with the last device's
    /// refusal.
    fn runnable_on<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        serving: DeviceMask,
        desc: &ModelDesc<'_>,
        rt: &Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<DeviceMask, ServeError>
    where
        Npu: NpuDevice,
    {
        let model = NpuModel {
            id: 0,
            input: desc.input,
            output: desc.output,
            flash_offset: desc.flash_offset,
            flash_size: desc.flash_size,
            image: desc.image,
        };
        // A device the new version does not offer (the CPU interpreter
        // without an image in place) cannot run it either.
        let mut refusal = NpuError::InvalidImage;
        let mut devices = DeviceMask::NONE;
        for device in Device::ALL {
            if !(serving.contains(device) && desc.devices.contains(device)) {
                continue;
            }
            let verdict = match device {
                Device::Npu => rt.npu.can_run(&model),
                Device::CpuInterpreter => match rt.cpu.as_deref() {
                    Some(cpu) => cpu.can_run(&model),
                    None => Err(NpuError::WrongState(synaptic_runtime::npu::NpuState::Off)),
                },
            };
            match verdict {
                Ok(()) => devices = devices.with(DeviceMask::of(device)),
                Err(e) => refusal = e,
            }
        }
        if devices.is_empty() {
            return Err(ServeError::Unrunnable(refusal));
        }
        Ok(devices)
    }

    /// Retire every replaced version no job uses any more (see
    /// [`replace`](Self::replace)).
    fn retire<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) where
        Npu: NpuDevice,
    {
        let mut left = false;
        for k in 0..self.exports.len() {
            let Some((model, pipeline)) = self.exports[k].retiring else {
                continue;
            };
            let held = self.in_flight.iter().flatten().any(|f| f.runs == model)
                || rt.scheduler.uses(pipeline, model);
            if held {
                left = true;
                continue;
            }
            if rt.registry.is_loaded(model) == Ok(true) {
                let _ = rt.registry.unload(model, &mut *rt.npu);
            }
            let _ = rt.pipelines.destroy(pipeline);
            let _ = rt.registry.unregister(model);
            self.exports[k].retiring = None;
        }
        self.retiring = left;
    }

    /// Whether a hot swap's old version still runs (see
    /// [`replace`](Self::replace)).
    pub fn is_retiring(&self) -> bool {
        self.retiring
    }

    /// The registry's handle of the version that serves the exported
    /// `model` now (the handle itself until a hot swap); `None` when
    /// `model` is not exported.
    pub fn serving(&self, model: ModelHandle) -> Option<ModelHandle> {
        self.export_index(model).map(|i| self.exports[i].serving)
    }

    fn export_index(&self, model: ModelHandle) -> Option<usize> {
        self.exports.iter().position(|e| e.model == model)
    }

    /// Make the service-time table true again where a peer wrote it
    /// (CPU0's maintenance); returns the entries rewritten, also counted in
    /// [`ServeStats::repairs`].
    pub fn repair_estimates(&mut self) -> u32 {
        let mut repaired = 0;
        for entry in 0..synaptic_abi::SERVICE_TIME_ENTRIES {
            let (model, estimate) = self
                .exports
                .get(entry)
                .map_or((0, 0), |e| (e.model.raw(), e.estimate_us));
            if self.region.repair_service_time(entry, model, estimate) {
                repaired += 1;
            }
        }
        self.stats.repairs = self.stats.repairs.wrapping_add(repaired);
        repaired
    }

    fn publish_estimates(&self) {
        for entry in 0..synaptic_abi::SERVICE_TIME_ENTRIES {
            match self.exports.get(entry) {
                Some(e) => self
                    .region
                    .publish_service_time(entry, e.model.raw(), e.estimate_us),
                None => self.region.publish_service_time(entry, 0, 0),
            }
        }
    }

    /// CPU0's running estimate of `model`'s accept-to-reply time, µs.
    pub fn estimate_us(&self, model: ModelHandle) -> Option<u32> {
        let e = &self.exports[self.export_index(model)?];
        (e.estimate_us > 0).then_some(e.estimate_us)
    }

    /// Whether an inference holds a slot.
    pub fn is_busy(&self) -> bool {
        self.busy != 0
    }

    /// Mask of the slots whose inference is in flight.
    pub fn busy_mask(&self) -> u32 {
        self.busy
    }

    /// The jobs of the inferences in flight, by slot.
    pub fn in_flight_jobs(&self) -> impl Iterator<Item = JobId> + '_ {
        self.in_flight.iter().flatten().map(|f| f.job)
    }

    /// The job of the first inference in flight, if any.
    pub fn in_flight_job(&self) -> Option<JobId> {
        self.in_flight_jobs().next()
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
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        raw: Message,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> Disposition
    where
        Npu: NpuDevice,
        C: Clock,
    {
        match ValidMessage::try_from(raw) {
            Ok(msg) => self.handle_valid(&msg, rt, replies, ledger),
            Err(error) => {
                self.stats.requests = self.stats.requests.wrapping_add(1);
                let Some(reply) = MessageType::try_from(raw.msg_type)
                    .ok()
                    .and_then(reply_type)
                else {
                    self.stats.ignored = self.stats.ignored.wrapping_add(1);
                    return Disposition::Ignored;
                };
                let to = reply_to(raw.msg_id, reply, synaptic_abi::Priority::Normal, false);
                let status = self.refuse(ServeError::Message(error), to, None, rt.clock, replies);
                Disposition::Answered { status }
            }
        }
    }

    /// Handle one decoded message from CPU1 (normally a slot request the
    /// intake forwarded, with its slot marked in `ledger`).
    pub fn handle_valid<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        msg: &ValidMessage,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> Disposition
    where
        Npu: NpuDevice,
        C: Clock,
    {
        self.handle_request(msg, rt, replies, ledger, false)
    }

    /// [`handle_valid`](Self::handle_valid); `alone`: the request is the
    /// only one in sight, and an inference may run at once
    /// ([`Scheduler::submit_alone`]) and be answered here.
    fn handle_request<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        msg: &ValidMessage,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
        alone: bool,
    ) -> Disposition
    where
        Npu: NpuDevice,
        C: Clock,
    {
        self.stats.requests = self.stats.requests.wrapping_add(1);
        let Some(reply) = reply_type(msg.msg_type) else {
            self.stats.ignored = self.stats.ignored.wrapping_add(1);
            return Disposition::Ignored;
        };
        let to = reply_to(msg.msg_id, reply, msg.priority, wants_poll(msg));
        if msg.status & !REQUEST_FLAGS_KNOWN != 0 {
            let status = self.refuse(
                ServeError::UnknownFlags(msg.status),
                to,
                None,
                rt.clock,
                replies,
            );
            return Disposition::Answered { status };
        }
        match msg.msg_type {
            MessageType::StatusReq => {
                self.stats.status = self.stats.status.wrapping_add(1);
                let status = (ledger.mask() | self.busy_mask()) as i32;
                let answer = ValidMessage {
                    status,
                    timestamp_us: msg.timestamp_us,
                    ..to.message
                };
                self.push(replies, answer, to.polled);
                Disposition::Answered { status }
            }
            MessageType::InferReq | MessageType::ModelLoad | MessageType::ModelUpdate => {
                let slot = (msg.payload_len != 0)
                    .then(|| self.region.slot_at(msg.payload_offset as usize))
                    .flatten();
                let Some(slot) = slot else {
                    let e = ServeError::NotExchangeSlot {
                        offset: msg.payload_offset,
                    };
                    let status = self.refuse(e, to, None, rt.clock, replies);
                    return Disposition::Answered { status };
                };
                if self.in_flight[slot].is_some() {
                    // The slot stays held by its earlier request.
                    let status = self.refuse(ServeError::Busy, to, None, rt.clock, replies);
                    return Disposition::Answered { status };
                }
                let accepted_us = rt.clock.now_us();
                let outcome = match msg.msg_type {
                    MessageType::InferReq => self.accept(msg, slot, rt, alone).map(Ok),
                    MessageType::ModelLoad => self.lookup(msg, slot, rt.registry).map(Err),
                    _ => self.update(msg, slot, rt).map(Err),
                };
                match outcome {
                    Ok(Ok((Accepted::Job(job), model, runs))) => {
                        self.in_flight[slot] = Some(InFlight {
                            reply: to,
                            model,
                            runs,
                            job,
                            accepted_us,
                        });
                        self.busy |= 1 << slot;
                        Disposition::Accepted { job }
                    }
                    Ok(Ok((Accepted::Done(result), model, _))) => {
                        let done = self.reply_slot(
                            slot,
                            (to, model, accepted_us),
                            result,
                            rt.clock,
                            replies,
                            ledger,
                        );
                        Disposition::Answered {
                            status: done.status,
                        }
                    }
                    Ok(Err(status)) => {
                        if msg.msg_type == MessageType::ModelLoad {
                            self.stats.lookups = self.stats.lookups.wrapping_add(1);
                        } else {
                            self.stats.updates = self.stats.updates.wrapping_add(1);
                        }
                        let answer = ValidMessage {
                            status,
                            timestamp_us: rt.clock.now_us() as u32,
                            ..self.slot_reply(to.message, slot, 0)
                        };
                        ledger.hand_back(slot);
                        self.push(replies, answer, to.polled);
                        ledger.release(slot);
                        Disposition::Answered { status }
                    }
                    Err(e) => {
                        ledger.hand_back(slot);
                        let status = self.refuse(e, to, Some(slot), rt.clock, replies);
                        ledger.release(slot);
                        Disposition::Answered { status }
                    }
                }
            }
            MessageType::ModelUnload => {
                let e = ServeError::Unsupported(MessageType::ModelUnload);
                let status = self.refuse(e, to, None, rt.clock, replies);
                Disposition::Answered { status }
            }
            MessageType::InferResp | MessageType::StatusResp => Disposition::Ignored,
        }
    }

    /// `reply` naming slot `slot` with `len` payload bytes (its output).
    fn slot_reply(&self, reply: ValidMessage, slot: usize, len: u16) -> ValidMessage {
        let offset = self.exchange(slot).map_or(0, |e| e.offset());
        ValidMessage {
            payload_offset: offset as u32,
            payload_len: len,
            ..reply
        }
    }

    /// The request's payload, checked: inside the pool, starting at slot
    /// `slot`, exactly `expected` bytes long.
    fn check_payload(&self, msg: &ValidMessage, expected: u16) -> Result<(), ServeError> {
        msg.payload_range(self.pool.clone())?;
        if msg.payload_len != expected {
            return Err(ServeError::PayloadMismatch {
                payload_len: msg.payload_len,
                expected,
            });
        }
        Ok(())
    }

    /// Slot `slot`'s view (`None` beyond the geometry).
    fn exchange(&self, slot: usize) -> Option<Exchange<'a>> {
        self.exchanges.get(slot).copied().flatten()
    }

    /// Slot `slot`, which `msg` names.
    fn slot_exchange(&self, msg: &ValidMessage, slot: usize) -> Result<Exchange<'a>, ServeError> {
        self.exchange(slot).ok_or(ServeError::NotExchangeSlot {
            offset: msg.payload_offset,
        })
    }

    /// Validate an `INFER_REQ` on slot `slot` and submit its job (`alone`:
    /// through [`Scheduler::submit_alone`], which may run it at once).
    fn accept<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        msg: &ValidMessage,
        slot: usize,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        alone: bool,
    ) -> Result<(Accepted, ModelHandle, ModelHandle), ServeError>
    where
        Npu: NpuDevice,
        C: Clock,
    {
        let exchange = self.slot_exchange(msg, slot)?;
        // The payload must at least cover the header before it is read
        // (inside the pool: checked with its exact length below).
        if usize::from(msg.payload_len) < EXCHANGE_HEADER_SIZE {
            return Err(ServeError::NotExchangeSlot {
                offset: msg.payload_offset,
            });
        }
        // The one read of the words used; only these copies from here on.
        let (model, raw_input_len) = exchange.read_request();
        let input_len =
            synaptic_abi::exchange::input_len_within(raw_input_len, exchange.input_capacity())?;
        let expected = protocol::infer_payload_len(input_len, exchange.input_capacity()).ok_or(
            ServeError::Exchange(ExchangeError::InputTooLong(raw_input_len)),
        )?;
        self.check_payload(msg, expected)?;
        let model = ModelHandle::from_raw(model);
        let Some(export) = self.export_index(model) else {
            // The registry's word on a handle it never issued or retired.
            rt.registry.info(model)?;
            return Err(ServeError::NotExported);
        };
        let Export {
            serving, pipeline, ..
        } = self.exports[export];
        let info = rt.registry.info(serving)?;
        if info.input_size() != input_len {
            return Err(ServeError::InputSizeMismatch {
                expected: info.input_size(),
                actual: input_len,
            });
        }
        if info.output_size() > exchange.output_capacity() {
            return Err(ServeError::ModelTooLarge);
        }
        // SAFETY: CPU1 handed the slot over with this request and takes it
        // back only with our reply; `complete` reclaims the job (ending the
        // scheduler's use of both slices) before pushing that reply, and
        // nothing else on this core reads or writes the slot's tensor
        // areas meanwhile (the header is reached only as atomic words).
        let (input, output) = unsafe { (exchange.input(), exchange.output_mut()) };
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
        // The output is written in place, into the slot (zero copy out).
        let accepted = if alone {
            let (scheduler, mut env) = rt.parts();
            match scheduler
                .submit_alone(request, output, &mut env)
                .map_err(ServeError::Sched)?
            {
                Alone::Done(result) => Accepted::Done(
                    result
                        .map(|meta| (meta, meta.byte_len()))
                        .map_err(SchedError::Job),
                ),
                Alone::Submitted(job) => Accepted::Job(job),
            }
        } else {
            let job = rt
                .scheduler
                .submit_into(request, output, &*rt.pipelines, rt.clock)
                .map_err(ServeError::Sched)?;
            Accepted::Job(job)
        };
        Ok((accepted, model, serving))
    }

    /// Resolve a `MODEL_LOAD` on slot `slot`: the status is the raw handle.
    fn lookup<const M: usize>(
        &self,
        msg: &ValidMessage,
        slot: usize,
        registry: &Registry<M>,
    ) -> Result<i32, ServeError> {
        let exchange = self.slot_exchange(msg, slot)?;
        self.check_payload(msg, protocol::LOOKUP_PAYLOAD_LEN)?;
        // The one read of the header.
        let header = exchange.read_header();
        let name = header.model_name()?;
        let name = core::str::from_utf8(name).map_err(|_| ServeError::BadName)?;
        if name.is_empty() {
            return Err(ServeError::BadName);
        }
        let model = registry.find(name)?;
        // CPU1's handle: the first version's, across hot swaps.
        let export = self
            .exports
            .iter()
            .find(|e| e.serving == model)
            .ok_or(ServeError::NotExported)?;
        i32::try_from(export.model.raw()).map_err(|_| ServeError::HandleOverflow)
    }

    /// Do the `MODEL_UPDATE` step slot `slot` holds; its status.
    fn update<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        msg: &ValidMessage,
        slot: usize,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<i32, ServeError>
    where
        Npu: NpuDevice,
    {
        let exchange = self.slot_exchange(msg, slot)?;
        // Without the feature the update path is not linked (a CPU0 image
        // with no model store saves about 2 KB); the step is refused as
        // it is when `rt.updates` is `None`.
        #[cfg(not(feature = "updates"))]
        {
            let _ = (exchange, rt);
            Err(ServeError::Unsupported(MessageType::ModelUpdate))
        }
        #[cfg(feature = "updates")]
        {
            let Some(updates) = rt.updates.take() else {
                return Err(ServeError::Unsupported(MessageType::ModelUpdate));
            };
            let result = self.update_step(msg, exchange, &mut *updates, rt);
            rt.updates = Some(updates);
            result
        }
    }

    #[cfg(feature = "updates")]
    fn update_step<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        msg: &ValidMessage,
        exchange: Exchange<'a>,
        updates: &mut dyn ModelUpdates,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<i32, ServeError>
    where
        Npu: NpuDevice,
    {
        // The one read of the words used.
        let (op, arg, raw_len) = exchange.read_update();
        if op == synaptic_abi::UPDATE_OP_DATA {
            let len = synaptic_abi::exchange::input_len_within(raw_len, exchange.input_capacity())?;
            let expected = protocol::infer_payload_len(len, exchange.input_capacity())
                .ok_or(ServeError::Exchange(ExchangeError::InputTooLong(raw_len)))?;
            self.check_payload(msg, expected)?;
            // SAFETY: CPU1 handed the slot over with this request and takes
            // it back only with our reply, pushed after this read.
            let input = unsafe { exchange.input() };
            updates
                .write(arg as usize, &input[..len])
                .map_err(ServeError::Update)?;
            return Ok(len as i32);
        }
        self.check_payload(msg, protocol::LOOKUP_PAYLOAD_LEN)?;
        let back = match op {
            synaptic_abi::UPDATE_OP_BEGIN => {
                let header = exchange.read_header();
                let name =
                    core::str::from_utf8(header.model_name()?).map_err(|_| ServeError::BadName)?;
                // The update writes the slot of the version before the
                // served one, which a previous swap's old version may
                // still run from (in place): not until it is retired.
                if let Some(e) = self.served_export(name, rt.registry) {
                    if self.exports[e].retiring.is_some() {
                        return Err(ServeError::Update(Errno::Busy));
                    }
                }
                updates
                    .begin(name, arg as usize)
                    .map_err(ServeError::Update)?;
                return Ok(0);
            }
            synaptic_abi::UPDATE_OP_FINISH => {
                updates.finish().map_err(ServeError::Update)?;
                return Ok(0);
            }
            synaptic_abi::UPDATE_OP_CONFIRM => {
                let version = updates.confirm().map_err(ServeError::Update)?;
                return Ok(version as i32);
            }
            synaptic_abi::UPDATE_OP_ACTIVATE => false,
            synaptic_abi::UPDATE_OP_ROLLBACK => true,
            op => return Err(ServeError::UnknownUpdateOp(op)),
        };
        self.switch_with(back, updates, rt).map(|v| v as i32)
    }

    /// Make the store's verified update the active version (with `back`,
    /// the last activation's previous version), as `MODEL_UPDATE`'s
    /// activate and rollback do, for a caller on the serving thread (the
    /// shell's and the C API's activations go through here, so that every
    /// path is checked the same way). Returns the version made active.
    ///
    /// # Errors
    ///
    /// [`ServeError::Unsupported`] without a store; as `MODEL_UPDATE`:
    /// [`ServeError::Update`] with the store's errno (`-EBUSY` while the
    /// previous swap's old version still runs), [`ServeError::Unrunnable`]
    /// and the other refusals of [`replace`](Self::replace), before the
    /// store changes.
    #[cfg(feature = "updates")]
    pub fn switch_store<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        back: bool,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<u32, ServeError>
    where
        Npu: NpuDevice,
    {
        let Some(updates) = rt.updates.take() else {
            return Err(ServeError::Unsupported(MessageType::ModelUpdate));
        };
        let result = self.switch_with(back, &mut *updates, rt);
        rt.updates = Some(updates);
        result
    }

    /// [`switch_store`](Self::switch_store) through `updates`.
    #[cfg(feature = "updates")]
    fn switch_with<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        back: bool,
        updates: &mut dyn ModelUpdates,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<u32, ServeError>
    where
        Npu: NpuDevice,
    {
        // A served model takes the new version only if some device that
        // serves it can run it, and not while its previous swap still
        // runs: refused before the store changes.
        // The check and the switch are one step of the store
        // (`ModelUpdates::switch`): the version made active is the one
        // checked, whatever another thread does with the store meanwhile.
        let mut refusal = None;
        let switched = updates.switch(back, &mut |next| {
            let Some(e) = self.served_export(&next.name, rt.registry) else {
                return Ok(());
            };
            match self.successor(e, &next.desc(), rt) {
                Ok(_) => Ok(()),
                Err(ServeError::Busy) => Err(Errno::Busy),
                Err(error) => {
                    refusal = Some(error);
                    Err(error.to_errno())
                }
            }
        });
        let activated = match (switched, refusal) {
            (Ok(activated), _) => activated,
            (Err(_), Some(error)) => return Err(error),
            (Err(errno), None) => return Err(ServeError::Update(errno)),
        };
        if let Some(e) = self.served_export(&activated.name, rt.registry) {
            let public = self.exports[e].model;
            if let Err(error) = self.replace(public, &activated.desc(), rt) {
                // Serving and the store must agree: an activation the
                // serving layer cannot take is undone.
                if !back {
                    let _ = updates.rollback();
                }
                return Err(error);
            }
        }
        Ok(activated.version)
    }

    /// Serve the store's active version of every exported model whose
    /// store version differs from the one served (an activation or a
    /// rollback made outside `MODEL_UPDATE`: the shell's `syn ota`, the C
    /// API), hot-swapping each ([`replace`](Self::replace)). Models the
    /// store does not hold keep theirs. Returns the models swapped.
    ///
    /// # Errors
    ///
    /// [`ServeError::Busy`] while a model that needs a swap still has its
    /// previous swap's old version running (call again later; the others
    /// were swapped); the first other swap's error.
    pub fn follow_store<
        Npu,
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
    ) -> Result<usize, ServeError>
    where
        Npu: NpuDevice,
    {
        let Some(updates) = rt.updates.take() else {
            return Ok(0);
        };
        let (mut swapped, mut result) = (0, Ok(()));
        for k in 0..self.exports.len() {
            let Export { model, serving, .. } = self.exports[k];
            let Ok(info) = rt.registry.info(serving) else {
                continue;
            };
            let active = match updates.active(info.name.as_str()) {
                Ok(active) => active,
                // The store is busy (another thread holds it): again later.
                Err(Errno::Busy) => {
                    result = Err(ServeError::Busy);
                    continue;
                }
                Err(_) => continue,
            };
            if (active.version, active.crc32) == (info.version, info.crc32) {
                continue;
            }
            match self.replace(model, &active.desc(), rt) {
                Ok(_) => swapped += 1,
                Err(e) => {
                    if result.is_ok() || e == ServeError::Busy {
                        result = Err(e);
                    }
                }
            }
        }
        rt.updates = Some(updates);
        result.map(|()| swapped)
    }

    /// The export serving the model called `name`.
    #[cfg(feature = "updates")]
    fn served_export<const M: usize>(&self, name: &str, registry: &Registry<M>) -> Option<usize> {
        self.exports.iter().position(|e| {
            registry
                .info(e.serving)
                .is_ok_and(|info| info.name.as_str() == name)
        })
    }

    /// Answer every inference in flight whose job has finished: output into
    /// its slot, result words into the slot header, job reclaimed, reply
    /// pushed, slot released in `ledger`, estimate updated. Returns how many
    /// were answered and the last one.
    pub fn complete<
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        Npu,
        const CPU: bool,
    >(
        &mut self,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> Option<Completion>
    where
        C: Clock,
        Npu: NpuDevice,
    {
        self.answer(rt, replies, ledger).1
    }

    /// [`complete`](Self::complete), also counting the answers.
    fn answer<
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        Npu,
        const CPU: bool,
    >(
        &mut self,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> (usize, Option<Completion>)
    where
        C: Clock,
        Npu: NpuDevice,
    {
        let mut answered = (0, None);
        for slot in bits(self.busy) {
            if let Some(done) = self.complete_slot(slot, rt, replies, ledger) {
                answered = (answered.0 + 1, Some(done));
            }
        }
        if self.retiring && answered.0 > 0 {
            self.retire(rt);
        }
        answered
    }

    fn complete_slot<
        C,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        Npu,
        const CPU: bool,
    >(
        &mut self,
        slot: usize,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> Option<Completion>
    where
        C: Clock,
    {
        let flight = self.in_flight[slot]?;
        self.exchange(slot)?;
        // The output is in the slot already; reclaiming the job ends the
        // scheduler's hold on it. An id error: reclaimed behind our back
        // (cancelled), so the slot is free again.
        let result = match rt.scheduler.take_result(flight.job) {
            Err(SchedError::NotFinished) => return None,
            result => result,
        };
        // The job is reclaimed: the slot is CPU1's again once the reply is out.
        self.in_flight[slot] = None;
        self.busy &= !(1 << slot);
        let to = (flight.reply, flight.model, flight.accepted_us);
        Some(self.reply_slot(slot, to, result, rt.clock, replies, ledger))
    }

    /// Answer the inference on slot `slot` with `result` (its output is in
    /// the slot): the slot's header, the counters, the model's estimate,
    /// then the reply, which hands the slot back to CPU1. `to`: the reply,
    /// the exported model, and when the request was accepted.
    fn reply_slot<C: Clock>(
        &mut self,
        slot: usize,
        to: (Reply, ModelHandle, u64),
        result: Result<(TensorMeta, usize), SchedError>,
        clock: &C,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
    ) -> Completion {
        let (to, model, accepted_us) = to;
        let exchange = self.exchange(slot);
        let status = match result {
            Ok((_, len)) => {
                if let Some(exchange) = exchange {
                    exchange.set_result(len as u32, 0);
                }
                self.stats.served = self.stats.served.wrapping_add(1);
                len as i32
            }
            Err(e) => {
                let errno = ServeError::Sched(e).to_errno().negative();
                if let Some(exchange) = exchange {
                    exchange.set_result(0, errno);
                }
                self.stats.errors = self.stats.errors.wrapping_add(1);
                errno
            }
        };
        let now = clock.now_us();
        let latency_us = now.saturating_sub(accepted_us);
        self.stats.timed = self.stats.timed.wrapping_add(1);
        self.stats.latency_total_us = self.stats.latency_total_us.saturating_add(latency_us);
        self.stats.latency_max_us = self.stats.latency_max_us.max(latency_us);
        let len = if status > 0 { status as u16 } else { 0 };
        let reply = ValidMessage {
            status,
            timestamp_us: now as u32,
            ..self.slot_reply(to.message, slot, len)
        };
        // The estimate first: a caller that has its reply sees it.
        self.fold_estimate(model, latency_us);
        ledger.hand_back(slot);
        self.push(replies, reply, to.polled);
        ledger.release(slot);
        Completion {
            msg_id: to.message.msg_id,
            status,
            latency_us,
        }
    }

    fn fold_estimate(&mut self, model: ModelHandle, latency_us: u64) {
        let Some(entry) = self.export_index(model) else {
            return;
        };
        let sample = u32::try_from(latency_us).unwrap_or(u32::MAX).max(1);
        let e = &mut self.exports[entry];
        let estimate = if e.estimate_us == 0 {
            sample
        } else {
            // est += (sample - est) / 4, rounded toward zero, in u32 (a
            // signed 64-bit division links a 1 KB library routine). The
            // result lies between est and sample, so it stays in 1..=MAX.
            let est = e.estimate_us;
            if sample >= est {
                est + (sample - est) / 4
            } else {
                est - (est - sample) / 4
            }
        };
        // Unchanged (steady service): the shared words already say it; a
        // peer's scribble over them is undone by `repair_estimates`.
        if estimate != e.estimate_us {
            e.estimate_us = estimate;
            self.region
                .publish_service_time(entry, model.raw(), estimate);
        }
    }

    /// One turn of CPU0's serving thread: take every request waiting in
    /// `inbox`, run one scheduler step, answer finished inferences; when
    /// there was nothing to do, or nothing is left for another turn (no
    /// job queued, running or on the device), wait up to `idle` for a
    /// request, and start what it brings (not while a job is on the
    /// device: the caller then pauses until the device may be done and
    /// calls again). Returns the number of things done (0: idle, or
    /// waiting for the device).
    pub fn poll<
        Sem,
        Npu,
        C,
        const Q: usize,
        const M: usize,
        const P: usize,
        const S: usize,
        const J: usize,
        const CPU: bool,
    >(
        &mut self,
        inbox: &Inbox<Sem, Q>,
        rt: &mut Runtime<'_, 'a, Npu, C, M, P, S, J, CPU>,
        replies: &impl ReplyPort,
        ledger: &SlotLedger,
        idle: Timeout,
    ) -> usize
    where
        Sem: Semaphore,
        Npu: NpuDevice,
        C: Clock,
    {
        let mut work = 0;
        // Nothing to step or answer (the turn after a reply, when requests
        // come one at a time): straight to the wait, which also takes what
        // is already in the inbox.
        let quiet = self.busy == 0 && rt.scheduler.is_idle();
        let nothing_left = quiet || {
            // One clock reading stamps the turn (see `TurnClock`).
            rt.clock.new_turn();
            // A step first: a device that just finished gets its next job
            // before anything new is validated.
            let mut outcome = rt.step();
            let ran = matches!(outcome, StepOutcome::Ran { .. });
            let mut accepted = 0;
            while let Ok(msg) = inbox.receive(Timeout::NoWait) {
                self.handle_valid(&msg, rt, replies, ledger);
                accepted += 1;
            }
            if !ran && accepted > 0 {
                outcome = rt.step();
            }
            if let StepOutcome::Ran { .. } = outcome {
                work += 1;
            }
            work += accepted;
            work += self.answer(rt, replies, ledger).0;
            // A job on the device: the caller waits for it, not for a
            // request. After work, wait at once when nothing is left for
            // another turn (no job queued, running or on the device): an
            // idle turn first would cost a scheduler step per request.
            if work == 0 {
                outcome != StepOutcome::Waiting
            } else {
                self.busy == 0 && rt.scheduler.pending() == 0
            }
        };
        if nothing_left {
            if let Ok(msg) = inbox.receive(idle) {
                // A new turn: time passed while waiting.
                rt.clock.new_turn();
                // Nothing in the scheduler and nothing else in sight: an
                // inference may run at once, and be answered here.
                let alone = quiet && inbox.is_empty();
                self.handle_request(&msg, rt, replies, ledger, alone);
                work += 1;
                // What came with it (a quiet turn waited without looking)
                // is accepted in the same turn.
                if quiet {
                    while let Ok(msg) = inbox.receive(Timeout::NoWait) {
                        self.handle_valid(&msg, rt, replies, ledger);
                        work += 1;
                    }
                }
                // Start what it submitted now, not a turn later; a device
                // that finished it at once: answer now, too.
                if let StepOutcome::Ran { finished, .. } = rt.step() {
                    work += 1;
                    if finished {
                        work += self.answer(rt, replies, ledger).0;
                    }
                }
            }
        }
        work
    }

    /// Count and answer a refused request; returns the status sent. With
    /// `slot`, the slot was accepted for this request: its header records
    /// why, and the reply names it.
    fn refuse<C: Clock>(
        &mut self,
        error: ServeError,
        to: Reply,
        slot: Option<usize>,
        clock: &C,
        replies: &impl ReplyPort,
    ) -> i32 {
        self.stats.count_refusal(error);
        let status = error.to_errno().negative();
        let mut answer = ValidMessage {
            status,
            timestamp_us: clock.now_us() as u32,
            ..to.message
        };
        if let Some(slot) = slot {
            if to.message.msg_type == MessageType::InferResp {
                if let Some(exchange) = self.exchange(slot) {
                    exchange.set_result(0, status);
                }
            }
            answer = self.slot_reply(answer, slot, 0);
        }
        self.push(replies, answer, to.polled);
        status
    }

    fn push(&mut self, replies: &impl ReplyPort, reply: ValidMessage, polled: bool) {
        if replies.reply(reply, polled).is_err() {
            self.stats.reply_failures = self.stats.reply_failures.wrapping_add(1);
        }
    }
}

/// A built pipeline named `name` that runs `model` alone, taking the name
/// from `old` (superseded; reinstated when the new one cannot be made).
fn successor_pipeline<const P: usize, const S: usize>(
    pipelines: &mut PipelinePool<P, S>,
    old: PipelineId,
    name: &str,
    model: ModelHandle,
) -> Result<PipelineId, PipelineError> {
    pipelines.supersede(old)?;
    let made = pipelines.create(name).and_then(|id| {
        match pipelines
            .add_model(id, model)
            .and_then(|()| pipelines.build(id))
        {
            Ok(()) => Ok(id),
            Err(e) => {
                let _ = pipelines.destroy(id);
                Err(e)
            }
        }
    });
    if made.is_err() {
        let _ = pipelines.reinstate(old);
    }
    made
}

/// The indices of the set bits of `mask`, lowest first.
fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        let k = mask.trailing_zeros();
        (mask != 0).then(|| {
            mask &= mask - 1;
            k as usize
        })
    })
}
