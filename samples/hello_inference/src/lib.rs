//! hello_inference: one inference through the synaptic runtime.
//!
//! Registers a model (checking its image against the registered CRC-32),
//! loads it on the deterministic stub NPU, builds the pipeline
//!
//! ```text
//! UInt8 16x16 frame -> resize 8x8 -> normalise -> quantise -> model -> softmax -> top-3
//! ```
//!
//! runs one inference through the scheduler with the frame read in place
//! from the tensor arena, and prints the prediction and the profile. Time
//! comes from Zephyr's cycle counter through the runtime's `Clock` trait,
//! and the stub NPU spends its latency in `k_busy_wait`, so the profile is
//! real time on the target.
//!
//! The stub's output is a documented function of its input, so the sample
//! checks its own answer: it recomputes the prediction with the processing
//! functions and the stub's output function directly, and prints
//! `hello_inference: PASS` only when both agree.
#![no_std]

use synaptic_abi::Errno;
use synaptic_runtime::arena::{Arena, DType, Lifetime, Shape, TensorMeta};
use synaptic_runtime::dsp::argmax_i8;
use synaptic_runtime::npu::{stub_output, NpuDevice, StubNpu};
use synaptic_runtime::pipeline::{PipelinePool, Stage};
use synaptic_runtime::process::stages::{
    normalize_stage, quantize_stage, resize_stage, softmax_stage, top_k_stage, StageConfig,
};
use synaptic_runtime::process::{
    normalize_channels, quantize, resize, softmax_int8, ImageDims, QuantParams, ResizeMethod,
    SOFTMAX_OUTPUT,
};
use synaptic_runtime::prof::Profiler;
use synaptic_runtime::registry::{crc32, ModelDesc, Registry};
use synaptic_runtime::sched::{Env, JobRequest, Scheduler};
use synaptic_zephyr::clock::ZephyrClock;
use zephyr::printkln;

/// Side of the camera frame, pixels.
const FRAME_SIDE: usize = 16;
/// Side of the model's input, pixels.
const MODEL_SIDE: usize = 8;
const CLASSES: usize = 10;
const LABELS: [&str; CLASSES] = [
    "cat", "dog", "bird", "person", "car", "tree", "cup", "book", "phone", "chair",
];
/// Device time of one stub NPU invoke.
const NPU_LATENCY_US: u64 = 1_500;
/// Seed of the stub NPU's output function.
const SEED: u32 = 0x5359_4E33;
/// The model's input quantisation.
const INPUT_QUANT: QuantParams = QuantParams {
    scale: 1.0 / 127.0,
    zero_point: 0,
};
/// The quantisation of the model's logits.
const LOGITS: QuantParams = QuantParams {
    scale: 1.0 / 16.0,
    zero_point: 0,
};
/// Stands in for the compiled model in flash.
const MODEL_IMAGE: [u8; 256] = {
    let mut image = [0u8; 256];
    let mut i = 0;
    while i < image.len() {
        image[i] = (i as u8).wrapping_mul(73) ^ 0xA5;
        i += 1;
    }
    image
};

/// Why the sample stopped: the step and the runtime's errno.
struct Failed {
    step: &'static str,
    errno: i32,
}

macro_rules! step {
    ($what:literal, $result:expr) => {
        $result.map_err(|e| Failed {
            step: $what,
            errno: e.to_errno().negative(),
        })?
    };
}

/// Probability in thousandths, for printing without float formatting.
fn permille(p: f32) -> u32 {
    (p * 1000.0 + 0.5) as u32
}

fn f32_at(bytes: &[u8], index: usize) -> f32 {
    match bytes.get(index * 4..index * 4 + 4) {
        Some(b) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => f32::NAN,
    }
}

fn label(class: f32) -> &'static str {
    LABELS.get(class as usize).copied().unwrap_or("?")
}

/// The frame a camera would deliver: a diagonal gradient with a bright square.
fn render_frame(frame: &mut [u8]) {
    for (i, px) in frame.iter_mut().enumerate() {
        let (x, y) = (i % FRAME_SIDE, i / FRAME_SIDE);
        let square = (5..11).contains(&x) && (4..9).contains(&y);
        *px = if square { 250 } else { (x * 6 + y * 5) as u8 };
    }
}

