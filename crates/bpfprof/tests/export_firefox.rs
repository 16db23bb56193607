//! `export --format firefox` checked against the format: the processed
//! profile's meta versions the crate writes (format version 24,
//! preprocessed profile version 55, which the Firefox Profiler upgrades
//! from), a thread per thread with every sample, the BPF category on BPF
//! frames only, and markers where the demo program was loaded and unloaded.
//! (fxprof-processed-profile only serializes, so the JSON is read back as
//! plain JSON.)

mod support;

use serde_json::Value;

/// A name of JIT-compiled BPF code: `bpf_prog_<tag>_<func>`, or a
/// trampoline or dispatcher (kernel functions such as `bpf_prog_load` are
/// not).
fn jitted(name: &str) -> bool {
    let tagged = name.strip_prefix("bpf_prog_").is_some_and(|r| {
        r.len() > 17 && r.as_bytes()[16] == b'_' && r[..16].bytes().all(|b| b.is_ascii_hexdigit())
    });
    tagged || name.starts_with("bpf_trampoline_") || name.starts_with("bpf_dispatcher_")
}

#[test]
fn the_firefox_profile_has_threads_a_bpf_category_and_load_markers() {
    if !support::live(false) {
        return;
    }
    let dir = support::tempdir();
    let data = support::path(&dir, "demo.data");
    support::run(
        support::bpfprof()
            .args(["record", "--demo", "-g", "--duration", "2", "-o"])
            .arg(&data),
    );
    let out = support::run(
        support::bpfprof()
            .args(["export", "--format", "firefox", "-i"])
            .arg(&data),
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["meta"]["version"], 24, "{}", v["meta"]);
    assert_eq!(v["meta"]["preprocessedProfileVersion"], 55);
    let cats: Vec<&str> = v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let bpf_cat = cats
        .iter()
        .position(|c| *c == "BPF")
        .expect("a BPF category") as u64;

    let threads = v["threads"].as_array().unwrap();
    let samples: u64 = threads
        .iter()
        .map(|t| t["samples"]["length"].as_u64().unwrap())
        .sum();
    let (total, _) = support::ours_flat(&data);
    assert_eq!(samples, total, "every sample on its thread");
    // Written as strings or numbers, depending on the field's version.
    let mut tids: Vec<String> = threads.iter().map(|t| t["tid"].to_string()).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), threads.len(), "a thread per thread");

    // BPF frames (and only they) in the BPF category, the demo's
    // sub-program among them.
    let mut bpf_funcs = Vec::new();
    for t in threads {
        let (ft, funcs, strings) = (&t["frameTable"], &t["funcTable"], &t["stringArray"]);
        let n = ft["length"].as_u64().unwrap() as usize;
        for i in 0..n {
            let func = ft["func"][i].as_u64().unwrap() as usize;
            let name = strings[funcs["name"][func].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            let is_bpf = ft["category"][i].as_u64() == Some(bpf_cat);
            assert_eq!(is_bpf, jitted(name), "{name}");
            if is_bpf {
                bpf_funcs.push(name.to_string());
            }
        }
    }
    assert!(
        bpf_funcs.iter().any(|n| n.ends_with("_work")),
        "{bpf_funcs:?}"
    );

    // The demo program was loaded and unloaded during the recording.
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(&data),
    );
    let bv: Value = serde_json::from_str(&json).unwrap();
    let id = bv["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "bpfprof_demo")
        .and_then(|p| p["id"].as_u64())
        .expect("the demo program");
    let track = threads
        .iter()
        .find(|t| t["processName"] == "BPF programs")
        .expect("a track of program loads");
    let m = &track["markers"];
    let strings = &track["stringArray"];
    let mut seen = Vec::new();
    for i in 0..m["length"].as_u64().unwrap() as usize {
        let name = strings[m["name"][i].as_u64().unwrap() as usize]
            .as_str()
            .unwrap();
        assert_eq!(m["data"][i]["type"], "BpfProgram");
        assert_eq!(m["category"][i].as_u64(), Some(bpf_cat));
        if m["data"][i]["id"].as_f64() == Some(id as f64) {
            seen.push(name.to_string());
        }
    }
    assert_eq!(seen, ["BPF load", "BPF unload"], "{m}");
}
