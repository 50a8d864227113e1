//! The C API's argument validation: `extern "C"` calls with sizes, handles,
//! flags and enum values the fuzzer chooses, and pointers that are either
//! NULL or into buffers this harness owns (large enough for the sizes
//! passed, as the C contract requires).
//!
//! Checked: no panic; every `int` result is a count (>= 0) or a negative
//! errno the ABI defines. Each run starts from `syn_init()` and ends with
//! `syn_shutdown()`, and every buffer a call may keep a pointer to (job
//! input and output tensors) outlives the run.
#![no_main]

use core::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use synaptic_abi::Errno;
use synaptic_capi::api::*;
use synaptic_capi::dsp::*;
use synaptic_capi::infer::*;
use synaptic_capi::mem::*;
use synaptic_capi::model::*;
use synaptic_capi::npu::*;
use synaptic_capi::prof::*;
use synaptic_capi::types::*;
use synaptic_capi::{Platform, Reentered};
use synaptic_fuzz::Input;

static NOW_US: AtomicU64 = AtomicU64::new(0);

/// The C API's platform here: the host lock, simulated time (a delay
/// advances it: the stub NPU's busy-wait costs nothing), no console.
struct FuzzPlatform;

// SAFETY: the host lock gives mutual exclusion between threads and refuses
// re-entry, as `Platform` requires.
unsafe impl Platform for FuzzPlatform {
    fn lock() -> Result<(), Reentered> {
        synaptic_capi::host::lock()
    }

    unsafe fn unlock() {
        // SAFETY: forwarded: called by the holder, once per lock.
        unsafe { synaptic_capi::host::unlock() }
    }

    fn now_us() -> u64 {
        NOW_US.load(Ordering::Relaxed)
    }

    fn delay_us(us: u64) {
        NOW_US.fetch_add(us, Ordering::Relaxed);
    }

