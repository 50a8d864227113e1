//! Rust test cases as real ztest units.
//!
//! [`ztest_suite!`](crate::ztest_suite) places one `struct ztest_suite_node`
//! and one `struct ztest_unit_test` per case into ztest's iterable sections,
//! with exactly the layouts and symbol names that `ZTEST_SUITE()` and
//! `ZTEST()` produce in C. ztest's own `main()` runs them, prints
//! `START - case` / `PASS - case` / `FAIL - case`, and twister, which learns
//! the expected cases from the `z_ztest_unit_test__<suite>__<case>` symbols,
//! reports each case with its own status.
//!
//! A case is a `fn() -> Outcome` (crate `synaptic-check`), so the same body
//! can also run under `cargo test` on the host. The checks
//! ([`zassert!`](crate::zassert), [`zassert_eq!`](crate::zassert_eq),
//! [`zskip!`](crate::zskip), re-exported from `synaptic-check`) return early
//! with a [`Failure`] that names the file, line and condition; the case then
//! fails through `ztest_test_fail()`. A panic inside a case fails that case
//! too (the module's C glue routes the panic to ztest).
//!
//! The application links with `synaptic_rust_ztest_application(SUITES ...)`
//! (module CMake), which keeps each suite's symbol so the static library's
//! object holding the registrations is linked.

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_void};

pub use synaptic_check::{Failure, Outcome};

/// `struct ztest_unit_test_stats`.
#[repr(C)]
pub struct UnitTestStats {
    run_count: u32,
    skip_count: u32,
    fail_count: u32,
    pass_count: u32,
    duration_worst_ms: u32,
}

/// `struct ztest_suite_stats`.
#[repr(C)]
pub struct SuiteStats {
    run_count: u32,
    skip_count: u32,
    fail_count: u32,
}

/// Statistics that ztest writes: mutable memory behind a shared static.
#[repr(transparent)]
pub struct StatsCell<T>(UnsafeCell<T>);

// SAFETY: only ztest writes the statistics, from its single runner thread;
// Rust code never reads or writes them.
unsafe impl<T> Sync for StatsCell<T> {}

impl StatsCell<UnitTestStats> {
    /// Zeroed case statistics.
    pub const fn new() -> Self {
        StatsCell(UnsafeCell::new(UnitTestStats {
            run_count: 0,
            skip_count: 0,
            fail_count: 0,
            pass_count: 0,
            duration_worst_ms: 0,
        }))
    }
}

impl StatsCell<SuiteStats> {
    /// Zeroed suite statistics.
    pub const fn new() -> Self {
        StatsCell(UnsafeCell::new(SuiteStats {
            run_count: 0,
            skip_count: 0,
            fail_count: 0,
        }))
    }
}

impl<T> StatsCell<T> {
    /// The pointer ztest writes through.
    pub const fn as_mut_ptr(&self) -> *mut T {
        self.0.get()
    }
}

/// `struct ztest_unit_test`.
#[repr(C)]
pub struct UnitTest {
    test_suite_name: *const c_char,
    name: *const c_char,
    test: Option<unsafe extern "C" fn(*mut c_void)>,
    thread_options: u32,
    stats: *mut UnitTestStats,
}

// SAFETY: a constant record; its pointers name static strings, a static
// function and a `StatsCell` that only ztest touches.
unsafe impl Sync for UnitTest {}

impl UnitTest {
    /// A case record. `suite` and `name` must end in a NUL byte.
    pub const fn new(
        suite: &'static str,
        name: &'static str,
        test: unsafe extern "C" fn(*mut c_void),
        stats: &'static StatsCell<UnitTestStats>,
    ) -> Self {
        assert!(ends_in_nul(suite) && ends_in_nul(name));
        // Twister derives case names from the registration symbols and drops
        // a "test_" it finds in them, so such a case would be reported under
        // another name, without a status.
        assert!(
            !contains(name.as_bytes(), b"test_"),
            "a ztest case name must not contain \"test_\""
        );
        UnitTest {
            test_suite_name: suite.as_ptr().cast(),
            name: name.as_ptr().cast(),
            test: Some(test),
            thread_options: 0,
            stats: stats.as_mut_ptr(),
        }
    }
}

type SetupFn = unsafe extern "C" fn() -> *mut c_void;
type FixtureFn = unsafe extern "C" fn(*mut c_void);
type PredicateFn = unsafe extern "C" fn(*const c_void) -> bool;

