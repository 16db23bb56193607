//! The /proc/kcore reader (`symbolize::kcore`: the ELF header and program
//! headers, then the segment holding the address) on any image: no panic,
//! and the bytes it returns are as many as asked, taken from the image.
//! Input: the address (u64, little-endian), the length (u16, up to 4095),
//! then the image.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 10 {
        return;
    }
    let addr = u64::from_le_bytes(data[..8].try_into().unwrap());
    let len = (u16::from_le_bytes([data[8], data[9]]) & 0xfff) as usize;
    let image = &data[10..];
    if let Ok(bytes) = bpfprof::fuzzing::kcore_read(image, addr, len) {
        assert_eq!(bytes.len(), len);
        assert!(len == 0 || image.windows(len).any(|w| w == bytes));
    }
});
