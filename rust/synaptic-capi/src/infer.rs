//! `syn_infer.h`: pipelines, jobs and the priority scheduler.
//!
//! * A `syn_pipeline_t *` is the address of one byte in a static table of
//!   `MAX_PIPELINES x 16` bytes: it names a pool slot and the low four bits
//!   of that slot's generation, so a pointer kept across a destroy is
//!   rejected unless the slot was reused sixteen times since. The pointer is
//!   never dereferenced.
//! * Every stage, built-in or the application's, is a C function pointer
//!   and its configuration pointer; the runtime runs it through one Rust
//!   trampoline. A stage's output buffer is the job slot's intermediate
//!   buffer (`out->size` holds its capacity on entry); the stage sets the
//!   result's size, dtype and shape. When `size` and the shape disagree (the
//!   reference's argmax reports one record of 8 bytes with shape `[1]`), the
//!   runtime keeps `size` and describes the bytes as a vector of `dtype`.
//! * Job ids are the scheduler's generation-checked ids. Jobs run on the
//!   thread that calls `syn_infer_wait()` or `syn_infer_run_sync()`: each
//!   call steps the scheduler, one stage at a time, always the most urgent
//!   job first (so a waiting thread also runs other threads' urgent jobs).
//!   Completion callbacks run on that thread too, with the runtime lock
//!   released, so they may call the API.
//! * Results from `syn_infer_get_result()` are copied into the ephemeral
//!   region of the arena and stay valid until `syn_mem_reset_ephemeral()`,
//!   as in the reference.

use core::ffi::{c_char, c_int, c_void};
use core::fmt::Write;
use core::sync::atomic::{AtomicI32, Ordering};

use synaptic_abi::{Errno, Priority};
use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Stage, MAX_NAME_LEN};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::sched::{Env, JobError, JobId, JobRequest, JobStatus, StepOutcome};
use synaptic_runtime::time::Clock;

use crate::mem::{descriptor, ephemeral_copy, meta_of, set_geometry};
use crate::platform::PlatformClock;
use crate::state::{self, JobExtra, State};
use crate::types::{
    syn_infer_params_t, syn_job_id_t, syn_mem_lifetime_t, syn_model_handle_t, syn_pipeline,
    syn_pipeline_t, syn_postprocess_fn_t, syn_preprocess_fn_t, syn_tensor_t, RawBool, RawPriority,
    SYN_JOB_INVALID, SYN_MODEL_INVALID,
};
use crate::{c_str, neg, BUSY, MAX_JOBS, MAX_PIPELINES};

/// Generations a pipeline pointer can tell apart.
const HANDLE_GENERATIONS: usize = 16;

/// The addresses C pipeline handles point to (never read or written).
static PIPELINE_HANDLES: [syn_pipeline; MAX_PIPELINES * HANDLE_GENERATIONS] =
    [const { syn_pipeline::new() }; MAX_PIPELINES * HANDLE_GENERATIONS];

/// The C handle of a pipeline.
fn handle_of(id: PipelineId) -> *mut syn_pipeline_t {
    let raw = id.raw();
    let slot = (raw & 0xFFFF) as usize;
    let generation = (raw >> 16) as usize % HANDLE_GENERATIONS;
    let handle: *const syn_pipeline = &PIPELINE_HANDLES[generation * MAX_PIPELINES + slot];
    handle.cast_mut()
}

/// The live pipeline a C handle names.
fn pipeline_of(s: &State, pipe: *const syn_pipeline_t) -> Result<PipelineId, Errno> {
    let base = PIPELINE_HANDLES.as_ptr() as usize;
    let offset = (pipe as usize).wrapping_sub(base);
    if offset >= PIPELINE_HANDLES.len() * core::mem::size_of::<syn_pipeline>() {
        return Err(Errno::Inval);
    }
    let index = offset / core::mem::size_of::<syn_pipeline>();
    let (generation, slot) = (index / MAX_PIPELINES, index % MAX_PIPELINES);
    match s.live_pipelines[slot] {
        Some(id) if (id.raw() >> 16) as usize % HANDLE_GENERATIONS == generation => Ok(id),
        _ => Err(Errno::Inval),
    }
}

// ------------------------------------------------------------------ C stages

/// A C stage function, NULL excluded.
type CStageFn =
    unsafe extern "C" fn(*const syn_tensor_t, *mut syn_tensor_t, *const c_void) -> c_int;

