//! Printing annotations: perf-annotate-style text (hot instructions
//! highlighted on a terminal), the per-line `--source` view, and JSON.

use std::io::Write;

use super::annotate::{Annotation, Target};

pub struct RenderOptions {
    pub source_only: bool,
    pub xlated: bool,
    pub color: bool,
}

fn paint(color: bool, pct: f64, s: &str) -> String {
    if !color || pct < 0.5 {
        return s.to_string();
    }
    // perf's scheme: red for hot, green for warm.
    let code = if pct >= 5.0 { "31" } else { "32" };
    format!("\x1b[{code}m{s}\x1b[0m")
}

/// `1 sample`, `2 samples`.
fn samples(n: u64) -> String {
    format!("{n} {}", if n == 1 { "sample" } else { "samples" })
}

fn header(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    let what = match &a.bpf {
        Some(b) => format!(
            "BPF program {} {} sub-program {} of {} ({})",
            b.prog_id, b.prog_name, b.sub, b.subprogs, b.func_name
        ),
        None => a.dso.clone(),
    };
    writeln!(out, "# {}  [{what}]", a.symbol)?;
    match a.called {
        // Self and called apart: a program that spends its time in a map
        // operation has few samples of its own.
        Some(called) => writeln!(
            out,
            "# {:.2}% of all samples in its own code ({}), {:.2}% in code it called ({}); {} bytes at {:#x}",
            a.percent,
            samples(a.samples),
            a.called_percent,
            samples(called),
            a.len,
            a.start
        )?,
        None => writeln!(
            out,
            "# {:.2}% of all samples, {}, {} bytes at {:#x}",
            a.percent,
            samples(a.samples),
            a.len,
            a.start
        )?,
    }
    for w in &a.warnings {
        writeln!(out, "# warning: {w} (shown without what it affects)")?;
    }
    Ok(())
}

pub fn stdio(targets: &[Target], o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    for (i, t) in targets.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        match t {
            Target::Unavailable(u) => {
                if u.symbol.is_empty() {
                    writeln!(out, "# {}", u.why)?;
                } else {
                    writeln!(
                        out,
                        "# {} ({}): cannot annotate: {}",
                        u.symbol,
                        samples(u.samples),
                        u.why
                    )?;
                }
            }
            Target::Annotated(a) => {
                header(a, out)?;
                if o.source_only {
                    source(a, o, out)?;
                } else if o.xlated {
                    xlated(a, o, out)?;
                } else {
                    asm(a, o, out)?;
                }
            }
        }
    }
    Ok(())
}

fn source(a: &Annotation, o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if a.lines.is_empty() {
        writeln!(
            out,
            "# no source line information: see the disassembly (drop --source)"
        )?;
        return Ok(());
    }
    writeln!(out, "#  Percent  Samples  Source{}", called_legend(a))?;
    let inclusive = a.samples + a.called.unwrap_or(0);
    for l in &a.lines {
        let row = format!(
            "  {:>7.2}  {:>7}  {}:{}  {}",
            l.percent,
            l.samples,
            short_file(&l.file),
            l.line,
            l.text.trim()
        );
        let pct = share(l.called, inclusive);
        let suffix = called_suffix(o, l.called, pct, None);
        writeln!(out, "{}{suffix}", paint(o.color, l.percent, &row))?;
    }
    Ok(())
}

/// The column header's note on what `→` means, when there are call chains.
fn called_legend(a: &Annotation) -> &'static str {
    match a.called {
        Some(_) => "  (→ samples in the code called from here, % of own + called)",
        None => "",
    }
}

/// `  → 35.12% (120 samples) in htab_map_update_elem`, for a call with
/// samples in its callee; painted on its own share, so an expensive call
/// stands out even on a cold instruction.
fn called_suffix(o: &RenderOptions, called: u64, pct: f64, callee: Option<&str>) -> String {
    if called == 0 {
        return String::new();
    }
    let n = if called == 1 { "sample" } else { "samples" };
    let s = match callee {
        Some(name) => format!("  → {pct:.2}% ({called} {n}) in {name}"),
        None => format!("  → {pct:.2}% ({called} {n}) in called code"),
    };
    paint(o.color, pct, &s)
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * n as f64 / total as f64
    }
}

