//! The data section's records in file order, framed but not decoded: for
//! readers that put records in order themselves, or split the section
//! between threads. [`crate::Records`] is the reader that orders and decodes.

use crate::attr::{sample_type as st, EventAttr};
use crate::error::{Error, Result};
use crate::reader::PerfFile;
use crate::record::{
    fixed_sample, parse_record, record_type as rt, sample_attr, Header, Record, Sample, SampleId,
};
use crate::records::record_time;
use crate::round_order::RoundOrder;

/// How many plausible record headers in a row [`PerfFile::record_start_near`]
/// takes for a record boundary, and how far it looks.
const RESYNC_RUN: usize = 64;
const RESYNC_WINDOW: u64 = 1 << 20;

/// Release pages behind the iterator in steps of this many bytes.
const RELEASE_STEP: u64 = 16 << 20;

/// A record found by [`RawRecords`].
#[derive(Debug, Clone, Copy)]
pub struct RawRecord<'a> {
    /// Its type, misc bits and size.
    pub header: Header,
    /// Offset in the file.
    pub offset: u64,
    /// Its time: 0 for a record that carries none, and for every record of
    /// a file whose first event has no time (which [`PerfFile::records`]
    /// delivers in file order).
    pub time: u64,
    /// The record's bytes, header included.
    pub raw: &'a [u8],
}

/// Records in file order, not decoded. COMPRESSED records come as they are:
/// a reader that needs what they hold uses [`PerfFile::records`].
///
/// Pages of a mapped file are released behind the iterator as it goes, and
/// the rest of its range at its end, as [`PerfFile::records`] does, so that
/// a big file does not stay resident;
/// bytes handed out stay valid (they are read again from the page cache).
///
/// Broken framing (a size that cannot be right) is an error, after which
/// the iterator ends, also for an unterminated file, which
/// [`PerfFile::records`] reads up to the damage instead.
pub struct RawRecords<'f> {
    file: &'f PerfFile,
    data: &'f [u8],
    pos: u64,
    end: u64,
    order: RoundOrder,
    /// Whether the first event has TIME, which decides whether the ordered
    /// reader sorts.
    timed: bool,
    /// Pages of the mapping before this are released.
    released: u64,
    /// A header section outside the file: the first item returned.
    broken: Option<Error>,
}

impl<'f> RawRecords<'f> {
    pub(crate) fn new(file: &'f PerfFile, data: &'f [u8], pos: u64, end: u64) -> Self {
        RawRecords {
            file,
            data,
            pos,
            end,
            order: RoundOrder::default(),
            timed: file.attrs.entries()[0].attr.sample_type & st::TIME != 0,
            released: pos,
            broken: file
                .header()
                .check_sections(data)
                .err()
                .map(|e| match file.path() {
                    Some(p) => e.with_path(p),
                    None => e,
                }),
        }
    }

    /// Whether the records read so far, sorted by time with equal times in
    /// file order, are in the order [`PerfFile::records`] delivers them.
    /// That is so unless a record came later than perf's FINISHED_ROUND
    /// rule allows, or a round is too big to be held at once. Records of
    /// perf's own types (FINISHED_INIT, HEADER_ATTR, ...: type 64 and up)
    /// are outside the promise: the ordered reader delivers them as it
    /// meets them. So are COMPRESSED records' contents. (Only meaningful
    /// for an iterator started at the beginning of the data.)
    pub fn time_order_holds(&self) -> bool {
        self.order.holds()
    }

    /// The round-order check of the records read so far, to join with
    /// those of the parts before and after when the data is read in parts
    /// ([`RoundOrder::then`]).
    pub fn round_order(&self) -> &RoundOrder {
        &self.order
    }

    /// Where the next record starts.
    pub fn offset(&self) -> u64 {
        self.pos
    }

    fn error(&mut self, what: String) -> Error {
        let e = Error::parse(self.pos, what);
        self.pos = self.end;
        match self.file.path() {
            Some(p) => e.with_path(p),
            None => e,
        }
    }
}

impl<'f> Iterator for RawRecords<'f> {
    type Item = Result<RawRecord<'f>>;

