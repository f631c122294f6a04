//! The OGX operator's own config-generator cases (`tests/fixtures/ogx-operator/configgen`, its
//! `cmd/configgen/testdata` at 1784464): each `cr.yaml` is mapped into the model and generated
//! over its `base.yaml` as the controller does for an `OGXServer`, and compared with that
//! operator's `want-config.yaml`.
//!
//! Differences that change nothing for the server are set aside first (see [`normalized`]).
//! Every difference left is listed per case with why, as path prefixes: each must still differ
//! (a fixed divergence is noticed) and nothing else may. Which of the two configs the real OGX
//! 1.3.0 server accepts is checked by `tests/llama_stack_server/` (seven of the OGX
//! operator's are refused there; none of ours).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::to_model;
use crate::api::ogx::OGXServer;
use crate::stack_config::{ModelMerge, ProviderTable, generate_merging, parse_base};

/// What this operator does with one case.
enum Outcome {
    /// A config, differing from the OGX operator's only at these path prefixes.
    Generated(&'static [&'static str]),
    /// Refused, naming this field (the OGX operator writes a config the server refuses).
    Refused(&'static str),
    /// The base config is refused (as the OGX operator refuses it).
    BaseRefused,
    /// Nothing is generated: the server runs the image's config, or the user's
    /// (`overrideConfig`) as it is, where the OGX operator's tool stops with an error.
    NothingToGenerate,
}

