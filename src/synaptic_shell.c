/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The `syn` shell command group (include/synaptic/syn_shell.h). Zephyr's
 * command tables are C macros, so they live here; the commands themselves
 * are Rust functions, except `syn mpu test` (src/synaptic_mpu.c).
 */

#include <errno.h>
#include <limits.h>
#include <zephyr/kernel.h>
#include <zephyr/shell/shell.h>
#include <synaptic/syn_shell.h>
#include <synaptic/syn_mpu.h>

/* Longest line syn_mpu_test_run() writes, with room to spare. */
#define SYN_SHELL_MPU_LINE 160

void syn_shell_line(const struct shell *sh, const char *text, size_t len)
{
	if (sh == NULL || (text == NULL && len != 0U)) {
		return;
	}
	shell_print(sh, "%.*s", (int)MIN(len, (size_t)INT_MAX), text != NULL ? text : "");
}

static int cmd_syn_version(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_version(sh);
}

static int cmd_syn_mem_stats(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_mem_stats(sh);
}

static int cmd_syn_model_list(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_model_list(sh);
}

static int cmd_syn_npu_caps(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_npu_caps(sh);
}

static int cmd_syn_prof_last(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_prof_last(sh);
}

static int cmd_syn_ipc_status(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_ipc_status(sh);
}

static int cmd_syn_sched_stats(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return syn_shell_sched_stats(sh);
}

static int cmd_syn_sched_policy(const struct shell *sh, size_t argc, char **argv)
{
	/* SHELL_CMD_ARG below makes the shell pass exactly one argument. */
	if (argc != 2) {
		return -EINVAL;
	}
	return syn_shell_sched_policy(sh, argv[1]);
}

static int cmd_syn_mpu_test(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
#if defined(CONFIG_SYNAPTIC_MPU_PROTECT)
	char line[SYN_SHELL_MPU_LINE];
	int err = syn_mpu_test_run(line, sizeof(line));

	if (err == 0) {
		shell_print(sh, "%s", line);
	} else {
		shell_error(sh, "%s", line);
	}
	return err;
#else
	shell_error(sh, "mpu test: disabled (CONFIG_SYNAPTIC_MPU_PROTECT is off)");
	return -ENOTSUP;
#endif
}

SHELL_STATIC_SUBCMD_SET_CREATE(syn_mem_cmds,
	SHELL_CMD(stats, NULL, "Tensor arena and scratch pool usage", cmd_syn_mem_stats),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_model_cmds,
	SHELL_CMD(list, NULL, "Registered models", cmd_syn_model_list),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_npu_cmds,
	SHELL_CMD(caps, NULL, "NPU capabilities", cmd_syn_npu_caps),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_prof_cmds,
	SHELL_CMD(last, NULL, "Profile of the last inference", cmd_syn_prof_last),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_ipc_cmds,
	SHELL_CMD(status, NULL, "Rings, CPU1 state and round-trip statistics",
		  cmd_syn_ipc_status),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_sched_cmds,
	SHELL_CMD(stats, NULL, "Placement policy, WRR weights, service-time predictions",
		  cmd_syn_sched_stats),
	SHELL_CMD_ARG(policy, NULL, "Switch the placement policy: npu, cpu, busy, random, eft",
		      cmd_syn_sched_policy, 2, 0),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_mpu_cmds,
	SHELL_CMD(test, NULL,
		  "Fault a test thread on CPU1's RAM; check it alone is aborted and both "
		  "cores keep serving",
		  cmd_syn_mpu_test),
	SHELL_SUBCMD_SET_END);

/* Subcommands of `syn` (src/synaptic_shell_root.c). */
SHELL_SUBCMD_ADD((syn), version, NULL, "synaptic and ABI versions", cmd_syn_version, 1, 0);
SHELL_SUBCMD_ADD((syn), mem, &syn_mem_cmds, "Memory", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), model, &syn_model_cmds, "Models", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), npu, &syn_npu_cmds, "NPU", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), prof, &syn_prof_cmds, "Profiler", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), ipc, &syn_ipc_cmds, "Inter-core transport", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), sched, &syn_sched_cmds, "Scheduler: placement and arbitration", NULL,
		 0, 0);
SHELL_SUBCMD_ADD((syn), mpu, &syn_mpu_cmds, "MPU guard over CPU1's RAM", NULL, 0, 0);
