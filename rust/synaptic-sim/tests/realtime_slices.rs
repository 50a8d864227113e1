//! A REALTIME job and a sliced CPU device: the NPU is handed to the job as
//! it frees, not after the CPU slice in progress, and the job's own end is
//! seen as it happens.
//!
//! One fake clock. The NPU (stub) takes `NPU_US` per run; the CPU device is
//! a sliced stub that runs only when polled, `SLICE_US` of fake time per poll
//! (as a sliced interpreter runs one operator per poll), `CPU_US` in all.
//! `NPU_US` is not a multiple of `SLICE_US`: the NPU finishes inside a
//! slice. The caller loop is a server's: submit what has arrived, step,
//! and on `Waiting` let time pass (one µs at a time) until a device ends.

use synaptic_abi::Priority;
use synaptic_runtime::arena::{TensorMeta, TensorRef};
use synaptic_runtime::device::{Device, DeviceMask};
use synaptic_runtime::npu::NpuDevice;
use synaptic_runtime::pipeline::{PipelineId, PipelinePool};
use synaptic_runtime::registry::{ModelDesc, Registry};
use synaptic_runtime::sched::{JobId, JobRequest, JobStatus, Scheduler, StepOutcome};
use synaptic_runtime::time::{Clock, FakeClock};
use synaptic_sim::devices::{self, Stub, TimedStub};

const NPU_US: u64 = 1_050;
const CPU_US: u64 = 5_000;
const SLICE_US: u64 = 100;

/// When each job finished, by the clock.
struct Finished {
    npu_job: u64,
    realtime: u64,
    cpu_job: u64,
}

/// A NORMAL job on the NPU and one on the CPU start at 0; a REALTIME job
/// for the NPU arrives at `rt_at_us`. Runs all three to the end.
fn scenario(rt_at_us: u64) -> Finished {
    let clock: &'static FakeClock = Box::leak(Box::new(FakeClock::new(0)));
    let mut registry: Registry<4> = Registry::new();
    let mut pool: PipelinePool<4, 4> = PipelinePool::new();
    let mut model = |name, devices| {
        let desc = ModelDesc {
            devices,
            ..ModelDesc::tflite(name, &[4], 4, b"stub").unwrap()
        };
        let h = registry.register(&desc).unwrap();
        let p = pool.create(name).unwrap();
        pool.add_model(p, h).unwrap();
        pool.build(p).unwrap();
        (h, p)
    };
    let (on_npu_model, on_npu): (_, PipelineId) = model("npu", DeviceMask::NPU);
    let (_, on_cpu) = model("cpu", DeviceMask::CPU_INTERPRETER);
    // The NPU's time for its model is known (learnt from earlier runs).
    registry
        .record_service_time(on_npu_model, Device::Npu, NPU_US)
        .unwrap();
    let mut npu = Stub::new(clock, 1);
    npu.init().unwrap();
    npu.set_latency_us(NPU_US);
    let mut cpu = TimedStub::new(clock, 2, u64::MAX).sliced(SLICE_US);
    cpu.stub.set_latency_us(CPU_US);
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    let meta = TensorMeta::vector(synaptic_runtime::arena::DType::Int8, 4).unwrap();
    static INPUT: [u8; 4] = [1, 2, 3, 4];
    let input = || TensorRef::wrap(meta, &INPUT).unwrap();
    let normal = sched
        .submit(JobRequest::new(on_npu, input()), &pool, clock)
        .unwrap();
    let on_cpu_job = sched
        .submit(JobRequest::new(on_cpu, input()), &pool, clock)
        .unwrap();
    let mut realtime: Option<JobId> = None;
    let mut finished = [None::<u64>; 3];
    for _ in 0..100_000 {
        if realtime.is_none() && clock.now_us() >= rt_at_us {
            let request = JobRequest {
                priority: Priority::RealTime,
                ..JobRequest::new(on_npu, input())
            };
            realtime = Some(sched.submit(request, &pool, clock).unwrap());
        }
        let outcome = devices::step(&mut sched, &mut registry, &mut npu, &mut cpu, &pool, clock);
        for (k, job) in [Some(normal), realtime, Some(on_cpu_job)]
            .into_iter()
            .enumerate()
        {
            if let (Some(job), None) = (job, finished[k]) {
                if matches!(sched.status(job), Ok(JobStatus::Done(_))) {
                    finished[k] = Some(clock.now_us());
                }
            }
        }
        match outcome {
            StepOutcome::Ran { .. } => {}
            StepOutcome::Waiting => clock.advance(1),
            StepOutcome::Idle if realtime.is_none() => clock.advance(1),
            StepOutcome::Idle => break,
        }
    }
    let [Some(npu_job), Some(realtime), Some(cpu_job)] = finished else {
        panic!("not every job finished: {finished:?}");
    };
    Finished {
        npu_job,
        realtime,
        cpu_job,
    }
}

#[test]
fn a_realtime_job_gets_the_npu_as_it_frees_not_after_a_slice() {
    // The REALTIME job arrives during the first slice, while the NORMAL
    // job holds the NPU until 1050 (inside the slice 1000..1100).
    let rt_at_us = 30;
    let f = scenario(rt_at_us);
    // The NORMAL job's end is seen as it happens, the REALTIME job starts
    // then and its own end is seen as it happens: its latency is the stage
    // it waited for plus its own service time, to the µs.
    assert_eq!(f.npu_job, NPU_US);
    assert_eq!(f.realtime, 2 * NPU_US);
    assert_eq!(f.realtime - rt_at_us, (NPU_US - rt_at_us) + NPU_US);
    // The CPU slices put off for it cost the CPU job at most one slice
    // each (one for the hand-over, one for the job's end).
    assert!(f.cpu_job >= CPU_US, "{}", f.cpu_job);
    assert!(f.cpu_job <= CPU_US + 2 * SLICE_US, "{}", f.cpu_job);
}

#[test]
fn a_realtime_job_arriving_in_the_slice_that_frees_the_npu_still_gets_it_first() {
    // The REALTIME job arrives inside the slice (1000..1100) in which the
    // NORMAL job ends, after it ended: the NPU was free but the scheduler
    // could not see the job until the slice returned. It still starts
    // before any further slice, at the slice's end.
    let rt_at_us = 1_070;
    let f = scenario(rt_at_us);
    // Nothing REALTIME waited for the NPU then: the NORMAL job's end was
    // seen after the slice.
    assert_eq!(f.npu_job, 1_100);
    assert_eq!(f.realtime, 1_100 + NPU_US);
    assert!(f.cpu_job <= CPU_US + 2 * SLICE_US, "{}", f.cpu_job);
}
