//! The CPU1 client: inference on CPU0 as a blocking call, resolve a model by
//! name, stage a tensor in place, submit it with a priority class, wait with
//! a timeout, get a length or an error.
//!
//! ```text
//! let mut session = client.session(Timeout::Millis(100))?;   // EBUSY if CPU0 still holds the slot
//! render(&mut session.infer_input()[..len]);                 // in shared SRAM, no private copy
//! let n = session.infer(model, len, &mut out, Priority::RealTime, Timeout::Millis(50))?;
//! ```
//!
//! # Invariants
//!
//! * **Callers are serialised** by a local lock the platform supplies
//!   ([`LocalLock`]; `std::sync::Mutex` on the host, a kernel mutex on
//!   Zephyr). A [`Session`] holds it; the lock also owns the [`Sender`].
//! * **The slot cannot be restaged while CPU0 may still read it.** The
//!   client records, in `slot_owner`, the id of the last request that handed
//!   the exchange slot to CPU0, and only the reply that hands it back clears
//!   it. [`Client::session`] (the only way to reach
//!   [`Session::infer_input`]) waits, within the caller's timeout, until the
//!   slot is back, and fails with [`ClientError::Busy`] otherwise. So after
//!   a timeout the slot stays CPU0's until the late reply for that `msg_id`
//!   arrives (the reply is then discarded), or until CPU0 answers a
//!   `STATUS_REQ` sent after that request with "slot free" (the request was
//!   dropped, or CPU1 restarted and cannot know). See
//!   [`crate::protocol`] for why both proofs hold.
//! * **A late reply is never delivered to the next caller.** The waiter
//!   registers the `msg_id` it waits for; the dispatch thread delivers a
//!   reply only when its id is the registered one, claiming it with one
//!   compare-and-swap that the timing-out caller races with the same CAS, so
//!   each reply is either delivered to its own caller or discarded and
//!   counted ([`ClientStats::discarded`]), never both, never neither.
//! * **Ids survive a restart.** [`Client::attach`] numbers messages from the
//!   live head of the outgoing ring, so a pre-restart reply cannot carry a
//!   new request's id, and it starts with the slot presumed held by the
//!   last id the previous life may have used.
//! * **No floating point**, no heap; the local atomics (CPU1's own RAM) are
//!   the only read-modify-write, never on the shared region.
//! * Round trips: [`Client::ping`] stamps a `STATUS_REQ` with the clock;
//!   the dispatch thread folds each answered ping into last/min/max/count
//!   and publishes them in the control block's RTT words (CPU1 has no
//!   console; CPU0's shell reads them).

use core::marker::PhantomData;
use core::ops::DerefMut;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use synaptic_abi::{
    Errno, MessageType, Priority, ValidMessage, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_SIZE,
    MODEL_NAME_SIZE,
};
use synaptic_ipc::{Dispatcher, Doorbell, Handler, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::Producer;
use synaptic_runtime::registry::ModelHandle;
use synaptic_runtime::time::Clock;

use crate::protocol::{self, first_id_after_restart, is_after, STATUS_SLOT_FREE, STATUS_SLOT_HELD};
use crate::region::{Exchange, RttWords, SharedRegion};

/// A mutual-exclusion lock for the client's callers, supplied by the
/// platform (`std::sync::Mutex` with feature `std`).
pub trait LocalLock<T> {
    /// Proof of holding the lock; dropping it unlocks.
    type Guard<'g>: DerefMut<Target = T>
    where
        Self: 'g;

    /// A lock around `value`.
    fn new(value: T) -> Self;

    /// Block until the lock is held.
    fn lock(&self) -> Self::Guard<'_>;
}

/// What the local lock protects: the sending side of CPU1.
pub struct Caller<'r, const N: usize, D: Doorbell> {
    sender: Sender<'r, N, D>,
}

/// Why a client call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientError {
    /// No reply within the timeout (`-ETIMEDOUT`). For a slot request, the
    /// slot stays CPU0's until the late reply frees it.
    TimedOut,
    /// CPU0 still holds the exchange slot for an earlier request that has
    /// not been answered (`-EBUSY`).
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

