//! Suite `model`: the model registry (names, capacity, generation-checked
//! handles, lookup and listing), loading onto the stub NPU, swapping, and
//! the image CRC.

use synaptic_abi::Errno;
use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{ArenaError, DType, TensorMeta};
use synaptic_runtime::npu::{NpuDevice, NpuError, NpuState, StubNpu};
use synaptic_runtime::registry::{crc32, ModelDesc, ModelHandle, Registry, RegistryError};
use synaptic_runtime::time::FakeClock;

cases![
    register_and_get_info,
    name_errors_are_distinct,
    full_registry_is_an_error,
    unregister_reuses_the_slot_and_rejects_the_stale_handle,
    bad_handles_are_rejected,
    find_and_list,
    load_unload_and_is_loaded,
    load_refused_by_the_npu_reports_its_error,
    swap_replaces_and_keeps_old_on_failure,
    crc32_known_answers_and_image_check,
];

pub(crate) fn desc(name: &str, n_in: usize, n_out: usize) -> Result<ModelDesc<'_>, ArenaError> {
    Ok(ModelDesc {
        name,
        version: 3,
        input: TensorMeta::vector(DType::Int8, n_in)?,
        output: TensorMeta::vector(DType::Int8, n_out)?,
        flash_offset: 0x2000,
        flash_size: 4096,
        sram_needed: 1024,
        crc32: crc32(b"image"),
        devices: synaptic_runtime::device::DeviceMask::NPU,
        image: &[],
    })
}

type Npu<'c> = StubNpu<&'c FakeClock, 64, 16>;

fn npu(clock: &FakeClock) -> Result<Npu<'_>, NpuError> {
    let mut n = StubNpu::new(clock, 0);
    n.init()?;
    Ok(n)
}

/// Registration stores every field; the handle is valid and round-trips
/// through its raw form.
pub fn register_and_get_info() -> Outcome {
    let mut reg: Registry<4> = Registry::new();
    check!(reg.is_empty());
    let h = ok!(reg.register(&ok!(desc("kws", 490, 12))));
    let info = ok!(reg.info(h));
    check!(info.name.as_str() == "kws");
    check_eq!(info.version, 3);
    check_eq!(info.input_size(), 490);
    check_eq!(info.output_size(), 12);
    check_eq!(info.flash_offset, 0x2000);
    check_eq!(info.flash_size, 4096);
    check_eq!(info.sram_needed, 1024);
    check_eq!(info.crc32, crc32(b"image"));
    check!(!info.loaded);
    check!(h.raw() != ModelHandle::INVALID_RAW);
    check!(ModelHandle::from_raw(h.raw()) == h);
    check_eq!(reg.len(), 1);
    check_eq!(reg.capacity(), 4);
    Ok(())
}

/// Empty, over-long (32 bytes) and duplicate names fail with their own
/// errors; 31 bytes is accepted.
pub fn name_errors_are_distinct() -> Outcome {
    let mut reg: Registry<4> = Registry::new();
    check!(reg.register(&ok!(desc("", 1, 1))) == Err(RegistryError::EmptyName));
    let long = "abcdefghijabcdefghijabcdefghij12";
    check_eq!(long.len(), 32);
    check!(reg.register(&ok!(desc(long, 1, 1))) == Err(RegistryError::NameTooLong { len: 32 }));
    check!(reg.register(&ok!(desc(&long[..31], 1, 1))).is_ok());
    check!(reg.register(&ok!(desc(&long[..31], 2, 2))) == Err(RegistryError::DuplicateName));
    check_eq!(reg.len(), 1);
    check!(RegistryError::EmptyName.to_errno() == Errno::Inval);
    check!(RegistryError::DuplicateName.to_errno() == Errno::Exist);
    Ok(())
}

/// A full registry refuses another model with `-ENOSPC`.
pub fn full_registry_is_an_error() -> Outcome {
    let mut reg: Registry<2> = Registry::new();
    ok!(reg.register(&ok!(desc("a", 1, 1))));
    ok!(reg.register(&ok!(desc("b", 1, 1))));
    check!(reg.register(&ok!(desc("c", 1, 1))) == Err(RegistryError::Full));
    check!(RegistryError::Full.to_errno() == Errno::NoSpc);
    check_eq!(reg.len(), 2);
    Ok(())
}

/// An unregistered model's slot is reused, and its old handle is stale (not
/// an alias of the new model).
pub fn unregister_reuses_the_slot_and_rejects_the_stale_handle() -> Outcome {
    let mut reg: Registry<2> = Registry::new();
    let a = ok!(reg.register(&ok!(desc("a", 1, 1))));
    let _b = ok!(reg.register(&ok!(desc("b", 1, 1))));
    ok!(reg.unregister(a));
    let c = ok!(reg.register(&ok!(desc("c", 1, 1))));
    check_eq!(c.index(), a.index());
    check!(c != a);
    check!(reg.info(a).err() == Some(RegistryError::StaleHandle));
    check!(reg.unregister(a) == Err(RegistryError::StaleHandle));
    check!(ok!(reg.info(c)).name.as_str() == "c");
    check!(reg.find("a") == Err(RegistryError::NotFound));
    check!(RegistryError::StaleHandle.to_errno() == Errno::NoEnt);
    Ok(())
}

