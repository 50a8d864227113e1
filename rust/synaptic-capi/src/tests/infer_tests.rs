use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::vec::Vec;

use synaptic_runtime::arena::DType;

use super::host::{advance_us, console, fresh};
use super::*;
use crate::api::syn_init;
use crate::infer::*;
use crate::mem::{syn_mem_get_stats, syn_mem_reset_ephemeral, syn_mem_scratch_acquire};
use crate::model::syn_model_unregister;
use crate::prof::*;

type Stage = unsafe extern "C" fn(*const syn_tensor_t, *mut syn_tensor_t, *const c_void) -> c_int;

fn pipeline(name: &core::ffi::CStr) -> *mut syn_pipeline_t {
    // SAFETY: a NUL-terminated string.
    unsafe { syn_pipeline_create(name.as_ptr()) }
}

/// A built pipeline running only `model`.
fn model_pipeline(model: syn_model_handle_t) -> *mut syn_pipeline_t {
    let p = pipeline(c"p");
    assert!(!p.is_null());
    assert_eq!(syn_pipeline_add_model(p, model), 0);
    assert_eq!(syn_pipeline_build(p), 0);
    p
}

fn submit(
    p: *mut syn_pipeline_t,
    input: &syn_tensor_t,
    params: Option<&syn_infer_params_t>,
) -> syn_job_id_t {
    let params = params.map_or(core::ptr::null(), |x| x as *const _);
    // SAFETY: the input descriptor and its data outlive the job in every test.
    unsafe { syn_infer_submit(p, input, params) }
}

fn get_result(job: syn_job_id_t) -> Result<syn_tensor_t, c_int> {
    let mut out = syn_tensor_t::EMPTY;
    // SAFETY: `out` is a live local.
    match unsafe { syn_infer_get_result(job, &mut out) } {
        0 => Ok(out),
        rc => Err(rc),
    }
}

fn params(priority: syn_priority_t) -> syn_infer_params_t {
    syn_infer_params_t {
        priority: RawPriority::of(priority),
        deadline_us: 0,
        preemptible: RawBool(1),
        callback: None,
        user_data: core::ptr::null_mut(),
    }
}

fn setup() -> syn_model_handle_t {
    assert_eq!(syn_init(), 0);
    register(&model_info("classifier", 16, 10))
}

