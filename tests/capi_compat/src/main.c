/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The syn_* C API behaves as the reference implementation's does where C
 * code ported from it relies on it (README, "C API compatibility"): one
 * case per behaviour. Every case starts from a fresh runtime
 * (syn_shutdown + syn_init), so the cases do not depend on each other.
 */
#include <zephyr/kernel.h>
#include <zephyr/ztest.h>

#include <string.h>

#include <synaptic/syn_api.h>
#include <synaptic/syn_hal_npu.h>
#include <synaptic/syn_infer.h>
#include <synaptic/syn_mem.h>
#include <synaptic/syn_model.h>
#include <synaptic/syn_process.h>

#define INPUT_LEN 16

static void fresh(void *fixture)
{
	ARG_UNUSED(fixture);
	syn_shutdown();
	zassert_equal(syn_init(), 0);
}

ZTEST_SUITE(capi_compat, NULL, NULL, fresh, NULL, NULL);

static syn_model_handle_t register_model(const char *name, uint32_t in, uint32_t out)
{
	syn_model_info_t info = {0};
	syn_model_handle_t h = SYN_MODEL_INVALID;

	strncpy(info.name, name, sizeof(info.name) - 1);
	strncpy(info.version, "1.0.0", sizeof(info.version) - 1);
	info.input_size = in;
	info.output_size = out;
	zassert_equal(syn_model_register(&info, &h), 0, "register %s", name);
	return h;
}

/* 1a. Metadata without sizes or shapes is accepted (unknown until load). */
ZTEST(capi_compat, test_register_unknown_sizes)
{
	syn_model_info_t info = {0};
	syn_model_info_t back;
	syn_model_handle_t h;

	strncpy(info.name, "no_sizes", sizeof(info.name) - 1);
	zassert_equal(syn_model_register(&info, &h), 0);
	zassert_not_equal(h, SYN_MODEL_INVALID);
	zassert_equal(syn_model_get_info(h, &back), 0);
	zassert_equal(back.input_size, 0);
	zassert_equal(back.output_size, 0);
	zassert_equal(syn_model_register(NULL, &h), -EINVAL);
}

/* 1b. syn_model_load before syn_hal_npu_init loads (it powers the NPU up). */
ZTEST(capi_compat, test_load_before_npu_init)
{
	syn_hal_npu_deinit();
	syn_model_handle_t h = register_model("early", INPUT_LEN, 10);

	zassert_false(syn_model_is_loaded(h));
	zassert_equal(syn_model_load(h), 0);
	zassert_true(syn_model_is_loaded(h));
	zassert_equal(syn_model_load(h), -EALREADY);
	zassert_equal(syn_model_unload(h), 0);
	zassert_equal(syn_model_unload(h), -EALREADY);
}

/* Powers the NPU up with a raw image and runs it on `input`. */
static void invoke_raw(const uint8_t *input, size_t len)
{
	static const uint8_t image[32];

	syn_hal_npu_deinit();
	zassert_equal(syn_hal_npu_init(), 0);
	zassert_equal(syn_hal_npu_load_model(image, sizeof(image)), 0);
	zassert_equal(syn_hal_npu_set_input(0, input, len), 0);
	zassert_equal(syn_hal_npu_invoke(), 0);
}

/* 2. *size == 0 is the reference's output-only convention; a non-zero
 * *size stays a checked capacity (the documented deviation).
 */
ZTEST(capi_compat, test_get_output_size_is_output)
{
	uint8_t input[INPUT_LEN] = {0};
	uint8_t out[256];
	size_t size = 0;

	invoke_raw(input, sizeof(input));
	zassert_equal(syn_hal_npu_get_output(0, out, &size), 0);
	zassert_equal(size, 10, "ten-class output");
	size = 4;
	zassert_equal(syn_hal_npu_get_output(0, out, &size), -ENOBUFS,
		      "a capacity given is checked");
	size = sizeof(out);
	zassert_equal(syn_hal_npu_get_output(0, out, &size), 0);
	zassert_equal(size, 10);
	zassert_equal(syn_hal_npu_get_output(0, NULL, NULL), -EINVAL);
}

/* 3. invoke_async with a NULL callback: -ENOTSUP, as the reference stub. */
ZTEST(capi_compat, test_invoke_async_null_callback)
{
	uint8_t input[INPUT_LEN] = {0};

	invoke_raw(input, sizeof(input));
	zassert_equal(syn_hal_npu_invoke_async(NULL, NULL), -ENOTSUP);
}

