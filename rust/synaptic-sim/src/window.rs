//! The shared SRAM window of the simulated part: one heap allocation that
//! both "cores" reach only through [`SharedRegion`].
//!
//! Invariants: 96 KiB (the MCXN947/AN521 shared window), 64-byte aligned
//! (the ABI's cache-line placement of the rings and the pool), zeroed at
//! creation, freed only when the window is dropped, which the borrow of
//! every region view prevents while a core still runs.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use synaptic_abi::SlotGeometry;
use synaptic_serve::SharedRegion;

use crate::RING;

/// The exchange slots of the simulated region: K = 4, the frame slot
/// (27,648 in / 4,096 out) and three small slots (4,096 / 1,024), the
/// Kconfig default.
pub const SLOTS: SlotGeometry = SlotGeometry::DEFAULT;

/// Bytes of the shared window (the platforms' 96 KiB).
pub const SHARED_SIZE: usize = synaptic_abi::memory_map::SHARED_SIZE as usize;

/// Alignment of the window (a cache line, as the ABI's layout assumes).
const WINDOW_ALIGN: usize = 64;

/// The shared window.
#[derive(Debug)]
pub struct SharedWindow {
    base: NonNull<u8>,
    layout: Layout,
}

impl SharedWindow {
    /// A zeroed window.
    ///
    /// # Panics
    ///
    /// When the allocation fails.
    pub fn new() -> SharedWindow {
        let layout = Layout::from_size_align(SHARED_SIZE, WINDOW_ALIGN).expect("window layout");
        // SAFETY: the layout has a non-zero size.
        let base = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("window allocation");
        SharedWindow { base, layout }
    }

    /// The region view of the window, without touching its contents (what a
    /// core attaching to a live region does).
    ///
    /// # Panics
    ///
    /// Never for this window's size and alignment.
    pub fn region(&self) -> SharedRegion<'_, RING> {
        // SAFETY: `base` points to SHARED_SIZE bytes, 64-aligned, that stay
        // allocated for the borrow of `self`; they are reached only through
        // region views (this crate never touches them otherwise).
        unsafe { SharedRegion::from_raw(self.base, SHARED_SIZE, SLOTS) }
            .expect("window fits the region")
    }

    /// Publish the region as CPU0 does at boot (control block, empty rings,
    /// empty service-time table, zeroed slots) and return the view.
    pub fn publish(&mut self) -> SharedRegion<'_, RING> {
        let region = self.region();
        // SAFETY: `&mut self` proves no other view of this window exists, so
        // no ring handle is in use and no "core" runs yet.
        unsafe { region.publish() };
        region
    }
}

impl Default for SharedWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SharedWindow {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; no view outlives the
        // borrow of `self` it came from.
        unsafe { dealloc(self.base.as_ptr(), self.layout) }
    }
}
