//! A reader for raw BTF blobs (`struct btf_header` + types + strings), as the
//! kernel returns them for a program's `btf_id` and as perf stores them in
//! HEADER_BPF_BTF.
//!
//! Only what profiling needs: the string section (line_info points into it),
//! type names, FUNC names and bpftool-style function signatures. Every offset
//! and length is checked; a corrupt blob gives a [`BtfError`] naming the byte
//! offset, never a panic. Split BTF (module BTF on top of vmlinux) is not
//! supported.

mod builder;
mod signature;

pub use builder::BtfBuilder;

use std::ops::Range;

/// The BTF header magic (`BTF_MAGIC`).
pub const MAGIC: u16 = 0xeb9f;
/// Size of `struct btf_header` for version 1.
pub const HEADER_LEN: usize = 24;
/// Size of `struct btf_type` before its kind-specific data.
const TYPE_LEN: usize = 12;

/// Why a BTF blob could not be read. Offsets are bytes from the start of the
/// blob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// The blob cannot hold a header.
    #[error("BTF blob of {len} bytes is shorter than the {HEADER_LEN}-byte header")]
    TooShort {
        /// Length of the blob.
        len: usize,
    },
    /// Wrong magic at offset 0 (or a blob of the other byte order).
    #[error("BTF magic at offset 0 is {found:#06x}, expected 0xeb9f")]
    Magic {
        /// What was found.
        found: u16,
    },
    /// A version other than 1 at offset 2.
    #[error("BTF version at offset 2 is {0}, only version 1 is known")]
    Version(u8),
    /// `hdr_len` at offset 4 is smaller than 24 or past the end.
    #[error("BTF hdr_len at offset 4 is {hdr_len}, blob is {len} bytes")]
    HeaderLen {
        /// The header length read.
        hdr_len: u32,
        /// Length of the blob.
        len: usize,
    },
    /// The type or string section does not fit in the blob.
    #[error(
        "BTF {what} section at offset {start:#x} of {size} bytes runs past the blob end {len:#x}"
    )]
    Section {
        /// `"type"` or `"string"`.
        what: &'static str,
        /// Absolute start offset.
        start: u64,
        /// Section length.
        size: u32,
        /// Length of the blob.
        len: usize,
    },
    /// A type record is malformed.
    #[error("BTF type {id} at offset {offset:#x}: {what}")]
    Type {
        /// The type id being read.
        id: u32,
        /// Absolute offset of its `struct btf_type`.
        offset: usize,
        /// What is wrong.
        what: String,
    },
}

/// `BTF_KIND_*`: what a type record describes.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int = 1,
    Ptr = 2,
    Array = 3,
    Struct = 4,
    Union = 5,
    Enum = 6,
    Fwd = 7,
    Typedef = 8,
    Volatile = 9,
    Const = 10,
    Restrict = 11,
    Func = 12,
    FuncProto = 13,
    Var = 14,
    Datasec = 15,
    Float = 16,
    DeclTag = 17,
    TypeTag = 18,
    Enum64 = 19,
}

impl Kind {
    fn from_raw(k: u32) -> Option<Kind> {
        use Kind::*;
        Some(match k {
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// Bytes of kind-specific data after `struct btf_type`, for `vlen`
    /// members (include/uapi/linux/btf.h).
    fn extra_len(self, vlen: u32) -> u64 {
        let vlen = u64::from(vlen);
        match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 4,
            Kind::Array => 12,
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => 12 * vlen,
            Kind::Enum | Kind::FuncProto => 8 * vlen,
            Kind::Ptr
            | Kind::Fwd
            | Kind::Typedef
            | Kind::Volatile
            | Kind::Const
            | Kind::Restrict
            | Kind::Func
            | Kind::Float
            | Kind::TypeTag => 0,
        }
    }
}

/// One type record, borrowed from a [`Btf`].
#[derive(Debug, Clone, Copy)]
pub struct BtfType<'a> {
    /// Its type id (1-based; 0 is `void`).
    pub id: u32,
    /// Its kind.
    pub kind: Kind,
    /// Offset of its name in the string section (0: anonymous).
    pub name_off: u32,
    /// Member/parameter count; for FUNC, the linkage (0 static, 1 global).
    pub vlen: u16,
    /// `kind_flag` (bit 31 of `info`).
    pub kind_flag: bool,
    /// `size` for sized kinds, the referenced type id for the others.
    pub size_or_type: u32,
    extra: &'a [u8],
}

impl<'a> BtfType<'a> {
    /// FUNC_PROTO parameters as `(name_off, type_id)`; empty for other kinds.
    pub fn params(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let chunks = if self.kind == Kind::FuncProto {
            self.extra.chunks_exact(8)
        } else {
            [].chunks_exact(8)
        };
        chunks.map(|c| (le32(c, 0), le32(c, 4)))
    }

    /// ARRAY as `(elem_type, index_type, nelems)`.
    pub fn array(&self) -> Option<(u32, u32, u32)> {
        (self.kind == Kind::Array && self.extra.len() >= 12).then(|| {
            (
                le32(self.extra, 0),
                le32(self.extra, 4),
                le32(self.extra, 8),
            )
        })
    }

