//! The model store on the board's flash (the flash simulator partition
//! devicetree names): a real model (TFLite Micro's 300 KB person detector)
//! installed in 4 KB chunks, read back and CRC-checked after a reopen,
//! updated, rolled back; and the power-loss sweep over the same flash at a
//! sample of cut points.
#![no_std]

use synaptic_store::sweep::{sweep, STEPS};
use synaptic_store::{Header, Layout, PowerCut, Store, StoreError, TensorShape, HEADER_LEN};
use synaptic_zephyr::store::ZephyrFlash;
use synaptic_zephyr::ztest::{Failure, Outcome};
use synaptic_zephyr::{zassert, ztest_suite};
use zephyr::printkln;
use zephyr::raw;

/// The person detector, as the repository ships it.
static PERSON: &[u8] = include_bytes!("../../../models/person_detect.tflite");
/// Models and slot bytes of the model suite's layout.
const MODELS: usize = 2;
const SLOT: usize = 320 * 1024;
/// Bytes per `write_chunk` (an update streamed over a link comes in pieces).
const CHUNK: usize = 4096;

/// `r`'s value, or a failure naming `what` (the store's error printed).
macro_rules! ok {
    ($r:expr, $what:expr) => {
        match $r {
            Ok(v) => v,
            Err(e) => {
                printkln!("store: {}: {:?}", $what, e);
                return Err(Failure::Check {
                    file: file!(),
                    line: line!(),
                    what: $what,
                });
            }
        }
    };
}

fn cycles() -> u32 {
    // SAFETY: reading the cycle counter has no preconditions.
    unsafe { raw::k_cycle_get_32() }
}

fn blank(flash: &mut ZephyrFlash) -> Result<(), StoreError> {
    use synaptic_store::Flash;
    let sector = flash.sector_size();
    (0..flash.size() / sector).try_for_each(|i| flash.erase_sector(i * sector))
}

/// The container header of a model with an int8 `[1, h, w, 1]` input and
/// `scores` int8 outputs (TFLite type code 9).
fn int8_header(name: &str, version: u32, model: &[u8], h: u32, w: u32, scores: u32) -> Header {
    let input = TensorShape {
        dtype: 9,
        rank: 4,
        dims: [1, h, w, 1],
    };
    let output = TensorShape {
        dtype: 9,
        rank: 2,
        dims: [1, scores, 1, 1],
    };
    Header::new(name, version, model, input, output).expect("a valid name")
}

fn person_header(version: u32) -> Header {
    int8_header("person", version, PERSON, 96, 96, 2)
}

/// Begin, header, payload in CHUNK pieces, finish, activate.
fn install<F: synaptic_store::Flash>(
    store: &mut Store<F, MODELS>,
    version: u32,
) -> Result<u32, StoreError> {
    let header = person_header(version).encode();
    store.begin("person", HEADER_LEN + PERSON.len())?;
    store.write_chunk(0, &header)?;
    for (i, chunk) in PERSON.chunks(CHUNK).enumerate() {
        store.write_chunk(HEADER_LEN + i * CHUNK, chunk)?;
    }
    store.finish()?;
    store.activate("person")
}

fn open() -> Result<Store<ZephyrFlash, MODELS>, StoreError> {
    let flash = ZephyrFlash::open()?;
    let layout = Layout::new(&flash, MODELS, SLOT)?;
    Ok(Store::open(flash, layout)?.0)
}

/// The active person model's payload equals the shipped bytes.
fn active_is_person(store: &mut Store<ZephyrFlash, MODELS>) -> Result<u32, StoreError> {
    let located = store.active("person")?;
    let mut chunk = [0u8; 256];
    for (i, expected) in PERSON.chunks(chunk.len()).enumerate() {
        let got = &mut chunk[..expected.len()];
        store.read_payload(&located, i * 256, got)?;
        if got != expected {
            return Err(StoreError::CrcMismatch);
        }
    }
    Ok(located.header.version)
}

