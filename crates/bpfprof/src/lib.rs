//! bpfprof: a Linux profiler in which BPF programs are first-class code.
//!
//! - [`capture`]: recording (perf_event_open, rings, side band, synthesis);
//! - [`symbolize`]: addresses to (shared object, symbol) as of each sample;
//! - [`analyze`]: report tables, the BPF view, call graphs, annotation.
//!
//! The command-line interface in `main.rs` is a thin layer over these.

pub mod analyze;
pub mod capture;
pub mod export;
mod huge_vec;
pub mod parallel;
pub mod progress;
pub mod symbolize;
pub mod top;
pub mod tui;
pub mod utc;
