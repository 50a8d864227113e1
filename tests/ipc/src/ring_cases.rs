//! Suite `ipc`: the 20-byte message, the region layout, the memory maps, and
//! the ring over the static region (empty, round trip, full, FIFO, 10,000
//! messages, the `u32` wrap, a hostile index, and its cost).

use core::mem::{offset_of, size_of};

use synaptic_abi::region::{RingHeader, RING_HEAD_OFFSET, RING_SLOTS_OFFSET, RING_TAIL_OFFSET};
use synaptic_abi::{
    exchange_slot_offset, payload_pool_offset, payload_pool_range, region_fits, region_size,
    ring_offset, ring_size, ControlBlock, Core, Direction, Errno, ExchangeHeader, ExchangeSlot,
    MemoryMap, Message, MessageType, SlotGeometry, AN521, CONTROL_BLOCK_SIZE, EXCHANGE_HEADER_SIZE,
    EXCHANGE_INPUT_OFFSET, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_OFFSET, EXCHANGE_OUTPUT_SIZE,
    EXCHANGE_SLOT_SIZE, MAGIC, MCXN947, MSG_SIZE, MSG_TYPE_COUNT, QEMU_CORTEX_M3,
};
use synaptic_ipc::IpcError;
use synaptic_ring::{Producer, RingError};
use synaptic_zephyr::ztest::Outcome;
use synaptic_zephyr::{zassert, zassert_eq, ztest_suite};
use zephyr::raw;

use crate::bench::ring_cost_benchmark;
use crate::region::{ring_word, store_index, IndexWord, RegionLease, TestRing, REGION_SIZE, SLOTS};
use crate::traffic::{expect_message, message_for, Traffic};
use crate::N;

/// The secure alias CPU0 adds on both dual-core parts.
const SECURE_ALIAS: u32 = 0x1000_0000;
/// Messages of the integrity sweep.
const SWEEP_MESSAGES: u32 = 10_000;

fn msg_abi() -> Outcome {
    zassert_eq!(size_of::<Message>(), 20);
    zassert_eq!(MSG_SIZE, 20);
    zassert_eq!(core::mem::align_of::<Message>(), 4);
    zassert_eq!(offset_of!(Message, msg_id), 0);
    zassert_eq!(offset_of!(Message, msg_type), 4);
    zassert_eq!(offset_of!(Message, priority), 5);
    zassert_eq!(offset_of!(Message, payload_len), 6);
    zassert_eq!(offset_of!(Message, payload_offset), 8);
    zassert_eq!(offset_of!(Message, timestamp_us), 12);
    zassert_eq!(offset_of!(Message, status), 16);
    zassert_eq!(MSG_TYPE_COUNT, 7);
    for (wire, msg_type) in MessageType::ALL.iter().enumerate() {
        zassert_eq!(usize::from(msg_type.wire()), wire);
    }
    zassert!(
        MessageType::try_from(MSG_TYPE_COUNT as u8).is_err(),
        "type 7 must be rejected"
    );
    Ok(())
}

/// The five words of `msg` as the ring holds them in slot `slot`.
fn expect_slot_words(ring: &TestRing, slot: usize, msg: &Message) -> Outcome {
    let at = |word: usize| ring_word(ring, RING_SLOTS_OFFSET + slot * MSG_SIZE + 4 * word);
    let packed =
        u32::from(msg.msg_type) | u32::from(msg.priority) << 8 | u32::from(msg.payload_len) << 16;
    zassert!(at(0) == Some(msg.msg_id), "msg_id at +0 of the slot");
    zassert!(at(1) == Some(packed), "type, priority, payload_len at +4");
    zassert!(at(2) == Some(msg.payload_offset), "payload_offset at +8");
    zassert!(at(3) == Some(msg.timestamp_us), "timestamp_us at +12");
    zassert!(at(4) == Some(msg.status as u32), "status at +16");
    Ok(())
}

