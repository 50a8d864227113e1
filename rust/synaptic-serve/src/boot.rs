//! Boot: CPU0 publishes the shared region, proves CPU1's image executable,
//! releases CPU1 and waits for it within two budgets; CPU1 checks the
//! region and attaches.
//!
//! The sequence: stamp the control block and zero the rings
//! ([`SharedRegion::publish`], which also sets `cpu0_ready`; the caller
//! does it before it starts the threads that use the rings), then
//! [`boot_cpu1`]: read
//! CPU1's vector table through the platform and check it
//! ([`check_vectors`]), release CPU1, poll `cpu1_ready` (budget
//! [`Budgets::cpu1_ready_us`], 100 ms by default), then wait for the first
//! `STATUS_REQ` CPU1 sends once attached (budget
//! [`Budgets::first_status_us`], 200 ms). Without an image the link is
//! [`Link::Down`] and CPU0 goes on alone (single-core mode).
//!
//! What differs between SoCs is behind [`BootPlatform`]: how the two vector
//! words are read (on the MCXN947 through the ROM API's flash commands,
//! because a bus read of erased flash raises an error that wedges the chip;
//! on the AN521 a plain read) and how CPU1 is released.
//!
//! CPU1's side is [`attach`]: check magic, layout version, ring geometry
//! and shared size, then set `cpu1_ready`. It never writes ring indices, so
//! a CPU1 that restarts re-attaches to the live rings with nothing from CPU0.

use core::ops::Range;

use synaptic_abi::{Core, Errno};

use crate::region::{RegionError, SharedRegion};

/// The first two words of CPU1's vector table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorTable {
    /// Initial main stack pointer.
    pub initial_sp: u32,
    /// Reset handler address (Thumb bit set).
    pub reset: u32,
}

/// Where CPU1's stack and code may lie, in CPU1's own lens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageBounds {
    /// CPU1's RAM: the initial SP must be in `ram.start + 1 ..= ram.end`
    /// (a full-descending stack starts at the top).
    pub ram: Range<u32>,
    /// CPU1's image: the reset handler must lie inside.
    pub image: Range<u32>,
}

/// Why CPU1 was not started, or a platform step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BootError {
    /// The vector words are erased (all ones) or blank (all zeros): no image.
    ImageAbsent,
    /// The reset vector lacks the Thumb bit.
    NotThumb {
        /// The reset vector read.
        reset: u32,
    },
    /// The initial SP is not inside CPU1's RAM.
    StackOutsideRam {
        /// The initial SP read.
        initial_sp: u32,
    },
    /// The reset handler is not inside CPU1's image.
    ResetOutsideImage {
        /// The reset vector read.
        reset: u32,
    },
    /// The platform (ROM API, release registers) failed with this negative
    /// errno or vendor status.
    Platform(i32),
}

impl BootError {
    /// The errno at the C boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            BootError::ImageAbsent => Errno::NoEnt,
            BootError::NotThumb { .. }
            | BootError::StackOutsideRam { .. }
            | BootError::ResetOutsideImage { .. } => Errno::NoExec,
            BootError::Platform(_) => Errno::Io,
        }
    }
}

/// Check a vector table against CPU1's bounds.
///
/// # Errors
///
/// [`BootError::ImageAbsent`] for erased or blank words, else the first
/// rule broken: Thumb bit, stack inside RAM, reset inside the image.
pub fn check_vectors(vectors: VectorTable, bounds: &ImageBounds) -> Result<VectorTable, BootError> {
    let VectorTable { initial_sp, reset } = vectors;
    let erased = initial_sp == u32::MAX && reset == u32::MAX;
    let blank = initial_sp == 0 && reset == 0;
    if erased || blank {
        return Err(BootError::ImageAbsent);
    }
    if reset & 1 == 0 {
        return Err(BootError::NotThumb { reset });
    }
    if initial_sp <= bounds.ram.start || initial_sp > bounds.ram.end {
        return Err(BootError::StackOutsideRam { initial_sp });
    }
    if !bounds.image.contains(&(reset & !1)) {
        return Err(BootError::ResetOutsideImage { reset });
    }
    Ok(vectors)
}

/// What one SoC does to start its second core.
pub trait BootPlatform {
    /// Where CPU1's stack and code may lie (CPU1's lens).
    fn bounds(&self) -> ImageBounds;

    /// Read the first two words of CPU1's vector table, without a bus read
    /// of flash that may be erased.
    ///
    /// # Errors
    ///
    /// [`BootError::ImageAbsent`] when the platform can tell that no image
    /// is programmed (e.g. the flash verifies erased), or
    /// [`BootError::Platform`].
    fn read_vectors(&mut self) -> Result<VectorTable, BootError>;

