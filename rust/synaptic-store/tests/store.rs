//! The store on the in-memory flash model: updates, rollback, boot scan,
//! and the power-loss sweep (a cut at every flash operation of a scenario
//! of installs, updates, activations and rollbacks).

// `drop` ends a store's borrow of its flash image before the image is
// reopened or corrupted.
#![allow(clippy::drop_non_drop)]

use synaptic_store::sweep::sweep;
use synaptic_store::{
    Header, Layout, MemFlash, PowerCut, SlotState, Store, StoreError, TensorShape, HEADER_LEN,
};

/// The store under test: over RAM flash with power cuts on demand.
type TestStore<'a> = Store<PowerCut<MemFlash<'a>>, MODELS>;

const SECTOR: usize = 4096;
const BLOCK: usize = 16;
const MODELS: usize = 3;
const SLOT: usize = 3 * SECTOR;
const FLASH: usize = 2 * SECTOR + 2 * MODELS * SLOT;

fn container(name: &str, version: u32, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len)
        .map(|i| (i as u32 * 31 + version * 7) as u8)
        .collect();
    let shape = TensorShape {
        dtype: 9,
        rank: 2,
        dims: [1, 8, 1, 1],
    };
    let header = Header::new(name, version, &payload, shape, shape).unwrap();
    let mut bytes = header.encode().to_vec();
    bytes.extend_from_slice(&payload);
    bytes
}

/// Install a container in chunks of `chunk` bytes and activate it.
fn install(
    store: &mut TestStore<'_>,
    name: &str,
    bytes: &[u8],
    chunk: usize,
) -> Result<u32, StoreError> {
    store.begin(name, bytes.len())?;
    for (i, c) in bytes.chunks(chunk).enumerate() {
        store.write_chunk(i * chunk, c)?;
    }
    store.finish()?;
    store.activate(name)
}

fn open(buf: &mut [u8]) -> Result<(TestStore<'_>, synaptic_store::OpenReport), StoreError> {
    let flash = PowerCut::new(MemFlash::new(buf, SECTOR, BLOCK));
    let layout = Layout::new(&flash, MODELS, SLOT)?;
    Store::open(flash, layout)
}

/// The active payload of `name`, read back through the store.
fn active_payload(store: &mut TestStore<'_>, name: &str) -> Result<(u32, Vec<u8>), StoreError> {
    let located = store.active(name)?;
    let mut out = vec![0u8; located.header.payload_len as usize];
    store.read_payload(&located, 0, &mut out)?;
    Ok((located.header.version, out))
}

#[test]
fn install_update_rollback_and_wear() {
    let mut buf = vec![0xFFu8; FLASH];
    let (mut store, report) = open(&mut buf).unwrap();
    assert_eq!(report.generation, 0);
    let v1 = container("kws", 1, 5000);
    let v2 = container("kws", 2, 7001);
    assert_eq!(install(&mut store, "kws", &v1, 333), Ok(1));
    assert_eq!(
        active_payload(&mut store, "kws").unwrap(),
        (1, v1[HEADER_LEN..].to_vec())
    );
    assert_eq!(install(&mut store, "kws", &v2, 1024), Ok(2));
    assert_eq!(active_payload(&mut store, "kws").unwrap().0, 2);
    let status = store.models().next().unwrap();
    assert_eq!((status.active, status.previous), (Some(2), Some(1)));
    assert_eq!(status.slots, [SlotState::Valid; 2]);
    assert_eq!(store.rollback("kws"), Ok(1));
    assert_eq!(
        active_payload(&mut store, "kws").unwrap(),
        (1, v1[HEADER_LEN..].to_vec())
    );
    // Back and forth: the version left is the rollback target.
    assert_eq!(store.rollback("kws"), Ok(2));
    // A third version overwrites the slot that is not active.
    let v3 = container("kws", 3, 100);
    assert_eq!(install(&mut store, "kws", &v3, 7), Ok(3));
    let status = store.models().next().unwrap();
    assert_eq!((status.active, status.previous), (Some(3), Some(2)));
    assert_eq!(
        status.erases.iter().sum::<u32>(),
        3,
        "one erase pass per update"
    );
    // Everything survives a reboot.
    let flash = store.into_flash();
    drop(flash);
    let (mut store, report) = open(&mut buf).unwrap();
    assert_eq!(
        (report.models, report.fell_back, report.interrupted),
        (1, 0, 0)
    );
    assert_eq!(active_payload(&mut store, "kws").unwrap().0, 3);
}

