//! A progress line on stderr for long reads, only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    total: u64,
    enabled: bool,
    last: Instant,
    shown: bool,
    calls: u32,
}

impl Progress {
    /// Enabled only when asked, stderr is a TTY, and there is enough to read
    /// that a bar helps.
    pub fn new(wanted: bool, total: u64) -> Progress {
        Progress {
            total,
            enabled: wanted && total > 32 << 20 && std::io::stderr().is_terminal(),
            last: Instant::now(),
            shown: false,
            calls: 0,
        }
    }

    pub fn update(&mut self, pos: u64) {
        // Reading the clock per record would cost more than the record.
        self.calls = self.calls.wrapping_add(1);
        if self.calls.is_multiple_of(4096) {
            self.show(pos);
        }
    }

    /// Like [`Progress::update`], for callers that report seldom.
    pub fn show(&mut self, pos: u64) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let pct = (pos.min(self.total) * 100 / self.total.max(1)) as usize;
        let bar = "=".repeat(pct / 4) + &" ".repeat(25 - pct / 4);
        let _ = write!(
            std::io::stderr(),
            "\r[{bar}] {pct:3}% of {} MB",
            self.total >> 20
        );
        self.shown = true;
    }

    pub fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(50));
        }
    }
}
