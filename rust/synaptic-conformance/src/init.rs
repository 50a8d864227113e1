//! Suite `init`: a whole runtime brought up and down: the arena over the
//! runtime's RAM (model weights persistent, inputs ephemeral), the registry,
//! the stub NPU, two pipelines, the profiler and the scheduler.
//!
//! `up` does what a platform's init does, in order, and `down` undoes
//! it in reverse; the cases check that a brought-up runtime serves
//! inferences whose outputs are exactly the stub's documented function
//! followed by the postprocessing, that shutting down releases everything,
//! and that a second bring-up behaves like the first.

use synaptic_abi::{Errno, Priority};
use synaptic_check::{check, check_eq, Failure, Outcome};
use synaptic_runtime::arena::{Arena, ArenaError, DType, Lifetime, Tensor, TensorMeta};
use synaptic_runtime::npu::{stub_output, NpuDevice, NpuError, NpuState, StubNpu};
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Stage};
use synaptic_runtime::process::stages::{softmax_stage, top_k_stage, StageConfig};
use synaptic_runtime::process::{softmax_int8, top_k, Classification, QuantParams, SOFTMAX_OUTPUT};
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{crc32, ModelDesc, ModelHandle, Registry, RegistryError};
use synaptic_runtime::sched::{Env, JobError, JobId, JobRequest, SchedError, Scheduler};
use synaptic_runtime::time::{Clock, FakeClock};

use crate::mem::Backing;
use crate::support::{f32_at, Exclusive};

cases![
    bring_up_serves_one_inference_and_shuts_down,
    bring_up_again_after_shutdown_gives_the_same_runtime,
    bring_up_errors_are_reported_not_hidden,
    two_pipelines_share_the_npu_and_swap_models_on_demand,
    shutdown_cancels_pending_jobs_and_releases_everything,
];

const SEED: u32 = 0x5EED;
const LATENCY_US: u64 = 500;
/// Bytes of the runtime's RAM that the arena manages; the rest is the
/// scheduler's work buffer.
const ARENA_BYTES: usize = 1792;
const WORK_BYTES: usize = 256;
const SCRATCH_BYTES: usize = 256;
static RAM: Exclusive<Backing<{ ARENA_BYTES + WORK_BYTES }>> = Exclusive::new(Backing::new());

/// The keyword model's compiled image (in flash on a real part).
const KWS_IMAGE: [u8; 256] = image(0x11);
/// The vision model's image.
const VISION_IMAGE: [u8; 128] = image(0x4D);

const fn image<const N: usize>(salt: u8) -> [u8; N] {
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = (i as u8).wrapping_mul(31) ^ salt;
        i += 1;
    }
    out
}

/// Quantisation of the keyword model's logits.
const LOGITS: QuantParams = QuantParams {
    scale: 1.0 / 16.0,
    zero_point: 0,
};

type Npu<'c> = StubNpu<&'c FakeClock, 64, 16>;

/// A brought-up runtime.
struct Runtime<'a> {
    arena: Arena<'a>,
    registry: Registry<4>,
    npu: Npu<'a>,
    pipelines: PipelinePool<2, 4>,
    profiler: Profiler,
    /// `kws`: Int8 [32] -> Int8 [8].
    kws: ModelHandle,
    /// `vision`: Int8 [16] -> Int8 [12].
    vision: ModelHandle,
    /// Persistent copies of the two images.
    weights: [Tensor; 2],
    /// `classify`: kws, int8 softmax, top-3.
    classify: PipelineId,
    /// `raw`: vision alone.
    raw: PipelineId,
}

fn model(
    name: &'static str,
    n_in: usize,
    n_out: usize,
    image: &[u8],
) -> Result<ModelDesc<'static>, ArenaError> {
    Ok(ModelDesc {
        name,
        version: 1,
        input: TensorMeta::vector(DType::Int8, n_in)?,
        output: TensorMeta::vector(DType::Int8, n_out)?,
        flash_offset: 0x1_0000,
        flash_size: image.len() as u32,
        sram_needed: image.len() as u32,
        crc32: crc32(image),
        devices: synaptic_runtime::device::DeviceMask::NPU,
        image: &[],
    })
}

