//! `synaptic-pack`: the host side of the model store.
//!
//! * [`check`] lists every operator of a `.tflite` with its element types
//!   and whether the CPU interpreter runs it, and the operator and type
//!   combinations the network needs that the interpreter lacks: a network
//!   is found unsupported before it is flashed, with everything it lacks at
//!   once.
//! * [`pack`] wraps a `.tflite` in the store's container
//!   ([`synaptic_store::container`]): name, version, payload length and
//!   CRC32, and the input and output shapes and types read from the
//!   flatbuffer itself (the model is parsed and validated by
//!   `synaptic-tflite`, as the firmware will; a file it refuses is refused
//!   here).
//! * Signing (`--key`), `sign`, `verify`, `keygen` and `getpub` use
//!   [`synaptic_sign`] with the keys MCUboot's `imgtool keygen` writes;
//!   `verify` runs the store's own check, and [`refusal`] says in one line
//!   what each of its refusals means.
//! * [`Partition::from_dts`] finds a fixed partition by label in a built
//!   devicetree (`build/zephyr/zephyr.dts`), with its flash's erase and
//!   write block sizes; [`report`] lays out the store over it and says
//!   which containers fit a slot.

use std::fmt::Write as _;

use std::collections::BTreeMap;
use synaptic_store::{Header, StoreError, TensorShape, HEADER_LEN};

use synaptic_tflite::{ElementType, Model, OperatorSurvey, Tensor};

/// Why packing or laying out failed.
#[derive(Debug, PartialEq, Eq)]
pub enum PackError {
    /// The `.tflite` does not parse or validate (the interpreter's reason).
    Model(String),
    /// The model has no input or output, or more than one of either.
    Signature,
    /// A tensor of rank above 4 (the container records four dimensions).
    Rank(usize),
    /// An element type the container cannot name.
    ElementType,
    /// A name the store refuses.
    Name,
    /// No partition with that label (or no `reg`) in the devicetree.
    NoPartition(String),
    /// The partition cannot hold the store's registry and two slots per
    /// model of that size.
    Layout,
}

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackError::Model(e) => write!(f, "not a model the interpreter runs: {e}"),
            PackError::Signature => write!(f, "the model must have one input and one output"),
            PackError::Rank(r) => write!(
                f,
                "a tensor of rank {r} (the container records 4 dimensions)"
            ),
            PackError::ElementType => write!(f, "an element type the container cannot name"),
            PackError::Name => write!(f, "a name must be 1 to 31 bytes of UTF-8 without NUL"),
            PackError::NoPartition(l) => write!(f, "no partition labelled \"{l}\" with a reg"),
            PackError::Layout => write!(
                f,
                "the partition cannot hold the registry and two slots per model"
            ),
        }
    }
}

impl std::error::Error for PackError {}

/// `.tflite`'s `TensorType` code of an element type.
fn type_code(t: ElementType) -> Result<u8, PackError> {
    Ok(match t {
        ElementType::Float32 => 0,
        ElementType::Int32 => 2,
        ElementType::UInt8 => 3,
        ElementType::Int64 => 4,
        ElementType::Bool => 6,
        ElementType::Int16 => 7,
        ElementType::Int8 => 9,
        _ => return Err(PackError::ElementType),
    })
}

fn shape(t: &Tensor<'_>) -> Result<TensorShape, PackError> {
    let dims = t.shape().dims();
    if dims.len() > 4 {
        return Err(PackError::Rank(dims.len()));
    }
    let mut out = [1u32; 4];
    for (o, d) in out.iter_mut().zip(dims) {
        *o = u32::try_from(*d).map_err(|_| PackError::Rank(dims.len()))?;
    }
    Ok(TensorShape {
        dtype: type_code(t.element_type())?,
        rank: dims.len() as u8,
        dims: out,
    })
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The report: one line per operator, then the combinations needed and
    /// those lacking.
    pub text: String,
    /// Operator and type combinations the network needs (`ADD(int8, int8
    /// -> int8)`), each with why the interpreter cannot run it, if it cannot.
    pub needs: BTreeMap<String, Option<String>>,
    /// Whether the interpreter runs the whole network.
    pub runs: bool,
}

fn type_name(t: ElementType) -> &'static str {
    match t {
        ElementType::Float32 => "float32",
        ElementType::Int32 => "int32",
        ElementType::UInt8 => "uint8",
        ElementType::Int64 => "int64",
        ElementType::Bool => "bool",
        ElementType::Int16 => "int16",
        ElementType::Int8 => "int8",
        _ => "other",
    }
}

