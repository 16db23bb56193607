//! perf's own demangler, libiberty's `cplus_demangle`, taken from binutils'
//! shared libbfd when the system has it (binutils installs it; perf's
//! Debian build links the same code in statically).
//!
//! Calling the code perf calls, with the options perf passes by default
//! (none: no parameters, no return types), gives perf's names exactly:
//! Rust names without their hash, C++ names with `[clone .cold]`, `2u`,
//! `> >`, lambdas and transaction clones as libiberty prints them. It is
//! also 6-8 times faster than cpp_demangle (0.3 µs a name against 2.6 µs
//! over gcc's cc1, 1.2 against 7.9 over libLLVM), and a big C++ profile
//! demangles thousands of names. Without libbfd, [`super::elf::demangle`]
//! falls back to rustc-demangle and cpp_demangle.
//!
//! The only unsafe code outside the syscall and mmap modules: a foreign
//! call has no safe form.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

type CplusDemangle = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_char;

/// libiberty's `DMGL_NO_OPTS`, what perf passes unless run with `-v`.
const NO_OPTS: c_int = 0;

/// Set `BPFPROF_DEMANGLER=builtin` to demangle without libbfd (to compare
/// the two, or if a libbfd misbehaves).
const ENV: &str = "BPFPROF_DEMANGLER";

static DEMANGLER: OnceLock<Option<CplusDemangle>> = OnceLock::new();

/// Whether names are demangled by libiberty.
#[cfg(test)]
pub fn available() -> bool {
    demangler().is_some()
}

/// `name` demangled as perf shows it: `Some(name)` unchanged where
/// libiberty finds no mangled name in it; `None` without libbfd.
pub fn demangle(name: &str) -> Option<String> {
    let f = demangler()?;
    // A name with a NUL in it is no symbol name: left as it is.
    let Ok(c) = CString::new(name) else {
        return Some(name.to_string());
    };
    // SAFETY: `f` is libiberty's cplus_demangle, which reads the
    // NUL-terminated string it is given and returns NULL or a string it
    // allocated with malloc, which is ours to free. It keeps no state
    // between calls but the demangling style, which nothing here sets, so
    // calls from several threads at once are safe.
    unsafe {
        let out = f(c.as_ptr(), NO_OPTS);
        if out.is_null() {
            return Some(name.to_string());
        }
        let s = CStr::from_ptr(out).to_string_lossy().into_owned();
        libc::free(out.cast::<c_void>());
        Some(s)
    }
}

/// Find and load libbfd now rather than at the first name: finding it
/// takes milliseconds (a scan of the library directories, then dlopen),
/// which the symbol loader can spend while the report still reads.
pub fn prepare() {
    let _ = demangler();
}

fn demangler() -> Option<CplusDemangle> {
    *DEMANGLER.get_or_init(|| {
        if std::env::var(ENV).is_ok_and(|v| v == "builtin") {
            return None;
        }
        candidates().iter().find_map(|p| open(p))
    })
}

/// libbfd's shared objects in the system's library directories, in
/// reverse name order within each: the newest version first where the
/// versions have as many digits (`2.41` before `2.40`, but `2.9` before
/// `2.10`); any of them has the demangler.
fn candidates() -> Vec<PathBuf> {
    let arch = std::env::consts::ARCH;
    let dirs = [
        format!("/usr/lib/{arch}-linux-gnu"),
        format!("/lib/{arch}-linux-gnu"),
        "/usr/lib64".to_string(),
        "/usr/lib".to_string(),
    ];
    let mut found = Vec::new();
    let mut seen = Vec::new();
    for dir in dirs {
        // /lib is /usr/lib on merged-/usr systems: each directory once.
        let Ok(real) = std::fs::canonicalize(&dir) else {
            continue;
        };
        if seen.contains(&real) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            continue;
        };
        seen.push(real);
        let mut here: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libbfd") && n.contains(".so"))
            })
            .collect();
        here.sort();
        here.reverse();
        found.extend(here);
    }
    found
}

fn open(path: &Path) -> Option<CplusDemangle> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let sym = c"cplus_demangle";
    // SAFETY: dlopen and dlsym take NUL-terminated strings, which these
    // are. The library, a system one found by its absolute path, stays
    // loaded for the life of the process (never dlclose'd), so the
    // function pointer stays valid. cplus_demangle's C signature is
    // `char *cplus_demangle (const char *mangled, int options)`, which
    // `CplusDemangle` matches.
    unsafe {
        let handle = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            return None;
        }
        let f = libc::dlsym(handle, sym.as_ptr());
        if f.is_null() {
            libc::dlclose(handle);
            return None;
        }
        Some(std::mem::transmute::<*mut c_void, CplusDemangle>(f))
    }
}
