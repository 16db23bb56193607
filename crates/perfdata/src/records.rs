//! The data section's records, streamed in time order with perf's
//! FINISHED_ROUND rule: a round's records are delivered up to the highest
//! time seen in the round before, the rest wait for later rounds. Records
//! are parsed in place from the mapping (copied only when decompressed),
//! so memory is bounded by two rounds, not by the file.

use std::path::PathBuf;

use crate::attr::sample_type as st;
use crate::attrs_index::Attrs;
use crate::cursor::Cursor;
use crate::decompress::Inflate;
use crate::error::{Error, Result};
use crate::reader::PerfFile;
use crate::record::{parse_record, record_type as rt, Header, Record, SampleId};

/// When this many records wait for their round to close, the older half is
/// delivered early, as perf does when its queue hits its memory limit.
pub(crate) const MAX_QUEUED: usize = 1 << 21;

/// One record as delivered by [`Records::next`].
#[derive(Debug, Clone, Copy)]
pub struct RecordRef<'a> {
    /// Its type, misc bits and size.
    pub header: Header,
    /// Its body, decoded.
    pub record: Record<'a>,
    /// The `sample_id` trailer of a non-sample record (pid, time, cpu, ...),
    /// or a sample's own fields of the same names.
    pub sample_id: SampleId,
    /// The record's bytes, header included.
    pub raw: &'a [u8],
    /// Offset in the file, or in the decompressed stream for records of a
    /// compressed file (see [`RecordRef::compressed`]).
    pub offset: u64,
    /// Whether it came out of a COMPRESSED record.
    pub compressed: bool,
}

/// A record waiting for its round to close: where its bytes are (in the
/// file, not copied, or in the decompressed arena) and its time.
#[derive(Clone, Copy)]
struct Queued {
    time: u64,
    /// File offset, or offset into `qarena`/`rarena` when `compressed`.
    start: usize,
    len: u32,
    compressed: bool,
    /// Offset in the file or decompressed stream, for errors.
    offset: u64,
}

/// Where the record just read lies.
#[derive(Clone, Copy)]
enum Loc {
    /// In the file, at this offset.
    File { offset: u64, len: usize },
    /// In `ibuf` (decompressed), at this stream offset.
    Buf { offset: u64 },
}

enum Next {
    Ready,
    Immediate,
    End,
}

/// A streaming, time-ordering iterator over a file's records. Memory is
/// bounded by the records of two rounds, not by the file.
///
/// An `Err` for a record whose body does not decode leaves the iterator
/// usable (call `next` again to skip it); an `Err` for broken framing (a
/// record size that cannot be right) ends it.
pub struct Records<'f> {
    file: &'f PerfFile,
    data: &'f [u8],
    pos: u64,
    end: u64,
    unterminated: bool,
    sorted: bool,
    inflate: Option<Inflate>,
    queue: Vec<Queued>,
    qarena: Vec<u8>,
    ready: Vec<Queued>,
    rarena: Vec<u8>,
    ibuf: Vec<u8>,
    immediate: Loc,
    next_flush: u64,
    max_time: u64,
    done: bool,
    /// A header section outside the file: returned by the first `next`.
    broken: Option<Error>,
    /// Problems that did not stop reading (an unterminated file's partial
    /// last record, timestamps out of order beyond a round).
    pub warnings: Vec<String>,
}

