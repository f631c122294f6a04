//! The corpus of the differential test: every sample and every real manifest (written outside
//! this project, `tests/fixtures/real-world`), each as written and mutated the ways users get
//! objects wrong: misspelt fields, wrong types, numbers out of range, empty and malformed
//! strings, a field removed, each CEL rule broken, names too long or malformed, a version that
//! does not exist. Deterministic: the same corpus on every run.

use std::path::Path;

use serde_json::{Value, json};

/// A named object of the corpus.
pub struct Case {
    pub label: String,
    pub object: Value,
}

/// At most this many mutations of each kind per seed, so that no seed dominates.
const PER_KIND: usize = 6;

fn seeds() -> Vec<(String, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = Vec::new();
    for dir in ["deploy/samples", "tests/fixtures/real-world"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("seed directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("seed");
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text).expect("seed YAML");
            for (i, mut object) in documents.into_iter().enumerate() {
                if object["kind"] != "LlamaStackDistribution" {
                    continue;
                }
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove("namespace");
                }
                let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("seed");
                seeds.push((format!("{name}#{i}"), object));
            }
        }
    }
    seeds
}

/// JSON pointers of every value under `/spec`, with the value, in document order.
fn leaves(value: &Value, pointer: String, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                leaves(child, format!("{pointer}/{escaped}"), out);
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                leaves(child, format!("{pointer}/{i}"), out);
            }
        }
        scalar => out.push((pointer, scalar.clone())),
    }
}

fn objects_under(value: &Value, pointer: String, depth: usize, out: &mut Vec<String>) {
    if depth > 4 {
        return;
    }
    match value {
        Value::Object(fields) => {
            out.push(pointer.clone());
            for (key, child) in fields {
                objects_under(child, format!("{pointer}/{key}"), depth + 1, out);
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                objects_under(child, format!("{pointer}/{i}"), depth + 1, out);
            }
        }
        _ => {}
    }
}

fn with(object: &Value, pointer: &str, value: Value) -> Value {
    let mut copy = object.clone();
    if let Some(slot) = copy.pointer_mut(pointer) {
        *slot = value;
    }
    copy
}

/// Spreads `PER_KIND` picks over `items` (first, last and between), so that mutations reach
/// deep fields too.
fn spread<T: Clone>(items: &[T]) -> Vec<T> {
    if items.len() <= PER_KIND {
        return items.to_vec();
    }
    (0..PER_KIND)
        .map(|i| items[i * (items.len() - 1) / (PER_KIND - 1)].clone())
        .collect()
}

