//! The model store on Zephyr: [`synaptic_store`] over the fixed partition
//! devicetree names with `chosen { synaptic,model-store = &partition; }`
//! (`CONFIG_SYNAPTIC_STORE`), through Zephyr's flash map (the C glue in
//! `src/synaptic_store_flash.c`). The partition's flash must erase to
//! `0xFF` (NOR flash, or the flash simulator with `erase-value = <0xff>`).

use synaptic_store::{Flash, StoreError};

/// `struct syn_store_flash_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    size: u32,
    erase_block: u32,
    write_block: u32,
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
}

impl ZephyrFlash {
    /// Open the partition devicetree names.
    ///
    /// # Errors
    ///
    /// [`StoreError::Flash`] when there is none, or its block sizes are
    /// not powers of two.
    pub fn open() -> Result<ZephyrFlash, StoreError> {
        let mut info = Info::default();
        // SAFETY: `info` is a valid, writable `struct syn_store_flash_info`.
        if unsafe { syn_store_flash_open(&mut info) } != 0 {
            return Err(StoreError::Flash);
        }
        let pow2 = |v: u32| v.is_power_of_two();
        if !pow2(info.erase_block) || !pow2(info.write_block) || info.size % info.erase_block != 0 {
            return Err(StoreError::Flash);
        }
        Ok(ZephyrFlash { info })
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
        let at = self.offset(offset, data.len())?;
        // SAFETY: `data` is valid for `data.len()` readable bytes; the range
        // lies inside the open partition.
        status(unsafe { syn_store_flash_write(at, data.as_ptr(), data.len()) })
    }

    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        let sector = self.sector_size();
        let at = self.offset(offset, sector)?;
        // SAFETY: one sector inside the open partition.
        status(unsafe { syn_store_flash_erase(at, sector) })
    }
}
