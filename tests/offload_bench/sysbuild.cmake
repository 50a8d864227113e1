# SPDX-License-Identifier: Apache-2.0
# Two images, one build: CPU1's image (cpu1/, built first; QEMU loads it
# next to this one).
synaptic_cpu1_image(offload_bench_cpu1)

# The placement phases (SB_CONFIG_OFFLOAD_BENCH_PLACEMENT, Kconfig.sysbuild):
# the CPU interpreter and the same slot geometry in both images.
if(SB_CONFIG_OFFLOAD_BENCH_PLACEMENT)
  foreach(image ${DEFAULT_IMAGE} offload_bench_cpu1)
    set_config_bool(${image} CONFIG_SYNAPTIC_CPU_INTERPRETER y)
    set_config_int(${image} CONFIG_SYNAPTIC_EXCHANGE_SLOTS 8)
    set_config_int(${image} CONFIG_SYNAPTIC_EXCHANGE_SMALL_INPUT 2048)
    set_config_int(${image} CONFIG_SYNAPTIC_EXCHANGE_SMALL_OUTPUT 16)
  endforeach()
  # A job per slot: a ninth request would be refused (-EAGAIN).
  set_config_int(${DEFAULT_IMAGE} CONFIG_SYNAPTIC_MAX_JOBS 8)
endif()
