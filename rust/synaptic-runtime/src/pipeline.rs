//! Pipelines: named chains of preprocessing stages, exactly one model, and
//! postprocessing stages, kept in a fixed pool.
//!
//! Invariants and limits:
//!
//! * Order is enforced as stages are added: preprocessing only before the
//!   model, postprocessing only after it, one model. [`PipelinePool::build`]
//!   checks that the model is there and freezes the pipeline; only built
//!   pipelines run, and a built pipeline cannot change.
//! * A pipeline holds at most `S` steps, the model included
//!   ([`DEFAULT_MAX_STAGES`]); the pool holds `P` pipelines
//!   ([`DEFAULT_MAX_PIPELINES`]). Names are 1 to [`MAX_NAME_LEN`] bytes and
//!   unique in the pool.
//! * A [`PipelineId`] carries its slot's generation: an id kept across a
//!   destroy is rejected with [`PipelineError::StaleId`].

use heapless::{String, Vec};
use synaptic_abi::Errno;

use crate::process::stages::{StageConfig, StageFn};
use crate::registry::ModelHandle;

pub use crate::registry::MAX_NAME_LEN;

/// Default step limit per pipeline (model included).
pub const DEFAULT_MAX_STAGES: usize = 8;
/// Default pool size.
pub const DEFAULT_MAX_PIPELINES: usize = 4;

/// A processing stage: a function and its configuration.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    /// Short label for traces.
    pub name: &'static str,
    /// The processor.
    pub func: StageFn,
    /// Its configuration.
    pub config: StageConfig,
}

/// One step of a pipeline.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A preprocessing stage.
    Pre(Stage),
    /// The model, run on the NPU.
    Model(ModelHandle),
    /// A postprocessing stage.
    Post(Stage),
}

/// Errors of pipeline construction and lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError {
    /// The name is empty.
    EmptyName,
    /// The name is longer than [`MAX_NAME_LEN`] bytes.
    NameTooLong,
    /// A pipeline of this name exists.
    DuplicateName,
    /// Every pool slot is taken.
    PoolFull,
    /// The id names no slot or an empty one.
    InvalidId,
    /// The id's pipeline was destroyed.
    StaleId,
    /// The pipeline is built and can no longer change.
    AlreadyBuilt,
    /// The pipeline is not built yet.
    NotBuilt,
    /// A second model.
    ModelAlreadySet,
    /// A preprocessing stage after the model.
    PreprocessAfterModel,
    /// A postprocessing stage before the model.
    PostprocessBeforeModel,
    /// `build` without a model.
    NoModel,
    /// More than `S` steps.
    TooManyStages,
}

impl PipelineError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            PipelineError::DuplicateName => Errno::Exist,
            PipelineError::PoolFull | PipelineError::TooManyStages => Errno::NoSpc,
            PipelineError::StaleId => Errno::NoEnt,
            PipelineError::AlreadyBuilt => Errno::Already,
            _ => Errno::Inval,
        }
    }
}

/// A pipeline of up to `S` steps.
#[derive(Clone, Debug)]
pub struct Pipeline<const S: usize = DEFAULT_MAX_STAGES> {
    name: String<MAX_NAME_LEN>,
    steps: Vec<Step, S>,
    built: bool,
    /// A newer pipeline has the name ([`PipelinePool::supersede`]).
    superseded: bool,
}

impl<const S: usize> Pipeline<S> {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its steps in execution order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Its model, once added.
    pub fn model(&self) -> Option<ModelHandle> {
        self.steps.iter().find_map(|s| match s {
            Step::Model(h) => Some(*h),
            _ => None,
        })
    }

    /// Whether it is built (frozen and runnable).
    pub fn is_built(&self) -> bool {
        self.built
    }
}

/// Handle of a pipeline: slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipelineId {
    index: u16,
    generation: u16,
}

impl PipelineId {
    /// Generation in the high half, slot in the low.
    pub const fn raw(self) -> u32 {
        ((self.generation as u32) << 16) | self.index as u32
    }

    /// Decodes a raw id; the pool validates it on use.
    pub const fn from_raw(raw: u32) -> PipelineId {
        PipelineId {
            index: raw as u16,
            generation: (raw >> 16) as u16,
        }
    }
}