impl<'f> Records<'f> {
    pub(crate) fn new(
        file: &'f PerfFile,
        data: &'f [u8],
        (pos, end): (u64, u64),
        unterminated: bool,
        sorted: bool,
    ) -> Records<'f> {
        Records {
            file,
            data,
            pos,
            end,
            unterminated,
            sorted,
            inflate: None,
            queue: Vec::new(),
            qarena: Vec::new(),
            ready: Vec::new(),
            rarena: Vec::new(),
            ibuf: Vec::with_capacity(4096),
            immediate: Loc::Buf { offset: 0 },
            next_flush: 0,
            max_time: 0,
            done: false,
            broken: file
                .header()
                .check_sections(file.all_bytes())
                .err()
                .map(|e| named(e, &file.path)),
            warnings: Vec::new(),
        }
    }

    // A lending iterator (records borrow the round buffer), so it cannot be
    // `Iterator`; `next` keeps the familiar name.
    /// The next record; `Ok(None)` at the end. Broken framing is an error
    /// that stops the reading of input (nothing after it can be found);
    /// records already queued still come out before the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<RecordRef<'_>>> {
        if let Some(e) = self.broken.take() {
            self.done = true;
            self.pos = self.end;
            return Err(e);
        }
        let src = loop {
            if !self.ready.is_empty() {
                break Next::Ready;
            }
            if self.done {
                break Next::End;
            }
            let loc = match self.read_raw() {
                Ok(Some(x)) => x,
                Err(e) => {
                    // Broken framing: nothing after it can be found, so stop
                    // reading input (queued records are still delivered).
                    self.pos = self.end;
                    self.inflate = None;
                    return Err(named(e, &self.file.path));
                }
                Ok(None) => {
                    self.flush(u64::MAX);
                    self.done = true;
                    continue;
                }
            };
            let data = self.data;
            let raw: &[u8] = match loc {
                Loc::File { offset, len } => &data[offset as usize..offset as usize + len],
                Loc::Buf { .. } => &self.ibuf,
            };
            let h = Header::parse(raw).expect("read_raw reads whole headers");
            match h.type_ {
                rt::COMPRESSED | rt::COMPRESSED2 => {
                    let Loc::File { offset, len } = loc else {
                        return Err(named(
                            Error::parse(0, "a COMPRESSED record inside compressed data"),
                            &self.file.path,
                        ));
                    };
                    let payload = &data[offset as usize..offset as usize + len];
                    self.inflate_record(h.type_, payload, offset)
                        .map_err(|e| named(e, &self.file.path))?;
                    continue;
                }
                rt::FINISHED_ROUND if self.sorted => {
                    let limit = self.next_flush;
                    self.flush(limit);
                    self.next_flush = self.max_time;
                    continue;
                }
                t if t >= rt::USER_START || !self.sorted => {
                    self.immediate = loc;
                    break Next::Immediate;
                }
                _ => {}
            }
            let time = record_time(&self.file.attrs, raw);
            self.max_time = self.max_time.max(time);
            let q = match loc {
                Loc::File { offset, len } => Queued {
                    time,
                    start: offset as usize,
                    len: len as u32,
                    compressed: false,
                    offset,
                },
                Loc::Buf { offset } => {
                    let start = self.qarena.len();
                    self.qarena.extend_from_slice(&self.ibuf);
                    Queued {
                        time,
                        start,
                        len: self.ibuf.len() as u32,
                        compressed: true,
                        offset,
                    }
                }
            };
            self.queue.push(q);
            if self.queue.len() >= MAX_QUEUED {
                self.flush_half();
            }
        };
        let (raw, offset, compressed) = match src {
            Next::End => return Ok(None),
            Next::Immediate => match self.immediate {
                Loc::File { offset, len } => (
                    &self.data[offset as usize..offset as usize + len],
                    offset,
                    false,
                ),
                Loc::Buf { offset } => (&self.ibuf[..], offset, true),
            },
            Next::Ready => {
                let q = self.ready.pop().expect("ready is not empty");
                let bytes: &[u8] = if q.compressed {
                    &self.rarena
                } else {
                    self.data
                };
                (
                    &bytes[q.start..q.start + q.len as usize],
                    q.offset,
                    q.compressed,
                )
            }
        };
        let (header, record, sample_id) =
            parse_record(raw, &self.file.attrs, offset).map_err(|e| {
                let e = match compressed {
                    true => Error::parse(offset, format!("in the decompressed data stream: {e}")),
                    false => e,
                };
                named(e, &self.file.path)
            })?;
        Ok(Some(RecordRef {
            header,
            record,
            sample_id,
            raw,
            offset,
            compressed,
        }))
    }

    /// Find the next whole record: in the decompressed stream if one is
    /// pending (copied to `ibuf`), else in the file (not copied).
    fn read_raw(&mut self) -> Result<Option<Loc>> {
        while let Some(inf) = &mut self.inflate {
            let avail = &inf.out[inf.pos..];
            if avail.len() >= 8 {
                let size = u16::from_le_bytes([avail[6], avail[7]]) as usize;
                let off = inf.base + inf.pos as u64;
                if size < 8 {
                    return Err(Error::parse(
                        off,
                        format!("record size {size} in the decompressed data stream"),
                    ));
                }
                if avail.len() >= size {
                    self.ibuf.clear();
                    self.ibuf.extend_from_slice(&avail[..size]);
                    inf.pos += size;
                    return Ok(Some(Loc::Buf { offset: off }));
                }
            }
            if !inf.fill()? {
                break;
            }
        }
        if self.pos >= self.end {
            return Ok(None);
        }
        let off = self.pos;
        let left = self.end - self.pos;
        if left < 8 {
            return self.truncated(
                off,
                format!("{left} bytes at the end of the data section, too few for a record header"),
            );
        }
        let h = Header::parse(&self.data[off as usize..]).expect("8 bytes left");
        let size = h.size as u64;
        if size < 8 {
            // An unterminated file (the recorder died) may end in zeros.
            return self.truncated(
                off,
                format!(
                    "record of type {} claims size {size}, less than its header",
                    h.type_
                ),
            );
        }
        if size > left {
            return self.truncated(
                off,
                format!(
                    "record of type {} claims {size} bytes, only {left} left in the data section",
                    h.type_
                ),
            );
        }
        self.pos += size;
        Ok(Some(Loc::File {
            offset: off,
            len: size as usize,
        }))
    }

    fn framing(&self, off: u64, what: String) -> Error {
        let e = Error::parse(off, what);
        match &self.file.path {
            Some(p) => e.with_path(p),
            None => e,
        }
    }

    fn truncated(&mut self, off: u64, what: String) -> Result<Option<Loc>> {
        if self.unterminated {
            self.warnings.push(format!(
                "offset {off:#x}: {what} (the file was not properly terminated)"
            ));
            self.pos = self.end;
            return Ok(None);
        }
        Err(self.framing(off, what))
    }

    /// Queue the payload of a COMPRESSED record for [`Inflate::fill`]:
    /// it is decompressed a chunk at a time, as records are read, so a
    /// small frame that inflates to gigabytes costs no more memory than
    /// a record.
    fn inflate_record(&mut self, ty: u32, record: &[u8], offset: u64) -> Result<()> {
        let payload = if ty == rt::COMPRESSED2 {
            let mut c = Cursor::new(&record[8..], offset + 8);
            let n = c.u64("COMPRESSED2.data_size")?;
            let avail = c.remaining() as u64;
            if n > avail {
                return Err(self.framing(
                    offset,
                    format!("COMPRESSED2 data_size {n} exceeds the record"),
                ));
            }
            c.bytes(n as usize, "COMPRESSED2.data")?
        } else {
            &record[8..]
        };
        let inf = match &mut self.inflate {
            Some(i) => i,
            None => {
                let decoder =
                    zstd::stream::raw::Decoder::new().map_err(|e| Error::Unsupported {
                        path: self.file.path.clone(),
                        what: format!("zstd: {e}"),
                    })?;
                self.inflate.insert(Inflate {
                    decoder,
                    out: Vec::new(),
                    pos: 0,
                    base: 0,
                    input: Vec::new(),
                    in_pos: 0,
                    at: 0,
                    chunk: vec![0u8; 1 << 16],
                })
            }
        };
        inf.input.clear();
        inf.input.extend_from_slice(payload);
        inf.in_pos = 0;
        inf.at = offset;
        Ok(())
    }

    /// Move every queued record with time <= limit to `ready`, in order.
    fn flush(&mut self, limit: u64) {
        if let Some(map) = self
            .file
            .map
            .as_ref()
            .filter(|m| m.would_release(self.pos as usize))
        {
            // Nothing before the oldest queued record is needed again.
            let oldest = self
                .queue
                .iter()
                .filter(|q| !q.compressed)
                .map(|q| q.start)
                .min()
                .unwrap_or(self.pos as usize);
            map.release_before(oldest);
        }
        if self.queue.is_empty() {
            return;
        }
        // A round is a few runs already in time order (one per ring), and
        // the queue is in arrival order: a stable sort on the time alone
        // keeps arrival order for equal times and merges the runs cheaply.
        self.queue.sort_by_key(|q| q.time);
        let cut = self.queue.partition_point(|q| q.time <= limit);
        // Delivered by popping: newest first.
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(self.queue.drain(..cut).rev());
        // Queued records from compressed data have their bytes in qarena.
        if !self.qarena.is_empty() {
            let mut rarena = std::mem::take(&mut self.rarena);
            rarena.clear();
            for q in ready.iter_mut().filter(|q| q.compressed) {
                let start = rarena.len();
                rarena.extend_from_slice(&self.qarena[q.start..q.start + q.len as usize]);
                q.start = start;
            }
            let mut qarena = Vec::with_capacity(self.qarena.len());
            for q in self.queue.iter_mut().filter(|q| q.compressed) {
                let start = qarena.len();
                qarena.extend_from_slice(&self.qarena[q.start..q.start + q.len as usize]);
                q.start = start;
            }
            self.rarena = rarena;
            self.qarena = qarena;
        }
        self.ready = ready;
    }

    fn flush_half(&mut self) {
        self.queue.sort_by_key(|q| q.time);
        let mid = self.queue[self.queue.len() / 2].time;
        self.warnings.push(format!(
            "more than {MAX_QUEUED} records in one round: delivered those up to time {mid} early"
        ));
        self.flush(mid);
    }
}

