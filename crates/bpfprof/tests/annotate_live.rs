//! `bpfprof annotate` on a file recorded by Linux perf (which cannot
//! annotate BPF itself here: no libbfd), for a generated program with a hot
//! loop in its sub-program, unloaded before annotate runs. Oracles: what
//! the test put into the program (names, source lines), the kernel (prog
//! info, kallsyms, bpftool while loaded), GNU objdump, and perf report.

mod support;

mod annotate_util;

use std::sync::OnceLock;

use annotate_util::{annotate_json, loop_lines, Recording};
use serde_json::Value;
use testkit::normalize_att;

static REC: OnceLock<Recording> = OnceLock::new();

/// One recording for all the tests of this file.
fn rec() -> Option<&'static Recording> {
    annotate_util::shared(&REC, || annotate_util::record_with_perf("ann_live", 7, &[]))
}

/// perf's name (from the recording's KSYMBOL) for sub-program `i`.
fn perf_name(r: &Recording, i: usize) -> String {
    let addr = r.live.info.jited_ksyms[i];
    annotate_util::perf_ksymbols(&r.data)
        .into_iter()
        .find(|k| k.0 == addr)
        .unwrap_or_else(|| panic!("perf script shows no KSYMBOL at {addr:#x}"))
        .1
}

fn sub(t: &Value) -> usize {
    t["bpf"]["sub"]
        .as_u64()
        .expect("a BPF annotation has bpf.sub") as usize
}

/// annotate --prog ID --json, every target annotated, sub-programs 0 and 1.
fn by_prog(r: &Recording) -> Vec<Value> {
    let targets = annotate_json(&r.data, &["--prog", &r.id.to_string()]);
    for t in &targets {
        assert!(
            t.get("insns").is_some(),
            "program {} not annotated: {t}",
            r.id
        );
    }
    let mut subs: Vec<usize> = targets.iter().map(sub).collect();
    subs.sort();
    assert_eq!(
        subs,
        (0..r.prog.expected_func_names().len()).collect::<Vec<_>>(),
        "every sub-program got samples and is annotated once"
    );
    targets
}

#[test]
fn names_every_subprogram_and_puts_the_most_samples_on_the_loop() {
    let Some(r) = rec() else { return };
    let targets = by_prog(r);
    let funcs = r.prog.expected_func_names();
    let kernel_name: String = r.prog.name().chars().take(15).collect();
    for t in &targets {
        let i = sub(t);
        let b = &t["bpf"];
        assert_eq!(b["prog_id"].as_u64(), Some(r.id as u64));
        assert_eq!(b["prog_name"].as_str(), Some(kernel_name.as_str()));
        assert_eq!(b["func_name"].as_str(), Some(funcs[i].as_str()));
        assert_eq!(b["subprogs"].as_u64(), Some(funcs.len() as u64));
        // The name the recording gives the sub-program's address (perf's
        // KSYMBOL), which is what report shows: perf synthesizes
        // `bpf_prog_<prog_tags[i]>_<func>` for programs loaded before it
        // started.
        let recorded = perf_name(r, i);
        assert_eq!(t["symbol"].as_str(), Some(recorded.as_str()), "sub {i}");
        assert_eq!(t["dso"].as_str(), Some(recorded.as_str()), "sub {i}");
        let synthesized = format!(
            "bpf_prog_{}_{}",
            annotate_util::hex(&r.live.info.prog_tags[i]),
            funcs[i]
        );
        assert_eq!(recorded, synthesized, "perf's synthesized name");
        if i > 0 {
            // The kernel names sub-programs after their own tags too (the
            // main function after the whole program's tag).
            assert_eq!(r.ksym_names[i], synthesized, "kallsyms");
        }
        assert_eq!(t["start"].as_u64(), Some(r.live.info.jited_ksyms[i]));
        assert_eq!(
            t["len"].as_u64(),
            Some(r.live.info.jited_func_lens[i] as u64)
        );
    }

    // The loop is in the sub-program `work`.
    let work = targets.iter().find(|t| sub(t) == 1).unwrap();
    let loops = loop_lines(&r.prog);
    let is_loop = |l: &Value| {
        loops
            .iter()
            .any(|(n, text)| l["line"].as_u64() == Some(*n as u64) && l["text"] == *text)
    };
    let lines = work["lines"].as_array().expect("lines");
    assert!(!lines.is_empty(), "no source lines: {work}");
    let top = lines
        .iter()
        .max_by_key(|l| l["samples"].as_u64().unwrap())
        .unwrap();
    assert!(
        is_loop(top),
        "hottest line {top} is not a loop line {loops:?}"
    );
    let in_loop: u64 = lines
        .iter()
        .filter(|l| is_loop(l))
        .map(|l| l["samples"].as_u64().unwrap())
        .sum();
    let total = work["samples"].as_u64().unwrap();
    assert!(
        in_loop * 10 >= total * 9,
        "only {in_loop} of {total} samples on the loop lines"
    );
    // Every line is a line the program was built with, in its file.
    for l in lines {
        assert_eq!(l["file"].as_str(), Some(r.prog.file_name()));
        assert!(
            r.prog
                .expected_source_lines()
                .iter()
                .any(|e| e.line.line as u64 == l["line"].as_u64().unwrap()
                    && e.line.text == l["text"].as_str().unwrap()),
            "{l} is not a line of the program"
        );
    }
    // The hottest instruction points at a loop line.
    let insns = work["insns"].as_array().unwrap();
    let hot = insns
        .iter()
        .max_by_key(|i| i["samples"].as_u64().unwrap())
        .unwrap();
    let li = hot["line"].as_u64().expect("hot instruction has a line") as usize;
    assert!(
        is_loop(&lines[li]),
        "hottest instruction {hot} is on {}",
        lines[li]
    );
}

