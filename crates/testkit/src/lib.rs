//! Helpers shared by the integration tests of the workspace's crates.
//!
//! Both bpfinfo's disassembler tests and bpfprof's annotate tests check
//! instructions against GNU objdump; they find it, read its listing and
//! normalise its text the same way, so that lives here once. A dev-only
//! crate: nothing outside tests depends on it.

use std::path::PathBuf;

/// The path of an external program, searching PATH and the sbin
/// directories (bpftool lives in /usr/sbin, not always on a user's PATH).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"])
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file());
    found
}

/// One instruction of an objdump listing.
#[derive(Debug, Clone)]
pub struct ObjdumpInsn {
    /// Offset from the listing's start address.
    pub offset: u32,
    pub bytes: Vec<u8>,
    pub text: String,
}

/// Split `objdump -D --adjust-vma=VMA` output into instructions, joining
/// continuation lines (long instructions print their bytes on two lines).
pub fn parse_objdump(out: &str, vma: u64) -> Vec<ObjdumpInsn> {
    let mut insns: Vec<ObjdumpInsn> = Vec::new();
    for line in out.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(addr), Some(bytes)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(addr) = addr.trim().strip_suffix(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let bytes: Vec<u8> = bytes
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
            .collect();
        match parts.next() {
            Some(text) => insns.push(ObjdumpInsn {
                offset: (addr - vma) as u32,
                bytes,
                text: text.to_string(),
            }),
            None => insns
                .last_mut()
                .expect("continuation after an instruction")
                .bytes
                .extend(bytes),
        }
    }
    insns
}

/// Light normalisation applied to both sides of a comparison with objdump:
/// - objdump's trailing `# address` and `<symbol>` comments go;
/// - whitespace runs become one space;
/// - objdump always prints the scale of an index register (`,1)`), iced
///   omits a scale of 1;
/// - objdump prints the one-operand shift/rotate-by-one encoding (D1/D3)
///   as `shl %rdx`, iced as `shl $0x1,%rdx`.
pub fn normalize_att(text: &str) -> String {
    let text = text.split(" #").next().unwrap_or(text);
    let text = match text.find(" <") {
        Some(i) if text.ends_with('>') => &text[..i],
        _ => text,
    };
    let mut s = text.split_whitespace().collect::<Vec<_>>().join(" ");
    s = s.replace(",1)", ")");
    let shifts = ["shl", "shr", "sar", "sal", "rol", "ror", "rcl", "rcr"];
    if let Some((m, ops)) = s.split_once(' ') {
        if shifts.iter().any(|x| m.starts_with(x)) && !ops.contains(',') {
            s = format!("{m} $0x1,{ops}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_instruction_continues_on_the_next_line() {
        let out = "ffffffffc0001000:\t0f 1f 44 00 00       \tnopl   0x0(%rax,%rax,1)\n\
                   ffffffffc0001005:\t48 b8 01 02 03 04 05 \tmovabs $0x807060504030201,%rax\n\
                   ffffffffc000100c:\t06 07 08 \n";
        let v = parse_objdump(out, 0xffff_ffff_c000_1000);
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].offset, v[1].bytes.len()), (5, 10));
        assert_eq!(normalize_att(&v[0].text), "nopl 0x0(%rax,%rax)");
    }

    #[test]
    fn comments_and_shift_by_one_are_normalised() {
        assert_eq!(normalize_att("call   0x10 <foo>"), "call 0x10");
        assert_eq!(
            normalize_att("lea    0x8(%rip),%rax        # 0x20"),
            "lea 0x8(%rip),%rax"
        );
        assert_eq!(normalize_att("shl    %rdx"), "shl $0x1,%rdx");
    }
}