/// A fixed pool of `P` pipelines of up to `S` steps.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::pipeline::{PipelineError, PipelinePool, Stage};
/// use synaptic_runtime::process::stages::{softmax_stage, StageConfig};
/// use synaptic_runtime::process::QuantParams;
/// use synaptic_runtime::registry::ModelHandle;
///
/// let mut pool: PipelinePool = PipelinePool::new();
/// let id = pool.create("kws").unwrap();
/// let softmax = Stage {
///     name: "softmax",
///     func: softmax_stage,
///     config: StageConfig::Softmax(QuantParams { scale: 0.1, zero_point: 0 }),
/// };
/// assert_eq!(pool.add_postprocess(id, softmax), Err(PipelineError::PostprocessBeforeModel));
/// pool.add_model(id, ModelHandle::from_raw(0x1_0000)).unwrap();
/// pool.add_postprocess(id, softmax).unwrap();
/// pool.build(id).unwrap();
/// assert_eq!(pool.get(id).unwrap().steps().len(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct PipelinePool<const P: usize = DEFAULT_MAX_PIPELINES, const S: usize = DEFAULT_MAX_STAGES>
{
    slots: [Option<Pipeline<S>>; P],
    generations: [u16; P],
}

impl<const P: usize, const S: usize> Default for PipelinePool<P, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const P: usize, const S: usize> PipelinePool<P, S> {
    const FITS: () = assert!(P > 0 && P <= u16::MAX as usize && S > 0, "pool geometry");

    /// An empty pool.
    pub fn new() -> Self {
        let () = Self::FITS;
        PipelinePool {
            slots: core::array::from_fn(|_| None),
            generations: [1; P],
        }
    }

    /// Starts a new, empty pipeline.
    ///
    /// # Errors
    ///
    /// [`PipelineError::EmptyName`], [`PipelineError::NameTooLong`],
    /// [`PipelineError::DuplicateName`], [`PipelineError::PoolFull`].
    pub fn create(&mut self, name: &str) -> Result<PipelineId, PipelineError> {
        if name.is_empty() {
            return Err(PipelineError::EmptyName);
        }
        let name: String<MAX_NAME_LEN> =
            String::try_from(name).map_err(|()| PipelineError::NameTooLong)?;
        if self.find(&name).is_some() {
            return Err(PipelineError::DuplicateName);
        }
        let index = self
            .slots
            .iter()
            .position(Option::is_none)
            .ok_or(PipelineError::PoolFull)?;
        self.slots[index] = Some(Pipeline {
            name,
            steps: Vec::new(),
            built: false,
            superseded: false,
        });
        Ok(PipelineId {
            index: index as u16,
            generation: self.generations[index],
        })
    }

    /// Whether every slot holds a pipeline ([`create`](Self::create) would
    /// fail with [`PipelineError::PoolFull`]).
    pub fn is_full(&self) -> bool {
        self.slots.iter().all(Option::is_some)
    }

    /// The pipeline called `name`.
    pub fn find(&self, name: &str) -> Option<PipelineId> {
        self.slots.iter().enumerate().find_map(|(i, s)| {
            s.as_ref()
                .filter(|p| p.name.as_str() == name && !p.superseded)
                .map(|_| PipelineId {
                    index: i as u16,
                    generation: self.generations[i],
                })
        })
    }

    fn index(&self, id: PipelineId) -> Result<usize, PipelineError> {
        let i = usize::from(id.index);
        let generation = *self.generations.get(i).ok_or(PipelineError::InvalidId)?;
        if id.generation == 0 || id.generation > generation {
            Err(PipelineError::InvalidId)
        } else if id.generation < generation {
            Err(PipelineError::StaleId)
        } else if self.slots[i].is_none() {
            Err(PipelineError::InvalidId)
        } else {
            Ok(i)
        }
    }

    fn editable(&mut self, id: PipelineId) -> Result<&mut Pipeline<S>, PipelineError> {
        let i = self.index(id)?;
        let p = self.slots[i].as_mut().ok_or(PipelineError::InvalidId)?;
        if p.built {
            Err(PipelineError::AlreadyBuilt)
        } else {
            Ok(p)
        }
    }

    fn push(&mut self, id: PipelineId, step: Step) -> Result<(), PipelineError> {
        let p = self.editable(id)?;
        let has_model = p.model().is_some();
        match step {
            Step::Pre(_) if has_model => return Err(PipelineError::PreprocessAfterModel),
            Step::Model(_) if has_model => return Err(PipelineError::ModelAlreadySet),
            Step::Post(_) if !has_model => return Err(PipelineError::PostprocessBeforeModel),
            _ => {}
        }
        p.steps.push(step).map_err(|_| PipelineError::TooManyStages)
    }

