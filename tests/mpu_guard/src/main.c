/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * CPU0's MPU guard over CPU1's RAM (CONFIG_SYNAPTIC_MPU_PROTECT) on the
 * emulated Cortex-M33 of mps2/an521/cpu0: the region as the MPU holds it,
 * reads that still work, and writes that abort only the writing thread.
 */

#include <string.h>
#include <zephyr/kernel.h>
#include <zephyr/devicetree.h>
#include <zephyr/ztest.h>
#include <cmsis_core.h>
#include <zephyr/arch/arm/mpu/arm_mpu.h>
#include <synaptic/syn_mpu.h>

#define CPU1_RAM_NODE DT_CHOSEN(synaptic_cpu1_ram)
#define CPU1_RAM_BASE ((uint32_t)DT_REG_ADDR(CPU1_RAM_NODE))
#define CPU1_RAM_SIZE ((uint32_t)DT_REG_SIZE(CPU1_RAM_NODE))

/* What the overlay asks for: CPU0's secure lens of CPU1's RAM at 0x28058000. */
BUILD_ASSERT(CPU1_RAM_BASE == 0x38058000U && CPU1_RAM_SIZE == 64U * 1024U);

#define RBAR_AP(rbar) (((rbar) & MPU_RBAR_AP_Msk) >> MPU_RBAR_AP_Pos)
#define RBAR_SH(rbar) (((rbar) & MPU_RBAR_SH_Msk) >> MPU_RBAR_SH_Pos)
#define RLAR_ATTR(rlar) (((rlar) & MPU_RLAR_AttrIndx_Msk) >> MPU_RLAR_AttrIndx_Pos)

static uint32_t num_regions(void)
{
	return (MPU->TYPE & MPU_TYPE_DREGION_Msk) >> MPU_TYPE_DREGION_Pos;
}

static void read_region(uint32_t index, uint32_t *rbar, uint32_t *rlar)
{
	unsigned int key = irq_lock();

	MPU->RNR = index;
	*rbar = MPU->RBAR;
	*rlar = MPU->RLAR;
	irq_unlock(key);
}

ZTEST(mpu_guard, test_region_is_last_read_only_xn)
{
	struct syn_mpu_region r;
	uint32_t regions = num_regions();
	uint32_t rbar;
	uint32_t rlar;

	zassert_true(regions > 0U, "no MPU regions");
	zassert_ok(syn_mpu_guard_region(&r));
	zassert_equal(r.index, regions - 1U, "guard is region %u of %u", r.index, regions);
	zassert_equal(r.base, CPU1_RAM_BASE);
	zassert_equal(r.limit, CPU1_RAM_BASE + CPU1_RAM_SIZE - 1U);
	zassert_true(r.programmed, "guard region not programmed");

	/* The registers themselves, not the module's view of them. */
	read_region(regions - 1U, &rbar, &rlar);
	TC_PRINT("MPU: %u regions; guard region %u RBAR 0x%08x RLAR 0x%08x MAIR0 0x%08x\n",
		 regions, regions - 1U, rbar, rlar, MPU->MAIR0);
	zassert_equal(rbar, r.rbar);
	zassert_equal(rlar, r.rlar);
	zassert_equal(rbar & MPU_RBAR_BASE_Msk, CPU1_RAM_BASE, "base");
	zassert_equal(RBAR_AP(rbar), 0x3U, "AP must be read-only at every privilege level");
	zassert_equal(rbar & MPU_RBAR_XN_Msk, MPU_RBAR_XN_Msk, "must be execute-never");
	zassert_equal(RBAR_SH(rbar), 0U, "non-shareable");
	zassert_equal(rlar & MPU_RLAR_LIMIT_Msk, (CPU1_RAM_BASE + CPU1_RAM_SIZE - 1U) & MPU_RLAR_LIMIT_Msk,
		      "limit");
	zassert_equal(rlar & MPU_RLAR_EN_Msk, MPU_RLAR_EN_Msk, "enabled");
	zassert_equal(RLAR_ATTR(rlar), MPU_MAIR_INDEX_SRAM_NOCACHE, "attribute index");
	zassert_equal((MPU->MAIR0 >> (8U * MPU_MAIR_INDEX_SRAM_NOCACHE)) & 0xFFU,
		      MPU_MAIR_ATTR_SRAM_NOCACHE, "normal memory, non-cacheable");

	/* No region of Zephyr's overlaps it (PMSAv8 faults on overlap). */
	for (uint32_t i = 0U; i + 1U < regions; i++) {
		read_region(i, &rbar, &rlar);
		TC_PRINT("MPU: region %u RBAR 0x%08x RLAR 0x%08x\n", i, rbar, rlar);
		if ((rlar & MPU_RLAR_EN_Msk) == 0U) {
			continue;
		}
		uint32_t base = rbar & MPU_RBAR_BASE_Msk;
		uint32_t limit = (rlar & MPU_RLAR_LIMIT_Msk) | 0x1FU;

		zassert_false(base <= r.limit && r.base <= limit, "region %u overlaps the guard",
			      i);
	}
}

