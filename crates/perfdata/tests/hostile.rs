//! Bad input: truncations, bit flips, lying headers and counts. The reader
//! must never panic, never loop, never allocate what a hostile length asks
//! for, and explain every error with the file, an offset and what it
//! expected. Needs no perf: the fixture is made with the writer.
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use common::*;
use perfdata::{Error, PerfFile, Record};

// ------------------------------------------------- allocation watch

/// Tracks the largest single allocation made by the current thread while
/// a watch is active, so a test can show that no hostile length became
/// an allocation.
struct Watch;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator, which
// upholds GlobalAlloc's contract; `note` only records a size and does not
// allocate (thread-local Cells, `try_with`).
unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: the caller upholds alloc's contract (a non-zero size)
        // for this layout, passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from System through this allocator, with `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: as for alloc.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n);
        // SAFETY: `p` came from System through this allocator, with `l`;
        // the caller guarantees `n` is valid for `l`'s alignment.
        unsafe { System.realloc(p, l, n) }
    }
}

fn note(n: usize) {
    let _ = WATCHING.try_with(|w| {
        if w.get() {
            let _ = LARGEST.try_with(|m| m.set(m.get().max(n)));
        }
    });
}

#[global_allocator]
static A: Watch = Watch;

/// Run `f` and return the largest single allocation it made.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|m| m.set(0));
    WATCHING.with(|w| w.set(true));
    f();
    WATCHING.with(|w| w.set(false));
    LARGEST.with(|m| m.get())
}

// ------------------------------------------------- checks

/// An error must name the file (when opened from a path), an offset and
/// what was expected; or be one of the whole-file verdicts.
fn check_error(e: &Error, path: Option<&Path>, ctx: &str) {
    let s = e.to_string();
    if let Some(p) = path {
        assert!(
            s.contains(&p.display().to_string()),
            "{ctx}: error does not name the file: {s}"
        );
    }
    match e {
        Error::Parse { offset, what, .. } => {
            assert!(
                s.contains(&format!("offset {offset:#x}")),
                "{ctx}: no offset in: {s}"
            );
            assert!(what.len() > 8, "{ctx}: says too little: {s}");
        }
        Error::NotPerfData { .. } => assert!(s.contains("PERFILE2"), "{ctx}: {s}"),
        Error::Unsupported { what, .. } => assert!(!what.is_empty(), "{ctx}: {s}"),
        Error::Io { .. } => panic!("{ctx}: an I/O error reading a regular file: {s}"),
    }
}

#[derive(Default, Debug)]
struct Outcome {
    opened: bool,
    records: [usize; 2],
    errors: usize,
    warnings: usize,
}

/// Open `bytes` (from memory, or from a file at `path` holding them), read
/// every feature, and read all records in both orders, going on after
/// errors as the API allows. Bounded: the loop must end.
fn exercise(bytes: &[u8], path: Option<&Path>, ctx: &str) -> Outcome {
    let mut o = Outcome::default();
    let file = match path {
        Some(p) => {
            std::fs::write(p, bytes).unwrap();
            PerfFile::open(p)
        }
        None => PerfFile::from_bytes(bytes.to_vec()),
    };
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            check_error(&e, path, ctx);
            o.errors += 1;
            return o;
        }
    };
    o.opened = true;
    for w in &file.features().warnings {
        assert!(
            w.contains("offset 0x"),
            "{ctx}: feature warning without offset: {w}"
        );
        o.warnings += 1;
    }
    let _ = format!("{:?}", file.features());
    // Every record is at least 8 bytes of the file; errors end framing.
    let bound = bytes.len() * 4 + 64;
    for (k, sorted) in [true, false].into_iter().enumerate() {
        let mut it = match if sorted {
            file.records()
        } else {
            file.records_in_file_order()
        } {
            Ok(it) => it,
            Err(e) => {
                check_error(&e, path, ctx);
                o.errors += 1;
                continue;
            }
        };
        let mut steps = 0;
        let mut last_err: Option<String> = None;
        loop {
            steps += 1;
            assert!(steps < bound, "{ctx}: the record iterator does not end");
            match it.next() {
                Ok(None) => break,
                Ok(Some(r)) => {
                    assert_eq!(r.raw.len(), r.header.size as usize, "{ctx}");
                    if let Record::Sample(s) = r.record {
                        let _ = s.callchain().count();
                    }
                    o.records[k] += 1;
                    last_err = None;
                }
                Err(e) => {
                    check_error(&e, path, ctx);
                    let s = e.to_string();
                    assert_ne!(
                        last_err.as_deref(),
                        Some(s.as_str()),
                        "{ctx}: the same error twice in a row: the iterator does not advance"
                    );
                    last_err = Some(s);
                    o.errors += 1;
                }
            }
        }
        o.warnings += it.warnings.len();
    }
    o
}

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Data section (offset, size) from the header (reference §5: @40, @48).
fn data_section(b: &[u8]) -> (usize, usize) {
    (le64(b, 40) as usize, le64(b, 48) as usize)
}

