//! The store: open (boot scan), updates, activation, rollback, loads.

use crate::container::{encode_name, name_str, Header, HEADER_LEN};
use crate::registry::{consistent, Entry, Record, SlotState, NONE};
use crate::signature::{check_payload, Hasher, SignatureBlock, Trust, SIGNATURE_LEN};
use crate::{crc32, Flash, StoreError};

/// Largest program unit the store buffers (bytes).
const MAX_BLOCK: usize = 32;
/// Stack buffer for one registry record.
const RECORD_BUF: usize = 1104;
/// Bytes read per step when checking a payload's CRC.
const CRC_CHUNK: usize = 256;

/// Where the registry copies and the slots lie in the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    sector: usize,
    slot_sectors: usize,
    models: usize,
}

impl Layout {
    /// The layout for `models` models of at most `slot_bytes` container
    /// bytes each over `flash`: two registry sectors, then 2 x `models`
    /// slots of whole sectors.
    ///
    /// # Errors
    ///
    /// [`StoreError::Layout`] when they do not fit, or a record does not
    /// fit a sector.
    pub fn new(flash: &impl Flash, models: usize, slot_bytes: usize) -> Result<Layout, StoreError> {
        let sector = flash.sector_size();
        let slot_sectors = slot_bytes.div_ceil(sector).max(1);
        let layout = Layout {
            sector,
            slot_sectors,
            models,
        };
        let needed = layout.slot_base(models, 0).ok_or(StoreError::Layout)?;
        if needed > flash.size() || flash.write_block() > MAX_BLOCK {
            return Err(StoreError::Layout);
        }
        Ok(layout)
    }

    /// Bytes one slot holds.
    pub fn slot_bytes(&self) -> usize {
        self.slot_sectors * self.sector
    }

    /// Bytes the layout takes from the start of the partition.
    pub fn used_bytes(&self) -> usize {
        self.slot_base(self.models, 0).unwrap_or(usize::MAX)
    }

    fn registry_base(&self, copy: u8) -> usize {
        usize::from(copy) * self.sector
    }

    /// Offset of model `entry`'s slot `slot` (also one past the end for
    /// `entry == models`).
    fn slot_base(&self, entry: usize, slot: u8) -> Option<usize> {
        let index = entry.checked_mul(2)?.checked_add(usize::from(slot))?;
        index
            .checked_mul(self.slot_sectors)?
            .checked_add(2)?
            .checked_mul(self.sector)
    }
}

/// What [`Store::open`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The registry record's generation (0: a fresh store).
    pub generation: u32,
    /// Models with an active version.
    pub models: usize,
    /// Active slots that failed their CRC at boot and were replaced by the
    /// previous version (or dropped when there was none).
    pub fell_back: usize,
    /// Updates a reboot interrupted (their slots are discarded).
    pub interrupted: usize,
}

/// One model as the registry has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelStatus<'s> {
    /// Its name.
    pub name: &'s str,
    /// Version loads use, if any.
    pub active: Option<u32>,
    /// Version a rollback returns to, if any.
    pub previous: Option<u32>,
    /// What each slot holds.
    pub slots: [SlotState; 2],
    /// Erases of each slot (wear).
    pub erases: [u32; 2],
    /// The lowest version the store installs, activates or rolls back to
    /// (the anti-rollback counter [`Store::confirm`] raises).
    pub security: u32,
}

/// Where a verified container lies in flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// Its header.
    pub header: Header,
    /// Flash offset of the payload (the `.tflite` bytes).
    pub payload_offset: usize,
}

/// An update in progress.
#[derive(Clone, Copy, Debug)]
struct Update {
    entry: usize,
    slot: u8,
    total: usize,
    written: usize,
    pending: [u8; MAX_BLOCK],
    pending_len: usize,
}

/// The store over flash `F`, for at most `M` models.
pub struct Store<F: Flash, const M: usize> {
    flash: F,
    layout: Layout,
    record: Record<M>,
    /// Which registry sector holds `record` (the next commit writes the
    /// other one).
    holds: u8,
    update: Option<Update>,
    trust: Trust<'static>,
}

