//! Open arbitrary bytes as perf.data, touch every feature, and iterate all
//! records in both orders and raw, in file order. Beyond "no panic", it checks that the iterator
//! ends: an error must not repeat forever at the same place.
#![no_main]
use libfuzzer_sys::fuzz_target;
use perfdata::{PerfFile, Record};

fn touch(r: &Record<'_>) -> u64 {
    match r {
        Record::Sample(s) => s.ip ^ s.callchain().fold(0, |a, x| a ^ x),
        Record::Ksymbol(k) => k.addr ^ k.name.len() as u64,
        Record::Mmap(m) => m.addr ^ m.filename.len() as u64,
        Record::Mmap2(m) => m.addr ^ m.filename.len() as u64,
        Record::Comm(c) => c.comm.len() as u64,
        Record::BpfEvent(b) => b.id as u64,
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(file) = PerfFile::from_bytes(data.to_vec()) else {
        return;
    };
    let f = file.features();
    let mut acc = format!("{f:?}").len() as u64;
    for a in file.attrs() {
        acc ^= a.ids.len() as u64 ^ a.name.len() as u64;
        for &id in &a.ids {
            acc ^= file.attr_index(id).unwrap_or(0) as u64;
        }
    }
    for sorted in [true, false] {
        let it = if sorted {
            file.records()
        } else {
            file.records_in_file_order()
        };
        let Ok(mut it) = it else { continue };
        let mut last_err: Option<String> = None;
        let mut repeats = 0;
        loop {
            match it.next() {
                Ok(None) => break,
                Ok(Some(r)) => {
                    last_err = None;
                    repeats = 0;
                    assert!(r.raw.len() >= 8);
                    assert_eq!(r.raw.len(), r.header.size as usize);
                    acc ^= touch(&r.record) ^ r.offset;
                }
                Err(e) => {
                    let m = e.to_string();
                    if last_err.as_deref() == Some(&m) {
                        repeats += 1;
                        assert!(repeats < 3, "the iterator repeats an error forever: {m}");
                    } else {
                        repeats = 0;
                    }
                    last_err = Some(m);
                }
            }
        }
        acc ^= it.warnings.len() as u64;
    }
    // The raw walk ends too (one error at most), halves read alone give
    // the same records, and what frames also decodes or errs cleanly.
    let mut offsets = Vec::new();
    let mut errors = 0;
    for r in file.raw_records() {
        match r {
            Ok(r) => {
                assert_eq!(r.raw.len(), r.header.size as usize);
                offsets.push(r.offset);
                // The sample decoder without the enum agrees with parse.
                match file.parse(&r) {
                    Ok((_, rec, _)) => {
                        acc ^= touch(&rec);
                        if let Record::Sample(s) = rec {
                            assert_eq!(file.sample(&r).ok(), Some(s));
                        }
                    }
                    Err(_) => assert!(file.sample(&r).is_err()),
                }
            }
            Err(_) => errors += 1,
        }
    }
    assert!(errors <= 1, "the raw walk went on after an error");
    if let Some(&mid) = offsets.get(offsets.len() / 2) {
        let tail: Vec<u64> = file
            .raw_records_between(mid, u64::MAX)
            .filter_map(Result::ok)
            .map(|r| r.offset)
            .collect();
        assert_eq!(tail, offsets[offsets.len() / 2..]);
    }
    // A guessed record start is at or after the offset (on hostile data it
    // may be anywhere after: records that do not look like records are
    // skipped, which readers catch by reading up to the guess), and the
    // round-order checks of two parts joined answer as the whole's.
    let mut whole = file.raw_records();
    whole.by_ref().for_each(drop);
    if let Some(&last) = offsets.last() {
        let guess_from = (data.len() as u64 / 3).min(last);
        if let Some(at) = file.record_start_near(guess_from) {
            assert!(at >= guess_from, "guess {at} before {guess_from}");
        }
        let mid = offsets[offsets.len() / 2];
        let mut first = file.raw_records_between(0, mid);
        first.by_ref().for_each(drop);
        let mut second = file.raw_records_between(mid, u64::MAX);
        second.by_ref().for_each(drop);
        if errors == 0 {
            let mut joined = first.round_order().clone();
            joined.then(second.round_order());
            assert_eq!(joined.holds(), whole.time_order_holds());
        }
    }
    std::hint::black_box(acc);
});
