//! Registry credentials matched to an image exactly as kubelet does
//! (`pkg/credentialprovider/keyring.go`, unchanged through Kubernetes 1.35).
//!
//! - Keys are normalised on insertion: scheme dropped, a `/v1/` or `/v2/` path prefix reduced
//!   to `/`, a lone `/` path dropped. Host and port are kept as written (not lowercased).
//! - Lookup walks the keys in descending byte order (longer paths before shorter ones, literal
//!   labels before `*`) and returns the credentials of **every** matching key, each key's
//!   credentials in insertion order.
//! - A key matches when the ports are equal, the host has the same number of labels, every
//!   label matches as a Go `filepath.Match` glob, and the image path starts with the key path
//!   (a plain string prefix).
//! - With no match, a Docker Hub image falls back to the `index.docker.io` credentials.

use std::collections::BTreeMap;
use std::fmt;

/// Host of Docker Hub's credentials key.
const DOCKER_HUB_KEY: &str = "index.docker.io";

/// Where a credential came from (for error messages; never the secret value).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CredentialSource {
    /// Namespace of the pull secret.
    pub namespace: String,
    /// Name of the pull secret.
    pub name: String,
}

impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A source outside any namespace (a credential provider plugin) is named alone.
        if self.namespace.is_empty() {
            return f.write_str(&self.name);
        }
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A username and password for a registry. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credential {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
    /// The pull secret it came from.
    pub source: CredentialSource,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("source", &self.source)
            .finish()
    }
}

/// Credentials indexed by normalised registry key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keyring {
    creds: BTreeMap<String, Vec<Credential>>,
}

/// Splits a schemeless URL into host and path, the way Go's `url.Parse("https://" + s)` does for
/// the inputs registries use. Query and fragment are dropped.
fn split_host_path(schemeless: &str) -> (&str, &str) {
    let end = schemeless.find(['?', '#']).unwrap_or(schemeless.len());
    let s = &schemeless[..end];
    match s.find('/') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// The keyring key of a registry as written in a docker config (`https://quay.io/v1/` ->
/// `quay.io`, `quay.io/org` -> `quay.io/org`). `None` for keys Go's URL parser rejects.
pub fn normalize_key(location: &str) -> Option<String> {
    let schemeless = location
        .strip_prefix("https://")
        .or_else(|| location.strip_prefix("http://"))
        .unwrap_or(location);
    let (host, path) = split_host_path(schemeless);
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let path = if path.starts_with("/v2/") || path.starts_with("/v1/") {
        &path[3..]
    } else {
        path
    };
    Some(if path.is_empty() || path == "/" {
        host.to_owned()
    } else {
        format!("{host}{path}")
    })
}

impl Keyring {
    /// Adds credentials for a registry location, after the normalisation kubelet applies.
    /// Returns false (and adds nothing) for a location Go's URL parser would reject.
    pub fn add(&mut self, location: &str, credential: Credential) -> bool {
        match normalize_key(location) {
            Some(key) => {
                self.creds.entry(key).or_default().push(credential);
                true
            }
            None => false,
        }
    }

    /// Whether no credentials were added.
    pub fn is_empty(&self) -> bool {
        self.creds.is_empty()
    }

    /// Adds every credential of `other` (already normalised), after those of the same key.
    pub fn extend(&mut self, other: &Keyring) {
        for (key, creds) in &other.creds {
            self.creds
                .entry(key.clone())
                .or_default()
                .extend(creds.iter().cloned());
        }
    }

    /// Credentials for an image repository name as kubelet normalises it (`docker.io/library/nginx`,
    /// `quay.io/org/app`, no tag or digest), in the order they must be tried.
    pub fn lookup(&self, repository: &str) -> Vec<&Credential> {
        let matched: Vec<&Credential> = self
            .creds
            .iter()
            .rev()
            .filter(|(key, _)| urls_match(key, repository))
            .flat_map(|(_, creds)| creds)
            .collect();
        if !matched.is_empty() {
            return matched;
        }
        if is_default_registry(repository)
            && let Some(creds) = self.creds.get(DOCKER_HUB_KEY)
        {
            return creds.iter().collect();
        }
        Vec::new()
    }
}

/// Whether an image name pulls from Docker Hub.
pub fn is_default_registry(image: &str) -> bool {
    let first = image.split('/').next().unwrap_or_default();
    if first.is_empty() {
        return false;
    }
    if !image.contains('/') {
        return true;
    }
    first == "docker.io" || first == DOCKER_HUB_KEY || !first.contains(['.', ':'])
}

/// Go's `net.SplitHostPort`, falling back to (whole, "") when it fails, as kubelet does.
fn split_port(host: &str) -> (&str, &str) {
    if let Some(rest) = host.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let after = &rest[end + 1..];
            if let Some(port) = after.strip_prefix(':')
                && !port.contains(':')
            {
                return (&rest[..end], port);
            }
        }
        return (host, "");
    }
    match host.rfind(':') {
        Some(i) if !host[..i].contains(':') => (&host[..i], &host[i + 1..]),
        _ => (host, ""),
    }
}