impl<F: Flash, const M: usize> Store<F, M> {
    const FITS: () = assert!(
        Record::<M>::LEN <= RECORD_BUF && M > 0,
        "1..=16 models per store"
    );

    /// Open the store: take the newer valid registry copy, check every
    /// active slot's CRC (falling back to the previous version when one
    /// fails) and forget interrupted updates. A blank partition opens as an
    /// empty store.
    ///
    /// # Errors
    ///
    /// [`StoreError::Layout`] when `layout` is for other than `M` models or
    /// a record does not fit a sector; [`StoreError::Corrupt`] when neither
    /// copy is valid or blank (something other than a power cut damaged
    /// both); flash errors.
    pub fn open(mut flash: F, layout: Layout) -> Result<(Self, OpenReport), StoreError> {
        let () = Self::FITS;
        if layout.models != M || Record::<M>::LEN > layout.sector {
            return Err(StoreError::Layout);
        }
        let mut best: Option<(Record<M>, u8)> = None;
        // A commit writes only the copy that does not hold the current
        // record, so no valid copy and one blank one means the first
        // commit ever was cut: a blank store.
        let mut blank = false;
        let mut buf = [0u8; RECORD_BUF];
        for copy in 0..2u8 {
            let b = &mut buf[..Record::<M>::LEN];
            flash.read(layout.registry_base(copy), b)?;
            blank |= b.iter().all(|&x| x == 0xFF);
            let Some(r) = Record::<M>::decode(b).filter(|r| consistent(r).is_ok()) else {
                continue;
            };
            if best.is_none_or(|(b, _)| r.generation > b.generation) {
                best = Some((r, copy));
            }
        }
        let (record, holds) = match best {
            Some(found) => found,
            None if blank => (Record::EMPTY, 1),
            None => return Err(StoreError::Corrupt),
        };
        let mut store = Store {
            flash,
            layout,
            record,
            holds,
            update: None,
            trust: Trust::NONE,
        };
        let report = store.scan()?;
        Ok((store, report))
    }

    /// The boot scan of [`open`](Self::open).
    fn scan(&mut self) -> Result<OpenReport, StoreError> {
        let mut next = self.record;
        let mut report = OpenReport::default();
        for (k, e) in next.entries.iter_mut().enumerate() {
            if !e.is_used() {
                continue;
            }
            for s in 0..2 {
                if e.state[s] == SlotState::Staging {
                    e.state[s] = SlotState::Empty;
                    report.interrupted += 1;
                }
            }
            if e.active != NONE && self.verify(k, e, e.active).is_err() {
                report.fell_back += 1;
                e.state[usize::from(e.active)] = SlotState::Empty;
                e.active = NONE;
                if e.previous != NONE && self.verify(k, e, e.previous).is_ok() {
                    e.active = e.previous;
                } else if e.previous != NONE {
                    e.state[usize::from(e.previous)] = SlotState::Empty;
                }
                e.previous = NONE;
            }
            for other in [e.previous, e.staged] {
                if other != NONE && self.verify(k, e, other).is_err() {
                    e.state[usize::from(other)] = SlotState::Empty;
                }
            }
            if e.previous != NONE && e.state[usize::from(e.previous)] != SlotState::Valid {
                e.previous = NONE;
            }
            if e.staged != NONE && e.state[usize::from(e.staged)] != SlotState::Valid {
                e.staged = NONE;
            }
            report.models += usize::from(e.active != NONE);
        }
        if next != self.record {
            self.commit(next)?;
        }
        report.generation = self.record.generation;
        Ok(report)
    }

