//! Profiler: per-inference phase times, per-device model time, IPC
//! overhead, memory peak and NPU utilisation, with a running summary.
//!
//! Time is whatever the [`Clock`] says (microseconds); nothing is recorded
//! while disabled. A model step's time is booked to the device that ran it
//! ([`crate::device`]): `npu_us` for the NPU, `interpreter_us` for the CPU
//! interpreter. NPU utilisation is reported two ways: per inference (NPU
//! time over total time) and over the window since [`Profiler::enable`]
//! (NPU busy time over wall time), both in permille; the interpreter's
//! busy time is in [`ProfileSummary::interpreter_us`]. The C API's
//! `syn_prof_result_t` is frozen (seven `uint32_t`, no reserved field), so
//! it keeps reporting NPU time only; interpreter time is exposed in Rust
//! and on the shell (`syn prof`, `syn ipc status`).

use core::fmt;

pub use crate::time::Clock;

/// Timing of one inference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InferenceProfile {
    /// Submit to completion, microseconds (queueing included).
    pub total_us: u64,
    /// Time in preprocessing stages.
    pub preprocess_us: u64,
    /// Time of model steps on the NPU device.
    pub npu_us: u64,
    /// Time of model steps on the CPU interpreter device.
    pub interpreter_us: u64,
    /// Time in postprocessing stages.
    pub postprocess_us: u64,
    /// Transport overhead added by the serving layer ([`Profiler::add_ipc_overhead`]).
    pub ipc_us: u64,
    /// Peak working memory of the inference, bytes.
    pub memory_peak: usize,
    /// `npu_us / total_us` in permille (0 when `total_us` is 0).
    pub npu_utilization_permille: u32,
}

/// Aggregate over every recorded inference since [`Profiler::enable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProfileSummary {
    /// Inferences recorded.
    pub count: u32,
    /// Sum of `total_us`.
    pub total_us: u64,
    /// Largest `total_us`.
    pub max_total_us: u64,
    /// Sum of `npu_us` (NPU busy time).
    pub npu_us: u64,
    /// Sum of `interpreter_us` (CPU interpreter busy time).
    pub interpreter_us: u64,
    /// Sum of `ipc_us`.
    pub ipc_us: u64,
    /// Largest `memory_peak`.
    pub memory_peak: usize,
}

impl ProfileSummary {
    /// Mean `total_us` (0 before the first inference).
    pub fn mean_total_us(&self) -> u64 {
        self.total_us
            .checked_div(u64::from(self.count))
            .unwrap_or(0)
    }
}

impl fmt::Display for ProfileSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "inferences {} mean {} us max {} us npu {} us ipc {} us peak {} B",
            self.count,
            self.mean_total_us(),
            self.max_total_us,
            self.npu_us,
            self.ipc_us,
            self.memory_peak
        )?;
        // Printed only when the interpreter ran: NPU-only lines stay as before.
        if self.interpreter_us > 0 {
            write!(f, " cpu-interpreter {} us", self.interpreter_us)?;
        }
        Ok(())
    }
}

/// The profiler.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::prof::{InferenceProfile, Profiler};
/// use synaptic_runtime::time::FakeClock;
/// let clock = FakeClock::new(0);
/// let mut prof = Profiler::new();
/// prof.enable(&clock);
/// prof.record(InferenceProfile { total_us: 100, npu_us: 60, ..Default::default() });
/// assert_eq!(prof.last().unwrap().npu_utilization_permille, 600);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Profiler {
    enabled: bool,
    window_start_us: u64,
    last: Option<InferenceProfile>,
    summary: ProfileSummary,
}

fn permille(part: u64, whole: u64) -> u32 {
    // Per inference the figures fit 32 bits (71 minutes): one hardware
    // divide instead of the 64-bit division routine.
    if let (Ok(part), Ok(whole)) = (u32::try_from(part), u32::try_from(whole)) {
        if let Some(scaled) = part.checked_mul(1000) {
            return scaled.checked_div(whole).map_or(0, |p| p.min(1000));
        }
    }
    part.saturating_mul(1000)
        .checked_div(whole)
        .map_or(0, |p| p.min(1000) as u32)
}

impl Profiler {
    /// A disabled profiler.
    pub const fn new() -> Profiler {
        Profiler {
            enabled: false,
            window_start_us: 0,
            last: None,
            summary: ProfileSummary {
                count: 0,
                total_us: 0,
                max_total_us: 0,
                npu_us: 0,
                interpreter_us: 0,
                ipc_us: 0,
                memory_peak: 0,
            },
        }
    }

    /// Starts recording and opens a new window (the summary restarts).
    pub fn enable(&mut self, clock: &impl Clock) {
        self.enabled = true;
        self.window_start_us = clock.now_us();
        self.summary = ProfileSummary::default();
    }

    /// Stops recording; the last result and summary stay readable.
    pub fn disable(&mut self) {
        self.enabled = false;
    }