/// The invalid raw handle, an out-of-range slot, an empty slot and a
/// generation from the future are all invalid.
pub fn bad_handles_are_rejected() -> Outcome {
    let mut reg: Registry<2> = Registry::new();
    let a = ok!(reg.register(&ok!(desc("a", 1, 1))));
    let invalid = Some(RegistryError::InvalidHandle);
    check!(
        reg.info(ModelHandle::from_raw(ModelHandle::INVALID_RAW))
            .err()
            == invalid
    );
    check!(reg.info(ModelHandle::from_raw((1 << 16) | 7)).err() == invalid);
    check!(reg.info(ModelHandle::from_raw((1 << 16) | 1)).err() == invalid);
    check!(reg.info(ModelHandle::from_raw(a.raw() + (1 << 16))).err() == invalid);
    check!(reg.info(a).is_ok());
    Ok(())
}

/// Lookup by exact name, and listing in slot order into a buffer of any size.
pub fn find_and_list() -> Outcome {
    let mut reg: Registry<4> = Registry::new();
    let a = ok!(reg.register(&ok!(desc("person", 1, 1))));
    let b = ok!(reg.register(&ok!(desc("kws", 1, 1))));
    check!(reg.find("kws") == Ok(b));
    check!(reg.find("person") == Ok(a));
    check!(reg.find("kw") == Err(RegistryError::NotFound));
    let mut out = [ModelHandle::from_raw(0); 4];
    check_eq!(reg.list(&mut out), 2);
    check!(out[..2] == [a, b]);
    let mut one = [ModelHandle::from_raw(0); 1];
    check_eq!(reg.list(&mut one), 1);
    check!(one[0] == a);
    Ok(())
}

/// One model is resident at a time: loading another replaces it, a loaded
/// model cannot be unregistered, and unload empties the device.
pub fn load_unload_and_is_loaded() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = ok!(npu(&clock));
    let mut reg: Registry<4> = Registry::new();
    let a = ok!(reg.register(&ok!(desc("a", 8, 4))));
    let b = ok!(reg.register(&ok!(desc("b", 8, 4))));
    ok!(reg.load(a, &mut n));
    check!(reg.is_loaded(a) == Ok(true));
    check!(ok!(reg.info(a)).loaded);
    check!(n.loaded_model() == Some(a.raw()));
    ok!(reg.load(b, &mut n));
    check!(reg.is_loaded(a) == Ok(false));
    check!(!ok!(reg.info(a)).loaded);
    check!(reg.loaded() == Some(b));
    check!(reg.unregister(b) == Err(RegistryError::Loaded));
    check!(reg.unload(a, &mut n) == Err(RegistryError::NotLoaded));
    ok!(reg.unload(b, &mut n));
    check!(n.loaded_model().is_none());
    check!(reg.loaded().is_none());
    ok!(reg.unregister(b));
    Ok(())
}

/// A model too large for the device, or a suspended device, makes load fail
/// with the device's error; nothing is recorded as loaded.
pub fn load_refused_by_the_npu_reports_its_error() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = ok!(npu(&clock));
    let mut reg: Registry<4> = Registry::new();
    let big = ok!(reg.register(&ok!(desc("big", 65, 4))));
    check!(reg.load(big, &mut n) == Err(RegistryError::Npu(NpuError::ModelTooLarge)));
    check!(reg.is_loaded(big) == Ok(false));
    ok!(n.suspend());
    let fits = ok!(reg.register(&ok!(desc("ok", 8, 4))));
    let e = reg.load(fits, &mut n);
    check!(
        e == Err(RegistryError::Npu(NpuError::WrongState(
            NpuState::Suspended
        )))
    );
    check!(e.err().map(RegistryError::to_errno) == Some(Errno::Again));
    check!(reg.loaded().is_none());
    Ok(())
}

/// Swap replaces the resident model; when the device refuses the new one,
/// the old one stays resident on both sides.
pub fn swap_replaces_and_keeps_old_on_failure() -> Outcome {
    let clock = FakeClock::new(0);
    let mut n = ok!(npu(&clock));
    let mut reg: Registry<4> = Registry::new();
    let a = ok!(reg.register(&ok!(desc("a", 8, 4))));
    let b = ok!(reg.register(&ok!(desc("b", 8, 4))));
    let big = ok!(reg.register(&ok!(desc("big", 8, 17))));
    check!(reg.swap(a, b, &mut n) == Err(RegistryError::NotLoaded));
    ok!(reg.load(a, &mut n));
    ok!(reg.swap(a, b, &mut n));
    check!(reg.loaded() == Some(b));
    check!(reg.swap(b, big, &mut n) == Err(RegistryError::Npu(NpuError::ModelTooLarge)));
    check!(reg.loaded() == Some(b));
    check!(n.loaded_model() == Some(b.raw()));
    Ok(())
}

/// CRC-32 known answers, and an image copy checked against the registered CRC.
pub fn crc32_known_answers_and_image_check() -> Outcome {
    check_eq!(crc32(b""), 0);
    check_eq!(crc32(b"123456789"), 0xCBF4_3926u32);
    check_eq!(
        crc32(b"The quick brown fox jumps over the lazy dog"),
        0x414F_A339u32
    );
    let mut reg: Registry<1> = Registry::new();
    let h = ok!(reg.register(&ok!(desc("m", 1, 1))));
    check!(reg.verify_image(h, b"image") == Ok(()));
    check!(
        reg.verify_image(h, b"imagf")
            == Err(RegistryError::CrcMismatch {
                expected: crc32(b"image"),
                actual: crc32(b"imagf")
            })
    );
    check!(
        RegistryError::CrcMismatch {
            expected: 0,
            actual: 1
        }
        .to_errno()
            == Errno::BadMsg
    );
    Ok(())
}
