/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Doorbell to the peer core (Kconfig SYNAPTIC_DOORBELL, chosen node
 * `synaptic,doorbell`).
 *
 * Ringing interrupts the peer core; the peer ringing interrupts this one and
 * calls the handler given to syn_doorbell_init() in interrupt context. A
 * doorbell carries no data and may coalesce: the handler should only wake a
 * thread (give a semaphore) that then drains the ring completely.
 *
 * Used by rust/synaptic-zephyr (module doorbell); C applications may call it
 * directly.
 */

#ifndef SYNAPTIC_SYN_DOORBELL_H_
#define SYNAPTIC_SYN_DOORBELL_H_

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Called in interrupt context each time the peer rings. Must not block. */
typedef void (*syn_doorbell_handler_t)(void *ctx);

/**
 * Start listening for the peer's doorbell.
 *
 * Succeeds once per boot: the handler and its context stay registered.
 *
 * @param on_ring Handler called (in an ISR) when the peer rings; not NULL.
 * @param ctx     Passed to @p on_ring unchanged; must outlive the program.
 *
 * @retval 0         listening.
 * @retval -EINVAL   @p on_ring is NULL.
 * @retval -ENODEV   the doorbell device is not ready.
 * @retval -EALREADY already initialised.
 * @retval <0        any other negative errno from the driver.
 */
int syn_doorbell_init(syn_doorbell_handler_t on_ring, void *ctx);

/**
 * Ring the peer. Does not block (neither the IPM nor the mbox backend waits
 * for the peer).
 *
 * @retval 0       rung.
 * @retval -ENODEV the doorbell device is not ready.
 * @retval <0      any other negative errno from the driver.
 */
int syn_doorbell_ring(void);

/**
 * Stop (false) or resume (true) taking the peer's doorbell interrupt, for
 * a core that polls its ring instead while the peer floods it. A ring
 * while stopped is not lost: it is taken once resumed (IPM: the interrupt
 * line stays pending; mbox: the channel's event).
 *
 * @retval 0       done.
 * @retval -EINVAL syn_doorbell_init() has not succeeded.
 * @retval <0      any other negative errno from the driver.
 */
int syn_doorbell_set_enabled(bool enable);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_DOORBELL_H_ */
