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

fn header(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    let what = match &a.bpf {
        Some(b) => format!(
            "BPF program {} {} sub-program {} of {} ({})",
            b.prog_id, b.prog_name, b.sub, b.subprogs, b.func_name
        ),
        None => a.dso.clone(),
    };
    writeln!(
        out,
        "# {}  [{what}]\n# {:.2}% of all samples, {} samples, {} bytes at {:#x}",
        a.symbol, a.percent, a.samples, a.len, a.start
    )?;
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
                        "# {} ({} samples): cannot annotate: {}",
                        u.symbol, u.samples, u.why
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
    writeln!(out, "#  Percent  Samples  Source")?;
    for l in &a.lines {
        let row = format!(
            "  {:>7.2}  {:>7}  {}:{}  {}",
            l.percent,
            l.samples,
            short_file(&l.file),
            l.line,
            l.text.trim()
        );
        writeln!(out, "{}", paint(o.color, l.percent, &row))?;
    }
    Ok(())
}

fn short_file(f: &str) -> &str {
    f.rsplit('/').next().unwrap_or(f)
}

fn asm(a: &Annotation, o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "#  Percent  Samples  Offset  Instruction")?;
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
        let row = format!(
            "  {:>7.2}  {:>7}  {:>6x}:  {}",
            ins.percent, ins.samples, ins.offset, ins.text
        );
        writeln!(out, "{}", paint(o.color, ins.percent, &row))?;
    }
    Ok(())
}

fn xlated(a: &Annotation, o: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if a.xlated.is_empty() {
        writeln!(out, "# no bytecode in the recording for this function (xlated instructions were not captured)")?;
        return asm(a, o, out);
    }
    writeln!(
        out,
        "#  Percent  Samples  Bytecode (shares carried from the JIT code, per source line)"
    )?;
    let mut last = None;
    for x in &a.xlated {
        if let Some(li) = x.line.filter(|_| x.line != last) {
            let l = &a.lines[li];
            writeln!(
                out,
                "                    ; {}:{}  {}",
                short_file(&l.file),
                l.line,
                l.text.trim()
            )?;
        }
        last = x.line.or(last);
        let row = format!(
            "  {:>7.2}  {:>7}  {:>4}: {}",
            x.percent, x.samples, x.index, x.text
        );
        writeln!(out, "{}", paint(o.color, x.percent, &row))?;
    }
    Ok(())
}

pub fn json(targets: &[Target], out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, targets)?;
    writeln!(out)
}
