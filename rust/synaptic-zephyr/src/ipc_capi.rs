//! The `syn_ipc.h` C API on Zephyr: the reference's four IPC calls over
//! synaptic's rings, doorbell and dispatcher, on either core (cargo feature
//! `ipc-capi`).
//!
//! * `syn_ipc_init(base, size)`: CPU0 publishes the region at `base`
//!   ([`SharedRegion::publish`]: control block, both rings empty, exchange
//!   slots zeroed, `cpu0_ready` last); CPU1 checks the control block CPU0
//!   published (magic, layout version, ring entries, size, slot geometry)
//!   and sets `cpu1_ready`. Then the doorbell starts and the dispatch
//!   thread runs.
//! * The dispatch thread is the only consumer of the incoming ring. It
//!   decodes every message (`TryFrom`: an undecodable one is counted and
//!   dropped) and calls the C handler registered for its type, on the
//!   dispatch thread; a message of a type without a handler goes to the
//!   receive queue that `syn_ipc_receive` drains. This is
//!   [`synaptic_ipc::Dispatcher`] with one forwarding [`Handler`] per type,
//!   because C may register and unregister handlers at any time.
//! * `syn_ipc_send` pushes onto the outgoing ring under a spin lock (callers
//!   on any thread of this core, handlers included) and rings the doorbell.
//!
//! The C struct `syn_ipc_msg_t` is [`Message`] (same 20-byte layout,
//! asserted below and in C by `syn_ipc.h`). Errors are negative errnos; the
//! header documents each. Nothing here panics: every failure is a return
//! value.
//!
//! # Limits
//!
//! One region per boot: `syn_ipc_init` succeeds once. The receive queue
//! holds [`QUEUE_DEPTH`] messages; when it is full the newest unhandled
//! message is dropped (the ring keeps flowing, so handled types are not
//! blocked behind an unread queue).
#![cfg(all(feature = "ipc-capi", CONFIG_SYNAPTIC_DOORBELL))]

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use synaptic_abi::{Direction, Errno, Message, MessageType, ValidMessage, MSG_TYPE_COUNT};
use synaptic_ipc::{Dispatcher, Handler, Inbox, IpcError, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::time::Clock;
use synaptic_serve::region::SharedRegion;
use synaptic_serve::LocalLock;
use zephyr::sync::SpinMutex;

use crate::clock::ZephyrClock;
use crate::doorbell::{self, DoorbellError, PeerDoorbell};
use crate::service::{Region, N, SLOTS};
use crate::sync::{IsrLock, KernelSemaphore};

/// Unhandled messages `syn_ipc_receive` can hold: a full ring twice.
pub const QUEUE_DEPTH: usize = 2 * N;

/// How long the dispatch thread sleeps between looks when no doorbell
/// rings: a lost doorbell costs at most this.
const DISPATCH_POLL_MS: u32 = 100;

/// `syn_ipc_msg_t` is `Message`: the same bytes in the same places.
const _: () = {
    assert!(core::mem::size_of::<Message>() == 20);
    assert!(core::mem::offset_of!(Message, msg_id) == 0);
    assert!(core::mem::offset_of!(Message, msg_type) == 4);
    assert!(core::mem::offset_of!(Message, priority) == 5);
    assert!(core::mem::offset_of!(Message, payload_len) == 6);
    assert!(core::mem::offset_of!(Message, payload_offset) == 8);
    assert!(core::mem::offset_of!(Message, timestamp_us) == 12);
    assert!(core::mem::offset_of!(Message, status) == 16);
    assert!(QUEUE_DEPTH.is_power_of_two());
};

/// A C enum as C passes it (`syn_ipc_type_t`): one byte on bare-metal Arm,
/// whose C ABI uses short enums, an `int` elsewhere. Taken raw and checked,
/// never as a Rust enum (an out-of-range value would be undefined there).
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub type CEnum = u8;
/// A C enum as C passes it (`syn_ipc_type_t`).
#[cfg(not(all(target_arch = "arm", target_os = "none")))]
pub type CEnum = u32;

/// `syn_ipc_handler_t`.
pub type CHandler = Option<unsafe extern "C" fn(msg: *const Message, ctx: *mut c_void)>;

/// What `syn_ipc_init` has done: not yet, under way, or done.
static STATE: AtomicU8 = AtomicU8::new(UNINITIALISED);
const UNINITIALISED: u8 = 0;
const INITIALISING: u8 = 1;
const READY: u8 = 2;

/// Given by the doorbell ISR, taken by the dispatch thread.
static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// Unhandled messages, from the dispatch thread to `syn_ipc_receive`.
static QUEUE: Inbox<KernelSemaphore, QUEUE_DEPTH> =
    Inbox::new(KernelSemaphore::new(0, QUEUE_DEPTH as u32));
/// The outgoing ring's producer and the doorbell, once initialised.
static SENDER: IsrLock<Option<Sender<'static, N, PeerDoorbell>>> = IsrLock::new(None);
/// Unhandled messages dropped because the queue was full.
static QUEUE_FULL: AtomicU32 = AtomicU32::new(0);

/// One registered C handler and its context.
#[derive(Clone, Copy)]
struct Entry {
    handler: CHandler,
    ctx: *mut c_void,
}

/// The C handlers by message type, behind a spin lock so that a handler
/// and its context are always read as the pair registered together.
struct Table(SpinMutex<[Entry; MSG_TYPE_COUNT]>);

// SAFETY: the raw `ctx` pointers are only stored and handed back to the C
// handler they were registered with, never dereferenced here; the lock
// serialises every access to the table.
unsafe impl Sync for Table {}

static HANDLERS: Table = Table(SpinMutex::new(
    [Entry {
        handler: None,
        ctx: core::ptr::null_mut(),
    }; MSG_TYPE_COUNT],
));

fn entry(index: usize) -> Entry {
    // `SpinMutex::lock` spins and never fails (its error is `Infallible`).
    let table = match HANDLERS.0.lock() {
        Ok(guard) => guard,
        Err(never) => match never {},
    };
    table.get(index).copied().unwrap_or(Entry {
        handler: None,
        ctx: core::ptr::null_mut(),
    })
}

/// The dispatcher's handler for one type: the C handler if one is
/// registered now, else the receive queue.
struct Forward;

impl Handler for Forward {
    fn handle(&self, msg: &ValidMessage) {
        let Entry { handler, ctx } = entry(msg.msg_type.index());
        match handler {
            Some(call) => {
                let copy = Message::from(*msg);
                // SAFETY: `call` and `ctx` were registered together by C
                // through `syn_ipc_register_handler`, whose contract is that
                // the function takes a message pointer valid for the call
                // and the context it was given; `copy` lives on this stack
                // for the whole call.
                unsafe { call(&copy, ctx) };
            }
            None => {
                if QUEUE.post(*msg).is_err() {
                    // Ordering: a statistic; nothing is published with it.
                    QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

static FORWARD: Forward = Forward;

#[zephyr::thread(stack_size = 2048)]
fn dispatch(dispatcher: Dispatcher<'static, N, KernelSemaphore, QUEUE_DEPTH>) {
    let mut dispatcher = dispatcher;
    loop {
        dispatcher.wait_and_dispatch(&WAKE, Timeout::Millis(DISPATCH_POLL_MS));
    }
}

fn is_cpu1() -> bool {
    cfg!(any(CONFIG_SOC_MPS2_AN521_CPU1, CONFIG_SOC_MCXN947_CPU1))
}

/// Check (CPU1) or publish (CPU0) the region, start the doorbell, attach
/// the rings and start the dispatch thread.
fn attach(region: Region) -> Result<(), Errno> {
    // The doorbell's one-time init is what makes this core's attach unique
    // (the Rust service and client take it too): CPU1 takes it only once
    // CPU0's region checks out (so that -ENODEV can be retried), CPU0
    // before it publishes (so that a second caller cannot wipe live rings).
    let start_doorbell = || {
        doorbell::init(&WAKE).map_err(|e| match e {
            DoorbellError::AlreadyInitialised => Errno::Already,
            _ => Errno::NoDev,
        })
    };
    let bell = if is_cpu1() {
        region.announce_cpu1_version();
        // CPU0 must have published a region this image can use.
        if !region.is_ready(synaptic_abi::Core::Cpu0) || region.check().is_err() {
            return Err(Errno::NoDev);
        }
        start_doorbell()?
    } else {
        let bell = start_doorbell()?;
        // SAFETY: CPU0 publishes before it releases CPU1 (the caller's part
        // of the contract), and no ring handle exists on this core: the
        // doorbell's one-time init just succeeded, so neither this module
        // nor the Rust client attached before; the Rust service is not in
        // the same image (the caller's part of the contract).
        unsafe { region.publish() };
        bell
    };
    let (outgoing, incoming) = if is_cpu1() {
        (Direction::Cpu1ToCpu0, Direction::Cpu0ToCpu1)
    } else {
        (Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0)
    };
    // SAFETY: this core is the only producer of `outgoing` and the only
    // consumer of `incoming` (the peer has the opposite roles), and the
    // doorbell's one-time init just succeeded, so no other handle of these
    // rings exists on this core. CPU1 takes the live indices.
    let (producer, consumer) = unsafe {
        (
            Producer::attach(region.ring(outgoing)),
            Consumer::attach(region.ring(incoming)),
        )
    };
    *SENDER.lock() = Some(Sender::new(producer, bell));
    let mut dispatcher = Dispatcher::new(consumer, &QUEUE);
    for msg_type in MessageType::ALL {
        // A fresh dispatcher has no handler for any type.
        let _ = dispatcher.register(msg_type, &FORWARD);
    }
    dispatch(dispatcher).start();
    region.set_ready(if is_cpu1() {
        synaptic_abi::Core::Cpu1
    } else {
        synaptic_abi::Core::Cpu0
    });
    Ok(())
}

fn is_ready() -> bool {
    // Ordering: Acquire pairs with the Release store at the end of init:
    // the sender and the dispatch thread are set up before it.
    STATE.load(Ordering::Acquire) == READY
}

/// `int syn_ipc_init(void *shared_base, size_t shared_size)`.
///
/// # Safety
///
/// `shared_base..shared_base + shared_size` is the shared region, mapped on
/// this core for the rest of the program and accessed by both cores only
/// through synaptic; on CPU0 the peer is not running yet, and the image
/// does not also run the Rust service (`crate::service`, which owns the
/// same rings).
#[no_mangle]
pub unsafe extern "C" fn syn_ipc_init(shared_base: *mut c_void, shared_size: usize) -> c_int {
    let Some(base) = NonNull::new(shared_base.cast::<u8>()) else {
        return Errno::Inval.negative();
    };
    // Arguments first, as the reference checks them: a bad size is -EINVAL
    // even after a successful init.
    // SAFETY: this function's contract: `base..base + shared_size` is the
    // shared region, mapped on this core for the rest of the program and
    // accessed on both cores only through synaptic's views or its C API.
    // `from_raw` itself only checks the numbers; it touches no memory.
    let region: Region = match unsafe { SharedRegion::from_raw(base, shared_size, SLOTS) } {
        Ok(region) => region,
        Err(_) => return Errno::Inval.negative(),
    };
    // Ordering: a local flag in private RAM (never a cross-core word);
    // Acquire/Release order it with the setup it guards.
    if STATE
        .compare_exchange(
            UNINITIALISED,
            INITIALISING,
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return Errno::Already.negative();
    }
    match attach(region) {
        Ok(()) => {
            // Ordering: Release publishes the sender and the thread.
            STATE.store(READY, Ordering::Release);
            0
        }
        Err(e) => {
            // Ordering: nothing was published; a later call may try again
            // (the doorbell, once started, answers -EALREADY).
            STATE.store(UNINITIALISED, Ordering::Release);
            e.negative()
        }
    }
}

/// `int syn_ipc_send(const syn_ipc_msg_t *msg)`.
///
/// # Safety
///
/// `msg` is NULL or points to a readable `syn_ipc_msg_t`.
#[no_mangle]
pub unsafe extern "C" fn syn_ipc_send(msg: *const Message) -> c_int {
    if !is_ready() {
        return Errno::NoDev.negative();
    }
    if msg.is_null() {
        return Errno::Inval.negative();
    }
    // SAFETY: non-null (checked) and readable (the caller's contract); one
    // unaligned-safe copy, which is what gets checked and sent.
    let mut raw = unsafe { msg.read_unaligned() };
    raw.timestamp_us = ZephyrClock.now_us() as u32;
    let Ok(valid) = ValidMessage::try_from(raw) else {
        return Errno::Inval.negative();
    };
    let mut guard = SENDER.lock();
    let Some(sender) = guard.as_mut() else {
        return Errno::NoDev.negative();
    };
    let sent = if raw.msg_id == 0 {
        sender.send(valid).map(|_| ())
    } else {
        sender.reply(valid)
    };
    match sent {
        Ok(()) => 0,
        Err(IpcError::Full) => Errno::Again.negative(),
        Err(e) => e.errno().negative(),
    }
}

/// `int syn_ipc_receive(syn_ipc_msg_t *msg, uint32_t timeout_ms)`.
///
/// # Safety
///
/// `msg` is NULL or points to a writable `syn_ipc_msg_t`.
#[no_mangle]
pub unsafe extern "C" fn syn_ipc_receive(msg: *mut Message, timeout_ms: u32) -> c_int {
    if !is_ready() {
        return Errno::NoDev.negative();
    }
    if msg.is_null() {
        return Errno::Inval.negative();
    }
    let timeout = match timeout_ms {
        0 => Timeout::NoWait,
        ms => Timeout::Millis(ms),
    };
    match QUEUE.receive(timeout) {
        Ok(got) => {
            // SAFETY: non-null (checked) and writable (the caller's
            // contract).
            unsafe { msg.write_unaligned(Message::from(got)) };
            0
        }
        // The reference's value for "nothing arrived in time" (k_msgq_get).
        Err(_) => Errno::Again.negative(),
    }
}

/// `int syn_ipc_register_handler(syn_ipc_type_t type, syn_ipc_handler_t
/// handler, void *ctx)`.
///
/// # Safety
///
/// `handler` is NULL or a function that may be called on the dispatch
/// thread with a message pointer and `ctx`, until it is replaced or
/// unregistered.
#[no_mangle]
pub unsafe extern "C" fn syn_ipc_register_handler(
    msg_type: CEnum,
    handler: CHandler,
    ctx: *mut c_void,
) -> c_int {
    // Widened first, so that the check is the same for both widths.
    #[allow(clippy::useless_conversion)]
    let Ok(wire) = u8::try_from(u32::from(msg_type)) else {
        return Errno::Inval.negative();
    };
    let Ok(msg_type) = MessageType::try_from(wire) else {
        return Errno::Inval.negative();
    };
    let mut table = match HANDLERS.0.lock() {
        Ok(guard) => guard,
        Err(never) => match never {},
    };
    if let Some(slot) = table.get_mut(msg_type.index()) {
        *slot = Entry { handler, ctx };
    }
    0
}

/// Unhandled messages dropped so far because the receive queue was full
/// (`uint32_t syn_ipc_queue_dropped(void)`, a synaptic extension).
#[no_mangle]
pub extern "C" fn syn_ipc_queue_dropped() -> u32 {
    // Ordering: a statistic.
    QUEUE_FULL.load(Ordering::Relaxed)
}
