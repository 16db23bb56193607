//! Print a perf.data file's attrs, features and a count of its records by
//! type: `cargo run -p perfdata --example dump -- perf.data`.
use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "perf.data".into());
    let file = perfdata::PerfFile::open(path.as_ref())?;
    for a in file.attrs() {
        println!(
            "attr {} type {} config {} ids {:?}",
            a.name, a.attr.type_, a.attr.config, a.ids
        );
    }
    let f = file.features();
    println!(
        "hostname {:?} osrelease {:?} nrcpus {:?}",
        f.hostname, f.osrelease, f.nrcpus
    );
    if let Some(v) = &f.bpf_prog_info {
        for p in v {
            println!(
                "bpf_prog_info id {} name {} subs {}",
                p.id,
                p.name,
                p.jited_ksyms.len()
            );
        }
    }
    for w in &f.warnings {
        println!("warning: {w}");
    }
    let mut counts = BTreeMap::new();
    let mut records = file.records()?;
    while let Some(r) = records.next()? {
        *counts.entry(r.header.type_).or_insert(0u64) += 1;
    }
    println!("{counts:?}");
    Ok(())
}
