//! Analysis of recordings: aggregation, report tables, the BPF view, call
//! graphs and annotation.

pub mod annotate;
pub mod annotate_calls;
pub mod annotate_render;
pub mod bpf_cost;
pub mod bpf_hooks;
mod bpf_render;
pub mod bpf_view;
pub mod callgraph;
pub mod engine;
mod groups;
pub mod profile;
pub mod render;
mod row_order;
pub mod table;

pub use engine::{build, Engine};
pub use profile::{Profile, ProfileOptions};
