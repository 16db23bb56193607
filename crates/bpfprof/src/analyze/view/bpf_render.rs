//! Printing the BPF view: the per-program table of `report --bpf`, and
//! its first rows atop the default report.

use std::io::Write;

use super::bpf_view::{BpfSummary, ProgSummary};

fn secs(t: Option<f64>) -> String {
    t.map_or_else(|| "-".into(), |s| format!("{s:.3}s"))
}

/// A span of seconds as people say it: `3h12m`, `4m05s`, `12.3s`.
fn span(s: f64) -> String {
    let whole = s as u64;
    match whole {
        0..=59 => format!("{s:.1}s"),
        60..=3599 => format!("{}m{:02}s", whole / 60, whole % 60),
        3600..=172_799 => format!("{}h{:02}m", whole / 3600, whole / 60 % 60),
        _ => format!("{}d{:02}h", whole / 86_400, whole / 3600 % 24),
    }
}

/// When the program was loaded: in the recording, or how long before it.
fn loaded(pr: &ProgSummary) -> String {
    match (pr.loaded_at, pr.loaded_before_s) {
        (Some(t), _) => secs(Some(t)),
        (None, Some(b)) => format!("-{}", span(b)),
        _ => "-".into(),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}%"))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Who holds the program: its first owner (and how many more), else the
/// process that loaded it during the recording.
fn holder(pr: &ProgSummary) -> String {
    match (pr.owners.first(), pr.loader_pid, &pr.loader_comm) {
        (Some(o), ..) if pr.owners.len() > 1 => {
            format!("{}/{} +{}", o.pid, o.comm, pr.owners.len() - 1)
        }
        (Some(o), ..) => format!("{}/{}", o.pid, o.comm),
        (None, Some(pid), Some(c)) => format!("{pid}/{c}"),
        _ => "-".into(),
    }
}

fn attach_point(pr: &ProgSummary) -> String {
    match pr.attach.first() {
        Some(a) if pr.attach.len() > 1 => format!("{} +{}", a.target, pr.attach.len() - 1),
        Some(a) => a.target.clone(),
        None => "-".into(),
    }
}

/// The per-program table; `limit` shortens it for the default report.
pub fn table(s: &BpfSummary, limit: Option<usize>, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "#")?;
    if s.programs.is_empty() {
        let unnamed: u64 = s.unattributed.iter().map(|u| u.1).sum();
        writeln!(
            out,
            "# No BPF program is known to the recording ({} in BPF code of no known program).",
            plural(unnamed as usize, "sample", "samples")
        )?;
    } else if s.callchains {
        let total: u64 = s.programs.iter().filter_map(|p| p.head.samples.total).sum();
        let share = |n: u64| match s.total.samples {
            0 => 0.0,
            t => 100.0 * n as f64 / t as f64,
        };
        writeln!(
            out,
            "# BPF programs: {:.2}% of samples in view ({} samples) with what they called and their hooks; {:.2}% in their own code; {}",
            share(total),
            total,
            s.percent,
            plural(s.programs.len(), "program", "programs"),
        )?;
    } else {
        writeln!(
            out,
            "# BPF programs: {:.2}% of samples in view ({} samples) in their own code; {}",
            s.percent,
            s.samples,
            plural(s.programs.len(), "program", "programs"),
        )?;
        writeln!(
            out,
            "# Only the samples in programs' own code are known: what they called and the hooks that run them need call chains (record with -g; report without -g none)."
        )?;
    }
    if s.programs.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "#    Total     Self   Called     Hook   Samples      ID  Type             Name                            Attach                          Owner               Loaded   Unloaded  Run count   Avg ns"
    )?;
    let n = limit.unwrap_or(usize::MAX);
    for pr in s.programs.iter().take(n) {
        let (runs, avg) = match (pr.run_cnt, pr.run_time_ns) {
            (Some(c), Some(t)) if c > 0 => (c.to_string(), format!("{}", t / c)),
            _ => ("-".into(), "-".into()),
        };
        writeln!(
            out,
            "#  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  {:>6}  {:<15}  {:<30}  {:<30}  {:<18}  {:>8}  {:>8}  {:>9}  {:>7}{}",
            pct(pr.head.percent.total),
            pct(Some(pr.head.percent.own)),
            pct(pr.head.percent.called),
            pct(pr.head.percent.hook),
            pr.head.samples.total.unwrap_or(pr.head.samples.own),
            pr.head.id,
            pr.head.prog_type,
            pr.head.name,
            attach_point(pr),
            holder(pr),
            loaded(pr),
            secs(pr.unloaded_at),
            runs,
            avg,
            if pr.has_info { "" } else { "  (no prog info: not annotatable)" }
        )?;
        if limit.is_some() {
            continue;
        }
        if pr.subprogs.len() > 1 {
            for sub in &pr.subprogs {
                writeln!(
                    out,
                    "#                     {:>6.2}%            {:>8}    sub {}  {}",
                    sub.percent, sub.samples, sub.index, sub.name
                )?;
            }
        }
        if let Some(at) = &pr.loaded {
            let when = match (pr.loaded_at, pr.loaded_before_s) {
                (Some(t), _) => format!("{t:.3}s into the recording"),
                (None, Some(b)) => format!("{} before the recording", span(b)),
                _ => String::new(),
            };
            writeln!(
                out,
                "#                                                   loaded {at}, {when}"
            )?;
        }
        if pr.owners.len() > 1 {
            let who: Vec<String> = pr
                .owners
                .iter()
                .map(|o| format!("{}/{}", o.pid, o.comm))
                .collect();
            writeln!(
                out,
                "#                                                   owners: {}",
                who.join(", ")
            )?;
        }
        if pr.attach.len() > 1 || pr.attach.first().is_some_and(|a| !a.kind.is_empty()) {
            let at: Vec<String> = pr
                .attach
                .iter()
                .map(|a| match a.link_id {
                    Some(l) => format!("{} {} (link {l})", a.kind, a.target),
                    None => format!("{} {}", a.kind, a.target),
                })
                .collect();
            writeln!(
                out,
                "#                                                   attached: {}",
                at.join(", ")
            )?;
        }
        for b in &pr.by {
            writeln!(
                out,
                "#  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}          by {}",
                pct(b.percent.total),
                pct(Some(b.percent.own)),
                pct(b.percent.called),
                pct(b.percent.hook),
                b.samples.total.unwrap_or(b.samples.own),
                b.value
            )?;
        }
        for h in &pr.hook_sites {
            writeln!(
                out,
                "#                                       {:>8}    hook: {}",
                h.samples, h.site
            )?;
        }
        if !pr.maps.is_empty() {
            let maps: Vec<String> = pr
                .maps
                .iter()
                .map(|m| format!("{} {} ({})", m.id, m.name, m.map_type))
                .collect();
            writeln!(
                out,
                "#                                                   maps: {}",
                maps.join(", ")
            )?;
        }
    }
    if s.programs.len() > n {
        writeln!(
            out,
            "#  ... {} more (bpfprof report --bpf)",
            s.programs.len() - n
        )?;
    }
    if limit.is_none() {
        sites(s, out)?;
    }
    if s.unclaimed_hook > 0 {
        writeln!(
            out,
            "#  {} hook samples at sites where no program of the recording was found",
            s.unclaimed_hook
        )?;
    }
    if s.deferred_hook > 0 {
        writeln!(
            out,
            "#  {} hook samples moved from where interrupts came back on after a uprobe's trap \
             (int3, single-step) to its hook",
            s.deferred_hook
        )?;
    }
    if let Some(st) = &s.stats {
        let per_run = st
            .ns_per_run
            .map_or_else(String::new, |ns| format!(": {ns:.1} ns per run"));
        writeln!(
            out,
            "#  Run-time stats cost {} samples ({:.2}%) reading the clock around {} program runs{per_run}",
            st.samples, st.percent, st.runs
        )?;
    }
    for (name, n) in &s.unattributed {
        writeln!(out, "#  {n:>8}  {name}  (program id unknown: no BPF_EVENT)")?;
    }
    Ok(())
}

/// How each site's hook samples were shared out.
fn sites(s: &BpfSummary, out: &mut dyn Write) -> std::io::Result<()> {
    if s.sites.is_empty() {
        return Ok(());
    }
    writeln!(out, "#\n# Hook samples by site:")?;
    for site in &s.sites {
        let who = match site.split_by {
            None => "no program found there".to_string(),
            Some(by) => {
                let ids: Vec<String> = site.programs.iter().map(u32::to_string).collect();
                let by = match by {
                    crate::analyze::bpf_cost::SplitBy::Alone => "",
                    crate::analyze::bpf_cost::SplitBy::RunCount => ", split by run count",
                    crate::analyze::bpf_cost::SplitBy::Samples => ", split by their samples",
                    crate::analyze::bpf_cost::SplitBy::Evenly => ", split evenly",
                    crate::analyze::bpf_cost::SplitBy::CallSite => {
                        ", each sample to the programs seen on its path"
                    }
                };
                format!("program {}{by}", ids.join(", "))
            }
        };
        writeln!(out, "#  {:>8}  {}  → {who}", site.samples, site.site)?;
    }
    Ok(())
}
