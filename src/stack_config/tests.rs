//! Generator cases: the documented examples and edge cases on the embedded starter config.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::env::{EnvSource, UrlPart};
use super::{GenerateError, GeneratedConfig, ProviderTable, generate_from_yaml};
use crate::api::v1alpha2::LlamaStackDistributionSpec;

const STARTER: &str = include_str!("../../configs/starter/config.yaml");

fn spec(v: Value) -> LlamaStackDistributionSpec {
    let mut v = v;
    v["distribution"] = json!({"name": "starter"});
    serde_json::from_value(v).expect("valid spec")
}

fn run(v: Value) -> GeneratedConfig {
    generate_from_yaml(&spec(v), STARTER, ProviderTable::embedded())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn errors(v: Value) -> Vec<String> {
    match generate_from_yaml(&spec(v), STARTER, ProviderTable::embedded()) {
        Err(GenerateError::Invalid(errors)) => errors.iter().map(ToString::to_string).collect(),
        other => panic!("expected field errors, got {other:?}"),
    }
}

fn config(g: &GeneratedConfig) -> Value {
    serde_saphyr::from_str(&g.yaml).expect("generated YAML parses")
}

fn provider<'a>(c: &'a Value, api: &str, id: &str) -> &'a Value {
    c["providers"][api]
        .as_array()
        .and_then(|l| l.iter().find(|p| p["provider_id"] == id))
        .unwrap_or_else(|| panic!("no {api} provider {id}"))
}

#[test]
fn us1_vllm_endpoint_and_key_go_to_base_url_and_api_token() {
    let g = run(
        json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://vllm:8000/v1",
        "apiKey": {"secretKeyRef": {"name": "vllm-creds", "key": "token"}}}}}),
    );
    let c = config(&g);
    let ids: Vec<&str> = c["providers"]["inference"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["vllm"], "the inference list is replaced");
    let vllm = provider(&c, "inference", "vllm");
    assert_eq!(vllm["provider_type"], "remote::vllm");
    assert_eq!(vllm["config"]["base_url"], "http://vllm:8000/v1");
    assert_eq!(vllm["config"]["api_token"], "${env.LLSD_VLLM_API_KEY}");
    assert!(vllm["config"].get("api_key").is_none() && vllm["config"].get("url").is_none());
    assert_eq!(
        vllm["config"]["max_tokens"], "${env.VLLM_MAX_TOKENS:=4096}",
        "defaults of the base vllm provider are kept"
    );
    assert_eq!(g.env.len(), 1);
    assert_eq!(g.env[0].name, "LLSD_VLLM_API_KEY");
    assert!(
        matches!(&g.env[0].source, EnvSource::SecretKeyRef(r) if r.name == "vllm-creds" && r.key == "token")
    );
    assert!(
        !g.yaml.contains("vllm-creds"),
        "no secret reference details in the config"
    );
    // Other APIs keep the distribution's providers; dangling embedding defaults are removed.
    assert!(!c["providers"]["vector_io"].as_array().unwrap().is_empty());
    assert!(c["vector_stores"].get("default_embedding_model").is_none());
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("vector_stores.default_embedding_model")
                && w.contains("sentence-transformers"))
    );
}

#[test]
fn us1_distribution_only_is_the_base_config_byte_for_byte() {
    let g = run(json!({}));
    assert_eq!(g.yaml, STARTER);
    assert_eq!(g.hash, llama_stack_resolver::sha256_hex(STARTER.as_bytes()));
    assert!(g.env.is_empty() && g.warnings.is_empty());
}

#[test]
fn us2_lists_need_ids_and_ids_are_unique_across_apis() {
    let errs = errors(
        json!({"providers": {"inference": [{"provider": "vllm"}, {"id": "b", "provider": "openai"}]}}),
    );
    assert_eq!(
        errs,
        [
            "spec.providers.inference[0].id: id is required when inference lists more than one provider"
        ]
    );
    let errs = errors(
        json!({"providers": {"inference": {"id": "shared", "provider": "vllm", "endpoint": "http://v"},
        "safety": {"id": "shared", "provider": "llama-guard"}}}),
    );
    assert_eq!(
        errs,
        [
            "spec.providers.safety.id: provider id \"shared\" is already used by spec.providers.inference; provider ids must be unique across all APIs"
        ]
    );
    let g = run(
        json!({"providers": {"inference": [{"id": "vllm-primary", "provider": "vllm", "endpoint": "http://a"},
        {"id": "openai-fallback", "provider": "openai", "apiKey": {"secretKeyRef": {"name": "o", "key": "k"}}}]}}),
    );
    let c = config(&g);
    assert_eq!(
        provider(&c, "inference", "openai-fallback")["config"]["api_key"],
        "${env.LLSD_OPENAI_FALLBACK_API_KEY}"
    );
    assert_eq!(
        g.env.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["LLSD_OPENAI_FALLBACK_API_KEY"]
    );
}

#[test]
fn us3_models_shields_and_tools() {
    let g = run(json!({
        "providers": {"inference": [{"id": "small", "provider": "vllm", "endpoint": "http://a"}, {"id": "big", "provider": "vllm", "endpoint": "http://b"}],
                      "safety": {"provider": "llama-guard"}, "toolRuntime": {"provider": "brave-search"}},
        "resources": {"models": ["m1", {"name": "m2", "provider": "big", "contextLength": 128000, "modelType": "llm", "quantization": "fp8"}],
                      "shields": ["llama-guard"], "tools": ["websearch"]}}));
    let c = config(&g);
    let models = c["registered_resources"]["models"].as_array().unwrap();
    assert_eq!(
        models[models.len() - 2],
        json!({"model_id": "m1", "provider_id": "small", "provider_model_id": "m1", "model_type": "llm"})
    );
    assert_eq!(
        models[models.len() - 1],
        json!({"model_id": "m2", "provider_id": "big", "provider_model_id": "m2", "model_type": "llm",
        "metadata": {"context_length": 128000, "quantization": "fp8"}})
    );
    let shields = c["registered_resources"]["shields"].as_array().unwrap();
    assert!(shields.contains(&json!({"shield_id": "llama-guard", "provider_id": "llama-guard", "provider_shield_id": "llama-guard"})));
    assert_eq!(g.resource_count, 4);
    let errs = errors(
        json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://a"}},
        "resources": {"models": [{"name": "x", "provider": "nope"}], "tools": ["wolfram_alpha"]}}),
    );
    assert!(errs[0].starts_with("spec.resources.models[0].provider: no inference provider has id \"nope\"; available: vllm"), "{errs:?}");
    assert!(errs[1].contains("tool group \"wolfram_alpha\" needs a toolRuntime provider of type remote::wolfram-alpha"), "{errs:?}");
}

