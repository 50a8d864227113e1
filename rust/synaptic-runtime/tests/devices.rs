//! The two execution devices through the scheduler: a model registered for
//! the CPU interpreter gives LiteRT's golden output (`models/golden/`), a
//! model for both runs where the placement says, per-device time lands in
//! the profile, and a model whose devices are absent fails cleanly.

use std::cell::Cell;

use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
use synaptic_runtime::device::{Device, DeviceMask, PlacementQuery, TfliteDevice};
use synaptic_runtime::npu::{stub_output, NpuDevice, NpuError, StubNpu};
use synaptic_runtime::pipeline::PipelinePool;
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry, RegistryError};
use synaptic_runtime::sched::{
    Env, JobError, JobId, JobRequest, JobStatus, SchedError, Scheduler, StepOutcome,
};
use synaptic_runtime::time::{Clock, Delay};

static MICRO_SPEECH: &[u8] = include_bytes!("../../../models/micro_speech.tflite");
static PERSON_DETECT: &[u8] = include_bytes!("../../../models/person_detect.tflite");
static YES: &[u8] = include_bytes!("../../../models/inputs/yes.u8");
static NO: &[u8] = include_bytes!("../../../models/inputs/no.u8");
static PERSON: &[u8] = include_bytes!("../../../models/inputs/person.u8");
static NO_PERSON: &[u8] = include_bytes!("../../../models/inputs/no_person.u8");
static GOLDEN_SPEECH: &str = include_str!("../../../models/golden/micro_speech.txt");
static GOLDEN_PERSON: &str = include_str!("../../../models/golden/person_detect.txt");

const NPU_US: u64 = 500;
/// Every clock reading moves time on by this much, so a step on the CPU
/// device (which has no latency of its own) takes measurable time.
const TICK_US: u64 = 3;
const SEED: u32 = 11;

/// A clock that ticks on every reading and jumps on every delay.
struct TickClock(Cell<u64>);

impl Clock for &TickClock {
    fn now_us(&self) -> u64 {
        let t = self.0.get() + TICK_US;
        self.0.set(t);
        t
    }
}

impl Delay for &TickClock {
    fn delay_us(&self, us: u64) {
        self.0.set(self.0.get() + us);
    }
}

/// The golden output of `input` in a `models/golden/*.txt` file.
fn golden(file: &str, input: &str) -> Vec<u8> {
    let line = file
        .lines()
        .find_map(|l| l.strip_prefix(input).and_then(|r| r.strip_prefix(' ')))
        .expect("golden line");
    (0..line.len() / 2)
        .map(|i| u8::from_str_radix(&line[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The int8 input the models take: unsigned byte minus 128.
fn int8(u8s: &[u8]) -> Vec<u8> {
    u8s.iter().map(|b| b ^ 0x80).collect()
}

fn speech(devices: DeviceMask) -> ModelDesc<'static> {
    ModelDesc {
        devices,
        ..ModelDesc::tflite("kws", &[1, 1960], 4, MICRO_SPEECH).unwrap()
    }
}

fn person(devices: DeviceMask) -> ModelDesc<'static> {
    ModelDesc {
        devices,
        ..ModelDesc::tflite("person", &[1, 96, 96, 1], 2, PERSON_DETECT).unwrap()
    }
}

struct Rig {
    clock: &'static TickClock,
    registry: Registry<4>,
    npu: StubNpu<&'static TickClock, 9216, 16>,
    pool: PipelinePool<4, 4>,
    profiler: Profiler,
}

impl Rig {
    fn new() -> Rig {
        let clock: &'static TickClock = Box::leak(Box::new(TickClock(Cell::new(0))));
        let mut npu = StubNpu::new(clock, SEED);
        npu.init().unwrap();
        npu.set_latency_us(NPU_US);
        let mut profiler = Profiler::new();
        profiler.enable(&clock);
        Rig {
            clock,
            registry: Registry::new(),
            npu,
            pool: PipelinePool::new(),
            profiler,
        }
    }

    /// Registers `desc` and a pipeline that only runs it.
    fn model(
        &mut self,
        desc: &ModelDesc<'_>,
    ) -> (ModelHandle, synaptic_runtime::pipeline::PipelineId) {
        let h = self.registry.register(desc).unwrap();
        let p = self.pool.create(desc.name).unwrap();
        self.pool.add_model(p, h).unwrap();
        self.pool.build(p).unwrap();
        (h, p)
    }

    fn env<'e>(
        &'e mut self,
        cpu: Option<&'e mut dyn NpuDevice>,
    ) -> Env<'e, StubNpu<&'static TickClock, 9216, 16>, &'static TickClock, 4, 4, 4> {
        Env {
            registry: &mut self.registry,
            npu: &mut self.npu,
            cpu,
            pipelines: &self.pool,
            clock: &self.clock,
            profiler: Some(&mut self.profiler),
        }
    }
}

