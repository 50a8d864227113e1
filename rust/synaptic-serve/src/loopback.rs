//! Both cores on one thread: CPU0's service and CPU1's client over one
//! caller-supplied buffer, advanced one [`Loopback::step`] at a time, with
//! no threads and no wall-clock waits (feature `std`).
//!
//! ```
//! use synaptic_serve::loopback::{Loopback, RegionBuffer};
//!
//! let mut buffer = RegionBuffer::new();
//! let mut cores = Loopback::new(buffer.bytes())?;
//! let kws = cores.kws();
//! let input = [7u8; 490];
//! let mut output = [0u8; 12];
//! assert_eq!(cores.infer(kws, &input, &mut output)?, 12);
//! assert_eq!(output.to_vec(), cores.expected_output(kws, &input));
//! cores.reboot_cpu1()?; // CPU1 restarts; only the shared bytes survive
//! # Ok::<(), synaptic_serve::loopback::LoopbackError>(())
//! ```
//!
//! What stands up: the region published over the buffer, CPU0's [`Intake`]
//! and [`Server`] over a runtime with the stub NPU (seed [`SEED`]) exporting
//! two models ([`KWS`], [`FACE`]), a reply port over CPU0's producer, and
//! CPU1 attached with [`boot::attach`] and a [`Client`]. A step is CPU0's
//! intake drain and one serving turn ([`Server::poll`] without waiting),
//! then CPU1's drain of its reply ring ([`Client::dispatch`]).
//! [`Loopback::with_options`] sets the stub NPU's latency and gives the
//! scheduler work memory for a local job ([`LoopbackOptions`]).
//!
//! # Driving the pieces by hand
//!
//! [`Loopback::by_hand`] lends a test CPU0's pieces ([`Cpu0Parts`]: the
//! server, the intake, the runtime with its registry, stub NPU, pipelines
//! and scheduler, the reply port with its doorbell counts, the ledger and
//! the inbox) with CPU1's raw ring ends ([`Cpu1Rings`]), so that it can
//! hand the server one request, run one scheduler step, register a model
//! or make the NPU fail, and look at every reply (the serving layer's
//! tests in `tests/server.rs`).
//!
//! Setups that need threads or the wall clock build from the same pieces:
//! [`publish`] and [`RegionBuffer`] (the region over a buffer of any size
//! it fits), [`ring_ends`] (each core's ends of the two rings),
//! [`Service`] (CPU0's models, pipelines and stub NPU over any clock) and
//! [`MutexClient`] (CPU1's client with `Mutex` locks over any doorbell,
//! semaphore and clock). The simulator (`synaptic-sim`: CPU0 and CPU1 as
//! threads) is built from them; the client's tests (`tests/client.rs`:
//! concurrent callers and a dispatch thread against a CPU0 the test plays)
//! take their region, ring ends and client type from them.
//!
//! Users: four of the six fuzz targets (`rust/fuzz`: all but `ring` and
//! `capi`), the serving layer's and the client's tests, and the simulator.
//!
//! # Time and blocking
//!
//! Time is simulated ([`SimTime`]): nothing here sleeps. CPU1's client reads
//! a clock that advances [`CPU1_TICK_US`] per reading, and its semaphores
//! never block ([`StepSemaphore`]), so any client call with a finite
//! timeout returns after a bounded number of clock readings. The client's
//! calls block until a reply, so [`Loopback::infer`] lets CPU0 run *on
//! CPU1's clock*: while it waits, every reading of CPU1's clock is also one
//! CPU0 step, and the request's simulated timeout ([`CALL_TIMEOUT_MS`])
//! bounds the CPU0 steps it can take. It waits with [`Wait::Poll`], which
//! drains the reply ring itself; a client call that sleeps for its reply
//! ([`Wait::Interrupt`], a model lookup) times out here, as there is no
//! dispatch thread to wake it. Called directly ([`Loopback::client`]), the
//! client's clock only advances time: CPU0 runs only in
//! [`Loopback::step`].
//!
//! # A hostile peer
//!
//! [`Loopback::write_shared`] writes any bytes of the region, as a
//! misbehaving core would; [`Loopback::cpu1_push`] and
//! [`Loopback::cpu0_push`] push raw messages as CPU1 (detaching the client)
//! or as CPU0 (through CPU0's own producer). The one thing a write cannot
//! reach is the tensor area of a slot CPU0 holds: CPU0 has those bytes
//! borrowed as slices for the job, and a write under a live Rust borrow is
//! outside the language's rules even though silicon would let a peer do it
//! (the protocol's ownership rule is what excludes it; the NPU driver
//! copies the input once). Headers, rings, the control block and the
//! service-time table are only ever accessed as atomic words or through
//! the ring crate, so writes to them are always allowed.

extern crate std;

use core::cell::{Cell, RefCell};
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use std::boxed::Box;
use std::rc::Rc;
use std::sync::Mutex;
use std::vec;
use std::vec::Vec;

use synaptic_abi::{
    region_size, Direction, Message, Priority, SlotGeometry, ValidMessage, EXCHANGE_HEADER_SIZE,
    EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_SIZE, RING_ENTRIES_DEFAULT,
};
use synaptic_ipc::{Doorbell, Inbox, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer, RingError};
use synaptic_runtime::npu::{stub_output, NpuDevice, StubNpu};
use synaptic_runtime::pipeline::PipelinePool;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry};
use synaptic_runtime::sched::Scheduler;
use synaptic_runtime::time::{Clock, Delay};

use crate::boot::{self, AttachError};
use crate::client::{ClientConfig, ClientError};
use crate::intake::{Intake, ReplyPort, SlotLedger};
use crate::park::ParkHold;
use crate::region::{RegionError, SharedRegion};
use crate::server::{Runtime, ServeError, ServeStats, Server};
use crate::update::ModelUpdates;
use crate::{Client, Session, Wait};

/// Ring entries of the loopback region (the Kconfig default).
pub const RING: usize = RING_ENTRIES_DEFAULT;
/// The slot geometry of the loopback region (K = 4).
pub const SLOTS: SlotGeometry = SlotGeometry::DEFAULT;
/// Bytes the region needs ([`Loopback::new`] takes at least this many).
pub const REGION_SIZE: usize = region_size::<RING>(SLOTS);
/// Seed of the loopback's stub NPU ([`stub_output`]'s first argument).
pub const SEED: u32 = 0x4C4F_4F50;
/// Simulated microseconds each reading of CPU1's clock advances.
pub const CPU1_TICK_US: u64 = 50;
/// Simulated timeout of a [`Loopback::infer`]: at
/// most `1000 * CALL_TIMEOUT_MS / CPU1_TICK_US` CPU0 steps while it waits.
pub const CALL_TIMEOUT_MS: u32 = 5;
/// Simulated timeout of a whole [`Loopback::update_model`].
pub const UPDATE_TIMEOUT_MS: u32 = 2;
/// Steps [`Loopback::infer`] spends at most waiting for a free slot (a
/// rebooted CPU1 presumes every slot held until CPU0's status says not).
pub const RESERVE_STEPS: u32 = 16;

