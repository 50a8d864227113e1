//! The `syn` shell commands' Rust half: each `syn_shell_*` function
//! prints its view line by line through `syn_shell_line()` of the module's
//! C glue (`src/synaptic_shell.c`, which registers the command table,
//! because Zephyr's shell is macros and variadic functions).
//!
//! Every view reads [`crate::status`]: counters and a snapshot the serving
//! thread publishes, never the runtime itself (which is the serving
//! thread's alone).

use core::ffi::{c_char, c_int, c_void};
use core::fmt::{self, Write as _};

use synaptic_runtime::arena::DType;

use heapless::String;

extern "C" {
    fn syn_shell_line(sh: *const c_void, text: *const c_char, len: usize);
}

/// Prints one formatted line on `sh`.
fn print(sh: *const c_void, args: fmt::Arguments<'_>) {
    let line = Line::format(args);
    // SAFETY: `sh` is the shell pointer Zephyr passed to the command
    // handler that called us (checked non-null there); the text is valid
    // for `len` bytes for the duration of the call, which copies it out.
    unsafe { syn_shell_line(sh, line.0.as_ptr().cast(), line.0.len()) };
}

fn not_running(sh: *const c_void) -> c_int {
    print(
        sh,
        format_args!("synaptic service not running on this core"),
    );
    synaptic_abi::Errno::NoDev.negative()
}

/// `syn version`.
#[no_mangle]
pub extern "C" fn syn_shell_version(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    print(
        sh,
        format_args!(
            "synaptic {} (ABI v{}, {} ring entries)",
            env!("CARGO_PKG_VERSION"),
            synaptic_abi::LAYOUT_VERSION,
            crate::service::N
        ),
    );
    0
}

/// `syn mem stats`.
#[no_mangle]
pub extern "C" fn syn_shell_mem_stats(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    let Some(m) = crate::service::snapshot(|s| s.mem) else {
        return not_running(sh);
    };
    print(
        sh,
        format_args!(
            "arena: total {} B, used {} B (persistent {}, ephemeral {}), peak {} B",
            m.total, m.used, m.persistent_used, m.ephemeral_used, m.peak
        ),
    );
    print(
        sh,
        format_args!(
            "scratch: {} of {} B; allocations {}, resets {}",
            m.scratch_used, m.scratch_total, m.allocation_count, m.reset_count
        ),
    );
    0
}

/// `syn model list`.
#[no_mangle]
pub extern "C" fn syn_shell_model_list(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    let count = crate::service::snapshot(|s| {
        for m in &s.models {
            print(
                sh,
                format_args!(
                    "model 0x{:08x} {} v{} (crc32 0x{:08x}): input {} B, output {} B, {}",
                    m.handle,
                    m.name,
                    m.version,
                    m.crc32,
                    m.input,
                    m.output,
                    if m.exported {
                        "served to CPU1"
                    } else {
                        "CPU0 only"
                    }
                ),
            );
        }
        s.models.len()
    });
    print(sh, format_args!("{} models", count));
    0
}

/// `syn npu caps`.
#[no_mangle]
pub extern "C" fn syn_shell_npu_caps(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    let Some(c) = crate::service::snapshot(|s| s.caps.get()) else {
        return not_running(sh);
    };
    print(
        sh,
        format_args!(
            "npu (stub): max input {} B, max output {} B, int8 {}, float32 {}, async {}, resident models {}, command queue {}",
            c.max_input_bytes,
            c.max_output_bytes,
            if c.supports(DType::Int8) { "yes" } else { "no" },
            if c.supports(DType::Float32) { "yes" } else { "no" },
            if c.async_invoke { "yes" } else { "no" },
            c.max_resident_models,
            c.queue_depth
        ),
    );
    0
}

/// `syn prof last`.
#[no_mangle]
pub extern "C" fn syn_shell_prof_last(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    match crate::service::snapshot(|s| s.prof) {
        Some(p) => print(
            sh,
            format_args!(
                "last inference: total {} us, pre {} us, npu {} us, cpu interpreter {} us, post {} us, npu share {} permille",
                p.total_us,
                p.preprocess_us,
                p.npu_us,
                p.interpreter_us,
                p.postprocess_us,
                p.npu_utilization_permille
            ),
        ),
        None => print(sh, format_args!("no inference profiled yet")),
    }
    0
}

/// `syn ipc status`.
#[no_mangle]
pub extern "C" fn syn_shell_ipc_status(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    crate::service::write_status(|args| print(sh, args));
    0
}

/// `syn sched stats`.
#[no_mangle]
pub extern "C" fn syn_shell_sched_stats(sh: *const c_void) -> c_int {
    if sh.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    let Some((policy, weights)) = crate::service::snapshot(|s| s.policy.get().zip(s.weights))
    else {
        return not_running(sh);
    };
    print(
        sh,
        format_args!(
            "placement policy {} (of npu, cpu, busy, random, eft); WRR normal:best_effort {}:{}",
            policy.name(),
            weights.normal,
            weights.best_effort
        ),
    );
    crate::service::snapshot(|s| {
        for m in &s.models {
            let mut line = Line::format(format_args!("model 0x{:08x} {}:", m.handle, m.name));
            for d in synaptic_runtime::device::Device::ALL {
                if !m.devices.contains(d) {
                    continue;
                }
                let _ = match m.predicted_us[d.index()] {
                    Some(us) => write!(
                        line,
                        " {} {} us ({} runs)",
                        d.name(),
                        us,
                        m.samples[d.index()]
                    ),
                    None => write!(line, " {} unmeasured", d.name()),
                };
            }
            print(sh, format_args!("{}", line.0));
        }
    });
    0
}

/// `syn sched policy <name>`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string valid for the call.
#[no_mangle]
pub unsafe extern "C" fn syn_shell_sched_policy(sh: *const c_void, name: *const c_char) -> c_int {
    if sh.is_null() || name.is_null() {
        return synaptic_abi::Errno::Inval.negative();
    }
    // SAFETY: non-null (checked) and NUL-terminated, valid for the call
    // (contract; the shell passes its argv).
    let name = unsafe { core::ffi::CStr::from_ptr(name) };
    let Some(policy) = name
        .to_str()
        .ok()
        .and_then(synaptic_runtime::device::Policy::from_name)
    else {
        print(
            sh,
            format_args!("unknown policy (use npu, cpu, busy, random or eft)"),
        );
        return synaptic_abi::Errno::Inval.negative();
    };
    if crate::service::snapshot(|s| s.policy.get()).is_none() {
        return not_running(sh);
    }
    crate::service::set_policy(policy);
    print(
        sh,
        format_args!(
            "placement policy {} requested (from the serving thread's next turn)",
            policy.name()
        ),
    );
    0
}

/// A line buffer for formatted output (truncates instead of failing).
struct Line(String<192>);

impl Line {
    fn format(args: fmt::Arguments<'_>) -> Line {
        let mut line = Line(String::new());
        let _ = line.write_fmt(args);
        line
    }
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.0.push(c).is_err() {
                break;
            }
        }
        Ok(())
    }
}
