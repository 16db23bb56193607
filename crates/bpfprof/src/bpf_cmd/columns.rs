//! The aligned text tables of `bpf list`, `bpf map list` and
//! `bpf link list`: numbers right-aligned, text left-aligned, two spaces
//! between columns, no trailing blanks.

/// Print `rows` under `header`; `right` are the numeric columns.
pub fn print(header: &[&str], rows: &[Vec<String>], right: &[usize]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, (c, &w)) in cells.zip(&widths).enumerate() {
            if right.contains(&i) {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(&mut header.iter().copied());
    for r in rows {
        line(&mut r.iter().map(String::as_str));
    }
}

/// `1 program`, `2 programs`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Owners as bpftool prints them: `comm(pid)`, comma-separated; `-` for
/// none.
pub fn owners(o: &[perfdata::BpfOwner]) -> String {
    if o.is_empty() {
        return "-".into();
    }
    o.iter()
        .map(|o| format!("{}({})", o.comm, o.pid))
        .collect::<Vec<_>>()
        .join(",")
}

/// bpftool's `pids` JSON: `[{"pid": N, "comm": "..."}]`.
pub fn owners_json(o: &[perfdata::BpfOwner]) -> serde_json::Value {
    o.iter()
        .map(|o| serde_json::json!({"pid": o.pid, "comm": o.comm}))
        .collect()
}
