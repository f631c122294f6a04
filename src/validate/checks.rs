//! The validating webhook's checks, those CEL cannot express (the polymorphic fields are untyped in the CRD): shapes
//! and unknown keys of those fields, explicit ids in lists, ids unique across APIs, an API both
//! configured and disabled, model providers, known distribution names, and everything the config
//! generator would refuse. Unknown provider settings come back as warnings. Pure.

use serde_json::Value;

use crate::api::polymorphic::json_kind;
use crate::api::v1alpha2::LlamaStackDistributionSpec;
use crate::naming::{CONFIG_DIR, SERVICE_SUFFIX, mount_path};
use crate::stack_config::{FieldError, GenerateError, ProviderTable, generate, generate_from_yaml};
use llama_stack_resolver::embedded_base_config;
use llama_stack_resolver::server_line::ServerLine;
use llama_stack_resolver::{Catalog, LookupError};

/// What the webhook's checks found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Denial causes (empty: allowed).
    pub errors: Vec<FieldError>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

const PROVIDER_KEYS: &[&str] = &["id", "provider", "endpoint", "apiKey", "settings"];
const MODEL_KEYS: &[&str] = &[
    "name",
    "provider",
    "contextLength",
    "modelType",
    "quantization",
];
const EXPOSE_KEYS: &[&str] = &["enabled", "hostname", "ingressClassName", "tlsSecretName"];

/// A base config for checks when the real one is not known offline (an image distribution):
/// only spec-internal rules apply then.
const EMPTY_BASE: &str = "version: 2\ndistro_name: unknown\napis: []\nproviders: {}\n";

fn err(errors: &mut Vec<FieldError>, path: impl Into<String>, message: impl Into<String>) {
    errors.push(FieldError {
        path: path.into(),
        message: message.into(),
    });
}

fn check_keys(
    errors: &mut Vec<FieldError>,
    path: &str,
    value: &Value,
    allowed: &[&str],
    what: &str,
) {
    for key in value.as_object().into_iter().flat_map(|o| o.keys()) {
        if !allowed.contains(&key.as_str()) {
            err(
                errors,
                format!("{path}.{key}"),
                format!("unknown field of a {what}; allowed: {}", allowed.join(", ")),
            );
        }
    }
}

fn check_shapes(spec: &Value, errors: &mut Vec<FieldError>) {
    for (api, value) in spec
        .get("providers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let path = format!("spec.providers.{api}");
        match value {
            Value::Object(_) => check_keys(errors, &path, value, PROVIDER_KEYS, "provider"),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if item.is_object() {
                        check_keys(
                            errors,
                            &format!("{path}[{i}]"),
                            item,
                            PROVIDER_KEYS,
                            "provider",
                        );
                    } else {
                        err(
                            errors,
                            format!("{path}[{i}]"),
                            format!("expected a provider object, found {}", json_kind(item)),
                        );
                    }
                }
            }
            other => err(
                errors,
                path,
                format!(
                    "expected a provider object or a list of provider objects, found {}",
                    json_kind(other)
                ),
            ),
        }
    }
    for (i, model) in spec
        .pointer("/resources/models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("spec.resources.models[{i}]");
        match model {
            Value::String(_) => {}
            Value::Object(_) => check_keys(errors, &path, model, MODEL_KEYS, "model"),
            other => err(
                errors,
                path,
                format!(
                    "expected a model name or a model object, found {}",
                    json_kind(other)
                ),
            ),
        }
    }
    match spec.pointer("/networking/expose") {
        None | Some(Value::Bool(_)) => {}
        Some(value @ Value::Object(_)) => check_keys(
            errors,
            "spec.networking.expose",
            value,
            EXPOSE_KEYS,
            "expose object",
        ),
        Some(other) => err(
            errors,
            "spec.networking.expose",
            format!(
                "expected true, false or an object with hostname, found {}",
                json_kind(other)
            ),
        ),
    }
}

