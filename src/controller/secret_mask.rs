//! Masks credentials in a provider config the server reported (`/v1/providers`) before it is
//! written into the status. llama-stack masks its own secret fields (`"api_key": "********"`) by
//! type; what it does not see as secret still carries credentials: the password of a URL
//! (`postgres://user:pw@db/x`), a token in a query string (`?access_token=…`), a `password=…`
//! pair of a connection string, a field named like a secret that a provider typed as plain text.
//! Pure.

use serde_json::{Map, Value};

/// What a masked value reads.
pub const MASK: &str = "********";
/// A provider's config larger than this (serialized) is left out of the status.
pub const MAX_CONFIG_BYTES: usize = 4096;

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
];
/// Word pairs that do the same: `api_key`, `access_key`, `private_key`.
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("session", "key"),
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

/// The config with every credential masked, or `None` when it is not an object or too large to
/// belong in a status.
pub fn masked_config(config: &Value) -> Option<Map<String, Value>> {
    let mut config = config.as_object()?.clone();
    for (key, value) in &mut config {
        mask(Some(key), value);
    }
    let size = serde_json::to_vec(&config).map_or(usize::MAX, |b| b.len());
    (size <= MAX_CONFIG_BYTES).then_some(config)
}

fn mask(key: Option<&str>, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                mask(Some(k), v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| mask(key, item)),
        Value::String(text) if key.is_some_and(is_secret_name) && !text.is_empty() => {
            *text = MASK.to_owned();
        }
        Value::String(text) if key.is_some_and(is_secret_name) => {}
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
    fn credentials_the_server_left_are_masked_and_nothing_else() {
        let reported = json!({
            "base_url": "http://admin:hunter2@vllm.models:8000/v1",
            "api_token": "********",
            "hf_token": "hf_abcdef",
            "max_tokens": 4096,
            "tokenizer": "gpt2",
            "url": "https://search.example/api?q=x&access_token=abc123&limit=5",
            "db": "host=pg port=5432 user=llama password=s3cret dbname=kv sslmode=verify-full",
            "headers": {"Authorization": "Bearer xyz", "X-Trace": "1"},
            "endpoints": ["https://u:p@a.example/", "https://b.example/"],
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
                "tokenizer": "gpt2",
                "url": "https://search.example/api?q=x&access_token=********&limit=5",
                "db": "host=pg port=5432 user=llama password=******** dbname=kv sslmode=verify-full",
                "headers": {"Authorization": "********", "X-Trace": "1"},
                "endpoints": ["https://********@a.example/", "https://b.example/"],
                "empty_password": "",
            })
        );
        let text = masked.to_string();
        for secret in ["hunter2", "hf_abcdef", "abc123", "s3cret", "xyz", ":p@"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }

    #[test]
    fn an_at_sign_after_the_host_is_not_user_information() {
        assert_eq!(masked_text("https://host/path/user@example.com"), None);
        assert_eq!(masked_text("mailto-like user@example.com"), None);
    }

    #[test]
    fn large_or_non_object_configs_stay_out_of_the_status() {
        assert!(masked_config(&json!("text")).is_none());
        let big = json!({"blob": "x".repeat(MAX_CONFIG_BYTES)});
        assert!(masked_config(&big).is_none());
    }
}
