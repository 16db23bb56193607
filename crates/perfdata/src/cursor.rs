//! A bounds-checked little-endian reader over a byte slice. Every read that
//! would run past the end becomes an [`Error::Parse`] naming the absolute
//! offset, so no parser in this crate indexes a slice directly.

use crate::error::{Error, Result};

#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute offset of `data[0]`, for error messages.
    base: u64,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], base: u64) -> Self {
        Cursor { data, pos: 0, base }
    }

    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    #[inline]
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.short(n, what));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    // Kept out of line so the readers above stay small enough to inline
    // into the record parsers' hot paths.
    #[cold]
    #[inline(never)]
    fn short(&self, n: usize, what: &str) -> Error {
        Error::parse(
            self.offset(),
            format!("{what}: need {n} bytes, only {} left", self.remaining()),
        )
    }

    #[inline]
    pub fn skip(&mut self, n: usize, what: &str) -> Result<()> {
        self.bytes(n, what).map(|_| ())
    }

    #[inline]
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    #[inline]
    pub fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2, what)?.try_into().unwrap()))
    }

    #[inline]
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().unwrap()))
    }

    #[inline]
    pub fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().unwrap()))
    }

    #[inline]
    pub fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.bytes(N, what)?.try_into().unwrap())
    }

    /// The rest of the data, NUL-terminated string, trailing padding dropped.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.data[self.pos..];
        self.pos = self.data.len();
        s
    }
}

/// The bytes up to the first NUL (or all of them), lossily as text.
pub(crate) fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(n) => &bytes[..n],
        None => bytes,
    }
}

pub(crate) fn align8(n: usize) -> usize {
    (n + 7) & !7
}
