//! Test support: a heap stand-in for the shared SRAM window, aligned like
//! the real one, a silent doorbell and a counting one.
#![allow(dead_code)]

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{SlotGeometry, RING_ENTRIES_DEFAULT};
use synaptic_ipc::Doorbell;
use synaptic_serve::SharedRegion;

/// Ring entries of the test region.
pub const N: usize = RING_ENTRIES_DEFAULT;
/// Bytes of the test region (the platforms' 96 KiB window).
pub const SIZE: usize = 96 * 1024;
/// The slot geometry of the test region (K = 4: the frame slot and three
/// small slots).
pub const SLOTS: SlotGeometry = SlotGeometry::DEFAULT;

/// Zeroed, 64-byte aligned memory standing in for the shared window.
pub struct Window {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Window {
    pub fn new() -> Window {
        let layout = Layout::from_size_align(SIZE, 64).unwrap();
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("allocation");
        Window { ptr, layout }
    }

    /// The region over this window, published as CPU0 does at boot.
    pub fn region(&self) -> SharedRegion<'_, N> {
        // SAFETY: the allocation is SIZE bytes, 64-aligned, lives as long as
        // the borrow of `self`, and is only reached through the region.
        let region = unsafe { SharedRegion::from_raw(self.ptr, SIZE, SLOTS) }.unwrap();
        // SAFETY: no ring handle exists yet.
        unsafe { region.publish() };
        region
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A doorbell that rings nobody (the test drives both sides by hand).
pub struct Silent;

impl Doorbell for Silent {
    fn ring(&self) {}
}

/// A doorbell that only counts its interrupts and its events.
#[derive(Default)]
pub struct Counting {
    pub rings: AtomicU32,
    pub events: AtomicU32,
}

impl Counting {
    pub fn rings(&self) -> u32 {
        self.rings.load(Ordering::SeqCst)
    }

    pub fn events(&self) -> u32 {
        self.events.load(Ordering::SeqCst)
    }
}

impl Doorbell for Counting {
    fn ring(&self) {
        self.rings.fetch_add(1, Ordering::SeqCst);
    }

    fn event(&self) {
        self.events.fetch_add(1, Ordering::SeqCst);
    }
}
