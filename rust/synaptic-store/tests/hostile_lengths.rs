//! Lengths a hostile header may claim, on the device's 32-bit `usize` as
//! on the host's: a payload length near `u32::MAX` once wrapped a 32-bit
//! total to a small number (a panic with overflow checks, an out-of-range
//! slice without). The host tier also runs this file under miri for
//! `i686-unknown-linux-gnu` (scripts/test.sh), where `usize` is 32 bits.

use synaptic_store::container::check;
use synaptic_store::ota::{Ota, OtaError};
use synaptic_store::signature::Trust;
use synaptic_store::{crc32, Header, Layout, MemFlash, Store, StoreError, TensorShape};

/// A header claiming `payload_len`, in a container of `len` bytes.
fn hostile(signed: bool, payload_len: u32, len: usize) -> Vec<u8> {
    let s = TensorShape::int8(&[4]);
    let mut h = Header::new("kws", 1, &[], s, s).unwrap();
    h.signed = signed;
    h.payload_len = payload_len;
    h.payload_crc = crc32(&[]);
    let mut bytes = h.encode().to_vec();
    bytes.resize(len, 0);
    bytes
}

#[test]
fn a_length_that_wraps_a_32_bit_total_is_refused_everywhere() {
    for signed in [false, true] {
        let preamble = if signed { 232u32 } else { 96 };
        for (payload_len, len) in [
            // preamble + payload_len = 2^32 + 200: 200 on a 32-bit core,
            // the container's own length.
            (200u32.wrapping_sub(preamble), 200),
            (96u32.wrapping_sub(preamble), 96),
            (0u32.wrapping_sub(preamble), 96),
            (u32::MAX, 300),
        ]
        .into_iter()
        // Only totals past what 32 bits address.
        .filter(|&(p, _)| u64::from(p) + u64::from(preamble) > u64::from(u32::MAX))
        {
            let bytes = hostile(signed, payload_len, len);
            assert_eq!(
                check(&bytes, &Trust::NONE, 0).err(),
                Some(StoreError::Length),
                "signed {signed}, payload_len {payload_len}"
            );
            let mut image = vec![0xFFu8; 2 * 256 + 4 * 1024];
            let before = image.clone();
            {
                let flash = MemFlash::new(&mut image, 256, 4);
                let layout = Layout::new(&flash, 2, 1024).unwrap();
                let (mut store, _) = Store::<_, 2>::open(flash, layout).unwrap();
                let mut ota = Ota::new();
                ota.begin(&mut store, "kws", bytes.len()).unwrap();
                assert_eq!(
                    ota.write_chunk(&mut store, &bytes),
                    Err(OtaError::Size),
                    "signed {signed}, payload_len {payload_len}"
                );
                assert_eq!(ota.finish(&mut store).err(), Some(OtaError::State));
            }
            assert!(image == before, "the store wrote the flash");
        }
    }
}