#[test]
fn missing_providers_for_resources_use_the_spec_messages() {
    let base = "version: 2\ndistro_name: tiny\napis: [inference]\nproviders:\n  inference:\n  - provider_id: vllm\n    provider_type: remote::vllm\n    config: {base_url: http://x}\n";
    let s = spec(json!({"resources": {"shields": ["guard"], "tools": ["websearch"]}}));
    match generate_from_yaml(&s, base, ProviderTable::embedded()) {
        Err(GenerateError::Invalid(errs)) => {
            let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
            assert_eq!(
                text,
                [
                    "spec.resources.shields[0]: resources.shields requires at least one safety provider to be configured",
                    "spec.resources.tools[0]: resources.tools requires at least one toolRuntime provider to be configured",
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn us4_storage_backends() {
    let g = run(
        json!({"storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}},
        "kv": {"type": "redis", "endpoint": "redis://redis.state:6380"}}}),
    );
    let c = config(&g);
    assert_eq!(
        c["storage"]["backends"]["kv_default"],
        json!({"type": "kv_redis", "host": "redis.state", "port": 6380})
    );
    let sql = &c["storage"]["backends"]["sql_default"];
    assert_eq!(sql["type"], "sql_postgres");
    assert_eq!(sql["password"], "${env.LLSD_STORAGE_SQL_PASSWORD}");
    let parts: Vec<(&str, UrlPart)> = g
        .env
        .iter()
        .filter_map(|e| match &e.source {
            EnvSource::SecretUrlPart { part, .. } => Some((e.name.as_str(), *part)),
            _ => None,
        })
        .collect();
    assert_eq!(parts.iter().filter(|(_, p)| !p.optional()).count(), 5);
    // The URL's TLS options reach the client through its own variables (the backend's config has
    // no place for them).
    assert!(
        parts.contains(&("PGSSLMODE", UrlPart::SslMode)),
        "{parts:?}"
    );
    assert!(parts.contains(&("PGSSLROOTCERT", UrlPart::SslRootCert)));
    assert!(
        c["storage"]["stores"]["metadata"]["backend"] == "kv_default",
        "stores keep pointing at the replaced backends"
    );
    let g = run(json!({"storage": {"kv": {}}}));
    assert_eq!(
        config(&g)["storage"]["backends"]["kv_default"]["type"],
        "kv_sqlite"
    );
    assert_eq!(
        errors(
            json!({"storage": {"kv": {"type": "redis", "endpoint": "redis://r:6379", "password": {"secretKeyRef": {"name": "r", "key": "p"}}}}})
        )[0],
        "spec.storage.kv.password: llama-stack 0.7.3's redis backend has no password setting (it would connect without one); use a Redis that needs no password on the cluster network, or sqlite/postgres"
    );
}

#[test]
fn unsupported_config_versions_are_refused_with_the_supported_ones() {
    let base = STARTER.replacen("version: 2", "version: 3", 1);
    let err = generate_from_yaml(
        &spec(json!({"disabled": ["eval"]})),
        &base,
        ProviderTable::embedded(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the base config is not a llama-stack config: Unsupported config.yaml version 3. Supported versions: 2, 1"
    );
}

#[test]
fn disabled_apis() {
    let g = run(json!({"disabled": ["eval", "postTraining"]}));
    let c = config(&g);
    assert!(c["providers"].get("eval").is_none());
    assert!(!c["apis"].as_array().unwrap().contains(&json!("eval")));
    assert!(g.warnings.iter().any(|w| {
        w.starts_with("spec.disabled[1]: \"postTraining\" does not exist in llama-stack 0.7")
    }));
    let errs = errors(
        json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://a"}}, "disabled": ["inference"]}),
    );
    assert_eq!(
        errs,
        [
            "spec.disabled[0]: inference is both configured under spec.providers and disabled; remove one of them"
        ]
    );
    // Disabling vector_io removes the file-search tool runtime that needs it, with a warning.
    let g = run(json!({"disabled": ["vectorIo"]}));
    let c = config(&g);
    assert!(
        !c["providers"]["tool_runtime"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["provider_type"] == "inline::file-search")
    );
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("file-search") && w.contains("vector_io")),
        "{:?}",
        g.warnings
    );
}

#[test]
fn settings_secrets_unknown_keys_and_conflicts() {
    let g = run(
        json!({"providers": {"vectorIo": {"provider": "pgvector", "endpoint": "postgres://llama@pg.db:5433/vectors",
        "settings": {"password": {"secretKeyRef": {"name": "pg", "key": "password"}},
                     "vector_index": {"type": "HNSW", "auth": {"secretKeyRef": {"name": "not", "key": "resolved"}}}, "bogus": 1}}}}),
    );
    let c = config(&g);
    let pg = provider(&c, "vector_io", "pgvector");
    assert_eq!(
        (
            pg["config"]["host"].as_str(),
            pg["config"]["port"].as_u64(),
            pg["config"]["db"].as_str(),
            pg["config"]["user"].as_str()
        ),
        (Some("pg.db"), Some(5433), Some("vectors"), Some("llama"))
    );
    assert_eq!(pg["config"]["password"], "${env.LLSD_PGVECTOR_PASSWORD}");
    assert_eq!(
        pg["config"]["vector_index"]["auth"]["secretKeyRef"]["name"], "not",
        "nested secretKeyRefs pass through untouched"
    );
    let errs = errors(
        json!({"providers": {"vectorIo": {"provider": "pgvector", "settings": {"password": {"secretKeyRef": {"name": "p", "key": "k"}, "extra": 1}}}}}),
    );
    assert_eq!(
        errs,
        ["spec.providers.vectorIo.settings.password: a secretKeyRef value must have no other keys"]
    );
    assert!(g.warnings.iter().any(|w| w.starts_with(
        "spec.providers.vectorIo.settings.bogus: remote::pgvector has no setting \"bogus\""
    )));
    let errs = errors(
        json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://a", "settings": {"base_url": "http://b"}}}}),
    );
    assert_eq!(
        errs,
        [
            "spec.providers.inference.settings.base_url: base_url is already set by endpoint or apiKey; set it in one place"
        ]
    );
    let errs = errors(
        json!({"providers": {"vectorIo": {"provider": "pgvector", "endpoint": "postgres://u:secret@h/db"}}}),
    );
    assert!(
        errs[0].contains("the endpoint contains a password"),
        "{errs:?}"
    );
}

#[test]
fn wrong_provider_fields_are_errors_not_silent() {
    let errs = errors(
        json!({"providers": {"inference": {"provider": "ollama", "endpoint": "http://o:11434/v1",
        "apiKey": {"secretKeyRef": {"name": "o", "key": "k"}}}}}),
    );
    assert!(
        errs[0].starts_with(
            "spec.providers.inference.apiKey: remote::ollama takes no API key in llama-stack 0.7.3"
        ),
        "{errs:?}"
    );
    let errs = errors(json!({"providers": {"inference": {"provider": "vllm2"}}}));
    assert!(errs[0].starts_with("spec.providers.inference.provider: \"vllm2\" is not a inference provider of llama-stack 0.7.3; available: inline::sentence-transformers"), "{errs:?}");
    // A type the base config does not have starts empty: its required keys must come from the
    // spec, but for a vector store's persistence, which the config's default kv store gives.
    let errs = errors(json!({"providers": {"vectorIo": {"provider": "remote::milvus"}}}));
    assert_eq!(
        errs,
        [
            "spec.providers.vectorIo: remote::milvus requires token, uri (set them with endpoint or settings)"
        ]
    );
}

#[test]
fn telemetry_becomes_opentelemetry_environment() {
    let g = run(
        json!({"providers": {"telemetry": {"provider": "opentelemetry", "endpoint": "http://otel:4318",
        "settings": {"serviceName": "my-stack"}, "apiKey": {"secretKeyRef": {"name": "otel", "key": "token"}}}}}),
    );
    let env: Vec<(String, String)> = g
        .env
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                match &e.source {
                    EnvSource::Value(v) => v.clone(),
                    EnvSource::SecretKeyRef(r) => format!("secret:{}/{}", r.name, r.key),
                    EnvSource::SecretUrlPart { .. } => "part".into(),
                },
            )
        })
        .collect();
    assert_eq!(
        env,
        [
            ("LLSD_TELEMETRY_API_KEY".into(), "secret:otel/token".into()),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
                "http://otel:4318".into()
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS".into(),
                "Authorization=Bearer $(LLSD_TELEMETRY_API_KEY)".into()
            ),
            ("OTEL_SERVICE_NAME".into(), "my-stack".into()),
        ]
    );
    assert!(
        !g.yaml.contains("telemetry"),
        "no telemetry API in the config"
    );
}

