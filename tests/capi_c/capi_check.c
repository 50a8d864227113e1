/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Compile-time check of the syn_* C API headers (scripts/check-capi.sh
 * builds it with host gcc and arm-none-eabi-gcc, -Werror):
 *
 * 1. every header compiles on its own and together;
 * 2. struct sizes and key offsets are what rust/synaptic-capi asserts for
 *    the same target family (bare-metal Arm with short enums; LP64 hosts);
 * 3. every function and exported processor has exactly the signature of
 *    the frozen API: each is assigned to a pointer of the frozen type, so a
 *    drift (int32_t for int, a missing const) is an incompatible-pointer
 *    error;
 * 4. enum values and the macros C code relies on.
 */
#include <synaptic/syn_mem.h>
#include <synaptic/syn_model.h>
#include <synaptic/syn_infer.h>
#include <synaptic/syn_process.h>
#include <synaptic/syn_hal_npu.h>
#include <synaptic/syn_hal_dsp.h>
#include <synaptic/syn_prof.h>
#include <synaptic/syn_api.h>
#include <synaptic/syn_ipc.h>
#include <synaptic/syn_abi.h>
#include <synaptic/syn_model_ota.h>
#include <synaptic/syn_store.h>

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- layout */

#if defined(__arm__) && !defined(__linux__)
_Static_assert(__ARM_SIZEOF_MINIMAL_ENUM == 1,
	       "Rust's bare-metal Arm targets use short enums; so must C");
#define EXPECT(arm32, lp64) (arm32)
#elif UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(syn_npu_dtype_t) == 4, "int-sized enums on the host");
#define EXPECT(arm32, lp64) (lp64)
#else
#error "no expected layout for this target"
#endif

