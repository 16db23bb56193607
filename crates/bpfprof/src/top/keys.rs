//! What the keys do to the UI's state, without a terminal: sorting,
//! filtering, panes, the program view. The live loop reads the requests
//! (quit, toggle stats) off the state.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::window::{ProgLine, SymLine};
use crate::tui::filter::{Edit, Filter};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Bpf,
    Symbols,
}

/// Sort columns of the BPF pane, in the order `>` steps through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpfSort {
    Total,
    Own,
    Called,
    Hook,
    RunsPerSec,
    AvgNs,
    Loaded,
    Id,
    Name,
}

pub const BPF_SORTS: [BpfSort; 9] = [
    BpfSort::Total,
    BpfSort::Own,
    BpfSort::Called,
    BpfSort::Hook,
    BpfSort::RunsPerSec,
    BpfSort::AvgNs,
    BpfSort::Loaded,
    BpfSort::Id,
    BpfSort::Name,
];

/// Sort columns of the symbols pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymSort {
    Overhead,
    Samples,
    Symbol,
    Dso,
}

pub const SYM_SORTS: [SymSort; 4] = [
    SymSort::Overhead,
    SymSort::Samples,
    SymSort::Symbol,
    SymSort::Dso,
];

#[derive(Debug, Clone)]
pub struct UiState {
    pub pane: Pane,
    pub bpf_sort: usize,
    pub sym_sort: usize,
    /// A substring of a program's name or owner's command, of a symbol's
    /// name or its thread's command.
    pub filter: Filter,
    /// Selected line in each pane.
    pub selected: [usize; 2],
    /// The program opened with Enter.
    pub detail: Option<u32>,
    pub quit: bool,
    pub toggle_stats: bool,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            pane: Pane::Bpf,
            bpf_sort: 0,
            sym_sort: 0,
            filter: Filter::default(),
            selected: [0, 0],
            detail: None,
            quit: false,
            toggle_stats: false,
        }
    }
}

impl UiState {
    pub fn bpf_sort(&self) -> BpfSort {
        BPF_SORTS[self.bpf_sort % BPF_SORTS.len()]
    }

    pub fn sym_sort(&self) -> SymSort {
        SYM_SORTS[self.sym_sort % SYM_SORTS.len()]
    }

    fn pane_index(&self) -> usize {
        (self.pane == Pane::Symbols) as usize
    }

    /// Apply one key. `progs` is the BPF pane as shown (sorted, filtered),
    /// for Enter to know which program is selected.
    pub fn key(&mut self, k: KeyEvent, progs: &[ProgLine]) {
        match self.filter.key(k) {
            Edit::Pass => {}
            Edit::Taken => return,
            Edit::Applied => {
                self.selected = [0, 0];
                return;
            }
            Edit::Quit => {
                self.quit = true;
                return;
            }
        }
        let i = self.pane_index();
        match k.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            KeyCode::Esc if self.detail.is_some() => self.detail = None,
            KeyCode::Esc => self.filter.text.clear(),
            KeyCode::Tab | KeyCode::BackTab => {
                self.pane = match self.pane {
                    Pane::Bpf => Pane::Symbols,
                    Pane::Symbols => Pane::Bpf,
                }
            }
            KeyCode::Char('>') | KeyCode::Char('.') => self.step_sort(1),
            KeyCode::Char('<') | KeyCode::Char(',') => self.step_sort(-1),
            KeyCode::Char('s') => self.toggle_stats = true,
            KeyCode::Down | KeyCode::Char('j') => self.selected[i] += 1,
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected[i] = self.selected[i].saturating_sub(1)
            }
            KeyCode::PageDown => self.selected[i] += 10,
            KeyCode::PageUp => self.selected[i] = self.selected[i].saturating_sub(10),
            KeyCode::Home => self.selected[i] = 0,
            KeyCode::Enter if self.pane == Pane::Bpf => {
                let n = progs.len();
                if n > 0 {
                    self.detail = Some(progs[self.selected[0].min(n - 1)].head.id);
                }
            }
            _ => {}
        }
    }

    fn step_sort(&mut self, by: isize) {
        let (slot, n) = match self.pane {
            Pane::Bpf => (&mut self.bpf_sort, BPF_SORTS.len()),
            Pane::Symbols => (&mut self.sym_sort, SYM_SORTS.len()),
        };
        *slot = (*slot as isize + by).rem_euclid(n as isize) as usize;
    }

    /// Whether a program passes the filter.
    pub fn keeps_prog(&self, p: &ProgLine) -> bool {
        self.filter.keeps(
            std::iter::once(p.head.name.as_str()).chain(p.owners.iter().map(|o| o.comm.as_str())),
        )
    }

    /// Whether a symbol row of thread command `comm` passes the filter.
    pub fn keeps_sym(&self, sym: &str, comm: &str) -> bool {
        self.filter.keeps([sym, comm].into_iter())
    }
}

