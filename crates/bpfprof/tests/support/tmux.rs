//! A terminal UI driven in a real terminal: a detached tmux session of
//! fixed size running a shell, read back with capture-pane.

use std::process::Command;
use std::time::{Duration, Instant};

const PROMPT: &str = "ui-test$ ";

/// A tmux server of our own (its own socket), killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A session of `cols` x `rows` running an interactive shell.
    pub fn start(cols: u16, rows: u16) -> Tmux {
        let socket = format!("bpfprof-ui-{}-{cols}", std::process::id());
        let t = Tmux { socket };
        let ok = t
            .cmd()
            .args(["new-session", "-d", "-s", "ui", "-x"])
            .arg(cols.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .arg(format!("env PS1='{PROMPT}' sh"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session failed");
        // capture-pane drops trailing blanks: the prompt's space too.
        t.wait_for("the shell's prompt", |s| s.contains(PROMPT.trim_end()));
        t
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    pub fn out(&self, args: &[&str]) -> String {
        let o = self.cmd().args(args).output().expect("tmux runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.out(&["capture-pane", "-p", "-t", "ui"])
    }

    pub fn keys(&self, keys: &[&str]) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", "ui"])
            .args(keys)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux send-keys {keys:?}");
    }

    /// Poll the screen until `ok` holds; the screen then.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "waited for {what}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn resize(&self, cols: u16, rows: u16) {
        self.out(&[
            "resize-window",
            "-t",
            "ui",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }

    pub fn alternate_screen(&self) -> bool {
        self.out(&["display-message", "-p", "-t", "ui", "#{alternate_on}"])
            .trim()
            == "1"
    }

    pub fn pane_pid(&self) -> u32 {
        self.out(&["display-message", "-p", "-t", "ui", "#{pane_pid}"])
            .trim()
            .parse()
            .expect("pane pid")
    }

    /// Back at the prompt, with the alternate screen gone.
    pub fn wait_restored(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.alternate_screen() || !self.screen().trim_end().ends_with(PROMPT.trim_end()) {
            if Instant::now() >= deadline {
                let stuck: Vec<String> = children_of(self.pane_pid())
                    .into_iter()
                    .flat_map(threads)
                    .collect();
                panic!(
                    "terminal not restored; threads under the shell: {stuck:#?}\nscreen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// Each thread of `pid` with where it waits, for a failure's message.
pub fn threads(pid: u32) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|t| {
            let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
            format!(
                "{pid}/{}: {} in {}",
                t.file_name().to_string_lossy(),
                read("comm").trim(),
                read("wchan")
            )
        })
        .collect()
}

/// Processes whose parent is `pid`, from /proc.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the command, which is in parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else {
            continue;
        };
        let ppid: Option<u32> = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(pid) {
            v.push(child);
        }
    }
    v
}
