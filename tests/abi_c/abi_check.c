/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Compile-only check of include/synaptic/syn_abi.h: every size and offset of
 * the ABI v6 contract, restated by hand and pinned with _Static_assert, so a
 * C image and a Rust image cannot disagree about the shared region. Compiled
 * by scripts/check-abi.sh with host gcc and arm-none-eabi-gcc (Cortex-M33).
 */

#include <stddef.h>
#include <stdint.h>

#include <synaptic/syn_abi.h>

#define CHECK(expr) _Static_assert(expr, #expr)

/* Message: 20 bytes. */
CHECK(sizeof(syn_abi_msg_t) == 20);
CHECK(sizeof(syn_abi_msg_t) == SYN_ABI_MSG_SIZE);
CHECK(_Alignof(syn_abi_msg_t) == 4);
CHECK(offsetof(syn_abi_msg_t, msg_id) == 0);
CHECK(offsetof(syn_abi_msg_t, msg_type) == 4);
CHECK(offsetof(syn_abi_msg_t, priority) == 5);
CHECK(offsetof(syn_abi_msg_t, payload_len) == 6);
CHECK(offsetof(syn_abi_msg_t, payload_offset) == 8);
CHECK(offsetof(syn_abi_msg_t, timestamp_us) == 12);
CHECK(offsetof(syn_abi_msg_t, status) == 16);

/* Message types and priority classes. */
CHECK(SYN_ABI_MSG_TYPE_INFER_REQ == 0);
CHECK(SYN_ABI_MSG_TYPE_INFER_RESP == 1);
CHECK(SYN_ABI_MSG_TYPE_MODEL_LOAD == 2);
CHECK(SYN_ABI_MSG_TYPE_MODEL_UNLOAD == 3);
CHECK(SYN_ABI_MSG_TYPE_STATUS_REQ == 4);
CHECK(SYN_ABI_MSG_TYPE_STATUS_RESP == 5);
CHECK(SYN_ABI_MSG_TYPE_MODEL_UPDATE == 6);
CHECK(SYN_ABI_MSG_TYPE_COUNT == 7);
CHECK(SYN_ABI_PRIORITY_BEST_EFFORT == 0);
CHECK(SYN_ABI_PRIORITY_NORMAL == 1);
CHECK(SYN_ABI_PRIORITY_REALTIME == 2);

/* Control block: 64 bytes at offset 0. */
CHECK(SYN_ABI_MAGIC == 0x53594E33);
CHECK(SYN_ABI_LAYOUT_VERSION == 6);
CHECK(sizeof(syn_abi_control_block_t) == 64);
CHECK(sizeof(syn_abi_control_block_t) == SYN_ABI_CONTROL_BLOCK_SIZE);
CHECK(offsetof(syn_abi_control_block_t, magic) == 0);
CHECK(offsetof(syn_abi_control_block_t, layout_version) == 4);
CHECK(offsetof(syn_abi_control_block_t, ring_entries) == 8);
CHECK(offsetof(syn_abi_control_block_t, shared_size) == 12);
CHECK(offsetof(syn_abi_control_block_t, cpu0_ready) == 16);
CHECK(offsetof(syn_abi_control_block_t, cpu1_ready) == 20);
CHECK(offsetof(syn_abi_control_block_t, rtt_last_us) == 24);
CHECK(offsetof(syn_abi_control_block_t, rtt_min_us) == 28);
CHECK(offsetof(syn_abi_control_block_t, rtt_max_us) == 32);
CHECK(offsetof(syn_abi_control_block_t, rtt_count) == 36);
CHECK(offsetof(syn_abi_control_block_t, exchange_slots) == 40);
CHECK(offsetof(syn_abi_control_block_t, small_input_size) == 44);
CHECK(offsetof(syn_abi_control_block_t, small_output_size) == 48);
CHECK(offsetof(syn_abi_control_block_t, cpu1_layout_version) == 52);
CHECK(offsetof(syn_abi_control_block_t, park_request) == 56);
CHECK(offsetof(syn_abi_control_block_t, park_ack) == 60);

