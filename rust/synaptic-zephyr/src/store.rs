//! The model store on Zephyr: [`synaptic_store`] over the fixed partition
//! devicetree names with `chosen { synaptic,model-store = &partition; }`
//! (`CONFIG_SYNAPTIC_STORE`), through Zephyr's flash map (the C glue in
//! `src/synaptic_store_flash.c`). The partition's flash must erase to
//! `0xFF` (NOR flash, or the flash simulator with `erase-value = <0xff>`).

use synaptic_store::{Flash, StoreError};

/// `struct syn_store_flash_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Info {
    size: u32,
    erase_block: u32,
    write_block: u32,
    park_cpu1: u32,
    /// Where CPU0 reads the partition in place, or 0 (C's NULL pointer,
    /// kept as an address: the partition outlives every borrow of it).
    mapped: usize,
}

extern "C" {
    fn syn_store_flash_open(info: *mut Info) -> i32;
    fn syn_store_flash_read(offset: u32, buf: *mut u8, len: usize) -> i32;
    fn syn_store_flash_write(offset: u32, buf: *const u8, len: usize) -> i32;
    fn syn_store_flash_erase(offset: u32, len: usize) -> i32;
}

/// The store's partition.
#[derive(Debug)]
pub struct ZephyrFlash {
    info: Info,
    /// Set when writes must park CPU1 (`Info::park_cpu1`).
    #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
    parker: Option<crate::park::cpu0::StoreParker>,
}

impl ZephyrFlash {
    /// Open the partition devicetree names.
    ///
    /// # Errors
    ///
    /// [`StoreError::Flash`] when there is none, or its block sizes are
    /// not powers of two, or its writes must park CPU1 and this build has
    /// no shared region to ask through.
    pub fn open() -> Result<ZephyrFlash, StoreError> {
        let mut info = Info {
            size: 0,
            erase_block: 0,
            write_block: 0,
            park_cpu1: 0,
            mapped: 0,
        };
        // SAFETY: `info` is a valid, writable `struct syn_store_flash_info`.
        if unsafe { syn_store_flash_open(&mut info) } != 0 {
            return Err(StoreError::Flash);
        }
        let pow2 = |v: u32| v.is_power_of_two();
        if !pow2(info.erase_block) || !pow2(info.write_block) || info.size % info.erase_block != 0 {
            return Err(StoreError::Flash);
        }
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        let parker = match info.park_cpu1 {
            0 => None,
            _ => Some(crate::park::cpu0::StoreParker::new().ok_or(StoreError::Flash)?),
        };
        #[cfg(not(CONFIG_SYNAPTIC_DOORBELL))]
        if info.park_cpu1 != 0 {
            return Err(StoreError::Flash);
        }
        Ok(ZephyrFlash {
            info,
            #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
            parker,
        })
    }

    /// Parks of CPU1 around this store's writes so far; `None` when its
    /// writes do not park CPU1.
    #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
    pub fn park_stats(&self) -> Option<synaptic_serve::park::ParkStats> {
        self.parker.as_ref().map(|p| p.stats())
    }

    /// Bytes of one write call: all of them, or where each write parks
    /// CPU1, `CONFIG_SYNAPTIC_STORE_PARK_CHUNK` rounded down to whole
    /// program units (one park per chunk bounds how long CPU1 is held).
    fn park_chunk(&self) -> usize {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        if self.parker.is_some() {
            const CHUNK: usize = zephyr::kconfig::CONFIG_SYNAPTIC_STORE_PARK_CHUNK as usize;
            let unit = self.write_block();
            return (CHUNK / unit * unit).max(unit);
        }
        usize::MAX
    }

    /// Run a write or erase, with CPU1 parked when the store needs it.
    fn modify(&mut self, op: impl FnOnce() -> i32) -> Result<(), StoreError> {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        if let Some(parker) = self.parker.as_mut() {
            return parker
                .around(op)
                .map_err(|_| StoreError::PeerBusy)
                .and_then(status);
        }
        status(op())
    }

    fn offset(&self, offset: usize, len: usize) -> Result<u32, StoreError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.info.size as usize => Ok(offset as u32),
            _ => Err(StoreError::Flash),
        }
    }
}

fn status(ret: i32) -> Result<(), StoreError> {
    if ret == 0 {
        Ok(())
    } else {
        Err(StoreError::Flash)
    }
}