/// The negative errno of the last C stage that failed (written only with the
/// runtime lock held; read after the step that ran it).
static LAST_STAGE_ERRNO: AtomicI32 = AtomicI32::new(0);

/// A C stage as the runtime's stage configuration: function and config
/// addresses in the four custom words (low word first).
fn encode(func: CStageFn, config: *const c_void) -> StageConfig {
    let f = func as usize as u64;
    let c = config.expose_provenance() as u64;
    StageConfig::Custom([f as u32, (f >> 32) as u32, c as u32, (c >> 32) as u32])
}

/// The C stage [`encode`] put into `config`.
fn decode(config: &StageConfig) -> Option<(CStageFn, *const c_void)> {
    let StageConfig::Custom(w) = *config else {
        return None;
    };
    let f = ((u64::from(w[1]) << 32) | u64::from(w[0])) as usize;
    let c = ((u64::from(w[3]) << 32) | u64::from(w[2])) as usize;
    if f == 0 {
        return None;
    }
    // SAFETY: `c_stage` is private to this module and is only ever paired
    // (in `add_stage`) with words that `encode` made from a non-null C stage
    // function pointer, so `f` is the address of a function of exactly this
    // type.
    let func = unsafe { core::mem::transmute::<usize, CStageFn>(f) };
    Some((func, core::ptr::with_exposed_provenance(c)))
}

/// The tensor a C stage's output descriptor describes.
fn output_meta(out: &syn_tensor_t) -> Result<TensorMeta, ProcessError> {
    let dtype = out.dtype.dtype().map_err(|_| ProcessError::InvalidConfig)?;
    if out.size == 0 {
        return Err(ProcessError::Empty);
    }
    if let Ok(meta) = meta_of(out) {
        if meta.byte_len() == out.size {
            return Ok(meta);
        }
    }
    let meta = if out.size % dtype.size() == 0 {
        TensorMeta::vector(dtype, out.size / dtype.size())
    } else {
        TensorMeta::vector(DType::UInt8, out.size)
    };
    meta.map_err(|_| ProcessError::InvalidDimensions)
}

/// The runtime stage that runs a C stage function.
fn c_stage(
    input: &TensorRef<'_>,
    output: &mut [u8],
    config: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    let (func, stage_config) = decode(config).ok_or(ProcessError::ConfigMismatch)?;
    let in_desc = descriptor(
        input.meta(),
        input.data().as_ptr().cast_mut(),
        syn_mem_lifetime_t::SYN_MEM_EPHEMERAL,
    );
    let capacity = output.len();
    let out_ptr = output.as_mut_ptr();
    let mut out_desc = descriptor(
        TensorMeta::vector(DType::UInt8, capacity.max(1)).map_err(|_| ProcessError::Empty)?,
        out_ptr,
        syn_mem_lifetime_t::SYN_MEM_EPHEMERAL,
    );
    out_desc.size = capacity;
    // SAFETY: `func` is a stage function the application registered
    // (`decode`), called with its own config pointer. `in_desc` describes
    // `input.data()` (read-only, alive for this call); `out_desc` describes
    // `output`, `capacity` writable bytes that nothing else uses during the
    // call. Both descriptors live on this stack frame.
    let rc = unsafe { func(&in_desc, &mut out_desc, stage_config) };
    let fail = |errno: c_int, error: ProcessError| {
        LAST_STAGE_ERRNO.store(errno, Ordering::Relaxed);
        Err(error)
    };
    if rc == neg(Errno::NoMem) {
        return fail(
            rc,
            ProcessError::OutputTooSmall {
                needed: capacity + 1,
                actual: capacity,
            },
        );
    }
    if rc < 0 {
        return fail(rc, ProcessError::InvalidConfig);
    }
    if rc > 0 {
        return fail(neg(Errno::Io), ProcessError::InvalidConfig);
    }
    if out_desc.data != out_ptr.cast::<c_void>() || out_desc.size > capacity {
        return fail(neg(Errno::Fault), ProcessError::InvalidDimensions);
    }
    output_meta(&out_desc).or_else(|e| fail(neg(Errno::Inval), e))
}

// ------------------------------------------------------------------ pipelines

