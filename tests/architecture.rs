//! The layer rules of the library (docs/architecture.md), checked on the source text:
//!
//! 1. Top-level modules are ordered; a module uses only modules lower in [`ORDER`], and `report`
//!    uses only `results`, `util` and `stats` (it renders results, it does not reach into
//!    measuring code; the plots take their percentiles from `stats`, the one definition).
//! 2. Measuring modules never print: no `println!`/`eprintln!`/`print!`/`eprint!`/`errln!`/`outln!`.
//! 3. No cycles between file modules: a parent module may use its own children (re-exports),
//!    every other edge between files is acyclic.
//! 4. 64-bit atomics come from `portable_atomic`: MIPS32 routers have no `std`/`core`
//!    `AtomicU64`/`AtomicI64` (docs/cross-build.md), so naming those breaks the MIPS builds.
//! 5. Output formats are written only in `report` (its `export/` room) and `cli`: elsewhere no
//!    pretty JSON document (`serde_json::to_string_pretty`/`to_vec_pretty`), no streamed one
//!    (`serde_json::to_writer*`), no gzip (`flate2` `GzEncoder`/`GzBuilder`), and no
//!    `fs::rename` (the one temp-file-and-rename writer is `util::fs`). The few state files
//!    of the lab that only routerbench reads back are listed in [`NOT_OUTPUT_FORMATS`].
//! 6. The layout drawn in docs/architecture.md ("Layout": one line per folder of `src/` and
//!    `aqm/src/`, and per top-level file) is the tree's: nothing missing, nothing invented.
//!
//! Test code (`#[cfg(test)]` items) is ignored. Run: `cargo test --test architecture`; a failure
//! lists every offending edge with the paths that make it.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lowest first.
const ORDER: &[&str] = &[
    "util", "stats", "wire", "net", "results", "device", "crypto", "service", "monitor", "iperf3",
    "latency", "server", "stress", "lab", "report", "cli",
];
const REPORT_MAY_USE: &[&str] = &["results", "stats", "util"];
const MEASURING: &[&str] = &[
    "crypto", "device", "iperf3", "lab", "latency", "monitor", "server", "stress",
];
const PRINT_MACROS: &[&str] = &[
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
    "errln!",
    "outln!",
];

/// Where output formats are written (rule 5).
const FORMAT_WRITERS: &[&str] = &["report", "cli"];
/// The writers of formats and files, as paths (`serde_json::to_writer` and its `use`).
const FORMAT_CALLS: &[&[&str]] = &[
    &["serde_json", "to_string_pretty"],
    &["serde_json", "to_vec_pretty"],
    &["serde_json", "to_writer"],
    &["serde_json", "to_writer_pretty"],
];
/// Names that write a format wherever they appear (gzip streams).
const FORMAT_WORDS: &[&str] = &["GzEncoder", "GzBuilder"];
/// The one file writer (temporary file + rename) and what only it may call.
const ATOMIC_WRITER: &str = "util::fs";
const RENAME: &[&str] = &["fs", "rename"];
/// Files outside `report`/`cli` that write pretty JSON or gzip which is no output format: the
/// lab's state, read back only by routerbench itself (module, why).
const NOT_OUTPUT_FORMATS: &[(&str, &str)] = &[
    ("lab::state", "the lab's config and AQM state under /run"),
    (
        "lab::aqm_forwarder::worker",
        "the forwarder's counters file",
    ),
    ("lab::vm::assets", "the VM assets' cache manifest"),
    ("lab::vm::initramfs", "the guest's gzip cpio initramfs"),
];

type Module = Vec<String>;

fn module_of(rel: &Path) -> Module {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts == ["lib"] {
        return Vec::new();
    }
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    parts
}

fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<Module, (String, bool)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap_or(&p).to_path_buf();
            if rel == Path::new("main.rs") {
                continue;
            }
            let name = rel.file_name().map(|n| n.to_string_lossy().into_owned());
            let is_dir_mod = matches!(name.as_deref(), Some("mod.rs") | Some("lib.rs"));
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.insert(module_of(&rel), (strip(&text), is_dir_mod));
        }
    }
}

/// Removes comments, string and char literals, and `#[cfg(test)]` items.
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident_char(b.get(i.wrapping_sub(1)).copied())
        {
            // raw string r"…", r#"…"#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else if c == '\'' && next == Some('\\') {
            // '\n', '\'', '\u{..}'
            let mut j = i + 2;
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            out.push_str("' '");
            i = j + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    drop_test_items(&out)
}

