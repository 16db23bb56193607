//! `struct perf_bpil` (libbpf's old `bpf_prog_info_linear`): one BPF
//! program's `bpf_prog_info` plus its variable-length arrays, as stored in
//! the HEADER_BPF_PROG_INFO feature section.
//!
//! [`BpfProgInfo`] is also the in-memory form of a live program's info, so
//! report and annotate do not care whether a program came from the kernel or
//! from a file.

use crate::cursor::{align8, c_str, Cursor};
use crate::error::{Error, Result};

/// `sizeof(struct bpf_prog_info)` as of Linux 6.x, and what we write as
/// `info_len`. perf rejects entries whose `info_len` exceeds its own struct.
pub const BPF_PROG_INFO_SIZE: usize = 232;

/// Bits of `perf_bpil.arrays`, in the order the arrays are packed: perf's
/// `PERF_BPIL_<NAME>` (tools/perf/util/bpf-utils.h), each the array of
/// `bpf_prog_info` of that name; `COUNT` is how many there are.
#[allow(missing_docs)]
pub mod array {
    pub const JITED_INSNS: u32 = 0;
    pub const XLATED_INSNS: u32 = 1;
    pub const MAP_IDS: u32 = 2;
    pub const JITED_KSYMS: u32 = 3;
    pub const JITED_FUNC_LENS: u32 = 4;
    pub const FUNC_INFO: u32 = 5;
    pub const LINE_INFO: u32 = 6;
    pub const JITED_LINE_INFO: u32 = 7;
    pub const PROG_TAGS: u32 = 8;
    pub const COUNT: u32 = 9;
}

/// Bytes after a program's arrays that start a bpfprof tail, with their
/// offset in the file.
pub(crate) type Tail<'a> = (&'a [u8], u64);

/// `struct bpf_func_info`: where a sub-program starts and its BTF FUNC type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FuncInfo {
    /// Index of the first xlated instruction of the function.
    pub insn_off: u32,
    /// The BTF FUNC type, which names the function.
    pub type_id: u32,
}

/// `struct bpf_line_info`: an xlated instruction index mapped to a source
/// line. Both offsets index the BTF string section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineInfo {
    /// Index of the first xlated instruction of the line.
    pub insn_off: u32,
    /// The source file's name.
    pub file_name_off: u32,
    /// The source line's text.
    pub line_off: u32,
    /// Line number and column packed (see [`LineInfo::line`]).
    pub line_col: u32,
}

impl LineInfo {
    /// The line number (the upper 22 bits of `line_col`).
    pub fn line(&self) -> u32 {
        self.line_col >> 10
    }
    /// The column (the lower 10 bits of `line_col`).
    pub fn column(&self) -> u32 {
        self.line_col & 0x3ff
    }
}

