//! Writing perf.data that Linux perf reads without warnings.
//!
//! Layout, as perf writes it: header, the id arrays, the attrs (each with a
//! pointer to its ids), the data section (streamed), then the feature index
//! and bodies. The header is rewritten at the end (and at each
//! [`PerfFileWriter::checkpoint`]) with the data size.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::attr::{AttrEntry, ATTR_SIZE};
use crate::error::{Error, Result};
use crate::features::Features;
use crate::header::{FileHeader, Section, HEADER_SIZE};
use crate::record::{encode_record, Record, SampleId};

/// Writes a perf.data file that perf reads without warnings: records go
/// into the data section as they come, the feature sections and the final
/// header at [`PerfFileWriter::finish`].
pub struct PerfFileWriter<W: Write + Seek> {
    out: BufWriter<W>,
    path: Option<PathBuf>,
    attrs: Vec<AttrEntry>,
    header: FileHeader,
    data_size: u64,
    scratch: Vec<u8>,
    zstd: Option<Zstd>,
}

/// How much plain data one COMPRESSED record may stand for. perf 6.1
/// decompresses each record into a buffer of the COMPRESSED feature's
/// `mmap_len` (plus what the last one left over) and has no way to grow it,
/// so the stream is flushed every PIECE bytes and `mmap_len` is at least
/// this.
const PIECE: usize = 32 * 1024;
/// A record's size is a u16 and includes its 8-byte header.
const MAX_PAYLOAD: usize = u16::MAX as usize - 8;

/// `perf record -z`: one zstd stream across the data section, cut into
/// COMPRESSED records (type 81), as perf writes it.
struct Zstd {
    enc: zstd::stream::raw::Encoder<'static>,
    /// Plain records not compressed yet.
    pending: Vec<u8>,
    buf: Vec<u8>,
    level: u32,
    mmap_len: u32,
    plain: u64,
    packed: u64,
}

impl PerfFileWriter<File> {
    /// Create (or truncate) `path`, mode 0600: profiles reveal kernel
    /// addresses and command lines.
    pub fn create(path: &Path, attrs: &[AttrEntry]) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let file = opts.open(path).map_err(io)?;
        // An existing file keeps its old mode through O_TRUNC.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(io)?;
        }
        let mut w = Self::new(file, attrs)?;
        w.path = Some(path.to_path_buf());
        Ok(w)
    }
}