/// The longest resource name whose Service name (`<name>-service`) is still a DNS label of at
/// most 63 characters; every other derived name has room (253), and label values allow 63.
pub const MAX_NAME: usize = 63 - SERVICE_SUFFIX.len();

/// A name too long for the objects the operator derives from it is refused here, with the fix,
/// rather than failing at the first write.
fn check_name(object: &Value, errors: &mut Vec<FieldError>) {
    let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
        return;
    };
    if name.len() > MAX_NAME {
        let suffix = SERVICE_SUFFIX;
        err(
            errors,
            "metadata.name",
            format!(
                "{name:?} has {} characters; its Service {name}{suffix} would exceed the 63 characters of a DNS label: use a name of at most {MAX_NAME} characters",
                name.len()
            ),
        );
    }
}

/// Validates a LlamaStackDistribution of either version or an `OGXServer` (as JSON), by its
/// `apiVersion`; anything else passes. `catalog` carries the operator's image-overrides.
pub fn check(object: &Value, catalog: &Catalog) -> Findings {
    match object.get("apiVersion").and_then(Value::as_str) {
        Some("llamastack.io/v1alpha2") => check_v1alpha2(object, catalog),
        Some("llamastack.io/v1alpha1") => check_v1alpha1(object, catalog),
        Some("ogx.io/v1beta1") => check_ogx_server(object, catalog),
        _ => Findings::default(),
    }
}

/// A distribution name the catalog has no image for: refused at `field`; one no published image
/// carries any more is only a warning (a stack pinned to it keeps running, and GitOps re-applies
/// its manifest).
fn check_name_known(catalog: &Catalog, name: &str, field: &str, verdict: &mut Findings) {
    match catalog.image(name) {
        Err(e @ LookupError::Removed { .. }) => verdict.warnings.push(e.to_string()),
        Err(e) => err(&mut verdict.errors, field, e.to_string()),
        Ok(_) => {}
    }
}

/// Validates an `OGXServer` (as JSON) as the OGX operator's webhook does where it refuses (a
/// distribution name outside the catalog) and where this operator would hold it
/// (`FieldNotServed`: a value the model cannot carry), so that both are refused at
/// `kubectl apply`, naming the field, instead of stored and held.
pub fn check_ogx_server(object: &Value, catalog: &Catalog) -> Findings {
    let mut verdict = Findings::default();
    let server: crate::api::ogx::OGXServer = match serde_json::from_value(object.clone()) {
        Ok(server) => server,
        Err(e) => {
            err(&mut verdict.errors, "spec", e.to_string());
            return verdict;
        }
    };
    if let Some(name) = server.spec.distribution.name.as_deref() {
        let name = llama_stack_resolver::ogx_server_name(name);
        check_name_known(catalog, name, "spec.distribution.name", &mut verdict);
    }
    match crate::ogx_server::to_model(&server) {
        Ok(modelled) => check_migration_server(
            &modelled.spec,
            catalog,
            crate::core::migration::FIELD,
            &mut verdict,
        ),
        Err(untranslatable) => err(
            &mut verdict.errors,
            untranslatable.field,
            untranslatable.why,
        ),
    }
    verdict
}

/// The warning an update earns that turns off the Praxis migration the stored object asked for
/// (`old`): a soft rollback only.
pub fn migration_turned_off(old: &Value, new: &Value) -> Option<String> {
    (migration_asked(old) && !migration_asked(new))
        .then(|| crate::core::migration::said::SOFT_ROLLBACK.to_owned())
}