fn ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

fn drop_test_items(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Expands a use tree (`a::{b, c::d as e}`) into paths of segments.
fn use_paths(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&tree[start..]);
    for it in items {
        let it = it.trim();
        if it.is_empty() {
            continue;
        }
        if let Some(open) = it.find('{') {
            if it.ends_with('}') {
                let head: Vec<String> = it[..open]
                    .split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                let mut p = prefix.to_vec();
                p.extend(head);
                use_paths(&it[open + 1..it.len() - 1], &p, out);
                continue;
            }
        }
        let it = it.split(" as ").next().unwrap_or(it);
        let mut p = prefix.to_vec();
        p.extend(
            it.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*")
                .map(String::from),
        );
        out.push(p);
    }
}

/// Every path in the text that starts with `crate`, `super` or `self`, plus `use` trees.
fn references(text: &str) -> Vec<Vec<String>> {
    let mut refs = Vec::new();
    let mut rest = text;
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        if after.starts_with(char::is_whitespace) {
            use_paths(after[..end].trim(), &[], &mut refs);
        }
        rest = &after[end..];
    }
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if ident_char(Some(chars[i])) && !ident_char(i.checked_sub(1).map(|k| chars[k])) {
            let mut j = i;
            let mut path = String::new();
            while j < chars.len()
                && (ident_char(Some(chars[j]))
                    || (chars[j] == ':' && chars.get(j + 1) == Some(&':')))
            {
                if chars[j] == ':' {
                    path.push_str("::");
                    j += 2;
                } else {
                    path.push(chars[j]);
                    j += 1;
                }
            }
            let segs: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if segs.len() > 1 && matches!(segs[0].as_str(), "crate" | "super" | "self") {
                refs.push(segs);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    refs
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = text[from..].find(word) {
        let at = from + k;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !ident_char(before) && !ident_char(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The file module a path names, seen from module `cur`.
fn resolve(
    cur: &Module,
    is_dir_mod: bool,
    segs: &[String],
    mods: &BTreeSet<Module>,
) -> Option<Module> {
    let (base, rest): (Module, &[String]) = match segs.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &segs[1..]),
        Some("self") => (cur.clone(), &segs[1..]),
        Some("super") => {
            let n = segs.iter().take_while(|s| *s == "super").count();
            (cur[..cur.len().saturating_sub(n)].to_vec(), &segs[n..])
        }
        Some(first) => {
            // A relative `use child::…` in a directory module (or lib.rs).
            let mut child = cur.clone();
            child.push(first.to_string());
            if !is_dir_mod || !mods.contains(&child) {
                return None;
            }
            (cur.clone(), segs)
        }
        None => return None,
    };
    let mut best = mods.contains(&base).then(|| base.clone());
    let mut p = base;
    for s in rest {
        p.push(s.clone());
        if mods.contains(&p) {
            best = Some(p.clone());
        }
    }
    best
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        format!("crate::{}", m.join("::"))
    }
}

struct Graph {
    /// (from, to) → the paths that make the edge.
    edges: BTreeMap<(Module, Module), BTreeSet<String>>,
    files: BTreeMap<Module, (String, bool)>,
}

fn graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    walk(&root, &root, &mut files);
    let mods: BTreeSet<Module> = files.keys().cloned().collect();
    let mut edges: BTreeMap<(Module, Module), BTreeSet<String>> = BTreeMap::new();
    for (cur, (text, is_dir_mod)) in &files {
        for segs in references(text) {
            if segs
                .first()
                .is_some_and(|s| matches!(s.as_str(), "std" | "core" | "alloc"))
            {
                continue;
            }
            if let Some(t) = resolve(cur, *is_dir_mod, &segs, &mods) {
                if &t != cur {
                    edges
                        .entry((cur.clone(), t))
                        .or_default()
                        .insert(segs.join("::"));
                }
            }
        }
    }
    Graph { edges, files }
}

fn rank(top: &str) -> Option<usize> {
    ORDER.iter().position(|m| *m == top)
}

#[test]
fn every_top_level_module_is_in_the_layer_order() {
    let g = graph();
    let tops: BTreeSet<&str> = g
        .files
        .keys()
        .filter_map(|m| m.first().map(String::as_str))
        .collect();
    let missing: Vec<&&str> = tops.iter().filter(|t| rank(t).is_none()).collect();
    assert!(
        missing.is_empty(),
        "top-level modules not in ORDER (add them where they belong): {missing:?}"
    );
}