/// Creates a pipeline named `name`, or `name#2`, `name#3`... when the name
/// is taken (C callers may reuse names; the pool's names are unique).
fn create_named(
    pool: &mut PipelinePool<MAX_PIPELINES, { crate::MAX_STAGES }>,
    name: &str,
) -> Result<PipelineId, PipelineError> {
    let mut cut = name.len().min(MAX_NAME_LEN);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let base = if cut == 0 { "unnamed" } else { &name[..cut] };
    match pool.create(base) {
        Err(PipelineError::DuplicateName) => {}
        other => return other,
    }
    for n in 2..=MAX_PIPELINES + 1 {
        let mut suffix: heapless::String<8> = heapless::String::new();
        let _ = write!(suffix, "#{n}");
        let mut keep = base.len().min(MAX_NAME_LEN - suffix.len());
        while !base.is_char_boundary(keep) {
            keep -= 1;
        }
        let mut unique: heapless::String<MAX_NAME_LEN> = heapless::String::new();
        let _ = unique.push_str(&base[..keep]);
        let _ = unique.push_str(&suffix);
        match pool.create(&unique) {
            Err(PipelineError::DuplicateName) => continue,
            other => return other,
        }
    }
    Err(PipelineError::PoolFull)
}

/// Creates an empty pipeline. The name (NULL: `"unnamed"`) is copied,
/// truncated to 31 bytes; a name in use gets a `#n` suffix.
///
/// Returns the pipeline, or NULL when the pool (`SYN_CAPI_MAX_PIPELINES`)
/// is full or the name is not UTF-8.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn syn_pipeline_create(name: *const c_char) -> *mut syn_pipeline_t {
    let name = if name.is_null() {
        "unnamed"
    } else {
        // SAFETY: non-null and NUL-terminated (contract); at most 257 bytes
        // are read, longer names are refused here and truncated below.
        match unsafe { c_str(name, 256) } {
            Ok(n) => n,
            Err(_) => return core::ptr::null_mut(),
        }
    };
    state::with(|s| {
        let id = create_named(&mut s.pipelines, name).ok()?;
        let slot = (id.raw() & 0xFFFF) as usize;
        s.live_pipelines[slot] = Some(id);
        Some(handle_of(id))
    })
    .ok()
    .flatten()
    .unwrap_or(core::ptr::null_mut())
}

/// The C convention for pipeline construction errors.
fn construction_errno(e: PipelineError) -> c_int {
    neg(match e {
        PipelineError::AlreadyBuilt => Errno::Perm,
        PipelineError::ModelAlreadySet => Errno::Already,
        PipelineError::TooManyStages => Errno::NoMem,
        _ => Errno::Inval,
    })
}

fn add_stage(
    pipe: *mut syn_pipeline_t,
    func: syn_preprocess_fn_t,
    config: *mut c_void,
    pre: bool,
) -> c_int {
    let Some(func) = func else {
        return neg(Errno::Inval);
    };
    state::with(|s| {
        let id = match pipeline_of(s, pipe) {
            Ok(id) => id,
            Err(e) => return neg(e),
        };
        let stage = Stage {
            name: if pre { "c-pre" } else { "c-post" },
            func: c_stage,
            config: encode(func, config.cast_const()),
        };
        let added = if pre {
            s.pipelines.add_preprocess(id, stage)
        } else {
            s.pipelines.add_postprocess(id, stage)
        };
        match added {
            Ok(()) => 0,
            Err(e) => construction_errno(e),
        }
    })
    .unwrap_or(BUSY)
}

