//! Every single-operator model of `models/ops/` (made by `scripts/opgen.py`
//! with TensorFlow's converter: random shapes, strides, paddings,
//! dilations, activations and quantisation) against LiteRT's reference
//! kernels on 128 pseudo-random inputs each (`scripts/opgolden.py` records
//! the FNV-1a 64 of every output): 0 differing outputs for every family the
//! interpreter runs; every family it does not run is refused as
//! unsupported, by name, never as a malformed model.

use std::collections::BTreeMap;
use std::path::PathBuf;

mod reference;
use reference::{check_model, Tally};

/// Families the interpreter does not run yet: their models must be refused
/// as unsupported (operator or feature), and nothing else.
/// (None today. SVDF has no family: TensorFlow's converter emits no SVDF.)
const PENDING: &[&str] = &[];

/// Models whose converter left an output's shape to be computed at run
/// time (an unknown batch with every unit dimension squeezed: the file's
/// output shape is empty). The interpreter plans every tensor from the
/// file, so it refuses them as unsupported, by design; their family must
/// run every other model.
const RUN_TIME_SHAPES: &[&str] = &[
    "squeeze_00.tflite",
    "squeeze_02.tflite",
    "squeeze_04.tflite",
    "squeeze_06.tflite",
    "squeeze_08.tflite",
];

fn ops_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/ops")
}

#[test]
fn every_operator_family_matches_litert_on_random_inputs() {
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(ops_dir())
        .expect("models/ops")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for dir in entries {
        let family = dir.file_name().unwrap().to_string_lossy().into_owned();
        let tally = families.entry(family).or_default();
        let mut models: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "tflite"))
            .collect();
        models.sort();
        for m in models {
            let by_design = RUN_TIME_SHAPES.contains(&&*m.file_name().unwrap().to_string_lossy());
            let refused = tally.refused;
            check_model(&m, tally);
            if by_design {
                assert_eq!(
                    tally.refused,
                    refused + 1,
                    "{} runs: take it out of RUN_TIME_SHAPES",
                    m.display()
                );
                tally.refused_by_design += 1;
            }
        }
    }
    let mut failures = Vec::new();
    println!("family                          models  inputs  differing  refused");
    for (family, t) in &families {
        println!(
            "{family:<30} {:>7} {:>7} {:>10} {:>8}",
            t.models, t.inputs, t.differing, t.refused
        );
        let pending = PENDING.contains(&family.as_str());
        if t.misreported > 0 {
            failures.push(format!(
                "{family}: {} models refused as other than unsupported (first: {})",
                t.misreported,
                t.first_failure.as_deref().unwrap_or("-")
            ));
        }
        if pending {
            if t.refused != t.models {
                failures.push(format!(
                    "{family}: listed as pending but {} of {} models run ({} differing outputs): \
                     move it out of PENDING",
                    t.models - t.refused,
                    t.models,
                    t.differing
                ));
            }
        } else if t.refused > t.refused_by_design || t.differing > 0 || t.inputs < 1000 {
            failures.push(format!(
                "{family}: {} refused, {} differing outputs over {} inputs (first: {})",
                t.refused,
                t.differing,
                t.inputs,
                t.first_failure.as_deref().unwrap_or("-")
            ));
        }
    }
    assert!(!families.is_empty(), "no model families under models/ops");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
