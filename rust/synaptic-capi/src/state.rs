//! The one runtime instance behind the C API, and the only way to reach it.
//!
//! Everything mutable lives in [`State`], inside one static cell; [`with`]
//! takes the platform lock, hands out `&mut State` for the length of a
//! closure, and releases the lock (also when the closure panics). There is
//! no other access path: no `static mut`, no second cell.
//!
//! The state is built on first use, in place, and dropped by
//! `syn_shutdown()`, so the next call starts again from power-on. Its two big buffers are statics of
//! their own ([`ARENA`], [`WORK`]); each is lent out as `&'static mut` to
//! exactly one owner (the arena, the scheduler) at a time.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::mem::MaybeUninit;

use synaptic_runtime::arena::{Arena, Scratch, Tensor, DEFAULT_SCRATCH_DEPTH};
use synaptic_runtime::npu::{NpuModel, StubNpu};
use synaptic_runtime::pipeline::{PipelineId, PipelinePool};
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::Registry;
use synaptic_runtime::sched::{JobId, Scheduler};

use crate::platform::{self, PlatformClock, Reentered};
use crate::types::{syn_infer_cb_t, syn_model_info_t};
use crate::{
    ARENA_SIZE, MAX_JOBS, MAX_MODELS, MAX_PERSISTENT_TENSORS, MAX_PIPELINES, MAX_STAGES,
    STUB_NPU_INPUT, STUB_NPU_LATENCY_US, STUB_NPU_OUTPUT, WORK_SIZE,
};

/// The NPU behind the C API: the deterministic stub on the platform clock.
pub(crate) type Npu = StubNpu<PlatformClock, STUB_NPU_INPUT, STUB_NPU_OUTPUT>;

/// What the C API adds to a scheduler job.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobExtra {
    /// The job this entry describes (its slot's current job).
    pub id: Option<JobId>,
    /// The pipeline it runs.
    pub pipeline: Option<PipelineId>,
    /// C completion callback.
    pub callback: syn_infer_cb_t,
    /// Its argument.
    pub user_data: *mut c_void,
    /// Whether the callback ran.
    pub notified: bool,
    /// Errno to report instead of the scheduler's (a C stage's own code,
    /// `-ECANCELED` for a destroyed pipeline).
    pub errno: Option<i32>,
    /// Cancelled by `syn_infer_cancel()`: the scheduler reclaimed the job,
    /// this entry remembers it so that wait and get_result report
    /// `-ECANCELED` (as the reference does) until get_result collects it or
    /// a new job takes the slot.
    pub cancelled: bool,
}

impl JobExtra {
    pub(crate) const EMPTY: JobExtra = JobExtra {
        id: None,
        pipeline: None,
        callback: None,
        user_data: core::ptr::null_mut(),
        notified: false,
        errno: None,
        cancelled: false,
    };
}

/// Every piece of runtime state the C API uses.
pub(crate) struct State {
    /// `syn_init()` ran and `syn_shutdown()` did not.
    pub initialized: bool,
    /// The tensor arena (`syn_init()` puts it over [`ARENA`], `syn_mem_init()`
    /// over the caller's region).
    pub arena: Option<Arena<'static>>,
    /// Persistent tensors handed to C, by descriptor address, for `syn_mem_tensor_free()`.
    pub persistent: [Option<(usize, Tensor)>; MAX_PERSISTENT_TENSORS],
    /// Scratch buffers handed to C, by address, for `syn_mem_scratch_release()`.
    pub scratch: [Option<(usize, Scratch)>; DEFAULT_SCRATCH_DEPTH],
    /// The model registry.
    pub registry: Registry<MAX_MODELS>,
    /// The C metadata of each registered model, by registry slot.
    pub models: [Option<syn_model_info_t>; MAX_MODELS],
    /// The pipelines.
    pub pipelines: PipelinePool<MAX_PIPELINES, MAX_STAGES>,
    /// The live pipeline in each pool slot (C handles name a slot and the
    /// low bits of its generation).
    pub live_pipelines: [Option<PipelineId>; MAX_PIPELINES],
    /// The scheduler over [`WORK`].
    pub sched: Scheduler<'static, MAX_JOBS>,
    /// C-side data of each job slot.
    pub jobs: [JobExtra; MAX_JOBS],
    /// The NPU.
    pub npu: Npu,
    /// The model the HAL loaded from a raw image (`syn_hal_npu_load_model()`).
    pub raw_model: Option<NpuModel>,
    /// The profiler.
    pub profiler: Profiler,
    /// `syn_infer_set_max_concurrent()`: submissions are refused while this
    /// many jobs are queued or running (the reference's rule; the scheduler
    /// also starts at most this many at once).
    pub submit_limit: usize,
}

