//! Placement policies and service-time predictions through the scheduler.
//!
//! Two stub devices on one fake clock stand for the NPU (`NPU_US` per run,
//! seed 1) and the CPU interpreter (`CPU_US` per run, seed 2: a different
//! output function, and its own invoke counter, tell which device ran).
//! Everything asserted is a decision or a figure the fake clock makes
//! exact, never a speed.

use synaptic_runtime::arena::{TensorMeta, TensorRef};
use synaptic_runtime::device::{Device, DeviceMask, Policy};
use synaptic_runtime::npu::{NpuDevice, StubNpu, FAIL_MARKER};
use synaptic_runtime::pipeline::{PipelineId, PipelinePool};
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry};
use synaptic_runtime::sched::{Env, JobId, JobRequest, Scheduler, StepOutcome};
use synaptic_runtime::time::FakeClock;

const NPU_US: u64 = 1_000;
const CPU_US: u64 = 1_500;

type Stub = StubNpu<&'static FakeClock, 64, 16>;
type RigEnv<'e> = Env<'e, Stub, FakeClock, 4, 4, 4>;

struct Rig {
    clock: &'static FakeClock,
    registry: Registry<4>,
    npu: Stub,
    cpu: Stub,
    pool: PipelinePool<4, 4>,
    /// A model for both devices, and one for the NPU only.
    both: (ModelHandle, PipelineId),
    npu_only: (ModelHandle, PipelineId),
}

fn stub(clock: &'static FakeClock, seed: u32, latency_us: u64) -> Stub {
    let mut s = StubNpu::new(clock, seed);
    s.init().unwrap();
    s.set_latency_us(latency_us);
    s
}

impl Rig {
    fn new() -> Rig {
        let clock: &'static FakeClock = Box::leak(Box::new(FakeClock::new(0)));
        let mut registry = Registry::new();
        let mut pool = PipelinePool::new();
        let mut model = |desc: ModelDesc<'static>| {
            let h = registry.register(&desc).unwrap();
            let p = pool.create(desc.name).unwrap();
            pool.add_model(p, h).unwrap();
            pool.build(p).unwrap();
            (h, p)
        };
        let both = model(ModelDesc {
            devices: DeviceMask::ALL,
            ..ModelDesc::tflite("both", &[8], 4, b"any image: the stub ignores it").unwrap()
        });
        let npu_only = model(ModelDesc::int8("npu", &[8], 4).unwrap());
        Rig {
            clock,
            registry,
            npu: stub(clock, 1, NPU_US),
            cpu: stub(clock, 2, CPU_US),
            pool,
            both,
            npu_only,
        }
    }

    fn env(&mut self) -> RigEnv<'_> {
        Env {
            registry: &mut self.registry,
            npu: &mut self.npu,
            cpu: Some(&mut self.cpu),
            pipelines: &self.pool,
            clock: self.clock,
            profiler: None,
        }
    }

    /// The invokes of (NPU, CPU) so far.
    fn invokes(&self) -> (u32, u32) {
        (self.npu.invoke_count(), self.cpu.invoke_count())
    }

    /// (estimate, samples) of `model` on `device`.
    fn predicted(&self, model: ModelHandle, device: Device) -> (Option<u32>, u32) {
        let t = self.registry.service_time(model, device).unwrap();
        (t.estimate_us(), t.samples())
    }
}