/// Entries of CPU0's inbox (at least one per exchange slot).
pub const INBOX: usize = 16;
/// Scheduler jobs: one per slot, and spares.
pub const JOBS: usize = 6;
/// Models the registry holds, and pipelines the pool holds.
pub const MODELS: usize = 4;
/// Stages of one pipeline at most (room for a local job's).
pub const STAGES: usize = 32;

/// The stub NPU of a [`Service`], on time `T`: it holds what a slot holds.
pub type Npu<T> = StubNpu<T, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_SIZE>;

/// A model the loopback's CPU0 registers and exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopbackModel {
    /// Registry name.
    pub name: &'static str,
    /// Input shape (int8).
    pub input: &'static [u32],
    /// Output bytes (int8 elements).
    pub output: usize,
}

impl LoopbackModel {
    /// Input bytes.
    pub fn input_len(&self) -> usize {
        self.input.iter().map(|&d| d as usize).product()
    }

    /// The registry description.
    ///
    /// # Panics
    ///
    /// Never for the shapes of [`KWS`] and [`FACE`].
    pub fn desc(&self) -> ModelDesc<'static> {
        ModelDesc::int8(self.name, self.input, self.output).expect("a valid shape")
    }
}

/// A 49x10 int8 keyword-spotting model, 12 classes out: fits a small slot.
pub const KWS: LoopbackModel = LoopbackModel {
    name: "kws",
    input: &[49, 10],
    output: 12,
};

/// A 96x96x3 int8 face model, 16 bytes out: only the frame slot holds it.
pub const FACE: LoopbackModel = LoopbackModel {
    name: "face",
    input: &[96, 96, 3],
    output: 16,
};

/// Why the loopback could not be built or could not do what was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoopbackError {
    /// The buffer cannot hold the region (size, alignment).
    Region(RegionError),
    /// CPU1's attach refused the region (its control block).
    Attach(AttachError),
    /// CPU0 could not register or export a model.
    Serve(ServeError),
    /// CPU1 runs no client (it was detached by a raw push, or its attach
    /// failed): [`Loopback::reboot_cpu1`] first.
    Detached,
    /// The client call failed.
    Client(ClientError),
}

impl From<ClientError> for LoopbackError {
    fn from(e: ClientError) -> Self {
        LoopbackError::Client(e)
    }
}

impl From<AttachError> for LoopbackError {
    fn from(e: AttachError) -> Self {
        LoopbackError::Attach(e)
    }
}

/// Publish the region over all of `buffer`, as CPU0 does at boot, and
/// return its view. No ring handle exists yet: a setup that plays the
/// cores itself attaches them ([`ring_ends`]).
///
/// # Errors
///
/// [`LoopbackError::Region`] when `buffer` is under [`REGION_SIZE`] bytes
/// or not 16-byte aligned.
pub fn publish(buffer: &mut [u8]) -> Result<SharedRegion<'_, RING>, LoopbackError> {
    publish_raw(buffer).map(|(region, _)| region)
}

/// [`publish`], and the base pointer every word access of the region goes
/// through (the region's own, so that both stay valid together).
fn publish_raw(buffer: &mut [u8]) -> Result<(SharedRegion<'_, RING>, NonNull<u8>), LoopbackError> {
    let len = buffer.len();
    let base = NonNull::from(buffer).cast::<u8>();
    // SAFETY: `buffer` is borrowed mutably for the region's life, so its
    // bytes are valid for reads and writes for that long and reached only
    // through this region and what is derived from `base`.
    let region =
        unsafe { SharedRegion::from_raw(base, len, SLOTS) }.map_err(LoopbackError::Region)?;
    // SAFETY: the region was just made over an exclusively borrowed
    // buffer: no ring handle of it exists yet.
    unsafe { region.publish() };
    Ok((region, base))
}

/// A core's ends of the rings, at their live indices: the consumer of ring
/// `inbound` (what the peer sends it) and the producer of the other ring.
/// CPU0's inbound ring is [`Direction::Cpu1ToCpu0`], CPU1's
/// [`Direction::Cpu0ToCpu1`].
///
/// # Safety
///
/// No other consumer of `inbound` and no other producer of the other ring
/// may live while these do ([`Consumer::attach`], [`Producer::attach`]).
pub unsafe fn ring_ends<'r>(
    region: &SharedRegion<'r, RING>,
    inbound: Direction,
) -> (Consumer<'r, RING>, Producer<'r, RING>) {
    let outbound = match inbound {
        Direction::Cpu0ToCpu1 => Direction::Cpu1ToCpu0,
        Direction::Cpu1ToCpu0 => Direction::Cpu0ToCpu1,
    };
    // SAFETY: the caller's promise.
    unsafe {
        (
            Consumer::attach(region.ring(inbound)),
            Producer::attach(region.ring(outbound)),
        )
    }
}

/// `$ty<$lifetimes.., RING, $d, $s, $c, ..>` with `Mutex`es as CPU1's two
/// local locks (of its sender, with doorbell `$d`, and of its consumer).
macro_rules! on_mutexes {
    ($ty:ident<$($l:lifetime),+>, $r:lifetime, $d:ty, $s:ty, $c:ty) => {
        $ty<$($l,)+ RING, $d, $s, $c, Mutex<Sender<$r, RING, $d>>, Mutex<Consumer<$r, RING>>>
    };
}

/// CPU1's client with doorbell `D`, semaphores `S` and clock `C`, and
/// `std::sync::Mutex` as both local locks: the loopback's, and the host's
/// threaded ones (the simulator's, the client tests').
pub type MutexClient<'r, D, S, C> = on_mutexes!(Client<'r>, 'r, D, S, C);

