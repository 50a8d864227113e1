//! Over-the-air updates as a stream: the reference's `syn_model_ota.h`
//! state machine (begin, sequential chunks, finish, activate, rollback)
//! over a [`Store`]. The container's preamble (header and, signed, its
//! signature block) is kept in RAM until it has arrived whole and checked
//! ([`Store::check_preamble`]: magic and CRC, the length announced at
//! begin, the name, the signer, the version against the security
//! counter); only then does the store erase and write. So a container
//! refused on any of those leaves the store as it was, byte for byte. The
//! payload's CRC, the digest and the signature are checked at finish, from
//! flash.

use crate::container::{encode_name, name_str, Header, HEADER_LEN, NAME_MAX};
use crate::signature::SIGNATURE_LEN;
use crate::{Flash, Store, StoreError};

/// Longest preamble: a signed container's header and signature block.
pub const PREAMBLE_MAX: usize = HEADER_LEN + SIGNATURE_LEN;

/// Where an update stands (the reference's `syn_ota_state_t`, in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum OtaState {
    /// No update in progress.
    Idle = 0,
    /// Begun; chunks are arriving.
    Downloading = 1,
    /// The stream is complete; the container is being checked from flash.
    Validating = 2,
    /// The checked version is being recorded in the registry.
    Staging = 3,
    /// Verified and staged: [`Ota::activate`] may switch to it.
    Ready = 4,
    /// The update failed; [`Ota::begin`] starts over.
    Error = 5,
}

/// Why an update step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtaError {
    /// Not allowed in this state (a chunk while idle, activate before
    /// ready...).
    State,
    /// Larger than a slot.
    TooLarge,
    /// The header is not a container header (magic, format, CRC).
    BadHeader,
    /// The header's length differs from the one given at begin, or the
    /// stream runs past it.
    Size,
    /// The header names another model than the one begun, or a bad name.
    Name,
    /// Finish before the whole stream arrived.
    Incomplete,
    /// The payload fails its CRC.
    Crc,
    /// No update was activated to roll back, or no previous version.
    NothingToRollBack,
    /// An unsigned container where signatures are required.
    Unsigned,
    /// Signed by a key the device does not trust.
    UntrustedKey,
    /// The digest or signature does not match the bytes: the header, the
    /// payload or the signature was changed after signing.
    Signature,
    /// A version below the model's security counter (anti-rollback).
    Downgrade,
    /// The store failed otherwise (flash, registry full, ...).
    Store(StoreError),
}

impl From<StoreError> for OtaError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TooLarge => OtaError::TooLarge,
            StoreError::BadContainer => OtaError::BadHeader,
            StoreError::Length => OtaError::Size,
            StoreError::Unsigned => OtaError::Unsigned,
            StoreError::UntrustedKey => OtaError::UntrustedKey,
            StoreError::BadSignature => OtaError::Signature,
            StoreError::Downgrade => OtaError::Downgrade,
            StoreError::CrcMismatch => OtaError::Crc,
            StoreError::WrongName | StoreError::BadName => OtaError::Name,
            StoreError::Incomplete => OtaError::Incomplete,
            StoreError::NoPrevious => OtaError::NothingToRollBack,
            e => OtaError::Store(e),
        }
    }
}

/// One update stream at a time.
#[derive(Clone, Debug)]
pub struct Ota {
    state: OtaState,
    name: [u8; NAME_MAX + 1],
    total: usize,
    written: usize,
    /// The container's first bytes, until they are checked.
    preamble: [u8; PREAMBLE_MAX],
    /// The store's update has begun (the preamble passed its checks).
    begun: bool,
    /// The model the last activation switched (what rollback acts on).
    activated: [u8; NAME_MAX + 1],
}

impl Default for Ota {
    fn default() -> Self {
        Ota::new()
    }
}

impl Ota {
    /// Idle.
    pub const fn new() -> Ota {
        Ota {
            state: OtaState::Idle,
            name: [0; NAME_MAX + 1],
            total: 0,
            written: 0,
            preamble: [0; PREAMBLE_MAX],
            begun: false,
            activated: [0; NAME_MAX + 1],
        }
    }

    /// Where the update stands.
    pub fn state(&self) -> OtaState {
        self.state
    }

    /// Bytes received of the current stream.
    pub fn received(&self) -> usize {
        self.written
    }

    /// Bytes the stream still holds back before the store is touched:
    /// up to the longest preamble (header and signature block), whose
    /// check (a signature verification, with a key) the next
    /// [`write_chunk`](Self::write_chunk) may run; 0 once the container
    /// is being written, or when no stream is downloading.
    pub fn preamble_pending(&self) -> usize {
        if self.state == OtaState::Downloading && !self.begun {
            PREAMBLE_MAX - self.written
        } else {
            0
        }
    }

    /// The model a verified update is ready to switch ([`activate`](Self::activate)).
    pub fn ready(&self) -> Option<&str> {
        (self.state == OtaState::Ready).then(|| name_str(&self.name))
    }

    /// The model last activated ([`rollback`](Self::rollback) switches it back).
    pub fn last_activated(&self) -> Option<&str> {
        (self.activated[0] != 0).then(|| name_str(&self.activated))
    }

