//! `synaptic-pack check MODEL.tflite`
//! `synaptic-pack pack MODEL.tflite --name NAME --version N --out FILE`
//! `synaptic-pack layout --dts zephyr.dts --partition LABEL --models N --slot BYTES [FILE...]`
//!
//! See the crate docs (`synaptic_pack`).

use std::process::ExitCode;

use lexopt::prelude::*;

const USAGE: &str = "usage:
  synaptic-pack check MODEL.tflite
  synaptic-pack pack MODEL.tflite --name NAME [--version N] --out FILE
  synaptic-pack layout --dts zephyr.dts --partition LABEL --models N --slot BYTES [CONTAINER|MODEL...]";

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("synaptic-pack: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let mut parser = lexopt::Parser::from_env();
    let command = match parser.next()? {
        Some(Value(v)) => v.string()?,
        Some(Long("help")) | Some(Short('h')) | None => {
            println!("{USAGE}");
            return Ok(true);
        }
        Some(other) => return Err(other.unexpected().into()),
    };
    match command.as_str() {
        "check" => check(parser),
        "pack" => pack(parser),
        "layout" => layout(parser),
        other => Err(format!("unknown command {other:?}").into()),
    }
}

/// Lists every operator and what the interpreter lacks; false (exit 1)
/// when it lacks anything.
fn check(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let mut model = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Value(v) if model.is_none() => model = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let model = model.ok_or("check needs MODEL")?;
    let report = synaptic_pack::check(&std::fs::read(&model)?)?;
    print!("{model}:\n{}", report.text);
    Ok(report.runs)
}

fn pack(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut model, mut name, mut version, mut out) = (None, None, 1u32, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("name") => name = Some(parser.value()?.string()?),
            Long("version") => version = parser.value()?.parse()?,
            Long("out") | Short('o') => out = Some(parser.value()?.string()?),
            Value(v) if model.is_none() => model = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let (Some(model), Some(name), Some(out)) = (model, name, out) else {
        return Err("pack needs MODEL, --name and --out".into());
    };
    let bytes = std::fs::read(&model)?;
    // A network the interpreter cannot run is refused with everything it
    // lacks, not only the first operator.
    let report = synaptic_pack::check(&bytes)?;
    if !report.runs {
        eprint!(
            "synaptic-pack: {model} is not a network the interpreter runs:\n{}",
            report.text
        );
        return Ok(false);
    }
    let container = synaptic_pack::pack(&bytes, &name, version)?;
    std::fs::write(&out, &container)?;
    println!(
        "{out}: \"{name}\" version {version}, {} B ({} B model + {} B header)",
        container.len(),
        bytes.len(),
        synaptic_store::HEADER_LEN
    );
    Ok(true)
}

fn layout(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut dts, mut label, mut models, mut slot) = (None, None, None, None);
    let mut files = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("dts") => dts = Some(parser.value()?.string()?),
            Long("partition") => label = Some(parser.value()?.string()?),
            Long("models") => models = Some(parser.value()?.parse::<u64>()?),
            Long("slot") => slot = Some(parser.value()?.parse::<u64>()?),
            Value(v) => files.push(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let (Some(dts), Some(label), Some(models), Some(slot)) = (dts, label, models, slot) else {
        return Err("layout needs --dts, --partition, --models and --slot".into());
    };
    let partition = synaptic_pack::Partition::from_dts(&std::fs::read_to_string(dts)?, &label)?;
    // A file that is not a container yet is measured as one.
    let mut containers = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f)?;
        let len = match synaptic_store::Header::decode(&bytes) {
            Ok(_) => bytes.len(),
            Err(_) => bytes.len() + synaptic_store::HEADER_LEN,
        };
        containers.push((f, len as u64));
    }
    let (text, all_fit) = synaptic_pack::report(&partition, models, slot, &containers)?;
    print!("{text}");
    Ok(all_fit)
}
