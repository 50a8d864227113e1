/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The model store as an MCUmgr command group (CONFIG_SYNAPTIC_STORE_SMP,
 * include/synaptic/syn_smp.h): model containers streamed over SMP into
 * syn_model_ota.h, as img_mgmt streams firmware images. The upload is
 * img_mgmt's: chunks at offsets, the first with the total length and the
 * container's SHA-256; a first chunk whose name and SHA-256 are those of the
 * upload in progress does not start over but answers the offset reached, so
 * a client whose link dropped resumes there; a chunk at another offset than
 * the one expected is not written, and the answer names the expected one.
 * The last chunk's answer is the store's verdict on the container, which it
 * reads back from flash and checks (CRCs, digest, signature): that check,
 * not the SHA-256 the client sends (kept only to recognise the upload), is
 * what admits a container.
 *
 * Handlers run on the SMP work queue, one request at a time; the group's
 * upload record is touched only there. The shell's `syn ota` and CPU1's
 * MODEL_UPDATE drive the same update (syn_model_ota.h serialises them): an
 * update begun elsewhere is not resumed here, and a chunk here after one
 * began elsewhere is refused (SYN_SMP_RC_STATE).
 */

#include <errno.h>
#include <string.h>

#include <zcbor_common.h>
#include <zcbor_decode.h>
#include <zcbor_encode.h>
#include <zephyr/mgmt/mcumgr/mgmt/handlers.h>
#include <zephyr/mgmt/mcumgr/mgmt/mgmt.h>
#include <zephyr/mgmt/mcumgr/smp/smp.h>
#include <zephyr/sys/util.h>
#include <mgmt/mcumgr/util/zcbor_bulk.h>

#include <synaptic/syn_model_ota.h>
#include <synaptic/syn_smp.h>
#include <synaptic/syn_store.h>

#define SYN_SMP_GROUP CONFIG_SYNAPTIC_STORE_SMP_GROUP_ID
#define SYN_SMP_SHA_LEN 32

BUILD_ASSERT(SYN_SMP_GROUP >= MGMT_GROUP_ID_PERUSER,
	     "CONFIG_SYNAPTIC_STORE_SMP_GROUP_ID must be a user group (64 or more)");

/* The upload this group began: what a first chunk is compared with. */
static struct {
	/* Set from a successful begin until the last chunk or a refusal. */
	bool active;
	char name[SYN_STORE_NAME_MAX + 1];
	uint8_t sha[SYN_SMP_SHA_LEN];
	size_t len;
} upload;

/* The model whose upload through this group the store verified last. */
static char verified[SYN_STORE_NAME_MAX + 1];

/* The model the last activate, confirm or rollback of this group acted on. */
static char last_model[SYN_STORE_NAME_MAX + 1];

uint16_t syn_smp_rc(int err)
{
	switch (err) {
	case 0:
		return SYN_SMP_RC_OK;
	case -ENOMSG:
		return SYN_SMP_RC_UNSIGNED;
	case -EACCES:
		return SYN_SMP_RC_UNTRUSTED_KEY;
	case -EILSEQ:
		return SYN_SMP_RC_BAD_CONTAINER;
	case -EMSGSIZE:
		return SYN_SMP_RC_LENGTH;
	case -ERANGE:
		return SYN_SMP_RC_DOWNGRADE;
	case -EPERM:
		return SYN_SMP_RC_STATE;
	case -EFBIG:
		return SYN_SMP_RC_TOO_LARGE;
	case -EBUSY:
		return SYN_SMP_RC_BUSY;
	case -ENOENT:
		return SYN_SMP_RC_NO_ENTRY;
	case -EIO:
		return SYN_SMP_RC_IO;
	case -EINVAL:
		return SYN_SMP_RC_INVALID;
	case -ENODATA:
		return SYN_SMP_RC_INCOMPLETE;
	case -ENOEXEC:
		return SYN_SMP_RC_UNRUNNABLE;
	case -ENOSPC:
		return SYN_SMP_RC_NO_ROOM;
	default:
		return SYN_SMP_RC_UNKNOWN;
	}
}

