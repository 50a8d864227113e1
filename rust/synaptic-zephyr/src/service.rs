//! CPU0's inference service on Zephyr: publish the shared region, start
//! the dispatch and serving threads, boot CPU1, serve.
//!
//! Where CPU1's requests go:
//!
//! * **the doorbell ISR** runs the intake (`synaptic_serve::Intake`, at
//!   most one ring's worth per interrupt): it answers `STATUS_REQ` at once
//!   (no thread wakes), refuses malformed requests, marks the slot of each
//!   slot request held and posts it to the serving thread's inbox (its one
//!   wake-up);
//! * **the serving thread** (priority [`SERVING_PRIORITY`], started by
//!   [`start`]) owns the runtime (registry, stub NPU, pipelines,
//!   scheduler, profiler, arena) and the serving layer; each turn takes
//!   every waiting request, runs one scheduler step and answers every
//!   finished inference (`synaptic_serve::Server::poll`), so up to one
//!   request per exchange slot is in flight and a request is noticed at
//!   every stage boundary. With `CONFIG_SYNAPTIC_NPU_OVERLAP` the model
//!   runs on the device asynchronously: the thread validates and queues
//!   the next requests and answers finished ones meanwhile, and hands the
//!   device the next model step as it collects the last one. A 50 ms
//!   timer drains the ring as the doorbell ISR does, so a lost doorbell
//!   costs latency, never a message, and wakes an idle thread for its
//!   bookkeeping (the thread waits without a timeout). It publishes counters
//!   and a snapshot for the shell ([`crate::status`]).
//!
//! Both push replies through one sender behind an [`IsrLock`].
//!
//! With `CONFIG_SYNAPTIC_CPU_INTERPRETER` the runtime has a second
//! execution device, the CPU interpreter
//! (`synaptic_runtime::device::TfliteDevice`, its arena a static of
//! `CONFIG_SYNAPTIC_CPU_INTERPRETER_ARENA_SIZE` bytes): models registered
//! for it run on CPU0's core inside the serving thread, one interpreter
//! step (an operator, or a few output rows of a convolution) per scheduler
//! step (the device is sliced; the service runs in overlap mode), so the
//! stub NPU gets its next job between two of them; models
//! for the NPU stay on the stub. Every output the
//! interpreter produces is recorded for the `syn ipc status` view and
//! printed on CPU0's log, with the predicted label when the application
//! named the model's classes ([`label_outputs`]).
//!
//! The runtime lives on the serving thread's stack and in three statics
//! (the stub NPU, the work buffer, the arena; a fourth, the interpreter's
//! arena, with the interpreter); nothing else touches it.
//! [`start`] runs once per boot.

use core::ffi::c_void;
use core::mem::{ManuallyDrop, MaybeUninit};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use static_cell::{ConstStaticCell, StaticCell};
use synaptic_abi::{
    memory_map::SHARED_SIZE, region_fits, Direction, SlotGeometry, EXCHANGE_INPUT_SIZE,
    EXCHANGE_OUTPUT_SIZE, MAX_EXCHANGE_SLOTS,
};
use synaptic_ipc::{Inbox, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::arena::{Arena, DType, Lifetime, TensorMeta, DEFAULT_SCRATCH_DEPTH};
use synaptic_runtime::device::{Device, Policy};
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
use synaptic_runtime::npu::NpuError;
use synaptic_runtime::npu::{NpuDevice, NpuState, StubNpu};
use synaptic_runtime::pipeline::PipelinePool;
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry};
use synaptic_runtime::sched::Scheduler;
use synaptic_runtime::time::TurnClock;
use synaptic_serve::boot::{boot_cpu1, BootPlatform, BootReport, Budgets, Down, Link};
use synaptic_serve::{Intake, Runtime, ServeStats, Server, SharedRegion, SharedSender, SlotLedger};
use zephyr::thread::{stack_len, ThreadStack};

use crate::clock::ZephyrClock;
use crate::doorbell::{self, PeerDoorbell};
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
use crate::status::ResultLine;
use crate::status::{ModelLine, Snapshot, SNAPSHOT, STATUS};
use crate::sync::{IsrLock, KernelMutex, KernelSemaphore};
use crate::thread::StaticThread;
use crate::timer::PeriodicTimer;

/// Slots per ring (Kconfig; devicetree must agree).
pub const N: usize = zephyr::kconfig::CONFIG_SYNAPTIC_RING_ENTRIES as usize;
/// The shared region as both cores use it.
pub type Region = SharedRegion<'static, N>;

/// The exchange slots (Kconfig `SYNAPTIC_EXCHANGE_SLOTS`, `_SMALL_INPUT`,
/// `_SMALL_OUTPUT`); both images must agree, CPU1's attach checks.
pub const SLOTS: SlotGeometry = SlotGeometry {
    count: zephyr::kconfig::CONFIG_SYNAPTIC_EXCHANGE_SLOTS as u32,
    small_input: zephyr::kconfig::CONFIG_SYNAPTIC_EXCHANGE_SMALL_INPUT as u32,
    small_output: zephyr::kconfig::CONFIG_SYNAPTIC_EXCHANGE_SMALL_OUTPUT as u32,
};

const _: () = {
    assert!(
        SLOTS.check().is_ok(),
        "SYNAPTIC_EXCHANGE_SLOTS must be 1..=8 and the small slots' sizes multiples of 16"
    );
    assert!(
        region_fits::<N>(SHARED_SIZE as usize, SLOTS),
        "the rings and exchange slots do not fit the 96 KiB shared window"
    );
};

