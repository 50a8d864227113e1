/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, profiling: syn_prof_result_t and syn_prof_enable /
 * _disable / _get_last / _print_summary / _enable_layer_trace /
 * _get_layer_time.
 *
 * While enabled (syn_init() enables it) every job that succeeds is
 * recorded: time in pre-processing, on the NPU and in post-processing,
 * submit-to-completion total (queueing included), and the peak of its
 * intermediate buffers. The stub NPU runs a model as one step, so the two
 * per-layer functions return -ENOTSUP.
 */
#ifndef SYNAPTIC_SYN_PROF_H_
#define SYNAPTIC_SYN_PROF_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_PROF_H_ */
