//! The object words bpftool takes (`ID`, `id ID`, `name NAME`, `tag TAG`,
//! `pinned PATH`), and finding the programs they name.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use bpfinfo::sys::{self, Capture, Pinned};

/// Which object(s) a command is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Id(u32),
    Name(String),
    Tag(String),
    Pinned(PathBuf),
}

/// Parse the words after `show`. `kinds` are the keywords this object
/// kind takes besides `id` (programs: name, tag, pinned; maps: name,
/// pinned; links: pinned).
pub fn parse(words: &[String], kinds: &[&str], what: &str) -> Result<Selector> {
    let usage = || {
        let mut forms = vec!["ID".to_string(), "id ID".to_string()];
        forms.extend(kinds.iter().map(|k| match *k {
            "pinned" => "pinned PATH".to_string(),
            k => format!("{k} {}", k.to_uppercase()),
        }));
        format!("`{what}` takes {}", forms.join(", "))
    };
    let id = |s: &str| -> Result<Selector> {
        s.parse()
            .map(Selector::Id)
            .map_err(|_| anyhow::anyhow!("{s:?} is not an id; {}", usage()))
    };
    match words {
        [one] => id(one),
        [k, v] if k == "id" => id(v),
        [k, v] if kinds.contains(&k.as_str()) => Ok(match k.as_str() {
            "name" => Selector::Name(v.clone()),
            "tag" => Selector::Tag(v.to_ascii_lowercase()),
            _ => Selector::Pinned(PathBuf::from(v)),
        }),
        _ => bail!("{}; got {:?}", usage(), words.join(" ")),
    }
}

/// What is pinned at `path`, with the errors worded for `want` (e.g.
/// "program", "map") and the command that shows what is there instead.
pub fn pinned_id(path: &std::path::Path, want: &str) -> Result<u32> {
    let p = match sys::pinned(path) {
        Ok(p) => p,
        Err(e) if e.errno() == Some(libc::ENOENT) => {
            bail!("{}: no BPF object is pinned there", path.display())
        }
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
    };
    let shown = path.display();
    match (p, want) {
        (Pinned::Prog(id), "program") | (Pinned::Map(id), "map") | (Pinned::Link(id), "link") => {
            Ok(id)
        }
        (Pinned::Prog(id), _) => {
            bail!("{shown} holds BPF program {id}, not a {want} (see `bpfprof bpf show {id}`)")
        }
        (Pinned::Map(id), _) => {
            bail!("{shown} holds BPF map {id}, not a {want} (see `bpfprof bpf map show {id}`)")
        }
        (Pinned::Link(id), _) => {
            bail!("{shown} holds BPF link {id}, not a {want} (see `bpfprof bpf link show {id}`)")
        }
        (Pinned::Other, _) => bail!("{shown} holds a BPF object that is no {want}"),
    }
}

/// The ids of the programs `sel` names, ascending; an error that says so
/// when there are none.
pub fn prog_ids(sel: &Selector) -> Result<Vec<u32>> {
    let ids = match sel {
        Selector::Id(id) => vec![*id],
        Selector::Pinned(path) => vec![pinned_id(path, "program")?],
        Selector::Name(_) | Selector::Tag(_) => {
            let mut ids = Vec::new();
            for (id, r) in sys::walk_progs(Capture::Summary) {
                let p = match r {
                    Ok(p) => p,
                    Err(bpfinfo::Error::Gone { .. }) => continue,
                    Err(e) if id == 0 => return Err(e).context("listing BPF programs"),
                    Err(_) => continue,
                };
                let hit = match sel {
                    // The kernel keeps 15 bytes of a name: bpftool matches
                    // those, and the whole BTF name is accepted too.
                    Selector::Name(n) => p.info.name == *n || super::full_name(&p.info) == *n,
                    Selector::Tag(t) => p.info.tag_hex() == *t,
                    _ => false,
                };
                if hit {
                    ids.push(id);
                }
            }
            ids
        }
    };
    if ids.is_empty() {
        match sel {
            Selector::Name(n) => {
                bail!("no BPF program named {n} is loaded (see `bpfprof bpf list`)")
            }
            Selector::Tag(t) => {
                bail!("no BPF program with tag {t} is loaded (see `bpfprof bpf list`)")
            }
            _ => unreachable!("an id or a pin names one program"),
        }
    }
    Ok(ids)
}