/// One program's `bpf_prog_info` with its arrays decoded.
///
/// Arrays that were not captured are empty and their bit in `arrays` is
/// clear; the scalar counts (`jited_prog_len`, ...) still say what the kernel
/// reported, so trust `arrays`, not the counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BpfProgInfo {
    /// `enum bpf_prog_type` (bpfinfo names it).
    pub prog_type: u32,
    /// The program's id, unique while it is loaded.
    pub id: u32,
    /// Hash of the bytecode: the `<tag>` in `bpf_prog_<tag>_<name>`.
    pub tag: [u8; 8],
    /// Bytes of JIT code the kernel reported.
    pub jited_prog_len: u32,
    /// Bytes of xlated bytecode the kernel reported.
    pub xlated_prog_len: u32,
    /// Nanoseconds since boot at load.
    pub load_time: u64,
    /// The uid that loaded it.
    pub created_by_uid: u32,
    /// How many maps it uses.
    pub nr_map_ids: u32,
    /// `bpf_prog_info.name` (16 bytes, NUL-padded), as text.
    pub name: String,
    /// The device it is offloaded to, or zero.
    pub ifindex: u32,
    /// Whether it declared a GPL-compatible licence (gpl-only helpers).
    pub gpl_compatible: bool,
    /// With `netns_ino`, the network namespace of an offloaded program.
    pub netns_dev: u64,
    /// The network namespace's inode, of an offloaded program.
    pub netns_ino: u64,
    /// How many sub-program addresses the kernel reported.
    pub nr_jited_ksyms: u32,
    /// How many sub-program lengths the kernel reported.
    pub nr_jited_func_lens: u32,
    /// The program's BTF object, or zero without BTF.
    pub btf_id: u32,
    /// Bytes per `func_info` record in the kernel's array.
    pub func_info_rec_size: u32,
    /// How many `func_info` records the kernel reported.
    pub nr_func_info: u32,
    /// How many `line_info` records the kernel reported.
    pub nr_line_info: u32,
    /// How many JIT line addresses the kernel reported.
    pub nr_jited_line_info: u32,
    /// Bytes per `line_info` record in the kernel's array.
    pub line_info_rec_size: u32,
    /// Bytes per JIT line address in the kernel's array.
    pub jited_line_info_rec_size: u32,
    /// How many sub-program tags the kernel reported.
    pub nr_prog_tags: u32,
    /// Time spent in the program, when `kernel.bpf_stats_enabled` is on.
    pub run_time_ns: u64,
    /// Runs of the program, when `kernel.bpf_stats_enabled` is on.
    pub run_cnt: u64,
    /// Runs skipped because the program was already running on the CPU.
    pub recursion_misses: u64,
    /// Instructions the verifier processed.
    pub verified_insns: u32,
    /// The BTF object of what a tracing program attaches to.
    pub attach_btf_obj_id: u32,
    /// The BTF type (function) a tracing program attaches to.
    pub attach_btf_id: u32,

    /// Bitmask of the arrays present, bits from [`mod@array`].
    pub arrays: u64,
    /// The JIT image, all sub-programs one after another.
    pub jited_insns: Vec<u8>,
    /// The bytecode after the verifier's rewrites, 8 bytes an instruction.
    pub xlated_insns: Vec<u8>,
    /// The ids of the maps it uses.
    pub map_ids: Vec<u32>,
    /// Each sub-program's kernel address, the main program first.
    pub jited_ksyms: Vec<u64>,
    /// Each sub-program's JIT length, in `jited_ksyms`' order.
    pub jited_func_lens: Vec<u32>,
    /// Where each sub-program starts in the bytecode, with its BTF type.
    pub func_info: Vec<FuncInfo>,
    /// Source lines of the bytecode.
    pub line_info: Vec<LineInfo>,
    /// The JIT address of each `line_info` record, in the same order.
    pub jited_line_info: Vec<u64>,
    /// Each sub-program's tag, in `jited_ksyms`' order.
    pub prog_tags: Vec<[u8; 8]>,
}

// Offsets inside struct bpf_prog_info (include/uapi/linux/bpf.h).
const OFF_JITED_PROG_INSNS: usize = 24;
const OFF_XLATED_PROG_INSNS: usize = 32;
const OFF_MAP_IDS: usize = 56;
const OFF_JITED_KSYMS: usize = 112;
const OFF_JITED_FUNC_LENS: usize = 120;
const OFF_FUNC_INFO: usize = 136;
const OFF_LINE_INFO: usize = 152;
const OFF_JITED_LINE_INFO: usize = 160;
const OFF_PROG_TAGS: usize = 184;

fn rd32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn wr32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn wr64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

impl BpfProgInfo {
    /// Decode the scalar fields of a raw `struct bpf_prog_info` as the kernel
    /// returns it from BPF_OBJ_GET_INFO_BY_FD. A shorter struct (older
    /// kernel or writer) is zero-extended; a longer one is truncated. Arrays
    /// are left empty.
    pub fn from_info_struct(raw: &[u8]) -> BpfProgInfo {
        let mut b = [0u8; BPF_PROG_INFO_SIZE];
        let n = raw.len().min(BPF_PROG_INFO_SIZE);
        b[..n].copy_from_slice(&raw[..n]);
        BpfProgInfo {
            prog_type: rd32(&b, 0),
            id: rd32(&b, 4),
            tag: b[8..16].try_into().unwrap(),
            jited_prog_len: rd32(&b, 16),
            xlated_prog_len: rd32(&b, 20),
            load_time: rd64(&b, 40),
            created_by_uid: rd32(&b, 48),
            nr_map_ids: rd32(&b, 52),
            name: String::from_utf8_lossy(c_str(&b[64..80])).into_owned(),
            ifindex: rd32(&b, 80),
            gpl_compatible: b[84] & 1 != 0,
            netns_dev: rd64(&b, 88),
            netns_ino: rd64(&b, 96),
            nr_jited_ksyms: rd32(&b, 104),
            nr_jited_func_lens: rd32(&b, 108),
            btf_id: rd32(&b, 128),
            func_info_rec_size: rd32(&b, 132),
            nr_func_info: rd32(&b, 144),
            nr_line_info: rd32(&b, 148),
            nr_jited_line_info: rd32(&b, 168),
            line_info_rec_size: rd32(&b, 172),
            jited_line_info_rec_size: rd32(&b, 176),
            nr_prog_tags: rd32(&b, 180),
            run_time_ns: rd64(&b, 192),
            run_cnt: rd64(&b, 200),
            recursion_misses: rd64(&b, 208),
            verified_insns: rd32(&b, 216),
            attach_btf_obj_id: rd32(&b, 220),
            attach_btf_id: rd32(&b, 224),
            ..Default::default()
        }
    }

