//! `bpf list`, `bpf show name|tag|pinned`, `bpf map list|show` and
//! `bpf link list|show` against bpftool (`prog show -j`, `map show -j`,
//! `link show -j`) on the same live objects: the owners fixture (two
//! programs, one hash map, two pinned links, loaded by libbpf), loaded
//! twice so that a name matches two programs. Owning processes are checked
//! against the loaders' pids (bpftool 7.1 is built without them).

#[path = "../../bpfinfo/tests/meta_fixture/mod.rs"]
mod meta_fixture;
mod support;

use std::collections::BTreeSet;
use std::process::Command;

use meta_fixture::{Fixture, MAP, RAW_PROG, TP_PROG};
use serde_json::Value;
use testkit::tool;

fn bpftool(args: &[&str]) -> Value {
    serde_json::from_str(&support::stdout(
        Command::new("bpftool").args(args).arg("-j"),
    ))
    .expect("bpftool JSON")
}

fn ours(args: &[&str]) -> Value {
    serde_json::from_str(&support::stdout(support::bpfprof().args(args)))
        .unwrap_or_else(|e| panic!("bpfprof {args:?} --json: {e}"))
}

fn by_id(v: &Value, id: u64) -> Value {
    v.as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"].as_u64() == Some(id))
        .unwrap_or_else(|| panic!("no id {id} in {v}"))
        .clone()
}

fn pids(v: &Value) -> BTreeSet<u64> {
    v["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("pids in {v}"))
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect()
}

/// Ours and bpftool's answers, asked again (at most 5 times) while they
/// differ: objects of other tests come and go between the two questions.
fn agree(what: &str, ask: impl Fn() -> (BTreeSet<u64>, BTreeSet<u64>)) -> BTreeSet<u64> {
    let mut last = ask();
    for _ in 0..5 {
        if last.0 == last.1 {
            return last.0;
        }
        last = ask();
    }
    panic!("{what}: ours {:?}, bpftool's {:?}", last.0, last.1);
}

/// Both fixtures, or None (skipped, or failed under CI).
fn fixtures() -> Option<(Fixture, Fixture)> {
    if !support::live(false) {
        return None;
    }
    if !support::require(
        tool("bpftool").is_some(),
        "needs bpftool (apt-get install bpftool)",
    ) {
        return None;
    }
    let start = |tag| match Fixture::start(tag) {
        Ok(f) => Some(f),
        Err(why) => {
            support::require(false, &why);
            None
        }
    };
    Some((start("objs-a")?, start("objs-b")?))
}

#[test]
fn bpf_objects_agree_with_bpftool() {
    // The two tests load the same fixture; each compares snapshots of
    // every program and map taken moments apart.
    let _serial = support::one_at_a_time();
    let Some((a, b)) = fixtures() else { return };
    let list = ours(&["bpf", "list", "--json"]);
    let bt = bpftool(&["prog", "show"]);
    for (f, name) in [(&a, TP_PROG), (&a, RAW_PROG), (&b, TP_PROG)] {
        let id = f.prog_id(name) as u64;
        let (o, t) = (by_id(&list, id), by_id(&bt, id));
        // Fields both have, under bpftool's keys.
        for k in [
            "type",
            "name",
            "tag",
            "gpl_compatible",
            "uid",
            "bytes_xlated",
            "jited",
            "bytes_jited",
            "bytes_memlock",
            "btf_id",
        ] {
            assert_eq!(o[k], t[k], "program {id} {k}: ours {o} bpftool {t}");
        }
        // bpftool prints no map_ids key when there are none.
        let none = Value::Array(Vec::new());
        assert_eq!(o["map_ids"], *t.get("map_ids").unwrap_or(&none), "{id}");
        // The same instant, to the second (both read the clocks apart).
        let (ol, tl) = (
            o["loaded_at_epoch"].as_i64().unwrap(),
            t["loaded_at"].as_i64().unwrap(),
        );
        assert!((ol - tl).abs() <= 1, "loaded_at {ol} vs bpftool's {tl}");
        // Our older keys say the same as bpftool's.
        assert_eq!(o["xlated_size"], t["bytes_xlated"]);
        assert_eq!(o["jited_size"], t["bytes_jited"]);
        // The loader (libbpf keeps its program fds) owns it.
        assert!(
            pids(&o).contains(&(f.loader_pid as u64)),
            "loader {} not among {id}'s owners: {o}",
            f.loader_pid
        );
    }

    // Maps: every field bpftool has, and the programs using it.
    let maps = ours(&["bpf", "map", "list", "--json"]);
    let bt_maps = bpftool(&["map", "show"]);
    for t in bt_maps
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == MAP)
    {
        let id = t["id"].as_u64().unwrap();
        let o = by_id(&maps, id);
        for (k, v) in t.as_object().unwrap() {
            assert_eq!(&o[k], v, "map {id} {k}: ours {o} bpftool {t}");
        }
        let users: Vec<u64> = bt
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["map_ids"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|x| x.as_u64() == Some(id)))
            })
            .map(|p| p["id"].as_u64().unwrap())
            .collect();
        let got: Vec<u64> = o["prog_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(got, users, "programs using map {id}");
        let one = ours(&["bpf", "map", "show", &id.to_string(), "--json"]);
        assert_eq!(one.as_array().unwrap(), &vec![o.clone()], "map show {id}");
    }
    // Every map of that name, as bpftool lists them (other tests may load
    // the fixture too, so both are asked again until they agree).
    agree(&format!("maps named {MAP}"), || {
        let ids = |v: &Value, all: bool| -> BTreeSet<u64> {
            v.as_array()
                .unwrap()
                .iter()
                .filter(|m| all || m["name"] == MAP)
                .map(|m| m["id"].as_u64().unwrap())
                .collect()
        };
        (
            ids(&ours(&["bpf", "map", "show", "name", MAP, "--json"]), true),
            ids(&bpftool(&["map", "show"]), false),
        )
    });

    // Links: id, type, program and (raw tracepoints) the tracepoint.
    let links = ours(&["bpf", "link", "list", "--json"]);
    let bt_links = bpftool(&["link", "show"]);
    for f in [&a, &b] {
        for name in [TP_PROG, RAW_PROG] {
            let pin = f.pin_dir.join(name);
            let t = bpftool(&["link", "show", "pinned", pin.to_str().unwrap()]);
            let id = t["id"].as_u64().unwrap();
            let o = by_id(&links, id);
            // The same in bpftool's list as in its answer for the pin.
            assert_eq!(by_id(&bt_links, id), t, "bpftool's link {id}");
            for k in ["type", "prog_id"] {
                assert_eq!(o[k], t[k], "link {id} {k}: ours {o} bpftool {t}");
            }
            if let Some(tp) = t.get("tp_name") {
                assert_eq!(&o["target"], tp, "link {id}");
            }
            if name == TP_PROG {
                // bpftool 7.1 does not decode perf_event links: the
                // fixture's SEC() says where it is.
                assert_eq!(o["attach_kind"], "tracepoint", "{o}");
                assert_eq!(o["target"], "syscalls:sys_enter_getppid", "{o}");
            }
            assert!(pids(&o).contains(&(f.loader_pid as u64)), "{o}");
            let shown = ours(&[
                "bpf",
                "link",
                "show",
                "pinned",
                pin.to_str().unwrap(),
                "--json",
            ]);
            assert_eq!(
                shown.as_array().unwrap(),
                &vec![o.clone()],
                "link show pinned"
            );
        }
    }
}

