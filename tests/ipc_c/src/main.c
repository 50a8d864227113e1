/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * tests/ipc_c, CPU0: the syn_ipc.h C API between two emulated cores, both
 * images written in C (ipc_c_protocol.h says what is exchanged). Checks the
 * argument errors, publishes the region, releases CPU1, answers its pings
 * from a handler on the dispatch thread, then checks that unhandled types
 * reach the receive queue in order and reads CPU1's report.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>
#include <zephyr/sys/sys_io.h>

#include <synaptic/syn_ipc.h>
#include <synaptic/syn_platform.h>

#include "ipc_c_protocol.h"

/* The SSE-200 system control registers that start CPU1 (secure lens). */
#define SSE200_INITSVTOR1 0x50021114u
#define SSE200_CPU_WAIT	  0x50021118u

FUNC_NORETURN void rust_panic_wrap(void)
{
	k_panic();
	CODE_UNREACHABLE;
}

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printk("ipc_c: check failed: " __VA_ARGS__);           \
			printk("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

/* What CPU0's STATUS_REQ handler saw (written on the dispatch thread). */
static atomic_t pings_answered;
static atomic_t ping_errors;
static atomic_t handler_on_main;
static k_tid_t main_thread;

static void on_status_req(const syn_ipc_msg_t *msg, void *ctx)
{
	int *expected = ctx;

	if (k_current_get() == main_thread) {
		atomic_inc(&handler_on_main);
	}
	if (msg->type != SYN_IPC_STATUS_REQ || msg->status != *expected ||
	    msg->msg_id != (uint32_t)*expected + 1u) {
		atomic_inc(&ping_errors);
	}
	*expected = msg->status + 1;

	syn_ipc_msg_t pong = {
		.msg_id = msg->msg_id,
		.type = SYN_IPC_STATUS_RESP,
		.priority = msg->priority,
		.status = pong_status(msg->status),
	};
	if (send_retrying(&pong) != 0) {
		atomic_inc(&ping_errors);
	}
	atomic_inc(&pings_answered);
}

static void check_arguments_before_init(void)
{
	syn_ipc_msg_t msg = {.type = SYN_IPC_STATUS_REQ, .priority = 1};
	int send = syn_ipc_send(&msg);
	int receive = syn_ipc_receive(&msg, 0);
	/* The first type byte that names no message type. */
	int bad_type = syn_ipc_register_handler((syn_ipc_type_t)SYN_ABI_MSG_TYPE_COUNT,
						on_status_req, NULL);
	int null_base = syn_ipc_init(NULL, syn_dt_shared_memory.size);
	int small = syn_ipc_init((void *)syn_dt_shared_memory.base, 1024);

	printk("ipc_c: before init: send %d, receive %d, register type %d %d, "
	       "init NULL %d, init 1 KiB %d\n",
	       send, receive, SYN_ABI_MSG_TYPE_COUNT, bad_type, null_base, small);
	CHECK(send == -ENODEV && receive == -ENODEV, "not initialised");
	CHECK(bad_type == -EINVAL && null_base == -EINVAL && small == -EINVAL,
	      "bad arguments");
}

static bool release_cpu1(void)
{
	const uint32_t *vectors = (const uint32_t *)syn_dt_cpu1_image.local_address;
	uint32_t sp = vectors[0];
	uint32_t reset = vectors[1];

	printk("ipc_c: CPU1 vector table: initial SP 0x%08x, reset 0x%08x\n", sp, reset);
	if (!syn_dt_cpu1_image.present || (reset & 1u) == 0u || sp == 0u || sp == UINT32_MAX) {
		return false;
	}
	sys_write32(syn_dt_cpu1_image.boot_address, SSE200_INITSVTOR1);
	sys_write32(0, SSE200_CPU_WAIT);
	return true;
}

static bool wait_for_pings(void)
{
	for (int ms = 0; ms < 60000; ms += 10) {
		if (atomic_get(&pings_answered) >= PINGS) {
			return true;
		}
		k_msleep(10);
	}
	return false;
}

/* Phase 3: every unhandled message, in order, from the queue. */
static void check_queue(void)
{
	syn_ipc_msg_t msg;
	int in_order = 0;

	for (int i = 0; i < BURST; i++) {
		int ret = syn_ipc_receive(&msg, 5000);

		if (ret == 0 && msg.type == SYN_IPC_MODEL_LOAD && msg.status == i) {
			in_order++;
		}
	}
	int late = syn_ipc_receive(&msg, 5000);
	bool late_ok = late == 0 && msg.type == SYN_IPC_STATUS_REQ && msg.status == LATE_PING;

	printk("ipc_c: queue: %d/%d MODEL_LOAD in order, STATUS_REQ after unregistering %s\n",
	       in_order, BURST, late_ok ? "queued" : "missing");
	CHECK(in_order == BURST && late_ok, "queue");
}

int main(void)
{
	static int next_ping;
	syn_ipc_msg_t msg = {.priority = 1};

	main_thread = k_current_get();
	check_arguments_before_init();

	CHECK(syn_ipc_register_handler(SYN_IPC_STATUS_REQ, on_status_req, &next_ping) == 0,
	      "register");
	int init = syn_ipc_init((void *)syn_dt_shared_memory.base, syn_dt_shared_memory.size);
	int again = syn_ipc_init((void *)syn_dt_shared_memory.base, syn_dt_shared_memory.size);
	int small = syn_ipc_init((void *)syn_dt_shared_memory.base, 1024);

	printk("ipc_c: init %d, second init %d, then with 1 KiB %d\n", init, again, small);
	CHECK(init == 0 && again == -EALREADY && small == -EINVAL, "init");
	if (init != 0 || !release_cpu1()) {
		printk("ipc_c: FAIL (no transport or no CPU1 image)\n");
		return 0;
	}

	bool answered = wait_for_pings();

	printk("ipc_c: ping-pong %d/%d answered by the handler, errors %d, on main thread %d\n",
	       (int)atomic_get(&pings_answered), PINGS, (int)atomic_get(&ping_errors),
	       (int)atomic_get(&handler_on_main));
	CHECK(answered && atomic_get(&ping_errors) == 0 && atomic_get(&handler_on_main) == 0,
	      "ping-pong");
	CHECK(syn_ipc_receive(&msg, 0) == -EAGAIN, "no handled message in the queue");

	/* Phase 2: STATUS_REQ goes to the queue from now on; tell CPU1. */
	CHECK(syn_ipc_register_handler(SYN_IPC_STATUS_REQ, NULL, NULL) == 0, "unregister");
	msg = (syn_ipc_msg_t){.type = SYN_IPC_MODEL_LOAD, .priority = 1};
	CHECK(send_retrying(&msg) == 0, "go");

	check_queue();

	/* Phase 4: INFER_RESP for CPU1's handler, then MODEL_UNLOAD for its queue. */
	for (int i = 0; i < BURST; i++) {
		msg = (syn_ipc_msg_t){.type = SYN_IPC_INFER_RESP, .priority = 2, .status = i};
		CHECK(send_retrying(&msg) == 0, "INFER_RESP %d", i);
	}
	msg = (syn_ipc_msg_t){.type = SYN_IPC_MODEL_UNLOAD, .priority = 0};
	CHECK(send_retrying(&msg) == 0, "MODEL_UNLOAD");
	msg.priority = 7;
	CHECK(syn_ipc_send(&msg) == -EINVAL, "bad priority refused");

	/* Phase 5: CPU1's report. */
	int report = syn_ipc_receive(&msg, 10000);

	if (report != 0 || msg.type != SYN_IPC_MODEL_UNLOAD) {
		printk("ipc_c: no report from CPU1 (%d)\n", report);
		failures++;
	} else {
		printk("ipc_c: CPU1 report: pongs %u/%d, handled INFER_RESP %u/%d, errors %d\n",
		       (unsigned int)msg.payload_offset, PINGS, (unsigned int)msg.payload_len,
		       BURST, (int)msg.status);
		CHECK(msg.payload_offset == PINGS && msg.payload_len == BURST && msg.status == 0,
		      "CPU1's checks");
	}
	CHECK(syn_ipc_receive(&msg, 0) == -EAGAIN, "queue empty at the end");
	CHECK(syn_ipc_queue_dropped() == 0, "nothing dropped");

	if (failures == 0) {
		printk("ipc_c: PASS\n");
	} else {
		printk("ipc_c: FAIL (%d checks)\n", failures);
	}
	return 0;
}
