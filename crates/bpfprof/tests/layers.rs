//! The layers of the crate point one way (README → Architecture): the
//! profile model uses neither the engine nor a view, views do not use the
//! engine, and symbolize and capture, below analysis, use none of it.
//! Checked on the `use` paths and qualified paths of the sources.

use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Lines of code (not comments) in `dir` that name any of `paths`.
fn uses(dir: &str, paths: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let files = sources(&root);
    assert!(!files.is_empty(), "no sources under {}", root.display());
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(p) = paths.iter().find(|p| code.contains(*p)) {
                found.push(format!("{}:{}: {p}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

/// The views, by every path they are reachable by.
const VIEWS: &[&str] = &[
    "analyze::view",
    "analyze::table",
    "analyze::render",
    "analyze::callgraph",
    "analyze::bpf_view",
    "analyze::annotate",
    "super::view",
];

const ENGINE: &[&str] = &[
    "analyze::engine",
    "analyze::Engine",
    "analyze::build",
    "super::engine",
    "super::super::engine",
];

#[test]
fn the_model_uses_neither_the_engine_nor_a_view() {
    let mut bad = uses("analyze/model", ENGINE);
    bad.extend(uses("analyze/model", VIEWS));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn views_do_not_use_the_engine() {
    let bad = uses("analyze/view", ENGINE);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn symbols_and_capture_sit_below_analysis() {
    for dir in ["symbolize", "capture"] {
        let bad = uses(dir, &["crate::analyze", "bpfprof::analyze"]);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
