//! Latency model: mean and p95 latency per priority class of one device,
//! from arrival rates and service times (M/G/1 with non-preemptive
//! priority classes).
//!
//! Floating point (`f32`): for CPU0, which has an FPU, and the host (the
//! benchmark calls it). Nothing on the scheduling path calls it, and CPU1
//! never does.
//!
//! # Model
//!
//! One server (one device) with Poisson arrivals per class (rate
//! `lambda_k`), independent general service times (mean `E[S_k]`, second
//! moment `E[S_k^2] = E[S_k]^2 (1 + c_k^2)` with `c_k^2` the squared
//! coefficient of variation: 0 deterministic, M/D/1; 1 exponential,
//! M/M/1), classes served in strict priority order `RealTime`, `Normal`,
//! `BestEffort`, FIFO within a class, and a job in service never
//! interrupted. Cobham's formula (1954) gives the mean wait of class `k`
//! (classes numbered from the highest):
//!
//! ```text
//! W0  = sum over all classes of lambda_i E[S_i^2] / 2      (residual work)
//! s_k = sum over classes 1..=k of rho_i,  rho_i = lambda_i E[S_i]
//! W_k = W0 / ((1 - s_(k-1)) (1 - s_k))
//! ```
//!
//! and the mean latency is `W_k + E[S_k]`. Class `k` is stable while
//! `s_k < 1`; above that its figures are `None` (higher classes may still
//! be stable). With one class this is the Pollaczek-Khinchine formula.
//!
//! The p95 (any quantile `q`) uses the exponential-tail approximation of
//! the wait: an arrival waits with probability `rho` (the total
//! utilisation, by PASTA), and a wait that happens is taken as exponential
//! with the mean that makes the overall mean `W_k`, so
//! `P(W_k > t) = rho exp(-t rho / W_k)` and the quantile is
//! `(W_k / rho) ln(rho / (1 - q))` when `rho > 1 - q`, else 0. This is
//! exact for M/M/1 FIFO; for other service laws it is an approximation.
//! The latency quantile adds the mean service time (exact for
//! deterministic service).
//!
//! # Assumptions that differ from the scheduler
//!
//! * The scheduler preempts at stage boundaries: a `RealTime` job waits
//!   for the current *stage*, not the current job. Taking a job as one
//!   non-preemptible service overestimates `RealTime`'s wait when lower
//!   classes' jobs have several stages (pass the stage, not the job, as
//!   their service if that is what `RealTime` waits for).
//! * `Normal` and `BestEffort` share by weighted round robin; [`predict`]
//!   serves them in strict priority, which is the WRR's limit for a large
//!   `Normal` weight: when both are backlogged it underestimates `Normal`'s
//!   wait and overestimates `BestEffort`'s. [`predict_wrr`] mixes the two
//!   strict orders by the weights instead (see there).
//! * One device: with several, split each class's arrivals by where the
//!   placement sends them and apply the model per device. That holds for
//!   routing that does not look at the devices' state (a fixed device, a
//!   random one: a Poisson stream split independently stays Poisson). For
//!   routing by state see [`predict_pooled`] (earliest finish) and
//!   [`predict_overflow`] (busy-aware).
//!
//! # Two devices under state-dependent routing
//!
//! A policy that sends each job to the device that will finish it
//! soonest does not split the arrivals into independent Poisson streams:
//! it sends a job away from a device exactly when that device has a
//! backlog, so the per-device queues are shorter than a split model says
//! (the benchmark measured +28 % to +83 % pessimism). Such routing pools
//! the devices (resource pooling: work does not wait at one device while
//! the other could take it), and [`predict_pooled`] models the pair as one
//! multi-server queue:
//!
//! 1. **Pooled rate.** Class `k` runs `E[S_k,d]` on device `d`; together
//!    the devices complete its jobs at rate `1/E[S_k,NPU] + 1/E[S_k,CPU]`,
//!    so the pair is taken as two identical servers of mean service
//!    `2 E[P_k]`, `E[P_k] = 1 / (1/E[S_k,NPU] + 1/E[S_k,CPU])` (the
//!    heterogeneous M/G/2 approximated by the homogeneous one of the same
//!    total rate; the squared coefficient of variation is the class's).
//!    Utilisation `rho = sum lambda_k E[P_k]`.
//! 2. **Priority across two servers** (the approximation Bondi and Buzen
//!    gave for preemptive priority in M/G/m, 1984, applied here to
//!    non-preemptive priority): the wait of class `k` in the multi-server
//!    priority queue is
//!    its wait in the one-server priority queue of the pooled rate
//!    (service `E[P_k]`: [`predict_wrr`] on it) times the ratio of the
//!    multi-server FIFO wait to the one-server FIFO wait at the same load.
//!    For two servers that ratio is, by Erlang's C formula
//!    (`C(2, 2 rho) = 2 rho^2 / (1 + rho)` the chance to wait, and a wait
//!    of `C E[2P] / (2 (1 - rho))` against `rho E[P] / (1 - rho)`):
//!    `2 rho / (1 + rho)`, exact for M/M/2 and, with the Lee-Longton
//!    `(1 + c^2) / 2` factor on both waits, the same for M/G/2.
//! 3. **Own service.** A job's latency is that wait plus its service on the
//!    device it ran on: the class's share of jobs per device (measured, or
//!    the policy's) weights `E[S_k,d]`. The p95 takes `C(2, 2 rho)` as the
//!    chance to wait.
//!
//! With one device (the other's service time 0 or not finite) this is
//! [`predict_wrr`] on that device. Assumptions beyond the one-device
//! model's: the routing keeps both devices busy while any work waits that
//! either could start (earliest finish comes close; busy-aware, which
//! queues at the NPU while the CPU may idle, does not: the pooled model is
//! optimistic for it, see [`predict_overflow`]), and the devices' speed
//! ratio is the same for every job of a class (else `E[P_k]` from the
//! class means is an approximation).

