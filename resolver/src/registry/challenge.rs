//! `WWW-Authenticate` challenges of the registry API (RFC 7235, as registries send them).

use std::collections::BTreeMap;

/// What the registry asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Challenge {
    /// HTTP Basic on every request.
    Basic,
    /// A token from `realm`, for `service` and a scope.
    Bearer {
        /// Token endpoint.
        realm: String,
        /// Service name to ask the token for.
        service: Option<String>,
    },
}

/// Parses the first usable challenge of a header value; `None` when none is understood.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header
        .split_once(char::is_whitespace)
        .unwrap_or((header, ""));
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic),
        "bearer" => {
            let params = parse_params(rest);
            Some(Challenge::Bearer {
                realm: params.get("realm")?.clone(),
                service: params.get("service").cloned(),
            })
        }
        _ => None,
    }
}

/// `key="value", key2=value2` into a map (keys lowercased).
fn parse_params(input: &str) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let mut chars = input.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = chars
                .by_ref()
                .take_while(|c| *c != ',')
                .collect::<String>()
                .trim()
                .to_owned();
        }
        params.insert(key.trim().to_ascii_lowercase(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_and_basic() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry.example.com".into())
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="test-realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Bearer service=x"), None, "no realm");
        assert_eq!(parse_challenge("Negotiate abc"), None);
        assert_eq!(
            parse_challenge(r#"bearer realm="http://h/t\"x\"", error="invalid_token""#),
            Some(Challenge::Bearer {
                realm: "http://h/t\"x\"".into(),
                service: None
            })
        );
    }
}
