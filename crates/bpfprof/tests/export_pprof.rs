//! `export --format pprof` read back by `go tool pprof`: `-top`'s shares
//! are the report's for its top rows (BPF sub-programs among them),
//! `-lines` gives BPF functions their BTF source lines, and `-traces`
//! shows a sub-program under its caller with the sample's labels.

mod export_util;
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

fn has_go() -> bool {
    support::require(
        Command::new("go").arg("version").output().is_ok(),
        "needs go (apt-get install golang-go)",
    )
}

fn pprof(args: &[&str], file: &Path) -> String {
    support::stdout(
        Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(file),
    )
}

/// `-top` rows as name → flat share, every node kept.
fn top(file: &Path, extra: &[&str]) -> Vec<(String, f64)> {
    let mut args = vec!["-top", "-nodecount=1000000", "-nodefraction=0"];
    args.extend_from_slice(extra);
    let text = pprof(&args, file);
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let share = t.get(1)?.trim_end_matches('%').parse().ok()?;
            Some((t.get(5..)?.join(" "), share))
        })
        .collect()
}

#[test]
fn go_tool_pprof_reads_back_the_reports_shares_and_bpf_lines() {
    if !support::live(false) || !has_go() {
        return;
    }
    let dir = support::tempdir();
    let (data, pb) = export_util::demo_export(&dir, "pprof", "demo.pb.gz");

    // The report's rows by symbol, heaviest first, by their own samples
    // (pprof -top's flat share; a report with call chains shows children
    // by default).
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--no-children", "--sort", "sym", "--json", "-i"])
            .arg(&data),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<(String, f64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["symbol"].as_str().unwrap().to_string(),
                r["overhead"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut names: HashMap<&str, u32> = HashMap::new();
    for (n, _) in &rows {
        *names.entry(n).or_default() += 1;
    }
    let theirs: HashMap<String, f64> = top(&pb, &[]).into_iter().collect();
    // pprof shortens names with generics and paths (`<T as U>::f` is
    // `::f`), and one name in two objects is one pprof function: compare
    // the rows whose name pprof prints as is and no other row has.
    let plain = |n: &str| {
        n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
    };
    let top_rows: Vec<&(String, f64)> = rows
        .iter()
        .filter(|(n, _)| plain(n) && names[n.as_str()] == 1)
        .take(10)
        .collect();
    assert!(top_rows.len() >= 5, "{rows:?}");
    for (name, share) in &top_rows {
        let got = theirs
            .get(name)
            .unwrap_or_else(|| panic!("{name} in pprof's -top: {theirs:?}"));
        assert!(
            (got - share).abs() <= 0.1,
            "{name}: pprof {got}%, report {share}%"
        );
    }
    let work = top_rows
        .iter()
        .find(|(n, _)| n.starts_with("bpf_prog_") && n.ends_with("_work"))
        .expect("the demo's sub-program among the top rows");
    assert!(work.1 > 1.0, "{work:?}");

    // BTF lines: pprof's per-line view of the sub-program.
    let lines = top(&pb, &["-lines"]);
    let work_lines: Vec<&(String, f64)> = lines
        .iter()
        .filter(|(n, _)| n.starts_with(&work.0) && n.contains(" bpfprof_demo.bpf.c:"))
        .collect();
    assert!(!work_lines.is_empty(), "{lines:?}");
    let sum: f64 = work_lines.iter().map(|l| l.1).sum();
    assert!(
        (sum - work.1).abs() <= 0.1 * work_lines.len() as f64,
        "{work_lines:?}"
    );

    // Traces: the sub-program under the program's main function, with the
    // thread's and the program's labels.
    let traces = pprof(&["-traces"], &pb);
    let id = v["bpf"]["programs"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "bpfprof_demo"))
        .and_then(|p| p["id"].as_u64())
        .expect("the demo program in the report's BPF summary");
    let found = traces.split("-----------+").any(|t| {
        let frames: Vec<&str> = t
            .lines()
            // Label lines have a colon, the separator's tail dashes.
            .filter(|l| !l.contains(':') && !l.trim_start().starts_with('-'))
            .map(|l| l.split_whitespace().last().unwrap_or(""))
            .filter(|f| !f.is_empty())
            .collect();
        frames.len() >= 2
            && frames[0] == work.0
            && frames[1].ends_with("_bpfprof_demo")
            && t.contains("comm:  bpfprof-demo")
            && t.contains("pid:")
            && t.contains(&format!("bpf_prog_id:  {id}"))
    });
    assert!(found, "a trace of work under bpfprof_demo:\n{traces}");
}
