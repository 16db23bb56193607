//! `export --format svg` opened in headless Chromium: the screenshot shows
//! a drawn flame graph with BPF frames in their colour, and the SVG (as
//! written and as the browser's DOM holds it) has the BPF frames with
//! that colour and titles naming program id, tag, sub-program and line.

mod export_util;
mod support;

use export_util::chromium;

/// The BPF frames' colour, as `export::svg::BPF_COLOR` writes it.
const BPF_RGB: [u8; 3] = [110, 90, 230];
const BPF_FILL: &str = "fill=\"rgb(110,90,230)\"";

/// Each frame's `<g>` element: (its opening tag, title, rect's fill).
fn frames(svg: &str) -> Vec<(String, String, String)> {
    svg.split("<g")
        .skip(1)
        .filter_map(|g| {
            let head = &g[..g.find('>')?];
            let title = g.split_once("<title>")?.1.split_once("</title>")?.0;
            let rect = g.split_once("<rect")?.1;
            let fill = rect.split_once("fill=\"")?.1.split_once('"')?.0;
            Some((head.to_string(), title.to_string(), fill.to_string()))
        })
        .collect()
}

#[test]
fn the_flame_graph_renders_with_bpf_frames_coloured_and_titled() {
    if !support::live(false) || !chromium::has_chromium() {
        return;
    }
    let dir = support::tempdir();
    let (data, svg_path) = export_util::demo_export(&dir, "svg", "demo.svg");
    let svg = std::fs::read_to_string(&svg_path).unwrap();

    // The demo program (a main function and sub-program `work`, with BTF
    // line info) as the BPF view knows it.
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(&data),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let demo = v["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "bpfprof_demo")
        .unwrap_or_else(|| panic!("the demo program in {v}"));
    let id = demo["id"].as_u64().unwrap();
    let tag = demo["tag"].as_str().unwrap();

    let all = frames(&svg);
    let bpf: Vec<_> = all
        .iter()
        .filter(|f| f.0.contains("class=\"bpf\""))
        .collect();
    assert!(!bpf.is_empty(), "BPF frames in the SVG");
    for (_, title, fill) in &bpf {
        assert!(title.starts_with("bpf_"), "{title}");
        assert_eq!(fill, "rgb(110,90,230)", "{title}");
    }
    for (head, title, fill) in &all {
        if !head.contains("class=\"bpf\"") {
            assert_ne!(fill, "rgb(110,90,230)", "only BPF frames: {title}");
        }
    }
    let titled = |sub: &str| {
        bpf.iter()
            .map(|f| &f.1)
            .find(|t| {
                t.contains(&format!(
                    "BPF program {id} bpfprof_demo, tag {tag}, sub-program {sub}"
                )) && t.contains("bpfprof_demo.bpf.c:")
            })
            .unwrap_or_else(|| panic!("a frame of sub-program {sub}: {bpf:?}"))
            .clone()
    };
    assert!(titled("0 bpfprof_demo").contains("_bpfprof_demo ("));
    assert!(titled("1 work").contains("_work ("));

    // The browser's document: scripts ran, the BPF frames are there.
    let dom = chromium::dom(&svg_path);
    let dom_bpf = frames(&dom)
        .into_iter()
        .filter(|f| f.0.contains("class=\"bpf\""))
        .count();
    assert_eq!(dom_bpf, bpf.len(), "BPF frames in the DOM");
    assert!(dom.contains(BPF_FILL));

    // The pixels: a graph was drawn, BPF frames among it.
    // A window as tall as the graph (deep stacks make it tall), so that
    // all of it is in the picture.
    let height: usize = svg
        .split_once("height=\"")
        .and_then(|(_, r)| r.split_once('"'))
        .and_then(|(h, _)| h.parse().ok())
        .expect("the SVG's height");
    let (w, h, px) = chromium::screenshot(&svg_path, height.min(8000));
    let pixels: Vec<&[u8]> = px.chunks(4).collect();
    let bpf_px = pixels.iter().filter(|p| p[..3] == BPF_RGB).count();
    // Flame graph frames are saturated; the background is a pale
    // gradient and the page white.
    let saturated = pixels
        .iter()
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            mx - mn > 80
        })
        .count();
    // At least a whole row of frames (the root alone is 1180x15 pixels).
    assert!(saturated > 15 * 1000, "{saturated} coloured of {w}x{h}");
    assert!(bpf_px > 50, "{bpf_px} BPF-coloured pixels");
}

/// A frame as drawn: (name, x, y, width), the name cut at its first
/// " (" (BPF frames' titles add their details there).
fn drawn(svg: &str) -> Vec<(String, String, String, String)> {
    let attr = |rect: &str, a: &str| -> String {
        rect.split_once(&format!(" {a}=\""))
            .and_then(|(_, r)| r.split_once('"'))
            .map_or(String::new(), |(v, _)| v.to_string())
    };
    svg.split("<g")
        .skip(1)
        .filter_map(|g| {
            let title = g.split_once("<title>")?.1.split_once("</title>")?.0;
            let name = title.split_once(" (").map_or(title, |(n, _)| n);
            let rect = g.split_once("<rect")?.1;
            let rect = &rect[..rect.find("/>")?];
            Some((
                name.to_string(),
                attr(rect, "x"),
                attr(rect, "y"),
                attr(rect, "width"),
            ))
        })
        .collect()
}

/// The export hands inferno only the frames it draws; the graph must be
/// the one inferno draws from every stack of the folded export: each
/// frame with its name, place and width.
#[test]
fn the_flame_graph_is_the_one_inferno_draws_from_every_stack() {
    if !support::live(false) {
        return;
    }
    let dir = support::tempdir();
    let data = support::path(&dir, "busy.data");
    support::run(
        support::bpfprof()
            .args(["record", "-a", "-g", "-F", "10000", "--duration", "3", "-o"])
            .arg(&data),
    );
    let export = |format: &str| {
        support::stdout(
            support::bpfprof()
                .args(["export", "--format", format, "-i"])
                .arg(&data),
        )
    };
    let folded = export("folded");
    let ours = export("svg");
    let counts: Vec<u64> = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse().ok())
        .collect();
    let total: u64 = counts.iter().sum();
    // inferno omits frames under 0.01% of the samples: some stacks must
    // be that narrow, or nothing was left out.
    let narrow = counts.iter().filter(|&&n| n * 10_000 < total).count();
    assert!(narrow > 0, "no stack under 0.01% of {total} samples");

    let mut opts = inferno::flamegraph::Options::default();
    opts.count_name = "samples".into();
    let mut theirs = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut theirs).unwrap();
    let theirs = drawn(&String::from_utf8(theirs).unwrap());
    let ours = drawn(&ours);
    assert!(theirs.len() > 100, "{} frames", theirs.len());
    assert_eq!(ours.len(), theirs.len(), "frames drawn");
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
    }
    eprintln!(
        "{} frames drawn from {} stacks, {narrow} under 0.01%",
        ours.len(),
        counts.len()
    );
}