/// CPU0's one sender to CPU1, shared by the intake (ISR) and the serving
/// thread.
type Replies = SharedSender<'static, N, PeerDoorbell, IsrLock<Sender<'static, N, PeerDoorbell>>>;

/// What the doorbell ISR works with.
struct Front {
    intake: Intake<'static, N>,
    replies: &'static Replies,
}

/// Models the service registers at most (`CONFIG_SYNAPTIC_MAX_MODELS`).
pub const MAX_MODELS: usize = crate::status::MAX_MODELS;
const MAX_PIPELINES: usize = zephyr::kconfig::CONFIG_SYNAPTIC_MAX_PIPELINES as usize;
const MAX_STAGES: usize = zephyr::kconfig::CONFIG_SYNAPTIC_MAX_PIPELINE_STAGES as usize;
const MAX_JOBS: usize = zephyr::kconfig::CONFIG_SYNAPTIC_MAX_JOBS as usize;
/// Whether the runtime has a CPU device (`CONFIG_SYNAPTIC_CPU_INTERPRETER`).
const HAS_CPU_DEVICE: bool = cfg!(CONFIG_SYNAPTIC_CPU_INTERPRETER);
const ARENA_SIZE: usize = zephyr::kconfig::CONFIG_SYNAPTIC_ARENA_SIZE as usize;
const SCRATCH_SIZE: usize = zephyr::kconfig::CONFIG_SYNAPTIC_SCRATCH_SIZE as usize;
/// Every job slot's two buffers can hold the largest output the slot takes.
const WORK_SIZE: usize = 2 * MAX_JOBS * EXCHANGE_OUTPUT_SIZE;

/// Slot requests waiting for the serving thread: at most one per slot.
const INBOX_DEPTH: usize = MAX_EXCHANGE_SLOTS;
/// Period of the idle timer: it drains the ring (in case a doorbell was
/// lost) and wakes an idle serving thread for its bookkeeping, so the
/// thread itself waits without a timeout (arming and cancelling one per
/// request cost more than the timer's interrupt every period).
const IDLE_MS: u32 = 50;
static IDLE_TIMER: PeriodicTimer = PeriodicTimer::new();
/// Set by the idle timer when it wakes the serving thread, cleared by the
/// thread's idle turn (one wake outstanding at most).
static IDLE_DUE: AtomicBool = AtomicBool::new(false);

/// The idle timer's expiry (ISR): what the doorbell ISR does, CPU0's
/// maintenance of the shared words it owns, then a wake for the serving
/// thread's idle turn unless one is outstanding.
extern "C" fn on_idle_timer(_timer: *mut zephyr::raw::k_timer) {
    drain_front();
    maintain_front();
    if !IDLE_DUE.swap(true, Ordering::Relaxed) {
        INBOX.wake();
    }
}

/// Stack of the serving thread: the runtime but the stub NPU lives on it,
/// and with the CPU interpreter its parsing, planning and kernels run on it
/// (Kconfig `SYNAPTIC_SERVING_STACK_SIZE`: 12 KB, 16 KB with the
/// interpreter).
pub const SERVING_STACK: usize = zephyr::kconfig::CONFIG_SYNAPTIC_SERVING_STACK_SIZE as usize;

/// The stub NPU's device buffers: the frame slot's input and output.
type ServiceNpu = StubNpu<ZephyrClock, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_SIZE>;
/// Priority of the serving thread.
pub const SERVING_PRIORITY: i32 = 4;

static INBOX: Inbox<KernelSemaphore, INBOX_DEPTH> =
    Inbox::new(KernelSemaphore::new(0, INBOX_DEPTH as u32));
static LEDGER: SlotLedger = SlotLedger::new();
static FRONT: IsrLock<Option<Front>> = IsrLock::new(None);
static REPLIES: StaticCell<Replies> = StaticCell::new();
/// Given by the serving thread once its runtime is up (or failed).
static SERVING_UP: KernelSemaphore = KernelSemaphore::new(0, 1);
static STARTED: AtomicBool = AtomicBool::new(false);
/// The stub NPU's latency as last requested ([`set_npu_latency_us`]).
static NPU_LATENCY_US: AtomicU32 = AtomicU32::new(0);
/// A placement policy requested at run time ([`set_policy`]): its position
/// in `Policy::ALL` plus one, 0 when none is pending.
static POLICY_WANTED: AtomicU8 = AtomicU8::new(0);

pub use crate::sched_config::{DEFAULT_POLICY, WEIGHTS};

