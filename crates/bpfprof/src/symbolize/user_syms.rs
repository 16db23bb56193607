//! User locations to functions without changing the symbolizer: the
//! lookup (symbol tables, demangling) is most of the cost of resolving a
//! big flat profile, and apart from interning it only reads, so many
//! locations can be looked up on several cores, then interned in order.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::elf::{self, ElfSymbols};
use super::{loader, Dso, DsoId, Frame, SymId, Symbolizer};

/// What a user location's function is.
pub(super) enum UserSym {
    /// The function found for the location looked up just before.
    Same,
    /// A function already interned.
    Known { sym: SymId },
    /// A function not interned yet, with its demangled name.
    New { start: u64, name: String },
    /// No function: named by its file offset.
    Address { rel: u64, name: String },
}

/// What a lookup reads: the shared objects (whose symbols load on first
/// use), and the symbols interned so far.
pub(super) struct UserLookup<'a> {
    pub dsos: &'a [Dso],
    pub symfs: Option<&'a Path>,
    pub known: &'a FxHashMap<(DsoId, u64), SymId>,
}

/// The function last found: (shared object, [start, end) in its virtual
/// addresses).
pub(super) type Last = Option<(DsoId, u64, u64)>;

impl<'a> UserLookup<'a> {
    pub fn elf(&self, dso: DsoId) -> Option<&'a ElfSymbols> {
        let d = &self.dsos[dso as usize];
        d.elf
            .get_or_init(|| {
                let path = path_in(self.symfs, &d.name);
                loader::load_elf(&path, d.kind, d.build_id.as_deref())
            })
            .as_ref()
    }

    /// The function of the file offset `rel` of `dso`; `last` is the one
    /// found before, and becomes this one.
    pub fn find(&self, dso: DsoId, rel: u64, last: &mut Last) -> UserSym {
        let elf = self.elf(dso);
        let vaddr = elf.and_then(|e| e.offset_to_vaddr(rel));
        if let (Some(v), Some((d, start, end))) = (vaddr, *last) {
            if d == dso && start <= v && v < end {
                return UserSym::Same;
            }
        }
        let found = vaddr.and_then(|v| elf?.lookup_range(v));
        let Some((start, end)) = found else {
            let name = format!("{rel:#018x}");
            return UserSym::Address { rel, name };
        };
        *last = Some((dso, start, end));
        // Demangle only the first time a function is hit.
        if let Some(&sym) = self.known.get(&(dso, start)) {
            return UserSym::Known { sym };
        }
        let name = elf
            .and_then(|e| e.lookup(start))
            .map(|(n, _)| elf::demangle(&n))
            .unwrap_or_default();
        UserSym::New { start, name }
    }

    /// [`Self::find`] for each location, in order.
    fn find_all(&self, locs: &[(DsoId, u64)]) -> Vec<UserSym> {
        let mut last = None;
        locs.iter()
            .map(|&(dso, rel)| self.find(dso, rel, &mut last))
            .collect()
    }
}

/// Where a shared object's file is read from, under `--symfs` if given.
pub(super) fn path_in(symfs: Option<&Path>, name: &str) -> PathBuf {
    match symfs {
        Some(root) => root.join(name.trim_start_matches('/')),
        None => PathBuf::from(name),
    }
}

/// Fewer locations than this are looked up on one core: a thread costs
/// more than it saves.
const MIN_PER_CORE: usize = 4096;