static const char *const ota_states[] = {
	[SYN_OTA_STATE_IDLE] = "idle",
	[SYN_OTA_STATE_DOWNLOADING] = "downloading",
	[SYN_OTA_STATE_VALIDATING] = "validating",
	[SYN_OTA_STATE_STAGING] = "staging",
	[SYN_OTA_STATE_READY] = "ready",
	[SYN_OTA_STATE_ERROR] = "error",
};

/* A group error for @p rc: 0 when encoded, MGMT_ERR_EMSGSIZE if it does not fit. */
static int group_error(struct smp_streamer *ctxt, uint16_t rc)
{
	return smp_add_cmd_err(ctxt->writer->zs, SYN_SMP_GROUP, rc) ? MGMT_ERR_EOK
								    : MGMT_ERR_EMSGSIZE;
}

/* Copy a decoded name into @p out (NUL-terminated): false if it does not fit. */
static bool copy_name(char out[SYN_STORE_NAME_MAX + 1], const struct zcbor_string *name)
{
	if (name->len == 0 || name->len > SYN_STORE_NAME_MAX ||
	    memchr(name->value, '\0', name->len) != NULL) {
		return false;
	}
	memcpy(out, name->value, name->len);
	out[name->len] = '\0';
	return true;
}

static bool name_is(const struct zcbor_string *name, const char *expected)
{
	return name->len == strlen(expected) && memcmp(name->value, expected, name->len) == 0;
}

/* The store's record of @p name into @p model: 0, or -ENOENT. */
static int find_model(const char *name, struct syn_store_model *model)
{
	int err;

	for (size_t i = 0; (err = syn_store_model_get(i, model)) == 0; i++) {
		if (strcmp(model->name, name) == 0) {
			return 0;
		}
	}
	return err;
}

static int smp_state(struct smp_streamer *ctxt)
{
	zcbor_state_t *zse = ctxt->writer->zs;
	struct syn_store_model model;
	syn_ota_state_t state = syn_ota_get_state();
	int64_t generation = syn_store_generation();
	size_t i;
	int err = 0;
	bool ok;

	if (generation < 0) {
		/* The store cannot be opened. */
		return group_error(ctxt, syn_smp_rc((int)generation));
	}
	ok = zcbor_tstr_put_lit(zse, "models") &&
	     zcbor_list_start_encode(zse, CONFIG_SYNAPTIC_STORE_MAX_MODELS);
	for (i = 0; ok && (err = syn_store_model_get(i, &model)) == 0; i++) {
		ok = zcbor_map_start_encode(zse, 5) && zcbor_tstr_put_lit(zse, "name") &&
		     zcbor_tstr_put_term(zse, model.name, sizeof(model.name)) &&
		     zcbor_tstr_put_lit(zse, "active") &&
		     zcbor_uint32_put(zse, model.active_version) &&
		     zcbor_tstr_put_lit(zse, "previous") &&
		     zcbor_uint32_put(zse, model.previous_version) &&
		     zcbor_tstr_put_lit(zse, "security") &&
		     zcbor_uint32_put(zse, model.security_counter) &&
		     zcbor_tstr_put_lit(zse, "slots") && zcbor_list_start_encode(zse, 2) &&
		     zcbor_uint32_put(zse, model.slot_state[0]) &&
		     zcbor_uint32_put(zse, model.slot_state[1]) && zcbor_list_end_encode(zse, 2) &&
		     zcbor_map_end_encode(zse, 5);
	}
	if (!ok) {
		return MGMT_ERR_EMSGSIZE;
	}
	if (err != -ENOENT) {
		/* The handler's error discards the partial answer. */
		return MGMT_ERR_EUNKNOWN;
	}
	ok = zcbor_list_end_encode(zse, CONFIG_SYNAPTIC_STORE_MAX_MODELS) &&
	     zcbor_tstr_put_lit(zse, "generation") && zcbor_uint32_put(zse, (uint32_t)generation) &&
	     zcbor_tstr_put_lit(zse, "state") &&
	     zcbor_tstr_put_term(zse,
				 (size_t)state < ARRAY_SIZE(ota_states) && ota_states[state] != NULL
					 ? ota_states[state]
					 : "unknown",
				 16) &&
	     zcbor_tstr_put_lit(zse, "off") && zcbor_size_put(zse, syn_ota_received());
	if (ok && upload.active && state == SYN_OTA_STATE_DOWNLOADING) {
		ok = zcbor_tstr_put_lit(zse, "name") &&
		     zcbor_tstr_put_term(zse, upload.name, sizeof(upload.name)) &&
		     zcbor_tstr_put_lit(zse, "len") && zcbor_size_put(zse, upload.len) &&
		     zcbor_tstr_put_lit(zse, "sha") &&
		     zcbor_bstr_encode_ptr(zse, (const char *)upload.sha, sizeof(upload.sha));
	}
	return ok ? MGMT_ERR_EOK : MGMT_ERR_EMSGSIZE;
}

