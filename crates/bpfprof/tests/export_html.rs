//! `export --format html` opened in headless Chromium with the network
//! refused: the file names nothing outside itself, the DOM has the summary,
//! the programs table with the demo program's cost parts, its source
//! lines and the flame graph; a `#q=` search hides the rows it does not
//! match; the screenshot shows the embedded flame graph's BPF frames.
//! And in headless Firefox ESR: the screenshot shows the flame graph, and
//! the page asked for nothing over the network.

mod export_util;
mod support;

use export_util::{chromium, firefox};

#[test]
fn the_html_report_is_self_contained_searchable_and_renders() {
    if !support::live(false) || !chromium::has_chromium() {
        return;
    }
    let dir = support::tempdir();
    let (data, html_path) = export_util::demo_export(&dir, "html", "demo.html");
    let html = std::fs::read_to_string(&html_path).unwrap();

    // Nothing to fetch: every reference is inline (a data URL) or local.
    for attr in ["src=\"", "href=\"", "url("] {
        for (i, _) in html.match_indices(attr) {
            let target = &html[i + attr.len()..];
            assert!(
                target.starts_with("data:") || target.starts_with('#'),
                "{attr}{}",
                &target[..target.len().min(60)]
            );
        }
    }
    assert!(!html.contains("<link"), "no linked resources");

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
        .expect("the demo program")
        .clone();
    let id = demo["id"].as_u64().unwrap();
    let own = demo["samples"]["self"].as_u64().unwrap();
    let hook = demo["samples"]["hook"].as_u64().unwrap();

    let dom = chromium::dom(&html_path);
    assert!(dom.contains("id=\"summary\""));
    let row = dom
        .split("<tr")
        .find(|r| r.contains(&format!("<td>{id}</td>")) && r.contains("bpfprof_demo"))
        .expect("the demo program's row");
    assert!(row.contains(&format!("<td>{own} (")), "self: {row}");
    assert!(row.contains(&format!("<td>{hook} (")), "hook: {row}");
    assert!(dom.contains("bpfprof_demo.bpf.c:"), "source lines");
    assert!(dom.contains("<iframe"), "the flame graph");

    // A search from the address: rows without the text are hidden.
    let url = format!("{}#q=meta_getppid", html_path.display());
    let searched = chromium::dom(std::path::Path::new(&url));
    let demo_row = searched
        .split("<tr")
        .find(|r| r.contains(&format!("<td>{id}</td>")))
        .expect("the demo row is still in the DOM");
    assert!(demo_row.contains("class=\"hidden\""), "{demo_row}");

    // The picture: the embedded flame graph drew its BPF frames.
    // The page: tables above, then the graph's frame at its own height.
    let frame = graph_height(&html);
    let (_, _, px) = chromium::screenshot(&html_path, (frame + 2000).min(10000));
    let bpf_px = px.chunks(4).filter(|p| p[..3] == [110, 90, 230]).count();
    assert!(bpf_px > 50, "{bpf_px} BPF-coloured pixels");
}

/// The height of the flame graph's frame in the report, in pixels.
fn graph_height(html: &str) -> usize {
    html.split_once("<iframe title=\"flame graph\" style=\"height:")
        .and_then(|(_, r)| r.split_once("px"))
        .and_then(|(h, _)| h.parse().ok())
        .expect("the flame graph's frame height")
}

#[test]
fn the_html_report_renders_in_firefox_without_the_network() {
    if !support::live(false) || !firefox::has_firefox() {
        return;
    }
    let dir = support::tempdir();
    let (_, html_path) = export_util::demo_export(&dir, "html", "demo.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    let frame = graph_height(&html);
    let shot = firefox::screenshot(&html_path, (frame + 2000).min(10000));
    assert!(
        shot.page_requests.is_empty(),
        "the page made requests: {:?}",
        shot.page_requests
    );
    let (w, h, px) = shot.pixels;
    let pixels: Vec<&[u8]> = px.chunks(4).collect();
    let bpf_px = pixels.iter().filter(|p| p[..3] == [110, 90, 230]).count();
    // Flame graph frames are saturated; the tables, the page and the
    // graph's background are not.
    let saturated = pixels
        .iter()
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            mx - mn > 80
        })
        .count();
    assert!(saturated > 15 * 1000, "{saturated} coloured of {w}x{h}");
    assert!(bpf_px > 50, "{bpf_px} BPF-coloured pixels");
}
