//! `bpfprof top` in a real terminal: a detached tmux session of fixed
//! size, read back with capture-pane. A program loaded after top starts
//! must show with its cost; sorting, `/` filtering and resizing redraw;
//! `q` and SIGTERM give the shell back its screen.

mod support;

use std::process::Command;

use support::tmux::{children_of, Tmux};
use support::{live, require, Bpftrace, GetppidLoop};

fn ready() -> bool {
    let has = |c: &str| Command::new(c).arg("-V").output().is_ok();
    live(false)
        && require(has("tmux"), "needs tmux (apt-get install tmux)")
        && require(
            Command::new("bpftrace").arg("--version").output().is_ok(),
            "needs bpftrace (apt-get install bpftrace)",
        )
}

fn top_command() -> String {
    format!("{} top -F 199 -d 0.5", env!("CARGO_BIN_EXE_bpfprof"))
}

/// The BPF pane's lines naming `name`, in screen order.
fn lines_with<'a>(screen: &'a str, name: &str) -> Vec<&'a str> {
    screen.lines().filter(|l| l.contains(name)).collect()
}

/// The Total column of the first line naming `name`, if it shows a cost.
fn total_of(screen: &str, name: &str) -> Option<f64> {
    let line = lines_with(screen, name).into_iter().next()?;
    line.split_whitespace()
        .next()?
        .strip_suffix('%')?
        .parse()
        .ok()
}

#[test]
fn a_program_loaded_after_start_shows_sorts_filters_and_resizes() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let t = Tmux::start(160, 40);
    t.keys(&[&top_command(), "Enter"]);
    t.wait_for("the BPF pane", |s| s.contains("BPF programs ("));
    assert!(t.alternate_screen(), "top draws on the alternate screen");

    // Loaded after top started: one busy program, one idle.
    let _bt = Bpftrace::start(
        "tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); } \
         tracepoint:syscalls:sys_enter_getpgid { @g = count(); }",
    );
    let _work = GetppidLoop::start();
    let s = t.wait_for("sys_enter_getpp with a cost", |s| {
        total_of(s, "sys_enter_getpp").is_some_and(|v| v > 0.0)
    });
    let line = lines_with(&s, "sys_enter_getpp")[0];
    assert!(line.contains("tracepoint"), "type shown: {line}");
    assert!(line.contains("bpftrace"), "owner shown: {line}");

    // `/` keeps what matches, by program name.
    t.keys(&["/", "sys_enter_getp", "Enter"]);
    let s = t.wait_for("the filter", |s| {
        s.contains("[filter: sys_enter_getp]") && s.contains("sys_enter_getpg")
    });
    let shown: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.contains("; last interval;"))
        .skip(2)
        .take_while(|l| !l.contains("Symbols ("))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        shown.iter().all(|l| l.contains("sys_enter_getp")),
        "only matching programs: {shown:#?}"
    );
    // By total the busy one first; by name (`<` from total wraps to it)
    // getpg before getpp.
    let order = |s: &str| {
        let a = s.find("sys_enter_getpg").unwrap();
        let b = s.find("sys_enter_getpp").unwrap();
        a < b
    };
    let s = t.wait_for("sort by total", |s| {
        s.contains("sys_enter_getpg") && total_of(s, "sys_enter_getpp").is_some_and(|v| v > 0.0)
    });
    assert!(!order(&s), "busy program first by total:\n{s}");
    t.keys(&["<"]);
    let s = t.wait_for("sort by name", |s| s.contains("sort: name"));
    assert!(order(&s), "by name:\n{s}");

    // Enter opens the selected program: its sub-programs and source lines.
    t.keys(&["Enter"]);
    t.wait_for("the program's view", |s| {
        s.contains("(Esc: back)")
            && s.contains("sub-programs")
            && s.contains("hottest source lines")
    });
    t.keys(&["Escape"]);
    t.wait_for("the list again", |s| s.contains("; last interval;"));

    // A narrower window redraws at its width: the panes' top borders span
    // the new width exactly.
    let border = |s: &str, w: usize| {
        s.lines()
            .filter(|l| l.contains("BPF programs (") && l.ends_with('─'))
            .any(|l| l.chars().count() == w)
    };
    assert!(border(&t.screen(), 160));
    t.resize(100, 30);
    t.wait_for("a redraw at 100 columns", |s| border(s, 100));

    t.keys(&["q"]);
    t.wait_restored();
}

#[test]
fn sigterm_gives_the_terminal_back() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let t = Tmux::start(120, 30);
    t.keys(&[&top_command(), "Enter"]);
    t.wait_for("the BPF pane", |s| s.contains("BPF programs ("));
    let shell = t.pane_pid();
    let top = children_of(shell);
    assert_eq!(top.len(), 1, "one bpfprof under the shell: {top:?}");
    let ok = Command::new("kill")
        .args(["-TERM", &top[0].to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    t.wait_restored();
}
