//! What a newcomer meets first (issue 24): the error for a missing
//! recording, the sample count in the header as perf prints it, and
//! tables cut to a terminal's width but whole elsewhere. Oracles: the OS
//! error text (std's), `perf report --stdio` on the same files, and the
//! function name compiled into the workload.

mod support;

use std::path::Path;
use std::process::Command;

use testkit::tool;

fn stderr_of(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_recording_is_said_once_with_what_to_do() {
    let dir = support::tempdir();
    let (ok, err) = stderr_of(support::bpfprof().arg("report").current_dir(dir.path()));
    assert!(!ok, "report without perf.data succeeded");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.contains("perf.data"), "names the file: {err}");
    assert!(
        err.contains("bpfprof record"),
        "says how to make one: {err}"
    );
    let os = std::io::Error::from_raw_os_error(libc::ENOENT).to_string();
    assert!(
        err.matches(&os).count() <= 1,
        "the OS error repeated: {err}"
    );

    // Any other OS error (a directory cannot be mapped) is said exactly
    // once, after the file's name.
    let (ok, err) = stderr_of(support::bpfprof().args(["report", "-i"]).arg(dir.path()));
    assert!(!ok);
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
}

/// The `# Samples:` line of a report.
fn samples_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("# Samples:"))
        .unwrap_or_else(|| panic!("no '# Samples:' line in:\n{text}"))
        .to_string()
}

