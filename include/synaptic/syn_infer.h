/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, inference: syn_priority_t, syn_job_id_t,
 * syn_infer_params_t, the opaque syn_pipeline_t, the stage function types,
 * syn_resize_config_t, the pipeline functions (syn_pipeline_create,
 * _add_preprocess, _add_model, _add_postprocess, _build, _destroy), the job
 * functions (syn_infer_submit, _wait, _cancel, _get_result, _run_sync,
 * _set_max_concurrent) and the built-in processors (syn_preprocess_* and
 * syn_postprocess_*, configured with the structs of syn_process.h).
 *
 * How jobs run: there is no scheduler thread. syn_infer_wait() and
 * syn_infer_run_sync() run the scheduler on the calling thread, one stage
 * at a time, always the most urgent job first (priority class, then
 * submission order), so a thread waiting for a best-effort job also runs
 * the real-time jobs queued before it. Between the stages of a preemptible
 * job a more urgent job may run. A job whose deadline has passed fails with
 * -ETIMEDOUT; a job whose pipeline is destroyed fails with -ECANCELED.
 * A job cancelled with syn_infer_cancel() is kept, as in the reference:
 * syn_infer_wait() and syn_infer_get_result() report -ECANCELED, and
 * get_result collects it. syn_infer_set_max_concurrent(n) limits
 * submissions, as in the reference: syn_infer_submit() fails while n jobs
 * are queued or running.
 *
 * Callbacks: a completion callback runs on the waiting thread with the
 * runtime unlocked, so it may call the API; its output descriptor is valid
 * during the call. A stage function runs with the runtime locked: any
 * syn_* call that needs the runtime returns -EBUSY (or NULL) there; the DSP
 * functions and the built-in processors take no lock and are fine.
 *
 * Stage buffers: out->size holds the capacity on entry; the stage sets
 * size, dtype, ndim and shape. When size and shape disagree, the next stage
 * sees size bytes as a vector of dtype. Results of syn_infer_get_result()
 * (and of syn_infer_run_sync() without a large enough caller buffer) are
 * copies in the arena's ephemeral region, valid until
 * syn_mem_reset_ephemeral().
 */
#ifndef SYNAPTIC_SYN_INFER_H_
#define SYNAPTIC_SYN_INFER_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_INFER_H_ */
