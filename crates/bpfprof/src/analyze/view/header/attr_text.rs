//! The `# event :` line of perf's header: `print_event_desc` with
//! `perf_event_attr__fprintf` (tools/perf/util/perf_event_attr_fprintf.c,
//! perf 6.1). Fields come in perf's order, each only when non-zero, with
//! perf's names; bit sets are joined with `|` in perf's table order, which
//! is not bit order for sample_type.

use std::fmt::Write;

use perfdata::{AttrEntry, EventAttr};

/// `PERF_SAMPLE_*` names in the order of perf's `__p_sample_type` table.
/// TRANSACTION (bit 17) is not in perf's table, so it is never printed.
const SAMPLE_TYPE: &[(u32, &str)] = &[
    (0, "IP"),
    (1, "TID"),
    (2, "TIME"),
    (3, "ADDR"),
    (4, "READ"),
    (5, "CALLCHAIN"),
    (6, "ID"),
    (7, "CPU"),
    (8, "PERIOD"),
    (9, "STREAM_ID"),
    (10, "RAW"),
    (11, "BRANCH_STACK"),
    (12, "REGS_USER"),
    (13, "STACK_USER"),
    (16, "IDENTIFIER"),
    (18, "REGS_INTR"),
    (15, "DATA_SRC"),
    (14, "WEIGHT"),
    (19, "PHYS_ADDR"),
    (20, "AUX"),
    (21, "CGROUP"),
    (22, "DATA_PAGE_SIZE"),
    (23, "CODE_PAGE_SIZE"),
    (24, "WEIGHT_STRUCT"),
];

/// `PERF_SAMPLE_BRANCH_*` names, in bit order as perf lists them.
const BRANCH_SAMPLE_TYPE: &[&str] = &[
    "USER",
    "KERNEL",
    "HV",
    "ANY",
    "ANY_CALL",
    "ANY_RETURN",
    "IND_CALL",
    "ABORT_TX",
    "IN_TX",
    "NO_TX",
    "COND",
    "CALL_STACK",
    "IND_JUMP",
    "CALL",
    "NO_FLAGS",
    "NO_CYCLES",
    "TYPE_SAVE",
    "HW_INDEX",
    "PRIV_SAVE",
];

/// `PERF_FORMAT_*` names, in bit order.
const READ_FORMAT: &[&str] = &[
    "TOTAL_TIME_ENABLED",
    "TOTAL_TIME_RUNNING",
    "ID",
    "GROUP",
    "LOST",
];

/// The bit fields of the flags word (offset 40), as (name, first bit,
/// width), in perf's order.
const FLAGS: &[(&str, u32, u32)] = &[
    ("disabled", 0, 1),
    ("inherit", 1, 1),
    ("pinned", 2, 1),
    ("exclusive", 3, 1),
    ("exclude_user", 4, 1),
    ("exclude_kernel", 5, 1),
    ("exclude_hv", 6, 1),
    ("exclude_idle", 7, 1),
    ("mmap", 8, 1),
    ("comm", 9, 1),
    ("freq", 10, 1),
    ("inherit_stat", 11, 1),
    ("enable_on_exec", 12, 1),
    ("task", 13, 1),
    ("watermark", 14, 1),
    ("precise_ip", 15, 2),
    ("mmap_data", 17, 1),
    ("sample_id_all", 18, 1),
    ("exclude_host", 19, 1),
    ("exclude_guest", 20, 1),
    ("exclude_callchain_kernel", 21, 1),
    ("exclude_callchain_user", 22, 1),
    ("mmap2", 23, 1),
    ("comm_exec", 24, 1),
    ("use_clockid", 25, 1),
    ("context_switch", 26, 1),
    ("write_backward", 27, 1),
    ("namespaces", 28, 1),
    ("ksymbol", 29, 1),
    ("bpf_event", 30, 1),
    ("aux_output", 31, 1),
    ("cgroup", 32, 1),
    ("text_poke", 33, 1),
    ("build_id", 34, 1),
    ("inherit_thread", 35, 1),
    ("remove_on_exec", 36, 1),
    ("sigtrap", 37, 1),
];

/// Names of the set bits of `value`, `|`-joined, in the table's order.
fn bit_names<'a>(value: u64, names: impl Iterator<Item = (u32, &'a str)>) -> String {
    names
        .filter(|&(bit, _)| value & (1u64 << bit) != 0)
        .map(|(_, n)| n)
        .collect::<Vec<_>>()
        .join("|")
}

pub(super) fn sample_type(v: u64) -> String {
    bit_names(v, SAMPLE_TYPE.iter().copied())
}

pub(super) fn read_format(v: u64) -> String {
    bit_names(v, (0..).zip(READ_FORMAT.iter().copied()))
}

fn branch_sample_type(v: u64) -> String {
    bit_names(v, (0..).zip(BRANCH_SAMPLE_TYPE.iter().copied()))
}

/// How perf prints a field: p_unsigned, p_hex, p_signed or a bit set.
type Show = fn(u64) -> String;

