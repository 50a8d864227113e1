/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * hello_inference_c: one inference through the syn_* C API, in C only.
 *
 * An 8x8 RGB frame is classified twice on the stub NPU:
 *   1. through a pipeline normalize -> quantize -> model -> softmax -> top_k,
 *      submitted as a real-time job;
 *   2. by calling the same two pre-processors directly and running the
 *      model with syn_infer_run_sync(), then the DSP argmax.
 * Both must name the same class. Then the profile and the arena are
 * printed and the sample reports PASS (or FAIL with the failing call).
 */
#include <errno.h>
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <synaptic/syn_api.h>

#define FRAME_H 8
#define FRAME_W 8
#define FRAME_C 3
#define FRAME_BYTES (FRAME_H * FRAME_W * FRAME_C)
#define CLASSES 10
#define TOP 3

/* zephyr-lang-rust's panic handler calls this; the sample owns main(). */
FUNC_NORETURN void rust_panic_wrap(void)
{
	k_panic();
	CODE_UNREACHABLE;
}

static int failures;

static bool check(bool ok, const char *what, int rc)
{
	if (!ok) {
		printk("hello_inference_c: FAIL: %s (%d)\n", what, rc);
		failures++;
	}
	return ok;
}

#define EXPECT(call, expected)                                                 \
	do {                                                                   \
		int rc_ = (call);                                              \
		(void)check(rc_ == (expected), #call, rc_);                    \
	} while (0)

static const syn_normalize_config_t normalize_cfg = {
	.mean = {127.5f, 127.5f, 127.5f},
	.std = {127.5f, 127.5f, 127.5f},
	.channels = FRAME_C,
};
static const syn_quantize_config_t quantize_cfg = {
	.scale = 1.0f / 127.0f,
	.zero_point = 0,
};
/* The stub's logits are raw int8; read them in steps of 1/16. */
static const syn_dequantize_config_t logit_cfg = {
	.scale = 1.0f / 16.0f,
	.zero_point = 0,
};
static const syn_topk_config_t top_k_cfg = {.k = TOP};

static syn_model_handle_t register_model(void)
{
	syn_model_info_t info = {0};
	syn_model_handle_t handle = SYN_MODEL_INVALID;
	syn_model_handle_t found = SYN_MODEL_INVALID;

	strncpy(info.name, "hello_classifier", sizeof(info.name) - 1);
	strncpy(info.version, "1.0.0", sizeof(info.version) - 1);
	info.input_size = FRAME_BYTES;
	info.output_size = CLASSES;
	info.flash_size = 64;
	info.sram_required = 1024;
	info.input_dtype = SYN_NPU_DTYPE_INT8;
	info.output_dtype = SYN_NPU_DTYPE_INT8;
	info.input_shape[0] = 1;
	info.input_shape[1] = FRAME_H;
	info.input_shape[2] = FRAME_W;
	info.input_shape[3] = FRAME_C;

	/* Bad arguments are refused, never dereferenced. */
	EXPECT(syn_model_register(NULL, &handle), -EINVAL);
	EXPECT(syn_model_register(&info, &handle), 0);
	EXPECT(syn_model_register(&info, &found), -EEXIST);
	EXPECT(syn_model_get_by_name("hello_classifier", &found), 0);
	(void)check(found == handle, "get_by_name finds the handle", (int)found);
	EXPECT(syn_model_load(handle), 0);
	(void)check(syn_model_is_loaded(handle), "model resident", 0);
	printk("model '%s' registered as 0x%08x and loaded\n", info.name,
	       (unsigned int)handle);
	return handle;
}

static syn_tensor_t *make_frame(void)
{
	const uint32_t shape[4] = {1, FRAME_H, FRAME_W, FRAME_C};
	syn_tensor_t *frame = syn_mem_tensor_alloc(shape, 4, SYN_NPU_DTYPE_UINT8,
						   SYN_MEM_PERSISTENT);

	if (!check(frame != NULL, "syn_mem_tensor_alloc(frame)", 0)) {
		return NULL;
	}
	uint8_t *px = frame->data;

	for (size_t i = 0; i < frame->size; i++) {
		px[i] = (uint8_t)(i * 7 + (i / FRAME_C) * 3);
	}
	return frame;
}

/* Classification through a pipeline and a real-time job. */
static int classify_with_pipeline(syn_model_handle_t model,
				  const syn_tensor_t *frame)
{
	syn_pipeline_t *pipe = syn_pipeline_create("classify");

	if (!check(pipe != NULL, "syn_pipeline_create", 0)) {
		return -1;
	}
	EXPECT(syn_pipeline_add_postprocess(pipe, syn_postprocess_softmax, NULL),
	       -EINVAL); /* post-processing before the model */
	EXPECT(syn_pipeline_add_preprocess(pipe, syn_preprocess_image_normalize,
					   (void *)&normalize_cfg),
	       0);
	EXPECT(syn_pipeline_add_preprocess(pipe, syn_preprocess_quantize_int8,
					   (void *)&quantize_cfg),
	       0);
	EXPECT(syn_pipeline_add_model(pipe, model), 0);
	EXPECT(syn_pipeline_add_postprocess(pipe, syn_postprocess_softmax,
					    (void *)&logit_cfg),
	       0);
	EXPECT(syn_pipeline_add_postprocess(pipe, syn_postprocess_top_k,
					    (void *)&top_k_cfg),
	       0);
	EXPECT(syn_pipeline_build(pipe), 0);
	printk("pipeline 'classify': normalize -> quantize -> model -> softmax "
	       "-> top_k, built\n");

	const syn_infer_params_t params = {
		.priority = SYN_PRIORITY_REALTIME,
		.preemptible = true,
	};
	syn_job_id_t job = syn_infer_submit(pipe, frame, &params);
	syn_tensor_t result = {0};
	int best = -1;

	if (check(job != SYN_JOB_INVALID, "syn_infer_submit", 0)) {
		EXPECT(syn_infer_wait(job, 1000), 0);
		EXPECT(syn_infer_get_result(job, &result), 0);
		EXPECT(syn_infer_get_result(job, &result), -ENOENT);
	}
	if (failures == 0 &&
	    check(result.size == TOP * sizeof(syn_classification_t),
		  "top_k result size", (int)result.size)) {
		const syn_classification_t *top = result.data;
		unsigned int permille = (unsigned int)(top[0].score * 1000.0f + 0.5f);

		printk("prediction: class %u (p = %u.%03u), then class %u, class %u\n",
		       (unsigned int)top[0].index, permille / 1000, permille % 1000,
		       (unsigned int)top[1].index, (unsigned int)top[2].index);
		best = (int)top[0].index;
	}
	syn_pipeline_destroy(pipe);
	return best;
}

/* The same classification by hand: processors, run_sync, DSP argmax. */
static int classify_by_hand(syn_model_handle_t model, syn_tensor_t *frame,
			    int *logit)
{
	const uint32_t shape[4] = {1, FRAME_H, FRAME_W, FRAME_C};
	syn_tensor_t *normalized = syn_mem_tensor_alloc(
		shape, 4, SYN_NPU_DTYPE_FLOAT32, SYN_MEM_EPHEMERAL);
	syn_tensor_t *quantized = syn_mem_tensor_alloc(shape, 4, SYN_NPU_DTYPE_INT8,
						       SYN_MEM_EPHEMERAL);
	int8_t logits[16];
	syn_tensor_t output = {.data = logits, .size = sizeof(logits)};
	uint32_t best = 0;

	if (!check(normalized != NULL && quantized != NULL,
		   "syn_mem_tensor_alloc(stages)", 0)) {
		return -1;
	}
	EXPECT(syn_preprocess_image_normalize(frame, normalized, &normalize_cfg), 0);
	EXPECT(syn_preprocess_quantize_int8(normalized, quantized, &quantize_cfg),
	       0);
	EXPECT(syn_infer_run_sync(model, NULL, &output, SYN_PRIORITY_NORMAL),
	       -EINVAL);
	EXPECT(syn_infer_run_sync(model, quantized, &output, SYN_PRIORITY_NORMAL),
	       0);
	if (!check(output.data == logits && output.size == CLASSES,
		   "run_sync output in the caller's buffer", (int)output.size)) {
		return -1;
	}
	EXPECT(syn_hal_dsp_argmax(logits, output.size, &best), 0);
	*logit = logits[best % CLASSES];
	syn_mem_reset_ephemeral();
	return (int)best;
}

/*
 * The registry holds CONFIG_SYNAPTIC_MAX_MODELS models (the Kconfig value
 * reaches the Rust runtime at build time): fill it with copies of `model`
 * under other names until it refuses, then remove the copies.
 */
static void check_capacity(syn_model_handle_t model, const syn_mem_stats_t *mem)
{
	syn_model_info_t info;
	syn_model_handle_t extra[CONFIG_SYNAPTIC_MAX_MODELS];
	int count = 1; /* `model` */
	int rc = 0;

	if (!check(syn_model_get_info(model, &info) == 0, "get_info", 0)) {
		return;
	}
	while (count <= CONFIG_SYNAPTIC_MAX_MODELS) {
		snprintk(info.name, sizeof(info.name), "copy%d", count);
		rc = syn_model_register(&info, &extra[count - 1]);
		if (rc != 0) {
			break;
		}
		count++;
	}
	(void)check(rc == -ENOMEM && count == CONFIG_SYNAPTIC_MAX_MODELS,
		    "registry full at CONFIG_SYNAPTIC_MAX_MODELS", count);
	printk("capacity: %d models registered, then %d (Kconfig %d); arena %u + "
	       "scratch %u bytes (Kconfig %d, %d)\n",
	       count, rc, CONFIG_SYNAPTIC_MAX_MODELS,
	       (unsigned int)mem->arena_total, (unsigned int)mem->scratch_total,
	       CONFIG_SYNAPTIC_ARENA_SIZE, CONFIG_SYNAPTIC_SCRATCH_SIZE);
	(void)check(mem->scratch_total == CONFIG_SYNAPTIC_SCRATCH_SIZE &&
			    mem->arena_total + mem->scratch_total ==
				    CONFIG_SYNAPTIC_ARENA_SIZE,
		    "arena sized by Kconfig", (int)mem->arena_total);
	for (int i = 1; i < count; i++) {
		EXPECT(syn_model_unregister(extra[i - 1]), 0);
	}
}

int main(void)
{
	syn_prof_result_t prof;
	syn_mem_stats_t mem;

	printk("hello_inference_c: synaptic C API %s\n", syn_version());
	(void)check(strcmp(syn_version(), SYNAPTIC_VERSION_STRING) == 0,
		    "syn_version() == SYNAPTIC_VERSION_STRING", 0);

	EXPECT(syn_init(), 0);
	EXPECT(syn_init(), -EALREADY);

	syn_model_handle_t model = register_model();
	syn_tensor_t *frame = make_frame();

	if (failures == 0 && frame != NULL) {
		int from_pipeline = classify_with_pipeline(model, frame);
		int logit = 0;
		int by_hand = classify_by_hand(model, frame, &logit);

		if (check(from_pipeline >= 0 && from_pipeline == by_hand,
			  "pipeline and run_sync agree", by_hand)) {
			printk("run_sync: class %d (logit %d) agrees with the "
			       "pipeline\n",
			       by_hand, logit);
		}
	}

	EXPECT(syn_prof_get_last(&prof), 0);
	EXPECT(syn_prof_get_last(NULL), -EINVAL);
	EXPECT(syn_prof_enable_layer_trace(), -ENOTSUP);
	syn_prof_print_summary();
	EXPECT(syn_mem_get_stats(&mem), 0);
	syn_mem_print_stats();
	check_capacity(model, &mem);

	syn_mem_tensor_free(frame);
	EXPECT(syn_shutdown(), 0);

	size_t unused = 0;

	if (k_thread_stack_space_get(k_current_get(), &unused) == 0) {
		printk("main stack: %u of %u bytes used\n",
		       (unsigned int)(CONFIG_MAIN_STACK_SIZE - unused),
		       (unsigned int)CONFIG_MAIN_STACK_SIZE);
	}
	printk("hello_inference_c: %s\n", failures == 0 ? "PASS" : "FAIL");
	return 0;
}