/* Whether a first chunk names the upload in progress (a client resuming). */
static bool resumes(const struct zcbor_string *name, const struct zcbor_string *sha, size_t len)
{
	return upload.active && syn_ota_get_state() == SYN_OTA_STATE_DOWNLOADING &&
	       name_is(name, upload.name) && len == upload.len && sha->len == sizeof(upload.sha) &&
	       memcmp(sha->value, upload.sha, sizeof(upload.sha)) == 0;
}

static int smp_upload(struct smp_streamer *ctxt)
{
	zcbor_state_t *zse = ctxt->writer->zs;
	struct zcbor_string name = {0};
	struct zcbor_string data = {0};
	struct zcbor_string sha = {0};
	size_t off = SIZE_MAX;
	size_t len = SIZE_MAX;
	size_t decoded = 0;
	size_t expected;
	bool ok;
	int err;
	struct zcbor_map_decode_key_val fields[] = {
		ZCBOR_MAP_DECODE_KEY_DECODER("name", zcbor_tstr_decode, &name),
		ZCBOR_MAP_DECODE_KEY_DECODER("off", zcbor_size_decode, &off),
		ZCBOR_MAP_DECODE_KEY_DECODER("data", zcbor_bstr_decode, &data),
		ZCBOR_MAP_DECODE_KEY_DECODER("len", zcbor_size_decode, &len),
		ZCBOR_MAP_DECODE_KEY_DECODER("sha", zcbor_bstr_decode, &sha),
	};

	if (zcbor_map_decode_bulk(ctxt->reader->zs, fields, ARRAY_SIZE(fields), &decoded) != 0) {
		return MGMT_ERR_EINVAL;
	}
	if (off == SIZE_MAX) {
		return group_error(ctxt, SYN_SMP_RC_BAD_REQUEST);
	}

	if (off == 0 && !resumes(&name, &sha, len)) {
		char begin_name[SYN_STORE_NAME_MAX + 1];

		if (len == SIZE_MAX || sha.len != SYN_SMP_SHA_LEN || !copy_name(begin_name, &name)) {
			return group_error(ctxt, SYN_SMP_RC_BAD_REQUEST);
		}
		upload.active = false;
		verified[0] = '\0';
		err = syn_ota_begin(begin_name, len);
		if (err != 0) {
			return group_error(ctxt, syn_smp_rc(err));
		}
		memcpy(upload.name, begin_name, sizeof(upload.name));
		memcpy(upload.sha, sha.value, sizeof(upload.sha));
		upload.len = len;
		upload.active = true;
	}

	if (!upload.active || syn_ota_get_state() != SYN_OTA_STATE_DOWNLOADING) {
		upload.active = false;
		return group_error(ctxt, SYN_SMP_RC_STATE);
	}
	if (name.len != 0 && !name_is(&name, upload.name)) {
		return group_error(ctxt, SYN_SMP_RC_BAD_REQUEST);
	}

	expected = syn_ota_received();
	if (off == expected && data.len != 0) {
		err = syn_ota_write_chunk(data.value, data.len);
		if (err != 0) {
			/* Every refusal but -EPERM has ended the update. */
			upload.active = false;
			return group_error(ctxt, syn_smp_rc(err));
		}
		expected = syn_ota_received();
		if (expected == upload.len) {
			/* The last byte is in: the store verifies it from flash. */
			upload.active = false;
			err = syn_ota_finish();
			if (err != 0) {
				return group_error(ctxt, syn_smp_rc(err));
			}
			memcpy(verified, upload.name, sizeof(verified));
			ok = zcbor_tstr_put_lit(zse, "off") && zcbor_size_put(zse, expected) &&
			     zcbor_tstr_put_lit(zse, "rc") && zcbor_int32_put(zse, SYN_SMP_RC_OK);
			return ok ? MGMT_ERR_EOK : MGMT_ERR_EMSGSIZE;
		}
	}
	/* Written, or at another offset (a resent or skipped chunk): where to go on. */
	ok = zcbor_tstr_put_lit(zse, "off") && zcbor_size_put(zse, expected);
	return ok ? MGMT_ERR_EOK : MGMT_ERR_EMSGSIZE;
}