/// A session of a [`MutexClient`].
pub type MutexSession<'c, 'r, D, S, C> = on_mutexes!(Session<'c, 'r>, 'r, D, S, C);

/// CPU0's service as the loopback stands it up, over time `T`: a registry
/// with [`KWS`] and [`FACE`] (in that order), the pipelines that export
/// them, and the stub NPU. The loopback runs it on one thread; the
/// simulator's serving thread runs the same over its own clock.
pub struct Service<T> {
    /// The registry.
    pub registry: Registry<MODELS>,
    /// The pipelines (the two serving pipelines among them).
    pub pipelines: PipelinePool<MODELS, STAGES>,
    /// The stub NPU, started.
    pub npu: Npu<T>,
    /// [`KWS`]'s handle.
    pub kws: ModelHandle,
    /// [`FACE`]'s handle.
    pub face: ModelHandle,
}

/// The runtime a [`Service`] lends its server, on clock `C`.
pub type ServiceRuntime<'e, 'a, T, C> = Runtime<'e, 'a, Npu<T>, C, MODELS, MODELS, STAGES, JOBS>;

impl<T: Clock + Delay> Service<T> {
    /// Register [`KWS`] and [`FACE`], export both through `server`, and
    /// start a stub NPU on `time` with `seed`.
    ///
    /// # Errors
    ///
    /// [`LoopbackError::Serve`] if a model cannot be registered or
    /// exported (it always can).
    ///
    /// # Panics
    ///
    /// If the stub NPU does not start (it always does).
    pub fn new(server: &mut Server<'_, RING>, time: T, seed: u32) -> Result<Self, LoopbackError> {
        let mut registry = Registry::new();
        let mut pipelines = PipelinePool::new();
        let mut handles = [ModelHandle::from_raw(0); 2];
        for (handle, model) in handles.iter_mut().zip([KWS, FACE]) {
            *handle = registry
                .register(&model.desc())
                .map_err(|e| LoopbackError::Serve(ServeError::Registry(e)))?;
            server
                .export(&registry, &mut pipelines, *handle)
                .map_err(LoopbackError::Serve)?;
        }
        let mut npu = Npu::new(time, seed);
        npu.init().expect("the stub NPU starts");
        Ok(Service {
            registry,
            pipelines,
            npu,
            kws: handles[0],
            face: handles[1],
        })
    }

    /// The runtime over this service, `scheduler` and `clock`.
    pub fn runtime<'e, 'a, C>(
        &'e mut self,
        scheduler: &'e mut Scheduler<'a, JOBS>,
        clock: &'e C,
    ) -> ServiceRuntime<'e, 'a, T, C> {
        Runtime {
            scheduler,
            registry: &mut self.registry,
            npu: &mut self.npu,
            cpu: None,
            pipelines: &mut self.pipelines,
            clock,
            profiler: None,
            updates: None,
        }
    }
}

/// Simulated microseconds shared by both cores: moves only when something
/// advances it (a CPU1 clock reading, the stub NPU's delay). Cloning shares
/// the same time.
#[derive(Clone, Debug, Default)]
pub struct SimTime(Rc<Cell<u64>>);

impl SimTime {
    /// Move time forward by `us`.
    pub fn advance(&self, us: u64) {
        self.0.set(self.0.get().saturating_add(us));
    }
}

impl Clock for SimTime {
    fn now_us(&self) -> u64 {
        self.0.get()
    }
}

impl Delay for SimTime {
    fn delay_us(&self, us: u64) {
        self.advance(us);
    }
}

/// A semaphore that never blocks: `take` consumes a count if there is one
/// and otherwise returns `false` at once, whatever the timeout. With it a
/// client call waits by re-reading its clock, which is simulated.
#[derive(Debug, Default)]
pub struct StepSemaphore {
    count: AtomicU32,
}

impl StepSemaphore {
    /// A semaphore with no count.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Semaphore for StepSemaphore {
    fn give(&self) {
        // Ordering: one thread; the count itself is all that is shared.
        let count = self.count.load(Ordering::Relaxed);
        self.count.store(count.saturating_add(1), Ordering::Relaxed);
    }

    fn take(&self, _timeout: Timeout) -> bool {
        // Ordering: as in `give`.
        let count = self.count.load(Ordering::Relaxed);
        if count == 0 {
            return false;
        }
        self.count.store(count - 1, Ordering::Relaxed);
        true
    }
}

/// A doorbell nobody hears: both cores are driven by [`Loopback::step`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NoDoorbell;

impl Doorbell for NoDoorbell {
    fn ring(&self) {}
}

/// CPU1's clock: [`CPU1_TICK_US`] of simulated time per reading, and one
/// CPU0 step per reading while a [`Loopback`] call lets CPU0 run on it.
pub struct Cpu1Clock<'r> {
    time: SimTime,
    cpu0: Rc<Cpu0Cell<'r>>,
    park: Rc<ParkHold<'r>>,
}

impl Clock for Cpu1Clock<'_> {
    fn now_us(&self) -> u64 {
        self.time.advance(CPU1_TICK_US);
        if self.cpu0.runs_on_cpu1_clock.get() {
            // Busy only if CPU0 itself read CPU1's clock: it does not.
            if let Ok(mut cpu0) = self.cpu0.cpu0.try_borrow_mut() {
                cpu0.step();
            }
            // Time passed on CPU1: its doorbell interrupt may have run.
            cpu1_interrupt(&self.park, &self.cpu0);
        }
        self.time.now_us()
    }
}

/// Reads of the park request a loopback CPU1 holds for at most (CPU0 steps
/// once between two reads, so its maintenance withdraws a request it does
/// not stand by at the first).
pub const HOLD_READS: u32 = 64;

/// CPU1's doorbell interrupt as the firmware's: the park hold while CPU0
/// asks, CPU0 stepping between two reads (it runs while CPU1 spins).
fn cpu1_interrupt(park: &ParkHold<'_>, cpu0: &Cpu0Cell<'_>) {
    if park.asked() {
        park.hold(|| {
            if let Ok(mut cpu0) = cpu0.cpu0.try_borrow_mut() {
                cpu0.step();
            }
        });
    }
}

/// CPU1's client as the loopback builds it.
pub type LoopbackClient<'r> = MutexClient<'r, NoDoorbell, StepSemaphore, Cpu1Clock<'r>>;

/// A session of the loopback's client.
pub type LoopbackSession<'c, 'r> = MutexSession<'c, 'r, NoDoorbell, StepSemaphore, Cpu1Clock<'r>>;

/// The runtime the loopback's CPU0 lends its server.
pub type LoopbackRuntime<'e, 'r> = ServiceRuntime<'e, 'r, SimTime, SimTime>;

/// CPU0's inbox between its intake and its server.
pub type Cpu0Inbox = Inbox<StepSemaphore, INBOX>;

/// CPU0's one producer (of ring CPU0→CPU1) as the reply port the intake and
/// the server share. It counts the doorbells CPU0 would ring as a
/// [`Sender`] does: an interrupt for each reply, or only an event for a
/// requester that polls, whether or not the push fit.
pub struct Cpu0Port<'r> {
    producer: RefCell<Producer<'r, RING>>,
    rings: Cell<u32>,
    events: Cell<u32>,
}

impl<'r> Cpu0Port<'r> {
    fn new(producer: Producer<'r, RING>) -> Self {
        Cpu0Port {
            producer: RefCell::new(producer),
            rings: Cell::new(0),
            events: Cell::new(0),
        }
    }

    /// Doorbell interrupts rung to CPU1 so far.
    pub fn rings(&self) -> u32 {
        self.rings.get()
    }

