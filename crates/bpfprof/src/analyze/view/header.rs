//! `report --header` and `--header-only`: the recording's header and
//! feature sections as perf 6.1 prints them (tools/perf/util/header.c,
//! perf_header__fprintf_info and the print_* functions), line for line.
//!
//! Sections are printed in bit order, as perf walks them. Of the sections
//! perfdata does not decode, those perf shows only with `-I` get perf's
//! "X info available" line (that needs only the bit), those whose
//! presence is the whole message (BRANCH_STACK, AUXTRACE, STAT) get perf's
//! fixed sentence, and PMU_MAPPINGS, GROUP_DESC, CLOCKID and CLOCK_DATA
//! are read from their raw bodies (`sections`). Left out: DIR_FORMAT (only
//! for a perf.data directory), CPU_PMU_CAPS and HYBRID_TOPOLOGY (absent
//! without a hardware PMU, so untested here) and PMU_CAPS (perf prints
//! nothing for it when no PMU has capabilities, the usual case). TRACING_DATA and
//! BUILD_ID print nothing in perf either.

mod attr_text;
mod bpf_text;
mod local_time;
mod sections;

use std::io::Write;

use perfdata::{feature as f, PerfFile};

/// perf 6.1's section names (`feat_ops[].name`), by bit. perf knows no bit
/// past these (HEADER_LAST_FEATURE is 32) and ignores such bits; bit 0 is
/// reserved and never listed.
const FEATURE_NAMES: [&str; 32] = [
    "RESERVED",
    "TRACING_DATA",
    "BUILD_ID",
    "HOSTNAME",
    "OSRELEASE",
    "VERSION",
    "ARCH",
    "NRCPUS",
    "CPUDESC",
    "CPUID",
    "TOTAL_MEM",
    "CMDLINE",
    "EVENT_DESC",
    "CPU_TOPOLOGY",
    "NUMA_TOPOLOGY",
    "BRANCH_STACK",
    "PMU_MAPPINGS",
    "GROUP_DESC",
    "AUXTRACE",
    "STAT",
    "CACHE",
    "SAMPLE_TIME",
    "MEM_TOPOLOGY",
    "CLOCKID",
    "DIR_FORMAT",
    "BPF_PROG_INFO",
    "BPF_BTF",
    "COMPRESSED",
    "CPU_PMU_CAPS",
    "CLOCK_DATA",
    "HYBRID_TOPOLOGY",
    "PMU_CAPS",
];