/// Appends a pre-processing stage (before the model stage only).
///
/// Returns 0, or `-EINVAL` for a bad pipeline, a NULL function or a stage
/// after the model, `-EPERM` once built, `-ENOMEM` when the pipeline has
/// `SYN_CAPI_MAX_STAGES` steps (the model included).
///
/// `config` is passed to `fn` on every run and must stay valid while the
/// pipeline exists.
#[no_mangle]
pub extern "C" fn syn_pipeline_add_preprocess(
    pipe: *mut syn_pipeline_t,
    r#fn: syn_preprocess_fn_t,
    config: *mut c_void,
) -> c_int {
    add_stage(pipe, r#fn, config, true)
}

/// Sets the pipeline's model stage.
///
/// Returns 0, or `-EINVAL` for a bad pipeline or `SYN_MODEL_INVALID`,
/// `-EPERM` once built, `-EALREADY` when a model is set, `-ENOENT` for a
/// handle that names no registered model, `-ENOMEM` when full.
#[no_mangle]
pub extern "C" fn syn_pipeline_add_model(
    pipe: *mut syn_pipeline_t,
    model: syn_model_handle_t,
) -> c_int {
    if model == SYN_MODEL_INVALID {
        return neg(Errno::Inval);
    }
    state::with(|s| {
        let id = match pipeline_of(s, pipe) {
            Ok(id) => id,
            Err(e) => return neg(e),
        };
        let handle = crate::model::from_c(s, model);
        if s.registry.info(handle).is_err() {
            return match s.pipelines.get(id) {
                Ok(p) if p.is_built() => neg(Errno::Perm),
                _ => neg(Errno::NoEnt),
            };
        }
        match s.pipelines.add_model(id, handle) {
            Ok(()) => 0,
            Err(e) => construction_errno(e),
        }
    })
    .unwrap_or(BUSY)
}

/// Appends a post-processing stage (after the model stage only).
///
/// Returns as `syn_pipeline_add_preprocess()` (`-EINVAL` before the model).
#[no_mangle]
pub extern "C" fn syn_pipeline_add_postprocess(
    pipe: *mut syn_pipeline_t,
    r#fn: syn_postprocess_fn_t,
    config: *mut c_void,
) -> c_int {
    add_stage(pipe, r#fn, config, false)
}

/// Freezes a pipeline so that jobs can be submitted to it.
///
/// Returns 0, `-EINVAL` for a bad pipeline or one without a model,
/// `-EALREADY` when built.
#[no_mangle]
pub extern "C" fn syn_pipeline_build(pipe: *mut syn_pipeline_t) -> c_int {
    state::with(|s| {
        let id = match pipeline_of(s, pipe) {
            Ok(id) => id,
            Err(e) => return neg(e),
        };
        match s.pipelines.build(id) {
            Ok(()) => 0,
            Err(PipelineError::AlreadyBuilt) => neg(Errno::Already),
            Err(_) => neg(Errno::Inval),
        }
    })
    .unwrap_or(BUSY)
}

fn destroy(s: &mut State, id: PipelineId) {
    for extra in s.jobs.iter_mut() {
        let pending = extra.pipeline == Some(id)
            && extra.id.is_some_and(|job| {
                matches!(
                    s.sched.status(job),
                    Ok(JobStatus::Queued | JobStatus::Running { .. })
                )
            });
        if pending {
            extra.errno = Some(neg(Errno::Canceled));
        }
    }
    let _ = s.pipelines.destroy(id);
    let slot = (id.raw() & 0xFFFF) as usize;
    s.live_pipelines[slot] = None;
}

/// Destroys a pipeline. Its unfinished jobs fail with `-ECANCELED` (they
/// stay until collected). NULL and stale pointers are ignored.
#[no_mangle]
pub extern "C" fn syn_pipeline_destroy(pipe: *mut syn_pipeline_t) {
    let _ = state::with(|s| {
        if let Ok(id) = pipeline_of(s, pipe) {
            destroy(s, id);
        }
    });
}

// ------------------------------------------------------------------ jobs

fn slot_of(job: JobId) -> usize {
    (job.raw() & 0xFFFF) as usize
}

/// The C-side data of a job, when the slot still holds that job.
fn extra_of(jobs: &mut [JobExtra; MAX_JOBS], job: JobId) -> Option<&mut JobExtra> {
    jobs.get_mut(slot_of(job)).filter(|e| e.id == Some(job))
}

/// Whether `job` was cancelled with `syn_infer_cancel()` and not collected.
fn cancelled(s: &mut State, job: JobId) -> bool {
    extra_of(&mut s.jobs, job).is_some_and(|x| x.cancelled)
}

/// Whether one more job may be submitted: fewer than
/// `syn_infer_set_max_concurrent()` jobs are queued or running.
fn may_submit(s: &State) -> bool {
    let active = s
        .jobs
        .iter()
        .filter_map(|x| x.id)
        .filter(|&job| {
            matches!(
                s.sched.status(job),
                Ok(JobStatus::Queued | JobStatus::Running { .. })
            )
        })
        .count();
    active < s.submit_limit
}

/// The errno a failed job reports.
fn job_errno(s: &mut State, job: JobId, e: JobError) -> c_int {
    if let Some(errno) = extra_of(&mut s.jobs, job).and_then(|x| x.errno) {
        return errno;
    }
    neg(e.to_errno())
}

/// Forgets a job's C-side data and reclaims its slot.
fn reclaim(s: &mut State, job: JobId) {
    if let Some(extra) = extra_of(&mut s.jobs, job) {
        *extra = JobExtra::EMPTY;
    }
    let _ = s.sched.release(job);
}

/// A completion callback to make once the lock is released.
struct Notify {
    callback: unsafe extern "C" fn(syn_job_id_t, *const syn_tensor_t, *mut c_void),
    job: syn_job_id_t,
    output: Option<syn_tensor_t>,
    user_data: *mut c_void,
}

impl Notify {
    fn run(self) {
        let output = self
            .output
            .as_ref()
            .map_or(core::ptr::null(), |t| t as *const syn_tensor_t);
        // SAFETY: the application registered `callback` for this job with
        // `user_data`; `output` is NULL or points to a descriptor on this
        // stack frame whose data is the finished job's buffer, which stays
        // untouched until the job is collected.
        unsafe { (self.callback)(self.job, output, self.user_data) }
    }
}

/// Runs one scheduler step; returns whether anything ran and the callback
/// of a job it finished.
fn step(s: &mut State) -> (bool, Option<Notify>) {
    LAST_STAGE_ERRNO.store(0, Ordering::Relaxed);
    let State {
        registry,
        npu,
        pipelines,
        profiler,
        sched,
        jobs,
        raw_model,
        arena,
        ..
    } = s;
    let mut env = Env {
        registry,
        npu,
        cpu: None,
        pipelines,
        clock: &PlatformClock,
        profiler: Some(profiler),
    };
    // Built-in stages take their working memory from the scratch pool
    // (crate::mem::with_scratch); the step does not touch the arena.
    let arena_ptr = arena
        .as_mut()
        .map_or(core::ptr::null_mut(), |a| a as *mut _);
    crate::mem::STEP_ARENA.store(arena_ptr, Ordering::Release);
    let outcome = sched.step(&mut env);
    crate::mem::STEP_ARENA.store(core::ptr::null_mut(), Ordering::Release);
    if raw_model.is_some() && env.registry.loaded().is_some() {
        // A model stage replaced the HAL's raw model on the NPU.
        *raw_model = None;
    }
    let StepOutcome::Ran {
        job,
        finished: true,
        ..
    } = outcome
    else {
        return (outcome != StepOutcome::Idle, None);
    };
    let Some(extra) = extra_of(jobs, job) else {
        return (true, None);
    };
    let status = sched.status(job);
    if let Ok(JobStatus::Failed(JobError::Stage { .. } | JobError::BufferTooSmall { .. })) = status
    {
        let errno = LAST_STAGE_ERRNO.load(Ordering::Relaxed);
        if errno != 0 && extra.errno.is_none() {
            extra.errno = Some(errno);
        }
    }
    let Some(callback) = extra.callback.filter(|_| !extra.notified) else {
        return (true, None);
    };
    extra.notified = true;
    let output = sched.output(job).ok().map(|view| {
        descriptor(
            view.meta(),
            view.data().as_ptr().cast_mut(),
            syn_mem_lifetime_t::SYN_MEM_EPHEMERAL,
        )
    });
    (
        true,
        Some(Notify {
            callback,
            job: job.raw(),
            output,
            user_data: extra.user_data,
        }),
    )
}

/// Steps the scheduler until `job` finishes or `timeout_us` passes;
/// returns 0 (done), the job's errno (failed), `-ENOENT` (unknown job) or
/// `-EAGAIN` (time is up, or nothing can run). The clock is read only with
/// the lock held (see [`crate::Platform::now_us`]).
fn drive(job: JobId, timeout_us: u64) -> c_int {
    let mut deadline_us = None;
    loop {
        let turn = state::with(|s| {
            let now = PlatformClock.now_us();
            let deadline = *deadline_us.get_or_insert(now.saturating_add(timeout_us));
            match s.sched.status(job) {
                Err(_) if cancelled(s, job) => return Err(neg(Errno::Canceled)),
                Err(_) => return Err(neg(Errno::NoEnt)),
                Ok(JobStatus::Done(_)) => return Err(0),
                Ok(JobStatus::Failed(e)) => return Err(job_errno(s, job, e)),
                Ok(_) => {}
            }
            if now >= deadline {
                return Err(neg(Errno::Again));
            }
            match step(s) {
                (false, _) => Err(neg(Errno::Again)),
                (true, notify) => Ok(notify),
            }
        });
        match turn {
            Err(_) => return BUSY,
            Ok(Err(rc)) => return rc,
            Ok(Ok(Some(notify))) => notify.run(),
            Ok(Ok(None)) => {}
        }
    }
}

/// Submits an inference job; it runs when a thread waits (see syn_infer.h). `params` NULL means `SYN_PRIORITY_NORMAL`, no deadline,
/// not preemptible, no callback.
///
/// Returns the job id, or `SYN_JOB_INVALID` for a bad or unbuilt pipeline,
/// a NULL or malformed input, an unknown priority, or no free job slot.
///
/// # Safety
///
/// `input` is NULL or valid for reads, and its `data` valid for reads of
/// `size` bytes and unchanged until the job is collected
/// (`syn_infer_get_result()` or `syn_infer_cancel()`); `params` is NULL or
/// valid for reads.
#[no_mangle]
pub unsafe extern "C" fn syn_infer_submit(
    pipe: *mut syn_pipeline_t,
    input: *const syn_tensor_t,
    params: *const syn_infer_params_t,
) -> syn_job_id_t {
    if pipe.is_null() || input.is_null() {
        return SYN_JOB_INVALID;
    }
    let defaults = syn_infer_params_t {
        priority: RawPriority(Priority::Normal as crate::types::CEnum),
        deadline_us: 0,
        preemptible: RawBool(0),
        callback: None,
        user_data: core::ptr::null_mut(),
    };
    let params = if params.is_null() {
        defaults
    } else {
        // SAFETY: non-null and valid for reads (contract); every field is
        // valid for any bit pattern.
        unsafe { params.read() }
    };
    // SAFETY: forwarded contract on `input` (kept until collection).
    let Ok(input) = (unsafe { input_view(input) }) else {
        return SYN_JOB_INVALID;
    };
    let Ok(priority) = params.priority.priority() else {
        return SYN_JOB_INVALID;
    };
    state::with(|s| {
        let pipeline = pipeline_of(s, pipe).ok()?;
        if !may_submit(s) {
            return None;
        }
        let now = PlatformClock.now_us();
        let request = JobRequest {
            pipeline,
            input,
            priority,
            deadline_us: (params.deadline_us != 0)
                .then(|| now.saturating_add(u64::from(params.deadline_us))),
            preemptible: params.preemptible.get(),
            callback: None,
        };
        let job = s.sched.submit(request, &s.pipelines, &PlatformClock).ok()?;
        s.jobs[slot_of(job)] = JobExtra {
            id: Some(job),
            pipeline: Some(pipeline),
            callback: params.callback,
            user_data: params.user_data,
            notified: false,
            errno: None,
            cancelled: false,
        };
        Some(job.raw())
    })
    .ok()
    .flatten()
    .unwrap_or(SYN_JOB_INVALID)
}

/// The input tensor of a job, borrowed for as long as the job exists.
///
/// # Safety
///
/// `input` is valid for reads; its `data` is valid for reads of `size`
/// bytes and unchanged until the job that reads it is collected.
unsafe fn input_view(input: *const syn_tensor_t) -> Result<TensorRef<'static>, Errno> {
    // SAFETY: valid for reads (contract); every field is valid for any bit pattern.
    let t = unsafe { input.read() };
    if t.data.is_null() {
        return Err(Errno::Inval);
    }
    let meta = meta_of(&t)?;
    // SAFETY: `data` is valid for `size >= byte_len` bytes (meta_of checked
    // the length) and unchanged until the job is collected (contract); the
    // job, the only holder of this reference, is dropped by then.
    let bytes = unsafe { core::slice::from_raw_parts(t.data.cast::<u8>(), meta.byte_len()) };
    TensorRef::wrap(meta, bytes).map_err(|_| Errno::Inval)
}

/// Runs queued jobs (most urgent first) until `job` finishes, for at most
/// `timeout_ms` milliseconds (checked between stages). The job stays
/// collectable.
///
/// Returns 0 when it finished, its negative errno when it failed
/// (`-ECANCELED` when its pipeline was destroyed, `-ETIMEDOUT` when its
/// deadline passed), `-ENOENT` for an unknown job, `-EAGAIN` on timeout.
#[no_mangle]
pub extern "C" fn syn_infer_wait(job: syn_job_id_t, timeout_ms: u32) -> c_int {
    if job == SYN_JOB_INVALID {
        return neg(Errno::NoEnt);
    }
    drive(JobId::from_raw(job), u64::from(timeout_ms) * 1000)
}

/// Cancels a job that has not finished. It stops at once and no longer
/// counts against `syn_infer_set_max_concurrent()`, but, as in the
/// reference, it is kept: `syn_infer_wait()` and `syn_infer_get_result()`
/// report `-ECANCELED` for it, and `syn_infer_get_result()` collects it.
/// (Its job slot is free for new submissions; once a new job takes that
/// slot, the cancelled id is unknown, `-ENOENT`.) Its callback is not
/// called.
///
/// Returns 0, `-ENOENT` for an unknown job, `-EALREADY` when it finished
/// (collect it with `syn_infer_get_result()`) or was cancelled already.
#[no_mangle]
pub extern "C" fn syn_infer_cancel(job: syn_job_id_t) -> c_int {
    let id = JobId::from_raw(job);
    state::with(|s| match s.sched.status(id) {
        Err(_) if cancelled(s, id) => neg(Errno::Already),
        Err(_) => neg(Errno::NoEnt),
        Ok(JobStatus::Done(_) | JobStatus::Failed(_)) => neg(Errno::Already),
        Ok(_) => {
            if let Some(extra) = extra_of(&mut s.jobs, id) {
                *extra = JobExtra {
                    id: Some(id),
                    cancelled: true,
                    ..JobExtra::EMPTY
                };
            }
            match s.sched.cancel(id) {
                Ok(()) => 0,
                Err(e) => neg(e.to_errno()),
            }
        }
    })
    .unwrap_or(BUSY)
}

/// Collects a finished job: its output is copied into the arena's ephemeral
/// region (valid until `syn_mem_reset_ephemeral()`) and described in
/// `*output`; the job is reclaimed.
///
/// Returns 0, `-EINVAL` for NULL, `-ENOENT` for an unknown job, `-EBUSY`
/// while it has not finished, its errno when it failed (it is reclaimed
/// too), `-ENOMEM` when the arena cannot hold the copy (the job stays).
///
/// # Safety
///
/// `output` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_infer_get_result(
    job: syn_job_id_t,
    output: *mut syn_tensor_t,
) -> c_int {
    if output.is_null() {
        return neg(Errno::Inval);
    }
    let id = JobId::from_raw(job);
    let collected = state::with(|s| match s.sched.status(id) {
        Err(_) if cancelled(s, id) => {
            if let Some(extra) = extra_of(&mut s.jobs, id) {
                *extra = JobExtra::EMPTY;
            }
            Err(neg(Errno::Canceled))
        }
        Err(_) => Err(neg(Errno::NoEnt)),
        Ok(JobStatus::Queued | JobStatus::Running { .. }) => Err(neg(Errno::Busy)),
        Ok(JobStatus::Failed(e)) => {
            let rc = job_errno(s, id, e);
            reclaim(s, id);
            Err(rc)
        }
        Ok(JobStatus::Done(meta)) => {
            let State { sched, arena, .. } = &mut *s;
            let Some(arena) = arena.as_mut() else {
                return Err(neg(Errno::NoMem));
            };
            let view = sched.output(id).map_err(|e| neg(e.to_errno()))?;
            let copy = ephemeral_copy(arena, meta, view.data()).map_err(neg)?;
            reclaim(s, id);
            Ok(copy)
        }
    });
    match collected {
        Err(_) => BUSY,
        Ok(Err(rc)) => rc,
        Ok(Ok(t)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { output.write(t) };
            0
        }
    }
}

