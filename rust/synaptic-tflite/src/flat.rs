//! A checked FlatBuffers reader: every offset and length is bounds-checked
//! before a byte is read.
//!
//! Only what the TFLite schema needs: tables (through their vtables),
//! scalars with defaults, sub-tables, vectors of scalars and vectors of
//! tables. Every read goes through [`Buffer::bytes`], which returns an error
//! instead of indexing out of range, so a hostile buffer can at worst make a
//! read fail. Nothing requires alignment: scalars are decoded from bytes with
//! `from_le_bytes`, which also makes the reader endianness-independent.

use crate::Error;

/// The bytes of a flatbuffer and checked little-endian reads from them.
#[derive(Clone, Copy)]
pub(crate) struct Buffer<'a>(pub(crate) &'a [u8]);

impl<'a> Buffer<'a> {
    /// `N` bytes at `pos`.
    fn bytes<const N: usize>(self, pos: usize) -> Result<[u8; N], Error> {
        let end = pos.checked_add(N).ok_or(Error::Malformed)?;
        let slice = self.0.get(pos..end).ok_or(Error::Malformed)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    pub(crate) fn u8(self, pos: usize) -> Result<u8, Error> {
        Ok(self.bytes::<1>(pos)?[0])
    }

    pub(crate) fn u16(self, pos: usize) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.bytes(pos)?))
    }

    pub(crate) fn u32(self, pos: usize) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.bytes(pos)?))
    }

    pub(crate) fn i32(self, pos: usize) -> Result<i32, Error> {
        Ok(i32::from_le_bytes(self.bytes(pos)?))
    }

    pub(crate) fn i64(self, pos: usize) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(self.bytes(pos)?))
    }

    pub(crate) fn f32(self, pos: usize) -> Result<f32, Error> {
        Ok(f32::from_le_bytes(self.bytes(pos)?))
    }

    /// The position a `uoffset_t` stored at `pos` points to.
    fn follow(self, pos: usize) -> Result<usize, Error> {
        let offset = self.u32(pos)? as usize;
        let target = pos.checked_add(offset).ok_or(Error::Malformed)?;
        if target >= self.0.len() {
            return Err(Error::Malformed);
        }
        Ok(target)
    }
}

/// A table whose vtable has been checked to lie inside the buffer.
#[derive(Clone, Copy)]
pub(crate) struct Table<'a> {
    buf: Buffer<'a>,
    pos: usize,
    vtable: usize,
    vtable_len: usize,
    table_len: usize,
}

impl<'a> Table<'a> {
    /// The root table of a flatbuffer (its first word is the offset to it).
    pub(crate) fn root(buf: &'a [u8]) -> Result<Self, Error> {
        let buf = Buffer(buf);
        let pos = buf.follow(0)?;
        Self::at(buf, pos)
    }

    fn at(buf: Buffer<'a>, pos: usize) -> Result<Self, Error> {
        // The table starts with a signed offset back to its vtable.
        let soffset = i64::from(buf.i32(pos)?);
        let vtable = i64::try_from(pos)
            .ok()
            .and_then(|p| p.checked_sub(soffset))
            .and_then(|v| usize::try_from(v).ok())
            .ok_or(Error::Malformed)?;
        let vtable_len = usize::from(buf.u16(vtable)?);
        let table_len = usize::from(buf.u16(vtable + 2)?);
        if vtable_len < 4 || vtable_len % 2 != 0 || table_len < 4 {
            return Err(Error::Malformed);
        }
        let vtable_end = vtable.checked_add(vtable_len).ok_or(Error::Malformed)?;
        let table_end = pos.checked_add(table_len).ok_or(Error::Malformed)?;
        if vtable_end > buf.0.len() || table_end > buf.0.len() {
            return Err(Error::Malformed);
        }
        Ok(Self {
            buf,
            pos,
            vtable,
            vtable_len,
            table_len,
        })
    }

    /// The absolute position of field `slot` of `size` bytes, if present.
    fn field(&self, slot: usize, size: usize) -> Result<Option<usize>, Error> {
        let entry = 4 + 2 * slot;
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        let offset = usize::from(self.buf.u16(self.vtable + entry)?);
        if offset == 0 {
            return Ok(None);
        }
        if offset < 4 || offset + size > self.table_len {
            return Err(Error::Malformed);
        }
        Ok(Some(self.pos + offset))
    }

