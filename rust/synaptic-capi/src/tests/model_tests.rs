use super::host::fresh;
use super::*;
use crate::api::syn_init;
use crate::model::*;

fn get_info(h: syn_model_handle_t) -> Result<syn_model_info_t, c_int> {
    let mut info = syn_model_info_t::ZERO;
    // SAFETY: `info` is a live local.
    match unsafe { syn_model_get_info(h, &mut info) } {
        0 => Ok(info),
        rc => Err(rc),
    }
}

fn by_name(name: &core::ffi::CStr) -> (c_int, syn_model_handle_t) {
    let mut h = 12345;
    // SAFETY: a NUL-terminated string and a live local.
    let rc = unsafe { syn_model_get_by_name(name.as_ptr(), &mut h) };
    (rc, h)
}

#[test]
fn register_accepts_unknown_sizes() {
    let _t = fresh();
    // As the reference: sizes may be unknown until load.
    let h = register(&model_info("unknown", 0, 0));
    assert_ne!(h, SYN_MODEL_INVALID);
    let back = get_info(h).unwrap();
    assert_eq!((back.input_size, back.output_size), (0, 0));
    assert_eq!(syn_model_load(h), 0);
    assert!(syn_model_is_loaded(h));
}

#[test]
fn fresh_handles_are_numbered_from_one_and_stale_ones_stay_invalid() {
    let _t = fresh();
    let a = register(&model_info("a", 8, 2));
    let b = register(&model_info("b", 8, 2));
    assert_eq!((a, b), (1, 2));
    assert_eq!(syn_model_unregister(a), 0);
    let c = register(&model_info("c", 8, 2));
    assert_ne!(c, a, "slot 0 reused under a new generation");
    assert_eq!(c & 0xFFFF, 1);
    assert!(get_info(a).is_err());
    assert_eq!(syn_model_unregister(a), err(Errno::Inval));
    assert!(get_info(c).is_ok());
}

#[test]
fn register_rejects_null_and_malformed_metadata() {
    let _t = fresh();
    let info = model_info("kws", 16, 4);
    let mut h = 77;
    // SAFETY: NULLs are allowed and refused; the rest are live locals.
    unsafe {
        assert_eq!(
            syn_model_register(core::ptr::null(), &mut h),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_model_register(&info, core::ptr::null_mut()),
            err(Errno::Inval)
        );
    }
    let cases = [
        {
            let mut i = info;
            i.name = [b'x' as c_char; 32];
            i
        },
        model_info("", 16, 4),
        {
            let mut i = info;
            i.version = [b'1' as c_char; 16];
            i
        },
        {
            let mut i = info;
            i.input_dtype = RawDtype(200);
            i
        },
        {
            let mut i = info;
            i.input_shape = [1, 4, 4, 3];
            i
        },
    ];
    for (n, bad) in cases.iter().enumerate() {
        h = 77;
        // SAFETY: live locals.
        let rc = unsafe { syn_model_register(bad, &mut h) };
        assert_eq!(rc, err(Errno::Inval), "case {n}");
        assert_eq!(h, SYN_MODEL_INVALID, "case {n}");
    }
}

#[test]
fn register_get_info_round_trip_exactly() {
    let _t = fresh();
    let mut info = model_info("person_detect", 0, 0);
    info.input_shape = [1, 4, 4, 3];
    info.output_shape = [2, 0, 0, 0];
    info.flash_offset = 0x1000;
    info.crc32 = 0xDEAD_BEEF;
    let h = register(&info);
    let back = get_info(h).unwrap();
    assert_eq!(crate::array_str(&back.name), Ok("person_detect"));
    assert_eq!((back.input_size, back.output_size), (0, 0), "as registered");
    assert_eq!((back.flash_offset, back.crc32), (0x1000, 0xDEAD_BEEF));
    assert_eq!(back.input_shape, [1, 4, 4, 3]);
    assert_eq!(get_info(SYN_MODEL_INVALID), Err(err(Errno::Inval)));
    assert_eq!(get_info(h ^ 0x0001_0000), Err(err(Errno::Inval)));
    // SAFETY: NULL is allowed and refused.
    let rc = unsafe { syn_model_get_info(h, core::ptr::null_mut()) };
    assert_eq!(rc, err(Errno::Inval));
}

#[test]
fn duplicates_and_a_full_registry_are_refused() {
    let _t = fresh();
    register(&model_info("m0", 8, 2));
    let mut h = 1;
    // SAFETY: live locals.
    let rc = unsafe { syn_model_register(&model_info("m0", 8, 2), &mut h) };
    assert_eq!(rc, err(Errno::Exist));
    assert_eq!(h, SYN_MODEL_INVALID);
    for i in 1..crate::MAX_MODELS {
        register(&model_info(&std::format!("m{i}"), 8, 2));
    }
    // SAFETY: live locals.
    let rc = unsafe { syn_model_register(&model_info("one-more", 8, 2), &mut h) };
    assert_eq!(rc, err(Errno::NoMem));
}

