//! Where the symbols of stripped binaries and the vdso are found: the
//! places perf looks, so both tools resolve the same names.

use std::path::{Path, PathBuf};

/// A separate debug file for `binary`: by build id under
/// /usr/lib/debug/.build-id, else the same path under /usr/lib/debug.
pub fn find(binary: &Path, build_id: Option<&[u8]>) -> Option<PathBuf> {
    if let Some(id) = build_id.filter(|b| b.len() > 1) {
        let hex = perfdata::hex(id);
        let p = PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        ));
        if p.exists() {
            return Some(p);
        }
    }
    let p = Path::new("/usr/lib/debug").join(binary.strip_prefix("/").ok()?);
    [p.clone(), PathBuf::from(format!("{}.debug", p.display()))]
        .into_iter()
        .find(|c| c.is_file())
}

/// The vdso's ELF image: from perf's build-id cache when the recording
/// names one, else this process's own vdso (the same image when the
/// report runs on the recorded kernel).
pub fn vdso_image(build_id: Option<&[u8]>) -> Option<Vec<u8>> {
    if let (Some(id), Some(home)) = (build_id, std::env::var_os("HOME")) {
        let p = Path::new(&home)
            .join(".debug/[vdso]")
            .join(perfdata::hex(id))
            .join("vdso");
        if let Ok(b) = std::fs::read(p) {
            return Some(b);
        }
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (range, _) = line.split_once(' ')?;
    let (a, b) = range.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    use std::io::{Read, Seek, SeekFrom};
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0u8; (end - start) as usize];
    mem.read_exact(&mut buf).ok()?;
    Some(buf)
}
