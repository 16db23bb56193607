//! Symbol names as perf shows them: libiberty's demangler where the
//! system has it (see [`super::libiberty`]), else rustc-demangle and
//! cpp_demangle, with cpp_demangle's output brought close to libiberty's.

/// Rust and C++ names demangled as perf shows them by default: Rust
/// without the hash, C++ as `c++filt -p -i` prints it (no outer parameter
/// list or return type; local entities keep their enclosing function's
/// parameters; `std::string`, not its expansion). By libiberty, perf's own
/// demangler, where binutils' libbfd is installed; else close to it (see
/// README, Known differences).
pub fn demangle(name: &str) -> String {
    // A PLT entry's name, as perf makes it: the name demangled, then the
    // suffix.
    if let Some(base) = name.strip_suffix("@plt") {
        return format!("{}@plt", demangle(base));
    }
    match super::libiberty::demangle(name) {
        Some(d) => d,
        None => builtin(name),
    }
}

/// [`demangle`] without libiberty: rustc-demangle, and cpp_demangle with
/// its output brought close to libiberty's.
fn builtin(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        // `.cold`, `.constprop.0`... are GCC clone suffixes, not mangling.
        let base = name.split('.').next().unwrap_or(name);
        if let Ok(d) = cpp_demangle::Symbol::new(base) {
            if let Ok(full) = d.demangle(&cpp_demangle::DemangleOptions::default()) {
                return strip_signature(&literal_suffixes(&drop_empty_packs(&full)));
            }
        }
    }
    name.to_string()
}

/// cpp_demangle prints an empty template parameter pack as an empty
/// argument (`AnalysisManager<llvm::Function, >`); libiberty, and so perf,
/// leaves it out. No C++ name has an empty argument otherwise.
fn drop_empty_packs(s: &str) -> String {
    if !s.contains(", >") && !s.contains(", , ") {
        return s.to_string();
    }
    let mut out = s.replace(", , ", ", ");
    while out.contains(", , ") {
        out = out.replace(", , ", ", ");
    }
    out.replace(", >", ">")
}