impl Flash for ZephyrFlash {
    fn size(&self) -> usize {
        self.info.size as usize
    }

    fn sector_size(&self) -> usize {
        self.info.erase_block as usize
    }

    fn write_block(&self) -> usize {
        self.info.write_block as usize
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        let at = self.offset(offset, buf.len())?;
        // SAFETY: `buf` is valid for `buf.len()` writable bytes; the range
        // lies inside the open partition (checked above).
        status(unsafe { syn_store_flash_read(at, buf.as_mut_ptr(), buf.len()) })
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        let mut at = self.offset(offset, data.len())?;
        for part in data.chunks(self.park_chunk()) {
            self.modify(|| {
                // SAFETY: `part` is valid for `part.len()` readable bytes;
                // its range lies inside the open partition (as `data`'s).
                unsafe { syn_store_flash_write(at, part.as_ptr(), part.len()) }
            })?;
            // No overflow: `data` ends inside the partition, whose size is
            // a u32 (checked by `offset`).
            at += part.len() as u32;
        }
        Ok(())
    }

    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        let sector = self.sector_size();
        let at = self.offset(offset, sector)?;
        self.modify(|| {
            // SAFETY: one sector inside the open partition.
            unsafe { syn_store_flash_erase(at, sector) }
        })
    }

    fn mapped(&self, offset: usize, len: usize) -> Option<&'static [u8]> {
        if self.info.mapped == 0 {
            return None;
        }
        let at = self.info.mapped + self.offset(offset, len).ok()? as usize;
        // SAFETY: `mapped` is where the CPU reads the open partition, for
        // the program's life (the flash simulator's static memory, or
        // memory-mapped flash), and the range lies inside it (checked
        // above). The store asks only for a verified payload, and writes
        // its slot again only once no record names it (`Flash::mapped`);
        // the serving layer lets no update begin while a version it
        // retires may still run from it. No write through Rust aliases it:
        // the flash driver programs the flash.
        Some(unsafe { core::slice::from_raw_parts(at as *const u8, len) })
    }
}

/// The public key of CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE, embedded by
/// the build script (`TRUSTED_KEYS`).
mod trusted {
    #[allow(unused_imports)]
    use synaptic_store::signature::{Algorithm, PublicKey, Verifier};
    include!(concat!(env!("OUT_DIR"), "/trusted_key.rs"));
}

/// What the store accepts: signatures by the configured key, required
/// with CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED.
///
/// # Errors
///
/// [`StoreError::BadKey`] when the key cannot be used: the store then
/// does not open (no update installs unchecked).
pub fn trust() -> Result<synaptic_store::signature::Trust<'static>, StoreError> {
    synaptic_store::signature::Trust::with_verifier(
        trusted::TRUSTED_KEYS,
        cfg!(CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED),
        trusted::VERIFIER,
    )
}

/// `syn_model_ota.h`: one update stream into the store on the partition,
/// opened at the first call (`CONFIG_SYNAPTIC_STORE_MAX_MODELS` models of
/// at most `CONFIG_SYNAPTIC_STORE_SLOT_SIZE` container bytes).
pub mod ota {
    use core::ffi::{c_char, CStr};

    use synaptic_abi::Errno;
    pub use synaptic_serve::park::ParkStats;
    use synaptic_serve::update::{Activated, ModelUpdates, StoreUpdates};
    use synaptic_store::ota::{Ota, OtaError, OtaState};
    use synaptic_store::{Layout, ModelStatus, SlotState, Store, StoreError};
    use zephyr::raw;

    use super::ZephyrFlash;
    use crate::sync::KernelMutex;

    const MODELS: usize = zephyr::kconfig::CONFIG_SYNAPTIC_STORE_MAX_MODELS as usize;
    const SLOT: usize = zephyr::kconfig::CONFIG_SYNAPTIC_STORE_SLOT_SIZE as usize;

    struct Updates {
        store: Option<Store<ZephyrFlash, MODELS>>,
        ota: Ota,
    }

    static UPDATES: KernelMutex<Updates> = KernelMutex::new(Updates {
        store: None,
        ota: Ota::new(),
    });

