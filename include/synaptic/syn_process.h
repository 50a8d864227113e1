/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, configuration of the built-in processors declared in
 * syn_infer.h: syn_normalize_config_t, syn_quantize_config_t,
 * syn_dequantize_config_t, syn_mfcc_config_t, syn_topk_config_t,
 * syn_nms_config_t, and the records they produce or read,
 * syn_classification_t and syn_bbox_t.
 *
 *   resize      uint8/int8 [1,H,W,C] or [H,W,C] -> same dtype and rank,
 *               bilinear with corners aligned (the reference's); rank 2
 *               is refused
 *   normalize   uint8/int8, last dimension == channels -> float32
 *   quantize    float32 -> int8, q = round(x / scale) + zero_point
 *   mfcc        float32 (full scale +-1.0) or int16 PCM -> float32
 *               [frames, num_coeffs], frames = samples / frame_len;
 *               working memory, 4 * (1.5 * frame_len + 1 + num_mel +
 *               num_coeffs) bytes, from the scratch pool (-ENOMEM when
 *               it has not that much free): under 2 KB of stack
 *   softmax     int8 (optionally dequantised) or float32 -> float32
 *   argmax      int8 or float32 -> one syn_classification_t
 *   top_k       int8 or float32 -> k syn_classification_t, best first
 *   nms         float32 syn_bbox_t records (at most SYN_CAPI_MAX_NMS_BOXES)
 *               -> the kept records, best first, suppression per class
 *   dequantize  int8 -> float32, x = (q - zero_point) * scale
 *
 * A processor returns -ENOMEM when out->size is too small and -EINVAL for
 * any other bad argument (including input and output buffers that overlap).
 */
#ifndef SYNAPTIC_SYN_PROCESS_H_
#define SYNAPTIC_SYN_PROCESS_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_PROCESS_H_ */