fn mutations(label: &str, seed: &Value) -> Vec<Case> {
    let mut cases = vec![Case {
        label: format!("{label} as written"),
        object: seed.clone(),
    }];
    let mut push = |what: String, object: Value| {
        cases.push(Case {
            label: format!("{label} {what}"),
            object,
        })
    };
    let spec = &seed["spec"];
    let mut scalars = Vec::new();
    leaves(spec, "/spec".to_owned(), &mut scalars);
    for (pointer, value) in spread(&scalars) {
        let wrong = match value {
            Value::String(_) => json!(12345),
            Value::Bool(_) => json!("yes"),
            Value::Number(_) => json!("seven"),
            Value::Null => json!(["null", "list"]),
            _ => continue,
        };
        push(
            format!("{pointer} of the wrong type"),
            with(seed, &pointer, wrong),
        );
    }
    let numbers: Vec<_> = scalars
        .iter()
        .filter(|(_, v)| v.is_number())
        .cloned()
        .collect();
    for (pointer, _) in spread(&numbers) {
        push(format!("{pointer} = -1"), with(seed, &pointer, json!(-1)));
        push(
            format!("{pointer} too large"),
            with(seed, &pointer, json!(99_999_999)),
        );
    }
    let strings: Vec<_> = scalars
        .iter()
        .filter(|(_, v)| v.is_string())
        .cloned()
        .collect();
    for (pointer, _) in spread(&strings) {
        push(format!("{pointer} empty"), with(seed, &pointer, json!("")));
        push(
            format!("{pointer} malformed"),
            with(seed, &pointer, json!("Not_A-valid name!")),
        );
        push(
            format!("{pointer} too long"),
            with(seed, &pointer, json!("x".repeat(1100))),
        );
    }
    let mut objects = Vec::new();
    objects_under(spec, "/spec".to_owned(), 0, &mut objects);
    for pointer in spread(&objects) {
        let mut typo = seed.clone();
        if let Some(fields) = typo.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            fields.insert("zzTypo".to_owned(), json!("x"));
        }
        push(format!("{pointer} with a misspelt field"), typo);
    }
    for key in spec.as_object().into_iter().flat_map(|s| s.keys()) {
        let mut without = seed.clone();
        if let Some(fields) = without["spec"].as_object_mut() {
            fields.remove(key);
        }
        push(format!("without spec.{key}"), without);
    }
    let mut long = seed.clone();
    long["metadata"]["name"] = json!("n".repeat(56));
    push("with a 56-character name".to_owned(), long);
    let mut malformed = seed.clone();
    malformed["metadata"]["name"] = json!("Bad_Name");
    push("with a malformed name".to_owned(), malformed);
    for (what, labels) in [
        ("a label key with a space", json!({"bad key": "v"})),
        ("a malformed label value", json!({"tier": "not valid!"})),
        (
            "a 64-character label value",
            json!({"tier": "v".repeat(64)}),
        ),
    ] {
        let mut labelled = seed.clone();
        labelled["metadata"]["labels"] = labels;
        push(format!("with {what}"), labelled);
    }
    let mut annotated = seed.clone();
    annotated["metadata"]["annotations"] = json!({"Bad Key": "v"});
    push("with a malformed annotation key".to_owned(), annotated);
    let mut meta_typo = seed.clone();
    meta_typo["metadata"]["labls"] = json!({"a": "b"});
    push("with a misspelt metadata field".to_owned(), meta_typo);
    cases
}

