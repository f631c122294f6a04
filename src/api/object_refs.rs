//! The Secrets and ConfigMaps a LlamaStackDistribution (either version) refers to, with the field
//! that names each. Admission warns about the missing ones; the controller reads them, hashes
//! them and follows their changes.

use serde_json::Value;

/// Kind of a referenced object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

/// One reference, with the field path that holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Secret or ConfigMap.
    pub kind: RefKind,
    /// Namespace, when the field names one.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Key that must exist, when the field names one.
    pub key: Option<String>,
    /// Field path of the name.
    pub path: String,
}

/// A `{secretKeyRef: {name, key}}` value at `path`.
fn secret_key_ref(value: &Value, path: String, out: &mut Vec<Reference>) {
    if let Some(r) = value.get("secretKeyRef") {
        secret_key(r, format!("{path}.secretKeyRef"), out);
    }
}

/// A Secret key written `{name, key}` at `path`.
fn secret_key(r: &Value, path: String, out: &mut Vec<Reference>) {
    let Some(name) = r.get("name").and_then(Value::as_str) else {
        return;
    };
    out.push(Reference {
        kind: RefKind::Secret,
        namespace: None,
        name: name.to_owned(),
        key: r.get("key").and_then(Value::as_str).map(str::to_owned),
        path: format!("{path}.name"),
    });
}

/// The references of a v1alpha2 or v1alpha1 object, as JSON (admission sees either version).
pub fn of_object(object: &Value) -> Vec<Reference> {
    of_spec(object.get("spec").unwrap_or(&Value::Null))
}

/// The references of a spec (either version), as JSON.
fn of_spec(spec: &Value) -> Vec<Reference> {
    let mut out = Vec::new();
    provider_secrets(spec, &mut out);
    if let Some(v) = spec.pointer("/storage/kv/password") {
        secret_key_ref(v, "spec.storage.kv.password".into(), &mut out);
    }
    if let Some(v) = spec.pointer("/storage/sql/connectionString") {
        secret_key_ref(v, "spec.storage.sql.connectionString".into(), &mut out);
    }
    backend_passwords(spec, &mut out);
    if let Some(v) = spec.pointer("/gateway/praxis/migration/targetConnectionString") {
        secret_key_ref(
            v,
            "spec.gateway.praxis.migration.targetConnectionString".into(),
            &mut out,
        );
    }
    config_maps(spec, &mut out);
    if let Some(name) = spec
        .pointer("/networking/tls/secretName")
        .and_then(Value::as_str)
    {
        out.push(Reference {
            kind: RefKind::Secret,
            namespace: None,
            name: name.to_owned(),
            key: None,
            path: "spec.networking.tls.secretName".into(),
        });
    }
    client_identity(spec, &mut out);
    out
}

/// `storage.backends.<name>.password`: a Secret key (`{name, key}`, as the OGX operator writes
/// it), read by the server from a variable of its config.
fn backend_passwords(spec: &Value, out: &mut Vec<Reference>) {
    let Some(backends) = spec.pointer("/storage/backends").and_then(Value::as_object) else {
        return;
    };
    for (backend, value) in backends {
        let path = format!("spec.storage.backends.{backend}.password");
        secret_key(&value["password"], path, out);
    }
}

/// `networking.tls.clientIdentity`: the certificate's ConfigMap and the key's Secret.
fn client_identity(spec: &Value, out: &mut Vec<Reference>) {
    let Some(identity) = spec.pointer("/networking/tls/clientIdentity") else {
        return;
    };
    for (kind, field) in [
        (RefKind::ConfigMap, "certificate"),
        (RefKind::Secret, "privateKey"),
    ] {
        let part = &identity[field];
        if let Some(name) = part.get("name").and_then(Value::as_str) {
            out.push(Reference {
                kind,
                namespace: None,
                name: name.to_owned(),
                key: part.get("key").and_then(Value::as_str).map(str::to_owned),
                path: format!("spec.networking.tls.clientIdentity.{field}.name"),
            });
        }
    }
}

