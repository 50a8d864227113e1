//! The runtime's conformance suites on the target.
//!
//! Every case body of `synaptic-conformance` is registered here as a ztest
//! case under its suite, with the body's own name, so twister reports
//! `mem.dtype_sizes`, `sched.realtime_job_starts_at_the_next_stage_boundary`
//! and so on one by one. The same bodies run under `cargo test` on the host.
//!
//! [`register!`] proves at compile time that a suite's registration and its
//! `CASES` table name the same cases: equal counts, every registered name in
//! the table, and (through the linker, which refuses two ztest symbols of
//! one name) no name twice.
#![no_std]

use synaptic_conformance::support::{self, Hooks};

/// Registers suite `$suite` of `synaptic-conformance` with ztest. With
/// `with setup`, each case calls `setup()` first.
macro_rules! register {
    ($suite:ident $(with $setup:ident)? { $($case:ident),+ $(,)? }) => {
        mod $suite {
            register!(@bodies $suite $($setup)? { $($case),+ });

            synaptic_zephyr::ztest_suite!($suite { $($case),+ });

            const _: () = {
                let cases = synaptic_conformance::$suite::CASES;
                assert!(
                    cases.len() == [$(stringify!($case)),+].len(),
                    concat!("suite ", stringify!($suite), ": registration and CASES differ")
                );
                $(
                    assert!(
                        synaptic_conformance::has_case(cases, stringify!($case)),
                        concat!(stringify!($suite), ".", stringify!($case), " is not in CASES")
                    );
                )+
            };
        }
    };
    (@bodies $suite:ident { $($case:ident),+ }) => {
        use synaptic_conformance::$suite::{$($case),+};
    };
    (@bodies $suite:ident $setup:ident { $($case:ident),+ }) => {
        $(
            fn $case() -> synaptic_zephyr::ztest::Outcome {
                super::$setup();
                synaptic_conformance::$suite::$case()
            }
        )+
    };
}

fn cycles() -> u32 {
    // SAFETY: reading the cycle counter has no preconditions.
    unsafe { zephyr::raw::k_cycle_get_32() }
}

/// Lends the benchmarks the cycle counter and printk.
fn install_hooks() {
    let hooks = Hooks {
        counter: cycles,
        unit: "cycles",
        print: zephyr::printk::printkln,
    };
    if !support::install_hooks(hooks) {
        zephyr::printkln!("mem_bench: hooks busy, figures will read 0");
    }
}

register!(mem {
    dtype_sizes,
    shape_rejects_empty_zero_overflow_and_rank_five,
    init_aligns_a_misaligned_buffer,
    init_rejects_a_buffer_smaller_than_the_scratch_pool,
    every_tensor_is_16_byte_aligned,
    data_has_exact_length_and_round_trips,
    tensors_do_not_overlap,
    exhaustion_is_an_error_and_allocates_nothing,
    exact_fit_fills_the_arena,
    reset_ephemeral_keeps_persistent_data,
    stale_ephemeral_descriptor_is_rejected_after_reset,
    reset_all_invalidates_persistent_tensors_and_scratch,
    free_of_the_newest_allocation_reclaims_immediately,
    stats_track_peak_and_allocation_count,
    external_tensor_wraps_without_copy,
    input_output_gives_disjoint_views_in_either_order,
    scratch_out_of_order_release_reclaims_when_younger_are_back,
    scratch_depth_is_bounded,
    errors_map_to_errno,
});

register!(mem_bench with install_hooks {
    alloc_cost,
    reset_cost,
    scratch_cost,
});

register!(mem_regions {
    regions_tile_the_buffer,
    scratch_pool_is_separate_from_tensors,
    ephemeral_cycles_leave_persistent_and_scratch_bytes_alone,
});

register!(model {
    register_and_get_info,
    name_errors_are_distinct,
    full_registry_is_an_error,
    unregister_reuses_the_slot_and_rejects_the_stale_handle,
    bad_handles_are_rejected,
    find_and_list,
    load_unload_and_is_loaded,
    load_refused_by_the_npu_reports_its_error,
    swap_replaces_and_keeps_old_on_failure,
    crc32_known_answers_and_image_check,
});