fn tensor(meta: TensorMeta, bytes: &[u8]) -> TensorRef<'_> {
    TensorRef::wrap(meta, bytes).unwrap()
}

/// Runs `input` through pipeline `p` to completion; returns the output bytes.
fn run(
    sched: &mut Scheduler<'_, 2>,
    env: &mut Env<'_, StubNpu<&'static TickClock, 9216, 16>, &'static TickClock, 4, 4, 4>,
    p: synaptic_runtime::pipeline::PipelineId,
    meta: TensorMeta,
    input: &'static [u8],
) -> Result<Vec<u8>, SchedError> {
    let mut out = [0u8; 16];
    let (_, n) = sched.run_sync(JobRequest::new(p, tensor(meta, input)), &mut out, env)?;
    Ok(out[..n].to_vec())
}

fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

#[test]
fn a_cpu_model_gives_litert_golden_output_through_the_scheduler() {
    let mut rig = Rig::new();
    let (_, kws) = rig.model(&speech(DeviceMask::CPU_INTERPRETER));
    let (_, vision) = rig.model(&person(DeviceMask::CPU_INTERPRETER));
    let speech_meta = rig
        .registry
        .info(rig.registry.find("kws").unwrap())
        .unwrap()
        .input;
    let person_meta = rig
        .registry
        .info(rig.registry.find("person").unwrap())
        .unwrap()
        .input;
    let mut arena = vec![0u8; 128 * 1024];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    // The plan (78,752 B, as the interpreter's crate docs say) plus the
    // staged input and the output.
    assert_eq!(cpu.arena_needed(PERSON_DETECT), Ok(78_752 + 9_216 + 2));
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    let mut env = rig.env(Some(&mut cpu));
    // Alternating models: each reloads the device and still agrees.
    for (p, meta, input, file, name) in [
        (kws, speech_meta, YES, GOLDEN_SPEECH, "yes"),
        (vision, person_meta, PERSON, GOLDEN_PERSON, "person"),
        (kws, speech_meta, NO, GOLDEN_SPEECH, "no"),
        (vision, person_meta, NO_PERSON, GOLDEN_PERSON, "no_person"),
        (kws, speech_meta, YES, GOLDEN_SPEECH, "yes"),
    ] {
        let out = run(&mut sched, &mut env, p, meta, leak(int8(input))).unwrap();
        assert_eq!(out, golden(file, name), "{name}");
    }
    assert_eq!(cpu.invoke_count(), 5);
    assert_eq!(rig.npu.invoke_count(), 0, "nothing ran on the NPU");
    let last = rig.profiler.last().unwrap();
    assert_eq!(last.npu_us, 0);
    assert!(
        last.interpreter_us > 0,
        "interpreter time is booked: {last:?}"
    );
    let summary = rig.profiler.summary();
    assert_eq!(summary.npu_us, 0);
    assert!(summary.interpreter_us >= 5 * TICK_US);
}