/// What the client has done so far (CPU1-local counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Messages pushed to CPU0.
    pub sent: u32,
    /// Replies delivered to the caller that waited for them.
    pub delivered: u32,
    /// Slot replies (`INFER_RESP`, `MODEL_LOAD`) nobody waited for any more:
    /// late replies to timed-out or pre-restart requests, discarded.
    pub discarded: u32,
    /// `STATUS_RESP`s received (delivered or used only as a barrier).
    pub pongs: u32,
    /// Calls that timed out waiting for a reply.
    pub timeouts: u32,
    /// Sessions refused because CPU0 kept the slot.
    pub busy: u32,
    /// Messages of a type the client does not expect, dropped.
    pub unexpected: u32,
}

/// The answer to [`Client::ping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pong {
    /// This round trip, microseconds.
    pub rtt_us: u32,
    /// Whether CPU0 reported the exchange slot held.
    pub slot_held: bool,
}

/// `slot_owner` value: CPU1 owns the slot.
const SLOT_FREE: u32 = 0;

#[derive(Clone, Copy, Debug)]
enum Deadline {
    Never,
    At(u64),
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
}

fn bump(counter: &AtomicU32) {
    // Ordering: a statistic; CPU1-local memory, where an RMW is fine.
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The CPU1 side of the inference service.
///
/// `N`: ring entries; `D`: the doorbell to CPU0; `S`: a semaphore the
/// dispatch thread gives to wake a waiting caller; `C`: a microsecond clock
/// (timeouts and round trips); `L`: the local lock around the [`Caller`].
///
/// Register it with CPU1's dispatcher ([`Client::register`]) so that the
/// dispatch thread hands it `INFER_RESP`, `MODEL_LOAD` and `STATUS_RESP`.
pub struct Client<'r, const N: usize, D, S, C, L> {
    caller: L,
    region: SharedRegion<'r, N>,
    exchange: Exchange<'r>,
    wake: S,
    clock: C,
    /// A caller is (about to be) blocked on `wake`; the dispatch thread
    /// clears it and gives `wake` exactly once per clear.
    waiter: AtomicBool,
    /// Id of the request that handed the slot to CPU0, or `SLOT_FREE`.
    /// Set (from free) only by a lock holder, cleared only by the dispatch
    /// thread.
    slot_owner: AtomicU32,
    /// Id whose reply a caller waits for (0: none); claimed by CAS.
    expect: AtomicU32,
    /// Id and status of the last delivered reply.
    reply_id: AtomicU32,
    reply_status: AtomicI32,
    /// The newest ping in flight and its send time (low 32 bits, µs).
    ping_id: AtomicU32,
    ping_sent_us: AtomicU32,
    /// Round-trip statistics, written by the dispatch thread only.
    rtt_last: AtomicU32,
    rtt_min: AtomicU32,
    rtt_max: AtomicU32,
    rtt_count: AtomicU32,
    counters: Counters,
    doorbell: PhantomData<fn() -> D>,
}

impl<'r, const N: usize, D, S, C, L> Client<'r, N, D, S, C, L>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Caller<'r, N, D>>,
{
    /// The client of a CPU1 (re)starting on `region`: `producer` is attached
    /// to the ring CPU1→CPU0 with its live indices, `doorbell` rings CPU0,
    /// `wake` is a fresh semaphore with no count.
    ///
    /// Message ids continue from the ring's live head
    /// ([`protocol::first_id_after_restart`]). If anything was ever sent on
    /// the ring, the slot is presumed held by the previous life's last id
    /// until a reply proves otherwise (the first [`session`](Self::session)
    /// asks CPU0). The round-trip words are reset.
    pub fn attach(
        region: &SharedRegion<'r, N>,
        producer: Producer<'r, N>,
        doorbell: D,
        wake: S,
        clock: C,
    ) -> Self {
        let head = producer.head();
        let sender = Sender::with_next_id(producer, doorbell, first_id_after_restart(head));
        region.publish_rtt(RttWords::default());
        Client {
            caller: L::new(Caller { sender }),
            region: *region,
            exchange: region.exchange(),
            wake,
            clock,
            waiter: AtomicBool::new(false),
            slot_owner: AtomicU32::new(if head == 0 { SLOT_FREE } else { head }),
            expect: AtomicU32::new(0),
            reply_id: AtomicU32::new(0),
            reply_status: AtomicI32::new(0),
            ping_id: AtomicU32::new(0),
            ping_sent_us: AtomicU32::new(0),
            rtt_last: AtomicU32::new(0),
            rtt_min: AtomicU32::new(0),
            rtt_max: AtomicU32::new(0),
            rtt_count: AtomicU32::new(0),
            counters: Counters::default(),
            doorbell: PhantomData,
        }
    }