/// Objects that break each CEL rule of the CRD, and the same shapes satisfying it.
fn rule_cases() -> Vec<Case> {
    let v2 = |spec: Value| {
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
               "metadata": {"name": "rule"}, "spec": spec})
    };
    let v1 = |spec: Value| {
        json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
               "metadata": {"name": "rule"}, "spec": spec})
    };
    let starter = json!({"name": "starter"});
    let specs: Vec<(&str, Value)> = vec![
        (
            "v1alpha2 name and image",
            v2(json!({"distribution": {"name": "starter", "image": "r/i:1"}})),
        ),
        (
            "v1alpha2 neither name nor image",
            v2(json!({"distribution": {}})),
        ),
        (
            "v1alpha2 image only",
            v2(json!({"distribution": {"image": "r/i:1"}})),
        ),
        (
            "v1alpha2 image with its server version",
            v2(json!({"distribution": {"image": "r/i:1", "serverVersion": "1.3.0"}})),
        ),
        (
            "v1alpha2 name with a server version",
            v2(json!({"distribution": {"name": "starter", "serverVersion": "1.3.0"}})),
        ),
        (
            "v1alpha2 server version that is no version",
            v2(json!({"distribution": {"image": "r/i:1", "serverVersion": "latest"}})),
        ),
        (
            "v1alpha1 image with its server version",
            v1(json!({"server": {"distribution": {"image": "r/i:1", "serverVersion": "v1.2"}}})),
        ),
        (
            "v1alpha1 name and image",
            v1(json!({"server": {"distribution": {"name": "starter", "image": "r/i:1"}}})),
        ),
        (
            "v1alpha1 neither",
            v1(json!({"server": {"distribution": {}}})),
        ),
        (
            "overrideConfig and providers",
            v2(
                json!({"distribution": starter, "overrideConfig": {"configMapName": "c"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}}),
            ),
        ),
        (
            "overrideConfig and resources",
            v2(
                json!({"distribution": starter, "overrideConfig": {"configMapName": "c"}, "resources": {"models": ["m"]}}),
            ),
        ),
        (
            "overrideConfig and storage",
            v2(
                json!({"distribution": starter, "overrideConfig": {"configMapName": "c"}, "storage": {"kv": {"type": "sqlite"}}}),
            ),
        ),
        (
            "overrideConfig and disabled",
            v2(
                json!({"distribution": starter, "overrideConfig": {"configMapName": "c"}, "disabled": ["eval"]}),
            ),
        ),
        (
            "overrideConfig alone",
            v2(json!({"distribution": starter, "overrideConfig": {"configMapName": "c"}})),
        ),
        (
            "an unknown API disabled",
            v2(json!({"distribution": starter, "disabled": ["evals"]})),
        ),
        (
            "a removed API disabled",
            v2(json!({"distribution": starter, "disabled": ["agents"]})),
        ),
        (
            "an API disabled twice",
            v2(json!({"distribution": starter, "disabled": ["eval", "eval"]})),
        ),
        (
            "autoscaling min above max",
            v2(
                json!({"distribution": starter, "workload": {"autoscaling": {"minReplicas": 3, "maxReplicas": 2}}}),
            ),
        ),
        (
            "autoscaling min below max",
            v2(
                json!({"distribution": starter, "workload": {"autoscaling": {"minReplicas": 2, "maxReplicas": 3}}}),
            ),
        ),
        (
            "a budget with both bounds",
            v2(
                json!({"distribution": starter, "workload": {"podDisruptionBudget": {"minAvailable": 1, "maxUnavailable": 1}}}),
            ),
        ),
        (
            "a budget with neither bound",
            v2(json!({"distribution": starter, "workload": {"podDisruptionBudget": {}}})),
        ),
        (
            "redis without an endpoint",
            v2(json!({"distribution": starter, "storage": {"kv": {"type": "redis"}}})),
        ),
        (
            "redis with an endpoint",
            v2(
                json!({"distribution": starter, "storage": {"kv": {"type": "redis", "endpoint": "redis://r:6379"}}}),
            ),
        ),
        (
            "postgres without a connection string",
            v2(json!({"distribution": starter, "storage": {"sql": {"type": "postgres"}}})),
        ),
        (
            "TLS without a Secret",
            v2(json!({"distribution": starter, "networking": {"tls": {"enabled": true}}})),
        ),
        (
            "TLS with a Secret",
            v2(
                json!({"distribution": starter, "networking": {"tls": {"enabled": true, "secretName": "s"}}}),
            ),
        ),
        (
            "a removed API among external providers",
            v2(
                json!({"distribution": starter, "externalProviders": {"agents": [{"providerId": "a", "image": "r/a:1"}]}}),
            ),
        ),
        (
            "v1alpha1 budget with both bounds",
            v1(
                json!({"server": {"distribution": starter, "podDisruptionBudget": {"minAvailable": 1, "maxUnavailable": 1}}}),
            ),
        ),
        (
            "v1alpha1 autoscaling min above max",
            v1(
                json!({"server": {"distribution": starter}, "autoscaling": {"minReplicas": 3, "maxReplicas": 2}}),
            ),
        ),
        (
            "a version that does not exist",
            json!({"apiVersion": "llamastack.io/v1alpha3", "kind": "LlamaStackDistribution", "metadata": {"name": "future"}, "spec": {"distribution": starter}}),
        ),
        (
            "labels and annotations the API server admits",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "meta", "labels": {"app.kubernetes.io/name": "x", "empty": "", "a_b.c": "V1.0"},
                                "annotations": {"Example.com/Mixed_Case": "any text: ✓"}},
                   "spec": {"distribution": starter}}),
        ),
        (
            "a label key with an upper-case prefix",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "meta", "labels": {"Example.com/x": "v"}}, "spec": {"distribution": starter}}),
        ),
        (
            "annotations over 256 KiB in all",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "meta", "annotations": {"a": "x".repeat(140_000), "b": "x".repeat(140_000)}},
                   "spec": {"distribution": starter}}),
        ),
        (
            "annotations over 256 KiB with a rule broken",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "meta", "annotations": {"a": "x".repeat(270_000)}},
                   "spec": {"distribution": {"name": "starter", "image": "r/i:1"}}}),
        ),
        (
            "no name",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {}, "spec": {"distribution": starter}}),
        ),
        (
            "no spec",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "empty"}}),
        ),
    ];
    specs
        .into_iter()
        .map(|(what, object)| Case {
            label: format!("rule: {what}"),
            object,
        })
        .collect()
}

/// The whole corpus.
pub fn corpus() -> Vec<Case> {
    let mut cases = rule_cases();
    for (label, seed) in seeds() {
        cases.extend(mutations(&label, &seed));
    }
    cases
}