proptest! {
    #[test]
    fn same_input_same_bytes(max_tokens in 1u32..100_000, keys in proptest::collection::btree_set("[a-z]{1,6}", 0..4), model in "[a-z0-9-]{1,12}") {
        let mut settings = serde_json::Map::new();
        settings.insert("max_tokens".into(), json!(max_tokens));
        for k in &keys {
            settings.insert(k.clone(), json!(k));
        }
        let v = json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://v", "settings": settings}}, "resources": {"models": [model]}});
        let a = run(v.clone());
        let b = run(v);
        prop_assert_eq!(&a.yaml, &b.yaml);
        prop_assert_eq!(&a.hash, &b.hash);
        prop_assert_eq!(&a.env, &b.env);
        // Key order in the output follows the base config, then the user's order.
        let c = config(&a);
        let first_keys: Vec<&String> = c.as_object().unwrap().keys().take(3).collect();
        prop_assert_eq!(first_keys, ["version", "distro_name", "apis"]);
    }
}

/// Without an inference provider of the user's, a model goes to the base config's first provider
/// that is always on, never to one that exists only when an environment variable is set (the
/// starter's first is `${env.CEREBRAS_API_KEY:+cerebras}`; the operator sets no such variable).
#[test]
fn the_default_model_provider_is_never_a_conditional_one() {
    let g = run(json!({"resources": {"models": ["m"]}}));
    let c = config(&g);
    let first = c["providers"]["inference"][0]["provider_id"]
        .as_str()
        .unwrap();
    assert!(
        first.starts_with("${env."),
        "the starter still begins with a conditional provider: {first}"
    );
    let model = c["registered_resources"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model_id"] == "m")
        .expect("the model is registered");
    let provider = model["provider_id"].as_str().unwrap();
    assert!(!provider.starts_with("${"), "{provider}");
    assert_eq!(
        provider, "fireworks",
        "the starter's first unconditional inference provider"
    );
}

/// A provider whose id is the telemetry backend's, or whose id differs from another's only in
/// punctuation, would share a Secret's variable with it: vLLM could authenticate with the OTEL
/// token. Both are refused, naming both fields.
#[test]
fn no_two_fields_share_a_secrets_variable() {
    let key = |name: &str| json!({"secretKeyRef": {"name": name, "key": "token"}});
    let clash = errors(json!({"providers": {
        "inference": {"id": "telemetry", "provider": "vllm", "endpoint": "http://v", "apiKey": key("vllm")},
        "telemetry": {"provider": "opentelemetry", "endpoint": "http://otel:4318", "apiKey": key("otel")}}}));
    assert_eq!(
        clash,
        [
            "spec.providers.telemetry.id: provider id \"telemetry\" is already used by spec.providers.inference; provider ids must be unique across all APIs, telemetry too (the telemetry backend's id defaults to \"telemetry\")"
        ]
    );
    let punctuation = errors(json!({"providers": {"inference": [
        {"id": "my-vllm", "provider": "vllm", "endpoint": "http://a", "apiKey": key("a")},
        {"id": "my_vllm", "provider": "vllm", "endpoint": "http://b", "apiKey": key("b")}]}}));
    assert_eq!(punctuation.len(), 1, "{punctuation:?}");
    assert!(
        punctuation[0].starts_with("spec.providers.inference[1].apiKey: its Secret would be passed as LLSD_MY_VLLM_API_KEY, which spec.providers.inference[0].apiKey already uses"),
        "{punctuation:?}"
    );
    // With its own id, the telemetry token has its own variable.
    let own = run(json!({"providers": {
        "inference": {"id": "telemetry-vllm", "provider": "vllm", "endpoint": "http://v", "apiKey": key("vllm")},
        "telemetry": {"id": "otel", "provider": "opentelemetry", "endpoint": "http://otel:4318", "apiKey": key("otel")}}}));
    let secret_of = |name: &str| {
        own.env
            .iter()
            .find(|v| v.name == name)
            .map(|v| match &v.source {
                EnvSource::SecretKeyRef(r) => r.name.clone(),
                other => panic!("{other:?}"),
            })
    };
    assert_eq!(secret_of("LLSD_OTEL_API_KEY").as_deref(), Some("otel"));
    assert_eq!(
        secret_of("LLSD_TELEMETRY_VLLM_API_KEY").as_deref(),
        Some("vllm")
    );
}

/// The catalog's OGX release: its own starter config (`configs-ogx/`, from the 1.3.0 wheel) and
/// provider table. What OGX removed is refused with the line named, what it still has is
/// generated, and the server is told it may serve plain HTTP (from 1.2 it refuses to start
/// otherwise, measured: `TLS required: ...`, exit 1).
mod ogx_line {
    use llama_stack_resolver::embedded_base_config;

    use super::*;
    use crate::stack_config::generate;

    fn on_ogx(v: Value) -> Result<GeneratedConfig, GenerateError> {
        let base = embedded_base_config("starter").unwrap().unwrap();
        let table = ProviderTable::for_server(base.server.as_ref());
        generate(&spec(v), &base, table)
    }

    fn field_errors(v: Value) -> Vec<String> {
        match on_ogx(v) {
            Err(GenerateError::Invalid(errors)) => errors.iter().map(ToString::to_string).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn the_embedded_starter_is_the_ogx_release_and_is_told_to_serve_plain_http() {
        let g = on_ogx(json!({})).unwrap();
        let c = config(&g);
        assert_eq!(c["server"]["insecure"], json!(true));
        assert!(c["apis"].as_array().unwrap().iter().all(|a| a != "safety"));
        // `provider_id: all` is OGX's "any provider that lists it", never a dangling reference.
        let models = c["registered_resources"]["models"].as_array().unwrap();
        assert_eq!(models.len(), 3, "{models:?}");
        assert!(models.iter().all(|m| m["provider_id"] == "all"));
        let tls = on_ogx(json!({"networking": {"tls": {"enabled": true, "secretName": "cert"}}}))
            .unwrap();
        let tls = config(&tls);
        assert!(tls["server"].get("insecure").is_none(), "{}", tls["server"]);
        assert!(tls["server"]["tls_certfile"].is_string());
    }

    /// A base config that does not say which server reads it (a file, a test's config) is read
    /// as the release of the table it is generated with: OGX 1.3.0 must still be told to serve
    /// plain HTTP, or it exits at start-up ("TLS required").
    #[test]
    fn an_unlabelled_base_generated_for_ogx_is_told_to_serve_plain_http() {
        let base = embedded_base_config("starter").unwrap().unwrap();
        let g = crate::stack_config::generate_from_yaml(
            &spec(json!({})),
            &base.yaml,
            ProviderTable::ogx(),
        )
        .unwrap();
        assert_eq!(config(&g)["server"]["insecure"], json!(true));
        let llama = crate::stack_config::generate_from_yaml(
            &spec(json!({})),
            &base.yaml,
            ProviderTable::embedded(),
        );
        if let Ok(llama) = llama {
            assert!(config(&llama)["server"].get("insecure").is_none());
        }
    }

    #[test]
    fn what_ogx_removed_is_refused_naming_the_release_and_what_it_has() {
        let errors = field_errors(json!({"providers": {"safety": {"provider": "llama-guard"}},
            "resources": {"shields": ["llama-guard"]}}));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with(
                "spec.providers.safety: the image runs OGX 1.3.0, which has no safety API"
            ),
            "{errors:?}"
        );
        assert!(
            errors[0].contains("inference") && errors[0].contains("vector_io"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("spec.resources.shields:"),
            "{errors:?}"
        );
        let errors =
            field_errors(json!({"providers": {"inference": {"provider": "transformers"}}}));
        assert!(
            errors[0].contains("is not a inference provider of OGX 1.3.0"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_vllm_provider_and_sqlite_storage_follow_the_ogx_table_and_home() {
        let g = on_ogx(json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://vllm:8000/v1",
            "apiKey": {"secretKeyRef": {"name": "v", "key": "token"}}}},
            "storage": {"kv": {"type": "sqlite"}}, "disabled": ["eval", "scoring"]}))
        .unwrap();
        let c = config(&g);
        let vllm = provider(&c, "inference", "vllm");
        assert_eq!(vllm["provider_type"], "remote::vllm");
        assert_eq!(vllm["config"]["base_url"], "http://vllm:8000/v1");
        assert!(
            vllm["config"]["api_token"]
                .as_str()
                .unwrap()
                .starts_with("${env.")
        );
        assert!(
            c["storage"]["backends"]["kv_default"]["db_path"]
                .as_str()
                .unwrap()
                .contains("~/.ogx/distributions/starter"),
            "{}",
            c["storage"]
        );
        assert!(
            g.warnings
                .iter()
                .any(|w| w.contains("\"eval\" does not exist in OGX 1.3.0")),
            "{:?}",
            g.warnings
        );
    }
}

/// A base config's resource whose provider a variable names, with a default
/// (`${env.EMBEDDING_PROVIDER:=vllm-embedding}`, as the rh distribution writes it), refers to
/// that default: kept while the default's provider exists (conditionally), removed with a
/// warning once the spec replaces it. A base without providers but with a version takes the
/// spec's (the OGX operator's minimal bases); one with neither is not a config.
#[test]
fn references_by_variable_default_and_bases_without_providers() {
    let base = r#"version: 2
apis: [inference]
providers:
  inference:
  - provider_id: ${env.VLLM_EMBEDDING_URL:+vllm-embedding}
    provider_type: remote::vllm
    config: {base_url: "${env.VLLM_EMBEDDING_URL:=}"}
registered_resources:
  models:
  - model_id: ${env.EMBEDDING_MODEL:=}
    provider_id: ${env.EMBEDDING_PROVIDER:=vllm-embedding}
    model_type: embedding
"#;
    let table = ProviderTable::ogx();
    let kept = generate_from_yaml(&spec(json!({})), base, table).unwrap();
    assert!(
        kept.yaml.contains("EMBEDDING_MODEL") && kept.warnings.is_empty(),
        "{kept:?}"
    );
    let replaced = spec(
        json!({"providers": {"inference": {"provider": "remote::vllm", "endpoint": "http://v:8000/v1"}}}),
    );
    let dropped = generate_from_yaml(&replaced, base, table).unwrap();
    assert!(
        !dropped.yaml.contains("EMBEDDING_MODEL"),
        "{}",
        dropped.yaml
    );
    assert!(
        dropped
            .warnings
            .iter()
            .any(|w| w.contains("\"vllm-embedding\"")),
        "{:?}",
        dropped.warnings
    );

    let minimal = generate_from_yaml(&replaced, "version: 2\napis: [inference]\n", table).unwrap();
    assert!(
        config(&minimal)["providers"]["inference"][0]["provider_type"] == "remote::vllm",
        "{}",
        minimal.yaml
    );
    let not_a_config = generate_from_yaml(&replaced, "image_name: x\n", table).unwrap_err();
    assert!(
        not_a_config.to_string().contains("no providers mapping"),
        "{not_a_config}"
    );
}

/// `networking.tls.clientIdentity`: every provider whose config takes `network` (OGX 1.x's
/// remote inference providers) presents the mounted certificate, beside its own `network.tls`
/// settings; a server line where no provider takes one refuses it with the field.
#[test]
fn a_client_identity_reaches_every_provider_that_takes_one() {
    let ogx_starter = include_str!("../../configs-ogx/starter/config.yaml");
    let identity = json!({"certificate": {"name": "c", "key": "tls.crt"}, "privateKey": {"name": "k", "key": "tls.key"}});
    let asked = spec(json!({
        "networking": {"tls": {"clientIdentity": identity}},
        "providers": {"inference": [
            {"provider": "remote::vllm", "id": "a", "endpoint": "https://a:8000/v1",
             "settings": {"network": {"tls": {"verify": false}}}},
            {"provider": "remote::openai", "id": "b"},
            {"provider": "inline::sentence-transformers", "id": "c"}
        ]}
    }));
    let generated = generate_from_yaml(&asked, ogx_starter, ProviderTable::ogx()).unwrap();
    let c = config(&generated);
    for id in ["a", "b"] {
        let tls = &provider(&c, "inference", id)["config"]["network"]["tls"];
        assert_eq!(
            tls["client_cert"], "/etc/llama-stack-client-identity/tls.crt",
            "{id}: {tls}"
        );
        assert_eq!(
            tls["client_key"], "/etc/llama-stack-client-identity/tls.key",
            "{id}: {tls}"
        );
    }
    assert_eq!(
        provider(&c, "inference", "a")["config"]["network"]["tls"]["verify"],
        false
    );
    assert!(
        provider(&c, "inference", "c")["config"]
            .get("network")
            .is_none()
    );

    // llama-stack 0.7.3's remote inference providers take it too.
    let on_llama_stack = generate_from_yaml(&asked, STARTER, ProviderTable::embedded()).unwrap();
    assert!(config(&on_llama_stack)["providers"]["inference"][0]["config"]["network"]["tls"]["client_cert"].is_string());
    let nobody = spec(json!({
        "networking": {"tls": {"clientIdentity": identity}},
        "providers": {"inference": [{"provider": "inline::sentence-transformers", "id": "c"}]}
    }));
    let refused = generate_from_yaml(&nobody, ogx_starter, ProviderTable::ogx()).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("spec.networking.tls.clientIdentity: no provider"),
        "{refused}"
    );
}

/// A vector store that needs `persistence` gets the config's default kv store under its own
/// namespace (as the starter configs give their own vector stores), whether the base names
/// `kv_default` or leaves storage to the server's default; a base that names other backends
/// only leaves it to the user.
#[test]
fn a_vector_store_keeps_its_metadata_in_the_default_kv_store() {
    let spec = json!({"providers": {"vectorIo": {"provider": "remote::milvus", "id": "docs",
        "settings": {"uri": "http://milvus:19530", "token": "t"}}}});
    let entry = |config: &Value| {
        config["providers"]["vector_io"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider_id"] == "docs")
            .cloned()
            .unwrap()
    };
    let persistence = json!({"backend": "kv_default", "namespace": "vector_io::docs"});
    assert_eq!(
        entry(&config(&run(spec.clone())))["config"]["persistence"],
        persistence
    );
    let mut base: Value = serde_saphyr::from_str(STARTER).unwrap();
    base.as_object_mut().unwrap().remove("storage");
    let no_storage = serde_json::to_string(&base).unwrap();
    let g = generate_from_yaml(
        &self::spec(spec.clone()),
        &no_storage,
        ProviderTable::embedded(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(entry(&config(&g))["config"]["persistence"], persistence);
    base["storage"] = json!({"backends": {"kv_elsewhere": {"type": "kv_sqlite", "db_path": "/x"}}});
    let elsewhere = serde_json::to_string(&base).unwrap();
    match generate_from_yaml(&self::spec(spec), &elsewhere, ProviderTable::embedded()) {
        Err(GenerateError::Invalid(errors)) => assert!(
            errors.iter().any(|e| e
                .to_string()
                .contains("remote::milvus requires persistence")),
            "{errors:?}"
        ),
        other => panic!("{other:?}"),
    }
}

const OGX_STARTER: &str = include_str!("../../configs-ogx/starter/config.yaml");

fn run_ogx(v: Value) -> Result<GeneratedConfig, GenerateError> {
    generate_from_yaml(&spec(v), OGX_STARTER, ProviderTable::ogx())
}

/// Named backends (the OGX operator's `storage.backends`) replace the whole storage section: each
/// backend as written, defaults filled in, its password a variable read from the Secret (the OGX
/// operator's name for it), and without `stores` the one kv backend holding the registry and the
/// one sql backend every SQL store. A provider store the starter kept on `kv_default` or
/// `sql_default` moves to the backend of its kind, with a warning.
#[test]
fn named_backends_replace_the_storage_section() {
    let g = run_ogx(json!({"storage": {"backends": {
        "pg-kv": {"type": "kv_postgres", "host": "pg.db", "user": "ogx", "tableName": "kv",
            "password": {"name": "pg", "key": "password"}, "commandTimeout": "2.5", "sslMode": "require"},
        "pg_sql": {"type": "sql_postgres", "host": "pg.db", "port": "${env.PG_PORT:=5432}",
            "user": "ogx", "poolRecycle": -1, "poolPrePingEnv": "${env.PING:=true}"}}}}))
    .unwrap();
    let c = config(&g);
    assert_eq!(
        c["storage"]["backends"]["pg-kv"],
        json!({"type": "kv_postgres", "host": "pg.db", "port": 5432, "db": "ogx", "user": "ogx",
            "password": "${env.OGX_STORAGE_BACKEND_PG_KV_PASSWORD}", "table_name": "kv",
            "command_timeout": 2.5, "ssl_mode": "require"})
    );
    assert_eq!(
        c["storage"]["backends"]["pg_sql"],
        json!({"type": "sql_postgres", "host": "pg.db", "port": "${env.PG_PORT:=5432}", "db": "ogx",
            "user": "ogx", "pool_recycle": -1, "pool_pre_ping": "${env.PING:=true}"})
    );
    assert_eq!(
        c["storage"]["backends"].as_object().unwrap().len(),
        2,
        "the base config's backends are gone"
    );
    assert_eq!(
        c["storage"]["stores"],
        json!({"metadata": {"backend": "pg-kv", "namespace": "registry"},
            "inference": {"backend": "pg_sql", "table_name": "inference_store"},
            "conversations": {"backend": "pg_sql", "table_name": "openai_conversations"},
            "prompts": {"backend": "pg_sql", "table_name": "prompts"},
            "connectors": {"backend": "pg_sql", "table_name": "connectors"}})
    );
    let password: Vec<_> = g
        .env
        .iter()
        .filter(|e| e.name == "OGX_STORAGE_BACKEND_PG_KV_PASSWORD")
        .map(|e| e.source.clone())
        .collect();
    assert_eq!(
        password,
        [EnvSource::SecretKeyRef(
            crate::api::v1alpha2::SecretKeyRef {
                name: "pg".into(),
                key: "password".into()
            }
        )]
    );
    // Every provider store now names one of the two backends.
    let text = serde_json::to_string(&c["providers"]).unwrap();
    assert!(
        !text.contains("kv_default") && !text.contains("sql_default"),
        "{text}"
    );
    assert!(text.contains("\"backend\":\"pg-kv\"") && text.contains("\"backend\":\"pg_sql\""));
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("named backend \"sql_default\"")
                && w.ends_with("it uses \"pg_sql\"")),
        "{:?}",
        g.warnings
    );
}

/// `stores` given is the whole map: the stores left out are `null` (the server keeps none), and a
/// store on a backend that does not exist or is of the other kind is named.
#[test]
fn named_stores_are_the_whole_map_and_checked() {
    let backends = json!({"kv": {"type": "kv_postgres", "user": "u"},
        "sql": {"type": "sql_postgres", "user": "u"}, "sql2": {"type": "sql_postgres", "user": "u"}});
    let g = run_ogx(json!({"storage": {"backends": backends.clone(), "stores": {
        "metadata": {"backend": "kv", "namespace": "reg"},
        "responses": {"backend": "sql2", "numWriters": 4},
        "vectorStores": {"backend": "sql", "tableName": "vs"}}}}))
    .unwrap();
    let stores = &config(&g)["storage"]["stores"];
    assert_eq!(
        stores["responses"],
        json!({"backend": "sql2", "num_writers": 4})
    );
    assert_eq!(
        stores["vector_stores"],
        json!({"backend": "sql", "table_name": "vs"})
    );
    for absent in ["inference", "conversations", "prompts", "connectors"] {
        assert_eq!(stores[absent], Value::Null, "{absent}");
    }
    let bad = json!({"storage": {"backends": backends.clone(), "stores": {
        "metadata": {"backend": "sql", "namespace": "reg"},
        "prompts": {"backend": "nowhere", "tableName": "p"}}}});
    let Err(GenerateError::Invalid(errors)) = run_ogx(bad) else {
        panic!("refused")
    };
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "spec.storage.stores.metadata.backend: backend \"sql\" must reference a kv_postgres backend",
            "spec.storage.stores.prompts.backend: references unknown backend \"nowhere\""
        ]
    );
    // Two SQL backends and no stores: which one holds what is not guessed.
    let Err(GenerateError::Invalid(errors)) = run_ogx(json!({"storage": {"backends": backends}}))
    else {
        panic!("refused")
    };
    assert_eq!(
        errors[0].to_string(),
        "spec.storage.stores: expected exactly one sql_postgres backend, found 2; set spec.storage.stores or configure one backend of that type"
    );
}

