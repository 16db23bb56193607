//! BPF programs in a recording: what was seen, what info we hold, and the
//! KSYMBOL/BPF_EVENT records that describe programs already loaded.
//!
//! The book is shared by the synthesis at start, the side-band thread (which
//! fetches each new program's info the moment the kernel reports its load)
//! and the end of the recording (run-time stats, feature sections).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use bpfinfo::sys::{Capture, LiveProg};
use perfdata::{bpf_event, hex, ksym, BpfEvent, BpfProgInfo, BtfBlob, Ksymbol, Record};

/// Everything known about the BPF programs of one recording.
#[derive(Debug, Default)]
pub struct BpfBook {
    pub progs: BTreeMap<u32, BpfProgInfo>,
    pub btf: BTreeMap<u32, Vec<u8>>,
    /// Programs we saw but could not read, with why.
    pub failed: BTreeMap<u32, String>,
    /// run_cnt/run_time_ns when the recording started (pre-existing programs).
    pub start_stats: HashMap<u32, (u64, u64)>,
    /// Programs present when the recording started.
    pub preexisting: BTreeSet<u32>,
    pub loaded: BTreeSet<u32>,
    pub unloaded: BTreeSet<u32>,
    /// BPF_EVENT records the side band lost (ring full).
    pub sideband_lost: u64,
}

pub type SharedBook = Arc<Mutex<BpfBook>>;

impl BpfBook {
    /// Store a fetched program; a second copy of the same id is dropped.
    pub fn insert(&mut self, prog: LiveProg) {
        let id = prog.info.id;
        if let Some(b) = prog.btf {
            self.btf.entry(prog.info.btf_id).or_insert(b);
        }
        self.failed.remove(&id);
        self.progs.entry(id).or_insert(prog.info);
    }

    pub fn fail(&mut self, id: u32, why: String) {
        if !self.progs.contains_key(&id) {
            self.failed.insert(id, why);
        }
    }

    /// Ids seen in any way during the recording.
    pub fn seen(&self) -> usize {
        let mut ids: BTreeSet<u32> = self.progs.keys().copied().collect();
        ids.extend(self.failed.keys());
        ids.extend(&self.loaded);
        ids.extend(&self.unloaded);
        ids.len()
    }

    pub fn btf_blobs(&self) -> Vec<BtfBlob> {
        self.btf
            .iter()
            .map(|(&id, data)| BtfBlob {
                id,
                data: data.clone(),
            })
            .collect()
    }
}

/// Fetch program `id` into the book unless it is there already. Used on a
/// PROG_LOAD, so the info is read while the program most likely still exists.
pub fn fetch_into(book: &SharedBook, id: u32, capture: Capture) {
    if book.lock().unwrap().progs.contains_key(&id) {
        return;
    }
    match bpfinfo::sys::fetch_prog(id, capture) {
        Ok(p) => book.lock().unwrap().insert(p),
        Err(e) => book.lock().unwrap().fail(id, describe(&e)),
    }
}

/// A short reason for the summary line.
pub fn describe(e: &bpfinfo::Error) -> String {
    match e {
        bpfinfo::Error::Gone { .. } => "unloaded before it could be read".into(),
        other => other.to_string(),
    }
}

/// The `[bpf]` symbols of /proc/kallsyms plus the kernel text bounds.
#[derive(Debug, Default)]
pub struct Kallsyms {
    pub text: Option<u64>,
    pub etext: Option<u64>,
    /// (address, name), sorted by address.
    pub bpf: Vec<(u64, String)>,
}

impl Kallsyms {
    pub fn read() -> std::io::Result<Kallsyms> {
        let s = std::fs::read_to_string("/proc/kallsyms")?;
        Ok(Self::parse(&s))
    }

    pub fn parse(s: &str) -> Kallsyms {
        let mut k = Kallsyms::default();
        for line in s.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(_ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let module = it.next();
            let parse = || u64::from_str_radix(addr, 16).ok();
            match (name, module) {
                ("_text", None) => k.text = parse(),
                ("_etext", None) => k.etext = parse(),
                (_, Some("[bpf]")) => {
                    if let Some(a) = parse() {
                        k.bpf.push((a, name.to_string()));
                    }
                }
                _ => {}
            }
        }
        k.bpf.sort();
        k
    }

    /// Name of the `[bpf]` symbol at exactly `addr`.
    pub fn bpf_name_at(&self, addr: u64) -> Option<&str> {
        let i = self.bpf.binary_search_by_key(&addr, |(a, _)| *a).ok()?;
        Some(&self.bpf[i].1)
    }

    /// Trampolines and dispatchers, with a length: a page, clipped at the
    /// next BPF symbol so that the image never covers a program.
    pub fn images(&self, page: u64) -> Vec<(u64, u64, &str)> {
        let mut v = Vec::new();
        for (i, (addr, name)) in self.bpf.iter().enumerate() {
            if !(name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_")) {
                continue;
            }
            let next = self.bpf[i + 1..]
                .iter()
                .map(|(a, _)| *a)
                .find(|&a| a > *addr)
                .unwrap_or(u64::MAX);
            v.push((*addr, page.min(next - addr), name.as_str()));
        }
        v
    }
}