    fn errno(e: OtaError) -> i32 {
        let code = match e {
            OtaError::State => raw::EPERM,
            OtaError::TooLarge => raw::EFBIG,
            OtaError::BadHeader | OtaError::Crc | OtaError::Signature => raw::EILSEQ,
            OtaError::Size => raw::EMSGSIZE,
            OtaError::Name => raw::EINVAL,
            OtaError::Incomplete => raw::ENODATA,
            OtaError::NothingToRollBack => raw::ENOENT,
            OtaError::Unsigned => raw::ENOMSG,
            OtaError::UntrustedKey => raw::EACCES,
            OtaError::Downgrade => raw::ERANGE,
            OtaError::Store(StoreError::PeerBusy) => raw::EBUSY,
            OtaError::Store(_) => raw::EIO,
        };
        -(code as i32)
    }

    /// Run `f` on the store (opened on first use) and the update; `None`
    /// when the store cannot be opened.
    fn with_opened<T>(f: impl FnOnce(&mut Store<ZephyrFlash, MODELS>, &mut Ota) -> T) -> Option<T> {
        run_opened(&mut UPDATES.lock(), f)
    }

    /// `f` on the store (opened on first use) and the update, the lock
    /// held by the caller.
    fn run_opened<T>(
        u: &mut Updates,
        f: impl FnOnce(&mut Store<ZephyrFlash, MODELS>, &mut Ota) -> T,
    ) -> Option<T> {
        if u.store.is_none() {
            let opened = ZephyrFlash::open().and_then(|flash| {
                let layout = Layout::new(&flash, MODELS, SLOT)?;
                let (mut store, _) = Store::open(flash, layout)?;
                store.set_trust(super::trust()?);
                Ok(store)
            });
            u.store = Some(opened.ok()?);
        }
        let store = u.store.as_mut()?;
        Some(f(store, &mut u.ota))
    }

    /// Run `f` on the store and the update; -EIO when the store cannot be
    /// opened.
    fn with_store(f: impl FnOnce(&mut Store<ZephyrFlash, MODELS>, &mut Ota) -> i32) -> i32 {
        with_opened(f).unwrap_or(-(raw::EIO as i32))
    }

    /// The store as the inference service's serving layer drives it for
    /// CPU1's `MODEL_UPDATE` requests (`synaptic_serve::Runtime::updates`):
    /// the same store and update state as the shell's `syn ota` and the C
    /// API, under the same lock. The serving thread never waits for that
    /// lock: while another thread holds it (the verifier below, the shell
    /// streaming an update) CPU1's update step is answered `-EBUSY`, which
    /// its client sends again after a status round trip; inferences go on.
    pub struct ServiceUpdates;

    fn with_updates<T>(
        f: impl FnOnce(&mut StoreUpdates<'_, ZephyrFlash, MODELS>) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        let Some(mut guard) = UPDATES.try_lock() else {
            return Err(Errno::Busy);
        };
        run_opened(&mut guard, |store, ota| {
            f(&mut StoreUpdates::new(store, ota))
        })
        .unwrap_or(Err(Errno::Io))
    }

    /// CPU1's update steps that verify, run off the serving thread: the
    /// write that completes a container's preamble (its signature checked
    /// before the store is touched) and the finish (the container read
    /// back from flash, hashed, its signature checked). Each takes
    /// milliseconds of CPU0, which the serving thread spends on inferences
    /// instead: it hands the step to the verifier thread and answers
    /// `-EBUSY`, as it answers every step while the verifier runs; CPU1's
    /// client sends the step again after a status round trip, and the
    /// first one after the verifier is done gets its result.
    #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
    mod verifier {
        use core::ffi::c_void;
        use core::ptr::null_mut;
        use core::sync::atomic::{AtomicU32, Ordering};

        use synaptic_abi::Errno;
        use synaptic_ipc::{Semaphore as _, Timeout};
        use synaptic_serve::update::ModelUpdates as _;
        use synaptic_serve::update::StoreUpdates;
        use synaptic_store::ota::PREAMBLE_MAX;
        use zephyr::thread::{stack_len, ThreadStack};

        use super::run_opened;
        use super::UPDATES;
        use crate::sync::{KernelMutex, KernelSemaphore};
        use crate::thread::StaticThread;

        /// A step the verifier runs.
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub enum Step {
            /// The preamble's bytes of a write at `offset` (the rest of
            /// the chunk is written on the serving thread when the step
            /// is sent again).
            Write { offset: usize, len: usize },
            /// The container's check from flash.
            Finish,
        }

        enum Job {
            Idle,
            Running(Step),
            Done(Step, Result<(), Errno>),
        }