/// `conversations` (the OGX operator's newer `disabledAPIs` item) leaves the config's `apis`, as
/// the OGX operator writes it, with a warning that the server serves it anyway (both servers add
/// it to what they serve themselves).
#[test]
fn disabled_conversations_leave_apis_and_are_said_to_stay_served() {
    let base = OGX_STARTER.replacen("apis:\n", "apis:\n- conversations\n", 1);
    let g = generate_from_yaml(
        &spec(json!({"disabled": ["conversations"]})),
        &base,
        ProviderTable::ogx(),
    )
    .unwrap();
    let apis = config(&g)["apis"].clone();
    assert!(
        !apis.as_array().unwrap().contains(&json!("conversations")),
        "{apis}"
    );
    assert!(apis.as_array().unwrap().contains(&json!("responses")));
    assert!(
        g.warnings.iter().any(|w| w.starts_with(
            "spec.disabled[0]: \"conversations\" leaves the config's apis, but ogx 1.3.0 serves it"
        )),
        "{:?}",
        g.warnings
    );
}

/// What the server would refuse at start-up is refused here, at the field: numbers out of its
/// bounds, blank names, and two backends whose passwords would share one variable.
#[test]
fn backend_values_the_server_refuses_are_refused() {
    let Err(GenerateError::Invalid(errors)) = run_ogx(json!({"storage": {"backends": {
        "kv": {"type": "kv_postgres", "user": " ", "port": 70000, "poolSize": 0,
            "commandTimeout": "0", "password": {"name": "a", "key": "p"}},
        "KV": {"type": "kv_postgres", "user": "u", "password": {"name": "b", "key": "p"}},
        "sql": {"type": "sql_postgres", "user": "u", "maxOverflow": -1, "poolRecycle": "-2",
            "port": "${env.PG_PORT:=5432}", "poolSize": "1.5"}}}}))
    else {
        panic!("refused")
    };
    let mut fields: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "spec.storage.backends.kv.commandTimeout",
            "spec.storage.backends.kv.password",
            "spec.storage.backends.kv.poolSize",
            "spec.storage.backends.kv.port",
            "spec.storage.backends.kv.user",
            "spec.storage.backends.sql.maxOverflow",
            "spec.storage.backends.sql.poolRecycle",
            "spec.storage.backends.sql.poolSize",
            // Two kv backends and no stores.
            "spec.storage.stores",
        ]
    );
    let shared = errors
        .iter()
        .find(|e| e.path.ends_with("kv.password"))
        .unwrap();
    assert!(
        shared.message.contains(
            "OGX_STORAGE_BACKEND_KV_PASSWORD, which spec.storage.backends.KV.password already uses"
        ),
        "{}",
        shared.message
    );
}

