//! The flash the store runs on, and an in-memory model of it.

use crate::StoreError;

/// NOR-like flash: erase by sector (to `0xFF`), program only erased bytes.
///
/// Zephyr's flash API (`flash_read`, `flash_write`, `flash_erase` over a
/// fixed partition) implements it on a board; [`MemFlash`] on the host.
pub trait Flash {
    /// Bytes of the partition.
    fn size(&self) -> usize;
    /// Bytes of one erase sector (a power of two).
    fn sector_size(&self) -> usize;
    /// Program granularity: writes start at and span multiples of it.
    fn write_block(&self) -> usize;
    /// Read `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Flash`] or [`StoreError::PowerLoss`].
    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError>;
    /// Program `data` at `offset` (erased bytes only; block-aligned).
    ///
    /// # Errors
    ///
    /// [`StoreError::Flash`] or [`StoreError::PowerLoss`].
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError>;
    /// Erase the one sector starting at `offset`. The store never erases
    /// more than one sector per call: one long multi-sector erase wedges
    /// some parts (the MCXN947 among them).
    ///
    /// # Errors
    ///
    /// [`StoreError::Flash`] or [`StoreError::PowerLoss`].
    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError>;

    /// What an erase of the sector at `offset` cut short by a power loss
    /// leaves, for [`PowerCut`]: by default nothing is erased (a driver
    /// cannot erase part of a sector); [`MemFlash`] erases half of it.
    ///
    /// # Errors
    ///
    /// As [`erase_sector`](Self::erase_sector).
    fn erase_torn(&mut self, offset: usize) -> Result<(), StoreError> {
        let _ = offset;
        Ok(())
    }

    /// The `len` bytes at `offset` where the CPU reads them in place
    /// (memory-mapped flash, or a flash simulator's memory), if it can: a
    /// device that runs a model from its image ([`Store::mapped`]) reads
    /// it there. The store asks only for a verified container's payload,
    /// whose slot it writes again only once no record names it active or
    /// as the rollback target. `None` by default (flash behind a bus, SPI
    /// NOR) and for a range outside the partition.
    ///
    /// [`Store::mapped`]: crate::Store::mapped
    fn mapped(&self, offset: usize, len: usize) -> Option<&'static [u8]> {
        let _ = (offset, len);
        None
    }
}

/// A store may borrow its flash (so that a caller keeps it across a
/// failed open, as the power-loss sweep does).
impl<T: Flash + ?Sized> Flash for &mut T {
    fn size(&self) -> usize {
        (**self).size()
    }

    fn sector_size(&self) -> usize {
        (**self).sector_size()
    }

    fn write_block(&self) -> usize {
        (**self).write_block()
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        (**self).read(offset, buf)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        (**self).write(offset, data)
    }

    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        (**self).erase_sector(offset)
    }

    fn erase_torn(&mut self, offset: usize) -> Result<(), StoreError> {
        (**self).erase_torn(offset)
    }
}

/// A power cut on demand over any flash: after
/// [`cut_after`](PowerCut::cut_after) `n` more writes or erases, the next
/// one is done halfway (the first half of its blocks written;
/// [`Flash::erase_torn`] for an erase) and it and every later operation
/// fail with [`StoreError::PowerLoss`] until [`reboot`](PowerCut::reboot).
/// The host's power-loss sweep runs on it over [`MemFlash`], an emulated
/// board's over the flash simulator.
pub struct PowerCut<F> {
    inner: F,
    left: Option<usize>,
    down: bool,
    ops: usize,
}

impl<F: Flash> PowerCut<F> {
    /// `inner` with no cut armed.
    pub fn new(inner: F) -> Self {
        PowerCut {
            inner,
            left: None,
            down: false,
            ops: 0,
        }
    }

    /// Cut the power at the `n`th write or erase from now (0: the next).
    pub fn cut_after(&mut self, n: usize) {
        self.left = Some(n);
    }

    /// Power back on: operations work again, no cut is armed.
    pub fn reboot(&mut self) {
        self.left = None;
        self.down = false;
    }