/// `struct ztest_suite_node`.
#[repr(C)]
pub struct SuiteNode {
    name: *const c_char,
    setup: Option<SetupFn>,
    before: Option<FixtureFn>,
    after: Option<FixtureFn>,
    teardown: Option<FixtureFn>,
    predicate: Option<PredicateFn>,
    stats: *mut SuiteStats,
}

// SAFETY: as for `UnitTest`.
unsafe impl Sync for SuiteNode {}

impl SuiteNode {
    /// A suite record without fixtures. `name` must end in a NUL byte.
    pub const fn new(name: &'static str, stats: &'static StatsCell<SuiteStats>) -> Self {
        assert!(ends_in_nul(name));
        SuiteNode {
            name: name.as_ptr().cast(),
            setup: None,
            before: None,
            after: None,
            teardown: None,
            predicate: None,
            stats: stats.as_mut_ptr(),
        }
    }
}

const fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let mut start = 0;
    while start + needle.len() <= haystack.len() {
        let mut i = 0;
        while i < needle.len() && haystack[start + i] == needle[i] {
            i += 1;
        }
        if i == needle.len() {
            return true;
        }
        start += 1;
    }
    false
}

const fn ends_in_nul(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty() && bytes[bytes.len() - 1] == 0
}

extern "C" {
    fn ztest_test_fail();
    fn ztest_test_skip();
}

/// Run one case and report its outcome to ztest. Called by the trampolines
/// that [`ztest_suite!`](crate::ztest_suite) generates.
pub fn run_case(case: fn() -> Outcome) {
    match case() {
        Ok(()) => {}
        Err(failure @ (Failure::Check { .. } | Failure::NotEqual { .. })) => {
            printkln!("\n    Assertion failed at {}", failure);
            // SAFETY: called from the ztest case thread during the test phase,
            // where ztest_test_fail() marks the case failed and ends the thread.
            unsafe { ztest_test_fail() };
        }
        Err(Failure::Skip(why)) => {
            printkln!("    skipped: {}", why);
            // SAFETY: as above; ztest_test_skip() marks the case skipped.
            unsafe { ztest_test_skip() };
        }
    }
}

/// Register a suite of Rust test cases with ztest.
///
/// ```ignore
/// fn message_is_20_bytes() -> Outcome {
///     zassert_eq!(core::mem::size_of::<Message>(), 20);
///     Ok(())
/// }
/// ztest_suite!(abi_smoke { message_is_20_bytes });
/// ```
///
/// Twister reports the case as `abi_smoke.message_is_20_bytes`.
#[macro_export]
macro_rules! ztest_suite {
    ($suite:ident { $($case:ident),+ $(,)? }) => {
        const _: () = {
            static SUITE_STATS: $crate::ztest::StatsCell<$crate::ztest::SuiteStats> =
                $crate::ztest::StatsCell::<$crate::ztest::SuiteStats>::new();

            #[used]
            #[link_section = concat!("._ztest_suite_node.static.z_ztest_test_node_", stringify!($suite))]
            #[export_name = concat!("z_ztest_test_node_", stringify!($suite))]
            static SUITE: $crate::ztest::SuiteNode =
                $crate::ztest::SuiteNode::new(concat!(stringify!($suite), "\0"), &SUITE_STATS);

            $(
                const _: () = {
                    static STATS: $crate::ztest::StatsCell<$crate::ztest::UnitTestStats> =
                        $crate::ztest::StatsCell::<$crate::ztest::UnitTestStats>::new();

                    unsafe extern "C" fn trampoline(_fixture: *mut ::core::ffi::c_void) {
                        $crate::ztest::run_case($case);
                    }

                    #[used]
                    #[link_section = concat!(
                        "._ztest_unit_test.static.z_ztest_unit_test__",
                        stringify!($suite), "__", stringify!($case)
                    )]
                    #[export_name = concat!(
                        "z_ztest_unit_test__", stringify!($suite), "__", stringify!($case)
                    )]
                    static CASE: $crate::ztest::UnitTest = $crate::ztest::UnitTest::new(
                        concat!(stringify!($suite), "\0"),
                        concat!(stringify!($case), "\0"),
                        trampoline,
                        &STATS,
                    );
                };
            )+
        };
    };
}
