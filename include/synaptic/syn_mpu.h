/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * CPU0's MPU guard over CPU1's RAM and the fault policy that goes with it
 * (Kconfig SYNAPTIC_MPU_PROTECT, chosen node `synaptic,cpu1-ram`).
 *
 * At PRE_KERNEL_1, after the architecture has set up the MPU, CPU0 programs
 * its last MPU region over CPU1's private RAM: read-only for every privilege
 * level and execute-never. A write from a CPU0 thread raises a MemManage
 * fault; the fault policy (k_sys_fatal_error_handler()) logs it, counts it
 * and lets Zephyr abort only the offending thread when that thread is not
 * essential. Every other fatal error halts, as Zephyr's default handler does.
 *
 * Plain C structs and fixed-width fields, so Rust can mirror them.
 */

#ifndef SYNAPTIC_SYN_MPU_H_
#define SYNAPTIC_SYN_MPU_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zephyr/kernel.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The MPU region that guards CPU1's RAM. */
struct syn_mpu_region {
	/** MPU region number (MPU_TYPE.DREGION - 1: the last one). */
	uint32_t index;
	/** First byte of the guarded range (CPU0's lens). */
	uint32_t base;
	/** Last byte of the guarded range (inclusive). */
	uint32_t limit;
	/** RBAR and RLAR as read back from the MPU (0 when not programmed). */
	uint32_t rbar;
	uint32_t rlar;
	/** The MPU holds exactly this region, enabled, read-only, execute-never. */
	bool programmed;
};

/** What the fault policy has seen since boot. */
struct syn_fault_stats {
	/** CPU exceptions in non-essential threads: each aborted that thread only. */
	uint32_t threads_aborted;
	/** Reason code (K_ERR_*) of the last one. */
	uint32_t last_reason;
	/** The thread the last one aborted. */
	k_tid_t last_thread;
	/** Program counter of the faulting instruction. */
	uint32_t last_pc;
	/** Faulting data address (MMFAR) of the last one; 0 when not valid. */
	uint32_t last_address;
	/** The MPU reported the faulting address of the last one (MemManage data access violation). */
	bool last_address_valid;
};

/** Outcome of one syn_mpu_self_test(). */
struct syn_mpu_test_result {
	/** The word the test thread wrote to (CPU0's lens of CPU1's RAM). */
	uint32_t target;
	/** The test thread read the guarded word before it tried to write. */
	bool read_ok;
	/** The fault counter advanced by one and the recorded address is target. */
	bool fault_fired;
	/** The test thread ended before it set its write-after marker. */
	bool thread_aborted;
	/** Faulting address the policy recorded (0 when none). */
	uint32_t fault_address;
	/** syn_fault_stats().threads_aborted before and after. */
	uint32_t faults_before;
	uint32_t faults_after;
};

/**
 * Read back the guard region from the MPU.
 *
 * @retval 0        @p out filled; out->programmed says whether the MPU holds
 *                  the guard as configured.
 * @retval -EINVAL  @p out is NULL.
 */
int syn_mpu_guard_region(struct syn_mpu_region *out);

/**
 * Copy the fault policy's counters.
 *
 * @retval 0        @p out filled.
 * @retval -EINVAL  @p out is NULL.
 */
int syn_fault_stats(struct syn_fault_stats *out);

/**
 * Prove the guard: run a short-lived non-essential thread that reads one
 * word of CPU1's RAM, then writes the same value back to it (so CPU1 sees
 * no change even if the guard were missing), then sets a marker. The write
 * must fault and Zephyr must abort that thread only. Waits for the thread
 * to end. Call from a thread; one self test at a time.
 *
 * @param out     Result; filled whenever 0 is returned.
 * @param timeout How long to wait for the test thread to end.
 *
 * @retval 0         the test ran; the verdict is in @p out (PASS when
 *                   read_ok, fault_fired and thread_aborted are all true).
 * @retval -EINVAL   @p out is NULL.
 * @retval -ENOTSUP  the guard region is not programmed (nothing written).
 * @retval -EBUSY    another self test is running.
 * @retval -EAGAIN   the thread did not end within @p timeout (it was
 *                   aborted).
 */
int syn_mpu_self_test(struct syn_mpu_test_result *out, k_timeout_t timeout);

/**
 * The `syn mpu test` shell command without a shell: read the serving
 * layer's progress (syn_service_progress()), run syn_mpu_self_test(), then
 * wait up to 2 s for both counters to advance, and write one line into
 * @p line (NUL-terminated, truncated to @p len):
 *
 *   mpu test: PASS (fault at 0x38058000, thread aborted, served +N, status +M)
 *   mpu test: FAIL (<what went wrong>)
 *
 * @retval 0        PASS.
 * @retval -EIO     FAIL (the line says why).
 * @retval -EINVAL  @p line is NULL or @p len is 0.
 * @retval <0       another error of syn_mpu_self_test() (line says which).
 */
int syn_mpu_test_run(char *line, size_t len);

/**
 * Serving-layer progress counters, implemented in Rust (synaptic-zephyr):
 * requests served and STATUS_REQ messages answered since boot. Declared
 * here because syn_mpu_test_run() calls it; the application must link it.
 */
void syn_service_progress(uint32_t *served, uint32_t *status_answered);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_MPU_H_ */