/// Copies a model image into a persistent arena tensor and checks it
/// against the registered CRC, as loading weights does.
fn load_weights(
    arena: &mut Arena<'_>,
    registry: &Registry<4>,
    handle: ModelHandle,
    image: &[u8],
) -> Result<Tensor, Failure> {
    let size = ok!(registry.info(handle)).sram_needed as usize;
    let t = ok!(arena.alloc(
        ok!(TensorMeta::vector(DType::UInt8, size)),
        Lifetime::Persistent
    ));
    ok!(arena.data_mut(&t)).copy_from_slice(image);
    ok!(registry.verify_image(handle, ok!(arena.data(&t))));
    Ok(t)
}

/// Brings a runtime up over `ram`: arena, NPU, registry and weights, the
/// first model resident, pipelines, profiler.
fn up<'a>(ram: &'a mut [u8], clock: &'a FakeClock) -> Result<Runtime<'a>, Failure> {
    let mut arena: Arena<'a> = ok!(Arena::new(ram, SCRATCH_BYTES));
    let mut npu: Npu<'a> = StubNpu::new(clock, SEED);
    npu.set_latency_us(LATENCY_US);
    ok!(npu.init());
    let mut registry = Registry::new();
    let kws = ok!(registry.register(&ok!(model("kws", 32, 8, &KWS_IMAGE))));
    let vision = ok!(registry.register(&ok!(model("vision", 16, 12, &VISION_IMAGE))));
    let weights = [
        load_weights(&mut arena, &registry, kws, &KWS_IMAGE)?,
        load_weights(&mut arena, &registry, vision, &VISION_IMAGE)?,
    ];
    ok!(registry.load(kws, &mut npu));
    let mut pipelines = PipelinePool::new();
    let classify = ok!(pipelines.create("classify"));
    ok!(pipelines.add_model(classify, kws));
    ok!(pipelines.add_postprocess(
        classify,
        Stage {
            name: "softmax",
            func: softmax_stage,
            config: StageConfig::Softmax(LOGITS),
        }
    ));
    ok!(pipelines.add_postprocess(
        classify,
        Stage {
            name: "top3",
            func: top_k_stage,
            config: StageConfig::TopK {
                k: 3,
                quant: Some(SOFTMAX_OUTPUT),
            },
        }
    ));
    ok!(pipelines.build(classify));
    let raw = ok!(pipelines.create("raw"));
    ok!(pipelines.add_model(raw, vision));
    ok!(pipelines.build(raw));
    let mut profiler = Profiler::new();
    profiler.enable(clock);
    Ok(Runtime {
        arena,
        registry,
        npu,
        pipelines,
        profiler,
        kws,
        vision,
        weights,
        classify,
        raw,
    })
}

/// Shuts a runtime down in reverse order and checks that nothing is left:
/// pipelines destroyed, models unloaded and unregistered, NPU off, arena empty.
fn down(mut rt: Runtime<'_>) -> Outcome {
    rt.profiler.disable();
    for id in [rt.classify, rt.raw] {
        ok!(rt.pipelines.destroy(id));
        check!(rt.pipelines.get(id).err() == Some(PipelineError::StaleId));
    }
    if let Some(resident) = rt.registry.loaded() {
        ok!(rt.registry.unload(resident, &mut rt.npu));
    }
    for h in [rt.kws, rt.vision] {
        ok!(rt.registry.unregister(h));
    }
    check!(rt.registry.is_empty());
    rt.npu.deinit();
    check!(rt.npu.state() == NpuState::Off);
    check!(rt.npu.loaded_model().is_none());
    let [kws_weights, vision_weights] = rt.weights;
    rt.arena.reset_all();
    check!(rt.arena.data(&kws_weights) == Err(ArenaError::StaleTensor));
    check!(rt.arena.data(&vision_weights) == Err(ArenaError::StaleTensor));
    let s = rt.arena.stats();
    check_eq!(s.used, 0);
    check_eq!(s.scratch_used, 0);
    Ok(())
}