/// (offset, size) of feature section `bit`, found the way perf does: the
/// index follows the data, one {offset,size} per set bit, ascending.
fn feature_section(b: &[u8], bit: u32) -> (usize, usize) {
    let (d, n) = data_section(b);
    let mut idx = d + n;
    for f in 0..256u32 {
        if le64(b, 72 + 8 * (f as usize / 64)) & (1 << (f % 64)) == 0 {
            continue;
        }
        if f == bit {
            return (le64(b, idx) as usize, le64(b, idx + 8) as usize);
        }
        idx += 16;
    }
    panic!("feature {bit} not set");
}

/// Offsets of the records of the data section, walked by their sizes.
fn record_offsets(b: &[u8]) -> Vec<usize> {
    let (mut off, n) = data_section(b);
    let end = off + n;
    let mut v = Vec::new();
    while off < end {
        v.push(off);
        off += u16::from_le_bytes([b[off + 6], b[off + 7]]) as usize;
    }
    v
}

// ------------------------------------------------- the fixture itself

#[test]
fn fixture_has_the_layout_of_the_reference() {
    let b = fixture_bytes();
    assert_eq!(&b[..8], b"PERFILE2");
    assert_eq!(le64(&b, 8), 104);
    // attr.size 128 + the ids section pointer.
    assert_eq!(le64(&b, 16), 144);
    // header, 4 ids, 2 attrs.
    let (d, _) = data_section(&b);
    assert_eq!(d, 104 + 4 * 8 + 2 * 144);
    let offs = record_offsets(&b);
    assert_eq!(offs.len(), FIXTURE_RECORDS);
    let ty = |i: usize| le32(&b, offs[i]);
    let size = |i: usize| u16::from_le_bytes([b[offs[i] + 6], b[offs[i] + 7]]);
    // MMAP [kernel.kallsyms]_text: 96 bytes with the 32-byte trailer (§2).
    assert_eq!((ty(0), size(0)), (1, 96));
    assert_eq!((ty(3), ty(4), ty(5), ty(6)), (17, 17, 18, 68));
    // KSYMBOL ..._work: 24 + 32 (name) + 32 (trailer) = 0x58; BPF_EVENT 0x38.
    assert_eq!((size(4), size(5), size(6)), (0x58, 0x38, 8));

    let f = PerfFile::from_bytes(b.clone()).unwrap();
    assert!(
        f.features().warnings.is_empty(),
        "{:?}",
        f.features().warnings
    );
    assert_eq!(f.features().hostname.as_deref(), Some("fixture-host"));
    assert_eq!(f.features().bpf_prog_info.as_ref().unwrap()[0].id, 128);
    let mut times = Vec::new();
    let mut it = f.records().unwrap();
    while let Some(r) = it.next().unwrap() {
        if let Record::Sample(s) = r.record {
            times.push(s.time);
        }
    }
    assert_eq!(times, [1000, 2000, 3000]);
    let o = exercise(&b, None, "fixture");
    // FINISHED_ROUND is consumed by the time ordering.
    assert_eq!(o.records, [FIXTURE_RECORDS - 2, FIXTURE_RECORDS]);
    assert_eq!((o.errors, o.warnings), (0, 0));
}

// ------------------------------------------------- truncation

#[test]
fn truncated_at_every_offset() {
    let b = fixture_bytes();
    let dir = TempDir::new("trunc");
    let p = dir.path("cut.perf");
    for cut in 0..b.len() {
        let ctx = format!("cut at {cut}");
        exercise(&b[..cut], None, &ctx);
        exercise(&b[..cut], Some(&p), &ctx);
    }
}

#[test]
fn truncation_inside_the_data_section_is_reported() {
    // A header that promises more data than the file holds is damage,
    // whether the cut falls inside a record or between two.
    let b = fixture_bytes();
    let (d, n) = data_section(&b);
    for cut in d..d + n {
        let o = exercise(&b[..cut], None, &format!("cut at {cut}"));
        assert!(
            o.errors > 0 || o.warnings > 0,
            "cut at {cut} (data ends at {}) reads as a complete file: {o:?}",
            d + n
        );
    }
}