fn short_file(f: &str) -> &str {
    f.rsplit('/').next().unwrap_or(f)
}

fn asm(a: &Annotation, o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "#  Percent  Samples  Offset  Instruction{}",
        called_legend(a)
    )?;
    let mut last = None;
    for ins in &a.insns {
        if let Some(li) = ins.line.filter(|_| ins.line != last) {
            let l = &a.lines[li];
            writeln!(
                out,
                "                    :  {}:{}  {}",
                short_file(&l.file),
                l.line,
                l.text.trim()
            )?;
        }
        last = ins.line.or(last);
        let callee = ins.callee.as_deref();
        let row = match callee {
            // objdump's style for a symbolic branch target.
            Some(name) => format!(
                "  {:>7.2}  {:>7}  {:>6x}:  {} <{name}>",
                ins.percent, ins.samples, ins.offset, ins.text
            ),
            None => format!(
                "  {:>7.2}  {:>7}  {:>6x}:  {}",
                ins.percent, ins.samples, ins.offset, ins.text
            ),
        };
        let suffix = called_suffix(o, ins.called, ins.called_percent, callee);
        writeln!(out, "{}{suffix}", paint(o.color, ins.percent, &row))?;
    }
    Ok(())
}

/// The bytecode view. A source line's share is printed on the line, since
/// the JIT code of one line cannot be split among its bytecode
/// instructions; an instruction shows only what is its own: the samples
/// in the code its call called.
fn xlated(a: &Annotation, o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if a.xlated.is_empty() {
        writeln!(out, "# no bytecode in the recording for this function (xlated instructions were not captured)")?;
        return asm(a, o, out);
    }
    if a.samples > 0 && a.xlated.iter().all(|x| x.line_samples.is_none()) {
        writeln!(
            out,
            "# no source line table for this program (loaded without BTF line info): its {} cannot be placed on bytecode, only its calls' samples are shown; see them per machine instruction without --xlated",
            if a.samples == 1 { "sample" } else { "samples" }
        )?;
    }
    writeln!(
        out,
        "#  Percent  Samples  Source line, then its bytecode (a line's share is the line's: it cannot be split among its instructions){}",
        called_legend(a)
    )?;
    let mut last = None;
    for (i, x) in a.xlated.iter().enumerate() {
        if let Some(li) = x.line.filter(|_| x.line != last) {
            let l = &a.lines[li];
            // The line's share here: every line_info range of it until
            // the next line starts (a line can be split around others).
            let n: u64 = a.xlated[i..]
                .iter()
                .take_while(|y| y.line.is_none() || y.line == x.line)
                .filter_map(|y| y.line_samples)
                .sum();
            let pct = share(n, a.samples);
            let row = format!(
                "  {pct:>7.2}  {n:>7}  ; {}:{}  {}",
                short_file(&l.file),
                l.line,
                l.text.trim()
            );
            writeln!(out, "{}", paint(o.color, pct, &row))?;
        }
        last = x.line.or(last);
        let row = format!("                    {:>4}: {}", x.index, x.text);
        // The bytecode names the callee already.
        let suffix = called_suffix(o, x.called, x.called_percent, None);
        writeln!(out, "{row}{suffix}")?;
    }
    Ok(())
}

