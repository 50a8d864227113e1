//! Shared pieces of the fuzz targets: a byte reader over the fuzzer's
//! input, a buffer between two inaccessible guard pages, and the operation
//! encodings the targets decode and `examples/seeds.rs` writes.
//!
//! Every target reads its input as a short program: a tag byte, then that
//! operation's arguments; a program ends where the input does. Encoders
//! here are the inverse of the decoders, so the committed seeds say what
//! they do.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr::NonNull;

use synaptic_abi::Message;

/// The fuzzer's bytes, consumed from the front.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next `n` bytes, if there are that many.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.data.len() < n {
            return None;
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Some(head)
    }

    /// The next byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    /// The next little-endian `u16`.
    pub fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Run the rest as a program of at most `max_ops` operations, each a
    /// tag byte (taken modulo `tags`) and then what `op` reads for that
    /// tag. The program ends where the input does, or at the operation
    /// whose arguments are cut short (`op` returns `None`).
    pub fn run(
        &mut self,
        max_ops: usize,
        tags: u8,
        mut op: impl FnMut(u8, &mut Self) -> Option<()>,
    ) {
        for _ in 0..max_ops {
            let Some(tag) = self.u8() else { return };
            if op(tag % tags, self).is_none() {
                return;
            }
        }
    }

    /// A raw ring message from the next 20 bytes, fields in wire order.
    pub fn message(&mut self) -> Option<Message> {
        let b = self.bytes(20)?;
        let word = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
        Some(Message {
            msg_id: word(0),
            msg_type: b[4],
            priority: b[5],
            payload_len: u16::from_le_bytes([b[6], b[7]]),
            payload_offset: word(8),
            timestamp_us: word(12),
            status: word(16) as i32,
        })
    }
}

/// The 20 wire bytes of `msg` (what [`Input::message`] reads).
pub fn message_bytes(msg: &Message) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&msg.msg_id.to_le_bytes());
    b[4] = msg.msg_type;
    b[5] = msg.priority;
    b[6..8].copy_from_slice(&msg.payload_len.to_le_bytes());
    b[8..12].copy_from_slice(&msg.payload_offset.to_le_bytes());
    b[12..16].copy_from_slice(&msg.timestamp_us.to_le_bytes());
    b[16..20].copy_from_slice(&msg.status.to_le_bytes());
    b
}

/// `len` bytes that end flush against an inaccessible page, with another
/// inaccessible page before the mapping: any access outside the bytes
/// faults (at once past the end; before the start, somewhere within the
/// rounding to whole pages, then the leading guard page).
pub struct Guarded {
    map: NonNull<u8>,
    map_len: usize,
    len: usize,
    page: usize,
}

impl Guarded {
    /// A guarded buffer of `len` bytes (`len` a multiple of 16, so the
    /// start is 16-byte aligned like the end), zeroed.
    ///
    /// # Panics
    ///
    /// When `len` is not a multiple of 16, or the mapping fails.
    pub fn new(len: usize) -> Self {
        assert!(
            len.is_multiple_of(16),
            "a 16-byte multiple keeps the start aligned"
        );
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page");
        let body = len.div_ceil(page) * page;
        let map_len = body + 2 * page;
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choosing; no existing memory is affected.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(map != libc::MAP_FAILED, "mmap");
        let map = NonNull::new(map.cast::<u8>()).expect("mmap returns non-null");
        // SAFETY: both ranges are whole pages inside the mapping just made,
        // which nothing else uses.
        let protected = unsafe {
            libc::mprotect(map.as_ptr().cast(), page, libc::PROT_NONE) == 0
                && libc::mprotect(map.as_ptr().add(page + body).cast(), page, libc::PROT_NONE) == 0
        };
        assert!(protected, "mprotect");
        Guarded {
            map,
            map_len,
            len,
            page,
        }
    }

    /// The bytes, ending where the trailing guard page begins.
    pub fn bytes(&mut self) -> &mut [u8] {
        let body = self.map_len - 2 * self.page;
        // SAFETY: `page + body - len .. page + body` lies in the readable,
        // writable part of the mapping, which lives as long as `self` and is
        // borrowed mutably through it.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.map.as_ptr().add(self.page + body - self.len),
                self.len,
            )
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, with its length; no slice of it
        // outlives `self`.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

pub mod signed_container;

/// The operations of the `request_path` target (one tag byte each, then
/// the arguments listed).
pub mod request_path {
    use synaptic_abi::Message;

    use super::message_bytes;