/// `NAME(input types -> output types)` of a surveyed operator.
fn signature(op: &OperatorSurvey) -> String {
    let list = |types: &[Option<ElementType>]| {
        types
            .iter()
            .map(|t| t.map_or("-", type_name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let trim = |types: &[Option<ElementType>; 4]| {
        let n = types.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        types[..n].to_vec()
    };
    format!(
        "{}({} -> {})",
        op.name,
        list(&trim(&op.inputs)),
        list(&trim(&op.outputs))
    )
}

/// Every operator of `model` (a `.tflite`) with its types and whether the
/// CPU interpreter (`synaptic-tflite`, as the firmware links it) runs it.
///
/// # Errors
///
/// [`PackError::Model`] when the file is not a readable model at all (a
/// broken flatbuffer, another format): then there are no operators to list.
pub fn check(model: &[u8]) -> Result<Check, PackError> {
    let mut text = String::new();
    let mut needs: BTreeMap<String, Option<String>> = BTreeMap::new();
    let _ = writeln!(
        text,
        "{:>4}  {:<44} verdict",
        "#", "operator(inputs -> outputs)"
    );
    let result = Model::survey(model, |op| {
        let sig = signature(&op);
        let verdict = op.verdict.err().map(|e| e.to_string());
        let _ = writeln!(
            text,
            "{:>4}  {:<44} {}",
            op.index,
            sig,
            verdict.as_deref().unwrap_or("runs")
        );
        let entry = needs.entry(sig).or_insert(None);
        if entry.is_none() {
            *entry = verdict;
        }
    });
    let lacking: Vec<_> = needs.iter().filter(|(_, v)| v.is_some()).collect();
    let _ = writeln!(
        text,
        "needs {} operator and type combinations; the interpreter lacks {}",
        needs.len(),
        lacking.len()
    );
    for (sig, why) in &lacking {
        let _ = writeln!(text, "  lacks {sig}: {}", why.as_deref().unwrap_or(""));
    }
    let runs = match result {
        Ok(()) => true,
        Err(e) if needs.is_empty() => return Err(PackError::Model(e.to_string())),
        Err(e) => {
            if lacking.is_empty() {
                let _ = writeln!(text, "the graph is refused: {e}");
            }
            false
        }
    };
    Ok(Check { text, needs, runs })
}

/// The container of `model` (a `.tflite`) named `name`, version `version`.
///
/// # Errors
///
/// [`PackError`].
pub fn pack(model: &[u8], name: &str, version: u32) -> Result<Vec<u8>, PackError> {
    let parsed = Model::parse(model).map_err(|e| PackError::Model(format!("{e:?}")))?;
    if parsed.input_count() != 1 || parsed.output_count() != 1 {
        return Err(PackError::Signature);
    }
    let err = |e| PackError::Model(format!("{e:?}"));
    let input = shape(&parsed.input(0).map_err(err)?)?;
    let output = shape(&parsed.output(0).map_err(err)?)?;
    let header = Header::new(name, version, model, input, output).map_err(|_| PackError::Name)?;
    let mut out = header.encode().to_vec();
    out.extend_from_slice(model);
    debug_assert_eq!(out.len(), HEADER_LEN + model.len());
    Ok(out)
}

/// A fixed partition of a devicetree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Offset in its flash.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// The flash's `erase-block-size` (0 if the devicetree gives none).
    pub erase_block: u64,
    /// The flash's `write-block-size` (1 if none).
    pub write_block: u64,
}

impl Partition {
    /// The partition labelled `label` in devicetree source `dts` (a built
    /// `zephyr.dts`: one node per block, properties before children). The
    /// block sizes are the nearest ones declared before the partition: its
    /// flash node's.
    ///
    /// # Errors
    ///
    /// [`PackError::NoPartition`].
    pub fn from_dts(dts: &str, label: &str) -> Result<Partition, PackError> {
        let missing = || PackError::NoPartition(label.to_owned());
        let needle = format!("label = \"{label}\";");
        let at = dts.find(&needle).ok_or_else(missing)?;
        // The node holding the label: from its opening line to its `};`.
        let start = dts[..at].rfind('{').ok_or_else(missing)?;
        let end = at + dts[at..].find("};").ok_or_else(missing)?;
        let node = &dts[start..end];
        let reg = property_cells(node, "reg").ok_or_else(missing)?;
        let [offset, size] = reg[..] else {
            return Err(missing());
        };
        let before = &dts[..start];
        let nearest = |name: &str| {
            before
                .rmatch_indices(&format!("{name} = <"))
                .next()
                .and_then(|(i, _)| property_cells(&before[i..], name))
                .and_then(|c| c.first().copied())
        };
        Ok(Partition {
            offset,
            size,
            erase_block: nearest("erase-block-size").unwrap_or(0),
            write_block: nearest("write-block-size").unwrap_or(1),
        })
    }
}

/// The cells of `name = < ... >;` in `text` (decimal or 0x hex).
fn property_cells(text: &str, name: &str) -> Option<Vec<u64>> {
    let key = format!("{name} = <");
    let i = text.find(&key)? + key.len();
    let j = i + text[i..].find('>')?;
    text[i..j]
        .split_whitespace()
        .map(|c| match c.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => c.parse().ok(),
        })
        .collect()
}

/// How the store lays out over `partition` for `models` models of at most
/// `slot_bytes` container bytes, and whether each `(file, container
/// length)` fits a slot. Returns the report and whether all fit.
///
/// # Errors
///
/// [`PackError::Layout`] when the layout itself does not fit.
pub fn report(
    partition: &Partition,
    models: u64,
    slot_bytes: u64,
    containers: &[(String, u64)],
) -> Result<(String, bool), PackError> {
    let sector = partition.erase_block.max(1);
    let slot = slot_bytes.div_ceil(sector).max(1) * sector;
    let used = 2 * sector + 2 * models * slot;
    if models == 0 || used > partition.size {
        return Err(PackError::Layout);
    }
    let mut out = String::new();
    let base = partition.offset;
    let _ = writeln!(
        out,
        "partition 0x{base:x}..0x{:x} ({} B), erase block {sector} B, write block {} B",
        base + partition.size,
        partition.size,
        partition.write_block
    );
    let _ = writeln!(
        out,
        "registry copies 0x{base:x}, 0x{:x} ({sector} B each)",
        base + sector
    );
    for m in 0..models {
        for (s, ab) in ["A", "B"].iter().enumerate() {
            let at = base + 2 * sector + (2 * m + s as u64) * slot;
            let _ = writeln!(
                out,
                "model {m} slot {ab}: 0x{at:x}..0x{:x} ({slot} B)",
                at + slot
            );
        }
    }
    let _ = writeln!(
        out,
        "used {used} of {} B, {} B free",
        partition.size,
        partition.size - used
    );
    let mut all = true;
    for (file, len) in containers {
        let fits = *len <= slot;
        all &= fits;
        let verdict = if fits { "fits" } else { "does NOT fit" };
        let _ = writeln!(out, "{file}: {len} B container {verdict} a {slot} B slot");
    }
    Ok((out, all))
}

/// One line on why the store refuses a container, by class: `unsigned`,
/// `untrusted key`, `tampered`, `truncated`, `bad header`.
pub fn refusal(e: StoreError) -> &'static str {
    match e {
        StoreError::Unsigned => "unsigned: the container carries no signature and one is required",
        StoreError::UntrustedKey => {
            "untrusted key: signed by a key that is not one of those given"
        }
        StoreError::BadSignature => {
            "tampered: the signature does not match the header and payload (changed after signing)"
        }
        StoreError::CrcMismatch => {
            "tampered: the payload fails its CRC32 (changed or damaged after packing)"
        }
        StoreError::Length => {
            "truncated: the file's length is not the header's (cut short, or bytes added)"
        }
        StoreError::BadContainer => {
            "bad header: not a container, or its header or signature block is malformed or fails its CRC"
        }
        StoreError::BadKey => "bad key: a key of the wrong length or algorithm, or none given",
        StoreError::Downgrade => "downgrade: the version is below the model's security counter",
        _ => "refused by the store",
    }
}

/// The container length of a file for [`report`]: a container (signed or
/// not) as it is; a `.tflite` not yet packed as header and file. With
/// `signed`, as it will be once signed: a signature block more for
/// anything unsigned.
pub fn container_len(file: &[u8], signed: bool) -> usize {
    let block = synaptic_sign::SIGNATURE_LEN;
    match Header::decode(file) {
        Ok(h) if h.signed || !signed => file.len(),
        Ok(_) => file.len() + block,
        Err(_) => file.len() + HEADER_LEN + if signed { block } else { 0 },
    }
}