#[test]
fn a_model_for_both_runs_on_the_npu_by_default_and_where_a_policy_says() {
    let mut rig = Rig::new();
    let (h, kws) = rig.model(&speech(DeviceMask::ALL));
    let meta = rig.registry.info(h).unwrap().input;
    let input = leak(int8(NO));
    let mut arena = vec![0u8; 6_224 + 1_960 + 4];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);

    // Default: the NPU (the stub's hash), its time booked to the NPU.
    let out = run(&mut sched, &mut rig.env(Some(&mut cpu)), kws, meta, input).unwrap();
    let mut stub = [0u8; 4];
    stub_output(SEED, h.raw(), input, &mut stub);
    assert_eq!(out, stub);
    let p = rig.profiler.last().unwrap();
    assert_eq!((p.npu_us, p.interpreter_us), (NPU_US + TICK_US, 0));

    // A policy that prefers the CPU: LiteRT's output, interpreter time.
    sched.set_placement(|q: &PlacementQuery| {
        if q.usable().contains(Device::CpuInterpreter) {
            Some(Device::CpuInterpreter)
        } else {
            Some(Device::Npu)
        }
    });
    let out = run(&mut sched, &mut rig.env(Some(&mut cpu)), kws, meta, input).unwrap();
    assert_eq!(out, golden(GOLDEN_SPEECH, "no"));
    let p = rig.profiler.last().unwrap();
    assert_eq!(p.npu_us, 0);
    assert!(p.interpreter_us > 0);

    // Without the CPU device the same policy falls back to the NPU.
    let out = run(&mut sched, &mut rig.env(None), kws, meta, input).unwrap();
    assert_eq!(out, stub);
    let s = rig.profiler.summary();
    assert_eq!(s.count, 3);
    assert_eq!(s.npu_us, 2 * (NPU_US + TICK_US));
    assert_eq!(s.interpreter_us, p.interpreter_us);
}

/// The step outcomes until `job` finishes (at most `limit` steps).
fn steps_until_done(
    sched: &mut Scheduler<'_, 4>,
    env: &mut Env<'_, StubNpu<&'static TickClock, 9216, 16>, &'static TickClock, 4, 4, 4>,
    job: JobId,
    limit: usize,
) -> Vec<StepOutcome> {
    let mut seen = Vec::new();
    for _ in 0..limit {
        let o = sched.step(env);
        seen.push(o);
        if matches!(o, StepOutcome::Ran { job: j, finished: true, .. } if j == job) {
            return seen;
        }
        assert_ne!(o, StepOutcome::Idle, "{job:?} never finished: {seen:?}");
    }
    panic!("{job:?} not done in {limit} steps: {seen:?}");
}

#[test]
fn overlap_runs_a_cpu_model_in_slices_while_the_npu_is_busy() {
    let mut rig = Rig::new();
    let stub_model = ModelDesc::int8("stub", &[1, 1960], 4).unwrap();
    let (s, on_npu) = rig.model(&stub_model);
    let (h, on_cpu) = rig.model(&speech(DeviceMask::CPU_INTERPRETER));
    let meta = rig.registry.info(h).unwrap().input;
    assert_eq!(rig.registry.info(s).unwrap().input, meta);
    let steps = synaptic_tflite::Model::parse(MICRO_SPEECH)
        .unwrap()
        .step_count()
        .unwrap();
    let (yes, no) = (leak(int8(YES)), leak(int8(NO)));
    let mut arena = vec![0u8; 6_224 + 1_960 + 4];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    assert!(cpu.capabilities().sliced && cpu.capabilities().async_invoke);
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    let mut env = rig.env(Some(&mut cpu));
    let a = sched
        .submit(
            JobRequest::new(on_npu, tensor(meta, yes)),
            env.pipelines,
            env.clock,
        )
        .unwrap();
    let b = sched
        .submit(
            JobRequest::new(on_cpu, tensor(meta, no)),
            env.pipelines,
            env.clock,
        )
        .unwrap();
    // Step 1 starts `a` on the NPU, step 2 starts `b` on the CPU; then
    // every step runs one operator of `b` while the NPU is still busy.
    assert!(
        matches!(sched.step(&mut env), StepOutcome::Ran { job, finished: false, .. } if job == a)
    );
    assert!(
        matches!(sched.step(&mut env), StepOutcome::Ran { job, finished: false, .. } if job == b)
    );
    let slices = steps_until_done(&mut sched, &mut env, b, 100);
    assert_eq!(
        slices.len(),
        steps,
        "one interpreter step a step: {slices:?}"
    );
    assert!(slices[..steps - 1]
        .iter()
        .all(|o| matches!(o, StepOutcome::Ran { job, finished: false, .. } if *job == b)));
    assert_eq!(env.npu.state(), synaptic_runtime::npu::NpuState::Busy);
    let mut out = [0u8; 4];
    sched.get_result(b, &mut out).unwrap();
    assert_eq!(out.to_vec(), golden(GOLDEN_SPEECH, "no"));
    sched.wait(a, u64::MAX, &mut env).unwrap();
    sched.get_result(a, &mut out).unwrap();
    let mut stub = [0u8; 4];
    stub_output(SEED, s.raw(), yes, &mut stub);
    assert_eq!(out, stub);
    // The CPU step's time is its start's and its slices' (at least a tick
    // each), booked as interpreter time and learnt as its service time.
    let p = rig.profiler.last().unwrap();
    assert_eq!(p.interpreter_us, 0, "the last job ran on the NPU");
    let t = rig
        .registry
        .service_time(h, Device::CpuInterpreter)
        .unwrap();
    assert_eq!(t.samples(), 1);
    assert!(t.estimate_us().unwrap() as usize >= steps * TICK_US as usize);
}