use synaptic_abi::Priority;

/// The quantile [`ClassLatency::p95_us`] reports.
pub const P95: f32 = 0.95;

/// The offered load of one class on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClassLoad {
    /// Arrivals per second.
    pub arrivals_per_s: f32,
    /// Mean service time, microseconds.
    pub service_us: f32,
    /// Squared coefficient of variation of the service time (variance over
    /// the squared mean): 0 deterministic, 1 exponential.
    pub service_scv: f32,
}

impl ClassLoad {
    /// No arrivals.
    pub const IDLE: ClassLoad = ClassLoad {
        arrivals_per_s: 0.0,
        service_us: 0.0,
        service_scv: 0.0,
    };

    /// Deterministic service (M/D/1).
    pub const fn deterministic(arrivals_per_s: f32, service_us: f32) -> ClassLoad {
        ClassLoad {
            arrivals_per_s,
            service_us,
            service_scv: 0.0,
        }
    }

    /// Exponential service (M/M/1).
    pub const fn exponential(arrivals_per_s: f32, service_us: f32) -> ClassLoad {
        ClassLoad {
            arrivals_per_s,
            service_us,
            service_scv: 1.0,
        }
    }

    /// Arrivals per microsecond.
    fn rate_per_us(&self) -> f32 {
        self.arrivals_per_s * 1e-6
    }

    /// Utilisation `lambda E[S]`.
    pub fn utilization(&self) -> f32 {
        self.rate_per_us() * self.service_us
    }

    /// `lambda E[S^2] / 2`, microseconds: this class's share of the
    /// residual work an arrival finds.
    fn residual_us(&self) -> f32 {
        self.rate_per_us() * self.service_us * self.service_us * (1.0 + self.service_scv) / 2.0
    }
}

/// The model's figures for one class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassLatency {
    /// Mean wait before service, microseconds.
    pub mean_wait_us: f32,
    /// Mean latency (wait plus service), microseconds.
    pub mean_us: f32,
    /// 95th percentile of the wait, microseconds (approximation, see the
    /// module documentation).
    pub wait_p95_us: f32,
    /// 95th percentile of the latency: `wait_p95_us` plus the mean service.
    pub p95_us: f32,
}

impl ClassLatency {
    /// The figures of a class whose mean wait is `mean_wait_us` on a device
    /// busy `busy` of the time (p95 by [`wait_quantile_us`]), service
    /// `service_us` on average.
    fn new(mean_wait_us: f32, busy: f32, service_us: f32) -> ClassLatency {
        let wait_p95_us = wait_quantile_us(mean_wait_us, busy.min(1.0), P95);
        ClassLatency {
            mean_wait_us,
            mean_us: mean_wait_us + service_us,
            wait_p95_us,
            p95_us: wait_p95_us + service_us,
        }
    }
}

/// The `q` quantile of a wait with mean `mean_wait_us` when an arrival
/// waits with probability `busy` (exponential tail, see the module
/// documentation).
pub fn wait_quantile_us(mean_wait_us: f32, busy: f32, q: f32) -> f32 {
    let spill = 1.0 - q;
    if busy <= spill || mean_wait_us <= 0.0 {
        return 0.0;
    }
    mean_wait_us / busy * libm::logf(busy / spill)
}

/// Mean and p95 latency of every class (indexed by [`Priority::index`])
/// on one device under `load` (same indexing); `None` for a class whose
/// cumulative load (its own and higher classes') is 1 or more.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::latency::{predict, ClassLoad};
/// use synaptic_abi::Priority;
/// // M/D/1: 500 arrivals/s of 1 ms each, utilisation 0.5: the mean wait is
/// // rho D / (2 (1 - rho)) = 500 us, the latency 1500 us.
/// let mut load = [ClassLoad::IDLE; 3];
/// load[Priority::Normal.index()] = ClassLoad::deterministic(500.0, 1_000.0);
/// let normal = predict(&load)[Priority::Normal.index()].unwrap();
/// assert!((normal.mean_us - 1_500.0).abs() < 0.5);
/// ```
pub fn predict(load: &[ClassLoad; Priority::COUNT]) -> [Option<ClassLatency>; Priority::COUNT] {
    cobham(load, HIGHEST_FIRST)
}

/// Strict priority order, highest first.
const HIGHEST_FIRST: [Priority; Priority::COUNT] =
    [Priority::RealTime, Priority::Normal, Priority::BestEffort];

/// [`predict`] in the order `order` (highest priority first).
fn cobham(
    load: &[ClassLoad; Priority::COUNT],
    order: [Priority; Priority::COUNT],
) -> [Option<ClassLatency>; Priority::COUNT] {
    let residual: f32 = load.iter().map(ClassLoad::residual_us).sum();
    let busy: f32 = load.iter().map(ClassLoad::utilization).sum();
    cobham_with(load, order, residual, busy)
}