    /// Appends a preprocessing stage.
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::AlreadyBuilt`];
    /// [`PipelineError::PreprocessAfterModel`]; [`PipelineError::TooManyStages`].
    pub fn add_preprocess(&mut self, id: PipelineId, stage: Stage) -> Result<(), PipelineError> {
        self.push(id, Step::Pre(stage))
    }

    /// Sets the model (validated against the registry when a job runs).
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::AlreadyBuilt`];
    /// [`PipelineError::ModelAlreadySet`]; [`PipelineError::TooManyStages`].
    pub fn add_model(&mut self, id: PipelineId, model: ModelHandle) -> Result<(), PipelineError> {
        self.push(id, Step::Model(model))
    }

    /// Appends a postprocessing stage.
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::AlreadyBuilt`];
    /// [`PipelineError::PostprocessBeforeModel`]; [`PipelineError::TooManyStages`].
    pub fn add_postprocess(&mut self, id: PipelineId, stage: Stage) -> Result<(), PipelineError> {
        self.push(id, Step::Post(stage))
    }

    /// Validates and freezes the pipeline.
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::AlreadyBuilt`]; [`PipelineError::NoModel`].
    pub fn build(&mut self, id: PipelineId) -> Result<(), PipelineError> {
        let p = self.editable(id)?;
        if p.model().is_none() {
            return Err(PipelineError::NoModel);
        }
        p.built = true;
        Ok(())
    }

    /// Gives up the pipeline's name to a newer one, created next: it stays
    /// runnable under its id (jobs already submitted to it finish on it)
    /// until destroyed, but [`find`](Self::find) no longer answers with it
    /// and a pipeline of the same name may be created (a hot swap).
    /// [`reinstate`](Self::reinstate) undoes it.
    ///
    /// # Errors
    ///
    /// [`PipelineError::InvalidId`], [`PipelineError::StaleId`].
    pub fn supersede(&mut self, id: PipelineId) -> Result<(), PipelineError> {
        self.set_superseded(id, true)
    }

    /// Gives a superseded pipeline its name back.
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::DuplicateName`] when another pipeline
    /// has taken the name meanwhile.
    pub fn reinstate(&mut self, id: PipelineId) -> Result<(), PipelineError> {
        let name = self.get(id)?.name.clone();
        match self.find(&name) {
            Some(other) if other != id => Err(PipelineError::DuplicateName),
            _ => self.set_superseded(id, false),
        }
    }

    fn set_superseded(&mut self, id: PipelineId, superseded: bool) -> Result<(), PipelineError> {
        let i = self.index(id)?;
        let p = self.slots[i].as_mut().ok_or(PipelineError::InvalidId)?;
        p.superseded = superseded;
        Ok(())
    }

    /// Removes a pipeline; its id becomes stale.
    ///
    /// # Errors
    ///
    /// [`PipelineError::InvalidId`], [`PipelineError::StaleId`].
    pub fn destroy(&mut self, id: PipelineId) -> Result<(), PipelineError> {
        let i = self.index(id)?;
        self.slots[i] = None;
        self.generations[i] = match self.generations[i].wrapping_add(1) {
            0 => 1,
            g => g,
        };
        Ok(())
    }

    /// A pipeline, built or not.
    ///
    /// # Errors
    ///
    /// [`PipelineError::InvalidId`], [`PipelineError::StaleId`].
    pub fn get(&self, id: PipelineId) -> Result<&Pipeline<S>, PipelineError> {
        let i = self.index(id)?;
        self.slots[i].as_ref().ok_or(PipelineError::InvalidId)
    }

    /// A pipeline that is ready to run.
    ///
    /// # Errors
    ///
    /// Id errors; [`PipelineError::NotBuilt`].
    pub fn runnable(&self, id: PipelineId) -> Result<&Pipeline<S>, PipelineError> {
        let p = self.get(id)?;
        if p.built {
            Ok(p)
        } else {
            Err(PipelineError::NotBuilt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::stages::{quantize_stage, resize_stage, softmax_stage};
    use crate::process::{QuantParams, ResizeMethod};

    fn model() -> ModelHandle {
        ModelHandle::from_raw(0x1_0000)
    }

    #[test]
    fn a_superseded_pipeline_stays_runnable_and_gives_up_its_name() {
        let mut pool: PipelinePool<4, 2> = PipelinePool::new();
        let old = pool.create("kws").unwrap();
        pool.add_model(old, model()).unwrap();
        pool.build(old).unwrap();
        pool.supersede(old).unwrap();
        assert_eq!(pool.find("kws"), None);
        let new = pool.create("kws").unwrap();
        assert_eq!(pool.find("kws"), Some(new));
        assert!(pool.runnable(old).is_ok(), "jobs already on it finish");
        assert_eq!(pool.reinstate(old), Err(PipelineError::DuplicateName));
        pool.destroy(new).unwrap();
        pool.reinstate(old).unwrap();
        assert_eq!(pool.find("kws"), Some(old));
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

    #[test]
    fn full_pipeline_builds_in_order() {
        let mut pool: PipelinePool = PipelinePool::new();
        let id = pool.create("vision").unwrap();
        pool.add_preprocess(id, resize()).unwrap();
        let q = Stage {
            name: "quantize",
            func: quantize_stage,
            config: StageConfig::Quantize(QuantParams {
                scale: 1.0,
                zero_point: 0,
            }),
        };
        pool.add_preprocess(id, q).unwrap();
        pool.add_model(id, model()).unwrap();
        pool.add_postprocess(id, softmax()).unwrap();
        assert_eq!(pool.runnable(id).err(), Some(PipelineError::NotBuilt));
        pool.build(id).unwrap();
        let p = pool.runnable(id).unwrap();
        assert_eq!(p.name(), "vision");
        assert_eq!(p.model(), Some(model()));
        let kinds: [u8; 4] = core::array::from_fn(|i| match p.steps()[i] {
            Step::Pre(_) => 0,
            Step::Model(_) => 1,
            Step::Post(_) => 2,
        });
        assert_eq!(kinds, [0, 0, 1, 2]);
    }

    #[test]
    fn order_violations_are_rejected() {
        let mut pool: PipelinePool = PipelinePool::new();
        let id = pool.create("p").unwrap();
        assert_eq!(
            pool.add_postprocess(id, softmax()),
            Err(PipelineError::PostprocessBeforeModel)
        );
        pool.add_model(id, model()).unwrap();
        assert_eq!(
            pool.add_preprocess(id, resize()),
            Err(PipelineError::PreprocessAfterModel)
        );
        assert_eq!(
            pool.add_model(id, model()),
            Err(PipelineError::ModelAlreadySet)
        );
        assert_eq!(pool.get(id).unwrap().steps().len(), 1);
    }

    #[test]
    fn build_requires_a_model() {
        let mut pool: PipelinePool = PipelinePool::new();
        let id = pool.create("p").unwrap();
        pool.add_preprocess(id, resize()).unwrap();
        assert_eq!(pool.build(id), Err(PipelineError::NoModel));
        assert!(!pool.get(id).unwrap().is_built());
    }

    #[test]
    fn built_pipeline_is_frozen() {
        let mut pool: PipelinePool = PipelinePool::new();
        let id = pool.create("p").unwrap();
        pool.add_model(id, model()).unwrap();
        pool.build(id).unwrap();
        assert_eq!(
            pool.add_postprocess(id, softmax()),
            Err(PipelineError::AlreadyBuilt)
        );
        assert_eq!(pool.build(id), Err(PipelineError::AlreadyBuilt));
        assert_eq!(PipelineError::AlreadyBuilt.to_errno(), Errno::Already);
    }

    #[test]
    fn stage_limit_counts_the_model() {
        let mut pool: PipelinePool<1, 3> = PipelinePool::new();
        let id = pool.create("p").unwrap();
        pool.add_preprocess(id, resize()).unwrap();
        pool.add_model(id, model()).unwrap();
        pool.add_postprocess(id, softmax()).unwrap();
        assert_eq!(
            pool.add_postprocess(id, softmax()),
            Err(PipelineError::TooManyStages)
        );
    }

    #[test]
    fn pool_capacity_and_names() {
        let mut pool: PipelinePool<2, 4> = PipelinePool::new();
        assert_eq!(pool.create(""), Err(PipelineError::EmptyName));
        assert_eq!(
            pool.create("0123456789012345678901234567890123"),
            Err(PipelineError::NameTooLong)
        );
        let a = pool.create("a").unwrap();
        assert_eq!(pool.create("a"), Err(PipelineError::DuplicateName));
        pool.create("b").unwrap();
        assert!(pool.is_full());
        assert_eq!(pool.create("c"), Err(PipelineError::PoolFull));
        assert_eq!(pool.find("a"), Some(a));
        assert_eq!(pool.find("z"), None);
    }

    #[test]
    fn destroy_frees_the_slot_and_stales_the_id() {
        let mut pool: PipelinePool<1, 4> = PipelinePool::new();
        let a = pool.create("a").unwrap();
        pool.destroy(a).unwrap();
        let b = pool.create("b").unwrap();
        assert_ne!(a, b);
        assert_eq!(pool.get(a).err(), Some(PipelineError::StaleId));
        assert_eq!(pool.destroy(a), Err(PipelineError::StaleId));
        assert_eq!(pool.add_model(a, model()), Err(PipelineError::StaleId));
        assert_eq!(pool.get(b).unwrap().name(), "b");
    }

    #[test]
    fn forged_ids_are_invalid() {
        let pool: PipelinePool<2, 4> = PipelinePool::new();
        assert_eq!(
            pool.get(PipelineId::from_raw(0)).err(),
            Some(PipelineError::InvalidId)
        );
        assert_eq!(
            pool.get(PipelineId::from_raw(0x1_0000)).err(),
            Some(PipelineError::InvalidId)
        );
        assert_eq!(
            pool.get(PipelineId::from_raw(0x1_0009)).err(),
            Some(PipelineError::InvalidId)
        );
    }
}