/*
 * activate, confirm, rollback: an empty request, or one whose "name" must be
 * @p target, the model the step acts on, when the group knows it (the
 * upload it saw verified, for activate; the model it activated last, for
 * confirm and rollback). The answer names the model and its active version
 * ("active": "version" is a field of every message in smpclient's classes).
 */
static int smp_step(struct smp_streamer *ctxt, int (*step)(void), const char *target)
{
	zcbor_state_t *zse = ctxt->writer->zs;
	struct zcbor_string name = {0};
	struct syn_store_model model;
	size_t decoded = 0;
	bool ok;
	int err;
	struct zcbor_map_decode_key_val fields[] = {
		ZCBOR_MAP_DECODE_KEY_DECODER("name", zcbor_tstr_decode, &name),
	};

	if (zcbor_map_decode_bulk(ctxt->reader->zs, fields, ARRAY_SIZE(fields), &decoded) != 0) {
		return MGMT_ERR_EINVAL;
	}
	if (name.len != 0 && target[0] != '\0' && !name_is(&name, target)) {
		return group_error(ctxt, SYN_SMP_RC_BAD_REQUEST);
	}
	err = step();
	if (err != 0) {
		return group_error(ctxt, syn_smp_rc(err));
	}
	if (target != last_model) {
		memcpy(last_model, target, sizeof(last_model));
	}
	if (last_model[0] == '\0' || find_model(last_model, &model) != 0) {
		return MGMT_ERR_EOK;
	}
	ok = zcbor_tstr_put_lit(zse, "name") &&
	     zcbor_tstr_put_term(zse, model.name, sizeof(model.name)) &&
	     zcbor_tstr_put_lit(zse, "active") && zcbor_uint32_put(zse, model.active_version);
	return ok ? MGMT_ERR_EOK : MGMT_ERR_EMSGSIZE;
}

static int smp_activate(struct smp_streamer *ctxt)
{
	return smp_step(ctxt, syn_ota_activate, verified);
}

static int smp_confirm(struct smp_streamer *ctxt)
{
	return smp_step(ctxt, syn_ota_confirm, last_model);
}

static int smp_rollback(struct smp_streamer *ctxt)
{
	return smp_step(ctxt, syn_ota_rollback, last_model);
}

static const struct mgmt_handler syn_smp_handlers[] = {
	[SYN_SMP_ID_STATE] = {.mh_read = smp_state},
	[SYN_SMP_ID_UPLOAD] = {.mh_write = smp_upload},
	[SYN_SMP_ID_ACTIVATE] = {.mh_write = smp_activate},
	[SYN_SMP_ID_CONFIRM] = {.mh_write = smp_confirm},
	[SYN_SMP_ID_ROLLBACK] = {.mh_write = smp_rollback},
};

static struct mgmt_group syn_smp_group = {
	.mg_handlers = syn_smp_handlers,
	.mg_handlers_count = ARRAY_SIZE(syn_smp_handlers),
	.mg_group_id = SYN_SMP_GROUP,
#ifdef CONFIG_MCUMGR_GRP_ENUM_DETAILS_NAME
	.mg_group_name = "synaptic model store",
#endif
};

static void syn_smp_register_group(void)
{
	mgmt_register_group(&syn_smp_group);
}

MCUMGR_HANDLER_DEFINE(synaptic_store, syn_smp_register_group);
