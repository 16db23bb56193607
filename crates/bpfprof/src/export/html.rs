//! One self-contained HTML report: a summary, the BPF programs with their
//! cost parts, the source lines of the hottest programs with their
//! shares, and the flame graph. It opens from disk and asks the network
//! for nothing: styles and scripts are inline, and the graph (inferno's
//! SVG, with its own search and zoom) is embedded as a data URL so that
//! its script runs as it does in a file of its own.

use std::collections::BTreeMap;
use std::io::Write;

use super::{for_each_stack, is_bpf, BpfFrames, ExportError};
use crate::analyze::bpf_view::{summarize, BpfSummary};
use crate::analyze::profile::Profile;
use crate::analyze::table::Filters;

/// How many programs get their source lines shown.
const HOT_PROGRAMS: usize = 5;

const STYLE: &str = "body{font-family:sans-serif;margin:1em 2em}\
table{border-collapse:collapse;margin:.5em 0}\
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
td.l,th.l{text-align:left}tr.hidden{display:none}\
pre{background:#f6f6f6;padding:.5em}\
iframe{width:100%;border:1px solid #ccc}";

/// Hides the rows of tables marked `searchable` that do not contain the
/// search box's text; `#q=TEXT` in the address searches on load, so that
/// a search can be linked to.
const SCRIPT: &str = "function filterRows(q){q=q.toLowerCase();\
document.querySelectorAll('table.searchable tbody tr').forEach(function(r){\
r.classList.toggle('hidden',q!==''&&r.textContent.toLowerCase().indexOf(q)<0);});}\
window.addEventListener('DOMContentLoaded',function(){var h=location.hash;\
if(h.indexOf('#q=')===0){var q=decodeURIComponent(h.slice(3));\
document.getElementById('search').value=q;filterRows(q);}});";

/// Write the report.
pub fn write(
    p: &Profile,
    filters: &Filters,
    title: &str,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let mut svg = Vec::new();
    super::svg::write(p, filters, title, &mut svg)?;
    let summary = summarize(p, filters);
    let t = escape(title);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{t}</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>\n\
         <h1>{t}</h1>\n"
    )?;
    write_summary(p, summary.as_ref(), out)?;
    writeln!(
        out,
        "<p><label>Search: <input id=\"search\" type=\"search\" \
         oninput=\"filterRows(this.value)\"></label> (tables below; the flame graph has \
         its own search, top right)</p>"
    )?;
    if let Some(s) = &summary {
        write_programs(s, out)?;
        write_lines(p, filters, s, out)?;
    }
    // As tall as the graph, which grows upwards: in a shorter frame the
    // bottom rows (the outermost callers, and often BPF code) would be
    // scrolled out of sight.
    let height = svg_height(&svg).map_or(600, |h| h + 20);
    writeln!(
        out,
        "<h2>Flame graph</h2>\n<iframe title=\"flame graph\" style=\"height:{height}px\" \
         src=\"data:image/svg+xml;base64,{}\"></iframe>",
        base64(&svg)
    )?;
    writeln!(out, "</body></html>")?;
    Ok(())
}

fn write_summary(p: &Profile, s: Option<&BpfSummary>, out: &mut dyn Write) -> std::io::Result<()> {
    let secs = p.last_time.saturating_sub(p.first_time) as f64 / 1e9;
    writeln!(
        out,
        "<table id=\"summary\"><tbody>\
         <tr><th class=\"l\">Event</th><td class=\"l\">{}</td></tr>\
         <tr><th class=\"l\">Samples</th><td class=\"l\">{}</td></tr>\
         <tr><th class=\"l\">Duration</th><td class=\"l\">{secs:.3} s</td></tr>\
         <tr><th class=\"l\">Lost</th><td class=\"l\">{} records, {} samples</td></tr>",
        escape(&p.event),
        p.total.samples,
        p.lost,
        p.lost_samples
    )?;
    if let Some(s) = s {
        writeln!(
            out,
            "<tr><th class=\"l\">In BPF programs' own code</th>\
             <td class=\"l\">{} samples ({:.2}%), {} programs</td></tr>",
            s.samples,
            s.percent,
            s.programs.len()
        )?;
    }
    writeln!(out, "</tbody></table>")
}

fn part(n: Option<u64>, pct: Option<f64>) -> String {
    match (n, pct) {
        (Some(n), Some(p)) => format!("{n} ({p:.2}%)"),
        _ => "-".into(),
    }
}

fn write_programs(s: &BpfSummary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "<h2>BPF programs</h2>\n<table id=\"programs\" class=\"searchable\"><thead><tr>\
         <th>id</th><th class=\"l\">name</th><th class=\"l\">tag</th><th class=\"l\">type</th>\
         <th>self</th><th>called</th><th>hook</th><th>total</th>\
         <th class=\"l\">sub-programs</th></tr></thead><tbody>"
    )?;
    for g in &s.programs {
        let subs: Vec<String> = g
            .subprogs
            .iter()
            .map(|u| format!("{} {}", escape(&u.name), u.samples))
            .collect();
        writeln!(
            out,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            g.head.id,
            escape(&g.head.name),
            escape(&g.head.tag),
            escape(&g.head.prog_type),
            part(Some(g.head.samples.own), Some(g.head.percent.own)),
            part(g.head.samples.called, g.head.percent.called),
            part(g.head.samples.hook, g.head.percent.hook),
            part(g.head.samples.total, g.head.percent.total),
            subs.join(", ")
        )?;
    }
    writeln!(
        out,
        "</tbody></table>\n<p>self: in the program's own code; called: in helpers, map code \
         and kfuncs it called; hook: in the kernel's code that runs it.</p>"
    )
}

