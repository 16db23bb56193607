//! Loading symbol sources on the second core while the recording is read:
//! /proc/kallsyms first, then the ELF symbols of each binary as soon as it
//! gets its first sample. Each source is handed back as soon as it is
//! loaded, so that the replay can resolve locations while it waits for
//! the reader, instead of all of them after the pass.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use super::file_map::FileBytes;
use super::{debug_files, kallsyms_cache, DsoId, DsoKind, ElfSymbols, Kallsyms};

pub struct Job {
    pub dso: DsoId,
    pub kind: DsoKind,
    pub path: PathBuf,
    pub build_id: Option<Vec<u8>>,
}

/// A loaded source.
pub enum Loaded {
    Kallsyms(Kallsyms),
    Elf(DsoId, Option<ElfSymbols>),
}

pub struct Loader {
    tx: Sender<Job>,
    /// Behind a lock only so that a profile can be read from several
    /// threads: one thread takes from it.
    done: Mutex<Receiver<Loaded>>,
    handle: JoinHandle<()>,
}

impl Loader {
    pub fn start(kallsyms: PathBuf) -> Loader {
        let (tx, rx) = channel::<Job>();
        let (give, done) = channel();
        let handle = std::thread::spawn(move || {
            let k = kallsyms_cache::load(&kallsyms).unwrap_or_default();
            // A send fails only once the receiver stopped caring.
            let _ = give.send(Loaded::Kallsyms(k));
            // Before the first binary's symbols are asked for, which is
            // once the report has read the file.
            super::libiberty::prepare();
            for j in rx {
                let elf = load_elf(&j.path, j.kind, j.build_id.as_deref());
                let _ = give.send(Loaded::Elf(j.dso, elf));
            }
        });
        Loader {
            tx,
            done: Mutex::new(done),
            handle,
        }
    }

    pub fn request(&self, job: Job) {
        // A send fails only if the thread died; `finish` copes with that.
        let _ = self.tx.send(job);
    }

    /// Sources loaded since the last call, without waiting.
    pub fn ready(&self) -> Vec<Loaded> {
        match self.done.lock() {
            Ok(done) => done.try_iter().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Every source still to come, waiting for the loads asked for.
    pub fn finish(self) -> impl Iterator<Item = Loaded> {
        drop(self.tx);
        let _ = self.handle.join();
        let done = self.done.into_inner().unwrap_or_else(|e| e.into_inner());
        done.into_iter()
    }
}

/// A binary's function symbols, from its separate debug file when it is
/// stripped; `None` when unreadable or rebuilt since the recording (its
/// build id differs), so that no wrong names are shown.
pub fn load_elf(path: &Path, kind: DsoKind, build_id: Option<&[u8]>) -> Option<ElfSymbols> {
    let elf = match kind {
        DsoKind::Vdso => {
            ElfSymbols::parse(FileBytes::Owned(debug_files::vdso_image(build_id)?)).ok()?
        }
        DsoKind::User => ElfSymbols::load(path)?,
        _ => return None,
    };
    if let (Some(want), Some(have)) = (build_id, &elf.build_id) {
        if want != have.as_slice() {
            return None;
        }
    }
    if elf.has_symtab {
        return Some(elf);
    }
    let dbg = debug_files::find(path, elf.build_id.as_deref())
        .and_then(|p| ElfSymbols::load(&p))
        .filter(|e| e.has_symtab);
    Some(match dbg {
        Some(dbg) => elf.with_symbols_of(dbg),
        None => elf,
    })
}