    /// Write bytes anywhere in the region: offset `u16` (taken modulo the
    /// region size), length `u8` (modulo 64), the bytes.
    pub const WRITE: u8 = 0;
    /// Write bytes into a slot: slot `u8` (modulo 4), offset `u8` from the
    /// slot's start (its header, then the first input bytes), length `u8`
    /// (modulo 64), the bytes.
    pub const WRITE_SLOT: u8 = 1;
    /// Push a raw message on ring CPU1→CPU0: its 20 bytes.
    pub const PUSH_RAW: u8 = 2;
    /// Stage and push a plausible request: kind `u8` (0 INFER kws, 1 INFER
    /// face, 2 MODEL_LOAD, 3 STATUS_REQ), slot `u8`, input-length delta
    /// `i8`, priority `u8`, flags `u8`, model word `u8` (0: the right
    /// handle, else a wrong one).
    pub const PUSH_REQUEST: u8 = 3;
    /// One CPU0 step (intake drain and serving turn).
    pub const STEP_CPU0: u8 = 4;
    /// One step of both cores.
    pub const STEP: u8 = 5;
    /// Pop a reply as CPU1.
    pub const POP: u8 = 6;
    /// Write one control-block word (the park handshake's included): word
    /// `u8` (modulo 16), value `u32`.
    pub const WRITE_CONTROL: u8 = 7;
    /// CPU1's doorbell interrupt (its park hold while CPU0 asks).
    pub const INTERRUPT: u8 = 8;
    /// A `MODEL_UPDATE` of `kws` by CPU1's client, streamed and activated:
    /// kind `u8` (modulo 4: 0 a sound int8 container, 1 float32 input, 2
    /// an input no slot holds, 3 a tensor type the runtime has none for),
    /// version `u8` (bit 7: the container cut short), damage `u16` (the
    /// byte it names, modulo the length, is XORed with the next), xor `u8`.
    pub const UPDATE: u8 = 9;
    /// CPU1's client asks for a rollback.
    pub const ROLLBACK: u8 = 10;
    /// CPU1 reboots (attach and a new client).
    pub const REBOOT: u8 = 11;
    /// Tags there are (a tag byte is taken modulo this).
    pub const TAGS: u8 = 12;

    /// [`UPDATE`].
    pub fn update(out: &mut Vec<u8>, kind: u8, version: u8, damage: u16, xor: u8) {
        out.extend_from_slice(&[UPDATE, kind, version]);
        out.extend_from_slice(&damage.to_le_bytes());
        out.push(xor);
    }

    /// A container of `kws` as [`UPDATE`] builds it (`None`: the header
    /// refuses the shape).
    pub fn container(kind: u8, version: u8, damage: u16, xor: u8) -> Option<Vec<u8>> {
        use synaptic_store::{Header, TensorShape};
        let int8 = TensorShape::int8(&[49, 10]);
        let input = match kind % 4 {
            0 => int8,
            1 => TensorShape { dtype: 0, ..int8 },
            2 => TensorShape::int8(&[200, 200]),
            _ => TensorShape { dtype: 2, ..int8 },
        };
        let payload: Vec<u8> = (0..200u32)
            .map(|i| (i * 7 + u32::from(version)) as u8)
            .collect();
        let version32 = u32::from(version & 0x7f) + 2;
        let header =
            Header::new("kws", version32, &payload, input, TensorShape::int8(&[12])).ok()?;
        let mut bytes = [header.encode().as_slice(), &payload].concat();
        if xor != 0 {
            let at = usize::from(damage) % bytes.len();
            bytes[at] ^= xor;
        }
        if version & 0x80 != 0 {
            let cut = usize::from(damage % 64) + 1;
            bytes.truncate(bytes.len().saturating_sub(cut).max(1));
        }
        Some(bytes)
    }

    /// [`WRITE_CONTROL`] of `value` into word `word`.
    pub fn write_control(out: &mut Vec<u8>, word: u8, value: u32) {
        out.extend_from_slice(&[WRITE_CONTROL, word]);
        out.extend_from_slice(&value.to_le_bytes());
    }

    /// [`WRITE`] of `bytes` at `offset`.
    pub fn write(out: &mut Vec<u8>, offset: u16, bytes: &[u8]) {
        out.push(WRITE);
        out.extend_from_slice(&offset.to_le_bytes());
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    }

    /// [`WRITE_SLOT`] of `bytes` at `offset` of slot `slot`.
    pub fn write_slot(out: &mut Vec<u8>, slot: u8, offset: u8, bytes: &[u8]) {
        out.extend_from_slice(&[WRITE_SLOT, slot, offset, bytes.len() as u8]);
        out.extend_from_slice(bytes);
    }

    /// [`PUSH_RAW`] of `msg`.
    pub fn push_raw(out: &mut Vec<u8>, msg: &Message) {
        out.push(PUSH_RAW);
        out.extend_from_slice(&message_bytes(msg));
    }