/// Asks the serving thread to place model steps with `policy` from its
/// next turn on (at the latest when the idle timer wakes it); the shell's
/// `syn sched stats` shows the policy in effect.
pub fn set_policy(policy: Policy) {
    let position = Policy::ALL.iter().position(|p| *p == policy).unwrap_or(0);
    // Ordering: a lone request word, read by the serving thread's next
    // turn; nothing else is published with it.
    POLICY_WANTED.store(position as u8 + 1, Ordering::Relaxed);
}
/// The stub NPU, in a static: its device buffers (31 KB) on the serving
/// thread's stack would put the thread's other locals out of reach of a
/// single stack-relative instruction. Zeroed, so that it lives in `.bss`:
/// `StubNpu::new`'s value has one non-zero byte (the niche of "no model"),
/// which would put all 31 KB in `.data`, that is in flash too. The serving
/// thread writes the value in place.
static NPU: ConstStaticCell<MaybeUninit<ServiceNpu>> = ConstStaticCell::new(MaybeUninit::zeroed());
static WORK: ConstStaticCell<[u8; WORK_SIZE]> = ConstStaticCell::new([0; WORK_SIZE]);
/// The CPU interpreter's arena (Kconfig `SYNAPTIC_CPU_INTERPRETER_ARENA_SIZE`).
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
static CPU_ARENA: ConstStaticCell<[u8; CPU_ARENA_SIZE]> = ConstStaticCell::new([0; CPU_ARENA_SIZE]);
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
const CPU_ARENA_SIZE: usize = zephyr::kconfig::CONFIG_SYNAPTIC_CPU_INTERPRETER_ARENA_SIZE as usize;
/// Class names per model, in output order ([`label_outputs`]).
static LABELS: KernelMutex<Labels> = KernelMutex::new(&[]);
/// Outputs the CPU interpreter has produced so far.
static RESULTS: AtomicU32 = AtomicU32::new(0);

/// Per model name, its output classes in output order.
pub type Labels = &'static [(&'static str, &'static [&'static str])];

/// Name the classes of models' outputs (by model name, in output order), so
/// that the log and the `syn ipc status` view print the predicted label
/// (the highest score; the first on a tie) next to the scores. Call before
/// [`start`].
pub fn label_outputs(labels: Labels) {
    *LABELS.lock() = labels;
}

/// Outputs the CPU interpreter has produced since boot.
pub fn interpreter_results() -> u32 {
    RESULTS.load(Ordering::Relaxed)
}
static ARENA: ConstStaticCell<[u8; ARENA_SIZE]> = ConstStaticCell::new([0; ARENA_SIZE]);
/// The region, for readers of the control block (the shell).
static REGION: KernelMutex<Option<Region>> = KernelMutex::new(None);

/// How CPU0's service is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// Models to register and export to CPU1, by name.
    pub models: heapless::Vec<ModelDesc<'static>, MAX_MODELS>,
    /// Device time of one stub NPU invoke, microseconds.
    pub npu_latency_us: u64,
    /// Seed of the stub NPU's output function.
    pub npu_seed: u32,
    /// Make invokes whose input starts with `synaptic_runtime::npu::FAIL_MARKER` fail.
    pub npu_fail_on_marker: bool,
    /// Run the stub NPU in null mode (no work on the data, zeros out): for
    /// measuring the transport alone.
    pub npu_null: bool,
    /// How long boot waits for CPU1.
    pub budgets: Budgets,
}

/// Why the service did not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// [`start`] already ran this boot.
    AlreadyStarted,
    /// No `synaptic,shared-memory` in devicetree, or it does not fit.
    NoRegion,
    /// Devicetree's `ring-entries` differs from `CONFIG_SYNAPTIC_RING_ENTRIES`.
    RingEntries,
    /// The doorbell did not start.
    Doorbell,
    /// The runtime did not come up (see the snapshot's `setup_error`).
    Runtime(&'static str),
}

/// The message a console shows. `{:?}` would print the runtime's reason
/// through `str`'s escaping `Debug`, which links about 2.5 KB of Unicode
/// tables and escape code into CPU0's image for one boot-failure line.
impl core::fmt::Display for StartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StartError::AlreadyStarted => f.write_str("already started"),
            StartError::NoRegion => f.write_str("no usable synaptic,shared-memory region"),
            StartError::RingEntries => {
                f.write_str("devicetree ring-entries differs from CONFIG_SYNAPTIC_RING_ENTRIES")
            }
            StartError::Doorbell => f.write_str("the doorbell did not start"),
            StartError::Runtime(why) => write!(f, "runtime: {why}"),
        }
    }
}

/// The region devicetree names, checked against this build.
pub fn region_from_devicetree() -> Result<Region, StartError> {
    let shared = crate::platform::shared_memory().ok_or(StartError::NoRegion)?;
    if shared.ring_entries as usize != N {
        return Err(StartError::RingEntries);
    }
    let base = core::ptr::NonNull::new(shared.base as *mut u8).ok_or(StartError::NoRegion)?;
    // SAFETY: devicetree reserves this window for synaptic; it is mapped for
    // the whole program, and on this core only synaptic's views (this crate,
    // synaptic-serve, synaptic-ring) touch it.
    unsafe { SharedRegion::from_raw(base, shared.size as usize, SLOTS) }
        .map_err(|_| StartError::NoRegion)
}

/// The doorbell ISR: run the intake over what CPU1 pushed (one ring's
/// worth at most). A full batch means CPU1 pushes faster than it waits for
/// answers: stop taking its doorbell and let the serving thread drain the
/// ring at its own pace (see [`drain_flood`]), so a flooding CPU1 cannot
/// hold CPU0 in interrupt context.
fn on_doorbell() {
    if drain_front() >= N {
        FLOODED.store(true, Ordering::Relaxed);
        FLOODS.fetch_add(1, Ordering::Relaxed);
        let _ = crate::doorbell::set_enabled(false);
        INBOX.wake();
    }
}

