//! ELF note parsing, as the recorder reads build ids (PT_NOTE segments of
//! every binary it names, and /sys/kernel/notes): any bytes, no panic, and
//! a build id found lies inside the input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(id) = bpfprof::capture::buildid::from_notes(data) {
        assert!(!id.is_empty());
        assert!(id.len() + 16 <= data.len());
        assert!(data.windows(id.len()).any(|w| w == id));
    }
});
