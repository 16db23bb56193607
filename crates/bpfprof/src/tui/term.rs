//! The terminal while the UI runs: raw mode and the alternate screen,
//! given back on every way out — a normal return or error (the guard's
//! drop), a panic (the hook, before the message prints), SIGINT/SIGTERM
//! (the live loop sees the flag and returns).

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

static ACTIVE: AtomicBool = AtomicBool::new(false);

fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
    }
}

pub struct Term {
    pub t: Terminal<CrosstermBackend<Stdout>>,
}

impl Term {
    pub fn enter() -> io::Result<Term> {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            hook(info);
        }));
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let t = execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)
            .and_then(|_| Terminal::new(CrosstermBackend::new(io::stdout())));
        match t {
            Ok(t) => Ok(Term { t }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        restore();
    }
}
