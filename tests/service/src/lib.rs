//! Service test, CPU0: the inference service with the test models and the
//! stub NPU's failure marker armed, CPU1's test program as its client.
//!
//! What it checks and prints, in order: boot and handshake times (emulated),
//! the MPU self test while CPU1 soaks (the fault fires, only the test
//! thread dies, both cores keep serving), every `syn` shell command through
//! Zephyr's dummy shell backend, CPU1's report (soak counts, `-EIO` from the
//! failing NPU, `-ETIMEDOUT` and recovery, restart and rejoin, a model
//! update CPU1 streamed into the store while it kept inferring), and the
//! verdict. Built without CPU1's image it checks single-core mode instead.
//! Times are QEMU's emulated time.
#![no_std]

use core::ffi::{c_char, c_int, c_void, CStr};

use service_test_protocol::{self as p, Report, Word};
use synaptic_abi::Errno;
use synaptic_serve::boot::{BootPlatform, Budgets, Down, Link};
use synaptic_zephyr::service::{self, Options};
use synaptic_zephyr::status::STATUS;
use zephyr::printkln;
use zephyr::time::{now, sleep, Duration};

/// How long CPU1's whole program may take (emulated).
const REPORT_TIMEOUT_MS: u64 = 240_000;
/// Whether CPU0's store refuses unsigned containers.
const SIGNATURES_REQUIRED: bool = cfg!(CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED);

extern "C" {
    fn syn_mpu_test_run(line: *mut c_char, len: usize) -> c_int;
    fn shell_backend_dummy_get_ptr() -> *const c_void;
    fn shell_execute_cmd(sh: *const c_void, cmd: *const c_char) -> c_int;
    fn shell_backend_dummy_get_output(sh: *const c_void, size: *mut usize) -> *const c_char;
    fn shell_backend_dummy_clear_output(sh: *const c_void);
}

/// Run `cmd` on the dummy shell and print its output, each line prefixed;
/// returns the command's result and whether the output contained `expect`.
fn shell(cmd: &CStr, expect: &str) -> (c_int, bool) {
    // SAFETY: the dummy backend is enabled (prj.conf); the pointer it returns
    // is the shell instance, valid for the program's life.
    let sh = unsafe { shell_backend_dummy_get_ptr() };
    // The shell starts in its own thread: until it has, commands print
    // nothing. Retry for up to a second.
    let mut attempts = 0;
    let (rc, text) = loop {
        // SAFETY: `sh` is the dummy shell; `cmd` is NUL-terminated.
        let rc = unsafe {
            shell_backend_dummy_clear_output(sh);
            shell_execute_cmd(sh, cmd.as_ptr())
        };
        let mut size = 0usize;
        // SAFETY: the backend returns its buffer, NUL-terminated at `size`,
        // valid until the next shell call on this thread.
        let text = unsafe { CStr::from_ptr(shell_backend_dummy_get_output(sh, &mut size)) };
        attempts += 1;
        let blank = text.to_bytes().iter().all(u8::is_ascii_whitespace);
        if !blank || attempts >= 100 {
            break (rc, text);
        }
        sleep(Duration::millis_at_least(10));
    };
    let text = text.to_str().unwrap_or("<not UTF-8>");
    if text.trim().is_empty() {
        printkln!("shell> (no output from {:?}, rc {})", cmd, rc);
    }
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        printkln!("shell> {}", line);
    }
    (rc, text.contains(expect))
}

/// The container `header` then `payload` streamed into the store as an
/// update of `name` through `syn_model_ota.h` (as the shell's `syn ota`
/// does), up to its finish: 0 or the first negative errno.
fn stream_through_c_api(name: &CStr, header: &[u8], payload: &[u8]) -> c_int {
    use synaptic_zephyr::store::ota;
    let total = header.len() + payload.len();
    let mut chunk = [0u8; 1024];
    // SAFETY: a NUL-terminated name.
    let mut rc = unsafe { ota::syn_ota_begin(name.as_ptr(), total) };
    let mut offset = 0;
    while rc == 0 && offset < total {
        let n = chunk.len().min(total - offset);
        p::container_chunk(header, payload, offset, &mut chunk[..n]);
        // SAFETY: `chunk` holds `n` valid bytes.
        rc = unsafe { ota::syn_ota_write_chunk(chunk.as_ptr(), n) };
        offset += n;
    }
    if rc == 0 {
        rc = ota::syn_ota_finish();
    }
    rc
}