#[test]
fn each_subprogram_shows_its_own_bytes_as_objdump_does() {
    let Some(r) = rec() else { return };
    let targets = by_prog(r);
    let ksyms = &r.live.info.jited_ksyms;
    let mut compared = 0;
    for t in &targets {
        let i = sub(t);
        let code = annotate_util::sub_bytes(&r.live, i);
        let theirs = annotate_util::objdump(code, ksyms[i]);
        let ours: Vec<(u32, String)> = t["insns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                assert_eq!(
                    x["addr"].as_u64().unwrap(),
                    ksyms[i] + x["offset"].as_u64().unwrap()
                );
                (
                    x["offset"].as_u64().unwrap() as u32,
                    x["text"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            ours.len(),
            theirs.len(),
            "sub {i}: ours {ours:#?}\nobjdump {theirs:#?}"
        );
        for ((oo, ot), (to, tt)) in ours.iter().zip(&theirs) {
            assert_eq!(oo, to, "sub {i}");
            assert_eq!(
                normalize_att(ot),
                normalize_att(tt),
                "sub {i} at offset {oo:#x}"
            );
        }
        compared += ours.len();
    }
    assert!(compared >= 10, "only {compared} instructions compared");

    // perf's bug: it shows sub-program 1 with the bytes at the start of
    // jited_prog_insns (sub 0's). Sub 1's own bytes differ from those, and
    // the annotation of sub 1 is not a disassembly of them.
    let len1 = r.live.info.jited_func_lens[1] as usize;
    let sub1 = annotate_util::sub_bytes(&r.live, 1);
    let head = &r.live.info.jited_insns[..len1.min(r.live.info.jited_insns.len())];
    assert_ne!(sub1, head, "sub 1's bytes equal the image's first bytes");
    let wrong: Vec<String> = annotate_util::objdump(head, ksyms[1])
        .into_iter()
        .map(|x| normalize_att(&x.1))
        .collect();
    let work = targets.iter().find(|t| sub(t) == 1).unwrap();
    let shown: Vec<String> = work["insns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| normalize_att(x["text"].as_str().unwrap()))
        .collect();
    assert_ne!(shown, wrong, "sub 1 is shown with sub 0's bytes");
}

#[test]
fn instruction_counts_sum_to_the_symbol_in_report_and_in_perf() {
    let Some(r) = rec() else { return };
    let targets = by_prog(r);
    let (_, ours) = support::ours_flat(&r.data);
    let perf = support::perf_flat(&r.data);
    for t in &targets {
        let sym = t["symbol"].as_str().unwrap();
        let n = t["samples"].as_u64().unwrap();
        let sum: u64 = annotate_util::insn_samples(t);
        assert_eq!(sum, n, "{sym}: instruction samples vs the function's");
        let row = |rows: &[support::FlatRow], who: &str| {
            rows.iter()
                .find(|x| x.dso == sym && x.sym == format!("[k] {sym}"))
                .unwrap_or_else(|| panic!("{sym} not in {who} report: {rows:?}"))
                .samples
        };
        assert_eq!(row(&ours, "bpfprof's"), n, "{sym}: bpfprof report");
        assert_eq!(row(&perf, "perf's"), n, "{sym}: perf report");
        let pct_sum: f64 = t["insns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["percent"].as_f64().unwrap())
            .sum();
        assert!(
            (pct_sum - 100.0).abs() < 0.01,
            "{sym}: shares sum to {pct_sum}"
        );
    }
}

/// Rows of `annotate --source` under the header of sub-program `sub`:
/// (percent, text after `file:line`).
fn source_rows(out: &str, sub: usize) -> Vec<(f64, String)> {
    let mut rows = Vec::new();
    let mut inside = false;
    for l in out.lines() {
        if l.starts_with("# bpf_prog_") {
            inside = l.contains(&format!("sub-program {sub} of"));
            continue;
        }
        if !inside || l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let t: Vec<&str> = l.split_whitespace().collect();
        let (Some(pct), Some(_)) = (
            t.first().and_then(|p| p.parse::<f64>().ok()),
            t.get(1).and_then(|s| s.parse::<u64>().ok()),
        ) else {
            continue;
        };
        // percent, samples, file:line, then the text.
        rows.push((pct, t[3..].join(" ")));
    }
    rows
}

#[test]
fn source_view_puts_the_loop_lines_first() {
    let Some(r) = rec() else { return };
    let out = support::stdout(
        support::bpfprof()
            .args(["annotate", "--source", "--prog", &r.id.to_string(), "-i"])
            .arg(&r.data),
    );
    let rows = source_rows(&out, 1);
    assert!(!rows.is_empty(), "no source rows for sub 1:\n{out}");
    let loops: Vec<String> = loop_lines(&r.prog)
        .into_iter()
        .map(|(_, t)| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mut sorted = rows.clone();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (pct, text) in &sorted[..2] {
        assert!(
            loops.contains(text),
            "a top-2 source row ({pct}% {text:?}) is not a loop line {loops:?}:\n{out}"
        );
    }
    let total: f64 = rows.iter().map(|x| x.0).sum();
    assert!((total - 100.0).abs() < 0.1, "shares sum to {total}:\n{out}");
}

/// Without xlated bytecode in perf's file (perf 6.1 does not capture it),
/// `--xlated` says so and shows the JIT code, hottest on the loop. With
/// the bytecode put into the file (from the kernel, while the program was
/// loaded), it shows it as bpftool does, with the loop lines on top.
#[test]
fn xlated_view_carries_the_loop_shares() {
    let Some(r) = rec() else { return };
    let f = perfdata::PerfFile::open(&r.data).unwrap();
    let in_file = f
        .features()
        .bpf_prog_info
        .as_ref()
        .and_then(|v| v.iter().find(|i| i.id == r.id).cloned())
        .expect("perf's file has the program's info");
    let loops = loop_lines(&r.prog);
    if !in_file.has(perfdata::array::XLATED_INSNS) {
        let out = support::stdout(
            support::bpfprof()
                .args(["annotate", "--xlated", "--prog", &r.id.to_string(), "-i"])
                .arg(&r.data),
        );
        assert!(out.contains("no bytecode"), "{out}");
    }

    // perf's file with the program's full info and BTF from the kernel.
    let full = r.dir.join("full.data");
    annotate_util::rewrite(&r.data, &full, |feats| {
        let infos = feats.bpf_prog_info.as_mut().unwrap();
        let slot = infos.iter_mut().find(|i| i.id == r.id).unwrap();
        *slot = r.live.info.clone();
    });
    let targets = annotate_json(&full, &["--xlated", "--prog", &r.id.to_string()]);
    let work = targets.iter().find(|t| sub(t) == 1).expect("sub 1");
    let rows = work["xlated"].as_array().expect("xlated rows");
    assert!(!rows.is_empty(), "no xlated rows: {work}");
    let lines = work["lines"].as_array().unwrap();
    let is_loop = |li: &Value| {
        li.as_u64().is_some_and(|li| {
            let l = &lines[li as usize];
            loops
                .iter()
                .any(|(n, t)| l["line"].as_u64() == Some(*n as u64) && l["text"] == *t)
        })
    };
    // A line's samples sit on the line's first instruction, marked as the
    // line's: `line_samples`, never an instruction's own `samples`.
    let line_samples = |x: &Value| x["line_samples"].as_u64().unwrap_or(0);
    assert!(rows.iter().all(|x| x.get("samples").is_none()), "{work}");
    let hot = rows.iter().max_by_key(|x| line_samples(x)).unwrap();
    assert!(
        is_loop(&hot["line"]),
        "hottest bytecode row {hot} is not on the loop"
    );
    let sum: u64 = rows.iter().map(line_samples).sum();
    assert_eq!(sum, work["samples"].as_u64().unwrap(), "carried shares");
    // The loop's share in bytecode equals its share in the source view.
    let loop_rows: u64 = rows
        .iter()
        .filter(|x| is_loop(&x["line"]))
        .map(line_samples)
        .sum();
    let loop_lines_samples: u64 = lines
        .iter()
        .filter(|l| {
            loops
                .iter()
                .any(|(n, t)| l["line"].as_u64() == Some(*n as u64) && l["text"] == *t)
        })
        .map(|l| l["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(loop_rows, loop_lines_samples);

    // The text puts each share on its source line: the lines' samples add
    // up to the source view's, and no bytecode instruction has a share of
    // its own (the loop has no calls).
    let text = support::stdout(
        support::bpfprof()
            .args(["annotate", "--xlated", "--prog", &r.id.to_string(), "-i"])
            .arg(&full),
    );
    let block = text
        .split("\n\n")
        .find(|b| b.contains("sub-program 1 "))
        .unwrap_or_else(|| panic!("no sub-program 1 in:\n{text}"));
    let mut per_line: std::collections::BTreeMap<String, u64> = Default::default();
    for l in block.lines().filter(|l| !l.starts_with('#')) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if let Some(at) = l.find("  ; ") {
            let n: u64 = t[1].parse().unwrap_or_else(|_| panic!("samples in {l:?}"));
            let key = l[at + 4..].split("  ").next().unwrap().to_string();
            *per_line.entry(key).or_default() += n;
        } else {
            assert!(
                t.first().is_some_and(|w| w.ends_with(':')),
                "an instruction row starts with its index, no share: {l:?}"
            );
        }
    }
    for l in lines {
        let file = l["file"].as_str().unwrap().rsplit('/').next().unwrap();
        let key = format!("{file}:{}", l["line"]);
        assert_eq!(
            per_line.get(&key).copied().unwrap_or(0),
            l["samples"].as_u64().unwrap(),
            "{key}: bytecode view vs source view\n{block}"
        );
    }

    // Instruction for instruction what bpftool printed while it was loaded.
    if let Some(bt) = &r.bpftool_xlated {
        for x in rows {
            let idx = x["index"].as_u64().unwrap();
            let want = bt
                .lines()
                .find_map(|l| {
                    let (i, text) = l.trim_start().split_once(": ")?;
                    (i.parse::<u64>().ok()? == idx).then_some(text)
                })
                .unwrap_or_else(|| panic!("bpftool has no instruction {idx}:\n{bt}"));
            assert_eq!(x["text"].as_str(), Some(want), "instruction {idx}");
        }
    } else {
        // Through the gate: a printed reason, or a failure under CI.
        support::require(
            false,
            "the instruction-for-instruction check needs bpftool (apt-get install bpftool)",
        );
    }
}

#[test]
fn prog_and_symbol_select_the_same_and_no_argument_lists_the_hottest() {
    let Some(r) = rec() else { return };
    let targets = by_prog(r);
    for t in &targets {
        let sym = t["symbol"].as_str().unwrap();
        let one = annotate_json(&r.data, &[sym]);
        assert_eq!(one.len(), 1, "{sym} selects one function: {one:?}");
        assert_eq!(&one[0], t, "{sym} vs --prog {}", r.id);
    }

    // No argument: the hottest BPF programs (other tests may be running
    // programs too), each with every sub-program that got samples, hottest
    // program first.
    let perf = support::perf_flat(&r.data);
    let top = annotate_json(&r.data, &[]);
    let mut order: Vec<(u64, f64)> = Vec::new();
    for t in &top {
        let Some(id) = t["bpf"]["prog_id"].as_u64() else {
            assert!(t["why"].is_string(), "{t}");
            continue;
        };
        // Our functions' samples are perf's for their names (other
        // programs' names need not be unique).
        if id == r.id as u64 {
            let sym = t["symbol"].as_str().unwrap();
            let row = perf
                .iter()
                .find(|x| x.dso == sym)
                .expect("in perf's report");
            assert_eq!(t["samples"].as_u64(), Some(row.samples), "{sym}");
        }
        match order.last_mut() {
            Some((last, pct)) if *last == id => *pct += t["percent"].as_f64().unwrap(),
            _ => {
                assert!(
                    !order.iter().any(|(x, _)| *x == id),
                    "program {id} listed in two places"
                );
                order.push((id, t["percent"].as_f64().unwrap()));
            }
        }
    }
    assert!(order.len() <= 5, "at most 5 programs: {order:?}");
    for w in order.windows(2) {
        assert!(w[0].1 + 1e-6 >= w[1].1, "hottest first: {order:?}");
    }
    let mine: Vec<&Value> = top
        .iter()
        .filter(|t| t["bpf"]["prog_id"].as_u64() == Some(r.id as u64))
        .collect();
    assert_eq!(mine.len(), targets.len(), "ours, all its subs: {order:?}");
    for t in &targets {
        assert!(mine.contains(&t), "{} missing", t["symbol"]);
    }
}

#[test]
fn the_program_was_gone_when_annotate_ran() {
    let Some(r) = rec() else { return };
    // The recording unloaded it and checked; check again, as every other
    // test of this file annotates it from the file alone.
    assert!(
        !annotate_util::is_loaded(r.id),
        "program {} is still loaded",
        r.id
    );
    assert!(r.calls > 0, "the workload ran");
    let targets = annotate_json(&r.data, &["--prog", &r.id.to_string()]);
    assert!(targets.iter().all(|t| t.get("insns").is_some()));
}

/// A program loaded while perf records gets the kernel's names in the
/// stream: its main function is `bpf_prog_<whole-program tag>_<name>`, not
/// perf's synthesized `bpf_prog_<prog_tags[0]>_<name>`. Annotate must call
/// the function what report (and perf) call it.
#[test]
fn a_program_loaded_during_the_recording_keeps_the_recorded_names() {
    if !support::live(true) {
        return;
    }
    let r = annotate_util::record_with_perf_loading_during("ann_during", 11);
    let targets = by_prog(&r);
    let (_, rows) = support::ours_flat(&r.data);
    for t in &targets {
        let i = sub(t);
        let recorded = perf_name(&r, i);
        assert_eq!(recorded, r.ksym_names[i], "perf's name is the kernel's");
        assert!(
            rows.iter().any(|x| x.dso == recorded),
            "bpfprof report shows {recorded}"
        );
        assert_eq!(t["dso"].as_str(), Some(recorded.as_str()), "sub {i}");
        assert_eq!(t["symbol"].as_str(), Some(recorded.as_str()), "sub {i}");
    }
}