fn input(bytes: &'static [u8; 8]) -> TensorRef<'static> {
    TensorRef::wrap(
        TensorMeta::vector(synaptic_runtime::arena::DType::Int8, 8).unwrap(),
        bytes,
    )
    .unwrap()
}

static DATA: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
static BAD: [u8; 8] = [FAIL_MARKER; 8];

/// Runs one job of pipeline `p` to the end; returns the device it ran on.
fn run_one<const CPU: bool>(
    sched: &mut Scheduler<'_, 2, CPU>,
    rig: &mut Rig,
    p: PipelineId,
    data: &'static [u8; 8],
) -> Device {
    let before = rig.invokes();
    let mut out = [0u8; 4];
    let _ = sched.run_sync(JobRequest::new(p, input(data)), &mut out, &mut rig.env());
    let after = rig.invokes();
    match (after.0 - before.0, after.1 - before.1) {
        (1, 0) => Device::Npu,
        (0, 1) => Device::CpuInterpreter,
        other => panic!("one device runs a step: {other:?}"),
    }
}

/// Submits one job of each pipeline in `pipelines` and steps them all to
/// the end, moving the clock while a step waits on a device.
fn run_all<const J: usize, const CPU: bool>(
    sched: &mut Scheduler<'_, J, CPU>,
    rig: &mut Rig,
    pipelines: &[PipelineId],
) {
    for &p in pipelines {
        sched
            .submit(JobRequest::new(p, input(&DATA)), &rig.pool, rig.clock)
            .unwrap();
    }
    loop {
        match sched.step(&mut rig.env()) {
            StepOutcome::Waiting => rig.clock.advance(1),
            StepOutcome::Idle => break,
            StepOutcome::Ran { .. } => {}
        }
    }
}

/// Firmware without a CPU device builds its scheduler with `CPU = false`:
/// every step runs on the NPU whatever the policy, even with a CPU device
/// in the environment, run to the end or overlapped. (With `CPU = true` the
/// same rig runs `CpuOnly` on the CPU, so the device is there to be used.)
#[test]
fn a_scheduler_built_without_a_cpu_device_never_uses_one() {
    let mut rig = Rig::new();
    let (_, p) = rig.both;
    for policy in Policy::ALL {
        let mut work = [0u8; 512];
        let mut sched: Scheduler<'_, 2, false> = Scheduler::new(&mut work);
        sched.set_policy(policy);
        for _ in 0..3 {
            assert_eq!(
                run_one(&mut sched, &mut rig, p, &DATA),
                Device::Npu,
                "{policy:?}"
            );
        }
        // Overlapped: three jobs at once, the clock moved while one waits.
        let mut work = [0u8; 512];
        let mut sched: Scheduler<'_, 4, false> = Scheduler::new(&mut work);
        sched.set_overlap(true).unwrap();
        sched.set_policy(policy);
        let before = rig.invokes();
        run_all(&mut sched, &mut rig, &[p; 3]);
        let after = rig.invokes();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (3, 0),
            "{policy:?}"
        );
    }
    assert_eq!(rig.predicted(rig.both.0, Device::CpuInterpreter).1, 0);
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    sched.set_policy(Policy::CpuOnly);
    assert_eq!(
        run_one(&mut sched, &mut rig, p, &DATA),
        Device::CpuInterpreter
    );
}

#[test]
fn predictions_learn_each_devices_measured_time_and_skip_failed_runs() {
    let mut rig = Rig::new();
    let (h, p) = rig.both;
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    assert_eq!(rig.predicted(h, Device::Npu), (None, 0));

    sched.set_policy(Policy::CpuOnly);
    for _ in 0..3 {
        assert_eq!(
            run_one(&mut sched, &mut rig, p, &DATA),
            Device::CpuInterpreter
        );
    }
    sched.set_policy(Policy::NpuOnly);
    for _ in 0..2 {
        assert_eq!(run_one(&mut sched, &mut rig, p, &DATA), Device::Npu);
    }
    assert_eq!(rig.predicted(h, Device::CpuInterpreter), (Some(1_500), 3));
    assert_eq!(rig.predicted(h, Device::Npu), (Some(1_000), 2));

    // A failed run is not a service time.
    rig.npu.fail_on_marker(true);
    assert_eq!(run_one(&mut sched, &mut rig, p, &BAD), Device::Npu);
    assert_eq!(rig.predicted(h, Device::Npu), (Some(1_000), 2));
    rig.npu.fail_on_marker(false);

    // Overlap, a device that does not time its runs: the asynchronous step
    // is timed start to collection. Collected as the device finishes: 1000
    // again. Collected 800 late: the sample is 1800 and the estimate moves
    // 1/8 of the way, to 1100. A device that times its runs: the sample is
    // its 1000 however late the collection, and the estimate moves back
    // 1/8 of the way, to 1088.
    sched.set_overlap(true).unwrap();
    for (timed, late, expected) in [
        (false, 0, (Some(1_000), 3)),
        (false, 800, (Some(1_100), 4)),
        (true, 800, (Some(1_088), 5)),
    ] {
        rig.npu.set_timed(timed);
        let id = sched
            .submit(JobRequest::new(p, input(&DATA)), &rig.pool, rig.clock)
            .unwrap();
        assert!(matches!(
            sched.step(&mut rig.env()),
            StepOutcome::Ran {
                finished: false,
                ..
            }
        ));
        rig.clock.advance(NPU_US + late);
        assert!(matches!(
            sched.step(&mut rig.env()),
            StepOutcome::Ran { finished: true, .. }
        ));
        sched.release(id).unwrap();
        assert_eq!(
            rig.predicted(h, Device::Npu),
            expected,
            "timed {timed} late {late}"
        );
    }
    // The other model learnt nothing.
    assert_eq!(rig.predicted(rig.npu_only.0, Device::Npu), (None, 0));
}