/// The BPF pane's lines in the chosen order.
pub fn sort_progs(v: &mut [ProgLine], by: BpfSort) {
    let total = |p: &ProgLine| p.head.samples.total.unwrap_or(p.head.samples.own);
    let f = |o: Option<f64>| o.unwrap_or(-1.0);
    v.sort_by(|a, b| {
        let o = match by {
            BpfSort::Total => total(b).cmp(&total(a)),
            BpfSort::Own => b.head.samples.own.cmp(&a.head.samples.own),
            BpfSort::Called => b.head.samples.called.cmp(&a.head.samples.called),
            BpfSort::Hook => b.head.samples.hook.cmp(&a.head.samples.hook),
            BpfSort::RunsPerSec => f(b.runs_per_s).total_cmp(&f(a.runs_per_s)),
            BpfSort::AvgNs => f(b.avg_ns).total_cmp(&f(a.avg_ns)),
            // Newest first.
            BpfSort::Loaded => f(a.loaded_s)
                .total_cmp(&f(b.loaded_s))
                .then(b.head.id.cmp(&a.head.id)),
            BpfSort::Id => a.head.id.cmp(&b.head.id),
            BpfSort::Name => a.head.name.cmp(&b.head.name),
        };
        o.then(a.head.id.cmp(&b.head.id))
    });
}

pub fn sort_syms(v: &mut [SymLine], by: SymSort) {
    match by {
        SymSort::Overhead => {} // the window's order
        SymSort::Samples => v.sort_by_key(|r| std::cmp::Reverse(r.samples)),
        SymSort::Symbol => v.sort_by(|a, b| a.symbol.cmp(&b.symbol)),
        SymSort::Dso => v.sort_by(|a, b| a.dso.cmp(&b.dso).then(a.symbol.cmp(&b.symbol))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::bpf_view::Parts;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn prog(id: u32, name: &str, own: u64) -> ProgLine {
        let samples = Parts {
            own,
            ..Default::default()
        };
        let mut l = super::super::window::example(id, name, samples);
        l.loaded_s = Some(id as f64);
        l
    }

    #[test]
    fn filter_is_typed_then_applied() {
        let mut s = UiState::default();
        for c in ['/', 'g', 'e', 't', 'x'] {
            s.key(key(KeyCode::Char(c)), &[]);
        }
        assert!(s.filter.text.is_empty(), "not applied before Enter");
        s.key(key(KeyCode::Backspace), &[]);
        s.key(key(KeyCode::Enter), &[]);
        assert_eq!(s.filter.text, "get");
        assert!(s.keeps_prog(&prog(1, "sys_enter_getppid", 0)));
        assert!(!s.keeps_prog(&prog(2, "xdp_pass", 0)));
        assert!(s.keeps_sym("x", "getter"));
        // `q` while typing is text, not quit.
        s.key(key(KeyCode::Char('/')), &[]);
        s.key(key(KeyCode::Char('q')), &[]);
        assert!(!s.quit);
        s.key(key(KeyCode::Esc), &[]);
        assert_eq!(s.filter.text, "get");
        s.key(key(KeyCode::Esc), &[]);
        assert!(s.filter.text.is_empty());
        s.key(key(KeyCode::Char('q')), &[]);
        assert!(s.quit);
    }

    #[test]
    fn sort_columns_step_per_pane_and_wrap() {
        let mut s = UiState::default();
        s.key(key(KeyCode::Char('<')), &[]);
        assert_eq!(s.bpf_sort(), BpfSort::Name);
        s.key(key(KeyCode::Char('>')), &[]);
        s.key(key(KeyCode::Char('>')), &[]);
        assert_eq!(s.bpf_sort(), BpfSort::Own);
        s.key(key(KeyCode::Tab), &[]);
        s.key(key(KeyCode::Char('>')), &[]);
        assert_eq!(s.sym_sort(), SymSort::Samples);
        assert_eq!(s.bpf_sort(), BpfSort::Own);
    }

    #[test]
    fn enter_opens_the_selected_program() {
        let mut v = vec![prog(3, "c", 1), prog(1, "a", 5), prog(2, "b", 3)];
        sort_progs(&mut v, BpfSort::Total);
        assert_eq!(v.iter().map(|p| p.head.id).collect::<Vec<_>>(), [1, 2, 3]);
        let mut s = UiState::default();
        s.key(key(KeyCode::Down), &v);
        s.key(key(KeyCode::Enter), &v);
        assert_eq!(s.detail, Some(2));
        s.key(key(KeyCode::Esc), &v);
        assert_eq!(s.detail, None);
        sort_progs(&mut v, BpfSort::Name);
        assert_eq!(v[0].head.name, "a");
        sort_progs(&mut v, BpfSort::Loaded);
        assert_eq!(v[0].head.id, 1, "loaded most recently first");
    }
}