        struct Verifier {
            job: Job,
            /// The preamble bytes of a `Step::Write`, copied out of CPU1's
            /// slot when the step was handed over.
            data: [u8; PREAMBLE_MAX],
        }

        /// The verifier's job: the serving thread only try-locks it (and
        /// answers `-EBUSY` when that fails); the verifier holds it only to
        /// copy a job in or out.
        static VERIFIER: KernelMutex<Verifier> = KernelMutex::new(Verifier {
            job: Job::Idle,
            data: [0; PREAMBLE_MAX],
        });
        /// Given for each job.
        static START: KernelSemaphore = KernelSemaphore::new(0, 1);
        /// The longest job so far, `k_cycle_get_32` ticks.
        static LONGEST: AtomicU32 = AtomicU32::new(0);
        static THREAD: StaticThread = StaticThread::new();
        #[unsafe(link_section = ".noinit.synaptic_verifier_stack")]
        static STACK: ThreadStack<{ stack_len(VERIFY_STACK) }> = ThreadStack::new();
        const VERIFY_STACK: usize =
            zephyr::kconfig::CONFIG_SYNAPTIC_STORE_VERIFY_STACK_SIZE as usize;

        /// The longest step the verifier thread ran, in `k_cycle_get_32`
        /// ticks.
        pub fn longest_ticks() -> u32 {
            LONGEST.load(Ordering::Relaxed)
        }

        extern "C" fn entry(_: *mut c_void, _: *mut c_void, _: *mut c_void) {
            loop {
                START.take(Timeout::Forever);
                let (step, data) = {
                    let v = VERIFIER.lock();
                    let Job::Running(step) = v.job else {
                        continue;
                    };
                    (step, v.data)
                };
                // SAFETY: reading the cycle counter has no preconditions.
                let start = unsafe { zephyr::raw::k_cycle_get_32() };
                // Blocking: this thread is the one that may wait for the
                // store (the shell or SMP may hold it).
                let result = run_opened(&mut UPDATES.lock(), |store, ota| {
                    let mut u = StoreUpdates::new(store, ota);
                    match step {
                        Step::Write { offset, len } => u.write(offset, &data[..len]),
                        Step::Finish => u.finish(),
                    }
                })
                .unwrap_or(Err(Errno::Io));
                // SAFETY: as above.
                let ticks = unsafe { zephyr::raw::k_cycle_get_32() }.wrapping_sub(start);
                LONGEST.fetch_max(ticks, Ordering::Relaxed);
                VERIFIER.lock().job = Job::Done(step, result);
            }
        }

        impl Step {
            /// Whether CPU1's step `other` is this one sent again (a write
            /// at the same offset, whatever its length).
            fn is(self, other: Step) -> bool {
                match (self, other) {
                    (Step::Write { offset: a, .. }, Step::Write { offset: b, .. }) => a == b,
                    (a, b) => a == b,
                }
            }
        }

        /// What the verifier holds for CPU1's next step.
        pub enum Collected {
            /// Nothing for it: the step runs (or is handed over) now.
            Nothing,
            /// The verifier ran this step (as handed over): its result.
            Done(Step, Result<(), Errno>),
        }

        /// CPU1's step `step` arrives: `-EBUSY` while the verifier runs (or
        /// its lock is held for a moment); the result when the verifier ran
        /// this very step, kept until [`settle`]; a result nobody collected
        /// (CPU1 moved on) is dropped.
        pub fn collect(step: Option<Step>) -> Result<Collected, Errno> {
            let mut v = VERIFIER.try_lock().ok_or(Errno::Busy)?;
            match v.job {
                Job::Running(_) => Err(Errno::Busy),
                Job::Done(done, result) => match step {
                    Some(step) if done.is(step) => Ok(Collected::Done(done, result)),
                    _ => {
                        v.job = Job::Idle;
                        Ok(Collected::Nothing)
                    }
                },
                Job::Idle => Ok(Collected::Nothing),
            }
        }

        /// The collected result has been answered: the verifier is free.
        /// (Only the serving thread collects and starts jobs, so the
        /// result is still the one collected.)
        pub fn settle() {
            // Only the verifier's brief copy could hold the lock, and it
            // does not while a result waits.
            VERIFIER.lock().job = Job::Idle;
        }

