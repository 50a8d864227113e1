//! Dual-core IPC test, CPU0: publish the region, release CPU1, answer its
//! 10,000 requests through both rings and the doorbell, print the verdict.
//!
//! The path of every request: CPU1's `Sender` pushes it on ring CPU1→CPU0
//! and rings the doorbell (the SSE-200 MHU); here the doorbell ISR only gives
//! `WAKE`; the dispatch thread pops and decodes it into `INBOX`; the main
//! thread receives it, checks every field against its sequence number, and
//! answers through its own `Sender` (ring CPU0→CPU1 and the doorbell). CPU1
//! checks every answer and reports its counts through the shared region (see
//! the `dual-core-ipc-protocol` crate).
//!
//! The summary line counts a round trip when both cores found every field
//! right; "field errors" adds the fields that differed on either core;
//! "cpu1 errors" and "cpu0 errors" count everything else that went wrong
//! (time-outs, refused pushes or doorbells, dropped messages). All times are
//! QEMU's emulated time (icount), not a real part's.
#![no_std]

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use dual_core_ipc_protocol::{
    mismatched_fields, request, response, ControlWord, Cpu1Counts, Failure, Phase, WakeTally,
    BURST_MESSAGES, PING_PONG_MESSAGES, TOTAL_MESSAGES,
};
use synaptic_abi::{Core, Direction, AN521, READY};
use synaptic_ipc::{Dispatcher, Inbox, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_zephyr::doorbell::{self, PeerDoorbell};
use synaptic_zephyr::sync::KernelSemaphore;
use synaptic_zephyr::{an521, platform};
use zephyr::time::{now, sleep, Duration};
use zephyr::{printkln, raw};

/// Slots per ring (Kconfig; devicetree must agree).
const N: usize = zephyr::kconfig::CONFIG_SYNAPTIC_RING_ENTRIES as usize;
/// Decoded messages waiting for the main thread: room for a full ring twice.
const INBOX_DEPTH: usize = 2 * N;
/// Hardware cycle counter frequency.
const CYCLES_PER_SEC: u64 = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64;
/// How long CPU0 waits for the next request (the first one included:
/// CPU1 boots and attaches meanwhile) before it calls CPU1 stalled.
const REQUEST_TIMEOUT_MS: u32 = 2000;
/// How long CPU0 waits for CPU1's report after the last answer.
const REPORT_TIMEOUT_MS: u64 = 2000;
/// Attempts to push an answer while the ring is full (1 ms apart).
const REPLY_ATTEMPTS: u32 = 1000;

/// The dispatch thread's time-out: a missed doorbell costs at most this.
const DISPATCH_POLL_MS: u32 = 100;

type Region = dual_core_ipc_protocol::Region<N>;
type ReplySender = Sender<'static, N, PeerDoorbell>;

/// Given by the doorbell ISR, taken by the dispatch thread.
static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// Decoded requests, from the dispatch thread to the main thread.
static INBOX: Inbox<KernelSemaphore, INBOX_DEPTH> =
    Inbox::new(KernelSemaphore::new(0, INBOX_DEPTH as u32));
/// Tells the dispatch thread to end.
static STOP: AtomicBool = AtomicBool::new(false);
/// Messages the dispatcher dropped (undecodable, corrupt index, inbox full).
static DISPATCH_ERRORS: AtomicU32 = AtomicU32::new(0);
/// Why the dispatch thread woke up.
static WAKES: WakeTally = WakeTally::new();

#[zephyr::thread(stack_size = 2048)]
fn dispatch(dispatcher: Dispatcher<'static, N, KernelSemaphore, INBOX_DEPTH>) {
    let mut dispatcher = dispatcher;
    // Ordering: Acquire pairs with the Release store in rust_main; nothing
    // else is published with it.
    while !STOP.load(Ordering::Acquire) {
        // Dispatcher::wait_and_dispatch, spelled out to see why it woke.
        let rung = WAKE.take(Timeout::Millis(DISPATCH_POLL_MS));
        let popped = dispatcher.dispatch_all();
        WAKES.record(rung, popped, WAKE.kernel().count_get() > 0);
        let stats = dispatcher.stats();
        let dropped = stats
            .invalid
            .wrapping_add(stats.corrupt)
            .wrapping_add(stats.inbox_full);
        // Ordering: a statistic, read by the main thread at the end.
        DISPATCH_ERRORS.store(dropped, Ordering::Relaxed);
    }
}

fn cycles() -> u64 {
    // SAFETY: plain kernel call (CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER is set).
    unsafe { raw::k_cycle_get_64() }
}

fn micros(cycles: u64) -> u64 {
    cycles * 1_000_000 / CYCLES_PER_SEC
}

#[no_mangle]
extern "C" fn rust_main() {
    let verdict = run();
    // Ordering: Release pairs with the dispatch thread's Acquire load.
    STOP.store(true, Ordering::Release);
    WAKE.give();
    match verdict {
        Ok(true) => printkln!("dual-core ipc: PASS"),
        Ok(false) => printkln!("dual-core ipc: FAIL"),
        Err(why) => printkln!("dual-core ipc: FAIL ({})", why),
    }
}

/// What the main thread saw while answering.
#[derive(Default)]
struct Served {
    ping_pong: u32,
    burst: u32,
    field_errors: u32,
    reply_errors: u32,
    reply_retries: u32,
    stalled_at: Option<u32>,
    /// Cycle counter when the first request arrived.
    first_request: Option<u64>,
    /// Cycles from the first request to the last answer.
    cycles: u64,
}

fn run() -> Result<bool, &'static str> {
    let shared = platform::shared_memory().ok_or("no synaptic,shared-memory in devicetree")?;
    let image = platform::cpu1_image().ok_or("no synaptic,cpu1-image in devicetree")?;
    if shared.ring_entries as usize != N {
        return Err("devicetree ring-entries differs from CONFIG_SYNAPTIC_RING_ENTRIES");
    }
    if shared.base != AN521.shared_base_for(Core::Cpu0) as usize
        || image.boot_address != AN521.cpu1_image_base
    {
        return Err("devicetree and synaptic-abi's AN521 map disagree");
    }

    // SAFETY: devicetree reserves the shared region for synaptic; it is
    // mapped on CPU0 for the whole program, and both images touch it only
    // through the protocol crate, synaptic-ring and the ABI's rules.
    let region = unsafe { Region::new(shared.base, shared.size) }
        .map_err(|_| "shared region too small or misaligned")?;
    // SAFETY: CPU1 has not been released, and no ring handle exists yet.
    unsafe { region.initialise() };
    // SAFETY: CPU0 is the only producer of ring CPU0→CPU1 (CPU1 only consumes
    // it), and this is the only handle on this core.
    let producer = unsafe { Producer::attach(region.ring(Direction::Cpu0ToCpu1)) };
    // SAFETY: likewise, CPU0 is the only consumer of ring CPU1→CPU0.
    let consumer = unsafe { Consumer::attach(region.ring(Direction::Cpu1ToCpu0)) };
    let doorbell = doorbell::init(&WAKE).map_err(|_| "the doorbell did not start")?;
    let mut sender = Sender::new(producer, doorbell);
    dispatch(Dispatcher::new(consumer, &INBOX)).start();
    // Ordering: Release publishes the control block, the rings and the zeroed
    // report written above; pairs with CPU1's Acquire load at attach.
    region
        .control_word(ControlWord::Cpu0Ready)
        .store(READY, Ordering::Release);

    release_cpu1(&image)?;
    let released = cycles();
    // Straight to serving: CPU1's first request is the sign that it attached,
    // and nothing on this core delays the first round trip.
    let served = serve(&region, &mut sender);
    let Some(first_request) = served.first_request else {
        if let Some(failure) = region
            .report()
            .counts()
            .and_then(|c| Failure::from_wire(c.failure))
        {
            printkln!(
                "dual-core ipc: CPU1 stopped before its first request: {:?}",
                failure
            );
        }
        return Err("no request from CPU1");
    };
    // Ordering: Acquire pairs with CPU1's Release store of cpu1_ready.
    if region
        .control_word(ControlWord::Cpu1Ready)
        .load(Ordering::Acquire)
        != READY
    {
        return Err("CPU1 sent requests without setting cpu1_ready");
    }
    printkln!(
        "dual-core ipc: CPU1 attached and its first request arrived {} us after release (emulated)",
        micros(first_request.saturating_sub(released))
    );
    let Some(cpu1) = wait_for_report(&region) else {
        printkln!(
            "dual-core ipc: CPU1 never finished its report (cpu0 answered {} ping-pong, {} burst)",
            served.ping_pong,
            served.burst
        );
        return Ok(false);
    };
    Ok(summarise(&region, &served, &cpu1))
}

