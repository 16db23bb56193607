//! Kernel machine code from /proc/kcore: an ELF core file whose program
//! headers map kernel virtual addresses to file offsets. The file claims a
//! size of terabytes, so only the headers and the wanted range are read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Read `len` bytes of kernel memory at `addr`, or say why not.
pub fn read(path: &Path, addr: u64, len: usize) -> Result<Vec<u8>, String> {
    let name = path.display().to_string();
    let mut f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{name}: this kernel does not provide it (built without CONFIG_PROC_KCORE), so kernel code cannot be read"
        ),
        std::io::ErrorKind::PermissionDenied => format!("{name}: {e}: run as root"),
        _ => format!("{name}: {e}"),
    })?;
    read_from(&mut f, &name, addr, len)
}

/// [`read`] from an open image, `name` naming it in errors: the part that
/// parses what the file holds.
pub(crate) fn read_from<F: Read + Seek>(
    f: &mut F,
    name: &str,
    addr: u64,
    len: usize,
) -> Result<Vec<u8>, String> {
    let mut head = vec![0u8; 64 * 1024];
    let n = f.read(&mut head).map_err(|e| format!("{name}: {e}"))?;
    head.truncate(n);
    // Offsets come from the file: checked, so that a header pointing near
    // the end of the address space reads as truncated, not as a wrap.
    let bytes = |o: usize, n: usize| head.get(o..o.checked_add(n)?);
    let rd16 = |o: usize| bytes(o, 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let rd32 =
        |o: Option<usize>| bytes(o?, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let rd64 = |o: Option<usize>| {
        bytes(o?, 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    if head.get(..5) != Some(b"\x7fELF\x02") {
        return Err(format!("{name}: not a 64-bit ELF core"));
    }
    let (phoff, phentsize, phnum) = match (rd64(Some(0x20)), rd16(0x36), rd16(0x38)) {
        (Some(o), Some(s), Some(n)) => (
            usize::try_from(o).unwrap_or(usize::MAX),
            s as usize,
            n as usize,
        ),
        _ => return Err(format!("{name}: truncated ELF header")),
    };
    for i in 0..phnum {
        let ph = (i * phentsize).checked_add(phoff);
        let at = |d: usize| ph?.checked_add(d);
        let (Some(ptype), Some(off), Some(vaddr), Some(filesz)) =
            (rd32(ph), rd64(at(8)), rd64(at(16)), rd64(at(32)))
        else {
            break;
        };
        const PT_LOAD: u32 = 1;
        if ptype != PT_LOAD
            || addr < vaddr
            || addr.saturating_add(len as u64) > vaddr.saturating_add(filesz)
        {
            continue;
        }
        let Some(at) = off.checked_add(addr - vaddr) else {
            return Err(format!(
                "{name}: the segment of {addr:#x} lies past the largest file offset"
            ));
        };
        let mut buf = vec![0u8; len];
        f.seek(SeekFrom::Start(at))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| format!("{name}: reading {addr:#x}: {e}"))?;
        return Ok(buf);
    }
    Err(format!("{name}: no segment maps {addr:#x}"))
}

#[cfg(test)]
mod tests {
    use super::read_from;
    use std::io::Cursor;

    /// An ELF64 header with one program header at `phoff`, and that header
    /// (PT_LOAD at `off` in the file, mapping `vaddr`, `filesz` bytes).
    fn core(phoff: u64, off: u64, vaddr: u64, filesz: u64) -> Vec<u8> {
        let mut b = vec![0u8; 64 + 56];
        b[..5].copy_from_slice(b"\x7fELF\x02");
        b[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        let ph = &mut b[64..];
        ph[..4].copy_from_slice(&1u32.to_le_bytes());
        ph[8..16].copy_from_slice(&off.to_le_bytes());
        ph[16..24].copy_from_slice(&vaddr.to_le_bytes());
        ph[32..40].copy_from_slice(&filesz.to_le_bytes());
        b.extend_from_slice(b"kernel code here");
        b
    }

    fn read(image: &[u8], addr: u64, len: usize) -> Result<Vec<u8>, String> {
        read_from(&mut Cursor::new(image), "kcore", addr, len)
    }

    #[test]
    fn a_segment_is_read_at_its_offset() {
        let image = core(64, 120, 0xffff_8000_0000_0000, 16);
        assert_eq!(read(&image, 0xffff_8000_0000_0007, 4).unwrap(), b"code");
        let e = read(&image, 0xffff_8000_0000_000e, 4).unwrap_err();
        assert!(e.contains("no segment maps"), "{e}");
    }

    /// Offsets from a damaged header near the end of the address space
    /// (found reading the code while adding the kcore fuzz target): an
    /// error, not an overflow.
    #[test]
    fn offsets_that_would_wrap_are_errors() {
        let e = read(&core(u64::MAX - 4, 120, 0, 16), 0, 4).unwrap_err();
        assert!(e.contains("no segment maps"), "{e}");
        let e = read(&core(64, u64::MAX - 2, 0, 16), 8, 4).unwrap_err();
        assert!(e.contains("past the largest file offset"), "{e}");
        let e = read(&core(64, 4096, 0, 16), 0, 4).unwrap_err();
        assert!(e.contains("reading 0x0"), "{e}");
    }
}
