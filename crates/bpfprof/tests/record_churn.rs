//! Churn: 120 programs loaded, run and unloaded one after another while
//! recording. Every program that got a sample has its info in the file,
//! and no sample in a program's code is given another program's name or
//! none, even though the kernel reuses addresses at once.
//!
//! Each program runs only in its own fresh thread, so a sample's tid says
//! which program was attached when it was taken: no clock is shared with
//! the recorder.

mod record_util;
mod support;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bpfinfo::testprog::TestProg;
use record_util::*;

struct Known {
    id: u32,
    /// (start, end, kernel name) of each function, from kallsyms + info.
    ranges: Vec<(u64, u64, String)>,
}

const PROGRAMS: u32 = 120;

#[test]
fn churn_of_short_lived_programs_keeps_names_and_info_straight() {
    if !can_record_bpf() {
        return;
    }
    let dir = tmpdir("churn");
    let out = dir.join("perf.data");
    let rec = start(&["-a", "-F", "10000"], &out);

    let mut by_tid: HashMap<u32, Known> = HashMap::new();
    for i in 0..PROGRAMS {
        let p = TestProg::builder()
            .name(&format!("churn_{i}"))
            .seed(1000 + i)
            .loop_iters(2000)
            .build()
            .unwrap()
            .load()
            .unwrap();
        let ksyms = kallsyms_bpf();
        let info = p.info().unwrap().info;
        let ranges = info
            .jited_ksyms
            .iter()
            .zip(&info.jited_func_lens)
            .map(|(&a, &l)| (a, a + l as u64, ksyms.get(&a).cloned().unwrap_or_default()))
            .collect::<Vec<_>>();
        assert!(
            ranges.iter().all(|r| r.2.starts_with("bpf_prog_")),
            "{ranges:?}"
        );
        let att = p.attach_tracepoint("syscalls", "sys_enter_getpid").unwrap();
        let tid = std::thread::spawn(|| {
            getpid_for(Duration::from_millis(25));
            // gettid through /proc: the kernel's tid of this thread.
            std::fs::read_link("/proc/thread-self")
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .parse::<u32>()
                .unwrap()
        })
        .join()
        .unwrap();
        drop(att);
        by_tid.insert(tid, Known { id: p.id(), ranges });
        drop(p);
    }
    let (st, stderr) = rec.stop("INT");
    assert!(st.success(), "{stderr}");

    let f = out.to_str().unwrap();
    let (script, err) = perf(&["script", "-i", f, "-F", "tid,ip,sym"]);
    assert_perf_happy(&err);
    let mut hits: BTreeMap<u32, usize> = BTreeMap::new();
    let mut checked = 0;
    for line in script.lines() {
        let mut it = line.split_whitespace();
        let (Some(tid), Some(ip), sym) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let (Ok(tid), Ok(ip)) = (tid.parse::<u32>(), u64::from_str_radix(ip, 16)) else {
            continue;
        };
        let Some(k) = by_tid.get(&tid) else { continue };
        let Some(r) = k.ranges.iter().find(|r| r.0 <= ip && ip < r.1) else {
            continue;
        };
        assert_eq!(
            sym.unwrap_or("[unknown]"),
            r.2,
            "sample at {ip:#x} in tid {tid} (program {}) has the wrong symbol",
            k.id
        );
        *hits.entry(k.id).or_default() += 1;
        checked += 1;
    }
    assert!(
        hits.len() as u32 >= PROGRAMS / 2,
        "only {} of {PROGRAMS} programs got samples ({checked} samples checked)",
        hits.len()
    );
    let ids = header_prog_ids(&out);
    for id in hits.keys() {
        assert!(
            ids.contains(id),
            "program {id} got samples but has no bpf_prog_info"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
