//! BPF symbols over time, from the recording itself: KSYMBOL records give
//! names and address ranges as programs come and go, BPF_EVENT records tie
//! those ranges to program ids, and the file's BPF_PROG_INFO gives each
//! sub-program its index. An address reused by a later program is
//! attributed by time, because records are replayed in time order.

use std::collections::{BTreeMap, HashMap};

/// Index into [`BpfSymbols::syms`]: one per KSYMBOL registration.
pub type BpfSymId = u32;

/// A BPF symbol as it was registered.
#[derive(Debug, Clone)]
pub struct BpfSym {
    pub name: String,
    pub addr: u64,
    pub len: u32,
    /// Trampolines and dispatchers (`bpf_trampoline_*`, `bpf_dispatcher_*`):
    /// page-sized images that may overlap packed programs.
    pub image: bool,
    /// Program id and sub-program index, once a BPF_EVENT or the file's
    /// prog info tells them.
    pub prog: Option<(u32, u32)>,
    pub registered_at: u64,
    pub unregistered_at: Option<u64>,
}

/// Lifetime facts of a program, from its BPF_EVENTs.
#[derive(Debug, Clone, Default)]
pub struct ProgEvents {
    /// `None` when the program was loaded before the recording
    /// (synthesized records have time 0).
    pub loaded_at: Option<u64>,
    pub unloaded_at: Option<u64>,
    pub loader_pid: Option<u32>,
    pub loader_tid: Option<u32>,
    pub tag: [u8; 8],
}

#[derive(Debug, Default)]
pub struct BpfSymbols {
    pub syms: Vec<BpfSym>,
    /// Live program symbols by start address (non-overlapping).
    progs: BTreeMap<u64, BpfSymId>,
    /// Live trampoline/dispatcher images by start address: consulted only
    /// when no program covers an address, since an image's PAGE_SIZE length
    /// overstates its code (perf-bpf-format.md §7.6).
    images: BTreeMap<u64, BpfSymId>,
    /// Registrations since the last BPF_EVENT, in order.
    pending: Vec<BpfSymId>,
    pub events: HashMap<u32, ProgEvents>,
    /// jited_ksyms of each program in the file's BPF_PROG_INFO, for
    /// sub-program indices that do not depend on record order.
    ksyms_by_prog: HashMap<u32, Vec<u64>>,
    /// Bounds of every range ever registered.
    lowest: u64,
    highest: u64,
}

fn is_image(name: &str) -> bool {
    name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_")
}

impl BpfSymbols {
    pub fn new(prog_ksyms: impl IntoIterator<Item = (u32, Vec<u64>)>) -> Self {
        BpfSymbols {
            ksyms_by_prog: prog_ksyms.into_iter().collect(),
            ..Default::default()
        }
    }

    /// The `jited_ksyms` of a program learnt after the start (a program
    /// that loads during a live session).
    pub fn add_program_ksyms(&mut self, id: u32, ksyms: Vec<u64>) {
        self.ksyms_by_prog.insert(id, ksyms);
    }

    pub fn register(&mut self, addr: u64, len: u32, name: &str, time: u64) {
        let image = is_image(name);
        // Clip: a new program replaces whatever a lost UNREGISTER left there.
        let end = addr + len.max(1) as u64;
        let map = if image {
            &mut self.images
        } else {
            &mut self.progs
        };
        let stale: Vec<u64> = map
            .range(..end)
            .rev()
            .take_while(|(_, &id)| {
                let s = &self.syms[id as usize];
                s.addr + (s.len.max(1) as u64) > addr
            })
            .map(|(&a, _)| a)
            .collect();
        for a in stale {
            map.remove(&a);
        }
        if self.syms.is_empty() {
            self.lowest = addr;
        }
        self.lowest = self.lowest.min(addr);
        self.highest = self.highest.max(end);
        let id = self.syms.len() as BpfSymId;
        self.syms.push(BpfSym {
            name: name.to_string(),
            addr,
            len,
            image,
            prog: None,
            registered_at: time,
            unregistered_at: None,
        });
        map.insert(addr, id);
        if !image {
            self.pending.push(id);
        }
    }