pub fn json(targets: &[Target], out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, targets)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::super::annotate::{AnnotatedInsn, Annotation, LineShare, Target, XlatedRow};
    use super::*;

    fn insn(
        offset: u32,
        text: &str,
        samples: u64,
        callee: Option<&str>,
        called: u64,
    ) -> AnnotatedInsn {
        AnnotatedInsn {
            offset,
            addr: 0x1000 + offset as u64,
            text: text.to_string(),
            samples,
            percent: 100.0 * samples as f64 / 10.0,
            line: Some(0),
            callee: callee.map(str::to_string),
            called,
            called_percent: 100.0 * called as f64 / 40.0,
        }
    }

    /// 10 samples of its own, 30 in a map update it called.
    fn annotation() -> Annotation {
        Annotation {
            symbol: "bpf_prog_0123456789abcdef_f".into(),
            dso: "bpf_prog_0123456789abcdef_f".into(),
            bpf: None,
            start: 0x1000,
            len: 13,
            samples: 10,
            percent: 1.0,
            called: Some(30),
            called_percent: 3.0,
            insns: vec![
                insn(0, "mov %rdi,%rsi", 10, None, 0),
                insn(
                    3,
                    "call 0xffffffff8151b480",
                    0,
                    Some("htab_map_update_elem"),
                    30,
                ),
                insn(8, "call 0xffffffff81000000", 0, Some("bpf_ktime_get_ns"), 0),
            ],
            lines: vec![LineShare {
                file: "/src/f.bpf.c".into(),
                line: 7,
                text: "bpf_map_update_elem(&m, &k, &v, 0);".into(),
                samples: 10,
                percent: 100.0,
                called: 30,
            }],
            xlated: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn render(a: Annotation, source_only: bool) -> String {
        let mut out = Vec::new();
        let o = RenderOptions {
            source_only,
            xlated: false,
            color: false,
        };
        stdio(&[Target::Annotated(Box::new(a))], &o, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_call_shows_its_callee_and_the_samples_spent_there() {
        let out = render(annotation(), false);
        assert!(
            out.contains("in its own code (10 samples), 3.00% in code it called (30 samples)"),
            "{out}"
        );
        let row = out.lines().find(|l| l.contains("3:  call")).unwrap();
        assert!(
            row.ends_with("call 0xffffffff8151b480 <htab_map_update_elem>  → 75.00% (30 samples) in htab_map_update_elem"),
            "{row}"
        );
        // A call whose callee got no samples is named, without a share.
        let cold = out.lines().find(|l| l.contains("8:  call")).unwrap();
        assert!(cold.ends_with("<bpf_ktime_get_ns>"), "{cold}");
        let src = render(annotation(), true);
        let line = src.lines().find(|l| l.contains("f.bpf.c:7")).unwrap();
        assert!(
            line.ends_with("→ 75.00% (30 samples) in called code"),
            "{line}"
        );
    }

    fn xrow(index: u32, line: Option<usize>, line_samples: Option<u64>) -> XlatedRow {
        XlatedRow {
            index,
            text: format!("(b7) r{index} = 0"),
            line,
            line_samples,
            line_percent: line_samples.map(|n| 10.0 * n as f64),
            called: 0,
            called_percent: 0.0,
        }
    }

    #[test]
    fn bytecode_shares_are_the_lines_not_the_first_instructions() {
        let mut a = annotation();
        a.called = None;
        a.xlated = vec![xrow(0, Some(0), Some(10)), xrow(1, Some(0), None)];
        let mut out = Vec::new();
        let o = RenderOptions {
            source_only: false,
            xlated: true,
            color: false,
        };
        stdio(&[Target::Annotated(Box::new(a.clone()))], &o, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let line = out.lines().find(|l| l.contains("; f.bpf.c:7")).unwrap();
        assert!(line.starts_with("   100.00       10  ; "), "{line:?}");
        let first = out.lines().find(|l| l.contains("0: (b7)")).unwrap();
        assert_eq!(first.trim_start(), "0: (b7) r0 = 0", "no share of its own");
        assert!(!out.contains("no source line table"), "{out}");

        // Without line info nothing can be placed, and that is said.
        a.xlated = vec![xrow(0, None, None), xrow(1, None, None)];
        let mut text = Vec::new();
        stdio(&[Target::Annotated(Box::new(a))], &o, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("# no source line table for this program"),
            "{text}"
        );
    }

    #[test]
    fn without_call_chains_the_header_is_as_before() {
        let mut a = annotation();
        a.called = None;
        for i in &mut a.insns {
            i.called = 0;
        }
        let out = render(a, false);
        assert!(
            out.contains("# 1.00% of all samples, 10 samples, 13 bytes at 0x1000"),
            "{out}"
        );
        assert!(!out.contains('→'), "{out}");
    }
}