impl State {
    /// Builds a State at `at`, field by field, each in its own stack frame
    /// ([`emplace`]), so that the first call needs about as much stack as
    /// the largest field (the pipeline pool, under 2 KB on Cortex-M), not
    /// the whole State (about 7 KB).
    ///
    /// # Safety
    ///
    /// `at` is valid for writes of a State and holds none (a previous one
    /// was dropped); the runtime lock is held and no earlier State holds
    /// [`WORK`] any more.
    unsafe fn build_at(at: *mut State) {
        // SAFETY: the caller's contract: the lock is held and the previous
        // State, the only other holder of WORK, was dropped.
        let work = unsafe { lend(WORK.get()) };
        // SAFETY: `at` is valid for writes of a State (contract); each line
        // initialises one field through a raw field pointer, never reading
        // the uninitialised memory, and every field is written once.
        unsafe {
            emplace(&raw mut (*at).initialized, || false);
            emplace(&raw mut (*at).arena, || None);
            emplace(&raw mut (*at).persistent, || core::array::from_fn(|_| None));
            emplace(&raw mut (*at).scratch, || core::array::from_fn(|_| None));
            emplace(&raw mut (*at).registry, Registry::new);
            emplace(&raw mut (*at).models, || [None; MAX_MODELS]);
            emplace(&raw mut (*at).pipelines, PipelinePool::new);
            emplace(&raw mut (*at).live_pipelines, || [None; MAX_PIPELINES]);
            emplace(&raw mut (*at).sched, || {
                let mut sched = Scheduler::new(work);
                let scheduling = platform::scheduling();
                sched.set_policy(scheduling.policy);
                // Zero weights: refused, the defaults stay.
                let _ = sched.set_weights(scheduling.weights);
                sched
            });
            emplace(&raw mut (*at).jobs, || [JobExtra::EMPTY; MAX_JOBS]);
            emplace(&raw mut (*at).npu, || {
                let mut npu = StubNpu::new(PlatformClock, 0);
                npu.set_latency_us(STUB_NPU_LATENCY_US);
                npu.set_reference_rule(crate::STUB_REFERENCE_OUTPUT);
                npu
            });
            emplace(&raw mut (*at).raw_model, || None);
            emplace(&raw mut (*at).profiler, Profiler::new);
            emplace(&raw mut (*at).submit_limit, || MAX_JOBS);
        }
    }

    /// Puts the arena over the built-in [`ARENA`] buffer, dropping any
    /// previous arena and the tensors handed out from it.
    pub(crate) fn arena_over_static(&mut self) -> Result<(), synaptic_runtime::arena::ArenaError> {
        self.forget_tensors();
        self.arena = None;
        // SAFETY: the lock is held (we have &mut State) and the previous
        // arena, the only other holder of ARENA, was dropped just above.
        let buffer = unsafe { lend(ARENA.get()) };
        self.arena = Some(Arena::new(buffer, crate::SCRATCH_SIZE)?);
        Ok(())
    }

    /// Forgets every tensor and scratch buffer handed to C.
    pub(crate) fn forget_tensors(&mut self) {
        self.persistent = core::array::from_fn(|_| None);
        self.scratch = core::array::from_fn(|_| None);
    }
}

/// Writes `make()` to `at` from a frame of its own (never inlined, so the
/// temporaries of consecutive calls do not add up on the stack).
///
/// # Safety
///
/// `at` is valid for writes of a `T`; whatever it held is overwritten
/// without being dropped.
#[inline(never)]
unsafe fn emplace<T>(at: *mut T, make: impl FnOnce() -> T) {
    // SAFETY: valid for writes (contract).
    unsafe { at.write(make()) }
}

