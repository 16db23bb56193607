//! Kernel samples that the flat pass counts as it reads.
//!
//! When threads merge, a kernel sample's location is its address, unless
//! a BPF symbol held that address at some time. BPF code never lies in the
//! kernel's own text, which the recording's first records give (perf's
//! `[kernel.kallsyms]_text` map, `_stext` to `_etext`). So samples there
//! need neither a copy nor the replay: they are counted by address while
//! the file is read. On the benchmark file that is about a third of all
//! samples. The flat pass checks afterwards that no BPF symbol ever
//! overlapped that text, and leaves the file to the ordered pass if one
//! did, so the shortcut cannot change a report.

use std::collections::hash_map::Entry;

use perfdata::{record_type as rt, PerfFile};
use rustc_hash::FxHashMap;

use super::events::{side_event, Event};
use crate::analyze::profile::Counts;

/// How many records from the start the kernel's map is looked for in:
/// perf and bpfprof write it among the first.
const LOOK: usize = 4096;

/// The kernel text's address range, from the first kernel map of the
/// recording.
pub(super) fn of(file: &PerfFile) -> Option<(u64, u64)> {
    for r in file.raw_records().take(LOOK) {
        let r = r.ok()?;
        if !matches!(r.header.type_, rt::MMAP | rt::MMAP2) {
            continue;
        }
        let (_, record, sid) = file.parse(&r).ok()?;
        if let Some(Event::Mmap(m)) = side_event(&record, &sid) {
            if m.pid == u32::MAX && m.name.starts_with("[kernel.kallsyms]") && m.len > 0 {
                return Some((m.addr, m.addr.checked_add(m.len)?));
            }
        }
    }
    None
}

/// Slots of the cache in front of the counts: a few kernel functions take
/// most kernel samples.
const SLOTS: usize = 1 << 10;

/// Counts by address, with a small direct-mapped cache in front.
pub(super) struct TextCounts {
    text: (u64, u64),
    cache: Vec<(u64, Counts)>,
    counts: FxHashMap<u64, Counts>,
}

impl TextCounts {
    pub fn new(text: (u64, u64)) -> TextCounts {
        TextCounts {
            text,
            cache: vec![(0, Counts::default()); SLOTS],
            counts: FxHashMap::default(),
        }
    }

    /// Count a kernel sample at `ip` if it lies in the kernel text;
    /// `false` leaves it to the caller.
    pub fn add(&mut self, ip: u64, period: u64) -> bool {
        if ip < self.text.0 || ip >= self.text.1 {
            return false;
        }
        let h = ip.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros());
        let slot = &mut self.cache[h as usize];
        if slot.0 == ip && slot.1.samples > 0 {
            slot.1.add(period);
            return true;
        }
        let old = std::mem::replace(slot, (ip, Counts { samples: 1, period }));
        self.store(old);
        true
    }

    fn store(&mut self, (ip, c): (u64, Counts)) {
        if c.samples == 0 {
            return;
        }
        match self.counts.entry(ip) {
            Entry::Occupied(e) => e.into_mut().merge(c),
            Entry::Vacant(e) => {
                e.insert(c);
            }
        }
    }

    /// Every count, by address.
    pub fn into_sorted(mut self) -> Vec<(u64, Counts)> {
        for slot in std::mem::take(&mut self.cache) {
            self.store(slot);
        }
        let mut out: Vec<(u64, Counts)> = self.counts.into_iter().collect();
        out.sort_unstable_by_key(|x| x.0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_the_text_and_adds_up_whatever_the_cache_does() {
        let mut t = TextCounts::new((0x1000, 0x2000));
        assert!(!t.add(0xfff, 1));
        assert!(!t.add(0x2000, 1));
        // More addresses than slots, so that slots are evicted and
        // counts of one address end up in both the cache and the map.
        let mut want: std::collections::BTreeMap<u64, Counts> = Default::default();
        for i in 0..20_000u64 {
            let ip = 0x1000 + (i * 7919) % 0xfff;
            assert!(t.add(ip, i + 1));
            want.entry(ip).or_default().add(i + 1);
        }
        let got = t.into_sorted();
        let want: Vec<(u64, Counts)> = want.into_iter().collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                (g.0, g.1.samples, g.1.period),
                (w.0, w.1.samples, w.1.period)
            );
        }
    }
}