/// Whether `object` (an `OGXServer` or a v1alpha2 `LlamaStackDistribution`) asks for the
/// migration.
fn migration_asked(object: &Value) -> bool {
    let on = |part: Option<&Value>| {
        part.is_some_and(|p| !p.is_null() && p.get("enabled") != Some(&Value::Bool(false)))
    };
    let spec = object.get("spec");
    match object.get("apiVersion").and_then(Value::as_str) {
        Some("ogx.io/v1beta1") => {
            let mode = spec.and_then(|s| s.get("praxisMode"));
            on(mode) && on(mode.and_then(|m| m.get("migrationJob")))
        }
        Some("llamastack.io/v1alpha2") => on(spec
            .and_then(|s| s.get("gateway"))
            .and_then(|g| g.get("praxis"))
            .and_then(|p| p.get("migration"))),
        _ => false,
    }
}

/// A Praxis migration asked of an image whose reference alone says its server has no
/// `ogx migrate praxis` (the reconcile says so again from the image's labels, of any image).
fn check_migration_server(
    spec: &LlamaStackDistributionSpec,
    catalog: &Catalog,
    field: &str,
    verdict: &mut Findings,
) {
    let wanted = spec
        .gateway
        .as_ref()
        .and_then(|g| g.praxis.migration.as_ref());
    let image = match (&spec.distribution.image, &spec.distribution.name) {
        (Some(image), _) => Some(image.as_str()),
        (None, Some(name)) => catalog.image(name).ok(),
        (None, None) => None,
    };
    if let Some(why) = wanted
        .and(image)
        .and_then(crate::core::migration::server_line::lacks_command_by_reference)
    {
        err(&mut verdict.errors, field, why);
    }
}

/// Validates a v1alpha2 object (as JSON). `catalog` carries the operator's image-overrides.
pub fn check_v1alpha2(object: &Value, catalog: &Catalog) -> Findings {
    let mut verdict = Findings::default();
    check_name(object, &mut verdict.errors);
    let spec_json = object.get("spec").cloned().unwrap_or(Value::Null);
    check_shapes(&spec_json, &mut verdict.errors);
    if !verdict.errors.is_empty() {
        return verdict;
    }
    let spec: LlamaStackDistributionSpec = match serde_json::from_value(spec_json) {
        Ok(spec) => spec,
        Err(e) => {
            err(&mut verdict.errors, "spec", e.to_string());
            return verdict;
        }
    };
    match crate::external::ids::check_ids(&spec) {
        Ok(warnings) => verdict.warnings.extend(warnings),
        Err(message) => err(&mut verdict.errors, "spec.externalProviders", message),
    }
    check_migration_server(
        &spec,
        catalog,
        crate::core::migration::server_line::V1ALPHA2_FIELD,
        &mut verdict,
    );
    if spec.override_config.is_some() {
        if mounts_over_config_dir(&spec) {
            err(
                &mut verdict.errors,
                "spec.workload.overrides.volumeMounts",
                config_dir_taken("spec.overrideConfig"),
            );
        }
        return verdict;
    }
    let (base, spec_only) = match &spec.distribution.name {
        Some(name) => match catalog.image(name) {
            // A stack pinned to such an image keeps running it, and GitOps re-applies its
            // manifest: admitted with a warning; the controller refuses a new deployment.
            Err(e @ LookupError::Removed { .. }) => {
                verdict.warnings.push(e.to_string());
                (None, true)
            }
            Err(e) => {
                err(&mut verdict.errors, "spec.distribution.name", e.to_string());
                return verdict;
            }
            Ok(_) => match embedded_base_config(name) {
                Some(Ok(base)) => (Some(base), false),
                _ => (None, true),
            },
        },
        None => (None, true),
    };
    let generated = match base {
        Some(base) => generate(
            &spec,
            &base,
            ProviderTable::for_server(base.server.as_ref()),
        ),
        None => spec_only_generation(&spec),
    };
    match generated {
        Ok(generated) => verdict.warnings.extend(generated.warnings),
        Err(GenerateError::Invalid(errors)) => {
            // Without the real base config, only rules about the spec itself are decisive.
            verdict.errors.extend(errors.into_iter().filter(|e| {
                !spec_only
                    || e.path.starts_with("spec.providers")
                    || e.path.starts_with("spec.disabled")
            }));
        }
        Err(GenerateError::BaseConfig(message)) => {
            err(&mut verdict.errors, "spec.distribution", message)
        }
        Err(GenerateError::UnsupportedVersion(error)) => {
            err(&mut verdict.errors, "spec.distribution", error.to_string())
        }
    }
    verdict
}

