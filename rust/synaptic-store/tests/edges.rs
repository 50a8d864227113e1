//! The store's edges on the in-memory flash: a full registry, models that
//! do not disturb each other, names, erases one sector at a time, reads
//! past a payload, the registry generation across reboots, an update
//! abandoned by a reboot, and a CRC-gated rollback target.

// `drop` ends a store's borrow of its flash image before the image is
// reopened or corrupted.
#![allow(clippy::drop_non_drop)]

use synaptic_store::{
    Flash, Header, Layout, MemFlash, SlotState, Store, StoreError, TensorShape, HEADER_LEN,
};

const SECTOR: usize = 4096;
const BLOCK: usize = 16;
const MODELS: usize = 2;
const SLOT: usize = 2 * SECTOR;
const FLASH: usize = 2 * SECTOR + 2 * MODELS * SLOT;

/// A flash that counts and checks every erase: one aligned sector each.
struct Erases<'a> {
    inner: MemFlash<'a>,
    count: u32,
}

impl Flash for Erases<'_> {
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
        self.inner.read(offset, buf)
    }
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        self.inner.write(offset, data)
    }
    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        assert_eq!(offset % SECTOR, 0, "an erase starts on a sector");
        assert!(offset < FLASH, "an erase stays in the partition");
        self.count += 1;
        self.inner.erase_sector(offset)
    }
}

type TestStore<'a> = Store<Erases<'a>, MODELS>;

fn open(buf: &mut [u8]) -> Result<TestStore<'_>, StoreError> {
    let flash = Erases {
        inner: MemFlash::new(buf, SECTOR, BLOCK),
        count: 0,
    };
    let layout = Layout::new(&flash, MODELS, SLOT)?;
    Ok(Store::open(flash, layout)?.0)
}

fn container(name: &str, version: u32, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| (i as u32 ^ version) as u8).collect();
    let shape = TensorShape {
        dtype: 9,
        rank: 1,
        dims: [4, 1, 1, 1],
    };
    let mut bytes = Header::new(name, version, &payload, shape, shape)
        .unwrap()
        .encode()
        .to_vec();
    bytes.extend_from_slice(&payload);
    bytes
}

fn install(store: &mut TestStore<'_>, name: &str, version: u32) -> Result<u32, StoreError> {
    let bytes = container(name, version, 1000 + version as usize);
    store.begin(name, bytes.len())?;
    store.write_chunk(0, &bytes)?;
    store.finish()?;
    store.activate(name)
}

#[test]
fn a_full_registry_refuses_a_new_model_but_updates_the_old_ones() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    assert_eq!(install(&mut store, "a", 1), Ok(1));
    assert_eq!(install(&mut store, "b", 1), Ok(1));
    assert_eq!(store.begin("c", 200), Err(StoreError::Full));
    assert_eq!(
        install(&mut store, "a", 2),
        Ok(2),
        "a known model still updates"
    );
}

#[test]
fn models_do_not_disturb_each_other() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    install(&mut store, "a", 1).unwrap();
    install(&mut store, "b", 7).unwrap();
    install(&mut store, "a", 2).unwrap();
    assert_eq!(store.rollback("a"), Ok(1));
    assert_eq!(store.active("b").unwrap().header.version, 7);
    assert_eq!(store.rollback("b"), Err(StoreError::NoPrevious));
    assert_eq!(store.active("nobody"), Err(StoreError::NotFound));
}

#[test]
fn names_are_checked() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    for bad in ["", "a\0b", &"n".repeat(32)] {
        assert_eq!(store.begin(bad, 200), Err(StoreError::BadName), "{bad:?}");
    }
    assert_eq!(store.begin(&"n".repeat(31), 200), Ok(()), "31 bytes fit");
}

#[test]
fn every_erase_is_one_sector_and_an_update_erases_only_what_it_writes() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    for (version, len) in [(1u32, 1000usize), (2, 3 * SECTOR / 2)] {
        let bytes = container("a", version, len);
        let (erases, generation) = (store.flash_mut().count, store.generation());
        store.begin("a", bytes.len()).unwrap();
        for (i, chunk) in bytes.chunks(700).enumerate() {
            store.write_chunk(i * 700, chunk).unwrap();
        }
        store.finish().unwrap();
        store.activate("a").unwrap();
        // The container's own sectors, and one registry sector per commit.
        let sectors = bytes.len().div_ceil(SECTOR) as u32;
        let commits = store.generation() - generation;
        assert_eq!(
            store.flash_mut().count - erases,
            sectors + commits,
            "version {version}: {sectors} slot sectors, {commits} commits"
        );
    }
}

#[test]
fn reads_stay_inside_the_payload() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    install(&mut store, "a", 1).unwrap();
    let located = store.active("a").unwrap();
    let len = located.header.payload_len as usize;
    let mut byte = [0u8; 1];
    assert_eq!(store.read_payload(&located, len - 1, &mut byte), Ok(()));
    assert_eq!(
        store.read_payload(&located, len, &mut byte),
        Err(StoreError::OutOfOrder)
    );
    assert_eq!(
        store.read_payload(&located, usize::MAX, &mut byte),
        Err(StoreError::OutOfOrder)
    );
}

#[test]
fn the_generation_counts_commits_and_survives_a_reboot() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    assert_eq!(store.generation(), 0);
    install(&mut store, "a", 1).unwrap();
    let after_one = store.generation();
    assert!(after_one > 0);
    install(&mut store, "a", 2).unwrap();
    let after_two = store.generation();
    assert_eq!(
        after_two - after_one,
        after_one,
        "the same commits per update"
    );
    drop(store);
    let store = open(&mut buf).unwrap();
    assert_eq!(store.generation(), after_two);
}

#[test]
fn an_update_cut_by_a_reboot_leaves_the_active_version() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    install(&mut store, "a", 1).unwrap();
    let bytes = container("a", 2, 3000);
    store.begin("a", bytes.len()).unwrap();
    store.write_chunk(0, &bytes[..HEADER_LEN + 100]).unwrap();
    drop(store);
    let mut store = open(&mut buf).unwrap();
    assert_eq!(store.active("a").unwrap().header.version, 1);
    assert_eq!(
        store.finish(),
        Err(StoreError::NoUpdate),
        "the update is gone"
    );
    let status = store.models().next().unwrap();
    assert!(
        status.slots.contains(&SlotState::Valid),
        "the active slot is intact"
    );
    assert_eq!(install(&mut store, "a", 3), Ok(3), "and a new one installs");
}

#[test]
fn a_rollback_target_that_fails_its_crc_is_refused() {
    let mut buf = vec![0xFF; FLASH];
    let mut store = open(&mut buf).unwrap();
    install(&mut store, "a", 1).unwrap();
    let v1 = store.active("a").unwrap();
    install(&mut store, "a", 2).unwrap();
    drop(store);
    // A bit of version 1's payload rots at rest (flash bits only fall).
    buf[v1.payload_offset + 10] &= 0xFE;
    let mut store = open(&mut buf).unwrap();
    assert_eq!(store.active("a").unwrap().header.version, 2);
    assert_eq!(store.rollback("a"), Err(StoreError::NoPrevious));
    assert_eq!(
        store.active("a").unwrap().header.version,
        2,
        "still version 2"
    );
}
