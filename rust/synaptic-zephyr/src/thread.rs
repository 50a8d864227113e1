//! A thread in a static, started at most once: the client's dispatch
//! thread on CPU1 and the serving thread on CPU0. `#[zephyr::thread]` keeps
//! a pool: it scans for a free entry under a critical section, joins exited
//! threads to reuse them, panics when none is free, and its pool entry is
//! initialised data (flash). A thread started once and never restarted
//! needs none of that, and both images are held to a flash budget.

use core::ffi::{c_void, CStr};
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, Ordering};

use zephyr::raw;
use zephyr::thread::{Thread, ThreadStack};

/// A thread's entry: the kernel calls it with the argument `start` gave.
pub type Entry = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void);

/// A `k_thread` started at most once, then owned by the kernel.
pub struct StaticThread {
    thread: Thread,
    started: AtomicBool,
}

// SAFETY: the thread object is reached only through `start`, which the
// `started` flag lets run its body once; afterwards only the kernel
// touches it.
unsafe impl Sync for StaticThread {}

impl StaticThread {
    /// A thread not yet started.
    pub const fn new() -> Self {
        StaticThread {
            // SAFETY: a zeroed k_thread, as C's static declarations give;
            // `start` creates it.
            thread: unsafe { Thread::new() },
            started: AtomicBool::new(false),
        }
    }

    /// Run `entry(arg)` on `stack` at `priority` from now on, named `name`
    /// (what the kernel shell and fault reports show with
    /// `CONFIG_THREAD_NAME`); `false` when this thread was started already.
    ///
    /// # Safety
    ///
    /// `stack` is used by no other thread, and `arg` is what `entry`
    /// expects for as long as the thread runs.
    pub unsafe fn start<const SIZE: usize>(
        &'static self,
        stack: &'static ThreadStack<SIZE>,
        entry: Entry,
        arg: *mut c_void,
        priority: i32,
        name: &'static CStr,
    ) -> bool {
        #[cfg(not(CONFIG_THREAD_NAME))]
        let _ = name;
        if self.started.swap(true, Ordering::AcqRel) {
            return false;
        }
        // SAFETY: the flag makes this the one creation of this static
        // k_thread; the stack is static and this thread's alone (caller's
        // contract), and so is what `arg` means to `entry`.
        unsafe {
            let tid = raw::k_thread_create(
                self.thread.0.get(),
                stack.data.get().cast(),
                stack.size(),
                Some(entry),
                arg,
                null_mut(),
                null_mut(),
                priority,
                0,
                zephyr::sys::K_FOREVER,
            );
            // Named before it runs (only a name the kernel keeps).
            #[cfg(CONFIG_THREAD_NAME)]
            let _ = raw::k_thread_name_set(tid, name.as_ptr());
            raw::k_thread_start(tid);
        }
        true
    }
}

impl Default for StaticThread {
    fn default() -> Self {
        StaticThread::new()
    }
}
