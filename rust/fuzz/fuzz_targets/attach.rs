//! CPU1's attach over a control block (and rings) of fuzzer bytes.
//!
//! The loopback publishes a good region; the input then either replaces
//! the first bytes of the region (control block, both rings, the
//! service-time table) or patches single control-block words of the good
//! block. CPU1's attach check (`boot::attach`) must succeed exactly when
//! the control block describes this image's layout and CPU0 is ready, as
//! an oracle written from the ABI's field list says; CPU1 must always
//! announce its layout version and set `cpu1_ready` only on success. Then
//! CPU1 reboots ([`Loopback::reboot_cpu1`]): after CPU0's maintenance it
//! must attach whatever was written. A client that attached to hostile
//! ring indices must then survive a few steps and a request without
//! panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_abi::{
    payload_pool_offset, SlotGeometry, CONTROL_BLOCK_SIZE, LAYOUT_VERSION, MAGIC, READY,
};
use synaptic_fuzz::Input;
use synaptic_serve::loopback::{Loopback, RegionBuffer, KWS, REGION_SIZE, RING};

const WORDS: usize = CONTROL_BLOCK_SIZE / 4;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let Some(mode) = input.u8() else { return };
    let mut buffer = RegionBuffer::new();
    let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
    if mode % 2 == 0 {
        // Raw bytes over the start of the region, up to the payload pool.
        let len = data
            .len()
            .saturating_sub(1)
            .min(payload_pool_offset::<RING>());
        let bytes = input.bytes(len).expect("len bytes remain");
        cores.write_shared(0, bytes);
    } else {
        // Patches of single control-block words: index, value.
        while let (Some(index), Some(value)) = (input.u8(), input.u32()) {
            let at = 4 * (usize::from(index) % WORDS);
            cores.write_shared(at, &value.to_le_bytes());
        }
    }
    let block = control_words(&cores);
    let valid = describes_this_layout(&block);
    // CPU1's attach check itself, before CPU0 has run again.
    let result = synaptic_serve::boot::attach(&cores.region());
    let after = control_words(&cores);
    assert_eq!(
        after[13], LAYOUT_VERSION,
        "CPU1 announces its version first"
    );
    match result {
        Ok(()) => {
            assert!(
                valid,
                "attach accepted an invalid control block: {block:x?}"
            );
            assert_eq!(after[5], READY, "attached: cpu1_ready set");
        }
        Err(e) => {
            assert!(!valid, "attach refused a valid control block: {e:?}");
            assert_eq!(after[5], block[5], "refused: cpu1_ready untouched");
        }
    }
    // CPU0's maintenance restores every word it owns: a rebooting CPU1
    // attaches whatever was written ([`Loopback::reboot_cpu1`] retries
    // after CPU0 steps, as the firmware's attach does within its time).
    if let Err(e) = cores.reboot_cpu1() {
        panic!("a rebooted CPU1 cannot attach after CPU0's repair: {e:?}");
    }
    assert!(describes_this_layout(&control_words(&cores)));
    if cores.client().is_some() {
        for _ in 0..3 {
            cores.step();
        }
        let input = vec![1u8; KWS.input_len()];
        let _ = cores.infer(cores.kws(), &input, &mut [0; 12]);
    }
});

fn control_words(cores: &Loopback<'_>) -> [u32; WORDS] {
    let mut bytes = [0u8; CONTROL_BLOCK_SIZE];
    assert_eq!(cores.read_shared(0, &mut bytes), CONTROL_BLOCK_SIZE);
    let mut words = [0u32; WORDS];
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    words
}

/// The oracle: the ABI's control block, word by word (magic, layout
/// version, ring entries, shared size, CPU0 ready, slot count, small slot
/// input and output sizes); the RTT, CPU1 and reserved words are free.
fn describes_this_layout(w: &[u32; WORDS]) -> bool {
    let slots = SlotGeometry::DEFAULT;
    w[0] == MAGIC
        && w[1] == LAYOUT_VERSION
        && w[2] == RING as u32
        && w[3] == REGION_SIZE as u32
        && w[4] == READY
        && w[10] == slots.count
        && w[11] == slots.small_input
        && w[12] == slots.small_output
}