/* 4. Corner-aligned bilinear resize; rank-2 tensors refused. */
ZTEST(capi_compat, test_resize_corner_aligned)
{
	static uint8_t src[4] = {10, 30, 50, 70};
	static uint8_t dst[16];
	syn_tensor_t in = {
		.data = src, .size = 4, .dtype = SYN_NPU_DTYPE_UINT8,
		.ndim = 4, .shape = {1, 2, 2, 1},
	};
	syn_tensor_t out = {.data = dst, .size = sizeof(dst), .dtype = SYN_NPU_DTYPE_UINT8};
	syn_resize_config_t up = {.w = 4, .h = 4};

	zassert_equal(syn_preprocess_image_resize(&in, &out, &up), 0);
	zassert_equal(out.shape[1], 4);
	zassert_equal(out.shape[2], 4);
	zassert_equal(dst[0], 10);
	zassert_equal(dst[3], 30);
	zassert_equal(dst[12], 50);
	zassert_equal(dst[15], 70);
	zassert_equal(dst[5], 30, "(1/3, 1/3) of the way is 30, got %u", dst[5]);

	static uint8_t big[16];
	static uint8_t small[4];

	for (int i = 0; i < 16; i++) {
		big[i] = (uint8_t)(i * 16);
	}
	syn_tensor_t in4 = {
		.data = big, .size = 16, .dtype = SYN_NPU_DTYPE_UINT8,
		.ndim = 4, .shape = {1, 4, 4, 1},
	};
	syn_tensor_t out2 = {.data = small, .size = 4, .dtype = SYN_NPU_DTYPE_UINT8};
	syn_resize_config_t down = {.w = 2, .h = 2};

	zassert_equal(syn_preprocess_image_resize(&in4, &out2, &down), 0);
	zassert_equal(small[0], big[0]);
	zassert_equal(small[1], big[3]);
	zassert_equal(small[2], big[12]);
	zassert_equal(small[3], big[15]);

	in.ndim = 2;
	in.shape[0] = 2;
	in.shape[1] = 2;
	out.size = sizeof(dst);
	zassert_equal(syn_preprocess_image_resize(&in, &out, &up), -EINVAL,
		      "a rank-2 tensor is not an image");
}

static syn_tensor_t inputs[4];
static uint8_t input_bytes[4][INPUT_LEN];

static const syn_tensor_t *input(int i, uint8_t fill)
{
	uint32_t shape[1] = {INPUT_LEN};

	memset(input_bytes[i], fill, INPUT_LEN);
	zassert_equal(syn_mem_tensor_init(&inputs[i], shape, 1, SYN_NPU_DTYPE_INT8), 0);
	inputs[i].data = input_bytes[i];
	inputs[i].lifetime = SYN_MEM_SHARED;
	return &inputs[i];
}

static syn_pipeline_t *model_pipeline(const char *name)
{
	syn_model_handle_t h = register_model(name, INPUT_LEN, 10);
	syn_pipeline_t *pipe = syn_pipeline_create(name);

	zassert_not_null(pipe);
	zassert_equal(syn_pipeline_add_model(pipe, h), 0);
	zassert_equal(syn_pipeline_build(pipe), 0);
	return pipe;
}

/* 5. A cancelled job is kept: wait and get_result say -ECANCELED. */
ZTEST(capi_compat, test_cancel_keeps_the_job)
{
	syn_pipeline_t *pipe = model_pipeline("cancel");
	syn_tensor_t result;
	syn_job_id_t a = syn_infer_submit(pipe, input(0, 1), NULL);
	syn_job_id_t b = syn_infer_submit(pipe, input(1, 2), NULL);

	zassert_not_equal(a, SYN_JOB_INVALID);
	zassert_not_equal(b, SYN_JOB_INVALID);
	zassert_equal(syn_infer_cancel(b), 0);
	zassert_equal(syn_infer_cancel(b), -EALREADY);
	zassert_equal(syn_infer_wait(b, 100), -ECANCELED);
	zassert_equal(syn_infer_get_result(b, &result), -ECANCELED);
	/* Collected by get_result: now unknown. */
	zassert_equal(syn_infer_wait(b, 100), -ENOENT);
	zassert_equal(syn_infer_wait(a, 2000), 0);
	zassert_equal(syn_infer_cancel(a), -EALREADY);
	zassert_equal(syn_infer_get_result(a, &result), 0);
	syn_pipeline_destroy(pipe);
}

