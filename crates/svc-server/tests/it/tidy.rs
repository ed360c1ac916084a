//! Docs that check themselves (rust-analyzer's `tidy` habit): the layering rules of
//! docs/ARCHITECTURE.md and the file rules of docs/STYLE.md, checked over the source tree. Each
//! rule is a function of the files' text, so a test can show that it fails.

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
        ("axum outside http/ and the edge handlers", axum_outside_http),
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
        "axum outside http/ and the edge handlers: crates/svc-server/src/trust/new_kind.rs",
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
