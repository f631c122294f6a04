//! Masks a provider config the server reported (`/v1/providers`) before it is written into the
//! status. The server masks only the fields it types as secrets (`"api_key": "********"`) and
//! echoes everything else as written, keys the provider ignores included (see
//! `tests/fixtures/server-answers/`): a credential can hide under any name. So a text is shown
//! only under a key known to hold no credential (the non-credential fields of llama-stack's own
//! provider configs, [`SAFE_KEYS`]); any other text is masked. Numbers, booleans and nulls are
//! shown. A text that is shown still has the credentials inside it masked: a URL's user
//! information (`postgres://user:pw@db/x`), a credential parameter of a query or connection
//! string (`?access_token=…`, `password=…`). Pure.

use serde_json::{Map, Value};

/// What a masked value reads.
pub const MASK: &str = "********";
/// A provider's config larger than this (serialized) is left out of the status.
pub const MAX_CONFIG_BYTES: usize = 4096;

/// Keys whose text values are shown: the fields of llama-stack 0.7.3's provider configs (every
/// provider's config class, read from the installed package) and of its storage references that
/// hold no credential. Sorted, for the binary search.
const SAFE_KEYS: &[&str] = &[
    "agent_state",
    "allowed_models",
    "annotation_instruction_template",
    "annotation_prompt_params",
    "api_type",
    "api_version",
    "auth_mechanism",
    "auto_create_bucket",
    "backend",
    "base_url",
    "bucket_name",
    "cacert",
    "chunk_annotation_template",
    "chunk_multiplier",
    "chunk_retrieval_params",
    "ciphers",
    "clean_text",
    "cleanup_interval_seconds",
    "client_cert",
    "config_id",
    "connect",
    "connect_timeout",
    "consistency_level",
    "context_prompt_params",
    "context_template",
    "contextual_retrieval_params",
    "dataset_namespace",
    "datasets_url",
    "db",
    "db_path",
    "default_chunk_overlap_tokens",
    "default_chunk_size_tokens",
    "default_embedding_model",
    "default_max_concurrency",
    "default_provider_id",
    "default_reranker_model",
    "default_reranker_strategy",
    "default_timeout_seconds",
    "distance_metric",
    "elasticsearch_url",
    "embedding_dimensions",
    "enable_annotations",
    "endpoint_url",
    "evaluator_url",
    "ewallet_pem_loc",
    "excluded_categories",
    "extra_blocked_headers",
    "extract_metadata",
    "file_batch_chunk_size",
    "file_batch_params",
    "file_ingestion_params",
    "file_search_params",
    "footer_template",
    "grpc_port",
    "guard_type",
    "guardrails_service_url",
    "header_template",
    "host",
    "http",
    "https",
    "kvstore",
    "location",
    "max_concurrent_batches",
    "max_concurrent_files_per_batch",
    "max_concurrent_requests_per_batch",
    "max_document_tokens",
    "max_file_size_bytes",
    "max_results",
    "max_tokens",
    "max_tokens_in_context",
    "max_write_queue_size",
    "metadata_store",
    "min_version",
    "model",
    "model_id",
    "models",
    "name",
    "namespace",
    "network",
    "no_proxy",
    "num_writers",
    "oci_auth_type",
    "oci_compartment_id",
    "oci_config_file_path",
    "oci_config_profile",
    "oci_region",
    "path",
    "persistence",
    "port",
    "prefer_grpc",
    "prefix",
    "profile_name",
    "project",
    "project_id",
    "prompt",
    "provider_id",
    "proxy",
    "read",
    "read_timeout",
    "refresh_models",
    "region",
    "region_name",
    "rerank_model_to_url",
    "responses",
    "retry_mode",
    "rewrite_query_params",
    "rrf_impact_factor",
    "session_ttl",
    "storage_dir",
    "table_name",
    "temperature",
    "timeout",
    "tls",
    "tls_verify",
    "tnsnames_loc",
    "top_k",
    "total_max_attempts",
    "trust_remote_code",
    "ttl_secs",
    "type",
    "uri",
    "url",
    "use_https",
    "user",
    "username",
    "vector_datatype",
    "vector_index",
    "vector_stores_config",
    "verify",
    "verify_tls",
    "weaviate_cluster_url",
    "weighted_search_alpha",
];

