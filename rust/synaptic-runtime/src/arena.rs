//! Tensor arena: bump allocation of 16-byte aligned tensors over a caller's buffer.
//!
//! The buffer is split once, at [`Arena::new`], into three parts:
//!
//! ```text
//! | ephemeral (grows up) ->   free   <- persistent (grows down) | scratch pool |
//! ```
//!
//! * **Persistent** tensors (weights, model state) survive
//!   [`Arena::reset_ephemeral`]; only [`Arena::reset_all`] reclaims them.
//! * **Ephemeral** tensors (activations) are freed together by
//!   [`Arena::reset_ephemeral`].
//! * The **scratch pool** is a separate stack of short-lived buffers
//!   ([`Arena::acquire_scratch`] / [`Arena::release_scratch`]). Release may
//!   come in any order; bytes return to the pool as soon as every younger
//!   buffer has been released too.
//!
//! Invariants and limits:
//!
//! * Every tensor and scratch buffer starts on a 16-byte boundary
//!   ([`ALIGN`]), measured on the real address, and reserves a multiple of 16
//!   bytes.
//! * Exhaustion returns [`ArenaError::Exhausted`]; no partial tensor exists.
//! * There is no fragmentation by construction: each region is a bump
//!   allocator. [`Arena::free`] reclaims a tensor immediately only when it is
//!   the most recent allocation of its region; otherwise its bytes return at
//!   the next reset of that region.
//! * A [`Tensor`] is a move-only descriptor (no `Clone`) stamped with the
//!   epoch of its region: after a reset, an old descriptor is rejected with
//!   [`ArenaError::StaleTensor`], never aliased to newer data.
//! * Contents of a fresh tensor are whatever the bytes held before; the arena
//!   does not zero memory.
//! * [`TensorRef`] / [`TensorMut`] wrap any byte slice with a descriptor, so
//!   an external buffer (a shared-memory slot) is used without a copy.

use synaptic_abi::Errno;

/// Alignment of every tensor and scratch buffer, in bytes.
pub const ALIGN: usize = 16;

/// Maximum tensor rank.
pub const MAX_DIMS: usize = 4;

/// Default depth of the scratch stack (outstanding scratch buffers).
pub const DEFAULT_SCRATCH_DEPTH: usize = 8;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// Signed 8-bit integer (quantised activations and weights).
    Int8,
    /// Unsigned 8-bit integer (image pixels).
    UInt8,
    /// Signed 16-bit integer (PCM audio, Q15).
    Int16,
    /// IEEE 754 half precision, stored as raw 16-bit words.
    Float16,
    /// IEEE 754 single precision, little-endian.
    Float32,
}

impl DType {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::Int8 | DType::UInt8 => 1,
            DType::Int16 | DType::Float16 => 2,
            DType::Float32 => 4,
        }
    }
}

/// Shape of a tensor: 1 to [`MAX_DIMS`] non-zero dimensions, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: [u32; MAX_DIMS],
    rank: u8,
}

impl Shape {
    /// Builds a shape from its dimensions.
    ///
    /// # Errors
    ///
    /// [`ArenaError::InvalidShape`] when `dims` is empty, longer than
    /// [`MAX_DIMS`], contains a zero, or has more elements than fit in `u32`.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_runtime::arena::Shape;
    /// let s = Shape::new(&[96, 96, 3]).unwrap();
    /// assert_eq!(s.elements(), 27_648);
    /// assert!(Shape::new(&[]).is_err());
    /// ```
    pub fn new(dims: &[u32]) -> Result<Shape, ArenaError> {
        if dims.is_empty() || dims.len() > MAX_DIMS || dims.contains(&0) {
            return Err(ArenaError::InvalidShape);
        }
        let mut total: u32 = 1;
        for &d in dims {
            total = total.checked_mul(d).ok_or(ArenaError::InvalidShape)?;
        }
        let mut out = [1u32; MAX_DIMS];
        out[..dims.len()].copy_from_slice(dims);
        Ok(Shape {
            dims: out,
            rank: dims.len() as u8,
        })
    }

    /// One-dimensional shape of `n` elements (`n` must be non-zero).
    ///
    /// # Errors
    ///
    /// [`ArenaError::InvalidShape`] when `n` is zero or exceeds `u32`.
    pub fn vector(n: usize) -> Result<Shape, ArenaError> {
        let n = u32::try_from(n).map_err(|_| ArenaError::InvalidShape)?;
        Shape::new(&[n])
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[u32] {
        &self.dims[..self.rank as usize]
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// Number of elements (product of the dimensions).
    #[inline]
    pub fn elements(&self) -> usize {
        // Dimensions past the rank are 1 (`new`), and `new` checked that
        // the product fits `u32`: one product of all slots, no loop (the
        // serving path asks this a dozen times per request).
        let [a, b, c, d] = self.dims;
        a as usize * b as usize * c as usize * d as usize
    }
}

/// Element type and shape: what a tensor holds, independent of where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMeta {
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Shape,
}

impl TensorMeta {
    /// Descriptor of a tensor of `dtype` and `shape`.
    pub const fn new(dtype: DType, shape: Shape) -> TensorMeta {
        TensorMeta { dtype, shape }
    }