static INPUT: [u8; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

fn input_tensor() -> syn_tensor_t {
    syn_tensor_t {
        data: INPUT.as_ptr().cast_mut().cast(),
        size: INPUT.len(),
        dtype: RawDtype::of(DType::Int8),
        ndim: 1,
        shape: [16, 0, 0, 0],
        ..syn_tensor_t::EMPTY
    }
}

fn expected_output(model: syn_model_handle_t) -> [u8; 10] {
    let mut out = [0u8; 10];
    super::expected_output(model, &INPUT, &mut out);
    out
}

#[test]
fn pipeline_handles_are_checked() {
    let _t = fresh();
    let m = setup();
    let mut foreign = 0u8;
    let foreign = (&mut foreign as *mut u8).cast::<syn_pipeline_t>();
    for bad in [core::ptr::null_mut(), foreign] {
        assert_eq!(syn_pipeline_add_model(bad, m), err(Errno::Inval));
        assert_eq!(syn_pipeline_build(bad), err(Errno::Inval));
        assert_eq!(
            syn_pipeline_add_postprocess(bad, None, core::ptr::null_mut()),
            err(Errno::Inval)
        );
        syn_pipeline_destroy(bad);
    }
    let p = pipeline(c"stale");
    syn_pipeline_destroy(p);
    assert_eq!(syn_pipeline_add_model(p, m), err(Errno::Inval), "destroyed");
    let q = pipeline(c"reuses the slot");
    assert_ne!(p, q, "a new generation, a new pointer");
    assert_eq!(syn_pipeline_build(p), err(Errno::Inval));
    assert_eq!(syn_pipeline_add_model(q, m), 0);
}

#[test]
fn the_pool_has_a_fixed_size_and_names_may_repeat() {
    let _t = fresh();
    // SAFETY: NULL is a valid name ("unnamed").
    let unnamed = unsafe { syn_pipeline_create(core::ptr::null()) };
    assert!(!unnamed.is_null());
    let same: Vec<_> = (1..crate::MAX_PIPELINES)
        .map(|_| pipeline(c"pool"))
        .collect();
    assert!(same.iter().all(|p| !p.is_null()));
    assert!(pipeline(c"pool").is_null(), "pool full");
    syn_pipeline_destroy(same[0]);
    assert!(!pipeline(c"pool").is_null());
}

#[test]
fn construction_order_and_errors() {
    let _t = fresh();
    let m = setup();
    let argmax = {
        // SAFETY: a plain read of an initialised static that nothing writes.
        unsafe { crate::process::syn_postprocess_argmax }
    };
    let normalize = {
        // SAFETY: as above.
        unsafe { crate::process::syn_preprocess_image_normalize }
    };
    let p = pipeline(c"order");
    assert_eq!(
        syn_pipeline_add_postprocess(p, argmax, core::ptr::null_mut()),
        err(Errno::Inval),
        "post before model"
    );
    assert_eq!(
        syn_pipeline_add_preprocess(p, None, core::ptr::null_mut()),
        err(Errno::Inval)
    );
    assert_eq!(syn_pipeline_build(p), err(Errno::Inval), "no model");
    assert_eq!(
        syn_pipeline_add_model(p, SYN_MODEL_INVALID),
        err(Errno::Inval)
    );
    assert_eq!(
        syn_pipeline_add_model(p, m ^ 0x0003_0000),
        err(Errno::NoEnt)
    );
    assert_eq!(syn_pipeline_add_model(p, m), 0);
    assert_eq!(syn_pipeline_add_model(p, m), err(Errno::Already));
    assert_eq!(
        syn_pipeline_add_preprocess(p, normalize, core::ptr::null_mut()),
        err(Errno::Inval),
        "pre after model"
    );
    for _ in 1..crate::MAX_STAGES {
        assert_eq!(
            syn_pipeline_add_postprocess(p, argmax, core::ptr::null_mut()),
            0
        );
    }
    assert_eq!(
        syn_pipeline_add_postprocess(p, argmax, core::ptr::null_mut()),
        err(Errno::NoMem)
    );
    assert_eq!(syn_pipeline_build(p), 0);
    assert_eq!(syn_pipeline_build(p), err(Errno::Already));
    assert_eq!(
        syn_pipeline_add_postprocess(p, argmax, core::ptr::null_mut()),
        err(Errno::Perm)
    );
    assert_eq!(syn_pipeline_add_model(p, m), err(Errno::Perm));
}

#[test]
fn submit_wait_and_collect_a_model_job() {
    let _t = fresh();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    let job = submit(p, &input, None);
    assert_ne!(job, SYN_JOB_INVALID);
    assert_eq!(get_result(job), Err(err(Errno::Busy)), "not run yet");
    assert_eq!(syn_infer_wait(job, 1000), 0);
    assert_eq!(syn_infer_wait(job, 0), 0, "stays collectable");
    let out = get_result(job).unwrap();
    assert_eq!((out.size, out.ndim, out.shape[0]), (10, 1, 10));
    assert_eq!(out.dtype, RawDtype::of(DType::Int8));
    assert_eq!(
        out.lifetime,
        RawLifetime::of(syn_mem_lifetime_t::SYN_MEM_EPHEMERAL)
    );
    // SAFETY: the result lives in the arena until the next ephemeral reset.
    assert_eq!(unsafe { bytes_of(&out) }, &expected_output(m));
    assert_eq!(get_result(job), Err(err(Errno::NoEnt)), "reclaimed");
    assert_eq!(syn_infer_wait(job, 0), err(Errno::NoEnt));
    // SAFETY: NULL is refused.
    let rc = unsafe { syn_infer_get_result(job, core::ptr::null_mut()) };
    assert_eq!(rc, err(Errno::Inval));
}

#[test]
fn submit_refuses_bad_arguments() {
    let _t = fresh();
    let m = setup();
    let built = model_pipeline(m);
    let unbuilt = pipeline(c"unbuilt");
    let input = input_tensor();
    assert_eq!(submit(core::ptr::null_mut(), &input, None), SYN_JOB_INVALID);
    assert_eq!(submit(unbuilt, &input, None), SYN_JOB_INVALID);
    // SAFETY: NULL input is refused.
    let rc = unsafe { syn_infer_submit(built, core::ptr::null(), core::ptr::null()) };
    assert_eq!(rc, SYN_JOB_INVALID);
    let mut no_data = input;
    no_data.data = core::ptr::null_mut();
    assert_eq!(submit(built, &no_data, None), SYN_JOB_INVALID);
    let mut too_big = input;
    too_big.shape = [17, 0, 0, 0];
    assert_eq!(submit(built, &too_big, None), SYN_JOB_INVALID);
    let mut bad_priority = params(syn_priority_t::SYN_PRIORITY_NORMAL);
    bad_priority.priority = RawPriority(3);
    assert_eq!(submit(built, &input, Some(&bad_priority)), SYN_JOB_INVALID);
    let jobs: Vec<_> = (0..crate::MAX_JOBS)
        .map(|_| submit(built, &input, None))
        .collect();
    assert!(jobs.iter().all(|&j| j != SYN_JOB_INVALID));
    assert_eq!(
        submit(built, &input, None),
        SYN_JOB_INVALID,
        "every slot taken"
    );
    assert_eq!(syn_infer_wait(SYN_JOB_INVALID, 0), err(Errno::NoEnt));
}

#[test]
fn wait_times_out_and_cancel_reclaims() {
    let _t = fresh();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    let job = submit(p, &input, None);
    assert_eq!(syn_infer_wait(job, 0), err(Errno::Again));
    assert_eq!(syn_infer_cancel(job), 0);
    // Kept, as in the reference: -ECANCELED until collected.
    assert_eq!(syn_infer_cancel(job), err(Errno::Already));
    assert_eq!(syn_infer_wait(job, 100), err(Errno::Canceled));
    let mut out = syn_tensor_t::EMPTY;
    // SAFETY: a live local.
    let rc = unsafe { syn_infer_get_result(job, &mut out) };
    assert_eq!(rc, err(Errno::Canceled));
    assert_eq!(syn_infer_wait(job, 100), err(Errno::NoEnt));
    let done = submit(p, &input, None);
    assert_eq!(syn_infer_wait(done, 100), 0);
    assert_eq!(syn_infer_cancel(done), err(Errno::Already));
    assert!(get_result(done).is_ok());
}

static ORDER: Mutex<Vec<(syn_job_id_t, usize)>> = Mutex::new(Vec::new());
static STATS_IN_CALLBACK: AtomicI32 = AtomicI32::new(1);

unsafe extern "C" fn record(
    job: syn_job_id_t,
    output: *const syn_tensor_t,
    user_data: *mut c_void,
) {
    // SAFETY: the runtime passes NULL or a live descriptor.
    let size = unsafe { output.as_ref() }.map_or(0, |t| t.size);
    ORDER.lock().unwrap().push((job, user_data as usize));
    assert_eq!(size, 10);
    // The lock is released during callbacks: the API is usable.
    let mut stats = syn_mem_stats_t::default();
    // SAFETY: a live local.
    STATS_IN_CALLBACK.store(unsafe { syn_mem_get_stats(&mut stats) }, Ordering::SeqCst);
}

#[test]
fn max_concurrent_limits_submissions() {
    let _t = fresh();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    assert_eq!(syn_infer_set_max_concurrent(0), err(Errno::Inval));
    assert_eq!(syn_infer_set_max_concurrent(1), 0);
    let a = submit(p, &input, None);
    assert_ne!(a, SYN_JOB_INVALID);
    // SAFETY: live descriptors.
    let refused = unsafe { syn_infer_submit(p, &input, core::ptr::null()) };
    assert_eq!(refused, SYN_JOB_INVALID, "one queued job is the limit");
    assert_eq!(syn_infer_wait(a, 100), 0);
    // A finished job does not count; a cancelled one neither.
    let b = submit(p, &input, None);
    assert_eq!(syn_infer_cancel(b), 0);
    let c = submit(p, &input, None);
    assert_eq!(syn_infer_wait(c, 100), 0);
    assert!(get_result(a).is_ok());
    assert!(get_result(c).is_ok());
    assert_eq!(syn_infer_set_max_concurrent(crate::MAX_JOBS as u8), 0);
}

#[test]
fn jobs_run_by_priority_and_call_back_outside_the_lock() {
    let _t = fresh();
    ORDER.lock().unwrap().clear();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    let classes = [
        syn_priority_t::SYN_PRIORITY_BEST_EFFORT,
        syn_priority_t::SYN_PRIORITY_NORMAL,
        syn_priority_t::SYN_PRIORITY_REALTIME,
    ];
    let jobs: Vec<_> = classes
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut x = params(c);
            x.callback = Some(record);
            x.user_data = i as *mut c_void;
            submit(p, &input, Some(&x))
        })
        .collect();
    // Waiting for the least urgent job runs the others first.
    assert_eq!(syn_infer_wait(jobs[0], 10_000), 0);
    let order = ORDER.lock().unwrap().clone();
    assert_eq!(order, std::vec![(jobs[2], 2), (jobs[1], 1), (jobs[0], 0)]);
    assert_eq!(STATS_IN_CALLBACK.load(Ordering::SeqCst), 0);
    // Callback jobs are still collected with get_result.
    for j in jobs {
        assert!(get_result(j).is_ok());
    }
}

