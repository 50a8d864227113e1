//! Cross-core dispatch over the synaptic rings: one consumer per core,
//! per-type handlers, a bounded receive queue, message ids and doorbells.
//!
//! Each core has one [`Sender`] (the producer of its outgoing ring, plus the
//! doorbell to the peer) and one [`Dispatcher`] (the single consumer of its
//! incoming ring). The dispatcher pops, decodes (`TryFrom`, so a malformed
//! message is counted and dropped, never acted on), and routes: to the
//! [`Handler`] registered for the message type, or else into the bounded
//! [`Inbox`] that application threads drain with [`Inbox::receive`].
//!
//! # Invariants
//!
//! * No heap: the handler table is a fixed array indexed by message type and
//!   the inbox is a `heapless` queue of `Q` entries.
//! * **Handlers run in thread context, on the dispatch thread, never in an
//!   ISR.** The doorbell ISR only gives the dispatch semaphore
//!   ([`Semaphore::give`]); the dispatch thread wakes in
//!   [`Dispatcher::wait_and_dispatch`] and calls the handlers. A handler may
//!   therefore block briefly, but every message behind it waits meanwhile:
//!   hand long work to another thread.
//! * Message ids are assigned by [`Sender::send`]: nonzero, increasing by one
//!   per *successful* send, wrapping past `u32::MAX` to 1 (0 is never used,
//!   so it can mean "no id"). Responses keep their request's id
//!   ([`Sender::reply`]).
//! * Doorbells may coalesce: one wake-up drains the ring completely, and a
//!   timed-out wait still polls the ring, so a lost doorbell costs one
//!   timeout, not a message.
//! * When the inbox is full, the newest unhandled message is dropped and
//!   counted ([`DispatchStats::inbox_full`]); the ring keeps flowing so
//!   handled types are not blocked behind an unread inbox.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

#[cfg(feature = "std")]
pub mod host;
pub mod platform;

use core::sync::atomic::{AtomicU32, Ordering};

use heapless::mpmc::MpMcQueue;
use synaptic_abi::{Errno, Message, MessageType, ValidMessage, MSG_TYPE_COUNT};
use synaptic_ring::{Consumer, Producer, RingError};

pub use platform::{Doorbell, Semaphore, Timeout};

/// What went wrong in the dispatch layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IpcError {
    /// The outgoing ring is full (`-EAGAIN`).
    Full,
    /// The peer corrupted a ring index (`-EBADMSG`).
    Corrupt,
    /// Nothing arrived in time (`-ETIMEDOUT`).
    TimedOut,
    /// A handler is already registered for this type (`-EEXIST`).
    AlreadyRegistered,
}

impl IpcError {
    /// The errno at the C boundary.
    pub const fn errno(self) -> Errno {
        match self {
            IpcError::Full => Errno::Again,
            IpcError::Corrupt => Errno::BadMsg,
            IpcError::TimedOut => Errno::TimedOut,
            IpcError::AlreadyRegistered => Errno::Exist,
        }
    }
}

impl From<RingError> for IpcError {
    fn from(e: RingError) -> Self {
        match e {
            RingError::Full => IpcError::Full,
            _ => IpcError::Corrupt,
        }
    }
}

impl From<IpcError> for Errno {
    fn from(e: IpcError) -> Errno {
        e.errno()
    }
}

/// Something that handles one message type on the dispatch thread.
///
/// Runs in thread context (never in an ISR), on the dispatch thread.
pub trait Handler {
    /// Handle one decoded message.
    fn handle(&self, msg: &ValidMessage);
}

impl<F: Fn(&ValidMessage)> Handler for F {
    fn handle(&self, msg: &ValidMessage) {
        self(msg)
    }
}

/// The sending side of one core: producer of its outgoing ring, doorbell to
/// the peer, and the message-id counter.
///
/// One per core; if several threads send, the platform wraps it in a mutex.
pub struct Sender<'a, const N: usize, D: Doorbell> {
    producer: Producer<'a, N>,
    doorbell: D,
    next_id: u32,
}

impl<'a, const N: usize, D: Doorbell> Sender<'a, N, D> {
    /// A sender whose first id is 1.
    pub fn new(producer: Producer<'a, N>, doorbell: D) -> Self {
        Self::with_next_id(producer, doorbell, 1)
    }

    /// A sender whose first id is `next_id` (0 is taken as 1), e.g. to
    /// continue a sequence after a restart.
    pub fn with_next_id(producer: Producer<'a, N>, doorbell: D, next_id: u32) -> Self {
        Sender {
            producer,
            doorbell,
            next_id: next_id.max(1),
        }
    }