    /// One-dimensional descriptor of `n` elements.
    ///
    /// # Errors
    ///
    /// [`ArenaError::InvalidShape`] when `n` is zero.
    pub fn vector(dtype: DType, n: usize) -> Result<TensorMeta, ArenaError> {
        Ok(TensorMeta::new(dtype, Shape::vector(n)?))
    }

    /// Size of the data in bytes.
    // Inline: a few multiplies, asked several times per request; a call
    // costs as much again.
    #[inline]
    pub fn byte_len(&self) -> usize {
        self.shape.elements() * self.dtype.size()
    }
}

/// Where a tensor's bytes live and how long they stay valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lifetime {
    /// Arena memory that survives [`Arena::reset_ephemeral`].
    Persistent,
    /// Arena memory freed by [`Arena::reset_ephemeral`].
    Ephemeral,
    /// A buffer the arena does not own (wrapped zero-copy).
    External,
}

/// Errors of the tensor arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArenaError {
    /// The buffer cannot hold even one aligned block plus the scratch pool.
    BufferTooSmall,
    /// A shape with no dimensions, too many, or a zero dimension.
    InvalidShape,
    /// Not enough free bytes in the region for the request.
    Exhausted {
        /// Bytes the request needed, after rounding to [`ALIGN`].
        requested: usize,
        /// Bytes that were free.
        available: usize,
    },
    /// The descriptor predates a reset or names memory no longer allocated.
    StaleTensor,
    /// The operation is not valid for this lifetime (e.g. allocating `External`).
    WrongLifetime,
    /// The scratch pool cannot satisfy the request.
    ScratchExhausted {
        /// Bytes the request needed, after rounding to [`ALIGN`].
        requested: usize,
        /// Bytes that were free in the pool.
        available: usize,
    },
    /// Every scratch stack entry is in use.
    ScratchDepth,
    /// An external buffer is shorter than its descriptor says.
    ExternalTooShort {
        /// Bytes the descriptor needs.
        needed: usize,
        /// Bytes the buffer has.
        actual: usize,
    },
    /// Two descriptors passed as distinct name the same memory.
    Aliased,
}

impl ArenaError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            ArenaError::BufferTooSmall
            | ArenaError::InvalidShape
            | ArenaError::WrongLifetime
            | ArenaError::ExternalTooShort { .. }
            | ArenaError::Aliased => Errno::Inval,
            ArenaError::Exhausted { .. } | ArenaError::ScratchExhausted { .. } => Errno::NoMem,
            ArenaError::ScratchDepth => Errno::NoSpc,
            ArenaError::StaleTensor => Errno::Fault,
        }
    }
}

/// A tensor allocated in an [`Arena`]: descriptor plus location, move-only.
///
/// Read and write its bytes through [`Arena::data`] / [`Arena::data_mut`].
#[derive(Debug, PartialEq, Eq)]
pub struct Tensor {
    meta: TensorMeta,
    lifetime: Lifetime,
    offset: usize,
    reserved: usize,
    epoch: u32,
}

impl Tensor {
    /// Element type and shape.
    pub fn meta(&self) -> TensorMeta {
        self.meta
    }

    /// Persistent or ephemeral.
    pub fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    /// Data length in bytes.
    pub fn byte_len(&self) -> usize {
        self.meta.byte_len()
    }

    /// Offset of the data from the aligned start of the arena (a multiple of [`ALIGN`]).
    pub fn offset(&self) -> usize {
        self.offset
    }
}

/// A read-only tensor: descriptor plus borrowed bytes (arena or external).
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    meta: TensorMeta,
    lifetime: Lifetime,
    data: &'a [u8],
}

impl<'a> TensorRef<'a> {
    /// Wraps an external buffer without copying; `data` may be longer than needed.
    ///
    /// # Errors
    ///
    /// [`ArenaError::ExternalTooShort`] when `data` is shorter than `meta.byte_len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
    /// let slot = [1u8, 2, 3, 4, 5];
    /// let t = TensorRef::wrap(TensorMeta::vector(DType::UInt8, 4).unwrap(), &slot).unwrap();
    /// assert_eq!(t.data(), &[1, 2, 3, 4]);
    /// assert!(core::ptr::eq(t.data().as_ptr(), slot.as_ptr()));
    /// ```
    // Inline: on the serving path it is a length check and three stores.
    #[inline]
    pub fn wrap(meta: TensorMeta, data: &'a [u8]) -> Result<TensorRef<'a>, ArenaError> {
        let needed = meta.byte_len();
        if data.len() < needed {
            return Err(ArenaError::ExternalTooShort {
                needed,
                actual: data.len(),
            });
        }
        Ok(TensorRef {
            meta,
            lifetime: Lifetime::External,
            data: &data[..needed],
        })
    }

    /// Element type and shape.
    pub fn meta(&self) -> TensorMeta {
        self.meta
    }

    /// Where the bytes live.
    pub fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    /// Exactly `meta().byte_len()` bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
}

/// A writable tensor: descriptor plus mutably borrowed bytes (arena or external).
#[derive(Debug)]
pub struct TensorMut<'a> {
    meta: TensorMeta,
    lifetime: Lifetime,
    data: &'a mut [u8],
}