impl<W: Write + Seek> PerfFileWriter<W> {
    /// Start a file on any seekable writer. `attrs` must be non-empty; every
    /// attr must have the same `sample_id_all` trailer layout.
    pub fn new(inner: W, attrs: &[AttrEntry]) -> Result<Self> {
        if attrs.is_empty() {
            return Err(Error::Unsupported {
                path: None,
                what: "a perf.data file needs at least one event attr".into(),
            });
        }
        let mut w = PerfFileWriter {
            out: BufWriter::with_capacity(1 << 20, inner),
            path: None,
            attrs: attrs.to_vec(),
            header: FileHeader::default(),
            data_size: 0,
            scratch: Vec::with_capacity(4096),
            zstd: None,
        };
        let mut pre = vec![0u8; HEADER_SIZE as usize];
        let mut id_sections = Vec::new();
        for a in attrs {
            let off = pre.len() as u64;
            for id in &a.ids {
                pre.extend_from_slice(&id.to_le_bytes());
            }
            id_sections.push(Section {
                offset: off,
                size: a.ids.len() as u64 * 8,
            });
        }
        let attrs_off = pre.len() as u64;
        for (a, ids) in attrs.iter().zip(&id_sections) {
            pre.extend_from_slice(&a.attr.to_bytes());
            ids.put(&mut pre);
        }
        let attr_size = ATTR_SIZE as u64 + 16;
        w.header = FileHeader {
            size: HEADER_SIZE,
            attr_size,
            attrs: Section {
                offset: attrs_off,
                size: attrs.len() as u64 * attr_size,
            },
            data: Section {
                offset: pre.len() as u64,
                size: 0,
            },
            event_types: Section::default(),
            features: [0; 4],
        };
        pre[..HEADER_SIZE as usize].copy_from_slice(&w.header.encode());
        w.out.write_all(&pre).map_err(|e| w.io(e))?;
        Ok(w)
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone().unwrap_or_default(),
            source,
        }
    }

    /// From now on, write records zstd-compressed at `level` (1-22) in
    /// COMPRESSED records, and add the COMPRESSED feature. `mmap_len` is
    /// the recorder's ring size, which perf's reader uses as its
    /// decompression buffer.
    pub fn compress(&mut self, level: u32, mmap_len: u32) -> Result<()> {
        let enc = zstd::stream::raw::Encoder::new(level as i32).map_err(|e| self.io(e))?;
        self.zstd = Some(Zstd {
            enc,
            pending: Vec::with_capacity(2 * PIECE),
            buf: vec![0; MAX_PAYLOAD],
            level,
            mmap_len: mmap_len.max(2 * PIECE as u32),
            plain: 0,
            packed: 0,
        });
        Ok(())
    }

    /// Compress the pending plain bytes: whole pieces, or all with `all`.
    fn pack(&mut self, all: bool) -> Result<()> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let Some(mut z) = self.zstd.take() else {
            return Ok(());
        };
        let mut done = 0;
        let mut result = Ok(());
        while result.is_ok() {
            let left = z.pending.len() - done;
            if left == 0 || (left < PIECE && !all) {
                break;
            }
            let n = left.min(PIECE);
            let mut input = InBuffer::around(&z.pending[done..done + n]);
            // Everything of this piece goes out before the next one starts,
            // so no record stands for more than PIECE plain bytes.
            result = (|| loop {
                let mut ob = OutBuffer::around(&mut z.buf[..]);
                let more = if input.pos() < n {
                    z.enc.run(&mut input, &mut ob)?;
                    1
                } else {
                    z.enc.flush(&mut ob)?
                };
                let k = ob.pos();
                if k > 0 {
                    let mut h = [0u8; 8];
                    h[0..4].copy_from_slice(&crate::record::record_type::COMPRESSED.to_le_bytes());
                    h[6..8].copy_from_slice(&((8 + k) as u16).to_le_bytes());
                    self.out.write_all(&h)?;
                    self.out.write_all(&z.buf[..k])?;
                    self.data_size += 8 + k as u64;
                    z.packed += 8 + k as u64;
                }
                if more == 0 && input.pos() == n {
                    return Ok(());
                }
            })();
            done += n;
            z.plain += n as u64;
        }
        z.pending.drain(..done);
        self.zstd = Some(z);
        result.map_err(|e: std::io::Error| self.io(e))
    }

    /// Append one complete record (header included) verbatim (into the
    /// zstd stream when compressing).
    pub fn write_raw(&mut self, record: &[u8]) -> Result<()> {
        if let Some(z) = &mut self.zstd {
            z.pending.extend_from_slice(record);
            if z.pending.len() >= PIECE {
                return self.pack(false);
            }
            return Ok(());
        }
        self.write_plain(record)
    }

    fn write_plain(&mut self, record: &[u8]) -> Result<()> {
        if let Err(e) = self.out.write_all(record) {
            return Err(self.io(e));
        }
        self.data_size += record.len() as u64;
        Ok(())
    }

    /// Encode and append a record, with the trailer layout of the first attr.
    pub fn write(&mut self, rec: &Record<'_>, misc: u16, sid: &SampleId) -> Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        encode_record(rec, misc, sid, &self.attrs[0].attr, &mut buf);
        if buf.len() > u16::MAX as usize {
            // The header's size is a u16: a longer record cannot be framed.
            let n = buf.len();
            self.scratch = buf;
            return Err(Error::Unsupported {
                path: self.path.clone(),
                what: format!("a {n}-byte record does not fit perf's 64 KiB record size"),
            });
        }
        let r = self.write_raw(&buf);
        self.scratch = buf;
        r
    }

    /// Mark the end of a round: every record written so far may be sorted
    /// against each other by the reader.
    pub fn finished_round(&mut self) -> Result<()> {
        if self.zstd.is_none() {
            return self.write(&Record::FinishedRound, 0, &SampleId::default());
        }
        // As perf -z: the round's records compressed, then the plain mark.
        self.pack(true)?;
        let mut h = [0u8; 8];
        h[0..4].copy_from_slice(&crate::record::record_type::FINISHED_ROUND.to_le_bytes());
        h[6..8].copy_from_slice(&8u16.to_le_bytes());
        self.write_plain(&h)
    }

    /// Bytes of the data section so far, as stored (COMPRESSED records'
    /// bytes when compressing).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// The attrs the file was started with.
    pub fn attrs(&self) -> &[AttrEntry] {
        &self.attrs
    }

    /// Flush, and record the current data size in the header, so that the
    /// file read after a crash or a full disk holds everything up to here.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.pack(true)?;
        self.header.data.size = self.data_size;
        let header = self.header.encode();
        let r = (|| {
            self.out.flush()?;
            let inner = self.out.get_mut();
            let end = inner.stream_position()?;
            inner.seek(SeekFrom::Start(0))?;
            inner.write_all(&header)?;
            inner.seek(SeekFrom::Start(end))?;
            inner.flush()
        })();
        r.map_err(|e| self.io(e))
    }

    /// Write the feature sections and the final header; returns the writer.
    pub fn finish(mut self, features: &Features) -> Result<W> {
        self.pack(true)?;
        self.header.data.size = self.data_size;
        let mut bodies = features.encode(&self.attrs);
        if let Some(z) = &self.zstd {
            // HEADER_COMPRESSED: version, type (1 = zstd), level, ratio,
            // mmap_len; perf needs mmap_len to decompress at all.
            let ratio = z.plain.checked_div(z.packed).unwrap_or(0) as u32;
            let body = [1u32, 1, z.level, ratio, z.mmap_len]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            bodies.retain(|(bit, _)| *bit != crate::features::feature::COMPRESSED);
            bodies.push((crate::features::feature::COMPRESSED, body));
            bodies.sort_by_key(|(bit, _)| *bit);
        }
        let index_off = self.header.data.offset + self.data_size;
        let mut off = index_off + bodies.len() as u64 * 16;
        let mut index = Vec::with_capacity(bodies.len() * 16);
        for (bit, body) in &bodies {
            self.header.features[(*bit / 64) as usize] |= 1 << (bit % 64);
            Section {
                offset: off,
                size: body.len() as u64,
            }
            .put(&mut index);
            off += body.len() as u64;
        }
        let mut tail = index;
        for (_, body) in &bodies {
            tail.extend_from_slice(body);
        }
        if let Err(e) = self.out.write_all(&tail) {
            return Err(self.io(e));
        }
        self.checkpoint()?;
        let path = self.path.clone();
        self.out.into_inner().map_err(|e| Error::Io {
            path: path.unwrap_or_default(),
            source: e.into_error(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::{flags, sample_type, EventAttr};
    use crate::record::Mmap;

    /// A writer into memory for one event with ip, tid and time.
    fn writer() -> PerfFileWriter<std::io::Cursor<Vec<u8>>> {
        let attr = EventAttr {
            sample_type: sample_type::IP | sample_type::TID | sample_type::TIME,
            flags: flags::SAMPLE_ID_ALL,
            ..Default::default()
        };
        let entry = AttrEntry {
            attr,
            ids: vec![1],
            name: "x".into(),
        };
        PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &[entry]).unwrap()
    }

    #[test]
    fn a_record_over_64k_is_refused_not_wrapped() {
        let mut w = writer();
        let long = vec![b'a'; 70_000];
        let rec = Record::Mmap(Mmap {
            pid: 1,
            tid: 1,
            addr: 0,
            len: 0,
            pgoff: 0,
            filename: &long,
        });
        let e = w
            .write(&rec, 0, &SampleId::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("64 KiB"), "{e}");
        assert_eq!(
            w.data_size(),
            0,
            "nothing of the refused record was written"
        );
    }

    /// `-z`: many rounds of records through COMPRESSED records come back
    /// from the reader byte for byte, no record stands for more than the
    /// declared buffer, and the COMPRESSED feature says so.
    #[test]
    fn compressed_data_reads_back_record_for_record() {
        let mut w = writer();
        w.compress(3, 4096).unwrap();
        let mut written = Vec::new();
        for i in 0..5000u64 {
            let name = format!("/lib/x{}.so", i % 97);
            let rec = Record::Mmap(Mmap {
                pid: i as u32,
                tid: i as u32,
                addr: i << 12,
                len: 4096,
                pgoff: 0,
                filename: name.as_bytes(),
            });
            let sid = SampleId {
                time: i,
                ..Default::default()
            };
            w.write(&rec, 0, &sid).unwrap();
            written.push(i << 12);
            if i % 700 == 0 {
                w.finished_round().unwrap();
            }
        }
        let bytes = w.finish(&Features::default()).unwrap().into_inner();
        let f = crate::PerfFile::from_bytes(bytes.clone()).unwrap();
        let c = f.features().compressed.expect("COMPRESSED feature");
        assert_eq!((c.type_, c.level), (1, 3));
        assert!(c.mmap_len as usize >= PIECE);
        let mut got = Vec::new();
        let mut recs = f.records().unwrap();
        while let Some(r) = recs.next().unwrap() {
            if let Record::Mmap(m) = r.record {
                assert!(r.compressed);
                got.push(m.addr);
            }
        }
        assert_eq!(got, written);
        // The file is really smaller: 5000 MMAPs of ~64 bytes each.
        assert!(bytes.len() < 5000 * 64 / 3, "{} bytes", bytes.len());
    }
}