/// The expected top-1 class and its probability, computed without the
/// pipeline: the processing functions, then the stub's output function.
fn expected_top1(frame: &[u8], model_id: u32) -> Result<(usize, f32), Failed> {
    let gray = |side| ImageDims {
        width: side,
        height: side,
        channels: 1,
    };
    let mut small = [0u8; MODEL_SIDE * MODEL_SIDE];
    step!(
        "reference resize",
        resize(
            frame,
            gray(FRAME_SIDE),
            &mut small,
            gray(MODEL_SIDE),
            ResizeMethod::Bilinear
        )
    );
    let mut normalised = [0f32; MODEL_SIDE * MODEL_SIDE];
    step!(
        "reference normalise",
        normalize_channels(&small, &mut normalised, &[127.5], &[127.5])
    );
    let mut quantised = [0i8; MODEL_SIDE * MODEL_SIDE];
    step!(
        "reference quantise",
        quantize(&normalised, &mut quantised, INPUT_QUANT)
    );
    let mut logits = [0u8; CLASSES];
    stub_output(SEED, model_id, &quantised.map(|q| q as u8), &mut logits);
    let mut probs = [0i8; CLASSES];
    step!(
        "reference softmax",
        softmax_int8(&logits.map(|l| l as i8), LOGITS, &mut probs)
    );
    let (top, p) = step!("reference argmax", argmax_i8(&probs));
    Ok((top, SOFTMAX_OUTPUT.dequantize(p)))
}

