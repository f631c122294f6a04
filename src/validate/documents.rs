//! The objects a user hands to `validate` or `render`: files (multi-document YAML or JSON),
//! directories of them, standard input (`-`), and `kind: List` (what `kubectl get -o yaml`
//! prints), each object named by where it came from. Reads are bounded.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The most a single input (file or standard input) may hold.
pub const MAX_INPUT_BYTES: u64 = 10 << 20;

/// One object of the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Where it came from: `file`, `file#2` for the third document of a file, `file#0.items[3]`
    /// for the fourth item of a List; `-` is standard input.
    pub location: String,
    /// The object as written.
    pub object: Value,
}

/// Why the inputs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// An input is larger than [`MAX_INPUT_BYTES`].
    #[error("{what} is larger than {} MiB", MAX_INPUT_BYTES >> 20)]
    TooLarge {
        /// The input.
        what: String,
    },
    /// An input is not YAML or JSON.
    #[error("{what} is not YAML or JSON: {detail}")]
    Syntax {
        /// The input.
        what: String,
        /// The parser's message.
        detail: String,
    },
    /// A directory holds no manifest.
    #[error("{} holds no .yaml, .yml or .json file", path.display())]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
}

/// Reads every input in order; `-` reads `stdin`. Directories give their `.yaml`, `.yml` and
/// `.json` files in name order (not their subdirectories, as `kubectl -f DIR` does).
pub fn read_inputs(paths: &[PathBuf], stdin: impl Read) -> Result<Vec<Document>, ReadError> {
    let mut stdin = Some(stdin);
    let mut documents = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            let Some(input) = stdin.take() else {
                continue;
            };
            let text = read_bounded(input, "standard input")?;
            documents.extend(parse("-", &text)?);
        } else if path.is_dir() {
            let files = manifests_in(path)?;
            if files.is_empty() {
                return Err(ReadError::EmptyDirectory { path: path.clone() });
            }
            for file in files {
                documents.extend(read_file(&file)?);
            }
        } else {
            documents.extend(read_file(path)?);
        }
    }
    Ok(documents)
}

fn read_file(path: &Path) -> Result<Vec<Document>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let what = path.display().to_string();
    let text = read_bounded(file, &what)?;
    parse(&what, &text)
}

fn manifests_in(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let io = |source| ReadError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let manifest = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        );
        if manifest && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn read_bounded(input: impl Read, what: &str) -> Result<String, ReadError> {
    let mut text = String::new();
    input
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| ReadError::Syntax {
            what: what.to_owned(),
            detail: e.to_string(),
        })?;
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(ReadError::TooLarge {
            what: what.to_owned(),
        });
    }
    Ok(text)
}

/// The objects of one input's text: every non-empty document, Lists expanded.
pub fn parse(what: &str, text: &str) -> Result<Vec<Document>, ReadError> {
    let values: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| ReadError::Syntax {
        what: what.to_owned(),
        detail: e.to_string(),
    })?;
    let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    let single = values.len() == 1;
    let mut documents = Vec::new();
    for (index, value) in values.into_iter().enumerate() {
        let location = if single {
            what.to_owned()
        } else {
            format!("{what}#{index}")
        };
        if is_list(&value) {
            let items = value.get("items").and_then(Value::as_array);
            for (item, object) in items.into_iter().flatten().enumerate() {
                documents.push(Document {
                    location: format!("{location}.items[{item}]"),
                    object: object.clone(),
                });
            }
        } else {
            documents.push(Document {
                location,
                object: value,
            });
        }
    }
    Ok(documents)
}

/// `kind: List` (or any `...List` kind of `v1`), as kubectl prints several objects.
fn is_list(value: &Value) -> bool {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && kind.ends_with("List")
        && value.get("items").is_some_and(Value::is_array)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{MAX_INPUT_BYTES, ReadError, parse, read_inputs};

    #[test]
    fn documents_lists_and_empty_documents() {
        let text = "---\napiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n---\n---\n{kind: C}\n";
        let documents = parse("f.yaml", text).expect("parses");
        let where_: Vec<(&str, &str)> = documents
            .iter()
            .map(|d| {
                (
                    d.location.as_str(),
                    d.object["kind"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            where_,
            [
                ("f.yaml#0.items[0]", "A"),
                ("f.yaml#0.items[1]", "B"),
                ("f.yaml#1", "C")
            ]
        );
        assert_eq!(
            parse("g.json", "{\"kind\": \"D\"}").unwrap()[0].location,
            "g.json"
        );
    }

    #[test]
    fn stdin_directories_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.yaml"), "kind: B\n").unwrap();
        std::fs::write(dir.path().join("a.json"), "{\"kind\": \"A\"}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
        let paths = [dir.path().to_owned(), PathBuf::from("-")];
        let documents = read_inputs(&paths, "kind: S\n".as_bytes()).unwrap();
        let kinds: Vec<&str> = documents
            .iter()
            .map(|d| d.object["kind"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(kinds, ["A", "B", "S"]);
        assert_eq!(documents[2].location, "-");

        let big = "#".repeat(MAX_INPUT_BYTES as usize + 1);
        assert!(matches!(
            read_inputs(&[PathBuf::from("-")], big.as_bytes()),
            Err(ReadError::TooLarge { .. })
        ));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_inputs(&[empty.path().to_owned()], &b""[..]),
            Err(ReadError::EmptyDirectory { .. })
        ));
        assert!(matches!(
            parse("bad.yaml", "a: [unclosed"),
            Err(ReadError::Syntax { .. })
        ));
    }
}