static STAGE_CALLS: AtomicUsize = AtomicUsize::new(0);
static REENTRY_RC: AtomicI32 = AtomicI32::new(1);
static REENTRY_SCRATCH_NULL: AtomicU32 = AtomicU32::new(0);

/// A C stage that fails with -ERANGE after trying to call back into the API.
unsafe extern "C" fn failing_stage(
    _: *const syn_tensor_t,
    _: *mut syn_tensor_t,
    config: *const c_void,
) -> c_int {
    STAGE_CALLS.fetch_add(1, Ordering::SeqCst);
    assert_eq!(config as usize, 0xC0FF);
    REENTRY_RC.store(syn_infer_set_max_concurrent(2), Ordering::SeqCst);
    if syn_mem_scratch_acquire(16).is_null() {
        REENTRY_SCRATCH_NULL.store(1, Ordering::SeqCst);
    }
    -34
}

/// A C stage that doubles every byte and keeps the geometry.
unsafe extern "C" fn doubling_stage(
    input: *const syn_tensor_t,
    out: *mut syn_tensor_t,
    _: *const c_void,
) -> c_int {
    // SAFETY: the runtime passes live descriptors whose buffers it owns.
    let (i, o) = unsafe { (*input, &mut *out) };
    if o.size < i.size {
        return -12;
    }
    for k in 0..i.size {
        // SAFETY: both buffers hold at least i.size bytes.
        unsafe { *o.data.cast::<u8>().add(k) = (*i.data.cast::<u8>().add(k)).wrapping_mul(2) };
    }
    o.size = i.size;
    o.dtype = i.dtype;
    o.ndim = i.ndim;
    o.shape = i.shape;
    0
}

