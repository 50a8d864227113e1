/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the two images of tests/ipc_c say to each other, in order:
 *
 * 1. ping-pong: CPU1 sends PINGS STATUS_REQ (msg_id 0, so syn_ipc_send
 *    numbers them 1, 2, ...; status = sequence number), one at a time;
 *    CPU0's handler answers each on its dispatch thread with STATUS_RESP
 *    (same msg_id, status = pong_status(seq)), which CPU1 has no handler
 *    for and so receives from its queue.
 * 2. go: CPU0 unregisters its STATUS_REQ handler and sends MODEL_LOAD.
 * 3. queue: CPU1 sends BURST MODEL_LOAD (status = i) and one STATUS_REQ
 *    (status = LATE_PING); CPU0 has no handler for either now, so its main
 *    thread receives all of them, in order, from its queue.
 * 4. handler: CPU0 sends BURST INFER_RESP (status = i), which CPU1's
 *    handler takes, then one MODEL_UNLOAD, which CPU1 receives from its
 *    queue after the handler has seen every INFER_RESP.
 * 5. report: CPU1 sends MODEL_UNLOAD with status = its error count,
 *    payload_offset = pongs that checked out, payload_len = INFER_RESPs its
 *    handler took (CPU1 has no console).
 */
#ifndef IPC_C_PROTOCOL_H_
#define IPC_C_PROTOCOL_H_

#include <errno.h>
#include <stdint.h>

#include <zephyr/kernel.h>

#include <synaptic/syn_ipc.h>

#define PINGS	  1000
#define BURST	  8
#define LATE_PING 0x5a5a

static inline int32_t pong_status(int32_t seq)
{
	return 2 * seq + 1;
}

/* Send @p msg, retrying for about a second while the ring is full. */
static inline int send_retrying(const syn_ipc_msg_t *msg)
{
	int ret;

	for (int attempt = 0; attempt < 1000; attempt++) {
		ret = syn_ipc_send(msg);
		if (ret != -EAGAIN) {
			return ret;
		}
		k_msleep(1);
	}
	return ret;
}

#endif /* IPC_C_PROTOCOL_H_ */