/// [`cobham`] with the residual work `W0` (µs) and the chance to wait
/// (for the p95) given.
fn cobham_with(
    load: &[ClassLoad; Priority::COUNT],
    order: [Priority; Priority::COUNT],
    residual: f32,
    busy: f32,
) -> [Option<ClassLatency>; Priority::COUNT] {
    let mut out = [None; Priority::COUNT];
    // Highest class first: s_(k-1), then s_k.
    let mut above = 0.0f32;
    for class in order {
        let l = &load[class.index()];
        let through = above + l.utilization();
        if through < 1.0 {
            let mean_wait_us = residual / ((1.0 - above) * (1.0 - through));
            out[class.index()] = Some(ClassLatency::new(mean_wait_us, busy, l.service_us));
        }
        above = through;
    }
    out
}

/// [`predict`] with `Normal` and `BestEffort` sharing by weighted round
/// robin (`weights`, as the scheduler's [`crate::arbiter`]) instead of
/// strict priority.
///
/// The two strict orders bound a work-conserving discipline's waits, and
/// both satisfy Kleinrock's conservation law (`sum rho_k W_k` is the same
/// for every such discipline). WRR gives `Normal` the fraction
/// `p = w_N / (w_N + w_BE)` of the selections while both classes wait;
/// the model takes each of the two classes' mean wait as the mix `p` of
/// its wait with `Normal` first and `1 - p` of its wait with `BestEffort`
/// first, which keeps the conservation law. An approximation (exact at
/// the limits `p = 1` and `p = 0`); a class unstable in either order is
/// `None`. The p95 is recomputed from the mixed mean as in [`predict`].
pub fn predict_wrr(
    load: &[ClassLoad; Priority::COUNT],
    weights: crate::arbiter::Weights,
) -> [Option<ClassLatency>; Priority::COUNT] {
    let residual: f32 = load.iter().map(ClassLoad::residual_us).sum();
    let busy: f32 = load.iter().map(ClassLoad::utilization).sum();
    wrr_with(load, weights, residual, busy)
}

/// [`predict_wrr`] with the residual work `W0` (µs) and the chance to wait
/// given.
fn wrr_with(
    load: &[ClassLoad; Priority::COUNT],
    weights: crate::arbiter::Weights,
    residual: f32,
    busy: f32,
) -> [Option<ClassLatency>; Priority::COUNT] {
    let normal_first = cobham_with(load, HIGHEST_FIRST, residual, busy);
    let best_effort_first = cobham_with(
        load,
        [Priority::RealTime, Priority::BestEffort, Priority::Normal],
        residual,
        busy,
    );
    let (n, b) = (f32::from(weights.normal), f32::from(weights.best_effort));
    let p = if n + b > 0.0 { n / (n + b) } else { 1.0 };
    let mut out = normal_first;
    for class in [Priority::Normal, Priority::BestEffort] {
        let i = class.index();
        out[i] = match (normal_first[i], best_effort_first[i]) {
            (Some(a), Some(z)) => Some(ClassLatency::new(
                p * a.mean_wait_us + (1.0 - p) * z.mean_wait_us,
                busy,
                load[i].service_us,
            )),
            _ => None,
        };
    }
    out
}

/// One class's offered load on two devices that share its jobs by
/// state-dependent routing ([`predict_pooled`]); arrays by
/// [`crate::device::Device::index`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PooledClass {
    /// Arrivals per second, over both devices.
    pub arrivals_per_s: f32,
    /// Mean service time of the class's jobs on each device, µs (0 or not
    /// finite: the device does not take them).
    pub service_us: [f32; 2],
    /// Squared coefficient of variation of the class's service time.
    pub service_scv: f32,
    /// Fraction of the class's jobs that run on each device (for their own
    /// service time; normalised by the sum, equal shares if both are 0).
    pub share: [f32; 2],
}

impl PooledClass {
    /// No arrivals.
    pub const IDLE: PooledClass = PooledClass {
        arrivals_per_s: 0.0,
        service_us: [0.0; 2],
        service_scv: 0.0,
        share: [0.0; 2],
    };

    /// Service rate of each device that takes the class, per µs (0 for one
    /// that does not).
    fn rates(&self) -> [f32; 2] {
        self.service_us.map(|s| {
            if s > 0.0 && s.is_finite() {
                1.0 / s
            } else {
                0.0
            }
        })
    }

    /// The pooled mean service `E[P]`, µs (0 if no device takes the class).
    fn pooled_us(&self) -> f32 {
        let total: f32 = self.rates().iter().sum();
        if total > 0.0 {
            1.0 / total
        } else {
            0.0
        }
    }

    /// Mean service on the devices the class ran on, weighted by `share`
    /// (over the devices that take it).
    fn own_service_us(&self) -> f32 {
        let rates = self.rates();
        let taking = || {
            rates
                .iter()
                .zip(self.service_us.iter().zip(self.share.iter()))
                .filter(|(r, _)| **r > 0.0)
                .map(|(_, s)| s)
        };
        let weight: f32 = taking().map(|(_, w)| w.max(0.0)).sum();
        if weight > 0.0 {
            return taking().map(|(s, w)| w.max(0.0) * s).sum::<f32>() / weight;
        }
        // No share given: the devices that take the class, alike.
        let n = taking().count();
        if n == 0 {
            return 0.0;
        }
        taking().map(|(s, _)| s).sum::<f32>() / n as f32
    }
}

