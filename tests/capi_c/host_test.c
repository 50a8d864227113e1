/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The syn_* C API driven from C on the host: real C callers, callbacks and
 * stage functions compiled by a C compiler, against the Rust runtime linked
 * as a static library (rust/synaptic-capi/examples/capi_host.rs).
 * scripts/check-capi.sh builds and runs it; it prints "capi host test: PASS".
 *
 * The API returns Zephyr's errno numbers on every platform. Only codes that
 * glibc numbers the same way (EPERM, ENOENT, ENOMEM, EBUSY, EEXIST, EINVAL)
 * are compared with <errno.h> here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <synaptic/syn_api.h>

#define IN_BYTES 16
#define OUT_BYTES 10
#define THREADS 4
#define ROUNDS 50

static int failures;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                            \
		}                                                              \
	} while (0)

static syn_model_handle_t model;
static int8_t input[IN_BYTES];
static int8_t reference[OUT_BYTES];

static syn_tensor_t vector(void *data, size_t n, syn_npu_dtype_t dtype)
{
	syn_tensor_t t = {.data = data, .size = n, .dtype = dtype, .ndim = 1};

	t.shape[0] = (uint32_t)n;
	return t;
}

/* A C stage: every byte XOR 0x5A; also tries to re-enter the runtime. */
static int reentry_rc = 1;

static int xor_stage(const syn_tensor_t *in, syn_tensor_t *out,
		     const void *config)
{
	const uint8_t *src = in->data;
	uint8_t *dst = out->data;

	EXPECT(config == (const void *)&reentry_rc);
	reentry_rc = syn_infer_set_max_concurrent(1);
	if (out->size < in->size) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < in->size; i++) {
		dst[i] = src[i] ^ 0x5A;
	}
	out->size = in->size;
	out->dtype = in->dtype;
	out->ndim = in->ndim;
	memcpy(out->shape, in->shape, sizeof(out->shape));
	return 0;
}

static syn_job_id_t called_job;
static size_t called_size;
static int stats_in_callback = 1;

static void on_done(syn_job_id_t job, const syn_tensor_t *output, void *user)
{
	syn_mem_stats_t stats;

	EXPECT(user == (void *)&called_job);
	called_job = job;
	called_size = output != NULL ? output->size : 0;
	stats_in_callback = syn_mem_get_stats(&stats);
}

static void *worker(void *arg)
{
	int *mismatches = arg;

	for (int r = 0; r < ROUNDS; r++) {
		int8_t out[OUT_BYTES + 6];
		syn_tensor_t in = vector(input, IN_BYTES, SYN_NPU_DTYPE_INT8);
		syn_tensor_t res = vector(out, sizeof(out), SYN_NPU_DTYPE_INT8);

		if (syn_infer_run_sync(model, &in, &res, SYN_PRIORITY_NORMAL) != 0 ||
		    res.size != OUT_BYTES || memcmp(out, reference, OUT_BYTES) != 0) {
			(*mismatches)++;
		}
	}
	return NULL;
}

