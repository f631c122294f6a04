//! The operator ConfigMap (`llama-stack-operator-config` in the operator's namespace): settings
//! that change the resolver at runtime. Every invalid entry is reported, none silently dropped.
//!
//! Keys:
//! - `image-overrides`: YAML map of distribution name to image;
//! - `mirrors`: YAML list of `FROM=TO` rules;
//! - `insecure-registries`: YAML list of `host[:port]` reached over plain HTTP;
//! - `repin-interval`: `never` or a duration after which tags are looked up again;
//! - `image-signatures`: the signature policy (`llama_stack_resolver::signature::policy`), whose
//!   keys come from Secrets in the operator's namespace.
//!
//! The OGX operator's ConfigMap in the same namespace (`ogx-operator-config`) is read too, for
//! its `image-overrides` only (the one key the OGX operator reads from it, in the same form): an
//! installation that replaces the OGX operator keeps the images its administrators chose. This
//! operator's own entries win where both name a distribution.

pub(crate) mod stream;

use std::collections::BTreeMap;

use llama_stack_resolver::MirrorRule;
use llama_stack_resolver::parse_image_overrides;
use llama_stack_resolver::signature::policy::{
    Mode, RuleSpec, build_policy, parse_policy, secret_names,
};
use llama_stack_resolver::{Catalog, ResolverOptions};

/// Name of the operator ConfigMap.
pub const OPERATOR_CONFIG_MAP: &str = "llama-stack-operator-config";
/// Name of the OGX operator's ConfigMap, read for its `image-overrides`.
pub const OGX_OPERATOR_CONFIG_MAP: &str = "ogx-operator-config";
/// Where the settings' data carries the OGX operator ConfigMap's `image-overrides`: a `/` cannot
/// be in a ConfigMap key, so it never meets one of the operator ConfigMap's own.
pub const OGX_IMAGE_OVERRIDES: &str = "ogx-operator-config/image-overrides";

fn yaml_list(
    data: &BTreeMap<String, String>,
    key: &str,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let Some(text) = data.get(key) else {
        return Vec::new();
    };
    match serde_saphyr::from_str::<Vec<String>>(text) {
        Ok(items) => items,
        Err(e) => {
            problems.push(format!(
                "{OPERATOR_CONFIG_MAP} key {key:?} ignored: it must be a YAML list of strings: {e}"
            ));
            Vec::new()
        }
    }
}

/// The data of the Secrets the signature policy names (`None`: the Secret does not exist).
pub type KeySecrets = BTreeMap<String, Option<BTreeMap<String, Vec<u8>>>>;

/// The rules of the ConfigMap's `image-signatures`. A value that does not parse fails closed: one
/// rule covering every image, with no key and the parse error as its reason, so that a typo
/// refuses new images (running stacks keep theirs) instead of switching verification off.
fn signature_rules(data: &BTreeMap<String, String>, problems: &mut Vec<String>) -> Vec<RuleSpec> {
    let Some(text) = data.get("image-signatures") else {
        return Vec::new();
    };
    parse_policy(text).unwrap_or_else(|e| {
        let problem =
            format!("{OPERATOR_CONFIG_MAP} key \"image-signatures\" is invalid, so every image is refused until it is fixed: {e}");
        problems.push(problem.clone());
        vec![RuleSpec {
            name: Some(problem),
            distributions: Vec::new(),
            images: vec!["*".to_owned()],
            mode: Mode::Required,
            keys: Vec::new(),
            signature_repository: None,
        }]
    })
}

/// The Secrets in the operator's namespace that the ConfigMap's signature policy reads keys from.
pub fn key_secret_names(data: &BTreeMap<String, String>) -> Vec<String> {
    secret_names(&signature_rules(data, &mut Vec::new()))
}