#[test]
fn c_stages_run_and_their_errors_propagate() {
    let _t = fresh();
    let m = setup();
    let input = input_tensor();

    let ok = pipeline(c"doubling");
    let doubling: Stage = doubling_stage;
    assert_eq!(
        syn_pipeline_add_preprocess(ok, Some(doubling), core::ptr::null_mut()),
        0
    );
    assert_eq!(syn_pipeline_add_model(ok, m), 0);
    assert_eq!(syn_pipeline_build(ok), 0);
    let job = submit(ok, &input, None);
    assert_eq!(syn_infer_wait(job, 1000), 0);
    let out = get_result(job).unwrap();
    let doubled: Vec<u8> = INPUT.iter().map(|b| b.wrapping_mul(2)).collect();
    let mut expected = [0u8; 10];
    super::expected_output(m, &doubled, &mut expected);
    // SAFETY: the result lives in the arena until the next ephemeral reset.
    assert_eq!(unsafe { bytes_of(&out) }, &expected);

    let bad = pipeline(c"failing");
    let failing: Stage = failing_stage;
    assert_eq!(
        syn_pipeline_add_preprocess(bad, Some(failing), 0xC0FF as *mut c_void),
        0
    );
    assert_eq!(syn_pipeline_add_model(bad, m), 0);
    assert_eq!(syn_pipeline_build(bad), 0);
    let job = submit(bad, &input, None);
    assert_eq!(syn_infer_wait(job, 1000), -34);
    assert_eq!(STAGE_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(
        REENTRY_RC.load(Ordering::SeqCst),
        err(Errno::Busy),
        "re-entry is refused"
    );
    assert_eq!(REENTRY_SCRATCH_NULL.load(Ordering::SeqCst), 1);
    assert_eq!(get_result(job), Err(-34));
    assert_eq!(
        get_result(job),
        Err(err(Errno::NoEnt)),
        "a failed job is reclaimed"
    );
}

#[test]
fn a_builtin_pipeline_end_to_end() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let mut info = model_info("e2e", 0, 10);
    info.input_shape = [1, 4, 4, 1];
    let m = register(&info);
    let norm = syn_normalize_config_t {
        mean: [128.0; 4],
        std: [128.0; 4],
        channels: 1,
    };
    let quant = syn_quantize_config_t {
        scale: 1.0 / 127.0,
        zero_point: 0,
    };
    let p = pipeline(c"e2e");
    // SAFETY: plain reads of initialised statics that nothing writes.
    let (normalize, quantize, argmax) = unsafe {
        (
            crate::process::syn_preprocess_image_normalize,
            crate::process::syn_preprocess_quantize_int8,
            crate::process::syn_postprocess_argmax,
        )
    };
    assert_eq!(
        syn_pipeline_add_preprocess(
            p,
            normalize,
            (&norm as *const syn_normalize_config_t).cast_mut().cast()
        ),
        0
    );
    assert_eq!(
        syn_pipeline_add_preprocess(
            p,
            quantize,
            (&quant as *const syn_quantize_config_t).cast_mut().cast()
        ),
        0
    );
    assert_eq!(syn_pipeline_add_model(p, m), 0);
    assert_eq!(
        syn_pipeline_add_postprocess(p, argmax, core::ptr::null_mut()),
        0
    );
    assert_eq!(syn_pipeline_build(p), 0);
    let mut frame: [u8; 16] = core::array::from_fn(|i| (i * 16) as u8);
    let input = tensor(&mut frame, DType::UInt8, &[1, 4, 4, 1]);
    let job = submit(p, &input, None);
    assert_eq!(syn_infer_wait(job, 1000), 0);
    let out = get_result(job).unwrap();
    // SAFETY: the result lives in the arena until the next ephemeral reset.
    let record = unsafe { bytes_of(&out) }.to_vec();
    assert_eq!(record.len(), 8);
    // The same computation by hand.
    let quantised: Vec<u8> = frame
        .iter()
        .map(|&x| {
            let v = (f32::from(x) - 128.0) / 128.0;
            (libm::roundf(v * 127.0) as i32).clamp(-128, 127) as i8 as u8
        })
        .collect();
    let mut logits = [0u8; 10];
    super::expected_output(m, &quantised, &mut logits);
    let best = (0..10).fold(0, |b, i| {
        if (logits[i] as i8) > (logits[b] as i8) {
            i
        } else {
            b
        }
    });
    assert_eq!(
        u32::from_ne_bytes(record[..4].try_into().unwrap()),
        best as u32
    );
    assert_eq!(
        f32::from_ne_bytes(record[4..].try_into().unwrap()),
        f32::from(logits[best] as i8)
    );
}