#[test]
fn lookup_by_name_and_list() {
    let _t = fresh();
    let a = register(&model_info("a", 8, 2));
    let b = register(&model_info("b", 8, 2));
    assert_eq!(by_name(c"b"), (0, b));
    assert_eq!(by_name(c"zzz"), (err(Errno::NoEnt), SYN_MODEL_INVALID));
    let mut h = 0;
    // SAFETY: NULLs are allowed and refused.
    unsafe {
        assert_eq!(
            syn_model_get_by_name(core::ptr::null(), &mut h),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_model_get_by_name(c"a".as_ptr(), core::ptr::null_mut()),
            err(Errno::Inval)
        );
    }
    let long = c"a-name-that-is-longer-than-31-bytes";
    assert_eq!(by_name(long).0, err(Errno::Inval));

    let mut handles = [0u32; 8];
    let mut count = 99u8;
    // SAFETY: `handles` holds 8 entries, more than `max`.
    unsafe {
        assert_eq!(syn_model_list(handles.as_mut_ptr(), &mut count, 8), 0);
        assert_eq!((count, &handles[..2]), (2, &[a, b][..]));
        assert_eq!(syn_model_list(handles.as_mut_ptr(), &mut count, 1), 0);
        assert_eq!(count, 1);
        assert_eq!(
            syn_model_list(core::ptr::null_mut(), &mut count, 1),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_model_list(handles.as_mut_ptr(), core::ptr::null_mut(), 1),
            err(Errno::Inval)
        );
    }
}

#[test]
fn a_stale_handle_is_rejected_after_its_slot_is_reused() {
    let _t = fresh();
    let old = register(&model_info("first", 8, 2));
    assert_eq!(syn_model_unregister(old), 0);
    assert_eq!(syn_model_unregister(old), err(Errno::Inval));
    let new = register(&model_info("second", 8, 2));
    assert_eq!(new & 0xFFFF, old & 0xFFFF, "same slot");
    assert_ne!(new, old);
    assert_eq!(get_info(old), Err(err(Errno::Inval)));
    assert_eq!(syn_model_load(old), err(Errno::Inval));
    assert!(get_info(new).is_ok());
}

#[test]
fn load_unload_and_swap() {
    let _t = fresh();
    let a = register(&model_info("a", 8, 2));
    let b = register(&model_info("b", 8, 2));
    // Before the NPU is started: loading starts it (the reference loads).
    assert_eq!(syn_model_load(a), 0, "NPU not started");
    assert_eq!(syn_model_unload(a), 0);
    crate::npu::syn_hal_npu_deinit();
    assert_eq!(syn_init(), 0);
    assert_eq!(syn_model_load(SYN_MODEL_INVALID), err(Errno::Inval));
    assert_eq!(syn_model_unload(a), err(Errno::Already));
    assert_eq!(syn_model_load(a), 0);
    assert_eq!(syn_model_load(a), err(Errno::Already));
    assert!(syn_model_is_loaded(a));
    assert!(!syn_model_is_loaded(b));
    assert!(!syn_model_is_loaded(SYN_MODEL_INVALID));
    assert_eq!(syn_model_swap(b, a), err(Errno::Inval), "b is not resident");
    assert_eq!(syn_model_swap(a, 0xFFFF_FFFF), err(Errno::Inval));
    assert_eq!(syn_model_swap(a, b), 0);
    assert!(syn_model_is_loaded(b) && !syn_model_is_loaded(a));
    // Loading another replaces the resident model.
    assert_eq!(syn_model_load(a), 0);
    assert!(!syn_model_is_loaded(b));
    assert_eq!(syn_model_unload(a), 0);
    assert!(!syn_model_is_loaded(a));
}

#[test]
fn unregister_unloads_a_resident_model() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let a = register(&model_info("a", 8, 2));
    assert_eq!(syn_model_load(a), 0);
    assert_eq!(syn_model_unregister(a), 0);
    assert!(!syn_model_is_loaded(a));
    assert_eq!(by_name(c"a").0, err(Errno::NoEnt));
}

#[test]
fn models_the_stub_npu_cannot_run_fail_to_load() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let mut f32_model = model_info("float", 16, 4);
    f32_model.input_dtype = RawDtype::of(synaptic_runtime::arena::DType::Float32);
    let f = register(&f32_model);
    assert_eq!(syn_model_load(f), err(Errno::NotSup));
    let big = register(&model_info("big", crate::STUB_NPU_INPUT as u32 + 1, 4));
    assert_eq!(syn_model_load(big), err(Errno::TooBig));
}
