//! Turning addresses into (shared object, symbol) pairs, as they were at the
//! time of each sample: kernel symbols from kallsyms, BPF programs from the
//! recording's own KSYMBOL/BPF_EVENT stream, user code from the recorded
//! mappings and the binaries' ELF symbols.

pub mod bpf;
mod by_address;
mod cache_files;
mod debug_files;
mod demangle;
pub mod elf;
pub(crate) mod file_map;
pub mod kallsyms;
pub(crate) mod kallsyms_cache;
pub mod kcore;
mod libiberty;
pub mod lines;
mod loader;
pub(crate) mod plt;
mod threads;
mod user_syms;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

pub use bpf::{BpfSymId, BpfSymbols};
pub use elf::ElfSymbols;
pub use kallsyms::Kallsyms;
pub use threads::{overlapped, Map, Threads};

pub type DsoId = u32;
pub type SymId = u32;
pub type CommId = u32;

/// What kind of code a shared object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DsoKind {
    Kernel,
    Module,
    /// One BPF program's sub-program, or a trampoline/dispatcher image.
    Bpf,
    User,
    Vdso,
    Unknown,
}

/// A shared object: the kernel, a module, a BPF (sub-)program, or a file.
#[derive(Debug)]
pub struct Dso {
    /// The path, or the bracketed kernel name, as perf's long name.
    pub name: String,
    /// What perf prints in the Shared Object column.
    pub short: String,
    pub kind: DsoKind,
    pub build_id: Option<Vec<u8>>,
    elf: OnceLock<Option<ElfSymbols>>,
}

impl Dso {
    fn new(name: String, kind: DsoKind) -> Dso {
        let short = match kind {
            DsoKind::User => Path::new(&name)
                .file_name()
                .map_or_else(|| name.clone(), |f| f.to_string_lossy().into_owned()),
            _ => name.clone(),
        };
        Dso {
            name,
            short,
            kind,
            build_id: None,
            elf: OnceLock::new(),
        }
    }

    pub fn is_kernel(&self) -> bool {
        matches!(self.kind, DsoKind::Kernel | DsoKind::Module | DsoKind::Bpf)
    }
}

/// A resolved symbol.
#[derive(Debug, Clone)]
pub struct Sym {
    pub name: String,
    pub dso: DsoId,
    /// Whether a real symbol was found (else `name` is a hex address).
    pub resolved: bool,
    /// Start address in the DSO's own address space (ELF vaddr, or the
    /// kernel address), for annotate.
    pub start: u64,
    /// The BPF registration this symbol came from.
    pub bpf: Option<BpfSymId>,
    /// The symbol report rows group under. Itself, except that BPF
    /// functions of different programs with the same name (same code, so
    /// the same tag) are separate symbols, each charged to its own program,
    /// but share one row, as in perf.
    pub group: SymId,
}

/// One resolved frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub dso: DsoId,
    pub sym: SymId,
}

/// Where an address pointed at the time of its sample: everything that
/// depends on time (live BPF programs, a process's mappings) is settled,
/// while the symbol lookup itself waits until the sources are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Loc {
    Kernel(u64),
    Bpf(BpfSymId),
    /// A DSO and the file offset in it.
    User(DsoId, u64),
    Unknown(u64),
}

/// The frames a [`Symbolizer`] has resolved, read only (see
/// [`Symbolizer::known_frames`]).
pub struct KnownFrames<'a> {
    frames: &'a FxHashMap<Loc, Frame>,
    sym_index: &'a FxHashMap<(DsoId, u64), SymId>,
    unknown_dso: Option<DsoId>,
}

impl KnownFrames<'_> {
    /// The frame [`Symbolizer::frame`] would give `loc`, if it gave it
    /// before; `None` where it must resolve it.
    pub fn get(&self, loc: Loc) -> Option<Frame> {
        match loc {
            Loc::Unknown(addr) => {
                let dso = self.unknown_dso?;
                let sym = *self.sym_index.get(&sym_key(dso, false, addr))?;
                Some(Frame { dso, sym })
            }
            _ => self.frames.get(&loc).copied(),
        }
    }
}

/// A symbol's key in [`Symbolizer`]'s index, BPF's aside: a function by
/// its start, an address no function covers by the address, apart. The
/// two are in different spaces (a virtual address, a file offset) that
/// overlap: in an executable not mapped at its file offsets, such as
/// cc1, an offset outside every function may be a function's address.
fn sym_key(dso: DsoId, resolved: bool, start: u64) -> (DsoId, u64) {
    const ADDRESS: u64 = 1 << 61;
    match resolved {
        true => (dso, start),
        false => (dso, start | ADDRESS),
    }
}