/// A provider store on a replaced default backend moves to the only backend of its kind when no
/// store names one; `stores.inference.enabled` is named where the server does not read it.
#[test]
fn provider_stores_move_to_the_only_backend_of_their_kind() {
    let g = run_ogx(json!({"storage": {"backends": {
        "kv": {"type": "kv_postgres", "user": "u"}, "sql": {"type": "sql_postgres", "user": "u"}},
        "stores": {"metadata": {"backend": "kv", "namespace": "r"},
            "inference": {"backend": "sql", "tableName": "i", "enabled": false}}}}))
    .unwrap();
    let text = serde_json::to_string(&config(&g)["providers"]).unwrap();
    assert!(
        !text.contains("sql_default") && text.contains("\"backend\":\"sql\""),
        "{text}"
    );
    assert!(
        g.warnings
            .iter()
            .any(|w| w.starts_with("spec.storage.stores.inference.enabled: read by OGX 1.5.0")),
        "{:?}",
        g.warnings
    );
    let g = run_ogx(json!({"storage": {"backends": {
        "kv": {"type": "kv_postgres", "user": "u"}, "sql": {"type": "sql_postgres", "user": "u"}},
        "stores": {"metadata": {"backend": "kv", "namespace": "r"}}}}))
    .unwrap();
    let text = serde_json::to_string(&config(&g)["providers"]).unwrap();
    assert!(
        !text.contains("sql_default"),
        "moved with no SQL store named: {text}"
    );
}