impl<'a> TensorMut<'a> {
    /// Wraps an external buffer without copying; `data` may be longer than needed.
    ///
    /// # Errors
    ///
    /// [`ArenaError::ExternalTooShort`] when `data` is shorter than `meta.byte_len()`.
    #[inline]
    pub fn wrap(meta: TensorMeta, data: &'a mut [u8]) -> Result<TensorMut<'a>, ArenaError> {
        let needed = meta.byte_len();
        if data.len() < needed {
            return Err(ArenaError::ExternalTooShort {
                needed,
                actual: data.len(),
            });
        }
        Ok(TensorMut {
            meta,
            lifetime: Lifetime::External,
            data: &mut data[..needed],
        })
    }

    /// Element type and shape.
    pub fn meta(&self) -> TensorMeta {
        self.meta
    }

    /// Where the bytes live.
    pub fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    /// The bytes, read-only.
    pub fn data(&self) -> &[u8] {
        self.data
    }

    /// The bytes, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.data
    }

    /// Reborrows as a read-only tensor.
    pub fn as_ref(&self) -> TensorRef<'_> {
        TensorRef {
            meta: self.meta,
            lifetime: self.lifetime,
            data: self.data,
        }
    }
}

/// A buffer from the scratch pool, move-only; give it back with [`Arena::release_scratch`].
#[derive(Debug, PartialEq, Eq)]
pub struct Scratch {
    offset: usize,
    len: usize,
    reserved: usize,
    depth: usize,
    epoch: u32,
}

impl Scratch {
    /// Requested length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has zero length.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Arena statistics (all in bytes unless stated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemStats {
    /// Bytes available to tensors (persistent plus ephemeral), after alignment.
    pub total: usize,
    /// Bytes in use by tensors now (persistent plus ephemeral).
    pub used: usize,
    /// Highest `used` since [`Arena::new`] or [`Arena::reset_peak`].
    pub peak: usize,
    /// Of `used`, bytes in the persistent region.
    pub persistent_used: usize,
    /// Of `used`, bytes in the ephemeral region.
    pub ephemeral_used: usize,
    /// Size of the scratch pool.
    pub scratch_total: usize,
    /// Bytes of the scratch pool acquired now.
    pub scratch_used: usize,
    /// Successful tensor allocations since [`Arena::new`].
    pub allocation_count: u32,
    /// Calls of [`Arena::reset_ephemeral`] and [`Arena::reset_all`].
    pub reset_count: u32,
}

/// The tensor arena over a caller-provided buffer.
///
/// `SCRATCH_DEPTH` bounds the number of outstanding scratch buffers
/// (default [`DEFAULT_SCRATCH_DEPTH`]).
#[derive(Debug)]
pub struct Arena<'a, const SCRATCH_DEPTH: usize = DEFAULT_SCRATCH_DEPTH> {
    /// Aligned part of the caller's buffer: tensors in `[0, scratch_start)`,
    /// scratch pool in `[scratch_start, len)`.
    mem: &'a mut [u8],
    scratch_start: usize,
    ephemeral_top: usize,
    persistent_bottom: usize,
    scratch_top: usize,
    scratch_depth: usize,
    /// Start offset of the buffer at each stack depth.
    scratch_offsets: [usize; SCRATCH_DEPTH],
    /// Whether the buffer at each depth was released (popped lazily).
    scratch_released: [bool; SCRATCH_DEPTH],
    /// Bumped by `reset_all`; stamps persistent tensors and scratch buffers.
    epoch_all: u32,
    /// Bumped by both resets; stamps ephemeral tensors.
    epoch_ephemeral: u32,
    peak: usize,
    allocation_count: u32,
    reset_count: u32,
}

const fn round_up(n: usize) -> Option<usize> {
    match n.checked_add(ALIGN - 1) {
        Some(v) => Some(v & !(ALIGN - 1)),
        None => None,
    }
}