    /// Send `msg` with a fresh id, ring the doorbell, return the id.
    ///
    /// # Errors
    ///
    /// [`IpcError::Full`] when the ring is full (no id is used up, the
    /// doorbell is still rung so the peer drains), [`IpcError::Corrupt`] when
    /// the peer's tail is corrupt.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_abi::{MessageType, Priority, ValidMessage};
    /// use synaptic_ipc::{Doorbell, Sender};
    /// use synaptic_ring::Ring;
    ///
    /// struct Silent;
    /// impl Doorbell for Silent { fn ring(&self) {} }
    ///
    /// let mut ring = Ring::<4>::new();
    /// let (tx, mut rx) = ring.split();
    /// let mut sender = Sender::new(tx, Silent);
    /// let msg = ValidMessage::new(MessageType::StatusReq, Priority::Normal);
    /// assert_eq!(sender.send(msg), Ok(1));
    /// assert_eq!(sender.send(msg), Ok(2));
    /// assert_eq!(rx.pop().unwrap().unwrap().msg_id, 1);
    /// ```
    pub fn send(&mut self, mut msg: ValidMessage) -> Result<u32, IpcError> {
        let id = self.next_id;
        msg.msg_id = id;
        self.push(msg)?;
        self.next_id = match id.wrapping_add(1) {
            0 => 1,
            next => next,
        };
        Ok(id)
    }

    /// Send `msg` keeping its id (a response echoes its request's id).
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    pub fn reply(&mut self, msg: ValidMessage) -> Result<(), IpcError> {
        self.push(msg)
    }

    /// Send `msg` keeping its id, to a peer that polls for it: no doorbell
    /// interrupt, only an event for its `wfe` (ABI v2's polled completion).
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    pub fn reply_polled(&mut self, msg: ValidMessage) -> Result<(), IpcError> {
        let pushed = self.producer.push(Message::from(msg));
        self.doorbell.event();
        pushed.map_err(IpcError::from)
    }

    /// The doorbell to the peer.
    pub fn doorbell(&self) -> &D {
        &self.doorbell
    }

    fn push(&mut self, msg: ValidMessage) -> Result<(), IpcError> {
        let pushed = self.producer.push(Message::from(msg));
        // Rung even when full: the peer may be asleep on a coalesced doorbell.
        self.doorbell.ring();
        pushed.map_err(IpcError::from)
    }

    /// The id the next successful [`send`](Self::send) will use.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// The ring's producer, for its counters.
    pub fn producer(&self) -> &Producer<'a, N> {
        &self.producer
    }

    /// Make the ring's shared head ours again if a peer wrote it
    /// ([`Producer::repair`]); returns whether it had to.
    pub fn repair(&mut self) -> bool {
        self.producer.repair()
    }
}

/// The bounded queue of unhandled messages, shared between the dispatch
/// thread (which fills it) and application threads (which drain it).
///
/// `Q` must be a power of two (`heapless::mpmc`). The semaphore counts queued
/// messages: one give per enqueue, one take per dequeue.
pub struct Inbox<S: Semaphore, const Q: usize> {
    queue: MpMcQueue<ValidMessage, Q>,
    ready: S,
    /// Messages posted and not yet taken: a look that finds none needs no
    /// semaphore call (a serving loop looks every turn).
    queued: AtomicU32,
}

impl<S: Semaphore, const Q: usize> Inbox<S, Q> {
    /// An empty inbox signalling through `ready`.
    pub const fn new(ready: S) -> Self {
        Inbox {
            queue: MpMcQueue::new(),
            ready,
            queued: AtomicU32::new(0),
        }
    }

    /// Take the oldest unhandled message, waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`IpcError::TimedOut`] when nothing arrived in time, or a
    /// [`wake`](Self::wake) ended the wait first.
    pub fn receive(&self, timeout: Timeout) -> Result<ValidMessage, IpcError> {
        // Ordering: Acquire pairs with `post`'s Release; a message whose
        // count is not visible yet is found by the next look (its `give`
        // follows the count).
        if timeout == Timeout::NoWait && self.queued.load(Ordering::Acquire) == 0 {
            return Err(IpcError::TimedOut);
        }
        if !self.ready.take(timeout) {
            return Err(IpcError::TimedOut);
        }
        // A message's count is given after it is enqueued; a count without
        // one is a `wake`.
        match self.queue.dequeue() {
            Some(msg) => {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                Ok(msg)
            }
            None => Err(IpcError::TimedOut),
        }
    }

    /// Whether no message is queued (none whose count is visible: see
    /// [`receive`](Self::receive)).
    pub fn is_empty(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }

    /// End a receiver's wait without a message (it sees a timeout), so
    /// that a receiver waiting without a timeout of its own can still do
    /// periodic work (callable from an ISR when the semaphore's `give` is).
    pub fn wake(&self) {
        self.ready.give();
    }