/// Whether a text under `key` may be shown (after its inner credentials are masked).
fn is_safe_key(key: &str) -> bool {
    SAFE_KEYS.binary_search(&key).is_ok()
}

/// Words that make a key or parameter name a credential's: `api_token`, `hfToken`,
/// `client-secret`, `PASSWORD`. Not `max_tokens` or `tokenizer` (other words).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
    "authorization",
    "auth",
    "sig",
    "signature",
    "passphrase",
    "accountkey",
    "sas",
];
/// Word pairs that do the same: `api_key`, `access_key`, `private_key`.
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("session", "key"),
    ("account", "key"),
    ("encryption", "key"),
    ("shared", "key"),
];

/// The lower-case words of a name: split at `_`, `-`, `.`, spaces and camel case.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            words.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    words.push(current);
    words.retain(|w| !w.is_empty());
    words
}

/// Whether a key or parameter name names a credential.
pub fn is_secret_name(name: &str) -> bool {
    let words = words(name);
    words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|pair| SECRET_PAIRS.contains(&(pair[0].as_str(), pair[1].as_str())))
}

/// The config with every text not known to be safe masked, or `None` when it is not an object
/// or too large to belong in a status.
pub fn masked_config(config: &Value) -> Option<Map<String, Value>> {
    let mut config = config.as_object()?.clone();
    for (key, value) in &mut config {
        mask(key, value);
    }
    let size = serde_json::to_vec(&config).map_or(usize::MAX, |b| b.len());
    (size <= MAX_CONFIG_BYTES).then_some(config)
}

/// Masks `value`, found under `key` (a list's items are under the list's key).
fn mask(key: &str, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                mask(k, v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| mask(key, item)),
        Value::String(text) if text.is_empty() => {}
        Value::String(text) if !is_safe_key(key) => *text = MASK.to_owned(),
        Value::String(text) => {
            if let Some(masked) = masked_text(text) {
                *text = masked;
            }
        }
        _ => {}
    }
}

/// A string with the credentials inside it masked; `None` when it holds none.
pub fn masked_text(text: &str) -> Option<String> {
    let masked = mask_pairs(&mask_url(text));
    (masked != text).then_some(masked)
}

/// `scheme://user:password@host/…?token=…`: the user information and credential parameters.
fn mask_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_owned();
    };
    let authority_start = scheme_end + 3;
    let rest = &text[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{MASK}{}", &text[..authority_start], &rest[at..]),
        None => text.to_owned(),
    }
}

