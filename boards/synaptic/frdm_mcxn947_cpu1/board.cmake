# SPDX-License-Identifier: Apache-2.0
# Flash CPU1's image into bank 1; CPU0's image releases the core.

board_runner_args(jlink "--device=MCXN947_M33_1" "--reset-after-load")
board_runner_args(linkserver "--device=MCXN947:FRDM-MCXN947")
board_runner_args(linkserver "--core=cm33_core1")

include(${ZEPHYR_BASE}/boards/common/linkserver.board.cmake)
include(${ZEPHYR_BASE}/boards/common/jlink.board.cmake)
