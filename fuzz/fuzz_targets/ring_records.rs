//! Decoding a perf ring's contents, as `bpfprof record` does: the pending
//! bytes (in two parts when they wrap) split into records, and each record
//! decoded with the attrs the recorder opens. The split must hand out
//! exactly the bytes it consumed, in order, each record as long as its
//! header says; decoding a record must not panic, however it lies.
#![no_main]
use libfuzzer_sys::fuzz_target;
use perfdata::{flags, parse_record, sample_type as st, EventAttr};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let cut = (cut as usize * rest.len() / 255).min(rest.len());
    let (a, b) = rest.split_at(cut);
    let attr = EventAttr {
        sample_type: st::IP
            | st::TID
            | st::TIME
            | st::CPU
            | st::PERIOD
            | st::IDENTIFIER
            | st::CALLCHAIN,
        flags: flags::SAMPLE_ID_ALL,
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut scratch = Vec::new();
    let d = bpfprof::capture::ring::decode(a, b, &mut scratch, |r| {
        let size = u16::from_le_bytes([r[6], r[7]]) as usize;
        assert_eq!(r.len(), size);
        assert!(size >= 8);
        seen.extend_from_slice(r);
        let _ = parse_record(r, &attr, 0);
        true
    });
    assert_eq!(d.bytes, if d.garbage { rest.len() } else { seen.len() });
    assert_eq!(&seen[..], &rest[..seen.len()]);
});