/// Runs one inference on a bare model, synchronously (a temporary
/// single-model pipeline, submit, run to completion, collect). When
/// `output->data` is non-NULL and `output->size` is large enough the result
/// is copied there; otherwise `*output` describes a copy in the arena's
/// ephemeral region.
///
/// Returns 0, `-EINVAL` for NULL pointers, a malformed input, an unknown
/// priority or `SYN_MODEL_INVALID`, `-ENOENT` for an unregistered model,
/// `-ENOMEM` when no pipeline is free or the arena cannot hold the result,
/// `-EBUSY` when no job slot is free, or the job's errno.
///
/// # Safety
///
/// `input` is NULL or valid for reads, its `data` valid for reads of `size`
/// bytes; `output` is NULL or valid for reads and writes, and when its
/// `data` is non-NULL, that is valid for writes of `output->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn syn_infer_run_sync(
    model: syn_model_handle_t,
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    priority: RawPriority,
) -> c_int {
    if input.is_null() || output.is_null() || model == SYN_MODEL_INVALID {
        return neg(Errno::Inval);
    }
    let Ok(priority) = priority.priority() else {
        return neg(Errno::Inval);
    };
    // SAFETY: forwarded contract on `input`; the job that borrows it is
    // collected (or cancelled) before this function returns.
    let input = match unsafe { input_view(input) } {
        Ok(v) => v,
        Err(e) => return neg(e),
    };
    // SAFETY: non-null and valid for reads (contract).
    let caller = unsafe { output.read() };
    let started = state::with(|s| start_sync(s, model, input, priority));
    let (pipeline, job) = match started {
        Err(_) => return BUSY,
        Ok(Err(rc)) => return rc,
        Ok(Ok(v)) => v,
    };
    let rc = drive(job, u64::MAX);
    let finished = state::with(|s| {
        let result = if rc == 0 {
            finish_sync(s, job, &caller)
        } else {
            Err(rc)
        };
        let _ = s.sched.cancel(job);
        reclaim(s, job);
        if s.pipelines.get(pipeline).is_ok() {
            destroy(s, pipeline);
        }
        result
    });
    match finished {
        Err(_) => BUSY,
        Ok(Err(rc)) => rc,
        Ok(Ok(t)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { output.write(t) };
            0
        }
    }
}

