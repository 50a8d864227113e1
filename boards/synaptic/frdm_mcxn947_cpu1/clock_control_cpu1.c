/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Clock control on CPU1 of the MCXN947: the clocks are CPU0's.
 *
 * CPU0 configures every clock (PLLs, dividers, peripheral gates) before it
 * releases CPU1, so CPU1's drivers find their clocks running. This stands
 * in for NXP's syscon driver on the syscon node: "on" and "off" succeed
 * without touching the hardware (gating a clock CPU0 owns would break CPU0),
 * and rate queries are not answered here (-ENOTSUP): the HAL's rate code
 * computes PLL rates in floating point, which this FPU-less core must not
 * link.
 */

#define DT_DRV_COMPAT nxp_lpc_syscon

#include <errno.h>
#include <zephyr/device.h>
#include <zephyr/drivers/clock_control.h>

static int syn_cpu1_clock_on(const struct device *dev, clock_control_subsys_t sys)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(sys);
	return 0;
}

static int syn_cpu1_clock_off(const struct device *dev, clock_control_subsys_t sys)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(sys);
	return 0;
}

static int syn_cpu1_clock_rate(const struct device *dev, clock_control_subsys_t sys,
			       uint32_t *rate)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(sys);
	ARG_UNUSED(rate);
	return -ENOTSUP;
}

static DEVICE_API(clock_control, syn_cpu1_clock_api) = {
	.on = syn_cpu1_clock_on,
	.off = syn_cpu1_clock_off,
	.get_rate = syn_cpu1_clock_rate,
};

DEVICE_DT_INST_DEFINE(0, NULL, NULL, NULL, NULL, PRE_KERNEL_1,
		      CONFIG_CLOCK_CONTROL_INIT_PRIORITY, &syn_cpu1_clock_api);