/// kubelet's `URLsMatchStr(key, image)`.
pub fn urls_match(key: &str, target: &str) -> bool {
    let (key_host, key_path) = split_host_path(key);
    let (target_host, target_path) = split_host_path(target);
    let (key_name, key_port) = split_port(key_host);
    let (target_name, target_port) = split_port(target_host);
    if key_port != target_port {
        return false;
    }
    let key_labels: Vec<&str> = key_name.split('.').collect();
    let target_labels: Vec<&str> = target_name.split('.').collect();
    if key_labels.len() != target_labels.len() {
        return false;
    }
    key_labels
        .iter()
        .zip(&target_labels)
        .all(|(pattern, label)| glob_match(pattern, label) == Some(true))
        && target_path.starts_with(key_path)
}

/// Go's `filepath.Match` on one host label (no separators): `*`, `?`, `[...]` classes with
/// ranges and `^` negation, `\` escapes. `None` for a malformed pattern (which never matches).
pub fn glob_match(pattern: &str, name: &str) -> Option<bool> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Validate the whole pattern first, as Go reports ErrBadPattern even after a mismatch.
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return None;
                }
                i += 2;
            }
            '[' => i = parse_class(&p, i)?.1,
            _ => i += 1,
        }
    }
    Some(match_from(&p, &n))
}

/// Parses a `[...]` class starting at `p[start] == '['`: (matcher ranges, negated), next index.
#[allow(clippy::type_complexity)]
fn parse_class(p: &[char], start: usize) -> Option<((Vec<(char, char)>, bool), usize)> {
    let mut i = start + 1;
    let negated = p.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = *p.get(i)?;
        if c == ']' && !first {
            return Some(((ranges, negated), i + 1));
        }
        first = false;
        let lo = class_char(p, &mut i)?;
        let hi = if p.get(i) == Some(&'-') {
            i += 1;
            class_char(p, &mut i)?
        } else {
            lo
        };
        ranges.push((lo, hi));
    }
}