    /// Check the container in slot `slot` of entry `k` from flash: header,
    /// name, length, payload CRC.
    fn verify(&mut self, k: usize, e: &Entry, slot: u8) -> Result<Located, StoreError> {
        let base = self.layout.slot_base(k, slot).ok_or(StoreError::Layout)?;
        let mut head = [0u8; HEADER_LEN];
        self.flash.read(base, &mut head)?;
        let header = Header::decode(&head)?;
        if header.name() != name_str(&e.name) {
            return Err(StoreError::WrongName);
        }
        let total = header.total_len();
        if total > self.layout.slot_bytes() || e.len[usize::from(slot)] as usize != total {
            return Err(StoreError::BadContainer);
        }
        let mut digest = crate::CRC.digest();
        let mut chunk = [0u8; CRC_CHUNK];
        let mut at = header.preamble_len();
        while at < total {
            let n = CRC_CHUNK.min(total - at);
            self.flash.read(base + at, &mut chunk[..n])?;
            digest.update(&chunk[..n]);
            at += n;
        }
        if digest.finalize() != header.payload_crc {
            return Err(StoreError::CrcMismatch);
        }
        Ok(Located {
            header,
            payload_offset: base + header.preamble_len(),
        })
    }

    /// The checks of a container's signature and version, from the bytes
    /// in flash of slot `slot` of entry `k` (its header already decoded
    /// and CRC-checked by [`verify`](Self::verify)): what the trust policy
    /// admits, the version against the entry's security counter, the
    /// signature over the header and payload digest, the payload's digest.
    fn authenticate(&mut self, k: usize, slot: u8, header: &Header) -> Result<(), StoreError> {
        let base = self.layout.slot_base(k, slot).ok_or(StoreError::Layout)?;
        let mut head = [0u8; HEADER_LEN];
        self.flash.read(base, &mut head)?;
        let mut chunk = [0u8; CRC_CHUNK];
        let block = if header.signed {
            self.flash
                .read(base + HEADER_LEN, &mut chunk[..SIGNATURE_LEN])?;
            Some(SignatureBlock::decode(&chunk[..SIGNATURE_LEN])?)
        } else {
            None
        };
        self.trust.admit(block.as_ref())?;
        if header.version < self.record.entries[k].security {
            return Err(StoreError::Downgrade);
        }
        self.trust.verify_header(&head, block.as_ref())?;
        let Some(block) = block else { return Ok(()) };
        let mut hasher = Hasher::new();
        let (mut at, end) = (header.preamble_len(), header.total_len());
        while at < end {
            let n = CRC_CHUNK.min(end - at);
            self.flash.read(base + at, &mut chunk[..n])?;
            hasher.update(&chunk[..n]);
            at += n;
        }
        check_payload(&block, &hasher.finish())
    }

    /// Write `next` as the new current record (generation + 1) into the
    /// registry sector that does not hold the current one.
    fn commit(&mut self, mut next: Record<M>) -> Result<(), StoreError> {
        next.generation = self.record.generation.wrapping_add(1);
        let target = 1 - self.holds;
        let block = self.flash.write_block();
        let len = Record::<M>::LEN.div_ceil(block) * block;
        let mut buf = [0xFFu8; RECORD_BUF + MAX_BLOCK];
        next.encode(&mut buf);
        let base = self.layout.registry_base(target);
        self.flash.erase_sector(base)?;
        self.flash.write(base, &buf[..len])?;
        self.record = next;
        self.holds = target;
        Ok(())
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.record
            .entries
            .iter()
            .position(|e| e.is_used() && name_str(&e.name) == name)
    }

    fn entry(&self, name: &str) -> Result<usize, StoreError> {
        self.find(name).ok_or(StoreError::NotFound)
    }