#[test]
fn without_a_cpu_device_the_npu_still_learns() {
    let mut rig = Rig::new();
    let (h, p) = rig.npu_only;
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    sched.set_policy(Policy::CpuOnly);
    let mut out = [0u8; 4];
    let mut env = Env {
        cpu: None,
        ..rig.env()
    };
    sched
        .run_sync(JobRequest::new(p, input(&DATA)), &mut out, &mut env)
        .unwrap();
    assert_eq!(rig.predicted(h, Device::Npu), (Some(1_000), 1));
    assert_eq!(rig.invokes(), (1, 0));
}

/// What the second job's model step does while the first job's step has
/// run `ran_us` of its 1000 µs on the NPU (overlap mode), under `policy`.
#[derive(Debug, PartialEq, Eq)]
enum Second {
    /// It waits for the NPU.
    WaitsForNpu,
    /// It ran on the CPU interpreter, to the end.
    RanOnCpu,
}

fn second_step(policy: Policy, ran_us: u64) -> Second {
    let mut rig = Rig::new();
    // Predictions as if measured: NPU 1000 (both models), CPU 1500.
    rig.registry
        .record_service_time(rig.npu_only.0, Device::Npu, NPU_US)
        .unwrap();
    rig.registry
        .record_service_time(rig.both.0, Device::Npu, NPU_US)
        .unwrap();
    rig.registry
        .record_service_time(rig.both.0, Device::CpuInterpreter, CPU_US)
        .unwrap();
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    sched.set_policy(policy);
    let first: JobId = sched
        .submit(
            JobRequest::new(rig.npu_only.1, input(&DATA)),
            &rig.pool,
            rig.clock,
        )
        .unwrap();
    let second = sched
        .submit(
            JobRequest::new(rig.both.1, input(&DATA)),
            &rig.pool,
            rig.clock,
        )
        .unwrap();
    assert_eq!(
        sched.step(&mut rig.env()),
        StepOutcome::Ran {
            job: first,
            step: 0,
            finished: false
        }
    );
    rig.clock.advance(ran_us);
    let outcome = sched.step(&mut rig.env());
    match outcome {
        StepOutcome::Waiting => {
            assert_eq!(rig.invokes(), (0, 0));
            Second::WaitsForNpu
        }
        StepOutcome::Ran {
            job,
            finished: true,
            ..
        } if job == second => {
            assert_eq!(rig.invokes(), (0, 1));
            Second::RanOnCpu
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_policy_places_a_step_while_the_npu_is_busy_as_documented() {
    use Second::{RanOnCpu, WaitsForNpu};
    assert_eq!(second_step(Policy::NpuOnly, 0), WaitsForNpu);
    assert_eq!(second_step(Policy::CpuOnly, 0), RanOnCpu);
    assert_eq!(second_step(Policy::BusyAware, 0), RanOnCpu);
    assert_eq!(second_step(Policy::BusyAware, 900), RanOnCpu);
    // EFT: the NPU finishes 1000 left + 1000 later, the CPU 1500 later.
    assert_eq!(second_step(Policy::EarliestFinish, 0), RanOnCpu);
    // 600 in: 400 left + 1000 = 1400 < 1500, so the step waits for the NPU.
    assert_eq!(second_step(Policy::EarliestFinish, 600), WaitsForNpu);
    // 500 in: 1500 each, a tie, the NPU.
    assert_eq!(second_step(Policy::EarliestFinish, 500), WaitsForNpu);
    // 499 in: 1501 against 1500.
    assert_eq!(second_step(Policy::EarliestFinish, 499), RanOnCpu);
}

#[test]
fn earliest_finish_on_idle_devices_takes_the_faster_and_learns_an_unmeasured_one_first() {
    let mut rig = Rig::new();
    let (h, p) = rig.both;
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    sched.set_policy(Policy::EarliestFinish);
    // Nothing measured: both count 0, a tie, the NPU; then the CPU, still
    // unmeasured, counts 0 against the NPU's 1000.
    assert_eq!(run_one(&mut sched, &mut rig, p, &DATA), Device::Npu);
    assert_eq!(
        run_one(&mut sched, &mut rig, p, &DATA),
        Device::CpuInterpreter
    );
    // Measured: the NPU (1000) beats the CPU (1500) every time.
    for _ in 0..5 {
        assert_eq!(run_one(&mut sched, &mut rig, p, &DATA), Device::Npu);
    }
    assert_eq!(rig.predicted(h, Device::CpuInterpreter), (Some(1_500), 1));
    // The CPU gets faster than the NPU (a slower NPU): EFT follows as the
    // NPU's estimate climbs past 1500.
    rig.npu.set_latency_us(3_000);
    let placed: Vec<Device> = (0..8)
        .map(|_| run_one(&mut sched, &mut rig, p, &DATA))
        .collect();
    // 1000 -> 1250 -> 1469 -> 1660: three more NPU runs, then the CPU.
    assert_eq!(placed[..3], [Device::Npu; 3]);
    assert!(
        placed[3..].iter().all(|d| *d == Device::CpuInterpreter),
        "{placed:?}"
    );
}

#[test]
fn random_placement_is_deterministic_for_a_seed_and_uses_both_devices() {
    let run = |seed: u32| -> Vec<Device> {
        let mut rig = Rig::new();
        let p = rig.both.1;
        let mut work = [0u8; 512];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        sched.set_policy(Policy::Random);
        sched.set_random_seed(seed);
        (0..64)
            .map(|_| run_one(&mut sched, &mut rig, p, &DATA))
            .collect()
    };
    let a = run(12_345);
    assert_eq!(a, run(12_345), "same seed, same placements");
    assert_ne!(a, run(54_321));
    let on_cpu = a.iter().filter(|d| **d == Device::CpuInterpreter).count();
    assert!((16..=48).contains(&on_cpu), "roughly half: {on_cpu} of 64");
    // Seed 0 is not a fixed point: it is the default seed.
    assert_eq!(run(0), run(synaptic_runtime::sched::DEFAULT_RANDOM_SEED));
}

#[test]
fn a_model_for_one_device_runs_there_whatever_the_policy() {
    for policy in Policy::ALL {
        let mut rig = Rig::new();
        let p = rig.npu_only.1;
        let mut work = [0u8; 512];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        sched.set_policy(policy);
        for _ in 0..4 {
            assert_eq!(
                run_one(&mut sched, &mut rig, p, &DATA),
                Device::Npu,
                "{policy:?}"
            );
        }
    }
}

/// The NPU's prediction of `npu_only` after one overlap-mode run of it
/// (NPU latency `npu_latency_us`, prediction `seeded` before) while CPU
/// steps of 1500 µs hold the scheduler's thread: job A (NPU) starts at 0,
/// jobs B and C (CPU only) run 0..1500 and 1500..3000, and A is collected
/// at the first step after the device finished.
fn npu_estimate_after_cpu_steps(
    npu_latency_us: u64,
    seeded: Option<u64>,
    timed: bool,
) -> (Option<u32>, u32) {
    let mut rig = Rig::new();
    rig.npu.set_latency_us(npu_latency_us);
    rig.npu.set_timed(timed);
    let (model, a) = rig.npu_only;
    if let Some(us) = seeded {
        rig.registry
            .record_service_time(model, Device::Npu, us)
            .unwrap();
    }
    let b = rig.both.1;
    let mut work = [0u8; 512];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    sched.set_policy(Policy::CpuOnly);
    // A starts on the NPU; B and C run on the CPU, one per step.
    run_all(&mut sched, &mut rig, &[a, b, b]);
    assert_eq!(rig.invokes(), (1, 2));
    rig.predicted(model, Device::Npu)
}

#[test]
fn a_late_collection_of_an_npu_step_does_not_inflate_its_prediction() {
    // A device that does not time its runs.
    // Done at 1000, collected at 1500 after B's CPU step: the run took
    // between 0 and 1500, the estimate 1000 lies there and stays (the
    // collection time as the sample would have made it 1063).
    assert_eq!(
        npu_estimate_after_cpu_steps(1_000, Some(1_000), false),
        (Some(1_000), 2)
    );
    // Done at 2000: seen busy at 1500, collected at 3000 after C's step.
    // The interval [1500, 3000] rules out 1000: the sample is 1500, and
    // the estimate 7/8 1000 + 1/8 1500 = 1062.5 (not 1250 from 3000).
    assert_eq!(
        npu_estimate_after_cpu_steps(2_000, Some(1_000), false),
        (Some(1_063), 2)
    );
    // No estimate yet: the upper end (1500) seeds it.
    assert_eq!(
        npu_estimate_after_cpu_steps(1_000, None, false),
        (Some(1_500), 1)
    );
    // A device that times its runs: its own 1000 and 2000, whenever
    // collected (2000: 7/8 1000 + 1/8 2000 = 1125).
    assert_eq!(
        npu_estimate_after_cpu_steps(1_000, None, true),
        (Some(1_000), 1)
    );
    assert_eq!(
        npu_estimate_after_cpu_steps(2_000, Some(1_000), true),
        (Some(1_125), 2)
    );
}
