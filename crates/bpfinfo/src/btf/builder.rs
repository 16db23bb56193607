//! Building small BTF blobs by hand, for generated test programs.

use std::collections::HashMap;

use super::{Kind, HEADER_LEN, MAGIC};

/// Builds a raw BTF blob type by type. Type ids are handed out from 1 in
/// the order of the calls; strings are deduplicated.
///
/// ```
/// use bpfinfo::btf::{Btf, BtfBuilder};
/// let mut b = BtfBuilder::new();
/// let int = b.int("int", 4, true);
/// let proto = b.func_proto(int, &[("n", int)]);
/// let work = b.func("work", proto, false);
/// let btf = Btf::parse(&b.build()).unwrap();
/// assert_eq!(btf.func_name(work), Some("work"));
/// assert_eq!(btf.func_signature(work).as_deref(), Some("int work(int n)"));
/// ```
#[derive(Debug, Clone)]
pub struct BtfBuilder {
    types: Vec<u8>,
    strs: Vec<u8>,
    str_offs: HashMap<String, u32>,
    next_id: u32,
}

impl Default for BtfBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BtfBuilder {
    /// An empty blob: no types, the string section holding only "".
    pub fn new() -> BtfBuilder {
        BtfBuilder {
            types: Vec::new(),
            strs: vec![0],
            str_offs: HashMap::from([(String::new(), 0)]),
            next_id: 1,
        }
    }

    /// Add `s` to the string section (once) and return its offset. Line
    /// texts and file names of line_info are added this way.
    pub fn add_str(&mut self, s: &str) -> u32 {
        if let Some(&off) = self.str_offs.get(s) {
            return off;
        }
        let off = self.strs.len() as u32;
        self.strs.extend_from_slice(s.as_bytes());
        self.strs.push(0);
        self.str_offs.insert(s.to_string(), off);
        off
    }

    fn push(&mut self, name: &str, kind: Kind, vlen: u32, size_or_type: u32, extra: &[u8]) -> u32 {
        let name_off = self.add_str(name);
        let info = ((kind as u32) << 24) | (vlen & 0xffff);
        for v in [name_off, info, size_or_type] {
            self.types.extend_from_slice(&v.to_le_bytes());
        }
        self.types.extend_from_slice(extra);
        self.next_id += 1;
        self.next_id - 1
    }

    /// An INT of `size` bytes.
    pub fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
        // BTF_INT_ENCODING (bits 24..28: 1 = signed), offset 0, nr_bits.
        let enc = (u32::from(signed) << 24) | (size * 8);
        self.push(name, Kind::Int, 0, size, &enc.to_le_bytes())
    }

    /// A pointer to `target` (0 for `void *`).
    pub fn ptr(&mut self, target: u32) -> u32 {
        self.push("", Kind::Ptr, 0, target, &[])
    }

    /// A function prototype returning `ret` with named parameters.
    pub fn func_proto(&mut self, ret: u32, params: &[(&str, u32)]) -> u32 {
        let mut extra = Vec::with_capacity(params.len() * 8);
        for (name, ty) in params {
            extra.extend_from_slice(&self.add_str(name).to_le_bytes());
            extra.extend_from_slice(&ty.to_le_bytes());
        }
        self.push("", Kind::FuncProto, params.len() as u32, ret, &extra)
    }

    /// A FUNC named `name` of prototype `proto`, static or global.
    pub fn func(&mut self, name: &str, proto: u32, global: bool) -> u32 {
        self.push(name, Kind::Func, u32::from(global), proto, &[])
    }

    /// The blob: header, types, strings.
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.types.len() + self.strs.len());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.push(1); // version
        out.push(0); // flags
        for v in [
            HEADER_LEN as u32,
            0,
            self.types.len() as u32,
            self.types.len() as u32,
            self.strs.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strs);
        out
    }
}