#[test]
fn deadlines_and_destroyed_pipelines_fail_their_jobs() {
    let _t = fresh();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    let mut x = params(syn_priority_t::SYN_PRIORITY_NORMAL);
    x.deadline_us = 100;
    let late = submit(p, &input, Some(&x));
    advance_us(200);
    assert_eq!(syn_infer_wait(late, 1000), err(Errno::TimedOut));
    assert_eq!(get_result(late), Err(err(Errno::TimedOut)));

    let orphan = submit(p, &input, None);
    syn_pipeline_destroy(p);
    assert_eq!(syn_infer_wait(orphan, 1000), err(Errno::Canceled));
    assert_eq!(get_result(orphan), Err(err(Errno::Canceled)));
}

#[test]
fn a_job_whose_model_was_unregistered_fails() {
    let _t = fresh();
    let m = setup();
    let p = model_pipeline(m);
    let input = input_tensor();
    let job = submit(p, &input, None);
    assert_eq!(syn_model_unregister(m), 0);
    assert_eq!(syn_infer_wait(job, 1000), err(Errno::NoEnt));
}

#[test]
fn run_sync_into_the_callers_buffer_or_the_arena() {
    let _t = fresh();
    let m = setup();
    let input = input_tensor();
    let mut buf = [0u8; 32];
    let mut out = syn_tensor_t {
        data: buf.as_mut_ptr().cast(),
        size: buf.len(),
        ..syn_tensor_t::EMPTY
    };
    let normal = RawPriority::of(syn_priority_t::SYN_PRIORITY_NORMAL);
    // SAFETY: live descriptors and buffers.
    let rc = unsafe { syn_infer_run_sync(m, &input, &mut out, normal) };
    assert_eq!(rc, 0);
    assert_eq!(out.data, buf.as_mut_ptr().cast());
    assert_eq!(
        (out.size, out.ndim, out.dtype),
        (10, 1, RawDtype::of(DType::Int8))
    );
    assert_eq!(&buf[..10], &expected_output(m));

    let mut arena_out = syn_tensor_t::EMPTY;
    // SAFETY: live descriptors.
    let rc = unsafe { syn_infer_run_sync(m, &input, &mut arena_out, normal) };
    assert_eq!(rc, 0);
    assert!(!arena_out.data.is_null());
    // SAFETY: an arena copy, valid until the next ephemeral reset.
    assert_eq!(unsafe { bytes_of(&arena_out) }, &expected_output(m));
    syn_mem_reset_ephemeral();

    // Every pipeline and job slot was given back.
    let all: Vec<_> = (0..crate::MAX_PIPELINES).map(|_| pipeline(c"x")).collect();
    assert!(all.iter().all(|p| !p.is_null()));
    // SAFETY: live descriptors.
    let rc = unsafe { syn_infer_run_sync(m, &input, &mut out, normal) };
    assert_eq!(rc, err(Errno::NoMem), "no pipeline free");
}

