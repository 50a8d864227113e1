//! Arbitration between the priority classes through the scheduler:
//! `RealTime` strict, `Normal` and `BestEffort` by weighted round robin,
//! and the starvation bound of `crate::arbiter` held exactly over a long
//! saturated run (every class's queue refilled as soon as a job finishes).

use std::collections::HashMap;

use synaptic_abi::Priority;
use synaptic_runtime::arbiter::{Weights, DEFAULT_WEIGHTS};
use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
use synaptic_runtime::npu::{NpuDevice, StubNpu};
use synaptic_runtime::pipeline::{PipelineId, PipelinePool, Stage};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::registry::{ModelDesc, Registry};
use synaptic_runtime::sched::{Env, JobId, JobRequest, SchedError, Scheduler, StepOutcome};
use synaptic_runtime::time::FakeClock;

/// Selections in each long run.
const SELECTIONS: usize = 1_000;

static DATA: [u8; 8] = [3; 8];

struct Rig {
    clock: &'static FakeClock,
    registry: Registry<2>,
    npu: StubNpu<&'static FakeClock, 64, 16>,
    pool: PipelinePool<2, 4>,
    /// The model alone.
    pipeline: PipelineId,
    /// A stage, the model, a stage: three steps.
    long: PipelineId,
}

/// A stage that copies its input.
fn identity(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    let n = input.data().len();
    out[..n].copy_from_slice(input.data());
    Ok(input.meta())
}

impl Rig {
    fn new() -> Rig {
        let clock: &'static FakeClock = Box::leak(Box::new(FakeClock::new(0)));
        let mut registry = Registry::new();
        let model = registry
            .register(&ModelDesc::int8("m", &[8], 4).unwrap())
            .unwrap();
        let mut pool = PipelinePool::new();
        let pipeline = pool.create("p").unwrap();
        pool.add_model(pipeline, model).unwrap();
        pool.build(pipeline).unwrap();
        let stage = Stage {
            name: "identity",
            func: identity,
            config: StageConfig::None,
        };
        let long = pool.create("long").unwrap();
        pool.add_preprocess(long, stage).unwrap();
        pool.add_model(long, model).unwrap();
        pool.add_postprocess(long, stage).unwrap();
        pool.build(long).unwrap();
        let mut npu = StubNpu::new(clock, 5);
        npu.init().unwrap();
        npu.set_latency_us(100);
        Rig {
            clock,
            registry,
            npu,
            pool,
            pipeline,
            long,
        }
    }

    fn env(&mut self) -> Env<'_, StubNpu<&'static FakeClock, 64, 16>, FakeClock, 2, 2, 4> {
        Env {
            registry: &mut self.registry,
            npu: &mut self.npu,
            cpu: None,
            pipelines: &self.pool,
            clock: self.clock,
            profiler: None,
        }
    }

    /// Queues a single-step job of `class`.
    fn submit(&self, sched: &mut Scheduler<'_, 8>, class: Priority) -> JobId {
        self.submit_to(sched, self.pipeline, class, true)
    }

    /// Queues a job of pipeline `p`.
    fn submit_to(
        &self,
        sched: &mut Scheduler<'_, 8>,
        p: PipelineId,
        class: Priority,
        preemptible: bool,
    ) -> JobId {
        let input = TensorRef::wrap(TensorMeta::vector(DType::Int8, 8).unwrap(), &DATA).unwrap();
        let request = JobRequest {
            priority: class,
            preemptible,
            ..JobRequest::new(p, input)
        };
        sched.submit(request, &self.pool, self.clock).unwrap()
    }
}

/// What a saturated run saw.
#[derive(Debug, Default)]
struct Run {
    /// The class of every selection, in order.
    classes: Vec<Priority>,
    /// Per `BestEffort` job: `Normal` selections between its submission
    /// and its own selection.
    best_effort_waits: Vec<usize>,
}

impl Run {
    fn count(&self, class: Priority) -> usize {
        self.classes.iter().filter(|c| **c == class).count()
    }