    // Inlined into readers' loops: LTO left it a call once fixed_sample
    // was inlined there, 4% of a flat report's CPU.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.broken.take() {
            self.pos = self.end;
            return Some(Err(e));
        }
        if self.pos >= self.end {
            if self.released < self.end {
                if let Some(m) = &self.file.map {
                    m.release_range(self.released as usize, self.end as usize);
                }
                self.released = self.end;
            }
            return None;
        }
        let off = self.pos;
        let left = self.end - off;
        let Some(header) = Header::parse(&self.data[off as usize..self.end as usize]) else {
            let e = self.error(format!(
                "{left} bytes at the end of the data section, too few for a record header"
            ));
            return Some(Err(e));
        };
        let size = u64::from(header.size);
        if size < 8 || size > left {
            let e = self.error(format!(
                "record of type {} claims size {size}, {left} bytes left in the data section",
                header.type_
            ));
            return Some(Err(e));
        }
        self.pos += size;
        if off - self.released >= RELEASE_STEP {
            if let Some(m) = &self.file.map {
                self.released = m.release_range(self.released as usize, off as usize) as u64;
            }
        }
        let raw = &self.data[off as usize..(off + size) as usize];
        let time = match header.type_ {
            t if t >= rt::USER_START || !self.timed => 0,
            _ => record_time(&self.file.attrs, raw),
        };
        self.order.see(header.type_, time);
        Some(Ok(RawRecord {
            header,
            offset: off,
            time,
            raw,
        }))
    }
}

impl PerfFile {
    /// The data section's records in file order, not decoded.
    pub fn raw_records(&self) -> RawRecords<'_> {
        let (start, end) = self.data_range();
        RawRecords::new(self, self.all_bytes(), start, end)
    }

    /// The records from `start`, which must be the offset of a record that
    /// [`PerfFile::raw_records`] found, to `end` (or the data's end). For
    /// reading parts of the data section on several threads.
    pub fn raw_records_between(&self, start: u64, end: u64) -> RawRecords<'_> {
        let (first, last) = self.data_range();
        let end = end.clamp(first, last);
        RawRecords::new(self, self.all_bytes(), start.clamp(first, end), end)
    }

    /// Where a record probably starts, at or after `offset`: the first
    /// place, aligned as perf aligns records (8 bytes from the data's
    /// start), from which 64 headers in a row look like record headers, or
    /// fewer that end exactly at the data's end. A guess, for threads that
    /// read parts of the data: confirm it by reading up to it from a known
    /// record. `None` if no place within 1 MB qualifies.
    pub fn record_start_near(&self, offset: u64) -> Option<u64> {
        let (first, end) = self.data_range();
        let data = self.all_bytes();
        let header_at = |at: u64| -> Option<Header> {
            let h = Header::parse(data.get(at as usize..end as usize)?)?;
            let plausible = h.size >= 8
                && h.size % 8 == 0
                && at + u64::from(h.size) <= end
                && (matches!(h.type_, 1..=31) || matches!(h.type_, 64..=95));
            plausible.then_some(h)
        };
        let mut at = offset.max(first);
        at = at.checked_add((8 - (at - first) % 8) % 8)?;
        let stop = end.min(at.saturating_add(RESYNC_WINDOW));
        while at < stop {
            let mut next = at;
            let mut run = 0;
            while run < RESYNC_RUN && next < end {
                match header_at(next) {
                    Some(h) => next += u64::from(h.size),
                    None => break,
                }
                run += 1;
            }
            if run == RESYNC_RUN || next == end {
                return Some(at);
            }
            at += 8;
        }
        None
    }

    /// Decode a SAMPLE record that [`RawRecords`] found, as
    /// [`PerfFile::parse`] decodes it, reading its fixed fields in place
    /// when none of variable size comes before them, and without the
    /// [`Record`] around it: a report visits every sample. Framing and
    /// decoding every sample of an 84 MB file took 36.9 ms this way and
    /// 53.5 ms through `parse` (one core, means of 12 alternating runs).
    pub fn sample<'a>(&self, r: &RawRecord<'a>) -> Result<Sample<'a>> {
        if let Some(s) = self.sample_attr(r).and_then(|a| fixed_sample(r.raw, a)) {
            return Ok(s);
        }
        match self.parse(r)? {
            (_, Record::Sample(s), _) => Ok(s),
            (h, ..) => Err(self.not_a_sample(r.offset, h.type_)),
        }
    }

    /// The attr of a SAMPLE record, if its id names one.
    fn sample_attr(&self, r: &RawRecord<'_>) -> Option<&EventAttr> {
        if r.header.type_ != rt::SAMPLE {
            return None;
        }
        let first = &self.attrs.entries().first()?.attr;
        sample_attr(r.raw, first, &self.attrs, r.offset).ok()
    }

    #[cold]
    fn not_a_sample(&self, offset: u64, type_: u32) -> Error {
        let e = Error::parse(offset, format!("record of type {type_}, not a SAMPLE"));
        match self.path() {
            Some(p) => e.with_path(p),
            None => e,
        }
    }

    /// Decode a record that [`RawRecords`] found.
    pub fn parse<'a>(&self, r: &RawRecord<'a>) -> Result<(Header, Record<'a>, SampleId)> {
        parse_record(r.raw, &self.attrs, r.offset).map_err(|e| match self.path() {
            Some(p) => e.with_path(p),
            None => e,
        })
    }
}
