# SPDX-License-Identifier: Apache-2.0
# Two images, one build: CPU1's image is built first so that CPU0's QEMU run
# can load it.
ExternalZephyrProject_Add(
  APPLICATION ipc_c_cpu1
  SOURCE_DIR ${APP_DIR}/cpu1
  BOARD ${SB_CONFIG_SYNAPTIC_CPU1_BOARD}
)
add_dependencies(${DEFAULT_IMAGE} ipc_c_cpu1)
sysbuild_add_dependencies(CONFIGURE ${DEFAULT_IMAGE} ipc_c_cpu1)