impl<'a, const SCRATCH_DEPTH: usize> Arena<'a, SCRATCH_DEPTH> {
    /// Builds an arena over `buffer`, reserving `scratch_size` bytes (rounded
    /// up to [`ALIGN`]) at its end for the scratch pool. Leading bytes up to
    /// the first 16-byte boundary and trailing bytes past the last one are
    /// not used.
    ///
    /// # Errors
    ///
    /// [`ArenaError::BufferTooSmall`] when, after alignment, the buffer
    /// cannot hold the scratch pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_runtime::arena::{Arena, DType, Lifetime, TensorMeta};
    /// let mut buf = [0u8; 1024];
    /// let mut arena: Arena = Arena::new(&mut buf, 128).unwrap();
    /// let t = arena.alloc(TensorMeta::vector(DType::Int8, 10).unwrap(), Lifetime::Ephemeral).unwrap();
    /// arena.data_mut(&t).unwrap()[0] = 42;
    /// assert_eq!(arena.data(&t).unwrap()[0], 42);
    /// arena.reset_ephemeral();
    /// assert!(arena.data(&t).is_err());
    /// ```
    pub fn new(buffer: &'a mut [u8], scratch_size: usize) -> Result<Self, ArenaError> {
        let pad = buffer.as_ptr().align_offset(ALIGN);
        if pad > buffer.len() {
            return Err(ArenaError::BufferTooSmall);
        }
        let usable = (buffer.len() - pad) & !(ALIGN - 1);
        let scratch = round_up(scratch_size).ok_or(ArenaError::BufferTooSmall)?;
        if scratch > usable {
            return Err(ArenaError::BufferTooSmall);
        }
        let mem = &mut buffer[pad..pad + usable];
        let scratch_start = usable - scratch;
        Ok(Arena {
            mem,
            scratch_start,
            ephemeral_top: 0,
            persistent_bottom: scratch_start,
            scratch_top: scratch_start,
            scratch_depth: 0,
            scratch_offsets: [0; SCRATCH_DEPTH],
            scratch_released: [false; SCRATCH_DEPTH],
            epoch_all: 0,
            epoch_ephemeral: 0,
            peak: 0,
            allocation_count: 0,
            reset_count: 0,
        })
    }

    fn used(&self) -> usize {
        self.ephemeral_top + (self.scratch_start - self.persistent_bottom)
    }

    /// Bytes free for tensors (shared by both regions).
    pub fn available(&self) -> usize {
        self.persistent_bottom - self.ephemeral_top
    }

    /// Allocates a tensor of `meta` in the region `lifetime` names.
    ///
    /// # Errors
    ///
    /// * [`ArenaError::WrongLifetime`] for [`Lifetime::External`].
    /// * [`ArenaError::Exhausted`] when the free space is too small; nothing
    ///   is allocated then.
    pub fn alloc(&mut self, meta: TensorMeta, lifetime: Lifetime) -> Result<Tensor, ArenaError> {
        let available = self.available();
        let requested = round_up(meta.byte_len()).ok_or(ArenaError::Exhausted {
            requested: usize::MAX,
            available,
        })?;
        if requested > available {
            return Err(ArenaError::Exhausted {
                requested,
                available,
            });
        }
        let (offset, epoch) = match lifetime {
            Lifetime::Ephemeral => {
                let offset = self.ephemeral_top;
                self.ephemeral_top += requested;
                (offset, self.epoch_ephemeral)
            }
            Lifetime::Persistent => {
                self.persistent_bottom -= requested;
                (self.persistent_bottom, self.epoch_all)
            }
            Lifetime::External => return Err(ArenaError::WrongLifetime),
        };
        self.allocation_count = self.allocation_count.wrapping_add(1);
        self.peak = self.peak.max(self.used());
        Ok(Tensor {
            meta,
            lifetime,
            offset,
            reserved: requested,
            epoch,
        })
    }

    fn check(&self, t: &Tensor) -> Result<(), ArenaError> {
        let live = match t.lifetime {
            Lifetime::Ephemeral => {
                t.epoch == self.epoch_ephemeral && t.offset + t.reserved <= self.ephemeral_top
            }
            Lifetime::Persistent => {
                t.epoch == self.epoch_all
                    && t.offset >= self.persistent_bottom
                    && t.offset + t.reserved <= self.scratch_start
            }
            Lifetime::External => false,
        };
        if live {
            Ok(())
        } else {
            Err(ArenaError::StaleTensor)
        }
    }

