/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, model lifecycle: syn_model_handle_t, SYN_MODEL_INVALID,
 * syn_model_info_t, and syn_model_register / _unregister / _get_info /
 * _get_by_name / _list / _load / _unload / _is_loaded / _swap.
 *
 * A handle carries its registry slot and a generation: a fresh boot
 * numbers its models 1, 2, 3... as the reference does; a handle kept
 * across syn_model_unregister() is refused (-EINVAL) even after the slot
 * holds another model, whose handle differs. With
 * CONFIG_SYNAPTIC_REFERENCE_MODEL_HANDLES every handle is slot + 1 (the
 * reference's numbering, without that check). The model's tensors follow
 * from its metadata: the non-zero entries of input_shape / output_shape
 * when there are any (then input_size / output_size must be 0 or agree),
 * otherwise a vector of size / element-size elements; sizes 0 without a
 * shape mean unknown (accepted, as in the reference; a one-element
 * placeholder until the model is loaded through the HAL). syn_model_load()
 * before syn_hal_npu_init() powers the NPU up. One model is resident on the NPU at a
 * time; loading another replaces it, and a pipeline loads its model when a
 * job reaches the model stage.
 */
#ifndef SYNAPTIC_SYN_MODEL_H_
#define SYNAPTIC_SYN_MODEL_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_MODEL_H_ */
