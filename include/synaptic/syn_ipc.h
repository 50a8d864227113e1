/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, inter-core communication (CPU0 <-> CPU1): the
 * reference's syn_ipc.h over synaptic's transport (two SPSC rings in the
 * shared region, the doorbell, one dispatch thread per core). The same
 * calls on both cores; the build says which core this is.
 *
 * Implemented in Rust (rust/synaptic-zephyr, module ipc_capi, cargo
 * feature "ipc-capi"; needs CONFIG_SYNAPTIC_DOORBELL). The types
 * syn_ipc_type_t, syn_ipc_msg_t and syn_ipc_handler_t come from the
 * cbindgen-generated syn_capi.h; syn_ipc_msg_t is the 20-byte wire message
 * of the ABI (syn_abi_msg_t), asserted below.
 *
 *   int syn_ipc_init(void *shared_base, size_t shared_size);
 *     Attach this core to the shared region at shared_base (this core's
 *     address of it, e.g. syn_dt_shared_memory.base from syn_platform.h).
 *     CPU0 publishes the region: control block, both rings empty, exchange
 *     slots zeroed, cpu0_ready last; call it before releasing CPU1. CPU1
 *     checks what CPU0 published (magic, layout version, ring entries,
 *     shared_size, exchange-slot geometry) and sets cpu1_ready. Then the
 *     doorbell starts and the dispatch thread runs. The rings are this
 *     API's alone: an image that calls it does not also run the Rust
 *     service or client (synaptic_zephyr::service / ::client); with the
 *     client, whichever attaches second gets -EALREADY.
 *       0          attached
 *       -EINVAL    shared_base NULL or not 16-byte aligned, or shared_size
 *                  too small for the layout (or above 4 GiB); checked
 *                  before -EALREADY, as in the reference
 *       -EALREADY  a previous call succeeded (one region per boot), or
 *                  the doorbell is already taken by the Rust client
 *       -ENODEV    CPU1: CPU0 has not published the region, or it was
 *                  built with another layout (ring entries, slots, size);
 *                  either core: the doorbell device is not ready
 *
 *   int syn_ipc_send(const syn_ipc_msg_t *msg);
 *     Copy *msg onto this core's outgoing ring and ring the peer's
 *     doorbell. msg_id 0 gets a fresh id (nonzero, increasing); any other
 *     msg_id is kept (a response echoes its request's id). timestamp_us is
 *     set to this core's clock. The peer validates payload_offset and
 *     payload_len itself. Callable from any thread of this core, handlers
 *     included; not from an ISR.
 *       0          queued for the peer
 *       -ENODEV    syn_ipc_init has not succeeded
 *       -EINVAL    msg NULL, type not a syn_ipc_type_t, or priority not a
 *                  syn_priority_t (deviation: the reference sends a bad
 *                  priority, which the peer's dispatcher would drop)
 *       -EAGAIN    the ring is full (the peer has not drained it): retry
 *       -EBADMSG   the peer corrupted the ring's consumer index
 *
 *   int syn_ipc_receive(syn_ipc_msg_t *msg, uint32_t timeout_ms);
 *     Take the oldest message of a type that has no handler, waiting at
 *     most timeout_ms (0: do not wait). Messages are delivered in arrival
 *     order; each one once, to one receiver.
 *       0          *msg holds the message
 *       -ENODEV    syn_ipc_init has not succeeded
 *       -EINVAL    msg NULL
 *       -EAGAIN    nothing arrived in time (the reference's value, from
 *                  k_msgq_get; not -ETIMEDOUT)
 *
 *   int syn_ipc_register_handler(syn_ipc_type_t type,
 *                                syn_ipc_handler_t handler, void *ctx);
 *     From now on call handler(msg, ctx) for every message of type, on
 *     the dispatch thread (never in an ISR), instead of queueing it for
 *     syn_ipc_receive. msg points to a copy valid during the call. A second
 *     registration replaces the first; handler NULL routes the type back
 *     to the receive queue. Allowed before syn_ipc_init. A call already
 *     under way when the handler is replaced still finishes. A handler
 *     delays every message behind it: hand long work to another thread.
 *       0          registered (or unregistered)
 *       -EINVAL    type out of range
 *
 * Queueing: the receive queue holds 2 x CONFIG_SYNAPTIC_RING_ENTRIES
 * messages; when it is full the newest unhandled message is dropped (and
 * counted, syn_ipc_queue_dropped()), so handled types keep flowing.
 * Messages that fail to decode (type or priority out of range) are dropped
 * by the dispatcher, never handed to C.
 */
#ifndef SYNAPTIC_SYN_IPC_H_
#define SYNAPTIC_SYN_IPC_H_

#include <stddef.h>
#include <stdint.h>

#include <synaptic/syn_abi.h>
#include <synaptic/syn_capi.h>

#ifdef __cplusplus
extern "C" {
#endif

int syn_ipc_init(void *shared_base, size_t shared_size);
int syn_ipc_send(const syn_ipc_msg_t *msg);
int syn_ipc_receive(syn_ipc_msg_t *msg, uint32_t timeout_ms);
int syn_ipc_register_handler(syn_ipc_type_t type, syn_ipc_handler_t handler,
			     void *ctx);

/* synaptic extension: unhandled messages dropped because the receive queue
 * was full, since boot. */
uint32_t syn_ipc_queue_dropped(void);

#ifdef __cplusplus
}
#define SYN_IPC_ASSERT_(cond, what) static_assert(cond, what)
#else
#define SYN_IPC_ASSERT_(cond, what) _Static_assert(cond, what)
#endif

/* syn_ipc_msg_t is the wire message: the same bytes in the same places. */
SYN_IPC_ASSERT_(sizeof(syn_ipc_msg_t) == 20 &&
			sizeof(syn_ipc_msg_t) == sizeof(syn_abi_msg_t),
		"syn_ipc_msg_t is 20 bytes");
SYN_IPC_ASSERT_(offsetof(syn_ipc_msg_t, msg_id) == offsetof(syn_abi_msg_t, msg_id) &&
			offsetof(syn_ipc_msg_t, type) == offsetof(syn_abi_msg_t, msg_type) &&
			offsetof(syn_ipc_msg_t, priority) ==
				offsetof(syn_abi_msg_t, priority) &&
			offsetof(syn_ipc_msg_t, payload_len) ==
				offsetof(syn_abi_msg_t, payload_len) &&
			offsetof(syn_ipc_msg_t, payload_offset) ==
				offsetof(syn_abi_msg_t, payload_offset) &&
			offsetof(syn_ipc_msg_t, timestamp_us) ==
				offsetof(syn_abi_msg_t, timestamp_us) &&
			offsetof(syn_ipc_msg_t, status) == offsetof(syn_abi_msg_t, status),
		"syn_ipc_msg_t has syn_abi_msg_t's layout");
SYN_IPC_ASSERT_(offsetof(syn_ipc_msg_t, type) == 4 &&
			offsetof(syn_ipc_msg_t, payload_offset) == 8 &&
			offsetof(syn_ipc_msg_t, status) == 16,
		"syn_ipc_msg_t offsets");
SYN_IPC_ASSERT_(SYN_IPC_STATUS_RESP + 1 == 6, "six message types");

#endif /* SYNAPTIC_SYN_IPC_H_ */