fn a_real_model_installs_updates_and_rolls_back() -> Outcome {
    let mut flash = ok!(ZephyrFlash::open(), "no store partition");
    ok!(blank(&mut flash), "erase");
    let mut store = ok!(open(), "open");
    let start = cycles();
    zassert!(install(&mut store, 1) == Ok(1), "install version 1");
    let spent = cycles().wrapping_sub(start);
    printkln!(
        "store: {} B person-detection container installed (begin, {} chunks of at most {} B, \
         finish with read-back CRC, activate) in {} emulated cycles",
        HEADER_LEN + PERSON.len(),
        PERSON.len().div_ceil(CHUNK) + 1,
        CHUNK,
        spent
    );
    // A reboot: the store reopens from flash and hands out the same bytes.
    let mut store = ok!(open(), "reopen");
    zassert!(
        active_is_person(&mut store) == Ok(1),
        "version 1 after a reopen"
    );
    zassert!(install(&mut store, 2) == Ok(2), "update to version 2");
    zassert!(active_is_person(&mut store) == Ok(2), "version 2 active");
    zassert!(store.rollback("person") == Ok(1), "rollback to version 1");
    let mut store = ok!(open(), "reopen");
    zassert!(
        active_is_person(&mut store) == Ok(1),
        "the rollback survives a reopen"
    );
    let status = ok!(
        store.models().next().ok_or(StoreError::NotFound),
        "no model"
    );
    zassert!(
        (status.active, status.previous) == (Some(1), Some(2)),
        "version 1 active, version 2 the rollback target"
    );
    zassert!(
        status.erases[0] + status.erases[1] == 2,
        "one erase pass per update"
    );
    Ok(())
}

fn a_bad_container_leaves_the_active_version() -> Outcome {
    let mut flash = ok!(ZephyrFlash::open(), "no store partition");
    ok!(blank(&mut flash), "erase");
    let mut store = ok!(open(), "open");
    zassert!(install(&mut store, 1) == Ok(1), "install version 1");
    let before = ok!(active_is_person(&mut store), "no active person model");
    let mut header = person_header(9).encode();
    header[50] ^= 1; // the payload CRC word: the header's own CRC fails
    zassert!(
        store.begin("person", HEADER_LEN + PERSON.len()) == Ok(()),
        "begin"
    );
    zassert!(store.write_chunk(0, &header) == Ok(()), "header chunk");
    for (i, chunk) in PERSON.chunks(CHUNK).enumerate() {
        zassert!(
            store.write_chunk(HEADER_LEN + i * CHUNK, chunk) == Ok(()),
            "chunk"
        );
    }
    zassert!(
        store.finish() == Err(StoreError::BadContainer),
        "finish refuses it"
    );
    zassert!(
        store.activate("person") == Err(StoreError::NothingStaged),
        "nothing to activate"
    );
    let mut store = ok!(open(), "reopen");
    zassert!(
        active_is_person(&mut store) == Ok(before),
        "the active version is untouched"
    );
    Ok(())
}

ztest_suite!(store_model {
    a_real_model_installs_updates_and_rolls_back,
    a_bad_container_leaves_the_active_version,
});

