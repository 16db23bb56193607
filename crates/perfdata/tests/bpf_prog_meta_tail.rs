//! The owners/attachments/maps tail inside BPF_PROG_INFO entries: round
//! trips, hostile bytes, and files with and without it.

use perfdata::{
    array, flags, sample_type, AttrEntry, BpfAttach, BpfMapMeta, BpfOwner, BpfProgInfo,
    BpfProgMeta, EventAttr, Features, PerfFile, PerfFileWriter,
};

fn meta(id: u32) -> BpfProgMeta {
    BpfProgMeta {
        prog_id: id,
        owners: vec![
            BpfOwner {
                pid: 1,
                comm: "systemd".into(),
            },
            BpfOwner {
                pid: 4242,
                comm: "cilium-agent".into(),
            },
        ],
        attach: vec![
            BpfAttach {
                kind: "tracepoint".into(),
                target: "syscalls:sys_enter_getppid".into(),
                link_id: Some(7),
                cookie: Some(0xdead_beef),
                ..Default::default()
            },
            BpfAttach {
                kind: "kprobe".into(),
                target: "do_sys_openat2+0x4".into(),
                offset: Some(4),
                ..Default::default()
            },
            BpfAttach {
                kind: "cgroup".into(),
                target: "/sys/fs/cgroup/system.slice".into(),
                link_id: Some(9),
                attach_type: Some(0),
                ..Default::default()
            },
        ],
        maps: vec![BpfMapMeta {
            id: 33,
            name: "counts".into(),
            map_type: 1,
            key_size: 4,
            value_size: 8,
            max_entries: 1024,
            map_flags: 1,
        }],
        clock: None,
    }
}

/// A program as it reads back (counts follow the arrays).
fn info(id: u32) -> BpfProgInfo {
    let p = BpfProgInfo {
        prog_type: 5,
        id,
        tag: [id as u8; 8],
        name: "getppid".into(),
        arrays: (1 << array::JITED_INSNS)
            | (1 << array::JITED_KSYMS)
            | (1 << array::JITED_FUNC_LENS)
            | (1 << array::PROG_TAGS),
        jited_insns: (0..13).collect(),
        jited_ksyms: vec![0xffff_ffff_c000_0000 + id as u64 * 0x1000],
        jited_func_lens: vec![13],
        prog_tags: vec![[id as u8; 8]],
        ..Default::default()
    };
    let mut b = Vec::new();
    p.write_bpil(&mut b);
    BpfProgInfo::from_bpil(&b).unwrap()
}

#[test]
fn tail_round_trips() {
    let m = meta(12);
    let t = m.encode_tail();
    assert_eq!(t.len() % 8, 0);
    assert!(BpfProgMeta::is_tail(&t));
    assert_eq!(BpfProgMeta::decode_tail(&t, 0).unwrap(), m);
    // The start clocks are optional and last: with and without.
    let dated = BpfProgMeta {
        clock: Some((81_000_000_123, 1_764_600_000_000_000_456)),
        ..meta(13)
    };
    assert_eq!(
        BpfProgMeta::decode_tail(&dated.encode_tail(), 0).unwrap(),
        dated
    );
    let empty = BpfProgMeta {
        prog_id: 3,
        ..Default::default()
    };
    assert_eq!(
        BpfProgMeta::decode_tail(&empty.encode_tail(), 0).unwrap(),
        empty
    );
}

#[test]
fn every_truncation_is_an_error_with_an_offset() {
    let t = meta(12).encode_tail();
    // The body ends before the padding; any cut inside it must fail.
    let body_end = 16 + u32::from_le_bytes(t[12..16].try_into().unwrap()) as usize;
    for cut in 0..body_end {
        let e = BpfProgMeta::decode_tail(&t[..cut], 0x1000).unwrap_err();
        assert!(e.to_string().contains("offset 0x1"), "{cut}: {e}");
    }
    // A body_len that lies about the bytes left is caught too.
    for cut in 16..body_end {
        let mut b = t[..cut].to_vec();
        b[12..16].copy_from_slice(&((cut - 16) as u32).to_le_bytes());
        assert!(BpfProgMeta::decode_tail(&b, 0).is_err(), "{cut}");
    }
}

