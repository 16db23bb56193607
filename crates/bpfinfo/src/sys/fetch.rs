//! BPF_OBJ_GET_INFO_BY_FD for programs and BTF objects.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use perfdata::{array, BpfProgInfo};

use super::attr::{Attr, InfoBuf};
use super::{bpf, bpf_fd, error, prog_fd_by_id, Cmd};
use crate::Error;

/// Which arrays of `bpf_prog_info` to fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Everything annotate needs: JIT image, xlated bytecode, map ids,
    /// addresses, lengths, func_info, line_info, jited_line_info, tags, BTF.
    Full,
    /// Enough to name and place sub-programs: addresses, lengths,
    /// func_info, tags, BTF.
    Symbols,
    /// Only the scalar fields (type, name, tag, sizes, run-time stats); no
    /// arrays and no BTF. Cheap enough for a listing.
    Summary,
}

impl Capture {
    /// The [`perfdata::array`] bits this capture asks for.
    pub fn arrays(self) -> u64 {
        let bits: &[u32] = match self {
            Capture::Full => &[
                array::JITED_INSNS,
                array::XLATED_INSNS,
                array::MAP_IDS,
                array::JITED_KSYMS,
                array::JITED_FUNC_LENS,
                array::FUNC_INFO,
                array::LINE_INFO,
                array::JITED_LINE_INFO,
                array::PROG_TAGS,
            ],
            Capture::Symbols => &[
                array::JITED_KSYMS,
                array::JITED_FUNC_LENS,
                array::FUNC_INFO,
                array::PROG_TAGS,
            ],
            Capture::Summary => &[],
        };
        bits.iter().fold(0, |m, b| m | 1 << b)
    }
}

/// A live program as fetched from the kernel.
#[derive(Debug, Clone)]
pub struct LiveProg {
    /// Scalars and the captured arrays (their bits set in `info.arrays`).
    pub info: BpfProgInfo,
    /// The raw BTF blob of `info.btf_id`, if the program has BTF and the
    /// capture asked for it.
    pub btf: Option<Vec<u8>>,
    /// Things that went wrong without making the program useless (e.g. its
    /// BTF could not be read, or the kernel returned short arrays).
    pub warnings: Vec<String>,
}

// Where each array's count, pointer and record size live in bpf_prog_info
// (include/uapi/linux/bpf.h), with the element size when it is fixed.
struct ArrayField {
    bit: u32,
    count_off: usize,
    ptr_off: usize,
    rec_size_off: Option<usize>,
    elem_size: u32,
    /// The kernel zeroes this array's pointer when kptr_restrict hides
    /// addresses (no bpf_dump_raw_ok()).
    hidden_by_kptr: bool,
}

const FIELDS: [ArrayField; 9] = [
    ArrayField {
        bit: array::JITED_INSNS,
        count_off: 16,
        ptr_off: 24,
        rec_size_off: None,
        elem_size: 1,
        hidden_by_kptr: true,
    },
    ArrayField {
        bit: array::XLATED_INSNS,
        count_off: 20,
        ptr_off: 32,
        rec_size_off: None,
        elem_size: 1,
        hidden_by_kptr: false,
    },
    ArrayField {
        bit: array::MAP_IDS,
        count_off: 52,
        ptr_off: 56,
        rec_size_off: None,
        elem_size: 4,
        hidden_by_kptr: false,
    },
    ArrayField {
        bit: array::JITED_KSYMS,
        count_off: 104,
        ptr_off: 112,
        rec_size_off: None,
        elem_size: 8,
        hidden_by_kptr: true,
    },
    ArrayField {
        bit: array::JITED_FUNC_LENS,
        count_off: 108,
        ptr_off: 120,
        rec_size_off: None,
        elem_size: 4,
        hidden_by_kptr: false,
    },
    ArrayField {
        bit: array::FUNC_INFO,
        count_off: 144,
        ptr_off: 136,
        rec_size_off: Some(132),
        elem_size: 8,
        hidden_by_kptr: false,
    },
    ArrayField {
        bit: array::LINE_INFO,
        count_off: 148,
        ptr_off: 152,
        rec_size_off: Some(172),
        elem_size: 16,
        hidden_by_kptr: false,
    },
    ArrayField {
        bit: array::JITED_LINE_INFO,
        count_off: 168,
        ptr_off: 160,
        rec_size_off: Some(176),
        elem_size: 8,
        hidden_by_kptr: true,
    },
    ArrayField {
        bit: array::PROG_TAGS,
        count_off: 180,
        ptr_off: 184,
        rec_size_off: None,
        elem_size: 8,
        hidden_by_kptr: false,
    },
];