/// Version 3 of the speech model through `syn_model_ota.h`: the service
/// must activate it and hot-swap.
fn update_through_c_api() -> bool {
    use synaptic_zephyr::store::ota;
    let Ok(header) = p::speech_header(3) else {
        return false;
    };
    // Signed where the store requires it (this thread then verifies: its
    // stack is sized for it in that scenario).
    let preamble: &[u8] = if SIGNATURES_REQUIRED {
        &p::SIGNED_V3
    } else {
        &header
    };
    let mut rc = stream_through_c_api(c"speech", preamble, p::MICRO_SPEECH);
    let swaps = service::store_swaps();
    if rc == 0 {
        rc = ota::syn_ota_activate();
    }
    let start = now();
    while rc == 0 && service::store_swaps() == swaps {
        if now() - start > Duration::millis_at_least(1000) {
            break;
        }
        sleep(Duration::millis_at_least(1));
    }
    let followed = service::store_swaps() - swaps;
    let (list_rc, listed) = shell(c"syn store list", "speech: active v3, previous v2");
    // The shell's model list follows the swap once the serving thread
    // publishes (when idle, and every 64 answers while CPU1 soaks).
    let serves_v3 = || {
        service::snapshot(|s| {
            s.models
                .iter()
                .any(|m| m.name.as_str() == p::SPEECH && m.version == 3)
        })
    };
    let start = now();
    while !serves_v3() && now() - start < Duration::millis_at_least(2000) {
        sleep(Duration::millis_at_least(10));
    }
    let (models_rc, models_listed) = shell(c"syn model list", "speech v3 (crc32 0x");
    printkln!(
        "service test: version 3 through the C API -> {}; the service followed the store: {} model swapped",
        rc,
        followed
    );
    rc == 0 && followed == 1 && list_rc == 0 && listed && models_rc == 0 && models_listed
}

#[no_mangle]
extern "C" fn rust_main() {
    let verdict = run();
    printkln!(
        "service test{}: {}",
        if verdict.single_core {
            " (single-core)"
        } else {
            ""
        },
        if verdict.pass { "PASS" } else { "FAIL" }
    );
}

struct Verdict {
    single_core: bool,
    pass: bool,
}

