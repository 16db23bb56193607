//! `bpfprof annotate` on damaged BPF sections: a perf recording of a
//! generated program, rewritten with its HEADER_BPF_BTF and
//! HEADER_BPF_PROG_INFO entries corrupted one way at a time. Annotate must
//! warn and still show the machine code (without source where the source
//! is what broke), or say clearly why it cannot; it must never panic.

mod support;

mod annotate_util;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use annotate_util::Recording;
use perfdata::{array, BpfProgInfo, Features};
use serde_json::Value;

static REC: OnceLock<Recording> = OnceLock::new();

fn rec() -> Option<&'static Recording> {
    annotate_util::shared(&REC, || {
        let mut r = annotate_util::record_with_perf("ann_corrupt", 3, &[]);
        // Each case runs annotate several times: leave out the user-mode
        // samples, whose binaries are slow to symbolize.
        let small = r.dir.join("kernel.data");
        annotate_util::kernel_samples_only(&r.data, &small);
        r.data = small;
        r
    })
}

static N: AtomicUsize = AtomicUsize::new(0);

/// A copy of the recording with its features edited.
fn corrupt(r: &Recording, edit: impl FnOnce(&mut Features)) -> PathBuf {
    let n = N.fetch_add(1, Ordering::Relaxed);
    let out = r.dir.join(format!("corrupt{n}.data"));
    annotate_util::rewrite(&r.data, &out, edit);
    out
}

fn info_of(f: &mut Features, id: u32) -> &mut BpfProgInfo {
    f.bpf_prog_info
        .as_mut()
        .expect("perf wrote HEADER_BPF_PROG_INFO")
        .iter_mut()
        .find(|i| i.id == id)
        .expect("the program's info is in perf's file")
}

fn btf_of(f: &mut Features, btf_id: u32) -> &mut Vec<u8> {
    &mut f
        .bpf_btf
        .as_mut()
        .expect("perf wrote HEADER_BPF_BTF")
        .iter_mut()
        .find(|b| b.id == btf_id)
        .expect("the program's BTF is in perf's file")
        .data
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run annotate; it must exit (no signal) with 0 or 1, without a panic.
fn annotate(file: &Path, args: &[&str]) -> Run {
    let out = support::bpfprof()
        .arg("annotate")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("run bpfprof annotate");
    let run = Run {
        code: out.status.code().unwrap_or_else(|| {
            panic!(
                "annotate {args:?} on {} died: {}",
                file.display(),
                out.status
            )
        }),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked") && run.code != 101,
        "annotate {args:?} on {} panicked:\n{}",
        file.display(),
        run.stderr
    );
    assert!(run.code == 0 || run.code == 1, "exit code {}", run.code);
    run
}

/// Every view of the damaged file, none panicking; returns the JSON
/// targets of the program (exit 0 required when `annotated`).
fn all_views(r: &Recording, file: &Path) -> Vec<Value> {
    let id = r.id.to_string();
    for args in [vec!["--prog", &id, "--source"], vec![]] {
        annotate(file, &args);
    }
    let run = annotate(file, &["--prog", &id, "--json"]);
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("annotate --json: {e}\n{}\n{}", run.stdout, run.stderr));
    v.as_array().expect("an array").clone()
}