/* Ring: head at +0, tail at +64, slots at +128, N a power of two. */
CHECK(sizeof(syn_abi_ring_header_t) == 128);
CHECK(offsetof(syn_abi_ring_header_t, head) == 0);
CHECK(offsetof(syn_abi_ring_header_t, tail) == 64);
CHECK(offsetof(syn_abi_ring_header_t, tail) == SYN_ABI_RING_TAIL_OFFSET);
CHECK(offsetof(syn_abi_ring_t, slots) == 128);
CHECK(offsetof(syn_abi_ring_t, slots) == SYN_ABI_RING_SLOTS_OFFSET);
CHECK(SYN_ABI_RING_ENTRIES_DEFAULT == 16);
CHECK((SYN_ABI_RING_ENTRIES_DEFAULT & (SYN_ABI_RING_ENTRIES_DEFAULT - 1)) == 0);
CHECK(sizeof(syn_abi_ring_t) == 128 + 16 * 20);
CHECK(sizeof(syn_abi_ring_t) == SYN_ABI_RING_SIZE_DEFAULT);

/* Region: control block, ring CPU0->CPU1, ring CPU1->CPU0, service-time
 * table, payload pool (the frame slot, then the small slots). */
CHECK(SYN_ABI_RING_CPU0_TO_CPU1_OFFSET_DEFAULT == sizeof(syn_abi_control_block_t));
CHECK(SYN_ABI_RING_CPU1_TO_CPU0_OFFSET_DEFAULT ==
      SYN_ABI_RING_CPU0_TO_CPU1_OFFSET_DEFAULT + sizeof(syn_abi_ring_t));
CHECK(SYN_ABI_SERVICE_TIMES_OFFSET_DEFAULT ==
      SYN_ABI_RING_CPU1_TO_CPU0_OFFSET_DEFAULT + sizeof(syn_abi_ring_t));
CHECK(sizeof(syn_abi_service_time_t) == 8);
CHECK(offsetof(syn_abi_service_time_t, model) == 0);
CHECK(offsetof(syn_abi_service_time_t, service_us) == 4);
CHECK(sizeof(syn_abi_service_time_table_t) == SYN_ABI_SERVICE_TIME_TABLE_SIZE);
CHECK(SYN_ABI_SERVICE_TIME_TABLE_SIZE == SYN_ABI_SERVICE_TIME_ENTRIES * 8);
CHECK(SYN_ABI_PAYLOAD_POOL_OFFSET_DEFAULT ==
      SYN_ABI_SERVICE_TIMES_OFFSET_DEFAULT + sizeof(syn_abi_service_time_table_t));
CHECK(SYN_ABI_PAYLOAD_POOL_OFFSET_DEFAULT == 1088);
CHECK(SYN_ABI_PAYLOAD_POOL_OFFSET_DEFAULT % SYN_ABI_SLOT_ALIGN == 0);
/* A small slot: header, input, output, rounded up to 64 bytes. */
#define SMALL_SLOT_SIZE                                                                            \
	((SYN_ABI_EXCHANGE_HEADER_SIZE + SYN_ABI_SMALL_INPUT_SIZE_DEFAULT +                        \
	  SYN_ABI_SMALL_OUTPUT_SIZE_DEFAULT + SYN_ABI_SLOT_ALIGN - 1) /                            \
	 SYN_ABI_SLOT_ALIGN * SYN_ABI_SLOT_ALIGN)
CHECK(SYN_ABI_REGION_SIZE_DEFAULT ==
      SYN_ABI_PAYLOAD_POOL_OFFSET_DEFAULT + sizeof(syn_abi_exchange_slot_t) +
	      (SYN_ABI_EXCHANGE_SLOTS_DEFAULT - 1) * SMALL_SLOT_SIZE);
CHECK(SYN_ABI_REGION_SIZE_DEFAULT <= SYN_ABI_SHARED_SIZE);
CHECK(SYN_ABI_EXCHANGE_SLOTS_DEFAULT >= 1 && SYN_ABI_EXCHANGE_SLOTS_DEFAULT <= SYN_ABI_MAX_EXCHANGE_SLOTS);
CHECK(SYN_ABI_SMALL_INPUT_SIZE_DEFAULT % SYN_ABI_TENSOR_ALIGN == 0);
CHECK(SYN_ABI_SMALL_OUTPUT_SIZE_DEFAULT % SYN_ABI_TENSOR_ALIGN == 0);
CHECK(SYN_ABI_REQUEST_FLAG_POLLED == 1);