fn run(clock: &ZephyrClock) -> Result<(), Failed> {
    // The runtime's RAM: the arena (the model's weights, persistent; the
    // frame, ephemeral) and the scheduler's work buffer.
    let mut arena_ram = [0u8; 1024];
    let mut work = [0u8; 1024];
    let mut arena: Arena = step!("arena", Arena::new(&mut arena_ram, 0));

    let mut registry: Registry<2> = Registry::new();
    let input = TensorMeta::new(
        DType::Int8,
        step!(
            "shape",
            Shape::new(&[MODEL_SIDE as u32, MODEL_SIDE as u32, 1])
        ),
    );
    let output = step!("shape", TensorMeta::vector(DType::Int8, CLASSES));
    let model = step!(
        "register",
        registry.register(&ModelDesc {
            name: "hello_classifier",
            version: 1,
            input,
            output,
            flash_offset: 0,
            flash_size: MODEL_IMAGE.len() as u32,
            sram_needed: MODEL_IMAGE.len() as u32,
            crc32: crc32(&MODEL_IMAGE),
            devices: synaptic_runtime::device::DeviceMask::NPU,
            image: &[],
        })
    );
    let weights = step!(
        "weights",
        arena.alloc(
            step!("shape", TensorMeta::vector(DType::UInt8, MODEL_IMAGE.len())),
            Lifetime::Persistent
        )
    );
    step!("weights", arena.data_mut(&weights)).copy_from_slice(&MODEL_IMAGE);
    step!(
        "verify",
        registry.verify_image(model, step!("weights", arena.data(&weights)))
    );
    printkln!(
        "model 'hello_classifier' v1: Int8 8x8x1 -> Int8 {}, image {} B, crc32 {:#010x} verified",
        CLASSES,
        MODEL_IMAGE.len(),
        crc32(&MODEL_IMAGE)
    );

    let mut npu: StubNpu<&ZephyrClock, 256, 64> = StubNpu::new(clock, SEED);
    npu.set_latency_us(NPU_LATENCY_US);
    step!("npu init", npu.init());
    step!("load", registry.load(model, &mut npu));
    printkln!("stub NPU: model loaded, {} us per invoke", NPU_LATENCY_US);

    let mut pipelines: PipelinePool<1, 6> = PipelinePool::new();
    let hello = step!("pipeline", pipelines.create("hello"));
    let pre = [
        Stage {
            name: "resize",
            func: resize_stage,
            config: StageConfig::Resize {
                width: MODEL_SIDE as u16,
                height: MODEL_SIDE as u16,
                method: ResizeMethod::Bilinear,
            },
        },
        Stage {
            name: "normalize",
            func: normalize_stage,
            config: StageConfig::Normalize {
                mean: [127.5; 4],
                std: [127.5; 4],
                channels: 1,
            },
        },
        Stage {
            name: "quantize",
            func: quantize_stage,
            config: StageConfig::Quantize(INPUT_QUANT),
        },
    ];
    for stage in pre {
        step!("pipeline", pipelines.add_preprocess(hello, stage));
    }
    step!("pipeline", pipelines.add_model(hello, model));
    let post = [
        Stage {
            name: "softmax",
            func: softmax_stage,
            config: StageConfig::Softmax(LOGITS),
        },
        Stage {
            name: "top3",
            func: top_k_stage,
            config: StageConfig::TopK {
                k: 3,
                quant: Some(SOFTMAX_OUTPUT),
            },
        },
    ];
    for stage in post {
        step!("pipeline", pipelines.add_postprocess(hello, stage));
    }
    step!("pipeline", pipelines.build(hello));
    printkln!("pipeline 'hello': resize 16x16 -> 8x8, normalize, quantize, model, softmax, top-3");

    let frame = step!(
        "frame",
        arena.alloc(
            TensorMeta::new(
                DType::UInt8,
                step!(
                    "shape",
                    Shape::new(&[FRAME_SIDE as u32, FRAME_SIDE as u32, 1])
                )
            ),
            Lifetime::Ephemeral
        )
    );
    render_frame(step!("frame", arena.data_mut(&frame)));
    let expected = expected_top1(step!("frame", arena.data(&frame)), model.raw())?;

    let mut profiler = Profiler::new();
    profiler.enable(clock);
    let mut result = [0u8; 24];
    {
        let input = step!("frame", arena.view(&frame));
        let mut scheduler: Scheduler<'_, 1> = Scheduler::new(&mut work);
        let mut env = Env {
            registry: &mut registry,
            npu: &mut npu,
            cpu: None,
            pipelines: &pipelines,
            clock,
            profiler: Some(&mut profiler),
        };
        step!(
            "inference",
            scheduler.run_sync(JobRequest::new(hello, input), &mut result, &mut env)
        );
    }

    let top = f32_at(&result, 0);
    let p = f32_at(&result, 1);
    printkln!(
        "prediction: {} (class {}), p = 0.{:03}",
        label(top),
        top as u32,
        permille(p)
    );
    printkln!(
        "  top-3: {} 0.{:03}, {} 0.{:03}, {} 0.{:03}",
        label(top),
        permille(p),
        label(f32_at(&result, 2)),
        permille(f32_at(&result, 3)),
        label(f32_at(&result, 4)),
        permille(f32_at(&result, 5))
    );
    let Some(profile) = profiler.last() else {
        return Err(Failed {
            step: "profile",
            errno: Errno::NoEnt.negative(),
        });
    };
    printkln!(
        "profile: total {} us, pre {} us, npu {} us, post {} us (npu {} permille of total), peak {} B",
        profile.total_us,
        profile.preprocess_us,
        profile.npu_us,
        profile.postprocess_us,
        profile.npu_utilization_permille,
        profile.memory_peak
    );
    let stats = arena.stats();
    printkln!(
        "arena: {} of {} B used ({} B weights, {} B frame)",
        stats.used,
        stats.total,
        stats.persistent_used,
        stats.ephemeral_used
    );

    if top as usize != expected.0 || p != expected.1 {
        return Err(Failed {
            step: "check against the stub's output function",
            errno: Errno::Io.negative(),
        });
    }
    if profile.npu_us < NPU_LATENCY_US {
        return Err(Failed {
            step: "check of the NPU time",
            errno: Errno::Io.negative(),
        });
    }
    Ok(())
}

/// Entry point called by zephyr-lang-rust's `main()`.
#[no_mangle]
extern "C" fn rust_main() {
    printkln!(
        "hello_inference: synaptic runtime on {}",
        zephyr::kconfig::CONFIG_BOARD
    );
    let clock = ZephyrClock;
    match run(&clock) {
        Ok(()) => printkln!("hello_inference: PASS"),
        Err(f) => printkln!("hello_inference: FAIL: {} (errno {})", f.step, f.errno),
    }
}