// ------------------------------------------------- bit flips

fn flip_many(b: &[u8], seed: u64, rounds: usize, tag: &str) {
    let mut rng = XorShift(seed);
    let dir = TempDir::new(tag);
    let p = dir.path("flip.perf");
    for i in 0..rounds {
        let mut m = b.to_vec();
        let flips = 1 + rng.below(4);
        for _ in 0..flips {
            let off = rng.below(m.len());
            match rng.below(4) {
                0 => m[off] = 0xff,
                1 => m[off] = 0,
                _ => m[off] ^= 1 << rng.below(8),
            }
        }
        let ctx = format!("{tag} round {i}");
        // Every tenth through a path, to check that errors name it.
        if i % 10 == 0 {
            exercise(&m, Some(&p), &ctx);
        } else {
            exercise(&m, None, &ctx);
        }
    }
}

#[test]
fn bit_flips_at_many_offsets() {
    flip_many(&fixture_bytes(), 0x5eed_0001, 6_000, "flip");
}

#[test]
fn bit_flips_in_a_compressed_file() {
    flip_many(&compressed_fixture(|_| {}), 0x5eed_0002, 3_000, "flipz");
}

// ------------------------------------------------- lying headers

fn hostile(b: &[u8], tag: &str) -> Outcome {
    let dir = TempDir::new(tag);
    let o = exercise(b, None, tag);
    exercise(b, Some(&dir.path("h.perf")), tag);
    let bound = 1 << 21;
    let big = largest_allocation(|| {
        exercise(b, None, tag);
    });
    assert!(
        big <= bound,
        "{tag}: an allocation of {big} bytes for a {}-byte file",
        b.len()
    );
    o
}

#[test]
fn not_perf_data() {
    for (tag, b) in [
        ("empty", Vec::new()),
        (
            "text",
            b"hello, this is not a perf.data file at all\n".repeat(4),
        ),
        ("elf", {
            let mut v = b"\x7fELF\x02\x01\x01\0".to_vec();
            v.resize(200, 0);
            v
        }),
        ("perfile1", {
            let mut v = fixture_bytes();
            v[..8].copy_from_slice(b"PERFFILE");
            v
        }),
    ] {
        let o = hostile(&b, tag);
        assert!(!o.opened, "{tag} opened");
        let e = PerfFile::from_bytes(b).err().unwrap();
        assert!(matches!(e, Error::NotPerfData { .. }), "{tag}: {e}");
    }
}

#[test]
fn big_endian_and_pipe_mode_are_refused_by_name() {
    let mut be = fixture_bytes();
    be[..8].copy_from_slice(b"2ELIFREP");
    // A big-endian header stores its u64s swapped.
    for f in (8..104).step_by(8) {
        let v = le64(&be, f);
        put64(&mut be, f, v.swap_bytes());
    }
    let mut pipe = b"PERFILE2".to_vec();
    pipe.extend_from_slice(&16u64.to_le_bytes());
    for (tag, b, word) in [("big-endian", be, "big-endian"), ("pipe", pipe, "pipe")] {
        let o = hostile(&b, tag);
        assert!(!o.opened);
        let e = PerfFile::from_bytes(b).err().unwrap().to_string();
        assert!(e.contains(word), "{tag}: {e}");
    }
}

#[test]
fn header_sections_past_the_end() {
    let b = fixture_bytes();
    let len = b.len() as u64;
    // attrs (@24,@32), data (@40,@48): offset past the end, size past the end,
    // and offset+size overflowing.
    for (field, v) in [
        (24, len + 8),
        (32, len),
        (32, u64::MAX),
        (24, u64::MAX - 7),
        (40, len + 64),
        (48, len * 2),
        (48, u64::MAX),
        (40, u64::MAX - 7),
    ] {
        let mut m = b.clone();
        put64(&mut m, field, v);
        let tag = format!("header field @{field} = {v:#x}");
        let o = hostile(&m, &tag);
        assert!(o.errors + o.warnings > 0, "{tag}: no complaint: {o:?}");
    }
}

