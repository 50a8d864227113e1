//! `syn_api.h`: runtime start-up, shutdown and version.

use core::ffi::{c_char, c_int, CStr};

use synaptic_abi::Errno;
use synaptic_runtime::npu::{NpuDevice, NpuState};

use crate::platform::PlatformClock;
use crate::{neg, state, BUSY};

/// The version string `syn_version()` returns.
const VERSION: &CStr = c"0.3.0";

/// Starts the runtime: the tensor arena over its static buffer
/// (`SYN_CAPI_ARENA_SIZE` bytes), the NPU, and profiling.
///
/// Returns 0, `-EALREADY` when already started, or the errno of the step
/// that failed. An NPU initialised before by `syn_hal_npu_init()` is kept.
#[no_mangle]
pub extern "C" fn syn_init() -> c_int {
    state::with(|s| {
        if s.initialized {
            return neg(Errno::Already);
        }
        if let Err(e) = s.arena_over_static() {
            return neg(e.to_errno());
        }
        if s.npu.state() == NpuState::Off {
            if let Err(e) = s.npu.init() {
                return neg(e.to_errno());
            }
        }
        s.profiler.enable(&PlatformClock);
        s.initialized = true;
        0
    })
    .unwrap_or(BUSY)
}

/// Stops the runtime and returns it to its power-on state: queued jobs,
/// pipelines, registered models, arena contents and profile are dropped and
/// the NPU is powered down. Every handle and tensor from before is invalid.
///
/// Returns 0, or `-EPERM` when the runtime was not started.
#[no_mangle]
pub extern "C" fn syn_shutdown() -> c_int {
    match state::with(|s| s.initialized) {
        Err(_) => BUSY,
        Ok(false) => neg(Errno::Perm),
        Ok(true) => match state::reset() {
            Ok(()) => 0,
            Err(_) => BUSY,
        },
    }
}

/// The version of the C API level, `"major.minor.patch"` (static storage).
#[no_mangle]
pub extern "C" fn syn_version() -> *const c_char {
    VERSION.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{SYNAPTIC_VERSION_MAJOR, SYNAPTIC_VERSION_MINOR, SYNAPTIC_VERSION_PATCH};

    #[test]
    fn version_string_matches_the_header_macros() {
        let expected = std::format!(
            "{SYNAPTIC_VERSION_MAJOR}.{SYNAPTIC_VERSION_MINOR}.{SYNAPTIC_VERSION_PATCH}"
        );
        // SAFETY: syn_version returns a pointer to a static NUL-terminated string.
        let got = unsafe { CStr::from_ptr(syn_version()) };
        assert_eq!(got.to_str().unwrap(), expected);
    }
}
