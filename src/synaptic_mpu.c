/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * CPU0's MPU guard over CPU1's RAM, and the fault policy
 * (include/synaptic/syn_mpu.h, Kconfig SYNAPTIC_MPU_PROTECT).
 *
 * Region. Zephyr's ARMv8-M MPU driver programs its static regions in
 * arch_kernel_init() (z_arm_mpu_init(), then
 * z_arm_configure_static_mpu_regions()), which z_cstart() runs after the
 * EARLY init level and before PRE_KERNEL_1. The guard is programmed at
 * PRE_KERNEL_1 into the last region the MPU has (MPU_TYPE.DREGION - 1),
 * which the driver leaves free and never touches again as long as it has no
 * dynamic regions (no MPU stack guard, no userspace: the Kconfig option
 * depends on that). PMSAv8 faults an access that hits two enabled regions,
 * so the hook refuses to program the guard over any range Zephyr mapped.
 *
 * Attributes: RBAR.AP = 0b11 (read-only at every privilege level),
 * RBAR.XN = 1, non-shareable, RLAR.AttrIndx = Zephyr's MAIR0 index for
 * normal non-cacheable memory (CPU1 writes this RAM behind CPU0's back).
 *
 * Fault policy. k_sys_fatal_error_handler() runs after Zephyr's fault
 * handler printed the fault dump and cleared the fault status registers. It
 * returns (so z_fatal_error() aborts the current thread) only for a CPU
 * exception taken in thread mode by a thread that is not essential;
 * everything else halts, as Zephyr's default handler does.
 */

#include <errno.h>
#include <zephyr/kernel.h>
#include <zephyr/init.h>
#include <zephyr/devicetree.h>
#include <zephyr/fatal.h>
#include <zephyr/logging/log.h>
#include <zephyr/logging/log_ctrl.h>
#include <zephyr/sys/atomic.h>
#include <zephyr/sys/barrier.h>
#include <zephyr/sys/printk.h>
#include <cmsis_core.h>
#include <zephyr/arch/arm/mpu/arm_mpu.h>
#include <synaptic/syn_mpu.h>

LOG_MODULE_REGISTER(synaptic_mpu, CONFIG_SYNAPTIC_LOG_LEVEL);

#define SYN_CPU1_RAM_NODE DT_CHOSEN(synaptic_cpu1_ram)

BUILD_ASSERT(DT_NODE_EXISTS(SYN_CPU1_RAM_NODE),
	     "CONFIG_SYNAPTIC_MPU_PROTECT needs CPU1's RAM in the devicetree: a node with "
	     "compatible \"synaptic,cpu1-ram\" and reg = <base size> in CPU0's lens, named by "
	     "chosen { synaptic,cpu1-ram = &node; } (see dts/bindings/synaptic,cpu1-ram.yaml)");

#if DT_NODE_EXISTS(SYN_CPU1_RAM_NODE)
BUILD_ASSERT(DT_NODE_HAS_COMPAT(SYN_CPU1_RAM_NODE, synaptic_cpu1_ram),
	     "chosen synaptic,cpu1-ram must have compatible \"synaptic,cpu1-ram\"");
BUILD_ASSERT(DT_NODE_HAS_STATUS_OKAY(SYN_CPU1_RAM_NODE),
	     "chosen synaptic,cpu1-ram is disabled");
#define SYN_GUARD_BASE ((uint32_t)DT_REG_ADDR(SYN_CPU1_RAM_NODE))
#define SYN_GUARD_SIZE ((uint32_t)DT_REG_SIZE(SYN_CPU1_RAM_NODE))
#else
/* Only so that the BUILD_ASSERT above is the one error reported. */
#define SYN_GUARD_BASE 0U
#define SYN_GUARD_SIZE 32U
#endif

/* The ARMv8-M MPU granule: base and limit + 1 are multiples of 32 bytes. */
#define SYN_MPU_GRANULE 32U
BUILD_ASSERT(SYN_GUARD_SIZE >= SYN_MPU_GRANULE && (SYN_GUARD_SIZE % SYN_MPU_GRANULE) == 0U,
	     "synaptic,cpu1-ram: size must be a non-zero multiple of 32 bytes (ARMv8-M MPU)");
BUILD_ASSERT((SYN_GUARD_BASE % SYN_MPU_GRANULE) == 0U,
	     "synaptic,cpu1-ram: base must be 32-byte aligned (ARMv8-M MPU)");
BUILD_ASSERT((uint64_t)SYN_GUARD_BASE + SYN_GUARD_SIZE <= 0x100000000ULL,
	     "synaptic,cpu1-ram: range wraps the 32-bit address space");

#define SYN_GUARD_LIMIT (SYN_GUARD_BASE + (SYN_GUARD_SIZE - 1U))

#define SYN_GUARD_RBAR                                                                         \
	((SYN_GUARD_BASE & MPU_RBAR_BASE_Msk) | P_RO_U_RO_Msk | NOT_EXEC | NON_SHAREABLE_Msk)
#define SYN_GUARD_RLAR                                                                         \
	((SYN_GUARD_LIMIT & MPU_RLAR_LIMIT_Msk) |                                              \
	 ((MPU_MAIR_INDEX_SRAM_NOCACHE << MPU_RLAR_AttrIndx_Pos) & MPU_RLAR_AttrIndx_Msk) |    \
	 MPU_RLAR_EN_Msk)

/* Stack of the self-test thread: it only reads and writes one word. */
#define SYN_MPU_TEST_STACK_SIZE 1024

/* syn_mpu_test_run() waits this long for both serving counters to move. */
#define SYN_MPU_PROGRESS_WAIT_MS 2000
#define SYN_MPU_PROGRESS_POLL_MS 10

/* Index of the guard region (set at init, before any thread runs). */
static uint32_t syn_guard_index;

/* Written by the fault policy with interrupts locked; read under irq_lock(). */
static struct syn_fault_stats syn_stats;

/* Self test: one at a time; markers written by the test thread. */
static atomic_t syn_test_busy;
static volatile bool syn_test_read_done;
static volatile bool syn_test_write_done;
static struct k_thread syn_test_thread;
static K_KERNEL_STACK_DEFINE(syn_test_stack, SYN_MPU_TEST_STACK_SIZE);

static uint32_t syn_mpu_num_regions(void)
{
	return (MPU->TYPE & MPU_TYPE_DREGION_Msk) >> MPU_TYPE_DREGION_Pos;
}

static uint32_t syn_mair_attr(uint32_t index)
{
	uint32_t mair = (index < 4U) ? MPU->MAIR0 : MPU->MAIR1;

	return (mair >> ((index % 4U) * 8U)) & 0xFFU;
}

/*
 * The faulting address. MMFAR is only meaningful while MMFSR.MMARVALID is
 * set, and Zephyr's fault handler clears MMFSR before the policy runs (the
 * reason code says "data access violation" only without
 * CONFIG_SIMPLIFIED_EXCEPTION_CODES). So MMFAR is kept at a sentinel between
 * faults: written at init and after each read here. The hardware loads it
 * only on a MemManage data access violation, and every such fault either
 * reaches this policy or halts, so a value other than the sentinel is the
 * address of the fault being handled. (A fault at address 0 reads as "no
 * address".)
 */
#define SYN_MMFAR_NONE 0U

static uint32_t syn_take_mmfar(void)
{
	uint32_t mmfar = SCB->MMFAR;

	SCB->MMFAR = SYN_MMFAR_NONE;
	return mmfar;
}

/* Outcome of syn_mpu_guard_init(), reported once logging is up. */
enum syn_guard_outcome {
	SYN_GUARD_PROGRAMMED,
	SYN_GUARD_NO_MPU,
	SYN_GUARD_MAIR_MISMATCH,
	SYN_GUARD_LAST_IN_USE,
	SYN_GUARD_OVERLAP,
};

static enum syn_guard_outcome syn_guard_outcome;
static uint32_t syn_guard_regions;
static uint32_t syn_guard_conflict;

static int syn_mpu_guard_init(void)
{
	uint32_t regions = syn_mpu_num_regions();
	unsigned int key;

	syn_guard_regions = regions;
	(void)syn_take_mmfar();
	if (regions == 0U) {
		syn_guard_outcome = SYN_GUARD_NO_MPU;
		return 0;
	}
	syn_guard_index = regions - 1U;

	if (syn_mair_attr(MPU_MAIR_INDEX_SRAM_NOCACHE) != MPU_MAIR_ATTR_SRAM_NOCACHE) {
		syn_guard_outcome = SYN_GUARD_MAIR_MISMATCH;
		return 0;
	}

	syn_guard_outcome = SYN_GUARD_PROGRAMMED;
	key = irq_lock();
	for (uint32_t i = 0U; i < regions; i++) {
		MPU->RNR = i;
		uint32_t rbar = MPU->RBAR;
		uint32_t rlar = MPU->RLAR;

		if ((rlar & MPU_RLAR_EN_Msk) == 0U) {
			continue;
		}
		if (i == syn_guard_index) {
			syn_guard_outcome = SYN_GUARD_LAST_IN_USE;
			break;
		}

		uint32_t base = rbar & MPU_RBAR_BASE_Msk;
		uint32_t limit = (rlar & MPU_RLAR_LIMIT_Msk) | (SYN_MPU_GRANULE - 1U);

		if (base <= SYN_GUARD_LIMIT && SYN_GUARD_BASE <= limit) {
			syn_guard_outcome = SYN_GUARD_OVERLAP;
			syn_guard_conflict = i;
			break;
		}
	}
	if (syn_guard_outcome == SYN_GUARD_PROGRAMMED) {
		MPU->RNR = syn_guard_index;
		MPU->RBAR = SYN_GUARD_RBAR;
		MPU->RLAR = SYN_GUARD_RLAR;
		barrier_dsync_fence_full();
		barrier_isync_fence_full();
	}
	irq_unlock(key);
	return 0;
}

/* After arch_kernel_init() programmed Zephyr's own regions (see above). */
SYS_INIT(syn_mpu_guard_init, PRE_KERNEL_1, 0);

/* Log backends may not be up at PRE_KERNEL_1: say what happened later. */
static int syn_mpu_guard_report(void)
{
	switch (syn_guard_outcome) {
	case SYN_GUARD_PROGRAMMED:
		LOG_INF("MPU guard: region %u of %u over CPU1's RAM 0x%08x-0x%08x, "
			"read-only, execute-never",
			syn_guard_index, syn_guard_regions, SYN_GUARD_BASE, SYN_GUARD_LIMIT);
		break;
	case SYN_GUARD_NO_MPU:
		LOG_ERR("MPU guard: this CPU has no MPU regions; CPU1's RAM is unguarded");
		break;
	case SYN_GUARD_MAIR_MISMATCH:
		LOG_ERR("MPU guard: MAIR attribute %u is 0x%02x, not Zephyr's non-cacheable "
			"0x%02x; CPU1's RAM is unguarded",
			MPU_MAIR_INDEX_SRAM_NOCACHE, syn_mair_attr(MPU_MAIR_INDEX_SRAM_NOCACHE),
			(unsigned int)MPU_MAIR_ATTR_SRAM_NOCACHE);
		break;
	case SYN_GUARD_LAST_IN_USE:
		LOG_ERR("MPU guard: region %u (the last) is already in use; "
			"CPU1's RAM is unguarded",
			syn_guard_index);
		break;
	case SYN_GUARD_OVERLAP:
		LOG_ERR("MPU guard: 0x%08x-0x%08x overlaps MPU region %u; "
			"CPU1's RAM is unguarded",
			SYN_GUARD_BASE, SYN_GUARD_LIMIT, syn_guard_conflict);
		break;
	}
	return 0;
}

SYS_INIT(syn_mpu_guard_report, APPLICATION, 0);

int syn_mpu_guard_region(struct syn_mpu_region *out)
{
	unsigned int key;

	if (out == NULL) {
		return -EINVAL;
	}

	*out = (struct syn_mpu_region){
		.index = syn_guard_index,
		.base = SYN_GUARD_BASE,
		.limit = SYN_GUARD_LIMIT,
	};
	if (syn_mpu_num_regions() == 0U) {
		return 0;
	}

	key = irq_lock();
	MPU->RNR = syn_guard_index;
	out->rbar = MPU->RBAR;
	out->rlar = MPU->RLAR;
	irq_unlock(key);

	out->programmed = out->rbar == SYN_GUARD_RBAR && out->rlar == SYN_GUARD_RLAR;
	return 0;
}

int syn_fault_stats(struct syn_fault_stats *out)
{
	unsigned int key;

	if (out == NULL) {
		return -EINVAL;
	}
	key = irq_lock();
	*out = syn_stats;
	irq_unlock(key);
	return 0;
}

static bool syn_is_cpu_exception(unsigned int reason)
{
	/* K_ERR_ARM_* (MPU, bus, usage faults) start at K_ERR_ARCH_START. */
	return reason == K_ERR_CPU_EXCEPTION || reason >= K_ERR_ARCH_START;
}

void k_sys_fatal_error_handler(unsigned int reason, const struct arch_esf *esf)
{
	struct k_thread *thread = k_current_get();
	/* IPSR stacked in the frame: non-zero when the fault interrupted a handler. */
	bool in_handler = esf == NULL || (esf->basic.xpsr & IPSR_ISR_Msk) != 0U;
	bool essential = thread == NULL || (thread->base.user_options & K_ESSENTIAL) != 0U;

	if (syn_is_cpu_exception(reason) && !in_handler && !essential) {
		uint32_t address = syn_take_mmfar();
		bool address_valid = address != SYN_MMFAR_NONE;
		const char *name = k_thread_name_get(thread);

		if (!IS_ENABLED(CONFIG_SIMPLIFIED_EXCEPTION_CODES) &&
		    reason != K_ERR_ARM_MEM_DATA_ACCESS) {
			/* Only a data access violation loads MMFAR. */
			address_valid = false;
		}
		if (!address_valid) {
			address = 0U;
		}

		/* z_fatal_error() holds the interrupt lock while calling us. */
		syn_stats.threads_aborted++;
		syn_stats.last_reason = reason;
		syn_stats.last_thread = thread;
		syn_stats.last_pc = esf->basic.pc;
		syn_stats.last_address = address;
		syn_stats.last_address_valid = address_valid;

		if (address_valid) {
			LOG_ERR("fault policy: reason %u in thread %p (%s) at pc 0x%08x, "
				"address 0x%08x: aborting that thread only (%u so far)",
				reason, (void *)thread, name != NULL ? name : "", esf->basic.pc,
				address, syn_stats.threads_aborted);
		} else {
			LOG_ERR("fault policy: reason %u in thread %p (%s) at pc 0x%08x: "
				"aborting that thread only (%u so far)",
				reason, (void *)thread, name != NULL ? name : "", esf->basic.pc,
				syn_stats.threads_aborted);
		}
		return;
	}

	/* Zephyr's default policy. */
	LOG_PANIC();
	LOG_ERR("Halting system");
	k_fatal_halt(reason);
	CODE_UNREACHABLE;
}

static void syn_mpu_test_entry(void *p1, void *p2, void *p3)
{
	volatile uint32_t *word = (volatile uint32_t *)(uintptr_t)SYN_GUARD_BASE;

	ARG_UNUSED(p1);
	ARG_UNUSED(p2);
	ARG_UNUSED(p3);

	uint32_t value = *word;

	syn_test_read_done = true;
	/* The same value: CPU1 sees no change even if the guard were missing. */
	*word = value;
	syn_test_write_done = true;
}

int syn_mpu_self_test(struct syn_mpu_test_result *out, k_timeout_t timeout)
{
	struct syn_mpu_region region;
	struct syn_fault_stats before;
	struct syn_fault_stats after;
	k_tid_t tid;
	int err;

	if (out == NULL) {
		return -EINVAL;
	}
	(void)syn_mpu_guard_region(&region);
	if (!region.programmed) {
		return -ENOTSUP;
	}
	if (!atomic_cas(&syn_test_busy, 0, 1)) {
		return -EBUSY;
	}

	syn_test_read_done = false;
	syn_test_write_done = false;
	(void)syn_fault_stats(&before);

	/* Same priority as the caller, which blocks in k_thread_join() below. */
	tid = k_thread_create(&syn_test_thread, syn_test_stack,
			      K_KERNEL_STACK_SIZEOF(syn_test_stack), syn_mpu_test_entry, NULL,
			      NULL, NULL, k_thread_priority_get(k_current_get()), 0, K_FOREVER);
	(void)k_thread_name_set(tid, "syn_mpu_test");
	k_thread_start(tid);

	err = k_thread_join(tid, timeout);
	if (err != 0) {
		k_thread_abort(tid);
		(void)atomic_set(&syn_test_busy, 0);
		return -EAGAIN;
	}

	(void)syn_fault_stats(&after);
	*out = (struct syn_mpu_test_result){
		.target = SYN_GUARD_BASE,
		.read_ok = syn_test_read_done,
		.fault_fired = after.threads_aborted == before.threads_aborted + 1U &&
			       after.last_thread == tid && after.last_address_valid &&
			       after.last_address == SYN_GUARD_BASE,
		.thread_aborted = !syn_test_write_done,
		.fault_address = (after.threads_aborted != before.threads_aborted &&
				  after.last_address_valid)
					 ? after.last_address
					 : 0U,
		.faults_before = before.threads_aborted,
		.faults_after = after.threads_aborted,
	};

	(void)atomic_set(&syn_test_busy, 0);
	return 0;
}

int syn_mpu_test_run(char *line, size_t len)
{
	struct syn_mpu_test_result r;
	uint32_t served0;
	uint32_t status0;
	uint32_t served = 0U;
	uint32_t status = 0U;
	int64_t deadline;
	int err;

	if (line == NULL || len == 0U) {
		return -EINVAL;
	}

	syn_service_progress(&served0, &status0);

	err = syn_mpu_self_test(&r, K_SECONDS(1));
	if (err == -ENOTSUP) {
		snprintk(line, len, "mpu test: FAIL (guard region not programmed)");
		return err;
	} else if (err != 0) {
		snprintk(line, len, "mpu test: FAIL (self test error %d)", err);
		return err;
	}

	if (!r.read_ok) {
		snprintk(line, len, "mpu test: FAIL (read of 0x%08x did not complete)", r.target);
		return -EIO;
	}
	if (!r.thread_aborted) {
		snprintk(line, len, "mpu test: FAIL (write to 0x%08x was not stopped)", r.target);
		return -EIO;
	}
	if (!r.fault_fired) {
		snprintk(line, len,
			 "mpu test: FAIL (thread ended but no matching fault: faults %u -> %u, "
			 "address 0x%08x, expected 0x%08x)",
			 r.faults_before, r.faults_after, r.fault_address, r.target);
		return -EIO;
	}

	/* Both cores kept serving: CPU1 infers at 20 Hz and sends STATUS_REQ at 1 Hz. */
	deadline = k_uptime_get() + SYN_MPU_PROGRESS_WAIT_MS;
	for (;;) {
		syn_service_progress(&served, &status);
		if (served != served0 && status != status0) {
			break;
		}
		if (k_uptime_get() >= deadline) {
			snprintk(line, len,
				 "mpu test: FAIL (fault at 0x%08x, thread aborted, but serving "
				 "stalled: served +%u, status +%u in %u ms)",
				 r.fault_address, served - served0, status - status0,
				 SYN_MPU_PROGRESS_WAIT_MS);
			return -EIO;
		}
		k_msleep(SYN_MPU_PROGRESS_POLL_MS);
	}

	snprintk(line, len,
		 "mpu test: PASS (fault at 0x%08x, thread aborted, served +%u, status +%u)",
		 r.fault_address, served - served0, status - status0);
	return 0;
}
