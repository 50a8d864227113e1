/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the flash model store holds (CONFIG_SYNAPTIC_STORE; implemented in
 * Rust, synaptic-zephyr's `store` feature), for C callers such as the
 * `syn store list` shell command. Updates go through syn_model_ota.h.
 */

#ifndef SYNAPTIC_SYN_STORE_H_
#define SYNAPTIC_SYN_STORE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest model name, without its NUL. */
#define SYN_STORE_NAME_MAX 31

/** What one of a model's two slots (A, B) holds. */
typedef enum {
	/** Nothing usable (erased, or never written). */
	SYN_STORE_SLOT_EMPTY = 0,
	/** A complete container whose CRCs were checked after writing. */
	SYN_STORE_SLOT_VALID = 1,
	/** Being written by an update: never loaded. */
	SYN_STORE_SLOT_STAGING = 2,
} syn_store_slot_state_t;

/** One model the store's registry knows. Versions are 0 when absent. */
struct syn_store_model {
	/** NUL-terminated. */
	char name[SYN_STORE_NAME_MAX + 1];
	/** The version loads use. */
	uint32_t active_version;
	/** The version a rollback returns to. */
	uint32_t previous_version;
	/** Erases of slot A and slot B (wear). */
	uint32_t erases[2];
	/** syn_store_slot_state_t of slot A and slot B. */
	uint8_t slot_state[2];
	/** The anti-rollback security counter: the lowest version the store
	 *  installs, activates or rolls back to (syn_ota_confirm() raises it). */
	uint32_t security_counter;
};

/**
 * The @p index-th model of the registry (0 first), opening the store on
 * first use. Returns 0, -ENOENT past the last model, -EINVAL for a NULL
 * @p model, -EIO when the store cannot be opened.
 */
int syn_store_model_get(size_t index, struct syn_store_model *model);

/** The registry's generation (commits since the store was blank), or a
 * negative errno as syn_store_model_get(). */
int64_t syn_store_generation(void);

/**
 * Forget what was read of the store, so that the next call reads it from
 * flash again (after something other than this API wrote the partition,
 * e.g. a test that erases it). Returns 0, or -EBUSY while an update is
 * begun and not activated (syn_model_ota.h); a failed update is dropped.
 */
int syn_store_reload(void);

/** How the store's writes parked CPU1 (CONFIG_SYNAPTIC_STORE_PARK_CPU1, or
 *  a store in CPU1's flash bank). */
struct syn_store_park_stats {
	/** Writes and erases done with CPU1 parked. */
	uint32_t parks;
	/** Writes and erases refused (-EBUSY): CPU1 not attached or silent. */
	uint32_t refused;
	/** Longest wait for CPU1's acknowledgement, microseconds. */
	uint32_t longest_ack_us;
	/** Longest time CPU1 was held, microseconds. */
	uint32_t longest_hold_us;
	/** Writes that ended after CPU1's hold bound (CONFIG_SYNAPTIC_PARK_HOLD_MS)
	 *  may have let it run again: a flash operation longer than half the
	 *  bound. Zero on a sound configuration. */
	uint32_t overruns;
};

/**
 * The store's park statistics into @p stats: 0, -EINVAL for a NULL
 * @p stats, -ENOTSUP when its writes do not park CPU1 (or the build has
 * no doorbell), or a negative errno as syn_store_model_get() when the
 * store cannot be opened.
 */
int syn_store_park_stats(struct syn_store_park_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_STORE_H_ */
