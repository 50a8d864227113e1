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
//!   placement sends them and apply the model per device.

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
    let normal_first = cobham(load, HIGHEST_FIRST);
    let best_effort_first = cobham(
        load,
        [Priority::RealTime, Priority::BestEffort, Priority::Normal],
    );
    let (n, b) = (f32::from(weights.normal), f32::from(weights.best_effort));
    let p = if n + b > 0.0 { n / (n + b) } else { 1.0 };
    let busy: f32 = load.iter().map(ClassLoad::utilization).sum();
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
}
