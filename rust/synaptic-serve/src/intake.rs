//! CPU0's front door: the single consumer of ring CPU1→CPU0, cheap enough
//! to run in the doorbell interrupt.
//!
//! The intake pops each message once, decodes it (`TryFrom`), answers what
//! needs no runtime at once, and hands slot requests to the serving thread:
//!
//! * `STATUS_REQ`: answered here with the [`SlotLedger`] mask, so a status
//!   round trip wakes no thread on CPU0;
//! * `INFER_REQ` / `MODEL_LOAD` naming a free slot: the slot is marked held
//!   and the message posted to the serving thread's inbox (its one
//!   wake-up); naming a held slot: `-EBUSY`; naming no slot: `-EFAULT`;
//! * unknown flag bits, undecodable requests: refused here (`-EINVAL`,
//!   `-EBADMSG`); `MODEL_UNLOAD`: `-ENOTSUP`; responses: counted, dropped.
//!
//! # Invariants
//!
//! * A budget of `N` messages per [`Intake::drain`] bounds the time spent
//!   per call (a flooding peer cannot hold an ISR or thread forever).
//! * The inbox never holds two requests for one slot and never more than
//!   the slot count, so it cannot overflow when it has that many entries.
//! * Replies go through a [`ReplyPort`], the lock the intake shares with the
//!   serving thread around CPU0's one sender.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{
    Message, MessageType, Priority, ValidMessage, MAX_EXCHANGE_SLOTS, REQUEST_FLAGS_KNOWN,
    REQUEST_FLAG_POLLED,
};
use synaptic_ipc::{Doorbell, Inbox, IpcError, Semaphore, Sender};
use synaptic_ring::Consumer;

use crate::lock::LocalLock;
use crate::region::SharedRegion;
use crate::server::{ServeError, ServeStats};

/// The slots CPU0 holds, as a bit mask in CPU0's RAM: set by the intake
/// when it takes a slot request, cleared by the serving layer after it
/// pushed the reply.
#[derive(Debug, Default)]
pub struct SlotLedger {
    held: AtomicU32,
}

impl SlotLedger {
    /// No slot held.
    pub const fn new() -> Self {
        SlotLedger {
            held: AtomicU32::new(0),
        }
    }

    /// Mark slot `index` held; `false` if it already was.
    pub fn take(&self, index: usize) -> bool {
        if index >= MAX_EXCHANGE_SLOTS {
            return false;
        }
        let bit = 1 << index;
        // Ordering: CPU0-local; AcqRel orders it with the inbox hand-off.
        self.held.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Mark slot `index` free (after its reply is pushed).
    pub fn release(&self, index: usize) {
        if index < MAX_EXCHANGE_SLOTS {
            // Ordering: Release, after the reply's push: an intake that
            // reads the bit clear answers a STATUS_REQ behind that reply.
            self.held.fetch_and(!(1 << index), Ordering::AcqRel);
        }
    }

    /// The mask of held slots.
    pub fn mask(&self) -> u32 {
        // Ordering: pairs with the Release in `release`.
        self.held.load(Ordering::Acquire)
    }
}

/// Where CPU0's replies go: its one sender, behind a lock the intake (an
/// ISR) and the serving thread share.
pub trait ReplyPort {
    /// Push `reply`; ring the doorbell unless the requester polls.
    ///
    /// # Errors
    ///
    /// The sender's error (ring full or corrupt).
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError>;
}

/// A [`Sender`] behind a [`LocalLock`] as a [`ReplyPort`].
pub struct SharedSender<'a, const R: usize, D: Doorbell, L> {
    lock: L,
    sender: PhantomData<fn() -> Sender<'a, R, D>>,
}

impl<'a, const R: usize, D: Doorbell, L: LocalLock<Sender<'a, R, D>>> SharedSender<'a, R, D, L> {
    /// The port around `sender`.
    pub fn new(sender: Sender<'a, R, D>) -> Self {
        SharedSender {
            lock: L::new(sender),
            sender: PhantomData,
        }
    }

    /// The lock, for other uses of the sender.
    pub fn lock(&self) -> &L {
        &self.lock
    }
}

impl<'a, const R: usize, D: Doorbell, L: LocalLock<Sender<'a, R, D>>> ReplyPort
    for SharedSender<'a, R, D, L>
{
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError> {
        let mut sender = self.lock.lock();
        if polled {
            sender.reply_polled(reply)
        } else {
            sender.reply(reply)
        }
    }
}

impl<T: ReplyPort + ?Sized> ReplyPort for &T {
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError> {
        (**self).reply(reply, polled)
    }
}

/// Whether a request asked for polled completion.
pub fn wants_poll(msg: &ValidMessage) -> bool {
    msg.status & REQUEST_FLAG_POLLED != 0
}

/// The reply type of a request type (`None` for responses).
pub fn reply_type(request: MessageType) -> Option<MessageType> {
    match request {
        MessageType::InferReq => Some(MessageType::InferResp),
        MessageType::ModelLoad => Some(MessageType::ModelLoad),
        MessageType::ModelUnload => Some(MessageType::ModelUnload),
        MessageType::StatusReq => Some(MessageType::StatusResp),
        MessageType::InferResp | MessageType::StatusResp => None,
    }
}

