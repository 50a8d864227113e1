//! The CPU1 client: inference on CPU0 as a blocking call, up to one request
//! per exchange slot in flight, from any number of CPU1 threads. Resolve a
//! model by name, stage a tensor in place, submit it with a priority class,
//! wait (polling or sleeping) with a timeout, get a length or an error.
//!
//! ```text
//! let mut session = client.reserve(490, Timeout::Millis(100))?;  // the smallest free slot that fits
//! render(&mut session.infer_input()[..490]);                     // in shared SRAM, no private copy
//! let n = session.infer(model, 490, &mut out, Priority::Normal, Timeout::Millis(50))?;
//! ```
//!
//! # Invariants
//!
//! * **Each slot is a small state machine** in CPU1's RAM, moved by one
//!   compare-and-swap at a time: `FREE → STAGING` (a caller reserved it:
//!   only that caller writes its input), `STAGING → SENT` (the request is
//!   pushed: CPU0 owns the slot), `SENT → DONE` (the dispatch path matched
//!   the reply: the caller owns it again and reads the output), `DONE →
//!   FREE` (the caller is finished). A timed-out caller moves `SENT →
//!   ABANDONED`; the late reply, or a `STATUS_RESP` whose mask proves CPU0
//!   done with it, moves `ABANDONED → FREE`. A slot is therefore never
//!   restaged while CPU0 may still read it, and a late reply is never
//!   delivered to a later caller.
//! * **A restarted CPU1 trusts no reply until it has synchronised.** A
//!   previous life may have left requests on the ring, replies in the reply
//!   ring and anything in the region, numbered its messages as it liked and
//!   rewound its own ring's head, so neither an id nor a slot proves whose
//!   a reply is. [`Client::attach`] presumes every slot held (`PRESUMED`);
//!   its first send or drain pushes one `STATUS_REQ`, the *sync request*,
//!   at ring index `s`.
//!   CPU0 pops in order and answers every request that names no slot
//!   (refusals, statuses) before it pops the next, so once CPU0's published
//!   tail has passed `s` every such reply to the previous life lies below
//!   the reply ring's head: the client drops everything up to that head
//!   unread (counted in [`ClientStats::stale`]) and trusts every later
//!   reply but those naming a presumed slot. Those come only from requests
//!   CPU0 still held at the sync, so a presumed slot is freed only by the
//!   mask of a `STATUS_RESP` (any reply after the sync is this life's), and
//!   a reply naming it only asks for one. A ping sent before the sync is
//!   sent again after it.
//! * **A fresh region needs no sync**: [`Client::attach_fresh`], for a
//!   platform that knows no CPU1 ran on the region since CPU0 published it
//!   (and whose rings show no traffic), starts with every slot free.
//! * **The local locks guard only sending and receiving**: reserving a slot
//!   is lock-free, the sender lock is held for one push, and the receiver
//!   lock for one drain of the reply ring (the dispatch thread's, or a
//!   polling caller's). A poller takes the receiver lock blocking, so a
//!   lower-priority dispatch thread caught holding it inherits the
//!   poller's priority rather than being starved by the poll loop.
//! * **Completion by polling or interrupt** ([`Wait`]): a polled request
//!   asks CPU0 for no doorbell ([`REQUEST_FLAG_POLLED`]); its caller drains
//!   the reply ring itself and pauses with the platform's `relax` (Arm
//!   `wfe`) between looks. [`Wait::Auto`] polls when CPU0's published
//!   service-time estimate for the model is at most the poll threshold.
//! * **Ids continue after a restart.** [`Client::attach`] numbers messages
//!   from the live head of the outgoing ring, so a well-behaved previous
//!   life's ids are not reused (a courtesy to CPU0's logs: the
//!   synchronisation, not the ids, keeps a previous life's replies out).
//! * **No floating point**, no heap; the local atomics (CPU1's own RAM) are
//!   the only read-modify-write, never on the shared region.
//! * Round trips: [`Client::ping`] stamps a `STATUS_REQ` with the clock;
//!   each answered ping is folded into last/min/max/count and published in
//!   the control block's RTT words (CPU1 has no console; CPU0's shell reads
//!   them).

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU8, Ordering};

use synaptic_abi::{
    Direction, Errno, MessageType, Priority, ValidMessage, MAX_EXCHANGE_SLOTS, MODEL_NAME_SIZE,
    REQUEST_FLAG_POLLED, UPDATE_OP_ACTIVATE, UPDATE_OP_BEGIN, UPDATE_OP_CONFIRM, UPDATE_OP_DATA,
    UPDATE_OP_FINISH, UPDATE_OP_ROLLBACK,
};
use synaptic_ipc::{Doorbell, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::registry::ModelHandle;
use synaptic_runtime::time::{micros_to_millis, micros_to_millis_ceil, Clock};

use crate::lock::LocalLock;
use crate::protocol::{self, first_id_after_restart, is_after, mask_holds};
use crate::region::{Exchange, RttWords, SharedRegion};

/// Why a client call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientError {
    /// No reply within the timeout (`-ETIMEDOUT`). For a slot request, the
    /// slot stays CPU0's until the late reply (or a status) frees it.
    TimedOut,
    /// No slot that fits is free within the timeout, or another ping is in
    /// flight (`-EBUSY`).
    Busy,
    /// The request could not be sent: ring full (`-EAGAIN`) or corrupt
    /// (`-EBADMSG`).
    Ipc(IpcError),
    /// A length of 0 or beyond the slot, or a name that is empty, longer
    /// than 31 bytes or contains a NUL (`-EINVAL`).
    InvalidArgument,
    /// The output does not fit the caller's buffer (`-ENOBUFS`).
    OutputTooSmall {
        /// Output bytes.
        needed: usize,
        /// Buffer bytes.
        actual: usize,
    },
    /// CPU0 answered with this error (the runtime's errno, e.g. `-EIO` for
    /// an NPU fault, or the serving layer's for a refused request).
    Remote(Errno),
    /// CPU0's reply makes no sense (unknown errno, impossible length)
    /// (`-EPROTO`).
    Protocol {
        /// The status word received.
        status: i32,
    },
}

impl ClientError {
    /// The errno at the C boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            ClientError::TimedOut => Errno::TimedOut,
            ClientError::Busy => Errno::Busy,
            ClientError::Ipc(e) => e.errno(),
            ClientError::InvalidArgument => Errno::Inval,
            ClientError::OutputTooSmall { .. } => Errno::NoBufs,
            ClientError::Remote(e) => e,
            ClientError::Protocol { .. } => Errno::Proto,
        }
    }

    /// A call's result the C way: the value, or the negative errno.
    pub fn status(result: Result<usize, ClientError>) -> i32 {
        match result {
            Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
            Err(e) => e.to_errno().negative(),
        }
    }
}

impl From<IpcError> for ClientError {
    fn from(e: IpcError) -> Self {
        ClientError::Ipc(e)
    }
}

/// How a caller waits for its reply (MEERKAT's choice between polling and
/// interrupt-driven completion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Poll when CPU0's estimate for the model is at most the client's
    /// threshold (a status round trip always polls when the threshold is
    /// nonzero); sleep on the doorbell otherwise or without an estimate.
    Auto,
    /// Drain the reply ring in a loop, pausing with `relax`; CPU0 rings no
    /// doorbell.
    Poll,
    /// Sleep until the doorbell wakes the dispatch thread, which wakes the
    /// caller.
    Interrupt,
}

/// How the client is set up.
#[derive(Clone, Copy, Debug)]
pub struct ClientConfig {
    /// [`Wait::Auto`] polls when the predicted service time is at most this
    /// many microseconds (0: never poll on its own).
    pub poll_threshold_us: u32,
    /// Pause between two looks of a polling caller (Arm `wfe`, a host
    /// yield); it may return at once.
    pub relax: fn(),
    /// Whether the platform calls [`Client::expire_sleepers`] periodically
    /// (a timer). Then a caller sleeping for its reply blocks without a
    /// kernel timeout of its own (arming and cancelling one per request
    /// costs more than the rest of the wait) and is woken by the sweep at
    /// most one period after its deadline; otherwise it arms one.
    pub swept: bool,
}

