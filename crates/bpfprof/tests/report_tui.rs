//! `bpfprof report` on a terminal opens its interface over the recording
//! (as perf report does), driven in tmux: the rows shown are `--stdio`'s,
//! Enter opens a row's call graph as `--stdio -g` draws it and a BPF
//! program's annotation with `report --bpf --json`'s sub-program counts,
//! `/` filters as a substring of the row, `q` and SIGTERM give the
//! terminal back.
//! Through a pipe the report is the table, byte for byte `--stdio`'s.

mod support;

use std::path::Path;
use std::process::Command;

use support::tmux::{children_of, Tmux};
use support::{bpfprof, live, require, stdout};

fn ready() -> bool {
    let has = |c: &str| Command::new(c).arg("-V").output().is_ok();
    live(false) && require(has("tmux"), "needs tmux (apt-get install tmux)")
}

fn report(data: &Path, args: &[&str]) -> String {
    stdout(bpfprof().arg("report").arg("-i").arg(data).args(args))
}

/// The table's rows of a `--stdio` report (after the header's dots).
fn table_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with("# ....."))
        .filter(|l| l.starts_with("  ") && l.contains('%') && !l.trim_start().starts_with("--"))
        .collect()
}

/// The rows pane's lines, marker cut off: between the column names and
/// the key line.
fn screen_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip_while(|l| !l.contains("Children") || !l.contains("Symbol"))
        .skip(1)
        .take_while(|l| !l.starts_with("q/Esc") && !l.starts_with("filter ("))
        .map(|l| l.chars().skip(1).collect::<String>().trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn browse_rows_call_graphs_annotate_filter_and_quit() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let data = support::path(&dir, "demo.data");
    support::run(
        bpfprof()
            .args(["record", "--demo", "-g", "--duration", "2", "-o"])
            .arg(&data),
    );
    let table = report(&data, &["--stdio"]);
    assert_eq!(
        report(&data, &[]),
        table,
        "not on a terminal, the report is the table"
    );
    let rows = table_rows(&table);
    assert!(rows.len() > 10, "a table to browse:\n{table}");

    let t = Tmux::start(220, 50);
    let command = format!(
        "{} report -i {}",
        env!("CARGO_BIN_EXE_bpfprof"),
        data.display()
    );
    t.keys(&[&command, "Enter"]);
    let s = t.wait_for("the rows", |s| {
        s.contains(" Rows (") && s.contains("BPF programs (")
    });
    assert!(
        t.alternate_screen(),
        "the interface draws on the alternate screen"
    );

    // The first rows are --stdio's, in its order, as wide as the screen.
    let shown = screen_rows(&s);
    for (i, want) in rows.iter().take(8).enumerate() {
        let got = &shown[i];
        assert!(
            !got.is_empty() && want.starts_with(got.as_str()),
            "row {i}: {got:?} is not --stdio's {want:?}\n{s}"
        );
    }

    // Enter on the first row with a call graph ('+') opens the graph that
    // --stdio -g prints under it.
    let marked = s
        .lines()
        .skip_while(|l| !l.contains("Children") || !l.contains("Symbol"))
        .skip(1)
        .position(|l| l.starts_with('+'))
        .expect("a row with a call graph");
    let row = shown[marked].clone();
    for _ in 0..marked {
        t.keys(&["Down"]);
    }
    t.keys(&["Enter"]);
    let s = t.wait_for("the call graph", |s| {
        s.lines()
            .any(|l| l.starts_with('-') && l.contains(row.trim()))
    });
    let graphed = report(&data, &["--stdio", "-g"]);
    let want: Vec<&str> = graphed
        .lines()
        .skip_while(|l| !l.starts_with(&row))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .take(5)
        .collect();
    assert!(!want.is_empty(), "--stdio -g draws a graph under {row:?}");
    let got: Vec<&str> = s
        .lines()
        .skip_while(|l| !(l.starts_with('-') && l.contains(row.trim())))
        .skip(1)
        .take(want.len())
        .collect();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            w.trim_end().starts_with(g.trim_end()) && !g.trim().is_empty(),
            "graph line {g:?}, --stdio -g has {w:?}\n{s}"
        );
    }
    // And closes again.
    t.keys(&["Enter"]);
    t.wait_for("the graph closed", |s| {
        s.lines()
            .any(|l| l.starts_with('+') && l.contains(row.trim()))
    });

    // `/` keeps the rows whose text holds the filter, as many as --stdio
    // has, and the programs whose name does.
    let holding = rows.iter().filter(|r| r.contains("bpfprof_demo")).count();
    assert!(holding > 0, "rows of the demo program:\n{table}");
    t.keys(&["/", "bpfprof_demo", "Enter"]);
    let s = t.wait_for("the filter", |s| s.contains("[filter: bpfprof_demo]"));
    assert!(
        s.contains(&format!(" Rows ({holding} of {};", rows.len())),
        "{holding} rows hold bpfprof_demo:\n{s}"
    );
    assert!(
        screen_rows(&s).iter().all(|r| r.contains("bpfprof_demo")),
        "{s}"
    );

    // Tab to the BPF pane, Enter: the demo program's annotation, its
    // sub-programs with the BPF view's counts and its source lines.
    let view: serde_json::Value =
        serde_json::from_str(&report(&data, &["--bpf", "--json"])).expect("JSON");
    let prog = view["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "bpfprof_demo")
        .unwrap_or_else(|| panic!("the demo program in the BPF view: {view}"));
    let work = prog["subprogs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().unwrap().ends_with("_work"))
        .expect("the demo's work sub-program");
    let count = work["samples"].as_u64().unwrap();
    assert!(count > 0, "the demo's work function has samples: {prog}");
    t.keys(&["Tab", "Enter"]);
    let s = t.wait_for("the annotation", |s| {
        s.contains("annotated (q/Esc: back)") && s.contains("bpfprof_demo.bpf.c:")
    });
    let line = s
        .lines()
        .find(|l| l.contains(" #") && l.ends_with("_work"))
        .unwrap_or_else(|| panic!("the work sub-program listed:\n{s}"));
    let n: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(n, count, "{line}");
    t.keys(&["q"]);
    let s = t.wait_for("the rows again", |s| s.contains(" Rows ("));
    assert!(
        t.alternate_screen(),
        "q leaves the annotation, not the report:\n{s}"
    );

    t.keys(&["q"]);
    t.wait_restored();

    // SIGTERM gives the terminal back too.
    t.keys(&[&command, "Enter"]);
    t.wait_for("the rows", |s| s.contains(" Rows ("));
    let report = children_of(t.pane_pid());
    assert_eq!(report.len(), 1, "one bpfprof under the shell: {report:?}");
    let ok = Command::new("kill")
        .args(["-TERM", &report[0].to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    t.wait_restored();
}
