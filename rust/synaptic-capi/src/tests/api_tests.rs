use super::host::fresh;
use super::*;
use crate::api::{syn_init, syn_shutdown};
use crate::model::{syn_model_get_info, syn_model_is_loaded, syn_model_load};
use crate::npu::syn_hal_npu_init;

#[test]
fn init_twice_is_already_and_shutdown_needs_init() {
    let _t = fresh();
    assert_eq!(syn_shutdown(), err(Errno::Perm));
    assert_eq!(syn_init(), 0);
    assert_eq!(syn_init(), err(Errno::Already));
    assert_eq!(syn_shutdown(), 0);
    assert_eq!(syn_shutdown(), err(Errno::Perm));
    assert_eq!(syn_init(), 0);
}

#[test]
fn init_keeps_an_npu_the_application_started() {
    let _t = fresh();
    assert_eq!(syn_hal_npu_init(), 0);
    assert_eq!(syn_init(), 0);
}

#[test]
fn shutdown_returns_to_power_on() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let h = register(&model_info("kws", 16, 4));
    assert_eq!(syn_model_load(h), 0);
    assert!(syn_model_is_loaded(h));
    assert_eq!(syn_shutdown(), 0);
    let mut info = syn_model_info_t::ZERO;
    // SAFETY: `info` is a live local.
    let rc = unsafe { syn_model_get_info(h, &mut info) };
    assert_eq!(rc, err(Errno::Inval));
    assert!(!syn_model_is_loaded(h));
    // The name is free again; loading powers the NPU up (as the reference
    // loads before the NPU is initialised).
    let again = register(&model_info("kws", 16, 4));
    assert_eq!(syn_model_load(again), 0);
}

#[test]
fn the_scheduler_takes_the_platforms_policy_and_weights() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let (policy, weights) =
        crate::state::with(|s| (s.sched.policy(), s.sched.weights())).expect("not re-entered");
    assert_eq!(policy, Some(super::host::SCHEDULING.policy));
    assert_eq!(weights, super::host::SCHEDULING.weights);
}