/// Per source line of the hottest programs: the samples whose leaf is
/// the program's code at that line (BTF line info; none without call
/// chains, which locate samples to the instruction here).
fn write_lines(
    p: &Profile,
    filters: &Filters,
    s: &BpfSummary,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut bpf = BpfFrames::default();
    // (program, file, line) → (text, samples)
    let mut lines: BTreeMap<(u32, String, u32), (String, u64)> = BTreeMap::new();
    for_each_stack(p, filters, |_, frames, c| {
        let Some(leaf) = frames.last() else { return };
        if leaf.node == 0 || !is_bpf(p, leaf.frame) {
            return;
        }
        let Some(id) = bpf.frame(p, leaf.frame).map(|b| b.prog_id) else {
            return;
        };
        if let Some(l) = bpf.line_at(p, leaf.frame, leaf.node) {
            let e = lines
                .entry((id, l.file.clone(), l.line))
                .or_insert_with(|| (l.text.clone(), 0));
            e.1 += c.samples;
        }
    });
    let hot: Vec<_> = s
        .programs
        .iter()
        .filter(|g| g.head.samples.own > 0)
        .take(HOT_PROGRAMS)
        .collect();
    if hot.is_empty() || lines.is_empty() {
        return Ok(());
    }
    writeln!(out, "<h2>Source lines of the hottest programs</h2>")?;
    for g in hot {
        let rows: Vec<_> = lines.iter().filter(|(k, _)| k.0 == g.head.id).collect();
        if rows.is_empty() {
            continue;
        }
        writeln!(
            out,
            "<h3>{} {} (self {} samples)</h3>\n<table class=\"searchable source\"><thead><tr>\
             <th>samples</th><th>share of self</th><th class=\"l\">line</th>\
             <th class=\"l\">source</th></tr></thead><tbody>",
            g.head.id,
            escape(&g.head.name),
            g.head.samples.own
        )?;
        for ((_, file, line), (text, n)) in rows {
            let share = 100.0 * *n as f64 / g.head.samples.own.max(1) as f64;
            writeln!(
                out,
                "<tr><td>{n}</td><td>{share:.2}%</td><td class=\"l\">{}:{line}</td>\
                 <td class=\"l\"><code>{}</code></td></tr>",
                escape(file),
                escape(text.trim())
            )?;
        }
        writeln!(out, "</tbody></table>")?;
    }
    Ok(())
}

/// The `height` of the SVG's root element (inferno's first `height=`).
fn svg_height(svg: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(&svg[..svg.len().min(4096)]).ok()?;
    let start = text.find("<svg")?;
    let h = text[start..].split_once("height=\"")?.1.split_once('"')?.0;
    h.parse().ok()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Standard base64, for the data URL (a dependency for 20 lines is not
/// worth it).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_of_each_tail_length() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
