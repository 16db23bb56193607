//! Function signatures in the form bpftool prints above each function in
//! `prog dump xlated` (its "type only" dumper): `int work(int n)`,
//! `int handle(struct __sk_buff * skb)`.

use super::{Btf, Kind};

/// bpftool formats into a 1024-byte buffer and prints nothing on overflow.
const MAX_LEN: usize = 1023;
/// Corrupt BTF can make types refer to themselves.
const MAX_DEPTH: u32 = 32;

pub(super) fn type_only(btf: &Btf, id: u32) -> Option<String> {
    let mut out = String::new();
    write_type(btf, id, &mut out, 0)?;
    (out.len() <= MAX_LEN).then_some(out)
}

/// A name as printf("%s") shows it; a bad offset reads as a NULL string.
fn name(btf: &Btf, off: u32) -> &str {
    btf.str_at(off).unwrap_or("(null)")
}

fn write_type(btf: &Btf, id: u32, out: &mut String, depth: u32) -> Option<()> {
    if depth > MAX_DEPTH || out.len() > MAX_LEN {
        return None;
    }
    if id == 0 {
        out.push_str("void ");
        return Some(());
    }
    let t = btf.type_by_id(id)?;
    let n = name(btf, t.name_off);
    match t.kind {
        Kind::Int | Kind::Typedef | Kind::Float => {
            out.push_str(n);
            out.push(' ');
        }
        Kind::Struct => out.push_str(&format!("struct {n} ")),
        Kind::Union => out.push_str(&format!("union {n} ")),
        Kind::Enum => out.push_str(&format!("enum {n} ")),
        Kind::Array => {
            let (elem, _, nelems) = t.array()?;
            write_type(btf, elem, out, depth + 1)?;
            // bpftool prints nelems with %d.
            out.push_str(&format!("[{}]", nelems as i32));
        }
        Kind::Ptr => {
            write_type(btf, t.size_or_type, out, depth + 1)?;
            out.push_str("* ");
        }
        Kind::Fwd => {
            let what = if t.kind_flag { "union" } else { "struct" };
            out.push_str(&format!("{what} {n} "));
        }
        Kind::Volatile | Kind::Const | Kind::Restrict => {
            out.push_str(match t.kind {
                Kind::Volatile => "volatile ",
                Kind::Const => "const ",
                _ => "restrict ",
            });
            write_type(btf, t.size_or_type, out, depth + 1)?;
        }
        Kind::FuncProto => write_func(btf, id, None, out, depth)?,
        Kind::Func => write_func(btf, t.size_or_type, Some(n), out, depth)?,
        Kind::Var => {
            if t.var_linkage()? == 0 {
                out.push_str("static ");
            }
            write_type(btf, t.size_or_type, out, depth + 1)?;
            out.push(' ');
            out.push_str(n);
        }
        Kind::Datasec => out.push_str(&format!("section (\"{n}\") ")),
        Kind::DeclTag | Kind::TypeTag | Kind::Enum64 => return None,
    }
    Some(())
}

fn write_func(
    btf: &Btf,
    proto_id: u32,
    func_name: Option<&str>,
    out: &mut String,
    depth: u32,
) -> Option<()> {
    let proto = btf.type_by_id(proto_id)?;
    if proto.kind != Kind::FuncProto {
        return None;
    }
    write_type(btf, proto.size_or_type, out, depth + 1)?;
    out.push_str(func_name.unwrap_or(""));
    out.push('(');
    for (i, (name_off, ty)) in proto.params().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if ty == 0 {
            out.push_str("...");
            continue;
        }
        write_type(btf, ty, out, depth + 1)?;
        if name_off != 0 {
            out.push_str(name(btf, name_off));
        } else if out.ends_with(' ') {
            // A prototype without parameter names: "int (int, char)".
            out.pop();
        }
    }
    out.push(')');
    Some(())
}
