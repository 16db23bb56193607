//! The 104-byte file header and its section pointers.

use crate::cursor::Cursor;
use crate::error::{Error, Result};

pub const MAGIC: &[u8; 8] = b"PERFILE2";
pub const HEADER_SIZE: u64 = 104;

/// `struct perf_file_section`: where a part of the file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Section {
    /// Where it starts, in bytes from the start of the file.
    pub offset: u64,
    /// How many bytes it has.
    pub size: u64,
}

impl Section {
    pub(crate) fn read(c: &mut Cursor<'_>, what: &str) -> Result<Section> {
        Ok(Section {
            offset: c.u64(what)?,
            size: c.u64(what)?,
        })
    }

    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
    }

    /// The section's range, checked against the file length.
    pub(crate) fn range(
        &self,
        file_len: u64,
        at: u64,
        what: &str,
    ) -> Result<std::ops::Range<usize>> {
        match self.offset.checked_add(self.size) {
            Some(end) if end <= file_len => Ok(self.offset as usize..end as usize),
            _ => Err(Error::parse(
                at,
                format!(
                    "{what} section [{:#x}, +{:#x}) lies outside the {file_len}-byte file",
                    self.offset, self.size
                ),
            )),
        }
    }
}

/// `struct perf_file_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileHeader {
    /// The header's own size (104).
    pub size: u64,
    /// Bytes per entry of the attrs section: an attr and its ids' section.
    pub attr_size: u64,
    /// The event attrs.
    pub attrs: Section,
    /// The records.
    pub data: Section,
    /// Left over from old perf, which no longer reads it; kept as read.
    pub event_types: Section,
    /// The bitmap of feature sections present, bits from [`crate::feature`].
    pub features: [u64; 4],
}

impl FileHeader {
    pub(crate) fn parse(bytes: &[u8]) -> Result<FileHeader> {
        let magic = bytes.get(..8).unwrap_or(bytes);
        if magic == b"2ELIFREP" {
            return Err(Error::Unsupported {
                path: None,
                what: "big-endian perf.data (recorded on another byte order) is not supported"
                    .into(),
            });
        }
        if magic != MAGIC {
            return Err(Error::NotPerfData {
                path: None,
                magic: magic.to_vec(),
            });
        }
        let mut c = Cursor::new(bytes, 0);
        c.skip(8, "magic")?;
        let size = c.u64("header.size")?;
        if size == 16 {
            return Err(Error::Unsupported {
                path: None,
                what: "pipe-mode perf.data (perf record -o -) is not supported; record to a file"
                    .into(),
            });
        }
        if size < HEADER_SIZE {
            return Err(Error::parse(
                8,
                format!("header size {size}, expected {HEADER_SIZE}"),
            ));
        }
        let h = FileHeader {
            size,
            attr_size: c.u64("header.attr_size")?,
            attrs: Section::read(&mut c, "header.attrs")?,
            data: Section::read(&mut c, "header.data")?,
            event_types: Section::read(&mut c, "header.event_types")?,
            features: [
                c.u64("header.features")?,
                c.u64("header.features")?,
                c.u64("header.features")?,
                c.u64("header.features")?,
            ],
        };
        Ok(h)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_SIZE as usize);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&HEADER_SIZE.to_le_bytes());
        out.extend_from_slice(&self.attr_size.to_le_bytes());
        self.attrs.put(&mut out);
        self.data.put(&mut out);
        self.event_types.put(&mut out);
        for f in self.features {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out
    }

    /// The data section, the feature index after it and every feature
    /// section lie inside `file` (the whole file's bytes).
    ///
    /// Why an error and not a warning: a data section past the end read as
    /// an empty one, and the report said "no samples" with exit 0 for a
    /// file whose header had four bytes changed. A recording that never
    /// finished (data size 0, the crash or SIGKILL case) is read to the
    /// end of the file and has no feature index to check.
    pub fn check_sections(&self, file: &[u8]) -> Result<()> {
        let len = file.len() as u64;
        let d = self.data;
        let end = d.offset.checked_add(d.size).filter(|&e| e <= len);
        let Some(end) = end.filter(|_| d.offset >= HEADER_SIZE) else {
            return Err(Error::parse(
                40,
                format!(
                    "data section [{:#x}, +{:#x}) lies outside the {len}-byte file (the header is damaged, or the file was cut short)",
                    d.offset, d.size
                ),
            ));
        };
        let bits: Vec<u32> = self.feature_bits().collect();
        if d.size == 0 || bits.is_empty() {
            return Ok(());
        }
        let index = Section {
            offset: end,
            size: bits.len() as u64 * 16,
        };
        let range = index.range(len, end, "feature index")?;
        let mut c = Cursor::new(&file[range], end);
        for bit in bits {
            let at = c.offset();
            let sec = Section::read(&mut c, "feature index")?;
            sec.range(len, at, &format!("feature {}", feature_name(bit)))?;
        }
        Ok(())
    }

    /// Whether feature section `bit` (from [`crate::feature`]) is present.
    pub fn has_feature(&self, bit: u32) -> bool {
        bit < 256 && self.features[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    /// Set feature bits in ascending order.
    pub fn feature_bits(&self) -> impl Iterator<Item = u32> + '_ {
        (0..256).filter(|&b| self.has_feature(b))
    }
}

/// A feature bit as perf's headers name it (HEADER_*), for messages.
pub(crate) fn feature_name(bit: u32) -> String {
    use crate::features::feature as f;
    let name = match bit {
        f::TRACING_DATA => "TRACING_DATA",
        f::BUILD_ID => "BUILD_ID",
        f::HOSTNAME => "HOSTNAME",
        f::OSRELEASE => "OSRELEASE",
        f::VERSION => "VERSION",
        f::ARCH => "ARCH",
        f::NRCPUS => "NRCPUS",
        f::CPUDESC => "CPUDESC",
        f::CPUID => "CPUID",
        f::TOTAL_MEM => "TOTAL_MEM",
        f::CMDLINE => "CMDLINE",
        f::EVENT_DESC => "EVENT_DESC",
        f::SAMPLE_TIME => "SAMPLE_TIME",
        f::BPF_PROG_INFO => "BPF_PROG_INFO",
        f::BPF_BTF => "BPF_BTF",
        f::COMPRESSED => "COMPRESSED",
        _ => return format!("#{bit}"),
    };
    name.into()
}
