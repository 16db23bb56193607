//! Parsed symbol tables kept between reports.
//!
//! A flat report of a busy machine reads the symbols of some forty
//! binaries, cc1 (27k functions) and cargo (40k) among them: 20-25 ms of
//! one thread, on a machine whose other core counts samples meanwhile.
//! What the parse makes of a binary (functions in address order, aliases
//! chosen, PLT entries, segments, build id) depends only on the binary,
//! so for binaries of 1 MB and more it is kept in the cache directory,
//! under `elf/`, and used while the file is the one it was made from: the
//! same device, inode, size, and modification and change times (a change
//! time cannot be set back), and the same bpfprof executable (another
//! build may parse differently). Names are not kept: they are read from
//! the binary when a function is sampled, as without the cache.
//!
//! The cache is a speed-up only: a file that cannot be read, or does not
//! decode exactly, or whose tables do not hold together, is ignored and
//! written again.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use super::super::cache_files::{self, Fnv};
use super::super::file_map::{map_with_metadata, FileBytes};
use super::{ElfSymbols, Sym, LAZY};

const MAGIC: &[u8] = b"bpfprof elf symbols v1\n";

/// Smaller binaries took mostly 0.02-0.5 ms each to parse on the benchmark
/// files: a file of their own in the cache would save little.
const MIN_SIZE: u64 = 1 << 20;

/// Files kept at most, and their bytes in all: binaries change with
/// upgrades and rebuilds, and the old ones' entries are never asked for
/// again. A function takes 21 bytes, so 500k functions about 10 MB; an
/// entry bigger than all the cache may hold is neither written nor read.
const MAX_FILES: usize = 256;
const MAX_BYTES: u64 = 256 << 20;

/// The symbols of the binary at `path`, through the cache where it has
/// them; `None` if the file cannot be mapped or parsed.
pub fn load(path: &Path) -> Option<ElfSymbols> {
    let dir = cache_files::dir().map(|d| d.join("elf"));
    load_in(path, dir.as_deref()).map(|(elf, _)| elf)
}

/// [`load`] with the cache in `dir`; also says whether the symbols came
/// from the cache.
fn load_in(path: &Path, dir: Option<&Path>) -> Option<(ElfSymbols, bool)> {
    let (data, meta) = map_with_metadata(path)?;
    let stamp = stamp_of(&meta).filter(|_| meta.len() >= MIN_SIZE);
    let (Some(dir), Some(stamp)) = (dir, stamp) else {
        return Some((ElfSymbols::parse(data).ok()?, false));
    };
    let name = format!("{:016x}", {
        let mut h = Fnv::default();
        stamp.iter().for_each(|v| h.write(&v.to_le_bytes()));
        h.0
    });
    let file = dir.join(&name);
    let data = match read(&file, &stamp, data) {
        Ok(elf) => return Some((elf, true)),
        Err(data) => data,
    };
    let elf = ElfSymbols::parse(data).ok()?;
    // Kept only if the file is still the one parsed: one rewritten in
    // place while parsing would leave a table that fits neither version.
    let still = std::fs::metadata(path).ok().and_then(|m| stamp_of(&m));
    if still.is_some_and(|s| s == stamp) {
        // Best effort: a report does not fail for want of a cache. An
        // entry over the whole budget would only be pruned at once.
        let bytes = encode(&elf, &stamp);
        if bytes.len() as u64 <= MAX_BYTES && cache_files::write(dir, &name, &[&bytes]).is_ok() {
            prune(dir);
        }
    }
    Some((elf, false))
}

/// What a cache file is valid for: the binary's identity, then this
/// executable's.
pub(crate) type Stamp = [u64; 8];

fn stamp_of(meta: &std::fs::Metadata) -> Option<Stamp> {
    let exe = *EXE.get_or_init(|| {
        let m = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
        let mut h = Fnv::default();
        for v in [m.dev(), m.ino(), m.size(), m.mtime() as u64] {
            h.write(&v.to_le_bytes());
        }
        h.write(&(m.mtime_nsec() as u64).to_le_bytes());
        Some(h.0)
    });
    Some([
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
        exe?,
    ])
}

static EXE: OnceLock<Option<u64>> = OnceLock::new();

/// The cached symbols of `data` if `file` was written for `stamp` and
/// holds together; else `data` back, to be parsed.
fn read(file: &Path, stamp: &Stamp, data: FileBytes) -> Result<ElfSymbols, FileBytes> {
    let bytes = std::fs::File::open(file).ok().and_then(|mut f| {
        use std::io::Read;
        let len = f.metadata().ok()?.len();
        if len > MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
        f.read_to_end(&mut bytes).ok()?;
        Some(bytes)
    });
    match bytes {
        Some(bytes) => decode(&bytes, stamp, data),
        None => Err(data),
    }
}