    /// [`PUSH_REQUEST`].
    pub fn push_request(out: &mut Vec<u8>, kind: u8, slot: u8, delta: i8, priority: u8, flags: u8) {
        out.extend_from_slice(&[PUSH_REQUEST, kind, slot, delta as u8, priority, flags, 0]);
    }
}

/// The operations of the `client_replies` target.
pub mod client_replies {
    use synaptic_abi::Message;

    use super::message_bytes;

    /// Push a reply as a buggy CPU0: id choice `u8` (0: raw id below, else
    /// the id of the `k`-th last request CPU1 sent), slot choice `u8` (0:
    /// raw offset below, else slot `k - 1`'s offset), then a raw message.
    pub const PUSH_REPLY: u8 = 0;
    /// Write a slot's result words: slot `u8`, `output_len` `u32`,
    /// `infer_status` `u32`.
    pub const WRITE_RESULT: u8 = 1;
    /// An inference by CPU1 through the client: model `u8` (even kws, odd
    /// face), wait `u8` (even poll, odd interrupt), timeout `u8` ms.
    pub const INFER: u8 = 2;
    /// A ping by CPU1: wait `u8`.
    pub const PING: u8 = 3;
    /// CPU1's dispatch (drain of its reply ring).
    pub const DISPATCH: u8 = 4;
    /// A model lookup by CPU1 (times out here: no dispatch thread).
    pub const LOOKUP: u8 = 5;
    /// Tags there are.
    pub const TAGS: u8 = 6;

    /// [`PUSH_REPLY`].
    pub fn push_reply(out: &mut Vec<u8>, id_choice: u8, slot_choice: u8, msg: &Message) {
        out.extend_from_slice(&[PUSH_REPLY, id_choice, slot_choice]);
        out.extend_from_slice(&message_bytes(msg));
    }

    /// [`WRITE_RESULT`].
    pub fn write_result(out: &mut Vec<u8>, slot: u8, output_len: u32, status: i32) {
        out.extend_from_slice(&[WRITE_RESULT, slot]);
        out.extend_from_slice(&output_len.to_le_bytes());
        out.extend_from_slice(&status.to_le_bytes());
    }

    /// [`INFER`].
    pub fn infer(out: &mut Vec<u8>, model: u8, wait: u8, timeout_ms: u8) {
        out.extend_from_slice(&[INFER, model, wait, timeout_ms]);
    }
}

/// The model store target's flash geometry and a store image to start from.
pub mod store {
    use synaptic_store::{Header, Layout, MemFlash, Store, StoreError, TensorShape};

    /// Sector bytes of the fuzzed flash.
    pub const SECTOR: usize = 256;
    /// Program unit.
    pub const BLOCK: usize = 4;
    /// Models per store.
    pub const MODELS: usize = 2;
    /// Container bytes per slot.
    pub const SLOT: usize = 4 * SECTOR;
    /// Bytes of the image: two registry sectors and two slots per model.
    pub const IMAGE: usize = 2 * SECTOR + 2 * MODELS * SLOT;

    /// The store over `image`.
    ///
    /// # Errors
    ///
    /// As [`Store::open`].
    pub fn open(image: &mut [u8]) -> Result<Store<MemFlash<'_>, MODELS>, StoreError> {
        let flash = MemFlash::new(image, SECTOR, BLOCK);
        let layout = Layout::new(&flash, MODELS, SLOT)?;
        Ok(Store::open(flash, layout)?.0)
    }

    /// A container of `name`, `version`, `len` payload bytes.
    pub fn container(name: &str, version: u32, len: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..len).map(|i| (i as u32 ^ version) as u8).collect();
        let shape = TensorShape {
            dtype: 9,
            rank: 1,
            dims: [len as u32, 1, 1, 1],
        };
        let header = Header::new(name, version, &payload, shape, shape).expect("a valid name");
        [header.encode().as_slice(), &payload].concat()
    }

    /// Install (begin, chunks, finish, activate) `bytes` as `name`.
    ///
    /// # Errors
    ///
    /// Any step's.
    pub fn install(
        store: &mut Store<MemFlash<'_>, MODELS>,
        name: &str,
        bytes: &[u8],
    ) -> Result<u32, StoreError> {
        store.begin(name, bytes.len())?;
        for (i, chunk) in bytes.chunks(100).enumerate() {
            store.write_chunk(i * 100, chunk)?;
        }
        store.finish()?;
        store.activate(name)
    }

    /// A store image with two models, one updated once.
    pub fn image() -> Vec<u8> {
        let mut image = vec![0xFF; IMAGE];
        let mut store = open(&mut image).expect("a blank store");
        for (name, version, len) in [("kws", 1, 300), ("face", 1, 500), ("kws", 2, 700)] {
            install(&mut store, name, &container(name, version, len)).expect("install");
        }
        let _ = store.into_flash();
        image
    }
}
