/*
 * The model store's flash partition (devicetree `chosen`
 * `synaptic,model-store`), for the Rust store on Zephyr. Offsets are from
 * the start of the partition; every call returns 0 or a negative errno
 * (-ENODEV when devicetree names no partition or it is not open).
 */

#ifndef SYNAPTIC_SYN_STORE_FLASH_H_
#define SYNAPTIC_SYN_STORE_FLASH_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The partition's size, its flash's erase and write block sizes, and
 *  whether CPU0 must park CPU1 around every write and erase. */
struct syn_store_flash_info {
	uint32_t size;
	uint32_t erase_block;
	uint32_t write_block;
	/** 1: the partition lies in the flash bank CPU1 executes from (property
	 *  `flash-bank` of chosen synaptic,cpu1-image), or
	 *  CONFIG_SYNAPTIC_STORE_PARK_CPU1 asks for parks everywhere. */
	uint32_t park_cpu1;
	/** Where CPU0 reads the partition in place (CONFIG_SYNAPTIC_STORE_MAPPED:
	 *  the flash simulator's memory, or the partition's address in the
	 *  memory-mapped flash zephyr,flash names), NULL where it cannot. The
	 *  CPU interpreter runs a stored version from there. */
	const uint8_t *mapped;
};

/** Open the partition (once; later calls only report). */
int syn_store_flash_open(struct syn_store_flash_info *info);
/** Read @p len bytes at @p offset. */
int syn_store_flash_read(uint32_t offset, void *buf, size_t len);
/** Program @p len bytes at @p offset (erased, block-aligned). */
int syn_store_flash_write(uint32_t offset, const void *buf, size_t len);
/** Erase @p len bytes at @p offset (the store passes one sector). */
int syn_store_flash_erase(uint32_t offset, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SYNAPTIC_SYN_STORE_FLASH_H_ */