ZTEST(mpu_guard, test_reads_of_cpu1_ram_work)
{
	const volatile uint32_t *ram = (const volatile uint32_t *)(uintptr_t)CPU1_RAM_BASE;
	uint32_t words = CPU1_RAM_SIZE / sizeof(uint32_t);
	uint32_t sum = 0U;
	struct syn_fault_stats before;
	struct syn_fault_stats after;

	zassert_ok(syn_fault_stats(&before));
	/* Every word of the guarded range, from this (test) thread. */
	for (uint32_t i = 0U; i < words; i++) {
		sum += ram[i];
	}
	zassert_ok(syn_fault_stats(&after));
	TC_PRINT("read %u words of CPU1's RAM (sum 0x%08x)\n", words, sum);
	zassert_equal(after.threads_aborted, before.threads_aborted, "a read faulted");
	zassert_equal(ram[0], ram[0], "reads are stable");
}

static void check_self_test(void)
{
	struct syn_fault_stats before;
	struct syn_fault_stats after;
	struct syn_mpu_test_result r;
	struct syn_mpu_region region;
	uint32_t word_before;
	uint32_t word_after;

	word_before = *(const volatile uint32_t *)(uintptr_t)CPU1_RAM_BASE;
	zassert_ok(syn_fault_stats(&before));
	zassert_ok(syn_mpu_self_test(&r, K_SECONDS(1)));
	zassert_ok(syn_fault_stats(&after));
	word_after = *(const volatile uint32_t *)(uintptr_t)CPU1_RAM_BASE;

	TC_PRINT("self test: target 0x%08x read %d fault %d aborted %d address 0x%08x "
		 "faults %u -> %u, reason %u pc 0x%08x\n",
		 r.target, r.read_ok, r.fault_fired, r.thread_aborted, r.fault_address,
		 r.faults_before, r.faults_after, after.last_reason, after.last_pc);

	/* This thread is still running, and the test thread is gone. */
	zassert_true(r.read_ok, "the test thread's read of CPU1's RAM did not complete");
	zassert_true(r.thread_aborted, "the write went through: the thread set its marker");
	zassert_true(r.fault_fired, "no matching fault recorded");
	zassert_equal(r.target, CPU1_RAM_BASE);
	zassert_equal(r.fault_address, CPU1_RAM_BASE);
	zassert_equal(after.threads_aborted, before.threads_aborted + 1U, "one thread aborted");
	zassert_true(after.last_address_valid, "MMFAR not recorded");
	zassert_equal(after.last_address, CPU1_RAM_BASE, "MMFAR");
	/* ztest builds default to CONFIG_SIMPLIFIED_EXCEPTION_CODES. */
	zassert_equal(after.last_reason,
		      IS_ENABLED(CONFIG_SIMPLIFIED_EXCEPTION_CODES) ? K_ERR_CPU_EXCEPTION
								    : K_ERR_ARM_MEM_DATA_ACCESS,
		      "reason");
	zassert_not_equal(after.last_thread, k_current_get(), "the test thread was the one");
	zassert_equal(word_after, word_before, "CPU1's word changed");

	/* The guard outlives the fault and the context switches around it. */
	zassert_ok(syn_mpu_guard_region(&region));
	zassert_true(region.programmed, "guard region lost after the fault");
}

ZTEST(mpu_guard, test_write_aborts_only_that_thread)
{
	check_self_test();
}

/* The policy and the test thread are reusable: twice more in a row. */
ZTEST(mpu_guard, test_second_self_test)
{
	check_self_test();
	check_self_test();
}

ZTEST(mpu_guard, test_mpu_test_run_line)
{
	static const char pass[] = "mpu test: PASS (fault at 0x38058000, thread aborted, served +";
	char line[160];
	int err;

	err = syn_mpu_test_run(line, sizeof(line));
	TC_PRINT("%s\n", line);
	zassert_ok(err, "syn_mpu_test_run: %d", err);
	zassert_mem_equal(line, pass, sizeof(pass) - 1U);
	zassert_not_null(strstr(line, ", status +"));
	/* Truncation keeps the line NUL-terminated. */
	err = syn_mpu_test_run(line, 12);
	zassert_ok(err);
	zassert_equal(strlen(line), 11U);
}

ZTEST(mpu_guard, test_invalid_arguments)
{
	char line[4];

	zassert_equal(syn_mpu_guard_region(NULL), -EINVAL);
	zassert_equal(syn_fault_stats(NULL), -EINVAL);
	zassert_equal(syn_mpu_self_test(NULL, K_SECONDS(1)), -EINVAL);
	zassert_equal(syn_mpu_test_run(NULL, 10), -EINVAL);
	zassert_equal(syn_mpu_test_run(line, 0), -EINVAL);
}

ZTEST_SUITE(mpu_guard, NULL, NULL, NULL, NULL, NULL);
