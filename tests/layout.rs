//! The crate's layout keeps its architecture: no module imports another that imports it back
//! (directly or through others), and each of the parts `lib.rs` names (a top-level module or
//! folder) uses only those below it. Read from the sources: every `crate::` and `super::` path
//! of every file of `src/`, resolved to the module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module a source file is (`src/rules/writers/mod.rs`: `rules::writers`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The paths a file names: `crate::a::b::{c, d}` gives `a::b::c` and `a::b::d`; `super::x` is
/// resolved against the file's module.
fn paths(text: &str, module: &[String], is_mod_file: bool) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let (start, base) = if rest.starts_with("crate::") && (i == 0 || !ident(bytes[i - 1])) {
            (i + 7, Vec::new())
        } else if rest.starts_with("super::") && (i == 0 || !ident(bytes[i - 1])) {
            // In `a/b.rs` (module a::b) super is `a`; in `a/b/mod.rs` (a::b) too.
            let mut base = module.to_vec();
            if !is_mod_file || base.len() > 1 {
                base.pop();
            }
            (i + 7, base)
        } else {
            i += 1;
            continue;
        };
        // The path's segments, and a `{...}` group at its end.
        let mut j = start;
        let mut path = base.clone();
        loop {
            let seg: String = bytes[j..].iter().take_while(|c| ident(**c)).collect();
            if seg.is_empty() {
                break;
            }
            j += seg.len();
            path.push(seg);
            if bytes.get(j..j + 2).is_some_and(|s| s == [':', ':']) {
                j += 2;
            } else {
                break;
            }
        }
        if bytes.get(j) == Some(&'{') {
            let close = (j..bytes.len())
                .find(|&k| bytes[k] == '}')
                .unwrap_or(bytes.len());
            let group: String = bytes[j + 1..close].iter().collect();
            for item in group.split(',') {
                let head: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                if !head.is_empty() && head != "self" {
                    let mut p = path.clone();
                    p.push(head);
                    out.push(p);
                }
            }
        }
        out.push(path);
        i = j.max(i + 1);
    }
    out
}

/// The crate's modules and which uses which (by the longest module prefix of each path).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeMap<Vec<String>, PathBuf> = all
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let is_mod = file.file_name().is_some_and(|n| n == "mod.rs");
        let from = module.join("::");
        edges.entry(from.clone()).or_default();
        for path in paths(&text, module, is_mod) {
            let target = (0..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|p| !p.is_empty() && modules.contains_key(*p));
            if let Some(target) = target {
                let to = target.join("::");
                // A module naming its own items or a parent naming its children is no import
                // of another module's.
                if to != from && !to.starts_with(&format!("{from}::")) && !from.is_empty() {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

/// A circle in `edges`, if there is one, as the modules along it.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|n| n == next).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(next.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if !state.contains_key(node) {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = graph();
    assert!(edges.len() > 20, "the modules were not found: {edges:?}");
    if let Some(c) = circle(&edges) {
        panic!("an import circle: {}", c.join(" -> "));
    }
}

#[test]
fn each_part_uses_only_the_parts_below_it() {
    let part = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let mut parts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph() {
        let entry = parts.entry(part(&from)).or_default();
        entry.extend(tos.iter().map(|t| part(t)).filter(|t| *t != part(&from)));
    }
    if let Some(c) = circle(&parts) {
        panic!("the parts import each other: {}", c.join(" -> "));
    }
    // The order lib.rs gives: the rules over the owner model over the tools over reading.
    let uses = |a: &str, b: &str| parts.get(a).is_some_and(|s| s.contains(b));
    for (lower, higher) in [
        ("reading", "tools"),
        ("reading", "owners"),
        ("reading", "rules"),
        ("tools", "owners"),
        ("tools", "rules"),
        ("owners", "rules"),
        ("settings", "rules"),
        ("settings", "owners"),
    ] {
        assert!(!uses(lower, higher), "{lower} uses {higher}: {parts:?}");
    }
}

#[test]
fn a_circle_is_found() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(circle(&edges).map(|c| c.len()), Some(4));
    edges.get_mut("c").unwrap().clear();
    assert_eq!(circle(&edges), None);
    // A grouped use names each module of the group.
    let p = paths(
        "use crate::rules::{describe::Subject, message};",
        &[],
        false,
    );
    assert!(p.contains(&vec!["rules".into(), "describe".into()]));
    assert!(p.contains(&vec!["rules".into(), "message".into()]));
}