#[test]
fn modules_use_only_lower_layers_and_report_reads_only_results() {
    let g = graph();
    let mut bad = Vec::new();
    for ((a, b), why) in &g.edges {
        let (Some(ta), Some(tb)) = (a.first(), b.first()) else {
            continue;
        };
        if ta == tb {
            continue;
        }
        let (Some(ra), Some(rb)) = (rank(ta), rank(tb)) else {
            continue;
        };
        if rb > ra || (ta == "report" && !REPORT_MAY_USE.contains(&tb.as_str())) {
            bad.push(format!(
                "{} -> {}  ({})",
                name(a),
                name(b),
                why.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "edges against the layer order {}:\n{}",
        ORDER.join(" < "),
        bad.join("\n")
    );
}

#[test]
fn measuring_modules_do_not_print() {
    let g = graph();
    let mut bad = Vec::new();
    for (m, (text, _)) in &g.files {
        if !m.first().is_some_and(|t| MEASURING.contains(&t.as_str())) {
            continue;
        }
        for mac in PRINT_MACROS {
            let mut from = 0;
            while let Some(k) = text[from..].find(mac) {
                let at = from + k;
                if !ident_char(text[..at].chars().next_back()) {
                    bad.push(format!("{} uses {mac}", name(m)));
                    break;
                }
                from = at + mac.len();
            }
        }
    }
    assert!(
        bad.is_empty(),
        "measuring code prints (return results/events instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn sixty_four_bit_atomics_come_from_portable_atomic() {
    let g = graph();
    let mut bad = Vec::new();
    for (m, (text, _)) in &g.files {
        // `use std::sync::atomic::{AtomicBool, AtomicU64}` or a full path: an atomic module
        // path of std/core followed, within the same path or use tree, by a 64-bit atomic.
        for root in ["std::sync::atomic", "core::sync::atomic"] {
            let mut from = 0;
            while let Some(k) = text[from..].find(root) {
                let at = from + k + root.len();
                // The rest of this path: `::Name`, or `::{…}` up to its closing brace.
                let rest = &text[at..];
                let tail = match rest.strip_prefix("::").map(str::trim_start) {
                    Some(r) if r.starts_with('{') => &r[..r.find('}').unwrap_or(r.len())],
                    Some(r) => {
                        let n = r
                            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .unwrap_or(r.len());
                        &r[..n]
                    }
                    None => "",
                };
                if tail.contains("AtomicU64") || tail.contains("AtomicI64") {
                    bad.push(format!("{} takes a 64-bit atomic from {root}", name(m)));
                }
                from = at;
            }
        }
    }
    assert!(
        bad.is_empty(),
        "use portable_atomic::{{AtomicU64, AtomicI64}} instead (MIPS32 has no 64-bit atomics):\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_cycles_between_file_modules() {
    let g = graph();
    let mut adj: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    for (a, b) in g.edges.keys() {
        if a.is_empty() || b.starts_with(a) {
            continue; // the crate root, or a parent using its own child
        }
        adj.entry(a).or_default().insert(b);
    }
    let sccs = tarjan(&adj);
    let mut msg = Vec::new();
    for comp in &sccs {
        msg.push(format!(
            "cycle: {}",
            comp.iter().map(|m| name(m)).collect::<Vec<_>>().join(", ")
        ));
        for ((a, b), why) in &g.edges {
            if comp.contains(&a) && comp.contains(&b) && adj.get(a).is_some_and(|s| s.contains(b)) {
                msg.push(format!(
                    "    {} -> {}  ({})",
                    name(a),
                    name(b),
                    why.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(sccs.is_empty(), "{}", msg.join("\n"));
}

/// Strongly connected components with more than one module.
fn tarjan<'a>(adj: &BTreeMap<&'a Module, BTreeSet<&'a Module>>) -> Vec<Vec<&'a Module>> {
    struct St<'a> {
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<&'a Module>>,
        next: usize,
    }
    fn visit<'a>(v: &'a Module, adj: &BTreeMap<&'a Module, BTreeSet<&'a Module>>, s: &mut St<'a>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        for &w in adj.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, adj, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
        next: 0,
    };
    for &v in adj.keys() {
        if !s.index.contains_key(v) {
            visit(v, adj, &mut s);
        }
    }
    s.out
}

/// The format writers (rule 5) a file's text names: `serde_json::to_writer(…)` and friends as
/// paths or imported by `use`, `fs::rename`, and the gzip encoder's names.
fn format_writers(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut uses = Vec::new();
    let mut rest = text;
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        if after.starts_with(char::is_whitespace) {
            use_paths(after[..end].trim(), &[], &mut uses);
        }
        rest = &after[end..];
    }
    let calls = FORMAT_CALLS.iter().chain(std::iter::once(&RENAME));
    for call in calls {
        let joined = call.join("::");
        let in_use = uses
            .iter()
            .any(|u| u.ends_with(&call.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
        if in_use || find_word(text, &joined).is_some() {
            found.insert(joined);
        }
    }
    for w in FORMAT_WORDS {
        if find_word(text, w).is_some() {
            found.insert(w.to_string());
        }
    }
    found
}

#[test]
fn output_formats_are_written_only_in_report_and_cli() {
    let g = graph();
    let mut bad = Vec::new();
    let mut allowed_used = BTreeSet::new();
    for (m, (text, _)) in &g.files {
        let path = m.join("::");
        let mut found = format_writers(text);
        if path == ATOMIC_WRITER {
            found.remove(&RENAME.join("::"));
        }
        if found.is_empty() {
            continue;
        }
        let rename = found.contains(&RENAME.join("::"));
        let writer_room = m
            .first()
            .is_some_and(|t| FORMAT_WRITERS.contains(&t.as_str()));
        let allowed = NOT_OUTPUT_FORMATS.iter().any(|(a, _)| *a == path);
        if allowed {
            allowed_used.insert(path.clone());
        }
        if rename || !(writer_room || allowed) {
            bad.push(format!(
                "{} uses {}",
                name(m),
                found.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    for (a, why) in NOT_OUTPUT_FORMATS {
        if !allowed_used.contains(*a) {
            bad.push(format!(
                "NOT_OUTPUT_FORMATS lists crate::{a} ({why}), which writes none: drop the line"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "output formats are written in report::export (called from cli), files through \
         util::fs::write_atomic/write_output:\n{}",
        bad.join("\n")
    );
}

// The checker checks itself: each rule fires on a small example.
#[test]
fn the_format_rule_sees_calls_imports_and_gzip_but_not_look_alikes() {
    let text = strip(
        "use serde_json::{json, to_writer};\nlet s = serde_json::to_string_pretty(&d);\n\
         let gz = flate2::write::GzEncoder::new(f, c);\nstd::fs::rename(a, b);\n\
         let to_writer = 1; let t = serde_json::to_string(&d); // serde_json::to_vec_pretty\n",
    );
    let found: Vec<String> = format_writers(&text).into_iter().collect();
    assert_eq!(
        found,
        [
            "GzEncoder",
            "fs::rename",
            "serde_json::to_string_pretty",
            "serde_json::to_writer"
        ]
    );
    assert!(format_writers(&strip("let to_writer = x; serde_json::to_vec(&v);")).is_empty());
}

#[test]
fn the_checker_sees_paths_in_use_trees_and_code_but_not_in_comments_strings_or_tests() {
    let text = strip(
        "use crate::{a::{b, c::D}, e as f};\n// crate::zz::yy\nlet s = \"crate::q::r\";\n\
         fn g() { super::h::i(); }\n#[cfg(test)]\nmod tests { use crate::t::u; }\n",
    );
    let refs: BTreeSet<String> = references(&text)
        .into_iter()
        .map(|r| r.join("::"))
        .collect();
    for want in ["crate::a::b", "crate::a::c::D", "crate::e", "super::h::i"] {
        assert!(refs.contains(want), "{want} missing from {refs:?}");
    }
    for never in ["crate::zz::yy", "crate::q::r", "crate::t::u"] {
        assert!(
            !refs.contains(never),
            "{never} read from a comment, string or test: {refs:?}"
        );
    }
}

#[test]
fn the_checker_resolves_super_self_and_relative_child_paths() {
    let mods: BTreeSet<Module> = [
        vec![],
        vec!["a".into()],
        vec!["a".into(), "b".into()],
        vec!["a".into(), "c".into()],
    ]
    .into_iter()
    .collect();
    let v = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let b: Module = vec!["a".into(), "b".into()];
    let a: Module = vec!["a".into()];
    assert_eq!(
        resolve(&b, false, &v("super::c::X"), &mods),
        Some(vec!["a".into(), "c".into()])
    );
    assert_eq!(resolve(&b, false, &v("super::Y"), &mods), Some(a.clone()));
    assert_eq!(
        resolve(&a, true, &v("c::Z"), &mods),
        Some(vec!["a".into(), "c".into()])
    );
    assert_eq!(
        resolve(&b, false, &v("c::Z"), &mods),
        None,
        "a file module has no children"
    );
    assert_eq!(
        resolve(&b, false, &v("crate::a::c::f"), &mods),
        Some(vec!["a".into(), "c".into()])
    );
    let mut adj: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    let c: Module = vec!["a".into(), "c".into()];
    adj.entry(&b).or_default().insert(&c);
    adj.entry(&c).or_default().insert(&b);
    assert_eq!(tarjan(&adj).len(), 1, "a two-module cycle is found");
}

/// The rooms drawn in docs/architecture.md's "Layout" block: each line `NAME/` (a folder) or
/// `NAME.rs` (a top-level file), indented two spaces per level, then what it holds.
fn drawn_layout(doc: &str) -> Result<Vec<(String, String)>, String> {
    let start = doc
        .find("### Layout")
        .ok_or("docs/architecture.md has no \"### Layout\" section")?;
    let rest = &doc[start..];
    let open = rest
        .find("```\n")
        .ok_or("the Layout section has no ``` block")?
        + 4;
    let close = rest[open..]
        .find("```")
        .ok_or("the Layout block is not closed")?;
    let mut stack: Vec<String> = Vec::new();
    let mut rooms = Vec::new();
    for line in rest[open..open + close].lines() {
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent % 2 != 0 || indent / 2 > stack.len() {
            return Err(format!("bad indentation (two spaces per level): {line:?}"));
        }
        let mut words = line.trim_start().splitn(2, ' ');
        let name = words.next().unwrap_or_default().to_string();
        let what = words.next().unwrap_or_default().trim().to_string();
        stack.truncate(indent / 2);
        let path = format!("{}{name}", stack.concat());
        if name.ends_with('/') {
            stack.push(name);
        }
        rooms.push((path, what));
    }
    Ok(rooms)
}

/// Every folder under `dir` (relative to the repository root, with a trailing `/`).
fn folders(root: &Path, dir: &str, out: &mut BTreeSet<String>) {
    out.insert(format!("{dir}/"));
    let mut entries: Vec<_> = std::fs::read_dir(root.join(dir))
        .unwrap_or_else(|e| panic!("read {dir}: {e}"))
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    for name in entries {
        folders(root, &format!("{dir}/{name}"), out);
    }
}

#[test]
fn the_layout_in_docs_is_the_layout_of_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md"))
        .unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
    let rooms = drawn_layout(&doc).unwrap_or_else(|e| panic!("{e}"));
    let drawn: BTreeSet<String> = rooms.iter().map(|(p, _)| p.clone()).collect();
    let mut real = BTreeSet::new();
    folders(root, "src", &mut real);
    folders(root, "aqm/src", &mut real);
    let mut bad: Vec<String> = Vec::new();
    for f in real.difference(&drawn) {
        bad.push(format!("{f} is not drawn (add a line for it)"));
    }
    for (path, what) in &rooms {
        if !root.join(path.trim_end_matches('/')).exists() {
            bad.push(format!("{path} is drawn but does not exist"));
        }
        if what.is_empty() {
            bad.push(format!("{path} has no line saying what it holds"));
        }
    }
    // The top-level file modules are rooms too.
    for entry in std::fs::read_dir(root.join("src"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") && !drawn.contains(&format!("src/{name}")) {
            bad.push(format!("src/{name} is not drawn (add a line for it)"));
        }
    }
    assert!(
        bad.is_empty(),
        "docs/architecture.md's Layout against the tree:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_layout_reader_follows_the_indentation() {
    let doc =
        "### Layout\n\n```\nsrc/\n  a.rs  file\n  b/  folder\n    c/  inner\n  d/  next\n```\n";
    let rooms = drawn_layout(doc).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<&str> = rooms.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["src/", "src/a.rs", "src/b/", "src/b/c/", "src/d/"]);
    assert_eq!(rooms[0].1, "");
    assert!(drawn_layout("### Layout\n```\nsrc/\n   x/ odd\n```\n").is_err());
    assert!(drawn_layout("no layout here").is_err());
}