fn dec(v: u64) -> String {
    v.to_string()
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// `clockid` is perf's one signed field; it travels here as the i32's bits.
fn signed(v: u64) -> String {
    (v as u32 as i32).to_string()
}

/// The `, name = value` pairs perf prints for an attr.
pub(super) fn attr_fields(a: &EventAttr) -> Vec<(&'static str, String)> {
    let head: [(&'static str, u64, Show); 6] = [
        ("type", a.type_.into(), dec),
        ("size", a.size.into(), dec),
        ("config", a.config, hex),
        ("{ sample_period, sample_freq }", a.sample_period, dec),
        ("sample_type", a.sample_type, sample_type),
        ("read_format", a.read_format, read_format),
    ];
    let flags = FLAGS.iter().map(|&(name, bit, width)| {
        let v = (a.flags >> bit) & ((1u64 << width) - 1);
        (name, v, dec as Show)
    });
    let tail: [(&'static str, u64, Show); 13] = [
        ("{ wakeup_events, wakeup_watermark }", a.wakeup.into(), dec),
        ("bp_type", a.bp_type.into(), dec),
        ("{ bp_addr, config1 }", a.config1, hex),
        ("{ bp_len, config2 }", a.config2, hex),
        (
            "branch_sample_type",
            a.branch_sample_type,
            branch_sample_type,
        ),
        ("sample_regs_user", a.sample_regs_user, hex),
        ("sample_stack_user", a.sample_stack_user.into(), dec),
        ("clockid", u64::from(a.clockid as u32), signed),
        ("sample_regs_intr", a.sample_regs_intr, hex),
        ("aux_watermark", a.aux_watermark.into(), dec),
        ("sample_max_stack", a.sample_max_stack.into(), dec),
        ("aux_sample_size", a.aux_sample_size.into(), dec),
        ("sig_data", a.sig_data, dec),
    ];
    head.into_iter()
        .chain(flags)
        .chain(tail)
        .filter(|&(_, v, _)| v != 0)
        .map(|(name, v, show)| (name, show(v)))
        .collect()
}

/// `# event : name = NAME, , id = { 1, 2 }, type = 1, ...`: perf writes
/// "name = %s, " and then ", id = {" (hence the doubled comma).
pub(super) fn event_line(e: &AttrEntry) -> String {
    let mut s = format!("# event : name = {}, ", e.name);
    if !e.ids.is_empty() {
        s.push_str(", id = {");
        let ids: Vec<String> = e.ids.iter().map(|id| format!(" {id}")).collect();
        s.push_str(&ids.join(","));
        s.push_str(" }");
    }
    for (name, v) in attr_fields(&e.attr) {
        let _ = write!(s, ", {name} = {v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfdata::{flags, read_format as rf, sample_type as st};

    /// The attr of `perf record -g` (perf 6.1 on cpu-clock), as its
    /// `--header-only` printed it on this machine:
    /// `..., { sample_period, sample_freq } = 4000, sample_type =
    /// IP|TID|TIME|CALLCHAIN|PERIOD, read_format = ID|LOST, disabled = 1,
    /// ..., precise_ip = 3, ...`.
    #[test]
    fn perf_record_g_attr_as_perf_prints_it() {
        let attr = EventAttr {
            type_: 1,
            size: 128,
            sample_period: 4000,
            sample_type: st::IP | st::TID | st::TIME | st::CALLCHAIN | st::PERIOD,
            read_format: rf::ID | rf::LOST,
            flags: flags::DISABLED
                | flags::INHERIT
                | flags::MMAP
                | flags::COMM
                | flags::FREQ
                | flags::ENABLE_ON_EXEC
                | flags::TASK
                | (3 << 15)
                | flags::SAMPLE_ID_ALL
                | flags::MMAP2
                | flags::COMM_EXEC
                | flags::KSYMBOL
                | flags::BPF_EVENT,
            ..Default::default()
        };
        let e = AttrEntry {
            attr,
            ids: vec![9046, 9047],
            name: "cpu-clock:ppp".into(),
        };
        assert_eq!(
            event_line(&e),
            "# event : name = cpu-clock:ppp, , id = { 9046, 9047 }, type = 1, size = 128, \
             { sample_period, sample_freq } = 4000, sample_type = IP|TID|TIME|CALLCHAIN|PERIOD, \
             read_format = ID|LOST, disabled = 1, inherit = 1, mmap = 1, comm = 1, freq = 1, \
             enable_on_exec = 1, task = 1, precise_ip = 3, sample_id_all = 1, mmap2 = 1, \
             comm_exec = 1, ksymbol = 1, bpf_event = 1"
        );
    }

    #[test]
    fn sample_type_follows_perfs_table_not_bit_order() {
        // perf lists IDENTIFIER (bit 16) before DATA_SRC (15) and WEIGHT (14).
        let v = st::WEIGHT | st::DATA_SRC | st::IDENTIFIER | st::IP;
        assert_eq!(sample_type(v), "IP|IDENTIFIER|DATA_SRC|WEIGHT");
        // TRANSACTION is not in perf's table.
        assert_eq!(sample_type(1 << 17), "");
    }

    #[test]
    fn hex_signed_and_unnamed_fields() {
        let attr = EventAttr {
            type_: 2,
            config: 0x13c,
            config1: 0x10,
            clockid: -1,
            sample_max_stack: 127,
            flags: flags::USE_CLOCKID | flags::EXCLUDE_CALLCHAIN_USER,
            ..Default::default()
        };
        let e = AttrEntry {
            attr,
            ids: vec![],
            name: "sched:sched_switch".into(),
        };
        assert_eq!(
            event_line(&e),
            "# event : name = sched:sched_switch, , type = 2, config = 0x13c, \
             exclude_callchain_user = 1, use_clockid = 1, { bp_addr, config1 } = 0x10, \
             clockid = -1, sample_max_stack = 127"
        );
    }

    #[test]
    fn read_format_and_branch_names() {
        assert_eq!(
            read_format(rf::TOTAL_TIME_ENABLED | rf::GROUP),
            "TOTAL_TIME_ENABLED|GROUP"
        );
        assert_eq!(
            branch_sample_type(1 | 2 | (1 << 11)),
            "USER|KERNEL|CALL_STACK"
        );
    }
}