/// What the client has done so far (CPU1-local counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Messages pushed to CPU0.
    pub sent: u32,
    /// Replies delivered to the caller that waited for them.
    pub delivered: u32,
    /// Slot replies nobody waited for any more: late replies to timed-out
    /// or pre-restart requests, discarded.
    pub discarded: u32,
    /// `STATUS_RESP`s received (delivered or used only as a barrier).
    pub pongs: u32,
    /// Calls that timed out waiting for a reply.
    pub timeouts: u32,
    /// Reservations refused because no fitting slot came free in time.
    pub busy: u32,
    /// Messages of a type the client does not expect, or that failed to
    /// decode, dropped.
    pub unexpected: u32,
    /// Replies a polling caller collected itself.
    pub polled: u32,
    /// Slots freed by a `STATUS_RESP` mask (their replies were lost, or
    /// belonged to a previous life).
    pub reclaimed: u32,
    /// Replies dropped unread while the client synchronised after a
    /// restart: what a previous life left, and this life's own answers
    /// that were indistinguishable from it.
    pub stale: u32,
    /// Shared words CPU1 owns (`cpu1_ready`, its layout version, its ring
    /// indices) found altered and rewritten by [`Client::maintain`].
    pub repairs: u32,
}

/// The answer to [`Client::ping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pong {
    /// This round trip, microseconds.
    pub rtt_us: u32,
    /// Whether CPU0 reported any exchange slot held.
    pub slot_held: bool,
    /// The slots CPU0 reported held (bit `i`: slot `i`).
    pub held_mask: u32,
}

mod state {
    pub const FREE: u8 = 0;
    pub const STAGING: u8 = 1;
    pub const SENT: u8 = 2;
    pub const DONE: u8 = 3;
    pub const ABANDONED: u8 = 4;
    pub const PRESUMED: u8 = 5;
}

/// Where a client stands with the replies of a previous life.
mod sync {
    /// The sync request is not pushed yet (nothing sent or drained since
    /// the attach, or the ring was full or corrupt).
    pub const UNSENT: u8 = 0;
    /// The sync request is on the ring; CPU0 has not taken it yet.
    pub const SENT: u8 = 1;
    /// Every reply from here on is this life's.
    pub const DONE: u8 = 2;
}

/// One waiter: a slot's, or the ping's.
struct Waiter<S> {
    state: AtomicU8,
    /// Id of the request in flight (SENT, ABANDONED, DONE).
    id: AtomicU32,
    /// The reply's status, written before `SENT → DONE`.
    status: AtomicI32,
    /// A caller is (about to be) blocked on `wake`; the dispatch path
    /// clears it and gives `wake` exactly once per clear.
    sleeping: AtomicBool,
    /// The sleeping caller's deadline, milliseconds on the client's clock
    /// (wrapping; [`NO_DEADLINE`]: none).
    deadline_ms: AtomicU32,
    wake: S,
}

/// `Waiter::deadline_ms` of a caller that waits forever.
const NO_DEADLINE: u32 = u32::MAX;

/// A deadline as the sweep compares it.
/// Pauses of a polling caller between two looks at the clock for its
/// deadline (on silicon a pause lasts until the next event or interrupt).
const POLL_PAUSES_PER_CLOCK_READ: u32 = 4;

fn deadline_ms(deadline: Deadline) -> u32 {
    match deadline {
        Deadline::Never => NO_DEADLINE,
        // Never NO_DEADLINE itself: one millisecond early at worst.
        Deadline::At(at) => (micros_to_millis(at) as u32).min(NO_DEADLINE - 1),
    }
}

impl<S: Semaphore> Waiter<S> {
    fn new(initial: u8, wake: S) -> Self {
        Waiter {
            state: AtomicU8::new(initial),
            id: AtomicU32::new(0),
            status: AtomicI32::new(0),
            sleeping: AtomicBool::new(false),
            deadline_ms: AtomicU32::new(NO_DEADLINE),
            wake,
        }
    }

    fn state(&self) -> u8 {
        // Ordering: pairs with the Release of every transition.
        self.state.load(Ordering::Acquire)
    }

    fn moves(&self, from: u8, to: u8) -> bool {
        self.state
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn set(&self, to: u8) {
        self.state.store(to, Ordering::Release);
    }

    /// Wake the caller blocked on this waiter, if any.
    fn notify(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            self.wake.give();
        }
    }
}

/// When a wait ends, in the clock's microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Never: the wait has no timeout.
    Never,
    /// At this clock reading.
    At(u64),
}

impl Deadline {
    /// The deadline `timeout` after `now_us`.
    pub fn after(now_us: u64, timeout: Timeout) -> Deadline {
        match timeout {
            Timeout::Forever => Deadline::Never,
            Timeout::NoWait => Deadline::At(now_us),
            Timeout::Millis(ms) => Deadline::At(now_us.saturating_add(u64::from(ms) * 1000)),
        }
    }

    /// Time left at `now_us`, rounded up to whole milliseconds; `None`
    /// once the deadline has passed. One function for every wait on CPU1
    /// (the client's and the attach handshake's): its image is budgeted.
    pub fn left(self, now_us: u64) -> Option<Timeout> {
        match self {
            Deadline::Never => Some(Timeout::Forever),
            Deadline::At(at) if now_us >= at => None,
            Deadline::At(at) => {
                let ms = micros_to_millis_ceil(at - now_us);
                Some(Timeout::Millis(u32::try_from(ms).unwrap_or(u32::MAX)))
            }
        }
    }
}

/// Write `name` as the slot header's NUL-terminated field into `field`
/// (zeroed). An out parameter: returning the 32 bytes cost CPU1's image a
/// copy.
fn name_field(name: &str, field: &mut [u8; MODEL_NAME_SIZE]) -> Result<(), ClientError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= MODEL_NAME_SIZE || bytes.contains(&0) {
        return Err(ClientError::InvalidArgument);
    }
    field[..bytes.len()].copy_from_slice(bytes);
    Ok(())
}

/// A timeout that becomes a deadline when first needed.
#[derive(Clone, Copy, Debug)]
enum Due {
    /// Not started: this long from the first [`Due::deadline`].
    After(Timeout),
    /// Started.
    At(Deadline),
}

impl Due {
    /// The deadline, fixed (one clock read, on `clock`) on the first call.
    fn deadline(&mut self, clock: &impl Clock) -> Deadline {
        let deadline = match *self {
            Due::At(deadline) => deadline,
            Due::After(Timeout::Forever) => Deadline::Never,
            Due::After(timeout) => Deadline::after(clock.now_us(), timeout),
        };
        *self = Due::At(deadline);
        deadline
    }
}

#[derive(Default)]
struct Counters {
    sent: AtomicU32,
    delivered: AtomicU32,
    discarded: AtomicU32,
    pongs: AtomicU32,
    timeouts: AtomicU32,
    busy: AtomicU32,
    unexpected: AtomicU32,
    polled: AtomicU32,
    reclaimed: AtomicU32,
    stale: AtomicU32,
    repairs: AtomicU32,
}

fn bump(counter: &AtomicU32) {
    // Ordering: a statistic; CPU1-local memory, where an RMW is fine.
    counter.fetch_add(1, Ordering::Relaxed);
}

