/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, umbrella header: start-up, shutdown and version, and
 * every other part of the API (memory, models, inference, profiling, the
 * NPU and DSP hardware abstractions).
 *
 *   int syn_init(void);        arena over the built-in static region, NPU
 *                              up, profiling on; -EALREADY the second time
 *   int syn_shutdown(void);    back to the power-on state: jobs, pipelines,
 *                              models and tensors are gone; -EPERM if not
 *                              started
 *   const char *syn_version(void);   "major.minor.patch" of the API level
 *
 * Every function returns 0 (or a positive count) on success and a negative
 * errno on failure; NULL pointers and out-of-range arguments give -EINVAL.
 * The numbers are Zephyr's (newlib's) on every platform, also in host
 * builds. Callers are threads, not interrupt handlers. The declarations
 * come from the cbindgen-generated syn_capi.h (rust/synaptic-capi); the
 * SYN_CAPI_* macros there state this implementation's capacities.
 */
#ifndef SYNAPTIC_SYN_API_H_
#define SYNAPTIC_SYN_API_H_

#include <synaptic/syn_mem.h>
#include <synaptic/syn_model.h>
#include <synaptic/syn_infer.h>
#include <synaptic/syn_process.h>
#include <synaptic/syn_prof.h>
#include <synaptic/syn_hal_npu.h>
#include <synaptic/syn_hal_dsp.h>

#ifdef CONFIG_SYNAPTIC_DUAL_CORE
#include <synaptic/syn_ipc.h>
#endif

#define SYN_API_STR_(x)  #x
#define SYN_API_XSTR_(x) SYN_API_STR_(x)

/* The API level as a string literal, "0.3.0" (what syn_version() returns). */
#define SYNAPTIC_VERSION_STRING                                                \
	SYN_API_XSTR_(SYNAPTIC_VERSION_MAJOR)                                  \
	"." SYN_API_XSTR_(SYNAPTIC_VERSION_MINOR)                              \
	"." SYN_API_XSTR_(SYNAPTIC_VERSION_PATCH)

#endif /* SYNAPTIC_SYN_API_H_ */