    /// Whether array `bit` (from [`mod@array`]) was captured.
    pub fn has(&self, bit: u32) -> bool {
        self.arrays & (1 << bit) != 0
    }

    /// The tag in lower-case hex, as in the program's `bpf_prog_<tag>_<name>`
    /// symbol.
    pub fn tag_hex(&self) -> String {
        hex(&self.tag)
    }

    /// Where array `bit` lives in the info struct: its pointer's offset, its
    /// count and record size as the scalars say, the smallest record size
    /// that holds its fields, and its name for errors.
    fn layout(&self, bit: u32) -> (usize, u32, u32, u32, &'static str) {
        match bit {
            array::JITED_INSNS => (
                OFF_JITED_PROG_INSNS,
                self.jited_prog_len,
                1,
                1,
                "jited_insns",
            ),
            array::XLATED_INSNS => (
                OFF_XLATED_PROG_INSNS,
                self.xlated_prog_len,
                1,
                1,
                "xlated_insns",
            ),
            array::MAP_IDS => (OFF_MAP_IDS, self.nr_map_ids, 4, 4, "map_ids"),
            array::JITED_KSYMS => (OFF_JITED_KSYMS, self.nr_jited_ksyms, 8, 8, "jited_ksyms"),
            array::JITED_FUNC_LENS => (
                OFF_JITED_FUNC_LENS,
                self.nr_jited_func_lens,
                4,
                4,
                "jited_func_lens",
            ),
            array::FUNC_INFO => (
                OFF_FUNC_INFO,
                self.nr_func_info,
                self.func_info_rec_size,
                8,
                "func_info",
            ),
            array::LINE_INFO => (
                OFF_LINE_INFO,
                self.nr_line_info,
                self.line_info_rec_size,
                16,
                "line_info",
            ),
            array::JITED_LINE_INFO => (
                OFF_JITED_LINE_INFO,
                self.nr_jited_line_info,
                self.jited_line_info_rec_size,
                8,
                "jited_line_info",
            ),
            _ => (OFF_PROG_TAGS, self.nr_prog_tags, 8, 8, "prog_tags"),
        }
    }

    /// Store array `bit` (from [`mod@array`]) decoded from `bytes`, records of
    /// `rec` bytes each (at least the element's own size), set its count to
    /// match and mark it captured. The one decoder of every array's layout,
    /// for perf.data entries and for buffers filled by the kernel alike.
    pub fn set_array(&mut self, bit: u32, bytes: &[u8], rec: usize) {
        let recs = || bytes.chunks_exact(rec.max(1));
        let n = |v: usize| v as u32;
        match bit {
            array::JITED_INSNS => {
                self.jited_insns = bytes.to_vec();
                self.jited_prog_len = n(bytes.len());
            }
            array::XLATED_INSNS => {
                self.xlated_insns = bytes.to_vec();
                self.xlated_prog_len = n(bytes.len());
            }
            array::MAP_IDS => {
                self.map_ids = recs().map(|b| rd32(b, 0)).collect();
                self.nr_map_ids = n(self.map_ids.len());
            }
            array::JITED_KSYMS => {
                self.jited_ksyms = recs().map(|b| rd64(b, 0)).collect();
                self.nr_jited_ksyms = n(self.jited_ksyms.len());
            }
            array::JITED_FUNC_LENS => {
                self.jited_func_lens = recs().map(|b| rd32(b, 0)).collect();
                self.nr_jited_func_lens = n(self.jited_func_lens.len());
            }
            array::FUNC_INFO => {
                self.func_info = recs()
                    .map(|b| FuncInfo {
                        insn_off: rd32(b, 0),
                        type_id: rd32(b, 4),
                    })
                    .collect();
                self.nr_func_info = n(self.func_info.len());
            }
            array::LINE_INFO => {
                self.line_info = recs()
                    .map(|b| LineInfo {
                        insn_off: rd32(b, 0),
                        file_name_off: rd32(b, 4),
                        line_off: rd32(b, 8),
                        line_col: rd32(b, 12),
                    })
                    .collect();
                self.nr_line_info = n(self.line_info.len());
            }
            array::JITED_LINE_INFO => {
                self.jited_line_info = recs().map(|b| rd64(b, 0)).collect();
                self.nr_jited_line_info = n(self.jited_line_info.len());
            }
            array::PROG_TAGS => {
                self.prog_tags = recs().map(|b| b[..8].try_into().unwrap()).collect();
                self.nr_prog_tags = n(self.prog_tags.len());
            }
            _ => return,
        }
        self.arrays |= 1 << bit;
    }