    pub fn unregister(&mut self, addr: u64, name: &str, time: u64) {
        let map = if is_image(name) {
            &mut self.images
        } else {
            &mut self.progs
        };
        if let Some(id) = map.remove(&addr) {
            self.syms[id as usize].unregistered_at = Some(time);
        }
    }

    /// A BPF_EVENT: on load, the KSYMBOLs just before it are this program's
    /// (main first, then sub-programs: the kernel's and perf's order).
    pub fn bpf_event(&mut self, load: bool, id: u32, tag: [u8; 8], time: u64, pid: u32, tid: u32) {
        let ev = self.events.entry(id).or_default();
        ev.tag = tag;
        if load {
            if time != 0 {
                ev.loaded_at = Some(time);
                ev.loader_pid = Some(pid);
                ev.loader_tid = Some(tid);
            }
            let ksyms = self.ksyms_by_prog.get(&id);
            for (i, &sid) in self.pending.iter().enumerate() {
                let s = &mut self.syms[sid as usize];
                let sub = ksyms
                    .and_then(|k| k.iter().position(|&a| a == s.addr))
                    .unwrap_or(i);
                s.prog = Some((id, sub as u32));
            }
        } else if id != 0 {
            ev.unloaded_at = Some(time);
        }
        self.pending.clear();
    }

    /// The live BPF symbol covering `addr`, programs before images.
    pub fn lookup(&self, addr: u64) -> Option<BpfSymId> {
        // Most kernel samples are not in BPF code: skip the tree walks.
        if addr < self.lowest || addr >= self.highest {
            return None;
        }
        let within = |map: &BTreeMap<u64, BpfSymId>| {
            let (_, &id) = map.range(..=addr).next_back()?;
            let s = &self.syms[id as usize];
            (addr < s.addr + s.len as u64).then_some(id)
        };
        within(&self.progs).or_else(|| within(&self.images))
    }

    /// Whether any BPF symbol was ever seen.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_address_goes_to_the_program_live_at_the_time() {
        let mut b = BpfSymbols::default();
        b.register(0x1000, 0x80, "bpf_prog_aa_old", 1);
        b.bpf_event(true, 123, [0; 8], 1, 10, 10);
        let old = b.lookup(0x1010).unwrap();
        b.unregister(0x1000, "bpf_prog_aa_old", 2);
        b.bpf_event(false, 123, [0; 8], 2, 10, 10);
        assert_eq!(b.lookup(0x1010), None);
        b.register(0x1000, 0x40, "bpf_prog_bb_new", 3);
        b.register(0x1040, 0x20, "bpf_prog_bb_sub", 3);
        b.bpf_event(true, 133, [0; 8], 3, 11, 11);
        let new = b.lookup(0x1010).unwrap();
        assert_ne!(old, new);
        assert_eq!(b.syms[new as usize].prog, Some((133, 0)));
        assert_eq!(
            b.syms[b.lookup(0x1045).unwrap() as usize].prog,
            Some((133, 1))
        );
        assert_eq!(b.syms[old as usize].prog, Some((123, 0)));
    }

    #[test]
    fn a_trampoline_page_does_not_shadow_packed_programs() {
        let mut b = BpfSymbols::default();
        b.register(0x2000, 4096, "bpf_trampoline_6442", 1);
        b.register(0x2100, 0x40, "bpf_prog_cc_f", 1);
        assert_eq!(
            b.syms[b.lookup(0x2110).unwrap() as usize].name,
            "bpf_prog_cc_f"
        );
        assert_eq!(
            b.syms[b.lookup(0x2010).unwrap() as usize].name,
            "bpf_trampoline_6442"
        );
    }

    #[test]
    fn a_register_over_a_stale_range_clips_it() {
        let mut b = BpfSymbols::default();
        b.register(0x3000, 0x100, "bpf_prog_dd_lost_unregister", 1);
        b.register(0x3080, 0x40, "bpf_prog_ee_new", 2);
        assert_eq!(
            b.syms[b.lookup(0x3090).unwrap() as usize].name,
            "bpf_prog_ee_new"
        );
        assert_eq!(b.lookup(0x3010), None);
    }
}
