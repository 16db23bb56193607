//! An interactive flame graph (inferno's SVG, with its search and zoom),
//! in which BPF functions have a colour of their own and a title that says
//! which program, tag, sub-program and source line they are.

use std::collections::BTreeSet;
use std::io::Write;

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, FuncFrameAttrsMap, Options};

use super::{folded, frame_name, is_bpf, BpfFrames, ExportError};
use crate::analyze::profile::Profile;
use crate::analyze::table::Filters;

/// The colour of BPF frames: a blue-violet no frame of the default "hot"
/// palette (reds to yellows) comes near.
pub const BPF_COLOR: Color = Color {
    r: 110,
    g: 90,
    b: 230,
};

/// The CSS class of BPF frames' `<g>` elements, for scripts and tests.
pub const BPF_CLASS: &str = "bpf";

/// Write the flame graph of the profile's stacks.
pub fn write(
    p: &Profile,
    filters: &Filters,
    title: &str,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let stacks = folded::lines(p, filters);
    let lines: Vec<String> = stacks.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let mut palette = PaletteMap::default();
    let attrs = bpf_attrs(p, &mut palette)?;
    let mut opts = Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    opts.palette_map = Some(&mut palette);
    opts.func_frameattrs = attrs;
    if stacks.is_empty() {
        // inferno refuses to draw nothing; an empty graph says more.
        writeln!(
            out,
            r#"<?xml version="1.0" standalone="no"?><svg xmlns="http://www.w3.org/2000/svg" width="1200" height="60"><text x="10" y="30">{}: no samples</text></svg>"#,
            escape(title)
        )?;
        return Ok(());
    }
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)?;
    Ok(())
}

/// Colours and titles of the BPF functions in the profile, by name (the
/// key inferno looks frames up by).
fn bpf_attrs(p: &Profile, palette: &mut PaletteMap) -> std::io::Result<FuncFrameAttrsMap> {
    let mut bpf = BpfFrames::default();
    let mut seen = BTreeSet::new();
    let mut spec = String::new();
    for n in &p.stacks.nodes[1.min(p.stacks.nodes.len())..] {
        note(p, &mut bpf, n.1, &mut seen, &mut spec, palette);
    }
    for (k, _) in &p.rows {
        note(p, &mut bpf, k.frame, &mut seen, &mut spec, palette);
    }
    // inferno reads per-function attributes only in its nameattr file
    // format: one line per function, tab-separated `name=value` pairs.
    FuncFrameAttrsMap::from_reader(spec.as_bytes())
}

fn note(
    p: &Profile,
    bpf: &mut BpfFrames,
    f: crate::symbolize::Frame,
    seen: &mut BTreeSet<String>,
    spec: &mut String,
    palette: &mut PaletteMap,
) {
    if !is_bpf(p, f) {
        return;
    }
    let name = frame_name(p, f).into_owned();
    if !seen.insert(name.clone()) {
        return;
    }
    palette.insert(&name, BPF_COLOR);
    let title = match bpf.frame(p, f) {
        Some(b) => b.describe(&name),
        None => format!("{name} (BPF code, no program recorded)"),
    };
    let clean = |s: &str| s.replace(['\t', '\n', '"'], " ");
    spec.push_str(&format!(
        "{}\ttitle={}\tclass={BPF_CLASS}\n",
        clean(&name),
        clean(&title)
    ));
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