/// The index words as they lie in the ring: `head` at +0, `tail` at +64.
fn expect_index_words(ring: &TestRing, head: u32, tail: u32) -> Outcome {
    zassert!(
        ring_word(ring, RING_HEAD_OFFSET) == Some(head),
        "head at +0"
    );
    zassert!(
        ring_word(ring, RING_TAIL_OFFSET) == Some(tail),
        "tail at +64"
    );
    Ok(())
}

/// The bytes the rings really write in the static region sit where the
/// layout says.
fn expect_live_layout(lease: &mut RegionLease) -> Outcome {
    let block = lease.control_block();
    zassert!(
        block.check::<N>(REGION_SIZE as u32, SLOTS).is_ok(),
        "published control block does not check"
    );
    zassert_eq!(block.magic, MAGIC);
    let base = lease.base_address();
    for direction in [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0] {
        let fresh = lease.ring(direction, 0);
        let ring = fresh.ring();
        zassert_eq!(
            ring as *const TestRing as usize - base,
            ring_offset::<N>(direction)
        );
        let mut traffic = Traffic::new(fresh.attach());
        traffic.push(2)?;
        traffic.pop(1)?;
        expect_index_words(ring, 2, 1)?;
        expect_slot_words(ring, 0, &message_for(0))?;
        expect_slot_words(ring, 1, &message_for(1))?;
    }
    Ok(())
}

fn region_layout() -> Outcome {
    let ring_bytes = 128 + N * 20;
    zassert_eq!(size_of::<ControlBlock>(), 64);
    zassert_eq!(CONTROL_BLOCK_SIZE, 64);
    zassert_eq!(offset_of!(ControlBlock, magic), 0);
    zassert_eq!(offset_of!(RingHeader, head), 0);
    zassert_eq!(offset_of!(RingHeader, tail), 64);
    zassert_eq!(size_of::<RingHeader>(), 128);
    zassert_eq!(RING_HEAD_OFFSET, 0);
    zassert_eq!(RING_TAIL_OFFSET, 64);
    zassert_eq!(RING_SLOTS_OFFSET, 128);
    zassert_eq!(ring_size::<N>(), ring_bytes);
    zassert_eq!(size_of::<TestRing>(), ring_bytes);
    zassert_eq!(ring_offset::<N>(Direction::Cpu0ToCpu1), 64);
    zassert_eq!(ring_offset::<N>(Direction::Cpu1ToCpu0), 64 + ring_bytes);
    // ABI v2: the 128-byte service-time table sits between rings and pool.
    zassert_eq!(payload_pool_offset::<N>(), 64 + 2 * ring_bytes + 128);
    zassert_eq!(exchange_slot_offset::<N>(), payload_pool_offset::<N>());
    let pool = payload_pool_range::<N>(REGION_SIZE);
    zassert_eq!(pool.start, 64 + 2 * ring_bytes + 128);
    zassert_eq!(pool.end, REGION_SIZE);

    zassert_eq!(EXCHANGE_HEADER_SIZE, 64);
    zassert_eq!(size_of::<ExchangeHeader>(), 64);
    zassert_eq!(EXCHANGE_INPUT_SIZE, 96 * 96 * 3);
    zassert_eq!(EXCHANGE_OUTPUT_SIZE, 4096);
    zassert_eq!(offset_of!(ExchangeSlot, input), EXCHANGE_INPUT_OFFSET);
    zassert_eq!(EXCHANGE_INPUT_OFFSET, 64);
    zassert_eq!(offset_of!(ExchangeSlot, output), EXCHANGE_OUTPUT_OFFSET);
    zassert_eq!(EXCHANGE_OUTPUT_OFFSET, 64 + 27_648);
    zassert_eq!(size_of::<ExchangeSlot>(), EXCHANGE_SLOT_SIZE);
    zassert_eq!(EXCHANGE_SLOT_SIZE, 64 + 27_648 + 4_096);
    zassert_eq!(
        region_size::<N>(SLOTS),
        64 + 2 * ring_bytes + 128 + EXCHANGE_SLOT_SIZE
    );
    zassert!(
        region_size::<N>(SLOTS) <= REGION_SIZE,
        "region overflows the window"
    );

    let mut lease = RegionLease::claim()?;
    expect_live_layout(&mut lease)
}