    /// Gives a tensor back. Returns `true` when its bytes were reclaimed now
    /// (it was the latest allocation of its region), `false` when they return
    /// at the next reset of its region.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the descriptor predates a reset.
    pub fn free(&mut self, tensor: Tensor) -> Result<bool, ArenaError> {
        self.check(&tensor)?;
        match tensor.lifetime {
            Lifetime::Ephemeral if tensor.offset + tensor.reserved == self.ephemeral_top => {
                self.ephemeral_top = tensor.offset;
                Ok(true)
            }
            Lifetime::Persistent if tensor.offset == self.persistent_bottom => {
                self.persistent_bottom += tensor.reserved;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The bytes of a tensor.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the descriptor predates a reset.
    pub fn data(&self, tensor: &Tensor) -> Result<&[u8], ArenaError> {
        self.check(tensor)?;
        Ok(&self.mem[tensor.offset..tensor.offset + tensor.byte_len()])
    }

    /// The bytes of a tensor, writable.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the descriptor predates a reset.
    pub fn data_mut(&mut self, tensor: &Tensor) -> Result<&mut [u8], ArenaError> {
        self.check(tensor)?;
        let len = tensor.byte_len();
        Ok(&mut self.mem[tensor.offset..tensor.offset + len])
    }

    /// A tensor as a read-only view.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the descriptor predates a reset.
    pub fn view(&self, tensor: &Tensor) -> Result<TensorRef<'_>, ArenaError> {
        Ok(TensorRef {
            meta: tensor.meta,
            lifetime: tensor.lifetime,
            data: self.data(tensor)?,
        })
    }

    /// A tensor as a writable view.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the descriptor predates a reset.
    pub fn view_mut(&mut self, tensor: &Tensor) -> Result<TensorMut<'_>, ArenaError> {
        let (meta, lifetime) = (tensor.meta, tensor.lifetime);
        Ok(TensorMut {
            meta,
            lifetime,
            data: self.data_mut(tensor)?,
        })
    }

    /// Two tensors at once: `input` read-only and `output` writable, as a
    /// kernel needs them.
    ///
    /// # Errors
    ///
    /// * [`ArenaError::StaleTensor`] when either descriptor predates a reset.
    /// * [`ArenaError::Aliased`] when both name the same memory.
    pub fn input_output(
        &mut self,
        input: &Tensor,
        output: &Tensor,
    ) -> Result<(TensorRef<'_>, TensorMut<'_>), ArenaError> {
        self.check(input)?;
        self.check(output)?;
        if input.offset == output.offset {
            return Err(ArenaError::Aliased);
        }
        let (in_len, out_len) = (input.byte_len(), output.byte_len());
        let (in_data, out_data) = if input.offset < output.offset {
            let (low, high) = self.mem.split_at_mut(output.offset);
            (
                &low[input.offset..input.offset + in_len],
                &mut high[..out_len],
            )
        } else {
            let (low, high) = self.mem.split_at_mut(input.offset);
            (
                &high[..in_len],
                &mut low[output.offset..output.offset + out_len],
            )
        };
        Ok((
            TensorRef {
                meta: input.meta,
                lifetime: input.lifetime,
                data: in_data,
            },
            TensorMut {
                meta: output.meta,
                lifetime: output.lifetime,
                data: out_data,
            },
        ))
    }

    /// Frees every ephemeral tensor at once; persistent tensors stay valid.
    /// Ephemeral descriptors from before the reset become stale.
    pub fn reset_ephemeral(&mut self) {
        self.ephemeral_top = 0;
        self.epoch_ephemeral = self.epoch_ephemeral.wrapping_add(1);
        self.reset_count = self.reset_count.wrapping_add(1);
    }

    /// Frees every tensor and scratch buffer; all older descriptors become stale.
    pub fn reset_all(&mut self) {
        self.reset_ephemeral();
        self.persistent_bottom = self.scratch_start;
        self.scratch_top = self.scratch_start;
        self.scratch_depth = 0;
        self.epoch_all = self.epoch_all.wrapping_add(1);
    }

    /// Sets the peak back to the current use.
    pub fn reset_peak(&mut self) {
        self.peak = self.used();
    }

    /// Takes `size` bytes from the scratch pool (a stack: bytes of a
    /// released buffer return once every younger buffer is released too).
    ///
    /// # Errors
    ///
    /// * [`ArenaError::ScratchExhausted`] when the pool has too few free bytes.
    /// * [`ArenaError::ScratchDepth`] when `SCRATCH_DEPTH` buffers are out.
    pub fn acquire_scratch(&mut self, size: usize) -> Result<Scratch, ArenaError> {
        let available = self.mem.len() - self.scratch_top;
        let requested = round_up(size).ok_or(ArenaError::ScratchExhausted {
            requested: usize::MAX,
            available,
        })?;
        if requested > available {
            return Err(ArenaError::ScratchExhausted {
                requested,
                available,
            });
        }
        if self.scratch_depth >= SCRATCH_DEPTH {
            return Err(ArenaError::ScratchDepth);
        }
        let offset = self.scratch_top;
        self.scratch_offsets[self.scratch_depth] = offset;
        self.scratch_released[self.scratch_depth] = false;
        self.scratch_top += requested;
        self.scratch_depth += 1;
        Ok(Scratch {
            offset,
            len: size,
            reserved: requested,
            depth: self.scratch_depth,
            epoch: self.epoch_all,
        })
    }

    fn check_scratch(&self, s: &Scratch) -> Result<(), ArenaError> {
        if s.epoch == self.epoch_all
            && s.depth <= self.scratch_depth
            && s.offset + s.reserved <= self.scratch_top
        {
            Ok(())
        } else {
            Err(ArenaError::StaleTensor)
        }
    }

    /// The bytes of a scratch buffer.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when the buffer was reclaimed by [`Arena::reset_all`].
    pub fn scratch_mut(&mut self, scratch: &Scratch) -> Result<&mut [u8], ArenaError> {
        self.check_scratch(scratch)?;
        Ok(&mut self.mem[scratch.offset..scratch.offset + scratch.len])
    }

    /// Gives a scratch buffer back. Its bytes return to the pool now if it
    /// is the youngest outstanding buffer, otherwise when the younger ones
    /// are released.
    ///
    /// # Errors
    ///
    /// [`ArenaError::StaleTensor`] when it predates [`Arena::reset_all`].
    pub fn release_scratch(&mut self, scratch: Scratch) -> Result<(), ArenaError> {
        self.check_scratch(&scratch)?;
        self.scratch_released[scratch.depth - 1] = true;
        while self.scratch_depth > 0 && self.scratch_released[self.scratch_depth - 1] {
            self.scratch_depth -= 1;
            self.scratch_top = self.scratch_offsets[self.scratch_depth];
        }
        Ok(())
    }

    /// Current statistics.
    pub fn stats(&self) -> MemStats {
        MemStats {
            total: self.scratch_start,
            used: self.used(),
            peak: self.peak,
            persistent_used: self.scratch_start - self.persistent_bottom,
            ephemeral_used: self.ephemeral_top,
            scratch_total: self.mem.len() - self.scratch_start,
            scratch_used: self.scratch_top - self.scratch_start,
            allocation_count: self.allocation_count,
            reset_count: self.reset_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16-byte aligned backing buffer, so sizes in tests are exact.
    #[repr(align(16))]
    struct Backing<const N: usize>([u8; N]);

    fn meta(dtype: DType, dims: &[u32]) -> TensorMeta {
        TensorMeta::new(dtype, Shape::new(dims).unwrap())
    }

    fn addr(arena: &Arena<'_>, t: &Tensor) -> usize {
        arena.data(t).unwrap().as_ptr() as usize
    }

    #[test]
    fn dtype_sizes() {
        assert_eq!(DType::Int8.size(), 1);
        assert_eq!(DType::UInt8.size(), 1);
        assert_eq!(DType::Int16.size(), 2);
        assert_eq!(DType::Float16.size(), 2);
        assert_eq!(DType::Float32.size(), 4);
        assert_eq!(meta(DType::Float32, &[2, 3, 4, 5]).byte_len(), 480);
    }

    #[test]
    fn shape_rejects_empty_zero_and_rank_five() {
        assert_eq!(Shape::new(&[]), Err(ArenaError::InvalidShape));
        assert_eq!(Shape::new(&[4, 0]), Err(ArenaError::InvalidShape));
        assert_eq!(Shape::new(&[1, 2, 3, 4, 5]), Err(ArenaError::InvalidShape));
        assert_eq!(Shape::new(&[u32::MAX, 2]), Err(ArenaError::InvalidShape));
        let s = Shape::new(&[1, 2, 3, 4]).unwrap();
        assert_eq!(s.dims(), &[1, 2, 3, 4]);
        assert_eq!(s.rank(), 4);
        assert_eq!(s.elements(), 24);
    }

    #[test]
    fn init_aligns_a_misaligned_buffer() {
        let mut b = Backing([0u8; 256]);
        let arena: Arena = Arena::new(&mut b.0[3..], 0).unwrap();
        // 253 bytes starting 3 past a boundary: 13 bytes of pad, 240 usable.
        assert_eq!(arena.stats().total, 240);
        assert_eq!(arena.stats().used, 0);
    }

    #[test]
    fn init_rejects_a_buffer_smaller_than_the_scratch_pool() {
        let mut b = Backing([0u8; 64]);
        assert_eq!(
            Arena::<'_, 8>::new(&mut b.0, 80).err(),
            Some(ArenaError::BufferTooSmall)
        );
        let mut b = Backing([0u8; 64]);
        let arena: Arena = Arena::new(&mut b.0, 64).unwrap();
        assert_eq!(arena.stats().total, 0);
        assert_eq!(arena.stats().scratch_total, 64);
    }

    #[test]
    fn every_tensor_is_16_byte_aligned() {
        let mut b = Backing([0u8; 1024]);
        let mut arena: Arena = Arena::new(&mut b.0[5..], 0).unwrap();
        let mut tensors: heapless::Vec<Tensor, 12> = heapless::Vec::new();
        for (i, n) in [1u32, 3, 17, 5, 33, 2].iter().enumerate() {
            let life = if i % 2 == 0 {
                Lifetime::Ephemeral
            } else {
                Lifetime::Persistent
            };
            tensors
                .push(arena.alloc(meta(DType::Int8, &[*n]), life).unwrap())
                .unwrap();
        }
        for t in &tensors {
            assert_eq!(addr(&arena, t) % ALIGN, 0);
            assert_eq!(t.offset() % ALIGN, 0);
        }
    }

    #[test]
    fn data_has_exact_length_and_round_trips() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let t = arena
            .alloc(meta(DType::Int16, &[3, 5]), Lifetime::Ephemeral)
            .unwrap();
        assert_eq!(arena.data(&t).unwrap().len(), 30);
        arena.data_mut(&t).unwrap().fill(0xA5);
        assert!(arena.data(&t).unwrap().iter().all(|&x| x == 0xA5));
        let v = arena.view(&t).unwrap();
        assert_eq!(v.meta().shape.dims(), &[3, 5]);
        assert_eq!(v.lifetime(), Lifetime::Ephemeral);
    }

    #[test]
    fn tensors_do_not_overlap() {
        let mut b = Backing([0u8; 512]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let a = arena
            .alloc(meta(DType::UInt8, &[20]), Lifetime::Ephemeral)
            .unwrap();
        let p = arena
            .alloc(meta(DType::UInt8, &[20]), Lifetime::Persistent)
            .unwrap();
        let c = arena
            .alloc(meta(DType::UInt8, &[20]), Lifetime::Ephemeral)
            .unwrap();
        arena.data_mut(&a).unwrap().fill(1);
        arena.data_mut(&p).unwrap().fill(2);
        arena.data_mut(&c).unwrap().fill(3);
        assert!(arena.data(&a).unwrap().iter().all(|&x| x == 1));
        assert!(arena.data(&p).unwrap().iter().all(|&x| x == 2));
        assert!(arena.data(&c).unwrap().iter().all(|&x| x == 3));
        assert_eq!(c.offset() - a.offset(), 32);
        assert_eq!(p.offset(), 512 - 32);
    }

    #[test]
    fn exhaustion_is_an_error_and_allocates_nothing() {
        let mut b = Backing([0u8; 128]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let _a = arena
            .alloc(meta(DType::Int8, &[100]), Lifetime::Ephemeral)
            .unwrap();
        let before = arena.stats();
        assert_eq!(
            arena.alloc(meta(DType::Int8, &[17]), Lifetime::Persistent),
            Err(ArenaError::Exhausted {
                requested: 32,
                available: 16
            })
        );
        assert_eq!(arena.stats(), before);
        assert!(arena
            .alloc(meta(DType::Int8, &[16]), Lifetime::Persistent)
            .is_ok());
        assert_eq!(arena.available(), 0);
    }

    #[test]
    fn exact_fit_fills_the_arena() {
        let mut b = Backing([0u8; 64]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let _t = arena
            .alloc(meta(DType::Float32, &[16]), Lifetime::Ephemeral)
            .unwrap();
        assert_eq!(arena.stats().used, 64);
        assert!(matches!(
            arena.alloc(meta(DType::Int8, &[1]), Lifetime::Ephemeral),
            Err(ArenaError::Exhausted { .. })
        ));
    }

    #[test]
    fn reset_ephemeral_keeps_persistent_data() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let w = arena
            .alloc(meta(DType::Int8, &[8]), Lifetime::Persistent)
            .unwrap();
        arena
            .data_mut(&w)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let _e = arena
            .alloc(meta(DType::Int8, &[64]), Lifetime::Ephemeral)
            .unwrap();
        arena.reset_ephemeral();
        let s = arena.stats();
        assert_eq!(s.ephemeral_used, 0);
        assert_eq!(s.persistent_used, 16);
        assert_eq!(s.reset_count, 1);
        assert_eq!(arena.data(&w).unwrap(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn stale_ephemeral_descriptor_is_rejected_after_reset() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let old = arena
            .alloc(meta(DType::Int8, &[8]), Lifetime::Ephemeral)
            .unwrap();
        arena.reset_ephemeral();
        let new = arena
            .alloc(meta(DType::Int8, &[8]), Lifetime::Ephemeral)
            .unwrap();
        assert_eq!(old.offset(), new.offset());
        assert_eq!(arena.data(&old), Err(ArenaError::StaleTensor));
        assert_eq!(arena.free(old), Err(ArenaError::StaleTensor));
        assert!(arena.data(&new).is_ok());
    }

    #[test]
    fn reset_all_invalidates_persistent_tensors() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 32).unwrap();
        let w = arena
            .alloc(meta(DType::Int8, &[8]), Lifetime::Persistent)
            .unwrap();
        let s = arena.acquire_scratch(8).unwrap();
        arena.reset_all();
        assert_eq!(arena.data(&w), Err(ArenaError::StaleTensor));
        assert_eq!(arena.scratch_mut(&s).err(), Some(ArenaError::StaleTensor));
        let st = arena.stats();
        assert_eq!((st.used, st.scratch_used), (0, 0));
    }

    #[test]
    fn free_of_latest_allocation_reclaims_immediately() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let a = arena
            .alloc(meta(DType::Int8, &[16]), Lifetime::Ephemeral)
            .unwrap();
        let c = arena
            .alloc(meta(DType::Int8, &[16]), Lifetime::Ephemeral)
            .unwrap();
        assert_eq!(arena.free(a), Ok(false));
        assert_eq!(arena.stats().ephemeral_used, 32);
        assert_eq!(arena.free(c), Ok(true));
        assert_eq!(arena.stats().ephemeral_used, 16);
        let p = arena
            .alloc(meta(DType::Int8, &[16]), Lifetime::Persistent)
            .unwrap();
        assert_eq!(arena.free(p), Ok(true));
        assert_eq!(arena.stats().persistent_used, 0);
    }

    #[test]
    fn stats_track_peak_and_allocation_count() {
        let mut b = Backing([0u8; 512]);
        let mut arena: Arena = Arena::new(&mut b.0, 64).unwrap();
        let _p = arena
            .alloc(meta(DType::Int8, &[32]), Lifetime::Persistent)
            .unwrap();
        let _e = arena
            .alloc(meta(DType::Int8, &[100]), Lifetime::Ephemeral)
            .unwrap();
        arena.reset_ephemeral();
        let _e2 = arena
            .alloc(meta(DType::Int8, &[10]), Lifetime::Ephemeral)
            .unwrap();
        let s = arena.stats();
        assert_eq!(s.total, 448);
        assert_eq!(s.used, 32 + 16);
        assert_eq!(s.peak, 32 + 112);
        assert_eq!(s.allocation_count, 3);
        assert_eq!(s.scratch_total, 64);
        arena.reset_peak();
        assert_eq!(arena.stats().peak, 48);
    }

    #[test]
    fn external_tensor_wraps_without_copy() {
        let mut slot = [0u8; 40];
        let m = meta(DType::Int8, &[4, 8]);
        {
            let mut t = TensorMut::wrap(m, &mut slot).unwrap();
            assert_eq!(t.lifetime(), Lifetime::External);
            t.data_mut()[31] = 9;
            assert_eq!(t.as_ref().data().len(), 32);
        }
        assert_eq!(slot[31], 9);
        assert_eq!(
            TensorRef::wrap(meta(DType::Float32, &[11]), &slot).err(),
            Some(ArenaError::ExternalTooShort {
                needed: 44,
                actual: 40
            })
        );
        let mut b = Backing([0u8; 64]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        assert_eq!(
            arena.alloc(m, Lifetime::External),
            Err(ArenaError::WrongLifetime)
        );
    }

    #[test]
    fn input_output_gives_disjoint_views_in_either_order() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 0).unwrap();
        let x = arena
            .alloc(meta(DType::Int8, &[4]), Lifetime::Ephemeral)
            .unwrap();
        let y = arena
            .alloc(meta(DType::Int8, &[4]), Lifetime::Persistent)
            .unwrap();
        arena.data_mut(&x).unwrap().copy_from_slice(&[1, 2, 3, 4]);
        {
            let (i, mut o) = arena.input_output(&x, &y).unwrap();
            o.data_mut().copy_from_slice(i.data());
        }
        assert_eq!(arena.data(&y).unwrap(), &[1, 2, 3, 4]);
        arena.data_mut(&y).unwrap()[0] = 7;
        {
            let (i, mut o) = arena.input_output(&y, &x).unwrap();
            o.data_mut()[0] = i.data()[0];
        }
        assert_eq!(arena.data(&x).unwrap()[0], 7);
        assert_eq!(arena.input_output(&x, &x).err(), Some(ArenaError::Aliased));
    }

    #[test]
    fn scratch_pool_is_separate_from_tensors() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 64).unwrap();
        let s = arena.acquire_scratch(60).unwrap();
        assert_eq!(s.len(), 60);
        assert_eq!(arena.scratch_mut(&s).unwrap().as_ptr() as usize % ALIGN, 0);
        assert_eq!(
            arena.acquire_scratch(1).err(),
            Some(ArenaError::ScratchExhausted {
                requested: 16,
                available: 0
            })
        );
        // The tensor regions are untouched by the pool.
        let _t = arena
            .alloc(meta(DType::Int8, &[192]), Lifetime::Ephemeral)
            .unwrap();
        assert_eq!(arena.stats().scratch_used, 64);
        arena.release_scratch(s).unwrap();
        assert_eq!(arena.stats().scratch_used, 0);
    }