/* The frame slot (slot 0) at the start of the payload pool. */
CHECK(sizeof(syn_abi_exchange_header_t) == 64);
CHECK(sizeof(syn_abi_exchange_header_t) == SYN_ABI_EXCHANGE_HEADER_SIZE);
CHECK(offsetof(syn_abi_exchange_header_t, model) == 0);
CHECK(offsetof(syn_abi_exchange_header_t, model_name) == 4);
CHECK(offsetof(syn_abi_exchange_header_t, input_len) == 36);
CHECK(offsetof(syn_abi_exchange_header_t, output_len) == 40);
CHECK(offsetof(syn_abi_exchange_header_t, infer_status) == 44);
CHECK(offsetof(syn_abi_exchange_header_t, update_op) == 48);
CHECK(offsetof(syn_abi_exchange_header_t, update_arg) == 52);
CHECK(offsetof(syn_abi_exchange_header_t, reserved) == 56);
CHECK(SYN_ABI_UPDATE_OP_BEGIN == 1);
CHECK(SYN_ABI_UPDATE_OP_DATA == 2);
CHECK(SYN_ABI_UPDATE_OP_FINISH == 3);
CHECK(SYN_ABI_UPDATE_OP_ACTIVATE == 4);
CHECK(SYN_ABI_UPDATE_OP_ROLLBACK == 5);
CHECK(SYN_ABI_UPDATE_OP_CONFIRM == 6);
CHECK(SYN_ABI_MODEL_NAME_SIZE == 32);
CHECK(offsetof(syn_abi_exchange_slot_t, input) == 64);
CHECK(offsetof(syn_abi_exchange_slot_t, input) == SYN_ABI_EXCHANGE_INPUT_OFFSET);
CHECK(offsetof(syn_abi_exchange_slot_t, output) == 64 + 27648);
CHECK(offsetof(syn_abi_exchange_slot_t, output) == SYN_ABI_EXCHANGE_OUTPUT_OFFSET);
CHECK(SYN_ABI_EXCHANGE_INPUT_SIZE == 96 * 96 * 3);
CHECK(SYN_ABI_EXCHANGE_OUTPUT_SIZE == 4096);
CHECK(sizeof(syn_abi_exchange_slot_t) == SYN_ABI_EXCHANGE_SLOT_SIZE);

/* Memory maps: 256 KiB / 96 KiB / 64 KiB, tiling with no gap or overlap. */
CHECK(SYN_ABI_CPU0_PRIVATE_SIZE == 256 * 1024);
CHECK(SYN_ABI_SHARED_SIZE == 96 * 1024);
CHECK(SYN_ABI_CPU1_PRIVATE_SIZE == 64 * 1024);
CHECK(SYN_ABI_MCXN947_CPU0_PRIVATE_BASE == 0x20000000);
CHECK(SYN_ABI_MCXN947_SHARED_BASE == 0x20040000);
CHECK(SYN_ABI_MCXN947_CPU1_PRIVATE_BASE == 0x20058000);
CHECK(SYN_ABI_MCXN947_CPU1_IMAGE_BASE == 0x00100000);
CHECK(SYN_ABI_MCXN947_CPU0_PRIVATE_BASE + SYN_ABI_CPU0_PRIVATE_SIZE == SYN_ABI_MCXN947_SHARED_BASE);
CHECK(SYN_ABI_MCXN947_SHARED_BASE + SYN_ABI_SHARED_SIZE == SYN_ABI_MCXN947_CPU1_PRIVATE_BASE);
CHECK(SYN_ABI_AN521_CPU0_PRIVATE_BASE + SYN_ABI_CPU0_PRIVATE_SIZE == SYN_ABI_AN521_SHARED_BASE);
CHECK(SYN_ABI_AN521_SHARED_BASE + SYN_ABI_SHARED_SIZE == SYN_ABI_AN521_CPU1_PRIVATE_BASE);
CHECK(SYN_ABI_AN521_SHARED_BASE + SYN_ABI_SECURE_ALIAS == 0x38040000);
CHECK(SYN_ABI_AN521_CPU1_IMAGE_BASE == 0x0038B000); /* where mps2/an521/cpu1 links its code */
CHECK(SYN_ABI_SECURE_ALIAS == 0x10000000);