    /// Start CPU1 at its vector table (boot address in CPU1's lens).
    ///
    /// # Errors
    ///
    /// [`BootError::Platform`].
    fn release(&mut self) -> Result<(), BootError>;
}

/// Time as the boot sequence needs it: a clock and a sleep.
pub trait BootClock {
    /// Microseconds since an arbitrary origin; never decreases.
    fn now_us(&self) -> u64;
    /// Let at least `us` microseconds pass (sleeping, where there is a
    /// scheduler).
    fn sleep_us(&self, us: u32);
}

/// How long CPU0 waits for CPU1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// From release to `cpu1_ready`.
    pub cpu1_ready_us: u64,
    /// From release to CPU1's first `STATUS_REQ`.
    pub first_status_us: u64,
    /// Poll period while waiting.
    pub poll_us: u32,
}

impl Default for Budgets {
    /// 100 ms to `cpu1_ready`, 200 ms to the first `STATUS_REQ`, 1 ms polls.
    fn default() -> Self {
        Budgets {
            cpu1_ready_us: 100_000,
            first_status_us: 200_000,
            poll_us: 1_000,
        }
    }
}

/// Why the link to CPU1 is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Down {
    /// No image: single-core mode, by design.
    ImageAbsent,
    /// An image is there but is not a CPU1 vector table.
    ImageInvalid(BootError),
    /// The platform could not read the image or release CPU1.
    Platform(BootError),
    /// CPU1 did not set `cpu1_ready` within the budget.
    NotReady,
    /// CPU1 announced another layout version and refused the region (a
    /// v1 image announces nothing and shows as [`Down::NotReady`]).
    Version(u32),
    /// CPU1 attached but sent no `STATUS_REQ` within the budget.
    NoStatus,
}

/// The state of the link after boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// CPU1 attached and its first `STATUS_REQ` arrived.
    Up,
    /// CPU0 runs alone.
    Down(Down),
}

/// What [`boot_cpu1`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootReport {
    /// The link.
    pub link: Link,
    /// The vector table read, when one was.
    pub vectors: Option<VectorTable>,
    /// Release to `cpu1_ready`, microseconds.
    pub ready_us: Option<u64>,
    /// Release to the first `STATUS_REQ`, microseconds.
    pub handshake_us: Option<u64>,
}

impl BootReport {
    /// Whether CPU1 is serving-ready.
    pub fn is_up(&self) -> bool {
        self.link == Link::Up
    }
}

/// Boot CPU1 over a published `region`: check and release the image, and
/// wait for `cpu1_ready` and then for `first_status()` (true once the
/// serving thread has answered a `STATUS_REQ`) within `budgets`.
///
/// Publish the region first ([`SharedRegion::publish`]); CPU1's attach
/// refuses an unpublished one, so forgetting it shows as
/// [`Down::NotReady`].
pub fn boot_cpu1<const N: usize, P: BootPlatform + ?Sized>(
    region: &SharedRegion<'_, N>,
    platform: &mut P,
    clock: &impl BootClock,
    budgets: Budgets,
    first_status: impl Fn() -> bool,
) -> BootReport {
    let mut report = BootReport {
        link: Link::Down(Down::ImageAbsent),
        vectors: None,
        ready_us: None,
        handshake_us: None,
    };
    let vectors = match platform.read_vectors() {
        Ok(v) => v,
        Err(BootError::ImageAbsent) => return report,
        Err(e) => {
            report.link = Link::Down(Down::Platform(e));
            return report;
        }
    };
    report.vectors = Some(vectors);
    match check_vectors(vectors, &platform.bounds()) {
        Ok(_) => {}
        Err(BootError::ImageAbsent) => return report,
        Err(e) => {
            report.link = Link::Down(Down::ImageInvalid(e));
            return report;
        }
    }
    if let Err(e) = platform.release() {
        report.link = Link::Down(Down::Platform(e));
        return report;
    }
    let released = clock.now_us();
    let waited = |budget: u64, done: &dyn Fn() -> bool| -> Option<u64> {
        loop {
            let elapsed = clock.now_us().saturating_sub(released);
            if done() {
                return Some(elapsed);
            }
            if elapsed > budget {
                return None;
            }
            clock.sleep_us(budgets.poll_us);
        }
    };
    report.ready_us = waited(budgets.cpu1_ready_us, &|| region.is_ready(Core::Cpu1));
    if report.ready_us.is_none() {
        let announced = region.control_block().cpu1_layout_version;
        report.link = if announced != 0 && announced != synaptic_abi::LAYOUT_VERSION {
            Link::Down(Down::Version(announced))
        } else {
            Link::Down(Down::NotReady)
        };
        return report;
    }
    report.handshake_us = waited(budgets.first_status_us, &first_status);
    report.link = if report.handshake_us.is_some() {
        Link::Up
    } else {
        Link::Down(Down::NoStatus)
    };
    report
}

