//! The core stays pure: no file under `src/core/` names the API client, awaits, reads the clock,
//! reaches the network, the file system or a process, or imports the controller or the
//! `OGXServer` door (its API module, its translation: the door knows the core, not the other way
//! round). Test code (the `tests/` folder, the `tests.rs` files and `mod tests` blocks) and
//! comments are not held to it.

use std::path::{Path, PathBuf};

/// What the core must not name, and why, as patterns over its code without comments.
const FORBIDDEN: &[(&str, &str)] = &[
    (r"\bkube::(Api|Client)\b", "the API client"),
    (r"\bkube::\{[^}]*\b(Api|Client)\b", "the API client"),
    (r"\bkube::api::\{[^}]*\bApi\b", "the API client"),
    (r"\bkube::api::Api\b", "the API client"),
    (
        r"\bApi\s*(<|::<|::(namespaced|all|default_namespaced))",
        "the API client",
    ),
    (r"\.await\b", "an await"),
    (r"\basync\s+(fn|move|\{)", "an async function"),
    (
        r"\b(Timestamp|Instant|SystemTime|Zoned|Utc|Local)::now\b",
        "the clock",
    ),
    (r"\bcrate::controller\b", "the controller"),
    (r"\bcrate::(api::ogx|ogx_server)\b", "the OGXServer door"),
    (r"\b(tokio|reqwest|hyper)::", "the runtime or the network"),
    (
        r"\bstd::(fs|net|process|env)\b",
        "the file system, network, a process or the environment",
    ),
];

/// Every `.rs` file under `dir`, tests (a `tests/` folder, a `tests.rs`) aside.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/core is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path
                .file_name()
                .is_some_and(|n| n != "tests.rs" && n != "purity.rs")
        {
            found.push(path);
        }
    }
}

/// The code of a file that the rule holds: without its `#[cfg(test)] mod tests { .. }` blocks and
/// without comments.
fn held_code(source: &str) -> String {
    let mut code = String::new();
    let mut lines = source.lines().peekable();
    // The depth of braces inside a test module being skipped.
    let mut skipping: Option<i64> = None;
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let without_comment = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        if let Some(depth) = skipping.as_mut() {
            *depth += braces(without_comment);
            if *depth <= 0 {
                skipping = None;
            }
            code.push('\n');
            continue;
        }
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests {"))
        {
            skipping = Some(0);
            code.push('\n');
            continue;
        }
        code.push_str(without_comment);
        code.push('\n');
    }
    code
}

/// How many more braces `code` opens than it closes.
fn braces(code: &str) -> i64 {
    code.chars()
        .map(|c| match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        })
        .sum()
}

/// What in `source` breaks the rule: `(line, what it names)`.
fn violations(source: &str) -> Vec<(usize, &'static str)> {
    let patterns: Vec<(regex::Regex, &str)> = FORBIDDEN
        .iter()
        .map(|(pattern, what)| (regex::Regex::new(pattern).expect("a valid pattern"), *what))
        .collect();
    let code = held_code(source);
    let mut found = Vec::new();
    for (pattern, what) in &patterns {
        for hit in pattern.find_iter(&code) {
            let line = code[..hit.start()].matches('\n').count() + 1;
            found.push((line, *what));
        }
    }
    found
}

#[test]
fn the_core_names_no_client_await_clock_or_controller() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 10, "src/core has its modules: {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a readable source");
        for (line, what) in violations(&source) {
            broken.push(format!("{}:{line} names {what}", file.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "the core is not pure:\n{}",
        broken.join("\n")
    );
}

/// The rule can fail: each thing it forbids is found, in code and not in comments or tests.
#[test]
fn the_rule_finds_what_it_forbids() {
    let cases = [
        (
            "let pods: Api<Pod> = Api::namespaced(client, ns);",
            "the API client",
        ),
        ("use kube::{Api, ResourceExt};", "the API client"),
        ("use kube::api::{Api, Patch};", "the API client"),
        ("fn f(c: kube::Client) {}", "the API client"),
        ("let d = deployments.get(name).await?;", "an await"),
        ("pub async fn look() {}", "an async function"),
        ("let now = jiff::Timestamp::now();", "the clock"),
        ("let t = std::time::Instant::now();", "the clock"),
        ("use crate::controller::context::Context;", "the controller"),
        ("use crate::api::ogx;", "the OGXServer door"),
        (
            "let port = crate::ogx_server::metrics_port(spec);",
            "the OGXServer door",
        ),
        (
            "let text = std::fs::read_to_string(p);",
            "the file system, network, a process or the environment",
        ),
    ];
    for (code, what) in cases {
        let found = violations(code);
        assert!(found.iter().any(|(_, w)| *w == what), "{code}: {found:?}");
    }
    let clean = "use kube::api::{ApiResource, DynamicObject};\n\
                 // a comment may say .await or Timestamp::now()\n\
                 let at = now; // passed in, not read\n\
                 #[cfg(test)]\n\
                 mod tests {\n    fn t() { let _ = jiff::Timestamp::now(); }\n}\n";
    assert_eq!(violations(clean), Vec::new());
    // Code after a test module is held again.
    let after = format!("{clean}fn later() {{ let _ = jiff::Timestamp::now(); }}\n");
    assert_eq!(violations(&after), vec![(8, "the clock")]);
}