fn run() -> Verdict {
    let mut verdict = Verdict {
        single_core: false,
        pass: false,
    };
    let Some(shm) = synaptic_zephyr::platform::shared_memory() else {
        printkln!("service test: no shared region in devicetree");
        return verdict;
    };
    // SAFETY: devicetree's shared region, mapped for the program's life; the
    // last words are the test report's alone on both cores.
    let report = unsafe { Report::at_end(shm.base, shm.size as usize) };
    report.clear();
    report.set(
        Word::CpuScenario,
        u32::from(cfg!(CONFIG_SYNAPTIC_CPU_INTERPRETER)),
    );
    report.set(Word::SignaturesRequired, u32::from(SIGNATURES_REQUIRED));
    let Ok(descs) = p::descs() else {
        return verdict;
    };
    let mut models: heapless::Vec<_, { service::MAX_MODELS }> =
        heapless::Vec::from_slice(&descs).unwrap_or_default();
    // With the interpreter, the model only it serves (CPU1 then runs that
    // scenario alone).
    if cfg!(CONFIG_SYNAPTIC_CPU_INTERPRETER) {
        let Ok(speech_cpu) = synaptic_runtime::registry::ModelDesc::tflite(
            p::SPEECH_CPU,
            &p::SPEECH_INPUT,
            p::SPEECH_OUTPUT,
            p::MICRO_SPEECH,
        ) else {
            return verdict;
        };
        if models.push(speech_cpu).is_err() {
            return verdict;
        }
    }
    let options = Options {
        models,
        npu_latency_us: p::NPU_LATENCY_US,
        npu_seed: p::SEED,
        npu_fail_on_marker: true,
        npu_null: false,
        budgets: Budgets::default(),
    };
    let mut platform = synaptic_zephyr::boot_platform();
    let platform = platform.as_mut().map(|p| p as &mut dyn BootPlatform);
    let boot = match service::start(options, platform) {
        Ok(boot) => boot,
        Err(e) => {
            printkln!("service test: service did not start: {}", e);
            return verdict;
        }
    };
    if boot.link == Link::Down(Down::ImageAbsent) {
        verdict.single_core = true;
        let (rc, down) = shell(c"syn ipc status", "link: DOWN (CPU1 image absent");
        let (rc2, listed) = shell(c"syn model list", "3 models");
        verdict.pass = rc == 0 && down && rc2 == 0 && listed;
        return verdict;
    }
    if !boot.is_up() {
        printkln!("service test: CPU1 did not come up: {:?}", boot.link);
        return verdict;
    }
    printkln!(
        "service test: boot {} us, handshake {} us (emulated, from release)",
        boot.ready_us.unwrap_or(0),
        boot.handshake_us.unwrap_or(0)
    );
    if cfg!(CONFIG_SYNAPTIC_CPU_INTERPRETER) {
        verdict.pass = cpu_store(&report);
        return verdict;
    }

    // The MPU self test while CPU1 soaks.
    let mut line = [0u8; 128];
    // SAFETY: `line` is valid for writes of its length; the function
    // NUL-terminates within it.
    let rc = unsafe { syn_mpu_test_run(line.as_mut_ptr().cast(), line.len()) };
    let text = CStr::from_bytes_until_nul(&line)
        .ok()
        .and_then(|c| c.to_str().ok())
        .unwrap_or("<no line>");
    printkln!("service test: {}", text);
    let mpu_ok = rc == 0;

    let shell_ok = [
        shell(c"syn version", "synaptic "),
        shell(c"syn model list", "3 models"),
        shell(c"syn npu caps", "command queue 2"),
        shell(c"syn mem stats", "arena: total"),
        shell(c"syn prof last", "last inference: total"),
        shell(c"syn ipc status", "link: UP"),
        shell(c"syn sched stats", "placement policy npu"),
        shell(c"syn sched policy eft", "placement policy eft requested"),
        shell(c"syn sched policy npu", "placement policy npu requested"),
    ]
    .iter()
    .all(|&(rc, found)| rc == 0 && found);
    printkln!(
        "service test: shell commands {}",
        if shell_ok { "ok" } else { "FAILED" }
    );

    let start = now();
    // CPU0's shell must answer while CPU1 floods it (looked at every 20 ms).
    let mut shell_in_flood = None;
    while !report.done() && report.get(Word::Stopped) == 0 {
        if now() - start > Duration::millis_at_least(REPORT_TIMEOUT_MS) {
            printkln!(
                "service test: CPU1 did not finish within {} ms",
                REPORT_TIMEOUT_MS
            );
            return verdict;
        }
        if shell_in_flood.is_none() && report.get(Word::Flooding) == 1 {
            let (rc, found) = shell(c"syn ipc status", "floods");
            shell_in_flood = Some(rc == 0 && found);
        }
        sleep(Duration::millis_at_least(20));
    }
    let w = |word| report.get(word);
    let errno = |word| w(word) as i32;
    if w(Word::Stopped) != 0 {
        printkln!(
            "service test: CPU1 stopped early at step {}",
            w(Word::Stopped)
        );
        return verdict;
    }
    printkln!(
        "service test: soak {} serves: {} correct, {} wrong, {} errors",
        p::SOAK,
        w(Word::SoakOk),
        w(Word::SoakWrong),
        w(Word::SoakErrors)
    );
    printkln!(
        "service test: failing NPU -> {} at CPU1 (expected {})",
        errno(Word::NpuError),
        Errno::Io.negative()
    );
    printkln!(
        "service test: no answer in time -> {} (expected {}), next request {}, late replies discarded {}",
        errno(Word::Timeout),
        Errno::TimedOut.negative(),
        if w(Word::Recovered) == 1 { "correct" } else { "WRONG" },
        w(Word::Discarded1)
    );
    let shell_answered = shell_in_flood == Some(true);
    printkln!(
        "service test: flood: {} status requests pushed, {} refused (ring full) in {} ms; an inference started during it {}; CPU0's shell {} during it; floods weathered {}",
        w(Word::FloodPushed),
        w(Word::FloodRefused),
        p::FLOOD_MS,
        match w(Word::FloodServe) {
            1 => "correct",
            2 => "WRONG",
            3 => "FAILED (timed out)",
            4 => "FAILED (no slot)",
            5 => "FAILED (ring refused it for 2 s)",
            0 => "FAILED (never finished)",
            _ => "FAILED",
        },
        if shell_answered { "answered" } else { "did NOT answer" },
        service::floods()
    );
    printkln!(
        "service test: CPU1 restarted (lives {}), rejoined with a {} us handshake after scribbling CPU0's ring tail ({} shared words repaired by CPU0), {} of {} serves correct, {} errors, pre-restart replies dropped or discarded {}",
        w(Word::Lives),
        w(Word::RejoinRttUs),
        STATUS.repairs(),
        w(Word::RejoinOk),
        p::AFTER_RESTART,
        w(Word::RejoinErrors),
        w(Word::Discarded2)
    );
    let update_status = errno(Word::UpdateStatus);
    printkln!(
        "service test: update streamed by CPU1 -> {} (version {} expected): {} bytes (micro_speech.tflite) in {} ticks (emulated); {} inferences on it meanwhile, {} errors, {} back to version 1 after the new one, new version serving: {}",
        update_status,
        p::UPDATE_VERSION,
        p::SIGNED_LEN,
        w(Word::UpdateTicks),
        w(Word::UpdateServes),
        w(Word::UpdateErrors),
        w(Word::UpdateBack),
        if w(Word::UpdateNew) == 1 { "yes" } else { "NO" }
    );
    let signed = |word| errno(word);
    printkln!(
        "service test: signed updates through CPU1: tampered -> {}, untrusted key -> {}, confirm -> {}, downgrade -> {}; {} status round trips meanwhile, longest {} ticks; longest verification on CPU0's verifier thread {} ticks (emulated)",
        signed(Word::SignedTampered),
        signed(Word::SignedUntrusted),
        signed(Word::SignedConfirm),
        signed(Word::SignedDowngrade),
        w(Word::UpdatePings),
        w(Word::UpdatePingMaxTicks),
        synaptic_zephyr::store::ota::longest_verification_ticks()
    );
    if SIGNATURES_REQUIRED {
        printkln!(
            "service test: signatures required: an unsigned container from CPU1 -> {}, version 3 through the C API signed",
            signed(Word::SignedUnsigned)
        );
    }
    let unsigned_expected = if SIGNATURES_REQUIRED {
        Errno::NoMsg.negative()
    } else {
        0
    };
    let signed_ok = signed(Word::SignedUnsigned) == unsigned_expected
        && signed(Word::SignedTampered) == Errno::BadMsg.negative()
        && signed(Word::SignedUntrusted) == Errno::Acces.negative()
        && signed(Word::SignedConfirm) == p::UPDATE_VERSION as i32
        && signed(Word::SignedDowngrade) == Errno::Range.negative()
        && w(Word::UpdatePings) > 0
        // No round trip waited out a verification: they ran off the
        // serving thread.
        && w(Word::UpdatePingMaxTicks) < synaptic_zephyr::store::ota::longest_verification_ticks();
    let (rc, stored) = shell(c"syn store list", "speech: active v2");
    let follow_ok = update_through_c_api();
    let update_ok = update_status == p::UPDATE_VERSION as i32
        && w(Word::UpdateServes) > 0
        && w(Word::UpdateErrors) == 0
        && w(Word::UpdateBack) == 0
        && w(Word::UpdateNew) == 1
        && rc == 0
        && stored
        && follow_ok
        && signed_ok;
    let parks_ok = parked_writes();
    service::print_status();
    let cpu1_ok = w(Word::SoakOk) == p::SOAK
        && w(Word::SoakWrong) == 0
        && w(Word::SoakErrors) == 0
        && errno(Word::NpuError) == Errno::Io.negative()
        && errno(Word::Timeout) == Errno::TimedOut.negative()
        && w(Word::Recovered) == 1
        && w(Word::Discarded1) >= 1
        && w(Word::Lives) == 2
        && w(Word::RejoinOk) == p::AFTER_RESTART
        && w(Word::RejoinErrors) == 0
        && STATUS.repairs() >= 1
        && w(Word::FloodServe) == 1
        && shell_answered
        && STATUS.violations() == 0;
    verdict.pass = mpu_ok && shell_ok && cpu1_ok && update_ok && parks_ok;
    verdict
}