#[test]
fn an_npu_job_finishing_during_a_sliced_cpu_job_gets_the_next_started_at_once() {
    let mut rig = Rig::new();
    rig.npu.set_latency_us(20);
    let (s, on_npu) = rig.model(&ModelDesc::int8("stub", &[4], 4).unwrap());
    let (h, on_cpu) = rig.model(&person(DeviceMask::CPU_INTERPRETER));
    let meta = rig.registry.info(h).unwrap().input;
    let small = rig.registry.info(s).unwrap().input;
    let frame = leak(int8(PERSON));
    let mut arena = vec![0u8; 78_752 + 9_216 + 2];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    let mut env = rig.env(Some(&mut cpu));
    let submit = |sched: &mut Scheduler<'_, 4>, env: &mut Env<'_, _, _, 4, 4, 4>, p, t| {
        sched
            .submit(JobRequest::new(p, t), env.pipelines, env.clock)
            .unwrap()
    };
    let c = submit(&mut sched, &mut env, on_cpu, tensor(meta, frame));
    let n1 = submit(&mut sched, &mut env, on_npu, tensor(small, &[1, 2, 3, 4]));
    let n2 = submit(&mut sched, &mut env, on_npu, tensor(small, &[5, 6, 7, 8]));
    // (job, step) of each job's completion (one step may end one job and
    // start another: its outcome names the started one, so read statuses).
    let mut done_at: Vec<(JobId, usize)> = Vec::new();
    for k in 0..200 {
        if sched.step(&mut env) == StepOutcome::Idle {
            break;
        }
        for j in [c, n1, n2] {
            let done = matches!(sched.status(j), Ok(JobStatus::Done(_)));
            if done && !done_at.iter().any(|(d, _)| *d == j) {
                done_at.push((j, k));
            }
        }
    }
    // Both NPU jobs ran one after the other while the CPU job was still in
    // its slices: the NPU was handed its next job without waiting for it.
    let order: Vec<JobId> = done_at.iter().map(|(j, _)| *j).collect();
    assert_eq!(order, [n1, n2, c], "{done_at:?}");
    assert_eq!(rig.npu.invoke_count(), 2);
    assert_eq!(cpu.invoke_count(), 1);
    let mut out = [0u8; 4];
    sched.get_result(c, &mut out).unwrap();
    assert_eq!(out[..2].to_vec(), golden(GOLDEN_PERSON, "person"));
}

#[test]
fn a_cancelled_sliced_cpu_job_stops_and_the_device_runs_the_next() {
    let mut rig = Rig::new();
    let (h, on_cpu) = rig.model(&person(DeviceMask::CPU_INTERPRETER));
    let meta = rig.registry.info(h).unwrap().input;
    let (frame, other) = (leak(int8(PERSON)), leak(int8(NO_PERSON)));
    let mut arena = vec![0u8; 78_752 + 9_216 + 2];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    let mut env = rig.env(Some(&mut cpu));
    let c = sched
        .submit(
            JobRequest::new(on_cpu, tensor(meta, frame)),
            env.pipelines,
            env.clock,
        )
        .unwrap();
    for _ in 0..3 {
        assert!(
            matches!(sched.step(&mut env), StepOutcome::Ran { job, finished: false, .. } if job == c)
        );
    }
    let busy = synaptic_runtime::npu::NpuState::Busy;
    assert_eq!(env.cpu.as_deref().unwrap().state(), busy);
    assert_eq!(sched.set_overlap(false), Err(SchedError::InvalidArgument));
    sched.cancel(c).unwrap();
    assert_eq!(sched.set_overlap(false), Ok(()), "no job on a device");
    sched.set_overlap(true).unwrap();
    // The next step aborts the orphaned run: nothing left to do.
    assert_eq!(sched.step(&mut env), StepOutcome::Idle);
    assert_eq!(
        env.cpu.as_deref().unwrap().state(),
        synaptic_runtime::npu::NpuState::Idle
    );
    let out = {
        let d = sched
            .submit(
                JobRequest::new(on_cpu, tensor(meta, other)),
                env.pipelines,
                env.clock,
            )
            .unwrap();
        sched.wait(d, u64::MAX, &mut env).unwrap();
        let mut out = [0u8; 2];
        sched.get_result(d, &mut out).unwrap();
        out
    };
    assert_eq!(out.to_vec(), golden(GOLDEN_PERSON, "no_person"));
    assert_eq!(cpu.invoke_count(), 2);
    assert_eq!(
        rig.profiler.summary().count,
        1,
        "the cancelled job is not profiled"
    );
}