    fn print(_args: core::fmt::Arguments<'_>) {}
}

synaptic_capi::platform!(FuzzPlatform);

const MAX_OPS: usize = 64;
const BUF: usize = 2048;

/// A C status: a count, or a negative errno of the ABI.
fn check(rc: c_int, call: &str) {
    assert!(
        rc >= 0 || Errno::from_code(rc).is_some(),
        "{call} returned {rc}, not a negative errno"
    );
}

/// The harness's buffers (16-byte aligned floats, bytes, shapes).
#[repr(C, align(16))]
struct Buffers {
    floats_in: [f32; BUF],
    floats_out: [f32; BUF],
    q15_a: [i16; BUF],
    q15_b: [i16; 64],
    q15_out: [i16; 64],
    bytes_in: [u8; BUF],
    bytes_out: [u8; BUF],
    shape: [u32; 256],
    handles: [u32; 256],
    name: [c_char; 48],
    tensors: [syn_tensor_t; 4],
}

fuzz_target!(|data: &[u8]| {
    let mut b: Box<Buffers> = Box::new(Buffers {
        floats_in: [0.0; BUF],
        floats_out: [0.0; BUF],
        q15_a: [0; BUF],
        q15_b: [0; 64],
        q15_out: [0; 64],
        bytes_in: [0; BUF],
        bytes_out: [0; BUF],
        shape: [0; 256],
        handles: [0; 256],
        name: [0; 48],
        tensors: [syn_tensor_t::EMPTY; 4],
    });
    check(syn_init(), "syn_init");
    let mut input = Input::new(data);
    let mut models: Vec<u32> = Vec::new();
    let mut pipes: Vec<*mut syn_pipeline_t> = Vec::new();
    let mut jobs: Vec<u32> = Vec::new();
    let mut allocated: Vec<*mut syn_tensor_t> = Vec::new();
    let mut scratch: Vec<*mut c_void> = Vec::new();
    for _ in 0..MAX_OPS {
        let Some(tag) = input.u8() else { break };
        let Some(args) = input.bytes(12) else { break };
        let word = |k: usize| u32::from_le_bytes([args[k], args[k + 1], args[k + 2], args[k + 3]]);
        let (a, flags) = (word(0), args[4]);
        let len = usize::from(u16::from_le_bytes([args[5], args[6]])) % (BUF / 2 + 1);
        let pick = |pool: &[u32], raw: u32| {
            if flags & 0x80 != 0 || pool.is_empty() {
                raw
            } else {
                pool[raw as usize % pool.len()]
            }
        };
        let null = |bit: u8| flags & (1 << bit) != 0;
        // Fill the inputs from the fuzzer's words (NaNs and all).
        for (k, f) in b.floats_in.iter_mut().take(64).enumerate() {
            *f = f32::from_bits(word(0).rotate_left(k as u32).wrapping_mul(0x9E37_79B9));
        }
        b.bytes_in[..12].copy_from_slice(args);
        let bp = &mut *b;
        // SAFETY (every call below): each pointer is NULL or into `bp`'s
        // buffers, sized for the length passed (BUF elements and more), and
        // `bp` outlives the run; handles and ids are plain integers the API
        // validates.
        unsafe {
            match tag % 24 {
                0 => check(
                    syn_hal_dsp_normalize_int8(
                        ptr(null(0), bp.bytes_in.as_ptr()),
                        ptr_mut(null(1), bp.bytes_out.as_mut_ptr().cast()),
                        len,
                        f32::from_bits(word(7)),
                        word(8) as i32,
                    ),
                    "normalize",
                ),
                1 => check(
                    syn_hal_dsp_softmax_f32(
                        ptr(null(0), bp.floats_in.as_ptr()),
                        ptr_mut(null(1), bp.floats_out.as_mut_ptr()),
                        len,
                    ),
                    "softmax",
                ),
                2 => check(
                    syn_hal_dsp_argmax(
                        ptr(null(0), bp.bytes_in.as_ptr().cast()),
                        len,
                        ptr_mut(null(1), bp.handles.as_mut_ptr()),
                    ),
                    "argmax",
                ),
                3 => check(
                    syn_hal_dsp_fft_f32(
                        ptr(null(0), bp.floats_in.as_ptr()),
                        ptr_mut(null(1), bp.floats_out.as_mut_ptr()),
                        len.min(BUF / 2),
                    ),
                    "fft",
                ),
                4 => {
                    let rows = (args[7] % 65) as u16;
                    let cols = (args[8] % 65) as u16;
                    check(
                        syn_hal_dsp_mat_mult_q15(
                            ptr(null(0), bp.q15_a.as_ptr()),
                            ptr(null(1), bp.q15_b.as_ptr()),
                            ptr_mut(null(2), bp.q15_out.as_mut_ptr()),
                            rows,
                            cols,
                        ),
                        "mat_mult",
                    );
                }
                5 => {
                    let mut info = syn_model_info_t::ZERO;
                    let name_len = usize::from(args[7] % 33);
                    for (k, c) in info.name.iter_mut().take(name_len).enumerate() {
                        *c = (b'a' + (args[(k % 4) + 8] % 26)) as c_char;
                    }
                    info.version[0] = b'1' as c_char;
                    info.input_size = word(0) % 70_000;
                    info.output_size = word(8) % 2048;
                    info.flash_size = word(3) % 4096;
                    info.sram_required = word(5) % 65_536;
                    info.input_dtype = RawDtype(u32::from(args[4] % 7));
                    info.output_dtype = RawDtype(u32::from(args[6] % 7));
                    for (k, d) in info.input_shape.iter_mut().enumerate() {
                        *d = args[8 + k] % 8;
                    }
                    let mut handle = SYN_MODEL_INVALID;
                    let rc = syn_model_register(ptr(null(0), &info), ptr_mut(null(1), &mut handle));
                    check(rc, "model_register");
                    if rc == 0 && !null(1) {
                        models.push(handle);
                    }
                }
                6 => check(syn_model_unregister(pick(&models, a)), "model_unregister"),
                7 => {
                    let mut info = syn_model_info_t::ZERO;
                    check(
                        syn_model_get_info(pick(&models, a), ptr_mut(null(1), &mut info)),
                        "model_get_info",
                    );
                }
                8 => {
                    let n = usize::from(args[7]) % bp.name.len();
                    for (k, c) in bp.name.iter_mut().enumerate() {
                        *c = if k < n {
                            b'a' as c_char + (k % 3) as c_char
                        } else {
                            0
                        };
                    }
                    bp.name[bp.name.len() - 1] = 0;
                    let mut handle = 0;
                    check(
                        syn_model_get_by_name(
                            ptr(null(0), bp.name.as_ptr()),
                            ptr_mut(null(1), &mut handle),
                        ),
                        "model_get_by_name",
                    );
                }
                9 => {
                    let mut count = 0u8;
                    check(
                        syn_model_list(
                            ptr_mut(null(0), bp.handles.as_mut_ptr()),
                            ptr_mut(null(1), &mut count),
                            args[7],
                        ),
                        "model_list",
                    );
                    assert!(count <= args[7] || null(0) || null(1));
                }
                10 => check(syn_model_load(pick(&models, a)), "model_load"),
                11 => check(syn_model_unload(pick(&models, a)), "model_unload"),
                12 => {
                    let _ = syn_model_is_loaded(pick(&models, a));
                    check(
                        syn_model_swap(pick(&models, a), pick(&models, word(7))),
                        "model_swap",
                    );
                }
                13 => {
                    let ndim = args[7];
                    for (k, d) in bp.shape.iter_mut().enumerate() {
                        *d = u32::from(args[8 + k % 4]) % 64;
                    }
                    let t = syn_mem_tensor_alloc(
                        ptr(null(0), bp.shape.as_ptr()),
                        ndim,
                        RawDtype(u32::from(args[4] % 7)),
                        RawLifetime(u32::from(args[6] % 4)),
                    );
                    if !t.is_null() {
                        allocated.push(t);
                    }
                }
                14 => {
                    if !allocated.is_empty() {
                        let t = allocated.swap_remove(a as usize % allocated.len());
                        syn_mem_tensor_free(t);
                    } else {
                        syn_mem_tensor_free(core::ptr::null_mut());
                    }
                }
                15 => {
                    let t = &mut bp.tensors[args[7] as usize % 4];
                    check(
                        syn_mem_tensor_init(
                            ptr_mut(null(0), t),
                            ptr(null(1), bp.shape.as_ptr()),
                            args[8],
                            RawDtype(u32::from(args[4] % 7)),
                        ),
                        "tensor_init",
                    );
                }
                16 => {
                    if null(0) && !scratch.is_empty() {
                        syn_mem_scratch_release(scratch.swap_remove(a as usize % scratch.len()));
                    } else {
                        let p = syn_mem_scratch_acquire(a as usize % 4096);
                        if !p.is_null() {
                            scratch.push(p);
                        }
                    }
                }
                17 => {
                    let mut stats = syn_mem_stats_t::default();
                    check(
                        syn_mem_get_stats(ptr_mut(null(0), &mut stats)),
                        "mem_get_stats",
                    );
                    if null(1) {
                        syn_mem_reset_ephemeral();
                    }
                }
                18 => {
                    // Pipelines: create, add the model, build, or destroy.
                    match args[7] % 4 {
                        0 => {
                            bp.name[..4].copy_from_slice(&[
                                b'p' as c_char,
                                (b'0' + args[8] % 4) as c_char,
                                0,
                                0,
                            ]);
                            let p = syn_pipeline_create(ptr(null(0), bp.name.as_ptr()));
                            if !p.is_null() {
                                pipes.push(p);
                            }
                        }
                        1 => check(
                            syn_pipeline_add_model(
                                pick_ptr(&pipes, a, null(1)),
                                pick(&models, word(8)),
                            ),
                            "pipeline_add_model",
                        ),
                        2 => check(
                            syn_pipeline_build(pick_ptr(&pipes, a, null(1))),
                            "pipeline_build",
                        ),
                        _ => {
                            if !pipes.is_empty() {
                                let p = pipes.swap_remove(a as usize % pipes.len());
                                syn_pipeline_destroy(p);
                            } else {
                                syn_pipeline_destroy(core::ptr::null_mut());
                            }
                        }
                    }
                }
                19 => {
                    let (input_t, rest) = bp.tensors.split_at_mut(1);
                    let input_t = &mut input_t[0];
                    let output_t = &mut rest[0];
                    *input_t = tensor(&mut bp.bytes_in, len, args, 0);
                    *output_t = tensor(&mut bp.bytes_out, usize::from(args[9]) * 8, args, 1);
                    check(
                        syn_infer_run_sync(
                            pick(&models, a),
                            ptr(null(0), input_t),
                            ptr_mut(null(1), output_t),
                            RawPriority(u32::from(args[10] % 5)),
                        ),
                        "run_sync",
                    );
                }
                20 => {
                    // Jobs: the input tensor lives in `bp` for the whole run.
                    bp.tensors[2] = tensor(&mut bp.bytes_in, len, args, 0);
                    let params = syn_infer_params_t {
                        priority: RawPriority(u32::from(args[10] % 5)),
                        deadline_us: word(7) % 100_000,
                        preemptible: RawBool(args[11] % 3),
                        callback: None,
                        user_data: core::ptr::null_mut(),
                    };
                    let job = syn_infer_submit(
                        pick_ptr(&pipes, a, null(0)),
                        ptr(null(1), &bp.tensors[2]),
                        ptr(null(2), &params),
                    );
                    if job != SYN_JOB_INVALID {
                        jobs.push(job);
                    }
                }
                21 => {
                    let job = pick(&jobs, word(7));
                    match args[4] % 3 {
                        0 => check(syn_infer_wait(job, a % 3), "infer_wait"),
                        1 => check(syn_infer_cancel(job), "infer_cancel"),
                        _ => check(
                            syn_infer_get_result(job, ptr_mut(null(0), &mut bp.tensors[3])),
                            "infer_get_result",
                        ),
                    }
                }
                22 => {
                    let mut size = usize::from(args[9]) * 4;
                    match args[7] % 6 {
                        0 => check(syn_hal_npu_init(), "npu_init"),
                        1 => check(
                            syn_hal_npu_set_input(
                                args[8] % 3,
                                ptr(null(0), bp.bytes_in.as_ptr().cast()),
                                len,
                            ),
                            "npu_set_input",
                        ),
                        2 => check(syn_hal_npu_invoke(), "npu_invoke"),
                        3 => check(
                            syn_hal_npu_get_output(
                                args[8] % 3,
                                ptr_mut(null(0), bp.bytes_out.as_mut_ptr().cast()),
                                ptr_mut(null(1), &mut size),
                            ),
                            "npu_get_output",
                        ),
                        4 => check(
                            syn_hal_npu_load_model(ptr(null(0), bp.bytes_in.as_ptr()), len),
                            "npu_load_model",
                        ),
                        _ => {
                            let mut caps = core::mem::MaybeUninit::<syn_npu_caps_t>::zeroed();
                            check(
                                syn_hal_npu_get_caps(ptr_mut(null(0), caps.as_mut_ptr())),
                                "npu_caps",
                            );
                            check(
                                if null(1) {
                                    syn_hal_npu_suspend()
                                } else {
                                    syn_hal_npu_resume()
                                },
                                "npu_power",
                            );
                        }
                    }
                }
                _ => {
                    let mut us = 0u32;
                    check(
                        if null(0) {
                            syn_prof_enable()
                        } else {
                            syn_prof_enable_layer_trace()
                        },
                        "prof_enable",
                    );
                    check(
                        syn_prof_get_layer_time(a % 64, ptr_mut(null(1), &mut us)),
                        "layer_time",
                    );
                    let mut last = core::mem::MaybeUninit::<syn_prof_result_t>::zeroed();
                    check(
                        syn_prof_get_last(ptr_mut(null(2), last.as_mut_ptr())),
                        "prof_last",
                    );
                    check(
                        syn_infer_set_max_concurrent(args[8] % 8),
                        "set_max_concurrent",
                    );
                }
            }
        }
    }
    check(syn_shutdown(), "syn_shutdown");
    drop(b);
});

fn ptr<T>(null: bool, p: *const T) -> *const T {
    if null {
        core::ptr::null()
    } else {
        p
    }
}

fn ptr_mut<T>(null: bool, p: *mut T) -> *mut T {
    if null {
        core::ptr::null_mut()
    } else {
        p
    }
}

fn pick_ptr(pool: &[*mut syn_pipeline_t], raw: u32, null: bool) -> *mut syn_pipeline_t {
    if null || pool.is_empty() {
        core::ptr::null_mut()
    } else {
        pool[raw as usize % pool.len()]
    }
}

/// A descriptor over the first `len` bytes of `data` (at most all of it).
fn tensor(data: &mut [u8], len: usize, args: &[u8], k: usize) -> syn_tensor_t {
    let mut t = syn_tensor_t {
        data: data.as_mut_ptr().cast(),
        size: len.min(data.len()),
        dtype: RawDtype(u32::from(args[4 + k] % 7)),
        ndim: args[8 + k] % 6,
        ..syn_tensor_t::EMPTY
    };
    for (d, s) in t.shape.iter_mut().enumerate() {
        *s = u32::from(args[(8 + d + k) % 12]) % 32;
    }
    t
}
