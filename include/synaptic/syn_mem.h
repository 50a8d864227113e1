/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, tensor memory: syn_tensor_t, syn_mem_stats_t, the
 * lifetime classes, and the arena functions (syn_mem_init,
 * syn_mem_reset_ephemeral, syn_mem_tensor_alloc / _free / _init,
 * syn_mem_scratch_acquire / _release, syn_mem_get_stats,
 * syn_mem_print_stats).
 *
 * The arena is one region split into tensors (persistent ones survive
 * syn_mem_reset_ephemeral(), ephemeral and SYN_MEM_SHARED ones do not)
 * and a scratch pool at its end (SYN_CAPI_SCRATCH_SIZE bytes). Every block
 * starts on a 16-byte boundary. A tensor from syn_mem_tensor_alloc() is
 * one block: its descriptor, then its data from the next 16-byte boundary.
 * syn_mem_tensor_free() returns a persistent tensor's bytes at once when it
 * is the newest persistent block, otherwise at the next syn_mem_init().
 * syn_mem_reset_ephemeral() also releases every scratch buffer still out.
 */
#ifndef SYNAPTIC_SYN_MEM_H_
#define SYNAPTIC_SYN_MEM_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_MEM_H_ */
