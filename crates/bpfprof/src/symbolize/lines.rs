//! Source lines of user code from DWARF, read from the same file perf
//! reads them from: the separate debug file when there is one (perf's
//! symbol source comes first from /usr/lib/debug), else the binary.

use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSymbol};

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// One file's line tables.
pub struct DwarfLines {
    ctx: addr2line::Context<Reader>,
    /// Allocated sections as [start, end) and their index.
    sections: Vec<(u64, u64, usize)>,
    /// Code symbols (symtab and dynsym) as (section index, address), sorted.
    syms: Vec<(usize, u64)>,
}

/// What the line tables say about an address.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The file (as DWARF names it, usually a full path) and line.
    Line(Option<String>, u32),
    /// No line, but a symbol before it in its section: GNU addr2line then
    /// names that function and prints `??:?`, which perf takes as a line.
    FunctionOnly,
    /// Nothing at all (GNU addr2line's `??:0`, which perf takes as none).
    Nothing,
}

impl DwarfLines {
    /// The line tables for `binary` (the path as read, with any symfs
    /// prefix); `None` when no file can be read or the binary was rebuilt
    /// since the recording (its build id differs), so that no wrong lines
    /// are shown. A file without DWARF gives tables that find nothing.
    pub fn load(binary: &Path, build_id: Option<&[u8]>) -> Option<DwarfLines> {
        let data = std::fs::read(binary).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let have = file.build_id().ok().flatten();
        if let (Some(want), Some(have)) = (build_id, have) {
            if want != have {
                return None;
            }
        }
        let id = build_id.or(have).map(<[u8]>::to_vec);
        if let Some(dbg) = super::debug_files::find(binary, id.as_deref()) {
            if let Some(lines) = std::fs::read(&dbg)
                .ok()
                .and_then(|d| Self::parse(&d).filter(|(_, has)| *has))
            {
                return Some(lines.0);
            }
        }
        Self::parse(&data).map(|(l, _)| l)
    }

    /// The tables of one ELF image, and whether it has DWARF at all.
    fn parse(data: &[u8]) -> Option<(DwarfLines, bool)> {
        let file = object::File::parse(data).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let has = file.section_by_name(".debug_info").is_some();
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            // Debian's debug files compress their sections (SHF_COMPRESSED).
            let bytes: Arc<[u8]> = match file.section_by_name(id.name()) {
                Some(s) => s
                    .uncompressed_data()
                    .map_or_else(|_| Arc::from(&[][..]), |d| Arc::from(&*d)),
                None => Arc::from(&[][..]),
            };
            Ok(gimli::EndianArcSlice::new(bytes, endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        let sections = file
            .sections()
            .filter(|s| s.size() > 0 && s.address() > 0)
            .map(|s| (s.address(), s.address() + s.size(), s.index().0))
            .collect();
        let mut syms: Vec<(usize, u64)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| {
                !matches!(
                    s.kind(),
                    object::SymbolKind::Section | object::SymbolKind::File
                )
            })
            .filter_map(|s| Some((s.section_index()?.0, s.address())))
            .collect();
        syms.sort_unstable();
        syms.dedup();
        Some((
            DwarfLines {
                ctx,
                sections,
                syms,
            },
            has,
        ))
    }

    /// The file and line of the code at ELF virtual address `vaddr`: the
    /// innermost inlined function's, as addr2line prints first.
    pub fn find(&self, vaddr: u64) -> Found {
        if let Ok(Some(loc)) = self.ctx.find_location(vaddr) {
            return Found::Line(loc.file.map(str::to_owned), loc.line.unwrap_or(0));
        }
        let Some(&(_, _, sec)) = self
            .sections
            .iter()
            .find(|&&(start, end, _)| start <= vaddr && vaddr < end)
        else {
            return Found::Nothing;
        };
        let i = self.syms.partition_point(|&s| s <= (sec, vaddr));
        match i.checked_sub(1).map(|i| self.syms[i]) {
            Some((s, _)) if s == sec => Found::FunctionOnly,
            _ => Found::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::test_support::{binutils, skip};

    /// Against binutils' addr2line on a program built here with -g.
    #[test]
    fn lines_match_addr2line() {
        let (Some(a2l), Some(cc)) = (binutils("addr2line"), testkit::tool("cc")) else {
            if testkit::tool("cc").is_none() {
                skip("needs cc");
            }
            return;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let src = dir.path().join("lines.c");
        std::fs::write(
            &src,
            "int f(int x) {\n  int y = x * 3;\n  return y + 1;\n}\nint main(void) { return f(2); }\n",
        )
        .expect("write source");
        let bin = dir.path().join("lines");
        let st = std::process::Command::new(cc)
            .args(["-g", "-O0", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(st.success(), "cc failed");
        let data = std::fs::read(&bin).expect("read binary");
        let file = object::File::parse(&*data).expect("parse");
        let f = file
            .symbols()
            .find(|s| object::ObjectSymbol::name(s) == Ok("f"))
            .expect("symbol f");
        let start = object::ObjectSymbol::address(&f);
        let lines = DwarfLines::load(&bin, None).expect("lines");
        let mut checked = 0;
        for addr in start..start + object::ObjectSymbol::size(&f) {
            let out = std::process::Command::new(&a2l)
                .arg("-e")
                .arg(&bin)
                .arg(format!("{addr:#x}"))
                .output()
                .expect("run addr2line");
            let text = String::from_utf8_lossy(&out.stdout);
            let (file, line) = text.trim().rsplit_once(':').expect("file:line");
            let line: u32 = line
                .split_whitespace()
                .next()
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let Found::Line(ours, our_line) = lines.find(addr) else {
                panic!("no line at {addr:#x}");
            };
            assert_eq!(ours.as_deref(), Some(file), "file at {addr:#x}");
            assert_eq!(our_line, line, "line at {addr:#x}");
            checked += 1;
        }
        assert!(checked > 4);
    }
}