#[test]
fn huge_counts_and_lengths_are_refused_before_allocating() {
    let t = meta(12).encode_tail();
    // Offsets in the body: prog_id at 16, owner count at 20, first owner's
    // comm length at 28.
    for (off, what) in [(20, "owners"), (28, "comm")] {
        let mut b = t.clone();
        b[off..off + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = BpfProgMeta::decode_tail(&b, 0).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
    let mut b = t.clone();
    b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(BpfProgMeta::decode_tail(&b, 0).is_err());
    // The attachment and map counts, found by re-encoding without them.
    let mut m = meta(1);
    m.maps.clear();
    let short = m.encode_tail();
    let body_len = u32::from_le_bytes(short[12..16].try_into().unwrap()) as usize;
    let maps_count_at = 16 + body_len - 4;
    let mut b = short.clone();
    b[maps_count_at..maps_count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = BpfProgMeta::decode_tail(&b, 0).unwrap_err().to_string();
    assert!(e.contains("maps"), "{e}");
}

#[test]
fn newer_versions_and_wrong_magic_are_named() {
    let mut t = meta(1).encode_tail();
    t[8..12].copy_from_slice(&2u32.to_le_bytes());
    let e = BpfProgMeta::decode_tail(&t, 0).unwrap_err().to_string();
    assert!(e.contains("version 2") && e.contains("newer"), "{e}");
    t[0] = b'X';
    assert!(!BpfProgMeta::is_tail(&t));
    assert!(BpfProgMeta::decode_tail(&t, 0).is_err());
}

#[test]
fn long_strings_are_cut_on_a_char_boundary() {
    let mut m = meta(1);
    m.attach[0].target = "é".repeat(3000); // 6000 bytes
    let back = BpfProgMeta::decode_tail(&m.encode_tail(), 0).unwrap();
    assert!(back.attach[0].target.len() <= perfdata::bpf_meta_tail::MAX_STR);
    assert!(back.attach[0].target.chars().all(|c| c == 'é'));
}

/// Found while fuzzing (fuzz/fuzz_targets/bpf_meta_tail.rs): a comm of
/// 2000 bytes that are not UTF-8 read as 2000 U+FFFD, 6000 bytes, which the
/// writer cut to 4096, so the tail read back was not what had been read.
/// What is read must write back as itself.
#[test]
fn invalid_utf8_reads_as_text_that_writes_back_the_same() {
    let bytes = include_bytes!("fuzz_cases/meta_tail_invalid_utf8.tail");
    let m = BpfProgMeta::decode_tail(bytes, 0).unwrap();
    let comm = &m.owners[0].comm;
    assert!(
        comm.len() <= perfdata::bpf_meta_tail::MAX_STR,
        "{}",
        comm.len()
    );
    assert!(comm.chars().all(|c| c == char::REPLACEMENT_CHARACTER));
    let again = BpfProgMeta::decode_tail(&m.encode_tail(), 0).unwrap();
    assert_eq!(again, m);
}

#[test]
fn merge_unions_owners_attachments_and_maps() {
    let mut a = meta(1);
    let mut b = meta(1);
    b.owners[1].pid = 5;
    b.attach.truncate(1);
    b.maps[0].max_entries = 7;
    a.merge(&b);
    assert_eq!(
        a.owners.iter().map(|o| o.pid).collect::<Vec<_>>(),
        [1, 5, 4242]
    );
    assert_eq!(a.attach.len(), 3);
    assert_eq!(a.maps[0].max_entries, 7);
}

fn attrs() -> Vec<AttrEntry> {
    vec![AttrEntry {
        attr: EventAttr {
            sample_type: sample_type::IP | sample_type::TID | sample_type::TIME,
            flags: flags::SAMPLE_ID_ALL,
            ..Default::default()
        },
        ids: vec![1],
        name: "cpu-clock".into(),
    }]
}

fn file(features: &Features) -> Vec<u8> {
    let w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &attrs()).unwrap();
    w.finish(features).unwrap().into_inner()
}

#[test]
fn a_file_carries_meta_per_program_and_infos_stay_the_same() {
    let progs = vec![info(10), info(11), info(12)];
    let f = Features {
        bpf_prog_info: Some(progs.clone()),
        bpf_prog_meta: vec![meta(10), meta(12), meta(99)],
        ..Default::default()
    };
    let bytes = file(&f);
    // The fuzzer's seed (fuzz/seeds/read_perf_data/meta-tail.perf).
    if let Some(out) = std::env::var_os("PERFDATA_META_SEED_OUT") {
        std::fs::write(out, &bytes).unwrap();
    }
    let p = PerfFile::from_bytes(bytes).unwrap();
    let got = p.features();
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    assert_eq!(got.bpf_prog_info.as_ref().unwrap(), &progs);
    // 99 has no info entry, so it has nowhere to live.
    assert_eq!(got.bpf_prog_meta, vec![meta(10), meta(12)]);
}

#[test]
fn perf_style_entries_without_a_tail_read_as_before() {
    let f = Features {
        bpf_prog_info: Some(vec![info(10)]),
        ..Default::default()
    };
    let bytes = file(&f);
    let p = PerfFile::from_bytes(bytes).unwrap();
    assert!(p.features().bpf_prog_meta.is_empty());
    assert!(p.features().warnings.is_empty());
    // Unknown bytes after the arrays (not our magic) are another writer's.
    let mut entry = Vec::new();
    info(10).write_bpil_with_tail(&mut entry, b"SOMEONE!ELSE....");
    assert_eq!(BpfProgInfo::from_bpil(&entry).unwrap(), info(10));
}

#[test]
fn a_damaged_tail_is_a_warning_and_the_rest_reads() {
    let f = Features {
        bpf_prog_info: Some(vec![info(10), info(11)]),
        bpf_prog_meta: vec![meta(10), meta(11)],
        hostname: Some("box".into()),
        ..Default::default()
    };
    let mut bytes = file(&f);
    // Break prog 10's owner count: the first tail in the file.
    let at = bytes
        .windows(8)
        .position(|w| w == perfdata::bpf_meta_tail::MAGIC)
        .unwrap();
    bytes[at + 20..at + 24].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    let p = PerfFile::from_bytes(bytes).unwrap();
    let got = p.features();
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(got.warnings[0].contains("prog 10"), "{:?}", got.warnings);
    assert!(got.warnings[0].contains("offset"), "{:?}", got.warnings);
    assert_eq!(got.bpf_prog_info.as_ref().unwrap().len(), 2);
    assert_eq!(got.bpf_prog_meta, vec![meta(11)]);
    assert_eq!(got.hostname.as_deref(), Some("box"));
}

#[test]
fn a_tail_for_another_program_is_ignored_with_a_warning() {
    let mut entry = Vec::new();
    info(10).write_bpil_with_tail(&mut entry, &meta(11).encode_tail());
    let mut body = 1u32.to_le_bytes().to_vec();
    body.extend_from_slice(&entry);
    // Hand-build via the writer: same bytes as a feature body.
    let f = Features {
        bpf_prog_info: Some(vec![info(10)]),
        bpf_prog_meta: vec![BpfProgMeta {
            prog_id: 10,
            ..meta(11)
        }],
        ..Default::default()
    };
    let mut bytes = file(&f);
    let at = bytes
        .windows(8)
        .position(|w| w == perfdata::bpf_meta_tail::MAGIC)
        .unwrap();
    bytes[at + 16..at + 20].copy_from_slice(&11u32.to_le_bytes());
    let p = PerfFile::from_bytes(bytes).unwrap();
    assert!(p.features().bpf_prog_meta.is_empty());
    assert_eq!(p.features().warnings.len(), 1);
}
