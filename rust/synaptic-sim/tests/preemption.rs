//! Remote requests in CPU0's priority space: a remote REALTIME request that
//! arrives while a local preemptible NORMAL job is in the middle of a stage
//! is served right after that stage, before any further local stage.
//! Measured in stage counts and on CPU0's fake clock, never in wall time.
//!
//! The local job is 8 preprocessing stages, the KWS model, 8 postprocessing
//! stages (17 steps, each stage 250 us of fake time, each invoke 1000 us).
//! CPU0's serving thread is held in the middle of its 6th step (5 done);
//! CPU1 sends the request, the test waits until CPU0's intake has
//! forwarded it to the serving thread, then lets the stage finish.

use std::thread;

use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_sim::{run, Cpu0Config, Event, LocalJob, FACE, STAGE_US};

const NPU_US: u64 = 1000;
const HELD_AFTER: u32 = 5;
const LONG: Timeout = Timeout::Millis(30_000);

/// What one scenario measured.
#[derive(Debug)]
struct Measured {
    /// Local steps completed when the request was sent.
    sent_at: u32,
    /// Local steps completed when CPU0 accepted it.
    accepted_at: u32,
    /// Local steps completed when CPU0 answered it.
    answered_at: u32,
    /// Fake time from the start of the stage in progress at arrival to the answer.
    arrival_to_answer_us: u64,
    /// Fake time from acceptance to the answer.
    accept_to_answer_us: u64,
    /// Local steps completed when the local job finished.
    local_done_at: u32,
    /// Whether the local job finished after the remote answer.
    local_after_remote: bool,
}

fn scenario(local: LocalJob, remote: Priority) -> Measured {
    let config = Cpu0Config {
        npu_latency_us: NPU_US,
        fake_time: true,
        local_job: Some(local),
        ..Cpu0Config::default()
    };
    let (sent_at, cpu0) = run(config, |sim| {
        let (sent_at, _) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            sim.cpu0().hold_in_local_step(HELD_AFTER);
            sim.cpu0().start_local_job();
            sim.cpu0().wait_parked();
            let sent_at = sim.cpu0().local_steps();
            let queued = sim.cpu0().forwarded();
            thread::scope(|s| {
                let caller = s.spawn(|| cpu1.infer(&FACE, face, 7, remote, LONG));
                // The request reached CPU0 while the stage is in progress.
                sim.wait_for(|c| c.forwarded() > queued);
                sim.cpu0().resume();
                let r = caller.join().unwrap();
                assert_eq!(r.map(|c| c.correct), Ok(true));
            });
            // Let the local job run out before stopping CPU0.
            sim.wait_for(|c| c.local_steps() == local.steps() as u32);
            sent_at
        });
        sent_at
    });
    let events = &cpu0.events;
    let infer_id = 2; // 1 was the lookup
    let accepted = events
        .iter()
        .find_map(|e| match *e {
            Event::Accepted {
                msg_id,
                local_steps,
                at_us,
            } if msg_id == infer_id => Some((local_steps, at_us)),
            _ => None,
        })
        .expect("accepted");
    let (answered_index, answered) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match *e {
            Event::Answered {
                msg_id,
                local_steps,
                at_us,
                status,
            } if msg_id == infer_id => {
                assert_eq!(status, FACE.output as i32);
                Some((i, (local_steps, at_us)))
            }
            _ => None,
        })
        .expect("answered");
    let stage_start = events
        .iter()
        .find_map(|e| match *e {
            Event::Step {
                remote: false,
                local_steps,
                at_us,
                ..
            } if local_steps == sent_at => Some(at_us),
            _ => None,
        })
        .expect("the step before the held one");
    let (local_done_index, local_done_at) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match *e {
            Event::LocalDone {
                ok: true,
                local_steps,
                ..
            } => Some((i, local_steps)),
            _ => None,
        })
        .expect("local job done");
    let remote_steps = events
        .iter()
        .filter(|e| matches!(e, Event::Step { remote: true, .. }))
        .count();
    assert_eq!(remote_steps, 1, "the remote job is one model step");
    Measured {
        sent_at,
        accepted_at: accepted.0,
        answered_at: answered.0,
        arrival_to_answer_us: answered.1 - stage_start,
        accept_to_answer_us: answered.1 - accepted.1,
        local_done_at,
        local_after_remote: local_done_index > answered_index,
    }
}

const LOCAL: LocalJob = LocalJob {
    pre_stages: 8,
    post_stages: 8,
    preemptible: true,
    priority: Priority::Normal,
};

#[test]
fn a_remote_realtime_request_is_served_within_one_stage_of_a_preemptible_local_job() {
    let m = scenario(LOCAL, Priority::RealTime);
    println!("preemptible local NORMAL job, remote REALTIME: {m:?}");
    assert_eq!(m.sent_at, HELD_AFTER, "sent while step 6 was in progress");
    // Accepted once the stage in progress ended: one stage, no more.
    assert_eq!(m.accepted_at - m.sent_at, 1);
    // Answered before any further local stage ran.
    assert_eq!(m.answered_at, m.accepted_at);
    // In fake time: the rest of the stage in progress, then the invoke.
    assert_eq!(m.accept_to_answer_us, NPU_US);
    assert_eq!(m.arrival_to_answer_us, STAGE_US + NPU_US);
    // The local job resumed afterwards and completed all 17 steps.
    assert!(m.local_after_remote);
    assert_eq!(m.local_done_at, 17);
}

#[test]
fn a_non_preemptible_local_job_runs_to_completion_first() {
    let local = LocalJob {
        preemptible: false,
        ..LOCAL
    };
    let m = scenario(local, Priority::RealTime);
    println!("non-preemptible local NORMAL job, remote REALTIME: {m:?}");
    assert_eq!(m.accepted_at - m.sent_at, 1);
    // The remote request waited for the local job's remaining 11 steps:
    // 10 stages and the local invoke, then its own invoke.
    assert_eq!(m.answered_at, 17);
    assert_eq!(m.accept_to_answer_us, 10 * STAGE_US + 2 * NPU_US);
    assert!(!m.local_after_remote);
}

#[test]
fn a_remote_request_of_the_same_class_waits_its_turn() {
    let m = scenario(LOCAL, Priority::Normal);
    println!("preemptible local NORMAL job, remote NORMAL: {m:?}");
    // FIFO within a class: the earlier local job finishes first.
    assert_eq!(m.answered_at, 17);
    assert!(!m.local_after_remote);
}
