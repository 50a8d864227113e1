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

/*
 * The model store must never overlap an image: not CPU1's (its flash bank
 * holds CPU1's code while CPU0 writes models), nor the one running here.
 * Only a partition of memory-mapped flash (a soc-nv-flash node not under
 * the flash simulator) can: a store on the simulator or on an external
 * flash has its own address space. TrustZone parts show one flash at a
 * non-secure and a secure address that differ in bit 28 (MCXN947: 0x0..,
 * 0x1..; AN521 likewise), and the nodes compared may use either: the
 * comparison is of the addresses below that bit.
 */
#define SYN_STORE_NODE DT_CHOSEN(synaptic_model_store)
#define SYN_FLASH_OFFSET(addr) ((uint32_t)(addr) & 0x0FFFFFFFu)
#define SYN_DISJOINT(a, a_size, b, b_size)                                                         \
	(SYN_FLASH_OFFSET(a) + (uint32_t)(a_size) <= SYN_FLASH_OFFSET(b) ||                        \
	 SYN_FLASH_OFFSET(b) + (uint32_t)(b_size) <= SYN_FLASH_OFFSET(a))
/* The store partition against a fixed partition of the same flash. */
#define SYN_STORE_CLEAR_OF_PARTITION(node)                                                         \
	SYN_DISJOINT(DT_FIXED_PARTITION_ADDR(SYN_STORE_NODE), DT_REG_SIZE(SYN_STORE_NODE),         \
		     DT_FIXED_PARTITION_ADDR(node), DT_REG_SIZE(node))

#if DT_NODE_EXISTS(SYN_STORE_NODE) && DT_FIXED_PARTITION_EXISTS(SYN_STORE_NODE) &&                \
	DT_NODE_EXISTS(DT_MEM_FROM_FIXED_PARTITION(SYN_STORE_NODE)) &&                             \
	!DT_NODE_HAS_COMPAT(DT_MTD_FROM_FIXED_PARTITION(SYN_STORE_NODE), zephyr_sim_flash)
#if DT_NODE_EXISTS(SYN_CPU1_NODE) && DT_NODE_HAS_PROP(SYN_CPU1_NODE, flash_bank)
BUILD_ASSERT(DT_PROP_LEN(SYN_CPU1_NODE, flash_bank) == 2,
	     "flash-bank must be <base size> (CPU0's lens)");
/*
 * A store in the bank CPU1 executes from is allowed beside CPU1's image,
 * but every write and erase then parks CPU1 (synaptic-serve's park
 * handshake), which needs the doorbell to wake CPU1's interrupt.
 */
#define SYN_STORE_IN_CPU1_BANK                                                                     \
	(!SYN_DISJOINT(DT_FIXED_PARTITION_ADDR(SYN_STORE_NODE), DT_REG_SIZE(SYN_STORE_NODE),       \
		       DT_PROP_BY_IDX(SYN_CPU1_NODE, flash_bank, 0),                               \
		       DT_PROP_BY_IDX(SYN_CPU1_NODE, flash_bank, 1)))
BUILD_ASSERT(!SYN_STORE_IN_CPU1_BANK || IS_ENABLED(CONFIG_SYNAPTIC_DOORBELL),
	     "chosen synaptic,model-store lies in CPU1's flash bank: parking CPU1 around its "
	     "writes needs the doorbell (CONFIG_SYNAPTIC_DOORBELL)");
#endif
#if DT_NODE_EXISTS(SYN_CPU1_NODE)
BUILD_ASSERT(SYN_DISJOINT(DT_FIXED_PARTITION_ADDR(SYN_STORE_NODE), DT_REG_SIZE(SYN_STORE_NODE),
			  DT_REG_ADDR(SYN_CPU1_NODE), DT_REG_SIZE(SYN_CPU1_NODE)),
	     "chosen synaptic,model-store overlaps the CPU1 image (chosen synaptic,cpu1-image)");
#endif
#if DT_HAS_CHOSEN(zephyr_code_cpu1_partition)
BUILD_ASSERT(SYN_STORE_CLEAR_OF_PARTITION(DT_CHOSEN(zephyr_code_cpu1_partition)),
	     "chosen synaptic,model-store overlaps the CPU1 code partition (chosen zephyr,code-cpu1-partition)");
#endif
#if DT_HAS_CHOSEN(zephyr_code_partition)
BUILD_ASSERT(SYN_STORE_CLEAR_OF_PARTITION(DT_CHOSEN(zephyr_code_partition)),
	     "chosen synaptic,model-store overlaps the running image (chosen zephyr,code-partition)");
#endif
#endif

#ifdef SYN_STORE_IN_CPU1_BANK
const uint32_t syn_dt_store_in_cpu1_bank = SYN_STORE_IN_CPU1_BANK;
#else
const uint32_t syn_dt_store_in_cpu1_bank = 0;
#endif
