//! Packing the shipped models and laying out a partition.

use synaptic_pack::{pack, report, PackError, Partition};
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