fn class_char(p: &[char], i: &mut usize) -> Option<char> {
    let c = *p.get(*i)?;
    if c == '-' || c == ']' {
        return None;
    }
    if c == '\\' {
        let escaped = *p.get(*i + 1)?;
        *i += 2;
        return Some(escaped);
    }
    *i += 1;
    Some(c)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    let Some(&c) = p.first() else {
        return n.is_empty();
    };
    match c {
        '*' => (0..=n.len()).any(|k| match_from(&p[1..], &n[k..])),
        '?' => !n.is_empty() && match_from(&p[1..], &n[1..]),
        '\\' => n.first() == p.get(1) && match_from(&p[2..], &n[1..]),
        '[' => {
            let Some(((ranges, negated), next)) = parse_class(p, 0) else {
                return false;
            };
            let Some(&ch) = n.first() else {
                return false;
            };
            let inside = ranges.iter().any(|&(lo, hi)| lo <= ch && ch <= hi);
            inside != negated && match_from(&p[next..], &n[1..])
        }
        literal => n.first() == Some(&literal) && match_from(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    //! Kubelet's own keyring test table (`pkg/credentialprovider/keyring_test.go`), ported.
    use super::*;

    fn cred(user: &str, password: &str) -> Credential {
        Credential {
            username: user.to_owned(),
            password: password.to_owned(),
            source: CredentialSource {
                namespace: "ns".to_owned(),
                name: "s".to_owned(),
            },
        }
    }

    fn users(found: Vec<&Credential>) -> Vec<&str> {
        found.iter().map(|c| c.username.as_str()).collect()
    }

    #[test]
    fn urls_match_table() {
        let table = [
            ("*.kubernetes.io", "prefix.kubernetes.io", true),
            ("prefix.*.io", "prefix.kubernetes.io", true),
            ("prefix.kubernetes.*", "prefix.kubernetes.io", true),
            ("*-good.kubernetes.io", "prefix-good.kubernetes.io", true),
            ("*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true),
            ("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true),
            (
                "*.kubernetes.io:1111/blah",
                "prefix.kubernetes.io:1111/blah",
                true,
            ),
            (
                "prefix.*.io:1111/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                true,
            ),
            ("*.kubernetes.io", "kubernetes.io", false),
            ("*.*.kubernetes.io", "prefix.kubernetes.io", false),
            ("*.*.kubernetes.io", "kubernetes.io", false),
            ("*kubernetes.io", "a.kubernetes.io", false),
            ("*kubernetes.io", "kubernetes.io", true),
            ("*.*.*.kubernetes.io", "a.b.c.kubernetes.io", true),
            ("kubernetes.io", "kubernetes.com", false),
            ("k*.io", "quay.io", false),
            (
                "*.kubernetes.io:1234/blah",
                "prefix.kubernetes.io:1111/blah",
                false,
            ),
            (
                "prefix.*.io/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                false,
            ),
        ];
        for (glob, target, expected) in table {
            assert_eq!(urls_match(glob, target), expected, "{glob} vs {target}");
        }
    }

    #[test]
    fn keyring_for_glob_table() {
        let table = [
            ("https://hello.kubernetes.io", "hello.kubernetes.io"),
            ("https://*.docker.io", "prefix.docker.io"),
            ("https://prefix.*.io", "prefix.docker.io"),
            ("https://prefix.docker.*", "prefix.docker.io"),
            ("https://*.docker.io/path", "prefix.docker.io/path"),
            ("https://prefix.*.io/path", "prefix.docker.io/path/subpath"),
            ("https://prefix.docker.*/path", "prefix.docker.io/path"),
            ("https://*.docker.io:8888", "prefix.docker.io:8888"),
            ("https://prefix.*.io:8888", "prefix.docker.io:8888"),
            ("https://prefix.docker.*:8888", "prefix.docker.io:8888"),
            (
                "https://*.docker.io/path:1111",
                "prefix.docker.io/path:1111",
            ),
            ("https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
            ("https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
            (
                "https://prefix.docker.*/path:1111",
                "prefix.docker.io/path:1111",
            ),
            ("prefix.docker.io:1111", "prefix.docker.io:1111/path"),
            ("*.docker.io:1111", "prefix.docker.io:1111/path"),
        ];
        for (key, target) in table {
            let mut keyring = Keyring::default();
            assert!(keyring.add(key, cred("foo", "bar")));
            let found = keyring.lookup(&format!("{target}/foo/bar"));
            assert_eq!(users(found), ["foo"], "{key} should match {target}/foo/bar");
        }
    }

    #[test]
    fn keyring_miss_table() {
        let table = [
            ("https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
            ("https://*.docker.com", "prefix.docker.io"),
            ("https://suffix.*.io", "prefix.docker.io"),
            ("https://prefix.docker.c*", "prefix.docker.io"),
            (
                "https://prefix.*.io/path:1111",
                "prefix.docker.io/path/subpath:1111",
            ),
            ("suffix.*.io", "prefix.docker.io"),
        ];
        for (key, target) in table {
            let mut keyring = Keyring::default();
            keyring.add(key, cred("foo", "bar"));
            assert!(
                keyring.lookup(&format!("{target}/foo/bar")).is_empty(),
                "{key} must not match {target}"
            );
        }
    }

    #[test]
    fn docker_hub_credentials() {
        let mut keyring = Keyring::default();
        keyring.add("https://index.docker.io/v1/", cred("foo", "bar"));
        assert!(keyring.lookup("world.mesos.org/foo/bar").is_empty());
        assert_eq!(users(keyring.lookup("google/docker-registry")), ["foo"]);
        assert_eq!(users(keyring.lookup("jenkins")), ["foo"]);
        assert_eq!(
            users(keyring.lookup("index.docker.io/v1//google/docker-registry")),
            ["foo"]
        );
        assert_eq!(
            users(keyring.lookup("docker.io/library/nginx")),
            ["foo"],
            "normalised names too"
        );
    }

    #[test]
    fn is_default_registry_table() {
        let table = [
            ("foo/bar", true),
            ("docker.io/foo/bar", true),
            ("index.docker.io/foo/bar", true),
            ("foo", true),
            ("", false),
            ("registry.tld/foo/bar", false),
            ("registry:5000/foo/bar", false),
            ("myhostdocker.io/foo/bar", false),
        ];
        for (image, expected) in table {
            assert_eq!(is_default_registry(image), expected, "{image:?}");
        }
    }

    #[test]
    fn lookup_returns_every_match_most_specific_first() {
        let mut keyring = Keyring::default();
        keyring.add("bar.example.com/pong", cred("grace", "squash"));
        keyring.add("bar.example.com", cred("ada", "smash"));
        let table: [(&str, &[&str]); 7] = [
            ("bar.example.com", &["ada"]),
            ("bar.example.com/pong", &["grace", "ada"]),
            ("bar.example.com/ping", &["ada"]),
            ("bar.example.com/pongz", &["grace", "ada"]),
            ("bar.example.com/pong/pang", &["grace", "ada"]),
            ("example.com", &[]),
            ("foo.example.com", &[]),
        ];
        for (image, expected) in table {
            assert_eq!(users(keyring.lookup(image)), expected, "{image}");
        }
    }

    #[test]
    fn issue_3797_v1_path_is_the_host() {
        let mut keyring = Keyring::default();
        keyring.add("https://quay.io/v1/", cred("rex", "tiny arms"));
        for image in ["quay.io", "quay.io/foo", "quay.io/foo/bar"] {
            assert_eq!(users(keyring.lookup(image)), ["rex"], "{image}");
        }
    }

    #[test]
    fn credentials_of_one_key_keep_insertion_order_across_secrets() {
        let mut keyring = Keyring::default();
        keyring.add("quay.io", cred("first", "a"));
        keyring.add("https://quay.io/v2/", cred("second", "b"));
        keyring.add("quay.io/org", cred("org", "c"));
        assert_eq!(
            users(keyring.lookup("quay.io/org/app")),
            ["org", "first", "second"]
        );
    }

    #[test]
    fn glob_classes_and_escapes() {
        assert_eq!(glob_match("reg[0-9]", "reg7"), Some(true));
        assert_eq!(glob_match("reg[^0-9]", "reg7"), Some(false));
        assert_eq!(glob_match("r?g", "rag"), Some(true));
        assert_eq!(glob_match("a\\*", "a*"), Some(true));
        assert_eq!(glob_match("a\\*", "ab"), Some(false));
        assert_eq!(glob_match("[", "x"), None, "malformed patterns never match");
        assert_eq!(glob_match("a\\", "a"), None);
        assert!(!urls_match("[.example.com", "a.example.com"));
    }

    #[test]
    fn debug_never_shows_the_password() {
        let text = format!("{:?}", cred("user", "hunter2"));
        assert!(!text.contains("hunter2"), "{text}");
    }
}