    fn fail<T>(&mut self, e: impl Into<OtaError>) -> Result<T, OtaError> {
        self.state = OtaState::Error;
        Err(e.into())
    }

    /// Start a stream of `total` container bytes for model `name` (from
    /// any state: an update in progress is abandoned). The store is not
    /// touched until the container's preamble has arrived and passed.
    ///
    /// # Errors
    ///
    /// [`OtaError::Name`], [`OtaError::TooLarge`], [`OtaError::Size`]
    /// (shorter than a header).
    pub fn begin<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
        name: &str,
        total: usize,
    ) -> Result<(), OtaError> {
        let field = encode_name(name).map_err(OtaError::from)?;
        if total > store.layout().slot_bytes() {
            self.state = OtaState::Idle;
            return Err(OtaError::TooLarge);
        }
        if total < HEADER_LEN {
            return self.fail(OtaError::Size);
        }
        self.name = field;
        self.total = total;
        self.written = 0;
        self.begun = false;
        self.state = OtaState::Downloading;
        Ok(())
    }

    /// The next `data` of the stream.
    ///
    /// # Errors
    ///
    /// [`OtaError::State`] unless downloading; as soon as the preamble is
    /// in, [`OtaError::BadHeader`], [`OtaError::Size`], [`OtaError::Name`],
    /// [`OtaError::Unsigned`], [`OtaError::UntrustedKey`],
    /// [`OtaError::Downgrade`] (the store untouched); store errors. Every
    /// error but `State` ends the update ([`OtaState::Error`]).
    pub fn write_chunk<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
        mut data: &[u8],
    ) -> Result<(), OtaError> {
        if self.state != OtaState::Downloading {
            return Err(OtaError::State);
        }
        if data.len() > self.total - self.written {
            return self.fail(OtaError::Size);
        }
        if !self.begun {
            let n = (PREAMBLE_MAX - self.written).min(data.len());
            self.preamble[self.written..self.written + n].copy_from_slice(&data[..n]);
            self.written += n;
            data = &data[n..];
            let held = &self.preamble[..self.written];
            match store.check_preamble(name_str(&self.name), self.total, held) {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => {}
                Err(e) => return self.fail(e),
            }
            let begun = store
                .begin(name_str(&self.name), self.total)
                .and_then(|()| store.write_chunk(0, &self.preamble[..self.written]));
            if let Err(e) = begun {
                return self.fail(e);
            }
            self.begun = true;
        }
        if data.is_empty() {
            return Ok(());
        }
        if let Err(e) = store.write_chunk(self.written, data) {
            return self.fail(e);
        }
        self.written += data.len();
        Ok(())
    }

    /// End the stream: check the container from flash and stage it.
    ///
    /// # Errors
    ///
    /// [`OtaError::State`] unless downloading; [`OtaError::Incomplete`],
    /// [`OtaError::Crc`], store errors (the update then ends in
    /// [`OtaState::Error`]).
    pub fn finish<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
    ) -> Result<Header, OtaError> {
        if self.state != OtaState::Downloading {
            return Err(OtaError::State);
        }
        if self.written != self.total {
            return self.fail(OtaError::Incomplete);
        }
        self.state = OtaState::Validating;
        match store.finish() {
            Ok(h) => {
                self.state = OtaState::Ready;
                Ok(h)
            }
            Err(e) => self.fail(e),
        }
    }

    /// Switch the model to the staged version; back to idle.
    ///
    /// # Errors
    ///
    /// [`OtaError::State`] unless ready; store errors.
    pub fn activate<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
    ) -> Result<u32, OtaError> {
        if self.state != OtaState::Ready {
            return Err(OtaError::State);
        }
        self.state = OtaState::Staging;
        match store.activate(name_str(&self.name)) {
            Ok(v) => {
                self.activated = self.name;
                self.state = OtaState::Idle;
                Ok(v)
            }
            Err(e) => self.fail(e),
        }
    }

    /// Confirm the last activated model's active version: its security
    /// counter rises to that version ([`Store::confirm`]), and no older
    /// version installs or is rolled back to again.
    ///
    /// # Errors
    ///
    /// [`OtaError::NothingToRollBack`] when nothing was activated; store
    /// errors.
    pub fn confirm<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
    ) -> Result<u32, OtaError> {
        if self.activated[0] == 0 {
            return Err(OtaError::NothingToRollBack);
        }
        store
            .confirm(name_str(&self.activated))
            .map_err(OtaError::from)
    }

    /// Return the last activated model to its previous version.
    ///
    /// # Errors
    ///
    /// [`OtaError::NothingToRollBack`]; [`OtaError::State`] during an
    /// update; store errors.
    pub fn rollback<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
    ) -> Result<u32, OtaError> {
        if matches!(
            self.state,
            OtaState::Downloading | OtaState::Validating | OtaState::Staging
        ) {
            return Err(OtaError::State);
        }
        if self.activated[0] == 0 {
            return Err(OtaError::NothingToRollBack);
        }
        store
            .rollback(name_str(&self.activated))
            .map_err(OtaError::from)
    }
}