    /// Events (no interrupt) signalled to CPU1 so far: replies to
    /// requests that poll.
    pub fn events(&self) -> u32 {
        self.events.get()
    }

    fn push(&self, raw: Message) -> Result<(), RingError> {
        self.producer.borrow_mut().push(raw)
    }
}

impl ReplyPort for Cpu0Port<'_> {
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError> {
        let pushed = self.push(Message::from(reply));
        let count = if polled { &self.events } else { &self.rings };
        count.set(count.get().wrapping_add(1));
        pushed.map_err(IpcError::from)
    }

    fn restore_head(&self) -> bool {
        self.producer.borrow_mut().repair()
    }
}

/// CPU0's pieces, lent by [`Loopback::by_hand`] to a test that drives them
/// itself (a request handled, a scheduler step, a completion, at a time).
pub struct Cpu0Parts<'a, 'r> {
    /// The serving layer.
    pub server: &'a mut Server<'r, RING>,
    /// The intake (the consumer of CPU1's requests).
    pub intake: &'a mut Intake<'r, RING>,
    /// The runtime: scheduler, registry, stub NPU, pipelines, clock.
    pub rt: LoopbackRuntime<'a, 'r>,
    /// The reply port both answer through.
    pub port: &'a Cpu0Port<'r>,
    /// The slots CPU0 holds.
    pub ledger: &'a SlotLedger,
    /// The inbox the intake posts slot requests to.
    pub inbox: &'a Cpu0Inbox,
}

/// CPU1's raw ends of the rings, lent by [`Loopback::by_hand`].
pub struct Cpu1Rings<'a, 'r> {
    /// The producer of ring CPU1→CPU0 (requests).
    pub requests: &'a mut Producer<'r, RING>,
    /// The consumer of ring CPU0→CPU1 (replies).
    pub replies: &'a mut Consumer<'r, RING>,
}

/// CPU0: intake, serving layer and the runtime they share.
struct Cpu0<'r> {
    intake: Intake<'r, RING>,
    server: Server<'r, RING>,
    port: Cpu0Port<'r>,
    ledger: SlotLedger,
    inbox: Cpu0Inbox,
    service: Service<SimTime>,
    scheduler: Scheduler<'r, JOBS>,
    time: SimTime,
    updates: Option<&'r mut (dyn ModelUpdates + 'r)>,
}

impl<'r> Cpu0<'r> {
    fn parts(&mut self) -> Cpu0Parts<'_, 'r> {
        let mut rt = self.service.runtime(&mut self.scheduler, &self.time);
        rt.updates = self.updates.as_deref_mut();
        Cpu0Parts {
            server: &mut self.server,
            intake: &mut self.intake,
            rt,
            port: &self.port,
            ledger: &self.ledger,
            inbox: &self.inbox,
        }
    }

    /// Intake drain, then one serving turn that does not wait; the work done.
    fn step(&mut self) -> usize {
        let mut p = self.parts();
        let popped = p.intake.drain(p.ledger, p.inbox, p.port);
        // CPU0's maintenance of the words it owns (the firmware's idle
        // timer does it every 50 ms; here every step).
        p.intake.maintain();
        p.port.producer.borrow_mut().repair();
        p.server.repair_estimates();
        popped
            + p.server
                .poll(p.inbox, &mut p.rt, p.port, p.ledger, Timeout::NoWait)
    }
}

/// CPU0 steps a rebooting CPU1 waits at most for a sane control block.
pub const ATTACH_RETRIES: usize = 4;

/// CPU0 and the switch that lets it run on CPU1's clock.
struct Cpu0Cell<'r> {
    cpu0: RefCell<Cpu0<'r>>,
    runs_on_cpu1_clock: Cell<bool>,
}

/// What runs on CPU1.
enum Cpu1<'r> {
    /// Nothing holds CPU1's ring handles (an attach failed).
    Off,
    /// The client, attached.
    Client(Box<LoopbackClient<'r>>),
    /// Raw handles: the producer of CPU1→CPU0, the consumer of CPU0→CPU1.
    Raw(Producer<'r, RING>, Consumer<'r, RING>),
}

impl<'r> Cpu1<'r> {
    /// Raw handles, replacing the client (a CPU1 that speaks the rings
    /// without the client's rules).
    fn raw(
        &mut self,
        region: &SharedRegion<'r, RING>,
    ) -> (&mut Producer<'r, RING>, &mut Consumer<'r, RING>) {
        if !matches!(self, Cpu1::Raw(..)) {
            *self = Cpu1::Off;
            // SAFETY: CPU1's previous handles (the client's) were dropped
            // just above; CPU0 holds only the other end of each ring.
            let (consumer, producer) = unsafe { ring_ends(region, Direction::Cpu0ToCpu1) };
            *self = Cpu1::Raw(producer, consumer);
        }
        match self {
            Cpu1::Raw(producer, consumer) => (producer, consumer),
            Cpu1::Off | Cpu1::Client(_) => unreachable!("set just above"),
        }
    }
}

/// How [`Loopback::with_options`] builds CPU0 (the [`Default`] is what
/// [`Loopback::new`] builds).
#[derive(Default)]
pub struct LoopbackOptions<'r> {
    /// Device time of each stub NPU invoke, in simulated microseconds
    /// (default 0: time moves only on CPU1's clock).
    pub npu_latency_us: u64,
    /// The scheduler's work memory, for pipelines with steps before or
    /// after the model (a local job's). Default none: the serving pipelines
    /// have only the model step and write straight into the slot.
    pub work: &'r mut [u8],
    /// The model store CPU1's `MODEL_UPDATE` writes (default none: refused
    /// with `-ENOTSUP`).
    pub updates: Option<&'r mut (dyn ModelUpdates + 'r)>,
}

impl core::fmt::Debug for LoopbackOptions<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LoopbackOptions")
            .field("npu_latency_us", &self.npu_latency_us)
            .field("work", &self.work.len())
            .field("updates", &self.updates.is_some())
            .finish()
    }
}

/// CPU0's service and CPU1's client over one buffer, stepped by hand. See
/// the [module docs](self).
pub struct Loopback<'r> {
    region: SharedRegion<'r, RING>,
    base: NonNull<u8>,
    time: SimTime,
    cpu0: Rc<Cpu0Cell<'r>>,
    cpu1: Cpu1<'r>,
    /// CPU1's park hold (its doorbell interrupt's), from its last attach.
    park: Option<Rc<ParkHold<'r>>>,
    kws: ModelHandle,
    face: ModelHandle,
    buffer: PhantomData<&'r mut [u8]>,
}

