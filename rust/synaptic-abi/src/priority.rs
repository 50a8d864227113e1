//! Priority classes carried by every request, local or remote.
//!
//! Remote requests enter the same priority space as CPU0's local jobs: a
//! remote `RealTime` request outranks a local `Normal` one.

/// Scheduling class of a job or a remote request (wire value in `Message::priority`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Shares the device with `Normal` by weighted round robin (by
    /// default one selection in five while both wait): never starved.
    BestEffort = 0,
    /// The default class.
    #[default]
    Normal = 1,
    /// Latency-critical: starts at the next stage boundary of a preemptible job.
    RealTime = 2,
}

impl Priority {
    /// Number of classes.
    ///
    /// cbindgen:ignore
    pub const COUNT: usize = 3;

    /// Every class, lowest first.
    pub const ALL: [Priority; Priority::COUNT] =
        [Priority::BestEffort, Priority::Normal, Priority::RealTime];

    /// Index 0..COUNT, for per-class queues.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A raw priority byte that names no class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidPriority(pub u8);

impl TryFrom<u8> for Priority {
    type Error = InvalidPriority;

    fn try_from(raw: u8) -> Result<Self, Self::Error> {
        match raw {
            0 => Ok(Priority::BestEffort),
            1 => Ok(Priority::Normal),
            2 => Ok(Priority::RealTime),
            other => Err(InvalidPriority(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_class_and_rejects_the_rest() {
        for p in Priority::ALL {
            assert_eq!(Priority::try_from(p as u8), Ok(p));
        }
        for raw in 3..=u8::MAX {
            assert_eq!(Priority::try_from(raw), Err(InvalidPriority(raw)));
        }
        assert!(Priority::RealTime > Priority::Normal);
        assert!(Priority::Normal > Priority::BestEffort);
    }
}
