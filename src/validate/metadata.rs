//! `metadata` as the API server checks it on a custom resource: the name (present, a DNS
//! subdomain), label keys and values, annotation keys and the annotations' total size. The
//! fields and types of the causes are the API server's (`metadata.labels`, `metadata.annotations`).

use serde_json::{Map, Value};

use super::cause::{Cause, CauseType};

/// The API server's bound on all annotations of an object, keys and values together.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// The longest label value, and the longest name part of a qualified name.
const MAX_NAME_PART: usize = 63;

/// Every refusal of `object`'s metadata.
pub(super) fn causes(object: &Value) -> Vec<Cause> {
    let mut causes = name_causes(object);
    let meta = object.get("metadata");
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        causes.extend(label_causes(labels));
    }
    if let Some(annotations) = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        causes.extend(annotation_causes(annotations));
    }
    causes
}

/// `metadata.name`: present (or `generateName`), and a DNS subdomain.
fn name_causes(object: &Value) -> Vec<Cause> {
    let name = object.pointer("/metadata/name").and_then(Value::as_str);
    let generate_name = object
        .pointer("/metadata/generateName")
        .and_then(Value::as_str);
    match (name, generate_name) {
        (None | Some(""), None | Some("")) => vec![Cause::new(
            CauseType::Required,
            "metadata.name",
            "Required value: name or generateName is required".to_owned(),
        )],
        (Some(name), _) if !name.is_empty() && !is_dns_subdomain(name) => vec![Cause::new(
            CauseType::Invalid,
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        )],
        _ => Vec::new(),
    }
}

fn label_causes(labels: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (key, value) in labels {
        if let Some(problem) = qualified_name_problem(key) {
            causes.push(invalid("metadata.labels", key, &problem));
        }
        let value = value.as_str().unwrap_or_default();
        if let Some(problem) = label_value_problem(value) {
            causes.push(invalid("metadata.labels", value, &problem));
        }
    }
    causes
}

fn annotation_causes(annotations: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut total = 0;
    for (key, value) in annotations {
        // The API server checks annotation keys case-insensitively.
        if let Some(problem) = qualified_name_problem(&key.to_lowercase()) {
            causes.push(invalid("metadata.annotations", key, &problem));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > MAX_ANNOTATIONS_BYTES {
        causes.push(Cause::new(
            CauseType::TooLong,
            "metadata.annotations",
            format!("Too long: may not be more than {MAX_ANNOTATIONS_BYTES} bytes"),
        ));
    }
    causes
}

fn invalid(field: &str, value: &str, problem: &str) -> Cause {
    Cause::new(
        CauseType::Invalid,
        field,
        format!("Invalid value: \"{value}\": {problem}"),
    )
}

/// Why `key` is not a qualified name (`[prefix/]name`: an optional DNS subdomain, then a name
/// part of at most 63 characters), if it is not.
fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => (None, name),
        [prefix, name] => (Some(prefix), name),
        _ => {
            return Some(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/'".to_owned(),
            );
        }
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Some("prefix part must be non-empty".to_owned());
        }
        if !is_dns_subdomain(prefix) {
            return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_owned());
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".to_owned());
    }
    if name.len() > MAX_NAME_PART {
        return Some(format!(
            "name part must be no more than {MAX_NAME_PART} characters"
        ));
    }
    (!is_name_part(name)).then(|| {
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".to_owned()
    })
}

/// Why `value` is not a label value (empty, or a name part of at most 63 characters).
fn label_value_problem(value: &str) -> Option<String> {
    if value.len() > MAX_NAME_PART {
        return Some(format!("must be no more than {MAX_NAME_PART} characters"));
    }
    (!value.is_empty() && !is_name_part(value)).then(|| {
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".to_owned()
    })
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(object: Value) -> Vec<(String, CauseType)> {
        causes(&object)
            .into_iter()
            .map(|c| (c.field, c.kind))
            .collect()
    }

    #[test]
    fn labels_and_annotations_the_api_server_refuses_are_refused() {
        let refused = [
            json!({"labels": {"bad key": "v"}}),
            json!({"labels": {"a/b/c": "v"}}),
            json!({"labels": {"Example.COM/x": "v"}}),
            json!({"labels": {"/x": "v"}}),
            json!({"labels": {"x": "not valid!"}}),
            json!({"labels": {"x": "v".repeat(64)}}),
            json!({"labels": {"x".repeat(64): "v"}}),
            json!({"labels": {"x": "-leading"}}),
            json!({"annotations": {"bad key": "v"}}),
        ];
        for meta in refused {
            let mut object = json!({"metadata": meta.clone()});
            object["metadata"]["name"] = json!("s");
            let got = fields(object);
            assert_eq!(got.len(), 1, "{meta}: {got:?}");
            assert_eq!(got[0].1, CauseType::Invalid, "{meta}");
            assert!(got[0].0 == "metadata.labels" || got[0].0 == "metadata.annotations");
        }
    }

    #[test]
    fn labels_and_annotations_the_api_server_admits_are_admitted() {
        let object = json!({"metadata": {"name": "s",
            "labels": {"app.kubernetes.io/name": "llama", "x": "", "a_b.c-d": "V1.0_x", "x".repeat(63): "v".repeat(63)},
            "annotations": {"Example.com/Mixed_Case": "any text at all: ✓", "kubectl.kubernetes.io/last-applied-configuration": "{}"}}});
        assert_eq!(fields(object), Vec::new());
    }

    #[test]
    fn annotations_over_256_kib_in_all_are_too_long() {
        let object = json!({"metadata": {"name": "s", "annotations": {
            "a": "x".repeat(MAX_ANNOTATIONS_BYTES / 2), "b": "x".repeat(MAX_ANNOTATIONS_BYTES / 2)}}});
        assert_eq!(
            fields(object),
            vec![("metadata.annotations".to_owned(), CauseType::TooLong)]
        );
    }
}