impl<'r> Loopback<'r> {
    /// Publish the region over all of `buffer`, bring CPU0 up with [`KWS`]
    /// and [`FACE`] exported, and attach CPU1's client.
    ///
    /// # Errors
    ///
    /// [`LoopbackError::Region`] when `buffer` is under [`REGION_SIZE`]
    /// bytes or not 16-byte aligned; [`LoopbackError::Serve`] if a model
    /// cannot be exported (it always can).
    pub fn new(buffer: &'r mut [u8]) -> Result<Self, LoopbackError> {
        Self::with_options(buffer, LoopbackOptions::default())
    }

    /// As [`new`](Self::new), with CPU0 built as `options` say.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_options(
        buffer: &'r mut [u8],
        options: LoopbackOptions<'r>,
    ) -> Result<Self, LoopbackError> {
        let (region, base) = publish_raw(buffer)?;
        let time = SimTime::default();
        let mut server = Server::new(&region);
        let mut service = Service::new(&mut server, time.clone(), SEED)?;
        service.npu.set_latency_us(options.npu_latency_us);
        let (kws, face) = (service.kws, service.face);
        // SAFETY: CPU0's handles: the only consumer of CPU1→CPU0 and the
        // only producer of CPU0→CPU1 for the loopback's life.
        let (requests, replies) = unsafe { ring_ends(&region, Direction::Cpu1ToCpu0) };
        let cpu0 = Cpu0 {
            intake: Intake::new(&region, requests),
            server,
            port: Cpu0Port::new(replies),
            ledger: SlotLedger::new(),
            inbox: Inbox::new(StepSemaphore::new()),
            service,
            scheduler: Scheduler::new(options.work),
            time: time.clone(),
            updates: options.updates,
        };
        let mut cores = Loopback {
            region,
            base,
            time,
            cpu0: Rc::new(Cpu0Cell {
                cpu0: RefCell::new(cpu0),
                runs_on_cpu1_clock: Cell::new(false),
            }),
            cpu1: Cpu1::Off,
            park: None,
            kws,
            face,
            buffer: PhantomData,
        };
        cores.start_cpu1(true)?;
        Ok(cores)
    }

    /// The shared region.
    pub fn region(&self) -> SharedRegion<'r, RING> {
        self.region
    }

    /// The simulated time both cores read.
    pub fn time(&self) -> &SimTime {
        &self.time
    }

    /// [`KWS`]'s handle.
    pub fn kws(&self) -> ModelHandle {
        self.kws
    }

    /// [`FACE`]'s handle.
    pub fn face(&self) -> ModelHandle {
        self.face
    }

    /// What the stub NPU answers for `input` on `model`: the output a
    /// correct round trip delivers ([`stub_output`] with [`SEED`]).
    pub fn expected_output(&self, model: ModelHandle, input: &[u8]) -> Vec<u8> {
        let len = if model == self.face {
            FACE.output
        } else {
            KWS.output
        };
        // The stub's output depends on the version's handle: the one that
        // serves `model` now (a hot swap gives it a new one).
        let serving = self
            .cpu0
            .cpu0
            .borrow()
            .server
            .serving(model)
            .unwrap_or(model);
        let mut out = vec![0u8; len];
        stub_output(SEED, serving.raw(), input, &mut out);
        out
    }

    /// One step of both cores: [`step_cpu0`](Self::step_cpu0), then
    /// [`step_cpu1`](Self::step_cpu1). Returns the work done.
    pub fn step(&mut self) -> usize {
        self.step_cpu0() + self.step_cpu1()
    }

    /// CPU0's intake drain (up to `RING` messages) and one serving turn
    /// that does not wait. Returns messages popped plus serving work done.
    pub fn step_cpu0(&mut self) -> usize {
        self.cpu0.cpu0.borrow_mut().step()
    }

    /// CPU1's drain of its reply ring ([`Client::dispatch`]; nothing for
    /// raw handles or without a client). Returns the messages popped.
    pub fn step_cpu1(&mut self) -> usize {
        self.cpu1_interrupt();
        match &self.cpu1 {
            Cpu1::Client(client) => client.dispatch(),
            Cpu1::Off | Cpu1::Raw(..) => 0,
        }
    }

    /// CPU1's doorbell interrupt alone: the park hold of its last attach
    /// while CPU0 asks (CPU0 steps between two reads of the request).
    pub fn cpu1_interrupt(&mut self) {
        if let Some(park) = &self.park {
            cpu1_interrupt(park, &self.cpu0);
        }
    }

    /// Both cores' pieces, for a test that drives them by hand: CPU0's
    /// ([`Cpu0Parts`]) and CPU1's raw ring ends ([`Cpu1Rings`]). Detaches
    /// the client (until [`reboot_cpu1`](Self::reboot_cpu1)), as a raw push
    /// does; nothing runs but what `f` runs.
    pub fn by_hand<R>(&mut self, f: impl FnOnce(Cpu0Parts<'_, 'r>, Cpu1Rings<'_, 'r>) -> R) -> R {
        let (requests, replies) = self.cpu1.raw(&self.region);
        let mut cpu0 = self.cpu0.cpu0.borrow_mut();
        f(cpu0.parts(), Cpu1Rings { requests, replies })
    }

    /// Restart CPU1: drop whatever runs there (client or raw handles),
    /// attach again ([`boot::attach`]: control block checked, `cpu1_ready`
    /// set) and build a new client on the live ring indices
    /// ([`Client::attach`]: it trusts no reply until it has synchronised
    /// with CPU0, which takes a step or two). Only the region's bytes
    /// survive.
    ///
    /// # Errors
    ///
    /// [`LoopbackError::Attach`] when the control block is still not
    /// valid after [`ATTACH_RETRIES`] CPU0 steps (its maintenance); CPU1
    /// then runs nothing until the next reboot.
    pub fn reboot_cpu1(&mut self) -> Result<(), LoopbackError> {
        self.start_cpu1(false)
    }

    /// Attach CPU1 (retrying while CPU0 repairs the control block) and
    /// build its client: [`Client::attach_fresh`] for the first life on the
    /// region [`new`](Self::new) just published, [`Client::attach`] (which
    /// trusts nothing a previous life left) for a reboot.
    fn start_cpu1(&mut self, first_life: bool) -> Result<(), LoopbackError> {
        self.cpu1 = Cpu1::Off;
        // As a booting CPU1 retries within its handshake time: CPU0's
        // maintenance (a step) restores control words a life scribbled.
        let mut attached = boot::attach(&self.region);
        for _ in 0..ATTACH_RETRIES {
            if attached.is_ok() {
                break;
            }
            self.step_cpu0();
            attached = boot::attach(&self.region);
        }
        attached?;
        // SAFETY: CPU1's handles: the previous life's were dropped above,
        // and CPU0 holds only the other end of each ring.
        let (consumer, producer) = unsafe { ring_ends(&self.region, Direction::Cpu0ToCpu1) };
        // The park hold of this life, made at its attach.
        let park = Rc::new(ParkHold::new(self.region.park_words(), HOLD_READS));
        self.park = Some(Rc::clone(&park));
        let clock = Cpu1Clock {
            time: self.time.clone(),
            cpu0: Rc::clone(&self.cpu0),
            park,
        };
        let config = ClientConfig {
            poll_threshold_us: 0,
            relax: || {},
            swept: false,
        };
        let attach = if first_life {
            Client::attach_fresh
        } else {
            Client::attach
        };
        let client = attach(
            &self.region,
            producer,
            consumer,
            NoDoorbell,
            StepSemaphore::new,
            clock,
            config,
        );
        self.cpu1 = Cpu1::Client(Box::new(client));
        Ok(())
    }

    /// CPU1's client, if one is attached.
    pub fn client(&self) -> Option<&LoopbackClient<'r>> {
        match &self.cpu1 {
            Cpu1::Client(client) => Some(client),
            Cpu1::Off | Cpu1::Raw(..) => None,
        }
    }

    /// Push `raw` on ring CPU1→CPU0 as CPU1, with whatever bytes it holds.
    /// Detaches the client (until [`reboot_cpu1`](Self::reboot_cpu1)).
    ///
    /// # Errors
    ///
    /// The ring's: full, or CPU0's tail corrupt.
    pub fn cpu1_push(&mut self, raw: Message) -> Result<(), RingError> {
        self.cpu1.raw(&self.region).0.push(raw)
    }

    /// Pop the next message of ring CPU0→CPU1 as a raw CPU1. Detaches the
    /// client (until [`reboot_cpu1`](Self::reboot_cpu1)).
    ///
    /// # Errors
    ///
    /// The ring's: CPU0's head corrupt (the consumer resynchronised).
    pub fn cpu1_pop(&mut self) -> Result<Option<Message>, RingError> {
        self.cpu1.raw(&self.region).1.pop()
    }

    /// Push `raw` on ring CPU0→CPU1 through CPU0's own producer: a buggy
    /// CPU0's reply.
    ///
    /// # Errors
    ///
    /// The ring's: full, or CPU1's tail corrupt.
    pub fn cpu0_push(&mut self, raw: Message) -> Result<(), RingError> {
        self.cpu0.cpu0.borrow().port.push(raw)
    }

    /// The exchange slots CPU0 holds (what its `STATUS_RESP` reports).
    pub fn held_slots(&self) -> u32 {
        self.cpu0.cpu0.borrow().ledger.mask()
    }

    /// CPU0's counters: the intake's and the serving layer's, merged.
    pub fn cpu0_stats(&self) -> ServeStats {
        let cpu0 = self.cpu0.cpu0.borrow();
        cpu0.intake.stats().merged(&cpu0.server.stats())
    }

    /// Write `bytes` at `offset` of the region, as a misbehaving core
    /// would, clipped to the region (to its last whole word). Bytes in the tensor area of a slot
    /// CPU0 holds are skipped (see the [module docs](self)). Returns the
    /// bytes written.
    pub fn write_shared(&self, offset: usize, bytes: &[u8]) -> usize {
        let held = self.held_slots();
        let tensors = |k: usize| {
            let exchange = self.region.exchange(k)?;
            let start = exchange.offset() + EXCHANGE_HEADER_SIZE;
            Some(start..start + exchange.input_capacity() + exchange.output_capacity())
        };
        let borrowed: Vec<_> = (0..self.region.slot_count())
            .filter(|&k| held & (1 << k) != 0)
            .filter_map(tensors)
            .collect();
        let mut written = 0;
        for (k, &byte) in bytes.iter().enumerate() {
            let Some(at) = offset
                .checked_add(k)
                .filter(|&at| (at & !3) + 4 <= self.region.size())
            else {
                break;
            };
            if borrowed.iter().any(|r| r.contains(&at)) {
                continue;
            }
            let word = at & !3;
            // SAFETY: `word + 4 <= size` (filtered above) and the base is
            // 16-aligned, so the word lies in the buffer borrowed for 'r
            // and is 4-aligned. Every
            // access this crate and the ring crate make to these bytes is an
            // atomic word access or a volatile copy of a ring slot, none
            // through a live reference (tensor bytes under a borrow were
            // skipped above), and all on this thread.
            let shared = unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(word).cast()) };
            let mut bytes_of = shared.load(Ordering::Relaxed).to_ne_bytes();
            bytes_of[at % 4] = byte;
            shared.store(u32::from_ne_bytes(bytes_of), Ordering::Relaxed);
            written += 1;
        }
        written
    }

    /// Read `out.len()` bytes from `offset` of the region (clipped to it),
    /// a word at a time as the cores do. Returns the bytes read.
    pub fn read_shared(&self, offset: usize, out: &mut [u8]) -> usize {
        let mut read = 0;
        for (k, byte) in out.iter_mut().enumerate() {
            let Some(at) = offset
                .checked_add(k)
                .filter(|&at| (at & !3) + 4 <= self.region.size())
            else {
                break;
            };
            // SAFETY: as in `write_shared`: an aligned word inside the
            // region, only ever accessed atomically or by volatile copies.
            let shared = unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(at & !3).cast()) };
            *byte = shared.load(Ordering::Relaxed).to_ne_bytes()[at % 4];
            read += 1;
        }
        read
    }

    /// Run `model` on `input` through CPU1's client (the smallest free slot
    /// that fits, [`Wait::Poll`]), letting CPU0 run on CPU1's clock while
    /// the call waits; copy the output into `output` and return its length.
    /// Bounded: at most [`RESERVE_STEPS`] steps waiting for a slot, and
    /// [`CALL_TIMEOUT_MS`] of simulated time for the reply.
    ///
    /// # Errors
    ///
    /// [`LoopbackError::Detached`] without a client;
    /// [`LoopbackError::Client`] with the client's error.
    pub fn infer(
        &mut self,
        model: ModelHandle,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<usize, LoopbackError> {
        let Cpu1::Client(client) = &self.cpu1 else {
            return Err(LoopbackError::Detached);
        };
        let mut session = reserve(client, &self.cpu0, input.len())?;
        let staged = session
            .infer_input()
            .get_mut(..input.len())
            .ok_or(ClientError::InvalidArgument)?;
        staged.copy_from_slice(input);
        let result = on_cpu1_clock(&self.cpu0, || {
            session.infer_with(
                model,
                input.len(),
                output,
                Priority::Normal,
                Wait::Poll,
                Timeout::Millis(CALL_TIMEOUT_MS),
            )
        });
        Ok(result?)
    }

    /// CPU1's client streams `container` into CPU0's store as an update of
    /// `name` and activates it (`Client::update_model`), CPU0 stepping on
    /// CPU1's clock; the version active after it.
    ///
    /// # Errors
    ///
    /// [`LoopbackError::Detached`] without a client;
    /// [`LoopbackError::Client`] with the client's error (CPU0's refusal).
    pub fn update_model(&mut self, name: &str, container: &[u8]) -> Result<u32, LoopbackError> {
        let Cpu1::Client(client) = &self.cpu1 else {
            return Err(LoopbackError::Detached);
        };
        let timeout = Timeout::Millis(UPDATE_TIMEOUT_MS);
        Ok(on_cpu1_clock(&self.cpu0, || {
            client.update_model_waiting(name, container, Wait::Poll, timeout)
        })?)
    }

    /// CPU1's client asks CPU0 to roll the last activated model back
    /// (`Client::rollback_model`); the version active after it.
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model).
    pub fn rollback_model(&mut self) -> Result<u32, LoopbackError> {
        self.with_client(|client, timeout| client.rollback_model_waiting(Wait::Poll, timeout))
    }

    /// CPU1's client confirms the last activated version
    /// (`Client::confirm_model`); that version.
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model).
    pub fn confirm_model(&mut self) -> Result<u32, LoopbackError> {
        self.with_client(|client, timeout| client.confirm_model_waiting(Wait::Poll, timeout))
    }

    /// One update step of CPU1's client, CPU0 stepping on CPU1's clock.
    fn with_client(
        &mut self,
        step: impl FnOnce(&LoopbackClient<'r>, Timeout) -> Result<u32, ClientError>,
    ) -> Result<u32, LoopbackError> {
        let Cpu1::Client(client) = &self.cpu1 else {
            return Err(LoopbackError::Detached);
        };
        let timeout = Timeout::Millis(UPDATE_TIMEOUT_MS);
        Ok(on_cpu1_clock(&self.cpu0, || step(client, timeout))?)
    }
}

