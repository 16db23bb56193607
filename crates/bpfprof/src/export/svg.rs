//! An interactive flame graph (inferno's SVG, with its search and zoom),
//! in which BPF functions have a colour of their own and a title that says
//! which program, tag, sub-program and source line they are.

use std::collections::HashMap;
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
    let tree = folded::Tree::build(p, filters);
    let mut palette = PaletteMap::default();
    let (attrs, details) = bpf_attrs(p, &mut palette)?;
    let mut opts = Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    opts.palette_map = Some(&mut palette);
    opts.func_frameattrs = attrs;
    // inferno omits frames narrower than `min_width` percent of the graph
    // (its own expression, to the last bit): their subtrees can come as
    // two lines each (`Tree::lines`), and the graph is the same.
    let min = opts.min_width / (100.0 / tree.total() as f64);
    let lines: Vec<String> = tree
        .lines(min)
        .into_iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    // The lines come sorted: inferno need not sort again.
    opts.no_sort = true;
    if lines.is_empty() {
        // inferno refuses to draw nothing; an empty graph says more.
        writeln!(
            out,
            r#"<?xml version="1.0" standalone="no"?><svg xmlns="http://www.w3.org/2000/svg" width="1200" height="60"><text x="10" y="30">{}: no samples</text></svg>"#,
            escape(title)
        )?;
        return Ok(());
    }
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)?;
    out.write_all(with_details(&String::from_utf8_lossy(&svg), &details).as_bytes())?;
    Ok(())
}

/// Put each BPF frame's details into its title, in front of the counts
/// inferno wrote there: `name (details; N samples, X%)`. (A title set
/// through inferno's attributes would replace the counts: it is one per
/// function, not per frame.)
fn with_details(svg: &str, details: &HashMap<String, String>) -> String {
    let open = format!("<g class=\"{BPF_CLASS}\"><title>");
    let mut out = String::with_capacity(svg.len() + details.len() * 128);
    let mut rest = svg;
    while let Some(i) = rest.find(&open) {
        let start = i + open.len();
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let title = &rest[..rest.find("</title>").unwrap_or(0)];
        if let Some(paren) = title.rfind(" (") {
            if let Some(d) = details.get(&title[..paren]) {
                out.push_str(&title[..paren + 2]);
                out.push_str(&escape(d));
                out.push_str("; ");
                rest = &rest[paren + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Colours and classes of the BPF functions in the profile, by name (the
/// key inferno looks frames up by), and their details as XML-ready names
/// (inferno escapes the names it writes).
type Details = HashMap<String, String>;

fn bpf_attrs(
    p: &Profile,
    palette: &mut PaletteMap,
) -> std::io::Result<(FuncFrameAttrsMap, Details)> {
    let mut bpf = BpfFrames::default();
    let mut seen: Details = HashMap::new();
    let mut spec = String::new();
    for n in &p.stacks.nodes[1.min(p.stacks.nodes.len())..] {
        note(p, &mut bpf, n.1, &mut seen, &mut spec, palette);
    }
    for (k, _) in &p.rows {
        note(p, &mut bpf, k.frame, &mut seen, &mut spec, palette);
    }
    // inferno reads per-function attributes only in its nameattr file
    // format: one line per function, tab-separated `name=value` pairs.
    let attrs = FuncFrameAttrsMap::from_reader(spec.as_bytes())?;
    Ok((attrs, seen))
}

fn note(
    p: &Profile,
    bpf: &mut BpfFrames,
    f: crate::symbolize::Frame,
    seen: &mut Details,
    spec: &mut String,
    palette: &mut PaletteMap,
) {
    if !is_bpf(p, f) {
        return;
    }
    let name = frame_name(p, f).into_owned();
    if seen.contains_key(&escape(&name)) {
        return;
    }
    palette.insert(&name, BPF_COLOR);
    let detail = match bpf.frame(p, f) {
        Some(b) => b.detail(),
        None => "BPF code, no program recorded".into(),
    };
    spec.push_str(&format!(
        "{}\tclass={BPF_CLASS}\n",
        name.replace(['\t', '\n'], " ")
    ));
    seen.insert(escape(&name), detail);
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
