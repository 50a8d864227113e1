//! Arbitration between the `Normal` and `BestEffort` classes: weighted round
//! robin, under `RealTime`'s strict priority.
//!
//! The scheduler ([`crate::sched`]) picks again at every stage boundary.
//! A `RealTime` job, when one can run, is always picked (strict priority,
//! as before). Otherwise, when both a `Normal` and a `BestEffort` job can
//! run, the selection is *contended* and [`Wrr`] decides the class: each
//! round gives `Normal` [`Weights::normal`] selections and `BestEffort`
//! [`Weights::best_effort`], `Normal` first; a round ends when both are
//! spent. When only one of the two classes can run it is picked and no
//! credit is spent (an idle class saves nothing up and loses nothing).
//! Within a class the order stays FIFO by submission.
//!
//! # Starvation bound
//!
//! While a `BestEffort` job can run, at most `weights.normal` `Normal`
//! selections happen before a `BestEffort` one (and at most
//! `weights.best_effort` `BestEffort` selections before a `Normal` one).
//! A selection is one step of a preemptible job, or the rest of a
//! non-preemptible job (it keeps the CPU once picked); `RealTime`
//! selections are not counted, they come first whatever the weights.
//! Weights are at least 1, so neither class can be starved by the other.

use synaptic_abi::Priority;

/// WRR weights of the `Normal` and `BestEffort` classes: selections per
/// round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Weights {
    /// `Normal` selections per round (at least 1).
    pub normal: u8,
    /// `BestEffort` selections per round (at least 1).
    pub best_effort: u8,
}

/// The default weights, 4:1.
pub const DEFAULT_WEIGHTS: Weights = Weights {
    normal: 4,
    best_effort: 1,
};

impl Weights {
    /// Whether both weights are at least 1.
    pub const fn is_valid(self) -> bool {
        self.normal > 0 && self.best_effort > 0
    }
}

impl Default for Weights {
    fn default() -> Self {
        DEFAULT_WEIGHTS
    }
}

/// The round-robin state: credits left in the current round.
///
/// # Examples
///
/// ```
/// use synaptic_abi::Priority;
/// use synaptic_runtime::arbiter::{Weights, Wrr};
/// let mut wrr = Wrr::new(Weights { normal: 2, best_effort: 1 });
/// let mut order = [Priority::RealTime; 6];
/// for o in &mut order {
///     *o = wrr.choose();
///     wrr.charge(*o);
/// }
/// use Priority::{BestEffort as B, Normal as N};
/// assert_eq!(order, [N, N, B, N, N, B]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wrr {
    weights: Weights,
    normal_left: u8,
    best_effort_left: u8,
}

impl Wrr {
    /// A fresh round with `weights`; a zero weight counts as 1.
    pub const fn new(weights: Weights) -> Wrr {
        let weights = Weights {
            normal: if weights.normal == 0 {
                1
            } else {
                weights.normal
            },
            best_effort: if weights.best_effort == 0 {
                1
            } else {
                weights.best_effort
            },
        };
        Wrr {
            weights,
            normal_left: weights.normal,
            best_effort_left: weights.best_effort,
        }
    }

    /// The weights.
    pub const fn weights(&self) -> Weights {
        self.weights
    }

    /// The class that gets a contended selection: `Normal` while it has
    /// credit in this round, else `BestEffort`.
    pub const fn choose(&self) -> Priority {
        if self.normal_left > 0 {
            Priority::Normal
        } else {
            Priority::BestEffort
        }
    }

    /// A contended selection of `class` ran: spend its credit, and start a
    /// new round when both are spent. `RealTime` costs nothing.
    pub fn charge(&mut self, class: Priority) {
        match class {
            Priority::Normal => self.normal_left = self.normal_left.saturating_sub(1),
            Priority::BestEffort => self.best_effort_left = self.best_effort_left.saturating_sub(1),
            Priority::RealTime => {}
        }
        if self.normal_left == 0 && self.best_effort_left == 0 {
            self.normal_left = self.weights.normal;
            self.best_effort_left = self.weights.best_effort;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_the_weights_normal_first_and_zero_weights_count_as_one() {
        let mut wrr = Wrr::new(Weights {
            normal: 3,
            best_effort: 2,
        });
        let mut seen = [Priority::RealTime; 10];
        for s in &mut seen {
            *s = wrr.choose();
            wrr.charge(*s);
        }
        use Priority::{BestEffort as B, Normal as N};
        assert_eq!(seen, [N, N, N, B, B, N, N, N, B, B]);
        let w = Wrr::new(Weights {
            normal: 0,
            best_effort: 0,
        });
        assert_eq!(
            w.weights(),
            Weights {
                normal: 1,
                best_effort: 1
            }
        );
        assert!(!Weights {
            normal: 0,
            best_effort: 1
        }
        .is_valid());
        // RealTime spends nothing.
        let mut rt = Wrr::new(DEFAULT_WEIGHTS);
        rt.charge(Priority::RealTime);
        assert_eq!(rt, Wrr::new(DEFAULT_WEIGHTS));
    }
}