/// Address-space boundary on x86-64 and arm64: kernel addresses are above.
pub const KERNEL_START: u64 = 0xffff_0000_0000_0000;

/// Resolves addresses as the recording is replayed in time order.
pub struct Symbolizer {
    pub dsos: Vec<Dso>,
    pub syms: Vec<Sym>,
    /// Symbols are identified by address within their DSO, as perf's
    /// sort does (two functions may share a demangled name); BPF symbols by
    /// DSO alone, which merges same-named programs as perf does.
    sym_index: FxHashMap<(DsoId, u64), SymId>,
    /// By name, then kind: looked up by `&str`, without a key to build.
    /// A name nearly always has one kind.
    dso_index: FxHashMap<Box<str>, Vec<(DsoKind, DsoId)>>,
    pub kallsyms: Kallsyms,
    pub bpf: BpfSymbols,
    bpf_frames: Vec<Option<Frame>>,
    pub threads: Threads,
    frames: FxHashMap<Loc, Frame>,
    /// The group symbol of each BPF DSO (a BPF DSO is a function name).
    bpf_groups: FxHashMap<DsoId, SymId>,
    kernel_dso: Option<DsoId>,
    unknown_dso: Option<DsoId>,
    /// The kernel symbol resolved last, as [start, end) and its frame:
    /// locations are resolved in address order, and most kernel locations
    /// fall in the function just resolved.
    last_kernel: Option<(u64, u64, Frame)>,
    /// The same for user code: the DSO and [start, end) of the function
    /// resolved last, in the ELF's virtual addresses.
    last_user: Option<(DsoId, u64, u64, Frame)>,
    loader: Option<loader::Loader>,
    kallsyms_loaded: bool,
    requested: Vec<bool>,
    /// Files whose symbols could not be read, with why (reported once).
    pub unreadable: Vec<(String, String)>,
    /// Prefix for binary paths (`--symfs`).
    pub symfs: Option<PathBuf>,
    pub build_ids: FxHashMap<String, Vec<u8>>,
}

impl Symbolizer {
    /// Start resolving; `kallsyms` is loaded in the background (see
    /// [`Symbolizer::finish_loading`]).
    pub fn new(kallsyms: PathBuf, bpf: BpfSymbols) -> Symbolizer {
        Symbolizer {
            dsos: Vec::new(),
            syms: Vec::new(),
            sym_index: FxHashMap::default(),
            dso_index: FxHashMap::default(),
            kallsyms: Kallsyms::default(),
            bpf,
            bpf_frames: Vec::new(),
            threads: Threads::default(),
            frames: FxHashMap::default(),
            bpf_groups: FxHashMap::default(),
            kernel_dso: None,
            unknown_dso: None,
            last_kernel: None,
            last_user: None,
            loader: Some(loader::Loader::start(kallsyms)),
            kallsyms_loaded: false,
            requested: Vec::new(),
            unreadable: Vec::new(),
            symfs: None,
            build_ids: FxHashMap::default(),
        }
    }

    pub fn dso_id(&mut self, kind: DsoKind, name: &str) -> DsoId {
        let mut known = self.dso_index.get(name).into_iter().flatten();
        if let Some(&(_, id)) = known.find(|&&(k, _)| k == kind) {
            return id;
        }
        let id = self.dsos.len() as DsoId;
        let mut d = Dso::new(name.to_string(), kind);
        d.build_id = self.build_ids.get(name).cloned();
        self.dsos.push(d);
        self.dso_index
            .entry(name.into())
            .or_default()
            .push((kind, id));
        id
    }

    fn sym_id(
        &mut self,
        dso: DsoId,
        name: &str,
        resolved: bool,
        start: u64,
        bpf: Option<BpfSymId>,
    ) -> SymId {
        // A BPF function is keyed by its program and sub-program, so that
        // per-program views stay exact; others by address, like perf.
        let key = match bpf.and_then(|b| self.bpf.syms[b as usize].prog) {
            Some((prog, sub)) => (dso, (1 << 63) | (u64::from(sub) << 32) | u64::from(prog)),
            None if bpf.is_some() => (dso, (1 << 62) | u64::from(bpf.unwrap_or(0))),
            None => (dso, start),
        };
        if let Some(&id) = self.sym_index.get(&key) {
            return id;
        }
        let sym = Sym {
            name: name.to_string(),
            dso,
            resolved,
            start,
            bpf,
            group: 0,
        };
        self.push_sym(key, sym)
    }