#[test]
fn run_sync_refuses_bad_arguments() {
    let _t = fresh();
    let m = setup();
    let input = input_tensor();
    let mut out = syn_tensor_t::EMPTY;
    let normal = RawPriority::of(syn_priority_t::SYN_PRIORITY_NORMAL);
    // SAFETY: NULLs and bad values are refused before any access.
    unsafe {
        assert_eq!(
            syn_infer_run_sync(m, core::ptr::null(), &mut out, normal),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_infer_run_sync(m, &input, core::ptr::null_mut(), normal),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_infer_run_sync(SYN_MODEL_INVALID, &input, &mut out, normal),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_infer_run_sync(m, &input, &mut out, RawPriority(7)),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_infer_run_sync(m ^ 0x0003_0000, &input, &mut out, normal),
            err(Errno::NoEnt)
        );
        let mut wrong_size = input;
        wrong_size.shape = [8, 0, 0, 0];
        assert_eq!(
            syn_infer_run_sync(m, &wrong_size, &mut out, normal),
            err(Errno::Inval),
            "the model takes 16 bytes"
        );
    }
}

#[test]
fn max_concurrent_is_range_checked() {
    let _t = fresh();
    assert_eq!(syn_infer_set_max_concurrent(0), err(Errno::Inval));
    assert_eq!(
        syn_infer_set_max_concurrent(crate::MAX_JOBS as u8 + 1),
        err(Errno::Inval)
    );
    assert_eq!(syn_infer_set_max_concurrent(1), 0);
}