/// The `# ========` block perf's `--header` prints before the report.
pub fn print(file: &PerfFile, out: &mut dyn Write) -> std::io::Result<()> {
    for l in lines(file) {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// The block's lines, without their newlines.
pub fn lines(file: &PerfFile) -> Vec<String> {
    let h = file.header();
    let mut v = vec!["# ========".to_string()];
    // perf prints the file's mtime (fstat), so a copy shows the copy's.
    if let Some(when) = file
        .path()
        .and_then(|p| std::fs::metadata(p).ok())
        .and_then(|m| local_time::ctime(std::os::unix::fs::MetadataExt::mtime(&m)))
    {
        v.push(format!("# captured on    : {when}"));
    }
    // PERF_HEADER_VERSION_2 (a PERFILE2 file) is 1.
    v.push("# header version : 1".into());
    v.push(format!("# data offset    : {}", h.data.offset));
    v.push(format!("# data size      : {}", h.data.size));
    v.push(format!(
        "# feat offset    : {}",
        h.data.offset.wrapping_add(h.data.size)
    ));
    for bit in h.feature_bits().filter(|&b| b < FEATURE_NAMES.len() as u32) {
        feature_lines(file, bit, &mut v);
    }
    let missing: String = (1..FEATURE_NAMES.len() as u32)
        .filter(|&b| !h.has_feature(b))
        .map(|b| format!("{} ", FEATURE_NAMES[b as usize]))
        .collect();
    v.push(format!("# missing features: {missing}"));
    v.push("# ========".into());
    v.push("#".into());
    v
}

/// What perf prints for present section `bit`.
fn feature_lines(file: &PerfFile, bit: u32, v: &mut Vec<String>) {
    let ft = file.features();
    let mut text = |key: &str, s: &Option<String>| {
        if let Some(s) = s {
            v.push(format!("# {key} : {s}"));
        }
    };
    match bit {
        f::HOSTNAME => text("hostname", &ft.hostname),
        f::OSRELEASE => text("os release", &ft.osrelease),
        f::VERSION => text("perf version", &ft.version),
        f::ARCH => text("arch", &ft.arch),
        f::CPUDESC => text("cpudesc", &ft.cpudesc),
        f::CPUID => text("cpuid", &ft.cpuid),
        f::NRCPUS => {
            if let Some(n) = ft.nrcpus {
                v.push(format!("# nrcpus online : {}", n.online));
                v.push(format!("# nrcpus avail : {}", n.available));
            }
        }
        f::TOTAL_MEM => {
            if let Some(m) = ft.total_mem {
                v.push(format!("# total memory : {m} kB"));
            }
        }
        f::CMDLINE => {
            if let Some(args) = &ft.cmdline {
                v.push(cmdline_line(args));
            }
        }
        f::EVENT_DESC if ft.event_desc.is_empty() => {
            v.push("# event desc: not available or unable to read".into())
        }
        f::EVENT_DESC => v.extend(ft.event_desc.iter().map(attr_text::event_line)),
        f::CPU_TOPOLOGY | f::NUMA_TOPOLOGY | f::CACHE | f::MEM_TOPOLOGY => v.push(format!(
            "# {} info available, use -I to display",
            FEATURE_NAMES[bit as usize]
        )),
        f::BRANCH_STACK => v.push("# contains samples with branch stack".into()),
        f::AUXTRACE => v.push("# contains AUX area data (e.g. instruction trace)".into()),
        f::STAT => v.push("# contains stat data".into()),
        f::PMU_MAPPINGS => v.extend(
            file.feature_body(bit)
                .and_then(|b| sections::pmu_mappings(&b)),
        ),
        f::GROUP_DESC => {
            let names: Vec<&str> = file.attrs().iter().map(|a| a.name.as_str()).collect();
            v.extend(
                file.feature_body(bit)
                    .and_then(|b| sections::group_desc(&b, &names))
                    .into_iter()
                    .flatten(),
            )
        }
        f::CLOCKID => v.extend(file.feature_body(bit).and_then(|b| sections::clockid(&b))),
        f::CLOCK_DATA => v.extend(
            file.feature_body(bit)
                .and_then(|b| sections::clock_data(&b))
                .into_iter()
                .flatten(),
        ),
        f::SAMPLE_TIME => {
            if let Some((first, last)) = ft.sample_time {
                v.extend(sample_time_lines(first, last));
            }
        }
        f::BPF_PROG_INFO => {
            let btfs = ft.bpf_btf.as_deref().unwrap_or_default();
            let infos = ft.bpf_prog_info.as_deref().unwrap_or_default();
            v.extend(bpf_text::prog_info_lines(infos, btfs));
        }
        f::BPF_BTF => v.extend(bpf_text::btf_lines(
            ft.bpf_btf.as_deref().unwrap_or_default(),
        )),
        f::COMPRESSED => {
            if let Some(c) = ft.compressed {
                v.push(format!(
                    "# compressed : {}, level = {}, ratio = {}",
                    if c.type_ == 1 { "Zstd" } else { "Unknown" },
                    c.level as i32,
                    c.ratio as i32
                ));
            }
        }
        _ => {}
    }
}

/// `# cmdline : ` then every argument and a space, a `'` shown as `\'`.
fn cmdline_line(args: &[String]) -> String {
    let mut s = "# cmdline : ".to_string();
    for a in args {
        s.push_str(&a.replace('\'', "\\'"));
        s.push(' ');
    }
    s
}

/// perf's timestamp__scnprintf_usec: seconds and microseconds.
fn usec(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

fn sample_time_lines(first: u64, last: u64) -> [String; 3] {
    [
        format!("# time of first sample : {}", usec(first)),
        format!("# time of last sample : {}", usec(last)),
        // perf subtracts as u64, so a last before the first wraps as there.
        format!(
            "# sample duration : {:10.3} ms",
            last.wrapping_sub(first) as f64 / 1e6
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_escapes_quotes_and_ends_in_a_space() {
        let args: Vec<String> = ["/usr/bin/perf", "record", "--", "sh", "-c", "echo 'hi'"]
            .map(String::from)
            .into();
        assert_eq!(
            cmdline_line(&args),
            "# cmdline : /usr/bin/perf record -- sh -c echo \\'hi\\' "
        );
    }

    #[test]
    fn sample_times_as_perf_prints_them() {
        // The brief's perf 6.1 output: 11735.029102 to 11735.851155, 822.053 ms.
        let [a, b, d] = sample_time_lines(11_735_029_102_345, 11_735_851_155_999);
        assert_eq!(a, "# time of first sample : 11735.029102");
        assert_eq!(b, "# time of last sample : 11735.851155");
        assert_eq!(d, "# sample duration :    822.054 ms");
        let [a, _, d] = sample_time_lines(0, 0);
        assert_eq!(a, "# time of first sample : 0.000000");
        assert_eq!(d, "# sample duration :      0.000 ms");
    }

    #[test]
    fn names_cover_perf_61s_bits() {
        assert_eq!(FEATURE_NAMES[f::BPF_PROG_INFO as usize], "BPF_PROG_INFO");
        assert_eq!(FEATURE_NAMES[f::PMU_CAPS as usize], "PMU_CAPS");
        assert_eq!(FEATURE_NAMES[f::CLOCKID as usize], "CLOCKID");
    }
}