/// The single consumer of ring CPU1→CPU0 on CPU0.
pub struct Intake<'r, const N: usize> {
    consumer: Consumer<'r, N>,
    region: SharedRegion<'r, N>,
    stats: ServeStats,
}

impl<'r, const N: usize> Intake<'r, N> {
    /// The intake over `consumer`, the consumer of ring CPU1→CPU0 of
    /// `region`.
    pub fn new(region: &SharedRegion<'r, N>, consumer: Consumer<'r, N>) -> Self {
        Intake {
            consumer,
            region: *region,
            stats: ServeStats::default(),
        }
    }

    /// What the intake answered, refused and forwarded so far (the serving
    /// layer counts the rest; [`ServeStats::merged`] adds both).
    pub fn stats(&self) -> ServeStats {
        ServeStats {
            corrupt: self.consumer.corrupt_count(),
            ..self.stats
        }
    }

    /// Pop and handle up to `N` messages; returns how many were popped.
    pub fn drain<S: Semaphore, const Q: usize>(
        &mut self,
        ledger: &SlotLedger,
        inbox: &Inbox<S, Q>,
        replies: &impl ReplyPort,
    ) -> usize {
        let mut popped = 0;
        while popped < N {
            let raw = match self.consumer.pop() {
                Ok(Some(raw)) => raw,
                // Empty, or a corrupt index (counted, resynchronised).
                Ok(None) | Err(_) => break,
            };
            popped += 1;
            self.stats.requests = self.stats.requests.wrapping_add(1);
            self.handle(raw, ledger, inbox, replies);
        }
        popped
    }

    fn handle<S: Semaphore, const Q: usize>(
        &mut self,
        raw: Message,
        ledger: &SlotLedger,
        inbox: &Inbox<S, Q>,
        replies: &impl ReplyPort,
    ) {
        let msg = match ValidMessage::try_from(raw) {
            Ok(msg) => msg,
            Err(error) => {
                match MessageType::try_from(raw.msg_type)
                    .ok()
                    .and_then(reply_type)
                {
                    Some(reply) => {
                        let to = reply_to(raw.msg_id, reply, Priority::Normal, false);
                        self.refuse(ServeError::Message(error), to, replies);
                    }
                    None => self.stats.ignored = self.stats.ignored.wrapping_add(1),
                }
                return;
            }
        };
        let Some(reply) = reply_type(msg.msg_type) else {
            self.stats.ignored = self.stats.ignored.wrapping_add(1);
            return;
        };
        let polled = wants_poll(&msg);
        let to = reply_to(msg.msg_id, reply, msg.priority, polled);
        if msg.status & !REQUEST_FLAGS_KNOWN != 0 {
            return self.refuse(ServeError::UnknownFlags(msg.status), to, replies);
        }
        match msg.msg_type {
            MessageType::StatusReq => {
                self.stats.status = self.stats.status.wrapping_add(1);
                let status = ledger.mask() as i32;
                let answer = ValidMessage {
                    status,
                    // The requester's timestamp, echoed for its round trip.
                    timestamp_us: msg.timestamp_us,
                    ..to.message
                };
                self.send(replies, answer, polled);
            }
            MessageType::InferReq | MessageType::ModelLoad => {
                let slot = (msg.payload_len != 0)
                    .then(|| self.region.slot_at(msg.payload_offset as usize))
                    .flatten();
                let Some(slot) = slot else {
                    let offset = msg.payload_offset;
                    return self.refuse(ServeError::NotExchangeSlot { offset }, to, replies);
                };
                if !ledger.take(slot) {
                    return self.refuse(ServeError::Busy, to, replies);
                }
                if inbox.post(msg).is_err() {
                    ledger.release(slot);
                    return self.refuse(ServeError::Backlog, to, replies);
                }
                self.stats.forwarded = self.stats.forwarded.wrapping_add(1);
            }
            MessageType::ModelUnload => {
                let e = ServeError::Unsupported(MessageType::ModelUnload);
                self.refuse(e, to, replies);
            }
            MessageType::InferResp | MessageType::StatusResp => {}
        }
    }

    fn refuse(&mut self, error: ServeError, to: Reply, replies: &impl ReplyPort) {
        self.stats.count_refusal(error);
        let status = error.to_errno().negative();
        let answer = ValidMessage {
            status,
            ..to.message
        };
        self.send(replies, answer, to.polled);
    }

    fn send(&mut self, replies: &impl ReplyPort, answer: ValidMessage, polled: bool) {
        if replies.reply(answer, polled).is_err() {
            self.stats.reply_failures = self.stats.reply_failures.wrapping_add(1);
        }
    }
}

/// A reply in the making: the message and how to deliver it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reply {
    pub(crate) message: ValidMessage,
    pub(crate) polled: bool,
}

/// A reply of `msg_type` to request `msg_id`, no payload, status 0.
pub(crate) fn reply_to(
    msg_id: u32,
    msg_type: MessageType,
    priority: Priority,
    polled: bool,
) -> Reply {
    Reply {
        message: ValidMessage {
            msg_id,
            ..ValidMessage::new(msg_type, priority)
        },
        polled,
    }
}
