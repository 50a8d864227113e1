//! Over-the-air updates as a stream: the reference's `syn_model_ota.h`
//! state machine (begin, sequential chunks, finish, activate, rollback)
//! over a [`Store`]. The container header is checked as soon as its 96
//! bytes have arrived (magic and CRC, the length announced at begin, the
//! name), the payload's CRC at finish from flash.

use crate::container::{encode_name, name_str, Header, HEADER_LEN, NAME_MAX};
use crate::{Flash, Store, StoreError};

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
    /// The store failed otherwise (flash, registry full, ...).
    Store(StoreError),
}

impl From<StoreError> for OtaError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TooLarge => OtaError::TooLarge,
            StoreError::BadContainer => OtaError::BadHeader,
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
    header: [u8; HEADER_LEN],
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
            header: [0; HEADER_LEN],
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
    /// any state: an update in progress is abandoned).
    ///
    /// # Errors
    ///
    /// [`OtaError::Name`], [`OtaError::TooLarge`], store errors.
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
        if let Err(e) = store.begin(name, total) {
            return self.fail(e);
        }
        self.name = field;
        self.total = total;
        self.written = 0;
        self.state = OtaState::Downloading;
        Ok(())
    }

    /// The next `data` of the stream.
    ///
    /// # Errors
    ///
    /// [`OtaError::State`] unless downloading; [`OtaError::BadHeader`],
    /// [`OtaError::Size`], [`OtaError::Name`] as soon as the header is in;
    /// store errors. Every error but `State` ends the update
    /// ([`OtaState::Error`]).
    pub fn write_chunk<F: Flash, const M: usize>(
        &mut self,
        store: &mut Store<F, M>,
        data: &[u8],
    ) -> Result<(), OtaError> {
        if self.state != OtaState::Downloading {
            return Err(OtaError::State);
        }
        if data.len() > self.total - self.written {
            return self.fail(OtaError::Size);
        }
        // Keep the header's bytes to check it once complete.
        if self.written < HEADER_LEN {
            let n = (HEADER_LEN - self.written).min(data.len());
            self.header[self.written..self.written + n].copy_from_slice(&data[..n]);
            if self.written + n == HEADER_LEN {
                let header = match Header::decode(&self.header) {
                    Ok(h) => h,
                    Err(_) => return self.fail(OtaError::BadHeader),
                };
                if header.total_len() != self.total {
                    return self.fail(OtaError::Size);
                }
                if header.name() != name_str(&self.name) {
                    return self.fail(OtaError::Name);
                }
            }
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