fn start_sync(
    s: &mut State,
    model: syn_model_handle_t,
    input: TensorRef<'static>,
    priority: Priority,
) -> Result<(PipelineId, JobId), c_int> {
    let handle = crate::model::from_c(s, model);
    if s.registry.info(handle).is_err() {
        return Err(neg(Errno::NoEnt));
    }
    if !may_submit(s) {
        return Err(neg(Errno::Busy));
    }
    let pipeline = create_named(&mut s.pipelines, "run_sync").map_err(|_| neg(Errno::NoMem))?;
    s.live_pipelines[(pipeline.raw() & 0xFFFF) as usize] = Some(pipeline);
    let built = s
        .pipelines
        .add_model(pipeline, handle)
        .and_then(|()| s.pipelines.build(pipeline));
    if let Err(e) = built {
        destroy(s, pipeline);
        return Err(construction_errno(e));
    }
    let request = JobRequest {
        pipeline,
        input,
        priority,
        deadline_us: None,
        preemptible: false,
        callback: None,
    };
    match s.sched.submit(request, &s.pipelines, &PlatformClock) {
        Ok(job) => {
            s.jobs[slot_of(job)] = JobExtra {
                id: Some(job),
                pipeline: Some(pipeline),
                ..JobExtra::EMPTY
            };
            Ok((pipeline, job))
        }
        Err(_) => {
            destroy(s, pipeline);
            Err(neg(Errno::Busy))
        }
    }
}

