//! `top --json` (one object per interval, newline-delimited) and `--csv`
//! (one row per program per interval): the numbers the terminal UI shows.

use std::io::Write;

use serde::Serialize;

use super::window::{Interval, ProgLine, SymLine};

/// How many symbol rows each JSON line carries.
pub const JSON_SYMBOLS: usize = 30;

#[derive(Serialize)]
struct Line<'a> {
    /// UTC, ISO 8601, at the end of the interval.
    time: String,
    /// Seconds since `top` started, at the end of the interval.
    elapsed_s: f64,
    interval_s: f64,
    event: &'a str,
    samples: u64,
    lost: u64,
    callchains: bool,
    bpf_stats: bool,
    /// `top`'s own CPU over the interval, in percent of one core.
    cpu_percent: f64,
    programs: &'a [ProgLine],
    symbols: &'a [SymLine],
}

/// What every line carries besides the interval's numbers.
pub struct Context<'a> {
    pub event: &'a str,
    pub elapsed_s: f64,
    pub cpu_percent: f64,
    pub wall_s: u64,
}

pub fn json_line(
    out: &mut dyn Write,
    i: &Interval,
    syms: &[SymLine],
    cx: &Context<'_>,
) -> std::io::Result<()> {
    let line = Line {
        time: crate::utc::utc(cx.wall_s),
        elapsed_s: cx.elapsed_s,
        interval_s: i.secs,
        event: cx.event,
        samples: i.samples,
        lost: i.lost,
        callchains: i.callchains,
        bpf_stats: i.stats_on,
        cpu_percent: cx.cpu_percent,
        programs: &i.progs,
        symbols: &syms[..syms.len().min(JSON_SYMBOLS)],
    };
    serde_json::to_writer(&mut *out, &line)?;
    writeln!(out)?;
    out.flush()
}

pub const CSV_HEADER: &str = "time,elapsed_s,interval_s,samples,id,name,type,attach,owner,\
total,self,called,hook,total_pct,self_pct,called_pct,hook_pct,\
run_cnt,run_time_ns,runs_per_s,avg_ns,loaded_s,unloaded";

/// A CSV field: quoted when it holds a comma, quote or line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn opt_f(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}

/// The first attachment and owner, as the UI's columns show them.
pub fn attach_text(p: &ProgLine) -> String {
    p.attach
        .first()
        .map(|a| match a.target.is_empty() {
            true => a.kind.clone(),
            false => a.target.clone(),
        })
        .unwrap_or_default()
}

pub fn owner_text(p: &ProgLine) -> String {
    p.owners
        .first()
        .map(|o| format!("{}/{}", o.pid, o.comm))
        .unwrap_or_default()
}

pub fn csv_rows(out: &mut dyn Write, i: &Interval, cx: &Context<'_>) -> std::io::Result<()> {
    let time = crate::utc::utc(cx.wall_s);
    for p in &i.progs {
        writeln!(
            out,
            "{time},{:.3},{:.3},{},{},{},{},{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{}",
            cx.elapsed_s,
            i.secs,
            i.samples,
            p.head.id,
            field(&p.head.name),
            field(&p.head.prog_type),
            field(&attach_text(p)),
            field(&owner_text(p)),
            opt(p.head.samples.total),
            p.head.samples.own,
            opt(p.head.samples.called),
            opt(p.head.samples.hook),
            opt_f(p.head.percent.total, 3),
            p.head.percent.own,
            opt_f(p.head.percent.called, 3),
            opt_f(p.head.percent.hook, 3),
            opt(p.run_cnt),
            opt(p.run_time_ns),
            opt_f(p.runs_per_s, 1),
            opt_f(p.avg_ns, 1),
            opt_f(p.loaded_s, 1),
            p.unloaded as u8,
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::bpf_view::{AttachPoint, Owner, Parts};

    fn line() -> ProgLine {
        let mut l = super::super::window::example(
            42,
            "a,b",
            Parts {
                own: 1,
                called: Some(2),
                hook: Some(3),
                total: Some(6),
            },
        );
        l.head.tag = "00".into();
        l.head.prog_type = "tracepoint".into();
        l.owners = vec![Owner {
            pid: 9,
            comm: "bpftrace".into(),
        }];
        l.attach = vec![AttachPoint {
            kind: "tracepoint".into(),
            target: "syscalls:sys_enter_getppid".into(),
            link_id: None,
        }];
        l.run_cnt = Some(10);
        l.run_time_ns = Some(1000);
        l.run_cnt_total = Some(99);
        l.runs_per_s = Some(10.0);
        l.avg_ns = Some(100.0);
        l.loaded_s = Some(3.0);
        l
    }

    /// One second of 100 samples, with `line()`'s program.
    fn interval() -> (Interval, Context<'static>) {
        let i = Interval {
            secs: 1.0,
            samples: 100,
            progs: vec![line()],
            ..Default::default()
        };
        let cx = Context {
            event: "cpu-clock",
            elapsed_s: 1.0,
            cpu_percent: 0.5,
            wall_s: 0,
        };
        (i, cx)
    }

    #[test]
    fn json_keeps_the_bpf_report_keys() {
        let (i, cx) = interval();
        let mut out = Vec::new();
        json_line(&mut out, &i, &[], &cx).unwrap();
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let p = &v["programs"][0];
        for k in ["id", "name", "tag", "type", "owners", "attach", "run_cnt"] {
            assert!(p.get(k).is_some(), "{k} missing");
        }
        assert_eq!(p["samples"]["self"], 1);
        assert_eq!(p["samples"]["total"], 6);
        assert_eq!(p["percent"]["hook"], 3.0);
        assert_eq!(v["samples"], 100);
    }

    #[test]
    fn csv_quotes_and_matches_its_header() {
        let (i, cx) = interval();
        let mut out = Vec::new();
        csv_rows(&mut out, &i, &cx).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(",\"a,b\","));
        let fields = text.trim_end().replace("\"a,b\"", "ab");
        assert_eq!(
            fields.split(',').count(),
            CSV_HEADER.split(',').count(),
            "{text}"
        );
        assert!(text.contains("syscalls:sys_enter_getppid,9/bpftrace,6,1,2,3,"));
    }
}
