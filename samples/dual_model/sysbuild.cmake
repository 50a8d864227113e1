# SPDX-License-Identifier: Apache-2.0
# Two images, one build: CPU1's image (cpu1/, built first; QEMU loads it
# next to this one).
synaptic_cpu1_image(dual_model_cpu1)

# The real networks: the CPU interpreter in CPU0's image, the real test
# inputs in CPU1's (SB_CONFIG_SYNAPTIC_CPU_INTERPRETER, Kconfig.sysbuild).
if(SB_CONFIG_SYNAPTIC_CPU_INTERPRETER)
  set_config_bool(${DEFAULT_IMAGE} CONFIG_SYNAPTIC_CPU_INTERPRETER y)
  set_config_bool(dual_model_cpu1 CONFIG_SYNAPTIC_CPU_INTERPRETER y)
endif()