/* 6. set_max_concurrent limits submissions (queued or running jobs). */
ZTEST(capi_compat, test_max_concurrent_limits_submissions)
{
	syn_pipeline_t *pipe = model_pipeline("limit");
	syn_tensor_t result;

	zassert_equal(syn_infer_set_max_concurrent(0), -EINVAL);
	zassert_equal(syn_infer_set_max_concurrent(CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS + 1),
		      -EINVAL);
	zassert_equal(syn_infer_set_max_concurrent(1), 0);

	syn_job_id_t a = syn_infer_submit(pipe, input(0, 3), NULL);

	zassert_not_equal(a, SYN_JOB_INVALID);
	zassert_equal(syn_infer_submit(pipe, input(1, 4), NULL), SYN_JOB_INVALID,
		      "a second submission above the limit");
	zassert_equal(syn_infer_wait(a, 2000), 0);
	/* Finished (not yet collected) jobs do not count. */
	syn_job_id_t b = syn_infer_submit(pipe, input(1, 4), NULL);

	zassert_not_equal(b, SYN_JOB_INVALID);
	zassert_equal(syn_infer_wait(b, 2000), 0);
	zassert_equal(syn_infer_get_result(a, &result), 0);
	zassert_equal(syn_infer_get_result(b, &result), 0);
	zassert_equal(syn_infer_set_max_concurrent(CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS), 0);
	syn_pipeline_destroy(pipe);
}

/* 7. A fresh boot numbers models 1..N; a stale handle stays invalid. */
ZTEST(capi_compat, test_fresh_handles_are_one_to_n)
{
	syn_model_info_t info;
	syn_model_handle_t a = register_model("first", INPUT_LEN, 10);
	syn_model_handle_t b = register_model("second", INPUT_LEN, 10);
	syn_model_handle_t c = register_model("third", INPUT_LEN, 10);

	zassert_equal(a, 1);
	zassert_equal(b, 2);
	zassert_equal(c, 3);
	zassert_equal(syn_model_unregister(b), 0);
	zassert_equal(syn_model_get_info(b, &info), -EINVAL, "unregistered");

	syn_model_handle_t d = register_model("fourth", INPUT_LEN, 10);

	zassert_equal(syn_model_get_info(d, &info), 0);
	zassert_equal(strcmp(info.name, "fourth"), 0);
	if (IS_ENABLED(CONFIG_SYNAPTIC_REFERENCE_MODEL_HANDLES)) {
		/* The reference's numbering: slot + 1 at every registration,
		 * so counting 1..N finds every model (and a kept handle names
		 * the slot's next model).
		 */
		zassert_equal(d, b);
		for (syn_model_handle_t h = 1; h <= CONFIG_SYNAPTIC_MAX_MODELS; h++) {
			syn_model_unregister(h);
		}
		zassert_equal(syn_model_get_info(a, &info), -EINVAL);
		zassert_equal(syn_model_get_info(d, &info), -EINVAL);
		zassert_equal(register_model("again", INPUT_LEN, 10), 1);
	} else {
		zassert_not_equal(d, b, "the reused slot has a new generation");
		zassert_equal(d & 0xFFFF, b, "same slot");
		zassert_equal(syn_model_get_info(b, &info), -EINVAL, "stale handle");
		zassert_equal(syn_model_unregister(b), -EINVAL);
		zassert_equal(syn_model_get_info(d, &info), 0);
	}
}

/* 8. The stub's output follows the reference's rule (the default of
 * CONFIG_SYNAPTIC_STUB_REFERENCE_OUTPUT): one-hot 127 at sum % outputs.
 */
ZTEST(capi_compat, test_stub_reference_output_rule)
{
	uint8_t in[INPUT_LEN] = {0};
	uint8_t out[16];
	size_t size = sizeof(out);

	in[0] = 200;
	in[5] = 100;
	in[9] = 3; /* sum 303: class 3 */
	invoke_raw(in, sizeof(in));
	zassert_equal(syn_hal_npu_get_output(0, out, &size), 0);
	zassert_equal(size, 10);
	for (size_t i = 0; i < size; i++) {
		zassert_equal(out[i], i == 3 ? 127 : 0, "byte %u", (unsigned int)i);
	}

	/* Through a pipeline too: the model stage gives the same classes. */
	syn_pipeline_t *pipe = model_pipeline("rule");
	syn_tensor_t result;
	const syn_tensor_t *x = input(0, 7); /* 16 * 7 = 112: class 2 */
	syn_job_id_t job = syn_infer_submit(pipe, x, NULL);

	zassert_not_equal(job, SYN_JOB_INVALID);
	zassert_equal(syn_infer_wait(job, 2000), 0);
	zassert_equal(syn_infer_get_result(job, &result), 0);
	zassert_equal(result.size, 10);
	zassert_equal(((int8_t *)result.data)[2], 127);
	zassert_equal(((int8_t *)result.data)[0], 0);
	syn_pipeline_destroy(pipe);
}