    /// The longest run of consecutive `class` selections, `RealTime`
    /// selections skipped.
    fn longest_run(&self, class: Priority) -> usize {
        let (mut longest, mut now) = (0, 0);
        for c in self.classes.iter().filter(|c| **c != Priority::RealTime) {
            now = if *c == class { now + 1 } else { 0 };
            longest = longest.max(now);
        }
        longest
    }
}

/// Keeps `normal` Normal and `best_effort` BestEffort single-step jobs
/// queued for `SELECTIONS` selections (a finished job is replaced by one
/// of its class at once); a RealTime job is submitted before each
/// selection listed in `realtime_at`.
fn saturate(weights: Weights, normal: usize, best_effort: usize, realtime_at: &[usize]) -> Run {
    let mut rig = Rig::new();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 8> = Scheduler::new(&mut work);
    sched.set_weights(weights).unwrap();
    // Per live job: its class and the Normal selections before it was submitted.
    let mut jobs: HashMap<JobId, (Priority, usize)> = HashMap::new();
    let mut run = Run::default();
    let mut normal_selections = 0;
    for class in [
        (Priority::Normal, normal),
        (Priority::BestEffort, best_effort),
    ]
    .into_iter()
    .flat_map(|(c, n)| std::iter::repeat_n(c, n))
    {
        jobs.insert(rig.submit(&mut sched, class), (class, 0));
    }
    for selection in 0..SELECTIONS {
        if realtime_at.contains(&selection) {
            let id = rig.submit(&mut sched, Priority::RealTime);
            jobs.insert(id, (Priority::RealTime, normal_selections));
        }
        let StepOutcome::Ran {
            job,
            finished: true,
            ..
        } = sched.step(&mut rig.env())
        else {
            panic!("a single-step job ran at selection {selection}");
        };
        let (class, submitted_at) = jobs.remove(&job).unwrap();
        sched.get_result(job, &mut [0u8; 4]).unwrap();
        run.classes.push(class);
        match class {
            Priority::Normal => normal_selections += 1,
            Priority::BestEffort => run.best_effort_waits.push(normal_selections - submitted_at),
            Priority::RealTime => continue,
        }
        jobs.insert(rig.submit(&mut sched, class), (class, normal_selections));
    }
    run
}

#[test]
fn a_best_effort_job_waits_at_most_w_normal_normal_selections() {
    // Default weights 4:1, three Normal jobs and one BestEffort job always
    // queued, 1000 selections.
    assert_eq!(
        DEFAULT_WEIGHTS,
        Weights {
            normal: 4,
            best_effort: 1
        }
    );
    let run = saturate(DEFAULT_WEIGHTS, 3, 1, &[]);
    assert_eq!(run.classes.len(), SELECTIONS);
    // Every BestEffort job waited exactly 4 Normal selections: the bound
    // holds and is reached.
    assert_eq!(run.best_effort_waits.len(), 200);
    assert_eq!(run.best_effort_waits.iter().max(), Some(&4));
    assert!(run.best_effort_waits.iter().all(|w| *w == 4));
    // Shares 4:1 exactly, in rounds of N N N N B.
    assert_eq!(run.count(Priority::Normal), 800);
    assert_eq!(run.count(Priority::BestEffort), 200);
    use Priority::{BestEffort as B, Normal as N};
    assert!(run.classes.chunks(5).all(|r| r == [N, N, N, N, B]));
}

#[test]
fn configurable_weights_bound_both_classes() {
    // 3:2 with two BestEffort jobs queued: at most 3 Normal selections in a
    // row, at most 2 BestEffort ones, shares 600:400.
    let weights = Weights {
        normal: 3,
        best_effort: 2,
    };
    let run = saturate(weights, 3, 2, &[]);
    assert_eq!(run.longest_run(Priority::Normal), 3);
    assert_eq!(run.longest_run(Priority::BestEffort), 2);
    assert_eq!(run.count(Priority::Normal), 600);
    assert_eq!(run.count(Priority::BestEffort), 400);
    assert_eq!(run.best_effort_waits.iter().max(), Some(&3));
    // Weights 1:1 alternate.
    let even = saturate(
        Weights {
            normal: 1,
            best_effort: 1,
        },
        2,
        2,
        &[],
    );
    assert_eq!(
        (
            even.longest_run(Priority::Normal),
            even.longest_run(Priority::BestEffort)
        ),
        (1, 1)
    );
    // A zero weight would starve a class: refused.
    let mut work = [0u8; 64];
    let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut work);
    assert_eq!(
        sched.set_weights(Weights {
            normal: 4,
            best_effort: 0
        }),
        Err(SchedError::InvalidArgument)
    );
    assert_eq!(sched.weights(), DEFAULT_WEIGHTS);
}