        /// Hand `step` (with a write's preamble bytes, `data`) to the
        /// verifier: `-EBUSY`, which CPU1 sends again until it is done.
        pub fn start(step: Step, data: &[u8]) -> Errno {
            let Some(mut v) = VERIFIER.try_lock() else {
                return Errno::Busy;
            };
            if !matches!(v.job, Job::Idle) {
                return Errno::Busy;
            }
            v.data[..data.len()].copy_from_slice(data);
            v.job = Job::Running(step);
            drop(v);
            // SAFETY: the stack is this thread's alone; the entry takes no
            // argument. Started once (later calls return at once).
            unsafe {
                THREAD.start(
                    &STACK,
                    entry,
                    null_mut(),
                    zephyr::kconfig::CONFIG_SYNAPTIC_STORE_VERIFY_PRIORITY as i32,
                    c"synaptic_verify",
                );
            }
            START.give();
            Errno::Busy
        }
    }

    /// A step other than a deferred write or finish: `-EBUSY` while the
    /// verifier runs; a result nobody collected is dropped.
    fn not_verifying() -> Result<(), Errno> {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        verifier::collect(None)?;
        Ok(())
    }

    impl ModelUpdates for ServiceUpdates {
        fn begin(&mut self, name: &str, total: usize) -> Result<(), Errno> {
            not_verifying()?;
            with_updates(|u| u.begin(name, total))
        }

        /// The write that completes the preamble goes to the verifier
        /// (its preamble bytes copied: the slot is CPU1's again once this
        /// step is answered); the same chunk sent again then gets its
        /// result, and the rest of the chunk is written here.
        fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Errno> {
            #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
            {
                use verifier::{Collected, Step};
                match verifier::collect(Some(Step::Write { offset, len: 0 }))? {
                    Collected::Done(step, result) => {
                        let len = match step {
                            Step::Write { len, .. } => len,
                            Step::Finish => 0,
                        };
                        // The rest of the chunk; the result stays for the
                        // chunk sent again while the store is busy.
                        let written = result.and_then(|()| match data.get(len..) {
                            Some(rest) if !rest.is_empty() => {
                                with_updates(|u| u.write(offset + len, rest))
                            }
                            _ => Ok(()),
                        });
                        if result.is_err() || written != Err(Errno::Busy) {
                            verifier::settle();
                        }
                        return written;
                    }
                    Collected::Nothing => {}
                }
                let len = with_updates(|u| Ok(u.preamble_pending()))?.min(data.len());
                if len > 0 {
                    return Err(verifier::start(Step::Write { offset, len }, &data[..len]));
                }
            }
            with_updates(|u| u.write(offset, data))
        }

        fn finish(&mut self) -> Result<(), Errno> {
            #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
            {
                use verifier::{Collected, Step};
                return match verifier::collect(Some(Step::Finish))? {
                    Collected::Done(_, result) => {
                        verifier::settle();
                        result
                    }
                    Collected::Nothing => Err(verifier::start(Step::Finish, &[])),
                };
            }
            #[cfg(not(CONFIG_SYNAPTIC_DOORBELL))]
            with_updates(|u| u.finish())
        }

        fn next(&mut self, back: bool) -> Result<Activated, Errno> {
            with_updates(|u| u.next(back))
        }

        fn activate(&mut self) -> Result<Activated, Errno> {
            not_verifying()?;
            with_updates(|u| u.activate())
        }

        fn rollback(&mut self) -> Result<Activated, Errno> {
            not_verifying()?;
            with_updates(|u| u.rollback())
        }

        fn confirm(&mut self) -> Result<u32, Errno> {
            not_verifying()?;
            with_updates(|u| u.confirm())
        }

        fn active(&mut self, name: &str) -> Result<Activated, Errno> {
            with_updates(|u| u.active(name))
        }

        /// The check and the switch under one hold of the lock: no other
        /// thread stages or activates a version between them.
        fn switch(
            &mut self,
            back: bool,
            accept: &mut dyn FnMut(&Activated) -> Result<(), Errno>,
        ) -> Result<Activated, Errno> {
            not_verifying()?;
            with_updates(|u| u.switch(back, accept))
        }
    }

    /// Run an update step `f`: 0 or its negative errno.
    fn with<T>(
        f: impl FnOnce(&mut Store<ZephyrFlash, MODELS>, &mut Ota) -> Result<T, OtaError>,
    ) -> i32 {
        with_store(|store, ota| match f(store, ota) {
            Ok(_) => 0,
            Err(e) => errno(e),
        })
    }