/// A session on the smallest free slot holding `input_len` bytes, stepping
/// both cores while none is free, at most [`RESERVE_STEPS`] times.
fn reserve<'c, 'r>(
    client: &'c LoopbackClient<'r>,
    cpu0: &Cpu0Cell<'r>,
    input_len: usize,
) -> Result<LoopbackSession<'c, 'r>, ClientError> {
    let mut steps = 0;
    loop {
        match client.reserve(input_len, Timeout::NoWait) {
            Err(ClientError::Busy) if steps < RESERVE_STEPS => {
                steps += 1;
                cpu0.cpu0.borrow_mut().step();
                client.dispatch();
            }
            result => return result,
        }
    }
}

/// Run `call` with CPU0 stepping on every reading of CPU1's clock.
fn on_cpu1_clock<R>(cpu0: &Cpu0Cell<'_>, call: impl FnOnce() -> R) -> R {
    cpu0.runs_on_cpu1_clock.set(true);
    let result = call();
    cpu0.runs_on_cpu1_clock.set(false);
    result
}

/// A heap buffer for [`Loopback::new`] and [`publish`]: zeroed bytes,
/// 64-byte aligned (as the platforms' shared windows are).
pub struct RegionBuffer {
    blocks: Box<[Block]>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

impl RegionBuffer {
    /// [`REGION_SIZE`] bytes, zeroed.
    pub fn new() -> Self {
        Self::with_len(REGION_SIZE)
    }

