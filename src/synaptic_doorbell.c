/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Doorbell to the peer core (include/synaptic/syn_doorbell.h).
 *
 * Zephyr's IPM and mbox calls are static inline syscall wrappers, so Rust
 * reaches them through these two functions. The chosen node
 * `synaptic,doorbell` names the hardware, and its compatible picks the
 * backend at build time:
 *
 * - "synaptic,doorbell-ipm": an IPM device and the peer's IPM id; on
 *   mps2/an521 the SSE-200 MHU, whose driver clears this core's interrupt
 *   status before it calls back.
 * - "synaptic,doorbell-mbox": two mbox channels named "tx" and "rx"; on the
 *   MCXN947 the inter-CPU MAILBOX ("nxp,mbox-mailbox"), signalled without
 *   data, whose driver clears the bits it read before it calls back.
 */

#include <errno.h>
#include <stdbool.h>
#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/sys/atomic.h>
#include <zephyr/sys/util.h>
#include <synaptic/syn_doorbell.h>

#define SYN_DOORBELL_NODE DT_CHOSEN(synaptic_doorbell)

/* Set once by the first syn_doorbell_init(). */
static atomic_t syn_doorbell_claimed;
static syn_doorbell_handler_t syn_doorbell_handler;

/* A device that was ready stays ready: after the first ring that found it
 * so, a ring skips the check (it is on every request's path).
 */
static bool syn_doorbell_ready;

#if DT_NODE_HAS_COMPAT(SYN_DOORBELL_NODE, synaptic_doorbell_ipm)

#include <zephyr/drivers/ipm.h>
#include <zephyr/irq.h>

static const struct device *const syn_doorbell_ipm =
	DEVICE_DT_GET(DT_PHANDLE(SYN_DOORBELL_NODE, ipm));

/* The IPM id that reaches the peer (for the MHU: the peer's CPU number). */
#define SYN_DOORBELL_REMOTE_ID DT_PROP(SYN_DOORBELL_NODE, remote_id)

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
	if (!syn_doorbell_ready) {
		if (!device_is_ready(syn_doorbell_ipm)) {
			return -ENODEV;
		}
		syn_doorbell_ready = true;
	}
	/* wait = 0: never block for the peer; no data, the rings carry it. */
	return ipm_send(syn_doorbell_ipm, 0, SYN_DOORBELL_REMOTE_ID, NULL, 0);
}

int syn_doorbell_set_enabled(bool enable)
{
	if (atomic_get(&syn_doorbell_claimed) == 0) {
		return -EINVAL;
	}
	/* Not ipm_set_enabled(): the MHU driver's is a no-op. The line of the
	 * IPM device's interrupt is masked instead; a ring while it is masked
	 * stays pending and is taken once it is enabled again.
	 */
	if (enable) {
		irq_enable(DT_IRQN(DT_PHANDLE(SYN_DOORBELL_NODE, ipm)));
	} else {
		irq_disable(DT_IRQN(DT_PHANDLE(SYN_DOORBELL_NODE, ipm)));
	}
	return 0;
}

#elif DT_NODE_HAS_COMPAT(SYN_DOORBELL_NODE, synaptic_doorbell_mbox)

#include <zephyr/drivers/mbox.h>

/* The channel that interrupts the peer, and the one the peer rings. */
static const struct mbox_dt_spec syn_doorbell_tx = MBOX_DT_SPEC_GET(SYN_DOORBELL_NODE, tx);
static const struct mbox_dt_spec syn_doorbell_rx = MBOX_DT_SPEC_GET(SYN_DOORBELL_NODE, rx);

static void syn_doorbell_isr(const struct device *dev, mbox_channel_id_t channel_id,
			     void *ctx, struct mbox_msg *data)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(channel_id);
	ARG_UNUSED(data);

	/* Only the rx channel is registered; it signals, it carries nothing. */
	syn_doorbell_handler(ctx);
}

int syn_doorbell_init(syn_doorbell_handler_t on_ring, void *ctx)
{
	int err;

	if (on_ring == NULL) {
		return -EINVAL;
	}
	if (!mbox_is_ready_dt(&syn_doorbell_rx) || !mbox_is_ready_dt(&syn_doorbell_tx)) {
		return -ENODEV;
	}
	if (!atomic_cas(&syn_doorbell_claimed, 0, 1)) {
		return -EALREADY;
	}

	/* The handler is in place before the driver can call back. */
	syn_doorbell_handler = on_ring;
	err = mbox_register_callback_dt(&syn_doorbell_rx, syn_doorbell_isr, ctx);
	if (err == 0) {
		err = mbox_set_enabled_dt(&syn_doorbell_rx, true);
	}
	if (err != 0) {
		(void)mbox_register_callback_dt(&syn_doorbell_rx, NULL, NULL);
		atomic_clear(&syn_doorbell_claimed);
		return err;
	}
	return 0;
}

int syn_doorbell_ring(void)
{
	if (!syn_doorbell_ready) {
		if (!mbox_is_ready_dt(&syn_doorbell_tx)) {
			return -ENODEV;
		}
		syn_doorbell_ready = true;
	}
	/* No message: signalling only, the rings carry the data. */
	return mbox_send_dt(&syn_doorbell_tx, NULL);
}

int syn_doorbell_set_enabled(bool enable)
{
	if (atomic_get(&syn_doorbell_claimed) == 0) {
		return -EINVAL;
	}
	return mbox_set_enabled_dt(&syn_doorbell_rx, enable);
}

#else
#error "chosen synaptic,doorbell needs compatible \"synaptic,doorbell-ipm\" or \"synaptic,doorbell-mbox\""
#endif