/// The `classify` pipeline's expected top-3 for `input`, computed from the
/// stub's documented function and the processing functions directly.
fn expected_top3(kws: ModelHandle, input: &[u8]) -> Result<[Classification; 3], Failure> {
    let mut logits = [0u8; 8];
    stub_output(SEED, kws.raw(), input, &mut logits);
    let mut probs = [0i8; 8];
    ok!(softmax_int8(&logits.map(|b| b as i8), LOGITS, &mut probs));
    let scores = probs.map(|p| SOFTMAX_OUTPUT.dequantize(p));
    let mut best = [Classification {
        class_id: 0,
        score: 0.0,
    }; 3];
    check_eq!(ok!(top_k(&scores, &mut best)), 3);
    Ok(best)
}

fn check_top3(output: &[u8], expected: &[Classification; 3]) -> Outcome {
    for (i, e) in expected.iter().enumerate() {
        check!(f32_at(output, 2 * i) == f32::from(e.class_id));
        check!(f32_at(output, 2 * i + 1) == e.score);
    }
    Ok(())
}

fn input_pattern(salt: u8, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(salt);
    }
}

/// Brings the runtime up, runs one inference with its input in the arena
/// (read in place), and shuts down: the output is the stub's logits through
/// softmax and top-3, the NPU time is the stub's latency, and everything is
/// released afterwards.
pub fn bring_up_serves_one_inference_and_shuts_down() -> Outcome {
    let clock = FakeClock::new(0);
    let mut ram = claim!(RAM);
    let (arena_ram, work) = ram.0.split_at_mut(ARENA_BYTES);
    let mut rt = up(arena_ram, &clock)?;
    check!(rt.registry.loaded() == Some(rt.kws));
    check_eq!(rt.arena.stats().persistent_used, 256 + 128);
    let frame = ok!(rt.arena.alloc(
        ok!(TensorMeta::vector(DType::Int8, 32)),
        Lifetime::Ephemeral
    ));
    input_pattern(3, ok!(rt.arena.data_mut(&frame)));
    let expected = expected_top3(rt.kws, ok!(rt.arena.data(&frame)))?;
    let mut out = [0u8; 24];
    {
        let input = ok!(rt.arena.view(&frame));
        let mut sched: Scheduler<'_, 2> = Scheduler::new(work);
        let mut env = Env {
            registry: &mut rt.registry,
            npu: &mut rt.npu,
            cpu: None,
            pipelines: &rt.pipelines,
            clock: &clock,
            profiler: Some(&mut rt.profiler),
        };
        let (meta, n) =
            ok!(sched.run_sync(JobRequest::new(rt.classify, input), &mut out, &mut env));
        check!(meta.dtype == DType::Float32);
        check!(meta.shape.dims() == [3, 2]);
        check_eq!(n, 24);
        check_eq!(sched.pending(), 0);
    }
    check_top3(&out, &expected)?;
    let profile = some!(rt.profiler.last());
    check_eq!(profile.npu_us, LATENCY_US);
    check_eq!(clock.now_us(), LATENCY_US);
    rt.arena.reset_ephemeral();
    check!(rt.arena.data(&frame) == Err(ArenaError::StaleTensor));
    down(rt)
}