    /// `struct syn_store_model` (`syn_store.h`).
    #[repr(C)]
    pub struct StoreModel {
        name: [u8; synaptic_store::container::NAME_MAX + 1],
        active_version: u32,
        previous_version: u32,
        erases: [u32; 2],
        slot_state: [u8; 2],
        security_counter: u32,
    }

    // The layout tests/capi_c/capi_check.c asserts for C.
    const _: () = assert!(core::mem::size_of::<StoreModel>() == 56);
    const _: () = assert!(core::mem::offset_of!(StoreModel, slot_state) == 48);
    const _: () = assert!(core::mem::offset_of!(StoreModel, security_counter) == 52);

    /// `syn_store_slot_state_t`'s value of `state`.
    fn slot_code(state: SlotState) -> u8 {
        match state {
            SlotState::Empty => 0,
            SlotState::Valid => 1,
            SlotState::Staging => 2,
        }
    }

    /// `syn_store_model_get`.
    ///
    /// # Safety
    ///
    /// `model` is NULL or valid for writing one `struct syn_store_model`.
    #[no_mangle]
    pub unsafe extern "C" fn syn_store_model_get(index: usize, model: *mut StoreModel) -> i32 {
        if model.is_null() {
            return -(raw::EINVAL as i32);
        }
        with_store(|store, _| {
            let Some(status) = store.models().nth(index) else {
                return -(raw::ENOENT as i32);
            };
            let mut name = [0u8; synaptic_store::container::NAME_MAX + 1];
            let bytes = status.name.as_bytes();
            let len = bytes.len().min(name.len() - 1);
            name[..len].copy_from_slice(&bytes[..len]);
            let out = StoreModel {
                name,
                active_version: status.active.unwrap_or(0),
                previous_version: status.previous.unwrap_or(0),
                erases: status.erases,
                slot_state: status.slots.map(slot_code),
                security_counter: status.security,
            };
            // SAFETY: non-NULL and valid for one write (the caller's
            // contract); `write` does not read the old contents.
            unsafe { model.write(out) };
            0
        })
    }

    /// `syn_store_reload`: forget the store read so far (the next call
    /// reads it from flash again); -EBUSY while an update is in progress.
    #[no_mangle]
    pub extern "C" fn syn_store_reload() -> i32 {
        let mut guard = UPDATES.lock();
        if matches!(
            guard.ota.state(),
            OtaState::Downloading | OtaState::Validating | OtaState::Staging | OtaState::Ready
        ) {
            return -(raw::EBUSY as i32);
        }
        guard.store = None;
        guard.ota = Ota::new();
        0
    }