#[test]
fn the_profiler_records_each_inference() {
    let _t = fresh();
    let mut r = syn_prof_result_t::default();
    // SAFETY: NULL is refused; `r` is a live local.
    unsafe {
        assert_eq!(syn_prof_get_last(core::ptr::null_mut()), err(Errno::Inval));
        assert_eq!(syn_prof_get_last(&mut r), err(Errno::NoEnt));
    }
    syn_prof_print_summary();
    let m = setup();
    let input = input_tensor();
    let mut out = syn_tensor_t::EMPTY;
    let normal = RawPriority::of(syn_priority_t::SYN_PRIORITY_NORMAL);
    // SAFETY: live descriptors.
    let rc = unsafe { syn_infer_run_sync(m, &input, &mut out, normal) };
    assert_eq!(rc, 0);
    // SAFETY: a live local.
    assert_eq!(unsafe { syn_prof_get_last(&mut r) }, 0);
    assert_eq!(
        r.npu_us,
        crate::STUB_NPU_LATENCY_US as u32,
        "the fake clock moves only in the stub's busy-wait"
    );
    assert_eq!(r.total_us, r.npu_us);
    assert_eq!(r.npu_utilization_pct, 100);
    assert_eq!(r.mem_peak_bytes, 10);
    syn_prof_print_summary();
    let lines = console();
    assert_eq!(lines[0], "profile: no inference recorded");
    assert!(
        lines[1].starts_with("profile: total 1000 us = preprocess 0 us + npu 1000 us"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("profile summary: inferences 1 "),
        "{}",
        lines[2]
    );
    // Disabled: nothing new is recorded.
    assert_eq!(syn_prof_disable(), 0);
    advance_us(5);
    // SAFETY: live descriptors.
    let rc = unsafe { syn_infer_run_sync(m, &input, &mut out, normal) };
    assert_eq!(rc, 0);
    let mut again = syn_prof_result_t::default();
    // SAFETY: a live local.
    assert_eq!(unsafe { syn_prof_get_last(&mut again) }, 0);
    assert_eq!(again, r);
    assert_eq!(syn_prof_enable(), 0);
    assert_eq!(syn_prof_enable_layer_trace(), err(Errno::NotSup));
    let mut us = 7;
    // SAFETY: NULL is refused; `us` is a live local.
    unsafe {
        assert_eq!(
            syn_prof_get_layer_time(0, core::ptr::null_mut()),
            err(Errno::Inval)
        );
        assert_eq!(syn_prof_get_layer_time(0, &mut us), err(Errno::NotSup));
    }
    assert_eq!(us, 0);
}