#[test]
fn the_password_variable_is_the_ogx_operators() {
    use super::generate::password_variable_for_tests as variable;
    assert_eq!(variable("pg_kv"), "OGX_STORAGE_BACKEND_PG_KV_PASSWORD");
    assert_eq!(variable("--a..b--"), "OGX_STORAGE_BACKEND_A_B_PASSWORD");
    assert_eq!(variable("1st"), "OGX_STORAGE_BACKEND__1ST_PASSWORD");
    assert_eq!(variable("--"), "OGX_STORAGE_BACKEND___PASSWORD");
}

/// TLS settings of a `sql_postgres` backend reach only a server that reads them (OGX 1.4.1 and
/// later; OGX 1.3.0 and llama-stack 0.7.3 drop them without a word, measured on both): elsewhere
/// they are refused, so no connection runs without the TLS asked for; an image that does not say
/// its version is warned about.
#[test]
fn sql_tls_settings_are_refused_where_the_server_drops_them() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let asked = spec(json!({"storage": {"backends": {
        "kv": {"type": "kv_postgres", "user": "u"},
        "sql": {"type": "sql_postgres", "user": "u", "sslMode": "verify-full", "caCertPath": "/ca.pem"}}}}));
    let on = |version: Option<ServerVersion>| {
        let mut base = super::parse_base(OGX_STARTER).unwrap();
        base.server = Some(ServerRelease {
            line: ServerLine::Ogx,
            version,
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        });
        super::generate(&asked, &base, ProviderTable::ogx())
    };
    let Err(GenerateError::Invalid(errors)) = on(Some(ServerVersion::new(1, 3, 0))) else {
        panic!("OGX 1.3.0 drops them")
    };
    let fields: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.storage.backends.sql.sslMode",
            "spec.storage.backends.sql.caCertPath"
        ]
    );
    assert!(
        errors[0].message.starts_with("ogx 1.3.0 does not read it"),
        "{}",
        errors[0].message
    );
    let read = on(Some(ServerVersion::new(1, 5, 0))).unwrap();
    let sql = &config(&read)["storage"]["backends"]["sql"];
    assert_eq!(
        (sql["ssl_mode"].as_str(), sql["ca_cert_path"].as_str()),
        (Some("verify-full"), Some("/ca.pem"))
    );
    let unknown = on(None).unwrap();
    assert_eq!(
        unknown
            .warnings
            .iter()
            .filter(|w| w.contains("server release is not known here"))
            .count(),
        2
    );
    // An image that says nothing (llama-stack assumed) is not judged either, nor the catalog's
    // release at admission (before the image is read).
    let mut assumed = super::parse_base(OGX_STARTER).unwrap();
    assumed.server = Some(ServerRelease::ASSUMED);
    assert!(super::generate(&asked, &assumed, ProviderTable::ogx()).is_ok());
    assert!(generate_from_yaml(&asked, OGX_STARTER, ProviderTable::ogx()).is_ok());
}

