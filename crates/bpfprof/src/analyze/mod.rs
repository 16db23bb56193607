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
mod early_frames;
mod events;
mod flat_pass;
mod groups;
mod kernel_text;
mod map_timeline;
mod memo;
mod node_table;
pub mod profile;
mod raw_stacks;
pub mod render;
mod row_order;
pub mod table;

pub use profile::{Profile, ProfileOptions};
