//! Kernel symbols from /proc/kallsyms: the running kernel's text symbols,
//! with their module, sorted for lookup. BPF entries (`[bpf]`) are left out:
//! BPF programs are resolved from the recording's own KSYMBOL records, which
//! stay right after the program is gone.
//!
//! The table is held in one encoded form (see [`Kallsyms::encode`]) whether
//! it was parsed from text or mapped from the per-boot cache: a cached table
//! is used where it lies, checked but not copied.

use std::path::Path;

use super::file_map::FileBytes;

/// Bytes before the entries: entry count, names length, module count,
/// restricted flag.
const HEAD: usize = 13;
/// Bytes per entry: address, name offset, name length, module.
const ENTRY: usize = 16;

/// Sorted kernel text symbols.
pub struct Kallsyms {
    /// The encoded table, from `at` on.
    table: FileBytes,
    at: usize,
    n: usize,
    /// Where the names lie in `table`.
    names: usize,
    modules: Vec<String>,
    /// Set when every address read as 0 (kptr_restrict).
    pub restricted: bool,
}

impl Default for Kallsyms {
    fn default() -> Self {
        Kallsyms::decode(FileBytes::Owned(encode_parts(&[], "", &[], false)), 0)
            .expect("an empty table encodes")
    }
}

impl std::fmt::Debug for Kallsyms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kallsyms")
            .field("symbols", &self.n)
            .field("restricted", &self.restricted)
            .finish()
    }
}

/// A kernel address resolved against kallsyms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSym<'a> {
    pub name: &'a str,
    pub start: u64,
    /// `None` for the kernel image, else the module name.
    pub module: Option<&'a str>,
}

/// One symbol as parsed, before encoding.
struct Entry {
    addr: u64,
    name_off: u32,
    name_len: u16,
    /// Index into the modules, or u16::MAX for the kernel image.
    module: u16,
}

impl Kallsyms {
    pub fn load(path: &Path) -> std::io::Result<Kallsyms> {
        Ok(Self::parse(&std::fs::read(path)?))
    }

    /// Parse kallsyms text. Lines are split by hand, without an allocation
    /// each: there are over 100,000 of them and the report waits for this.
    pub fn parse(text: &[u8]) -> Kallsyms {
        let mut entries = Vec::new();
        let mut names = String::new();
        let mut modules: Vec<String> = Vec::new();
        let mut any_nonzero = false;
        let mut total = 0usize;
        for line in text.split(|&b| b == b'\n') {
            let mut it = line
                .split(|b| b.is_ascii_whitespace())
                .filter(|f| !f.is_empty());
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            total += 1;
            let Some(addr) = parse_hex(addr) else {
                continue;
            };
            any_nonzero |= addr != 0;
            // Text symbols only (and the absolute _text/_etext markers are T).
            if !matches!(kind, b"T" | b"t" | b"W" | b"w") {
                continue;
            }
            let Ok(name) = std::str::from_utf8(name) else {
                continue;
            };
            let module = match it.next() {
                Some(b"[bpf]") => continue,
                Some(m) => {
                    let m = String::from_utf8_lossy(m);
                    let m = m.trim_start_matches('[').trim_end_matches(']');
                    match modules.iter().position(|x| x == m) {
                        Some(i) => i as u16,
                        None => {
                            modules.push(m.to_string());
                            (modules.len() - 1) as u16
                        }
                    }
                }
                None => u16::MAX,
            };
            let name_off = names.len() as u32;
            let mut end = name.len().min(u16::MAX as usize);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            let name = &name[..end];
            names.push_str(name);
            entries.push(Entry {
                addr,
                name_off,
                name_len: name.len() as u16,
                module,
            });
        }
        let restricted = total > 0 && !any_nonzero;
        // Stable, so that of two symbols at one address the first listed wins.
        entries.sort_by_key(|e| e.addr);
        let bytes = encode_parts(&entries, &names, &modules, restricted);
        Kallsyms::decode(FileBytes::Owned(bytes), 0).expect("a parsed table encodes")
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0 || self.restricted
    }

    fn addr(&self, i: usize) -> u64 {
        let o = self.at + HEAD + i * ENTRY;
        u64::from_le_bytes(self.table[o..o + 8].try_into().unwrap())
    }