fn the_c_api_streams_a_real_model() -> Outcome {
    use core::ffi::CStr;
    use synaptic_zephyr::store::ota::{
        syn_ota_activate, syn_ota_finish, syn_ota_get_state, syn_ota_rollback,
    };
    fn begin(name: &CStr, total: usize) -> i32 {
        // SAFETY: a NUL-terminated name.
        unsafe { synaptic_zephyr::store::ota::syn_ota_begin(name.as_ptr(), total) }
    }
    fn chunk(data: &[u8]) -> i32 {
        // SAFETY: a buffer valid for the length passed.
        unsafe { synaptic_zephyr::store::ota::syn_ota_write_chunk(data.as_ptr(), data.len()) }
    }
    erased_store()?;
    let errno = |e: u32| -(e as i32);
    let name = c"person";
    let total = HEADER_LEN + PERSON.len();
    zassert!(syn_ota_get_state() == 0, "idle");
    zassert!(
        chunk(&PERSON[..16]) == errno(raw::EPERM),
        "a chunk while idle"
    );
    zassert!(syn_ota_finish() == errno(raw::EPERM), "finish while idle");
    zassert!(
        syn_ota_rollback() == errno(raw::ENOENT),
        "nothing to roll back"
    );
    zassert!(
        begin(name, 2 * SLOT) == errno(raw::EFBIG),
        "larger than a slot"
    );
    zassert!(begin(name, total) == 0, "begin");
    zassert!(syn_ota_get_state() == 1, "downloading");
    let header = person_header(1).encode();
    zassert!(chunk(&header) == 0, "header");
    for piece in PERSON.chunks(CHUNK) {
        zassert!(chunk(piece) == 0, "chunk");
    }
    zassert!(syn_ota_finish() == 0, "finish");
    zassert!(syn_ota_get_state() == 4, "ready");
    zassert!(syn_ota_activate() == 0, "activate");
    zassert!(syn_ota_get_state() == 0, "idle again");
    // A bad magic ends the next update at once.
    let mut bad = person_header(2).encode();
    bad[0] ^= 0xFF;
    zassert!(begin(name, total) == 0, "begin");
    zassert!(chunk(&bad) == errno(raw::EILSEQ), "a bad magic");
    zassert!(syn_ota_get_state() == 5, "error");
    // What the C API activated is what the store hands out.
    let mut store = ok!(open(), "open");
    zassert!(active_is_person(&mut store) == Ok(1), "version 1 active");
    Ok(())
}

ztest_suite!(store_ota {
    the_c_api_streams_a_real_model,
});

/// The keyword spotter, as the repository ships it (streamed over the shell).
static SPEECH: &[u8] = include_bytes!("../../../models/micro_speech.tflite");
/// Decoded bytes per `syn ota write` line (CONFIG_SYNAPTIC_STORE_SHELL_CHUNK).
const LINE_CHUNK: usize = zephyr::kconfig::CONFIG_SYNAPTIC_STORE_SHELL_CHUNK as usize;

extern "C" {
    fn store_shell_run(cmd: *const core::ffi::c_char, out: *mut u8, out_len: usize) -> i32;
    fn store_base64(dst: *mut u8, dst_len: usize, src: *const u8, src_len: usize) -> i32;
}

/// A command line and what the shell answered.
struct Shell {
    line: [u8; 256],
    out: [u8; 512],
}

impl Shell {
    const fn new() -> Self {
        Shell {
            line: [0; 256],
            out: [0; 512],
        }
    }

    /// Run `cmd` followed by `arg`; the command's status and its output.
    fn run(&mut self, cmd: &str, arg: &[u8]) -> (i32, &str) {
        let len = cmd.len() + arg.len();
        if len >= self.line.len() {
            return (-(raw::E2BIG as i32), "");
        }
        self.line[..cmd.len()].copy_from_slice(cmd.as_bytes());
        self.line[cmd.len()..len].copy_from_slice(arg);
        self.line[len] = 0;
        // SAFETY: `line` is NUL-terminated and `out` valid for its length;
        // the C glue copies at most `out.len() - 1` bytes and a NUL.
        let ret = unsafe {
            store_shell_run(
                self.line.as_ptr().cast(),
                self.out.as_mut_ptr(),
                self.out.len(),
            )
        };
        let end = self.out.iter().position(|&b| b == 0).unwrap_or(0);
        (ret, core::str::from_utf8(&self.out[..end]).unwrap_or(""))
    }

    /// `syn ota write` of `chunk` in base64; the status.
    fn write(&mut self, chunk: &[u8]) -> (i32, &str) {
        let mut text = [0u8; 4 * (LINE_CHUNK / 3 + 1) + 1];
        // SAFETY: both buffers are valid for the lengths passed.
        let n = unsafe { store_base64(text.as_mut_ptr(), text.len(), chunk.as_ptr(), chunk.len()) };
        if n < 0 {
            return (n, "");
        }
        self.run("syn ota write ", &text[..n as usize])
    }
}

