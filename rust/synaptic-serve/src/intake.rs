//! CPU0's front door: the single consumer of ring CPU1→CPU0, cheap enough
//! to run in the doorbell interrupt.
//!
//! The intake pops each message once, decodes it (`TryFrom`), answers what
//! needs no runtime at once, and hands slot requests to the serving thread:
//!
//! * `STATUS_REQ`: answered here with the [`SlotLedger`] mask, so a status
//!   round trip wakes no thread on CPU0;
//! * `INFER_REQ` / `MODEL_LOAD` naming a free slot (or one whose reply
//!   the serving layer has just pushed, see [`SlotLedger`]): the slot is
//!   marked held and the message posted to the serving thread's inbox (its
//!   one wake-up); naming a held slot: `-EBUSY`; naming no slot: `-EFAULT`;
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
//! * A request that names no slot is answered before the next is popped,
//!   and every drain first makes the reply ring's head CPU0's own again:
//!   whenever the intake publishes a tail past a request, the reply ring's
//!   head counts every answer to the requests before it that named no slot
//!   (what a restarted CPU1's client synchronises on). That holds for a
//!   head a dead life of CPU1 scribbled as long as CPU1 cannot die, boot
//!   and push its sync request within one drain (at most `N` messages,
//!   well under a millisecond; CPU0's maintenance restores the head every
//!   50 ms in any case).

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{
    Message, MessageType, Priority, ValidMessage, MAX_EXCHANGE_SLOTS, REQUEST_FLAGS_KNOWN,
    REQUEST_FLAG_POLLED,
};
use synaptic_ipc::{Doorbell, Inbox, IpcError, Semaphore, Sender};
use synaptic_ring::Consumer;

use crate::lock::LocalLock;
use crate::park::ParkRecord;
use crate::region::SharedRegion;
use crate::server::{ServeError, ServeStats};

/// The slots CPU0 holds, as a bit mask in CPU0's RAM: set by the intake
/// when it takes a slot request, cleared by the serving layer after it
/// pushed the reply.
///
/// Between the push and the clear the slot is *handed back*: the serving
/// layer marks it so just before it pushes. CPU1 may already have popped
/// the reply and sent the slot's next request, which the intake can pop
/// before the serving layer gets to clear the bit (it is an interrupt; the
/// serving thread may be preempted right after its push).
/// [`take`](Self::take) accepts such a request (the slot passes straight to
/// it, and the serving layer's [`release`](Self::release) then leaves the
/// bit set) instead of refusing a well-behaved peer with `-EBUSY`. The
/// [`mask`](Self::mask) still shows the slot held until the release, so a
/// status answered meanwhile never overtakes the reply.
#[derive(Debug, Default)]
pub struct SlotLedger {
    /// Bits `0..8`: slot held; `8..16`: its reply is being pushed (handed
    /// back); `16..24`: a new request took it while handed back.
    state: AtomicU32,
}

/// Bit positions of the three masks in [`SlotLedger`]'s word.
const HANDED_BACK: u32 = 8;
const RETAKEN: u32 = 16;
const _: () = assert!(MAX_EXCHANGE_SLOTS <= HANDED_BACK as usize);

impl SlotLedger {
    /// No slot held.
    pub const fn new() -> Self {
        SlotLedger {
            state: AtomicU32::new(0),
        }
    }

    /// Apply `f` to the ledger's word atomically; whether it applied.
    fn update(&self, f: impl FnMut(u32) -> Option<u32>) -> bool {
        // Ordering: CPU0-local; AcqRel orders the marks with the inbox
        // hand-off and with the reply pushes around them.
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, f)
            .is_ok()
    }

    /// Mark slot `index` held; `false` if it already was (and is not
    /// being handed back, or was retaken already).
    pub fn take(&self, index: usize) -> bool {
        if index >= MAX_EXCHANGE_SLOTS {
            return false;
        }
        let held = 1 << index;
        let handed_back = held << HANDED_BACK;
        let retaken = held << RETAKEN;
        self.update(|w| {
            if w & held == 0 {
                Some(w | held)
            } else if w & handed_back != 0 && w & retaken == 0 {
                Some(w | retaken)
            } else {
                None
            }
        })
    }

    /// Mark slot `index` handed back: its reply is about to be pushed (the
    /// serving layer, before the push that precedes a
    /// [`release`](Self::release)).
    pub(crate) fn hand_back(&self, index: usize) {
        if index < MAX_EXCHANGE_SLOTS {
            let handed_back = 1 << (index + HANDED_BACK as usize);
            self.update(|w| Some(w | handed_back));
        }
    }

    /// Mark slot `index` free (after its reply is pushed), unless a request
    /// took it since it was handed back: it then stays held, for that one.
    pub fn release(&self, index: usize) {
        if index < MAX_EXCHANGE_SLOTS {
            let held = 1 << index;
            let handed_back = held << HANDED_BACK;
            let retaken = held << RETAKEN;
            // Release ordering, after the reply's push: an intake that reads
            // the bit clear answers a STATUS_REQ behind that reply.
            self.update(|w| {
                Some(if w & retaken != 0 {
                    w & !(retaken | handed_back)
                } else {
                    w & !(held | handed_back)
                })
            });
        }
    }

    /// The mask of held slots.
    pub fn mask(&self) -> u32 {
        // Ordering: pairs with the AcqRel in `release`.
        self.state.load(Ordering::Acquire) & ((1 << HANDED_BACK) - 1)
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

    /// Make the reply ring's shared head CPU0's own again if a peer wrote
    /// it; returns whether it had to. [`Intake::drain`] calls it before it
    /// pops, so whenever CPU0 publishes a request ring tail the reply
    /// ring's head counts every reply pushed before (a restarted CPU1's
    /// synchronisation rests on it, see [`Client`](crate::Client)).
    fn restore_head(&self) -> bool;
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

    /// Make the reply ring's shared head ours again if a peer wrote it;
    /// returns whether it had to.
    pub fn repair(&self) -> bool {
        self.lock.lock().repair()
    }

    /// Repairs of the reply ring's head so far (at maintenance and on
    /// pushes that saw an impossible tail).
    pub fn repair_count(&self) -> u32 {
        self.lock.lock().producer().repair_count()
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

    fn restore_head(&self) -> bool {
        self.repair()
    }
}

impl<T: ReplyPort + ?Sized> ReplyPort for &T {
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError> {
        (**self).reply(reply, polled)
    }

    fn restore_head(&self) -> bool {
        (**self).restore_head()
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
        MessageType::ModelUpdate => Some(MessageType::ModelUpdate),
        MessageType::InferResp | MessageType::StatusResp => None,
    }
}

/// The single consumer of ring CPU1→CPU0 on CPU0.
pub struct Intake<'r, const N: usize> {
    consumer: Consumer<'r, N>,
    region: SharedRegion<'r, N>,
    park: &'r ParkRecord,
    stats: ServeStats,
}