#[test]
fn realtime_keeps_strict_priority_and_spends_no_round_robin_credit() {
    let at = [0, 2, 501, 502, 777];
    let run = saturate(DEFAULT_WEIGHTS, 3, 1, &at);
    // Each RealTime job is the very next selection after it is submitted
    // (selection indices shift by one for every earlier RealTime job).
    let realtime: Vec<usize> = run
        .classes
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == Priority::RealTime)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(realtime, [0, 2, 501, 502, 777]);
    // With RealTime taken out, the round robin is undisturbed.
    use Priority::{BestEffort as B, Normal as N};
    let rest: Vec<Priority> = run
        .classes
        .iter()
        .copied()
        .filter(|c| *c != Priority::RealTime)
        .collect();
    assert!(rest.chunks_exact(5).all(|r| r == [N, N, N, N, B]));
    assert_eq!(run.best_effort_waits.iter().max(), Some(&4));
}

#[test]
fn an_idle_class_does_not_save_up_credit() {
    // Only Normal jobs for a while, then a BestEffort job arrives: it
    // waits at most 4 Normal selections, not the Normal selections made
    // while it was absent.
    let mut rig = Rig::new();
    let mut work = [0u8; 1024];
    let mut sched: Scheduler<'_, 8> = Scheduler::new(&mut work);
    let step = |sched: &mut Scheduler<'_, 8>, rig: &mut Rig| match sched.step(&mut rig.env()) {
        StepOutcome::Ran { job, .. } => {
            sched.release(job).unwrap();
            job
        }
        other => panic!("{other:?}"),
    };
    for _ in 0..6 {
        rig.submit(&mut sched, Priority::Normal);
    }
    // Three Normal selections alone: no credit spent or saved.
    for _ in 0..3 {
        step(&mut sched, &mut rig);
    }
    // Six Normal jobs queued, more than one round's worth.
    for _ in 0..3 {
        rig.submit(&mut sched, Priority::Normal);
    }
    let late = rig.submit(&mut sched, Priority::BestEffort);
    let mut before = 0;
    while step(&mut sched, &mut rig) != late {
        before += 1;
    }
    assert_eq!(before, 4, "a full round of Normal credit, then BestEffort");
    assert_eq!(sched.pending(), 2, "Normal jobs were still queued");
}

#[test]
fn a_selection_is_a_step_of_a_preemptible_job_or_all_of_a_non_preemptible_one() {
    // Four three-step Normal jobs queued before one single-step BestEffort
    // job. Preemptible: each Normal step is a selection, so the BestEffort
    // job runs after 4 Normal steps. Non-preemptible: a picked Normal job
    // keeps the CPU to its end, so it runs after 4 whole Normal jobs.
    for (preemptible, steps_before, jobs_done_before) in [(true, 4, 1), (false, 12, 4)] {
        let mut rig = Rig::new();
        let mut work = [0u8; 1024];
        let mut sched: Scheduler<'_, 8> = Scheduler::new(&mut work);
        let normal: Vec<JobId> = (0..4)
            .map(|_| rig.submit_to(&mut sched, rig.long, Priority::Normal, preemptible))
            .collect();
        let late = rig.submit(&mut sched, Priority::BestEffort);
        let mut before = 0;
        let mut finished = 0;
        loop {
            match sched.step(&mut rig.env()) {
                StepOutcome::Ran { job, .. } if job == late => break,
                StepOutcome::Ran { finished: done, .. } => {
                    before += 1;
                    finished += usize::from(done);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            (before, finished),
            (steps_before, jobs_done_before),
            "preemptible {preemptible}"
        );
        for id in normal {
            sched.wait(id, u64::MAX, &mut rig.env()).unwrap();
        }
    }
}