/// cpp_demangle prints a template argument literal of a builtin integer
/// type as a cast, `(unsigned int)2`; libiberty, and so perf, prints
/// `2u` (and `2l`, `2ul`, `2ll`, `2ull`). On libLLVM's 146k C++ names, this
/// was nearly three quarters of those that read otherwise than `c++filt -p`.
fn literal_suffixes(s: &str) -> String {
    const CASTS: [(&str, &str); 5] = [
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
    ];
    if !s.contains("int)") && !s.contains("long)") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    'next: while let Some(i) = rest.find('(') {
        for (cast, suffix) in CASTS {
            let Some(after) = rest[i..].strip_prefix(cast) else {
                continue;
            };
            let sign = usize::from(after.starts_with('-'));
            let digits = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
            let (number, tail) = after.split_at(sign + digits);
            // Digits that go on into a name are no literal.
            if digits == 0 || tail.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            out.push_str(&rest[..i]);
            out.push_str(number);
            out.push_str(suffix);
            rest = tail;
            continue 'next;
        }
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out
}

/// `ret ns::f<T>(args) const` → `ns::f<T>`.
fn strip_signature(full: &str) -> String {
    let mut s = full.trim_end();
    for q in [" const", " volatile", " &&", " &", " noexcept"] {
        while let Some(r) = s.strip_suffix(q) {
            s = r;
        }
    }
    if s.ends_with(')') {
        let mut depth = 0i32;
        for (i, c) in s.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        s = &s[..i];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // A return type (template functions) ends at the last space outside
    // brackets, unless that space belongs to `operator new` and the like.
    let mut depth = 0i32;
    let mut cut = None;
    let bytes = s.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'(' | b'<' | b'{' | b'[' => depth += 1,
            b')' | b'>' | b'}' | b']' => depth -= 1,
            b' ' if depth == 0 && !s[..i].ends_with("operator") => cut = Some(i + 1),
            _ => {}
        }
    }
    match cut {
        Some(i) if !s[..i].trim_end().ends_with("operator") => s[i..].to_string(),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::libiberty;
    use super::super::test_support::{binutils, skip, system_lib};
    use super::{builtin, demangle, literal_suffixes};

    /// A cast that is not before a literal stays.
    #[test]
    fn only_literals_lose_their_cast() {
        assert_eq!(
            literal_suffixes("f<(unsigned int)2, (long)-3>"),
            "f<2u, -3l>"
        );
        assert_eq!(literal_suffixes("f<(long long)7>"), "f<7ll>");
        assert_eq!(literal_suffixes("f<(unsigned long long)0>"), "f<0ull>");
        for same in [
            "f<(long)x>",
            "f<(long)2x>",
            "g(long)",
            "h<(char)97>",
            "(unsigned int)",
        ] {
            assert_eq!(literal_suffixes(same), same);
        }
    }

    /// Expected values are `c++filt -p` (binutils 2.40) on this machine,
    /// which is how perf's default demangling prints them.
    #[test]
    fn cpp_names_read_like_cxxfilt_p() {
        for (mangled, want) in [
            (
                "_ZZN6fuzzer6Fuzzer6RunOneEPKhmbPNS_9InputInfoEbPbENKUljE_clEj",
                "fuzzer::Fuzzer::RunOne(unsigned char const*, unsigned long, bool, fuzzer::InputInfo*, bool, bool*)::{lambda(unsigned int)#1}::operator()",
            ),
            ("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"),
            ("_ZNK3foo3barEv", "foo::bar"),
            ("_ZN3fooplERKS_", "foo::operator+"),
            ("_ZN12_GLOBAL__N_13bazEi", "(anonymous namespace)::baz"),
            ("_ZN6fuzzer10RunOneTestEPNS_6FuzzerEPKcm.cold", "fuzzer::RunOneTest"),
            ("_Znwm", "operator new"),
            ("_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv", "__gnu_cxx::new_allocator<char>::allocate"),
            // Integer literals as template arguments, from cc1 and libLLVM.
            ("_Z15pp_wide_integerILj1ElEvP14pretty_printerRK12poly_int_podIXT_ET0_E", "pp_wide_integer<1u, long>"),
            (
                "_ZNK4llvm12PatternMatch17constantint_matchILln1EE5matchINS_5ValueEEEbPT_",
                "llvm::PatternMatch::constantint_match<-1l>::match<llvm::Value>",
            ),
            (
                "_ZL19decodeRegisterClassILm32EEN4llvm14MCDisassembler12DecodeStatusERNS0_6MCInstEmRAT__Kt",
                "decodeRegisterClass<32ul>",
            ),
            (
                "_ZN4llvm12SparseSolverINS_14PointerIntPairIPNS_5ValueELj2EN12_GLOBAL__N_111IPOGroupingENS_21PointerLikeTypeTraitsIS3_EENS_18PointerIntPairInfoIS3_Lj2ES7_EEEENS4_13CVPLatticeValENS_14LatticeKeyInfoISA_EEE9visitInstERNS_11InstructionE",
                "llvm::SparseSolver<llvm::PointerIntPair<llvm::Value*, 2u, (anonymous namespace)::IPOGrouping, llvm::PointerLikeTypeTraits<llvm::Value*>, llvm::PointerIntPairInfo<llvm::Value*, 2u, llvm::PointerLikeTypeTraits<llvm::Value*> > >, (anonymous namespace)::CVPLatticeVal, llvm::LatticeKeyInfo<llvm::PointerIntPair<llvm::Value*, 2u, (anonymous namespace)::IPOGrouping, llvm::PointerLikeTypeTraits<llvm::Value*>, llvm::PointerIntPairInfo<llvm::Value*, 2u, llvm::PointerLikeTypeTraits<llvm::Value*> > > > >::visitInst",
            ),
            // An empty parameter pack (`JE`), from libLLVM.
            (
                "_ZN4llvm15AnalysisManagerINS_15MachineFunctionEJEE13getResultImplEPNS_11AnalysisKeyERS1_",
                "llvm::AnalysisManager<llvm::MachineFunction>::getResultImpl",
            ),
        ] {
            assert_eq!(builtin(mangled), want, "{mangled}");
            if libiberty::available() {
                assert_eq!(demangle(mangled), want, "libiberty: {mangled}");
            }
        }
    }

    /// With binutils installed, names are libiberty's with perf's default
    /// options, as `c++filt -p -i` (binutils' own front end to it: no
    /// parameters, no verbose expansion of `std::istream` and the like)
    /// prints them: checked over every C++ name libstdc++ exports.
    #[test]
    fn with_libbfd_names_are_cxxfilt_p_names() {
        let (Some(nm), Some(cxxfilt)) = (binutils("nm"), binutils("c++filt")) else {
            return;
        };
        if !libiberty::available() {
            skip("binutils' libbfd not found");
            return;
        }
        let lib = system_lib("libstdc++.so.6");
        let out = std::process::Command::new(nm)
            .args(["-D", "--defined-only", &lib])
            .output()
            .unwrap();
        let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .map(|n| n.split('@').next().unwrap_or(n).to_string())
            .filter(|n| n.starts_with("_Z"))
            .collect();
        assert!(names.len() > 1000, "{} C++ names in {lib}", names.len());
        let mut child = std::process::Command::new(cxxfilt)
            .args(["-p", "-i"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let text = names.join("\n");
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            input.write_all(text.as_bytes()).unwrap();
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let want: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(want.len(), names.len());
        for (name, want) in names.iter().zip(want) {
            assert_eq!(demangle(name), want, "{name}");
        }
    }
}
