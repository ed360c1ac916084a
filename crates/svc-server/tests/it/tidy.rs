//! Docs that check themselves (rust-analyzer's `tidy` habit): the layering rules of
//! docs/ARCHITECTURE.md and the file rules of docs/STYLE.md, checked over the source tree. Each
//! rule is a function of the files' text, so a test can show that it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its path relative to the workspace root, and its text.
struct File {
    path: String,
    text: String,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<File>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let path = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push(File {
                path,
                text: std::fs::read_to_string(&p).unwrap(),
            });
        }
    }
}

fn tree() -> Vec<File> {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &root, &mut files);
    assert!(
        files.len() > 100,
        "the source tree was not found from {}",
        root.display()
    );
    files
}

/// The file's code lines: comments (`//`, `//!`, `///`) left out.
fn code(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

fn mentions(text: &str, word: &str) -> bool {
    code(text).any(|l| {
        l.match_indices(word).any(|(i, _)| {
            let before = l[..i].chars().next_back();
            let after = l[i + word.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

const SERVER: &str = "crates/svc-server/src/";

/// Architecture invariant 3: only `http` (with the Edge API's handlers, `http/edge/`) knows axum.
fn axum_outside_http(f: &File) -> bool {
    let allowed = f.path.starts_with("crates/svc-server/src/http/");
    f.path.starts_with(SERVER) && !allowed && mentions(&f.text, "axum")
}

/// Architecture invariant 3: only `store` knows SQL.
fn sqlx_outside_store(f: &File) -> bool {
    f.path.starts_with(SERVER) && !f.path.starts_with("crates/svc-server/src/store/") && mentions(&f.text, "sqlx")
}

/// Architecture invariant 2: verifiers, backends and the decision get narrow contexts, never
/// the application (and so never the database).
fn app_in_narrow_code(f: &File) -> bool {
    ["trust/", "credential/", "policy/"]
        .iter()
        .any(|d| f.path.starts_with(&format!("{SERVER}{d}")))
        && (mentions(&f.text, "crate::app") || code(&f.text).any(|l| l.contains("svc_server::app")))
}

/// Architecture invariant 1: `policy` decides, without I/O.
fn io_in_policy(f: &File) -> bool {
    f.path.starts_with(&format!("{SERVER}policy/"))
        && ["async", "tokio", "reqwest", "await"]
            .iter()
            .any(|w| mentions(&f.text, w))
}

/// STYLE.md: every file starts with a `//!` line saying what it is for.
fn no_module_doc(f: &File) -> bool {
    !f.text.starts_with("//!")
}

/// A rule: its name and the test a file fails.
type Rule = (&'static str, fn(&File) -> bool);

/// The rules, by name, and the files each one finds.
fn violations(files: &[File]) -> Vec<String> {
    let rules: [Rule; 5] = [
        ("axum outside http/", axum_outside_http),
        ("sqlx outside store/", sqlx_outside_store),
        ("crate::app in trust/, credential/ or policy/", app_in_narrow_code),
        ("I/O in policy/", io_in_policy),
        ("no //! first line", no_module_doc),
    ];
    let mut out = Vec::new();
    for (name, rule) in rules {
        for f in files.iter().filter(|f| rule(f)) {
            out.push(format!("{name}: {}", f.path));
        }
    }
    out
}

#[test]
fn the_source_tree_keeps_the_layering_and_file_rules() {
    let v = violations(&tree());
    assert!(v.is_empty(), "tidy violations:\n{}", v.join("\n"));
}

#[test]
fn an_axum_import_under_trust_is_a_violation() {
    let mut files = tree();
    files.push(File {
        path: format!("{SERVER}trust/new_kind.rs"),
        text: "//! A new kind.\n\nuse axum::Router;\n".into(),
    });
    files.push(File {
        path: format!("{SERVER}credential/new_type.rs"),
        text: "//! A new type.\n\nuse crate::app::App;\n".into(),
    });
    files.push(File {
        path: format!("{SERVER}policy/step.rs"),
        text: "use sqlx::Row;\npub async fn step() {}\n".into(),
    });
    let v = violations(&files);
    for expected in [
        "axum outside http/: crates/svc-server/src/trust/new_kind.rs",
        "crate::app in trust/, credential/ or policy/: crates/svc-server/src/credential/new_type.rs",
        "sqlx outside store/: crates/svc-server/src/policy/step.rs",
        "I/O in policy/: crates/svc-server/src/policy/step.rs",
        "no //! first line: crates/svc-server/src/policy/step.rs",
    ] {
        assert!(v.iter().any(|x| x == expected), "missing '{expected}' in {v:?}");
    }
    // A comment that names a crate is no import.
    assert!(!mentions("// axum is not used here\n", "axum"));
    assert!(!mentions("let maxumum = 1;\n", "axum"));
}

/// Architecture invariant 3, the allowed-imports matrix: each top-level module of
/// `crates/svc-server/src` and the modules its code may name as `crate::<module>` (tests inside a
/// module, `#[cfg(test)] mod tests`, may reach further). The matrix has no cycle
/// ([`the_allowed_imports_have_no_cycle`]), so neither has the code; a new import between
/// modules is a new entry here, where a review sees it. Listed bottom-up, as in ARCHITECTURE.md.
const ALLOWED: &[(&str, &[&str])] = &[
    ("clock", &[]),
    ("metrics", &[]),
    ("net", &[]),
    ("platform", &[]),
    ("util", &[]),
    ("crypto", &["util"]),
    ("config", &["crypto", "net", "platform", "util"]),
    ("limits", &["config"]),
    ("store", &["clock", "config", "crypto"]),
    ("error", &["store"]),
    ("issuer", &["clock", "config", "crypto", "store"]),
    ("domain", &["crypto", "error"]),
    ("upstream", &["config", "crypto", "error", "metrics", "net"]),
    (
        "trust",
        &[
            "clock", "config", "crypto", "domain", "issuer", "metrics", "platform", "upstream",
        ],
    ),
    (
        "credential",
        &[
            "clock", "config", "crypto", "domain", "error", "issuer", "metrics", "trust", "upstream",
        ],
    ),
    (
        "events",
        &[
            "clock",
            "config",
            "credential",
            "domain",
            "metrics",
            "platform",
            "store",
            "upstream",
            "util",
        ],
    ),
    ("state", &["clock", "credential", "domain", "trust"]),
    ("policy", &["credential", "domain", "net", "state", "trust"]),
    ("caches", &["crypto", "domain", "policy", "trust", "util"]),
    ("geoip", &["policy"]),
    (
        "app",
        &[
            "caches",
            "clock",
            "config",
            "credential",
            "crypto",
            "events",
            "geoip",
            "issuer",
            "limits",
            "state",
            "store",
            "trust",
            "upstream",
        ],
    ),
    (
        "edge",
        &[
            "app",
            "caches",
            "clock",
            "credential",
            "crypto",
            "domain",
            "events",
            "metrics",
            "policy",
            "state",
            "store",
            "trust",
            "upstream",
            "util",
        ],
    ),
    (
        "service",
        &[
            "app",
            "clock",
            "config",
            "credential",
            "crypto",
            "domain",
            "edge",
            "error",
            "events",
            "geoip",
            "issuer",
            "limits",
            "metrics",
            "state",
            "store",
            "trust",
            "upstream",
        ],
    ),
    (
        "http",
        &[
            "app",
            "caches",
            "clock",
            "config",
            "credential",
            "crypto",
            "domain",
            "edge",
            "error",
            "events",
            "metrics",
            "net",
            "policy",
            "service",
            "state",
            "store",
            "trust",
            "upstream",
            "util",
        ],
    ),
];

/// The top-level module of a library file (`None` for `lib.rs`, `main.rs`, the binary's `cli/`
/// and files outside `crates/svc-server/src`).
fn module_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(SERVER)?;
    let first = rest.split('/').next()?;
    let m = first.strip_suffix(".rs").unwrap_or(first);
    (!["lib", "main", "cli"].contains(&m)).then_some(m)
}

/// A file's code without comments and without its `#[cfg(test)] mod … { … }` blocks.
fn non_test_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        let next = lines.get(i + 1).map(|n| n.trim()).unwrap_or_default();
        if l == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
            let mut depth = 0i64;
            i += 1;
            while i < lines.len() {
                depth += lines[i].matches('{').count() as i64 - lines[i].matches('}').count() as i64;
                i += 1;
                if depth <= 0 {
                    break;
                }
            }
            continue;
        }
        if !l.starts_with("//") {
            out.push_str(lines[i]);
            out.push('\n');
        }
        i += 1;
    }
    out
}

/// The modules a file's non-test code names: `crate::<module>` (also `$crate::` in a macro) and
/// each top-level name of a `crate::{…}` group.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code = non_test_code(text);
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].chars().next_back().is_some_and(ident) {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item, mut items) = (0, String::new(), Vec::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => item.push(c),
                }
            }
            items.push(item);
            for it in items {
                let name: String = it.trim().chars().take_while(|c| ident(*c)).collect();
                if !name.is_empty() && name != "self" {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| ident(*c)).collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Imports between top-level modules the matrix does not allow, and modules it does not list:
/// one line each, naming the file.
fn matrix_violations(files: &[File], allowed: &[(&str, &[&str])]) -> Vec<String> {
    let rows: BTreeMap<&str, &[&str]> = allowed.iter().copied().collect();
    let modules: BTreeSet<&str> = files.iter().filter_map(|f| module_of(&f.path)).collect();
    let mut out: Vec<String> = modules
        .iter()
        .filter(|m| !rows.contains_key(**m))
        .map(|m| format!("module {m} is not in the matrix"))
        .collect();
    for f in files {
        let Some(from) = module_of(&f.path) else {
            continue;
        };
        let may = rows.get(from).copied().unwrap_or_default();
        for to in named_modules(&f.text) {
            if to != from && modules.contains(to.as_str()) && !may.contains(&to.as_str()) {
                out.push(format!("{from} -> {to}: {}", f.path));
            }
        }
    }
    out
}

/// A cycle of the matrix, if it has one (the modules along it, the first repeated at the end).
fn matrix_cycle(allowed: &[(&str, &[&str])]) -> Option<Vec<String>> {
    fn visit<'a>(
        m: &'a str,
        rows: &BTreeMap<&'a str, &'a [&'a str]>,
        done: &mut BTreeSet<&'a str>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut c: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            c.push(m.to_string());
            return Some(c);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for next in rows.get(m).copied().unwrap_or_default() {
            if let Some(c) = visit(next, rows, done, path) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let rows: BTreeMap<&str, &[&str]> = allowed.iter().copied().collect();
    let mut done = BTreeSet::new();
    rows.keys().find_map(|m| visit(m, &rows, &mut done, &mut Vec::new()))
}

#[test]
fn the_modules_import_only_what_the_matrix_allows() {
    let v = matrix_violations(&tree(), ALLOWED);
    assert!(
        v.is_empty(),
        "imports between top-level modules that docs/ARCHITECTURE.md invariant 3 and ALLOWED in tests/it/tidy.rs do not allow \
         (move the code down, or add the entry if it keeps the matrix without a cycle):\n{}",
        v.join("\n")
    );
}

#[test]
fn the_allowed_imports_have_no_cycle() {
    assert_eq!(matrix_cycle(ALLOWED), None);
}

#[test]
fn an_import_against_the_matrix_or_a_cycle_is_found() {
    let mut files = tree();
    files.push(File {
        path: format!("{SERVER}store/new.rs"),
        text: "//! New.\n\nuse crate::app::App;\nuse crate::{clock, service::write::Write};\n// crate::http in a comment\n\n#[cfg(test)]\nmod tests {\n    use crate::edge::token;\n}\n".into(),
    });
    files.push(File {
        path: format!("{SERVER}newmod.rs"),
        text: "//! New.\n".into(),
    });
    let mut v = matrix_violations(&files, ALLOWED);
    v.sort();
    assert_eq!(
        v,
        [
            "module newmod is not in the matrix",
            "store -> app: crates/svc-server/src/store/new.rs",
            "store -> service: crates/svc-server/src/store/new.rs",
        ]
    );
    let cyclic: &[(&str, &[&str])] = &[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])];
    assert_eq!(
        matrix_cycle(cyclic),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(matrix_cycle(&cyclic[1..]), None);
}

/// Every top-level module of the server (the library's and the `svc` binary's) and every crate
/// appears in ARCHITECTURE.md's code map.
#[test]
fn the_code_map_names_every_module_and_crate() {
    let root = workspace_root();
    let arch = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let lib = std::fs::read_to_string(root.join("crates/svc-server/src/lib.rs")).unwrap();
    let bin = std::fs::read_to_string(root.join("crates/svc-server/src/main.rs")).unwrap();
    let mut missing = Vec::new();
    let modules = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .chain(bin.lines().filter_map(|l| l.trim().strip_prefix("mod ")));
    for m in modules {
        let m = m.trim_end_matches(';');
        if !arch.contains(&format!("`{m}/")) && !arch.contains(&format!("`{m}.rs`")) {
            missing.push(format!("module {m}"));
        }
    }
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let name = c.file_name().to_string_lossy().to_string();
        if !arch.contains(&format!("`crates/{name}`")) {
            missing.push(format!("crate {name}"));
        }
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md does not name: {missing:?}");
}

/// The workload-side client stays small: no server code, no database driver (edge-client.md).
#[test]
fn svc_edge_depends_on_neither_the_server_nor_a_database() {
    let toml = std::fs::read_to_string(workspace_root().join("crates/svc-edge/Cargo.toml")).unwrap();
    for forbidden in ["svc-server", "sqlx", "rusqlite", "postgres"] {
        assert!(!toml.contains(forbidden), "svc-edge depends on {forbidden}");
    }
}

/// The folders of `dir` (a test binary's areas), by name.
fn folders(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    out.sort();
    out
}

/// The test folders TESTING.md does not name: each folder of `tests/it` as `` `name/` `` in its
/// table, each crate's `tests` directory by its path.
fn unnamed_test_folders(testing: &str, it_folders: &[String], crate_test_dirs: &[String]) -> Vec<String> {
    let it = it_folders
        .iter()
        .filter(|f| !testing.contains(&format!("`{f}/`")))
        .map(|f| format!("crates/svc-server/tests/it/{f}/"));
    let crates = crate_test_dirs
        .iter()
        .filter(|d| !testing.contains(d.as_str()))
        .cloned();
    it.chain(crates).collect()
}

/// TESTING.md lists every folder of the integration tests and every crate's test directory, with
/// what it covers.
#[test]
fn testing_md_names_every_test_folder() {
    let root = workspace_root();
    let testing = std::fs::read_to_string(root.join("docs/TESTING.md")).unwrap();
    let it = folders(&root.join("crates/svc-server/tests/it"));
    assert!(it.len() > 10, "the test folders were not found");
    let crate_tests: Vec<String> = folders(&root.join("crates"))
        .into_iter()
        .filter(|c| root.join("crates").join(c).join("tests").is_dir())
        .map(|c| format!("crates/{c}/tests/"))
        .collect();
    let missing = unnamed_test_folders(&testing, &it, &crate_tests);
    assert!(missing.is_empty(), "docs/TESTING.md does not name: {missing:?}");
}

#[test]
fn a_test_folder_missing_from_testing_md_is_named() {
    let testing = "| `edge/` | the Edge API |\n`crates/svc-edge/tests/cli.rs` runs the binary";
    let missing = unnamed_test_folders(
        testing,
        &["edge".into(), "edge_client".into()],
        &["crates/svc-edge/tests/".into(), "crates/svc-api/tests/".into()],
    );
    assert_eq!(
        missing,
        ["crates/svc-server/tests/it/edge_client/", "crates/svc-api/tests/"]
    );
}

/// The Markdown pages of the repository's documentation: README.md and everything under docs/.
fn doc_pages(root: &Path) -> Vec<File> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<File>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                let path = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.push(File {
                    path,
                    text: std::fs::read_to_string(&p).unwrap(),
                });
            }
        }
    }
    let mut out = vec![File {
        path: "README.md".into(),
        text: std::fs::read_to_string(root.join("README.md")).unwrap(),
    }];
    walk(&root.join("docs"), root, &mut out);
    out
}

/// Citations a reader of the repository cannot follow: the design documents the service was
/// written from are not part of it, so the docs cite docs pages and the OpenAPI document.
fn outside_citations(f: &File) -> Vec<String> {
    ["shared/design", "shared/spec", "api-contract", "contract §"]
        .iter()
        .filter(|c| f.text.contains(**c))
        .map(|c| format!("{}: cites `{c}`", f.path))
        .collect()
}

#[test]
fn the_docs_cite_only_what_the_repository_holds() {
    let pages = doc_pages(&workspace_root());
    assert!(pages.len() > 20, "the docs were not found");
    let found: Vec<String> = pages.iter().flat_map(outside_citations).collect();
    assert!(found.is_empty(), "cite a docs page instead:\n{}", found.join("\n"));
}

#[test]
fn a_citation_of_the_design_documents_is_found() {
    let page = File {
        path: "docs/new.md".into(),
        text: "As the contract §4.8 says (shared/design/api-contract.md, shared/spec/edge-api.md).\n".into(),
    };
    assert_eq!(outside_citations(&page).len(), 4);
}