/// CPU1's attach: announce this image's layout version, check that the
/// control block describes this image's layout (magic, version, ring
/// entries, shared size, slot geometry) and that CPU0 is ready, then set
/// `cpu1_ready`. Ring indices are left as they are.
///
/// # Errors
///
/// [`RegionError::Layout`] with the first mismatch; `Layout(NotReady)`
/// style errors come back as [`AttachError::Cpu0NotReady`].
pub fn attach<const N: usize>(region: &SharedRegion<'_, N>) -> Result<(), AttachError> {
    region.announce_cpu1_version();
    region.check().map_err(AttachError::Region)?;
    if !region.is_ready(Core::Cpu0) {
        return Err(AttachError::Cpu0NotReady);
    }
    region.set_ready(Core::Cpu1);
    Ok(())
}

/// Why CPU1 could not attach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachError {
    /// The control block does not describe this image's layout.
    Region(RegionError),
    /// CPU0 has not published the region (`cpu0_ready` clear).
    Cpu0NotReady,
}

#[cfg(test)]
mod tests {
    extern crate std;

    use core::cell::Cell;
    use core::ptr::NonNull;
    use std::vec;

    use core::sync::atomic::{AtomicU32, Ordering};

    use synaptic_abi::{region_size, LayoutError, SlotGeometry, LAYOUT_VERSION};

    use super::*;

    const N: usize = 16;

    fn bounds() -> ImageBounds {
        ImageBounds {
            ram: 0x2005_8000..0x2006_8000,
            image: 0x0010_0000..0x0014_0000,
        }
    }

    #[test]
    fn vector_rules() {
        let ok = VectorTable {
            initial_sp: 0x2006_8000,
            reset: 0x0010_0141,
        };
        assert_eq!(check_vectors(ok, &bounds()), Ok(ok));
        let absent = [(u32::MAX, u32::MAX), (0, 0)];
        for (initial_sp, reset) in absent {
            let v = VectorTable { initial_sp, reset };
            assert_eq!(check_vectors(v, &bounds()), Err(BootError::ImageAbsent));
        }
        let even = VectorTable {
            reset: 0x0010_0140,
            ..ok
        };
        assert_eq!(
            check_vectors(even, &bounds()),
            Err(BootError::NotThumb { reset: 0x0010_0140 })
        );
        for initial_sp in [0x2005_8000, 0x2006_8004, 0x2000_0000] {
            let v = VectorTable { initial_sp, ..ok };
            assert_eq!(
                check_vectors(v, &bounds()),
                Err(BootError::StackOutsideRam { initial_sp })
            );
        }
        let far = VectorTable {
            reset: 0x0014_0001,
            ..ok
        };
        assert_eq!(
            check_vectors(far, &bounds()),
            Err(BootError::ResetOutsideImage { reset: 0x0014_0001 })
        );
        assert_eq!(BootError::ImageAbsent.to_errno(), Errno::NoEnt);
    }

