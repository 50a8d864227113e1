/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The benchmark's board clock in this core's lens, from devicetree
 * (chosen { synaptic,bench-clock }): Rust cannot expand the macros.
 */
#include <zephyr/devicetree.h>
#include <stdint.h>

#if DT_HAS_CHOSEN(synaptic_bench_clock)
const uintptr_t offload_bench_clock_base = DT_REG_ADDR(DT_CHOSEN(synaptic_bench_clock));
#else
const uintptr_t offload_bench_clock_base;
#endif