/// The result of a finished synchronous job, in the caller's buffer when it
/// fits, else in the arena.
fn finish_sync(s: &mut State, job: JobId, caller: &syn_tensor_t) -> Result<syn_tensor_t, c_int> {
    let State { sched, arena, .. } = s;
    let view = sched.output(job).map_err(|e| neg(e.to_errno()))?;
    let meta = view.meta();
    let bytes = view.data();
    if !caller.data.is_null() && caller.size >= bytes.len() {
        // SAFETY: the caller's buffer is valid for writes of `caller.size >=
        // bytes.len()` bytes (contract); `copy` allows overlap.
        unsafe {
            core::ptr::copy(bytes.as_ptr(), caller.data.cast::<u8>(), bytes.len());
        }
        let mut t = *caller;
        set_geometry(&mut t, meta);
        return Ok(t);
    }
    let arena = arena.as_mut().ok_or(neg(Errno::NoMem))?;
    ephemeral_copy(arena, meta, bytes).map_err(neg)
}

/// Limits how many jobs may be queued or running at once, as the
/// reference does: `syn_infer_submit()` returns `SYN_JOB_INVALID` (and
/// `syn_infer_run_sync()` `-EBUSY`) while `max_jobs` jobs are queued or
/// running. Finished jobs not yet collected do not count. The scheduler
/// also starts at most `max_jobs` at once.
///
/// Returns 0, or `-EINVAL` unless `1 <= max_jobs <= SYN_CAPI_MAX_JOBS`.
#[no_mangle]
pub extern "C" fn syn_infer_set_max_concurrent(max_jobs: u8) -> c_int {
    state::with(
        |s| match s.sched.set_max_concurrent(usize::from(max_jobs)) {
            Ok(()) => {
                s.submit_limit = usize::from(max_jobs);
                0
            }
            Err(_) => neg(Errno::Inval),
        },
    )
    .unwrap_or(BUSY)
}