/// A record's time, read in place: from the sample fields of a SAMPLE, else
/// from the sample_id trailer; 0 when the record carries none.
pub(crate) fn record_time(attrs: &Attrs, raw: &[u8]) -> u64 {
    let rd = |off: usize| {
        raw.get(off..off + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .unwrap_or(0)
    };
    let first = &attrs.entries()[0].attr;
    let ty = u32::from_le_bytes(raw[..4].try_into().unwrap());
    if ty == rt::SAMPLE {
        let mut attr = first;
        if attr.sample_type & st::IDENTIFIER != 0 {
            if let Some(i) = attrs.index_of(rd(8)) {
                attr = &attrs.entries()[i].attr;
            }
        }
        let t = attr.sample_type;
        if t & st::TIME == 0 {
            return 0;
        }
        let off = 8 + 8
            * ((t & st::IDENTIFIER != 0) as usize
                + (t & st::IP != 0) as usize
                + (t & st::TID != 0) as usize);
        return rd(off);
    }
    let attr = crate::record::trailer_attr(raw, first, attrs);
    let n = attr.id_trailer_size();
    if n == 0 || attr.sample_type & st::TIME == 0 || raw.len() < 8 + n {
        return 0;
    }
    let tid = if attr.sample_type & st::TID != 0 {
        8
    } else {
        0
    };
    rd(raw.len() - n + tid)
}

/// Attach the file's name, if it has one, to an error.
fn named(e: Error, path: &Option<PathBuf>) -> Error {
    match path {
        Some(p) => e.with_path(p),
        None => e,
    }
}
