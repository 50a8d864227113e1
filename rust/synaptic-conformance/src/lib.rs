//! Conformance cases of the runtime: one body per case, run by `cargo test`
//! on the host and as ztest units on the target.
//!
//! Each module is one suite; each case is a `pub fn name() -> Outcome` that
//! checks with [`check!`](synaptic_check::check) and
//! [`check_eq!`](synaptic_check::check_eq), never panics, and never
//! allocates. Each module lists its cases in `CASES`, and [`SUITES`] lists
//! the modules. `tests/all.rs` runs every table on the host; the target's
//! test application registers every body with `synaptic_zephyr::ztest_suite!`
//! under the suite's name, so twister reports `suite.case` one by one.
//!
//! The suites and the case counts of the C reference they re-implement (at
//! least that many each): `mem` 18, `mem_bench` 3, `mem_regions` 3, `model`
//! 9, `sched` 7, `pipeline` 8, `process` 15, `npu` 6, `dsp` 11,
//! `dsp_verify` 5, `dsp_fft` 9, `init` 4.
//!
//! Limits that come from the target (a 64 KB RAM Cortex-M3 running the cases
//! on a ztest thread): the largest case uses about 8 KB of that thread's
//! stack, runtime included (measured on `qemu_cortex_m3`; the MFCC kernel
//! alone keeps about 6.5 KB of arrays, so the cases call it through one
//! non-inlined function), buffers larger than a few hundred bytes are
//! `static` [`support::Exclusive`]s, and audio or FFT inputs are sized to
//! fit (for example MFCC on a few frames rather than a whole second).
//!
//! ```
//! use synaptic_conformance::{dsp_verify, SUITES};
//! assert_eq!(SUITES.len(), 12);
//! for (name, body) in dsp_verify::CASES {
//!     assert_eq!(body(), Ok(()), "dsp_verify.{name}");
//! }
//! ```
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

pub use synaptic_check::{Failure, Outcome};

/// One case: its name and its body.
pub type Case = (&'static str, fn() -> Outcome);

/// One suite: its name and its cases.
pub type Suite = (&'static str, &'static [Case]);

/// Defines the module's `CASES` table from the names of its case functions.
macro_rules! cases {
    ($($case:ident),+ $(,)?) => {
        /// Every case of this suite, in the order they run.
        pub const CASES: &[$crate::Case] = &[$((stringify!($case), $case as fn() -> $crate::Outcome)),+];
    };
}

/// The `Ok` value, or fail the case with the expression and line.
macro_rules! ok {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(_) => {
                return Err($crate::Failure::Check {
                    file: file!(),
                    line: line!(),
                    what: concat!(stringify!($result), " returned an error"),
                })
            }
        }
    };
}

/// The `Some` value, or fail the case with the expression and line.
macro_rules! some {
    ($option:expr) => {
        match $option {
            Some(value) => value,
            None => {
                return Err($crate::Failure::Check {
                    file: file!(),
                    line: line!(),
                    what: concat!(stringify!($option), " is None"),
                })
            }
        }
    };
}

/// Fails the case at this line with a reason.
macro_rules! fail {
    ($what:expr) => {
        return Err($crate::Failure::Check {
            file: file!(),
            line: line!(),
            what: $what,
        })
    };
}

/// Claims a static [`support::Exclusive`] for the rest of the case, or fails
/// the case (at the caller's line) when another case still holds it.
#[macro_export]
macro_rules! claim {
    ($cell:expr) => {
        match $cell.claim() {
            Some(claim) => claim,
            None => {
                return Err($crate::Failure::Check {
                    file: file!(),
                    line: line!(),
                    what: concat!(stringify!($cell), " is held by another case"),
                })
            }
        }
    };
}

pub mod support;

pub mod dsp;
pub mod dsp_fft;
pub mod dsp_verify;
pub mod init;
pub mod mem;
pub mod mem_bench;
pub mod mem_regions;
pub mod model;
pub mod npu;
pub mod pipeline;
pub mod process;
pub mod sched;

/// Every suite, by the name the target reports it under.
pub const SUITES: &[Suite] = &[
    ("mem", mem::CASES),
    ("mem_bench", mem_bench::CASES),
    ("mem_regions", mem_regions::CASES),
    ("model", model::CASES),
    ("sched", sched::CASES),
    ("pipeline", pipeline::CASES),
    ("process", process::CASES),
    ("npu", npu::CASES),
    ("dsp", dsp::CASES),
    ("dsp_verify", dsp_verify::CASES),
    ("dsp_fft", dsp_fft::CASES),
    ("init", init::CASES),
];

/// Whether `cases` has a case called `name`; usable in `const` context, so
/// a registration can prove at compile time that it names real cases.
pub const fn has_case(cases: &[Case], name: &str) -> bool {
    let mut i = 0;
    while i < cases.len() {
        if str_eq(cases[i].0, name) {
            return true;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