/// Mean and p95 latency per class (indexed by [`Priority::index`]) of two
/// devices under state-dependent routing (earliest finish): the pooled
/// two-server model of the module documentation, `Normal` and
/// `BestEffort` mixed by the WRR `weights` as in [`predict_wrr`]. `None`
/// for a class unstable in the pooled queue (cumulative pooled load 1 or
/// more).
///
/// # Examples
///
/// ```
/// use synaptic_runtime::latency::{predict_pooled, PooledClass};
/// use synaptic_runtime::arbiter::DEFAULT_WEIGHTS;
/// use synaptic_abi::Priority;
/// // Two equal devices of 1 ms, exponential service, 1000 arrivals/s:
/// // M/M/2 at rho 0.5 waits C(2, 1) / (mu 2 - lambda) = (1/3) / 1000 s.
/// let mut load = [PooledClass::IDLE; 3];
/// load[Priority::Normal.index()] = PooledClass {
///     arrivals_per_s: 1_000.0,
///     service_us: [1_000.0, 1_000.0],
///     service_scv: 1.0,
///     share: [0.5, 0.5],
/// };
/// let normal = predict_pooled(&load, DEFAULT_WEIGHTS)[Priority::Normal.index()].unwrap();
/// assert!((normal.mean_wait_us - 1_000.0 / 3.0).abs() < 0.5);
/// assert!((normal.mean_us - 4_000.0 / 3.0).abs() < 0.5);
/// ```
pub fn predict_pooled(
    load: &[PooledClass; Priority::COUNT],
    weights: crate::arbiter::Weights,
) -> [Option<ClassLatency>; Priority::COUNT] {
    // The one-server priority queue of the pooled rate.
    let pooled = load.map(|c| ClassLoad {
        arrivals_per_s: c.arrivals_per_s,
        service_us: c.pooled_us(),
        service_scv: c.service_scv,
    });
    let fast = predict_wrr(&pooled, weights);
    let rho: f32 = pooled.iter().map(ClassLoad::utilization).sum();
    // Servers: two if some class with arrivals can run on both devices.
    let two = load
        .iter()
        .any(|c| c.arrivals_per_s > 0.0 && c.rates().iter().all(|r| *r > 0.0));
    let (ratio, waits) = if two {
        let r = rho.clamp(0.0, 1.0);
        (2.0 * r / (1.0 + r), 2.0 * r * r / (1.0 + r))
    } else {
        (1.0, rho)
    };
    let mut out = [None; Priority::COUNT];
    for (k, f) in fast.iter().enumerate() {
        out[k] =
            f.map(|f| ClassLatency::new(f.mean_wait_us * ratio, waits, load[k].own_service_us()));
    }
    out
}

/// Mean and p95 latency per class (indexed by [`Priority::index`]) of two
/// devices under busy-aware routing: a job goes to `primary` when it is
/// idle, else to `overflow` when that is idle, else it queues at
/// `primary` (and stays there). `primary[k]` and `overflow[k]` are class
/// `k`'s arrivals as the routing split them (measured) and its service on
/// each device; `Normal` and `BestEffort` mix by the WRR `weights` as in
/// [`predict_wrr`]. `None` for a class unstable in the thinned queue below.
///
/// # Model
///
/// The overflow device never queues (it only takes a job when idle): its
/// jobs' latency is their service. Queues form only at the primary, and
/// only from arrivals that find **both** devices busy:
///
/// ```text
/// lambda_k = primary_k + overflow_k             (all of class k)
/// u        = sum primary_k E[S_k]               (the primary's utilisation)
/// a        = sum lambda_k E[O_k]                (load offered to the overflow)
/// q        = a / (1 + a)                        (the overflow busy, given the primary is)
/// p_both   = u q                                (an arrival finds both busy)
/// R        = sum primary_k E[S_k^2] / (2 u)      (residual of the service in progress)
/// ```
///
/// `E[O_k]` is class `k`'s service on the overflow (on the primary for a
/// class the overflow took none of). While the primary is busy every
/// arrival is offered to the overflow, which takes it only if idle: the
/// overflow is then a one-server loss system (M/G/1/1), busy with Erlang's
/// loss probability `a / (1 + a)` whatever its service law, and by PASTA
/// that is what an arrival sees. (An earlier version took `q` from the
/// measured split as `(u - overflow / lambda) / u`, the overflow's busy
/// fraction over *all* time; the benchmark measured it 7 % to 27 %
/// optimistic for the lower classes, because the overflow is idle more
/// while the primary is idle too.) While the primary is busy, class `k`
/// joins its queue at rate `lambda_k q`;
/// the queue is Cobham's with those thinned rates and the residual `R` a
/// waiting job finds (`W_k|busy = R / ((1 - s'_(k-1)) (1 - s'_k))`, `s'`
/// the thinned cumulative loads at the primary's service times, WRR mixed
/// as in [`predict_wrr`]). A class's mean wait is `p_both W_k|busy`, its
/// latency that plus its share-weighted service on the two devices. The
/// p95 takes `p_both` as the chance to wait.
///
/// With the overflow idle (no arrivals split to it) `q = 1` and this is
/// [`predict_wrr`] on the primary. Assumptions beyond the one-device
/// model's: the overflow's loss system is in its stationary state during
/// the primary's busy periods (it starts each from whatever the last one
/// left), and its state is independent of the primary's queue length
/// (`q` the same however long the queue); a long queue comes with a burst
/// of arrivals that keeps the overflow busier than `q`, so the lower
/// classes' waits come out somewhat optimistic near saturation.
pub fn predict_overflow(
    primary: &[ClassLoad; Priority::COUNT],
    overflow: &[ClassLoad; Priority::COUNT],
    weights: crate::arbiter::Weights,
) -> [Option<ClassLatency>; Priority::COUNT] {
    let to_primary: f32 = primary.iter().map(|l| l.arrivals_per_s).sum();
    let to_overflow: f32 = overflow.iter().map(|l| l.arrivals_per_s).sum();
    let all = to_primary + to_overflow;
    let u: f32 = primary.iter().map(ClassLoad::utilization).sum();
    let mut out = [None; Priority::COUNT];
    if all <= 0.0 {
        return out;
    }
    // The overflow as a one-server loss system (Erlang B).
    let offered: f32 = primary
        .iter()
        .zip(overflow)
        .map(|(p, o)| {
            let service = if o.arrivals_per_s > 0.0 { o } else { p };
            (p.arrivals_per_s + o.arrivals_per_s) * 1e-6 * service.service_us
        })
        .sum();
    let q = if to_overflow > 0.0 {
        offered / (1.0 + offered)
    } else {
        1.0
    };
    let p_both = u * q;
    // Residual per waiting job; 0 when the primary never runs.
    let residual_sum: f32 = primary.iter().map(ClassLoad::residual_us).sum();
    let residual = if u > 0.0 { residual_sum / u } else { 0.0 };
    let thinned: [ClassLoad; Priority::COUNT] = core::array::from_fn(|k| ClassLoad {
        arrivals_per_s: (primary[k].arrivals_per_s + overflow[k].arrivals_per_s) * q,
        ..primary[k]
    });
    let queue = wrr_with(&thinned, weights, residual, 1.0);
    for (k, w) in queue.iter().enumerate() {
        let (p, o) = (&primary[k], &overflow[k]);
        let n = p.arrivals_per_s + o.arrivals_per_s;
        let own = if n > 0.0 {
            (p.arrivals_per_s * p.service_us + o.arrivals_per_s * o.service_us) / n
        } else {
            p.service_us
        };
        out[k] = w.map(|w| ClassLatency::new(p_both * w.mean_wait_us, p_both, own));
    }
    out
}

