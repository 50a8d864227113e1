//! A buggy previous life of CPU1 leaves work behind, and the rebooted
//! CPU1's client must not take any of it for its own (both cores over
//! [`Loopback`], stepped by hand, no threads).
//!
//! The previous life here speaks the rings raw: it numbers its requests as
//! it likes and, before it dies, writes its own ring's `head` back to 0, so
//! CPU0 resynchronises and the next life finds the request ring as a first
//! boot would (nothing on it to number after, nothing to presume held),
//! while CPU0's answers to the previous life still wait in the reply ring.
//! These are the fuzz finding `request_path-previous-life-reply` taken
//! apart (its input is a seed of `rust/fuzz/corpus/request_path` now).

use synaptic_abi::region::{ring_offset, RING_HEAD_OFFSET};
use synaptic_abi::{Direction, Message, Priority, EXCHANGE_INPUT_OFFSET, MSG_TYPE_INFER_REQ};
use synaptic_serve::loopback::{Loopback, RegionBuffer, KWS, RING};
use synaptic_serve::protocol::infer_payload_len;

/// An input for KWS that differs for each `seq`.
fn kws_input(seq: u8) -> Vec<u8> {
    (0..KWS.input_len())
        .map(|i| (i as u8).wrapping_mul(7) ^ seq)
        .collect()
}

/// The slot a lone KWS inference of a fresh client takes (the smallest
/// that fits: the last).
fn kws_slot(cores: &Loopback<'_>) -> usize {
    cores.region().slot_count() - 1
}

/// As the previous life: stage `input` for KWS in slot `slot` and push an
/// `INFER_REQ` with id `msg_id` naming it (or, with `slot` `None`, naming
/// no slot: CPU0 refuses it at once).
fn push_kws(cores: &mut Loopback<'_>, msg_id: u32, slot: Option<usize>, input: &[u8]) {
    let region = cores.region();
    let exchange = region.exchange(slot.unwrap_or(0)).expect("a slot");
    let payload_offset = match slot {
        Some(_) => {
            exchange.set_request(cores.kws().raw(), input.len() as u32);
            cores.write_shared(exchange.offset() + EXCHANGE_INPUT_OFFSET, input);
            exchange.offset() as u32
        }
        None => 0,
    };
    let request = Message {
        msg_id,
        msg_type: MSG_TYPE_INFER_REQ,
        priority: Priority::Normal as u8,
        payload_len: infer_payload_len(input.len(), exchange.input_capacity()).expect("fits"),
        payload_offset,
        timestamp_us: 0,
        status: 0,
    };
    cores.cpu1_push(request).expect("room on the ring");
}

/// Replies CPU0 has pushed so far (the reply ring's head: nobody pops).
fn replies_waiting(cores: &Loopback<'_>) -> u32 {
    let head = ring_offset::<RING>(Direction::Cpu0ToCpu1) + RING_HEAD_OFFSET;
    let mut word = [0u8; 4];
    assert_eq!(cores.read_shared(head, &mut word), 4);
    u32::from_le_bytes(word)
}

/// As the previous life before it dies: write the head of its own ring
/// back to 0, and let CPU0 step once (it resynchronises to that head).
fn rewind_head_and_die(cores: &mut Loopback<'_>) {
    let head = ring_offset::<RING>(Direction::Cpu1ToCpu0) + RING_HEAD_OFFSET;
    assert_eq!(cores.write_shared(head, &0u32.to_le_bytes()), 4);
    cores.step_cpu0();
}

/// One KWS inference by the rebooted CPU1 on `input`: exactly the stub
/// NPU's output for it, at the first attempt.
fn assert_first_inference_correct(cores: &mut Loopback<'_>, input: &[u8]) {
    cores.reboot_cpu1().expect("attach");
    let kws = cores.kws();
    let mut output = [0u8; 12];
    let result = cores.infer(kws, input, &mut output);
    assert_eq!(result, Ok(KWS.output), "the new life's own reply");
    assert_eq!(
        output.to_vec(),
        cores.expected_output(kws, input),
        "the output of the new life's input, not an earlier one"
    );
}

#[test]
fn a_served_reply_left_by_a_previous_life_is_not_taken_for_a_new_request_with_its_id_and_slot() {
    let mut buffer = RegionBuffer::new();
    let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
    let slot = kws_slot(&cores);
    // The previous life's request carries id 1 and names the slot the new
    // life's first request will take; CPU0 serves it, and the reply (with
    // the output of *that* input in the slot) is never popped.
    push_kws(&mut cores, 1, Some(slot), &kws_input(1));
    for _ in 0..4 {
        cores.step_cpu0();
    }
    assert_eq!(cores.cpu0_stats().served, 1);
    assert_eq!(replies_waiting(&cores), 1);
    rewind_head_and_die(&mut cores);
    assert_first_inference_correct(&mut cores, &kws_input(2));
}

#[test]
fn a_refusal_left_by_a_previous_life_is_not_taken_for_a_new_request_with_its_id() {
    let mut buffer = RegionBuffer::new();
    let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
    // A request naming no slot: CPU0 refuses it at once (-EFAULT), and the
    // refusal names no slot either, so only its id says whose it is.
    push_kws(&mut cores, 1, None, &kws_input(1));
    cores.step_cpu0();
    assert_eq!(replies_waiting(&cores), 1);
    rewind_head_and_die(&mut cores);
    assert_first_inference_correct(&mut cores, &kws_input(2));
}

#[test]
fn replies_a_previous_life_left_in_both_forms_are_all_discarded_and_the_next_life_serves() {
    let mut buffer = RegionBuffer::new();
    let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
    let slot = kws_slot(&cores);
    // Ids 1, 2 and 3, as a new life numbers its first requests: a refusal,
    // a served reply naming the new life's first slot, another refusal.
    push_kws(&mut cores, 1, None, &kws_input(1));
    push_kws(&mut cores, 2, Some(slot), &kws_input(2));
    push_kws(&mut cores, 3, None, &kws_input(3));
    for _ in 0..4 {
        cores.step_cpu0();
    }
    rewind_head_and_die(&mut cores);
    cores.reboot_cpu1().expect("attach");
    let kws = cores.kws();
    for seq in 10..14 {
        let input = kws_input(seq);
        let mut output = [0u8; 12];
        assert_eq!(cores.infer(kws, &input, &mut output), Ok(KWS.output));
        assert_eq!(output.to_vec(), cores.expected_output(kws, &input));
    }
    let client = cores.client().expect("client").stats();
    assert_eq!(client.delivered, 4, "only the new life's replies");
    // Dropped unread while it synchronised: the previous life's three and
    // the answer to its own sync request (indistinguishable from them).
    assert_eq!(client.stale, 4, "{client:?}");
    assert_eq!(client.discarded, 0, "{client:?}");
    assert_eq!(cores.held_slots(), 0);
}
