//! Suite `pipeline`: building pipelines (order of preprocessing, model and
//! postprocessing, the stage limit, freezing), the pool's capacity and
//! names, and generation-checked ids.

use synaptic_abi::Errno;
use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::pipeline::{PipelineError, PipelineId, PipelinePool, Stage, Step};
use synaptic_runtime::process::stages::{quantize_stage, resize_stage, softmax_stage, StageConfig};
use synaptic_runtime::process::{QuantParams, ResizeMethod};
use synaptic_runtime::registry::ModelHandle;

cases![
    full_pipeline_builds_in_order,
    order_violations_are_rejected,
    build_requires_a_model,
    built_pipeline_is_frozen,
    stage_limit_counts_the_model,
    pool_capacity_and_names,
    destroy_frees_the_slot_and_stales_the_id,
    forged_ids_are_invalid,
];

fn model() -> ModelHandle {
    ModelHandle::from_raw(0x1_0000)
}

fn resize() -> Stage {
    Stage {
        name: "resize",
        func: resize_stage,
        config: StageConfig::Resize {
            width: 2,
            height: 2,
            method: ResizeMethod::Nearest,
        },
    }
}

fn quantize() -> Stage {
    Stage {
        name: "quantize",
        func: quantize_stage,
        config: StageConfig::Quantize(QuantParams {
            scale: 1.0,
            zero_point: 0,
        }),
    }
}

fn softmax() -> Stage {
    Stage {
        name: "softmax",
        func: softmax_stage,
        config: StageConfig::Softmax(QuantParams {
            scale: 1.0,
            zero_point: 0,
        }),
    }
}

fn kind(step: &Step) -> u8 {
    match step {
        Step::Pre(_) => 0,
        Step::Model(_) => 1,
        Step::Post(_) => 2,
    }
}

/// Two preprocessing stages, the model and a postprocessing stage build in
/// that order; the pipeline runs only once built.
pub fn full_pipeline_builds_in_order() -> Outcome {
    let mut pool: PipelinePool = PipelinePool::new();
    let id = ok!(pool.create("vision"));
    ok!(pool.add_preprocess(id, resize()));
    ok!(pool.add_preprocess(id, quantize()));
    ok!(pool.add_model(id, model()));
    ok!(pool.add_postprocess(id, softmax()));
    check!(pool.runnable(id).err() == Some(PipelineError::NotBuilt));
    ok!(pool.build(id));
    let p = ok!(pool.runnable(id));
    check!(p.name() == "vision");
    check!(p.model() == Some(model()));
    check!(p.is_built());
    check_eq!(p.steps().len(), 4);
    let kinds: [u8; 4] = core::array::from_fn(|i| kind(&p.steps()[i]));
    check!(kinds == [0, 0, 1, 2]);
    if let Step::Pre(first) = p.steps()[0] {
        check!(first.name == "resize");
    }
    Ok(())
}

/// Postprocessing before the model, preprocessing after it and a second
/// model are refused and leave the pipeline as it was.
pub fn order_violations_are_rejected() -> Outcome {
    let mut pool: PipelinePool = PipelinePool::new();
    let id = ok!(pool.create("p"));
    check!(pool.add_postprocess(id, softmax()) == Err(PipelineError::PostprocessBeforeModel));
    ok!(pool.add_model(id, model()));
    check!(pool.add_preprocess(id, resize()) == Err(PipelineError::PreprocessAfterModel));
    check!(pool.add_model(id, model()) == Err(PipelineError::ModelAlreadySet));
    check_eq!(ok!(pool.get(id)).steps().len(), 1);
    Ok(())
}

/// Building without a model fails and leaves the pipeline unbuilt.
pub fn build_requires_a_model() -> Outcome {
    let mut pool: PipelinePool = PipelinePool::new();
    let id = ok!(pool.create("p"));
    ok!(pool.add_preprocess(id, resize()));
    check!(pool.build(id) == Err(PipelineError::NoModel));
    check!(!ok!(pool.get(id)).is_built());
    check!(pool.runnable(id).err() == Some(PipelineError::NotBuilt));
    Ok(())
}

/// A built pipeline accepts no more stages and no second build.
pub fn built_pipeline_is_frozen() -> Outcome {
    let mut pool: PipelinePool = PipelinePool::new();
    let id = ok!(pool.create("p"));
    ok!(pool.add_model(id, model()));
    ok!(pool.build(id));
    check!(pool.add_postprocess(id, softmax()) == Err(PipelineError::AlreadyBuilt));
    check!(pool.build(id) == Err(PipelineError::AlreadyBuilt));
    check!(PipelineError::AlreadyBuilt.to_errno() == Errno::Already);
    check_eq!(ok!(pool.get(id)).steps().len(), 1);
    Ok(())
}

/// The step limit counts the model: three steps fit a 3-step pipeline, a
/// fourth does not.
pub fn stage_limit_counts_the_model() -> Outcome {
    let mut pool: PipelinePool<1, 3> = PipelinePool::new();
    let id = ok!(pool.create("p"));
    ok!(pool.add_preprocess(id, resize()));
    ok!(pool.add_model(id, model()));
    ok!(pool.add_postprocess(id, softmax()));
    check!(pool.add_postprocess(id, softmax()) == Err(PipelineError::TooManyStages));
    check!(PipelineError::TooManyStages.to_errno() == Errno::NoSpc);
    Ok(())
}

/// Names are 1 to 31 bytes and unique; the pool holds `P` pipelines; lookup
/// by name finds the id.
pub fn pool_capacity_and_names() -> Outcome {
    let mut pool: PipelinePool<2, 4> = PipelinePool::new();
    check!(pool.create("") == Err(PipelineError::EmptyName));
    check!(pool.create("0123456789012345678901234567890123") == Err(PipelineError::NameTooLong));
    let a = ok!(pool.create("a"));
    check!(pool.create("a") == Err(PipelineError::DuplicateName));
    ok!(pool.create("b"));
    check!(pool.create("c") == Err(PipelineError::PoolFull));
    check!(pool.find("a") == Some(a));
    check!(pool.find("z").is_none());
    check!(PipelineError::DuplicateName.to_errno() == Errno::Exist);
    Ok(())
}

/// Destroy frees the slot for a new pipeline and makes the old id stale for
/// every operation.
pub fn destroy_frees_the_slot_and_stales_the_id() -> Outcome {
    let mut pool: PipelinePool<1, 4> = PipelinePool::new();
    let a = ok!(pool.create("a"));
    ok!(pool.destroy(a));
    let b = ok!(pool.create("b"));
    check!(a != b);
    check!(pool.get(a).err() == Some(PipelineError::StaleId));
    check!(pool.destroy(a) == Err(PipelineError::StaleId));
    check!(pool.add_model(a, model()) == Err(PipelineError::StaleId));
    check!(ok!(pool.get(b)).name() == "b");
    check!(PipelineError::StaleId.to_errno() == Errno::NoEnt);
    Ok(())
}

/// Raw ids never issued (zero generation, empty slot, slot out of range)
/// are invalid.
pub fn forged_ids_are_invalid() -> Outcome {
    let pool: PipelinePool<2, 4> = PipelinePool::new();
    let invalid = Some(PipelineError::InvalidId);
    check!(pool.get(PipelineId::from_raw(0)).err() == invalid);
    check!(pool.get(PipelineId::from_raw(0x1_0000)).err() == invalid);
    check!(pool.get(PipelineId::from_raw(0x1_0009)).err() == invalid);
    check!(pool.get(PipelineId::from_raw(0x2_0000)).err() == invalid);
    Ok(())
}