/// Mean and p95 latency per class (indexed by [`Priority::index`]) of the
/// two devices under `policy`, from each class's arrivals, service time on
/// each device and measured split (`share`): the model that fits the
/// routing. Earliest finish: [`predict_pooled`]. Busy-aware:
/// [`predict_overflow`], the NPU primary. Routing blind to the devices'
/// state (npu, cpu, random): [`predict_wrr`] per device on the class's
/// arrivals split by `share`, each class's figures the devices' weighted
/// by its split (`None` if unstable on a device it uses, or without
/// arrivals: then it has no split).
pub fn predict_placed(
    policy: crate::device::Policy,
    load: &[PooledClass; Priority::COUNT],
    weights: crate::arbiter::Weights,
) -> [Option<ClassLatency>; Priority::COUNT] {
    use crate::device::{Device, Policy};
    let on = |device: Device| -> [ClassLoad; Priority::COUNT] {
        load.map(|c| {
            let total: f32 = c.share.iter().map(|s| s.max(0.0)).sum();
            let part = if total > 0.0 {
                c.share[device.index()].max(0.0) / total
            } else {
                0.0
            };
            ClassLoad {
                arrivals_per_s: c.arrivals_per_s * part,
                service_us: c.service_us[device.index()],
                service_scv: c.service_scv,
            }
        })
    };
    match policy {
        Policy::EarliestFinish => return predict_pooled(load, weights),
        Policy::BusyAware => {
            return predict_overflow(&on(Device::Npu), &on(Device::CpuInterpreter), weights)
        }
        Policy::NpuOnly | Policy::CpuOnly | Policy::Random => {}
    }
    let per_device = Device::ALL.map(|d| (on(d), predict_wrr(&on(d), weights)));
    core::array::from_fn(|k| {
        let (mut mean, mut wait, mut p95, mut weight) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        for (loads, predicted) in &per_device {
            let rate = loads[k].arrivals_per_s;
            if rate <= 0.0 {
                continue;
            }
            let f = predicted[k]?;
            mean += rate * f.mean_us;
            wait += rate * f.mean_wait_us;
            p95 += rate * f.p95_us;
            weight += rate;
        }
        (weight > 0.0).then(|| ClassLatency {
            mean_wait_us: wait / weight,
            mean_us: mean / weight,
            wait_p95_us: (p95 - mean + wait) / weight,
            p95_us: p95 / weight,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RT: usize = Priority::RealTime.index();
    const N: usize = Priority::Normal.index();
    const BE: usize = Priority::BestEffort.index();

    fn close(actual: f32, expected: f32) {
        assert!(
            (actual - expected).abs() <= expected.abs() * 1e-4 + 1e-3,
            "{actual} against {expected}"
        );
    }

    /// Every class of `out` predicted as `one` predicts it.
    fn same_classes(
        out: &[Option<ClassLatency>; Priority::COUNT],
        one: &[Option<ClassLatency>; Priority::COUNT],
    ) {
        for k in [RT, N, BE] {
            let (a, b) = (out[k].unwrap(), one[k].unwrap());
            close(a.mean_wait_us, b.mean_wait_us);
            close(a.mean_us, b.mean_us);
            close(a.p95_us, b.p95_us);
        }
    }

    fn only(class: usize, l: ClassLoad) -> [ClassLoad; 3] {
        let mut load = [ClassLoad::IDLE; 3];
        load[class] = l;
        load
    }

    #[test]
    fn one_class_is_pollaczek_khinchine() {
        // M/D/1, rho 0.5: W = rho D / (2 (1 - rho)) = 500 us.
        let md1 = predict(&only(N, ClassLoad::deterministic(500.0, 1_000.0)))[N].unwrap();
        close(md1.mean_wait_us, 500.0);
        close(md1.mean_us, 1_500.0);
        // M/D/1, rho 0.8, D 2 ms: W = 0.8 * 2000 / 0.4 = 4000 us.
        let md1 = predict(&only(BE, ClassLoad::deterministic(400.0, 2_000.0)))[BE].unwrap();
        close(md1.mean_wait_us, 4_000.0);
        // M/M/1, rho 0.5, 1 ms: W = rho / (mu - lambda) = 0.5 / 500 s = 1 ms,
        // twice the M/D/1 wait.
        let mm1 = predict(&only(RT, ClassLoad::exponential(500.0, 1_000.0)))[RT].unwrap();
        close(mm1.mean_wait_us, 1_000.0);
        close(mm1.mean_us, 2_000.0);
    }

    #[test]
    fn the_m_m_1_wait_quantile_is_exact() {
        // M/M/1 FIFO: P(W > t) = rho exp(-(mu - lambda) t), so the p95 wait
        // is ln(rho / 0.05) / (mu - lambda) = 2 ms ln 10 = 4605.17 us.
        let mm1 = predict(&only(N, ClassLoad::exponential(500.0, 1_000.0)))[N].unwrap();
        close(mm1.wait_p95_us, 2_000.0 * core::f32::consts::LN_10);
        close(mm1.p95_us, mm1.wait_p95_us + 1_000.0);
        // Below 5 % utilisation most arrivals do not wait: p95 wait 0.
        let light = predict(&only(N, ClassLoad::exponential(40.0, 1_000.0)))[N].unwrap();
        assert_eq!(light.wait_p95_us, 0.0);
        assert!(light.mean_wait_us > 0.0);
        assert_eq!(wait_quantile_us(0.0, 0.9, P95), 0.0);
    }

    #[test]
    fn two_classes_follow_cobham_and_conserve_work() {
        // Two classes of 250 arrivals/s, exponential 1 ms: W0 = 500 us,
        // W_high = 500 / 0.75 = 666.7 us, W_low = 500 / (0.75 * 0.5) = 1333.3 us.
        let mut load = [ClassLoad::IDLE; 3];
        load[RT] = ClassLoad::exponential(250.0, 1_000.0);
        load[BE] = ClassLoad::exponential(250.0, 1_000.0);
        let out = predict(&load);
        close(out[RT].unwrap().mean_wait_us, 2_000.0 / 3.0);
        close(out[BE].unwrap().mean_wait_us, 4_000.0 / 3.0);
        // An idle class between them: what a Normal arrival would wait,
        // W0 / (0.75 * 0.75) = 888.9 us.
        close(out[N].unwrap().mean_wait_us, 500.0 / 0.5625);
        // Kleinrock's conservation law: sum rho_k W_k = rho W_FIFO, and
        // M/M/1 FIFO at rho 0.5 waits 1000 us.
        let conserved = 0.25 * out[RT].unwrap().mean_wait_us + 0.25 * out[BE].unwrap().mean_wait_us;
        close(conserved, 0.5 * 1_000.0);
    }

    #[test]
    fn an_overloaded_class_has_no_figures_but_the_classes_above_it_do() {
        let mut load = [ClassLoad::IDLE; 3];
        load[RT] = ClassLoad::deterministic(300.0, 1_000.0);
        load[N] = ClassLoad::deterministic(500.0, 1_000.0);
        load[BE] = ClassLoad::deterministic(300.0, 1_000.0);
        let out = predict(&load);
        assert!(out[RT].is_some() && out[N].is_some());
        assert_eq!(out[BE], None, "0.3 + 0.5 + 0.3 >= 1");
        // The lower class waits longer than the higher, and every class
        // waits longer as the load grows.
        assert!(out[N].unwrap().mean_wait_us > out[RT].unwrap().mean_wait_us);
        let lighter = predict(&[ClassLoad::IDLE, load[N], load[RT]]);
        assert!(lighter[N].unwrap().mean_wait_us < out[N].unwrap().mean_wait_us);
    }

    #[test]
    fn wrr_mixes_the_two_strict_orders_and_conserves_work() {
        use crate::arbiter::Weights;
        let mut load = [ClassLoad::IDLE; 3];
        load[RT] = ClassLoad::exponential(100.0, 1_000.0);
        load[N] = ClassLoad::exponential(300.0, 1_000.0);
        load[BE] = ClassLoad::exponential(300.0, 1_000.0);
        let strict = predict(&load);
        let weights = |normal, best_effort| Weights {
            normal,
            best_effort,
        };
        // Equal weights, equal loads: the two classes wait alike.
        let even = predict_wrr(&load, weights(1, 1));
        close(
            even[N].unwrap().mean_wait_us,
            even[BE].unwrap().mean_wait_us,
        );
        // 4:1: Normal waits longer than under strict priority, BestEffort
        // shorter, RealTime the same; 4/5 of the way to strict priority.
        let wrr = predict_wrr(&load, weights(4, 1));
        let flipped = cobham(
            &load,
            [Priority::RealTime, Priority::BestEffort, Priority::Normal],
        );
        close(
            wrr[RT].unwrap().mean_wait_us,
            strict[RT].unwrap().mean_wait_us,
        );
        assert!(wrr[N].unwrap().mean_wait_us > strict[N].unwrap().mean_wait_us);
        assert!(wrr[BE].unwrap().mean_wait_us < strict[BE].unwrap().mean_wait_us);
        close(
            wrr[N].unwrap().mean_wait_us,
            0.8 * strict[N].unwrap().mean_wait_us + 0.2 * flipped[N].unwrap().mean_wait_us,
        );
        // Kleinrock's conservation law holds for the mix as for either order.
        let conserved = |out: &[Option<ClassLatency>; 3]| {
            [RT, N, BE]
                .iter()
                .map(|&k| load[k].utilization() * out[k].unwrap().mean_wait_us)
                .sum::<f32>()
        };
        close(conserved(&wrr), conserved(&strict));
        close(conserved(&even), conserved(&strict));
        // A class unstable in either order has no figures.
        load[BE] = ClassLoad::exponential(650.0, 1_000.0);
        assert_eq!(predict_wrr(&load, weights(4, 1))[N], None);
    }

    fn pooled(arrivals_per_s: f32, service_us: [f32; 2], scv: f32) -> PooledClass {
        PooledClass {
            arrivals_per_s,
            service_us,
            service_scv: scv,
            share: [0.5, 0.5],
        }
    }

    /// Erlang's C formula from its definition (not the closed form the
    /// model uses): the chance an M/M/c arrival waits, offered `a`.
    fn erlang_c(c: u32, a: f64) -> f64 {
        let mut term = 1.0f64;
        let mut below = 0.0f64;
        for k in 0..c {
            if k > 0 {
                term *= a / f64::from(k);
            }
            below += term;
        }
        let top = term * a / f64::from(c) * f64::from(c) / (f64::from(c) - a);
        top / (below + top)
    }

    #[test]
    fn pooled_with_one_device_is_the_one_device_model() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        let mut split = [ClassLoad::IDLE; 3];
        split[RT] = ClassLoad::deterministic(50.0, 1_000.0);
        split[N] = ClassLoad::exponential(200.0, 2_000.0);
        split[BE] = ClassLoad::exponential(100.0, 1_500.0);
        let one = predict_wrr(&split, DEFAULT_WEIGHTS);
        // The other device absent both ways: service 0, or infinite.
        for absent in [0.0, f32::INFINITY] {
            let load = split.map(|l| PooledClass {
                arrivals_per_s: l.arrivals_per_s,
                service_us: [l.service_us, absent],
                service_scv: l.service_scv,
                share: [0.3, 0.7],
            });
            let out = predict_pooled(&load, DEFAULT_WEIGHTS);
            same_classes(&out, &one);
        }
    }

    #[test]
    fn pooled_two_equal_exponential_devices_are_m_m_2() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        for arrivals in [200.0f32, 1_000.0, 1_600.0, 1_900.0] {
            let mut load = [PooledClass::IDLE; 3];
            load[N] = pooled(arrivals, [1_000.0, 1_000.0], 1.0);
            let out = predict_pooled(&load, DEFAULT_WEIGHTS)[N].unwrap();
            // M/M/2: W = C(2, a) / (2 mu - lambda), a = lambda / mu.
            let a = f64::from(arrivals) / 1_000.0;
            let expected = erlang_c(2, a) / (2.0 * 1_000.0 - f64::from(arrivals)) * 1e6;
            close(out.mean_wait_us, expected as f32);
            close(out.mean_us, expected as f32 + 1_000.0);
        }
    }

    #[test]
    fn pooled_waits_grow_with_load_and_undercut_the_split_model() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        // A device and one 1.5x slower, three classes.
        let at = |scale: f32| {
            let mut load = [PooledClass::IDLE; 3];
            load[RT] = pooled(400.0 * scale, [100.0, 150.0], 0.0);
            load[N] = pooled(1_200.0 * scale, [600.0, 900.0], 0.8);
            load[BE] = pooled(600.0 * scale, [900.0, 1_350.0], 0.5);
            load
        };
        let mut last = [0.0f32; 3];
        for scale in [0.2f32, 0.5, 0.8, 1.0, 1.2] {
            let load = at(scale);
            let out = predict_pooled(&load, DEFAULT_WEIGHTS);
            for k in [RT, N, BE] {
                let w = out[k].unwrap().mean_wait_us;
                assert!(w > last[k], "class {k} at {scale}: {w} after {}", last[k]);
                last[k] = w;
            }
            // Lower classes wait longer.
            assert!(out[RT].unwrap().mean_wait_us < out[N].unwrap().mean_wait_us);
            // The split model (each device its share of every class, in
            // proportion to its rate: 0.6 and 0.4) waits longer than the
            // pooled one: the routing takes work off a backlogged device.
            let split = |d: usize, share: f32| {
                load.map(|c| ClassLoad {
                    arrivals_per_s: c.arrivals_per_s * share,
                    service_us: c.service_us[d],
                    service_scv: c.service_scv,
                })
            };
            let npu = predict_wrr(&split(0, 0.6), DEFAULT_WEIGHTS);
            let cpu = predict_wrr(&split(1, 0.4), DEFAULT_WEIGHTS);
            for k in [RT, N, BE] {
                let split_wait =
                    0.6 * npu[k].unwrap().mean_wait_us + 0.4 * cpu[k].unwrap().mean_wait_us;
                assert!(
                    out[k].unwrap().mean_wait_us < split_wait,
                    "class {k} at {scale}"
                );
            }
        }
        // Past the pooled capacity (rho 0.78 at 1x, 1.17 at 1.5x) the
        // lowest class has no figures.
        let over = predict_pooled(&at(1.5), DEFAULT_WEIGHTS);
        assert!(over[RT].is_some());
        assert_eq!(over[BE], None);
    }

    #[test]
    fn pooled_own_service_follows_the_share() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        let mut load = [PooledClass::IDLE; 3];
        load[N] = PooledClass {
            share: [3.0, 1.0],
            ..pooled(10.0, [1_000.0, 3_000.0], 0.0)
        };
        let out = predict_pooled(&load, DEFAULT_WEIGHTS)[N].unwrap();
        close(
            out.mean_us - out.mean_wait_us,
            0.75 * 1_000.0 + 0.25 * 3_000.0,
        );
        // No share: the two devices alike.
        load[N].share = [0.0, 0.0];
        let out = predict_pooled(&load, DEFAULT_WEIGHTS)[N].unwrap();
        close(out.mean_us - out.mean_wait_us, 2_000.0);
    }

    #[test]
    fn placed_picks_the_model_of_the_routing() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        use crate::device::Policy;
        let mut load = [PooledClass::IDLE; 3];
        load[RT] = PooledClass {
            arrivals_per_s: 50.0,
            service_us: [1_000.0, 1_500.0],
            service_scv: 0.0,
            share: [1.0, 0.0],
        };
        load[N] = PooledClass {
            arrivals_per_s: 200.0,
            service_us: [2_000.0, 3_000.0],
            service_scv: 1.0,
            share: [3.0, 1.0],
        };
        // State-aware routings: their own models.
        let placed = predict_placed(Policy::EarliestFinish, &load, DEFAULT_WEIGHTS);
        let pooled = predict_pooled(&load, DEFAULT_WEIGHTS);
        for k in [RT, N] {
            close(placed[k].unwrap().mean_us, pooled[k].unwrap().mean_us);
        }
        // Everything on the NPU: the one-device model there.
        let mut npu_only = load;
        npu_only[N].share = [1.0, 0.0];
        let one = predict_wrr(
            &load.map(|c| ClassLoad {
                arrivals_per_s: c.arrivals_per_s,
                service_us: c.service_us[0],
                service_scv: c.service_scv,
            }),
            DEFAULT_WEIGHTS,
        );
        let placed = predict_placed(Policy::NpuOnly, &npu_only, DEFAULT_WEIGHTS);
        for k in [RT, N] {
            close(placed[k].unwrap().mean_us, one[k].unwrap().mean_us);
        }
        // NORMAL split 3:1: its mean is the two devices' weighted 3:1.
        let split = predict_placed(Policy::Random, &load, DEFAULT_WEIGHTS)[N].unwrap();
        let device = |d: usize, part: f32| {
            let l = load.map(|c| ClassLoad {
                arrivals_per_s: c.arrivals_per_s * c.share[d] / (c.share[0] + c.share[1]).max(1.0),
                service_us: c.service_us[d],
                service_scv: c.service_scv,
            });
            predict_wrr(&l, DEFAULT_WEIGHTS)[N].unwrap().mean_us * part
        };
        close(split.mean_us, device(0, 0.75) + device(1, 0.25));
        // Unstable on a device a class uses: no figure for it.
        let mut over = load;
        over[N].arrivals_per_s = 2_000.0;
        assert!(predict_placed(Policy::Random, &over, DEFAULT_WEIGHTS)[N].is_none());
    }

    #[test]
    fn overflow_with_nothing_sent_to_it_is_the_one_device_model() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        let mut primary = [ClassLoad::IDLE; 3];
        primary[RT] = ClassLoad::deterministic(50.0, 1_000.0);
        primary[N] = ClassLoad::exponential(200.0, 2_000.0);
        primary[BE] = ClassLoad::exponential(100.0, 1_500.0);
        let one = predict_wrr(&primary, DEFAULT_WEIGHTS);
        let out = predict_overflow(&primary, &[ClassLoad::IDLE; 3], DEFAULT_WEIGHTS);
        same_classes(&out, &one);
    }

    #[test]
    fn overflow_queues_only_the_arrivals_that_find_both_busy() {
        use crate::arbiter::DEFAULT_WEIGHTS;
        // One class, M/M primary: 300/s of 2 ms (u 0.6), and 100/s taken by
        // the overflow (1/4 of the arrivals) at 3 ms.
        let mut primary = [ClassLoad::IDLE; 3];
        let mut overflow = [ClassLoad::IDLE; 3];
        primary[N] = ClassLoad::exponential(300.0, 2_000.0);
        overflow[N] = ClassLoad::exponential(100.0, 3_000.0);
        let out = predict_overflow(&primary, &overflow, DEFAULT_WEIGHTS)[N].unwrap();
        // Offered to the overflow a = 400/s 3 ms = 1.2, so it is busy with
        // Erlang's loss probability q = 1.2 / 2.2 while the primary is;
        // p_both = 0.6 q; residual E[S^2] / (2 E[S]) = 2 ms; thinned load
        // 400/s q 2 ms; W|busy = 2000 / (1 - that).
        let q = 1.2f32 / 2.2;
        let w_busy = 2_000.0 / (1.0 - 400.0 * q * 2_000.0 * 1e-6);
        close(out.mean_wait_us, 0.6 * q * w_busy);
        close(
            out.mean_us - out.mean_wait_us,
            0.75 * 2_000.0 + 0.25 * 3_000.0,
        );
        // Below the split model's wait for the same primary load (the
        // arrivals that found the overflow idle never queue).
        let split = predict_wrr(&primary, DEFAULT_WEIGHTS)[N].unwrap();
        assert!(out.mean_wait_us < split.mean_wait_us);
        // The faster the overflow, the more often it is free, the less the
        // primary's queue waits.
        let mut faster = overflow;
        faster[N].service_us = 1_000.0;
        let less = predict_overflow(&primary, &faster, DEFAULT_WEIGHTS)[N].unwrap();
        assert!(less.mean_wait_us < out.mean_wait_us);
        // Always free: nothing ever finds both busy.
        faster[N].service_us = 0.0;
        let none = predict_overflow(&primary, &faster, DEFAULT_WEIGHTS)[N].unwrap();
        assert_eq!(none.mean_wait_us, 0.0);
    }
}