/// Where store writes park CPU1 (CONFIG_SYNAPTIC_STORE_PARK_CPU1 in the
/// `dual_core_parked` scenario, whose console check asks for this line),
/// every write and erase of the updates above parked it, none refused.
fn parked_writes() -> bool {
    let Some(s) = synaptic_zephyr::store::ota::park_stats() else {
        let (rc, found) = shell(c"syn store status", "store: writes do not park CPU1");
        return rc == 0 && found;
    };
    printkln!(
        "service test: store writes parked CPU1 {} times, {} refused; longest wait for its acknowledgement {} us, longest hold {} us (emulated), {} overruns",
        s.parks,
        s.refused,
        s.longest_ack_us,
        s.longest_hold_us,
        s.overruns
    );
    let (rc, found) = shell(c"syn store status", "store: writes park CPU1: ");
    s.parks > 0 && s.refused == 0 && s.overruns == 0 && rc == 0 && found
}

/// The model only the interpreter serves, updated from the store by CPU1
/// (CPU1's `cpu_store`): its report, and the store's and the service's view.
fn cpu_store(report: &Report) -> bool {
    let start = now();
    while !report.done() && report.get(Word::Stopped) == 0 {
        if now() - start > Duration::millis_at_least(REPORT_TIMEOUT_MS) {
            printkln!(
                "service test: CPU1 did not finish within {} ms",
                REPORT_TIMEOUT_MS
            );
            return false;
        }
        sleep(Duration::millis_at_least(20));
    }
    let w = |word| report.get(word);
    let (refused, updated) = (w(Word::CpuRefused) as i32, w(Word::CpuUpdate) as i32);
    printkln!(
        "service test: {} (CPU interpreter only): version 1 from CPU0's image, {} of {} outputs already version 2's; a version the interpreter cannot run -> {} (expected {}); version 2 streamed by CPU1 -> {}, run in place from the store: {} of {} outputs LiteRT's; {} errors",
        p::SPEECH_CPU,
        w(Word::CpuBeforeLikeV2),
        p::CPU_INPUTS,
        refused,
        Errno::NoExec.negative(),
        updated,
        w(Word::CpuMatched),
        p::CPU_INPUTS,
        w(Word::CpuErrors)
    );
    // The same refusal for an activation through the C API (the shell's
    // `syn ota activate`): the store keeps version 2 active.
    let cut = &p::SPEECH_V2[..p::SPEECH_V2.len() / 2];
    let c_api = match p::speech_cpu_header(p::CPU_UPDATE_VERSION + 2, cut) {
        Ok(header) => match stream_through_c_api(c"speech_cpu", &header, cut) {
            0 => synaptic_zephyr::store::ota::syn_ota_activate(),
            rc => rc,
        },
        Err(_) => 0,
    };
    printkln!(
        "service test: the same through the C API -> {} (expected {})",
        c_api,
        Errno::NoExec.negative()
    );
    let (rc, stored) = shell(c"syn store list", "speech_cpu: active v2");
    let (rc2, served) = shell(c"syn model list", "speech_cpu v2");
    w(Word::Stopped) == 0
        && c_api == Errno::NoExec.negative()
        && w(Word::CpuBeforeLikeV2) < p::CPU_INPUTS
        && refused == Errno::NoExec.negative()
        && updated == p::CPU_UPDATE_VERSION as i32
        && w(Word::CpuMatched) == p::CPU_INPUTS
        && w(Word::CpuErrors) == 0
        && STATUS.violations() == 0
        && rc == 0
        && stored
        && rc2 == 0
        && served
}