    /// Writes and erases done (including a cut one).
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// The flash underneath.
    pub fn inner_mut(&mut self) -> &mut F {
        &mut self.inner
    }

    /// `Ok(true)`: do the whole operation; `Ok(false)`: do half, then fail.
    fn power(&mut self) -> Result<bool, StoreError> {
        if self.down {
            return Err(StoreError::PowerLoss);
        }
        self.ops += 1;
        match self.left {
            Some(0) => {
                self.down = true;
                Ok(false)
            }
            Some(n) => {
                self.left = Some(n - 1);
                Ok(true)
            }
            None => Ok(true),
        }
    }
}

impl<F: Flash> Flash for PowerCut<F> {
    fn size(&self) -> usize {
        self.inner.size()
    }

    fn sector_size(&self) -> usize {
        self.inner.sector_size()
    }

    fn write_block(&self) -> usize {
        self.inner.write_block()
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        if self.down {
            return Err(StoreError::PowerLoss);
        }
        self.inner.read(offset, buf)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        if self.power()? {
            return self.inner.write(offset, data);
        }
        let block = self.inner.write_block().max(1);
        let half = data.len() / block / 2 * block;
        if half > 0 {
            self.inner.write(offset, &data[..half])?;
        }
        Err(StoreError::PowerLoss)
    }

    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        if self.power()? {
            return self.inner.erase_sector(offset);
        }
        self.inner.erase_torn(offset)?;
        Err(StoreError::PowerLoss)
    }
}

/// Flash in RAM with NOR semantics: a write can only clear bits, an erase
/// sets a sector to `0xFF`, and a torn erase ([`Flash::erase_torn`]) sets
/// only the first half. Wrap it in [`PowerCut`] for power cuts.
pub struct MemFlash<'a> {
    bytes: &'a mut [u8],
    sector: usize,
    block: usize,
}

impl<'a> MemFlash<'a> {
    /// Flash over `bytes` (erased to `0xFF` by the caller or not), with
    /// `sector`-byte sectors and `block`-byte program units.
    ///
    /// # Panics
    ///
    /// When the sizes do not divide (a test setup error).
    pub fn new(bytes: &'a mut [u8], sector: usize, block: usize) -> Self {
        assert!(sector.is_power_of_two() && block.is_power_of_two() && block <= sector);
        assert!(bytes.len() % sector == 0);
        MemFlash {
            bytes,
            sector,
            block,
        }
    }

    /// The raw bytes (for tests that inspect them).
    pub fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// The raw bytes (for tests that corrupt or inspect them).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    fn range(&self, offset: usize, len: usize) -> Result<core::ops::Range<usize>, StoreError> {
        let end = offset.checked_add(len).ok_or(StoreError::Flash)?;
        if end > self.bytes.len() {
            return Err(StoreError::Flash);
        }
        Ok(offset..end)
    }

    fn sector_range(&self, offset: usize) -> Result<core::ops::Range<usize>, StoreError> {
        if offset % self.sector != 0 {
            return Err(StoreError::Flash);
        }
        self.range(offset, self.sector)
    }
}

impl Flash for MemFlash<'_> {
    fn size(&self) -> usize {
        self.bytes.len()
    }

    fn sector_size(&self) -> usize {
        self.sector
    }

    fn write_block(&self) -> usize {
        self.block
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        let range = self.range(offset, buf.len())?;
        buf.copy_from_slice(&self.bytes[range]);
        Ok(())
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        let range = self.range(offset, data.len())?;
        if offset % self.block != 0 || data.len() % self.block != 0 {
            return Err(StoreError::Flash);
        }
        for (b, d) in self.bytes[range].iter_mut().zip(data) {
            *b &= d;
        }
        Ok(())
    }

    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        let range = self.sector_range(offset)?;
        self.bytes[range].fill(0xFF);
        Ok(())
    }

    fn erase_torn(&mut self, offset: usize) -> Result<(), StoreError> {
        let range = self.sector_range(offset)?;
        let half = range.start + self.sector / 2;
        self.bytes[range.start..half].fill(0xFF);
        Ok(())
    }
}