/// A dual-core map: the three RAM ranges tile, CPU0 adds the secure alias,
/// and the region with its exchange slot fits the shared window.
fn expect_dual_core_map(map: &MemoryMap) -> Outcome {
    let end = |base: u32, size: u32| u64::from(base) + u64::from(size);
    zassert_eq!(
        end(map.cpu0_private_base, map.cpu0_private_size),
        u64::from(map.shared_base)
    );
    zassert_eq!(
        end(map.shared_base, map.shared_size),
        u64::from(map.cpu1_private_base)
    );
    zassert!(
        end(map.cpu1_private_base, map.cpu1_private_size) <= 1 << 32,
        "CPU1 RAM wraps the address space"
    );
    zassert!(map.tiles(), "tiles() disagrees with the arithmetic");
    zassert!(map.is_dual_core());
    zassert_eq!(map.cpu0_private_size, 256 * 1024);
    zassert_eq!(map.shared_size, 96 * 1024);
    zassert_eq!(map.cpu1_private_size, 64 * 1024);
    zassert_eq!(map.cpu0_alias, SECURE_ALIAS);
    zassert_eq!(map.cpu1_alias, 0);
    zassert_eq!(
        map.shared_base_for(Core::Cpu0),
        map.shared_base + SECURE_ALIAS
    );
    zassert_eq!(map.shared_base_for(Core::Cpu1), map.shared_base);
    // The boot vector is in CPU1's own lens: never the secure alias.
    zassert_eq!(map.cpu1_image_base & SECURE_ALIAS, 0);
    zassert!(region_fits::<N>(
        map.shared_size as usize,
        SlotGeometry::DEFAULT
    ));
    zassert!(region_size::<N>(SlotGeometry::DEFAULT) <= map.shared_size as usize);
    Ok(())
}

fn memory_map_tiling() -> Outcome {
    expect_dual_core_map(&MCXN947)?;
    expect_dual_core_map(&AN521)?;
    zassert_eq!(MCXN947.shared_base, 0x2004_0000);
    zassert_eq!(MCXN947.cpu1_image_base, 0x0010_0000);
    zassert_eq!(MCXN947.shared_base_for(Core::Cpu0), 0x3004_0000);
    zassert_eq!(AN521.shared_base, 0x2804_0000);
    zassert_eq!(AN521.shared_base_for(Core::Cpu0), 0x3804_0000);
    zassert_eq!(
        MCXN947.shared_base - MCXN947.cpu0_private_base,
        AN521.shared_base - AN521.cpu0_private_base
    );
    let overlap = MemoryMap {
        shared_base: MCXN947.shared_base - 4,
        ..MCXN947
    };
    zassert!(!overlap.tiles(), "an overlapping map must not tile");
    let gap = MemoryMap {
        cpu1_private_base: AN521.cpu1_private_base + 4,
        ..AN521
    };
    zassert!(!gap.tiles(), "a map with a gap must not tile");
    // The single-core test map: its window is this image's static region.
    zassert!(!QEMU_CORTEX_M3.is_dual_core());
    zassert!(QEMU_CORTEX_M3.tiles());
    zassert_eq!(REGION_SIZE, QEMU_CORTEX_M3.shared_size as usize);
    zassert!(region_fits::<N>(REGION_SIZE, SLOTS));
    Ok(())
}

fn empty_after_reset() -> Outcome {
    let mut lease = RegionLease::claim()?;
    for life in 0..2 {
        // CPU0 (re)initialises the ring: whatever the last life left, the
        // new ring is empty, its indices 0 and its slots zeroed.
        let fresh = lease.ring(Direction::Cpu0ToCpu1, 0);
        let ring = fresh.ring();
        expect_index_words(ring, 0, 0)?;
        expect_slot_words(ring, 0, &Message::default())?;
        let mut traffic = Traffic::new(fresh.attach());
        traffic.expect_empty()?;
        zassert_eq!(traffic.tx.head(), 0);
        zassert_eq!(traffic.rx.tail(), 0);
        // Leave three messages behind for the next life to discard.
        traffic.push(3 + life)?;
        expect_index_words(ring, 3 + life, 0)?;
    }
    Ok(())
}