/// The record of a CPU0 that never parks CPU1: no request, ever.
static NO_PARK: ParkRecord = ParkRecord::new();

impl<'r, const N: usize> Intake<'r, N> {
    /// The intake over `consumer`, the consumer of ring CPU1→CPU0 of
    /// `region`.
    pub fn new(region: &SharedRegion<'r, N>, consumer: Consumer<'r, N>) -> Self {
        Intake {
            consumer,
            region: *region,
            park: &NO_PARK,
            stats: ServeStats::default(),
        }
    }

    /// The intake of a CPU0 whose parker keeps its requests in `park`
    /// (`crate::park::Parker::new`): maintenance republishes them.
    #[must_use]
    pub fn with_park_record(self, park: &'r ParkRecord) -> Self {
        Intake { park, ..self }
    }

    /// What the intake answered, refused and forwarded so far (the serving
    /// layer counts the rest; [`ServeStats::merged`] adds both).
    pub fn stats(&self) -> ServeStats {
        ServeStats {
            corrupt: self.consumer.corrupt_count(),
            repairs: self
                .stats
                .repairs
                .wrapping_add(self.consumer.repair_count()),
            ..self.stats
        }
    }

    /// CPU0's maintenance of the words it owns that the intake can reach:
    /// the control block and this ring's tail (the reply ring's head is the
    /// sender's: [`SharedSender::repair`]). Returns the words rewritten.
    pub fn maintain(&mut self) -> u32 {
        let control = self.region.repair_cpu0_words(self.park);
        self.stats.repairs = self.stats.repairs.wrapping_add(control);
        control + u32::from(self.consumer.repair())
    }

    /// Pop and handle up to `N` messages; returns how many were popped.
    ///
    /// First the reply ring's head is made CPU0's again
    /// ([`ReplyPort::restore_head`]): a head a previous life of CPU1
    /// scribbled must not hide replies from the next life's
    /// synchronisation, which reads it once CPU0 has taken its request.
    pub fn drain<S: Semaphore, const Q: usize>(
        &mut self,
        ledger: &SlotLedger,
        inbox: &Inbox<S, Q>,
        replies: &impl ReplyPort,
    ) -> usize {
        replies.restore_head();
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
            MessageType::InferReq | MessageType::ModelLoad | MessageType::ModelUpdate => {
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

#[cfg(test)]
mod tests {
    use super::SlotLedger;

    #[test]
    fn the_ledger_hands_a_slot_straight_to_a_request_that_arrives_with_its_reply() {
        let ledger = SlotLedger::new();
        assert!(ledger.take(2));
        assert!(!ledger.take(2), "held: a second request is refused");
        ledger.hand_back(2);
        assert!(
            ledger.take(2),
            "its reply is out: the next request takes over"
        );
        assert!(!ledger.take(2), "but only one");
        assert_eq!(ledger.mask(), 0b100, "held throughout");
        ledger.release(2);
        assert_eq!(ledger.mask(), 0b100, "now for the request that took over");
        assert!(!ledger.take(2));
        ledger.hand_back(2);
        ledger.release(2);
        assert_eq!(ledger.mask(), 0);
        // A slot released without a hand-back (the intake undoing its own
        // take) is simply free.
        assert!(ledger.take(0));
        ledger.release(0);
        assert_eq!(ledger.mask(), 0);
        // Out of range: never held.
        assert!(!ledger.take(8));
        ledger.release(8);
        ledger.hand_back(8);
        assert_eq!(ledger.mask(), 0);
    }
}
