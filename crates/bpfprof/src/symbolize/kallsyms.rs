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

/// The binary form kept in the per-boot cache (see `kallsyms_cache`):
/// loading it is a copy and a check, not a parse of 120,000 lines.
/// Little-endian: entry count, names length, module count, restricted;
/// then the entries (address, name offset, name length, module), the
/// names, and each module name after its u16 length.
impl Kallsyms {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(13 + self.entries.len() * 16 + self.names.len());
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.names.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.modules.len() as u32).to_le_bytes());
        out.push(self.restricted as u8);
        for e in &self.entries {
            out.extend_from_slice(&e.addr.to_le_bytes());
            out.extend_from_slice(&e.name_off.to_le_bytes());
            out.extend_from_slice(&e.name_len.to_le_bytes());
            out.extend_from_slice(&e.module.to_le_bytes());
        }
        out.extend_from_slice(self.names.as_bytes());
        for m in &self.modules {
            let m = &m.as_bytes()[..m.len().min(u16::MAX as usize)];
            out.extend_from_slice(&(m.len() as u16).to_le_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    /// The symbols [`Kallsyms::encode`] wrote, or `None` if `b` is not
    /// exactly that: every count, offset and name is checked, so a damaged
    /// file is never half-used.
    pub fn decode(b: &[u8]) -> Option<Kallsyms> {
        let mut c = b;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, rest) = (c.get(..n)?, c.get(n..)?);
            c = rest;
            Some(head)
        };
        let u32_at = |x: &[u8]| u32::from_le_bytes(x.try_into().unwrap());
        let n = u32_at(take(4)?) as usize;
        let names_len = u32_at(take(4)?) as usize;
        let n_modules = u32_at(take(4)?) as usize;
        let restricted = match take(1)?[0] {
            0 => false,
            1 => true,
            _ => return None,
        };
        let raw = take(n.checked_mul(16)?)?;
        let names = std::str::from_utf8(take(names_len)?).ok()?.to_string();
        let mut modules = Vec::with_capacity(n_modules.min(4096));
        for _ in 0..n_modules {
            let len = u16::from_le_bytes(take(2)?.try_into().unwrap()) as usize;
            modules.push(std::str::from_utf8(take(len)?).ok()?.to_string());
        }
        if !c.is_empty() {
            return None;
        }
        let mut entries = Vec::with_capacity(n);
        let mut last = 0;
        for e in raw.chunks_exact(16) {
            let e = Entry {
                addr: u64::from_le_bytes(e[..8].try_into().unwrap()),
                name_off: u32_at(&e[8..12]),
                name_len: u16::from_le_bytes([e[12], e[13]]),
                module: u16::from_le_bytes([e[14], e[15]]),
            };
            let end = e.name_off as usize + e.name_len as usize;
            let in_range = names.get(e.name_off as usize..end).is_some();
            let module_ok = e.module == u16::MAX || (e.module as usize) < modules.len();
            if e.addr < last || !in_range || !module_ok {
                return None;
            }
            last = e.addr;
            entries.push(e);
        }
        Some(Kallsyms {
            entries,
            names,
            modules,
            restricted,
        })
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

    #[test]
    fn the_binary_form_round_trips_and_refuses_damage() {
        let text = "ffffffff81000000 T _text\nffffffff81000100 t do_th\u{e9}ng\n\
                    ffffffffc0100000 t mod_fn\t[kvm]\nffffffffc0200000 t other\t[xfs]\n";
        let k = Kallsyms::parse(text.as_bytes());
        let bytes = k.encode();
        let d = Kallsyms::decode(&bytes).expect("what encode wrote");
        for a in [
            0xffffffff81000150u64,
            0xffffffffc0100010,
            0xffffffffc0200001,
            0x10,
        ] {
            assert_eq!(d.lookup(a), k.lookup(a), "{a:#x}");
            assert_eq!(d.next_after(a), k.next_after(a), "{a:#x}");
        }
        assert_eq!(d.lookup(0xffffffffc0200001).unwrap().module, Some("xfs"));
        for cut in 0..bytes.len() {
            assert!(Kallsyms::decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Kallsyms::decode(&longer).is_none(), "trailing byte");
        // A name offset past the names, then a module index past the modules.
        let mut bad = bytes.clone();
        bad[13 + 8..13 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Kallsyms::decode(&bad).is_none());
        let mut bad = bytes.clone();
        bad[13 + 14..13 + 16].copy_from_slice(&7u16.to_le_bytes());
        assert!(Kallsyms::decode(&bad).is_none());
        // Addresses out of order.
        let mut bad = bytes.clone();
        bad[13..13 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Kallsyms::decode(&bad).is_none());
    }
}