fn push_pop_roundtrip() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let (mut tx, mut rx) = lease.ring(Direction::Cpu0ToCpu1, 0).attach();
    let extremes = [
        Message {
            msg_id: 0xDEAD_BEEF,
            msg_type: MessageType::StatusResp.wire(),
            priority: 2,
            payload_len: u16::MAX,
            payload_offset: 0x1234_5678,
            timestamp_us: u32::MAX,
            status: i32::MIN,
        },
        Message::default(),
        message_for(0x8000_0001),
    ];
    for msg in &extremes {
        zassert!(tx.push(*msg).is_ok(), "push into an empty ring failed");
        expect_message(rx.pop().ok().flatten(), msg)?;
        zassert!(rx.pop() == Ok(None), "one push, two pops");
    }
    Ok(())
}

fn full_returns_eagain() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let mut traffic = Traffic::new(lease.ring(Direction::Cpu0ToCpu1, 0).attach());
    traffic.push(N as u32)?;
    traffic.expect_full()?;
    zassert!(traffic.tx.free() == Ok(0), "a full ring reports free slots");
    zassert!(RingError::Full.errno() == Errno::Again);
    zassert_eq!(RingError::Full.errno().code(), 11);
    zassert_eq!(Errno::Again.code(), raw::EAGAIN as i32);
    zassert_eq!(IpcError::from(RingError::Full).errno().code(), 11);
    // One pop makes room for exactly one push.
    traffic.pop(1)?;
    traffic.push(1)?;
    traffic.expect_full()?;
    traffic.pop(N as u32)?;
    traffic.expect_empty()
}

fn fifo_order() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let mut traffic = Traffic::new(lease.ring(Direction::Cpu1ToCpu0, 0).attach());
    traffic.fill_and_drain()?;
    // Interleaved: the ring fills by one per step while staying in order.
    while traffic.sent - traffic.received + 2 <= N as u32 {
        traffic.push(2)?;
        traffic.pop(1)?;
    }
    let left = traffic.sent - traffic.received;
    zassert!(
        left >= N as u32 - 1,
        "the interleaving never filled the ring"
    );
    traffic.pop(left)?;
    traffic.expect_empty()
}

fn ten_thousand_no_loss() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let mut traffic = Traffic::new(lease.ring(Direction::Cpu1ToCpu0, 0).attach());
    let mut level_seen = [false; N + 1];
    let mut burst = 1;
    while traffic.sent < SWEEP_MESSAGES {
        let count = burst.min(SWEEP_MESSAGES - traffic.sent);
        traffic.push(count)?;
        let level = traffic.rx.available().unwrap_or(usize::MAX);
        zassert_eq!(level, count as usize);
        level_seen[level] = true;
        if level == N {
            traffic.expect_full()?;
        }
        traffic.pop(count)?;
        burst = burst % N as u32 + 1;
    }
    zassert_eq!(traffic.received, SWEEP_MESSAGES);
    traffic.expect_empty()?;
    zassert!(
        level_seen[1..].iter().all(|&seen| seen),
        "a fill level was never reached"
    );
    zassert_eq!(traffic.rx.corrupt_count(), 0);
    zassert_eq!(traffic.tx.corrupt_count(), 0);
    Ok(())
}

/// Fill, drain and stream through a ring whose indices start at `start`.
fn expect_wrap_from(lease: &mut RegionLease, start: u32) -> Outcome {
    let fresh = lease.ring(Direction::Cpu0ToCpu1, start);
    let ring = fresh.ring();
    let mut traffic = Traffic::new(fresh.attach());
    zassert_eq!(traffic.tx.head(), start);
    zassert_eq!(traffic.rx.tail(), start);
    traffic.expect_empty()?;
    traffic.fill_and_drain()?;
    for _ in 0..N {
        traffic.push(3)?;
        traffic.pop(3)?;
    }
    let end = start.wrapping_add(traffic.sent);
    zassert!(end < start, "the indices never crossed u32::MAX");
    zassert_eq!(traffic.tx.head(), end);
    zassert_eq!(traffic.rx.tail(), end);
    expect_index_words(ring, end, end)?;
    zassert_eq!(traffic.rx.corrupt_count(), 0);
    traffic.expect_empty()
}