pub(crate) fn encode(e: &ElfSymbols, stamp: &Stamp) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + e.syms.len() * 21);
    out.extend_from_slice(MAGIC);
    let u64s = |out: &mut Vec<u8>, vs: &[u64]| {
        vs.iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()))
    };
    u64s(&mut out, stamp);
    for n in [
        e.syms.len(),
        e.ties.groups.len(),
        e.ties.names.len(),
        e.plt_names.len(),
        e.segments.len(),
    ] {
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    u64s(&mut out, &[e.strtab.start as u64, e.strtab.end as u64]);
    match &e.build_id {
        Some(id) => {
            out.extend_from_slice(&(id.len() as u32).to_le_bytes());
            out.extend_from_slice(id);
        }
        None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
    }
    out.push(e.has_symtab as u8);
    for s in &e.syms {
        u64s(&mut out, &[s.start, s.end]);
        out.extend_from_slice(&s.name_off.to_le_bytes());
        out.push(s.plt as u8);
    }
    for &(start, first, n) in &e.ties.groups {
        u64s(&mut out, &[start]);
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
    for &(off, order) in &e.ties.names {
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&order.to_le_bytes());
    }
    for &(off, size, vaddr) in &e.segments {
        u64s(&mut out, &[off, size, vaddr]);
    }
    for name in &e.plt_names {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
    }
    out
}

/// Reads a cache file front to back; every read is checked.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    /// Room for `n` items of `size` bytes each, if the file has them: a
    /// damaged count must not make a huge allocation.
    fn room(&self, n: u32, size: usize) -> Option<usize> {
        let n = n as usize;
        (n.checked_mul(size)? <= self.0.len()).then_some(n)
    }
}

pub(crate) fn decode(
    bytes: &[u8],
    stamp: &Stamp,
    data: FileBytes,
) -> Result<ElfSymbols, FileBytes> {
    match parts(bytes, stamp, data.len()) {
        Some(p) => Ok(ElfSymbols { data, ..p }),
        None => Err(data),
    }
}

/// The cached tables, with no data, if they are whole and fit a binary
/// of `data_len` bytes.
fn parts(bytes: &[u8], stamp: &Stamp, data_len: usize) -> Option<ElfSymbols> {
    let mut c = Cursor(bytes);
    if c.take(MAGIC.len())? != MAGIC {
        return None;
    }
    for &want in stamp {
        if c.u64()? != want {
            return None;
        }
    }
    let [syms, groups, names, plts, segments] = [c.u32()?, c.u32()?, c.u32()?, c.u32()?, c.u32()?];
    let (start, end) = (c.u64()? as usize, c.u64()? as usize);
    if start > end || end > data_len {
        return None;
    }
    let build_id = match c.u32()? {
        u32::MAX => None,
        n if n <= 64 => Some(c.take(n as usize)?.to_vec()),
        _ => return None,
    };
    let has_symtab = match c.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let mut e = ElfSymbols {
        strtab: start..end,
        build_id,
        has_symtab,
        ..Default::default()
    };
    e.syms = Vec::with_capacity(c.room(syms, 21)?);
    for _ in 0..syms {
        let (start, end, name_off) = (c.u64()?, c.u64()?, c.u32()?);
        let plt = match c.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        e.syms.push(Sym {
            start,
            end,
            name_off,
            plt,
        });
    }
    e.ties.groups = Vec::with_capacity(c.room(groups, 16)?);
    for _ in 0..groups {
        e.ties.groups.push((c.u64()?, c.u32()?, c.u32()?));
    }
    e.ties.names = Vec::with_capacity(c.room(names, 8)?);
    for _ in 0..names {
        e.ties.names.push((c.u32()?, c.u32()?));
    }
    e.segments = Vec::with_capacity(c.room(segments, 24)?);
    for _ in 0..segments {
        e.segments.push((c.u64()?, c.u64()?, c.u64()?));
    }
    e.plt_names = Vec::with_capacity(c.room(plts, 4)?);
    for _ in 0..plts {
        let n = c.u32()? as usize;
        e.plt_names
            .push(String::from_utf8(c.take(n)?.to_vec()).ok()?);
    }
    (c.0.is_empty() && holds_together(&e)).then_some(e)
}

/// Whether every index in the tables points where lookups will follow it,
/// and the functions are in the address order lookups search them in.
fn holds_together(e: &ElfSymbols) -> bool {
    let in_order = e.syms.windows(2).all(|w| w[0].start <= w[1].start);
    let names = e.syms.iter().all(|s| match s.plt {
        true => (s.name_off as usize) < e.plt_names.len(),
        false => {
            s.name_off != LAZY
                || e.ties
                    .groups
                    .binary_search_by_key(&s.start, |g| g.0)
                    .is_ok()
        }
    });
    let groups = e.ties.groups.windows(2).all(|w| w[0].0 < w[1].0)
        && e.ties.groups.iter().all(|&(_, first, n)| {
            first
                .checked_add(n)
                .is_some_and(|end| end as usize <= e.ties.names.len())
        });
    in_order && names && groups
}

/// Keep the newest files: at most [`MAX_FILES`], and [`MAX_BYTES`] in all.
fn prune(dir: &Path) {
    prune_to(dir, MAX_FILES, MAX_BYTES);
}

fn prune_to(dir: &Path, max_files: usize, max_bytes: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, std::path::PathBuf)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let bytes: u64 = files.iter().map(|f| f.1).sum();
    if files.len() <= max_files && bytes <= max_bytes {
        return;
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut kept = 0;
    for (i, (_, len, f)) in files.into_iter().enumerate() {
        kept += len;
        if i >= max_files || kept > max_bytes {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests;