/* 9. MFCC takes its working memory from the scratch pool: it needs at most
 * 2 KB of its caller's stack (measured on a larger thread stack, so that
 * an overrun is reported as a number instead of a fault).
 */
#define MFCC_STACK 4096
#define MFCC_STACK_BUDGET 2048
K_THREAD_STACK_DEFINE(mfcc_stack, MFCC_STACK);
static struct k_thread mfcc_thread;
static int mfcc_rc;
static float samples[512];
static float features[2 * 10];

static void run_mfcc(void *a, void *b, void *c)
{
	ARG_UNUSED(a);
	ARG_UNUSED(b);
	ARG_UNUSED(c);
	syn_tensor_t in = {
		.data = samples, .size = sizeof(samples), .dtype = SYN_NPU_DTYPE_FLOAT32,
		.ndim = 2, .shape = {1, 512},
	};
	syn_tensor_t out = {.data = features, .size = sizeof(features),
			    .dtype = SYN_NPU_DTYPE_FLOAT32};
	syn_mfcc_config_t cfg = {
		.sample_rate_hz = 16000, .frame_len = 256, .num_mel = 20, .num_coeffs = 10,
	};

	mfcc_rc = syn_preprocess_audio_mfcc(&in, &out, &cfg);
}

ZTEST(capi_compat, test_mfcc_on_a_small_stack)
{
	syn_mem_stats_t before, after;
	size_t unused = 0;

	for (int i = 0; i < 256; i++) {
		/* A square wave in the first frame, silence in the second. */
		samples[i] = (i / 8) % 2 ? 0.5f : -0.5f;
	}
	zassert_equal(syn_mem_get_stats(&before), 0);
	k_thread_create(&mfcc_thread, mfcc_stack, MFCC_STACK, run_mfcc, NULL, NULL, NULL,
			K_PRIO_PREEMPT(1), 0, K_NO_WAIT);
	zassert_equal(k_thread_join(&mfcc_thread, K_SECONDS(10)), 0);
	zassert_equal(mfcc_rc, 0, "mfcc: %d", mfcc_rc);
	zassert_true(features[0] > features[10], "the loud frame has more energy");
	zassert_equal(k_thread_stack_space_get(&mfcc_thread, &unused), 0);
	size_t used = MFCC_STACK - unused;

	printk("mfcc: %u stack bytes used (budget %u)\n", (unsigned int)used,
	       MFCC_STACK_BUDGET);
	zassert_true(used <= MFCC_STACK_BUDGET, "mfcc used %u bytes of stack",
		     (unsigned int)used);
	/* The scratch buffer went back to the pool. */
	zassert_equal(syn_mem_get_stats(&after), 0);
	zassert_equal(after.scratch_used, before.scratch_used);
}

/* 10. The reference's Kconfig names are aliases of ours, and win. */
ZTEST(capi_compat, test_reference_kconfig_names)
{
	syn_mem_stats_t stats;

	BUILD_ASSERT(CONFIG_SYNAPTIC_SCRATCH_POOL_SIZE == 3072);
	BUILD_ASSERT(CONFIG_SYNAPTIC_TENSOR_ARENA_SIZE == 12288);
	BUILD_ASSERT(CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS == 3);
	zassert_equal(syn_mem_get_stats(&stats), 0);
	zassert_equal(stats.scratch_total, CONFIG_SYNAPTIC_SCRATCH_POOL_SIZE);
	zassert_true(stats.arena_total + stats.scratch_total <= CONFIG_SYNAPTIC_TENSOR_ARENA_SIZE);
	zassert_true(stats.arena_total + stats.scratch_total > CONFIG_SYNAPTIC_TENSOR_ARENA_SIZE - 64);
	zassert_equal(syn_infer_set_max_concurrent(CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS), 0);
	zassert_equal(syn_infer_set_max_concurrent(CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS + 1),
		      -EINVAL);
}
