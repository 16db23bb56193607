//! Events whose sample_id trailers differ in size, as in a per-task
//! `perf record -e cpu-clock -e sched:sched_switch` (the tracepoint records
//! its CPU, the task's cpu-clock does not): with IDENTIFIER on every event,
//! each record's trailer is read by the layout of the event its last word
//! names, as perf reads it. Without IDENTIFIER the file is refused, as
//! perf refuses it. Records are built byte by byte here; needs no perf.

use perfdata::{
    flags, record_type as rt, sample_type as st, AttrEntry, EventAttr, Features, PerfFile,
    PerfFileWriter, Record,
};

const TASK_ID: u64 = 21;
const TP_ID: u64 = 42;

fn attrs(identified: bool) -> Vec<AttrEntry> {
    let id = if identified { st::IDENTIFIER } else { st::ID };
    let task = EventAttr {
        type_: 1,
        sample_type: st::IP | st::TID | st::TIME | st::PERIOD | id,
        flags: flags::SAMPLE_ID_ALL,
        ..Default::default()
    };
    let tp = EventAttr {
        type_: 2,
        sample_type: st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | id,
        ..task
    };
    vec![
        AttrEntry {
            attr: task,
            ids: vec![TASK_ID],
            name: "cpu-clock".into(),
        },
        AttrEntry {
            attr: tp,
            ids: vec![TP_ID],
            name: "sched:sched_switch".into(),
        },
    ]
}

fn words(ws: &[u64]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A COMM record of `pid` at `time`, with the trailer of event `id`.
fn comm(pid: u32, time: u64, id: u64, cpu: Option<u32>) -> Vec<u8> {
    let mut body = words(&[u64::from(pid) | u64::from(pid) << 32]);
    body.extend_from_slice(b"worker\0\0");
    body.extend(words(&[u64::from(pid) | u64::from(pid) << 32, time]));
    if let Some(c) = cpu {
        body.extend(words(&[u64::from(c)]));
    }
    body.extend(words(&[id]));
    record(rt::COMM, &body)
}

fn record(ty: u32, body: &[u8]) -> Vec<u8> {
    let size = (8 + body.len()) as u64;
    let mut r = words(&[u64::from(ty) | size << 48]);
    r.extend_from_slice(body);
    r
}

fn file(identified: bool) -> Vec<u8> {
    let attrs = attrs(identified);
    let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &attrs).unwrap();
    w.write_raw(&comm(7, 100, TASK_ID, None)).unwrap();
    w.write_raw(&comm(8, 200, TP_ID, Some(1))).unwrap();
    // A sample of each: IDENTIFIER, IP, TID, TIME, [CPU], PERIOD.
    let pt = 7u64 | 7 << 32;
    w.write_raw(&record(
        rt::SAMPLE,
        &words(&[TASK_ID, 0x1000, pt, 300, 250_000]),
    ))
    .unwrap();
    w.write_raw(&record(rt::SAMPLE, &words(&[TP_ID, 0x2000, pt, 400, 1, 1])))
        .unwrap();
    w.finish(&Features::default()).unwrap().into_inner()
}

#[test]
fn each_trailer_is_read_by_its_own_events_layout() {
    let f = PerfFile::from_bytes(file(true)).expect("perf reads such files");
    let mut records = f.records().unwrap();
    let mut seen = Vec::new();
    while let Some(r) = records.next().unwrap() {
        match r.record {
            Record::Comm(c) => seen.push((c.pid, r.sample_id.time, r.sample_id.cpu)),
            Record::Sample(s) => seen.push((s.pid, s.time, s.cpu)),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        vec![(7, 100, 0), (8, 200, 1), (7, 300, 0), (7, 400, 1)],
        "pids, times and the tracepoint's CPU where each record put them"
    );
}

#[test]
fn without_identifier_the_layouts_must_agree() {
    let err = PerfFile::from_bytes(file(false)).err().expect("refused");
    assert!(
        err.to_string().contains("different sample_id layouts"),
        "{err}"
    );
}
