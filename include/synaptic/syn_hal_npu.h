/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, NPU hardware abstraction: syn_npu_state_t,
 * syn_npu_dtype_t, syn_npu_caps_t, syn_npu_done_cb_t, and syn_hal_npu_init
 * / _deinit / _get_caps / _get_state / _load_model / _set_input / _invoke /
 * _invoke_async / _get_output / _suspend / _resume.
 *
 * The device behind it is the runtime's deterministic stub NPU, the same
 * one pipelines run on: each invoke takes SYN_CAPI_STUB_NPU_LATENCY_US, and
 * with CONFIG_SYNAPTIC_STUB_REFERENCE_OUTPUT (the default) its output
 * follows the reference stub's rule: every byte 0 but byte
 * (sum of the input bytes) % (output bytes), which is 127. Without it, the
 * output is the runtime's hash of model and input.
 *
 * - syn_hal_npu_load_model() takes a raw image, which has no tensor
 *   metadata: the stub runs it as a 10-class int8 classifier
 *   (SYN_CAPI_RAW_MODEL_OUTPUT bytes out) whose input is whatever
 *   syn_hal_npu_set_input() stages. syn_model_load() and pipelines replace
 *   it with a registered model.
 * - syn_hal_npu_get_output(): *size is the output length on return. On
 *   entry, 0 is the reference's convention (*size only an output; data
 *   must hold the whole output, at most SYN_CAPI_STUB_NPU_OUTPUT bytes, 10
 *   for a raw image, and is NOT checked: a smaller buffer is overrun).
 *   DEVIATION from the reference: a non-zero *size is the capacity of data
 *   and is checked, -ENOBUFS when too small. Pass the capacity.
 * - syn_hal_npu_invoke_async(NULL, ...) is -ENOTSUP, as the reference's
 *   stub. With a callback it runs the inference and calls the callback
 *   before it returns (with the runtime unlocked, so the callback may call
 *   syn_hal_npu_get_output()); supports_async is therefore false.
 * - After a failed invoke the state is SYN_NPU_STATE_ERROR;
 *   syn_hal_npu_resume() returns the device to idle, as from suspend.
 */
#ifndef SYNAPTIC_SYN_HAL_NPU_H_
#define SYNAPTIC_SYN_HAL_NPU_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_HAL_NPU_H_ */