/// [`bump`] for a counter only written under one lock (the sender's or the
/// receiver's): a load and a store, no read-modify-write loop.
fn bump_locked(counter: &AtomicU32) {
    // Ordering: a statistic; its one writer holds the lock.
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

/// The CPU1 side of the inference service.
///
/// `N`: ring entries; `D`: the doorbell to CPU0; `S`: the semaphores the
/// dispatch path gives to wake sleeping callers; `C`: a microsecond clock
/// (timeouts and round trips); `L`: the local lock around the [`Sender`];
/// `Q`: the local lock around the reply ring's [`Consumer`].
///
/// CPU1's dispatch thread calls [`Client::dispatch`] on each doorbell (and
/// on a timeout); polling callers drain the reply ring themselves.
pub struct Client<'r, const N: usize, D, S, C, L, Q> {
    sender: L,
    receiver: Q,
    region: SharedRegion<'r, N>,
    config: ClientConfig,
    clock: C,
    slots: [Waiter<S>; MAX_EXCHANGE_SLOTS],
    ping: Waiter<S>,
    /// Some slot may be ABANDONED or PRESUMED, so a `STATUS_RESP` has
    /// slots to reclaim; while it is clear, a status skips the scan. Set
    /// (by a read-modify-write, see [`Client::apply_barrier`]) after a
    /// slot enters either state; cleared by the scan that finds none left.
    unsettled: AtomicBool,
    /// Callers waiting for any slot to come free, and their semaphore.
    free_waiters: AtomicU32,
    free_wake: S,
    /// The reply ring's tail after the last drain: a head that differs
    /// means something to pop (polling callers look before they lock).
    drained_to: AtomicU32,
    /// [`sync`] state: whether replies can be trusted yet.
    sync: AtomicU8,
    /// Index of the sync request on ring CPU1→CPU0 (once SENT).
    sync_at: AtomicU32,
    /// A `STATUS_REQ` is owed (pushed by the next drain): presumed slots,
    /// or a ping sent before the sync, wait for a status this life trusts.
    status_owed: AtomicBool,
    /// The ping in flight was sent before the sync: send it again.
    ping_resend: AtomicBool,
    /// Whether the ping in flight asked to poll.
    ping_polled: AtomicBool,
    ping_sent_us: AtomicU32,
    /// Round-trip statistics, written by the dispatch path only.
    rtt_last: AtomicU32,
    rtt_min: AtomicU32,
    rtt_max: AtomicU32,
    rtt_count: AtomicU32,
    counters: Counters,
    doorbell: core::marker::PhantomData<fn() -> D>,
}