    /// VAR linkage (0 static, 1 global).
    pub fn var_linkage(&self) -> Option<u32> {
        (self.kind == Kind::Var && self.extra.len() >= 4).then(|| le32(self.extra, 0))
    }
}

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// A parsed BTF blob. Owns a copy of the bytes.
#[derive(Debug, Clone)]
pub struct Btf {
    data: Vec<u8>,
    strs: Range<usize>,
    /// Absolute offset of each type record; index 0 is type id 1.
    types: Vec<usize>,
}

impl Btf {
    /// Parse and check a raw blob (little-endian, as on x86-64 and arm64).
    pub fn parse(blob: &[u8]) -> Result<Btf, BtfError> {
        let len = blob.len();
        if len < HEADER_LEN {
            return Err(BtfError::TooShort { len });
        }
        let magic = u16::from_le_bytes([blob[0], blob[1]]);
        if magic != MAGIC {
            return Err(BtfError::Magic { found: magic });
        }
        if blob[2] != 1 {
            return Err(BtfError::Version(blob[2]));
        }
        let hdr_len = le32(blob, 4);
        if (hdr_len as usize) < HEADER_LEN || hdr_len as usize > len {
            return Err(BtfError::HeaderLen { hdr_len, len });
        }
        let section = |what, off_at: usize| -> Result<Range<usize>, BtfError> {
            let off = le32(blob, off_at);
            let size = le32(blob, off_at + 4);
            let start = u64::from(hdr_len) + u64::from(off);
            let end = start + u64::from(size);
            if end > len as u64 {
                return Err(BtfError::Section {
                    what,
                    start,
                    size,
                    len,
                });
            }
            Ok(start as usize..end as usize)
        };
        let type_sec = section("type", 8)?;
        let strs = section("string", 16)?;

        let mut types = Vec::new();
        let mut at = type_sec.start;
        while at < type_sec.end {
            let id = types.len() as u32 + 1;
            if type_sec.end - at < TYPE_LEN {
                return Err(BtfError::Type {
                    id,
                    offset: at,
                    what: format!(
                        "record needs {TYPE_LEN} bytes, {} left in the type section",
                        type_sec.end - at
                    ),
                });
            }
            let info = le32(blob, at + 4);
            let raw_kind = (info >> 24) & 0x1f;
            let kind = Kind::from_raw(raw_kind).ok_or_else(|| BtfError::Type {
                id,
                offset: at,
                what: format!("unknown kind {raw_kind}"),
            })?;
            let extra = kind.extra_len(info & 0xffff);
            let end = (at + TYPE_LEN) as u64 + extra;
            if end > type_sec.end as u64 {
                return Err(BtfError::Type {
                    id,
                    offset: at,
                    what: format!(
                        "{kind:?} with vlen {} needs {extra} more bytes, past the type section end {:#x}",
                        info & 0xffff,
                        type_sec.end
                    ),
                });
            }
            types.push(at);
            at = end as usize;
        }
        Ok(Btf {
            data: blob.to_vec(),
            strs,
            types,
        })
    }

    /// The raw blob.
    pub fn raw(&self) -> &[u8] {
        &self.data
    }

    /// Number of types (the highest valid type id).
    pub fn type_count(&self) -> u32 {
        self.types.len() as u32
    }

    /// The NUL-terminated string at `offset` in the string section, if the
    /// offset is inside it, the string is terminated and valid UTF-8.
    pub fn str_at(&self, offset: u32) -> Option<&str> {
        let strs = &self.data[self.strs.clone()];
        let tail = strs.get(offset as usize..)?;
        let nul = tail.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&tail[..nul]).ok()
    }

    /// Type `id` (1..=[`type_count`](Self::type_count)); `None` for 0 (void)
    /// and ids out of range.
    pub fn type_by_id(&self, id: u32) -> Option<BtfType<'_>> {
        let at = *self.types.get((id as usize).checked_sub(1)?)?;
        let b = &self.data;
        let info = le32(b, at + 4);
        let kind = Kind::from_raw((info >> 24) & 0x1f)?;
        let vlen = (info & 0xffff) as u16;
        let extra_start = at + TYPE_LEN;
        let extra = &b[extra_start..extra_start + kind.extra_len(u32::from(vlen)) as usize];
        Some(BtfType {
            id,
            kind,
            name_off: le32(b, at),
            vlen,
            kind_flag: info >> 31 != 0,
            size_or_type: le32(b, at + 8),
            extra,
        })
    }

    /// The name of type `id` (empty for anonymous types).
    pub fn type_name(&self, id: u32) -> Option<&str> {
        self.str_at(self.type_by_id(id)?.name_off)
    }

    /// The name of FUNC type `id`; `None` if `id` is not a FUNC.
    pub fn func_name(&self, id: u32) -> Option<&str> {
        let t = self.type_by_id(id)?;
        (t.kind == Kind::Func).then(|| self.str_at(t.name_off))?
    }

    /// A C-like signature of FUNC (or other) type `id` as `bpftool prog dump
    /// xlated` prints it before a function, e.g. `int work(int n)`. `None`
    /// where bpftool prints nothing (unknown kinds, cycles, over 1023 bytes).
    pub fn func_signature(&self, id: u32) -> Option<String> {
        signature::type_only(self, id)
    }
}