#[test]
fn attr_size_huge_or_tiny() {
    for v in [0u64, 8, 79, 4097, 0xffff_ffff, u64::MAX] {
        let mut m = fixture_bytes();
        put64(&mut m, 16, v);
        let tag = format!("attr_size {v:#x}");
        let o = hostile(&m, &tag);
        assert!(!o.opened, "{tag}: opened");
    }
    // An attr whose own size field lies (huge, or smaller than the ABI).
    let b = fixture_bytes();
    let attrs = le64(&b, 24) as usize;
    for v in [0u32, 8, 0xffff_ffff] {
        let mut m = b.clone();
        put32(&mut m, attrs + 4, v);
        hostile(&m, &format!("attr.size {v:#x}"));
    }
    // Ids sections pointing past the end, or huge.
    for v in [u64::MAX, 1 << 40] {
        let mut m = b.clone();
        put64(&mut m, attrs + 128 + 8, v);
        let o = hostile(&m, &format!("ids size {v:#x}"));
        assert!(!o.opened);
    }
}

#[test]
fn every_attr_pointing_at_the_same_big_ids_section() {
    // A file of N attrs whose ids sections all cover the whole file must not
    // cost N times the file in memory.
    let b = fixture_bytes();
    let mut m = b[..104].to_vec();
    let attr = b[le64(&b, 24) as usize..][..144].to_vec();
    let n = 2000;
    put64(&mut m, 24, 104);
    put64(&mut m, 32, n as u64 * 144);
    let total = 104 + n * 144;
    for _ in 0..n {
        let mut a = attr.clone();
        put64(&mut a, 128, 0);
        put64(&mut a, 136, total as u64 / 8 * 8);
        m.extend_from_slice(&a);
    }
    put64(&mut m, 40, total as u64);
    put64(&mut m, 48, 0);
    m[72..104].fill(0);
    let mut result = None;
    let largest = largest_allocation(|| {
        result = Some(
            PerfFile::from_bytes(m.clone())
                .map(|f| f.attrs().iter().map(|a| a.ids.len()).sum::<usize>()),
        );
    });
    // Either way is sound: refused for ids sections adding up past the
    // file, or read holding no more ids than the file has bytes for.
    match result.expect("ran") {
        Ok(ids) => assert!(
            ids * 8 <= 4 * m.len(),
            "{n} attrs share one ids section: {ids} ids held for a {}-byte file",
            m.len()
        ),
        Err(e) => assert!(
            e.to_string().contains("add up to"),
            "refused, but not for the shared ids: {e}"
        ),
    }
    assert!(
        largest <= 4 * m.len(),
        "{n} attrs sharing one ids section: a {largest}-byte allocation for a {}-byte file",
        m.len()
    );
}

#[test]
fn feature_counts_of_0xffffffff() {
    let b = fixture_bytes();
    for (bit, name) in [
        (11, "CMDLINE"),
        (12, "EVENT_DESC"),
        (25, "BPF_PROG_INFO"),
        (26, "BPF_BTF"),
    ] {
        let (off, _) = feature_section(&b, bit);
        let mut m = b.clone();
        put32(&mut m, off, 0xffff_ffff);
        let o = hostile(&m, name);
        assert!(o.opened, "{name}: one bad feature must not stop reading");
        let f = PerfFile::from_bytes(m).unwrap();
        let w = f.features().warnings.join("\n");
        assert!(w.contains(name), "{name}: warnings {w:?}");
        // The other sections still decode.
        assert_eq!(f.features().hostname.as_deref(), Some("fixture-host"));
    }
    // Strings with huge lengths.
    let (off, _) = feature_section(&b, 3);
    let mut m = b.clone();
    put32(&mut m, off, 0xffff_fff0);
    hostile(&m, "HOSTNAME length");
    // A feature index entry claiming a huge size.
    let (d, n) = data_section(&b);
    for v in [u64::MAX, 1 << 31, b.len() as u64] {
        let mut m = b.clone();
        put64(&mut m, d + n + 8, v);
        let o = hostile(&m, &format!("feature size {v:#x}"));
        assert!(o.opened && o.warnings > 0, "{o:?}");
    }
}