    /// [`Self::sym_id`] of a symbol that is not BPF's, taking its name.
    fn intern(&mut self, dso: DsoId, name: String, resolved: bool, start: u64) -> SymId {
        let key = sym_key(dso, resolved, start);
        if let Some(&id) = self.sym_index.get(&key) {
            return id;
        }
        let sym = Sym {
            name,
            dso,
            resolved,
            start,
            bpf: None,
            group: 0,
        };
        self.push_sym(key, sym)
    }

    fn push_sym(&mut self, key: (DsoId, u64), mut sym: Sym) -> SymId {
        let id = self.syms.len() as SymId;
        sym.group = match sym.bpf {
            Some(_) => *self.bpf_groups.entry(sym.dso).or_insert(id),
            None => id,
        };
        self.syms.push(sym);
        self.sym_index.insert(key, id);
        id
    }

    /// Settle where an address points now (during the replay).
    pub fn locate(&mut self, pid: u32, addr: u64, kernel: bool) -> Loc {
        if kernel {
            return match self.bpf.lookup(addr) {
                Some(b) => Loc::Bpf(b),
                None => Loc::Kernel(addr),
            };
        }
        match self.threads.find_map(pid, addr) {
            Some(m) => {
                self.prefetch(m.dso);
                Loc::User(m.dso, (addr - m.start).wrapping_add(m.pgoff))
            }
            None => Loc::Unknown(addr),
        }
    }

    /// Have the loader read a DSO's symbols before they are needed.
    pub fn prefetch(&mut self, dso: DsoId) {
        let i = dso as usize;
        if self.requested.len() <= i {
            self.requested.resize(i + 1, false);
        }
        if std::mem::replace(&mut self.requested[i], true) {
            return;
        }
        let d = &self.dsos[i];
        if let Some(l) = &self.loader {
            l.request(loader::Job {
                dso,
                kind: d.kind,
                path: self.path_of(dso),
                build_id: d.build_id.clone(),
            });
        }
    }

    /// Take the sources loaded so far, without waiting.
    pub fn take_loaded(&mut self) {
        let ready: Vec<_> = self.loader.iter().flat_map(|l| l.ready()).collect();
        for x in ready {
            self.install(x);
        }
    }

    /// Wait for the background loads; call once the replay is done and
    /// before [`Symbolizer::frame`] is asked about anything that
    /// [`Symbolizer::can_resolve`] did not allow.
    pub fn finish_loading(&mut self) {
        if let Some(l) = self.loader.take() {
            for x in l.finish() {
                self.install(x);
            }
        }
        self.kallsyms_loaded = true;
    }

    fn install(&mut self, x: loader::Loaded) {
        match x {
            loader::Loaded::Kallsyms(k) => {
                self.kallsyms = k;
                self.kallsyms_loaded = true;
            }
            loader::Loaded::Elf(dso, elf) => {
                let _ = self.dsos[dso as usize].elf.set(elf);
            }
        }
    }

    /// Whether a location can be resolved now, during the replay, to the
    /// frame it will have at the end: its symbols are loaded, and it is
    /// not BPF code (whose program id may come with a later BPF_EVENT).
    pub fn can_resolve(&self, loc: Loc) -> bool {
        match loc {
            Loc::Kernel(_) => self.kallsyms_loaded,
            Loc::Bpf(_) => false,
            Loc::User(dso, _) => self.dsos[dso as usize].elf.get().is_some(),
            Loc::Unknown(_) => true,
        }
    }

