//! Dual-core IPC test, CPU1: attach to the region CPU0 published, send the
//! 10,000 requests (ping-pong, then bursts up to the ring's capacity) and
//! check every field of every answer.
//!
//! No console (configured like the MCXN947's CPU1): the counts go into the
//! report in the shared region and the ping-pong round-trip times into the
//! control block's `rtt_*` words, where CPU0 reads them (see the
//! `dual-core-ipc-protocol` crate). Times are QEMU's emulated time.
#![no_std]

use core::ops::Range;
use core::sync::atomic::{AtomicU32, Ordering};

use dual_core_ipc_protocol::{
    bump, burst_size, message_id, mismatched_fields, request, response, ControlWord, Cpu1Report,
    Failure, Phase, WakeTally, PING_PONG_MESSAGES, REPORT_MAGIC, TOTAL_MESSAGES,
};
use synaptic_abi::{Core, Direction, AN521, READY};
use synaptic_ipc::{Dispatcher, Inbox, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_zephyr::doorbell::{self, PeerDoorbell};
use synaptic_zephyr::platform;
use synaptic_zephyr::sync::KernelSemaphore;
use zephyr::raw;

/// Slots per ring (Kconfig; devicetree and the control block must agree).
const N: usize = zephyr::kconfig::CONFIG_SYNAPTIC_RING_ENTRIES as usize;
/// Decoded messages waiting for the main thread: room for a full ring twice.
const INBOX_DEPTH: usize = 2 * N;
/// Hardware cycle counter frequency.
const CYCLES_PER_SEC: u64 = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64;
/// How long CPU1 waits for each answer before it gives up.
const RESPONSE_TIMEOUT_MS: u32 = 1000;

/// The dispatch thread's time-out: a missed doorbell costs at most this.
const DISPATCH_POLL_MS: u32 = 100;

type Region = dual_core_ipc_protocol::Region<N>;
type RequestSender = Sender<'static, N, PeerDoorbell>;

/// Given by the doorbell ISR, taken by the dispatch thread.
static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// Decoded answers, from the dispatch thread to the main thread.
static INBOX: Inbox<KernelSemaphore, INBOX_DEPTH> =
    Inbox::new(KernelSemaphore::new(0, INBOX_DEPTH as u32));
/// Messages the dispatcher dropped (undecodable, corrupt index, inbox full).
static DISPATCH_ERRORS: AtomicU32 = AtomicU32::new(0);
/// Why the dispatch thread woke up.
static WAKES: WakeTally = WakeTally::new();

#[zephyr::thread(stack_size = 1536)]
fn dispatch(dispatcher: Dispatcher<'static, N, KernelSemaphore, INBOX_DEPTH>) {
    let mut dispatcher = dispatcher;
    loop {
        // Dispatcher::wait_and_dispatch, spelled out to see why it woke.
        let rung = WAKE.take(Timeout::Millis(DISPATCH_POLL_MS));
        let popped = dispatcher.dispatch_all();
        WAKES.record(rung, popped, WAKE.kernel().count_get() > 0);
        let stats = dispatcher.stats();
        let dropped = stats
            .invalid
            .wrapping_add(stats.corrupt)
            .wrapping_add(stats.inbox_full);
        // Ordering: a statistic, copied into the report by the main thread.
        DISPATCH_ERRORS.store(dropped, Ordering::Relaxed);
    }
}

fn cycles() -> u32 {
    // SAFETY: plain kernel call.
    unsafe { raw::k_cycle_get_32() }
}

fn micros(cycles: u32) -> u32 {
    (u64::from(cycles) * 1_000_000 / CYCLES_PER_SEC) as u32
}

#[no_mangle]
extern "C" fn rust_main() {
    // No console on this core: without a usable region there is nobody to tell.
    let Some(shared) = platform::shared_memory() else {
        return;
    };
    // SAFETY: devicetree reserves the shared region for synaptic; it is
    // mapped on CPU1 for the whole program, and both images touch it only
    // through the protocol crate, synaptic-ring and the ABI's rules.
    let Ok(region) = (unsafe { Region::new(shared.base, shared.size) }) else {
        return;
    };
    let report = region.report();
    if let Err(failure) = run(&region, &shared, report) {
        report.fail(failure);
    }
    if PeerDoorbell::failed_rings() != 0 {
        bump(&report.send_errors, PeerDoorbell::failed_rings());
    }
    // Ordering: a statistic from the dispatch thread on this core.
    let dropped = DISPATCH_ERRORS.load(Ordering::Relaxed);
    // Ordering (three stores): Relaxed; published by `finish` below.
    report.dispatch_errors.store(dropped, Ordering::Relaxed);
    report
        .doorbell_wakeups
        .store(WAKES.doorbell(), Ordering::Relaxed);
    report
        .missed_doorbells
        .store(WAKES.missed(), Ordering::Relaxed);
    report.finish();
}

fn run(
    region: &Region,
    shared: &platform::SharedMemory,
    report: &Cpu1Report,
) -> Result<(), Failure> {
    if shared.ring_entries as usize != N
        || shared.base != AN521.shared_base_for(Core::Cpu1) as usize
    {
        return Err(Failure::Geometry);
    }
    // Ordering: Acquire pairs with CPU0's Release store of cpu0_ready: the
    // control block and the rings it initialised are visible from here on.
    if region
        .control_word(ControlWord::Cpu0Ready)
        .load(Ordering::Acquire)
        != READY
    {
        return Err(Failure::NotPublished);
    }
    region
        .control_block()
        .check::<N>(region.size(), synaptic_abi::SlotGeometry::DEFAULT)?;

    // SAFETY: CPU1 is the only producer of ring CPU1→CPU0 (CPU0 only consumes
    // it), and this is the only handle on this core.
    let producer = unsafe { Producer::attach(region.ring(Direction::Cpu1ToCpu0)) };
    // SAFETY: likewise, CPU1 is the only consumer of ring CPU0→CPU1.
    let consumer = unsafe { Consumer::attach(region.ring(Direction::Cpu0ToCpu1)) };
    let doorbell = doorbell::init(&WAKE).map_err(|_| Failure::Doorbell)?;
    let mut sender = Sender::new(producer, doorbell);
    dispatch(Dispatcher::new(consumer, &INBOX)).start();

    // Ordering: Relaxed; published by the Release store of cpu1_ready.
    report.magic.store(REPORT_MAGIC, Ordering::Relaxed);
    // Ordering: Release pairs with CPU0's Acquire load of cpu1_ready.
    region
        .control_word(ControlWord::Cpu1Ready)
        .store(READY, Ordering::Release);

    let pool = region.pool();
    let mut rtt = RoundTrips::new(region);
    for seq in 0..PING_PONG_MESSAGES {
        let start = cycles();
        send(&mut sender, seq, &pool, report)?;
        receive_and_check(seq, &pool, report)?;
        rtt.record(micros(cycles().wrapping_sub(start)));
    }

    let mut seq = PING_PONG_MESSAGES;
    let mut burst = 0;
    while seq < TOTAL_MESSAGES {
        let size = burst_size(burst, N as u32, TOTAL_MESSAGES - seq);
        // The ring is empty here (every earlier request was answered), so a
        // burst of up to N requests fills it without a refusal.
        for k in 0..size {
            send(&mut sender, seq + k, &pool, report)?;
        }
        for k in 0..size {
            receive_and_check(seq + k, &pool, report)?;
        }
        seq += size;
        burst += 1;
    }
    Ok(())
}

fn send(
    sender: &mut RequestSender,
    seq: u32,
    pool: &Range<usize>,
    report: &Cpu1Report,
) -> Result<(), Failure> {
    match sender.send(request(seq, pool)) {
        Ok(id) => {
            if id != message_id(seq) {
                bump(&report.field_errors, 1);
            }
            Ok(())
        }
        Err(_) => {
            bump(&report.send_errors, 1);
            Err(Failure::SendFailed)
        }
    }
}

fn receive_and_check(seq: u32, pool: &Range<usize>, report: &Cpu1Report) -> Result<(), Failure> {
    let Ok(answer) = INBOX.receive(Timeout::Millis(RESPONSE_TIMEOUT_MS)) else {
        bump(&report.timeouts, 1);
        return Err(Failure::Stalled);
    };
    let mut bad = mismatched_fields(&response(seq, pool), &answer);
    if bad == 0 && answer.payload_range(pool.clone()).is_err() {
        bad = 1;
    }
    if bad != 0 {
        bump(&report.field_errors, bad);
    } else {
        match Phase::of(seq) {
            Phase::PingPong => bump(&report.ping_pong_checked, 1),
            Phase::Burst => bump(&report.burst_checked, 1),
        }
    }
    Ok(())
}

/// Ping-pong round-trip statistics, published in the control block's
/// `rtt_*` words (CPU1 is their only writer).
struct RoundTrips {
    last: &'static AtomicU32,
    min: &'static AtomicU32,
    max: &'static AtomicU32,
    count: &'static AtomicU32,
}

impl RoundTrips {
    fn new(region: &Region) -> Self {
        RoundTrips {
            last: region.control_word(ControlWord::RttLast),
            min: region.control_word(ControlWord::RttMin),
            max: region.control_word(ControlWord::RttMax),
            count: region.control_word(ControlWord::RttCount),
        }
    }

    fn record(&mut self, us: u32) {
        // Ordering (all): Relaxed; CPU1 is the only writer, and the report's
        // Release store of `done` publishes the final values.
        let count = self.count.load(Ordering::Relaxed);
        let min = self.min.load(Ordering::Relaxed);
        if count == 0 || us < min {
            self.min.store(us, Ordering::Relaxed);
        }
        if us > self.max.load(Ordering::Relaxed) {
            self.max.store(us, Ordering::Relaxed);
        }
        self.last.store(us, Ordering::Relaxed);
        self.count.store(count.wrapping_add(1), Ordering::Relaxed);
    }
}
