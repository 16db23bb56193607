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

pub struct PerfFileWriter<W: Write + Seek> {
    out: BufWriter<W>,
    path: Option<PathBuf>,
    attrs: Vec<AttrEntry>,
    header: FileHeader,
    data_size: u64,
    scratch: Vec<u8>,
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

    /// Append one complete record (header included) verbatim.
    pub fn write_raw(&mut self, record: &[u8]) -> Result<()> {
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
        self.write(&Record::FinishedRound, 0, &SampleId::default())
    }

    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    pub fn attrs(&self) -> &[AttrEntry] {
        &self.attrs
    }

    /// Flush, and record the current data size in the header, so that the
    /// file read after a crash or a full disk holds everything up to here.
    pub fn checkpoint(&mut self) -> Result<()> {
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
        self.header.data.size = self.data_size;
        let bodies = features.encode(&self.attrs);
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

    #[test]
    fn a_record_over_64k_is_refused_not_wrapped() {
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
        let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &[entry]).unwrap();
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
}