#[test]
fn bpf_prog_info_array_lengths_huge() {
    let b = fixture_bytes();
    let (sec, _) = feature_section(&b, 25);
    // perf_bpil: u32 info_len @0, u32 data_len @4, u64 arrays @8, info @16.
    let entry = sec + 4;
    let info = entry + 16;
    // Counts in bpf_prog_info (reference §4): jited_prog_len @16,
    // nr_jited_ksyms @104, nr_jited_func_lens @108, func_info_rec_size @132,
    // nr_func_info @144, nr_line_info @148, nr_jited_line_info @168,
    // line_info_rec_size @172, nr_prog_tags @180; pointers too.
    let mut cases: Vec<(usize, u64, usize)> = Vec::new();
    for f in [16, 104, 108, 132, 144, 148, 168, 172, 176, 180] {
        for v in [0xffff_ffffu64, 0x8000_0000, 0] {
            cases.push((info + f, v, 4));
        }
    }
    for f in [24, 112, 120, 136, 152, 160, 184] {
        for v in [u64::MAX, u64::MAX - 7, 1 << 40] {
            cases.push((info + f, v, 8));
        }
    }
    cases.push((entry, 0xffff_ffff, 4)); // info_len
    cases.push((entry + 4, 0xffff_ffff, 4)); // data_len
    cases.push((entry + 8, u64::MAX, 8)); // arrays
    for (at, v, w) in cases {
        let mut m = b.clone();
        if w == 4 {
            put32(&mut m, at, v as u32);
        } else {
            put64(&mut m, at, v);
        }
        let tag = format!("bpil @{} = {v:#x}", at - entry);
        let o = hostile(&m, &tag);
        assert!(o.opened, "{tag}");
        let one = m[entry..].to_vec();
        let big = largest_allocation(|| {
            let _ = perfdata::BpfProgInfo::from_bpil(&one);
        });
        assert!(big < 1 << 16, "{tag}: from_bpil allocated {big}");
    }
}

#[test]
fn record_sizes_0_and_7() {
    let b = fixture_bytes();
    let offs = record_offsets(&b);
    for (i, &off) in offs.iter().enumerate() {
        for size in [0u16, 7] {
            let mut m = b.clone();
            m[off + 6..off + 8].copy_from_slice(&size.to_le_bytes());
            let tag = format!("record {i} size {size}");
            let o = hostile(&m, &tag);
            assert!(o.errors > 0, "{tag}: {o:?}");
        }
    }
}