#define SIZE(type, arm32, lp64)                                                \
	_Static_assert(sizeof(type) == EXPECT(arm32, lp64), "sizeof " #type)
#define OFFSET(type, field, arm32, lp64)                                       \
	_Static_assert(offsetof(type, field) == EXPECT(arm32, lp64),           \
		       "offsetof " #type "." #field)

SIZE(syn_tensor_t, 32, 48);
SIZE(syn_mem_stats_t, 28, 48);
SIZE(syn_model_info_t, 84, 88);
SIZE(syn_infer_params_t, 20, 32);
SIZE(syn_npu_caps_t, 16, 24);
SIZE(syn_prof_result_t, 28, 28);
SIZE(syn_resize_config_t, 4, 4);
SIZE(syn_normalize_config_t, 36, 36);
SIZE(syn_quantize_config_t, 8, 8);
SIZE(syn_dequantize_config_t, 8, 8);
SIZE(syn_mfcc_config_t, 8, 8);
SIZE(syn_topk_config_t, 1, 1);
SIZE(syn_classification_t, 8, 8);
SIZE(syn_bbox_t, 24, 24);
SIZE(syn_nms_config_t, 12, 12);
SIZE(syn_ipc_msg_t, 20, 20);

OFFSET(syn_tensor_t, dtype, 8, 16);
OFFSET(syn_tensor_t, ndim, 9, 20);
OFFSET(syn_tensor_t, shape, 12, 24);
OFFSET(syn_tensor_t, lifetime, 28, 40);
OFFSET(syn_model_info_t, input_size, 48, 48);
OFFSET(syn_model_info_t, input_dtype, 72, 72);
OFFSET(syn_model_info_t, output_dtype, 73, 76);
OFFSET(syn_model_info_t, input_shape, 74, 80);
OFFSET(syn_infer_params_t, deadline_us, 4, 4);
OFFSET(syn_infer_params_t, preemptible, 8, 8);
OFFSET(syn_infer_params_t, callback, 12, 16);
OFFSET(syn_infer_params_t, user_data, 16, 24);
OFFSET(syn_npu_caps_t, supported_dtypes, 12, 16);
OFFSET(syn_mem_stats_t, alloc_count, 20, 40);
OFFSET(syn_normalize_config_t, channels, 32, 32);
OFFSET(syn_nms_config_t, max_boxes, 8, 8);

/* The IPC message is the ABI v1 message, field for field. */
_Static_assert(sizeof(syn_ipc_msg_t) == sizeof(syn_abi_msg_t), "ipc msg");
_Static_assert(offsetof(syn_ipc_msg_t, type) == offsetof(syn_abi_msg_t, msg_type),
	       "ipc msg type");
_Static_assert(offsetof(syn_ipc_msg_t, payload_offset) ==
		       offsetof(syn_abi_msg_t, payload_offset),
	       "ipc msg payload_offset");
_Static_assert(offsetof(syn_ipc_msg_t, status) ==
		       offsetof(syn_abi_msg_t, status),
	       "ipc msg status");

/* -------------------------------------------------------- enum values */

_Static_assert(SYN_NPU_DTYPE_INT8 == 0 && SYN_NPU_DTYPE_UINT8 == 1 &&
		       SYN_NPU_DTYPE_INT16 == 2 && SYN_NPU_DTYPE_FLOAT16 == 3 &&
		       SYN_NPU_DTYPE_FLOAT32 == 4,
	       "syn_npu_dtype_t");
_Static_assert(SYN_NPU_STATE_IDLE == 0 && SYN_NPU_STATE_BUSY == 1 &&
		       SYN_NPU_STATE_ERROR == 2 && SYN_NPU_STATE_SUSPENDED == 3,
	       "syn_npu_state_t");
_Static_assert(SYN_MEM_PERSISTENT == 0 && SYN_MEM_EPHEMERAL == 1 &&
		       SYN_MEM_SHARED == 2,
	       "syn_mem_lifetime_t");
_Static_assert(SYN_PRIORITY_BEST_EFFORT == 0 && SYN_PRIORITY_NORMAL == 1 &&
		       SYN_PRIORITY_REALTIME == 2,
	       "syn_priority_t");
_Static_assert(SYN_PRIORITY_REALTIME == SYN_ABI_PRIORITY_REALTIME,
	       "the wire's priority classes");
_Static_assert(SYN_IPC_INFER_REQ == SYN_ABI_MSG_TYPE_INFER_REQ &&
		       SYN_IPC_INFER_RESP == SYN_ABI_MSG_TYPE_INFER_RESP &&
		       SYN_IPC_MODEL_LOAD == SYN_ABI_MSG_TYPE_MODEL_LOAD &&
		       SYN_IPC_MODEL_UNLOAD == SYN_ABI_MSG_TYPE_MODEL_UNLOAD &&
		       SYN_IPC_STATUS_REQ == SYN_ABI_MSG_TYPE_STATUS_REQ &&
		       SYN_IPC_STATUS_RESP == SYN_ABI_MSG_TYPE_STATUS_RESP,
	       "syn_ipc_type_t");
_Static_assert(SYN_MODEL_INVALID == 0 && SYN_JOB_INVALID == 0, "sentinels");
_Static_assert(sizeof(SYNAPTIC_VERSION_STRING) == sizeof("0.3.0"),
	       "version string");
_Static_assert(SYNAPTIC_VERSION_MAJOR == 0 && SYNAPTIC_VERSION_MINOR == 3,
	       "API level");

/* ----------------------------------------------------- the signatures */

#define SIG(ret, name, args) ret(*const check_##name) args = name

SIG(int, syn_init, (void));
SIG(int, syn_shutdown, (void));
SIG(const char *, syn_version, (void));

SIG(int, syn_mem_init, (void *, size_t));
SIG(void, syn_mem_reset_ephemeral, (void));
SIG(syn_tensor_t *, syn_mem_tensor_alloc,
    (const uint32_t *, uint8_t, syn_npu_dtype_t, syn_mem_lifetime_t));
SIG(void, syn_mem_tensor_free, (syn_tensor_t *));
SIG(int, syn_mem_tensor_init,
    (syn_tensor_t *, const uint32_t *, uint8_t, syn_npu_dtype_t));
SIG(void *, syn_mem_scratch_acquire, (size_t));
SIG(void, syn_mem_scratch_release, (void *));
SIG(int, syn_mem_get_stats, (syn_mem_stats_t *));
SIG(void, syn_mem_print_stats, (void));

SIG(int, syn_model_register, (const syn_model_info_t *, syn_model_handle_t *));
SIG(int, syn_model_unregister, (syn_model_handle_t));
SIG(int, syn_model_get_info, (syn_model_handle_t, syn_model_info_t *));
SIG(int, syn_model_get_by_name, (const char *, syn_model_handle_t *));
SIG(int, syn_model_list, (syn_model_handle_t *, uint8_t *, uint8_t));
SIG(int, syn_model_load, (syn_model_handle_t));
SIG(int, syn_model_unload, (syn_model_handle_t));
SIG(bool, syn_model_is_loaded, (syn_model_handle_t));
SIG(int, syn_model_swap, (syn_model_handle_t, syn_model_handle_t));

SIG(syn_pipeline_t *, syn_pipeline_create, (const char *));
SIG(int, syn_pipeline_add_preprocess,
    (syn_pipeline_t *, syn_preprocess_fn_t, void *));
SIG(int, syn_pipeline_add_model, (syn_pipeline_t *, syn_model_handle_t));
SIG(int, syn_pipeline_add_postprocess,
    (syn_pipeline_t *, syn_postprocess_fn_t, void *));
SIG(int, syn_pipeline_build, (syn_pipeline_t *));
SIG(void, syn_pipeline_destroy, (syn_pipeline_t *));
SIG(syn_job_id_t, syn_infer_submit,
    (syn_pipeline_t *, const syn_tensor_t *, const syn_infer_params_t *));
SIG(int, syn_infer_wait, (syn_job_id_t, uint32_t));
SIG(int, syn_infer_cancel, (syn_job_id_t));
SIG(int, syn_infer_get_result, (syn_job_id_t, syn_tensor_t *));
SIG(int, syn_infer_run_sync, (syn_model_handle_t, const syn_tensor_t *,
			      syn_tensor_t *, syn_priority_t));
SIG(int, syn_infer_set_max_concurrent, (uint8_t));

SIG(int, syn_hal_npu_init, (void));
SIG(void, syn_hal_npu_deinit, (void));
SIG(int, syn_hal_npu_get_caps, (syn_npu_caps_t *));
SIG(syn_npu_state_t, syn_hal_npu_get_state, (void));
SIG(int, syn_hal_npu_load_model, (const uint8_t *, size_t));
SIG(int, syn_hal_npu_set_input, (uint8_t, const void *, size_t));
SIG(int, syn_hal_npu_invoke, (void));
SIG(int, syn_hal_npu_invoke_async, (syn_npu_done_cb_t, void *));
SIG(int, syn_hal_npu_get_output, (uint8_t, void *, size_t *));
SIG(int, syn_hal_npu_suspend, (void));
SIG(int, syn_hal_npu_resume, (void));

SIG(int, syn_hal_dsp_init, (void));
SIG(int, syn_hal_dsp_normalize_int8,
    (const uint8_t *, int8_t *, size_t, float, int32_t));
SIG(int, syn_hal_dsp_softmax_f32, (const float *, float *, size_t));
SIG(int, syn_hal_dsp_argmax, (const int8_t *, size_t, uint32_t *));
SIG(int, syn_hal_dsp_fft_f32, (const float *, float *, size_t));
SIG(int, syn_hal_dsp_mat_mult_q15,
    (const int16_t *, const int16_t *, int16_t *, uint16_t, uint16_t));

SIG(int, syn_prof_enable, (void));
SIG(int, syn_prof_disable, (void));
SIG(int, syn_prof_get_last, (syn_prof_result_t *));
SIG(void, syn_prof_print_summary, (void));
SIG(int, syn_prof_enable_layer_trace, (void));
SIG(int, syn_prof_get_layer_time, (uint32_t, uint32_t *));

/* syn_ipc.h (implemented by synaptic-zephyr's feature ipc-capi). */
SIG(int, syn_ipc_init, (void *, size_t));
SIG(int, syn_ipc_send, (const syn_ipc_msg_t *));
SIG(int, syn_ipc_receive, (syn_ipc_msg_t *, uint32_t));
SIG(int, syn_ipc_register_handler, (syn_ipc_type_t, syn_ipc_handler_t, void *));
SIG(uint32_t, syn_ipc_queue_dropped, (void));

/* The callback and stage types, written as the frozen API writes them. */
typedef int (*frozen_stage_t)(const syn_tensor_t *in, syn_tensor_t *out,
			      const void *config);
typedef void (*frozen_infer_cb_t)(syn_job_id_t job, const syn_tensor_t *output,
				  void *user_data);
typedef void (*frozen_npu_done_cb_t)(int status, void *user_data);
typedef void (*frozen_ipc_handler_t)(const syn_ipc_msg_t *msg, void *ctx);

static int app_stage(const syn_tensor_t *in, syn_tensor_t *out,
		     const void *config)
{
	(void)in;
	(void)out;
	(void)config;
	return 0;
}

/* The exported processors are modifiable objects of the stage types. */
syn_preprocess_fn_t *const check_processors[] = {
	&syn_preprocess_image_resize,  &syn_preprocess_image_normalize,
	&syn_preprocess_quantize_int8, &syn_preprocess_audio_mfcc,
	&syn_postprocess_softmax,      &syn_postprocess_argmax,
	&syn_postprocess_top_k,        &syn_postprocess_nms,
	&syn_postprocess_dequantize,
};

frozen_stage_t check_stage_types(void);

frozen_stage_t check_stage_types(void)
{
	syn_preprocess_fn_t pre = app_stage;
	syn_postprocess_fn_t post = app_stage;
	frozen_infer_cb_t cb = (syn_infer_cb_t)0;
	frozen_npu_done_cb_t done = (syn_npu_done_cb_t)0;
	frozen_ipc_handler_t handler = (syn_ipc_handler_t)0;
	syn_infer_params_t params = {
		.priority = SYN_PRIORITY_REALTIME,
		.deadline_us = 0,
		.preemptible = true,
		.callback = cb,
		.user_data = NULL,
	};

	(void)done;
	(void)handler;
	(void)params;
	return pre != NULL ? pre : post;
}

/* The model store's headers (syn_model_ota.h, syn_store.h): signatures, and
 * struct syn_store_model as synaptic-zephyr's #[repr(C)] StoreModel lays it
 * out (the same on every target: no pointers, no enums).
 */
SIZE(struct syn_store_model, 56, 56);
OFFSET(struct syn_store_model, active_version, 32, 32);
OFFSET(struct syn_store_model, erases, 40, 40);
OFFSET(struct syn_store_model, slot_state, 48, 48);
OFFSET(struct syn_store_model, security_counter, 52, 52);

int (*const check_ota_begin)(const char *, size_t) = syn_ota_begin;
int (*const check_ota_write_chunk)(const uint8_t *, size_t) = syn_ota_write_chunk;
int (*const check_ota_finish)(void) = syn_ota_finish;
int (*const check_ota_activate)(void) = syn_ota_activate;
int (*const check_ota_rollback)(void) = syn_ota_rollback;
syn_ota_state_t (*const check_ota_get_state)(void) = syn_ota_get_state;
int (*const check_store_model_get)(size_t, struct syn_store_model *) = syn_store_model_get;
int64_t (*const check_store_generation)(void) = syn_store_generation;
int (*const check_store_reload)(void) = syn_store_reload;
