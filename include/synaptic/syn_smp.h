/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file syn_smp.h
 * @brief The model store's MCUmgr command group (CONFIG_SYNAPTIC_STORE_SMP):
 *        its command ids and the rc values of its SMP version 2 group
 *        errors.
 *
 * The group (id CONFIG_SYNAPTIC_STORE_SMP_GROUP_ID, 64 by default, the first
 * user group) streams model containers into the flash model store over any
 * MCUmgr transport, as img_mgmt streams firmware images. A refusal is
 * answered as an SMP version 2 group error, `{"err": {"group": <id>,
 * "rc": <syn_smp_rc>}}`, one rc per reason, so a client tells an unsigned
 * container from an untrusted signer, a tampered one or a downgrade without
 * reading a log. scripts/smp_model.py is the host's client.
 */
#ifndef SYNAPTIC_SYN_SMP_H_
#define SYNAPTIC_SYN_SMP_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Command ids of the group. */
enum syn_smp_command {
	/**
	 * Read: `{"models": [{"name", "active", "previous", "security",
	 * "slots": [A, B]}...], "generation", "state", "off"}` (slots as
	 * syn_store_slot_state_t, the update's state as a word, the bytes it
	 * has taken), and while an upload this group began is in progress its
	 * `"name"`, `"len"` and `"sha"`.
	 */
	SYN_SMP_ID_STATE = 0,
	/**
	 * Write: `{"name", "off", "data"}`, and with `off` 0 also `"len"`
	 * (container bytes) and `"sha"` (its SHA-256, 32 bytes): `{"off"}`,
	 * the offset the device expects next; the last chunk's answer also
	 * carries `"rc": 0` once the store has verified the container from
	 * flash (syn_ota_finish()).
	 */
	SYN_SMP_ID_UPLOAD = 1,
	/** Write, `{}` or `{"name"}`: syn_ota_activate(); `{"name", "active"}`. */
	SYN_SMP_ID_ACTIVATE = 2,
	/** Write, `{}` or `{"name"}`: syn_ota_confirm(); `{"name", "active"}`. */
	SYN_SMP_ID_CONFIRM = 3,
	/** Write, `{}` or `{"name"}`: syn_ota_rollback(); `{"name", "active"}`. */
	SYN_SMP_ID_ROLLBACK = 4,
};

/**
 * The rc of the group's errors: one per refusal. Each names the errno of
 * syn_model_ota.h it stands for.
 */
enum syn_smp_rc {
	/** No error. */
	SYN_SMP_RC_OK = 0,
	/** An errno this table does not know. */
	SYN_SMP_RC_UNKNOWN = 1,
	/** Unsigned container where signatures are required (-ENOMSG). */
	SYN_SMP_RC_UNSIGNED = 2,
	/** Signed by a key the device does not trust (-EACCES). */
	SYN_SMP_RC_UNTRUSTED_KEY = 3,
	/**
	 * Not a container, or its CRC, digest or signature does not match
	 * its bytes: changed after signing (-EILSEQ).
	 */
	SYN_SMP_RC_BAD_CONTAINER = 4,
	/** Truncated or padded: the header's length is not the upload's (-EMSGSIZE). */
	SYN_SMP_RC_LENGTH = 5,
	/** A version below the model's security counter (-ERANGE). */
	SYN_SMP_RC_DOWNGRADE = 6,
	/**
	 * Not in this state: a chunk with no upload begun, activate before
	 * the store verified one, rollback during an upload (-EPERM).
	 */
	SYN_SMP_RC_STATE = 7,
	/** Larger than a slot, CONFIG_SYNAPTIC_STORE_SLOT_SIZE (-EFBIG). */
	SYN_SMP_RC_TOO_LARGE = 8,
	/** The model's previous swap still runs, or the flash is held (-EBUSY). */
	SYN_SMP_RC_BUSY = 9,
	/** Nothing to roll back to or confirm (-ENOENT). */
	SYN_SMP_RC_NO_ENTRY = 10,
	/** The flash or the store failed otherwise (-EIO). */
	SYN_SMP_RC_IO = 11,
	/**
	 * A bad name, or the container names another model than the upload
	 * (-EINVAL).
	 */
	SYN_SMP_RC_INVALID = 12,
	/** Finish before the whole container arrived (-ENODATA). */
	SYN_SMP_RC_INCOMPLETE = 13,
	/** No device serving the model can run the version (-ENOEXEC). */
	SYN_SMP_RC_UNRUNNABLE = 14,
	/** No room for a second version during the swap (-ENOSPC). */
	SYN_SMP_RC_NO_ROOM = 15,
	/**
	 * The request lacks a field it needs (`off`; with `off` 0 `name`,
	 * `len`, a 32-byte `sha`), or names another model than the upload in
	 * progress.
	 */
	SYN_SMP_RC_BAD_REQUEST = 16,
};

/**
 * The group's rc for an errno of syn_model_ota.h.
 *
 * @param err A negative errno (0 is success).
 *
 * @retval SYN_SMP_RC_OK for 0.
 * @retval SYN_SMP_RC_UNKNOWN for an errno syn_model_ota.h does not document.
 * @return Otherwise the rc that stands for @p err (enum syn_smp_rc).
 */
uint16_t syn_smp_rc(int err);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_SMP_H_ */