/// Set when the model store's active versions changed outside CPU1's
/// `MODEL_UPDATE` (the shell's `syn ota`, the C API): the serving thread
/// then serves them ([`Server::follow_store`]).
static STORE_CHANGED: AtomicBool = AtomicBool::new(false);
/// Models the serving thread hot-swapped to follow the store.
static STORE_SWAPS: AtomicU32 = AtomicU32::new(0);

/// The model store's active versions changed: the serving thread serves
/// them from its next turn (woken now).
pub fn store_changed() {
    STORE_CHANGED.store(true, Ordering::Release);
    INBOX.wake();
}

/// Models the service hot-swapped after [`store_changed`] or [`switch_store`].
pub fn store_swaps() -> u32 {
    STORE_SWAPS.load(Ordering::Acquire)
}

/// Set by the serving thread once it is set up, before [`start`] returns
/// (from its loop's first turn it takes [`switch_store`]'s requests).
static SERVING_LOOP: AtomicBool = AtomicBool::new(false);
/// A store switch for the serving thread: 0 none, 1 activate, 2 rollback.
#[cfg(feature = "store")]
static SWITCH_WANTED: AtomicU8 = AtomicU8::new(0);
/// The switch's result: the version made active, or a negative errno.
#[cfg(feature = "store")]
static SWITCH_RESULT: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(0);
/// Given by the serving thread when the switch is done.
#[cfg(feature = "store")]
static SWITCH_DONE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// One switch at a time.
#[cfg(feature = "store")]
static SWITCH_ONE: KernelMutex<()> = KernelMutex::new(());

/// The store's verified update made active (with `back`, the last
/// activation's previous version) by the serving thread, as CPU1's
/// `MODEL_UPDATE` does: checked first (a version no device serving the
/// model can run is refused with -ENOEXEC, the store untouched), then
/// hot-swapped. For the shell and the C API (`syn_ota_activate`,
/// `syn_ota_rollback`): the version made active or a negative errno;
/// `None` when no serving thread runs (the caller switches the store
/// itself). Must not be called from the serving thread.
#[cfg(feature = "store")]
pub fn switch_store(back: bool) -> Option<i32> {
    if !SERVING_LOOP.load(Ordering::Acquire) {
        return None;
    }
    let _one = SWITCH_ONE.lock();
    SWITCH_WANTED.store(1 + u8::from(back), Ordering::Release);
    INBOX.wake();
    SWITCH_DONE.take(Timeout::Forever);
    Some(SWITCH_RESULT.load(Ordering::Acquire))
}

/// Set by the doorbell ISR when it stops taking the doorbell (a flood),
/// cleared by the serving thread when a batch finds the ring short.
static FLOODED: AtomicBool = AtomicBool::new(false);
/// Floods seen so far (for the shell and tests).
static FLOODS: AtomicU32 = AtomicU32::new(0);

/// While flooded, one serving turn's share of the ring: one batch, then a
/// pause of a millisecond (lower-priority threads, the shell among them,
/// run meanwhile). A short batch ends the flood: the doorbell is taken
/// again, and the ring drained once more for a push that raced it.
/// Returns whether the flood goes on.
fn drain_flood() -> bool {
    if drain_front() >= N {
        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(1));
        return true;
    }
    FLOODED.store(false, Ordering::Relaxed);
    let _ = crate::doorbell::set_enabled(true);
    drain_front();
    false
}

/// Floods of CPU1's requests CPU0 has weathered (its doorbell stopped,
/// the ring drained by the serving thread until a batch found it short).
pub fn floods() -> u32 {
    FLOODS.load(Ordering::Relaxed)
}

/// Drain ring CPU1→CPU0 through the intake (ISR, or the serving thread
/// after an idle turn); returns the messages popped.
fn drain_front() -> usize {
    use synaptic_serve::LocalLock;
    let mut front = FRONT.lock();
    match front.as_mut() {
        Some(front) => front.intake.drain(&LEDGER, &INBOX, front.replies),
        None => 0,
    }
}