fn release_cpu1(image: &platform::Cpu1Image) -> Result<(), &'static str> {
    // SAFETY: devicetree places CPU1's image at local_address, readable by
    // CPU0; the first two words are its vector table's initial SP and reset.
    let (initial_sp, reset) = unsafe {
        let vectors = image.local_address as *const u32;
        (
            core::ptr::read_volatile(vectors),
            core::ptr::read_volatile(vectors.add(1)),
        )
    };
    printkln!(
        "CPU1 vector table: initial SP 0x{:08x}, reset 0x{:08x}",
        initial_sp,
        reset
    );
    if reset & 1 == 0 || initial_sp == 0 || initial_sp == u32::MAX {
        return Err("CPU1 image absent or not a Thumb vector table");
    }
    // SAFETY: this test runs only on mps2/an521/cpu0 (secure), and the vector
    // table at boot_address was just checked.
    unsafe { an521::release_cpu1(image.boot_address) };
    Ok(())
}

/// Answer every request in order, checking each against its sequence number.
fn serve(region: &Region, sender: &mut ReplySender) -> Served {
    let pool = region.pool();
    let mut served = Served::default();
    for seq in 0..TOTAL_MESSAGES {
        let Ok(msg) = INBOX.receive(Timeout::Millis(REQUEST_TIMEOUT_MS)) else {
            served.stalled_at = Some(seq);
            break;
        };
        if seq == 0 {
            served.first_request = Some(cycles());
        }
        let mut bad = mismatched_fields(&request(seq, &pool), &msg);
        // What a real server checks before it touches a payload.
        if bad == 0 && msg.payload_range(pool.clone()).is_err() {
            bad = 1;
        }
        served.field_errors += bad;
        if bad == 0 {
            match Phase::of(seq) {
                Phase::PingPong => served.ping_pong += 1,
                Phase::Burst => served.burst += 1,
            }
        }
        if reply(sender, seq, &pool, &mut served.reply_retries).is_err() {
            served.reply_errors += 1;
        }
    }
    if let Some(start) = served.first_request {
        served.cycles = cycles().saturating_sub(start);
    }
    served
}