/// The Secrets of `spec.providers`: API keys, and settings that are a `secretKeyRef`.
fn provider_secrets(spec: &Value, out: &mut Vec<Reference>) {
    for (api, value) in spec
        .get("providers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let items: Vec<(String, &Value)> = match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("spec.providers.{api}[{i}]"), v))
                .collect(),
            v => vec![(format!("spec.providers.{api}"), v)],
        };
        for (path, provider) in items {
            if let Some(key) = provider.get("apiKey") {
                secret_key_ref(key, format!("{path}.apiKey"), out);
            }
            for (k, v) in provider
                .get("settings")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if v.as_object().is_some_and(|o| o.len() == 1) {
                    secret_key_ref(v, format!("{path}.settings.{k}"), out);
                }
            }
        }
    }
}

/// The ConfigMaps of either version: a config, a CA bundle (which may name its namespace).
fn config_maps(spec: &Value, out: &mut Vec<Reference>) {
    // (name, namespace, field path)
    let fields = [
        (
            "/overrideConfig/configMapName",
            None,
            "spec.overrideConfig.configMapName",
        ),
        (
            "/baseConfig/configMapName",
            None,
            "spec.baseConfig.configMapName",
        ),
        (
            "/networking/tls/caBundle/configMapName",
            Some("/networking/tls/caBundle/configMapNamespace"),
            "spec.networking.tls.caBundle.configMapName",
        ),
        (
            "/server/userConfig/configMapName",
            None,
            "spec.server.userConfig.configMapName",
        ),
        (
            "/server/tlsConfig/caBundle/configMapName",
            Some("/server/tlsConfig/caBundle/configMapNamespace"),
            "spec.server.tlsConfig.caBundle.configMapName",
        ),
    ];
    for (pointer, ns_pointer, path) in fields {
        let Some(name) = spec.pointer(pointer).and_then(Value::as_str) else {
            continue;
        };
        let namespace = ns_pointer
            .and_then(|p| spec.pointer(p))
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(Reference {
            kind: RefKind::ConfigMap,
            namespace,
            name: name.to_owned(),
            key: None,
            path: path.to_owned(),
        });
    }
    let additional = spec
        .pointer("/networking/tls/additionalCaBundles")
        .and_then(Value::as_array);
    for (i, bundle) in additional.into_iter().flatten().enumerate() {
        let Some(name) = bundle.get("configMapName").and_then(Value::as_str) else {
            continue;
        };
        out.push(Reference {
            kind: RefKind::ConfigMap,
            namespace: bundle
                .get("configMapNamespace")
                .and_then(Value::as_str)
                .map(str::to_owned),
            name: name.to_owned(),
            key: None,
            path: format!("spec.networking.tls.additionalCaBundles[{i}].configMapName"),
        });
    }
}

/// The references of a spec in the model (v1alpha2, which every API maps into).
pub fn of(spec: &super::v1alpha2::LlamaStackDistributionSpec) -> Vec<Reference> {
    serde_json::to_value(spec)
        .map(|spec| of_spec(&spec))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A named backend's password is a Secret the server reads: checked, hashed and followed
    /// like every other reference.
    #[test]
    fn a_named_backends_password_is_a_reference() {
        let spec = json!({"storage": {"backends": {
            "pg": {"type": "sql_postgres", "user": "ogx", "password": {"name": "pg-creds", "key": "password"}},
            "kv": {"type": "kv_postgres", "user": "ogx"}}}});
        let found: Vec<_> = of_spec(&spec)
            .into_iter()
            .map(|r| (r.kind, r.name, r.key, r.path))
            .collect();
        assert_eq!(
            found,
            [(
                RefKind::Secret,
                "pg-creds".to_owned(),
                Some("password".to_owned()),
                "spec.storage.backends.pg.password.name".to_owned()
            )]
        );
    }
}