/// Resolver options from the ConfigMap's data on top of `base`, with the signature policy's keys
/// from `secrets` ([`key_secret_names`]), and the problems found.
pub fn resolver_options(
    base: &ResolverOptions,
    embedded: &Catalog,
    data: &BTreeMap<String, String>,
    secrets: &KeySecrets,
) -> (ResolverOptions, Vec<String>) {
    let mut options = base.clone();
    let (catalog, mut problems) = catalog(embedded, data);
    options.catalog = catalog;
    for rule in yaml_list(data, "mirrors", &mut problems) {
        match rule.parse::<MirrorRule>() {
            Ok(rule) => options.mirrors.push(rule),
            Err(e) => problems.push(format!("{OPERATOR_CONFIG_MAP} mirrors entry ignored: {e}")),
        }
    }
    options
        .insecure_registries
        .extend(yaml_list(data, "insecure-registries", &mut problems));
    if let Some(text) = data.get("repin-interval") {
        match repin_interval(text) {
            Ok(interval) => options.repin_after = interval,
            Err(problem) => problems.push(format!(
                "{OPERATOR_CONFIG_MAP} key \"repin-interval\" ignored: {problem}"
            )),
        }
    }
    let rules = signature_rules(data, &mut problems);
    let (policy, key_problems) = build_policy(&rules, secrets);
    problems.extend(key_problems);
    options.signatures = std::sync::Arc::new(policy);
    (options, problems)
}

/// The catalog from the ConfigMap's `image-overrides` on top of the OGX operator ConfigMap's
/// ([`OGX_IMAGE_OVERRIDES`]) on top of `embedded` (the operator's own catalog), and the problems
/// found. Admission and the resolver both take names from it.
pub fn catalog(embedded: &Catalog, data: &BTreeMap<String, String>) -> (Catalog, Vec<String>) {
    let text = |key: &str| data.get(key).map_or("", String::as_str);
    let (ours, ours_problems) = parse_image_overrides(text("image-overrides"));
    let (theirs, their_problems) = parse_image_overrides(text(OGX_IMAGE_OVERRIDES));
    let mut problems: Vec<String> = ours_problems.iter().map(ToString::to_string).collect();
    problems.extend(
        their_problems
            .iter()
            .map(|p| format!("{OGX_OPERATOR_CONFIG_MAP} {p}")),
    );
    for (name, image) in &theirs {
        if let Some(own) = ours.get(name).filter(|own| *own != image) {
            problems.push(format!(
                "{OGX_OPERATOR_CONFIG_MAP} image-overrides entry {name:?} ignored: \
                 {OPERATOR_CONFIG_MAP} maps it to {own}, which wins"
            ));
        }
    }
    let mut overrides = theirs;
    overrides.extend(ours);
    (embedded.with_overrides(&overrides), problems)
}

