use core::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use super::host::{fresh, now_us};
use super::*;
use crate::model::syn_model_load;
use crate::npu::*;

const BLOB: [u8; 64] = [0xAA; 64];

fn load_blob() -> c_int {
    // SAFETY: a static buffer of BLOB.len() bytes.
    unsafe { syn_hal_npu_load_model(BLOB.as_ptr(), BLOB.len()) }
}

fn set_input(data: &[u8]) -> c_int {
    // SAFETY: a live buffer of data.len() bytes.
    unsafe { syn_hal_npu_set_input(0, data.as_ptr().cast(), data.len()) }
}

fn get_output(out: &mut [u8]) -> (c_int, usize) {
    let mut size = out.len();
    // SAFETY: `out` holds `size` bytes; `size` is a live local.
    let rc = unsafe { syn_hal_npu_get_output(0, out.as_mut_ptr().cast(), &mut size) };
    (rc, size)
}

#[test]
fn everything_needs_init_and_init_once() {
    let _t = fresh();
    assert_eq!(load_blob(), err(Errno::Perm));
    assert_eq!(syn_hal_npu_invoke(), err(Errno::Perm));
    assert_eq!(syn_hal_npu_suspend(), err(Errno::Perm));
    assert_eq!(syn_hal_npu_resume(), err(Errno::Perm));
    assert_eq!(syn_hal_npu_get_state(), syn_npu_state_t::SYN_NPU_STATE_IDLE);
    assert_eq!(syn_hal_npu_init(), 0);
    assert_eq!(syn_hal_npu_init(), err(Errno::Already));
    syn_hal_npu_deinit();
    assert_eq!(syn_hal_npu_invoke(), err(Errno::Perm));
    assert_eq!(syn_hal_npu_init(), 0);
}

#[test]
fn caps_describe_the_stub() {
    let _t = fresh();
    // SAFETY: NULL is allowed and refused.
    let rc = unsafe { syn_hal_npu_get_caps(core::ptr::null_mut()) };
    assert_eq!(rc, err(Errno::Inval));
    let mut caps = core::mem::MaybeUninit::<syn_npu_caps_t>::uninit();
    // SAFETY: valid for writes; initialised by the call when it returns 0.
    let caps = unsafe {
        assert_eq!(syn_hal_npu_get_caps(caps.as_mut_ptr()), 0);
        caps.assume_init()
    };
    // SAFETY: a static NUL-terminated string.
    assert_eq!(unsafe { core::ffi::CStr::from_ptr(caps.name) }, c"stub");
    assert_eq!(caps.supported_dtypes, 0b0_0111, "int8, uint8, int16");
    assert!(!caps.supports_async);
}