impl<'r, const N: usize, D, S, C, L, Q> Client<'r, N, D, S, C, L, Q>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Sender<'r, N, D>>,
    Q: LocalLock<Consumer<'r, N>>,
{
    /// The client of a CPU1 (re)starting on `region`: `producer` and
    /// `consumer` are attached to the rings CPU1→CPU0 and CPU0→CPU1 with
    /// their live indices, `doorbell` rings CPU0, `semaphore` makes fresh
    /// semaphores with no count (one per slot, one for the ping, one for
    /// callers waiting for a free slot).
    ///
    /// Nothing a previous life left is trusted: every slot is presumed
    /// held, and the sync request (a `STATUS_REQ`) is pushed by the first
    /// call that sends or drains (a ping, a reservation, a dispatch; the
    /// next one that can, if the ring is full). Replies are dropped
    /// unread until CPU0 has taken it, then a status frees the slots CPU0
    /// does not hold (see the module docs). A reservation meanwhile waits
    /// (or is [`ClientError::Busy`]); a dispatch thread or polling caller
    /// completes the synchronisation. Message ids continue from the ring's
    /// live head ([`protocol::first_id_after_restart`]). The round-trip
    /// words are reset.
    pub fn attach(
        region: &SharedRegion<'r, N>,
        producer: Producer<'r, N>,
        consumer: Consumer<'r, N>,
        doorbell: D,
        semaphore: impl FnMut() -> S,
        clock: C,
        config: ClientConfig,
    ) -> Self {
        Self::attach_as(
            region, producer, consumer, doorbell, semaphore, clock, config, false,
        )
    }

    /// The client of the first CPU1 life on a region CPU0 has just
    /// published, for a platform that knows no CPU1 ran on it before (a
    /// simulator or test that published it itself): every slot free, every
    /// reply trusted from the start, nothing sent. Otherwise as
    /// [`attach`](Self::attach), which it is whenever either ring shows
    /// traffic (an index is not 0): such a region is not fresh, whatever
    /// the caller believes.
    pub fn attach_fresh(
        region: &SharedRegion<'r, N>,
        producer: Producer<'r, N>,
        consumer: Consumer<'r, N>,
        doorbell: D,
        semaphore: impl FnMut() -> S,
        clock: C,
        config: ClientConfig,
    ) -> Self {
        let untouched = producer.head() == 0
            && consumer.tail() == 0
            && region.ring(Direction::Cpu1ToCpu0).consumed() == 0
            && region.ring(Direction::Cpu0ToCpu1).head_hint() == 0;
        Self::attach_as(
            region, producer, consumer, doorbell, semaphore, clock, config, untouched,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn attach_as(
        region: &SharedRegion<'r, N>,
        producer: Producer<'r, N>,
        consumer: Consumer<'r, N>,
        doorbell: D,
        mut semaphore: impl FnMut() -> S,
        clock: C,
        config: ClientConfig,
        fresh: bool,
    ) -> Self {
        let head = producer.head();
        let drained_to = AtomicU32::new(consumer.tail());
        let sender = Sender::with_next_id(producer, doorbell, first_id_after_restart(head));
        region.publish_rtt(RttWords::default());
        let count = region.slot_count();
        let slots = core::array::from_fn(|k| {
            let initial = if k >= count || fresh {
                state::FREE
            } else {
                state::PRESUMED
            };
            Waiter::new(initial, semaphore())
        });
        let client = Client {
            sender: L::new(sender),
            receiver: Q::new(consumer),
            region: *region,
            config,
            clock,
            slots,
            ping: Waiter::new(state::FREE, semaphore()),
            unsettled: AtomicBool::new(!fresh && count > 0),
            free_waiters: AtomicU32::new(0),
            free_wake: semaphore(),
            drained_to,
            sync: AtomicU8::new(if fresh { sync::DONE } else { sync::UNSENT }),
            sync_at: AtomicU32::new(0),
            status_owed: AtomicBool::new(false),
            ping_resend: AtomicBool::new(false),
            ping_polled: AtomicBool::new(false),
            ping_sent_us: AtomicU32::new(0),
            rtt_last: AtomicU32::new(0),
            rtt_min: AtomicU32::new(0),
            rtt_max: AtomicU32::new(0),
            rtt_count: AtomicU32::new(0),
            counters: Counters::default(),
            doorbell: core::marker::PhantomData,
        };
        // The sync request is pushed by the first call that sends or
        // drains, not here: pushing from the constructor keeps a second
        // copy of the client on the caller's stack (about 700 bytes more
        // in CPU1's `attach` on Zephyr).
        client
    }

    /// Whether the client trusts the reply ring: synchronised after a
    /// restart, or attached fresh.
    pub fn synchronised(&self) -> bool {
        // Ordering: pairs with the Release that completes the sync.
        self.sync.load(Ordering::Acquire) == sync::DONE
    }

    /// Push the sync request if it is not on the ring yet.
    fn send_sync(&self) {
        // Ordering: pairs with the Release below (another thread's push).
        if self.sync.load(Ordering::Acquire) != sync::UNSENT {
            return;
        }
        let msg = ValidMessage {
            timestamp_us: self.clock.now_us() as u32,
            ..ValidMessage::new(MessageType::StatusReq, Priority::Normal)
        };
        let mut sender = self.sender.lock();
        if self.sync.load(Ordering::Acquire) != sync::UNSENT {
            return;
        }
        // The push writes the slot at the producer's head.
        let at = sender.producer().head();
        if sender.send(msg).is_ok() {
            bump_locked(&self.counters.sent);
            self.sync_at.store(at, Ordering::Relaxed);
            // Ordering: publishes `sync_at` to the drain that reads SENT.
            self.sync.store(sync::SENT, Ordering::Release);
        }
    }

    /// The dispatch thread's turn: drain the reply ring (waiting for a
    /// polling caller that holds it). Returns the messages popped.
    pub fn dispatch(&self) -> usize {
        let mut consumer = self.receiver.lock();
        self.drain_with(&mut consumer)
    }

    /// Drain the reply ring if nobody else is draining it. Returns the
    /// messages popped (0 when busy or empty).
    pub fn poll_replies(&self) -> usize {
        match self.receiver.try_lock() {
            Some(mut consumer) => self.drain_with(&mut consumer),
            None => 0,
        }
    }

    fn drain_with(&self, consumer: &mut Consumer<'r, N>) -> usize {
        let mut total = 0;
        if !self.synchronised() {
            total += self.synchronise(consumer);
            if !self.synchronised() {
                // Ordering: as below.
                self.drained_to.store(consumer.tail(), Ordering::Relaxed);
                return total;
            }
        }
        // A budget per pass so a flooding peer cannot hold the caller.
        for _ in 0..N {
            let raw = match consumer.pop() {
                Ok(Some(raw)) => raw,
                Ok(None) | Err(_) => break,
            };
            total += 1;
            match ValidMessage::try_from(raw) {
                Ok(msg) => self.handle(&msg),
                Err(_) => bump_locked(&self.counters.unexpected),
            }
        }
        if self.status_owed.load(Ordering::Relaxed) {
            self.send_owed_status();
        }
        // Ordering: CPU1-local, written under the receiver lock; a stale
        // value costs a polling caller one needless lock.
        self.drained_to.store(consumer.tail(), Ordering::Relaxed);
        total
    }

    /// A drain before the sync (receiver lock held): drop what the reply
    /// ring holds, and once CPU0 has taken the sync request, everything
    /// below the reply ring's head, after which every reply is this
    /// life's. Returns the messages dropped.
    fn synchronise(&self, consumer: &mut Consumer<'r, N>) -> usize {
        self.send_sync();
        // Ordering: the Acquire of SENT makes `sync_at` visible.
        let sent = self.sync.load(Ordering::Acquire) == sync::SENT;
        // CPU0 answers each request naming no slot before it pops the next
        // and restores the reply ring's head before it pops at all, so once
        // its tail has passed the sync request (read with Acquire) the head
        // read next counts every such answer to the previous life. A tail
        // a previous life scribbled cannot pass it: attach took the live
        // head at or past it.
        let passed = sent
            && is_after(
                self.region.ring(Direction::Cpu1ToCpu0).consumed(),
                self.sync_at.load(Ordering::Relaxed),
            );
        // Before that, nothing in the ring is provably this life's either.
        // A corrupt head resynchronises the consumer: nothing is left.
        let stale = consumer.available().unwrap_or(0);
        let mut dropped = 0;
        for _ in 0..stale {
            match consumer.pop() {
                Ok(Some(_)) => {
                    dropped += 1;
                    bump_locked(&self.counters.stale);
                }
                Ok(None) | Err(_) => break,
            }
        }
        if passed {
            // Presumed slots wait for a status; a ping sent before now may
            // have had its answer dropped above.
            self.ping_resend.store(true, Ordering::Relaxed);
            self.status_owed.store(true, Ordering::Relaxed);
            // Ordering: pairs with the Acquire in `synchronised`.
            self.sync.store(sync::DONE, Ordering::Release);
        }
        dropped
    }

    /// Push the owed `STATUS_REQ` (receiver lock held, so no reply is being
    /// matched meanwhile); it carries a ping sent before the sync, which
    /// then waits for this one's answer. Owed again if the ring is full.
    fn send_owed_status(&self) {
        let now = self.clock.now_us() as u32;
        let mut sender = self.sender.lock();
        let resend =
            self.ping_resend.swap(false, Ordering::Relaxed) && self.ping.state() == state::SENT;
        let polled = resend && self.ping_polled.load(Ordering::Relaxed);
        let msg = ValidMessage {
            timestamp_us: now,
            status: if polled { REQUEST_FLAG_POLLED } else { 0 },
            ..ValidMessage::new(MessageType::StatusReq, Priority::Normal)
        };
        let id = sender.next_id();
        if resend {
            // Ordering: CPU1-local; read by the dispatch path, which the
            // receiver lock (held) serialises with this.
            self.ping.id.store(id, Ordering::Relaxed);
            self.ping_sent_us.store(now, Ordering::Relaxed);
        }
        match sender.send(msg) {
            Ok(_) => {
                bump_locked(&self.counters.sent);
                self.status_owed.store(false, Ordering::Relaxed);
            }
            // The next successful send reuses `id`; the ping keeps it.
            Err(_) => self.ping_resend.store(resend, Ordering::Relaxed),
        }
    }

    /// Whether the reply ring may hold something this client has not
    /// drained (a hint: no lock, no ordering).
    fn replies_waiting(&self) -> bool {
        !self.synchronised()
            || self.region.ring(Direction::Cpu0ToCpu1).head_hint()
                != self.drained_to.load(Ordering::Relaxed)
    }

    /// Reserve the frame slot (slot 0, 27,648 input bytes), waiting within
    /// `timeout` until CPU1 owns it: the single-request API.
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`] when the slot is still CPU0's (or another
    /// caller's) when the timeout expires.
    pub fn session(
        &self,
        timeout: Timeout,
    ) -> Result<Session<'_, 'r, N, D, S, C, L, Q>, ClientError> {
        self.reserve_until(Some(0), 0, &mut Due::After(timeout))
    }

    /// Reserve the smallest free slot whose input holds `input_len` bytes,
    /// waiting within `timeout` for one to come free.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] when no slot is that large;
    /// [`ClientError::Busy`] when none came free in time.
    pub fn reserve(
        &self,
        input_len: usize,
        timeout: Timeout,
    ) -> Result<Session<'_, 'r, N, D, S, C, L, Q>, ClientError> {
        self.reserve_until(None, input_len, &mut Due::After(timeout))
    }

    /// Reserve a fitting slot (`only` that one) by `due`, which is turned
    /// into a deadline on the first wait: a slot free at once costs no
    /// clock read.
    fn reserve_until(
        &self,
        only: Option<usize>,
        input_len: usize,
        due: &mut Due,
    ) -> Result<Session<'_, 'r, N, D, S, C, L, Q>, ClientError> {
        let geometry = self.region.slots();
        let fits = |k: usize| {
            only.is_none_or(|o| o == k)
                && geometry.input_capacity(k).is_some_and(|c| c >= input_len)
        };
        if !(0..self.region.slot_count()).any(fits) {
            return Err(ClientError::InvalidArgument);
        }
        let mut barrier_sent = false;
        let count = self.region.slot_count();
        loop {
            // Registered as a waiter *before* the scan: a slot freed after
            // the scan then gives `free_wake`. (Registering after the scan
            // loses a free that lands in between, and the caller sleeps
            // its whole timeout, forever with `Timeout::Forever`.)
            self.free_waiters.fetch_add(1, Ordering::SeqCst);
            // Smallest fitting slot first: the frame slot stays free for frames.
            let claimed = (0..count)
                .rev()
                .find(|&k| fits(k) && self.slots[k].moves(state::FREE, state::STAGING));
            if let Some(k) = claimed {
                self.free_waiters.fetch_sub(1, Ordering::SeqCst);
                let Some(exchange) = self.region.exchange(k) else {
                    self.slots[k].set(state::FREE);
                    return Err(ClientError::InvalidArgument);
                };
                return Ok(Session {
                    client: self,
                    slot: k,
                    exchange,
                });
            }
            // A fitting slot CPU0 may still hold: ask CPU0 whether it does.
            let stuck = (0..count).any(|k| {
                fits(k) && matches!(self.slots[k].state(), state::ABANDONED | state::PRESUMED)
            });
            if stuck && !barrier_sent {
                if self.synchronised() {
                    barrier_sent = self
                        .send_status(self.clock.now_us() as u32, false, false)
                        .is_ok();
                } else {
                    // The sync's completion sends the status that frees
                    // the presumed slots.
                    self.send_sync();
                }
            }
            let woke = self.wait_for_free(due.deadline(&self.clock));
            self.free_waiters.fetch_sub(1, Ordering::SeqCst);
            if !woke {
                bump(&self.counters.busy);
                return Err(ClientError::Busy);
            }
        }
    }

    /// Sleep (registered in `free_waiters` by the caller) until some slot
    /// may have come free; `false` once `deadline` has passed.
    fn wait_for_free(&self, deadline: Deadline) -> bool {
        let Some(timeout) = self.remaining(deadline) else {
            return false;
        };
        // Gives for earlier frees may be pending: each only causes a re-check.
        let _ = self.free_wake.take(timeout);
        true
    }

    /// A slot became FREE: wake one caller waiting for a slot.
    fn notify_free(&self) {
        if self.free_waiters.load(Ordering::SeqCst) > 0 {
            self.free_wake.give();
        }
    }

    /// Resolve a model by name on CPU0 (reserves the smallest slot).
    ///
    /// # Errors
    ///
    /// As [`Session::model_lookup`], and [`ClientError::Busy`] from
    /// [`reserve`](Self::reserve).
    pub fn model_lookup(&self, name: &str, timeout: Timeout) -> Result<ModelHandle, ClientError> {
        let mut due = Due::After(timeout);
        let session = self.reserve_until(None, 0, &mut due)?;
        let deadline = due.deadline(&self.clock);
        session.lookup_until(name, deadline, Wait::Interrupt)
    }

    /// Stream `container` (a model container as `synaptic-pack` writes it)
    /// into CPU0's model store as an update of `name`, have CPU0 verify it
    /// from flash and make it the active version (`MODEL_UPDATE`). A model
    /// CPU0 serves is hot-swapped: requests already accepted finish on the
    /// old version, later ones run the new one under the same handle.
    /// Chunks travel through the largest slot they fill (the frame slot for
    /// all but a short tail). Returns the version now active.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for a bad name or an empty
    /// container; [`ClientError::Remote`] with CPU0's errno (`-ENOTSUP`
    /// without a store, the store's refusal of a step, `-EBUSY` while the
    /// model's previous swap still runs); [`ClientError::TimedOut`] when
    /// the whole update did not end within `timeout`; [`ClientError::Ipc`].
    pub fn update_model(
        &self,
        name: &str,
        container: &[u8],
        timeout: Timeout,
    ) -> Result<u32, ClientError> {
        self.update_model_waiting(name, container, Wait::Interrupt, timeout)
    }

    /// As [`update_model`](Self::update_model), each step's reply awaited
    /// as `wait` says ([`Wait::Poll`]: for a CPU1 that polls; `Auto` sleeps,
    /// as there is no estimate for a flash write).
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model).
    pub fn update_model_waiting(
        &self,
        name: &str,
        container: &[u8],
        wait: Wait,
        timeout: Timeout,
    ) -> Result<u32, ClientError> {
        self.stream_update(name, container.len(), wait, timeout, |offset, chunk| {
            chunk.copy_from_slice(&container[offset..offset + chunk.len()]);
        })
    }

    /// As [`update_model`](Self::update_model) for a container of `total`
    /// bytes that `fill(offset, chunk)` writes chunk by chunk straight into
    /// the slot (from flash, from a radio's buffer...): CPU1 never holds
    /// the whole container in RAM.
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model).
    pub fn update_model_with(
        &self,
        name: &str,
        total: usize,
        timeout: Timeout,
        fill: impl FnMut(usize, &mut [u8]),
    ) -> Result<u32, ClientError> {
        self.stream_update(name, total, Wait::Interrupt, timeout, fill)
    }

    fn stream_update(
        &self,
        name: &str,
        total: usize,
        wait: Wait,
        timeout: Timeout,
        mut fill: impl FnMut(usize, &mut [u8]),
    ) -> Result<u32, ClientError> {
        let polled = matches!(wait, Wait::Poll);
        let mut field = [0u8; MODEL_NAME_SIZE];
        name_field(name, &mut field)?;
        let total32 = u32::try_from(total).map_err(|_| ClientError::InvalidArgument)?;
        if total == 0 {
            return Err(ClientError::InvalidArgument);
        }
        let mut due = Due::After(timeout);
        // The begin writes the slot of the version before the served one:
        // CPU0 answers -EBUSY while a previous swap's old version still
        // runs from it.
        self.while_busy(&mut due, |due| {
            self.update_step(
                due,
                polled,
                Some(&field),
                UPDATE_OP_BEGIN,
                total32,
                0,
                |_| {},
            )
        })?;
        let largest = (0..self.region.slot_count())
            .filter_map(|k| self.region.slots().input_capacity(k))
            .max()
            .unwrap_or(0);
        let mut offset = 0;
        // A chunk is answered -EBUSY, untouched, while another thread of
        // CPU0 holds the store: sent again.
        while offset < total {
            let n = (total - offset).min(largest);
            self.while_busy(&mut due, |due| {
                self.update_step(
                    due,
                    polled,
                    None,
                    UPDATE_OP_DATA,
                    offset as u32,
                    n,
                    |chunk| fill(offset, chunk),
                )
            })?;
            offset += n;
        }
        // CPU0 may verify off its serving thread: -EBUSY until it is done.
        self.while_busy(&mut due, |due| {
            self.update_step(due, polled, None, UPDATE_OP_FINISH, 0, 0, |_| {})
        })?;
        self.while_busy(&mut due, |due| {
            self.update_step(due, polled, None, UPDATE_OP_ACTIVATE, 0, 0, |_| {})
        })
    }

    /// Make the model CPU0's store last activated its previous version
    /// again (hot-swapped likewise). Returns that version.
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model); `-ENOENT` when there is
    /// nothing to roll back.
    pub fn rollback_model(&self, timeout: Timeout) -> Result<u32, ClientError> {
        self.rollback_model_waiting(Wait::Interrupt, timeout)
    }

    /// As [`rollback_model`](Self::rollback_model), the reply awaited as
    /// `wait` says (see [`update_model_waiting`](Self::update_model_waiting)).
    ///
    /// # Errors
    ///
    /// As [`rollback_model`](Self::rollback_model).
    pub fn rollback_model_waiting(&self, wait: Wait, timeout: Timeout) -> Result<u32, ClientError> {
        self.store_step(UPDATE_OP_ROLLBACK, wait, timeout)
    }

    /// Confirm the version CPU0's store last activated (it runs as it
    /// should): the model's security counter rises to it, and CPU0 refuses
    /// every older version from then on, to install (`-ERANGE`) or to roll
    /// back to. Returns the version.
    ///
    /// # Errors
    ///
    /// As [`update_model`](Self::update_model); `-ENOENT` when nothing was
    /// activated.
    pub fn confirm_model(&self, timeout: Timeout) -> Result<u32, ClientError> {
        self.confirm_model_waiting(Wait::Interrupt, timeout)
    }

    /// As [`confirm_model`](Self::confirm_model), the reply awaited as
    /// `wait` says (see [`update_model_waiting`](Self::update_model_waiting)).
    ///
    /// # Errors
    ///
    /// As [`confirm_model`](Self::confirm_model).
    pub fn confirm_model_waiting(&self, wait: Wait, timeout: Timeout) -> Result<u32, ClientError> {
        self.store_step(UPDATE_OP_CONFIRM, wait, timeout)
    }

    /// A `MODEL_UPDATE` step on the store alone (rollback, confirm): no
    /// name, no data; sent again while CPU0 answers `-EBUSY`.
    fn store_step(&self, op: u32, wait: Wait, timeout: Timeout) -> Result<u32, ClientError> {
        let polled = matches!(wait, Wait::Poll);
        self.while_busy(&mut Due::After(timeout), |due| {
            self.update_step(due, polled, None, op, 0, 0, |_| {})
        })
    }

    /// An update step (a begin, an activation, a rollback), sent again
    /// after a status round trip while CPU0 answers `-EBUSY` (the model's
    /// previous swap still has requests running on the old version; they
    /// end within a few inferences) until `due`.
    fn while_busy(
        &self,
        due: &mut Due,
        mut step: impl FnMut(&mut Due) -> Result<u32, ClientError>,
    ) -> Result<u32, ClientError> {
        loop {
            match step(due) {
                Err(ClientError::Remote(Errno::Busy)) => {
                    let deadline = due.deadline(&self.clock);
                    if let Deadline::At(at) = deadline {
                        if self.clock.now_us() >= at {
                            return Err(ClientError::TimedOut);
                        }
                    }
                    // Another caller's ping in flight is as good a pause.
                    let _ = self.ping_with(Wait::Interrupt, Timeout::Millis(100));
                }
                done => return done,
            }
        }
    }

    /// One `MODEL_UPDATE` step in a slot whose first `len` input bytes
    /// `fill` writes (the name in its header when given); the reply's
    /// status.
    #[allow(clippy::too_many_arguments)]
    fn update_step(
        &self,
        due: &mut Due,
        polled: bool,
        name: Option<&[u8; MODEL_NAME_SIZE]>,
        op: u32,
        arg: u32,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<u32, ClientError> {
        let mut session = self.reserve_until(None, len, due)?;
        let deadline = due.deadline(&self.clock);
        fill(&mut session.infer_input()[..len]);
        if let Some(field) = name {
            session.exchange.set_model_name(field);
        }
        session.exchange.set_update(op, arg, len as u32);
        let payload_len = if len == 0 {
            protocol::LOOKUP_PAYLOAD_LEN
        } else {
            protocol::infer_payload_len(len, session.exchange.input_capacity())
                .ok_or(ClientError::InvalidArgument)?
        };
        let now = self.clock.now_us();
        let status = session.request(
            MessageType::ModelUpdate,
            Priority::Normal,
            payload_len,
            polled,
            now,
            deadline,
        )?;
        Ok(self.status_to_len(status)? as u32)
    }

    /// Measure one round trip with a `STATUS_REQ` (no slot is needed),
    /// waiting as [`Wait::Auto`] says.
    ///
    /// # Errors
    ///
    /// As [`ping_with`](Self::ping_with).
    pub fn ping(&self, timeout: Timeout) -> Result<Pong, ClientError> {
        self.ping_with(Wait::Auto, timeout)
    }

    /// Measure one round trip with a `STATUS_REQ`, waiting as `wait` says.
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`] while another ping is in flight;
    /// [`ClientError::Ipc`] when the ring is full; [`ClientError::TimedOut`];
    /// [`ClientError::Remote`] if CPU0 refused the request.
    pub fn ping_with(&self, wait: Wait, timeout: Timeout) -> Result<Pong, ClientError> {
        let now = self.clock.now_us();
        let deadline = Deadline::after(now, timeout);
        let polled = match wait {
            Wait::Auto => self.config.poll_threshold_us > 0,
            Wait::Poll => true,
            Wait::Interrupt => false,
        };
        if !self.ping.moves(state::FREE, state::STAGING) {
            return Err(ClientError::Busy);
        }
        self.send_sync();
        if let Err(e) = self.send_status(now as u32, true, polled) {
            self.ping.set(state::FREE);
            return Err(e);
        }
        let done = self.wait_reply(&self.ping, polled, deadline);
        if !done && self.ping.moves(state::SENT, state::FREE) {
            // A ping holds no slot: a late answer is simply not matched.
            bump(&self.counters.timeouts);
            return Err(ClientError::TimedOut);
        }
        let status = self.ping.status.load(Ordering::Relaxed);
        self.ping.set(state::FREE);
        let mask = self.status_to_len(status)? as u32;
        Ok(Pong {
            rtt_us: self.rtt_last.load(Ordering::Relaxed),
            slot_held: mask != 0,
            held_mask: mask,
        })
    }

    /// Push a `STATUS_REQ`; with `ping`, as the ping waiter's request;
    /// with `polled`, asking CPU0 for no doorbell (the caller drains the
    /// reply ring itself).
    fn send_status(&self, now: u32, ping: bool, polled: bool) -> Result<u32, ClientError> {
        let msg = ValidMessage {
            timestamp_us: now,
            status: if polled { REQUEST_FLAG_POLLED } else { 0 },
            ..ValidMessage::new(MessageType::StatusReq, Priority::Normal)
        };
        let mut sender = self.sender.lock();
        let id = sender.next_id();
        if ping {
            self.ping_sent_us.store(now, Ordering::Relaxed);
            self.ping.id.store(id, Ordering::Relaxed);
            self.ping_polled.store(polled, Ordering::Relaxed);
            self.ping_resend.store(false, Ordering::Relaxed);
            self.ping.set(state::SENT);
        }
        match sender.send(msg) {
            Ok(_) => {
                bump_locked(&self.counters.sent);
                Ok(id)
            }
            Err(e) => Err(ClientError::Ipc(e)),
        }
    }

    /// Whether CPU0 may hold any exchange slot (a request unanswered, or
    /// presumed so after a restart).
    pub fn slot_held(&self) -> bool {
        self.held_mask() != 0
    }

    /// The slots CPU0 may hold (bit `i`: slot `i`).
    pub fn held_mask(&self) -> u32 {
        (0..self.region.slot_count())
            .filter(|&k| {
                matches!(
                    self.slots[k].state(),
                    state::SENT | state::ABANDONED | state::PRESUMED
                )
            })
            .fold(0, |mask, k| mask | 1 << k)
    }

    /// CPU0's published service-time estimate for `model`, microseconds.
    pub fn service_time_us(&self, model: ModelHandle) -> Option<u32> {
        self.region.service_time(model.raw()).filter(|&us| us > 0)
    }

    /// Whether a request for `model` waiting as `wait` polls.
    pub fn polls(&self, model: ModelHandle, wait: Wait) -> bool {
        match wait {
            Wait::Poll => true,
            Wait::Interrupt => false,
            Wait::Auto => self
                .service_time_us(model)
                .is_some_and(|us| us <= self.config.poll_threshold_us),
        }
    }

    /// The round-trip statistics this client has published.
    pub fn rtt(&self) -> RttWords {
        RttWords {
            last_us: self.rtt_last.load(Ordering::Relaxed),
            min_us: self.rtt_min.load(Ordering::Relaxed),
            max_us: self.rtt_max.load(Ordering::Relaxed),
            count: self.rtt_count.load(Ordering::Relaxed),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ClientStats {
        let c = &self.counters;
        let get = |a: &AtomicU32| a.load(Ordering::Relaxed);
        ClientStats {
            sent: get(&c.sent),
            delivered: get(&c.delivered),
            discarded: get(&c.discarded),
            pongs: get(&c.pongs),
            timeouts: get(&c.timeouts),
            busy: get(&c.busy),
            unexpected: get(&c.unexpected),
            polled: get(&c.polled),
            reclaimed: get(&c.reclaimed),
            stale: get(&c.stale),
            repairs: get(&c.repairs),
        }
    }

    /// CPU1's maintenance of the shared words it owns: `cpu1_ready` and its
    /// layout version, the head of ring CPU1→CPU0 and the tail of ring
    /// CPU0→CPU1 (the latter only if no caller is draining it now). For
    /// the platform's periodic sweep, from a thread. Returns the words
    /// rewritten (counted in [`ClientStats::repairs`]). Also pushes the
    /// sync request if it is not on the ring yet.
    pub fn maintain(&self) -> u32 {
        self.send_sync();
        let mut repaired = self.region.repair_cpu1_words();
        repaired += u32::from(self.sender.lock().repair());
        if let Some(mut consumer) = self.receiver.try_lock() {
            repaired += u32::from(consumer.repair());
        }
        if repaired > 0 {
            // Ordering: a statistic; CPU1-local memory.
            self.counters.repairs.fetch_add(repaired, Ordering::Relaxed);
        }
        repaired
    }

    fn deadline(&self, timeout: Timeout) -> Deadline {
        match timeout {
            Timeout::Forever => Deadline::Never,
            _ => Deadline::after(self.clock.now_us(), timeout),
        }
    }

    /// The time now and the deadline `timeout` after it: one clock read
    /// for a request's timestamp and its wait.
    fn now_and_deadline(&self, timeout: Timeout) -> (u64, Deadline) {
        let now = self.clock.now_us();
        (now, Deadline::after(now, timeout))
    }

    /// Whether `deadline` has passed.
    fn expired(&self, deadline: Deadline) -> bool {
        match deadline {
            Deadline::Never => false,
            Deadline::At(at) => self.clock.now_us() >= at,
        }
    }

    /// Time left before `deadline` (see [`Deadline::left`]).
    fn remaining(&self, deadline: Deadline) -> Option<Timeout> {
        deadline.left(self.clock.now_us())
    }

    /// Wait until `waiter` leaves SENT or `deadline` passes; returns
    /// whether it did. Polling drains the ring here; sleeping registers
    /// on the waiter's semaphore (every give matched by one take).
    fn wait_reply(&self, waiter: &Waiter<S>, polled: bool, deadline: Deadline) -> bool {
        let done = || waiter.state() != state::SENT;
        if polled {
            let mut pauses = 0u32;
            loop {
                if done() {
                    return true;
                }
                // Look before locking: an empty ring costs two loads. The
                // lock blocks rather than tries: if the dispatch thread
                // holds the ring, this caller sleeps until it has finished
                // delivering instead of spinning above it.
                if self.replies_waiting() && self.dispatch() > 0 && done() {
                    bump(&self.counters.polled);
                    return true;
                }
                (self.config.relax)();
                // The clock every few pauses: a read costs more than a look
                // at the ring, and a deadline needs no finer grain.
                pauses = pauses.wrapping_add(1);
                if pauses % POLL_PAUSES_PER_CLOCK_READ == 0 && self.expired(deadline) {
                    if self.replies_waiting() {
                        self.dispatch();
                    }
                    return done();
                }
            }
        }
        // Ordering: read by the sweep after it sees `sleeping` (SeqCst).
        waiter
            .deadline_ms
            .store(deadline_ms(deadline), Ordering::Relaxed);
        loop {
            // Register before testing, so a notify after the test is not lost.
            waiter.sleeping.store(true, Ordering::SeqCst);
            if done() {
                self.unregister(waiter);
                return true;
            }
            let Some(timeout) = self.remaining(deadline) else {
                self.unregister(waiter);
                return done();
            };
            let timeout = if self.config.swept {
                Timeout::Forever
            } else {
                timeout
            };
            if !waiter.wake.take(timeout) {
                self.unregister(waiter);
                if done() || self.remaining(deadline).is_none() {
                    return done();
                }
            }
        }
    }

    /// Wake every caller sleeping past its deadline (it then times out).
    /// With [`ClientConfig::swept`], the platform calls this periodically
    /// (from a thread, not an ISR).
    pub fn expire_sleepers(&self) {
        let now_ms = micros_to_millis(self.clock.now_us()) as u32;
        for waiter in self.slots.iter().chain(core::iter::once(&self.ping)) {
            // Ordering: SeqCst pairs with the caller's registration.
            if !waiter.sleeping.load(Ordering::SeqCst) {
                continue;
            }
            let at = waiter.deadline_ms.load(Ordering::Relaxed);
            // Wrapping: a deadline up to 24 days ahead reads as ahead.
            if at != NO_DEADLINE && now_ms.wrapping_sub(at) < u32::MAX / 2 {
                waiter.notify();
            }
        }
    }

    fn unregister(&self, waiter: &Waiter<S>) {
        if !waiter.sleeping.swap(false, Ordering::SeqCst) {
            // The dispatch path cleared it first and gives (or gave) once:
            // consume that count so the next wait starts from zero.
            let _ = waiter.wake.take(Timeout::Forever);
        }
    }

    /// Dispatch path: a reply arrived.
    fn handle(&self, msg: &ValidMessage) {
        match msg.msg_type {
            MessageType::InferResp | MessageType::ModelLoad | MessageType::ModelUpdate => {
                self.on_slot_reply(msg)
            }
            MessageType::StatusResp => self.on_status(msg),
            _ => bump_locked(&self.counters.unexpected),
        }
    }

    fn on_slot_reply(&self, msg: &ValidMessage) {
        // A reply that names a slot (CPU0 took the slot: an answer or a
        // runtime error) matches only that slot's waiter, so a reply with
        // another slot's id (a buggy CPU0) cannot hand this caller that
        // slot's output. A refusal names none and matches by id alone
        // (every one is this life's: the sync dropped the others).
        let named = self
            .region
            .slot_at(msg.payload_offset as usize)
            .filter(|&k| k < self.region.slot_count());
        let count = self.region.slot_count();
        let matched = (0..count).find(|&k| {
            let s = &self.slots[k];
            named.is_none_or(|n| n == k)
                && matches!(s.state(), state::SENT | state::ABANDONED)
                && s.id.load(Ordering::Relaxed) == msg.msg_id
        });
        if let Some(k) = matched {
            let slot = &self.slots[k];
            slot.status.store(msg.status, Ordering::Relaxed);
            if slot.moves(state::SENT, state::DONE) {
                bump_locked(&self.counters.delivered);
                slot.notify();
                return;
            }
            if slot.moves(state::ABANDONED, state::FREE) {
                bump_locked(&self.counters.discarded);
                self.notify_free();
                return;
            }
        }
        // A reply naming a presumed slot answers a request from before the
        // sync. CPU0 may be done with the slot, but another request from
        // before may hold it by now: only a status can tell.
        if named.is_some_and(|k| self.slots[k].state() == state::PRESUMED) {
            self.status_owed.store(true, Ordering::Relaxed);
        }
        bump_locked(&self.counters.discarded);
    }

    fn on_status(&self, msg: &ValidMessage) {
        bump_locked(&self.counters.pongs);
        // The barrier first, the ping's caller after: a caller woken by its
        // pong finds every slot the mask proved free already free.
        if msg.status >= 0 {
            self.apply_barrier(msg);
        }
        if self.ping.state() == state::SENT && self.ping.id.load(Ordering::Relaxed) == msg.msg_id {
            self.fold_rtt();
            self.ping.status.store(msg.status, Ordering::Relaxed);
            if self.ping.moves(state::SENT, state::DONE) {
                self.ping.notify();
            }
        }
    }

    /// A slot just entered ABANDONED: the next status scans the slots.
    fn mark_unsettled(&self) {
        // Ordering: a read-modify-write, so the scan's swap that reads this
        // value (or a later one: every write of the flag is an RMW, which
        // continues this release sequence) sees the slot's new state.
        self.unsettled.swap(true, Ordering::AcqRel);
    }

    /// Free the slots a `STATUS_RESP` mask proves CPU0 done with.
    fn apply_barrier(&self, msg: &ValidMessage) {
        // The common case, no slot abandoned or presumed: one load, no scan.
        // Ordering: a flag set after this load is for a later status (the
        // slot was abandoned after this one was answered, or its status
        // request was sent after the set and is answered after this).
        if !self.unsettled.load(Ordering::Relaxed) || !self.unsettled.swap(false, Ordering::AcqRel)
        {
            return;
        }
        let mut left = false;
        // The mask is a barrier for every slot request sent before this
        // ping. Every status is this life's (replies before the sync were
        // dropped), so it was sent after every request of a previous life.
        for k in 0..self.region.slot_count() {
            let slot = &self.slots[k];
            let (from, after) = match slot.state() {
                state::ABANDONED => (
                    state::ABANDONED,
                    is_after(msg.msg_id, slot.id.load(Ordering::Relaxed)),
                ),
                state::PRESUMED => (state::PRESUMED, true),
                _ => continue,
            };
            if !mask_holds(msg.status, k) && after && slot.moves(from, state::FREE) {
                bump_locked(&self.counters.reclaimed);
                self.notify_free();
            } else {
                left = true;
            }
        }
        if left {
            self.mark_unsettled();
        }
    }

    /// Dispatch path: fold the answered ping's round trip into the statistics.
    fn fold_rtt(&self) {
        let rtt =
            (self.clock.now_us() as u32).wrapping_sub(self.ping_sent_us.load(Ordering::Relaxed));
        // Only the dispatch path writes the statistics, under the receiver lock.
        let count = self.rtt_count.load(Ordering::Relaxed).wrapping_add(1);
        let min = self.rtt_min.load(Ordering::Relaxed);
        let max = self.rtt_max.load(Ordering::Relaxed);
        let words = RttWords {
            last_us: rtt,
            min_us: if count == 1 { rtt } else { min.min(rtt) },
            max_us: max.max(rtt),
            count,
        };
        self.rtt_last.store(words.last_us, Ordering::Relaxed);
        self.rtt_min.store(words.min_us, Ordering::Relaxed);
        self.rtt_max.store(words.max_us, Ordering::Relaxed);
        self.rtt_count.store(words.count, Ordering::Relaxed);
        self.region.publish_rtt(words);
    }

    /// A reply status as a length, or the error it carries.
    fn status_to_len(&self, status: i32) -> Result<usize, ClientError> {
        if status >= 0 {
            return Ok(status as usize);
        }
        match Errno::from_code(status) {
            Some(errno) => Err(ClientError::Remote(errno)),
            None => Err(ClientError::Protocol { status }),
        }
    }
}

/// A caller holding one exchange slot: stage a tensor, then make one slot
/// request. Dropping an unused session frees the slot.
pub struct Session<'c, 'r, const N: usize, D, S, C, L, Q>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Sender<'r, N, D>>,
    Q: LocalLock<Consumer<'r, N>>,
{
    client: &'c Client<'r, N, D, S, C, L, Q>,
    slot: usize,
    exchange: Exchange<'r>,
}

impl<'r, const N: usize, D, S, C, L, Q> Session<'_, 'r, N, D, S, C, L, Q>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Sender<'r, N, D>>,
    Q: LocalLock<Consumer<'r, N>>,
{
    /// The slot's index (0: the frame slot).
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The slot's input, in shared SRAM: render the tensor here, in place,
    /// then call [`infer`](Self::infer).
    pub fn infer_input(&mut self) -> &mut [u8] {
        // SAFETY: the session moved the slot FREE → STAGING, so only this
        // caller may write it and CPU0 has no request naming it; the slice
        // borrows `self` mutably, so it is the only one and ends before
        // `infer` hands the slot to CPU0.
        unsafe { self.exchange.input_mut() }
    }

    /// Run `model` on the first `input_len` bytes of the staged input with
    /// `priority`, wait up to `timeout` ([`Wait::Auto`]) for the reply, copy
    /// the output into `output` and return its length.
    ///
    /// # Errors
    ///
    /// As [`infer_with`](Self::infer_with).
    pub fn infer(
        self,
        model: ModelHandle,
        input_len: usize,
        output: &mut [u8],
        priority: Priority,
        timeout: Timeout,
    ) -> Result<usize, ClientError> {
        self.infer_with(model, input_len, output, priority, Wait::Auto, timeout)
    }

    /// As [`infer`](Self::infer), waiting as `wait` says.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for `input_len` 0 or over the slot;
    /// [`ClientError::Ipc`] when the ring is full; [`ClientError::TimedOut`]
    /// (the slot then stays CPU0's until its late reply);
    /// [`ClientError::Remote`] with CPU0's errno;
    /// [`ClientError::OutputTooSmall`].
    pub fn infer_with(
        self,
        model: ModelHandle,
        input_len: usize,
        output: &mut [u8],
        priority: Priority,
        wait: Wait,
        timeout: Timeout,
    ) -> Result<usize, ClientError> {
        self.infer_then(model, input_len, priority, wait, timeout, |result| {
            if result.len() > output.len() {
                return Err(ClientError::OutputTooSmall {
                    needed: result.len(),
                    actual: output.len(),
                });
            }
            output[..result.len()].copy_from_slice(result);
            Ok(result.len())
        })?
    }

    /// As [`infer_with`](Self::infer_with), but the output is read where
    /// CPU0 wrote it, in the slot: `read` gets it (zero copy out) before
    /// the slot is freed, and its value is returned.
    ///
    /// # Errors
    ///
    /// As [`infer_with`](Self::infer_with), except `OutputTooSmall`.
    pub fn infer_then<R>(
        mut self,
        model: ModelHandle,
        input_len: usize,
        priority: Priority,
        wait: Wait,
        timeout: Timeout,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, ClientError> {
        let payload_len = protocol::infer_payload_len(input_len, self.exchange.input_capacity())
            .filter(|_| input_len > 0)
            .ok_or(ClientError::InvalidArgument)?;
        let client = self.client;
        let (now, deadline) = client.now_and_deadline(timeout);
        let polled = client.polls(model, wait);
        self.exchange.set_request(model.raw(), input_len as u32);
        let status = self.request(
            MessageType::InferReq,
            priority,
            payload_len,
            polled,
            now,
            deadline,
        )?;
        let len = client.status_to_len(status)?;
        if len > self.exchange.output_capacity() {
            return Err(ClientError::Protocol { status });
        }
        // SAFETY: the reply moved the slot SENT → DONE: CPU0 handed it back,
        // and only this caller frees it (on drop, after `read` returns).
        let result = unsafe { self.exchange.output() };
        Ok(read(&result[..len]))
    }

    /// Resolve `name` to a model handle on CPU0 (`MODEL_LOAD`).
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for an empty name, one over 31
    /// bytes, or one containing NUL; [`ClientError::Remote`] with
    /// `Errno::NoEnt` for an unknown (or unexported) model;
    /// [`ClientError::TimedOut`]; [`ClientError::Ipc`].
    pub fn model_lookup(self, name: &str, timeout: Timeout) -> Result<ModelHandle, ClientError> {
        let deadline = self.client.deadline(timeout);
        self.lookup_until(name, deadline, Wait::Interrupt)
    }

    fn lookup_until(
        mut self,
        name: &str,
        deadline: Deadline,
        wait: Wait,
    ) -> Result<ModelHandle, ClientError> {
        let mut field = [0u8; MODEL_NAME_SIZE];
        name_field(name, &mut field)?;
        self.exchange.set_model_name(&field);
        let polled = wait == Wait::Poll;
        let now = self.client.clock.now_us();
        let status = self.request(
            MessageType::ModelLoad,
            Priority::Normal,
            protocol::LOOKUP_PAYLOAD_LEN,
            polled,
            now,
            deadline,
        )?;
        match self.client.status_to_len(status)? {
            0 => Err(ClientError::Protocol { status }),
            raw => Ok(ModelHandle::from_raw(raw as u32)),
        }
    }

    /// Hand the slot to CPU0 with a request stamped `now_us` and wait for
    /// the reply's status.
    fn request(
        &mut self,
        msg_type: MessageType,
        priority: Priority,
        payload_len: u16,
        polled: bool,
        now_us: u64,
        deadline: Deadline,
    ) -> Result<i32, ClientError> {
        let client = self.client;
        let waiter = &client.slots[self.slot];
        let msg = ValidMessage {
            payload_offset: self.exchange.offset() as u32,
            payload_len,
            timestamp_us: now_us as u32,
            status: if polled { REQUEST_FLAG_POLLED } else { 0 },
            ..ValidMessage::new(msg_type, priority)
        };
        {
            let mut sender = client.sender.lock();
            let id = sender.next_id();
            // Ordering: CPU1-local; the push's Release orders them (and the
            // slot contents) before CPU0 can see the request.
            waiter.id.store(id, Ordering::Relaxed);
            waiter.set(state::SENT);
            if let Err(e) = sender.send(msg) {
                waiter.set(state::STAGING);
                return Err(ClientError::Ipc(e));
            }
            bump_locked(&client.counters.sent);
        }
        if !client.wait_reply(waiter, polled, deadline)
            && waiter.moves(state::SENT, state::ABANDONED)
        {
            client.mark_unsettled();
            bump(&client.counters.timeouts);
            return Err(ClientError::TimedOut);
        }
        // Ordering: the Acquire of the DONE state pairs with the dispatch
        // path's AcqRel transition, after which the status was written.
        Ok(waiter.status.load(Ordering::Relaxed))
    }
}

impl<'r, const N: usize, D, S, C, L, Q> Drop for Session<'_, 'r, N, D, S, C, L, Q>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Sender<'r, N, D>>,
    Q: LocalLock<Consumer<'r, N>>,
{
    fn drop(&mut self) {
        let slot = &self.client.slots[self.slot];
        // STAGING (never sent, or the push failed) or DONE (reply read):
        // ours to free. ABANDONED stays until CPU0 is proven done.
        if slot.moves(state::STAGING, state::FREE) || slot.moves(state::DONE, state::FREE) {
            self.client.notify_free();
        }
    }
}
