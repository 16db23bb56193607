//! Kernel machine code from /proc/kcore: an ELF core file whose program
//! headers map kernel virtual addresses to file offsets. The file claims a
//! size of terabytes, so only the headers and the wanted range are read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Read `len` bytes of kernel memory at `addr`, or say why not.
pub fn read(path: &Path, addr: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{}: this kernel does not provide it (built without CONFIG_PROC_KCORE), so kernel code cannot be read",
            path.display()
        ),
        std::io::ErrorKind::PermissionDenied => format!("{}: {e}: run as root", path.display()),
        _ => format!("{}: {e}", path.display()),
    })?;
    let mut head = vec![0u8; 64 * 1024];
    let n = f
        .read(&mut head)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    head.truncate(n);
    let rd16 = |o: usize| {
        head.get(o..o + 2)
            .map(|b| u16::from_le_bytes(b.try_into().unwrap()))
    };
    let rd32 = |o: usize| {
        head.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let rd64 = |o: usize| {
        head.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if head.get(..5) != Some(b"\x7fELF\x02") {
        return Err(format!("{}: not a 64-bit ELF core", path.display()));
    }
    let (phoff, phentsize, phnum) = match (rd64(0x20), rd16(0x36), rd16(0x38)) {
        (Some(o), Some(s), Some(n)) => (o as usize, s as usize, n as usize),
        _ => return Err(format!("{}: truncated ELF header", path.display())),
    };
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let (Some(ptype), Some(off), Some(vaddr), Some(filesz)) =
            (rd32(ph), rd64(ph + 8), rd64(ph + 16), rd64(ph + 32))
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
        let mut buf = vec![0u8; len];
        f.seek(SeekFrom::Start(off + (addr - vaddr)))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| format!("{}: reading {addr:#x}: {e}", path.display()))?;
        return Ok(buf);
    }
    Err(format!("{}: no segment maps {addr:#x}", path.display()))
}
