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
 * one pipelines run on: its output is a fixed function of the model and the
 * input, and each invoke takes SYN_CAPI_STUB_NPU_LATENCY_US.
 *
 * - syn_hal_npu_load_model() takes a raw image, which has no tensor
 *   metadata: the stub runs it as a 10-class int8 classifier
 *   (SYN_CAPI_RAW_MODEL_OUTPUT bytes out) whose input is whatever
 *   syn_hal_npu_set_input() stages. syn_model_load() and pipelines replace
 *   it with a registered model.
 * - syn_hal_npu_get_output(): *size is the capacity of data on entry and
 *   the output length on return; -ENOBUFS when it is too small.
 * - syn_hal_npu_invoke_async() runs the inference and calls the callback
 *   before it returns (with the runtime unlocked, so the callback may call
 *   syn_hal_npu_get_output()); supports_async is therefore false.
 * - After a failed invoke the state is SYN_NPU_STATE_ERROR;
 *   syn_hal_npu_resume() returns the device to idle, as from suspend.
 */
#ifndef SYNAPTIC_SYN_HAL_NPU_H_
#define SYNAPTIC_SYN_HAL_NPU_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_HAL_NPU_H_ */