    /// Index of the last symbol at or below `addr`.
    fn below(&self, addr: u64) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.addr(mid) <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }

    /// The symbol at or below `addr`. Symbols have no size in kallsyms, so
    /// each extends to the next, as perf assumes; a module symbol does not
    /// extend past its module's last symbol into the kernel image.
    pub fn lookup(&self, addr: u64) -> Option<KernelSym<'_>> {
        self.lookup_range(addr).map(|(k, _)| k)
    }

    /// [`Kallsyms::lookup`], with the end of the range of addresses that
    /// find the same symbol: the next symbol's start (kallsyms has no
    /// sizes), or `u64::MAX` after the last.
    pub fn lookup_range(&self, addr: u64) -> Option<(KernelSym<'_>, u64)> {
        if self.restricted {
            return None;
        }
        let i = self.below(addr)?;
        let o = self.at + HEAD + i * ENTRY;
        let e = &self.table[o..o + ENTRY];
        let name_off = u32::from_le_bytes(e[8..12].try_into().unwrap()) as usize;
        let name_len = u16::from_le_bytes([e[12], e[13]]) as usize;
        let module = u16::from_le_bytes([e[14], e[15]]);
        let at = self.names + name_off;
        // Checked when the table was decoded.
        let name = std::str::from_utf8(&self.table[at..at + name_len]).unwrap_or_default();
        let sym = KernelSym {
            name,
            start: self.addr(i),
            module: self.modules.get(module as usize).map(String::as_str),
        };
        let end = if i + 1 < self.n {
            self.addr(i + 1)
        } else {
            u64::MAX
        };
        Some((sym, end))
    }

    /// The start of the first symbol after `addr` (a symbol's end, since
    /// kallsyms has no sizes).
    pub fn next_after(&self, addr: u64) -> Option<u64> {
        let i = self.below(addr).map_or(0, |i| i + 1);
        (i < self.n).then(|| self.addr(i))
    }

    /// The encoded table: little-endian entry count, names length, module
    /// count, restricted flag; then the entries (address, name offset, name
    /// length, module), the names, and each module name after its u16
    /// length.
    pub fn encode(&self) -> &[u8] {
        &self.table[self.at..]
    }

    /// The table [`Kallsyms::encode`] wrote, at `at` in `table`, or `None`
    /// if it is not exactly that: every count, offset and name is checked
    /// (without copying), so a damaged cache is never half-used.
    pub fn decode(table: FileBytes, at: usize) -> Option<Kallsyms> {
        let b = table.get(at..)?;
        let u32_at =
            |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?) as usize);
        let n = u32_at(0)?;
        let names_len = u32_at(4)?;
        let n_modules = u32_at(8)?;
        let restricted = match *b.get(12)? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let names = HEAD.checked_add(n.checked_mul(ENTRY)?)?;
        let names_text = std::str::from_utf8(b.get(names..names.checked_add(names_len)?)?).ok()?;
        let mut c = names + names_len;
        let mut modules = Vec::with_capacity(n_modules.min(4096));
        for _ in 0..n_modules {
            let len = u16::from_le_bytes(b.get(c..c + 2)?.try_into().ok()?) as usize;
            modules.push(
                std::str::from_utf8(b.get(c + 2..c + 2 + len)?)
                    .ok()?
                    .to_string(),
            );
            c += 2 + len;
        }
        if c != b.len() {
            return None;
        }
        let mut last = 0;
        for e in b[HEAD..names].chunks_exact(ENTRY) {
            let addr = u64::from_le_bytes(e[..8].try_into().unwrap());
            let off = u32::from_le_bytes(e[8..12].try_into().unwrap()) as usize;
            let len = u16::from_le_bytes([e[12], e[13]]) as usize;
            let module = u16::from_le_bytes([e[14], e[15]]);
            let name_ok = names_text.get(off..off + len).is_some();
            let module_ok = module == u16::MAX || (module as usize) < modules.len();
            if addr < last || !name_ok || !module_ok {
                return None;
            }
            last = addr;
        }
        Some(Kallsyms {
            table,
            at,
            n,
            names: at + names,
            modules,
            restricted,
        })
    }
}