fn reply(
    sender: &mut ReplySender,
    seq: u32,
    pool: &core::ops::Range<usize>,
    retries: &mut u32,
) -> Result<(), IpcError> {
    let answer = response(seq, pool);
    for _ in 0..REPLY_ATTEMPTS {
        match sender.reply(answer) {
            Err(IpcError::Full) => {
                *retries += 1;
                sleep(Duration::millis_at_least(1));
            }
            done => return done,
        }
    }
    Err(IpcError::Full)
}

fn wait_for_report(region: &Region) -> Option<Cpu1Counts> {
    let start = now();
    loop {
        if let Some(counts) = region.report().counts() {
            return Some(counts);
        }
        if now() - start > Duration::millis_at_least(REPORT_TIMEOUT_MS) {
            return None;
        }
        sleep(Duration::millis_at_least(1));
    }
}

/// Print the results; true when everything was exchanged and checked.
fn summarise(region: &Region, served: &Served, cpu1: &Cpu1Counts) -> bool {
    let ping_pong = served.ping_pong.min(cpu1.ping_pong_checked);
    let bursts = served.burst.min(cpu1.burst_checked);
    let field_errors = served.field_errors + cpu1.field_errors;
    let cpu1_errors = cpu1.transport_errors();
    // Ordering: a statistic; the dispatch thread stored it before the last
    // request reached the main thread.
    let dispatch_errors = DISPATCH_ERRORS.load(Ordering::Relaxed);
    let doorbell_errors = PeerDoorbell::failed_rings();
    let cpu0_errors = served.reply_errors
        + dispatch_errors
        + doorbell_errors
        + WAKES.missed()
        + u32::from(served.stalled_at.is_some());

    let answered = served.ping_pong + served.burst;
    let us = micros(served.cycles);
    printkln!(
        "dual-core ipc: {} requests answered and {} answers checked, {} messages in {} cycles = {} us (emulated), average {} us per request and answer",
        answered,
        cpu1.ping_pong_checked + cpu1.burst_checked,
        2 * TOTAL_MESSAGES,
        served.cycles,
        us,
        us / u64::from(TOTAL_MESSAGES)
    );
    let word = |w| region.control_word(w).load(Ordering::Relaxed);
    // Ordering: Relaxed, after the Acquire load of the report's `done`,
    // which CPU1 stored after these words.
    printkln!(
        "dual-core ipc: cpu1 ping-pong round trip (emulated): min {} us, max {} us, last {} us over {}",
        word(ControlWord::RttMin),
        word(ControlWord::RttMax),
        word(ControlWord::RttLast),
        word(ControlWord::RttCount)
    );
    printkln!(
        "dual-core ipc: dispatch wake-ups by doorbell: cpu0 {}, cpu1 {}; time-outs that found messages (missed doorbells): cpu0 {}, cpu1 {}",
        WAKES.doorbell(),
        cpu1.doorbell_wakeups,
        WAKES.missed(),
        cpu1.missed_doorbells
    );
    if let Some(failure) = Failure::from_wire(cpu1.failure) {
        printkln!("dual-core ipc: CPU1 stopped early: {:?}", failure);
    }
    if let Some(seq) = served.stalled_at {
        printkln!(
            "dual-core ipc: no request {} within {} ms",
            seq,
            REQUEST_TIMEOUT_MS
        );
    }
    printkln!(
        "dual-core ipc: ping-pong {}/{}, bursts {}/{}, field errors {}, cpu1 errors {}",
        ping_pong,
        PING_PONG_MESSAGES,
        bursts,
        BURST_MESSAGES,
        field_errors,
        cpu1_errors
    );
    printkln!(
        "dual-core ipc: cpu1 errors: timeouts {}, send {}, dispatch {}, missed doorbells {}; cpu0 errors {}: reply {} (retries {}), dispatch {}, doorbell {}, missed doorbells {}",
        cpu1.timeouts,
        cpu1.send_errors,
        cpu1.dispatch_errors,
        cpu1.missed_doorbells,
        cpu0_errors,
        served.reply_errors,
        served.reply_retries,
        dispatch_errors,
        doorbell_errors,
        WAKES.missed()
    );
    ping_pong == PING_PONG_MESSAGES
        && bursts == BURST_MESSAGES
        && field_errors == 0
        && cpu1_errors == 0
        && cpu0_errors == 0
}