    /// Decode one `perf_bpil` entry starting at `c`. `c` is left after it.
    pub(crate) fn read_bpil(c: &mut Cursor<'_>) -> Result<BpfProgInfo> {
        Self::read_bpil_tail(c).map(|(p, _)| p)
    }

    /// Like [`Self::read_bpil`], and also returns the bytes of `data` after
    /// the last array with their file offset, when they start a bpfprof
    /// tail ([`crate::bpf_prog_meta::tail`]). perf's own entries have none.
    pub(crate) fn read_bpil_tail<'a>(
        c: &mut Cursor<'a>,
    ) -> Result<(BpfProgInfo, Option<Tail<'a>>)> {
        let start = c.offset();
        let info_len = c.u32("perf_bpil.info_len")? as usize;
        let data_len = c.u32("perf_bpil.data_len")? as usize;
        let arrays = c.u64("perf_bpil.arrays")?;
        let info = c.bytes(info_len, "perf_bpil.info")?;
        let data_off = c.offset();
        let data = c.bytes(data_len, "perf_bpil.data")?;
        let mut p = BpfProgInfo::from_info_struct(info);
        let mut full = [0u8; BPF_PROG_INFO_SIZE];
        full[..info_len.min(BPF_PROG_INFO_SIZE)]
            .copy_from_slice(&info[..info_len.min(BPF_PROG_INFO_SIZE)]);
        p.arrays = arrays & ((1 << array::COUNT) - 1);

        let id = p.id;
        let mut arrays_end = 0usize;
        let mut slice = |ptr_off: usize, count: u32, size: u32, what: &str| -> Result<&[u8]> {
            let ptr = rd64(&full, ptr_off);
            let n = count as u64 * size as u64;
            if ptr.checked_add(n).is_none_or(|end| end > data_len as u64) {
                return Err(Error::parse(
                    data_off,
                    format!(
                        "bpf_prog_info of prog {id} (entry at {start:#x}): {what} array of {count}×{size} bytes at data+{ptr:#x} runs past data_len {data_len}"
                    ),
                ));
            }
            arrays_end = arrays_end.max(align8((ptr + n) as usize).min(data_len));
            Ok(&data[ptr as usize..(ptr + n) as usize])
        };
        for bit in 0..array::COUNT {
            if !p.has(bit) {
                continue;
            }
            let (ptr_off, count, rec, min, what) = p.layout(bit);
            if rec < min {
                return Err(Error::parse(
                    data_off,
                    format!(
                        "bpf_prog_info of prog {}: {what} record size {rec} < {min}",
                        p.id
                    ),
                ));
            }
            let bytes = slice(ptr_off, count, rec, what)?;
            p.set_array(bit, bytes, rec as usize);
        }
        let rest = &data[arrays_end..];
        let tail = crate::BpfProgMeta::is_tail(rest).then(|| (rest, data_off + arrays_end as u64));
        Ok((p, tail))
    }

    /// Encode as one `perf_bpil` entry (info_len 232, arrays packed in enum
    /// order, each rounded up to 8 bytes, pointers as offsets into data).
    /// Counts of captured arrays are taken from the arrays themselves.
    pub fn write_bpil(&self, out: &mut Vec<u8>) {
        self.write_bpil_with_tail(out, &[]);
    }

    /// [`Self::write_bpil`] with `tail` (8-byte aligned, see
    /// [`crate::bpf_prog_meta::tail`]) appended to `data` after the arrays;
    /// `data_len` counts it, no array points at it, so perf carries it
    /// unread.
    pub fn write_bpil_with_tail(&self, out: &mut Vec<u8>, tail: &[u8]) {
        let mut info = [0u8; BPF_PROG_INFO_SIZE];
        wr32(&mut info, 0, self.prog_type);
        wr32(&mut info, 4, self.id);
        info[8..16].copy_from_slice(&self.tag);
        wr32(&mut info, 16, self.jited_prog_len);
        wr32(&mut info, 20, self.xlated_prog_len);
        wr64(&mut info, 40, self.load_time);
        wr32(&mut info, 48, self.created_by_uid);
        wr32(&mut info, 52, self.nr_map_ids);
        let name = self.name.as_bytes();
        let n = name.len().min(15);
        info[64..64 + n].copy_from_slice(&name[..n]);
        wr32(&mut info, 80, self.ifindex);
        info[84] = self.gpl_compatible as u8;
        wr64(&mut info, 88, self.netns_dev);
        wr64(&mut info, 96, self.netns_ino);
        wr32(&mut info, 104, self.nr_jited_ksyms);
        wr32(&mut info, 108, self.nr_jited_func_lens);
        wr32(&mut info, 128, self.btf_id);
        wr32(&mut info, 132, self.func_info_rec_size);
        wr32(&mut info, 144, self.nr_func_info);
        wr32(&mut info, 148, self.nr_line_info);
        wr32(&mut info, 168, self.nr_jited_line_info);
        wr32(&mut info, 172, self.line_info_rec_size);
        wr32(&mut info, 176, self.jited_line_info_rec_size);
        wr32(&mut info, 180, self.nr_prog_tags);
        wr64(&mut info, 192, self.run_time_ns);
        wr64(&mut info, 200, self.run_cnt);
        wr64(&mut info, 208, self.recursion_misses);
        wr32(&mut info, 216, self.verified_insns);
        wr32(&mut info, 220, self.attach_btf_obj_id);
        wr32(&mut info, 224, self.attach_btf_id);

        let mut data = Vec::new();
        let mut place = |info: &mut [u8; BPF_PROG_INFO_SIZE], bytes: Vec<u8>, ptr_off: usize| {
            wr64(info, ptr_off, data.len() as u64);
            data.extend_from_slice(&bytes);
            data.resize(align8(data.len()), 0);
        };
        let mut arrays = 0u64;
        if self.has(array::JITED_INSNS) {
            arrays |= 1 << array::JITED_INSNS;
            wr32(&mut info, 16, self.jited_insns.len() as u32);
            place(&mut info, self.jited_insns.clone(), OFF_JITED_PROG_INSNS);
        }
        if self.has(array::XLATED_INSNS) {
            arrays |= 1 << array::XLATED_INSNS;
            wr32(&mut info, 20, self.xlated_insns.len() as u32);
            place(&mut info, self.xlated_insns.clone(), OFF_XLATED_PROG_INSNS);
        }
        if self.has(array::MAP_IDS) {
            arrays |= 1 << array::MAP_IDS;
            wr32(&mut info, 52, self.map_ids.len() as u32);
            let b = self.map_ids.iter().flat_map(|v| v.to_le_bytes()).collect();
            place(&mut info, b, OFF_MAP_IDS);
        }
        if self.has(array::JITED_KSYMS) {
            arrays |= 1 << array::JITED_KSYMS;
            wr32(&mut info, 104, self.jited_ksyms.len() as u32);
            let b = self
                .jited_ksyms
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            place(&mut info, b, OFF_JITED_KSYMS);
        }
        if self.has(array::JITED_FUNC_LENS) {
            arrays |= 1 << array::JITED_FUNC_LENS;
            wr32(&mut info, 108, self.jited_func_lens.len() as u32);
            let b = self
                .jited_func_lens
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            place(&mut info, b, OFF_JITED_FUNC_LENS);
        }
        if self.has(array::FUNC_INFO) {
            arrays |= 1 << array::FUNC_INFO;
            wr32(&mut info, 132, 8);
            wr32(&mut info, 144, self.func_info.len() as u32);
            let b = self
                .func_info
                .iter()
                .flat_map(|f| [f.insn_off.to_le_bytes(), f.type_id.to_le_bytes()].concat())
                .collect();
            place(&mut info, b, OFF_FUNC_INFO);
        }
        if self.has(array::LINE_INFO) {
            arrays |= 1 << array::LINE_INFO;
            wr32(&mut info, 172, 16);
            wr32(&mut info, 148, self.line_info.len() as u32);
            let b = self
                .line_info
                .iter()
                .flat_map(|l| {
                    [l.insn_off, l.file_name_off, l.line_off, l.line_col]
                        .into_iter()
                        .flat_map(u32::to_le_bytes)
                })
                .collect();
            place(&mut info, b, OFF_LINE_INFO);
        }
        if self.has(array::JITED_LINE_INFO) {
            arrays |= 1 << array::JITED_LINE_INFO;
            wr32(&mut info, 176, 8);
            wr32(&mut info, 168, self.jited_line_info.len() as u32);
            let b = self
                .jited_line_info
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            place(&mut info, b, OFF_JITED_LINE_INFO);
        }
        if self.has(array::PROG_TAGS) {
            arrays |= 1 << array::PROG_TAGS;
            wr32(&mut info, 180, self.prog_tags.len() as u32);
            let b = self.prog_tags.iter().flatten().copied().collect();
            place(&mut info, b, OFF_PROG_TAGS);
        }
        data.extend_from_slice(tail);
        data.resize(align8(data.len()), 0);
        out.extend_from_slice(&(BPF_PROG_INFO_SIZE as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&arrays.to_le_bytes());
        out.extend_from_slice(&info);
        out.extend_from_slice(&data);
    }

    /// Decode a single `perf_bpil` entry from bytes (for tests and tools).
    pub fn from_bpil(bytes: &[u8]) -> Result<BpfProgInfo> {
        Self::read_bpil(&mut Cursor::new(bytes, 0))
    }
}