/// A static byte buffer, 16-byte aligned, lent out whole.
#[repr(C, align(16))]
pub(crate) struct StaticBuffer<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: the bytes are reached only through `lend`, whose contract makes
// the one outstanding `&mut` the only access, under the runtime lock.
unsafe impl<const N: usize> Sync for StaticBuffer<N> {}

impl<const N: usize> StaticBuffer<N> {
    const fn new() -> Self {
        StaticBuffer(UnsafeCell::new([0; N]))
    }

    /// The whole buffer, as a raw pointer (dereference with [`lend`]).
    fn get(&'static self) -> *mut [u8; N] {
        self.0.get()
    }
}

/// Lends out a whole static buffer (from [`StaticBuffer::get`]).
///
/// # Safety
///
/// The runtime lock must be held and no reference returned by an earlier
/// call for the same buffer may still be alive.
unsafe fn lend<const N: usize>(bytes: *mut [u8; N]) -> &'static mut [u8] {
    // SAFETY: the pointer comes from a `StaticBuffer` static (the only
    // callers pass `ARENA.get()` / `WORK.get()`), so it is valid for N bytes
    // forever; exclusive by this function's contract.
    unsafe { &mut *bytes }
}

/// Backing store of the arena `syn_init()` creates.
static ARENA: StaticBuffer<ARENA_SIZE> = StaticBuffer::new();
/// Intermediate tensors of running jobs (the scheduler's ping-pong buffers).
static WORK: StaticBuffer<WORK_SIZE> = StaticBuffer::new();

/// The runtime state and whether it is built (in `.bss`: zero-initialised
/// memory costs no flash).
struct Global {
    built: UnsafeCell<bool>,
    state: UnsafeCell<MaybeUninit<State>>,
}

// SAFETY: the cells are only reached through `with` and `reset`, which hold
// the platform lock (mutual exclusion between threads, re-entry refused) for
// as long as the references they create live.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global {
    built: UnsafeCell::new(false),
    state: UnsafeCell::new(MaybeUninit::uninit()),
};

/// Releases the lock when dropped (also while unwinding in host tests).
struct Held;

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: a `Held` exists only after a successful `platform::lock()`
        // on this thread, and is dropped once.
        unsafe { platform::unlock() }
    }
}

/// Runs `f` on the runtime state with the lock held, building the state on
/// first use.
///
/// # Errors
///
/// [`Reentered`] when called from inside a callback the runtime is making
/// with the lock held.
pub(crate) fn with<R>(f: impl FnOnce(&mut State) -> R) -> Result<R, Reentered> {
    platform::lock()?;
    let _held = Held;
    // SAFETY: the lock is held until `_held` drops at the end of this
    // function, and `lock` refuses re-entry, so these are the only
    // references to the cells' contents while they live.
    let (built, slot) = unsafe { (&mut *GLOBAL.built.get(), &mut *GLOBAL.state.get()) };
    if !*built {
        // SAFETY: the lock is held; `built` is false, so the slot holds no
        // State (never built, or dropped by `reset`).
        unsafe { State::build_at(slot.as_mut_ptr()) };
        *built = true;
    }
    // SAFETY: `built` is true only while the slot holds an initialised State.
    let state = unsafe { slot.assume_init_mut() };
    Ok(f(state))
}

/// Drops the whole state (`syn_shutdown()`); the next call starts afresh.
///
/// # Errors
///
/// [`Reentered`] as for [`with`].
pub(crate) fn reset() -> Result<(), Reentered> {
    platform::lock()?;
    let _held = Held;
    // SAFETY: as in `with`: the lock is held and re-entry is refused.
    let (built, slot) = unsafe { (&mut *GLOBAL.built.get(), &mut *GLOBAL.state.get()) };
    if *built {
        *built = false;
        // SAFETY: `built` was true, so the slot holds an initialised State;
        // it is dropped once, and `built` already says it is gone.
        unsafe { slot.assume_init_drop() };
    }
    Ok(())
}
