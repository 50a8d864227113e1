/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file syn_model_ota.h
 * @brief Model updates as a stream into the flash model store
 *        (CONFIG_SYNAPTIC_STORE; the reference's API).
 *
 * One update at a time: begin with the model's name and the container's
 * total size, write the container (96-byte header, for a signed container
 * its 136-byte signature block, then the .tflite) in chunks of any size,
 * finish (the payload's CRC, digest and signature are checked from flash),
 * activate, confirm. The header and signature block are checked as soon
 * as they are in, before the store is erased or written: a container
 * refused for its format, signer, version, name or length leaves the
 * store as it was. Every call returns 0 (activate and rollback: 0 too) or a
 * negative errno:
 *
 * - -EPERM: not allowed in this state (a chunk while idle, activate before
 *   READY, rollback during an update);
 * - -EFBIG: larger than a slot (CONFIG_SYNAPTIC_STORE_SLOT_SIZE);
 * - -EILSEQ: not a container header (magic, format, CRC), or the payload
 *   fails its CRC at finish, or a signed container's signature or digest
 *   does not match its bytes (changed after signing);
 * - -ENOMSG: an unsigned container where signatures are required
 *   (CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED);
 * - -EACCES: signed by a key the device does not trust;
 * - -ERANGE: a version below the model's security counter (anti-rollback;
 *   syn_ota_confirm() raises it), to install or to roll back to;
 * - -EMSGSIZE: the header's length differs from the size given to begin,
 *   or the stream runs past it;
 * - -EINVAL: the header names another model, a bad name, NULL arguments;
 * - -ENODATA: finish before the whole stream arrived;
 * - -ENOENT: nothing to roll back;
 * - -EIO: the flash or the store failed otherwise;
 * - with the inference service running (activate and rollback):
 *   -ENOEXEC when no device serving the model can run the version (its
 *   tensor types or sizes, a tensor type the runtime has none for; for
 *   the CPU interpreter an operator it lacks, its arena, an image it
 *   cannot read in place): no other update refusal uses it, and it comes
 *   before the two that say the service cannot swap now: -ENOSPC when
 *   it has no room for a second version during the swap, -EBUSY while the
 *   model's previous swap still runs. The store is left as it was (its
 *   active version keeps serving) and the update stays READY.
 *
 * Every other error but -EPERM ends the update in SYN_OTA_STATE_ERROR;
 * begin starts over. With the inference service running, activate and rollback
 * are made by its serving thread, which hot-swaps the model it serves
 * (requests already accepted finish on the old version); without it they
 * switch the store's active version alone. Not for the serving thread.
 */
#ifndef SYNAPTIC_SYN_MODEL_OTA_H_
#define SYNAPTIC_SYN_MODEL_OTA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where an update stands. */
typedef enum {
	SYN_OTA_STATE_IDLE,
	SYN_OTA_STATE_DOWNLOADING,
	SYN_OTA_STATE_VALIDATING,
	SYN_OTA_STATE_STAGING,
	SYN_OTA_STATE_READY,
	SYN_OTA_STATE_ERROR,
} syn_ota_state_t;

/** Start an update of @p model_name, @p total_size container bytes. */
int syn_ota_begin(const char *model_name, size_t total_size);
/** The next @p len bytes of the container. */
int syn_ota_write_chunk(const uint8_t *data, size_t len);
/** End the stream; check the container from flash and stage it. */
int syn_ota_finish(void);
/** Make the staged version the active one. */
int syn_ota_activate(void);
/** Return the last activated model to its previous version. */
int syn_ota_rollback(void);
/**
 * Confirm the last activated model's active version: its security counter
 * rises to that version, so no older version installs or is rolled back
 * to again (as MCUboot's confirm raises its security counter).
 */
int syn_ota_confirm(void);
/** The update's state. */
syn_ota_state_t syn_ota_get_state(void);
/**
 * Container bytes the current update has taken: where an upload
 * interrupted while DOWNLOADING continues (syn_ota_write_chunk() takes the
 * bytes from this offset on).
 */
size_t syn_ota_received(void);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_MODEL_OTA_H_ */
