/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The `syn` shell command group on CPU0 (Kconfig SYNAPTIC_SHELL,
 * src/synaptic_shell.c).
 *
 * The C side registers the commands; the Rust runtime (synaptic-zephyr)
 * implements every subcommand except `mpu test` with the syn_shell_*
 * functions below and prints through syn_shell_line(). Each returns 0 or a
 * negative errno, which becomes the command's exit status.
 */

#ifndef SYNAPTIC_SYN_SHELL_H_
#define SYNAPTIC_SYN_SHELL_H_

#include <stddef.h>
#include <zephyr/shell/shell.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Print one line on @p sh: @p text is @p len bytes, not NUL-terminated. */
void syn_shell_line(const struct shell *sh, const char *text, size_t len);

/* Implemented in Rust (synaptic-zephyr). */

/** `syn version`: module, ABI and build versions. */
int syn_shell_version(const struct shell *sh);
/** `syn mem stats`: tensor arena and scratch pool usage. */
int syn_shell_mem_stats(const struct shell *sh);
/** `syn model list`: registered models. */
int syn_shell_model_list(const struct shell *sh);
/** `syn npu caps`: what the NPU (or the stub NPU) offers. */
int syn_shell_npu_caps(const struct shell *sh);
/** `syn prof last`: the profiler's record of the last inference. */
int syn_shell_prof_last(const struct shell *sh);
/** `syn ipc status`: rings, CPU1 state and its round-trip statistics. */
int syn_shell_ipc_status(const struct shell *sh);
/** `syn sched stats`: placement policy, WRR weights, per-model predictions. */
int syn_shell_sched_stats(const struct shell *sh);
/**
 * `syn sched policy <name>`: ask the serving thread to place with the
 * policy called @p name (`npu`, `cpu`, `busy`, `random`, `eft`; @p name is
 * NUL-terminated). -EINVAL for an unknown name.
 */
int syn_shell_sched_policy(const struct shell *sh, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_SHELL_H_ */