/// Generation for an image whose labels admission does not read, so whose server line it cannot
/// know: a spec rule is decisive only when the spec fails it on every line (a `safety` provider
/// is fine for a llama-stack image and refused later, with the line named, for an OGX one).
fn spec_only_generation(
    spec: &LlamaStackDistributionSpec,
) -> Result<crate::stack_config::GeneratedConfig, GenerateError> {
    let on = |line| generate_from_yaml(spec, EMPTY_BASE, ProviderTable::for_line(line));
    match (on(ServerLine::LlamaStack), on(ServerLine::Ogx)) {
        (Err(GenerateError::Invalid(llama)), Err(GenerateError::Invalid(ogx))) => {
            let refused: Vec<FieldError> = llama
                .into_iter()
                .filter(|e| ogx.iter().any(|o| o.path == e.path))
                .collect();
            Err(GenerateError::Invalid(refused))
        }
        (Ok(generated), _) | (_, Ok(generated)) => Ok(generated),
        (Err(e), _) => Err(e),
    }
}

/// Validates a v1alpha1 object: the distribution name must be known.
pub fn check_v1alpha1(object: &Value, catalog: &Catalog) -> Findings {
    let mut verdict = Findings::default();
    check_name(object, &mut verdict.errors);
    if let Some(name) = object
        .pointer("/spec/server/distribution/name")
        .and_then(Value::as_str)
    {
        check_name_known(catalog, name, "spec.server.distribution.name", &mut verdict);
    }
    let converted = crate::convert::convert(object, "llamastack.io/v1alpha2").ok();
    let spec = converted
        .and_then(|c| c.get("spec").cloned())
        .and_then(|s| serde_json::from_value::<LlamaStackDistributionSpec>(s).ok());
    if let Some(Err(message)) = spec.as_ref().map(crate::external::ids::check_ids) {
        err(
            &mut verdict.errors,
            "spec.server.externalProviders",
            message,
        );
    }
    if let Some(warning) = user_config_elsewhere(object) {
        verdict.warnings.push(warning);
    }
    // Read from the object as written: a v1alpha1 object that does not convert is checked too.
    let user_config = object.pointer("/spec/server/userConfig").is_some();
    let mounts = object
        .pointer("/spec/server/podOverrides/volumeMounts")
        .and_then(Value::as_array);
    if user_config
        && mounts.into_iter().flatten().any(|m| {
            m.get("mountPath")
                .and_then(Value::as_str)
                .is_some_and(|p| mount_path(p) == CONFIG_DIR)
        })
    {
        err(
            &mut verdict.errors,
            "spec.server.podOverrides.volumeMounts",
            config_dir_taken("spec.server.userConfig"),
        );
    }
    verdict
}

/// A v1alpha1 `userConfig` in another namespace than the stack's (the Open Data Hub
/// documentation names the operator's): a Pod mounts only ConfigMaps of its own namespace, so
/// the ConfigMap is read from the stack's, and the user is told where to copy it.
fn user_config_elsewhere(object: &Value) -> Option<String> {
    let user_config = object.pointer("/spec/server/userConfig")?;
    let elsewhere = user_config.get("configMapNamespace")?.as_str()?;
    let own = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    if own == Some(elsewhere) {
        return None;
    }
    let name = user_config
        .get("configMapName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let own = own.map_or("the stack's namespace".to_owned(), |ns| {
        format!("namespace \"{ns}\"")
    });
    Some(format!(
        "spec.server.userConfig.configMapNamespace: ConfigMap \"{name}\" is read from {own}, not from \"{elsewhere}\": a Pod mounts only ConfigMaps of its own namespace. Copy it there"
    ))
}