    /// Whether recording is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Records one inference (ignored while disabled); fills in its utilisation.
    pub fn record(&mut self, mut profile: InferenceProfile) {
        if !self.enabled {
            return;
        }
        profile.npu_utilization_permille = permille(profile.npu_us, profile.total_us);
        let s = &mut self.summary;
        s.count = s.count.saturating_add(1);
        s.total_us = s.total_us.saturating_add(profile.total_us);
        s.max_total_us = s.max_total_us.max(profile.total_us);
        s.npu_us = s.npu_us.saturating_add(profile.npu_us);
        s.interpreter_us = s.interpreter_us.saturating_add(profile.interpreter_us);
        s.ipc_us = s.ipc_us.saturating_add(profile.ipc_us);
        s.memory_peak = s.memory_peak.max(profile.memory_peak);
        self.last = Some(profile);
    }

    /// Adds transport overhead to the last inference (the serving layer
    /// knows it only after the scheduler is done).
    pub fn add_ipc_overhead(&mut self, us: u64) {
        if !self.enabled {
            return;
        }
        if let Some(last) = self.last.as_mut() {
            last.ipc_us = last.ipc_us.saturating_add(us);
            last.total_us = last.total_us.saturating_add(us);
            last.npu_utilization_permille = permille(last.npu_us, last.total_us);
            self.summary.ipc_us = self.summary.ipc_us.saturating_add(us);
            self.summary.total_us = self.summary.total_us.saturating_add(us);
            self.summary.max_total_us = self.summary.max_total_us.max(last.total_us);
        }
    }

    /// The last recorded inference.
    pub fn last(&self) -> Option<InferenceProfile> {
        self.last
    }

    /// The aggregate since [`Profiler::enable`].
    pub fn summary(&self) -> ProfileSummary {
        self.summary
    }

    /// NPU busy time over wall time since [`Profiler::enable`], permille.
    pub fn window_utilization_permille(&self, clock: &impl Clock) -> u32 {
        permille(
            self.summary.npu_us,
            clock.now_us().saturating_sub(self.window_start_us),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::FakeClock;
    use core::fmt::Write;

    fn sample(total: u64, npu: u64) -> InferenceProfile {
        InferenceProfile {
            total_us: total,
            preprocess_us: 5,
            npu_us: npu,
            postprocess_us: 3,
            memory_peak: 100,
            ..Default::default()
        }
    }

    #[test]
    fn disabled_records_nothing() {
        let mut p = Profiler::new();
        p.record(sample(10, 5));
        assert_eq!(p.last(), None);
        assert_eq!(p.summary().count, 0);
        assert!(!p.is_enabled());
    }

    #[test]
    fn permille_agrees_on_both_paths() {
        // 32-bit path, the overflow to the 64-bit one, and the edges.
        assert_eq!(permille(5, 10), 500);
        assert_eq!(permille(4_294_967, 4_294_967), 1000);
        assert_eq!(
            permille(4_294_968, 8_589_936),
            500,
            "part * 1000 overflows u32"
        );
        assert_eq!(permille(1 << 40, 1 << 41), 500);
        assert_eq!(permille(7, 0), 0);
        assert_eq!(permille(9, 3), 1000, "capped");
        assert_eq!(permille(u64::MAX, 1), 1000);
    }

    #[test]
    fn records_last_and_summary() {
        let clock = FakeClock::new(1_000);
        let mut p = Profiler::new();
        p.enable(&clock);
        p.record(sample(100, 25));
        p.record(sample(300, 150));
        let last = p.last().unwrap();
        assert_eq!((last.total_us, last.npu_us), (300, 150));
        assert_eq!(last.npu_utilization_permille, 500);
        let s = p.summary();
        assert_eq!(
            (s.count, s.total_us, s.max_total_us, s.npu_us),
            (2, 400, 300, 175)
        );
        assert_eq!(s.mean_total_us(), 200);
        clock.advance(700);
        assert_eq!(p.window_utilization_permille(&clock), 250);
        p.disable();
        p.record(sample(1, 1));
        assert_eq!(p.summary().count, 2);
    }

    #[test]
    fn ipc_overhead_adds_to_the_last_inference() {
        let clock = FakeClock::new(0);
        let mut p = Profiler::new();
        p.enable(&clock);
        p.add_ipc_overhead(10);
        assert_eq!(p.last(), None);
        p.record(sample(90, 45));
        p.add_ipc_overhead(10);
        let last = p.last().unwrap();
        assert_eq!((last.ipc_us, last.total_us), (10, 100));
        assert_eq!(last.npu_utilization_permille, 450);
        assert_eq!(p.summary().ipc_us, 10);
    }

    #[test]
    fn summary_prints() {
        let clock = FakeClock::new(0);
        let mut p = Profiler::new();
        p.enable(&clock);
        p.record(sample(100, 50));
        let mut s: heapless::String<128> = heapless::String::new();
        write!(s, "{}", p.summary()).unwrap();
        assert_eq!(
            s.as_str(),
            "inferences 1 mean 100 us max 100 us npu 50 us ipc 0 us peak 100 B"
        );
        p.record(InferenceProfile {
            interpreter_us: 70,
            ..sample(100, 0)
        });
        s.clear();
        write!(s, "{}", p.summary()).unwrap();
        assert_eq!(
            s.as_str(),
            "inferences 2 mean 100 us max 100 us npu 50 us ipc 0 us peak 100 B cpu-interpreter 70 us"
        );
        assert_eq!(p.last().unwrap().npu_utilization_permille, 0);
    }
}
