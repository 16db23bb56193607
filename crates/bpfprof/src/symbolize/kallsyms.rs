//! Kernel symbols from /proc/kallsyms: the running kernel's text symbols,
//! with their module, sorted for lookup. BPF entries (`[bpf]`) are left out:
//! BPF programs are resolved from the recording's own KSYMBOL records, which
//! stay right after the program is gone.

use std::path::Path;

#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    name_off: u32,
    name_len: u16,
    /// Index into `modules`, or u16::MAX for the kernel image.
    module: u16,
}

/// Sorted kernel text symbols.
#[derive(Debug, Default)]
pub struct Kallsyms {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
    /// Set when every address read as 0 (kptr_restrict).
    pub restricted: bool,
}

/// A kernel address resolved against kallsyms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSym<'a> {
    pub name: &'a str,
    pub start: u64,
    /// `None` for the kernel image, else the module name.
    pub module: Option<&'a str>,
}

impl Kallsyms {
    pub fn load(path: &Path) -> std::io::Result<Kallsyms> {
        Ok(Self::parse(&std::fs::read(path)?))
    }

    /// Parse kallsyms text. Lines are split by hand, without an allocation
    /// each: there are over 100,000 of them and the report waits for this.
    pub fn parse(text: &[u8]) -> Kallsyms {
        let mut k = Kallsyms::default();
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
                    match k.modules.iter().position(|x| x == m) {
                        Some(i) => i as u16,
                        None => {
                            k.modules.push(m.to_string());
                            (k.modules.len() - 1) as u16
                        }
                    }
                }
                None => u16::MAX,
            };
            let name_off = k.names.len() as u32;
            let mut end = name.len().min(u16::MAX as usize);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            let name = &name[..end];
            k.names.push_str(name);
            k.entries.push(Entry {
                addr,
                name_off,
                name_len: name.len() as u16,
                module,
            });
        }
        k.restricted = total > 0 && !any_nonzero;
        // Stable, so that of two symbols at one address the first listed wins.
        k.entries.sort_by_key(|e| e.addr);
        k
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() || self.restricted
    }

    /// The symbol at or below `addr`. Symbols have no size in kallsyms, so
    /// each extends to the next, as perf assumes; a module symbol does not
    /// extend past its module's last symbol into the kernel image.
    pub fn lookup(&self, addr: u64) -> Option<KernelSym<'_>> {
        if self.restricted {
            return None;
        }
        let i = self
            .entries
            .partition_point(|e| e.addr <= addr)
            .checked_sub(1)?;
        let e = self.entries[i];
        Some(KernelSym {
            name: &self.names[e.name_off as usize..e.name_off as usize + e.name_len as usize],
            start: e.addr,
            module: self.modules.get(e.module as usize).map(String::as_str),
        })
    }

    /// The start of the first symbol after `addr` (a symbol's end, since
    /// kallsyms has no sizes).
    pub fn next_after(&self, addr: u64) -> Option<u64> {
        let i = self.entries.partition_point(|e| e.addr <= addr);
        self.entries.get(i).map(|e| e.addr)
    }
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
    }

    #[test]
    fn all_zero_addresses_mean_restricted() {
        let k = Kallsyms::parse("0000000000000000 T _text\n0000000000000000 t x\n".as_bytes());
        assert!(k.restricted && k.is_empty());
    }
}
