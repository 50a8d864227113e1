/*
 * The model store's flash: the fixed partition devicetree names with
 * `chosen { synaptic,model-store = &partition; }`, through Zephyr's flash
 * map. The Rust store (synaptic-zephyr's store module) calls these.
 */

#include <errno.h>
#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/flash.h>
#ifdef CONFIG_FLASH_SIMULATOR
#include <zephyr/drivers/flash/flash_simulator.h>
#endif
#include <zephyr/storage/flash_map.h>
#include <synaptic/syn_platform.h>
#include <synaptic/syn_store_flash.h>

#define SYN_STORE_NODE DT_CHOSEN(synaptic_model_store)

#if DT_NODE_EXISTS(SYN_STORE_NODE)
BUILD_ASSERT(DT_NODE_HAS_COMPAT(DT_PARENT(SYN_STORE_NODE), fixed_partitions),
	     "chosen synaptic,model-store must be a fixed partition");

#define SYN_STORE_FLASH DT_GPARENT(SYN_STORE_NODE)

static const struct flash_area *syn_store_area;

/* Where CPU0 reads the open partition in place, or NULL. */
static const uint8_t *syn_store_mapped(void)
{
#if !defined(CONFIG_SYNAPTIC_STORE_MAPPED)
	return NULL;
#elif DT_NODE_HAS_COMPAT(DT_PARENT(SYN_STORE_FLASH), zephyr_sim_flash) && \
	defined(CONFIG_FLASH_SIMULATOR)
	size_t size;
	const uint8_t *memory =
		flash_simulator_get_memory(DEVICE_DT_GET(DT_PARENT(SYN_STORE_FLASH)), &size);

	if (memory == NULL || syn_store_area->fa_off + syn_store_area->fa_size > size) {
		return NULL;
	}
	return memory + syn_store_area->fa_off;
#elif DT_SAME_NODE(SYN_STORE_FLASH, DT_CHOSEN(zephyr_flash))
	return (const uint8_t *)(CONFIG_FLASH_BASE_ADDRESS + syn_store_area->fa_off);
#else
	return NULL;
#endif
}

int syn_store_flash_open(struct syn_store_flash_info *info)
{
	if (info == NULL) {
		return -EINVAL;
	}
	if (syn_store_area == NULL) {
		int ret = flash_area_open(DT_FIXED_PARTITION_ID(SYN_STORE_NODE), &syn_store_area);

		if (ret != 0) {
			return ret;
		}
	}
	info->size = syn_store_area->fa_size;
	info->erase_block = DT_PROP(SYN_STORE_FLASH, erase_block_size);
	info->write_block = DT_PROP(SYN_STORE_FLASH, write_block_size);
	info->park_cpu1 = syn_dt_store_in_cpu1_bank || IS_ENABLED(CONFIG_SYNAPTIC_STORE_PARK_CPU1);
	info->mapped = syn_store_mapped();
	return 0;
}

int syn_store_flash_read(uint32_t offset, void *buf, size_t len)
{
	return syn_store_area ? flash_area_read(syn_store_area, offset, buf, len) : -ENODEV;
}

int syn_store_flash_write(uint32_t offset, const void *buf, size_t len)
{
	return syn_store_area ? flash_area_write(syn_store_area, offset, buf, len) : -ENODEV;
}

int syn_store_flash_erase(uint32_t offset, size_t len)
{
	return syn_store_area ? flash_area_erase(syn_store_area, offset, len) : -ENODEV;
}
#else
int syn_store_flash_open(struct syn_store_flash_info *info)
{
	(void)info;
	return -ENODEV;
}

int syn_store_flash_read(uint32_t offset, void *buf, size_t len)
{
	return -ENODEV;
}

int syn_store_flash_write(uint32_t offset, const void *buf, size_t len)
{
	return -ENODEV;
}

int syn_store_flash_erase(uint32_t offset, size_t len)
{
	return -ENODEV;
}
#endif