/// Every case, with what this operator does and why it differs.
fn expectations() -> Vec<(&'static str, Outcome, &'static str)> {
    use Outcome::*;
    const VLLM_BASE_KEYS: &[&str] = &[
        ".providers.inference[0].config.api_token",
        ".providers.inference[0].config.max_tokens",
        ".providers.inference[0].config.refresh_models",
        ".providers.inference[0].config.tls_verify",
    ];
    let with = |more: &[&'static str]| -> &'static [&'static str] {
        Box::leak([VLLM_BASE_KEYS, more].concat().into_boxed_slice())
    };
    vec![
        (
            "err-bad-base-path",
            BaseRefused,
            "a base with neither providers nor version",
        ),
        (
            "err-no-declarative",
            NothingToGenerate,
            "a bare distribution runs the image's own config",
        ),
        (
            "err-override-config",
            NothingToGenerate,
            "overrideConfig is mounted as written",
        ),
        (
            "happy-basic",
            Generated(&[".providers.inference[0].config.url"]),
            "the base's vllm entry is kept and the endpoint set as base_url; its stale `url` (no key of the 1.3.0 vllm provider) stays as the base wrote it",
        ),
        (
            "p0-inference-base-url",
            Generated(&[
                ".providers.inference[3].config.api_key",
                ".providers.inference[3].config.aws_bedrock_bearer_token",
            ]),
            "bedrock's key under its own name; the OGX operator writes api_key, which 1.3.0 accepts as an alias of it",
        ),
        ("p0-network-nesting", Generated(&[]), "the same"),
        (
            "p1-batches-config",
            Refused("spec.providers.batches[0]"),
            "inline::reference needs sqlstore, which the minimal base lacks; the OGX operator writes inline::batch-reference, a type 1.3.0 does not have",
        ),
        (
            "p1-fileprocessors-config",
            Generated(&[".apis", ".providers.file_processors"]),
            "the file processors need the files API, which the minimal base does not serve: removed, with a warning",
        ),
        (
            "p1-filesearch-config",
            Generated(&[".apis", ".providers.tool_runtime"]),
            "file search needs files, inference and vector_io, which the minimal base does not serve: removed; the OGX operator writes inline::rag-runtime, which 1.3.0 does not have",
        ),
        ("p1-inference-extra-fields", Generated(&[]), "the same"),
        (
            "p1-milvus-config",
            Generated(&[".apis", ".providers.vector_io"]),
            "milvus keeps its metadata in the default kv store, but needs the inference API, which the minimal base does not serve: removed; the OGX operator's config, without persistence, is refused by the server",
        ),
        (
            "p1-model-quantization",
            Generated(&[
                ".registered_resources.models[0].metadata.quantization",
                ".registered_resources.models[0].quantization",
            ]),
            "quantization kept in the model's metadata; 1.3.0's model has no quantization field and drops the OGX operator's",
        ),
        (
            "p1-pgvector-config",
            Generated(&[".apis", ".providers.vector_io"]),
            "pgvector needs the inference API, which the minimal base does not serve: removed; the OGX operator's vector_index shape is refused by the server",
        ),
        (
            "p1-qdrant-config",
            Generated(&[".apis", ".providers.vector_io"]),
            "qdrant keeps its metadata in the default kv store, but needs the inference API, which the minimal base does not serve: removed; the OGX operator's config, without persistence, is refused by the server",
        ),
        (
            "p1-responses-config",
            Refused("spec.providers.responses[0]"),
            "inline::builtin needs persistence, which the minimal base lacks; the OGX operator writes inline::responses, a type 1.3.0 does not have",
        ),
        (
            "rh-add-models",
            Generated(with(&[".telemetry"])),
            "the base's vllm settings are kept beside the endpoint; the base's telemetry section is kept",
        ),
        (
            "rh-combined",
            Generated(with(&[".providers.batches", ".server.port", ".telemetry"])),
            "a disabled API's providers go too; the port is OGX_PORT, which the server prefers to server.port",
        ),
        (
            "rh-custom-port",
            Generated(with(&[
                ".registered_resources.models",
                ".server.port",
                ".telemetry",
            ])),
            "the base's embedding model refers to vllm-embedding, which the spec's providers replaced: removed, with a warning",
        ),
        (
            "rh-disable-apis",
            Generated(&[
                ".providers.batches",
                ".providers.file_processors",
                ".telemetry",
            ]),
            "a disabled API's providers go too (the OGX operator leaves them, so the server still starts them)",
        ),
        (
            "rh-override-inference",
            Generated(with(&[".registered_resources.models", ".telemetry"])),
            "the base's embedding model refers to a provider the spec replaced: removed, with a warning",
        ),
        (
            "rh-override-storage",
            Generated(&[
                ".storage.backends.kv_default.db_path",
                ".storage.backends.sql_default",
                ".storage.stores.connectors",
                ".storage.stores.inference",
                ".telemetry",
            ]),
            "the connection string's parts, as variables (1.3.0 refuses a postgres backend without user, as the OGX operator writes it); the base's stores and sqlite path kept (SQLITE_STORE_DIR puts them on the volume)",
        ),
    ]
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ogx-operator/configgen")
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `path -> value` of every leaf.
fn flatten(value: &Value, path: String, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                flatten(child, format!("{path}.{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                flatten(child, format!("{path}[{i}]"), out);
            }
        }
        leaf => {
            out.insert(path, leaf.clone());
        }
    }
}

/// The config with what changes nothing for the server set aside: `version` as a string or a
/// number; `image_name` (the base's) for `distro_name`; `server.insecure` (ours, the server
/// behind its Service) and `server.port` equal to the default (the OGX operator always writes
/// it); a model's `provider_model_id` equal to its `model_id`; and the names of Secret
/// variables (`${env.LLSD_...}` here, `${env.OGX_...}` there).
fn normalized(config: &Value) -> BTreeMap<String, Value> {
    let mut flat = BTreeMap::new();
    flatten(config, String::new(), &mut flat);
    let mut out = BTreeMap::new();
    let models: BTreeMap<String, Value> = flat
        .iter()
        .filter(|(k, _)| {
            k.starts_with(".registered_resources.models[") && k.ends_with("].model_id")
        })
        .map(|(k, v)| (k.trim_end_matches("model_id").to_owned(), v.clone()))
        .collect();
    for (path, value) in flat {
        let path = if path == ".image_name" {
            ".distro_name".to_owned()
        } else {
            path
        };
        if path == ".server.insecure" || (path == ".server.port" && value == 8321) {
            continue;
        }
        if let Some(model) = path.strip_suffix("provider_model_id")
            && models.get(model) == Some(&value)
        {
            continue;
        }
        let value = match value {
            Value::Number(n) if path == ".version" => Value::String(n.to_string()),
            Value::String(s) if s.starts_with("${env.LLSD_") || s.starts_with("${env.OGX_") => {
                Value::String("${env.<secret>}".to_owned())
            }
            other => other,
        };
        out.insert(path, value);
    }
    out
}

#[test]
fn the_ogx_operators_configgen_cases_generate_what_it_generates_or_differ_for_a_reason() {
    let expected = expectations();
    let on_disk: BTreeSet<String> = std::fs::read_dir(cases_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    let listed: BTreeSet<String> = expected.iter().map(|(c, _, _)| (*c).to_owned()).collect();
    assert_eq!(on_disk, listed, "every case has an expectation");

    let mut problems = Vec::new();
    for (case, outcome, why) in expected {
        let dir = cases_dir().join(case);
        let cr: OGXServer = serde_saphyr::from_str(&read(&dir.join("cr.yaml")).unwrap()).unwrap();
        let model = to_model(&cr).unwrap_or_else(|e| panic!("{case}: {e}"));
        let generated = read(&dir.join("base.yaml")).map(|base| {
            parse_base(&base).and_then(|base| {
                generate_merging(
                    &model.spec,
                    &base,
                    ProviderTable::ogx(),
                    ModelMerge::Replace,
                )
            })
        });
        let problem = match (&outcome, generated) {
            (Outcome::NothingToGenerate, None) => {
                // The fields that ask for a generated config (the controller's
                // `server_run::generation_asked`), or the user's own config.
                let spec = &model.spec;
                let asks = spec.providers.is_some()
                    || spec.resources.is_some()
                    || spec.storage.is_some()
                    || spec.disabled.as_ref().is_some_and(|d| !d.is_empty());
                (asks && spec.override_config.is_none())
                    .then(|| "the spec asks for a generated config".to_owned())
            }
            (Outcome::BaseRefused, Some(Err(e))) => (!e.to_string().contains("base config"))
                .then(|| format!("refused, but not for its base: {e}")),
            (Outcome::Refused(field), Some(Err(e))) => (!e.to_string().contains(field))
                .then(|| format!("refused without naming {field}: {e}")),
            (Outcome::Generated(differs), Some(Ok(ours))) => {
                let want = read(&dir.join("want-config.yaml")).unwrap();
                let ours = normalized(&serde_saphyr::from_str(&ours.yaml).unwrap());
                let theirs = normalized(&serde_saphyr::from_str(&want).unwrap());
                let paths: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
                let differing: Vec<&String> = paths
                    .into_iter()
                    .filter(|p| ours.get(*p) != theirs.get(*p))
                    .collect();
                let unexplained: Vec<_> = differing
                    .iter()
                    .filter(|p| !differs.iter().any(|d| p.starts_with(d)))
                    .collect();
                let stale: Vec<_> = differs
                    .iter()
                    .filter(|d| !differing.iter().any(|p| p.starts_with(*d)))
                    .collect();
                (!unexplained.is_empty() || !stale.is_empty()).then(|| {
                    let show = |p: &&String| {
                        format!("{p}: ours {:?}, theirs {:?}", ours.get(*p), theirs.get(*p))
                    };
                    format!(
                        "unexplained differences {:#?}; listed but equal {stale:?}",
                        unexplained.iter().map(|p| show(p)).collect::<Vec<_>>()
                    )
                })
            }
            (_, other) => Some(format!(
                "unexpected outcome: {:?}",
                other.map(|r| r.map(|g| g.yaml))
            )),
        };
        if let Some(problem) = problem {
            problems.push(format!("{case} ({why}): {problem}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