/// Make the shared words CPU0 owns true again where CPU1 wrote them: the
/// control block, the tail of ring CPU1→CPU0, the head of ring CPU0→CPU1
/// (the serving thread does the service-time table). Returns the words
/// rewritten.
/// The intake; with a store that parks CPU1, its maintenance also
/// republishes the park request CPU0 stands by.
fn front_intake(region: &Region, consumer: Consumer<'static, N>) -> Intake<'static, N> {
    let intake = Intake::new(region, consumer);
    #[cfg(all(feature = "store", CONFIG_SYNAPTIC_DOORBELL))]
    let intake = intake.with_park_record(&crate::park::cpu0::RECORD);
    intake
}

fn maintain_front() -> u32 {
    use synaptic_serve::LocalLock;
    match FRONT.lock().as_mut() {
        Some(front) => front.intake.maintain() + u32::from(front.replies.repair()),
        None => 0,
    }
}

/// The intake's counters (status requests it answered, requests it
/// refused, shared words repaired, the reply ring's head included).
fn front_stats() -> ServeStats {
    use synaptic_serve::LocalLock;
    FRONT
        .lock()
        .as_ref()
        .map(|f| {
            let stats = f.intake.stats();
            ServeStats {
                repairs: stats.repairs.wrapping_add(f.replies.repair_count()),
                ..stats
            }
        })
        .unwrap_or_default()
}

/// Change the stub NPU's device time; the serving thread applies it at
/// its next turn (benchmarks sweep it).
pub fn set_npu_latency_us(us: u32) {
    // Ordering: a setting read on its own by the serving thread.
    NPU_LATENCY_US.store(us, Ordering::Relaxed);
}

/// The region, once [`start`] has published it.
pub fn region() -> Option<Region> {
    *REGION.lock()
}

/// Start the service: publish the region, start both threads, boot CPU1
/// through `platform` (`None`: no CPU1 image in this build, single-core
/// mode), and return the boot report. Prints one line per boot step.
///
/// # Errors
///
/// [`StartError`]; CPU0 has then no service (the link stays down).
pub fn start(
    options: Options,
    platform: Option<&mut dyn BootPlatform>,
) -> Result<BootReport, StartError> {
    if STARTED.swap(true, Ordering::AcqRel) {
        return Err(StartError::AlreadyStarted);
    }
    let region = match region_from_devicetree() {
        Ok(r) => r,
        Err(e) => {
            STATUS.set_no_region();
            return Err(e);
        }
    };
    // SAFETY: `STARTED` makes this the first and only start on CPU0 and CPU1
    // has not been released yet, so no ring handle exists on either core.
    unsafe { region.publish() };
    *REGION.lock() = Some(region);
    // SAFETY: CPU0 is the only producer of ring CPU0→CPU1 and this the only
    // handle on this core (`STARTED`).
    let producer = unsafe { Producer::attach(region.ring(Direction::Cpu0ToCpu1)) };
    // SAFETY: likewise, the only consumer of ring CPU1→CPU0.
    let consumer = unsafe { Consumer::attach(region.ring(Direction::Cpu1ToCpu0)) };
    let bell = doorbell::init_with_handler(on_doorbell).map_err(|_| StartError::Doorbell)?;
    let budgets = options.budgets;
    let replies: &'static Replies = REPLIES
        .try_init(SharedSender::new(Sender::new(producer, bell)))
        .ok_or(StartError::AlreadyStarted)?;
    {
        use synaptic_serve::LocalLock;
        *FRONT.lock() = Some(Front {
            intake: front_intake(&region, consumer),
            replies,
        });
    }

    let args = ManuallyDrop::new(ServingArgs {
        region,
        replies,
        options,
    });
    // SAFETY: the stack is the serving thread's alone (`STARTED`), and the
    // argument is `args`, which `serving_entry` moves out of before it
    // gives `SERVING_UP`, and which lives until that take below returns.
    unsafe {
        SERVING.start(
            &SERVING_STACK_MEM,
            serving_entry,
            core::ptr::from_ref(&*args).cast_mut().cast(),
            SERVING_PRIORITY,
            c"syn_serving",
        );
    }
    SERVING_UP.take(Timeout::Forever);
    if let Some(why) = SNAPSHOT.lock().setup_error {
        return Err(StartError::Runtime(why));
    }

    let report = match platform {
        None => BootReport {
            link: Link::Down(Down::ImageAbsent),
            vectors: None,
            ready_us: None,
            handshake_us: None,
        },
        Some(platform) => boot_cpu1(&region, platform, &ZephyrClock, budgets, || {
            front_stats().status > 0
        }),
    };
    STATUS.set_boot(&report);
    print_boot(&report);
    Ok(report)
}

fn print_boot(report: &BootReport) {
    if let Some(v) = report.vectors {
        printkln!(
            "synaptic: CPU1 vector table: initial SP 0x{:08x}, reset 0x{:08x}",
            v.initial_sp,
            v.reset
        );
    }
    match report.link {
        Link::Up => printkln!(
            "synaptic: CPU1 up: cpu1_ready {} us after release, first STATUS_REQ answered {} us after release",
            report.ready_us.unwrap_or(0),
            report.handshake_us.unwrap_or(0)
        ),
        Link::Down(Down::ImageAbsent) => printkln!("synaptic: CPU1 image absent: single-core mode"),
        Link::Down(Down::ImageInvalid(e)) | Link::Down(Down::Platform(e)) => printkln!(
            "synaptic: CPU1 not started ({}): single-core mode",
            crate::status::describe_boot_error(e)
        ),
        Link::Down(Down::NotReady) => {
            printkln!("synaptic: CPU1 did not attach within the budget: single-core mode")
        }
        Link::Down(Down::NoStatus) => {
            printkln!("synaptic: CPU1 attached but sent no STATUS_REQ within the budget")
        }
        Link::Down(Down::Version(v)) => printkln!(
            "synaptic: CPU1 is built for layout version {} (this image: {}): single-core mode",
            v,
            synaptic_abi::LAYOUT_VERSION
        ),
    }
}

/// Print the `syn ipc status` view with `printk`.
pub fn print_status() {
    write_status(|args| printkln!("{}", args));
}

/// Write the `syn ipc status` view, one line per call.
pub fn write_status(mut line: impl FnMut(core::fmt::Arguments<'_>)) {
    let rtt = region().map(|r| {
        (
            r.rtt(),
            r.is_ready(synaptic_abi::Core::Cpu0),
            r.is_ready(synaptic_abi::Core::Cpu1),
        )
    });
    STATUS.write_view(rtt, &mut line);
    snapshot(|s| {
        for r in &s.results {
            line(format_args!("result {}, {} so far", r, r.count));
        }
    });
    line(format_args!(
        "floods (CPU1 pushing faster than it waits; doorbell stopped, ring drained by the serving thread): {}",
        floods()
    ));
}

/// Reports a setup failure to [`start`] and parks the serving thread.
fn setup_failed(why: &'static str) {
    SNAPSHOT.lock().setup_error = Some(why);
    SERVING_UP.give();
}

/// The serving thread (started by [`start`]) and its stack.
static SERVING: StaticThread = StaticThread::new();
#[unsafe(link_section = ".noinit.synaptic_serving_stack")]
static SERVING_STACK_MEM: ThreadStack<{ stack_len(SERVING_STACK) }> = ThreadStack::new();

/// What [`start`] hands the serving thread.
struct ServingArgs {
    region: Region,
    replies: &'static Replies,
    options: Options,
}

extern "C" fn serving_entry(args: *mut c_void, _: *mut c_void, _: *mut c_void) {
    // SAFETY: `start` passes its `ServingArgs`, not dropped there, alive
    // until `SERVING_UP` is given, which `serving` does only after this
    // move.
    let args = unsafe { args.cast::<ServingArgs>().read() };
    serving(args.region, args.replies, args.options);
}

fn serving(region: Region, replies: &'static Replies, options: Options) {
    let clock = ZephyrClock;
    // The serving turn's stamps: one clock read a turn (`Server::poll`
    // starts each turn).
    let turn_clock = TurnClock::new(clock);
    let mut registry: Registry<MAX_MODELS> = Registry::new();
    let mut pipelines: PipelinePool<MAX_PIPELINES, MAX_STAGES> = PipelinePool::new();
    let Some(npu) = NPU.try_take() else {
        return setup_failed("NPU taken");
    };
    let npu = npu.write(StubNpu::new(clock, 0));
    npu.set_seed(options.npu_seed);
    if npu.init().is_err() {
        return setup_failed("NPU init");
    }
    npu.set_latency_us(options.npu_latency_us);
    npu.fail_on_marker(options.npu_fail_on_marker);
    npu.set_null(options.npu_null);
    npu.set_command_queue(cfg!(CONFIG_SYNAPTIC_NPU_COMMAND_QUEUE));
    let mut latency_us = u32::try_from(options.npu_latency_us).unwrap_or(u32::MAX);
    NPU_LATENCY_US.store(latency_us, Ordering::Relaxed);
    let Some(work) = WORK.try_take() else {
        return setup_failed("work buffer taken");
    };
    // Without the interpreter the scheduler is built without a CPU device:
    // its placement among devices and the CPU paths compile away.
    let mut scheduler: Scheduler<'static, MAX_JOBS, HAS_CPU_DEVICE> = Scheduler::new(work);
    if cfg!(CONFIG_SYNAPTIC_NPU_OVERLAP) && npu.capabilities().async_invoke {
        let _ = scheduler.set_overlap(true);
    }
    scheduler.set_policy(DEFAULT_POLICY);
    if scheduler.set_weights(WEIGHTS).is_err() {
        return setup_failed("WRR weights (Kconfig SYNAPTIC_WRR_*_WEIGHT)");
    }
    let mut profiler = Profiler::new();
    profiler.enable(&clock);
    let Some(arena_buffer) = ARENA.try_take() else {
        return setup_failed("arena buffer taken");
    };
    let Ok(mut arena) = Arena::<'static, DEFAULT_SCRATCH_DEPTH>::new(arena_buffer, SCRATCH_SIZE)
    else {
        return setup_failed("arena");
    };
    let mut server: Server<'static, N> = Server::new(&region);
    {
        let mut snapshot = SNAPSHOT.lock();
        for desc in &options.models {
            let Ok(handle) = registry.register(desc) else {
                drop(snapshot);
                return setup_failed("model registration");
            };
            // The model's run-time working memory, reserved for its life.
            if desc.sram_needed > 0 {
                let reserve = TensorMeta::vector(DType::Int8, desc.sram_needed as usize);
                if reserve
                    .and_then(|m| arena.alloc(m, Lifetime::Persistent))
                    .is_err()
                {
                    drop(snapshot);
                    return setup_failed("arena too small for the models' working memory");
                }
            }
            let exported = server.export(&registry, &mut pipelines, handle).is_ok();
            if let Ok(info) = registry.info(handle) {
                let _ = snapshot
                    .models
                    .push(ModelLine::new(handle.raw(), info, exported));
            }
        }
        snapshot.mem = Some(arena.stats());
        snapshot.caps.set(Some(npu.capabilities()));
        snapshot.policy.set(scheduler.policy());
        snapshot.weights = Some(scheduler.weights());
    }
    #[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
    let Some(mut cpu) = cpu_interpreter() else {
        return setup_failed("CPU interpreter");
    };
    #[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
    let cpu: Option<&mut (dyn NpuDevice + 'static)> = Some(&mut cpu);
    #[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
    let cpu: Option<&mut (dyn NpuDevice + 'static)> = None;
    // Before `start` returns: from then on every activation through the
    // shell or the C API waits for this thread's check (`switch_store`,
    // taken at the loop's first turn), none switches the store unchecked.
    SERVING_LOOP.store(true, Ordering::Release);
    SERVING_UP.give();
    IDLE_TIMER.start(IDLE_MS, on_idle_timer);

    // CPU1's model updates go to the store (feature `store`), which the
    // shell's `syn ota` and the C API share.
    #[cfg(feature = "store")]
    let mut store_updates = crate::store::ota::ServiceUpdates;
    let mut rt = Runtime {
        scheduler: &mut scheduler,
        registry: &mut registry,
        npu,
        cpu,
        pipelines: &mut pipelines,
        clock: &turn_clock,
        profiler: Some(&mut profiler),
        #[cfg(feature = "store")]
        updates: Some(&mut store_updates),
        #[cfg(not(feature = "store"))]
        updates: None,
    };
    let mut last_answered = 0u32;
    loop {
        let wanted = NPU_LATENCY_US.load(Ordering::Relaxed);
        if wanted != latency_us {
            latency_us = wanted;
            rt.npu.set_latency_us(u64::from(wanted));
        }
        // Ordering: see `set_policy`. A load every turn, the store only
        // when a request is pending (a request made between the two is
        // lost; the shell shows the policy in effect).
        let wanted_policy = POLICY_WANTED.load(Ordering::Relaxed);
        if let Some(p) = wanted_policy.checked_sub(1).map(usize::from) {
            POLICY_WANTED.store(0, Ordering::Relaxed);
            if let Some(p) = Policy::ALL.get(p) {
                rt.scheduler.set_policy(*p);
                SNAPSHOT.lock().policy.set(rt.scheduler.policy());
            }
        }
        // The store changed under us: serve its active versions (again
        // next turn while a previous swap's old version still runs).
        // A load first: the swap (a read-modify-write of the flag's cache
        // line) only when it is set, so the store costs requests nothing.
        #[cfg(feature = "store")]
        if STORE_CHANGED.load(Ordering::Relaxed) && STORE_CHANGED.swap(false, Ordering::Acquire) {
            match server.follow_store(&mut rt) {
                Ok(n) => {
                    STORE_SWAPS.fetch_add(n as u32, Ordering::Release);
                }
                Err(synaptic_serve::ServeError::Busy) => {
                    STORE_CHANGED.store(true, Ordering::Relaxed);
                }
                // The old version keeps serving; say why the new one does
                // not (a version the runtime refuses, an arena too small).
                Err(e) => printkln!(
                    "synaptic: the store's new version is not served: {}",
                    e.to_errno().code()
                ),
            }
        }
        // The shell's or the C API's activation ([`switch_store`]).
        #[cfg(feature = "store")]
        if let Some(back) = match SWITCH_WANTED.swap(0, Ordering::Acquire) {
            0 => None,
            w => Some(w == 2),
        } {
            let result = match server.switch_store(back, &mut rt) {
                Ok(version) => {
                    STORE_SWAPS.fetch_add(1, Ordering::Release);
                    i32::try_from(version).unwrap_or(i32::MAX)
                }
                Err(e) => e.to_errno().negative(),
            };
            SWITCH_RESULT.store(result, Ordering::Release);
            SWITCH_DONE.give();
        }
        // A flood: the serving thread drains, and must not wait for a
        // doorbell that is not taken.
        let flooded = FLOODED.load(Ordering::Relaxed) && drain_flood();
        let wait = if flooded {
            Timeout::NoWait
        } else {
            Timeout::Forever
        };
        let work = server.poll(&INBOX, &mut rt, replies, &LEDGER, wait);
        // In QEMU the two cores are round-robin vCPUs: CPU1 runs only when
        // this one yields, halts, or at QEMU's 100 ms kick. A turn that ran
        // an interpreter slice (tens of ms of compute) or rang CPU1 yields,
        // so CPU1 takes its doorbell and releases its requests between two
        // slices, as it would on silicon, where both cores run at once.
        // (Without it CPU1 saw replies up to one inference late, in pairs,
        // and its SysTick lost wraps.) NPU-only builds keep their figures.
        #[cfg(all(CONFIG_QEMU_TARGET, CONFIG_SYNAPTIC_CPU_INTERPRETER))]
        if work > 0 {
            crate::sync::yield_to_peer();
        }
        if work == 0 && rt.npu.state() == NpuState::Busy {
            // A job is on the device and nothing else to do: watch the
            // device and the intake (it marks a slot held for each request
            // it posts) closely, then turn again; no idle bookkeeping.
            // Until one run completes, not two: a device with a command
            // queue keeps one output, which the scheduler takes first.
            let (held, in_flight) = (LEDGER.mask(), rt.npu.in_flight());
            while rt.npu.in_flight() == in_flight && LEDGER.mask() == held {
                pause_for_device();
                rt.npu.poll();
            }
            continue;
        }
        // Woken by the idle timer (or idle): look at the ring in case a
        // doorbell was lost (what it posts is served next turn). The timer's
        // wake can also end the wait of a turn that had work, so its flag is
        // taken here, not only when idle: left set, the timer would never
        // wake the thread again and the shell's counters would go stale once
        // requests stop (seen after dual_model's last real inference).
        // A load first: the store (and its cache line) only when set.
        let timer_woke = IDLE_DUE.load(Ordering::Relaxed);
        if timer_woke {
            IDLE_DUE.store(false, Ordering::Relaxed);
        }
        let idle = timer_woke || work == 0;
        if idle {
            server.repair_estimates();
            drain_front();
        }
        // For the shell: slots and NPU time after every turn that answered
        // something (or idled); the counters (merged with the intake's,
        // under its lock) when idle and every 16 answers; the profile
        // snapshot (a k_mutex) when idle, at the first answer and every 64
        // after. Under load the shell's counters lag by at most 15.
        let answered = server.stats().served.wrapping_add(server.stats().errors);
        if idle || answered != last_answered {
            last_answered = answered;
            if idle || answered % 16 == 1 {
                STATUS.set_serve(&server.stats().merged(&front_stats()));
            }
            STATUS.set_slots(region.slot_count(), LEDGER.mask());
            if let Some(p) = rt.profiler.as_ref() {
                STATUS.set_npu_busy_us(p.summary().npu_us);
                // Only a build with the interpreter has its time to publish.
                #[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
                STATUS.set_interpreter_busy_us(p.summary().interpreter_us);
            }
            if idle || answered % 64 == 1 {
                let last = rt.profiler.as_ref().and_then(|p| p.last());
                if last.is_some() {
                    publish_profile(last);
                }
                publish_models(rt.registry);
            }
        }
    }
}

/// An execution device whose every output is recorded for the status view
/// and the log (the CPU interpreter's, in this service).
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
struct Observed<D> {
    device: D,
    device_name: &'static str,
}

#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
impl<D: NpuDevice> Observed<D> {
    fn record(&self, output: &[u8]) {
        let Some(id) = self.device.loaded_model() else {
            return;
        };
        RESULTS.fetch_add(1, Ordering::Relaxed);
        let labels = *LABELS.lock();
        let mut snapshot = SNAPSHOT.lock();
        let Some(name) = snapshot
            .models
            .iter()
            .find(|m| m.handle == id)
            .map(|m| m.name.clone())
        else {
            return;
        };
        let classes = labels
            .iter()
            .find(|(model, _)| *model == name.as_str())
            .map_or(&[][..], |(_, c)| *c);
        let line = ResultLine::new(name, self.device_name, output, classes);
        printkln!("synaptic: result {}", line);
        match snapshot.results.iter_mut().find(|r| r.model == line.model) {
            Some(r) => {
                let count = r.count.wrapping_add(1);
                *r = ResultLine { count, ..line };
            }
            None => {
                let _ = snapshot.results.push(line);
            }
        }
    }
}

#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
impl<D: NpuDevice> NpuDevice for Observed<D> {
    // Everything but the output is the device's own; `abort` too, so that
    // the sliced CPU device stops a cancelled job's run.
    synaptic_runtime::forward_npu_device!(device: init, deinit, capabilities, state, can_run,
        load_model, unload_model, loaded_model, set_input, invoke, invoke_async, poll, suspend, resume,
        clear_error, abort, last_run);
    fn get_output(&mut self, output: &mut [u8]) -> Result<usize, NpuError> {
        let n = self.device.get_output(output)?;
        self.record(&output[..n]);
        Ok(n)
    }
}

/// The CPU interpreter device over its static arena, initialised.
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
fn cpu_interpreter() -> Option<Observed<synaptic_runtime::device::TfliteDevice<'static>>> {
    let arena = CPU_ARENA.try_take()?;
    let mut device = synaptic_runtime::device::TfliteDevice::new(&mut arena[..]);
    device.init().ok()?;
    Some(Observed {
        device,
        device_name: synaptic_runtime::device::Device::CpuInterpreter.name(),
    })
}

/// One look's pause while a job is on the device. In QEMU a `wfe` hands
/// the emulated time to CPU1 at once (a clock-paced delay here cost 20
/// points of NPU utilisation: its clock reads are time CPU1 does not get);
/// on silicon the stub device raises no interrupt to end a `wfe`, so the
/// pause is a 1 us busy wait.
fn pause_for_device() {
    #[cfg(CONFIG_QEMU_TARGET)]
    crate::sync::wait_for_event();
    #[cfg(not(CONFIG_QEMU_TARGET))]
    synaptic_runtime::time::Delay::delay_us(&ZephyrClock, 1);
}

/// Each model line's served version (a hot swap registers a new one under
/// the same name) and its service-time predictions, for `syn model list`
/// and `syn sched stats`.
fn publish_models<const M: usize>(registry: &Registry<M>) {
    let mut snapshot = SNAPSHOT.lock();
    for m in snapshot.models.iter_mut() {
        let served = registry
            .find(m.name.as_str())
            .unwrap_or(ModelHandle::from_raw(m.handle));
        if let Ok(info) = registry.info(served) {
            m.follow(info);
        }
        for d in Device::ALL {
            if let Ok(t) = registry.service_time(served, d) {
                m.predicted_us[d.index()] = t.estimate_us();
                m.samples[d.index()] = t.samples();
            }
        }
    }
}

fn publish_profile(last: Option<synaptic_runtime::prof::InferenceProfile>) {
    let mut snapshot = SNAPSHOT.lock();
    snapshot.prof = last;
}

/// A copy of the runtime snapshot's parts the shell prints.
pub fn snapshot<R>(f: impl FnOnce(&Snapshot) -> R) -> R {
    f(&SNAPSHOT.lock())
}

/// The serving layer's progress counters, for `syn mpu test` in the C glue
/// (both cores kept serving when both advance).
///
/// # Safety
///
/// Each pointer is NULL or valid for a `u32` write.
#[no_mangle]
pub unsafe extern "C" fn syn_service_progress(served: *mut u32, status_answered: *mut u32) {
    // SAFETY: NULL or valid for writes (contract).
    unsafe {
        if let Some(p) = served.as_mut() {
            *p = STATUS.served();
        }
        if let Some(p) = status_answered.as_mut() {
            *p = STATUS.status_answered();
        }
    }
}
