//! The layer order of the library, enforced: every `crate::…` / `super::…` path in `src/`
//! (imports, inline paths, test modules included; comments excluded) must point to a module in
//! the same layer or a lower one, and the file-level import graph must have no cycle. The
//! layers, lowest first, are listed in [`LAYERS`] and drawn in `docs/ARCHITECTURE.md`.
//!
//! Run with `cargo test --release --test layering -- --nocapture` to print the layer list and
//! the graph's size.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers, lowest first: (name, top-level modules of `src/`).
const LAYERS: &[(&str, &[&str])] = &[
    ("foundation", &["error", "prec", "seed_streams", "progress"]),
    ("numerics", &["linalg"]),
    ("data", &["federation", "synthetic", "io"]),
    ("measures", &["metrics"]),
    ("parameters", &["params"]),
    ("round engine", &["engine"]),
    ("algorithms", &["algorithms"]),
    ("evaluation", &["output", "validate", "runner"]),
    ("interface", &["prelude", "lib", "main", "cli"]),
];

/// A source file: its path relative to `src/` without `.rs` (`engine/recorder`, `params/mod`).
type Files = BTreeMap<String, String>;

fn read_sources(dir: &Path, root: &Path, out: &mut Files) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_sources(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap().with_extension("");
            let key = rel.to_string_lossy().replace('\\', "/");
            out.insert(key, std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// The text without comments and string literals (so doc links and messages are not edges).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The module path of a file key (`algorithms/ifca/mod` → `[algorithms, ifca]`).
fn module_of(key: &str) -> Vec<String> {
    let mut segs: Vec<String> = key.split('/').map(str::to_string).collect();
    if matches!(
        segs.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        segs.pop();
    }
    segs
}

/// The file a module path (plus possibly an item name) resolves to.
fn resolve(files: &Files, segs: &[String]) -> Option<String> {
    let mut best = None;
    for n in 1..=segs.len() {
        let base = segs[..n].join("/");
        if files.contains_key(&base) {
            best = Some((base, n));
        } else if files.contains_key(&format!("{base}/mod")) {
            best = Some((format!("{base}/mod"), n));
        } else {
            break;
        }
    }
    let (file, n) = best?;
    // An item re-exported by a directory module (`pub use child::*`): the child defining it.
    if file.ends_with("/mod") && n < segs.len() {
        let dir = file.trim_end_matches("/mod");
        let name = &segs[n];
        for (k, text) in files.range(format!("{dir}/")..) {
            if !k.starts_with(&format!("{dir}/")) {
                break;
            }
            if k[dir.len() + 1..].contains('/') || k.ends_with("/mod") {
                continue;
            }
            let code = code_only(text);
            let defines = ["fn", "struct", "enum", "const", "static", "trait", "type"]
                .iter()
                .any(|kw| {
                    code.lines().any(|l| {
                        let l = l.trim_start();
                        let l = l.strip_prefix("pub ").unwrap_or(l);
                        l.strip_prefix(kw)
                            .and_then(|r| r.strip_prefix(' '))
                            .is_some_and(|r| {
                                r.starts_with(name.as_str())
                                    && !r[name.len()..]
                                        .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                            })
                    })
                });
            if defines {
                return Some(k.clone());
            }
        }
    }
    Some(file)
}

/// Every path rooted at `crate`, `super` or `self` in `code`, as absolute module segments.
fn paths_in(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != ':';
        if starts_word && is_ident(bytes[i]) {
            // Read a path a::b::{c, d::e} (braces flattened to every leaf).
            let mut j = i;
            while j < bytes.len() && (is_ident(bytes[j]) || bytes[j] == ':') {
                j += 1;
            }
            let head: String = bytes[i..j].iter().collect();
            let segs: Vec<String> = head
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            if matches!(
                segs.first().map(String::as_str),
                Some("crate" | "super" | "self")
            ) && head.contains("::")
            {
                let mut base: Vec<String> = Vec::new();
                let mut k = 0;
                if segs[0] == "crate" {
                    k = 1;
                } else {
                    base = module.to_vec();
                    while k < segs.len() && (segs[k] == "super" || segs[k] == "self") {
                        if segs[k] == "super" {
                            base.pop();
                        }
                        k += 1;
                    }
                }
                base.extend(segs[k..].iter().cloned());
                // A brace group right after `::`: add each leaf's first segment.
                if j < bytes.len() && bytes[j] == '{' {
                    let mut depth = 0;
                    let mut e = j;
                    while e < bytes.len() {
                        if bytes[e] == '{' {
                            depth += 1;
                        } else if bytes[e] == '}' {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        e += 1;
                    }
                    let inner: String = bytes[j + 1..e.min(bytes.len())].iter().collect();
                    for leaf in inner.split([',', '{', '}']) {
                        let first = leaf.trim().split("::").next().unwrap_or("").trim();
                        if !first.is_empty() && first != "self" && first.chars().all(is_ident) {
                            let mut p = base.clone();
                            p.push(first.to_string());
                            out.push(p);
                        }
                    }
                    out.push(base);
                    i = e;
                    continue;
                }
                out.push(base);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn layer_of(key: &str) -> usize {
    let top = key.split('/').next().unwrap();
    LAYERS
        .iter()
        .position(|(_, mods)| mods.contains(&top))
        .unwrap_or_else(|| panic!("src/{key}.rs is in no layer: add its module to LAYERS"))
}

/// File-level edges `from → to` (self-edges dropped).
fn edges(files: &Files) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (key, text) in files {
        let module = module_of(key);
        // A directory module's `mod child;` / `pub use child::…` lines declare and re-export
        // its children; they are not a dependency of the module on them.
        let code: String = code_only(text)
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                let declares = l.starts_with("mod ") || l.starts_with("pub mod ");
                let reexport = (key.ends_with("/mod") || key == "lib") && l.starts_with("pub use ");
                !declares && !reexport
            })
            .collect::<Vec<_>>()
            .join("\n");
        for p in paths_in(&code, &module) {
            if let Some(to) = resolve(files, &p) {
                if &to != key {
                    out.insert((key.clone(), to));
                }
            }
        }
    }
    out
}

/// Every edge against the layer order, and every file-level cycle (as a list of files).
fn violations(files: &Files) -> Vec<String> {
    let e = edges(files);
    let mut v: Vec<String> = e
        .iter()
        .filter(|(a, b)| layer_of(b) > layer_of(a))
        .map(|(a, b)| {
            format!(
                "src/{a}.rs ({}) imports src/{b}.rs ({}), a higher layer",
                LAYERS[layer_of(a)].0,
                LAYERS[layer_of(b)].0
            )
        })
        .collect();
    // Cycles: strongly connected components of size > 1 (Tarjan).
    let nodes: Vec<&String> = files.keys().collect();
    let idx: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (a, b) in &e {
        adj[idx[a]].push(idx[b]);
    }
    struct T {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        comps: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, adj: &[Vec<usize>], v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in &adj[v] {
            match t.index[w] {
                None => {
                    visit(t, adj, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            t.comps.push(comp);
        }
    }
    let n = nodes.len();
    let mut t = T {
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        comps: Vec::new(),
    };
    for s in 0..n {
        if t.index[s].is_none() {
            visit(&mut t, &adj, s);
        }
    }
    for c in t.comps.iter().filter(|c| c.len() > 1) {
        let mut names: Vec<String> = c.iter().map(|&i| format!("src/{}.rs", nodes[i])).collect();
        names.sort();
        v.push(format!("import cycle: {}", names.join(" ↔ ")));
    }
    v
}

fn sources() -> Files {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Files::new();
    read_sources(&root, &root, &mut files);
    files
}

#[test]
fn imports_follow_the_layer_order_and_have_no_cycle() {
    let files = sources();
    let e = edges(&files);
    println!("layers, lowest first:");
    for (i, (name, mods)) in LAYERS.iter().enumerate() {
        println!("  {i} {name}: {}", mods.join(", "));
    }
    println!("{} files, {} file-level import edges", files.len(), e.len());
    let v = violations(&files);
    for line in &v {
        println!("  {line}");
    }
    assert!(
        v.is_empty(),
        "{} layering violations:\n{}",
        v.len(),
        v.join("\n")
    );
    println!("0 back-edges, 0 cycles");
}

/// `docs/ARCHITECTURE.md` states the tree as it is: its "Today: N files, E file-level edges"
/// line equals what this test reads from `src/`.
#[test]
fn the_architecture_doc_states_the_current_tree() {
    let files = sources();
    let e = edges(&files);
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
            .expect("docs/ARCHITECTURE.md");
    let want = format!("Today: {} files, {} file-level edges", files.len(), e.len());
    assert!(
        doc.contains(&want),
        "docs/ARCHITECTURE.md must say \"{want}\" (the tree changed: update its count)"
    );
}

#[test]
fn a_planted_back_edge_and_a_planted_cycle_are_caught() {
    // The metrics (measures layer) importing an algorithm: a back-edge.
    let mut files = sources();
    files
        .get_mut("metrics/mod")
        .unwrap()
        .push_str("\nuse crate::algorithms::two_phase::TwoPhase;\n");
    let v = violations(&files);
    assert!(
        v.iter().any(
            |l| l.contains("src/metrics/mod.rs (measures) imports src/algorithms/two_phase.rs")
        ),
        "{v:?}"
    );
    // Two engine files importing each other: a cycle inside one layer.
    let mut files = sources();
    files
        .get_mut("engine/init")
        .unwrap()
        .push_str("\nfn planted() { let _ = crate::engine::recorder::Recorder::quiet(); }\n");
    files
        .get_mut("engine/recorder")
        .unwrap()
        .push_str("\nfn planted() { let _ = crate::engine::init::random_init; }\n");
    let v = violations(&files);
    assert!(
        v.iter().any(|l| l.starts_with("import cycle")
            && l.contains("src/engine/init.rs")
            && l.contains("src/engine/recorder.rs")),
        "{v:?}"
    );
    // A doc comment or a string naming a higher layer is not an import.
    let mut files = sources();
    files.get_mut("metrics/mod").unwrap().push_str(
        "\n/// See [`crate::algorithms::two_phase::TwoPhase`].\nconst _S: &str = \"crate::algorithms::x\";\n",
    );
    assert!(violations(&files).is_empty());
}

/// `docs/ARCHITECTURE.md`'s recipe for adding an algorithm counts the files the change touches
/// ("Counted: … : N files."): every file it names exists, each resolving to one file of the
/// tree, and the count is the names plus the experiment file. A renamed or moved file, or a
/// count not updated, fails here.
#[test]
fn the_recipes_file_list_names_files_of_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("doc");
    let start = doc.find("\nCounted: ").expect("the recipe's Counted: list");
    let rest = &doc[start..];
    let end = rest.find(" files.").expect("…: N files.");
    let list = &rest[..end];
    let (names, count) = list.rsplit_once(": ").expect("names: N");
    let count: usize = count.trim().parse().expect("a file count");
    let names: Vec<&str> = names.split('`').skip(1).step_by(2).collect();
    assert!(
        names.len() >= 10,
        "the list should name the files it counts: {names:?}"
    );
    assert!(
        list.contains("the experiment file"),
        "the experiment file is counted without a name"
    );
    assert_eq!(
        count,
        names.len() + 1,
        "the stated count is the named files plus the experiment file: {names:?}"
    );
    let roots = [
        "",
        "src/",
        "src/params/",
        "src/algorithms/",
        "theory-checks/src/",
    ];
    for name in names {
        let found: Vec<String> = roots
            .iter()
            .map(|r| format!("{r}{name}"))
            .filter(|p| root.join(p).is_file())
            .collect();
        assert_eq!(found.len(), 1, "`{name}` resolves to {found:?}");
    }
}
