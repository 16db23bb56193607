//! Opening perf.data: the header, attrs and feature sections. The records
//! themselves are read by [`crate::records::Records`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::attr::{sample_type as st, AttrEntry, EventAttr};
use crate::attrs_index::Attrs;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::features::{feature, Features};
use crate::header::{FileHeader, Section, HEADER_SIZE};
use crate::records::Records;

/// Feature sections larger than this are not read (perf's own are far
/// smaller; a hostile size must not become an allocation).
const MAX_FEATURE_SIZE: u64 = 1 << 30;

/// An open perf.data file.
pub struct PerfFile {
    pub(crate) path: Option<PathBuf>,
    file: Option<File>,
    pub(crate) map: Option<crate::mmap::Map>,
    bytes: Option<std::sync::Arc<[u8]>>,
    len: u64,
    header: FileHeader,
    pub(crate) attrs: Attrs,
    features: Features,
}

impl PerfFile {
    /// Open and read the header, attrs and feature sections.
    pub fn open(path: &Path) -> Result<PerfFile> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // Records are parsed in place from a mapping; an empty file cannot
        // be mapped, and is rejected by the header check below anyway.
        let map = if len > 0 {
            Some(crate::mmap::Map::new(&file).map_err(io)?)
        } else {
            None
        };
        let mut f = PerfFile {
            path: Some(path.to_path_buf()),
            file: Some(file),
            map,
            bytes: None,
            len,
            header: FileHeader::default(),
            attrs: Attrs::default(),
            features: Features::default(),
        };
        f.load().map_err(|e| e.with_path(path))?;
        Ok(f)
    }

    /// Read a file held in memory (for tests and fuzzing).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfFile> {
        let len = bytes.len() as u64;
        let mut f = PerfFile {
            path: None,
            file: None,
            map: None,
            bytes: Some(bytes.into()),
            len,
            header: FileHeader::default(),
            attrs: Attrs::default(),
            features: Features::default(),
        };
        f.load()?;
        Ok(f)
    }

    fn read_at(&self, offset: u64, len: u64, what: &str) -> Result<Vec<u8>> {
        let range = Section { offset, size: len }.range(self.len, offset, what)?;
        if self.map.is_some() || self.bytes.is_some() {
            return Ok(self.all_bytes()[range].to_vec());
        }
        let mut buf = vec![0u8; len as usize];
        let mut f = self.file.as_ref().expect("file or bytes");
        let r = f
            .seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(&mut buf));
        r.map_err(|source| Error::Io {
            path: self.path.clone().unwrap_or_default(),
            source,
        })?;
        Ok(buf)
    }

    fn load(&mut self) -> Result<()> {
        let head = self.read_at(0, HEADER_SIZE.min(self.len), "header")?;
        self.header = FileHeader::parse(&head)?;
        if head.len() < HEADER_SIZE as usize {
            return Err(Error::parse(
                self.len,
                "file ends inside the 104-byte header",
            ));
        }
        let h = self.header;
        if h.attr_size < 64 + 16 || h.attr_size > 4096 {
            return Err(Error::parse(
                16,
                format!(
                    "attr_size {} is not a perf_event_attr plus ids section",
                    h.attr_size
                ),
            ));
        }
        let attrs_raw = self.read_at(h.attrs.offset, h.attrs.size, "attrs")?;
        let n = attrs_raw.len() as u64 / h.attr_size;
        let mut entries = Vec::with_capacity(n as usize);
        let mut ids_total = 0u64;
        for i in 0..n {
            let at = h.attrs.offset + i * h.attr_size;
            let chunk = &attrs_raw[(i * h.attr_size) as usize..((i + 1) * h.attr_size) as usize];
            let attr_bytes = &chunk[..(h.attr_size - 16) as usize];
            let size = u32::from_le_bytes(attr_bytes[4..8].try_into().unwrap()) as usize;
            let attr = EventAttr::parse(&attr_bytes[..size.clamp(64, attr_bytes.len())], at)?;
            let mut c = Cursor::new(&chunk[(h.attr_size - 16) as usize..], at + h.attr_size - 16);
            let ids_sec = Section::read(&mut c, "attr ids section")?;
            // Sections may overlap; their sum must not multiply the file.
            ids_total = ids_total.saturating_add(ids_sec.size);
            if ids_total > self.len {
                return Err(Error::parse(
                    at + h.attr_size - 16,
                    format!(
                        "attr ids sections add up to {ids_total} bytes, more than the {}-byte file",
                        self.len
                    ),
                ));
            }
            let ids_raw = self.read_at(ids_sec.offset, ids_sec.size, "attr ids")?;
            let ids = ids_raw
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            entries.push(AttrEntry {
                name: attr.default_name(),
                attr,
                ids,
            });
        }
        if entries.is_empty() {
            return Err(Error::parse(24, "the file lists no event attrs"));
        }
        // Records name their event by its id at a place all events agree
        // on; with IDENTIFIER (the last word of a trailer) the layouts
        // around it may differ, as perf allows.
        let trailer = entries[0].attr.id_trailer_size();
        let identified = entries
            .iter()
            .all(|e| e.attr.sample_type & st::IDENTIFIER != 0);
        if !identified && entries.iter().any(|e| e.attr.id_trailer_size() != trailer) {
            return Err(Error::Unsupported {
                path: None,
                what: "events with different sample_id layouts in one file".into(),
            });
        }
        self.read_features()?;
        for (e, d) in entries.iter_mut().zip(&self.features.event_desc) {
            if !d.name.is_empty() {
                e.name = d.name.clone();
            }
        }
        self.attrs = Attrs::new(entries);
        Ok(())
    }

    fn read_features(&mut self) -> Result<()> {
        let bits: Vec<u32> = self.header.feature_bits().collect();
        if bits.is_empty() {
            return Ok(());
        }
        let index_off = self
            .header
            .data
            .offset
            .saturating_add(self.header.data.size);
        let index = match self.read_at(index_off, bits.len() as u64 * 16, "feature index") {
            Ok(i) => i,
            Err(e) => {
                self.features
                    .warnings
                    .push(format!("feature sections unreadable: {e}"));
                return Ok(());
            }
        };
        let mut c = Cursor::new(&index, index_off);
        let mut features = std::mem::take(&mut self.features);
        for bit in bits {
            let at = c.offset();
            let sec = Section::read(&mut c, "feature index")?;
            let r = if sec.size > MAX_FEATURE_SIZE {
                Err(Error::parse(
                    at,
                    format!("feature {bit} claims {} bytes", sec.size),
                ))
            } else {
                self.read_at(sec.offset, sec.size, "feature")
                    .and_then(|body| features.decode(bit, &body, sec.offset))
            };
            if let Err(e) = r {
                features.warnings.push(format!(
                    "feature section {} skipped: {e}",
                    feature_name(bit)
                ));
            }
        }
        self.features = features;
        Ok(())
    }

    /// The file's path, if it was opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 104-byte header: where the sections are.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Attrs with their ids and names (from EVENT_DESC when present).
    pub fn attrs(&self) -> &[AttrEntry] {
        self.attrs.entries()
    }

    /// The attr index of an event id (the IDENTIFIER of a record).
    pub fn attr_index(&self, id: u64) -> Option<usize> {
        self.attrs.index_of(id)
    }

    /// The feature sections decoded at open; the ones that would not
    /// decode are in [`Features::warnings`].
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The undecoded body of feature section `bit`, for a section this
    /// crate does not decode (listed in [`Features::other`]). `None` when
    /// the section is absent, or its index entry is unreadable or points
    /// outside the file.
    pub fn feature_body(&self, bit: u32) -> Option<Vec<u8>> {
        if !self.header.has_feature(bit) {
            return None;
        }
        let h = &self.header;
        let nth = h.feature_bits().take_while(|&b| b < bit).count() as u64;
        let at = h
            .data
            .offset
            .checked_add(h.data.size)?
            .checked_add(nth * 16)?;
        let entry = self.read_at(at, 16, "feature index").ok()?;
        let sec = Section::read(&mut Cursor::new(&entry, at), "feature index").ok()?;
        if sec.size > MAX_FEATURE_SIZE {
            return None;
        }
        self.read_at(sec.offset, sec.size, "feature").ok()
    }

    /// Size in bytes of the data section (records, possibly compressed).
    pub fn data_size(&self) -> u64 {
        self.data_range().1 - self.data_range().0
    }

    pub(crate) fn data_range(&self) -> (u64, u64) {
        let d = self.header.data;
        // A size of 0 means the writer never finished: read to the end.
        let end = if d.size == 0 {
            self.len
        } else {
            d.offset.saturating_add(d.size).min(self.len)
        };
        (d.offset.min(end), end)
    }

    /// Records in time order, as perf delivers them.
    pub fn records(&self) -> Result<Records<'_>> {
        self.records_with(true)
    }

    /// Records in file order (`perf report -D` order).
    pub fn records_in_file_order(&self) -> Result<Records<'_>> {
        self.records_with(false)
    }

    /// The whole file's bytes: mapped, or held in memory.
    pub(crate) fn all_bytes(&self) -> &[u8] {
        match (&self.map, &self.bytes) {
            (Some(m), _) => m.bytes(),
            (None, Some(b)) => b,
            (None, None) => &[],
        }
    }

    fn records_with(&self, sorted: bool) -> Result<Records<'_>> {
        let (start, end) = self.data_range();
        let first = self.attrs.entries()[0].attr;
        Ok(Records::new(
            self,
            self.all_bytes(),
            (start, end),
            self.header.data.size == 0,
            sorted && first.sample_type & st::TIME != 0,
        ))
    }
}

fn feature_name(bit: u32) -> String {
    match bit {
        feature::BUILD_ID => "BUILD_ID".into(),
        feature::EVENT_DESC => "EVENT_DESC".into(),
        feature::BPF_PROG_INFO => "BPF_PROG_INFO".into(),
        feature::BPF_BTF => "BPF_BTF".into(),
        feature::CMDLINE => "CMDLINE".into(),
        b => format!("#{b}"),
    }
}
