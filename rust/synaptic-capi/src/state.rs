//! The one runtime instance behind the C API, and the only way to reach it.
//!
//! Everything mutable lives in [`State`], inside one static cell; [`with`]
//! takes the platform lock, hands out `&mut State` for the length of a
//! closure, and releases the lock (also when the closure panics). There is
//! no other access path: no `static mut`, no second cell.
//!
//! The state is built on first use and dropped by `syn_shutdown()`, so the
//! next call starts again from power-on. Its two big buffers are statics of
//! their own ([`ARENA`], [`WORK`]); each is lent out as `&'static mut` to
//! exactly one owner (the arena, the scheduler) at a time.

use core::cell::UnsafeCell;
use core::ffi::c_void;

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
}

impl JobExtra {
    pub(crate) const EMPTY: JobExtra = JobExtra {
        id: None,
        pipeline: None,
        callback: None,
        user_data: core::ptr::null_mut(),
        notified: false,
        errno: None,
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
}

impl State {
    fn new() -> State {
        // SAFETY: `new` runs only inside `with` (lock held) when no State
        // exists; the previous State, the only other holder of WORK, was
        // dropped by `reset` before.
        let work = unsafe { lend(WORK.get()) };
        let mut npu = StubNpu::new(PlatformClock, 0);
        npu.set_latency_us(STUB_NPU_LATENCY_US);
        State {
            initialized: false,
            arena: None,
            persistent: core::array::from_fn(|_| None),
            scratch: core::array::from_fn(|_| None),
            registry: Registry::new(),
            models: [None; MAX_MODELS],
            pipelines: PipelinePool::new(),
            live_pipelines: [None; MAX_PIPELINES],
            sched: Scheduler::new(work),
            jobs: [JobExtra::EMPTY; MAX_JOBS],
            npu,
            raw_model: None,
            profiler: Profiler::new(),
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

struct Global(UnsafeCell<Option<State>>);

// SAFETY: the cell is only reached through `with`, which holds the platform
// lock (mutual exclusion between threads, re-entry refused) for as long as
// the `&mut` it creates lives.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global(UnsafeCell::new(None));

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
    // function, and `lock` refuses re-entry, so this is the only reference
    // to the cell's contents while it lives.
    let slot = unsafe { &mut *GLOBAL.0.get() };
    let state = slot.get_or_insert_with(State::new);
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
    let slot = unsafe { &mut *GLOBAL.0.get() };
    *slot = None;
    Ok(())
}