/// The damage left the machine code: every target is annotated, with
/// instructions whose counts sum to its samples, and a warning that
/// mentions the program.
fn assert_disassembly_with_warning(targets: &[Value], what: &str) {
    assert!(!targets.is_empty(), "{what}: no targets");
    for t in targets {
        let insns = t["insns"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: not annotated: {t}"));
        assert!(!insns.is_empty(), "{what}: no instructions: {t}");
        let sum: u64 = insns.iter().map(|i| i["samples"].as_u64().unwrap()).sum();
        assert_eq!(sum, t["samples"].as_u64().unwrap(), "{what}");
        let w = t["warnings"].as_array().expect("warnings");
        assert!(
            !w.is_empty(),
            "{what}: annotated without a warning: {}",
            t["symbol"]
        );
    }
}

/// No line shown is made up: each is empty or one the program was built
/// with.
fn assert_no_made_up_source(r: &Recording, targets: &[Value], what: &str) {
    for t in targets {
        for l in t["lines"].as_array().into_iter().flatten() {
            let text = l["text"].as_str().unwrap();
            assert!(
                text.is_empty()
                    || r.prog
                        .expected_source_lines()
                        .iter()
                        .any(|e| e.line.text == text),
                "{what}: source line {l} is not from the program"
            );
        }
    }
}

fn assert_no_source(targets: &[Value], what: &str) {
    for t in targets {
        let lines = t["lines"].as_array().map_or(0, Vec::len);
        let texts = t["lines"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| !l["text"].as_str().unwrap_or("").is_empty())
            .count();
        assert_eq!(texts, 0, "{what}: {lines} source lines shown: {t}");
    }
}

#[test]
fn damaged_btf_gives_a_warning_and_code_without_source() {
    let Some(r) = rec() else { return };
    let btf_id = r.live.info.btf_id;
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("truncated to half", Box::new(|b| b.truncate(b.len() / 2))),
        ("truncated inside the header", Box::new(|b| b.truncate(10))),
        ("empty", Box::new(|b| b.clear())),
        ("magic flipped", Box::new(|b| b[0] ^= 0xff)),
        (
            "string section past the end",
            Box::new(|b| b[20..24].copy_from_slice(&0xffff_ff00u32.to_le_bytes())),
        ),
        (
            "type section past the end",
            Box::new(|b| b[12..16].copy_from_slice(&0x7fff_fff0u32.to_le_bytes())),
        ),
        (
            "header length huge",
            Box::new(|b| b[4..8].copy_from_slice(&0xffff_fff0u32.to_le_bytes())),
        ),
    ];
    for (what, edit) in cases {
        let file = corrupt(r, |f| edit(btf_of(f, btf_id)));
        let targets = all_views(r, &file);
        assert_disassembly_with_warning(&targets, what);
        assert_no_source(&targets, what);
    }
    // The blob missing altogether.
    let file = corrupt(r, |f| {
        f.bpf_btf.as_mut().unwrap().retain(|b| b.id != btf_id);
    });
    let targets = all_views(r, &file);
    assert_disassembly_with_warning(&targets, "BTF missing");
    assert_no_source(&targets, "BTF missing");
}

/// Bytes flipped all over the BTF (types and strings): whatever comes
/// out, no panic, and no source line that the program does not have.
#[test]
fn btf_with_flipped_bytes_never_panics() {
    let Some(r) = rec() else { return };
    let btf_id = r.live.info.btf_id;
    let len = r.live.btf.as_ref().map_or(0, Vec::len);
    assert!(len > 24, "the program has BTF");
    let step = (len / 12).max(1);
    for pos in (0..len).step_by(step) {
        let file = corrupt(r, |f| {
            let b = btf_of(f, btf_id);
            b[pos] ^= 0xa5;
        });
        let id = r.id.to_string();
        let run = annotate(&file, &["--prog", &id, "--json"]);
        let text = annotate(&file, &["--prog", &id, "--source"]);
        // The text view decides like the JSON one: same file, same program.
        assert_eq!(text.code, run.code, "byte {pos}: --source vs --json");
        if run.code == 0 {
            let v: Value = serde_json::from_str(&run.stdout).expect("JSON");
            let targets = v.as_array().unwrap();
            for t in targets {
                assert!(t.get("insns").is_some(), "byte {pos}: {t}");
            }
            assert_no_made_up_source(r, targets, &format!("byte {pos} flipped"));
        }
    }
}

#[test]
fn line_info_past_the_strings_gives_a_warning_and_code_without_source() {
    let Some(r) = rec() else { return };
    let file = corrupt(r, |f| {
        for l in &mut info_of(f, r.id).line_info {
            l.line_off = 0x7fff_fff0;
            l.file_name_off = 0xffff_ff00;
        }
    });
    let targets = all_views(r, &file);
    assert_disassembly_with_warning(&targets, "line_info past the strings");
    assert_no_source(&targets, "line_info past the strings");

    // Only one entry bad: the others still give their lines.
    let file = corrupt(r, |f| {
        info_of(f, r.id).line_info[0].line_off = u32::MAX;
    });
    let targets = all_views(r, &file);
    assert_disassembly_with_warning(&targets, "one line_info entry bad");
    assert_no_made_up_source(r, &targets, "one line_info entry bad");
}

#[test]
fn jited_line_info_out_of_range_gives_a_warning_and_code() {
    let Some(r) = rec() else { return };
    type Edit = Box<dyn Fn(&mut Vec<u64>)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "all beyond their functions",
            Box::new(|v| v.iter_mut().for_each(|a| *a = a.wrapping_add(1 << 20))),
        ),
        ("all zero", Box::new(|v| v.iter_mut().for_each(|a| *a = 0))),
        (
            "all u64::MAX",
            Box::new(|v| v.iter_mut().for_each(|a| *a = u64::MAX)),
        ),
        ("reversed", Box::new(|v| v.reverse())),
        (
            "one fewer than line_info",
            Box::new(|v| {
                v.pop();
            }),
        ),
        (
            "last past its function",
            Box::new(|v| {
                let last = v.len() - 1;
                v[last] += 1 << 16;
            }),
        ),
    ];
    for (what, edit) in cases {
        let file = corrupt(r, |f| edit(&mut info_of(f, r.id).jited_line_info));
        let targets = all_views(r, &file);
        assert_disassembly_with_warning(&targets, what);
        assert_no_made_up_source(r, &targets, what);
    }
}

