//! The decoders of what CPU1 writes in an exchange slot and on the ring:
//! the header copy ([`Exchange::read_header`], [`Exchange::read_request`])
//! and its checks, `input_len_within`, the slot geometry's
//! `slot_at`/`slot_offset` (the region's and a fuzzer-chosen geometry's),
//! and `ValidMessage::try_from(Message)` with `payload_range`.
//!
//! Checked: no panic, every decoded value within the bound its check
//! promises, the header copy equal to the bytes written, and
//! `slot_at(slot_offset(k)) == Some(k)` (and only there).
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_abi::{
    exchange::input_len_within, ExchangeError, ExchangeHeader, MessageType, Priority, SlotGeometry,
    ValidMessage, EXCHANGE_HEADER_SIZE, EXCHANGE_OUTPUT_SIZE, MODEL_NAME_SIZE,
};
use synaptic_fuzz::Input;
use synaptic_serve::loopback::{Loopback, RegionBuffer};
use synaptic_serve::protocol::infer_payload_len;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let (Some(slot), Some(header)) = (input.u8(), input.bytes(EXCHANGE_HEADER_SIZE)) else {
        return;
    };
    let mut buffer = RegionBuffer::new();
    let cores = Loopback::new(buffer.bytes()).expect("loopback");
    let region = cores.region();
    let k = usize::from(slot) % region.slot_count();
    let exchange = region.exchange(k).expect("a slot of the geometry");
    cores.write_shared(exchange.offset(), header);
    check_header(&exchange.read_header(), header, exchange.input_capacity());
    let (model, input_len) = exchange.read_request();
    let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4"));
    assert_eq!((model, input_len), (word(0), word(36)));
    match infer_payload_len(input_len as usize, exchange.input_capacity()) {
        Some(len) => assert!(
            usize::from(len) <= EXCHANGE_HEADER_SIZE + exchange.input_capacity()
                && input_len as usize <= exchange.input_capacity()
        ),
        None => assert!(input_len as usize > exchange.input_capacity()),
    }

    // The region's geometry, at offsets the fuzzer names.
    let pool = region.payload_pool();
    for k in 0..region.slot_count() {
        let offset = region.slot_offset(k).expect("in the geometry");
        assert_eq!(region.slot_at(offset), Some(k));
        assert!(offset >= pool.start && offset < pool.end);
    }
    assert_eq!(region.slot_offset(region.slot_count()), None);
    while let Some(offset) = input.u32() {
        let offset = offset as usize;
        if let Some(k) = region.slot_at(offset) {
            assert_eq!(
                region.slot_offset(k),
                Some(offset),
                "slot_at only at a slot's start"
            );
        }
        let Some(raw) = input.message() else { break };
        check_message(raw, pool.clone());
    }

    // A geometry of the fuzzer's (after its own check).
    let geometry = SlotGeometry {
        count: word(40) % 16,
        small_input: word(44) % 65_536,
        small_output: word(48) % 65_536,
    };
    if geometry.check().is_ok() {
        let count = geometry.count as usize;
        for k in 0..count {
            let offset = geometry.slot_offset(k).expect("in the geometry");
            assert_eq!(geometry.slot_at(offset), Some(k));
            assert!(offset < geometry.pool_bytes().max(1));
            let input = geometry.input_capacity(k).expect("capacity");
            let output = geometry.output_capacity(k).expect("capacity");
            // Slots do not overlap: each one's header, input and output
            // end before the next slot (or the pool) does.
            let end = geometry.slot_offset(k + 1).unwrap_or(geometry.pool_bytes());
            assert!(
                offset + EXCHANGE_HEADER_SIZE + input + output <= end,
                "slot {k} overlaps"
            );
            assert_eq!(
                geometry.output_offset(k),
                Some(EXCHANGE_HEADER_SIZE + input)
            );
        }
        assert_eq!(geometry.slot_offset(count), None);
        let probe = word(52) as usize % (geometry.pool_bytes() + 64);
        if let Some(k) = geometry.slot_at(probe) {
            assert_eq!(geometry.slot_offset(k), Some(probe));
        }
    }
});

fn check_header(copy: &ExchangeHeader, bytes: &[u8], capacity: usize) {
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
    assert_eq!(copy.model, word(0));
    assert_eq!(&copy.model_name[..], &bytes[4..4 + MODEL_NAME_SIZE]);
    assert_eq!(copy.input_len, word(36));
    assert_eq!(copy.output_len, word(40));
    assert_eq!(copy.infer_status, word(44) as i32);
    match copy.model_name() {
        Ok(name) => {
            assert!(name.len() < MODEL_NAME_SIZE && !name.contains(&0));
            assert_eq!(copy.model_name[name.len()], 0);
        }
        Err(e) => {
            assert_eq!(e, ExchangeError::NameNotTerminated);
            assert!(!copy.model_name.contains(&0));
        }
    }
    match copy.input_len_within(capacity) {
        Ok(n) => assert!(n <= capacity && n == copy.input_len as usize),
        Err(_) => assert!(copy.input_len as usize > capacity),
    }
    assert_eq!(
        copy.input_len_within(capacity),
        input_len_within(copy.input_len, capacity)
    );
    match copy.output_len() {
        Ok(n) => assert!(n <= EXCHANGE_OUTPUT_SIZE && n == copy.output_len as usize),
        Err(_) => assert!(copy.output_len as usize > EXCHANGE_OUTPUT_SIZE),
    }
}

fn check_message(raw: synaptic_abi::Message, pool: std::ops::Range<usize>) {
    match ValidMessage::try_from(raw) {
        Ok(msg) => {
            assert!(MessageType::try_from(raw.msg_type).is_ok());
            assert!(Priority::try_from(raw.priority).is_ok());
            assert_eq!(synaptic_abi::Message::from(msg), raw, "decode is lossless");
            match msg.payload_range(pool.clone()) {
                Ok(range) => {
                    if msg.payload_len == 0 {
                        assert!(range.is_empty());
                    } else {
                        assert_eq!(range.start, msg.payload_offset as usize);
                        assert_eq!(range.len(), usize::from(msg.payload_len));
                    }
                    assert!(range.start >= pool.start && range.end <= pool.end);
                }
                Err(_) => {
                    let start = msg.payload_offset as usize;
                    let end = start + usize::from(msg.payload_len);
                    assert!(msg.payload_len != 0 && (start < pool.start || end > pool.end));
                }
            }
        }
        Err(_) => assert!(
            MessageType::try_from(raw.msg_type).is_err()
                || Priority::try_from(raw.priority).is_err()
        ),
    }
}