#[test]
fn bad_updates_are_refused_and_leave_the_active_version() {
    let mut buf = vec![0xFFu8; FLASH];
    let (mut store, _) = open(&mut buf).unwrap();
    let v1 = container("face", 1, 2000);
    install(&mut store, "face", &v1, 512).unwrap();
    assert_eq!(store.begin("face", SLOT + 1), Err(StoreError::TooLarge));
    assert_eq!(store.begin("face", 10), Err(StoreError::BadContainer));
    assert_eq!(store.begin("", 200), Err(StoreError::BadName));
    assert_eq!(store.write_chunk(0, &[0; 4]), Err(StoreError::NoUpdate));
    // A corrupted payload fails finish's read-back check.
    let mut bad = container("face", 2, 2000);
    bad[HEADER_LEN + 10] ^= 1;
    store.begin("face", bad.len()).unwrap();
    assert_eq!(
        store.write_chunk(16, &bad[..16]),
        Err(StoreError::OutOfOrder)
    );
    store.write_chunk(0, &bad).unwrap();
    assert_eq!(store.finish(), Err(StoreError::CrcMismatch));
    assert_eq!(store.activate("face"), Err(StoreError::NothingStaged));
    // A container named otherwise.
    let other = container("kws", 2, 2000);
    store.begin("face", other.len()).unwrap();
    store.write_chunk(0, &other).unwrap();
    assert_eq!(store.finish(), Err(StoreError::WrongName));
    // Incomplete.
    store.begin("face", v1.len()).unwrap();
    store.write_chunk(0, &v1[..100]).unwrap();
    assert_eq!(store.finish(), Err(StoreError::Incomplete));
    assert_eq!(active_payload(&mut store, "face").unwrap().0, 1);
    assert_eq!(store.rollback("face"), Err(StoreError::NoPrevious));
    assert_eq!(store.active("none"), Err(StoreError::NotFound));
    for name in ["a", "b"] {
        install(&mut store, name, &container(name, 1, 64), 64).unwrap();
    }
    assert_eq!(store.begin("c", 200), Err(StoreError::Full));
}

#[test]
fn a_slot_corrupted_at_rest_falls_back_at_boot() {
    let mut buf = vec![0xFFu8; FLASH];
    {
        let (mut store, _) = open(&mut buf).unwrap();
        install(&mut store, "kws", &container("kws", 1, 3000), 1000).unwrap();
        install(&mut store, "kws", &container("kws", 2, 3000), 1000).unwrap();
    }
    // Flip a bit in the active (second) version's payload, found by its
    // version word in the slot headers.
    let (mut store, _) = open(&mut buf).unwrap();
    let at = store.active("kws").unwrap().payload_offset;
    drop(store);
    buf[at + 100] ^= 0x10;
    let (mut store, report) = open(&mut buf).unwrap();
    assert_eq!((report.fell_back, report.models), (1, 1));
    assert_eq!(active_payload(&mut store, "kws").unwrap().0, 1);
    assert_eq!(store.models().next().unwrap().previous, None);
}

#[test]
fn registry_copies_torn_or_corrupt() {
    let mut buf = vec![0xFFu8; FLASH];
    {
        let (mut store, _) = open(&mut buf).unwrap();
        install(&mut store, "kws", &container("kws", 1, 300), 300).unwrap();
    }
    // One copy torn: the other wins.
    let (store, r) = open(&mut buf).unwrap();
    let generation = r.generation;
    drop(store);
    let newer = if generation % 2 == 1 { 0 } else { SECTOR };
    buf[newer + 20] ^= 0xFF;
    let (mut store, r) = open(&mut buf).unwrap();
    assert_eq!(r.generation, generation - 1);
    // The torn commit was the activation: the version is there, verified,
    // and activates again.
    assert_eq!(store.active("kws"), Err(StoreError::NotFound));
    assert_eq!(store.models().next().unwrap().active, None);
    assert_eq!(store.activate("kws"), Ok(1));
    drop(store);
    let (store, r) = open(&mut buf).unwrap();
    assert_eq!(r.models, 1);
    let generation = r.generation;
    drop(store);
    let newer = if generation % 2 == 1 { 0 } else { SECTOR };
    // Both unreadable, not blank: refused rather than taken for blank.
    buf[newer + 20] ^= 0xFF;
    buf[SECTOR - newer + 20] ^= 0xFF;
    assert_eq!(open(&mut buf).err(), Some(StoreError::Corrupt));
}