    /// Start writing a new version of `name` (a container of `total`
    /// bytes): the slot no record names as active is marked staging in the
    /// registry and erased, sector by sector. A second `begin` abandons an
    /// update in progress.
    ///
    /// # Errors
    ///
    /// [`StoreError::BadName`], [`StoreError::TooLarge`],
    /// [`StoreError::BadContainer`] (shorter than a header),
    /// [`StoreError::Full`], flash errors.
    pub fn begin(&mut self, name: &str, total: usize) -> Result<(), StoreError> {
        let field = encode_name(name)?;
        if total > self.layout.slot_bytes() {
            return Err(StoreError::TooLarge);
        }
        if total < HEADER_LEN {
            return Err(StoreError::BadContainer);
        }
        self.update = None;
        let k = match self.find(name) {
            Some(k) => k,
            None => self
                .record
                .entries
                .iter()
                .position(|e| !e.is_used())
                .ok_or(StoreError::Full)?,
        };
        let mut next = self.record;
        let e = &mut next.entries[k];
        e.name = field;
        let slot = match e.active {
            NONE => u8::from(e.erases[1] < e.erases[0]),
            a => 1 - a,
        };
        let s = usize::from(slot);
        e.state[s] = SlotState::Staging;
        e.len[s] = 0;
        e.version[s] = 0;
        if e.previous == slot {
            e.previous = NONE;
        }
        if e.staged == slot {
            e.staged = NONE;
        }
        self.commit(next)?;
        let base = self.layout.slot_base(k, slot).ok_or(StoreError::Layout)?;
        let sectors = total.div_ceil(self.layout.sector);
        for i in 0..sectors {
            self.flash.erase_sector(base + i * self.layout.sector)?;
        }
        self.record.entries[k].erases[s] = self.record.entries[k].erases[s].saturating_add(1);
        self.update = Some(Update {
            entry: k,
            slot,
            total,
            written: 0,
            pending: [0xFF; MAX_BLOCK],
            pending_len: 0,
        });
        Ok(())
    }

    /// Write the next `data` of the update's container, at byte `offset`
    /// (which must be where the last chunk ended).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoUpdate`], [`StoreError::OutOfOrder`], flash errors.
    pub fn write_chunk(&mut self, offset: usize, mut data: &[u8]) -> Result<(), StoreError> {
        let mut u = self.update.ok_or(StoreError::NoUpdate)?;
        if offset != u.written || data.len() > u.total - u.written {
            return Err(StoreError::OutOfOrder);
        }
        let block = self.flash.write_block();
        let base = self
            .layout
            .slot_base(u.entry, u.slot)
            .ok_or(StoreError::Layout)?;
        // Fill a partial block first, then whole blocks straight from
        // `data`, then keep the tail.
        while !data.is_empty() {
            let flushed = u.written - u.pending_len;
            if u.pending_len > 0 || data.len() < block {
                let n = (block - u.pending_len).min(data.len());
                u.pending[u.pending_len..u.pending_len + n].copy_from_slice(&data[..n]);
                u.pending_len += n;
                u.written += n;
                data = &data[n..];
                if u.pending_len == block {
                    self.flash.write(base + flushed, &u.pending[..block])?;
                    u.pending = [0xFF; MAX_BLOCK];
                    u.pending_len = 0;
                }
            } else {
                let n = data.len() / block * block;
                self.flash.write(base + flushed, &data[..n])?;
                u.written += n;
                data = &data[n..];
            }
        }
        self.update = Some(u);
        Ok(())
    }

    /// End the update: flush, read the container back from flash and check
    /// it (header, name, length, payload CRC), and record the slot as
    /// holding a verified version (not yet active: [`activate`](Self::activate)).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoUpdate`], [`StoreError::Incomplete`], the
    /// container's errors ([`StoreError::BadContainer`],
    /// [`StoreError::CrcMismatch`], [`StoreError::WrongName`]): the update
    /// is then abandoned; flash errors.
    pub fn finish(&mut self) -> Result<Header, StoreError> {
        let u = self.update.ok_or(StoreError::NoUpdate)?;
        if u.written != u.total {
            return Err(StoreError::Incomplete);
        }
        self.update = None;
        let base = self
            .layout
            .slot_base(u.entry, u.slot)
            .ok_or(StoreError::Layout)?;
        if u.pending_len > 0 {
            let block = self.flash.write_block();
            self.flash
                .write(base + u.written - u.pending_len, &u.pending[..block])?;
        }
        let s = usize::from(u.slot);
        let mut next = self.record;
        next.entries[u.entry].len[s] = u.total as u32;
        let located = self.verify(u.entry, &next.entries[u.entry], u.slot)?;
        self.authenticate(u.entry, u.slot, &located.header)?;
        let e = &mut next.entries[u.entry];
        e.state[s] = SlotState::Valid;
        e.version[s] = located.header.version;
        e.staged = u.slot;
        self.commit(next)?;
        Ok(located.header)
    }

