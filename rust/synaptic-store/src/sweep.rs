//! The power-loss sweep, for the host's flash model and a board's flash
//! alike: a scenario of installs, updates, a rollback and confirmations
//! (which raise a model's anti-rollback counter) of two models, cut at
//! chosen flash operations; after each cut the store reopens and each
//! model's active version and security counter must be those before the
//! interrupted step or those after it, payloads complete and byte for byte
//! right, and the store must take a further update. Payloads are synthetic (a function of name,
//! version and offset), so no buffer holds them.

use crate::container::{Header, TensorShape, HEADER_LEN};
use crate::{Flash, Layout, PowerCut, Store, StoreError};

/// The two models of the scenario.
pub const NAMES: [&str; 2] = ["kws", "face"];

/// A synthetic container: `len` payload bytes of model `name`, `version`.
#[derive(Clone, Copy, Debug)]
pub struct Synthetic {
    /// Model name.
    pub name: &'static str,
    /// Version.
    pub version: u32,
}

impl Synthetic {
    /// Payload bytes (grows with the version, so slots see other lengths).
    pub fn payload_len(&self) -> usize {
        4000 + self.version as usize * 1000
    }

    /// Payload byte `i`.
    pub fn byte(&self, i: usize) -> u8 {
        (i as u32)
            .wrapping_mul(31)
            .wrapping_add(self.version.wrapping_mul(7))
            .wrapping_add(self.name.len() as u32) as u8
    }

    fn fill(&self, at: usize, out: &mut [u8]) {
        for (k, b) in out.iter_mut().enumerate() {
            *b = self.byte(at + k);
        }
    }

    /// Its header (the payload CRC computed as the bytes stream by).
    pub fn header(&self) -> Result<Header, StoreError> {
        let mut digest = crate::CRC.digest();
        let mut chunk = [0u8; 256];
        let mut at = 0;
        while at < self.payload_len() {
            let n = chunk.len().min(self.payload_len() - at);
            self.fill(at, &mut chunk[..n]);
            digest.update(&chunk[..n]);
            at += n;
        }
        let shape = TensorShape {
            dtype: 9,
            rank: 1,
            dims: [self.payload_len() as u32, 1, 1, 1],
        };
        let mut h = Header::new(self.name, self.version, &[], shape, shape)?;
        h.payload_len = self.payload_len() as u32;
        h.payload_crc = digest.finalize();
        Ok(h)
    }

    /// Install it: begin, chunks of 700 bytes, finish, activate.
    ///
    /// # Errors
    ///
    /// Any step's.
    pub fn install<F: Flash, const M: usize>(
        &self,
        store: &mut Store<F, M>,
    ) -> Result<(), StoreError> {
        let header = self.header()?.encode();
        store.begin(self.name, HEADER_LEN + self.payload_len())?;
        store.write_chunk(0, &header)?;
        let mut chunk = [0u8; 700];
        let mut at = 0;
        while at < self.payload_len() {
            let n = chunk.len().min(self.payload_len() - at);
            self.fill(at, &mut chunk[..n]);
            store.write_chunk(HEADER_LEN + at, &chunk[..n])?;
            at += n;
        }
        store.finish()?;
        store.activate(self.name).map(|_| ())
    }
}

/// One step of the scenario.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Install (or update to) this version and activate it.
    Update(Synthetic),
    /// Roll the model back.
    Rollback(&'static str),
    /// Confirm the model's active version (its security counter rises).
    Confirm(&'static str),
}

/// A step, and the active versions and security counters of [`NAMES`]
/// once it is done.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// What the step does.
    pub action: Action,
    /// Active versions after it.
    pub after: [Option<u32>; 2],
    /// Security counters after it.
    pub security: [u32; 2],
}

const fn update(
    name: &'static str,
    version: u32,
    after: [Option<u32>; 2],
    security: [u32; 2],
) -> Step {
    Step {
        action: Action::Update(Synthetic { name, version }),
        after,
        security,
    }
}

/// The scenario.
pub const STEPS: [Step; 8] = [
    update("kws", 1, [Some(1), None], [0, 0]),
    update("face", 1, [Some(1), Some(1)], [0, 0]),
    update("kws", 2, [Some(2), Some(1)], [0, 0]),
    Step {
        action: Action::Rollback("kws"),
        after: [Some(1), Some(1)],
        security: [0, 0],
    },
    update("face", 2, [Some(1), Some(2)], [0, 0]),
    Step {
        action: Action::Confirm("face"),
        after: [Some(1), Some(2)],
        security: [0, 2],
    },
    update("kws", 3, [Some(3), Some(2)], [0, 2]),
    Step {
        action: Action::Confirm("kws"),
        after: [Some(3), Some(2)],
        security: [3, 2],
    },
];

/// Run step `step`.
///
/// # Errors
///
/// The store's.
pub fn run<F: Flash, const M: usize>(
    store: &mut Store<F, M>,
    step: &Step,
) -> Result<(), StoreError> {
    match step.action {
        Action::Update(s) => s.install(store),
        Action::Rollback(name) => store.rollback(name).map(|_| ()),
        Action::Confirm(name) => store.confirm(name).map(|_| ()),
    }
}

/// The security counters of [`NAMES`] (0 for a model the store lacks).
pub fn security_counters<F: Flash, const M: usize>(store: &Store<F, M>) -> [u32; 2] {
    NAMES.map(|name| {
        store
            .models()
            .find(|m| m.name == name)
            .map_or(0, |m| m.security)
    })
}