#[test]
fn power_loss_at_every_flash_operation() {
    let mut buf = vec![0xFFu8; FLASH];
    let mut flash = PowerCut::new(MemFlash::new(&mut buf, SECTOR, BLOCK));
    let layout = Layout::new(&flash, MODELS, SLOT).unwrap();
    let report = sweep::<_, MODELS>(&mut flash, layout, 0..).unwrap_or_else(|f| panic!("{f:?}"));
    println!(
        "power-loss sweep: {} cut points (every flash operation of {} steps) and {} cuts of the \
         boot's own repair, 0 failures",
        report.cuts,
        synaptic_store::sweep::STEPS.len(),
        report.second_cuts
    );
    assert_eq!(report.cuts, report.operations);
    assert!(report.cuts > 100 && report.second_cuts > 0);
}

/// A flash the CPU reads in place: [`Flash::mapped`] hands out a copy of
/// the range as it is at the call (enough to check where the store says a
/// payload lies).
struct Mapped<'a>(MemFlash<'a>);

impl synaptic_store::Flash for Mapped<'_> {
    fn size(&self) -> usize {
        self.0.size()
    }
    fn sector_size(&self) -> usize {
        self.0.sector_size()
    }
    fn write_block(&self) -> usize {
        self.0.write_block()
    }
    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        self.0.read(offset, buf)
    }
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        self.0.write(offset, data)
    }
    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        self.0.erase_sector(offset)
    }
    fn mapped(&self, offset: usize, len: usize) -> Option<&'static [u8]> {
        let bytes = self.0.bytes().get(offset..offset.checked_add(len)?)?;
        Some(Vec::leak(bytes.to_vec()))
    }
}

#[test]
fn staged_previous_and_mapped_payloads() {
    use synaptic_store::Flash;
    let mut buf = vec![0xFF; FLASH];
    let flash = Mapped(MemFlash::new(&mut buf, SECTOR, BLOCK));
    let layout = Layout::new(&flash, MODELS, SLOT).unwrap();
    let (mut store, _) = Store::<_, MODELS>::open(flash, layout).unwrap();
    let payload = |c: &[u8]| c[HEADER_LEN..].to_vec();
    let (v1, v2) = (container("m", 1, 5000), container("m", 2, 7000));
    let stream = |store: &mut Store<Mapped<'_>, MODELS>, bytes: &[u8]| {
        store.begin("m", bytes.len()).unwrap();
        store.write_chunk(0, bytes).unwrap();
        store.finish().unwrap();
    };
    assert_eq!(store.staged("m").err(), Some(StoreError::NotFound));
    stream(&mut store, &v1);
    let staged = store.staged("m").unwrap();
    assert_eq!(staged.header.version, 1);
    assert_eq!(store.mapped(&staged).unwrap(), &payload(&v1)[..]);
    assert_eq!(store.previous("m").err(), Some(StoreError::NoPrevious));
    store.activate("m").unwrap();
    assert_eq!(store.staged("m").err(), Some(StoreError::NothingStaged));
    stream(&mut store, &v2);
    store.activate("m").unwrap();
    let (active, previous) = (store.active("m").unwrap(), store.previous("m").unwrap());
    assert_eq!((active.header.version, previous.header.version), (2, 1));
    assert_eq!(store.mapped(&active).unwrap(), &payload(&v2)[..]);
    assert_eq!(store.mapped(&previous).unwrap(), &payload(&v1)[..]);
    // A previous version that fails its check is no rollback target.
    let at = previous.payload_offset;
    store.flash_mut().0.bytes_mut()[at] ^= 1;
    assert_eq!(store.previous("m").err(), Some(StoreError::NoPrevious));
    assert_eq!(store.rollback("m"), Err(StoreError::NoPrevious));
    // Not mapped: no payload in place.
    let mut plain = vec![0xFF; FLASH];
    let mut store = open(&mut plain).unwrap().0;
    install(&mut store, "m", &v1, 4096).unwrap();
    let active = store.active("m").unwrap();
    assert!(store.mapped(&active).is_none());
    assert!(store.flash_mut().mapped(0, 16).is_none());
}
