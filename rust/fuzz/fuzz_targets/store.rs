//! The model store's reading of its flash: registry copies, container
//! headers and payloads as a boot finds them, in an image the fuzzer
//! writes (or patches: mode byte 1 starts from a valid store image).
//!
//! Checked: no panic; every version the store hands out passes its CRC
//! (the store reads it back), and an opened store accepts a new model and
//! serves exactly its bytes afterwards.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_fuzz::store::{container, image, install, open, IMAGE};
use synaptic_store::HEADER_LEN;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut flash = if mode % 2 == 1 {
        // Patches over a valid image: (offset u16, byte) triples.
        let mut image = image();
        for patch in rest.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([patch[0], patch[1]])) % IMAGE;
            image[at] = patch[2];
        }
        image
    } else {
        let mut image = vec![0xFF; IMAGE];
        let n = rest.len().min(IMAGE);
        image[..n].copy_from_slice(&rest[..n]);
        image
    };
    let Ok(mut store) = open(&mut flash) else {
        return;
    };
    let names: Vec<String> = store.models().map(|m| m.name.to_owned()).collect();
    for name in &names {
        if let Ok(located) = store.active(name) {
            let mut payload = vec![0u8; located.header.payload_len as usize];
            store
                .read_payload(&located, 0, &mut payload)
                .expect("a located payload reads");
            assert_eq!(synaptic_store::crc32(&payload), located.header.payload_crc);
        }
        let _ = store.rollback(name);
    }
    // A new version of one model (or a new model) installs and is served.
    let name = names.first().map_or("new", String::as_str).to_owned();
    let bytes = container(&name, 77, 123);
    if install(&mut store, &name, &bytes) == Ok(77) {
        let located = store.active(&name).expect("the version just activated");
        let mut payload = vec![0u8; 123];
        store
            .read_payload(&located, 0, &mut payload)
            .expect("reads");
        assert_eq!(payload, bytes[HEADER_LEN..]);
    }
});