    pub(crate) fn u8(&self, slot: usize, default: u8) -> Result<u8, Error> {
        match self.field(slot, 1)? {
            Some(p) => self.buf.u8(p),
            None => Ok(default),
        }
    }

    pub(crate) fn i8(&self, slot: usize, default: i8) -> Result<i8, Error> {
        Ok(self.u8(slot, default as u8)? as i8)
    }

    pub(crate) fn i32(&self, slot: usize, default: i32) -> Result<i32, Error> {
        match self.field(slot, 4)? {
            Some(p) => self.buf.i32(p),
            None => Ok(default),
        }
    }

    pub(crate) fn u32(&self, slot: usize, default: u32) -> Result<u32, Error> {
        match self.field(slot, 4)? {
            Some(p) => self.buf.u32(p),
            None => Ok(default),
        }
    }

    pub(crate) fn u64(&self, slot: usize, default: u64) -> Result<u64, Error> {
        match self.field(slot, 8)? {
            Some(p) => Ok(self.buf.i64(p)? as u64),
            None => Ok(default),
        }
    }

    pub(crate) fn f32(&self, slot: usize, default: f32) -> Result<f32, Error> {
        match self.field(slot, 4)? {
            Some(p) => self.buf.f32(p),
            None => Ok(default),
        }
    }

    /// Whether field `slot` is present (any type).
    pub(crate) fn has(&self, slot: usize) -> Result<bool, Error> {
        Ok(self.field(slot, 0)?.is_some())
    }

    pub(crate) fn table(&self, slot: usize) -> Result<Option<Table<'a>>, Error> {
        match self.field(slot, 4)? {
            Some(p) => Ok(Some(Table::at(self.buf, self.buf.follow(p)?)?)),
            None => Ok(None),
        }
    }

    /// A vector field whose elements are `element_size` bytes each (4 for a
    /// vector of tables).
    pub(crate) fn vector(
        &self,
        slot: usize,
        element_size: usize,
    ) -> Result<Option<Vector<'a>>, Error> {
        let Some(p) = self.field(slot, 4)? else {
            return Ok(None);
        };
        let at = self.buf.follow(p)?;
        let len = self.buf.u32(at)? as usize;
        let start = at + 4;
        let end = len
            .checked_mul(element_size)
            .and_then(|n| n.checked_add(start))
            .ok_or(Error::Malformed)?;
        if end > self.buf.0.len() {
            return Err(Error::Malformed);
        }
        Ok(Some(Vector {
            buf: self.buf,
            start,
            len,
            element_size,
        }))
    }
}

/// A vector whose whole extent lies inside the buffer.
#[derive(Clone, Copy)]
pub(crate) struct Vector<'a> {
    buf: Buffer<'a>,
    start: usize,
    len: usize,
    element_size: usize,
}

impl<'a> Vector<'a> {
    /// An empty vector (for absent optional fields).
    pub(crate) const EMPTY: Vector<'static> = Vector {
        buf: Buffer(&[]),
        start: 0,
        len: 0,
        element_size: 1,
    };

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The position of element `index`, or an error past the end.
    fn element(&self, index: usize) -> Result<usize, Error> {
        if index >= self.len {
            return Err(Error::Malformed);
        }
        Ok(self.start + index * self.element_size)
    }

    /// The vector's bytes (its elements back to back).
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.buf
            .0
            .get(self.start..self.start + self.len * self.element_size)
            .unwrap_or(&[])
    }

    pub(crate) fn i32(&self, index: usize) -> Result<i32, Error> {
        self.buf.i32(self.element(index)?)
    }

    pub(crate) fn i64(&self, index: usize) -> Result<i64, Error> {
        self.buf.i64(self.element(index)?)
    }

    pub(crate) fn f32(&self, index: usize) -> Result<f32, Error> {
        self.buf.f32(self.element(index)?)
    }

    pub(crate) fn table(&self, index: usize) -> Result<Table<'a>, Error> {
        let p = self.element(index)?;
        Table::at(self.buf, self.buf.follow(p)?)
    }
}