    /// A fake SoC: vectors to hand out, and what CPU1 does once released.
    struct Fake<'a, F: Fn()> {
        vectors: Result<VectorTable, BootError>,
        released: &'a Cell<bool>,
        on_release: F,
    }

    impl<F: Fn()> BootPlatform for Fake<'_, F> {
        fn bounds(&self) -> ImageBounds {
            bounds()
        }
        fn read_vectors(&mut self) -> Result<VectorTable, BootError> {
            self.vectors
        }
        fn release(&mut self) -> Result<(), BootError> {
            self.released.set(true);
            (self.on_release)();
            Ok(())
        }
    }

    /// Fake time: sleeping advances it, and runs a hook (CPU1's progress).
    struct FakeClock<'a> {
        now: Cell<u64>,
        tick: &'a dyn Fn(u64),
    }

    impl BootClock for FakeClock<'_> {
        fn now_us(&self) -> u64 {
            self.now.get()
        }
        fn sleep_us(&self, us: u32) {
            self.now.set(self.now.get() + u64::from(us));
            (self.tick)(self.now.get());
        }
    }

    fn with_region(publish: bool, body: impl FnOnce(SharedRegion<'_, N>)) {
        with_raw_region(publish, |region, _| body(region));
    }

    /// As [`with_region`], also handing out the control block's words, for
    /// a test that plays a peer of another layout version.
    fn with_raw_region(publish: bool, body: impl FnOnce(SharedRegion<'_, N>, &[AtomicU32])) {
        let words = region_size::<N>(SlotGeometry::DEFAULT).div_ceil(16) * 4;
        // A u128 buffer: 16-byte aligned, as the region requires.
        let mut buffer = vec![0u128; words / 4 + 1];
        let base = NonNull::new(buffer.as_mut_ptr().cast::<u8>()).expect("buffer");
        // SAFETY: the buffer outlives the view and is used only through it
        // (and through the control-block words below, atomically).
        let region = unsafe { SharedRegion::<N>::from_raw(base, words * 4, SlotGeometry::DEFAULT) }
            .expect("region");
        if publish {
            // SAFETY: no ring handle exists yet.
            unsafe { region.publish() };
        }
        // SAFETY: the control block's 16 words lie at the start of the
        // buffer, 4-aligned, valid while `buffer` lives; they are only ever
        // accessed atomically (by the region and by the test).
        let control = unsafe {
            core::slice::from_raw_parts(base.as_ptr().cast::<AtomicU32>().cast_const(), 16)
        };
        body(region, control);
    }

    const GOOD: VectorTable = VectorTable {
        initial_sp: 0x2006_8000,
        reset: 0x0010_0141,
    };

    #[test]
    fn link_up_reports_both_times() {
        with_region(true, |region| {
            let released = Cell::new(false);
            let status = Cell::new(false);
            // CPU1 attaches 3 ms after release and asks for status at 5 ms.
            let tick = |now: u64| {
                if now >= 3_000 && !region.is_ready(Core::Cpu1) {
                    attach(&region).expect("attach");
                }
                if now >= 5_000 {
                    status.set(true);
                }
            };
            let clock = FakeClock {
                now: Cell::new(0),
                tick: &tick,
            };
            let mut soc = Fake {
                vectors: Ok(GOOD),
                released: &released,
                on_release: || {},
            };
            let report = boot_cpu1(&region, &mut soc, &clock, Budgets::default(), || {
                status.get()
            });
            assert!(released.get());
            assert_eq!(report.link, Link::Up);
            assert_eq!(report.ready_us, Some(3_000));
            assert_eq!(report.handshake_us, Some(5_000));
            assert!(region.is_ready(Core::Cpu0));
        });
    }

    #[test]
    fn absent_invalid_silent() {
        with_region(true, |region| {
            let released = Cell::new(false);
            let clock = FakeClock {
                now: Cell::new(0),
                tick: &|_| {},
            };
            let cases = [
                (
                    Err(BootError::ImageAbsent),
                    Link::Down(Down::ImageAbsent),
                    false,
                ),
                (
                    Ok(VectorTable {
                        initial_sp: u32::MAX,
                        reset: u32::MAX,
                    }),
                    Link::Down(Down::ImageAbsent),
                    false,
                ),
                (
                    Ok(VectorTable {
                        reset: 0x0010_0140,
                        ..GOOD
                    }),
                    Link::Down(Down::ImageInvalid(BootError::NotThumb {
                        reset: 0x0010_0140,
                    })),
                    false,
                ),
                (
                    Err(BootError::Platform(-5)),
                    Link::Down(Down::Platform(BootError::Platform(-5))),
                    false,
                ),
                // A good image whose CPU1 never attaches.
                (Ok(GOOD), Link::Down(Down::NotReady), true),
            ];
            for (vectors, link, releases) in cases {
                released.set(false);
                let mut soc = Fake {
                    vectors,
                    released: &released,
                    on_release: || {},
                };
                let report = boot_cpu1(&region, &mut soc, &clock, Budgets::default(), || false);
                assert_eq!(report.link, link);
                assert_eq!(released.get(), releases);
                // The region is published either way: single-core mode
                // still shows a valid control block.
                assert_eq!(region.check(), Ok(()));
            }
            // CPU1 attached (set by hand here) but never asks for status.
            let mut soc = Fake {
                vectors: Ok(GOOD),
                released: &released,
                on_release: || {
                    attach(&region).expect("attach");
                },
            };
            let report = boot_cpu1(&region, &mut soc, &clock, Budgets::default(), || false);
            assert_eq!(report.link, Link::Down(Down::NoStatus));
            assert_eq!(report.ready_us, Some(0));
        });
    }

    #[test]
    fn attach_checks_layout_and_keeps_indices() {
        with_region(false, |region| {
            // Not published: bad magic.
            assert_eq!(
                attach(&region),
                Err(AttachError::Region(RegionError::Layout(
                    LayoutError::BadMagic(0)
                )))
            );
            // SAFETY: nothing else uses the region.
            unsafe { region.publish() };
            let ring = region.ring(synaptic_abi::Direction::Cpu1ToCpu0);
            // SAFETY: the only producer of this ring in this test.
            let mut producer = unsafe { synaptic_ring::Producer::attach(ring) };
            for _ in 0..3 {
                producer
                    .push(synaptic_abi::Message::default())
                    .expect("push");
            }
            attach(&region).expect("attach");
            assert!(region.is_ready(Core::Cpu1));
            // A restarted CPU1 attaches again; the live head survives.
            attach(&region).expect("re-attach");
            // SAFETY: as above (the previous handle is no longer used).
            let again = unsafe { synaptic_ring::Producer::attach(ring) };
            assert_eq!(again.head(), 3);
        });
    }

    #[test]
    fn each_core_restores_the_control_words_it_owns() {
        use synaptic_abi::{Owner, CONTROL_WORDS};
        let park = crate::park::ParkRecord::new();
        with_raw_region(true, |region, control| {
            attach(&region).expect("attach");
            let published: std::vec::Vec<u32> =
                control.iter().map(|w| w.load(Ordering::SeqCst)).collect();
            // Every word of the ABI's list, by its owner: a word added to
            // the block later is covered without a change here.
            for (index, entry) in CONTROL_WORDS.iter().enumerate() {
                let word = &control[index];
                for value in [0, u32::MAX, published[index] ^ 1] {
                    if value == published[index] {
                        continue;
                    }
                    word.store(value, Ordering::SeqCst);
                    let fixed = region.repair_cpu0_words(&park) + region.repair_cpu1_words();
                    if entry.name.starts_with("rtt_") {
                        // CPU1's round-trip statistics: its own to rewrite
                        // (at its next ping), not a word anyone checks.
                        assert_eq!(entry.owner, Owner::Cpu1);
                        assert_eq!(fixed, 0, "{}", entry.name);
                        word.store(published[index], Ordering::SeqCst);
                    } else {
                        assert_eq!(fixed, 1, "{} = {value:#x}", entry.name);
                    }
                    assert_eq!(word.load(Ordering::SeqCst), published[index]);
                    attach(&region).expect("attach after the repair");
                }
            }
            assert_eq!(
                region.repair_cpu0_words(&park) + region.repair_cpu1_words(),
                0
            );
        });
    }

    #[test]
    fn a_v1_control_block_is_refused_by_cpu1s_attach() {
        with_raw_region(true, |region, control| {
            // CPU0 of ABI v1 published this block: same magic, version 1.
            control[1].store(1, Ordering::SeqCst);
            assert_eq!(
                attach(&region),
                Err(AttachError::Region(RegionError::Layout(
                    LayoutError::Version(1)
                )))
            );
            assert_eq!(
                RegionError::Layout(LayoutError::Version(1)).to_errno(),
                Errno::Proto
            );
            // Refused: not attached, but CPU1 said which version it is.
            assert!(!region.is_ready(Core::Cpu1));
            let block = region.control_block();
            assert_eq!(block.cpu1_layout_version, LAYOUT_VERSION);
            assert_eq!(block.cpu1_ready, 0);
            // The same block at version 2 is accepted.
            control[1].store(LAYOUT_VERSION, Ordering::SeqCst);
            assert_eq!(attach(&region), Ok(()));
            assert!(region.is_ready(Core::Cpu1));
        });
    }

    #[test]
    fn cpu0_reports_a_cpu1_of_another_version() {
        with_raw_region(true, |region, control| {
            let clock = FakeClock {
                now: Cell::new(0),
                tick: &|_| {},
            };
            let released = Cell::new(false);
            // A CPU1 built for the next version announces itself and never
            // attaches.
            let next = LAYOUT_VERSION + 1;
            let mut soc = Fake {
                vectors: Ok(GOOD),
                released: &released,
                on_release: || control[13].store(next, Ordering::SeqCst),
            };
            let report = boot_cpu1(&region, &mut soc, &clock, Budgets::default(), || false);
            assert_eq!(report.link, Link::Down(Down::Version(next)));
            // A v1 CPU1 announces nothing: it simply never gets ready.
            control[13].store(0, Ordering::SeqCst);
            let mut soc = Fake {
                vectors: Ok(GOOD),
                released: &released,
                on_release: || {},
            };
            let report = boot_cpu1(&region, &mut soc, &clock, Budgets::default(), || false);
            assert_eq!(report.link, Link::Down(Down::NotReady));
        });
    }
}
