//! Error propagation end to end: the stub NPU fails every third invoke (and
//! any input starting with 0x7F); the failure travels from the runtime's
//! job error through the serving layer's INFER_RESP status to the CPU1
//! caller's return value as the runtime's negative errno (-EIO).

use std::num::NonZeroU32;

use synaptic_abi::{Errno, Priority};
use synaptic_ipc::Timeout;
use synaptic_runtime::npu::FAIL_MARKER;
use synaptic_serve::ClientError;
use synaptic_sim::{fill_input, run, Cpu0Config, Sim, FACE, KWS};

const TIMEOUT: Timeout = Timeout::Millis(30_000);

/// The `infer_status` word of slot `slot`'s header.
fn header_status(sim: &Sim<'_>, slot: usize) -> i32 {
    sim.region()
        .exchange(slot)
        .expect("a slot of the geometry")
        .read_header()
        .infer_status
}

#[test]
fn stub_npu_failures_reach_the_cpu1_caller_as_the_runtimes_errno() {
    let config = Cpu0Config {
        fail_every: NonZeroU32::new(3),
        fail_on_marker: true,
        ..Cpu0Config::default()
    };
    let ((results, headers), cpu0) = run(config, |sim| {
        let (outcome, cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, TIMEOUT).unwrap();
            let kws = cpu1.lookup(&KWS, TIMEOUT).unwrap();
            let mut results = Vec::new();
            let mut headers = Vec::new();
            for seq in 1..=30u32 {
                let (model, handle) = if seq % 2 == 0 {
                    (&FACE, face)
                } else {
                    (&KWS, kws)
                };
                // One caller: KWS always gets the smallest slot (3), FACE
                // fits the frame slot (0) only.
                let slot = if model == &FACE { 0 } else { 3 };
                let r = cpu1.infer(model, handle, seq, Priority::Normal, TIMEOUT);
                results.push(r.map(|c| c.correct && c.len == model.output && c.slot == slot));
                headers.push(header_status(sim, slot));
            }
            // Invoke 31: the marker alone fails it; 32 succeeds; 33 fails again.
            for seq in 31..=33u32 {
                let marked = seq == 31;
                let r = cpu1.infer_with(&KWS, kws, Priority::RealTime, TIMEOUT, |input| {
                    fill_input(seq, input);
                    if marked {
                        input[0] = FAIL_MARKER;
                    }
                });
                results.push(r.map(|c| c.correct && c.len == KWS.output && c.slot == 3));
                headers.push(header_status(sim, 3));
            }
            (results, headers)
        });
        assert_eq!(cpu1.client.timeouts, 0);
        assert_eq!(cpu1.client.discarded, 0);
        assert_eq!(cpu1.client.delivered, 2 + 33);
        outcome
    });
    let io = ClientError::Remote(Errno::Io);
    for (k, r) in results.iter().enumerate() {
        let invoke = k + 1;
        let expect_failure = invoke % 3 == 0 || invoke == 31;
        if expect_failure {
            assert_eq!(*r, Err(io), "invoke {invoke}");
            let errno = r.unwrap_err().to_errno().negative();
            assert_eq!(errno, -5, "the caller sees -EIO");
            assert_eq!(
                headers[k], -5,
                "slot header infer_status of invoke {invoke}"
            );
        } else {
            assert_eq!(*r, Ok(true), "invoke {invoke}: correct output");
            assert_eq!(headers[k], 0);
        }
    }
    let failures = results.iter().filter(|r| r.is_err()).count();
    assert_eq!(failures, 12);
    let s = cpu0.stats;
    assert_eq!((s.served, s.errors, s.violations), (21, 12, 0));
    assert_eq!(s.timed, 33, "failed inferences are timed too");
    println!("npu failures: {failures} of 33 inferences failed with -EIO as injected; CPU0 {s:?}");
}