/// Copies its input (a stage for the ordering test).
fn copy_stage(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &synaptic_runtime::process::stages::StageConfig,
) -> Result<TensorMeta, synaptic_runtime::process::ProcessError> {
    let n = input.data().len();
    out[..n].copy_from_slice(input.data());
    Ok(input.meta())
}

#[test]
fn a_realtime_job_takes_the_cpu_at_the_stage_boundary_of_a_sliced_step() {
    use synaptic_abi::Priority;
    use synaptic_runtime::pipeline::Stage;
    use synaptic_runtime::process::stages::StageConfig;
    let mut rig = Rig::new();
    let (h, rt_pipeline) = rig.model(&speech(DeviceMask::CPU_INTERPRETER));
    // The NORMAL job: a stage, the same model on the CPU, a stage.
    let stage = Stage {
        name: "copy",
        func: copy_stage,
        config: StageConfig::None,
    };
    let normal = rig.pool.create("normal").unwrap();
    rig.pool.add_preprocess(normal, stage).unwrap();
    rig.pool.add_model(normal, h).unwrap();
    rig.pool.add_postprocess(normal, stage).unwrap();
    rig.pool.build(normal).unwrap();
    let meta = rig.registry.info(h).unwrap().input;
    let (yes, no) = (leak(int8(YES)), leak(int8(NO)));
    let mut arena = vec![0u8; 6_224 + 1_960 + 4];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let mut work = vec![0u8; 4 * 2 * 2048];
    let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
    sched.set_overlap(true).unwrap();
    let mut env = rig.env(Some(&mut cpu));
    let n = sched
        .submit(
            JobRequest::new(normal, tensor(meta, yes)),
            env.pipelines,
            env.clock,
        )
        .unwrap();
    let ran = |job, step, finished| StepOutcome::Ran {
        job,
        step,
        finished,
    };
    // The stage, then the model step starts on the CPU and takes a slice.
    assert_eq!(sched.step(&mut env), ran(n, 0, false));
    assert_eq!(sched.step(&mut env), ran(n, 1, false));
    assert_eq!(sched.step(&mut env), ran(n, 1, false));
    let r = sched
        .submit(
            JobRequest {
                priority: Priority::RealTime,
                ..JobRequest::new(rt_pipeline, tensor(meta, no))
            },
            env.pipelines,
            env.clock,
        )
        .unwrap();
    // The REALTIME job waits for the CPU (a model step is not cut), and
    // starts in the step right after the NORMAL job's model step ends (a
    // device freed by a slice is held for one turn, for arrivals): before
    // that job's next stage.
    let mut seen = Vec::new();
    loop {
        let o = sched.step(&mut env);
        seen.push(o);
        if o == ran(r, 0, false) {
            break;
        }
        assert_eq!(o, ran(n, 1, false), "{seen:?}");
        assert!(seen.len() < 20, "{seen:?}");
    }
    assert!(matches!(
        sched.status(n),
        Ok(JobStatus::Running { next_step: 2 })
    ));
    sched.wait(r, u64::MAX, &mut env).unwrap();
    let mut out = [0u8; 4];
    sched.get_result(r, &mut out).unwrap();
    assert_eq!(out.to_vec(), golden(GOLDEN_SPEECH, "no"));
    sched.wait(n, u64::MAX, &mut env).unwrap();
    sched.get_result(n, &mut out).unwrap();
    assert_eq!(out.to_vec(), golden(GOLDEN_SPEECH, "yes"));
}