const BAD_TYPE_IDS: [(&str, u32); 4] = [
    ("type id past the BTF", 9999),
    ("type id of a non-function (int)", 1),
    ("type id 0 (void)", 0),
    ("type id u32::MAX", u32::MAX),
];

fn with_type_id(r: &Recording, ty: u32) -> PathBuf {
    corrupt(r, |f| {
        for fi in &mut info_of(f, r.id).func_info {
            fi.type_id = ty;
        }
    })
}

#[test]
fn wrong_func_info_type_ids_still_give_code_and_no_wrong_name() {
    let Some(r) = rec() else { return };
    for (what, ty) in BAD_TYPE_IDS {
        let targets = all_views(r, &with_type_id(r, ty));
        assert!(!targets.is_empty(), "{what}");
        let funcs = r.prog.expected_func_names();
        for t in &targets {
            let insns = t["insns"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {t}"));
            assert!(!insns.is_empty(), "{what}");
            // Whatever it calls the functions, it is not the BTF name of
            // another function of the program.
            let sub = t["bpf"]["sub"].as_u64().unwrap() as usize;
            let name = t["bpf"]["func_name"].as_str().unwrap();
            assert!(
                !funcs.iter().enumerate().any(|(i, f)| i != sub && f == name),
                "{what}: sub {sub} called {name}"
            );
        }
    }
}

#[test]
fn wrong_func_info_type_ids_give_a_warning() {
    let Some(r) = rec() else { return };
    for (what, ty) in BAD_TYPE_IDS {
        let targets = all_views(r, &with_type_id(r, ty));
        assert_disassembly_with_warning(&targets, what);
    }
}

#[test]
fn dropped_jit_image_says_why_it_cannot_annotate() {
    let Some(r) = rec() else { return };
    let file = corrupt(r, |f| {
        let i = info_of(f, r.id);
        i.arrays &= !(1 << array::JITED_INSNS);
        i.jited_insns.clear();
    });
    let targets = all_views(r, &file);
    assert!(!targets.is_empty());
    for t in &targets {
        assert!(t.get("insns").is_none(), "annotated without code: {t}");
        let why = t["why"].as_str().expect("a why");
        assert!(
            why.contains("JIT image") || why.contains("machine code"),
            "{why}"
        );
        assert!(t["samples"].as_u64().unwrap() > 0);
    }
    let run = annotate(&file, &["--prog", &r.id.to_string()]);
    assert!(run.stdout.contains("cannot annotate"), "{}", run.stdout);
    assert_eq!(run.code, 1, "nothing annotated is an error exit");
    assert!(!run.stderr.is_empty(), "and it says so on stderr");

    // Half the image: sub 0 (at the start) is still there.
    let file = corrupt(r, |f| {
        let i = info_of(f, r.id);
        let keep = i.jited_func_lens[0] as usize + 4;
        i.jited_insns.truncate(keep);
    });
    let targets = all_views(r, &file);
    for t in &targets {
        match t["bpf"]["sub"].as_u64() {
            Some(0) => assert!(t.get("insns").is_some(), "sub 0: {t}"),
            _ => assert!(t["why"].is_string(), "a cut-off sub-program: {t}"),
        }
    }

    // Lengths that do not add up to the image.
    let file = corrupt(r, |f| {
        let i = info_of(f, r.id);
        let last = i.jited_func_lens.len() - 1;
        i.jited_func_lens[last] = 1 << 30;
        i.jited_func_lens[0] = u32::MAX;
    });
    all_views(r, &file);
}

#[test]
fn a_program_without_prog_info_says_it_was_unloaded_before_capture() {
    let Some(r) = rec() else { return };
    let file = corrupt(r, |f| {
        f.bpf_prog_info.as_mut().unwrap().retain(|i| i.id != r.id);
    });
    // report still names it from the KSYMBOL records.
    let (_, rows) = support::ours_flat(&file);
    assert!(
        rows.iter().any(|x| x.dso == r.ksym_names[1]),
        "report still shows the program: {rows:?}"
    );
    let targets = all_views(r, &file);
    assert!(!targets.is_empty());
    for t in &targets {
        assert!(t.get("insns").is_none(), "{t}");
        let why = t["why"].as_str().expect("a why");
        assert!(why.contains("unloaded before"), "{why}");
        assert!(why.contains("bpfprof record"), "says how to fix: {why}");
    }
    // No BPF section at all.
    let file = corrupt(r, |f| {
        f.bpf_prog_info = None;
        f.bpf_btf = None;
    });
    for t in all_views(r, &file) {
        assert!(
            t["why"].as_str().unwrap().contains("unloaded before"),
            "{t}"
        );
    }
}
