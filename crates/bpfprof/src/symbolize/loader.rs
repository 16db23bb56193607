//! Loading symbol sources on the second core while the recording is read:
//! /proc/kallsyms first, then the ELF symbols of each binary as soon as it
//! gets its first sample. The report joins the loader after the pass over
//! the records, so these loads overlap with it instead of following it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

use super::file_map::{map_file, FileBytes};
use super::{debug_files, kallsyms_cache, DsoId, DsoKind, ElfSymbols, Kallsyms};

pub struct Job {
    pub dso: DsoId,
    pub kind: DsoKind,
    pub path: PathBuf,
    pub build_id: Option<Vec<u8>>,
}

pub struct Loaded {
    pub kallsyms: Kallsyms,
    pub elfs: Vec<(DsoId, Option<ElfSymbols>)>,
}

pub struct Loader {
    tx: Sender<Job>,
    handle: JoinHandle<Loaded>,
}

impl Loader {
    pub fn start(kallsyms: PathBuf) -> Loader {
        let (tx, rx) = channel::<Job>();
        let handle = std::thread::spawn(move || {
            let kallsyms = kallsyms_cache::load(&kallsyms).unwrap_or_default();
            let elfs = rx
                .iter()
                .map(|j| (j.dso, load_elf(&j.path, j.kind, j.build_id.as_deref())))
                .collect();
            Loaded { kallsyms, elfs }
        });
        Loader { tx, handle }
    }

    pub fn request(&self, job: Job) {
        // A send fails only if the thread died; the join reports that.
        let _ = self.tx.send(job);
    }

    pub fn finish(self) -> Loaded {
        drop(self.tx);
        self.handle.join().unwrap_or_else(|_| Loaded {
            kallsyms: Kallsyms::default(),
            elfs: Vec::new(),
        })
    }
}

/// A binary's function symbols, from its separate debug file when it is
/// stripped; `None` when unreadable or rebuilt since the recording (its
/// build id differs), so that no wrong names are shown.
pub fn load_elf(path: &Path, kind: DsoKind, build_id: Option<&[u8]>) -> Option<ElfSymbols> {
    let data = match kind {
        DsoKind::Vdso => FileBytes::Owned(debug_files::vdso_image(build_id)?),
        DsoKind::User => map_file(path)?,
        _ => return None,
    };
    let elf = ElfSymbols::parse(data).ok()?;
    if let (Some(want), Some(have)) = (build_id, &elf.build_id) {
        if want != have.as_slice() {
            return None;
        }
    }
    if elf.has_symtab {
        return Some(elf);
    }
    let dbg = debug_files::find(path, elf.build_id.as_deref())
        .and_then(|p| map_file(&p))
        .and_then(|b| ElfSymbols::parse(b).ok())
        .filter(|e| e.has_symtab);
    Some(match dbg {
        Some(dbg) => elf.with_symbols_of(dbg),
        None => elf,
    })
}