    /// Every model of the store (opened on first use) to `each`; the
    /// registry's generation, or the negative errno the store failed with.
    pub fn inventory(mut each: impl FnMut(&ModelStatus<'_>)) -> Result<u32, i32> {
        let mut generation = 0;
        let status = with_store(|store, _| {
            store.models().for_each(|m| each(&m));
            generation = store.generation();
            0
        });
        if status < 0 {
            Err(status)
        } else {
            Ok(generation)
        }
    }

    /// `syn_store_generation`.
    #[no_mangle]
    pub extern "C" fn syn_store_generation() -> i64 {
        match inventory(|_| {}) {
            Ok(generation) => i64::from(generation),
            Err(e) => i64::from(e),
        }
    }

    /// `syn_ota_begin`.
    ///
    /// # Safety
    ///
    /// `model_name` is NULL or a NUL-terminated string.
    #[no_mangle]
    pub unsafe extern "C" fn syn_ota_begin(model_name: *const c_char, total_size: usize) -> i32 {
        if model_name.is_null() {
            return -(raw::EINVAL as i32);
        }
        // SAFETY: non-NULL and NUL-terminated (the caller's contract).
        let name = unsafe { CStr::from_ptr(model_name) };
        let Ok(name) = name.to_str() else {
            return -(raw::EINVAL as i32);
        };
        with(|store, ota| ota.begin(store, name, total_size))
    }

    /// `syn_ota_write_chunk`.
    ///
    /// # Safety
    ///
    /// `data` is NULL or valid for `len` bytes.
    #[no_mangle]
    pub unsafe extern "C" fn syn_ota_write_chunk(data: *const u8, len: usize) -> i32 {
        if data.is_null() {
            return -(raw::EINVAL as i32);
        }
        // SAFETY: non-NULL and valid for `len` bytes (the caller's contract).
        let data = unsafe { core::slice::from_raw_parts(data, len) };
        with(|store, ota| ota.write_chunk(store, data))
    }

    /// `syn_ota_finish`.
    #[no_mangle]
    pub extern "C" fn syn_ota_finish() -> i32 {
        with(|store, ota| ota.finish(store))
    }

    /// `syn_ota_activate`. With the inference service running, its serving
    /// thread activates and hot-swaps, after the check CPU1's activations
    /// pass (-ENOEXEC when no device serving the model can run the new
    /// version, the store untouched).
    #[no_mangle]
    pub extern "C" fn syn_ota_activate() -> i32 {
        #[cfg(all(CONFIG_SYNAPTIC_DOORBELL, feature = "store"))]
        if let Some(result) = crate::service::switch_store(false) {
            return result.min(0);
        }
        switched(with(|store, ota| ota.activate(store)))
    }

    /// `syn_ota_rollback`. With the inference service running, through its
    /// serving thread as [`syn_ota_activate`].
    #[no_mangle]
    pub extern "C" fn syn_ota_rollback() -> i32 {
        #[cfg(all(CONFIG_SYNAPTIC_DOORBELL, feature = "store"))]
        if let Some(result) = crate::service::switch_store(true) {
            return result.min(0);
        }
        switched(with(|store, ota| ota.rollback(store)))
    }

    /// `syn_ota_confirm`: the last activated model's active version is
    /// confirmed; its security counter rises to it.
    #[no_mangle]
    pub extern "C" fn syn_ota_confirm() -> i32 {
        with(|store, ota| ota.confirm(store))
    }

    /// Tell the inference service (dual-core builds) the store's active
    /// versions changed, when `status` says they did.
    fn switched(status: i32) -> i32 {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        if status == 0 {
            crate::service::store_changed();
        }
        status
    }

    /// The longest verification of CPU1's updates on CPU0's verifier
    /// thread, `k_cycle_get_32` ticks (0 without the inference service).
    pub fn longest_verification_ticks() -> u32 {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        return verifier::longest_ticks();
        #[cfg(not(CONFIG_SYNAPTIC_DOORBELL))]
        0
    }

    /// `syn_ota_received`: container bytes the current update has taken
    /// (where a resumed upload continues).
    #[no_mangle]
    pub extern "C" fn syn_ota_received() -> usize {
        UPDATES.lock().ota.received()
    }

    /// `syn_ota_get_state` (`syn_ota_state_t`: the [`OtaState`] order).
    #[no_mangle]
    pub extern "C" fn syn_ota_get_state() -> u32 {
        UPDATES.lock().ota.state() as u32
    }

    /// Parks of CPU1 around the store's writes so far; `None` while the
    /// store is not open or when its writes do not park CPU1.
    pub fn park_stats() -> Option<ParkStats> {
        #[cfg(CONFIG_SYNAPTIC_DOORBELL)]
        return UPDATES.lock().store.as_mut()?.flash_mut().park_stats();
        #[cfg(not(CONFIG_SYNAPTIC_DOORBELL))]
        None
    }

    /// `struct syn_store_park_stats`.
    #[repr(C)]
    pub struct CParkStats {
        parks: u32,
        refused: u32,
        longest_ack_us: u32,
        longest_hold_us: u32,
        overruns: u32,
    }

    /// `syn_store_park_stats`.
    ///
    /// # Safety
    ///
    /// `stats` is NULL or valid for writing a `struct syn_store_park_stats`.
    #[no_mangle]
    pub unsafe extern "C" fn syn_store_park_stats(stats: *mut CParkStats) -> i32 {
        if stats.is_null() {
            return -(raw::EINVAL as i32);
        }
        let opened = with_store(|_, _| 0);
        if opened < 0 {
            return opened;
        }
        let Some(s) = park_stats() else {
            return -(raw::ENOTSUP as i32);
        };
        let out = CParkStats {
            parks: s.parks,
            refused: s.refused,
            longest_ack_us: s.longest_ack_us,
            longest_hold_us: s.longest_hold_us,
            overruns: s.overruns,
        };
        // SAFETY: non-null and valid for the write (this function's
        // contract).
        unsafe { stats.write(out) };
        0
    }

    /// The state, for Rust callers.
    pub fn state() -> OtaState {
        UPDATES.lock().ota.state()
    }
}