#[test]
fn a_framing_error_ends_the_iterator() {
    // Regression (fuzz): after "claims size 0" the iterator used to go on
    // reading from a desynchronized position, or repeat the error forever.
    let b = fixture_bytes();
    let offs = record_offsets(&b);
    let mut m = b.clone();
    m[offs[2] + 6..offs[2] + 8].copy_from_slice(&0u16.to_le_bytes());
    let f = PerfFile::from_bytes(m).unwrap();
    for sorted in [false, true] {
        let mut it = if sorted {
            f.records().unwrap()
        } else {
            f.records_in_file_order().unwrap()
        };
        let mut seen = 0;
        let e = loop {
            match it.next() {
                Ok(Some(_)) => seen += 1,
                Ok(None) => panic!("no error"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(e.contains(&format!("offset {:#x}", offs[2])), "{e}");
        // Records before the damage are delivered, nothing after it.
        let mut after = 0;
        loop {
            match it.next() {
                Ok(Some(_)) => after += 1,
                Ok(None) => break,
                Err(e) => panic!("error after a framing error: {e}"),
            }
        }
        assert_eq!(seen + after, 2, "sorted={sorted}");
    }
}

#[test]
fn callchain_nr_huge_fails_that_record_only() {
    let b = fixture_bytes();
    let offs = record_offsets(&b);
    // The first SAMPLE: IDENTIFIER, IP, TID, TIME, CPU, PERIOD, then nr.
    let s = offs[7];
    assert_eq!(le32(&b, s), 9);
    let nr_at = s + 8 + 6 * 8;
    assert_eq!(le64(&b, nr_at), 4);
    for v in [u64::MAX, 1 << 61, 5, 0x2000_0000_0000_0001] {
        let mut m = b.clone();
        put64(&mut m, nr_at, v);
        let tag = format!("callchain nr {v:#x}");
        let o = hostile(&m, &tag);
        assert!(o.errors > 0, "{tag}");
        // Only that record is lost.
        assert_eq!(
            o.records,
            [FIXTURE_RECORDS - 3, FIXTURE_RECORDS - 1],
            "{tag}"
        );
    }
}

// ------------------------------------------------- compressed files

/// The fixture with its data records zstd-compressed into one COMPRESSED
/// record (type 81: header, then the frame), after `edit` had its way with
/// the uncompressed stream.
fn compressed_fixture(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let b = fixture_bytes();
    let (d, n) = data_section(&b);
    let mut stream = b[d..d + n].to_vec();
    edit(&mut stream);
    let z = zstd::bulk::compress(&stream, 3).unwrap();
    let mut rec = 81u32.to_le_bytes().to_vec();
    rec.extend_from_slice(&0u16.to_le_bytes());
    rec.extend_from_slice(&((8 + z.len()) as u16).to_le_bytes());
    rec.extend_from_slice(&z);
    let mut w =
        perfdata::PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &fixture_attrs()).unwrap();
    w.write_raw(&rec).unwrap();
    w.finish(&fixture_features()).unwrap().into_inner()
}

#[test]
fn compressed_fixture_reads_like_the_plain_one() {
    let o = exercise(&compressed_fixture(|_| {}), None, "compressed");
    assert_eq!(o.records, [FIXTURE_RECORDS - 2, FIXTURE_RECORDS]);
    assert_eq!(o.errors, 0);
}

#[test]
fn size_0_inside_a_compressed_stream() {
    // Regression (fuzz crash-94bbee42): a record of size 0 in the
    // decompressed stream repeated "claims size 0" forever.
    let b = fixture_bytes();
    let (d, _) = data_section(&b);
    let offs: Vec<usize> = record_offsets(&b).iter().map(|o| o - d).collect();
    for size in [0u16, 7] {
        let m = compressed_fixture(|s| {
            s[offs[3] + 6..offs[3] + 8].copy_from_slice(&size.to_le_bytes())
        });
        let tag = format!("compressed size {size}");
        let o = hostile(&m, &tag);
        assert!(o.errors > 0, "{tag}");
        let dir = TempDir::new("z0");
        let p = dir.path("z0.perf");
        std::fs::write(&p, &m).unwrap();
        let f = PerfFile::open(&p).unwrap();
        let mut it = f.records_in_file_order().unwrap();
        let mut n = 0;
        let e = loop {
            match it.next() {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("{tag}: no error"),
                Err(e) => break e.to_string(),
            }
        };
        assert_eq!(n, 3, "{tag}");
        assert!(e.contains("decompressed"), "{tag}: {e}");
        assert!(matches!(it.next(), Ok(None)), "{tag}: the iterator goes on");
    }
}

#[test]
fn compressed_record_with_garbage_or_a_bomb() {
    let b = fixture_bytes();
    // Garbage instead of a zstd frame.
    let mut w =
        perfdata::PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &fixture_attrs()).unwrap();
    let mut rec = 81u32.to_le_bytes().to_vec();
    rec.extend_from_slice(&0u16.to_le_bytes());
    rec.extend_from_slice(&64u16.to_le_bytes());
    rec.extend_from_slice(&[0xab; 56]);
    w.write_raw(&rec).unwrap();
    let m = w.finish(&fixture_features()).unwrap().into_inner();
    let o = hostile(&m, "zstd garbage");
    assert!(o.errors > 0);
    // A frame that inflates to 256 MiB of zeros from a few KiB: memory must
    // stay bounded by what a record can hold, not by the frame.
    let zeros = vec![0u8; 1 << 28];
    let z = zstd::bulk::compress(&zeros, 19).unwrap();
    drop(zeros);
    assert!(z.len() < 60_000, "{}", z.len());
    let mut w =
        perfdata::PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &fixture_attrs()).unwrap();
    let mut rec = 81u32.to_le_bytes().to_vec();
    rec.extend_from_slice(&0u16.to_le_bytes());
    rec.extend_from_slice(&((8 + z.len()) as u16).to_le_bytes());
    rec.extend_from_slice(&z);
    w.write_raw(&rec).unwrap();
    let m = w.finish(&fixture_features()).unwrap().into_inner();
    let _ = b;
    let big = largest_allocation(|| {
        exercise(&m, None, "zstd bomb");
    });
    assert!(
        big <= 64 << 20,
        "a {}-byte file made a {big}-byte allocation",
        m.len()
    );
}

/// Write the fixture somewhere, for seeding the fuzzer:
/// `PERFDATA_FIXTURE_OUT=fuzz/seeds/read_perf_data/writer.perf cargo test -p perfdata --test hostile write_fixture -- --ignored`.
/// A tool, not a test: that our reader reads what our writer wrote proves
/// nothing (the fixture's layout is checked against the reference by
/// `fixture_has_the_layout_of_the_reference`).
#[test]
#[ignore = "writes a fuzz seed on demand"]
fn write_fixture() {
    let p = std::env::var_os("PERFDATA_FIXTURE_OUT")
        .expect("set PERFDATA_FIXTURE_OUT to the seed path");
    std::fs::write(p, fixture_bytes()).unwrap();
}
