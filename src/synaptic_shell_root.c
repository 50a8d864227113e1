/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The `syn` shell command. Its subcommands come from the files of the
 * features built in (SHELL_SUBCMD_ADD((syn), ...)): the service's in
 * src/synaptic_shell.c (CONFIG_SYNAPTIC_SHELL), the model store's in
 * src/synaptic_store_shell.c (CONFIG_SYNAPTIC_STORE_SHELL).
 */

#include <zephyr/shell/shell.h>

SHELL_SUBCMD_SET_CREATE(syn_cmds, (syn));
SHELL_CMD_REGISTER(syn, &syn_cmds, "synaptic inference service", NULL);