/// `never` (the default: a deployed pin stands until the user changes the reference or asks for
/// a re-pin), or a duration such as `30m`, `12h` or `7d` after which tags are looked up again.
fn repin_interval(text: &str) -> Result<Option<std::time::Duration>, String> {
    let text = text.trim();
    if text.is_empty() || text == "never" {
        return Ok(None);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} has no unit; use s, m, h or d (e.g. 12h), or never"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a number with a unit (e.g. 12h), or never"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?}; use s, m, h or d"
            ));
        }
    };
    if number == 0 {
        return Err("0 would re-pin on every reconcile; use never, or a duration".to_owned());
    }
    Ok(Some(std::time::Duration::from_secs(
        number.saturating_mul(seconds),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repin_intervals_parse_or_name_the_problem() {
        assert_eq!(repin_interval("never"), Ok(None));
        assert_eq!(
            repin_interval("12h"),
            Ok(Some(std::time::Duration::from_secs(43_200)))
        );
        assert_eq!(
            repin_interval("30m"),
            Ok(Some(std::time::Duration::from_secs(1800)))
        );
        assert!(repin_interval("12").unwrap_err().contains("no unit"));
        assert!(repin_interval("5w").unwrap_err().contains("unknown unit"));
        assert!(
            repin_interval("0h")
                .unwrap_err()
                .contains("every reconcile")
        );
        let embedded = Catalog::embedded().unwrap();
        let data = BTreeMap::from([("repin-interval".to_owned(), "soon".to_owned())]);
        let (options, problems) = resolver_options(
            &ResolverOptions::new(embedded.clone()),
            &embedded,
            &data,
            &KeySecrets::new(),
        );
        assert_eq!(options.repin_after, None);
        assert!(problems[0].contains("repin-interval"), "{problems:?}");
    }

    #[test]
    fn settings_apply_and_problems_are_named() {
        let embedded = Catalog::embedded().unwrap();
        let base = ResolverOptions::new(embedded.clone());
        let data = BTreeMap::from([
            (
                "image-overrides".to_owned(),
                "starter: mirror.corp/lls/starter:0.7.3\nbad: Not/Valid Ref\n".to_owned(),
            ),
            (
                "mirrors".to_owned(),
                "- docker.io/llamastack=mirror.corp/lls\n- nonsense\n".to_owned(),
            ),
            (
                "insecure-registries".to_owned(),
                "[mirror.corp:5000]".to_owned(),
            ),
        ]);
        let (options, problems) = resolver_options(&base, &embedded, &data, &KeySecrets::new());
        assert_eq!(
            options.catalog.image("starter").unwrap(),
            "mirror.corp/lls/starter:0.7.3"
        );
        assert_eq!(options.mirrors.len(), 1);
        assert_eq!(options.insecure_registries, ["mirror.corp:5000"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("image-overrides entry \"bad\" ignored"),
            "{problems:?}"
        );
        assert!(problems[1].contains("must be FROM=TO"), "{problems:?}");
        let (options, problems) = resolver_options(
            &base,
            &embedded,
            &BTreeMap::from([("mirrors".to_owned(), "{a: b}".to_owned())]),
            &KeySecrets::new(),
        );
        assert!(
            options.mirrors.is_empty() && problems[0].contains("must be a YAML list of strings"),
            "{problems:?}"
        );
    }

    #[test]
    fn the_ogx_operators_overrides_serve_under_the_operators_own() {
        let embedded = Catalog::embedded().unwrap();
        let data = BTreeMap::from([
            (
                "image-overrides".to_owned(),
                "starter: mirror.corp/ogx/starter:1.3.0\n".to_owned(),
            ),
            (
                OGX_IMAGE_OVERRIDES.to_owned(),
                "starter: quay.io/theirs/starter:1\nrh: mirror.corp/odh/ogx:1.2.2\nbad: Not/Valid Ref\n"
                    .to_owned(),
            ),
        ]);
        let (catalog, problems) = catalog(&embedded, &data);
        assert_eq!(
            catalog.image("rh").unwrap(),
            "mirror.corp/odh/ogx:1.2.2",
            "theirs where ours is silent"
        );
        assert_eq!(
            catalog.image("starter").unwrap(),
            "mirror.corp/ogx/starter:1.3.0",
            "ours where both name it"
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("ogx-operator-config image-overrides entry \"bad\" ignored"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("\"starter\" ignored")
                && problems[1].contains(
                    "llama-stack-operator-config maps it to mirror.corp/ogx/starter:1.3.0"
                ),
            "{problems:?}"
        );
        let agreeing = BTreeMap::from([
            (
                "image-overrides".to_owned(),
                "rh: mirror.corp/odh/ogx:1.2.2".to_owned(),
            ),
            (
                OGX_IMAGE_OVERRIDES.to_owned(),
                "rh: mirror.corp/odh/ogx:1.2.2".to_owned(),
            ),
        ]);
        assert_eq!(super::catalog(&embedded, &agreeing).1, Vec::<String>::new());
    }

    #[test]
    fn the_signature_policy_reads_its_keys_and_fails_closed() {
        let embedded = Catalog::embedded().unwrap();
        let base = ResolverOptions::new(embedded.clone());
        let data = BTreeMap::from([(
            "image-signatures".to_owned(),
            "- distributions: [starter]\n  keys: [{secret: signing}]\n".to_owned(),
        )]);
        assert_eq!(key_secret_names(&data), ["signing"]);
        let (options, problems) = resolver_options(&base, &embedded, &data, &KeySecrets::new());
        assert_eq!(options.signatures.rules.len(), 1);
        assert!(
            problems[0].contains("Secret signing does not exist"),
            "{problems:?}"
        );

        let typo = BTreeMap::from([(
            "image-signatures".to_owned(),
            "- distributions: [starter]\n  key: [{secret: signing}]\n".to_owned(),
        )]);
        let (options, problems) = resolver_options(&base, &embedded, &typo, &KeySecrets::new());
        assert!(
            problems[0].contains("every image is refused"),
            "{problems:?}"
        );
        let image = llama_stack_resolver::ImageRef::parse("quay.io/any/image:1").unwrap();
        let (_, rule) = options
            .signatures
            .rule_for(
                &llama_stack_resolver::Distribution::Image("x".into()),
                &image,
            )
            .expect("an invalid policy covers every image");
        assert_eq!(rule.mode, Mode::Required);
        assert!(rule.keys.is_empty());
        assert!(rule.name.contains("image-signatures"), "{}", rule.name);
    }
}
