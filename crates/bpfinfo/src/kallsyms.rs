//! /proc/kallsyms: kernel symbol addresses, used to name helper and kfunc
//! call targets in xlated listings (as bpftool does) and to cross-check
//! sub-program addresses.

/// A snapshot of /proc/kallsyms, sorted by address. Symbols with address 0
/// (hidden by `kernel.kptr_restrict`) are dropped.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Read /proc/kallsyms.
    pub fn load() -> std::io::Result<Kallsyms> {
        Ok(Kallsyms::parse(&std::fs::read_to_string("/proc/kallsyms")?))
    }

    /// Parse kallsyms text: `ADDRESS TYPE NAME [MODULE]` per line. Lines
    /// that do not parse are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let _kind = f.next()?;
                let name = f.next()?;
                (addr != 0).then(|| (addr, name.to_string()))
            })
            .collect();
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms }
    }

    /// Whether no symbol has a visible address (kptr_restrict, or no
    /// permission).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The first symbol (in file order) at exactly `addr`.
    pub fn name_at(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 < addr);
        self.syms
            .get(i)
            .filter(|s| s.0 == addr)
            .map(|s| s.1.as_str())
    }

    /// The address of symbol `name`.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| s.1 == name).map(|s| s.0)
    }

    /// The lowest symbol address above `addr` (where the symbol at `addr`
    /// ends at the latest).
    pub fn next_address_after(&self, addr: u64) -> Option<u64> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        self.syms.get(i).map(|s| s.0)
    }
}
