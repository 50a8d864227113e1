//! `synaptic-pack check MODEL.tflite`
//! `synaptic-pack pack MODEL.tflite --name NAME [--version N] [--key KEY.pem] --out FILE`
//! `synaptic-pack sign CONTAINER --key KEY.pem --out FILE`
//! `synaptic-pack verify CONTAINER --key KEY.pem [--key KEY.pem...] [--require]`
//! `synaptic-pack keygen --type ed25519|ecdsa-p256 --out KEY.pem`
//! `synaptic-pack getpub --key KEY.pem [--raw OUT.bin]`
//! `synaptic-pack layout --dts zephyr.dts --partition LABEL --models N --slot BYTES [--signed] [FILE...]`
//!
//! Keys are PEM files as MCUboot's `imgtool keygen -t ed25519|ecdsa-p256`
//! writes them (private) or `imgtool getpub -e pem` (public). Exit status:
//! 0 done, 1 refused (a network the interpreter cannot run, a container
//! `verify` refuses, a model that does not fit), 2 a usage or file error.
//!
//! See the crate docs (`synaptic_pack`).

use std::process::ExitCode;

use lexopt::prelude::*;

const USAGE: &str = "usage:
  synaptic-pack check MODEL.tflite
  synaptic-pack pack MODEL.tflite --name NAME [--version N] [--key KEY.pem] --out FILE
  synaptic-pack sign CONTAINER --key KEY.pem --out FILE
  synaptic-pack verify CONTAINER --key KEY.pem [--key KEY.pem...] [--require]
  synaptic-pack keygen --type ed25519|ecdsa-p256 --out KEY.pem
  synaptic-pack getpub --key KEY.pem [--raw OUT.bin]
  synaptic-pack layout --dts zephyr.dts --partition LABEL --models N --slot BYTES [--signed] [CONTAINER|MODEL...]
keys: imgtool keygen -t ed25519|ecdsa-p256 (PKCS#8 PEM), imgtool getpub -e pem";

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
        "sign" => sign(parser),
        "verify" => verify(parser),
        "keygen" => keygen(parser),
        "getpub" => getpub(parser),
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
    let mut key = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("name") => name = Some(parser.value()?.string()?),
            Long("key") | Short('k') => key = Some(parser.value()?.string()?),
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
    // The key is read before anything is written.
    let key = key.map(|k| read_key(&k)).transpose()?;
    let mut container = synaptic_pack::pack(&bytes, &name, version)?;
    let mut signed = String::new();
    if let Some(key) = &key {
        container = sign_container(&container, key)?;
        signed = format!(
            " + {} B signature, {} key {}",
            synaptic_sign::SIGNATURE_LEN,
            synaptic_sign::algorithm_name(key.algorithm()),
            synaptic_sign::hex(&key.key_id())
        );
    }
    std::fs::write(&out, &container)?;
    println!(
        "{out}: \"{name}\" version {version}, {} B ({} B model + {} B header{signed})",
        container.len(),
        bytes.len(),
        synaptic_store::HEADER_LEN
    );
    Ok(true)
}

fn read_key(path: &str) -> Result<synaptic_sign::Key, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    synaptic_sign::Key::from_pem(&text).map_err(|e| format!("{path}: {e}").into())
}

/// `synaptic_sign::sign`, its refusal of a damaged container said as
/// `verify` says it.
fn sign_container(
    container: &[u8],
    key: &synaptic_sign::Key,
) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    synaptic_sign::sign(container, key).map_err(|e| match e {
        synaptic_sign::SignError::Container(e) => {
            format!("not signed: {}", synaptic_pack::refusal(e)).into()
        }
        e => e.into(),
    })
}

fn sign(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut container, mut key, mut out) = (None, None, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("key") | Short('k') => key = Some(parser.value()?.string()?),
            Long("out") | Short('o') => out = Some(parser.value()?.string()?),
            Value(v) if container.is_none() => container = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let (Some(container), Some(key), Some(out)) = (container, key, out) else {
        return Err("sign needs CONTAINER, --key and --out".into());
    };
    let key = read_key(&key)?;
    let signed = sign_container(&std::fs::read(&container)?, &key)?;
    std::fs::write(&out, &signed)?;
    println!(
        "{out}: {} B, signed with {} key {}",
        signed.len(),
        synaptic_sign::algorithm_name(key.algorithm()),
        synaptic_sign::hex(&key.key_id())
    );
    Ok(true)
}