/// The kernel's name for sub-program `i` (kernel/bpf/core.c
/// bpf_prog_ksym_set_name): the main function carries the whole-program
/// tag, the others their own; then the BTF FUNC name, else the program
/// name, else nothing (several functions without BTF: "F").
pub fn kernel_style_name(info: &BpfProgInfo, btf: Option<&bpfinfo::btf::Btf>, i: usize) -> String {
    let tag = if i == 0 {
        info.tag
    } else {
        info.prog_tags.get(i).copied().unwrap_or(info.tag)
    };
    let mut name = format!("bpf_prog_{}", hex(&tag));
    let func = btf.and_then(|b| {
        let fi = info.func_info.get(i)?;
        b.func_name(fi.type_id)
    });
    match func {
        Some(f) if !f.is_empty() => {
            name.push('_');
            name.push_str(f);
        }
        _ if info.jited_ksyms.len() > 1 => name.push_str("_F"),
        _ if !info.name.is_empty() => {
            name.push('_');
            name.push_str(&info.name);
        }
        _ => {}
    }
    name
}

/// Why a program cannot be placed in the address space, if it cannot.
pub fn unplaceable(info: &BpfProgInfo) -> Option<String> {
    if info.jited_ksyms.is_empty() || info.jited_ksyms.iter().all(|&a| a == 0) {
        return Some(if info.jited_prog_len == 0 {
            "not JIT-compiled".into()
        } else {
            "addresses hidden (kernel.kptr_restrict)".into()
        });
    }
    if info.jited_ksyms.len() != info.jited_func_lens.len() {
        return Some(format!(
            "{} addresses but {} lengths",
            info.jited_ksyms.len(),
            info.jited_func_lens.len()
        ));
    }
    None
}

/// The KSYMBOL per sub-program then the BPF_EVENT(LOAD), as the kernel emits
/// them at load. `emit` receives each record.
pub fn program_records(
    info: &BpfProgInfo,
    btf: Option<&[u8]>,
    kallsyms: &Kallsyms,
    bpf_event: bool,
    mut emit: impl FnMut(&Record<'_>),
) {
    let parsed = btf.and_then(|b| bpfinfo::btf::Btf::parse(b).ok());
    for (i, (&addr, &len)) in info
        .jited_ksyms
        .iter()
        .zip(&info.jited_func_lens)
        .enumerate()
    {
        let name = match kallsyms.bpf_name_at(addr) {
            Some(n) if n.starts_with("bpf_prog_") => n.to_string(),
            _ => kernel_style_name(info, parsed.as_ref(), i),
        };
        emit(&Record::Ksymbol(Ksymbol {
            addr,
            len,
            ksym_type: ksym::TYPE_BPF,
            flags: 0,
            name: name.as_bytes(),
        }));
    }
    if bpf_event {
        emit(&Record::BpfEvent(BpfEvent {
            type_: bpf_event::PROG_LOAD,
            flags: 0,
            id: info.id,
            tag: info.tag,
        }));
    }
}

/// Run-time stats of a live program, or None if it is gone.
pub fn current_stats(id: u32) -> Option<(u64, u64)> {
    bpfinfo::sys::fetch_prog(id, Capture::Summary)
        .ok()
        .map(|p| (p.info.run_cnt, p.info.run_time_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_bpf_and_text() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _text\nffffffff822090c8 T _etext\n\
             ffffffffc0001000 t bpf_prog_aa_main\t[bpf]\n\
             ffffffffc0001800 t bpf_trampoline_6442\t[bpf]\n\
             ffffffffc0001900 t bpf_prog_bb_x\t[bpf]\n\
             ffffffffc0003000 t bpf_dispatcher_xdp\t[bpf]\n\
             ffffffffc0009000 t foo\t[ext4]\n",
        );
        assert_eq!(k.text, Some(0xffffffff81000000));
        assert_eq!(k.etext, Some(0xffffffff822090c8));
        assert_eq!(k.bpf.len(), 4);
        assert_eq!(k.bpf_name_at(0xffffffffc0001900), Some("bpf_prog_bb_x"));
        let img = k.images(4096);
        assert_eq!(img[0], (0xffffffffc0001800, 0x100, "bpf_trampoline_6442"));
        assert_eq!(img[1], (0xffffffffc0003000, 4096, "bpf_dispatcher_xdp"));
    }

    #[test]
    fn names_follow_the_kernel() {
        let info = BpfProgInfo {
            tag: [0x5e; 8],
            name: "busy".into(),
            jited_ksyms: vec![1, 2],
            prog_tags: vec![[0x97; 8], [0x6e; 8]],
            ..Default::default()
        };
        assert_eq!(
            kernel_style_name(&info, None, 0),
            "bpf_prog_5e5e5e5e5e5e5e5e_F"
        );
        assert_eq!(
            kernel_style_name(&info, None, 1),
            "bpf_prog_6e6e6e6e6e6e6e6e_F"
        );
        let single = BpfProgInfo {
            jited_ksyms: vec![1],
            ..info
        };
        assert_eq!(
            kernel_style_name(&single, None, 0),
            "bpf_prog_5e5e5e5e5e5e5e5e_busy"
        );
    }
}
