//! The four MLPerf Tiny v1.x reference networks of `models/networks/`
//! (visual wake words, ResNet-8, DS-CNN, the anomaly-detection autoencoder:
//! built, seeded and int8-quantised by `scripts/mlperf_tiny.py`) against
//! LiteRT's reference kernels on 200 pseudo-random inputs each
//! (`scripts/opgolden.py` records the FNV-1a 64 of every output): every
//! network runs, 0 differing outputs. Prints each network's operators and
//! the arena it needs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use synaptic_tflite::Model;

mod reference;
use reference::{check_model, Tally};

/// The networks `scripts/mlperf_tiny.py` makes: all must be there.
const NETWORKS: &[&str] = &["autoencoder", "dscnn", "resnet8", "vww"];
const INPUTS: usize = 200;

fn networks_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/networks")
}

/// "CONV_2D x9, ADD x3, ..." in order of first use, and the operator count.
fn operators(bytes: &[u8]) -> (String, usize) {
    let mut names: Vec<&'static str> = Vec::new();
    let mut count: BTreeMap<&'static str, usize> = BTreeMap::new();
    // A refusal shows in check_model's tally; the survey still names every operator.
    let _ = Model::survey(bytes, |op| {
        if !count.contains_key(op.name) {
            names.push(op.name);
        }
        *count.entry(op.name).or_default() += 1;
    });
    let total = count.values().sum();
    let list = names
        .iter()
        .map(|n| format!("{n} x{}", count[n]))
        .collect::<Vec<_>>()
        .join(", ");
    (list, total)
}

#[test]
fn mlperf_tiny_networks_match_litert_on_random_inputs() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(networks_dir())
        .expect("models/networks")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tflite"))
        .collect();
    paths.sort();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in NETWORKS {
        assert!(
            names.iter().any(|n| n == want),
            "models/networks/{want}.tflite is missing (scripts/mlperf_tiny.py makes it)"
        );
    }
    let mut failures = Vec::new();
    println!(
        "{:<12} {:>9} {:>12} {:>7} {:>10}  operator list",
        "network", "operators", "arena bytes", "inputs", "differing"
    );
    for (path, name) in paths.iter().zip(&names) {
        let (list, count) = operators(&std::fs::read(path).unwrap());
        let mut t = Tally::default();
        check_model(path, &mut t);
        println!(
            "{name:<12} {count:>9} {:>12} {:>7} {:>10}  {list}",
            t.arena, t.inputs, t.differing
        );
        // No refusal is expected here, by design or otherwise.
        if t.refused + t.refused_by_design > 0 || t.differing > 0 || t.inputs < INPUTS {
            failures.push(format!(
                "{name}: {} refused, {} differing outputs over {} inputs (first: {})",
                t.refused,
                t.differing,
                t.inputs,
                t.first_failure.as_deref().unwrap_or("-")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
