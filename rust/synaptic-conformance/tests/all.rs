//! Runs every conformance table on the host: one test per suite, each case
//! in order, every failure printed with its place and condition.

use std::sync::OnceLock;
use std::time::Instant;

use synaptic_conformance::support::{install_hooks, Hooks};
use synaptic_conformance::{Case, Failure, SUITES};

/// Runs the cases of one suite; panics listing every failure.
fn run(suite: &str) {
    let cases: &[Case] = SUITES
        .iter()
        .find(|(name, _)| *name == suite)
        .map(|(_, cases)| *cases)
        .unwrap_or_else(|| panic!("no suite {suite}"));
    let mut failures = Vec::new();
    for (name, body) in cases {
        match body() {
            Ok(()) => println!("PASS {suite}.{name}"),
            Err(Failure::Skip(why)) => println!("SKIP {suite}.{name}: {why}"),
            Err(failure) => {
                println!("FAIL {suite}.{name}: {failure}");
                failures.push(format!("{suite}.{name}: {failure}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Nanoseconds since the first call, as the benchmarks' counter.
fn nanoseconds() -> u32 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u32
}

fn print(args: std::fmt::Arguments<'_>) {
    println!("{args}");
}

macro_rules! suites {
    ($($suite:ident),+ $(,)?) => {
        $(
            #[test]
            fn $suite() {
                run(stringify!($suite));
            }
        )+

        /// Every suite in the table has a test here (`mem_bench` below), and no other.
        #[test]
        fn every_suite_runs() {
            let here = [$(stringify!($suite),)+ "mem_bench"];
            let table: Vec<&str> = SUITES.iter().map(|(name, _)| *name).collect();
            assert_eq!(here.len(), table.len());
            for name in table {
                assert!(here.contains(&name), "suite {name} is not run");
            }
        }
    };
}

suites!(
    mem,
    mem_regions,
    model,
    sched,
    pipeline,
    process,
    npu,
    dsp,
    dsp_verify,
    dsp_fft,
    init,
);

/// The benchmarks, with a host clock and console installed.
#[test]
fn mem_bench() {
    assert!(install_hooks(Hooks {
        counter: nanoseconds,
        unit: "ns",
        print,
    }));
    run("mem_bench");
}

/// At least as many cases per suite as the C reference has, and case names
/// unique within each suite (ztest symbols are built from them) and free of
/// `test_` (twister deletes the first `test_` of a name it reads from the
/// ELF symbols, so such a case would be reported twice, once without status).
#[test]
fn case_counts_match_the_reference() {
    let minimum = [
        ("mem", 18),
        ("mem_bench", 3),
        ("mem_regions", 3),
        ("model", 9),
        ("sched", 7),
        ("pipeline", 8),
        ("process", 15),
        ("npu", 6),
        ("dsp", 11),
        ("dsp_verify", 5),
        ("dsp_fft", 9),
        ("init", 4),
    ];
    assert_eq!(SUITES.len(), minimum.len());
    for ((suite, cases), (name, at_least)) in SUITES.iter().zip(minimum) {
        assert_eq!(*suite, name);
        assert!(
            cases.len() >= at_least,
            "{suite}: {} < {at_least}",
            cases.len()
        );
        for (i, (case, _)) in cases.iter().enumerate() {
            assert!(
                cases[i + 1..].iter().all(|(other, _)| other != case),
                "{suite}.{case} twice"
            );
            assert!(synaptic_conformance::has_case(cases, case));
            assert!(
                !case.contains("test_"),
                "{suite}.{case}: twister mangles `test_`"
            );
        }
        println!("{suite}: {} cases", cases.len());
    }
    assert!(!synaptic_conformance::has_case(SUITES[0].1, "no_such_case"));
}
