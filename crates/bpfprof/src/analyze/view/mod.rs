//! The views, the top layer: each reads a [`crate::analyze::Profile`] and
//! writes text, JSON or rows for another crate to draw; none changes it.
//!
//! - [`table`]: rows grouped by `--sort` keys, filtered and ordered as
//!   perf orders them (`row_order`, `groups`);
//! - [`callgraph`]: call graphs under rows, callee or caller order;
//! - [`render`]: the report as perf's text or as JSON;
//! - [`bpf_view`] and `bpf_render`: every BPF program with its cost parts;
//! - [`annotate`], [`annotate_calls`], [`annotate_render`]: samples per
//!   instruction and source line.

pub mod annotate;
pub mod annotate_calls;
pub mod annotate_render;
mod bpf_render;
pub mod bpf_view;
pub mod callgraph;
pub mod fields;
mod groups;
pub mod header;
pub mod render;
mod row_order;
pub mod srcline;
pub mod table;