impl Symbolizer {
    pub(super) fn user_lookup(&self) -> UserLookup<'_> {
        UserLookup {
            dsos: &self.dsos,
            symfs: self.symfs.as_deref(),
            known: &self.sym_index,
        }
    }

    /// The frames of user locations (shared object, file offset), as
    /// [`Symbolizer::resolve`] gives them one by one: looked up on every
    /// core, then interned in order. In address order, each core walks its
    /// part of the symbol tables forward.
    pub fn resolve_users(&mut self, locs: &[(DsoId, u64)]) -> Vec<Frame> {
        let lookup = self.user_lookup();
        let found = crate::parallel::map_parts(locs, MIN_PER_CORE, |part| lookup.find_all(part));
        let mut frames: Vec<Frame> = Vec::with_capacity(locs.len());
        // Room for every new symbol at once: a big profile names tens of
        // thousands, and the tables grew (rehashing, copying) as they came.
        let new = found
            .iter()
            .flatten()
            .filter(|u| matches!(u, UserSym::New { .. } | UserSym::Address { .. }))
            .count();
        self.syms.reserve(new);
        self.sym_index.reserve(new);
        for (&(dso, _), u) in locs.iter().zip(found.into_iter().flatten()) {
            // Each part starts with a lookup of its own, never `Same`.
            let f = match frames.last() {
                Some(&prev) => self.intern_user(dso, u, prev),
                None => self.intern_user(dso, u, Frame { dso, sym: 0 }),
            };
            frames.push(f);
        }
        frames
    }

    /// The frame of what [`UserLookup::find`] found; `prev` is the frame of
    /// the location looked up before it.
    pub(super) fn intern_user(&mut self, dso: DsoId, u: UserSym, prev: Frame) -> Frame {
        let sym = match u {
            UserSym::Same => return prev,
            UserSym::Known { sym, .. } => sym,
            UserSym::New { start, name, .. } => self.intern(dso, name, true, start),
            UserSym::Address { rel, name } => self.intern(dso, name, false, rel),
        };
        Frame { dso, sym }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::{BpfSymbols, DsoKind, Loc};

    fn symbolizer() -> (Symbolizer, DsoId) {
        // No kernel symbols are needed; the loader finds none there.
        let mut s = Symbolizer::new("/nonexistent/kallsyms".into(), BpfSymbols::new([]));
        let exe = std::env::current_exe().expect("test binary path");
        let dso = s.dso_id(DsoKind::User, &exe.to_string_lossy());
        (s, dso)
    }

    /// What a frame shows: the symbol's name, and whether it was found.
    fn shown(s: &Symbolizer, f: Frame) -> (String, bool, u64) {
        let sym = &s.syms[f.sym as usize];
        (sym.name.clone(), sym.resolved, sym.start)
    }

    #[test]
    fn many_at_once_are_what_one_at_a_time_gives() {
        let exe = std::env::current_exe().expect("test binary path");
        let len = std::fs::metadata(&exe).expect("test binary").len();
        // Offsets all over the file, in and out of functions, with runs
        // in one function; more than one core's share.
        let mut locs: Vec<(DsoId, u64)> = Vec::new();
        let (mut one, dso) = symbolizer();
        let step = (len / 6000).max(1);
        for off in (0..len).step_by(step as usize) {
            locs.extend([(dso, off), (dso, off + 1), (dso, off + 5)]);
        }
        assert!(locs.len() > 2 * MIN_PER_CORE);
        // The oracle: the symbol table itself, asked about each location.
        let elf = one.elf(dso).expect("the test binary's symbols");
        let want: Vec<(String, bool, u64)> = locs
            .iter()
            .map(
                |&(_, rel)| match elf.offset_to_vaddr(rel).and_then(|v| elf.lookup(v)) {
                    Some((name, start)) => (elf::demangle(&name), true, start),
                    None => (format!("{rel:#018x}"), false, rel),
                },
            )
            .collect();
        assert!(
            want.iter().any(|w| w.1),
            "no function found in the test binary"
        );
        assert!(want.iter().any(|w| !w.1), "every offset was in a function");
        let (mut many, _) = symbolizer();
        let frames = many.resolve_users(&locs);
        for (i, w) in want.iter().enumerate() {
            let at = format!("location {i}: offset {:#x}", locs[i].1);
            assert_eq!(&shown(&many, frames[i]), w, "{at}, many at once");
            let f = one.resolve(Loc::User(dso, locs[i].1));
            assert_eq!(&shown(&one, f), w, "{at}, one at a time");
        }
        // Interned once each: equal names at equal addresses, equal ids.
        assert_eq!(many.syms.len(), one.syms.len());
    }

    /// In an executable not loaded at its file offsets (non-PIE: text at
    /// 0x400000 past its offset), an offset outside every function can be
    /// a function's virtual address. perf shows the two apart; so must we,
    /// whichever is resolved first (seen on cc1: which name the merged row
    /// got depended on the replay's timing).
    #[test]
    fn an_offset_outside_functions_is_not_the_function_at_that_address() {
        let (Some(clang), Some(nm)) = (testkit::tool("clang"), testkit::tool("nm")) else {
            testkit::skip("needs clang and nm (apt-get install clang binutils)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("exe.c");
        // Data of no symbol past 0x400000 bytes of file, so that the
        // functions' virtual addresses are offsets inside it.
        std::fs::write(
            &src,
            "__asm__(\".pushsection .rodata\\n.fill 0x600000, 1, 1\\n.popsection\");\n\
             int f(int x) { return x * 3; }\n\
             int main(int c, char **v) { return f(c); }\n",
        )
        .unwrap();
        let exe = dir.path().join("exe");
        testkit::run(
            std::process::Command::new(clang)
                .args(["-O1", "-fno-pie", "-no-pie", "-o"])
                .arg(&exe)
                .arg(&src),
        );
        let listing = testkit::run(std::process::Command::new(nm).arg(&exe));
        let f_vaddr = String::from_utf8_lossy(&listing.stdout)
            .lines()
            .find_map(|l| l.strip_suffix(" T f").map(|a| u64::from_str_radix(a, 16)))
            .expect("nm lists f")
            .unwrap();
        let f_offset = f_vaddr - 0x40_0000;
        for f_first in [true, false] {
            let mut s = Symbolizer::new("/nonexistent/kallsyms".into(), BpfSymbols::new([]));
            let dso = s.dso_id(DsoKind::User, &exe.to_string_lossy());
            let elf = s.elf(dso).expect("the executable's symbols");
            assert_eq!(
                elf.offset_to_vaddr(f_offset),
                Some(f_vaddr),
                "text at 0x400000 + offset"
            );
            let blob_vaddr = elf
                .offset_to_vaddr(f_vaddr)
                .expect("offset inside the file");
            assert!(
                elf.lookup(blob_vaddr).is_none(),
                "offset {f_vaddr:#x} is in no function"
            );
            let (function, address) = (Loc::User(dso, f_offset), Loc::User(dso, f_vaddr));
            let order = match f_first {
                true => [function, address],
                false => [address, function],
            };
            let frames = order.map(|l| s.frame(l));
            let (f, a) = match f_first {
                true => (frames[0], frames[1]),
                false => (frames[1], frames[0]),
            };
            assert_eq!(
                shown(&s, f),
                ("f".to_string(), true, f_vaddr),
                "f first: {f_first}"
            );
            assert_eq!(
                shown(&s, a),
                (format!("{f_vaddr:#018x}"), false, f_vaddr),
                "f first: {f_first}"
            );
        }
    }
}