fn config_dir_taken(field: &str) -> String {
    format!(
        "a volume mounted at {CONFIG_DIR} would hide the ConfigMap of {field}, which the operator mounts there (as the upstream operator did); mount the volume elsewhere, or put the files it holds into that ConfigMap"
    )
}

/// Whether a user volume is mounted at [`CONFIG_DIR`], where the user's ConfigMap is mounted
/// (its own command may name it there): that would make two mounts of one path.
fn mounts_over_config_dir(spec: &LlamaStackDistributionSpec) -> bool {
    spec.workload
        .as_ref()
        .and_then(|w| w.overrides.as_ref())
        .and_then(|o| o.volume_mounts.as_ref())
        .into_iter()
        .flatten()
        .any(|m| mount_path(&m.mount_path) == CONFIG_DIR)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check_spec(spec: Value) -> Findings {
        check_v1alpha2(
            &json!({"apiVersion": "llamastack.io/v1alpha2", "spec": spec}),
            &Catalog::embedded().unwrap(),
        )
    }

    fn paths(v: &Findings) -> Vec<String> {
        v.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_name_too_long_for_its_service_is_refused_with_the_limit() {
        let catalog = Catalog::embedded().unwrap();
        let named = |n: usize, version: &str| {
            json!({"apiVersion": format!("llamastack.io/{version}"), "metadata": {"name": "a".repeat(n)},
                "spec": {"distribution": {"name": "starter"}, "server": {"distribution": {"name": "starter"}}}})
        };
        assert_eq!(MAX_NAME, 55);
        assert!(
            check_v1alpha2(&named(55, "v1alpha2"), &catalog)
                .errors
                .is_empty()
        );
        let refused = check_v1alpha2(&named(56, "v1alpha2"), &catalog);
        assert_eq!(refused.errors.len(), 1, "{:?}", paths(&refused));
        assert!(
            paths(&refused)[0].starts_with("metadata.name")
                && paths(&refused)[0].contains("at most 55 characters"),
            "{:?}",
            paths(&refused)
        );
        assert!(
            check_v1alpha1(&named(55, "v1alpha1"), &catalog)
                .errors
                .is_empty()
        );
        assert_eq!(
            check_v1alpha1(&named(70, "v1alpha1"), &catalog)
                .errors
                .len(),
            1
        );
    }

    #[test]
    fn shapes_and_unknown_keys() {
        let v = check_spec(
            json!({"distribution": {"name": "starter"}, "providers": {"inference": "vllm", "safety": [{"provider": "llama-guard", "endpiont": "x"}]},
            "resources": {"models": [7]}, "networking": {"expose": "yes"}}),
        );
        assert_eq!(
            paths(&v),
            [
                "spec.providers.inference: expected a provider object or a list of provider objects, found a string",
                "spec.providers.safety[0].endpiont: unknown field of a provider; allowed: id, provider, endpoint, apiKey, settings",
                "spec.resources.models[0]: expected a model name or a model object, found a number",
                "spec.networking.expose: expected true, false or an object with hostname, found a string",
            ]
        );
    }

    #[test]
    fn external_provider_ids_used_twice_are_refused_in_both_versions() {
        let twice = json!({"inference": [{"providerId": "acme", "image": "a:1"}],
                           "safety": [{"providerId": "acme", "image": "b:1"}]});
        let v2 =
            check_spec(json!({"distribution": {"name": "starter"}, "externalProviders": twice}));
        assert!(
            paths(&v2)[0].starts_with(
                "spec.externalProviders: ERROR: Duplicate external provider ID 'acme'"
            ),
            "{:?}",
            paths(&v2)
        );
        let v1 = check_v1alpha1(
            &json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
                    "metadata": {"name": "x"},
                    "spec": {"server": {"distribution": {"name": "starter"}, "externalProviders": twice}}}),
            &Catalog::embedded().unwrap(),
        );
        assert!(
            paths(&v1)[0].starts_with("spec.server.externalProviders: ERROR: Duplicate"),
            "{v1:?}"
        );
    }

    #[test]
    fn a_mount_over_the_users_config_map_is_refused_with_the_fix() {
        let mount = json!([{"name": "x", "mountPath": "/etc/llama-stack/"}]);
        let v = check_spec(
            json!({"distribution": {"name": "starter"}, "overrideConfig": {"configMapName": "cfg"},
                   "workload": {"overrides": {"volumes": [{"name": "x", "emptyDir": {}}], "volumeMounts": mount}}}),
        );
        assert!(
            paths(&v)[0].starts_with("spec.workload.overrides.volumeMounts: a volume mounted at /etc/llama-stack would hide"),
            "{:?}",
            paths(&v)
        );
        let v1 = check_v1alpha1(
            &json!({"spec": {"server": {"distribution": {"name": "starter"}, "userConfig": {"configMapName": "cfg"},
                    "podOverrides": {"volumeMounts": mount}}}}),
            &Catalog::embedded().unwrap(),
        );
        assert_eq!(v1.errors.len(), 1, "{v1:?}");
        // Without a ConfigMap of the user's, the generated config moves aside: accepted.
        let generated = check_spec(json!({"distribution": {"name": "starter"},
                   "workload": {"overrides": {"volumes": [{"name": "x", "emptyDir": {}}], "volumeMounts": mount}}}));
        assert!(generated.errors.is_empty(), "{:?}", paths(&generated));
    }

    #[test]
    fn spec_rules_hold_for_image_distributions_too() {
        let v = check_spec(
            json!({"distribution": {"image": "quay.io/x/y:1"}, "providers": {"inference": [{"provider": "vllm"}, {"id": "b", "provider": "openai"}]},
            "resources": {"shields": ["s"]}}),
        );
        assert_eq!(
            paths(&v),
            [
                "spec.providers.inference[0].id: id is required when inference lists more than one provider"
            ],
            "base-dependent rules are left out"
        );
    }

    #[test]
    fn names_models_and_warnings() {
        // Names no published image carries: admitted with what to write instead (a stack pinned
        // to such an image keeps running); unknown names are refused.
        for removed in ["ollama", "remote-vllm", "meta-reference-gpu", "nvidia"] {
            let v = check_spec(json!({"distribution": {"name": removed}}));
            assert!(v.errors.is_empty(), "{:?}", paths(&v));
            assert!(
                v.warnings[0].contains("has no published image")
                    && v.warnings[0].contains("starter"),
                "{:?}",
                v.warnings
            );
            let v1 = check_v1alpha1(
                &json!({"spec": {"server": {"distribution": {"name": removed}}}}),
                &Catalog::embedded().unwrap(),
            );
            assert!(v1.errors.is_empty() && v1.warnings.len() == 1, "{v1:?}");
        }
        let v = check_spec(json!({"distribution": {"name": "startr"}}));
        assert!(
            paths(&v)[0].contains("unknown distribution"),
            "{:?}",
            paths(&v)
        );
        let v = check_spec(
            json!({"distribution": {"name": "starter"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v", "settings": {"max_tokenz": 1}}},
            "resources": {"models": [{"name": "m", "provider": "nope"}]}}),
        );
        assert_eq!(
            paths(&v),
            [
                "spec.resources.models[0].provider: no inference provider has id \"nope\"; available: vllm"
            ]
        );
        let v = check_spec(
            json!({"distribution": {"name": "starter"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v", "settings": {"max_tokenz": 1}}}}),
        );
        assert!(v.errors.is_empty());
        assert!(
            v.warnings.iter().any(|w| w.starts_with(
                "spec.providers.inference.settings.max_tokenz: remote::vllm has no setting"
            )),
            "{:?}",
            v.warnings
        );
    }
}
