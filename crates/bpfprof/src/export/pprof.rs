//! pprof's format (gzipped profile.proto), as `go tool pprof`, Pyroscope
//! and Parca read it. One location per (function, source line): BPF
//! functions get their BTF file and line, other code its function alone.
//! Samples carry labels for the thread and, when their leaf is BPF code,
//! the program id.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use super::pprof_proto as pb;
use super::{comm_name, for_each_stack, BpfFrames, ExportError};
use crate::analyze::profile::Profile;
use crate::analyze::table::Filters;
use crate::symbolize::{DsoId, Frame};

/// Interned strings: index 0 is "" as the format requires.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// Build the profile message.
pub fn build(p: &Profile, filters: &Filters) -> pb::Profile {
    let mut s = Strings::new();
    let mut bpf = BpfFrames::default();
    let mut mappings: HashMap<DsoId, u64> = HashMap::new();
    let mut functions: HashMap<Frame, u64> = HashMap::new();
    let mut locations: HashMap<(Frame, Option<(String, u32)>), u64> = HashMap::new();
    let mut out = pb::Profile {
        sample_type: vec![
            pb::ValueType {
                r#type: s.id("samples"),
                unit: s.id("count"),
            },
            pb::ValueType {
                r#type: s.id(&p.event),
                unit: s.id("nanoseconds"),
            },
        ],
        duration_nanos: p.last_time.saturating_sub(p.first_time) as i64,
        ..Default::default()
    };
    out.period_type = Some(pb::ValueType {
        r#type: s.id(&p.event),
        unit: s.id("nanoseconds"),
    });
    let (k_pid, k_tid, k_comm, k_prog) =
        (s.id("pid"), s.id("tid"), s.id("comm"), s.id("bpf_prog_id"));
    for_each_stack(p, filters, |k, frames, c| {
        let mut ids = Vec::with_capacity(frames.len());
        for sf in frames.iter().rev() {
            let f = sf.frame;
            let line = bpf.line_at(p, f, sf.node).map(|l| (l.file.clone(), l.line));
            let key = (f, line);
            let id = match locations.get(&key) {
                Some(&id) => id,
                None => {
                    let mapping = *mappings.entry(f.dso).or_insert_with(|| {
                        let d = &p.sym.dsos[f.dso as usize];
                        out.mapping.push(pb::Mapping {
                            id: out.mapping.len() as u64 + 1,
                            filename: s.id(&d.name),
                            // Names come resolved: pprof must not try to
                            // symbolize the addresses again.
                            has_functions: true,
                            has_filenames: true,
                            has_line_numbers: true,
                            ..Default::default()
                        });
                        out.mapping.len() as u64
                    });
                    let function = *functions.entry(f).or_insert_with(|| {
                        // The report's names (an address where no symbol is
                        // known), so that shares compare row for row.
                        let name = &p.sym.syms[f.sym as usize].name;
                        let src = bpf.frame(p, f).and_then(|b| b.source.clone());
                        out.function.push(pb::Function {
                            id: out.function.len() as u64 + 1,
                            name: s.id(name),
                            system_name: s.id(name),
                            filename: src.as_ref().map_or(0, |(file, _)| s.id(file)),
                            start_line: src.as_ref().map_or(0, |(_, l)| *l as i64),
                        });
                        out.function.len() as u64
                    });
                    let id = out.location.len() as u64 + 1;
                    out.location.push(pb::Location {
                        id,
                        mapping_id: mapping,
                        address: p.sym.syms[f.sym as usize].start,
                        line: vec![pb::Line {
                            function_id: function,
                            line: key.1.as_ref().map_or(0, |(_, l)| *l as i64),
                            column: 0,
                        }],
                        is_folded: false,
                    });
                    locations.insert(key, id);
                    id
                }
            };
            ids.push(id);
        }
        let mut label = vec![
            pb::Label {
                key: k_pid,
                num: k.pid as i64,
                ..Default::default()
            },
            pb::Label {
                key: k_tid,
                num: k.tid as i64,
                ..Default::default()
            },
            pb::Label {
                key: k_comm,
                str: s.id(comm_name(p, k)),
                ..Default::default()
            },
        ];
        if let Some(leaf) = frames.last() {
            if let Some(b) = bpf.frame(p, leaf.frame) {
                label.push(pb::Label {
                    key: k_prog,
                    num: b.prog_id as i64,
                    ..Default::default()
                });
            }
        }
        out.sample.push(pb::Sample {
            location_id: ids,
            value: vec![c.samples as i64, c.period as i64],
            label,
        });
    });
    out.default_sample_type = out.sample_type[1].r#type;
    out.string_table = s.table;
    out
}

/// Write the profile, gzipped as pprof expects.
pub fn write(p: &Profile, filters: &Filters, out: &mut dyn Write) -> Result<(), ExportError> {
    let bytes = build(p, filters).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