#[test]
fn arguments_are_checked() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    let buf = [0u8; 8];
    let mut out = [0u8; 16];
    let mut size = out.len();
    // SAFETY: NULLs and bad sizes are allowed and refused; the rest are live.
    unsafe {
        assert_eq!(
            syn_hal_npu_load_model(core::ptr::null(), 64),
            err(Errno::Inval)
        );
        assert_eq!(syn_hal_npu_load_model(BLOB.as_ptr(), 0), err(Errno::Inval));
        assert_eq!(
            syn_hal_npu_load_model(BLOB.as_ptr(), crate::MAX_RAW_MODEL_SIZE + 1),
            err(Errno::NoMem)
        );
        assert_eq!(
            syn_hal_npu_set_input(0, buf.as_ptr().cast(), 8),
            err(Errno::Perm),
            "no model"
        );
        assert_eq!(
            syn_hal_npu_set_input(1, buf.as_ptr().cast(), 8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_set_input(0, core::ptr::null(), 8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_set_input(0, buf.as_ptr().cast(), 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_get_output(0, core::ptr::null_mut(), &mut size),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_get_output(0, out.as_mut_ptr().cast(), core::ptr::null_mut()),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_get_output(1, out.as_mut_ptr().cast(), &mut size),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_npu_invoke_async(None, core::ptr::null_mut()),
            err(Errno::NotSup)
        );
    }
    let big = [0u8; crate::STUB_NPU_INPUT + 1];
    assert_eq!(load_blob(), 0);
    assert_eq!(set_input(&big), err(Errno::NoMem));
}

#[test]
fn a_raw_image_runs_as_a_ten_class_classifier() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    assert_eq!(load_blob(), 0);
    let input: [u8; 16] = core::array::from_fn(|i| i as u8);
    assert_eq!(set_input(&input), 0);
    let mut out = [0u8; 32];
    assert_eq!(get_output(&mut out).0, err(Errno::NoEnt), "not invoked yet");
    let before = now_us();
    assert_eq!(syn_hal_npu_invoke(), 0);
    assert_eq!(now_us() - before, crate::STUB_NPU_LATENCY_US);
    let (rc, n) = get_output(&mut out);
    assert_eq!((rc, n), (0, crate::RAW_MODEL_OUTPUT));
    let mut expected = [0u8; crate::RAW_MODEL_OUTPUT];
    super::expected_output(0, &input, &mut expected);
    assert_eq!(&out[..n], &expected);
    // The same input gives the same output; a different length is accepted.
    assert_eq!(set_input(&input[..8]), 0);
    assert_eq!(syn_hal_npu_invoke(), 0);
    let mut short = [0u8; 4];
    assert_eq!(get_output(&mut short).0, err(Errno::NoBufs));
    let (rc, _) = get_output(&mut out);
    assert_eq!(rc, 0);
    super::expected_output(0, &input[..8], &mut expected);
    assert_eq!(&out[..10], &expected);
    // *size == 0: the reference's convention, the whole output is written.
    let mut whole = [0u8; 32];
    let mut size = 0usize;
    // SAFETY: `whole` holds more than the 10-byte output.
    let rc = unsafe { syn_hal_npu_get_output(0, whole.as_mut_ptr().cast(), &mut size) };
    assert_eq!((rc, size), (0, crate::RAW_MODEL_OUTPUT));
    assert_eq!(&whole[..10], &expected);
}

#[test]
fn a_registered_model_takes_only_its_input_size() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    let h = register(&model_info("m", 12, 3));
    assert_eq!(syn_model_load(h), 0);
    assert_eq!(set_input(&[0u8; 8]), err(Errno::Inval));
    assert_eq!(set_input(&[1u8; 12]), 0);
    assert_eq!(syn_hal_npu_invoke(), 0);
    let mut out = [0u8; 3];
    assert_eq!(get_output(&mut out), (0, 3));
    let mut expected = [0u8; 3];
    super::expected_output(h, &[1u8; 12], &mut expected);
    assert_eq!(out, expected);
    // A raw image replaces it, in the registry's view too.
    assert_eq!(load_blob(), 0);
    assert!(!crate::model::syn_model_is_loaded(h));
}

#[test]
fn suspend_and_resume() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    assert_eq!(syn_hal_npu_resume(), err(Errno::Inval), "not suspended");
    assert_eq!(syn_hal_npu_suspend(), 0);
    assert_eq!(syn_hal_npu_suspend(), 0, "idempotent");
    assert_eq!(
        syn_hal_npu_get_state(),
        syn_npu_state_t::SYN_NPU_STATE_SUSPENDED
    );
    assert_eq!(load_blob(), err(Errno::Again));
    assert_eq!(syn_hal_npu_resume(), 0);
    assert_eq!(syn_hal_npu_get_state(), syn_npu_state_t::SYN_NPU_STATE_IDLE);
    assert_eq!(load_blob(), 0);
}

static ASYNC_STATUS: AtomicI32 = AtomicI32::new(1);
static ASYNC_OUTPUT_LEN: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_done(status: c_int, user_data: *mut c_void) {
    ASYNC_STATUS.store(status, Ordering::SeqCst);
    assert_eq!(user_data as usize, 0x1234);
    // The lock is released: the callback may read the output.
    let mut out = [0u8; 16];
    let (rc, n) = get_output(&mut out);
    assert_eq!(rc, 0);
    ASYNC_OUTPUT_LEN.store(n, Ordering::SeqCst);
}

#[test]
fn invoke_async_completes_through_the_callback() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    // SAFETY: `on_done` accepts any user_data.
    let rc = unsafe { syn_hal_npu_invoke_async(Some(on_done), 0x1234 as *mut c_void) };
    assert_eq!(rc, err(Errno::Perm));
    assert_eq!(
        ASYNC_STATUS.load(Ordering::SeqCst),
        1,
        "not called on early errors"
    );
    assert_eq!(load_blob(), 0);
    assert_eq!(set_input(&[3u8; 5]), 0);
    // SAFETY: `on_done` accepts any user_data.
    let rc = unsafe { syn_hal_npu_invoke_async(Some(on_done), 0x1234 as *mut c_void) };
    assert_eq!(rc, 0);
    assert_eq!(ASYNC_STATUS.load(Ordering::SeqCst), 0);
    assert_eq!(
        ASYNC_OUTPUT_LEN.load(Ordering::SeqCst),
        crate::RAW_MODEL_OUTPUT
    );
}
