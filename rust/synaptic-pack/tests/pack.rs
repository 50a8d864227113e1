//! Packing the shipped models and laying out a partition.

use synaptic_pack::{check, pack, report, PackError, Partition};
use synaptic_store::{crc32, Header, HEADER_LEN};

fn model(name: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/");
    std::fs::read(format!("{path}{name}")).expect("a shipped model")
}

#[test]
fn the_shipped_models_pack_with_their_shapes() {
    let speech = model("micro_speech.tflite");
    let c = pack(&speech, "micro_speech", 3).unwrap();
    let h = Header::decode(&c).unwrap();
    assert_eq!((h.name(), h.version), ("micro_speech", 3));
    assert_eq!(h.payload_len as usize, speech.len());
    assert_eq!(h.payload_crc, crc32(&speech));
    assert_eq!(&c[HEADER_LEN..], &speech[..]);
    assert_eq!(h.input.dtype, 9, "int8 input");
    assert_eq!(
        h.input.dims[..h.input.rank as usize]
            .iter()
            .product::<u32>(),
        1960,
        "49 x 40 features"
    );
    let person = pack(&model("person_detect.tflite"), "person", 1).unwrap();
    let h = Header::decode(&person).unwrap();
    assert_eq!(
        h.input.dims[..h.input.rank as usize]
            .iter()
            .product::<u32>(),
        96 * 96
    );
}

#[test]
fn a_damaged_model_or_bad_name_is_refused() {
    let speech = model("micro_speech.tflite");
    assert!(matches!(
        pack(&speech[..1000], "x", 1),
        Err(PackError::Model(_))
    ));
    assert_eq!(pack(&speech, "", 1), Err(PackError::Name));
    assert_eq!(pack(&speech, &"n".repeat(32), 1), Err(PackError::Name));
}

const DTS: &str = r#"
	soc {
		flash0: flash@0 {
			compatible = "soc-nv-flash";
			reg = < 0x0 0x100000 >;
			erase-block-size = < 0x1000 >;
			write-block-size = < 16 >;
			partitions {
				compatible = "fixed-partitions";
				slot0_partition: partition@0 {
					label = "image-0";
					reg = < 0x0 0x80000 >;
				};
				models_partition: partition@80000 {
					label = "models";
					reg = < 0x80000 0x80000 >;
				};
			};
		};
	};
"#;

#[test]
fn a_partition_is_found_and_laid_out() {
    let p = Partition::from_dts(DTS, "models").unwrap();
    assert_eq!(
        p,
        Partition {
            offset: 0x80000,
            size: 0x80000,
            erase_block: 4096,
            write_block: 16
        }
    );
    assert_eq!(
        Partition::from_dts(DTS, "nope"),
        Err(PackError::NoPartition("nope".into()))
    );
    let (text, fits) = report(
        &p,
        2,
        100_000,
        &[("kws.synm".into(), 18_896), ("big".into(), 200_000)],
    )
    .unwrap();
    assert!(!fits, "{text}");
    assert!(
        text.contains("model 1 slot B: 0xcd000..0xe6000 (102400 B)"),
        "{text}"
    );
    assert!(text.contains("kws.synm: 18896 B container fits"), "{text}");
    assert!(
        text.contains("big: 200000 B container does NOT fit"),
        "{text}"
    );
    assert_eq!(report(&p, 3, 100_000, &[]), Err(PackError::Layout));
}

/// `bytes` with its first operator code made `code` (both the deprecated
/// byte and the 32-bit field, where present): a well-formed model with an
/// operator the interpreter lacks.
fn with_first_operator(mut bytes: Vec<u8>, code: u8) -> Vec<u8> {
    let u32_at = |b: &[u8], p: usize| u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize;
    let field = |b: &[u8], table: usize, slot: usize| {
        let vtable = (table as i64
            - i64::from(i32::from_le_bytes(b[table..table + 4].try_into().unwrap())))
            as usize;
        let vtable_len = u16::from_le_bytes(b[vtable..vtable + 2].try_into().unwrap()) as usize;
        let at = vtable + 4 + 2 * slot;
        if at + 2 > vtable + vtable_len {
            return None;
        }
        let offset = u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize;
        (offset != 0).then_some(table + offset)
    };
    let root = u32_at(&bytes, 0);
    let codes = field(&bytes, root, 1).expect("operator_codes");
    let vector = codes + u32_at(&bytes, codes);
    let first = vector + 4;
    let table = first + u32_at(&bytes, first);
    if let Some(p) = field(&bytes, table, 0) {
        bytes[p] = code;
    }
    if let Some(p) = field(&bytes, table, 3) {
        bytes[p..p + 4].copy_from_slice(&u32::from(code).to_le_bytes());
    }
    bytes
}

#[test]
fn check_lists_every_operator_and_what_the_interpreter_lacks() {
    let speech = model("micro_speech.tflite");
    let report = check(&speech).unwrap();
    assert!(report.runs, "{}", report.text);
    assert!(report.needs.values().all(Option::is_none));
    assert!(report
        .needs
        .contains_key("FULLY_CONNECTED(int8, int8, int32 -> int8)"));
    assert_eq!(
        report.text.lines().filter(|l| l.ends_with("runs")).count(),
        4
    );

    // The same network with an operator the interpreter lacks (EXP, 47):
    // reported by name and code, the rest still listed.
    let patched = with_first_operator(speech, 47);
    let report = check(&patched).unwrap();
    assert!(!report.runs);
    let lacking: Vec<_> = report
        .needs
        .iter()
        .filter(|(_, why)| why.is_some())
        .collect();
    assert_eq!(lacking.len(), 1, "{}", report.text);
    let (sig, why) = lacking[0];
    assert!(sig.starts_with("EXP("), "{sig}");
    assert_eq!(
        why.as_deref(),
        Some("unsupported operator EXP (builtin code 47)")
    );
    assert!(
        report.text.contains("the interpreter lacks 1"),
        "{}",
        report.text
    );
    assert!(matches!(pack(&patched, "m", 1), Err(PackError::Model(_))));
    // Not a model at all: an error, not a report.
    assert!(check(b"not a flatbuffer").is_err());
}

#[test]
fn the_check_command_exits_non_zero_on_a_network_it_cannot_run() {
    let dir = std::env::temp_dir().join(format!("synaptic-pack-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("exp.tflite");
    std::fs::write(&bad, with_first_operator(model("micro_speech.tflite"), 47)).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_synaptic-pack"))
            .args(args)
            .output()
            .unwrap()
    };
    let good = format!(
        "{}/../../models/micro_speech.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = run(&["check".as_ref(), good.as_ref()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("lacks 0"));
    let out = run(&["check".as_ref(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unsupported operator EXP"));
    let container = dir.join("exp.bin");
    let out = run(&[
        "pack".as_ref(),
        bad.as_os_str(),
        "--name".as_ref(),
        "m".as_ref(),
        "--out".as_ref(),
        container.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!container.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