    /// `len` bytes, zeroed (a whole shared window, larger than the region
    /// needs; or too few, for a test of the refusal).
    pub fn with_len(len: usize) -> Self {
        RegionBuffer {
            blocks: vec![Block([0; 64]); len.div_ceil(64)].into_boxed_slice(),
            len,
        }
    }

    /// The bytes: as many as asked for, 64-byte aligned.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `Block` is 64 plain bytes with no padding, so the blocks
        // are `64 * blocks >= len` initialised bytes, borrowed mutably
        // through `self` for the slice's life.
        unsafe { core::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

impl Default for RegionBuffer {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_gives_the_stub_npus_output() {
        let mut buffer = RegionBuffer::new();
        let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
        for (model, spec) in [(cores.kws(), KWS), (cores.face(), FACE)] {
            let input: Vec<u8> = (0..spec.input_len()).map(|i| (i * 7 + 3) as u8).collect();
            let mut output = vec![0u8; spec.output];
            let len = cores.infer(model, &input, &mut output).expect("infer");
            assert_eq!(len, spec.output);
            assert_eq!(output, cores.expected_output(model, &input));
        }
        let stats = cores.cpu0_stats();
        assert_eq!((stats.served, stats.errors), (2, 0));
        assert_eq!(cores.held_slots(), 0);
    }

    #[cfg(feature = "store")]
    #[test]
    fn updates_through_the_loopback_keep_serving_and_refuse_what_cannot_run() {
        use synaptic_store::ota::Ota;
        use synaptic_store::{Header, Layout, MemFlash, Store, TensorShape};

        use synaptic_abi::Errno;

        use crate::update::StoreUpdates;

        let container = |version: u32, input: TensorShape| {
            let payload = [version as u8; 300];
            let header =
                Header::new("kws", version, &payload, input, TensorShape::int8(&[12])).unwrap();
            [header.encode().as_slice(), &payload].concat()
        };
        let mut flash_bytes = vec![0xFFu8; 64 * 1024];
        let flash = MemFlash::new(&mut flash_bytes, 4096, 4);
        let layout = Layout::new(&flash, 2, 8192).unwrap();
        let (mut store, _) = Store::<_, 2>::open(flash, layout).unwrap();
        let mut ota = Ota::new();
        let mut updates = StoreUpdates::new(&mut store, &mut ota);
        let mut buffer = RegionBuffer::new();
        let options = LoopbackOptions {
            updates: Some(&mut updates),
            ..LoopbackOptions::default()
        };
        let mut cores = Loopback::with_options(buffer.bytes(), options).expect("loopback");
        let kws = cores.kws();
        let check = |cores: &mut Loopback<'_>, seq: u8| {
            let mut out = [0u8; 12];
            assert_eq!(cores.infer(kws, &kws_input(seq), &mut out), Ok(12));
            assert_eq!(out.to_vec(), cores.expected_output(kws, &kws_input(seq)));
        };
        let int8 = TensorShape::int8(&[49, 10]);
        assert_eq!(cores.update_model("kws", &container(2, int8)), Ok(2));
        check(&mut cores, 1);
        // float32 input for a model the NPU serves as int8: refused, kept.
        let float32 = TensorShape { dtype: 0, ..int8 };
        assert_eq!(
            cores.update_model("kws", &container(3, float32)),
            Err(LoopbackError::Client(ClientError::Remote(Errno::NoExec)))
        );
        check(&mut cores, 2);
        let mut damaged = container(4, int8);
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert_eq!(
            cores.update_model("kws", &damaged),
            Err(LoopbackError::Client(ClientError::Remote(Errno::BadMsg)))
        );
        check(&mut cores, 3);
    }

    fn kws_input(seq: u8) -> Vec<u8> {
        (0..KWS.input_len()).map(|i| (i as u8) ^ seq).collect()
    }

    #[test]
    fn a_rebooted_cpu1_serves_again_on_the_live_rings() {
        let mut buffer = RegionBuffer::new();
        let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
        let kws = cores.kws();
        let mut output = [0u8; 12];
        for seq in 0..3 {
            cores.reboot_cpu1().expect("attach");
            let input = kws_input(seq);
            assert_eq!(cores.infer(kws, &input, &mut output), Ok(12));
            assert_eq!(output.to_vec(), cores.expected_output(kws, &input));
        }
        // The first life presumed nothing; later ones presumed every slot
        // held until CPU0's status freed them.
        assert!(cores.cpu0_stats().status >= 2);
    }

    #[test]
    fn a_raw_cpu1_is_answered_and_detaches_the_client() {
        let mut buffer = RegionBuffer::new();
        let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
        let garbage = Message {
            msg_id: 9,
            msg_type: 0xEE,
            ..Message::default()
        };
        let status = Message {
            msg_id: 10,
            msg_type: synaptic_abi::MSG_TYPE_STATUS_REQ,
            priority: Priority::Normal as u8,
            ..Message::default()
        };
        cores.cpu1_push(garbage).expect("push");
        cores.cpu1_push(status).expect("push");
        assert!(cores.client().is_none());
        assert_eq!(cores.step(), 2);
        let reply = cores.cpu1_pop().expect("pop").expect("a status reply");
        assert_eq!((reply.msg_id, reply.status), (10, 0));
        assert_eq!(cores.cpu1_pop(), Ok(None), "garbage gets no reply");
        let kws = cores.kws();
        assert_eq!(
            cores.infer(kws, &kws_input(0), &mut [0; 12]),
            Err(LoopbackError::Detached)
        );
        cores.reboot_cpu1().expect("attach");
        assert_eq!(cores.infer(kws, &kws_input(0), &mut [0; 12]), Ok(12));
    }

    #[test]
    fn a_silent_cpu0_bounds_the_wait_and_a_smashed_control_block_heals() {
        let mut buffer = RegionBuffer::new();
        let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
        let kws = cores.kws();
        let start = cores.time().now_us();
        // CPU0 never runs: the client gives up after its simulated timeout.
        let client = cores.client().expect("client");
        let mut session = client
            .reserve(KWS.input_len(), Timeout::NoWait)
            .expect("slot");
        session.infer_input()[..KWS.input_len()].copy_from_slice(&kws_input(1));
        let result = session.infer_with(
            kws,
            KWS.input_len(),
            &mut [0; 12],
            Priority::Normal,
            Wait::Poll,
            Timeout::Millis(1),
        );
        assert_eq!(result, Err(ClientError::TimedOut));
        assert!(cores.time().now_us() - start >= 1000);
        // The late reply frees the slot; the next inference works.
        cores.step();
        assert_eq!(cores.infer(kws, &kws_input(2), &mut [0; 12]), Ok(12));
        // A smashed magic word: CPU1's attach finds it bad until CPU0's
        // maintenance restores it; the rebooted CPU1 then serves.
        assert_eq!(cores.write_shared(0, &[0xFF; 4]), 4);
        assert!(matches!(
            boot::attach(&cores.region),
            Err(AttachError::Region(_))
        ));
        cores
            .reboot_cpu1()
            .expect("attached once CPU0 repaired the block");
        assert_eq!(cores.infer(kws, &kws_input(3), &mut [0; 12]), Ok(12));
        assert!(cores.cpu0_stats().repairs >= 1);
    }

    #[test]
    fn publish_takes_any_buffer_the_region_fits_and_refuses_others() {
        let mut window = RegionBuffer::with_len(96 * 1024);
        let region = publish(window.bytes()).expect("a whole window");
        assert_eq!(region.size(), 96 * 1024);
        assert_eq!(region.control_block().shared_size, 96 * 1024);
        assert!(boot::attach(&region).is_ok(), "published as CPU0 boots");
        let mut short = RegionBuffer::with_len(REGION_SIZE - 16);
        assert!(matches!(
            publish(short.bytes()),
            Err(LoopbackError::Region(RegionError::TooSmall { .. }))
        ));
        let mut buffer = RegionBuffer::with_len(REGION_SIZE + 64);
        assert!(matches!(
            Loopback::new(&mut buffer.bytes()[4..]),
            Err(LoopbackError::Region(RegionError::Misaligned(_)))
        ));
    }

    #[test]
    fn by_hand_lends_cpu0s_pieces_and_its_port_counts_doorbells() {
        let mut buffer = RegionBuffer::new();
        let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
        let kws = cores.kws();
        let status = |msg_id, status| Message {
            msg_id,
            msg_type: synaptic_abi::MSG_TYPE_STATUS_REQ,
            priority: Priority::Normal as u8,
            status,
            ..Message::default()
        };
        let (popped, ids, doorbells) = cores.by_hand(|cpu0, cpu1| {
            assert!(cpu0.rt.registry.info(kws).is_ok());
            cpu1.requests.push(status(1, 0)).expect("push");
            let polled = synaptic_abi::REQUEST_FLAG_POLLED;
            cpu1.requests.push(status(2, polled)).expect("push");
            let popped = cpu0.intake.drain(cpu0.ledger, cpu0.inbox, cpu0.port);
            let mut ids = Vec::new();
            while let Some(reply) = cpu1.replies.pop().expect("pop") {
                ids.push(reply.msg_id);
            }
            (popped, ids, (cpu0.port.rings(), cpu0.port.events()))
        });
        assert_eq!(popped, 2);
        assert_eq!(ids, [1, 2]);
        assert_eq!(doorbells, (1, 1), "an interrupt, then only an event");
        assert!(cores.client().is_none(), "by hand detaches the client");
        cores.reboot_cpu1().expect("attach");
        assert_eq!(cores.infer(kws, &kws_input(4), &mut [0; 12]), Ok(12));
    }

    #[test]
    fn options_set_the_npus_latency_in_simulated_time() {
        let mut buffer = RegionBuffer::new();
        let options = LoopbackOptions {
            npu_latency_us: 3_000,
            ..LoopbackOptions::default()
        };
        let mut cores = Loopback::with_options(buffer.bytes(), options).expect("loopback");
        let kws = cores.kws();
        let start = cores.time().now_us();
        assert_eq!(cores.infer(kws, &kws_input(5), &mut [0; 12]), Ok(12));
        assert!(cores.time().now_us() - start >= 3_000);
        let stats = cores.cpu0_stats();
        assert_eq!(stats.latency_max_us, 3_000, "the NPU's is all the latency");
    }
}
