/*
 * Devicetree facts for the Rust side: evaluated here, read there.
 */

#include <zephyr/devicetree.h>
#include <synaptic/syn_platform.h>

#define SYN_SHM_NODE DT_CHOSEN(synaptic_shared_memory)
#define SYN_CPU1_NODE DT_CHOSEN(synaptic_cpu1_image)

#if DT_NODE_EXISTS(SYN_SHM_NODE)
BUILD_ASSERT(DT_NODE_HAS_COMPAT(SYN_SHM_NODE, synaptic_shared_memory),
	     "chosen synaptic,shared-memory must have compatible \"synaptic,shared-memory\"");
BUILD_ASSERT(IS_POWER_OF_TWO(DT_PROP(SYN_SHM_NODE, ring_entries)),
	     "ring-entries must be a power of two");
const struct syn_dt_shared_memory syn_dt_shared_memory = {
	.base = DT_REG_ADDR(SYN_SHM_NODE),
	.size = DT_REG_SIZE(SYN_SHM_NODE),
	.ring_entries = DT_PROP(SYN_SHM_NODE, ring_entries),
	.present = 1,
};
#else
const struct syn_dt_shared_memory syn_dt_shared_memory = {0};
#endif

#if DT_NODE_EXISTS(SYN_CPU1_NODE)
BUILD_ASSERT(DT_NODE_HAS_COMPAT(SYN_CPU1_NODE, synaptic_cpu1_image),
	     "chosen synaptic,cpu1-image must have compatible \"synaptic,cpu1-image\"");
#if DT_NODE_HAS_PROP(SYN_CPU1_NODE, cpu1_ram)
BUILD_ASSERT(DT_PROP_LEN(SYN_CPU1_NODE, cpu1_ram) == 2,
	     "cpu1-ram must be <base size> (CPU1's lens)");
#endif
const struct syn_dt_cpu1_image syn_dt_cpu1_image = {
	.local_address = DT_REG_ADDR(SYN_CPU1_NODE),
	.size = DT_REG_SIZE(SYN_CPU1_NODE),
	.boot_address = DT_PROP(SYN_CPU1_NODE, boot_address),
	.present = 1,
#if DT_NODE_HAS_PROP(SYN_CPU1_NODE, cpu1_ram)
	.ram_base = DT_PROP_BY_IDX(SYN_CPU1_NODE, cpu1_ram, 0),
	.ram_size = DT_PROP_BY_IDX(SYN_CPU1_NODE, cpu1_ram, 1),
	.ram_present = 1,
#endif
};
#else
const struct syn_dt_cpu1_image syn_dt_cpu1_image = {0};
#endif
