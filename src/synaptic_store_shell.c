/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * `syn ota` and `syn store`: model updates streamed over the shell into the
 * flash model store (syn_model_ota.h), and what the store holds
 * (syn_store.h). scripts/syn_ota_send.py is the host's sender: begin,
 * then the container in base64 chunks, one `syn ota write` a line, each
 * answered before the next is sent, then finish and activate.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zephyr/shell/shell.h>
#include <zephyr/sys/base64.h>
#include <zephyr/sys/util.h>

#include <synaptic/syn_model_ota.h>
#include <synaptic/syn_store.h>

/* Decoded bytes one `syn ota write` may carry. */
#define SYN_OTA_CHUNK CONFIG_SYNAPTIC_STORE_SHELL_CHUNK

/* Bytes written since the last `syn ota begin` (the sender's progress). */
static size_t ota_received;

static const char *const ota_states[] = {
	[SYN_OTA_STATE_IDLE] = "idle",
	[SYN_OTA_STATE_DOWNLOADING] = "downloading",
	[SYN_OTA_STATE_VALIDATING] = "validating",
	[SYN_OTA_STATE_STAGING] = "staging",
	[SYN_OTA_STATE_READY] = "ready",
	[SYN_OTA_STATE_ERROR] = "error",
};

static const char *ota_state_name(void)
{
	syn_ota_state_t state = syn_ota_get_state();

	return (size_t)state < ARRAY_SIZE(ota_states) && ota_states[state] != NULL
		       ? ota_states[state]
		       : "unknown";
}

/* One answer line per command, which the sender waits for. */
static int ota_answer(const struct shell *sh, const char *what, int err)
{
	if (err < 0) {
		shell_error(sh, "ota: %s failed: %d (state %s)", what, err, ota_state_name());
	} else {
		shell_print(sh, "ota: ok %s, %zu bytes, state %s", what, ota_received,
			    ota_state_name());
	}
	return err;
}

static int cmd_ota_begin(const struct shell *sh, size_t argc, char **argv)
{
	char *end;
	unsigned long size;

	ARG_UNUSED(argc);
	size = strtoul(argv[2], &end, 0);
	if (*argv[2] == '\0' || *end != '\0' || size == 0) {
		shell_error(sh, "ota: begin failed: %d (size '%s' is not a positive number)",
			    -EINVAL, argv[2]);
		return -EINVAL;
	}
	ota_received = 0;
	return ota_answer(sh, "begin", syn_ota_begin(argv[1], (size_t)size));
}

static int cmd_ota_write(const struct shell *sh, size_t argc, char **argv)
{
	uint8_t chunk[SYN_OTA_CHUNK];
	size_t len = 0;
	int err;

	ARG_UNUSED(argc);
	err = base64_decode(chunk, sizeof(chunk), &len, (const uint8_t *)argv[1],
			    strlen(argv[1]));
	if (err != 0 || len == 0) {
		shell_error(sh, "ota: write failed: %d (not base64 of 1 to %d bytes)", -EINVAL,
			    SYN_OTA_CHUNK);
		return -EINVAL;
	}
	err = syn_ota_write_chunk(chunk, len);
	if (err == 0) {
		ota_received += len;
	}
	return ota_answer(sh, "write", err);
}

static int cmd_ota_finish(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return ota_answer(sh, "finish", syn_ota_finish());
}

static int cmd_ota_activate(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return ota_answer(sh, "activate", syn_ota_activate());
}

static int cmd_ota_confirm(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return ota_answer(sh, "confirm", syn_ota_confirm());
}

static int cmd_ota_rollback(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return ota_answer(sh, "rollback", syn_ota_rollback());
}

static int cmd_ota_state(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return ota_answer(sh, "state", 0);
}

static const char *slot_name(uint8_t state)
{
	switch (state) {
	case SYN_STORE_SLOT_EMPTY:
		return "empty";
	case SYN_STORE_SLOT_VALID:
		return "valid";
	case SYN_STORE_SLOT_STAGING:
		return "staging";
	default:
		return "unknown";
	}
}

static int cmd_store_list(const struct shell *sh, size_t argc, char **argv)
{
	struct syn_store_model model;
	int64_t generation = syn_store_generation();
	size_t i;
	int err = 0;

	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	if (generation < 0) {
		shell_error(sh, "store: cannot open: %d", (int)generation);
		return (int)generation;
	}
	for (i = 0; (err = syn_store_model_get(i, &model)) == 0; i++) {
		shell_print(sh,
			    "store: %s: active v%u, previous v%u; slot A %s (%u erases), "
			    "slot B %s (%u erases)",
			    model.name, model.active_version, model.previous_version,
			    slot_name(model.slot_state[0]), model.erases[0],
			    slot_name(model.slot_state[1]), model.erases[1]);
	}
	if (err != -ENOENT) {
		shell_error(sh, "store: model %zu: %d", i, err);
		return err;
	}
	shell_print(sh, "store: %zu models, registry generation %u", i, (unsigned)generation);
	return 0;
}

static int cmd_store_status(const struct shell *sh, size_t argc, char **argv)
{
	struct syn_store_park_stats parks;
	int err = cmd_store_list(sh, argc, argv);

	if (err != 0) {
		return err;
	}
	err = syn_store_park_stats(&parks);
	if (err == -ENOTSUP) {
		shell_print(sh, "store: writes do not park CPU1");
		return 0;
	}
	if (err != 0) {
		shell_error(sh, "store: park statistics: %d", err);
		return err;
	}
	shell_print(sh,
		    "store: writes park CPU1: %u parks, %u refused, longest wait %u us, "
		    "longest hold %u us, %u overruns",
		    parks.parks, parks.refused, parks.longest_ack_us, parks.longest_hold_us,
		    parks.overruns);
	return 0;
}

SHELL_STATIC_SUBCMD_SET_CREATE(syn_ota_cmds,
	SHELL_CMD_ARG(begin, NULL, "<model> <container bytes>: start an update", cmd_ota_begin,
		      3, 0),
	SHELL_CMD_ARG(write, NULL, "<base64>: the next chunk of the container", cmd_ota_write, 2,
		      0),
	SHELL_CMD_ARG(data, NULL, "<base64>: the same as write", cmd_ota_write, 2, 0),
	SHELL_CMD(finish, NULL, "Verify the whole container from flash", cmd_ota_finish),
	SHELL_CMD(done, NULL, "The same as finish", cmd_ota_finish),
	SHELL_CMD(activate, NULL, "Make the verified version the active one", cmd_ota_activate),
	SHELL_CMD(rollback, NULL, "Return to the previous version", cmd_ota_rollback),
	SHELL_CMD(confirm, NULL, "Confirm the active version (anti-rollback)", cmd_ota_confirm),
	SHELL_CMD(state, NULL, "Where the update stands", cmd_ota_state),
	SHELL_SUBCMD_SET_END);

SHELL_STATIC_SUBCMD_SET_CREATE(syn_store_cmds,
	SHELL_CMD(list, NULL, "Models in the flash store, their versions and slots",
		  cmd_store_list),
	SHELL_CMD(status, NULL, "The list, and how the store's writes park CPU1",
		  cmd_store_status),
	SHELL_SUBCMD_SET_END);

SHELL_SUBCMD_ADD((syn), ota, &syn_ota_cmds, "Model updates into the flash store", NULL, 0, 0);
SHELL_SUBCMD_ADD((syn), store, &syn_store_cmds, "Flash model store", NULL, 0, 0);
