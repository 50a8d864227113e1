/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the Rust suite store_shell needs of Zephyr's shell and base64
 * (macros and variadic functions the Rust bindings do not reach): run one
 * command on the dummy backend and collect what it printed.
 */

#include <errno.h>
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/shell/shell.h>
#include <zephyr/shell/shell_dummy.h>
#include <zephyr/sys/base64.h>
#include <zephyr/sys/util.h>

int store_shell_run(const char *cmd, char *out, size_t out_len);
int store_base64(char *dst, size_t dst_len, const uint8_t *src, size_t src_len);

/* Run @p cmd; its output (NUL-terminated, cut to fit) in @p out. */
int store_shell_run(const char *cmd, char *out, size_t out_len)
{
	const struct shell *sh = shell_backend_dummy_get_ptr();
	const char *text;
	size_t size = 0;
	int ret;

	/* The shell thread initialises the backend; ztest's thread is
	 * cooperative, so let it run until then (20 s at most).
	 */
	for (int i = 0; i < 20000 && !shell_ready(sh); i++) {
		k_msleep(1);
	}
	if (!shell_ready(sh)) {
		return -ENODEV;
	}
	shell_backend_dummy_clear_output(sh);
	ret = shell_execute_cmd(sh, cmd);
	text = shell_backend_dummy_get_output(sh, &size);
	if (out_len > 0) {
		size = MIN(size, out_len - 1);
		memcpy(out, text, size);
		out[size] = '\0';
	}
	return ret;
}

/* Base64 of @p src in @p dst (NUL-terminated): its length, or -errno. */
int store_base64(char *dst, size_t dst_len, const uint8_t *src, size_t src_len)
{
	size_t olen = 0;
	int err = base64_encode((uint8_t *)dst, dst_len, &olen, src, src_len);

	return err == 0 ? (int)olen : err;
}