    /// Route CPU1's `INFER_RESP`, `MODEL_LOAD` and `STATUS_RESP` messages
    /// to this client.
    ///
    /// # Errors
    ///
    /// [`IpcError::AlreadyRegistered`] if one of those types has a handler.
    pub fn register<'d, Sem: Semaphore, const Q: usize>(
        &'d self,
        dispatcher: &mut Dispatcher<'d, N, Sem, Q>,
    ) -> Result<(), IpcError>
    where
        Self: Sync,
    {
        for t in [
            MessageType::InferResp,
            MessageType::ModelLoad,
            MessageType::StatusResp,
        ] {
            dispatcher.register(t, self)?;
        }
        Ok(())
    }

    /// Take the local lock and wait (within `timeout`) until CPU1 owns the
    /// exchange slot.
    ///
    /// # Errors
    ///
    /// [`ClientError::Busy`] when CPU0 still holds the slot for an earlier
    /// request when the timeout expires.
    pub fn session(&self, timeout: Timeout) -> Result<Session<'_, 'r, N, D, S, C, L>, ClientError> {
        self.session_until(self.deadline(timeout))
    }

    fn session_until(
        &self,
        deadline: Deadline,
    ) -> Result<Session<'_, 'r, N, D, S, C, L>, ClientError> {
        let mut caller = self.caller.lock();
        if self.slot_owner.load(Ordering::Acquire) != SLOT_FREE {
            // CPU0 may still be reading the slot for an earlier request. A
            // STATUS_REQ sent now queues behind that request; its answer
            // proves whether CPU0 is done (the late reply itself does too).
            let _ = self.send_ping(&mut caller, false);
            let free = self.wait_until(deadline, || {
                self.slot_owner.load(Ordering::Acquire) == SLOT_FREE
            });
            if !free {
                bump(&self.counters.busy);
                return Err(ClientError::Busy);
            }
        }
        Ok(Session {
            client: self,
            caller,
        })
    }

    /// Resolve a model by name on CPU0 (takes a session for the call).
    ///
    /// # Errors
    ///
    /// As [`Session::model_lookup`], and [`ClientError::Busy`] from
    /// [`session`](Self::session).
    pub fn model_lookup(&self, name: &str, timeout: Timeout) -> Result<ModelHandle, ClientError> {
        let deadline = self.deadline(timeout);
        self.session_until(deadline)?.lookup_until(name, deadline)
    }

    /// Measure one round trip with a `STATUS_REQ` (the slot is not needed).
    ///
    /// # Errors
    ///
    /// [`ClientError::Ipc`] when the ring is full; [`ClientError::TimedOut`];
    /// [`ClientError::Remote`] if CPU0 refused the request.
    pub fn ping(&self, timeout: Timeout) -> Result<Pong, ClientError> {
        let deadline = self.deadline(timeout);
        let mut caller = self.caller.lock();
        let id = self.send_ping(&mut caller, true)?;
        let status = self.await_reply(id, deadline)?;
        self.status_to_len(status)?;
        Ok(Pong {
            rtt_us: self.rtt_last.load(Ordering::Relaxed),
            slot_held: status == STATUS_SLOT_HELD,
        })
    }

    /// Whether CPU0 may hold the exchange slot (a request unanswered).
    pub fn slot_held(&self) -> bool {
        self.slot_owner.load(Ordering::Acquire) != SLOT_FREE
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
        }
    }

    fn deadline(&self, timeout: Timeout) -> Deadline {
        match timeout {
            Timeout::Forever => Deadline::Never,
            Timeout::NoWait => Deadline::At(self.clock.now_us()),
            Timeout::Millis(ms) => {
                Deadline::At(self.clock.now_us().saturating_add(u64::from(ms) * 1000))
            }
        }
    }

    /// Time left before `deadline`, rounded up to whole milliseconds;
    /// `None` once it has passed.
    fn remaining(&self, deadline: Deadline) -> Option<Timeout> {
        match deadline {
            Deadline::Never => Some(Timeout::Forever),
            Deadline::At(at) => {
                let now = self.clock.now_us();
                if now >= at {
                    return None;
                }
                let ms = (at - now).div_ceil(1000);
                Some(Timeout::Millis(u32::try_from(ms).unwrap_or(u32::MAX)))
            }
        }
    }

    /// Block until `done()` holds or `deadline` passes; returns `done()`'s
    /// last value. Every give of `wake` is matched by one take here (see
    /// `notify`), so the semaphore is back at zero when this returns.
    fn wait_until(&self, deadline: Deadline, done: impl Fn() -> bool) -> bool {
        loop {
            // Register before testing, so a notify after the test is not lost.
            self.waiter.store(true, Ordering::SeqCst);
            if done() {
                self.unregister();
                return true;
            }
            let Some(timeout) = self.remaining(deadline) else {
                self.unregister();
                return done();
            };
            if !self.wake.take(timeout) {
                self.unregister();
                if done() || self.remaining(deadline).is_none() {
                    return done();
                }
            }
            // Woken (the dispatch thread cleared `waiter`): test again.
        }
    }

    fn unregister(&self) {
        if !self.waiter.swap(false, Ordering::SeqCst) {
            // The dispatch thread cleared it first and gives (or gave) once:
            // consume that count so the next wait starts from zero.
            let _ = self.wake.take(Timeout::Forever);
        }
    }

    /// Wake the caller blocked in `wait_until`, if any (dispatch thread).
    fn notify(&self) {
        if self.waiter.swap(false, Ordering::SeqCst) {
            self.wake.give();
        }
    }

    /// Wait for the reply to `id`; on timeout, withdraw the registration so
    /// a late reply is discarded, unless the dispatch thread already
    /// claimed it (then it is ours, and written in a moment).
    fn await_reply(&self, id: u32, deadline: Deadline) -> Result<i32, ClientError> {
        let arrived = |client: &Self| client.reply_id.load(Ordering::Acquire) == id;
        if !self.wait_until(deadline, || arrived(self)) {
            let withdrawn = self
                .expect
                .compare_exchange(id, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            if withdrawn {
                bump(&self.counters.timeouts);
                return Err(ClientError::TimedOut);
            }
            self.wait_until(Deadline::Never, || arrived(self));
        }
        // Ordering: the Acquire load of `reply_id` above pairs with its
        // Release store, after which `reply_status` was written before.
        Ok(self.reply_status.load(Ordering::Relaxed))
    }

    fn send_ping(&self, caller: &mut Caller<'r, N, D>, expect: bool) -> Result<u32, ClientError> {
        let id = caller.sender.next_id();
        let now = self.clock.now_us() as u32;
        self.ping_sent_us.store(now, Ordering::Relaxed);
        self.ping_id.store(id, Ordering::Release);
        if expect {
            self.expect.store(id, Ordering::Release);
        }
        let msg = ValidMessage {
            timestamp_us: now,
            ..ValidMessage::new(MessageType::StatusReq, Priority::Normal)
        };
        match caller.sender.send(msg) {
            Ok(_) => {
                bump(&self.counters.sent);
                Ok(id)
            }
            Err(e) => {
                self.ping_id.store(0, Ordering::Release);
                if expect {
                    self.expect.store(0, Ordering::Release);
                }
                Err(ClientError::Ipc(e))
            }
        }
    }

    /// Dispatch thread: a reply naming the slot arrived. Any slot reply not
    /// after the current owner's id hands the slot back (only one slot
    /// request is ever outstanding).
    fn release_on_reply(&self, id: u32) {
        let owner = self.slot_owner.load(Ordering::Acquire);
        if owner != SLOT_FREE && !is_after(id, owner) {
            // Ordering: Release pairs with the Acquire load in `session`, so
            // CPU0's output (visible to this thread through the ring's
            // Acquire) is visible to the caller that next owns the slot.
            let _ = self.slot_owner.compare_exchange(
                owner,
                SLOT_FREE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// Dispatch thread: CPU0 reported the slot free in answer to a ping; it
    /// proves the owner done if the ping was sent after the owner's request.
    fn release_on_barrier(&self, id: u32) {
        let owner = self.slot_owner.load(Ordering::Acquire);
        if owner != SLOT_FREE && is_after(id, owner) {
            let _ = self.slot_owner.compare_exchange(
                owner,
                SLOT_FREE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// Dispatch thread: fold the round trip of ping `id` into the statistics.
    fn fold_rtt(&self, id: u32) {
        let ours = self
            .ping_id
            .compare_exchange(id, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !ours || id == 0 {
            return;
        }
        let rtt =
            (self.clock.now_us() as u32).wrapping_sub(self.ping_sent_us.load(Ordering::Relaxed));
        // Only this thread writes the statistics: plain load/store suffices.
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

    /// Dispatch thread: hand the reply to its waiting caller if its id is
    /// the one registered; returns whether it was delivered.
    fn deliver(&self, msg: &ValidMessage) -> bool {
        if msg.msg_id == 0 {
            return false;
        }
        let claimed = self
            .expect
            .compare_exchange(msg.msg_id, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if claimed {
            self.reply_status.store(msg.status, Ordering::Relaxed);
            // Ordering: pairs with the Acquire load in `await_reply`; the
            // status (and the slot release before it) are visible first.
            self.reply_id.store(msg.msg_id, Ordering::Release);
            bump(&self.counters.delivered);
        }
        claimed
    }
}

impl<'r, const N: usize, D, S, C, L> Handler for Client<'r, N, D, S, C, L>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Caller<'r, N, D>>,
{
    /// Runs on CPU1's dispatch thread for each reply from CPU0.
    fn handle(&self, msg: &ValidMessage) {
        match msg.msg_type {
            MessageType::InferResp | MessageType::ModelLoad => {
                self.release_on_reply(msg.msg_id);
                if !self.deliver(msg) {
                    bump(&self.counters.discarded);
                }
            }
            MessageType::StatusResp => {
                bump(&self.counters.pongs);
                self.fold_rtt(msg.msg_id);
                if msg.status == STATUS_SLOT_FREE {
                    self.release_on_barrier(msg.msg_id);
                }
                self.deliver(msg);
            }
            _ => {
                bump(&self.counters.unexpected);
                return;
            }
        }
        self.notify();
    }
}

/// A caller holding the local lock and the exchange slot: stage a tensor,
/// then make one slot request.
pub struct Session<'c, 'r, const N: usize, D, S, C, L>
where
    D: Doorbell,
    L: LocalLock<Caller<'r, N, D>> + 'c,
{
    client: &'c Client<'r, N, D, S, C, L>,
    caller: L::Guard<'c>,
}

impl<'r, const N: usize, D, S, C, L> Session<'_, 'r, N, D, S, C, L>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Caller<'r, N, D>>,
{
    /// The exchange slot's input, 27,648 bytes of shared SRAM: render the
    /// tensor here, in place, then call [`infer`](Self::infer).
    pub fn infer_input(&mut self) -> &mut [u8] {
        // SAFETY: a session exists only while this caller holds the lock
        // and CPU1 owns the slot (`session_until` saw `slot_owner` free,
        // and only a lock holder can make it held again); the slice borrows
        // `self` mutably, so it is the only one and ends before `infer`
        // hands the slot to CPU0.
        unsafe { self.client.exchange.input_mut() }
    }

    /// Run `model` on the first `input_len` bytes of the staged input with
    /// `priority`, wait up to `timeout` for the reply, copy the output into
    /// `output` and return its length.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidArgument`] for `input_len` 0 or over 27,648;
    /// [`ClientError::Ipc`] when the ring is full; [`ClientError::TimedOut`]
    /// (the slot then stays CPU0's until its late reply);
    /// [`ClientError::Remote`] with CPU0's errno;
    /// [`ClientError::OutputTooSmall`].
    pub fn infer(
        mut self,
        model: ModelHandle,
        input_len: usize,
        output: &mut [u8],
        priority: Priority,
        timeout: Timeout,
    ) -> Result<usize, ClientError> {
        let payload_len = protocol::infer_payload_len(input_len)
            .filter(|_| input_len > 0)
            .ok_or(ClientError::InvalidArgument)?;
        let client = self.client;
        client.exchange.set_request(model.raw(), input_len as u32);
        let deadline = client.deadline(timeout);
        let id = self.send_slot_request(MessageType::InferReq, priority, payload_len)?;
        let status = client.await_reply(id, deadline)?;
        let len = client.status_to_len(status)?;
        if len > EXCHANGE_OUTPUT_SIZE || client.slot_held() {
            return Err(ClientError::Protocol { status });
        }
        if len > output.len() {
            return Err(ClientError::OutputTooSmall {
                needed: len,
                actual: output.len(),
            });
        }
        // SAFETY: the reply handed the slot back (the dispatch thread freed
        // it before delivering, checked above) and this caller still holds
        // the lock, so nobody can hand it to CPU0 again while we read.
        let source = unsafe { client.exchange.output() };
        output[..len].copy_from_slice(&source[..len]);
        Ok(len)
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
        self.lookup_until(name, deadline)
    }

    fn lookup_until(mut self, name: &str, deadline: Deadline) -> Result<ModelHandle, ClientError> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= MODEL_NAME_SIZE || bytes.contains(&0) {
            return Err(ClientError::InvalidArgument);
        }
        let mut field = [0u8; MODEL_NAME_SIZE];
        field[..bytes.len()].copy_from_slice(bytes);
        let client = self.client;
        client.exchange.set_model_name(&field);
        let id = self.send_slot_request(
            MessageType::ModelLoad,
            Priority::Normal,
            protocol::LOOKUP_PAYLOAD_LEN,
        )?;
        let status = client.await_reply(id, deadline)?;
        match client.status_to_len(status)? {
            0 => Err(ClientError::Protocol { status }),
            raw => Ok(ModelHandle::from_raw(raw as u32)),
        }
    }

    /// Hand the slot to CPU0 with a request: record the owner and the
    /// awaited id before the push (the reply can only follow it).
    fn send_slot_request(
        &mut self,
        msg_type: MessageType,
        priority: Priority,
        payload_len: u16,
    ) -> Result<u32, ClientError> {
        let client = self.client;
        let sender = &mut self.caller.sender;
        let id = sender.next_id();
        // Ordering: both are CPU1-local; the push's Release orders them (and
        // the slot contents) before CPU0 can see the request.
        client.slot_owner.store(id, Ordering::Release);
        client.expect.store(id, Ordering::Release);
        let msg = ValidMessage {
            payload_offset: client.region.exchange_offset() as u32,
            payload_len,
            timestamp_us: client.clock.now_us() as u32,
            ..ValidMessage::new(msg_type, priority)
        };
        match sender.send(msg) {
            Ok(sent) => {
                debug_assert_eq!(sent, id);
                bump(&client.counters.sent);
                Ok(id)
            }
            Err(e) => {
                client.expect.store(0, Ordering::Release);
                client.slot_owner.store(SLOT_FREE, Ordering::Release);
                Err(ClientError::Ipc(e))
            }
        }
    }
}

impl<'r, const N: usize, D, S, C, L> Client<'r, N, D, S, C, L>
where
    D: Doorbell,
    S: Semaphore,
    C: Clock,
    L: LocalLock<Caller<'r, N, D>>,
{
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

const _: () = assert!(EXCHANGE_INPUT_SIZE <= u32::MAX as usize);