fn encode_parts(entries: &[Entry], names: &str, modules: &[String], restricted: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + entries.len() * ENTRY + names.len());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&(names.len() as u32).to_le_bytes());
    out.extend_from_slice(&(modules.len() as u32).to_le_bytes());
    out.push(restricted as u8);
    for e in entries {
        out.extend_from_slice(&e.addr.to_le_bytes());
        out.extend_from_slice(&e.name_off.to_le_bytes());
        out.extend_from_slice(&e.name_len.to_le_bytes());
        out.extend_from_slice(&e.module.to_le_bytes());
    }
    out.extend_from_slice(names.as_bytes());
    for m in modules {
        let mut len = m.len().min(u16::MAX as usize);
        while !m.is_char_boundary(len) {
            len -= 1;
        }
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&m.as_bytes()[..len]);
    }
    out
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    s.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some(v << 4 | d as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_takes_the_symbol_below_and_skips_bpf() {
        let text = "ffffffff81000000 T _text\nffffffff81000100 t do_thing\n\
                    ffffffffc0000000 t bpf_prog_1234_x\t[bpf]\nffffffffc0100000 t mod_fn\t[kvm]\n";
        let k = Kallsyms::parse(text.as_bytes());
        assert_eq!(k.lookup(0xffffffff81000150).unwrap().name, "do_thing");
        let m = k.lookup(0xffffffffc0100010).unwrap();
        assert_eq!((m.name, m.module), ("mod_fn", Some("kvm")));
        assert!(k.lookup(0x1000).is_none());
        // The [bpf] line is not a symbol: its address falls to do_thing.
        assert_eq!(k.lookup(0xffffffffc0000010).unwrap().name, "do_thing");
        // A symbol ends where the next starts ([bpf] lines are not symbols);
        // the last one never ends.
        assert_eq!(
            k.lookup_range(0xffffffff81000150).unwrap().1,
            0xffffffffc0100000
        );
        assert_eq!(k.lookup_range(0xffffffffc0100010).unwrap().1, u64::MAX);
    }

    #[test]
    fn all_zero_addresses_mean_restricted() {
        let k = Kallsyms::parse("0000000000000000 T _text\n0000000000000000 t x\n".as_bytes());
        assert!(k.restricted && k.is_empty());
    }

    #[test]
    fn the_binary_form_round_trips_and_refuses_damage() {
        let text = "ffffffff81000000 T _text\nffffffff81000100 t do_th\u{e9}ng\n\
                    ffffffffc0100000 t mod_fn\t[kvm]\nffffffffc0200000 t other\t[xfs]\n";
        let k = Kallsyms::parse(text.as_bytes());
        let bytes = k.encode().to_vec();
        let d = Kallsyms::decode(FileBytes::Owned(bytes.clone()), 0).expect("what encode wrote");
        for a in [
            0xffffffff81000150u64,
            0xffffffffc0100010,
            0xffffffffc0200001,
            0x10,
        ] {
            assert_eq!(d.lookup(a), k.lookup(a), "{a:#x}");
            assert_eq!(d.lookup_range(a), k.lookup_range(a), "{a:#x}");
            assert_eq!(d.next_after(a), k.next_after(a), "{a:#x}");
        }
        assert_eq!(d.lookup(0xffffffffc0200001).unwrap().module, Some("xfs"));
        for cut in 0..bytes.len() {
            assert!(
                Kallsyms::decode(FileBytes::Owned(bytes[..cut].to_vec()), 0).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            Kallsyms::decode(FileBytes::Owned(longer), 0).is_none(),
            "trailing byte"
        );
        // A name offset past the names, then a module index past the modules.
        let mut bad = bytes.clone();
        bad[13 + 8..13 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Kallsyms::decode(FileBytes::Owned(bad), 0).is_none());
        let mut bad = bytes.clone();
        bad[13 + 14..13 + 16].copy_from_slice(&7u16.to_le_bytes());
        assert!(Kallsyms::decode(FileBytes::Owned(bad), 0).is_none());
        // Addresses out of order.
        let mut bad = bytes.clone();
        bad[13..13 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Kallsyms::decode(FileBytes::Owned(bad), 0).is_none());
    }
}
