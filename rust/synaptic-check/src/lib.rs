//! Test checks that return instead of panicking, for bodies shared by host and target.
//!
//! A test body is a `fn() -> Outcome`. On the host, `#[test]` functions call
//! it and unwrap the result; on Zephyr, `synaptic_zephyr::ztest_suite!`
//! registers the same function as a ztest case, which fails through ztest
//! with the file, line and condition that [`check!`] recorded. One body, two
//! runners, no copy.
//!
//! ```
//! use synaptic_check::{check, check_eq, Outcome};
//!
//! fn sums() -> Outcome {
//!     check!(1 + 1 == 2);
//!     check_eq!(2 * 2, 4);
//!     Ok(())
//! }
//! assert!(sums().is_ok());
//! ```
#![no_std]
#![forbid(unsafe_code)]

use core::fmt;

/// Why a test body did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A condition did not hold.
    Check {
        /// Source file of the check.
        file: &'static str,
        /// Line of the check.
        line: u32,
        /// The condition as written, or the reason given.
        what: &'static str,
    },
    /// Two integers differed.
    NotEqual {
        /// Source file of the check.
        file: &'static str,
        /// Line of the check.
        line: u32,
        /// The two expressions as written.
        what: &'static str,
        /// Left value, widened.
        left: i64,
        /// Right value, widened.
        right: i64,
    },
    /// The body does not apply here (a ztest SKIP; on the host, a pass with a note).
    Skip(&'static str),
}

/// What a test body returns.
pub type Outcome = Result<(), Failure>;

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Check { file, line, what } => write!(f, "{file}:{line}: {what}"),
            Failure::NotEqual {
                file,
                line,
                what,
                left,
                right,
            } => write!(f, "{file}:{line}: {what} ({left} != {right})"),
            Failure::Skip(why) => write!(f, "skipped: {why}"),
        }
    }
}

/// Return a [`Failure`] unless `cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr $(,)?) => {
        $crate::check!($cond, stringify!($cond))
    };
    ($cond:expr, $what:expr $(,)?) => {
        if !$cond {
            return Err($crate::Failure::Check {
                file: file!(),
                line: line!(),
                what: $what,
            });
        }
    };
}

/// Return a [`Failure`] unless two integer values are equal; records both.
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr $(,)?) => {{
        let (left, right) = (&$left, &$right);
        if *left != *right {
            return Err($crate::Failure::NotEqual {
                file: file!(),
                line: line!(),
                what: concat!(stringify!($left), " == ", stringify!($right)),
                left: *left as i64,
                right: *right as i64,
            });
        }
    }};
}

/// Return a skip with a reason.
#[macro_export]
macro_rules! skip {
    ($why:expr) => {
        return Err($crate::Failure::Skip($why))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails_check() -> Outcome {
        check!(1 > 2, "one is not greater than two");
        Ok(())
    }

    fn fails_eq() -> Outcome {
        check_eq!(3u8, 4u8);
        Ok(())
    }

    fn skips() -> Outcome {
        skip!("not here");
    }

    #[test]
    fn check_records_the_condition_and_place() {
        match fails_check() {
            Err(Failure::Check { what, line, .. }) => {
                assert_eq!(what, "one is not greater than two");
                assert!(line > 0);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn check_eq_records_both_values() {
        match fails_eq() {
            Err(Failure::NotEqual {
                left, right, what, ..
            }) => {
                assert_eq!((left, right), (3, 4));
                assert_eq!(what, "3u8 == 4u8");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn skip_is_not_a_pass() {
        assert_eq!(skips(), Err(Failure::Skip("not here")));
    }
}