int main(void)
{
	syn_model_info_t info = {0};
	syn_model_handle_t h = 1;

	EXPECT(strcmp(syn_version(), SYNAPTIC_VERSION_STRING) == 0);
	EXPECT(syn_shutdown() == -EPERM);
	EXPECT(syn_init() == 0);

	/* Registration and its error paths. */
	strcpy(info.name, "c_model");
	strcpy(info.version, "2.1.0");
	info.input_size = IN_BYTES;
	info.output_size = OUT_BYTES;
	info.input_dtype = SYN_NPU_DTYPE_INT8;
	info.output_dtype = SYN_NPU_DTYPE_INT8;
	EXPECT(syn_model_register(NULL, &h) == -EINVAL);
	EXPECT(syn_model_register(&info, NULL) == -EINVAL);
	EXPECT(syn_model_register(&info, &model) == 0);
	EXPECT(syn_model_register(&info, &h) == -EEXIST && h == SYN_MODEL_INVALID);
	info.input_dtype = (syn_npu_dtype_t)9;
	strcpy(info.name, "bad_dtype");
	EXPECT(syn_model_register(&info, &h) == -EINVAL);
	EXPECT(syn_model_get_by_name("c_model", &h) == 0 && h == model);
	EXPECT(syn_model_get_by_name("nope", &h) == -ENOENT);
	EXPECT(syn_model_get_info(model, &info) == 0 &&
	       strcmp(info.version, "2.1.0") == 0);
	EXPECT(syn_model_load(model) == 0 && syn_model_is_loaded(model));

	/* Arena tensors and out-of-range enums. */
	const uint32_t shape[1] = {IN_BYTES};
	syn_tensor_t *t = syn_mem_tensor_alloc(shape, 1, SYN_NPU_DTYPE_INT8,
					       SYN_MEM_EPHEMERAL);

	EXPECT(t != NULL && t->size == IN_BYTES && ((uintptr_t)t->data % 16) == 0);
	EXPECT(syn_mem_tensor_alloc(shape, 1, (syn_npu_dtype_t)7,
				    SYN_MEM_EPHEMERAL) == NULL);
	EXPECT(syn_mem_tensor_alloc(shape, 1, SYN_NPU_DTYPE_INT8,
				    (syn_mem_lifetime_t)3) == NULL);
	EXPECT(syn_mem_tensor_alloc(NULL, 1, SYN_NPU_DTYPE_INT8,
				    SYN_MEM_EPHEMERAL) == NULL);

	/* The reference output, by run_sync. */
	for (int i = 0; i < IN_BYTES; i++) {
		input[i] = (int8_t)(i * 13 - 100);
	}
	syn_tensor_t in = vector(input, IN_BYTES, SYN_NPU_DTYPE_INT8);
	syn_tensor_t out = vector(reference, OUT_BYTES, SYN_NPU_DTYPE_INT8);

	EXPECT(syn_infer_run_sync(model, &in, &out, SYN_PRIORITY_NORMAL) == 0);
	EXPECT(out.size == OUT_BYTES && out.data == (void *)reference);
	EXPECT(syn_infer_run_sync(model, &in, &out, (syn_priority_t)5) == -EINVAL);

	/* A pipeline with a C stage, a callback job and its result. */
	syn_pipeline_t *pipe = syn_pipeline_create("xor");

	EXPECT(pipe != NULL);
	EXPECT(syn_pipeline_add_preprocess(pipe, xor_stage, &reentry_rc) == 0);
	EXPECT(syn_pipeline_add_model(pipe, model) == 0);
	EXPECT(syn_pipeline_build(pipe) == 0);
	EXPECT(syn_pipeline_build(pipe) != 0);

	int8_t xored[IN_BYTES];

	for (int i = 0; i < IN_BYTES; i++) {
		xored[i] = (int8_t)(input[i] ^ 0x5A);
	}
	syn_tensor_t xin = vector(xored, IN_BYTES, SYN_NPU_DTYPE_INT8);
	int8_t expected[OUT_BYTES];
	syn_tensor_t xout = vector(expected, OUT_BYTES, SYN_NPU_DTYPE_INT8);

	EXPECT(syn_infer_run_sync(model, &xin, &xout, SYN_PRIORITY_NORMAL) == 0);

	syn_infer_params_t params = {
		.priority = SYN_PRIORITY_REALTIME,
		.preemptible = true,
		.callback = on_done,
		.user_data = &called_job,
	};
	syn_job_id_t job = syn_infer_submit(pipe, &in, &params);
	syn_tensor_t result;

	EXPECT(job != SYN_JOB_INVALID);
	EXPECT(syn_infer_wait(job, 1000) == 0);
	EXPECT(called_job == job && called_size == OUT_BYTES);
	EXPECT(stats_in_callback == 0);
	EXPECT(reentry_rc == -EBUSY);
	EXPECT(syn_infer_get_result(job, &result) == 0);
	EXPECT(result.size == OUT_BYTES &&
	       memcmp(result.data, expected, OUT_BYTES) == 0);
	EXPECT(syn_infer_get_result(job, &result) == -ENOENT);
	syn_pipeline_destroy(pipe);
	EXPECT(syn_pipeline_build(pipe) == -EINVAL);

	/* The lock: threads running inferences at once all get the right answer. */
	pthread_t threads[THREADS];
	int mismatches[THREADS] = {0};

	for (int i = 0; i < THREADS; i++) {
		EXPECT(pthread_create(&threads[i], NULL, worker, &mismatches[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		EXPECT(mismatches[i] == 0);
	}

	syn_prof_result_t prof;

	EXPECT(syn_prof_get_last(&prof) == 0 && prof.npu_us > 0);
	EXPECT(syn_prof_get_last(NULL) == -EINVAL);
	EXPECT(syn_shutdown() == 0);
	EXPECT(!syn_model_is_loaded(model));

	printf("capi host test: %s (%d threads x %d inferences)\n",
	       failures == 0 ? "PASS" : "FAIL", THREADS, ROUNDS);
	return failures == 0 ? 0 : 1;
}