    /// Make the verified, inactive version of `name` the one loads use;
    /// the active one becomes the rollback target.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::NothingStaged`], flash
    /// errors.
    pub fn activate(&mut self, name: &str) -> Result<u32, StoreError> {
        let k = self.entry(name)?;
        let mut next = self.record;
        let e = &mut next.entries[k];
        let s = e.staged;
        if s == NONE || s == e.active {
            return Err(StoreError::NothingStaged);
        }
        if e.version[usize::from(s)] < e.security {
            return Err(StoreError::Downgrade);
        }
        e.previous = e.active;
        e.active = s;
        e.staged = NONE;
        let version = e.version[usize::from(s)];
        self.commit(next)?;
        Ok(version)
    }

    /// Return `name` to its previous version (checked from flash first);
    /// the version left becomes the rollback target in turn.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::NoPrevious`], flash errors.
    pub fn rollback(&mut self, name: &str) -> Result<u32, StoreError> {
        let previous = self.previous(name)?;
        let k = self.entry(name)?;
        if previous.header.version < self.record.entries[k].security {
            return Err(StoreError::Downgrade);
        }
        let mut next = self.record;
        let n = &mut next.entries[k];
        core::mem::swap(&mut n.active, &mut n.previous);
        let version = n.version[usize::from(n.active)];
        self.commit(next)?;
        Ok(version)
    }

    /// The active version of `name`, its CRC checked from flash.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (also when no version is active), the
    /// container's errors, flash errors.
    pub fn active(&mut self, name: &str) -> Result<Located, StoreError> {
        let k = self.entry(name)?;
        let e = self.record.entries[k];
        if e.active == NONE {
            return Err(StoreError::NotFound);
        }
        self.verify(k, &e, e.active)
    }

    /// The version [`activate`](Self::activate) would make active: the
    /// verified update of `name`, checked from flash again.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::NothingStaged`], the
    /// container's errors, flash errors.
    pub fn staged(&mut self, name: &str) -> Result<Located, StoreError> {
        let k = self.entry(name)?;
        let e = self.record.entries[k];
        if e.staged == NONE || e.staged == e.active {
            return Err(StoreError::NothingStaged);
        }
        self.verify(k, &e, e.staged)
    }

    /// The version [`rollback`](Self::rollback) would make active, checked
    /// from flash.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::NoPrevious`] (also when it
    /// fails its check).
    pub fn previous(&mut self, name: &str) -> Result<Located, StoreError> {
        let k = self.entry(name)?;
        let e = self.record.entries[k];
        if e.previous == NONE {
            return Err(StoreError::NoPrevious);
        }
        self.verify(k, &e, e.previous)
            .map_err(|_| StoreError::NoPrevious)
    }