/// `stores.inference.enabled` is judged as the TLS settings are: by the release the image told
/// (OGX 1.5.0 and later read it), and said to be unknown where the release is only the catalog's
/// (admission) or assumed.
#[test]
fn the_inference_store_switch_is_judged_by_the_release_the_image_told() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let asked = spec(json!({"storage": {"backends": {
        "kv": {"type": "kv_postgres", "user": "u"}, "sql": {"type": "sql_postgres", "user": "u"}},
        "stores": {"metadata": {"backend": "kv", "namespace": "r"},
            "inference": {"backend": "sql", "tableName": "i", "enabled": false}}}}));
    let warning = |release: Option<ServerRelease>| {
        let mut base = super::parse_base(OGX_STARTER).unwrap();
        if release.is_some() {
            base.server = release;
        }
        let g = super::generate(&asked, &base, ProviderTable::ogx()).unwrap();
        g.warnings
            .into_iter()
            .filter(|w| w.starts_with("spec.storage.stores.inference.enabled"))
            .collect::<Vec<_>>()
    };
    let told = |version| {
        Some(ServerRelease {
            line: ServerLine::Ogx,
            version: Some(version),
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        })
    };
    let on_130 = warning(told(ServerVersion::new(1, 3, 0)));
    assert!(
        on_130.len() == 1 && on_130[0].contains("ogx 1.3.0 records inference calls"),
        "{on_130:?}"
    );
    assert_eq!(
        warning(told(ServerVersion::new(1, 5, 0))),
        Vec::<String>::new()
    );
    for unknown in [None, Some(ServerRelease::ASSUMED)] {
        let said = warning(unknown);
        assert!(
            said.len() == 1 && said[0].contains("the image's server release is not known here"),
            "{said:?}"
        );
    }
}