/// The store's check with the keys given; true (exit 0) when it passes,
/// false (exit 1) with one line on why not.
fn verify(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut container, mut keys, mut require) = (None, Vec::new(), false);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("key") | Short('k') => keys.push(read_key(&parser.value()?.string()?)?),
            Long("require") => require = true,
            Value(v) if container.is_none() => container = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let Some(container) = container else {
        return Err("verify needs CONTAINER".into());
    };
    if keys.is_empty() {
        return Err("verify needs at least one --key".into());
    }
    let bytes = std::fs::read(&container)?;
    let header = match synaptic_sign::verify(&bytes, &keys, require) {
        Ok(header) => header,
        Err(e) => {
            eprintln!(
                "synaptic-pack: {container}: refused: {}",
                synaptic_pack::refusal(e)
            );
            return Ok(false);
        }
    };
    println!("{container}: verified");
    println!("name: {}", header.name());
    println!("version: {}", header.version);
    // The block decoded in the check that just passed.
    match synaptic_sign::signature_block(&bytes).unwrap_or(None) {
        Some(block) => {
            println!(
                "algorithm: {}",
                synaptic_sign::algorithm_name(block.algorithm)
            );
            println!("key id: {}", synaptic_sign::hex(&block.key_id));
        }
        None => println!("algorithm: none (unsigned, accepted without --require)"),
    }
    Ok(true)
}

fn keygen(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut kind, mut out) = (None, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("type") | Short('t') => kind = Some(parser.value()?.string()?),
            Long("out") | Short('o') => out = Some(parser.value()?.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let (Some(kind), Some(out)) = (kind, out) else {
        return Err("keygen needs --type and --out".into());
    };
    let algorithm = match kind.as_str() {
        "ed25519" => synaptic_sign::Algorithm::Ed25519,
        "ecdsa-p256" => synaptic_sign::Algorithm::EcdsaP256,
        other => return Err(format!("unknown key type {other:?} (ed25519 or ecdsa-p256)").into()),
    };
    let key = synaptic_sign::keygen(algorithm)?;
    // Never over an existing key; readable by its owner alone.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&out).map_err(|e| format!("{out}: {e}"))?;
    std::io::Write::write_all(&mut file, key.to_pem().as_bytes())?;
    println!(
        "{out}: new {} key, key id {}",
        synaptic_sign::algorithm_name(algorithm),
        synaptic_sign::hex(&key.key_id())
    );
    Ok(true)
}

fn getpub(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut key, mut raw) = (None, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("key") | Short('k') => key = Some(parser.value()?.string()?),
            Long("raw") => raw = Some(parser.value()?.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let Some(key) = key else {
        return Err("getpub needs --key".into());
    };
    let key = read_key(&key)?;
    let public = key.public_bytes();
    println!(
        "algorithm: {}",
        synaptic_sign::algorithm_name(key.algorithm())
    );
    println!("key id: {}", synaptic_sign::hex(&key.key_id()));
    println!("public key: {}", synaptic_sign::hex(&public));
    if let Some(raw) = raw {
        std::fs::write(&raw, &public)?;
        println!("{raw}: {} B raw public key", public.len());
    }
    Ok(true)
}

fn layout(mut parser: lexopt::Parser) -> Result<bool, Box<dyn std::error::Error>> {
    let (mut dts, mut label, mut models, mut slot) = (None, None, None, None);
    let (mut files, mut signed) = (Vec::new(), false);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("signed") => signed = true,
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
    // A file that is not a container yet is measured as one (with
    // `--signed`, as a signed one).
    let mut containers = Vec::new();
    for f in files {
        let len = synaptic_pack::container_len(&std::fs::read(&f)?, signed);
        containers.push((f, len as u64));
    }
    let (text, all_fit) = synaptic_pack::report(&partition, models, slot, &containers)?;
    print!("{text}");
    Ok(all_fit)
}
