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
use synaptic_runtime::sched::{Env, JobError, JobRequest, SchedError, Scheduler, StepOutcome};
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

#[test]
fn overlap_runs_a_cpu_model_while_the_npu_is_busy() {
    let mut rig = Rig::new();
    let stub_model = ModelDesc::int8("stub", &[1, 1960], 4).unwrap();
    let (s, on_npu) = rig.model(&stub_model);
    let (h, on_cpu) = rig.model(&speech(DeviceMask::CPU_INTERPRETER));
    let meta = rig.registry.info(h).unwrap().input;
    assert_eq!(rig.registry.info(s).unwrap().input, meta);
    let (yes, no) = (leak(int8(YES)), leak(int8(NO)));
    let mut arena = vec![0u8; 6_224 + 1_960 + 4];
    let mut cpu = TfliteDevice::new(&mut arena);
    cpu.init().unwrap();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
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
    // Step 1 starts `a` on the NPU; step 2 runs `b` on the CPU to the end
    // while the NPU is still busy.
    assert!(
        matches!(sched.step(&mut env), StepOutcome::Ran { job, finished: false, .. } if job == a)
    );
    assert!(
        matches!(sched.step(&mut env), StepOutcome::Ran { job, finished: true, .. } if job == b)
    );
    let mut out = [0u8; 4];
    sched.get_result(b, &mut out).unwrap();
    assert_eq!(out.to_vec(), golden(GOLDEN_SPEECH, "no"));
    sched.wait(a, u64::MAX, &mut env).unwrap();
    sched.get_result(a, &mut out).unwrap();
    let mut stub = [0u8; 4];
    stub_output(SEED, s.raw(), yes, &mut stub);
    assert_eq!(out, stub);
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
