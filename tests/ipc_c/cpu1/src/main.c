/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * tests/ipc_c, CPU1: attaches to the region CPU0 published, pings, sends
 * the queue burst, takes CPU0's INFER_RESP in a handler and reports its
 * counts over the IPC (no console on this core). See ipc_c_protocol.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <zephyr/kernel.h>

#include <synaptic/syn_ipc.h>
#include <synaptic/syn_platform.h>

#include "ipc_c_protocol.h"

FUNC_NORETURN void rust_panic_wrap(void)
{
	k_panic();
	CODE_UNREACHABLE;
}

static int errors;
static k_tid_t main_thread;

/* What the INFER_RESP handler saw (written on the dispatch thread). */
static atomic_t handled;
static atomic_t handler_errors;

static void on_infer_resp(const syn_ipc_msg_t *msg, void *ctx)
{
	atomic_t *count = ctx;

	if (k_current_get() == main_thread || msg->type != SYN_IPC_INFER_RESP ||
	    msg->status != (int32_t)atomic_get(count)) {
		atomic_inc(&handler_errors);
	}
	atomic_inc(count);
}

static int attach(void)
{
	int ret;

	/* CPU0 publishes before it releases this core; retry briefly anyway. */
	for (int attempt = 0; attempt < 100; attempt++) {
		ret = syn_ipc_init((void *)syn_dt_shared_memory.base, syn_dt_shared_memory.size);
		if (ret != -ENODEV) {
			return ret;
		}
		k_msleep(10);
	}
	return ret;
}

static uint32_t ping_pong(void)
{
	uint32_t good = 0;
	syn_ipc_msg_t msg;

	for (int32_t seq = 0; seq < PINGS; seq++) {
		msg = (syn_ipc_msg_t){.type = SYN_IPC_STATUS_REQ, .priority = 1, .status = seq};
		if (send_retrying(&msg) != 0) {
			errors++;
			continue;
		}
		if (syn_ipc_receive(&msg, 2000) != 0) {
			errors++;
			continue;
		}
		if (msg.type == SYN_IPC_STATUS_RESP && msg.msg_id == (uint32_t)seq + 1u &&
		    msg.status == pong_status(seq)) {
			good++;
		} else {
			errors++;
		}
	}
	return good;
}

int main(void)
{
	syn_ipc_msg_t msg;

	main_thread = k_current_get();
	if (syn_ipc_register_handler(SYN_IPC_INFER_RESP, on_infer_resp, &handled) != 0) {
		errors++;
	}
	if (attach() != 0) {
		/* Nothing to report through: CPU0 times out and fails. */
		return 0;
	}

	uint32_t pongs = ping_pong();

	/* Phase 2: CPU0's go. */
	if (syn_ipc_receive(&msg, 5000) != 0 || msg.type != SYN_IPC_MODEL_LOAD) {
		errors++;
	}

	/* Phase 3: the burst CPU0 receives from its queue. */
	for (int32_t i = 0; i < BURST; i++) {
		msg = (syn_ipc_msg_t){.type = SYN_IPC_MODEL_LOAD, .priority = 0, .status = i};
		if (send_retrying(&msg) != 0) {
			errors++;
		}
	}
	msg = (syn_ipc_msg_t){.type = SYN_IPC_STATUS_REQ, .priority = 2, .status = LATE_PING};
	if (send_retrying(&msg) != 0) {
		errors++;
	}

	/* Phase 4: the MODEL_UNLOAD behind CPU0's INFER_RESPs reaches the queue
	 * after the handler took each of them; none of them is queued. */
	if (syn_ipc_receive(&msg, 5000) != 0 || msg.type != SYN_IPC_MODEL_UNLOAD) {
		errors++;
	}
	uint32_t took = (uint32_t)atomic_get(&handled);

	if (took != BURST || atomic_get(&handler_errors) != 0 ||
	    syn_ipc_receive(&msg, 0) != -EAGAIN) {
		errors++;
	}

	/* Phase 5: the report. */
	msg = (syn_ipc_msg_t){
		.type = SYN_IPC_MODEL_UNLOAD,
		.priority = 1,
		.payload_len = (uint16_t)took,
		.payload_offset = pongs,
		.status = errors,
	};
	(void)send_retrying(&msg);
	return 0;
}
