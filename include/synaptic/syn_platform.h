/*
 * Platform facts that devicetree supplies to the Rust side.
 *
 * Rust cannot expand devicetree macros, so src/synaptic_dt.c evaluates them
 * once and exports the results as constant structs with these layouts.
 */

#ifndef SYNAPTIC_SYN_PLATFORM_H_
#define SYNAPTIC_SYN_PLATFORM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The shared region (chosen node `synaptic,shared-memory`), in this core's lens. */
struct syn_dt_shared_memory {
	/** Base address as this core sees it. */
	uintptr_t base;
	/** Size in bytes. */
	uint32_t size;
	/** Message slots per ring (`ring-entries`), a power of two. */
	uint32_t ring_entries;
	/** 1 when the node exists in this build, 0 when it does not. */
	uint32_t present;
};

/** Where CPU1's image is (chosen node `synaptic,cpu1-image`, CPU0 only). */
struct syn_dt_cpu1_image {
	/** Address of CPU1's vector table as CPU0 sees it (for checks). */
	uintptr_t local_address;
	/** Size of the image area in bytes. */
	uint32_t size;
	/** The same vector table address in CPU1's own lens (the boot vector). */
	uint32_t boot_address;
	/** 1 when the node exists in this build, 0 when it does not. */
	uint32_t present;
	/** CPU1's private RAM base in CPU1's own lens (property `cpu1-ram`). */
	uint32_t ram_base;
	/** CPU1's private RAM size in bytes (property `cpu1-ram`). */
	uint32_t ram_size;
	/** 1 when the node has `cpu1-ram`, 0 when it does not. */
	uint32_t ram_present;
};

extern const struct syn_dt_shared_memory syn_dt_shared_memory;
extern const struct syn_dt_cpu1_image syn_dt_cpu1_image;
/** 1 when the model store (chosen synaptic,model-store) lies in the flash
 *  bank CPU1 executes from (`flash-bank` of chosen synaptic,cpu1-image):
 *  CPU0 must then park CPU1 around every write and erase of it. */
extern const uint32_t syn_dt_store_in_cpu1_bank;

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_PLATFORM_H_ */