/// Fetch program `id`: its `bpf_prog_info` with the arrays of `capture`, and
/// its BTF unless the capture is [`Capture::Summary`].
///
/// Errors: [`Error::Gone`] if it was unloaded meanwhile,
/// [`Error::Permission`], [`Error::NotJited`] and [`Error::AddressesHidden`]
/// when addresses were asked for but the kernel has none to give.
pub fn fetch_prog(id: u32, capture: Capture) -> Result<LiveProg, Error> {
    let fd = prog_fd_by_id(id)?;
    fetch_prog_fd(fd.as_fd(), capture)
}

/// Like [`fetch_prog`], for a program descriptor already open.
pub fn fetch_prog_fd(fd: BorrowedFd<'_>, capture: Capture) -> Result<LiveProg, Error> {
    let wanted = capture.arrays();
    let mut warnings = Vec::new();
    let mut info = None;
    // A program's arrays do not change size, but an id can be reused by a
    // new program between the two calls; fetch again once if counts moved.
    for attempt in 0..2 {
        let first = obj_info(fd, &mut InfoBuf::new())?;
        if wanted == 0 {
            info = Some(first);
            break;
        }
        let (got, changed) = fetch_arrays(fd, &first, wanted)?;
        if !changed || attempt == 1 {
            if changed {
                warnings.push(
                    "array sizes changed between two reads of bpf_prog_info; kept the shorter"
                        .to_string(),
                );
            }
            info = Some(got);
            break;
        }
    }
    let info = info.expect("the loop always sets info");

    if wanted & (1 << array::JITED_KSYMS) != 0 {
        if info.jited_prog_len == 0 && info.nr_jited_ksyms == 0 {
            return Err(Error::NotJited { id: info.id });
        }
        if !info.has(array::JITED_KSYMS) || info.jited_ksyms.iter().all(|&a| a == 0) {
            return Err(Error::AddressesHidden { id: info.id });
        }
    }

    let mut btf = None;
    if capture != Capture::Summary && info.btf_id != 0 {
        match fetch_btf(info.btf_id) {
            Ok(b) => btf = Some(b),
            Err(e) => warnings.push(format!("BTF {} not read: {e}", info.btf_id)),
        }
    }
    Ok(LiveProg {
        info,
        btf,
        warnings,
    })
}

/// One BPF_OBJ_GET_INFO_BY_FD call on `buf`; returns the decoded scalars.
fn obj_info(fd: BorrowedFd<'_>, buf: &mut InfoBuf) -> Result<BpfProgInfo, Error> {
    // SAFETY: `buf` holds no array pointers other than those its callers
    // set; obj_info is only called on zeroed buffers.
    let len = unsafe { obj_get_info(fd, &mut buf.bytes) }?;
    Ok(BpfProgInfo::from_info_struct(&buf.bytes[..len]))
}

/// BPF_OBJ_GET_INFO_BY_FD into `info`; returns the length the kernel filled.
///
/// # Safety
/// Every array pointer stored in `info` must point to a live, writable
/// buffer at least as large as the count (times record size) stored next to
/// it.
unsafe fn obj_get_info(fd: BorrowedFd<'_>, info: &mut [u8]) -> Result<usize, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, fd.as_raw_fd() as u32)
        .put_u32(4, info.len() as u32)
        .put_ptr(8, info.as_mut_ptr());
    // SAFETY: the kernel writes at most info_len = info.len() bytes to
    // `info`, which is borrowed mutably for this call; array pointers inside
    // `info` are covered by this function's contract.
    unsafe { bpf(Cmd::ObjGetInfoByFd, &mut attr) }.map_err(|e| error(Cmd::ObjGetInfoByFd, e))?;
    Ok((attr.get_u32(4) as usize).min(info.len()))
}

