//! The few sections perfdata keeps undecoded that perf prints in full
//! without `-I`: PMU_MAPPINGS, GROUP_DESC, CLOCKID and CLOCK_DATA, read
//! from their raw bodies ([`perfdata::PerfFile::feature_body`]) in perf's
//! layout (process_pmu_mappings, process_group_desc, process_clockid,
//! process_clock_data). A body
//! that does not parse prints nothing: perf refuses such a file instead.

use super::local_time;

/// Little-endian reads over a section body; `None` past its end.
struct Body<'a>(&'a [u8]);

impl Body<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// perf's padded string: a u32 length, then NUL-padded bytes.
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// `# pmu mappings: software = 1, uprobe = 8, ...`, in the file's order.
pub(super) fn pmu_mappings(body: &[u8]) -> Option<String> {
    let mut b = Body(body);
    let n = b.u32()?;
    if n == 0 {
        return Some("# pmu mappings: not available".into());
    }
    let mut pairs = Vec::new();
    for _ in 0..n {
        let ty = b.u32()?;
        let name = b.string()?;
        pairs.push(format!("{name} = {ty}"));
    }
    Some(format!("# pmu mappings: {}", pairs.join(", ")))
}

/// `# group: NAME{leader,member,...}` per group of more than one event:
/// each group names its leader's index and its size, members follow the
/// leader (`names` are the events in file order). perf shows the
/// unnamed group's stand-in name `{anon_group}` as nothing.
pub(super) fn group_desc(body: &[u8], names: &[&str]) -> Option<Vec<String>> {
    let mut b = Body(body);
    let n = b.u32()?;
    let mut groups = std::collections::BTreeMap::new();
    for _ in 0..n {
        let name = b.string()?;
        let leader = b.u32()? as usize;
        let members = b.u32()? as usize;
        groups.insert(leader, (name, members));
    }
    let mut out = Vec::new();
    for (&leader, (name, members)) in groups.iter().filter(|(_, (_, m))| *m > 1) {
        let events = names.get(leader..leader.checked_add(*members)?)?;
        let name = if name == "{anon_group}" { "" } else { name };
        out.push(format!("# group: {name}{{{}}}", events.join(",")));
    }
    Some(out)
}

/// `# clockid frequency: N MHz`: perf prints the clock's resolution in ns
/// times 1000 under that name.
pub(super) fn clockid(body: &[u8]) -> Option<String> {
    let res_ns = Body(body).u64()?;
    Some(format!(
        "# clockid frequency: {} MHz",
        res_ns.wrapping_mul(1000)
    ))
}

/// perf's clockid_name: the first name its table gives the id.
fn clockid_name(id: u32) -> &'static str {
    match id {
        1 => "monotonic",
        4 => "monotonic_raw",
        0 => "realtime",
        7 => "boottime",
        11 => "tai",
        _ => "(not found)",
    }
}

/// `# clockid: NAME (ID)` and `# reference time: ...`: the wall-clock
/// and session-clock times sampled together at the start.
pub(super) fn clock_data(body: &[u8]) -> Option<[String; 2]> {
    let mut b = Body(body);
    // perf reads only version 1.
    if b.u32()? != 1 {
        return None;
    }
    let id = b.u32()?;
    let tod_ns = b.u64()?;
    let clk_ns = b.u64()?;
    let (tod_s, tod_us) = (tod_ns / 1_000_000_000, tod_ns % 1_000_000_000 / 1000);
    let when = i64::try_from(tod_s)
        .ok()
        .and_then(local_time::date_time)
        .map_or_else(|| "<error>".to_string(), |d| format!("{d}.{tod_us:06}"));
    let name = clockid_name(id);
    Some([
        format!("# clockid: {name} ({id})"),
        format!(
            "# reference time: {when} = {tod_s}.{tod_us:06} (TOD) = {}.{:09} ({name})",
            clk_ns / 1_000_000_000,
            clk_ns % 1_000_000_000
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let len = (s.len() + 1).div_ceil(64) * 64;
        let mut b = (len as u32).to_le_bytes().to_vec();
        b.extend_from_slice(s.as_bytes());
        b.resize(4 + len, 0);
        b
    }

    #[test]
    fn pmu_mappings_as_listed() {
        let mut b = 2u32.to_le_bytes().to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend(string("software"));
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend(string("uprobe"));
        assert_eq!(
            pmu_mappings(&b).unwrap(),
            "# pmu mappings: software = 1, uprobe = 8"
        );
        assert_eq!(
            pmu_mappings(&0u32.to_le_bytes()).unwrap(),
            "# pmu mappings: not available"
        );
        // Cut short: nothing rather than a guess.
        assert_eq!(pmu_mappings(&b[..b.len() - 1]), None);
    }

    #[test]
    fn groups_with_their_members() {
        let mut b = 2u32.to_le_bytes().to_vec();
        b.extend(string("{anon_group}"));
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend(string("g2"));
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        let names = ["cpu-clock", "task-clock", "dummy", "cs"];
        assert_eq!(
            group_desc(&b, &names).unwrap(),
            ["# group: {cpu-clock,task-clock}", "# group: g2{dummy,cs}"]
        );
        // A group past the last event is not made up.
        assert_eq!(group_desc(&b, &names[..3]), None);
    }

    #[test]
    fn clock_sections() {
        assert_eq!(
            clockid(&1u64.to_le_bytes()).unwrap(),
            "# clockid frequency: 1000 MHz"
        );
        let mut b = 1u32.to_le_bytes().to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1_796_166_298_769_067_123u64.to_le_bytes());
        b.extend_from_slice(&12_584_330_410_925u64.to_le_bytes());
        let [a, r] = clock_data(&b).unwrap();
        assert_eq!(a, "# clockid: monotonic (1)");
        let date = local_time::date_time(1_796_166_298).unwrap();
        assert_eq!(
            r,
            format!("# reference time: {date}.769067 = 1796166298.769067 (TOD) = 12584.330410925 (monotonic)")
        );
        let mut v2 = b.clone();
        v2[0] = 2;
        assert_eq!(clock_data(&v2), None);
    }
}
