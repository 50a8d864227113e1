/*
 * Glue for Rust test cases registered as ztest units.
 *
 * The Rust statics live in ztest's iterable sections and ztest's own main()
 * runs them; this file supplies what zephyr-lang-rust's main.c would have.
 */

#include <zephyr/kernel.h>
#include <zephyr/ztest.h>

/*
 * The zephyr crate's panic handler prints the panic and calls this. Inside a
 * test case, fail the case (ztest aborts the test thread and reports FAIL);
 * anywhere else, a panic is fatal as usual.
 */
FUNC_NORETURN void rust_panic_wrap(void)
{
	ztest_test_fail();
	k_panic();
	CODE_UNREACHABLE;
}