/// The second call: buffers for the `wanted` arrays sized from `first`.
/// Returns the info and whether any count differed from the first call.
fn fetch_arrays(
    fd: BorrowedFd<'_>,
    first: &BpfProgInfo,
    wanted: u64,
) -> Result<(BpfProgInfo, bool), Error> {
    let mut first_raw = InfoBuf::new();
    // Re-encode the counts from the decoded scalars of the first call.
    let counts = |f: &ArrayField| -> (u32, u32) {
        let (n, rec) = match f.bit {
            array::JITED_INSNS => (first.jited_prog_len, 1),
            array::XLATED_INSNS => (first.xlated_prog_len, 1),
            array::MAP_IDS => (first.nr_map_ids, 4),
            array::JITED_KSYMS => (first.nr_jited_ksyms, 8),
            array::JITED_FUNC_LENS => (first.nr_jited_func_lens, 4),
            array::FUNC_INFO => (first.nr_func_info, first.func_info_rec_size),
            array::LINE_INFO => (first.nr_line_info, first.line_info_rec_size),
            array::JITED_LINE_INFO => (first.nr_jited_line_info, first.jited_line_info_rec_size),
            _ => (first.nr_prog_tags, 8),
        };
        (n, rec.max(f.elem_size))
    };
    let mut bufs: Vec<Option<Vec<u8>>> = Vec::with_capacity(FIELDS.len());
    for f in &FIELDS {
        if wanted & (1 << f.bit) == 0 {
            bufs.push(None);
            continue;
        }
        let (n, rec) = counts(f);
        // Counts come from the kernel; a record size far above the UAPI one
        // would mean a corrupt answer, not a bigger struct.
        if rec > 64 {
            return Err(Error::Unsupported(format!(
                "bpf_prog_info of prog {}: record size {rec} for array {} is implausible",
                first.id, f.bit
            )));
        }
        let mut b = vec![0u8; n as usize * rec as usize];
        first_raw.put_u32(f.count_off, n);
        if let Some(off) = f.rec_size_off {
            first_raw.put_u32(off, rec);
        }
        first_raw.put_u64(f.ptr_off, b.as_mut_ptr() as usize as u64);
        bufs.push(Some(b));
    }
    // SAFETY: each pointer set above points into a Vec in `bufs`, sized
    // count * record size as written next to it; `bufs` outlives the call
    // (moving a Vec into `bufs` does not move its heap buffer).
    let len = unsafe { obj_get_info(fd, &mut first_raw.bytes) }?;
    let raw = &first_raw;
    let mut info = BpfProgInfo::from_info_struct(&raw.bytes[..len]);
    let mut changed = false;
    let mut hidden = false;
    for (f, buf) in FIELDS.iter().zip(bufs) {
        let Some(buf) = buf else { continue };
        if f.count_off + 4 > len {
            // Older kernel without this array: leave its bit clear.
            continue;
        }
        let (asked, rec) = counts(f);
        let now = raw.get_u32(f.count_off);
        if now != asked {
            changed = true;
        }
        if asked > 0 && f.hidden_by_kptr && raw.get_u64(f.ptr_off) == 0 {
            hidden = true;
            continue;
        }
        let n = asked.min(now) as usize;
        let bytes = &buf[..n * rec as usize];
        info.set_array(f.bit, bytes, rec as usize);
    }
    if hidden {
        return Err(Error::AddressesHidden { id: info.id });
    }
    Ok((info, changed))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// The raw blob of BTF object `btf_id`.
pub(crate) fn fetch_btf(btf_id: u32) -> Result<Vec<u8>, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, btf_id);
    // SAFETY: BPF_BTF_GET_FD_BY_ID reads btf_id/open_flags; no pointers.
    let fd =
        unsafe { bpf_fd(Cmd::BtfGetFdById, &mut attr) }.map_err(|e| error(Cmd::BtfGetFdById, e))?;
    // struct bpf_btf_info { u64 btf; u32 btf_size; u32 id; u64 name;
    // u32 name_len; u32 kernel_btf; }
    let mut info = [0u8; 32];
    // SAFETY: a zeroed bpf_btf_info carries no pointer.
    unsafe { obj_get_info(fd.as_fd(), &mut info) }?;
    let size = u32_at(&info, 8);
    // Program BTF is small; vmlinux BTF is a few MiB. Refuse absurd sizes.
    if size > 256 << 20 {
        return Err(Error::Unsupported(format!(
            "BTF {btf_id} claims {size} bytes"
        )));
    }
    let mut blob = vec![0u8; size as usize];
    let mut info = [0u8; 32];
    info[0..8].copy_from_slice(&(blob.as_mut_ptr() as usize as u64).to_ne_bytes());
    info[8..12].copy_from_slice(&size.to_ne_bytes());
    // SAFETY: `info.btf` points to `blob`, which is `btf_size` bytes long and
    // alive until the end of this function.
    unsafe { obj_get_info(fd.as_fd(), &mut info) }?;
    let now = u32_at(&info, 8);
    blob.truncate(now.min(size) as usize);
    Ok(blob)
}

/// The scalar fields of an open program (one call, no arrays).
pub(crate) fn prog_scalars(fd: BorrowedFd<'_>) -> Result<BpfProgInfo, Error> {
    obj_info(fd, &mut InfoBuf::new())
}