/// Erase the store's flash and make the C API read it again.
fn erased_store() -> Outcome {
    let mut flash = ok!(ZephyrFlash::open(), "no store partition");
    ok!(blank(&mut flash), "erase");
    zassert!(
        synaptic_zephyr::store::ota::syn_store_reload() == 0,
        "reload the erased store"
    );
    Ok(())
}

/// The shell suite's buffers: each case takes them once.
fn shell() -> &'static mut Shell {
    static mut SHELL: Shell = Shell::new();
    // SAFETY: ztest runs the cases one at a time on one thread, and each
    // calls this once, so no two references to the static are alive.
    unsafe { &mut *core::ptr::addr_of_mut!(SHELL) }
}

/// Whether a command's answer passes `ok`; prints it when not.
fn answered(ret: i32, out: &str, ok: bool) -> bool {
    if !ok {
        printkln!("store: shell answered {}: {}", ret, out.trim());
    }
    ok
}

fn speech_header(version: u32) -> Header {
    int8_header("speech", version, SPEECH, 49, 40, 4)
}

/// `syn ota begin` to `activate` of version `version`: the lines written.
fn stream(sh: &mut Shell, version: u32) -> Result<usize, Failure> {
    let fail = |what| Failure::Check {
        file: file!(),
        line: line!(),
        what,
    };
    let mut size = [0u8; 12];
    let total = HEADER_LEN + SPEECH.len();
    let digits = {
        let mut n = total;
        let mut i = size.len();
        while n > 0 {
            i -= 1;
            size[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        &size[i..]
    };
    let (ret, out) = sh.run("syn ota begin speech ", digits);
    if ret != 0 || !out.contains("ota: ok begin, 0 bytes, state downloading") {
        printkln!("store: begin answered {}: {}", ret, out);
        return Err(fail("syn ota begin"));
    }
    let header = speech_header(version).encode();
    let mut lines = 0;
    let mut sent = 0;
    for piece in header.chunks(LINE_CHUNK).chain(SPEECH.chunks(LINE_CHUNK)) {
        let (ret, out) = sh.write(piece);
        sent += piece.len();
        lines += 1;
        if ret != 0 || !out.contains("ota: ok write") {
            printkln!("store: write {} answered {}: {}", lines, ret, out);
            return Err(fail("syn ota write"));
        }
    }
    let (ret, out) = sh.run("syn ota finish", b"");
    if ret != 0 || !out.contains("state ready") || sent != total {
        printkln!("store: finish answered {}: {}", ret, out);
        return Err(fail("syn ota finish"));
    }
    let (ret, out) = sh.run("syn ota activate", b"");
    if ret != 0 || !out.contains("ota: ok activate") {
        printkln!("store: activate answered {}: {}", ret, out);
        return Err(fail("syn ota activate"));
    }
    Ok(lines)
}

fn the_shell_streams_a_real_model_and_rolls_it_back() -> Outcome {
    erased_store()?;
    let sh = shell();
    let (ret, out) = sh.run("syn store list", b"");
    zassert!(
        answered(ret, out, ret == 0 && out.contains("store: 0 models")),
        "an empty store lists nothing"
    );
    let start = cycles();
    let lines = stream(sh, 1)?;
    printkln!(
        "store: shell: {} B keyword-spotting container streamed as {} 'syn ota write' lines of at \
         most {} B (base64), finished and activated in {} emulated cycles",
        HEADER_LEN + SPEECH.len(),
        lines,
        LINE_CHUNK,
        cycles().wrapping_sub(start)
    );
    let (ret, out) = sh.run("syn store list", b"");
    let listed = ret == 0 && out.contains("store: speech: active v1, previous v0; slot A valid");
    zassert!(answered(ret, out, listed), "version 1 listed active");
    stream(sh, 2)?;
    let (ret, out) = sh.run("syn ota rollback", b"");
    zassert!(
        answered(ret, out, ret == 0 && out.contains("ota: ok rollback")),
        "rollback"
    );
    let (ret, out) = sh.run("syn store list", b"");
    printkln!("store: shell: after the rollback: {}", out.trim());
    zassert!(
        ret == 0
            && out.contains("store: speech: active v1, previous v2; slot A valid")
            && out.contains("slot B valid")
            && out.contains("store: 1 models"),
        "version 1 active again, version 2 the rollback target"
    );
    // What the shell activated is what the store hands out.
    let mut store = ok!(open(), "open");
    let located = ok!(store.active("speech"), "no active speech model");
    zassert!(located.header.version == 1, "the store agrees");
    Ok(())
}

fn the_shell_refuses_bad_lines_with_an_errno() -> Outcome {
    erased_store()?;
    let sh = shell();
    let (ret, out) = sh.run("syn ota write ", b"AAAA");
    zassert!(
        answered(
            ret,
            out,
            ret == -(raw::EPERM as i32) && out.contains("ota: write failed: -1 (state idle)")
        ),
        "a chunk while idle"
    );
    let (ret, out) = sh.run("syn ota begin speech ", b"12x");
    zassert!(
        answered(
            ret,
            out,
            ret == -(raw::EINVAL as i32) && out.contains("is not a positive number")
        ),
        "a size that is not a number"
    );
    let (ret, _) = sh.run("syn ota begin speech ", b"100000000");
    zassert!(
        answered(ret, "", ret == -(raw::EFBIG as i32)),
        "larger than a slot"
    );
    let (ret, _) = sh.run("syn ota begin speech ", b"1000");
    zassert!(answered(ret, "", ret == 0), "begin");
    let (ret, out) = sh.run("syn ota write ", b"!!!!");
    zassert!(
        answered(
            ret,
            out,
            ret == -(raw::EINVAL as i32) && out.contains("not base64")
        ),
        "not base64"
    );
    let too_long = [b'A'; 4 * (LINE_CHUNK / 3 + 1)];
    let (ret, _) = sh.run("syn ota write ", &too_long);
    zassert!(
        answered(ret, "", ret == -(raw::EINVAL as i32)),
        "more than one chunk's bytes"
    );
    let (ret, out) = sh.write(&[0u8; HEADER_LEN]);
    zassert!(
        answered(
            ret,
            out,
            ret == -(raw::EILSEQ as i32) && out.contains("state error")
        ),
        "a chunk that is no container header ends the update"
    );
    let (ret, out) = sh.run("syn ota state", b"");
    zassert!(
        answered(ret, out, ret == 0 && out.contains("state error")),
        "state"
    );
    let (ret, _) = sh.run("syn ota", b"");
    zassert!(
        answered(ret, "", ret != 0),
        "a group without its subcommand"
    );
    Ok(())
}

ztest_suite!(store_shell {
    the_shell_streams_a_real_model_and_rolls_it_back,
    the_shell_refuses_bad_lines_with_an_errno,
});

/// Every `STRIDE`th flash operation of the scenario is a cut point.
const STRIDE: usize = 4;

fn power_loss_at_a_sample_of_flash_operations() -> Outcome {
    let flash = ok!(ZephyrFlash::open(), "no store partition");
    let mut flash = PowerCut::new(flash);
    let layout = ok!(Layout::new(&flash, 2, 12 * 1024), "layout");
    let start = cycles();
    let report = match sweep::<_, 2>(&mut flash, layout, (0..).step_by(STRIDE)) {
        Ok(r) => r,
        Err(f) => {
            printkln!("store: power-loss sweep failed: {:?}", f);
            return Err(Failure::Check {
                file: file!(),
                line: line!(),
                what: "power-loss sweep",
            });
        }
    };
    printkln!(
        "store: power-loss sweep on the flash simulator: {} cut points (every {}th of {} flash \
         operations over {} steps), {} cuts of the boot's repair, 0 failures, {} emulated cycles",
        report.cuts,
        STRIDE,
        report.operations,
        STEPS.len(),
        report.second_cuts,
        cycles().wrapping_sub(start)
    );
    zassert!(
        report.cuts >= report.operations / STRIDE,
        "every sampled cut point ran"
    );
    Ok(())
}

ztest_suite!(store_power_loss {
    power_loss_at_a_sample_of_flash_operations,
});
