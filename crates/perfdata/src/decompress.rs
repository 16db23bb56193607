//! Decompressing the data of `perf record -z`: COMPRESSED records carry a
//! zstd stream whose records may straddle two of them, so one decoder runs
//! across the whole file, a chunk at a time.

use crate::error::{Error, Result};

pub(crate) struct Inflate {
    pub(crate) decoder: zstd::stream::raw::Decoder<'static>,
    pub(crate) out: Vec<u8>,
    pub(crate) pos: usize,
    /// Offset in the decompressed stream of `out[0]`.
    pub(crate) base: u64,
    /// The payload of the last COMPRESSED record, and how much of it the
    /// decoder has taken.
    pub(crate) input: Vec<u8>,
    pub(crate) in_pos: usize,
    /// File offset of that record, for errors.
    pub(crate) at: u64,
    pub(crate) chunk: Vec<u8>,
}

impl Inflate {
    /// Decompress up to one chunk more into `out`. False when the pending
    /// input is used up and the decoder holds nothing more.
    pub(crate) fn fill(&mut self) -> Result<bool> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        // Drop what has been consumed, keeping a partial record.
        self.base += self.pos as u64;
        self.out.drain(..self.pos);
        self.pos = 0;
        let mut retried = false;
        loop {
            let mut input = InBuffer::around(&self.input[self.in_pos..]);
            let mut out = OutBuffer::around(&mut self.chunk[..]);
            let at = self.at;
            self.decoder.run(&mut input, &mut out).map_err(|e| {
                Error::parse(
                    at,
                    format!("COMPRESSED record: zstd data does not decode: {e}"),
                )
            })?;
            let (took, n) = (input.pos(), out.pos());
            self.in_pos += took;
            self.out.extend_from_slice(&self.chunk[..n]);
            if n > 0 || took > 0 {
                return Ok(true);
            }
            if self.in_pos == self.input.len() {
                return Ok(false);
            }
            if retried {
                return Err(Error::parse(
                    at,
                    "COMPRESSED record: the zstd decoder makes no progress",
                ));
            }
            // No progress with input left: the decoder needs a new frame.
            self.decoder
                .reinit()
                .map_err(|e| Error::parse(at, format!("zstd: {e}")))?;
            retried = true;
        }
    }
}