/// Behind Praxis: only OGX (llama-stack has no upstream-header authentication), a `responses`
/// provider of one's own is an error (Praxis serves that API), the base config's own `server.auth`
/// is replaced with a warning, and stores the spec names are left as written (no vector store
/// table added).
#[test]
fn a_praxis_gateway_needs_ogx_and_takes_its_apis_and_the_auth() {
    let praxis = json!({"praxis": {}});
    let on_llama = errors(json!({"gateway": praxis}));
    assert!(
        on_llama
            .iter()
            .any(|e| e.starts_with("spec.gateway.praxis: Praxis fronts OGX servers")),
        "{on_llama:?}"
    );
    match run_ogx(json!({"gateway": praxis,
        "providers": {"responses": {"provider": "inline::builtin"}}}))
    {
        Err(GenerateError::Invalid(errors)) => assert!(
            errors.iter().any(|e| e.path == "spec.providers.responses"),
            "{errors:?}"
        ),
        other => panic!("a responses provider behind Praxis: {other:?}"),
    }
    let with_auth = OGX_STARTER.replacen(
        "server:\n  port: 8321\n",
        "server:\n  port: 8321\n  auth:\n    provider_config:\n      type: github_token\n",
        1,
    );
    let g = generate_from_yaml(
        &spec(json!({"gateway": praxis})),
        &with_auth,
        ProviderTable::ogx(),
    )
    .unwrap();
    assert_eq!(
        config(&g)["server"]["auth"]["provider_config"]["type"],
        "upstream_header"
    );
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("server.auth is replaced")),
        "{:?}",
        g.warnings
    );
    // Stores named without the vector stores' table: OGX 1.3.0 would not start its vector store
    // providers (tenancy multi); with the table, it is the one written.
    let stores = |vector: Value| {
        json!({"gateway": praxis, "storage": {
        "backends": {
            "kv": {"type": "kv_postgres", "user": "ogx"},
            "sql": {"type": "sql_postgres", "user": "ogx"}},
        "stores": {"metadata": {"backend": "kv", "namespace": "registry"}, "vectorStores": vector}}})
    };
    match run_ogx(stores(Value::Null)) {
        Err(GenerateError::Invalid(errors)) => assert!(
            errors
                .iter()
                .any(|e| e.path == "spec.storage.stores.vectorStores"),
            "{errors:?}"
        ),
        other => panic!("stores without the vector stores' table behind Praxis: {other:?}"),
    }
    let named = run_ogx(stores(json!({"backend": "sql", "tableName": "mine"}))).unwrap();
    assert_eq!(
        config(&named)["storage"]["stores"]["vector_stores"],
        json!({"backend": "sql", "table_name": "mine"})
    );
    // Named backends without stores: the table goes to the SQL backend.
    let defaulted = run_ogx(json!({"gateway": praxis, "storage": {"backends": {
        "b-kv": {"type": "kv_postgres", "user": "ogx"},
        "a-sql": {"type": "sql_postgres", "user": "ogx"}}}}))
    .unwrap();
    assert_eq!(
        config(&defaulted)["storage"]["stores"]["vector_stores"],
        json!({"backend": "a-sql", "table_name": "openai_vector_stores"})
    );
}

/// OGX 1.0 and 1.1 ignore `server.tenancy` (checked in their wheels): behind Praxis every tenant
/// would share one partition, so an image that says it runs one is refused; 1.2 is served, and
/// so is a release the image does not tell (the catalog's).
#[test]
fn praxis_needs_an_ogx_that_reads_tenancy() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let asked = spec(json!({"gateway": {"praxis": {}}}));
    let on = |version: ServerVersion| {
        let mut base = super::parse_base(OGX_STARTER).unwrap();
        base.server = Some(ServerRelease {
            line: ServerLine::Ogx,
            version: Some(version),
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        });
        super::generate(&asked, &base, ProviderTable::ogx())
    };
    match on(ServerVersion::new(1, 1, 3)) {
        Err(GenerateError::Invalid(errors)) => {
            assert!(
                errors.iter().any(|e| e.path == "spec.gateway.praxis"
                    && e.message.contains("ogx 1.1.3 ignores it")),
                "{errors:?}"
            )
        }
        other => panic!("OGX 1.1.3 behind Praxis: {other:?}"),
    }
    assert!(on(ServerVersion::new(1, 2, 0)).is_ok());
    assert!(run_ogx(json!({"gateway": {"praxis": {}}})).is_ok());
}

/// The provider table is the release's the image tells: a provider that came in OGX 1.3.0 is
/// refused on an image labelled 1.2.2 (RHOAI 3.5's), naming the releases whose table says so,
/// and taken on 1.3.0; a release newer than every table is generated with the newest and said
/// so.
#[test]
fn providers_are_checked_against_the_release_the_image_tells() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let asked = spec(json!({"providers": {"inference":
        {"provider": "deepseek", "endpoint": "https://api.deepseek.com/v1"}}}));
    let on = |version: &str| {
        let mut base = super::parse_base(OGX_STARTER).unwrap();
        base.server = Some(ServerRelease {
            line: ServerLine::Ogx,
            version: ServerVersion::parse(version),
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        });
        super::generate(
            &asked,
            &base,
            ProviderTable::for_server(base.server.as_ref()),
        )
    };
    let Err(GenerateError::Invalid(errors)) = on("1.2.2") else {
        panic!("OGX 1.2.2 has no deepseek provider")
    };
    assert_eq!(errors[0].path, "spec.providers.inference.provider");
    assert!(
        errors[0].message.contains("of OGX 1.2.0 to 1.2.4"),
        "{}",
        errors[0].message
    );
    let on_130 = on("1.3.0").unwrap();
    assert_eq!(
        config(&on_130)["providers"]["inference"][0]["provider_type"],
        "remote::deepseek"
    );
    assert!(
        on_130
            .warnings
            .iter()
            .all(|w| !w.contains("no provider table"))
    );
    let newer = on("1.7.0").unwrap();
    assert!(
        newer
            .warnings
            .iter()
            .any(|w| w.contains("OGX 1.7.0") && w.contains("OGX 1.5.0's")),
        "{:?}",
        newer.warnings
    );
}