    /// The payload (the `.tflite`) of a located container where the CPU
    /// reads it in place ([`Flash::mapped`]); `None` when the flash is not
    /// mapped.
    pub fn mapped(&self, located: &Located) -> Option<&'static [u8]> {
        self.flash
            .mapped(located.payload_offset, located.header.payload_len as usize)
    }

    /// Read `buf.len()` payload bytes of a located container from `at`.
    ///
    /// # Errors
    ///
    /// [`StoreError::OutOfOrder`] past the payload; flash errors.
    pub fn read_payload(
        &mut self,
        located: &Located,
        at: usize,
        buf: &mut [u8],
    ) -> Result<(), StoreError> {
        let end = at.checked_add(buf.len()).ok_or(StoreError::OutOfOrder)?;
        if end > located.header.payload_len as usize {
            return Err(StoreError::OutOfOrder);
        }
        self.flash.read(located.payload_offset + at, buf)
    }

    /// Every model the registry knows.
    pub fn models(&self) -> impl Iterator<Item = ModelStatus<'_>> + '_ {
        self.record.entries.iter().filter(|e| e.is_used()).map(|e| {
            let version = |s: u8| (s != NONE).then(|| e.version[usize::from(s)]);
            ModelStatus {
                name: name_str(&e.name),
                active: version(e.active),
                previous: version(e.previous),
                slots: e.state,
                erases: e.erases,
                security: e.security,
            }
        })
    }

    /// Confirm the active version of `name` (it runs as it should): the
    /// model's security counter rises to its version, so no older version
    /// installs, activates or is rolled back to again (as MCUboot's
    /// security counter rises when an image is confirmed). The counter is
    /// committed with the registry: a power cut leaves the old counter or
    /// the new one. Confirming again, or a version at the counter, writes
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (also when no version is active), flash
    /// errors.
    pub fn confirm(&mut self, name: &str) -> Result<u32, StoreError> {
        let k = self.entry(name)?;
        let e = self.record.entries[k];
        if e.active == NONE {
            return Err(StoreError::NotFound);
        }
        let version = e.version[usize::from(e.active)];
        if version > e.security {
            let mut next = self.record;
            next.entries[k].security = version;
            self.commit(next)?;
        }
        Ok(version)
    }

    /// Check what a container's first bytes (`preamble`: its header and,
    /// signed, its signature block) decide, before anything is erased or
    /// written: a well-formed header for `name` of `total` bytes, a format
    /// and signer the trust policy admits, a version at or above the
    /// model's security counter, the signature over the header and the
    /// payload digest. `Ok(None)` while `preamble` is too short to decide.
    /// [`finish`](Self::finish) checks all of it again from flash, and the
    /// payload against its digest.
    ///
    /// # Errors
    ///
    /// [`StoreError::BadContainer`], [`StoreError::WrongName`],
    /// [`StoreError::Length`], [`StoreError::Unsigned`],
    /// [`StoreError::UntrustedKey`], [`StoreError::Downgrade`],
    /// [`StoreError::BadSignature`].
    pub fn check_preamble(
        &self,
        name: &str,
        total: usize,
        preamble: &[u8],
    ) -> Result<Option<Header>, StoreError> {
        if preamble.len() < HEADER_LEN {
            return Ok(None);
        }
        let header = Header::decode(preamble)?;
        if header.name() != name {
            return Err(StoreError::WrongName);
        }
        if header.total_len() != total {
            return Err(StoreError::Length);
        }
        let block = match preamble.get(HEADER_LEN..header.preamble_len()) {
            _ if !header.signed => None,
            Some(b) => Some(SignatureBlock::decode(b)?),
            None => return Ok(None),
        };
        self.trust.admit(block.as_ref())?;
        let security = self
            .find(name)
            .map_or(0, |k| self.record.entries[k].security);
        if header.version < security {
            return Err(StoreError::Downgrade);
        }
        let head: &[u8; HEADER_LEN] = preamble[..HEADER_LEN]
            .try_into()
            .map_err(|_| StoreError::BadContainer)?;
        self.trust.verify_header(head, block.as_ref())?;
        Ok(Some(header))
    }

    /// The containers the store accepts from now on (finished updates
    /// already staged stay staged).
    pub fn set_trust(&mut self, trust: Trust<'static>) {
        self.trust = trust;
    }

    /// The containers the store accepts.
    pub fn trust(&self) -> Trust<'static> {
        self.trust
    }

    /// The registry's generation (commits since the store was blank).
    pub fn generation(&self) -> u32 {
        self.record.generation
    }

    /// The flash (for a host model's counters, for instance).
    pub fn flash_mut(&mut self) -> &mut F {
        &mut self.flash
    }

    /// The flash, back (to reboot a host model, for instance).
    pub fn into_flash(self) -> F {
        self.flash
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The CRC of a whole container's bytes as [`Store::write_chunk`] takes
    /// them (for senders that want an end-to-end check).
    pub fn container_crc(bytes: &[u8]) -> u32 {
        crc32(bytes)
    }
}
