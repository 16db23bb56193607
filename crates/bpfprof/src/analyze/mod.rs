//! Analysis of recordings, in three layers that depend downwards only:
//!
//! - [`model`]: the profile model ([`Profile`]) and the BPF cost derived
//!   from it;
//! - [`engine`]: the attribution rules ([`Engine`]), fed by a file or by
//!   live records, that build the model;
//! - [`view`]: the report table, call graphs, the BPF view and annotate,
//!   which read the model.
//!
//! The modules of the model and the views are also named here, so that a
//! reader writes `analyze::profile` or `analyze::table` without the layer.

pub mod engine;
pub mod model;
pub mod view;

pub use engine::{build, Engine};
pub use model::{bpf_cost, bpf_hooks, profile};
pub use profile::{Profile, ProfileOptions};
pub use view::{
    annotate, annotate_calls, annotate_render, bpf_view, callgraph, fields, header, render, table,
};