/// Up, one inference, down, twice over the same RAM: the second runtime
/// hands out the same handles, lays out the arena the same way and computes
/// the same output.
pub fn bring_up_again_after_shutdown_gives_the_same_runtime() -> Outcome {
    let mut ram = claim!(RAM);
    let mut outputs = [[0u8; 24]; 2];
    let mut layouts = [(0usize, 0u32, 0u32); 2];
    for (output, layout) in outputs.iter_mut().zip(layouts.iter_mut()) {
        let clock = FakeClock::new(0);
        let (arena_ram, work) = ram.0.split_at_mut(ARENA_BYTES);
        let mut rt = up(arena_ram, &clock)?;
        *layout = (rt.weights[1].offset(), rt.kws.raw(), rt.classify.raw());
        let mut frame = [0u8; 32];
        input_pattern(9, &mut frame);
        let input = ok!(synaptic_runtime::arena::TensorRef::wrap(
            ok!(TensorMeta::vector(DType::Int8, 32)),
            &frame
        ));
        {
            let mut sched: Scheduler<'_, 2> = Scheduler::new(work);
            let mut env = Env {
                registry: &mut rt.registry,
                npu: &mut rt.npu,
                cpu: None,
                pipelines: &rt.pipelines,
                clock: &clock,
                profiler: Some(&mut rt.profiler),
            };
            ok!(sched.run_sync(JobRequest::new(rt.classify, input), output, &mut env));
        }
        check_top3(output, &expected_top3(rt.kws, &frame)?)?;
        down(rt)?;
    }
    check!(outputs[0] == outputs[1]);
    check!(layouts[0] == layouts[1]);
    Ok(())
}

/// Bring-up errors surface with their errno: loading before the NPU is
/// initialised (`-ENODEV`), initialising twice, a model larger than the
/// NPU's buffers (`-E2BIG`, nothing left resident), weights larger than the
/// arena (`-ENOMEM`).
pub fn bring_up_errors_are_reported_not_hidden() -> Outcome {
    let clock = FakeClock::new(0);
    let mut npu: Npu<'_> = StubNpu::new(&clock, SEED);
    let mut registry: Registry<4> = Registry::new();
    let kws = ok!(registry.register(&ok!(model("kws", 32, 8, &KWS_IMAGE))));
    let e = registry.load(kws, &mut npu);
    check!(e == Err(RegistryError::Npu(NpuError::WrongState(NpuState::Off))));
    check!(e.err().map(RegistryError::to_errno) == Some(Errno::NoDev));
    check!(registry.loaded().is_none());
    ok!(npu.init());
    check!(npu.init() == Err(NpuError::WrongState(NpuState::Idle)));
    let huge = ok!(registry.register(&ok!(model("huge", 65, 8, &KWS_IMAGE))));
    let e = registry.load(huge, &mut npu);
    check!(e == Err(RegistryError::Npu(NpuError::ModelTooLarge)));
    check!(e.err().map(RegistryError::to_errno) == Some(Errno::TooBig));
    check!(registry.loaded().is_none());
    ok!(registry.load(kws, &mut npu));
    let mut small = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut small.0, 64));
    let e = arena.alloc(
        ok!(TensorMeta::vector(DType::UInt8, 256)),
        Lifetime::Persistent,
    );
    check!(
        e == Err(ArenaError::Exhausted {
            requested: 256,
            available: 192
        })
    );
    check!(e.err().map(ArenaError::to_errno) == Some(Errno::NoMem));
    Ok(())
}

