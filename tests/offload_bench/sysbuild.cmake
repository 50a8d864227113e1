# SPDX-License-Identifier: Apache-2.0
# Two images, one build: CPU1's image (cpu1/, built first; QEMU loads it
# next to this one).
synaptic_cpu1_image(offload_bench_cpu1)
