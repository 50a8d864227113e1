//! Service-time predictions: a running estimate of how long one model step
//! takes on one device, learned from measured runs.
//!
//! Integer only, allocation free, eight bytes per estimate. The registry
//! keeps one [`ServiceTime`] per model and device
//! ([`Registry::service_time`](crate::registry::Registry::service_time));
//! the scheduler feeds it the time it measures for every successful model
//! step (the same figure it books to the device in the
//! [`InferenceProfile`](crate::prof::InferenceProfile)), and the placement
//! policies read it ([`crate::device`]).
//!
//! # Update rule
//!
//! An exponentially weighted moving average with weight 1/8, kept scaled by
//! 8 (three fraction bits, as TCP keeps its smoothed round-trip time,
//! RFC 6298 in Jacobson's fixed-point form). With `S` the scaled estimate
//! and `x` a measurement in microseconds:
//!
//! * first sample: `S = 8x` (the estimate is seeded by the first
//!   measurement, not pulled up from 0);
//! * later samples: `S = S - S/8 + x` (`S/8` rounded down), i.e.
//!   `estimate = 7/8 estimate + 1/8 x`;
//! * [`ServiceTime::estimate_us`] is `S/8` rounded to the nearest
//!   microsecond.
//!
//! A constant input is reproduced exactly; after a step change the estimate
//! covers 1/8 of the remaining distance per sample (half of it in about 5.2
//! samples). Measurements are clamped to [`MAX_SAMPLE_US`] (about 537 s),
//! which keeps `S` inside a `u32` and the update at one shift, one subtract
//! and one add.
//!
//! # Limits
//!
//! The scheduler measures wall time on its clock from the start of a step
//! to the moment it collects the result. A synchronous step is timed
//! exactly. An asynchronous NPU step (overlap mode) is timed to its
//! collection: exact when the scheduler collects it promptly (its caller
//! was waiting for the device), but late when a synchronous step (a CPU
//! stage, or a model step on the CPU interpreter) held the scheduler's
//! thread while the device finished. Then the scheduler only knows the
//! run took between the time it last saw the device busy and the
//! collection, and records the current estimate clamped into that
//! interval (the upper end when there is no estimate yet): a late
//! collection does not inflate the estimate, it only corrects one the
//! interval rules out. Taking the late collection as the sample made the
//! NPU's estimates 1.5x (person detection) to 2.7x (keyword spotting) too
//! high in the placement benchmark (`synaptic-sim`'s `placement_bench`),
//! and earliest-finish placement then sent nearly every step to the CPU.

/// Largest measurement taken as is; longer ones count as this.
pub const MAX_SAMPLE_US: u32 = u32::MAX >> SHIFT;

/// Fraction bits of the scaled estimate (weight `1 / 2^SHIFT`).
const SHIFT: u32 = 3;

/// A running estimate of one model's service time on one device.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::predict::ServiceTime;
/// let mut t = ServiceTime::new();
/// assert_eq!(t.estimate_us(), None);
/// t.record(1_000); // seeds the estimate
/// assert_eq!((t.estimate_us(), t.samples()), (Some(1_000), 1));
/// t.record(1_800); // 7/8 * 1000 + 1/8 * 1800
/// assert_eq!(t.estimate_us(), Some(1_100));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTime {
    /// The estimate times 8.
    scaled: u32,
    /// Measurements taken (saturating).
    samples: u32,
}

impl ServiceTime {
    /// No measurement yet.
    pub const fn new() -> ServiceTime {
        ServiceTime {
            scaled: 0,
            samples: 0,
        }
    }

    /// Takes one measurement (see the module documentation for the rule).
    pub fn record(&mut self, us: u64) {
        let x = u32::try_from(us).map_or(MAX_SAMPLE_US, |x| x.min(MAX_SAMPLE_US));
        self.scaled = if self.samples == 0 {
            x << SHIFT
        } else {
            // 7/8 S + x <= 8 MAX_SAMPLE_US: no overflow.
            self.scaled - (self.scaled >> SHIFT) + x
        };
        self.samples = self.samples.saturating_add(1);
    }

    /// The predicted service time in microseconds, `None` before the first
    /// measurement.
    pub const fn estimate_us(&self) -> Option<u32> {
        if self.samples == 0 {
            None
        } else {
            Some((self.scaled + (1 << (SHIFT - 1))) >> SHIFT)
        }
    }

    /// Measurements taken so far (saturates at `u32::MAX`).
    pub const fn samples(&self) -> u32 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_by_the_first_sample_then_seven_eighths_old_one_eighth_new() {
        let mut t = ServiceTime::new();
        assert_eq!((t.estimate_us(), t.samples()), (None, 0));
        t.record(800);
        assert_eq!(t.estimate_us(), Some(800));
        // S = 6400 - 800 + 1600 = 7200: 900.
        t.record(1_600);
        assert_eq!(t.estimate_us(), Some(900));
        // S = 7200 - 900 + 0 = 6300: 787.5, rounded to 788.
        t.record(0);
        assert_eq!((t.estimate_us(), t.samples()), (Some(788), 3));
    }

    #[test]
    fn a_constant_input_is_reproduced_and_a_step_is_followed() {
        let mut t = ServiceTime::new();
        for _ in 0..50 {
            t.record(1_234);
            assert_eq!(t.estimate_us(), Some(1_234));
        }
        // After a step from 1234 to 2000 the estimate climbs monotonically
        // and gets within a microsecond of the new level.
        let mut previous = 1_234;
        for _ in 0..60 {
            t.record(2_000);
            let e = t.estimate_us().unwrap();
            assert!(e >= previous && e <= 2_000, "{e} after {previous}");
            previous = e;
        }
        assert!(previous >= 1_999, "{previous}");
        // Half of the distance within six samples (1 - (7/8)^6 = 0.55).
        let mut u = ServiceTime::new();
        u.record(0);
        for _ in 0..6 {
            u.record(8_000);
        }
        let e = u.estimate_us().unwrap();
        assert!((4_000..4_500).contains(&e), "{e}");
    }

    #[test]
    fn huge_samples_saturate_instead_of_overflowing() {
        let mut t = ServiceTime::new();
        t.record(u64::MAX);
        assert_eq!(t.estimate_us(), Some(MAX_SAMPLE_US));
        for _ in 0..100 {
            t.record(u64::from(u32::MAX) + 1);
        }
        assert_eq!(t.estimate_us(), Some(MAX_SAMPLE_US));
        t.record(0);
        assert!(t.estimate_us().unwrap() < MAX_SAMPLE_US);
    }
}
