//! Every relative link of the repository's Markdown (the README, the CHANGELOG, `docs/`) names a
//! file that exists and, with a `#fragment`, a heading of it (GitHub's anchors). Links inside
//! code spans and fenced blocks are text, not links.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The Markdown files checked.
fn markdown(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found
}

/// The text of `source` outside fenced blocks and code spans.
fn prose(source: &str) -> String {
    let mut text = String::new();
    let mut fenced = false;
    for line in source.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Odd pieces between backticks are code spans.
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 0 {
                text.push_str(piece);
            }
        }
        text.push('\n');
    }
    text
}

/// The targets of the inline links `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if !target.contains(char::is_whitespace) {
                found.push(target.to_owned());
            }
        }
    }
    found
}

/// GitHub's anchors of the headings of `source`: lowercase, punctuation dropped but `-` and
/// `_`, spaces as `-`.
fn anchors(source: &str) -> BTreeSet<String> {
    prose_headings(source)
        .map(|heading| {
            heading
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

fn prose_headings(source: &str) -> impl Iterator<Item = String> + '_ {
    let mut fenced = false;
    source.lines().filter_map(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        let heading = line.strip_prefix('#').filter(|_| !fenced)?;
        Some(heading.trim_start_matches('#').trim().to_owned())
    })
}

/// What is wrong with the links of the file `path` (of content `source`).
fn broken(path: &Path, source: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for target in links(&prose(source)) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
        let named = match file {
            "" => path.to_path_buf(),
            file => path.parent().unwrap().join(file),
        };
        if !named.exists() {
            wrong.push(format!("{}: {target}: no such file", path.display()));
            continue;
        }
        let is_markdown = named.extension().is_some_and(|e| e == "md");
        if !fragment.is_empty() && is_markdown {
            let text = match file {
                "" => source.to_owned(),
                _ => std::fs::read_to_string(&named).unwrap(),
            };
            if !anchors(&text).contains(fragment) {
                wrong.push(format!("{}: {target}: no such heading", path.display()));
            }
        }
    }
    wrong
}

#[test]
fn every_link_of_the_docs_names_a_file_and_a_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown(root);
    assert!(files.len() > 20, "{files:?}");
    let wrong: Vec<String> = files
        .iter()
        .flat_map(|path| broken(path, &std::fs::read_to_string(path).unwrap()))
        .collect();
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
}

/// The check can fail: a missing file and a missing heading are found; code is not a link.
#[test]
fn a_link_to_nothing_is_found() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let source = "# Title here\n[a](docs/nothing.md) [b](#title-here) [c](#no-such) `[d](e)`\n";
    let wrong = broken(&here, source);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].contains("docs/nothing.md: no such file"),
        "{wrong:?}"
    );
    assert!(wrong[1].contains("#no-such: no such heading"), "{wrong:?}");
}