/// Jobs alternating between the two pipelines make the registry swap the
/// resident model on demand; every output is the stub's output for its own
/// model, and the profiler counts every job and its NPU time.
pub fn two_pipelines_share_the_npu_and_swap_models_on_demand() -> Outcome {
    let clock = FakeClock::new(0);
    let mut ram = claim!(RAM);
    let (arena_ram, work) = ram.0.split_at_mut(ARENA_BYTES);
    let mut rt = up(arena_ram, &clock)?;
    let mut kws_in = [0u8; 32];
    let mut vision_in = [0u8; 16];
    input_pattern(1, &mut kws_in);
    input_pattern(2, &mut vision_in);
    let kws_meta = ok!(TensorMeta::vector(DType::Int8, 32));
    let vision_meta = ok!(TensorMeta::vector(DType::Int8, 16));
    let kws_input = ok!(synaptic_runtime::arena::TensorRef::wrap(kws_meta, &kws_in));
    let vision_input = ok!(synaptic_runtime::arena::TensorRef::wrap(
        vision_meta,
        &vision_in
    ));
    let expected_kws = expected_top3(rt.kws, &kws_in)?;
    let mut expected_vision = [0u8; 12];
    stub_output(SEED, rt.vision.raw(), &vision_in, &mut expected_vision);
    {
        let mut sched: Scheduler<'_, 2> = Scheduler::new(work);
        let mut env = Env {
            registry: &mut rt.registry,
            npu: &mut rt.npu,
            cpu: None,
            pipelines: &rt.pipelines,
            clock: &clock,
            profiler: Some(&mut rt.profiler),
        };
        for _ in 0..3 {
            let mut out = [0u8; 24];
            ok!(sched.run_sync(JobRequest::new(rt.raw, vision_input), &mut out, &mut env));
            check!(out[..12] == expected_vision);
            check!(env.registry.loaded() == Some(rt.vision));
            ok!(sched.run_sync(JobRequest::new(rt.classify, kws_input), &mut out, &mut env));
            check_top3(&out, &expected_kws)?;
            check!(env.registry.loaded() == Some(rt.kws));
        }
    }
    let summary = rt.profiler.summary();
    check_eq!(summary.count, 6);
    check_eq!(summary.npu_us, 6 * LATENCY_US);
    check_eq!(rt.npu.invoke_count(), 6);
    down(rt)
}

/// What the callbacks of [`shutdown_cancels_pending_jobs_and_releases_everything`] saw.
static CANCELLED: Exclusive<heapless::Vec<(JobId, usize), 2>> =
    Exclusive::new(heapless::Vec::new());

fn on_done(
    id: JobId,
    result: Result<synaptic_runtime::arena::TensorRef<'_>, JobError>,
    context: usize,
) {
    if matches!(result, Err(JobError::Cancelled)) {
        if let Some(mut c) = CANCELLED.claim() {
            let _ = c.push((id, context));
        }
    }
}

/// Shutting down with jobs still queued cancels them (their callbacks see
/// Cancelled), after which the scheduler is idle and the runtime comes
/// down cleanly.
pub fn shutdown_cancels_pending_jobs_and_releases_everything() -> Outcome {
    claim!(CANCELLED).clear();
    let clock = FakeClock::new(0);
    let mut ram = claim!(RAM);
    let (arena_ram, work) = ram.0.split_at_mut(ARENA_BYTES);
    let rt = up(arena_ram, &clock)?;
    let frame = [0u8; 16];
    let input = ok!(synaptic_runtime::arena::TensorRef::wrap(
        ok!(TensorMeta::vector(DType::Int8, 16)),
        &frame
    ));
    {
        let mut sched: Scheduler<'_, 2> = Scheduler::new(work);
        let mut ids = [JobId::from_raw(0); 2];
        for (i, id) in ids.iter_mut().enumerate() {
            let request = JobRequest {
                priority: Priority::BestEffort,
                callback: Some((on_done, 100 + i)),
                ..JobRequest::new(rt.raw, input)
            };
            *id = ok!(sched.submit(request, &rt.pipelines, &clock));
        }
        check_eq!(sched.pending(), 2);
        for id in ids {
            ok!(sched.cancel(id));
            check!(sched.status(id) == Err(SchedError::StaleJob));
        }
        check_eq!(sched.pending(), 0);
        check!(claim!(CANCELLED).as_slice() == [(ids[0], 100), (ids[1], 101)]);
    }
    check_eq!(rt.npu.invoke_count(), 0);
    check!(clock.now_us() == 0);
    down(rt)
}
