//! Terminal UI pieces shared by `bpfprof top` (live) and `bpfprof report`
//! on a terminal (a recording): the terminal guard, column fitting, the
//! BPF programs pane, the `/` filter, and report's own interface.

pub mod filter;
pub mod report;
pub mod term;
pub mod widgets;