    #[test]
    fn scratch_out_of_order_release_reclaims_when_younger_are_back() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena = Arena::new(&mut b.0, 128).unwrap();
        let a = arena.acquire_scratch(16).unwrap();
        let c = arena.acquire_scratch(32).unwrap();
        arena.release_scratch(a).unwrap();
        assert_eq!(arena.stats().scratch_used, 48);
        arena.release_scratch(c).unwrap();
        assert_eq!(arena.stats().scratch_used, 0);
    }

    #[test]
    fn scratch_depth_is_bounded() {
        let mut b = Backing([0u8; 256]);
        let mut arena: Arena<'_, 2> = Arena::new(&mut b.0, 128).unwrap();
        let _a = arena.acquire_scratch(1).unwrap();
        let _c = arena.acquire_scratch(1).unwrap();
        assert_eq!(
            arena.acquire_scratch(1).err(),
            Some(ArenaError::ScratchDepth)
        );
    }

    #[test]
    fn errors_map_to_errno() {
        assert_eq!(
            ArenaError::Exhausted {
                requested: 1,
                available: 0
            }
            .to_errno(),
            Errno::NoMem
        );
        assert_eq!(ArenaError::InvalidShape.to_errno(), Errno::Inval);
        assert_eq!(ArenaError::ScratchDepth.to_errno(), Errno::NoSpc);
        assert_eq!(ArenaError::StaleTensor.to_errno().negative(), -14);
    }
}