    /// What [`Symbolizer::frame`] already knows, to be read on several
    /// cores at once.
    pub fn known_frames(&self) -> KnownFrames<'_> {
        KnownFrames {
            frames: &self.frames,
            sym_index: &self.sym_index,
            unknown_dso: self.unknown_dso,
        }
    }

    /// The frame of a location, resolved once per location.
    pub fn frame(&mut self, loc: Loc) -> Frame {
        // Addresses in no map are most of the locations of a recording
        // whose stacks were walked through code without frame pointers,
        // each seen once: the symbol index alone remembers them.
        if let Loc::Unknown(addr) = loc {
            return self.unknown_frame(addr);
        }
        if let Some(&f) = self.frames.get(&loc) {
            return f;
        }
        let f = self.resolve(loc);
        self.frames.insert(loc, f);
        f
    }

    /// The frame of a location, not remembered by location: for callers
    /// that ask once per location. Only the last function found is kept,
    /// so asking in address order is cheapest.
    pub fn resolve(&mut self, loc: Loc) -> Frame {
        match loc {
            Loc::Kernel(addr) => self.kernel_frame(addr),
            Loc::Bpf(b) => self.bpf_frame(b),
            Loc::User(dso, rel) => self.user_frame(dso, rel),
            Loc::Unknown(addr) => self.unknown_frame(addr),
        }
    }

    fn user_frame(&mut self, dso: DsoId, rel: u64) -> Frame {
        let mut last = self.last_user.map(|(d, start, end, _)| (d, start, end));
        let u = self.user_lookup().find(dso, rel, &mut last);
        let in_function = !matches!(u, user_syms::UserSym::Address { .. });
        let prev = self.last_user.map_or(Frame { dso, sym: 0 }, |l| l.3);
        let f = self.intern_user(dso, u, prev);
        if let (true, Some((d, start, end))) = (in_function, last) {
            self.last_user = Some((d, start, end, f));
        }
        f
    }

    fn unknown_frame(&mut self, addr: u64) -> Frame {
        let dso = match self.unknown_dso {
            Some(d) => d,
            None => {
                let d = self.dso_id(DsoKind::Unknown, "[unknown]");
                self.unknown_dso = Some(d);
                d
            }
        };
        let sym = match self.sym_index.get(&sym_key(dso, false, addr)) {
            Some(&sym) => sym,
            None => self.intern(dso, format!("{addr:#018x}"), false, addr),
        };
        Frame { dso, sym }
    }

    fn kernel_frame(&mut self, addr: u64) -> Frame {
        if let Some((start, end, f)) = self.last_kernel {
            if start <= addr && addr < end {
                return f;
            }
        }
        let Some((k, end)) = self.kallsyms.lookup_range(addr) else {
            return self.unknown_frame(addr);
        };
        let (start, module) = (k.start, k.module.map(str::to_string));
        let dso = match module {
            None => match self.kernel_dso {
                Some(d) => d,
                None => {
                    let d = self.dso_id(DsoKind::Kernel, "[kernel.kallsyms]");
                    self.kernel_dso = Some(d);
                    d
                }
            },
            Some(m) => self.dso_id(DsoKind::Module, &format!("[{m}]")),
        };
        // Most kernel locations fall in functions already seen; the name
        // is looked up again (and copied) only for a new one.
        let sym = match self.sym_index.get(&(dso, start)) {
            Some(&sym) => sym,
            None => {
                let name = self.kallsyms.lookup(addr).map(|k| k.name.to_string());
                self.sym_id(dso, &name.unwrap_or_default(), true, start, None)
            }
        };
        let f = Frame { dso, sym };
        self.last_kernel = Some((start, end, f));
        f
    }

    fn bpf_frame(&mut self, b: BpfSymId) -> Frame {
        if let Some(Some(f)) = self.bpf_frames.get(b as usize) {
            return *f;
        }
        let (name, addr) = {
            let s = &self.bpf.syms[b as usize];
            (s.name.clone(), s.addr)
        };
        let dso = self.dso_id(DsoKind::Bpf, &name);
        let sym = self.sym_id(dso, &name, true, addr, Some(b));
        let f = Frame { dso, sym };
        if self.bpf_frames.len() <= b as usize {
            self.bpf_frames.resize(b as usize + 1, None);
        }
        self.bpf_frames[b as usize] = Some(f);
        f
    }

    /// The ELF symbols of a user DSO: prefetched during the replay, or
    /// read now.
    pub fn elf(&self, dso: DsoId) -> Option<&ElfSymbols> {
        self.user_lookup().elf(dso)
    }

    /// Where a user DSO's file is read from.
    pub fn path_of(&self, dso: DsoId) -> PathBuf {
        user_syms::path_in(self.symfs.as_deref(), &self.dsos[dso as usize].name)
    }
}

/// What the symbolizer's tests share: binutils as the oracle, and the
/// system's own libraries as inputs.
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::PathBuf;

    /// Say why a test skips; under CI (whose set-up installs binutils and
    /// the libraries) fail instead: the workspace's gate.
    pub use testkit::skip;

    /// A binutils program, or `None` once [`skip`] has said why.
    pub fn binutils(name: &str) -> Option<PathBuf> {
        let found = testkit::tool(name);
        if found.is_none() {
            skip(&format!("needs {name} (binutils)"));
        }
        found
    }

    /// A library of the system's, by file name.
    pub fn system_lib(name: &str) -> String {
        format!("/usr/lib/{}-linux-gnu/{name}", std::env::consts::ARCH)
    }
}