/// A C program that makes N getppid(2) calls: with `-e
/// syscalls:sys_enter_getppid -c 1`, exactly N samples.
fn build_getppid(dir: &Path) -> Option<std::path::PathBuf> {
    let cc = tool("cc")?;
    let src = dir.join("getppid.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n#include <unistd.h>\n#include <sys/syscall.h>\n\
         int main(int c, char **v) { long n = atol(v[1]);\n\
         for (long i = 0; i < n; i++) syscall(SYS_getppid); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("getppid");
    support::run(Command::new(cc).arg("-O2").arg(&src).arg("-o").arg(&exe));
    Some(exe)
}

#[test]
fn the_sample_count_is_printed_as_perf_prints_it() {
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let Some(exe) = build_getppid(dir.path()) else {
        support::require(false, "needs a C compiler (apt-get install gcc)");
        return;
    };
    // Either side of perf's 1000 boundary, and the 5669.
    for n in [999u64, 1000, 1001, 5669, 10_000, 123_456] {
        let data = dir.path().join(format!("n{n}.data"));
        support::run(
            Command::new("perf")
                .args([
                    "record",
                    "-q",
                    "-e",
                    "syscalls:sys_enter_getppid",
                    "-c",
                    "1",
                    "-o",
                ])
                .arg(&data)
                .arg("--")
                .arg(&exe)
                .arg(n.to_string()),
        );
        let perf = samples_line(&support::stdout(
            Command::new("perf")
                .args(["report", "--stdio", "-i"])
                .arg(&data),
        ));
        let ours = samples_line(&support::stdout(
            support::bpfprof().args(["report", "-i"]).arg(&data),
        ));
        assert_eq!(ours, perf, "{n} getppid calls");
    }
}

/// A 400-character function name, where the workload spends its time.
fn long_name() -> String {
    let mut s = String::from("very_long_templated_like_name");
    while s.len() < 400 {
        s.push_str("_and_more_of_it");
    }
    s
}

#[test]
fn long_names_are_cut_on_a_terminal_and_whole_elsewhere() {
    if !support::live(true) {
        return;
    }
    let (Some(cc), Some(script)) = (tool("cc"), tool("script")) else {
        support::require(
            false,
            "needs a C compiler and script(1) (apt-get install gcc bsdutils)",
        );
        return;
    };
    let dir = support::tempdir();
    let name = long_name();
    let src = dir.path().join("long.c");
    std::fs::write(
        &src,
        format!(
            "#include <time.h>\n\
             __attribute__((noinline)) long {name}(long n) {{ long s = 0;\n\
             for (long i = 0; i < n; i++) s += i * i ^ (s >> 3); return s; }}\n\
             int main(void) {{ volatile long s = 0; time_t t = time(0);\n\
             while (time(0) - t < 1) s += {name}(100000); return 0; }}\n"
        ),
    )
    .unwrap();
    let exe = dir.path().join("long");
    support::run(Command::new(cc).arg("-O1").arg(&src).arg("-o").arg(&exe));
    let data = dir.path().join("long.data");
    support::run(
        Command::new("perf")
            .args(["record", "-q", "-N", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&exe),
    );
    // perf names it whole in its table.
    let perf = support::stdout(
        Command::new("perf")
            .args(["report", "--stdio", "--sort", "dso,sym", "-i"])
            .arg(&data),
    );
    assert!(perf.contains(&name), "perf does not show the name:\n{perf}");

    // Into a pipe (a file): whole.
    let piped = support::stdout(
        support::bpfprof()
            .args(["report", "--sort", "dso,sym", "-i"])
            .arg(&data),
    );
    assert!(piped.contains(&name), "cut in a pipe:\n{piped}");
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--sort", "dso,sym", "--json", "-i"])
            .arg(&data),
    );
    assert!(json.contains(&name), "cut in JSON");

    // On a terminal 100 columns wide (a real pty from script(1)), the table
    // (`--stdio`: as with perf, a terminal otherwise gets the interface): no
    // line wider, and the name cut, marked, from its start.
    let cmd = format!(
        "stty cols 100; {} report --stdio --no-bpf-summary --sort dso,sym -i {}",
        env!("CARGO_BIN_EXE_bpfprof"),
        data.display()
    );
    let tty = support::stdout(
        Command::new(script)
            .args(["-qec", &cmd, "/dev/null"])
            .env_remove("COLUMNS"),
    );
    let tty = tty.replace('\r', "");
    let table: Vec<&str> = tty.lines().filter(|l| !l.is_empty()).collect();
    for l in &table {
        assert!(l.chars().count() <= 100, "wider than the terminal: {l:?}");
    }
    let row = table
        .iter()
        .find(|l| l.contains("very_long_templated_like_name"))
        .unwrap_or_else(|| panic!("no row of the long function:\n{tty}"));
    assert!(row.ends_with('…'), "a cut name is marked: {row:?}");
    let shown = row.split("[.] ").nth(1).unwrap().trim_end_matches('…');
    assert!(name.starts_with(shown), "{shown:?} is not the name's start");

    // COLUMNS wins over the window size, as in perf.
    let cmd = format!(
        "stty cols 100; COLUMNS=70 {} report --stdio --no-bpf-summary --sort dso,sym -i {}",
        env!("CARGO_BIN_EXE_bpfprof"),
        data.display()
    );
    let tty =
        support::stdout(Command::new(tool("script").unwrap()).args(["-qec", &cmd, "/dev/null"]));
    // (The table: the header's comment lines are perf's, uncut.)
    for l in tty
        .replace('\r', "")
        .lines()
        .filter(|l| !l.starts_with("# "))
    {
        assert!(l.chars().count() <= 70, "wider than COLUMNS: {l:?}");
    }
}

#[test]
fn bpf_show_of_an_id_that_names_no_program_says_so() {
    if !support::live(false) {
        return;
    }
    let Some(bpftool) = tool("bpftool") else {
        support::require(false, "needs bpftool (apt-get install bpftool)");
        return;
    };
    // An id bpftool also finds no program for.
    let id = (u32::MAX - 7).to_string();
    let bt = Command::new(bpftool)
        .args(["prog", "show", "id", &id])
        .output()
        .unwrap();
    assert!(!bt.status.success(), "bpftool finds program {id}");
    let (ok, err) = stderr_of(support::bpfprof().args(["bpf", "show", &id]));
    assert!(!ok);
    assert_eq!(
        err.trim(),
        format!("bpfprof: no BPF program with id {id} is loaded (see `bpfprof bpf list`)")
    );
    let (ok, err) = stderr_of(support::bpfprof().args(["bpf", "map", "show", &id]));
    assert!(!ok);
    assert!(
        err.contains(&format!("no BPF map with id {id} is loaded")),
        "{err}"
    );
    let (ok, err) = stderr_of(support::bpfprof().args(["bpf", "show", "name", "no_such_prog_x"]));
    assert!(!ok);
    assert!(
        err.contains("no BPF program named no_such_prog_x is loaded"),
        "{err}"
    );
}