fn index_wraparound() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let n = N as u32;
    for start in [u32::MAX - n / 2, u32::MAX - n + 1, u32::MAX] {
        expect_wrap_from(&mut lease, start)?;
    }
    Ok(())
}

/// A hostile producer's heads are rejected, counted and resynchronised
/// from; a hostile consumer's tail is reported to the producer.
// `drop(tx)` marks where the first producer's life ends (the peer restarting).
#[allow(clippy::drop_non_drop)]
fn expect_hostile_indices_rejected(lease: &mut RegionLease) -> Outcome {
    let fresh = lease.ring(Direction::Cpu1ToCpu0, 0);
    let ring = fresh.ring();
    let mut traffic = Traffic::new(fresh.attach());
    traffic.push(3)?;

    let ahead = N as u32 + 1;
    store_index(ring, IndexWord::Head, ahead);
    let popped = traffic.rx.pop();
    zassert!(
        popped
            == Err(RingError::Corrupt {
                head: ahead,
                tail: 0
            }),
        "a head N + 1 ahead was not reported as Corrupt"
    );
    zassert_eq!(
        popped.err().map_or(0, |e| e.errno().code()),
        raw::EBADMSG as i32
    );
    zassert_eq!(traffic.rx.corrupt_count(), 1);
    zassert_eq!(traffic.rx.tail(), ahead);
    // The resynchronised tail is published.
    expect_index_words(ring, ahead, ahead)?;
    zassert!(traffic.rx.pop() == Ok(None), "read past a rejected head");

    // A head behind the tail would read as ~2^32 messages.
    store_index(ring, IndexWord::Head, ahead - 1);
    zassert!(matches!(traffic.rx.pop(), Err(RingError::Corrupt { .. })));
    zassert_eq!(traffic.rx.corrupt_count(), 2);
    zassert_eq!(traffic.rx.tail(), ahead - 1);

    // The peer restarts: a new producer attaches to the live, now sane,
    // indices and traffic flows from there.
    let Traffic { tx, rx, .. } = traffic;
    drop(tx);
    // SAFETY: the ring's only producer was dropped just above; `rx` is its
    // only consumer.
    let tx = unsafe { Producer::attach(ring) };
    let mut traffic = Traffic::new((tx, rx));
    zassert_eq!(traffic.tx.head(), ahead - 1);
    zassert_eq!(traffic.tx.corrupt_count(), 0);
    traffic.fill_and_drain()?;
    traffic.expect_empty()?;

    // A hostile consumer: a tail ahead of the head.
    let head = traffic.tx.head();
    store_index(ring, IndexWord::Tail, head.wrapping_add(5));
    zassert!(matches!(traffic.tx.free(), Err(RingError::Corrupt { .. })));
    zassert_eq!(traffic.tx.corrupt_count(), 1);
    zassert_eq!(traffic.tx.head(), head);
    Ok(())
}

fn corrupt_index_is_rejected() -> Outcome {
    let mut lease = RegionLease::claim()?;
    expect_hostile_indices_rejected(&mut lease)?;
    // Nothing outside the ring was touched.
    zassert!(
        lease
            .control_block()
            .check::<N>(REGION_SIZE as u32, SLOTS)
            .is_ok(),
        "the control block changed"
    );
    Ok(())
}

ztest_suite!(ipc {
    msg_abi,
    region_layout,
    memory_map_tiling,
    empty_after_reset,
    push_pop_roundtrip,
    full_returns_eagain,
    fifo_order,
    ten_thousand_no_loss,
    index_wraparound,
    corrupt_index_is_rejected,
    ring_cost_benchmark,
});