/// `name=value` pairs whose name is a credential's (query strings, libpq connection strings,
/// DSNs), separated by `&`, `;`, `?`, `,` or whitespace.
fn mask_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let name_start = rest[..eq]
            .rfind(|c: char| matches!(c, '&' | ';' | '?' | ',') || c.is_whitespace())
            .map_or(0, |i| i + 1);
        let value_end = rest[eq + 1..]
            .find(|c: char| matches!(c, '&' | ';' | ',' | '#') || c.is_whitespace())
            .map_or(rest.len(), |i| eq + 1 + i);
        out.push_str(&rest[..=eq]);
        let value = &rest[eq + 1..value_end];
        if is_secret_name(&rest[name_start..eq]) && !value.is_empty() {
            out.push_str(MASK);
        } else {
            out.push_str(value);
        }
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_read_as_words() {
        for secret in [
            "api_key",
            "apiKey",
            "API_TOKEN",
            "hf_token",
            "password",
            "client-secret",
            "accessKey",
            "sig",
            "Authorization",
            "secretAccessKey",
        ] {
            assert!(is_secret_name(secret), "{secret} is a credential's name");
        }
        for plain in [
            "max_tokens",
            "tokenizer",
            "url",
            "base_url",
            "keys",
            "authority",
            "key_prefix",
            "db",
            "signal",
        ] {
            assert!(!is_secret_name(plain), "{plain} is not a credential's name");
        }
    }

    #[test]
    fn only_texts_under_keys_known_to_be_safe_are_shown() {
        let reported = json!({
            "base_url": "http://admin:hunter2@vllm.models:8000/v1",
            "api_token": "********",
            "hf_token": "hf_abcdef",
            "max_tokens": 4096,
            "tls_verify": false,
            "tokenizer": "gpt2",
            "url": "https://search.example/api?q=x&access_token=abc123&limit=5",
            "db": "host=pg port=5432 user=llama password=s3cret dbname=kv sslmode=verify-full",
            "headers": {"Authorization": "Bearer xyz", "X-Trace": "1"},
            "models": ["https://u:p@a.example/", "https://b.example/"],
            "kvstore": {"type": "redis", "host": "redis.db", "password": "r3dis"},
            "empty_password": "",
        });
        let masked = Value::Object(masked_config(&reported).unwrap());
        assert_eq!(
            masked,
            json!({
                "base_url": "http://********@vllm.models:8000/v1",
                "api_token": "********",
                "hf_token": "********",
                "max_tokens": 4096,
                "tls_verify": false,
                "tokenizer": "********",
                "url": "https://search.example/api?q=x&access_token=********&limit=5",
                "db": "host=pg port=5432 user=llama password=******** dbname=kv sslmode=verify-full",
                "headers": {"Authorization": "********", "X-Trace": "********"},
                "models": ["https://********@a.example/", "https://b.example/"],
                "kvstore": {"type": "redis", "host": "redis.db", "password": "********"},
                "empty_password": "",
            })
        );
        let text = masked.to_string();
        for secret in [
            "hunter2",
            "hf_abcdef",
            "abc123",
            "s3cret",
            "xyz",
            ":p@",
            "r3dis",
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }

    /// The real server's answer (llama-stack 0.7.3, `tests/fixtures/server-answers/`), with a
    /// credential planted wherever one can hide: none reaches the status, and what the status is
    /// for (endpoints, limits, regions, paths) still shows.
    #[test]
    fn the_real_servers_answer_keeps_no_planted_credential() {
        let answer: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/server-answers/llama-stack-0.7.3-providers.json"
        ))
        .unwrap();
        let masked: Vec<Value> = answer["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| Value::Object(masked_config(&p["config"]).unwrap()))
            .collect();
        let text = serde_json::to_string(&masked).unwrap();
        let planted = [
            "url-pass-1",
            "vllm-token-2",
            "openai-key-3",
            "azure-key-4",
            "bedrock-key-5",
            "brave-key-6",
            "tavily-key-7",
            "enc-key-8",
            "account-key-9",
            "pass-phrase-10",
            "azure-account-key-11",
            "proxy-pass-12",
        ];
        // The server itself left some of them in its answer: what this module is for.
        let raw = answer.to_string();
        assert!(
            planted.iter().filter(|p| raw.contains(*p)).count() >= 6,
            "{raw}"
        );
        for secret in planted {
            assert!(
                !text.contains(secret),
                "{secret} reaches the status: {text}"
            );
        }
        for shown in [
            "vllm.models:8000/v1",
            "https://api.openai.com/v1",
            "2024-12-01-preview",
            "us-east-2",
            "/tmp/lls/files",
            "files_metadata",
            "proxy.corp:3128",
        ] {
            assert!(text.contains(shown), "{shown} is not shown: {text}");
        }
        assert!(text.contains("\"max_tokens\":4096") && text.contains("\"max_results\":3"));
    }

    #[test]
    fn an_at_sign_after_the_host_is_not_user_information() {
        assert_eq!(masked_text("https://host/path/user@example.com"), None);
        assert_eq!(masked_text("mailto-like user@example.com"), None);
    }

    #[test]
    fn large_or_non_object_configs_stay_out_of_the_status() {
        assert!(masked_config(&json!("text")).is_none());
        let big = json!({"url": "x".repeat(MAX_CONFIG_BYTES)});
        assert!(masked_config(&big).is_none());
    }
}
