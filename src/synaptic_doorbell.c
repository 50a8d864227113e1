/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Doorbell to the peer core over Zephyr's IPM API (include/synaptic/syn_doorbell.h).
 *
 * The IPM calls are static inline syscall wrappers, so Rust reaches them
 * through these two functions. The device and the peer's IPM id come from
 * the chosen node `synaptic,doorbell` ("synaptic,doorbell-ipm"); on
 * mps2/an521 that is the SSE-200 MHU, whose driver clears this core's
 * interrupt status before it calls back. Another backend (the MCXN947
 * MAILBOX through the mbox API) would be a second compatible behind the same
 * two functions.
 */

#include <errno.h>
#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/ipm.h>
#include <zephyr/sys/atomic.h>
#include <zephyr/sys/util.h>
#include <synaptic/syn_doorbell.h>

#define SYN_DOORBELL_NODE DT_CHOSEN(synaptic_doorbell)

BUILD_ASSERT(DT_NODE_HAS_COMPAT(SYN_DOORBELL_NODE, synaptic_doorbell_ipm),
	     "chosen synaptic,doorbell must have compatible \"synaptic,doorbell-ipm\"");

static const struct device *const syn_doorbell_ipm =
	DEVICE_DT_GET(DT_PHANDLE(SYN_DOORBELL_NODE, ipm));

/* The IPM id that reaches the peer (for the MHU: the peer's CPU number). */
#define SYN_DOORBELL_REMOTE_ID DT_PROP(SYN_DOORBELL_NODE, remote_id)

/* Set once by the first syn_doorbell_init(). */
static atomic_t syn_doorbell_claimed;
static syn_doorbell_handler_t syn_doorbell_handler;

static void syn_doorbell_isr(const struct device *dev, void *ctx, uint32_t id,
			     volatile void *data)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(id);
	ARG_UNUSED(data);

	/* Any interrupt of this device is a doorbell: a spurious one costs the
	 * woken thread an empty drain, never a message.
	 */
	syn_doorbell_handler(ctx);
}

int syn_doorbell_init(syn_doorbell_handler_t on_ring, void *ctx)
{
	int err;

	if (on_ring == NULL) {
		return -EINVAL;
	}
	if (!device_is_ready(syn_doorbell_ipm)) {
		return -ENODEV;
	}
	if (!atomic_cas(&syn_doorbell_claimed, 0, 1)) {
		return -EALREADY;
	}

	/* The handler is in place before the driver can call back. */
	syn_doorbell_handler = on_ring;
	ipm_register_callback(syn_doorbell_ipm, syn_doorbell_isr, ctx);

	err = ipm_set_enabled(syn_doorbell_ipm, 1);
	if (err != 0) {
		ipm_register_callback(syn_doorbell_ipm, NULL, NULL);
		atomic_clear(&syn_doorbell_claimed);
		return err;
	}
	return 0;
}

int syn_doorbell_ring(void)
{
	if (!device_is_ready(syn_doorbell_ipm)) {
		return -ENODEV;
	}
	/* wait = 0: never block for the peer; no data, the rings carry it. */
	return ipm_send(syn_doorbell_ipm, 0, SYN_DOORBELL_REMOTE_ID, NULL, 0);
}