    /// Queue `msg` for a receiver and give the semaphore once (callable
    /// from an ISR when the semaphore's `give` is).
    ///
    /// # Errors
    ///
    /// The message back when the queue is full.
    pub fn post(&self, msg: ValidMessage) -> Result<(), ValidMessage> {
        self.queue.enqueue(msg)?;
        self.queued.fetch_add(1, Ordering::Release);
        self.ready.give();
        Ok(())
    }
}

/// What the dispatcher has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Messages passed to a handler.
    pub handled: u32,
    /// Messages put in the inbox.
    pub queued: u32,
    /// Unhandled messages dropped because the inbox was full.
    pub inbox_full: u32,
    /// Messages that failed to decode (bad type or priority), dropped.
    pub invalid: u32,
    /// Corrupt ring indices seen (each one a resynchronisation).
    pub corrupt: u32,
}

/// The single consumer of a core's incoming ring: pops, validates, routes.
pub struct Dispatcher<'a, const N: usize, S: Semaphore, const Q: usize> {
    consumer: Consumer<'a, N>,
    inbox: &'a Inbox<S, Q>,
    handlers: [Option<&'a (dyn Handler + Sync)>; MSG_TYPE_COUNT],
    stats: DispatchStats,
}

impl<'a, const N: usize, S: Semaphore, const Q: usize> Dispatcher<'a, N, S, Q> {
    /// A dispatcher with no handlers: everything goes to `inbox`.
    pub fn new(consumer: Consumer<'a, N>, inbox: &'a Inbox<S, Q>) -> Self {
        Dispatcher {
            consumer,
            inbox,
            handlers: [None; MSG_TYPE_COUNT],
            stats: DispatchStats::default(),
        }
    }

    /// Route every `msg_type` message to `handler` (on the dispatch thread).
    ///
    /// # Errors
    ///
    /// [`IpcError::AlreadyRegistered`] if the type has a handler.
    pub fn register(
        &mut self,
        msg_type: MessageType,
        handler: &'a (dyn Handler + Sync),
    ) -> Result<(), IpcError> {
        let slot = &mut self.handlers[msg_type.index()];
        if slot.is_some() {
            return Err(IpcError::AlreadyRegistered);
        }
        *slot = Some(handler);
        Ok(())
    }

    /// Route `msg_type` to the inbox again; returns whether a handler was set.
    pub fn unregister(&mut self, msg_type: MessageType) -> bool {
        self.handlers[msg_type.index()].take().is_some()
    }

    /// Pop and route up to `N` messages (a budget, so a flooding peer
    /// cannot hold the thread forever); returns how many were popped.
    /// Stops early when the ring is empty or an index is corrupt.
    pub fn dispatch_pending(&mut self) -> usize {
        let mut popped = 0;
        while popped < N {
            let raw = match self.consumer.pop() {
                Ok(Some(raw)) => raw,
                Ok(None) => break,
                // Counted by the consumer, which has resynchronised.
                Err(_) => break,
            };
            popped += 1;
            let Ok(msg) = ValidMessage::try_from(raw) else {
                self.stats.invalid = self.stats.invalid.wrapping_add(1);
                continue;
            };
            match self.handlers[msg.msg_type.index()] {
                Some(handler) => {
                    handler.handle(&msg);
                    self.stats.handled = self.stats.handled.wrapping_add(1);
                }
                None => match self.inbox.post(msg) {
                    Ok(()) => self.stats.queued = self.stats.queued.wrapping_add(1),
                    Err(_) => self.stats.inbox_full = self.stats.inbox_full.wrapping_add(1),
                },
            }
        }
        popped
    }

    /// Drain the ring completely (budget by budget).
    pub fn dispatch_all(&mut self) -> usize {
        let mut total = 0;
        loop {
            let popped = self.dispatch_pending();
            total += popped;
            if popped < N {
                return total;
            }
        }
    }

    /// One turn of the dispatch thread: wait for the doorbell semaphore `wake`
    /// (given by the doorbell ISR) at most `timeout`, then drain the ring.
    /// The ring is drained even on timeout (a lost doorbell costs one
    /// timeout). Returns how many messages were popped.
    ///
    /// The dispatch thread is `loop { dispatcher.wait_and_dispatch(&sem, t); }`.
    pub fn wait_and_dispatch(&mut self, wake: &impl Semaphore, timeout: Timeout) -> usize {
        let _ = wake.take(timeout);
        self.dispatch_all()
    }

    /// Counters so far.
    pub fn stats(&self) -> DispatchStats {
        DispatchStats {
            corrupt: self.consumer.corrupt_count(),
            ..self.stats
        }
    }
}