#[test]
fn absent_devices_and_bad_images_are_clear_errors() {
    let mut rig = Rig::new();
    // Registration: no device, or the CPU without an image.
    let no_device = ModelDesc {
        devices: DeviceMask::NONE,
        ..ModelDesc::int8("none", &[4], 2).unwrap()
    };
    assert_eq!(
        rig.registry.register(&no_device),
        Err(RegistryError::NoDevice)
    );
    let no_image = ModelDesc {
        devices: DeviceMask::CPU_INTERPRETER,
        ..ModelDesc::int8("noimg", &[4], 2).unwrap()
    };
    assert_eq!(
        rig.registry.register(&no_image),
        Err(RegistryError::NoImage)
    );

    let (h, kws) = rig.model(&speech(DeviceMask::CPU_INTERPRETER));
    let meta = rig.registry.info(h).unwrap().input;
    let input = leak(int8(YES));
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);

    // A CPU-only model and no CPU device.
    let err = run(&mut sched, &mut rig.env(None), kws, meta, input).unwrap_err();
    assert_eq!(
        err,
        SchedError::Job(JobError::NoDevice {
            allowed: DeviceMask::CPU_INTERPRETER,
            present: DeviceMask::NPU,
        })
    );
    assert_eq!(err.to_errno(), synaptic_abi::Errno::NoDev);

    // A policy that answers a device the model does not allow.
    sched.set_placement(|_| Some(Device::Npu));
    let mut arena = vec![0u8; 6_224 + 1_960 + 4];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let err = run(&mut sched, &mut rig.env(Some(&mut cpu)), kws, meta, input).unwrap_err();
    assert!(matches!(err, SchedError::Job(JobError::NoDevice { .. })));
    sched.set_placement(synaptic_runtime::device::prefer_npu);

    // An arena too small for the plan: refused at load, the job fails.
    let mut small = [0u8; 4096];
    let mut tiny = TfliteDevice::new(&mut small);
    tiny.init().unwrap();
    let err = run(&mut sched, &mut rig.env(Some(&mut tiny)), kws, meta, input).unwrap_err();
    assert_eq!(err, SchedError::Job(JobError::Npu(NpuError::ModelTooLarge)));

    // An image that is not a model, and one whose tensors disagree with
    // the registration.
    let garbage = ModelDesc::tflite("garbage", &[1, 1960], 4, b"TFL3 but not really").unwrap();
    let (_, bad) = rig.model(&garbage);
    let err = run(&mut sched, &mut rig.env(Some(&mut cpu)), bad, meta, input).unwrap_err();
    assert_eq!(err, SchedError::Job(JobError::Npu(NpuError::InvalidImage)));
    let wrong = ModelDesc::tflite("wrong", &[1, 1960], 3, MICRO_SPEECH).unwrap();
    let (_, wrong) = rig.model(&wrong);
    let err = run(&mut sched, &mut rig.env(Some(&mut cpu)), wrong, meta, input).unwrap_err();
    assert_eq!(err, SchedError::Job(JobError::Npu(NpuError::InvalidImage)));

    // The device is still usable afterwards.
    let out = run(&mut sched, &mut rig.env(Some(&mut cpu)), kws, meta, input).unwrap();
    assert_eq!(out, golden(GOLDEN_SPEECH, "yes"));
    assert_eq!(DType::Int8, meta.dtype);
}