/// The active versions of [`NAMES`], each payload checked byte for byte.
///
/// # Errors
///
/// [`StoreError::CrcMismatch`] when a payload differs from its synthetic
/// bytes; the store's.
pub fn active_versions<F: Flash, const M: usize>(
    store: &mut Store<F, M>,
) -> Result<[Option<u32>; 2], StoreError> {
    let mut out = [None; 2];
    for (slot, name) in out.iter_mut().zip(NAMES) {
        let located = match store.active(name) {
            Ok(l) => l,
            Err(StoreError::NotFound) => continue,
            Err(e) => return Err(e),
        };
        let s = Synthetic {
            name,
            version: located.header.version,
        };
        let mut chunk = [0u8; 256];
        let mut at = 0;
        while at < located.header.payload_len as usize {
            let n = chunk.len().min(located.header.payload_len as usize - at);
            store.read_payload(&located, at, &mut chunk[..n])?;
            if (0..n).any(|k| chunk[k] != s.byte(at + k)) {
                return Err(StoreError::CrcMismatch);
            }
            at += n;
        }
        *slot = Some(s.version);
    }
    Ok(out)
}

/// What a sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Flash operations of the whole scenario, uncut.
    pub operations: usize,
    /// Cut points tried.
    pub cuts: usize,
    /// Boots whose own repair commit was cut as well.
    pub second_cuts: usize,
}

/// A cut after which the store was wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The cut point (flash operation index).
    pub cut: usize,
    /// The step it interrupted.
    pub step: usize,
    /// What the store said: versions, or an error.
    pub found: Result<[Option<u32>; 2], StoreError>,
    /// The security counters it had.
    pub security: [u32; 2],
}

/// Erase every sector `layout` uses (a blank store).
fn blank<F: Flash>(flash: &mut F, layout: &Layout) -> Result<(), StoreError> {
    let sector = flash.sector_size();
    (0..layout.used_bytes() / sector).try_for_each(|i| flash.erase_sector(i * sector))
}

/// Run the scenario from a blank store once uncut, then once for each cut
/// point `cuts` yields (operation indices; those past the scenario's end
/// are skipped): cut there, reboot, also cut the boot's own repair commit
/// at each of its operations (then boot again), and check.
///
/// # Errors
///
/// The first [`Failure`]; a cut-free run that fails is cut point
/// `usize::MAX`.
pub fn sweep<F: Flash, const M: usize>(
    flash: &mut PowerCut<F>,
    layout: Layout,
    cuts: impl Iterator<Item = usize>,
) -> Result<Report, Failure> {
    let fail = |cut, step, found| Failure {
        cut,
        step,
        found,
        security: [0; 2],
    };
    let uncut = |e| fail(usize::MAX, 0, Err(e));
    flash.reboot();
    blank(flash, &layout).map_err(uncut)?;
    let start = flash.ops();
    let mut ends = [0usize; STEPS.len()];
    {
        let (mut store, _) = Store::<_, M>::open(&mut *flash, layout).map_err(uncut)?;
        for (end, step) in ends.iter_mut().zip(&STEPS) {
            run(&mut store, step).map_err(uncut)?;
            *end = store.flash_mut().ops() - start;
        }
    }
    let mut report = Report {
        operations: ends[STEPS.len() - 1],
        ..Report::default()
    };
    for cut in cuts.take_while(|&c| c < report.operations) {
        flash.reboot();
        blank(flash, &layout).map_err(|e| fail(cut, 0, Err(e)))?;
        {
            let (mut store, _) =
                Store::<_, M>::open(&mut *flash, layout).map_err(|e| fail(cut, 0, Err(e)))?;
            store.flash_mut().cut_after(cut);
            for step in &STEPS {
                if run(&mut store, step).is_err() {
                    break;
                }
            }
        }
        let step = ends.iter().position(|&end| cut < end).unwrap_or(0);
        let (before, security_before) = if step == 0 {
            ([None, None], [0, 0])
        } else {
            (STEPS[step - 1].after, STEPS[step - 1].security)
        };
        // Boots whose repair commit is cut too, at each of its operations.
        for second in 0..3 {
            flash.reboot();
            flash.cut_after(second);
            match Store::<_, M>::open(&mut *flash, layout) {
                Ok(_) => break,
                Err(StoreError::PowerLoss) => report.second_cuts += 1,
                Err(e) => return Err(fail(cut, step, Err(e))),
            }
        }
        flash.reboot();
        let (mut store, _) =
            Store::<_, M>::open(&mut *flash, layout).map_err(|e| fail(cut, step, Err(e)))?;
        // Versions and counters both as before the step, or both after.
        let security = security_counters(&store);
        match active_versions(&mut store) {
            Ok(v)
                if (v, security) == (before, security_before)
                    || (v, security) == (STEPS[step].after, STEPS[step].security) => {}
            other => {
                return Err(Failure {
                    security,
                    ..fail(cut, step, other)
                })
            }
        }
        // The store still takes an update.
        let next = Synthetic {
            name: "kws",
            version: 4,
        };
        next.install(&mut store)
            .map_err(|e| fail(cut, step, Err(e)))?;
        report.cuts += 1;
    }
    Ok(report)
}