register!(sched {
    run_sync_gives_the_stub_output_through_every_stage,
    higher_priority_runs_first_and_fifo_within_a_class,
    realtime_job_starts_at_the_next_stage_boundary,
    non_preemptible_job_runs_to_completion_first,
    max_concurrent_one_disables_preemption,
    wait_times_out_then_completes,
    cancel_queued_and_running_jobs,
    callback_gets_the_output_and_the_slot_is_reclaimed,
    npu_fault_fails_the_job_and_the_next_job_still_runs,
    missed_deadline_and_submit_errors,
    small_work_buffer_and_stale_model_fail_cleanly,
});

register!(pipeline {
    full_pipeline_builds_in_order,
    order_violations_are_rejected,
    build_requires_a_model,
    built_pipeline_is_frozen,
    stage_limit_counts_the_model,
    pool_capacity_and_names,
    destroy_frees_the_slot_and_stales_the_id,
    forged_ids_are_invalid,
});

register!(process {
    resize_nearest_upscales_by_replication,
    resize_nearest_downscales_and_keeps_channels,
    resize_bilinear_interpolates_and_preserves_constants,
    resize_rejects_bad_geometry,
    normalize_channels_per_channel_mean_and_std,
    quantize_round_trip_and_saturation,
    mel_scale_round_trips,
    mfcc_of_a_periodic_tone_repeats_frame_by_frame,
    mfcc_energy_peaks_in_the_band_of_the_tone_and_c0_tracks_loudness,
    mfcc_rejects_bad_configs_and_short_input,
    softmax_int8_known_values,
    argmax_and_top_k_order,
    iou_known_values,
    nms_suppresses_overlaps_and_low_scores,
    stages_chain_resize_normalize_quantize,
    mfcc_stage_matches_the_slice_api,
    softmax_and_dequantize_stages,
    top_k_stage_streams_and_merges,
    nms_stage_reads_and_writes_box_rows,
});

register!(npu {
    output_is_the_documented_function,
    state_machine_transitions,
    size_and_dtype_checks,
    latency_is_consumed_through_the_time_source,
    fails_every_nth_invoke_and_recovers,
    fails_on_the_marker_byte_only_when_enabled,
    async_invoke_completes_on_poll_after_latency,
    async_invoke_whose_model_was_unloaded_completes_with_an_error,
});

register!(dsp {
    normalize_int8_offsets_scales_and_saturates,
    normalize_int8_rounds_half_up,
    normalize_int8_rejects_length_mismatch,
    softmax_uniform_and_sums_to_one,
    softmax_is_stable_for_large_inputs,
    softmax_rejects_empty_and_mismatch,
    argmax_i8_picks_first_maximum,
    argmax_f32_first_maximum_and_nan_never_wins,
    argmax_against_a_linear_scan,
    mat_mult_saturates,
    mat_mult_checks_dimensions,
    saturation_helpers_clamp,
});

register!(dsp_verify {
    softmax_of_known_inputs,
    softmax_preserves_order_and_ignores_shifts,
    mat_mult_q15_identity_returns_the_input,
    mat_mult_q15_known_values,
    mat_mult_q15_against_a_float_reference,
    normalize_identity_over_the_whole_int8_range,
});

register!(dsp_fft {
    impulse_is_flat,
    delayed_impulse_has_unit_magnitude_and_linear_phase,
    dc_lands_in_bin_zero,
    sine_peaks_at_its_bin,
    fft_is_linear,
    fft_satisfies_parseval,
    every_power_of_two_up_to_512_and_no_other_length,
    rfft_matches_complex_fft,
    two_point_butterfly_is_exact,
    inverse_round_trip_recovers_the_signal,
});

register!(init {
    bring_up_serves_one_inference_and_shuts_down,
    bring_up_again_after_shutdown_gives_the_same_runtime,
    bring_up_errors_are_reported_not_hidden,
    two_pipelines_share_the_npu_and_swap_models_on_demand,
    shutdown_cancels_pending_jobs_and_releases_everything,
});