#[test]
fn the_sliced_device_gives_the_synchronous_output_and_can_be_aborted() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use synaptic_runtime::npu::{NpuModel, NpuRun, NpuState};
    static DONE: AtomicUsize = AtomicUsize::new(0);
    fn done(context: usize, result: Result<NpuRun, NpuError>) {
        // A failed run is told as 100 + context.
        DONE.store(
            context + if result.is_ok() { 0 } else { 100 },
            Ordering::SeqCst,
        );
    }
    let mut rig = Rig::new();
    let (h, _) = rig.model(&person(DeviceMask::CPU_INTERPRETER));
    let model: NpuModel = rig.registry.device_model(h).unwrap();
    let steps = synaptic_tflite::Model::parse(PERSON_DETECT)
        .unwrap()
        .step_count()
        .unwrap();
    let mut arena = vec![0u8; 78_752 + 9_216 + 2];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    cpu.load_model(&model).unwrap();
    for input in [PERSON, NO_PERSON] {
        let input = int8(input);
        cpu.set_input(&input).unwrap();
        cpu.invoke().unwrap();
        let mut sync = [0u8; 2];
        cpu.get_output(&mut sync).unwrap();

        cpu.set_input(&input).unwrap();
        cpu.invoke_async(done, 7).unwrap();
        assert_eq!(cpu.state(), NpuState::Busy);
        assert_eq!(
            cpu.set_input(&input),
            Err(NpuError::WrongState(NpuState::Busy))
        );
        let mut polls = 1;
        while !cpu.poll() {
            polls += 1;
            assert_eq!(cpu.state(), NpuState::Busy);
        }
        assert_eq!(polls, steps, "one interpreter step a poll");
        assert_eq!(DONE.swap(0, Ordering::SeqCst), 7);
        assert_eq!(cpu.state(), NpuState::Idle);
        assert!(!cpu.poll(), "nothing in flight");
        let mut sliced = [0u8; 2];
        cpu.get_output(&mut sliced).unwrap();
        assert_eq!(sliced, sync);
    }
    // Aborted: idle, no output, no callback; the next run is whole.
    cpu.set_input(&int8(PERSON)).unwrap();
    cpu.invoke_async(done, 9).unwrap();
    cpu.poll();
    assert!(cpu.abort());
    assert!(!cpu.abort(), "nothing left to abort");
    assert_eq!(cpu.state(), NpuState::Idle);
    assert_eq!(DONE.load(Ordering::SeqCst), 0);
    assert_eq!(cpu.get_output(&mut [0u8; 2]), Err(NpuError::NoOutput));
    // Unloaded under a run: the next poll fails it, and the error clears.
    cpu.invoke_async(done, 9).unwrap();
    cpu.unload_model();
    assert!(cpu.poll());
    assert_eq!(cpu.state(), NpuState::Error);
    assert_eq!(DONE.load(Ordering::SeqCst), 109);
    cpu.clear_error().unwrap();
}

/// `can_run` is `load_model`'s verdict without loading anything, in any
/// state: what a new version must pass before it replaces a served one.
#[test]
fn can_run_checks_what_load_model_would_without_loading() {
    use synaptic_runtime::npu::NpuModel;
    let model = |image: &'static [u8], input: usize, dtype: DType| NpuModel {
        id: 7,
        input: TensorMeta::vector(dtype, input).unwrap(),
        output: TensorMeta::vector(DType::Int8, 4).unwrap(),
        flash_offset: 0,
        flash_size: image.len() as u32,
        image,
    };
    let speech = model(MICRO_SPEECH, 1960, DType::Int8);
    let mut arena = vec![0u8; 16 * 1024];
    let mut cpu = TfliteDevice::new(&mut arena);
    // Off, and then with nothing resident: a check, not a load.
    assert_eq!(cpu.can_run(&speech), Ok(()));
    cpu.init().unwrap();
    assert_eq!(cpu.can_run(&speech), Ok(()));
    assert_eq!(cpu.loaded_model(), None);
    let refused = [
        (model(MICRO_SPEECH, 1960, DType::Float32), "a float input"),
        (
            model(MICRO_SPEECH, 1961, DType::Int8),
            "an input of another size",
        ),
        (
            model(&MICRO_SPEECH[..1000], 1960, DType::Int8),
            "a cut image",
        ),
        (model(&[], 1960, DType::Int8), "no image"),
    ];
    for (m, what) in &refused {
        assert!(cpu.can_run(m).is_err(), "{what} accepted");
        assert!(cpu.load_model(m).is_err(), "{what} loaded");
    }
    assert_eq!(
        cpu.can_run(&model(
            leak(b"not a flatbuffer".to_vec()),
            1960,
            DType::Int8
        )),
        Err(NpuError::InvalidImage)
    );
    // Too small an arena: refused as too large, as load_model does.
    let mut small = vec![0u8; 4 * 1024];
    let mut tight = TfliteDevice::new(&mut small);
    tight.init().unwrap();
    assert_eq!(tight.can_run(&speech), Err(NpuError::ModelTooLarge));
    assert_eq!(tight.load_model(&speech), Err(NpuError::ModelTooLarge));
    // The person detector fits the bound in an arena load_model takes.
    let mut big = vec![0u8; 96 * 1024];
    let mut cpu = TfliteDevice::new(&mut big);
    cpu.init().unwrap();
    let person = NpuModel {
        output: TensorMeta::vector(DType::Int8, 2).unwrap(),
        ..model(PERSON_DETECT, 96 * 96, DType::Int8)
    };
    assert_eq!(cpu.can_run(&person), Ok(()));
    assert_eq!(cpu.load_model(&person), Ok(()));
}
