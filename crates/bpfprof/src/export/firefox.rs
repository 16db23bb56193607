//! The Firefox Profiler's processed format (samply's crate): a track per
//! thread with every sample at its time, frames in the categories User,
//! Kernel and BPF, and markers where BPF programs were loaded and
//! unloaded during the recording.

use std::collections::HashMap;
use std::io::Write;

use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CpuDelta, Frame as FxFrame, FrameFlags,
    FrameInfo, MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, Profile as FxProfile,
    ReferenceTimestamp, SamplingInterval, StaticSchemaMarker, StaticSchemaMarkerField,
    StringHandle, ThreadHandle, Timestamp,
};
use perfdata::PerfFile;

use super::{for_each_sample, frame_name, ExportError};
use crate::analyze::profile::{sampling_attr, Profile};
use crate::analyze::table::Filters;
use crate::symbolize::{DsoKind, Frame};

/// A BPF program loaded or unloaded during the recording.
struct ProgEvent {
    name: StringHandle,
    prog: StringHandle,
    id: u32,
    category: CategoryHandle,
}

impl StaticSchemaMarker for ProgEvent {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "BpfProgram";
    const CHART_LABEL: Option<&'static str> = Some("{marker.data.prog}");
    const TABLE_LABEL: Option<&'static str> =
        Some("{marker.name} {marker.data.id} {marker.data.prog}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[
        StaticSchemaMarkerField {
            key: "prog",
            label: "Program",
            format: MarkerFieldFormat::String,
            flags: MarkerFieldFlags::SEARCHABLE,
        },
        StaticSchemaMarkerField {
            key: "id",
            label: "Program id",
            format: MarkerFieldFormat::Integer,
            flags: MarkerFieldFlags::SEARCHABLE,
        },
    ];

    fn name(&self, _: &mut FxProfile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut FxProfile) -> CategoryHandle {
        self.category
    }

    fn string_field_value(&self, _: u32) -> StringHandle {
        self.prog
    }

    fn number_field_value(&self, _: u32) -> f64 {
        self.id as f64
    }
}

/// Build the Firefox profile. The profile must have been built from
/// `file` with `samples`.
pub fn build(
    file: &PerfFile,
    p: &Profile,
    filters: &Filters,
    product: &str,
) -> Result<FxProfile, ExportError> {
    let first = p.first_time;
    let at = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(first));
    let interval = match p.total.samples {
        0 => SamplingInterval::from_millis(1),
        n => SamplingInterval::from_nanos(p.total.period / n),
    };
    // perf's clock has no fixed relation to the wall clock: times count
    // from the first sample.
    let mut fx = FxProfile::new(
        product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        interval,
    );
    let user = fx.add_category("User", CategoryColor::Yellow);
    let kernel = fx.add_category("Kernel", CategoryColor::Orange);
    let bpf_cat = fx.add_category("BPF", CategoryColor::Purple);
    let category = |p: &Profile, f: Frame| -> CategoryPairHandle {
        match p.sym.dsos[f.dso as usize].kind {
            DsoKind::Bpf => bpf_cat.into(),
            DsoKind::Kernel | DsoKind::Module => kernel.into(),
            _ => user.into(),
        }
    };
    let mut processes = HashMap::new();
    let mut threads: HashMap<u32, ThreadHandle> = HashMap::new();
    let mut names: HashMap<Frame, StringHandle> = HashMap::new();
    let mut frames: Vec<Frame> = Vec::with_capacity(128);
    let sampling = sampling_attr(file) as u16;
    for_each_sample(file, p, |s, sa| {
        if sa.attr != sampling || !filters.keep(p, &sa.key) {
            return Ok(());
        }
        let comm = super::comm_name(p, &sa.key);
        let (pid, tid) = (sa.key.pid, sa.key.tid);
        let thread = *threads.entry(tid).or_insert_with(|| {
            let process = *processes
                .entry(pid)
                .or_insert_with(|| fx.add_process(comm, pid, at(s.time)));
            let t = fx.add_thread(process, tid, at(s.time), tid == pid);
            fx.set_thread_name(t, comm);
            t
        });
        frames.clear();
        let mut node = sa.node;
        while node != 0 {
            let (parent, f) = p.stacks.nodes[node as usize];
            frames.push(f);
            node = parent;
        }
        if frames.is_empty() {
            frames.push(sa.key.frame);
        }
        let infos: Vec<FrameInfo> = frames
            .iter()
            .rev()
            .map(|&f| {
                let name = *names
                    .entry(f)
                    .or_insert_with(|| fx.intern_string(&frame_name(p, f)));
                FrameInfo {
                    frame: FxFrame::Label(name),
                    category_pair: category(p, f),
                    flags: FrameFlags::empty(),
                }
            })
            .collect();
        let stack = fx.intern_stack_frames(thread, infos.into_iter());
        fx.add_sample(thread, at(s.time), stack, CpuDelta::from_nanos(s.period), 1);
        Ok(())
    })?;

    // Loads and unloads on a track of their own: the loader may be a
    // thread with no samples, or gone.
    let events: Vec<(u32, Option<u64>, Option<u64>)> = p
        .sym
        .bpf
        .events
        .iter()
        .map(|(&id, e)| (id, e.loaded_at, e.unloaded_at))
        .filter(|e| e.1.is_some() || e.2.is_some())
        .collect();
    if !events.is_empty() {
        let process = fx.add_process("BPF programs", 0, at(first));
        let track = fx.add_thread(process, 0, at(first), true);
        fx.set_thread_name(track, "BPF program loads and unloads");
        let mut events = events;
        events.sort();
        for (id, loaded, unloaded) in events {
            let prog = p
                .progs
                .get(&id)
                .and_then(|r| r.info.as_ref())
                .map(|i| i.name.clone())
                .unwrap_or_default();
            let prog = fx.intern_string(&prog);
            for (what, t) in [("BPF load", loaded), ("BPF unload", unloaded)] {
                if let Some(t) = t {
                    let marker = ProgEvent {
                        name: fx.intern_string(what),
                        prog,
                        id,
                        category: bpf_cat,
                    };
                    fx.add_marker(track, MarkerTiming::Instant(at(t)), marker);
                }
            }
        }
    }
    Ok(fx)
}

/// Write the profile as JSON.
pub fn write(
    file: &PerfFile,
    p: &Profile,
    filters: &Filters,
    product: &str,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let fx = build(file, p, filters, product)?;
    serde_json::to_writer(out, &fx).map_err(std::io::Error::from)?;
    Ok(())
}