#[test]
fn bpf_show_takes_names_tags_and_pins_as_bpftool_does() {
    // The two tests load the same fixture; each compares snapshots of
    // every program and map taken moments apart.
    let _serial = support::one_at_a_time();
    let Some((a, b)) = fixtures() else { return };
    // The first line of each program's `bpf show`: "ID: type  name ...".
    let heads = |args: &[&str]| -> BTreeSet<u64> {
        support::stdout(support::bpfprof().args(args))
            .lines()
            .filter(|l| !l.starts_with([' ', '\t']) && l.contains(": "))
            .filter_map(|l| l.split(':').next()?.parse().ok())
            .collect()
    };
    let ids_of = |v: &Value| -> BTreeSet<u64> {
        // bpftool answers one object, or an array of several.
        match v {
            Value::Array(a) => a.iter().map(|p| p["id"].as_u64().unwrap()).collect(),
            p => [p["id"].as_u64().unwrap()].into(),
        }
    };
    let both: BTreeSet<u64> = [a.prog_id(TP_PROG) as u64, b.prog_id(TP_PROG) as u64].into();
    let named = agree(&format!("programs named {TP_PROG}"), || {
        (
            heads(&["bpf", "show", "name", TP_PROG]),
            ids_of(&bpftool(&["prog", "show", "name", TP_PROG])),
        )
    });
    assert!(named.is_superset(&both), "{named:?} lacks one of {both:?}");

    let raw = a.prog_id(RAW_PROG);
    let tag = by_id(&bpftool(&["prog", "show"]), raw as u64)["tag"]
        .as_str()
        .unwrap()
        .to_string();
    // Both loads of a program have its tag.
    let tagged = agree(&format!("programs tagged {tag}"), || {
        (
            heads(&["bpf", "show", "tag", &tag]),
            ids_of(&bpftool(&["prog", "show", "tag", &tag])),
        )
    });
    assert!(tagged.contains(&(raw as u64)), "{tagged:?}");
    assert_eq!(
        heads(&["bpf", "show", "id", &raw.to_string()]),
        [raw as u64].into()
    );

    // A program pinned with bpftool.
    let pin = a.pin_dir.join("prog");
    support::run(
        Command::new("bpftool")
            .args(["prog", "pin", "id", &raw.to_string()])
            .arg(&pin),
    );
    let p = pin.to_str().unwrap();
    assert_eq!(
        ids_of(&bpftool(&["prog", "show", "pinned", p])),
        [raw as u64].into()
    );
    assert_eq!(
        heads(&["bpf", "show", "pinned", p]),
        [raw as u64].into(),
        "pinned"
    );

    // `bpf show` says where it is attached, as bpftool's link says.
    let link_pin = a.pin_dir.join(RAW_PROG);
    let l = bpftool(&["link", "show", "pinned", link_pin.to_str().unwrap()]);
    let shown = support::stdout(support::bpfprof().args(["bpf", "show", &raw.to_string()]));
    let want = format!(
        "\tattached: raw_tracepoint {} (link {})",
        l["tp_name"].as_str().unwrap(),
        l["id"]
    );
    assert!(shown.lines().any(|x| x == want), "{want:?} in:\n{shown}");
    let owner = format!("pids attach_pin({})", a.loader_pid);
    assert!(shown.contains(&owner), "{owner:?} in:\n{shown}");

    // A pinned link is no program: said, with where to look instead.
    let link = a.pin_dir.join(RAW_PROG);
    let out = support::bpfprof()
        .args(["bpf", "show", "pinned"])
        .arg(&link)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a program") && err.contains("bpf link show"),
        "{err}"
    );
}