/// Lower-case hex of a byte string, as the kernel prints tags.
pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BpfProgInfo {
        BpfProgInfo {
            prog_type: 5,
            id: 128,
            tag: [1, 2, 3, 4, 5, 6, 7, 8],
            name: "busy_getpid".into(),
            btf_id: 7,
            arrays: (1 << array::JITED_INSNS)
                | (1 << array::JITED_KSYMS)
                | (1 << array::JITED_FUNC_LENS)
                | (1 << array::FUNC_INFO)
                | (1 << array::LINE_INFO)
                | (1 << array::JITED_LINE_INFO)
                | (1 << array::PROG_TAGS),
            jited_insns: (0..98).collect(),
            jited_ksyms: vec![0xffff_0000, 0xffff_0040],
            jited_func_lens: vec![0x40, 0x22],
            func_info: vec![
                FuncInfo {
                    insn_off: 0,
                    type_id: 3,
                },
                FuncInfo {
                    insn_off: 5,
                    type_id: 4,
                },
            ],
            line_info: vec![LineInfo {
                insn_off: 0,
                file_name_off: 1,
                line_off: 10,
                line_col: (6 << 10) | 37,
            }],
            jited_line_info: vec![0xffff_0000],
            prog_tags: vec![[9; 8], [10; 8]],
            ..Default::default()
        }
    }

    #[test]
    fn bpil_round_trip_keeps_arrays_and_fixes_counts() {
        let p = sample();
        let mut out = Vec::new();
        p.write_bpil(&mut out);
        let q = BpfProgInfo::from_bpil(&out).unwrap();
        assert_eq!(q.jited_insns, p.jited_insns);
        assert_eq!(q.jited_prog_len, 98);
        assert_eq!(q.func_info, p.func_info);
        assert_eq!(q.line_info[0].line(), 6);
        assert_eq!(q.line_info[0].column(), 37);
        assert_eq!(q.prog_tags, p.prog_tags);
        assert_eq!(q.name, "busy_getpid");
        // perf packs each array at an 8-byte boundary: 98 bytes of insns then ksyms at 104.
        assert_eq!(rd64(&out[16..], OFF_JITED_KSYMS), 104);
    }

    #[test]
    fn array_past_data_is_an_error_not_a_panic() {
        let mut out = Vec::new();
        sample().write_bpil(&mut out);
        // Inflate jited_prog_len so the array runs past data_len.
        wr32(&mut out[16..], 16, 0xffff_fff0);
        let e = BpfProgInfo::from_bpil(&out).unwrap_err().to_string();
        assert!(e.contains("jited_insns"), "{e}");
        for cut in 0..out.len() {
            assert!(BpfProgInfo::from_bpil(&out[..cut]).is_err());
        }
    }
}
