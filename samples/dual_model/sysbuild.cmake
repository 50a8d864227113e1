# SPDX-License-Identifier: Apache-2.0
# Two images, one build: CPU1's image is built first so that CPU0's QEMU run
# can load it.
ExternalZephyrProject_Add(
  APPLICATION dual_model_cpu1
  SOURCE_DIR ${APP_DIR}/cpu1
  BOARD ${SB_CONFIG_SYNAPTIC_CPU1_BOARD}
)
add_dependencies(${DEFAULT_IMAGE} dual_model_cpu1)
sysbuild_add_dependencies(CONFIGURE ${DEFAULT_IMAGE} dual_model_cpu1)

# The real networks: the CPU interpreter in CPU0's image, the real test
# inputs in CPU1's (SB_CONFIG_SYNAPTIC_CPU_INTERPRETER, Kconfig.sysbuild).
if(SB_CONFIG_SYNAPTIC_CPU_INTERPRETER)
  set_config_bool(${DEFAULT_IMAGE} CONFIG_SYNAPTIC_CPU_INTERPRETER y)
  set_config_bool(dual_model_cpu1 CONFIG_SYNAPTIC_CPU_INTERPRETER y)
endif()
