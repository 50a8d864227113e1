//! A CPU1 that pushes as fast as it can, never waiting for an answer, does
//! not hold CPU0: the intake takes one ring's worth per doorbell, the
//! serving thread keeps running (a local job started during the flood
//! finishes during it), and once the flood stops the link serves a
//! correct inference.

use std::time::{Duration, Instant};

use synaptic_abi::{MessageType, Priority, ValidMessage};
use synaptic_ipc::Timeout;
use synaptic_serve::protocol::infer_payload_len;
use synaptic_sim::{expected_output, fill_input, run, Cpu0Config, LocalJob, KWS, RING};

const FLOOD: Duration = Duration::from_millis(300);
const PATIENCE: Duration = Duration::from_secs(10);
const LONG: Timeout = Timeout::Millis(10_000);

#[test]
fn a_flooding_cpu1_does_not_hold_cpu0() {
    let local = LocalJob {
        pre_stages: 2,
        post_stages: 2,
        preemptible: true,
        priority: Priority::BestEffort,
    };
    let config = Cpu0Config {
        local_job: Some(local),
        ..Cpu0Config::default()
    };
    let ((pushed, refused, local_done, largest_batch), cpu0) = run(config, |sim| {
        let (handle, _) = sim.cpu1(|cpu1| cpu1.lookup(&KWS, LONG).expect("kws"));
        let (pushed, refused, local_done) = sim.cpu1_raw(|cpu1| {
            sim.cpu0().start_local_job();
            let start = Instant::now();
            let (mut pushed, mut refused) = (0u32, 0u32);
            let mut local_done = None;
            // At least FLOOD long, and on until the local job is done (at
            // most PATIENCE: a loaded machine may take a while).
            while (start.elapsed() < FLOOD || local_done.is_none()) && start.elapsed() < PATIENCE {
                let ping = ValidMessage::new(MessageType::StatusReq, Priority::Normal);
                match cpu1.try_send(ping) {
                    Ok(_) => pushed += 1,
                    Err(_) => refused += 1,
                }
                if local_done.is_none() && sim.cpu0().local_steps() == local.steps() as u32 {
                    local_done = Some(start.elapsed());
                }
            }
            (pushed, refused, local_done)
        });
        // The flood is over: a well-behaved request is served.
        sim.cpu1_raw(|cpu1| {
            while cpu1.receive(Duration::from_millis(20)).is_some() {}
            let region = cpu1.region();
            let slot = region.exchange(1).expect("a small slot");
            slot.set_request(handle.raw(), KWS.input_len() as u32);
            // SAFETY: this CPU1 owns the slot until its request is sent.
            let input = unsafe { &mut slot.input_mut()[..KWS.input_len()] };
            fill_input(7, input);
            let expected = expected_output(handle, input, KWS.output);
            let id = cpu1.send(ValidMessage {
                payload_offset: region.slot_offset(1).expect("slot 1") as u32,
                payload_len: infer_payload_len(KWS.input_len(), slot.input_capacity())
                    .expect("payload"),
                ..ValidMessage::new(MessageType::InferReq, Priority::Normal)
            });
            let reply = loop {
                let r = cpu1.receive(Duration::from_secs(10)).expect("a reply");
                if r.msg_id == id {
                    break r;
                }
            };
            assert_eq!(reply.status, KWS.output as i32);
            // SAFETY: the reply handed the slot back.
            let output = unsafe { &slot.output()[..KWS.output] };
            assert_eq!(output, &expected[..]);
        });
        (pushed, refused, local_done, sim.cpu0().largest_batch())
    });
    println!(
        "flood: {pushed} status requests pushed and {refused} refused (ring full) in at least {} ms; \
         largest batch per doorbell {}, replies lost {}; local job finished after {:?}",
        FLOOD.as_millis(),
        largest_batch,
        cpu0.intake.reply_failures,
        local_done
    );
    assert!(refused > 0, "the flood outran CPU0 (the ring filled)");
    assert!(
        largest_batch as usize <= RING,
        "one ring's worth per doorbell"
    );
    assert!(
        local_done.is_some(),
        "the serving thread ran during the flood"
    );
}
