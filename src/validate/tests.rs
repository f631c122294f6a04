use std::path::Path;

use llama_stack_resolver::Catalog;
use serde_json::{Value, json};

use super::cause::CauseType;
use super::documents::parse;
use super::{Stage, Validator, Verdict};

fn validator() -> Validator {
    Validator::new(Catalog::embedded().expect("embedded catalog")).expect("validator")
}

fn v1alpha2(spec: Value) -> Value {
    json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
           "metadata": {"name": "s"}, "spec": spec})
}

/// (stage, refused fields) of a refusal; `None` when admitted.
fn refusal(validator: &Validator, object: &Value) -> Option<(Stage, Vec<String>)> {
    match validator.validate(object).0 {
        Verdict::Invalid { stage, causes, .. } => {
            Some((stage, causes.into_iter().map(|c| c.field).collect()))
        }
        Verdict::Valid { .. } => None,
        Verdict::Skipped { what } => panic!("skipped {what}"),
    }
}

fn manifests(dir: &str) -> Vec<(String, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        for document in parse(&file.display().to_string(), &text).expect("parses") {
            if document.object["kind"] == "LlamaStackDistribution" {
                out.push((document.location, document.object));
            }
        }
    }
    out
}

#[test]
fn every_sample_is_admitted() {
    let validator = validator();
    let samples = manifests("deploy/samples");
    assert!(samples.len() >= 10, "{} samples", samples.len());
    for (location, object) in samples {
        let (verdict, stored) = validator.validate(&object);
        assert!(
            matches!(verdict, Verdict::Valid { .. }),
            "{location}: {verdict:?}"
        );
        assert!(stored.is_some());
    }
}

/// The Open Data Hub documentation names a userConfig in the operator's namespace: admitted,
/// with a warning that says where the ConfigMap is read from; in its own namespace, none.
#[test]
fn a_user_config_in_another_namespace_is_admitted_with_where_it_is_read_from() {
    let validator = validator();
    let (_, mut object) = manifests("tests/fixtures/real-world")
        .into_iter()
        .find(|(location, _)| location.contains("36-odh-docs-auth-configmap-namespace"))
        .expect("fixture 36");
    object["metadata"]["namespace"] = json!("team-a");
    let warnings = |object: &Value| match validator.validate(object).0 {
        Verdict::Valid { warnings } => warnings,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        warnings(&object),
        [
            "spec.server.userConfig.configMapNamespace: ConfigMap \"llamastack-custom-config\" is read from namespace \"team-a\", not from \"redhat-ods-operator\": a Pod mounts only ConfigMaps of its own namespace. Copy it there"
        ]
    );
    object["spec"]["server"]["userConfig"]["configMapNamespace"] = json!("team-a");
    assert_eq!(warnings(&object), Vec::<String>::new());
}

/// The real manifests of `tests/fixtures/real-world` (written outside this project): those the
/// API server admits are admitted offline (a distribution name no published image carries, such
/// as 25-yagohar-ollama's, with a warning); those it refuses are refused at the same field.
#[test]
fn real_manifests_get_the_api_servers_verdict() {
    let validator = validator();
    let fixtures = manifests("tests/fixtures/real-world");
    assert!(fixtures.len() >= 35, "{} fixtures", fixtures.len());
    for (location, object) in fixtures {
        let found = refusal(&validator, &object);
        if location.contains("10-v1alpha2-vllm-postgres")
            && object["metadata"]["name"] != "llamastack-basic"
        {
            let (stage, fields) = found.unwrap_or_else(|| panic!("{location} admitted"));
            assert_eq!(stage, Stage::Decode, "{location}");
            assert!(
                fields.contains(&"spec.storage.sql.connectionString.key".to_owned()),
                "{location}: {fields:?}"
            );
        } else {
            assert_eq!(found, None, "{location}");
        }
    }
}

#[test]
fn what_the_api_server_refuses_is_refused_at_its_field() {
    let validator = validator();
    let starter = json!({"distribution": {"name": "starter"}});
    let mut misspelt = v1alpha2(starter.clone());
    misspelt["spec"]["providres"] = json!({});
    let cases: Vec<(&str, Value, Stage, &str)> = vec![
        ("misspelt field", misspelt, Stage::Decode, "spec.providres"),
        (
            "a port below 1024",
            v1alpha2(json!({"distribution": {"name": "starter"}, "networking": {"port": 80}})),
            Stage::Schema,
            "spec.networking.port",
        ),
        (
            "negative replicas",
            v1alpha2(json!({"distribution": {"name": "starter"}, "workload": {"replicas": -1}})),
            Stage::Schema,
            "spec.workload.replicas",
        ),
        (
            "a string for a number",
            v1alpha2(json!({"distribution": {"name": "starter"}, "workload": {"replicas": "two"}})),
            Stage::Schema,
            "spec.workload.replicas",
        ),
        (
            "name and image (CEL)",
            v1alpha2(json!({"distribution": {"name": "starter", "image": "x/y:1"}})),
            Stage::Schema,
            "spec.distribution",
        ),
        (
            "an unknown API name (CEL on a list item)",
            v1alpha2(json!({"distribution": {"name": "starter"}, "disabled": ["evals"]})),
            Stage::Schema,
            "spec.disabled[0]",
        ),
        (
            "a name too long for its Service (webhook)",
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "a".repeat(56)}, "spec": starter.clone()}),
            Stage::Admission,
            "metadata.name",
        ),
        (
            "an unserved version",
            json!({"apiVersion": "llamastack.io/v1alpha3", "kind": "LlamaStackDistribution",
                   "metadata": {"name": "s"}, "spec": starter}),
            Stage::Decode,
            "apiVersion",
        ),
    ];
    for (what, object, stage, field) in cases {
        let found = refusal(&validator, &object).unwrap_or_else(|| panic!("{what}: admitted"));
        assert_eq!(found.0, stage, "{what}: {found:?}");
        assert!(found.1.iter().any(|f| f == field), "{what}: {found:?}");
    }
}

#[test]
fn nulls_and_defaults_are_stored_as_the_api_server_stores_them() {
    let validator = validator();
    let object = v1alpha2(json!({"distribution": {"name": "starter", "image": null},
        "externalProviders": {"safety": [{"providerId": "p", "image": "x/p:1"}]}}));
    let (verdict, stored) = validator.validate(&object);
    assert!(matches!(verdict, Verdict::Valid { .. }), "{verdict:?}");
    let stored = stored.expect("stored");
    assert_eq!(
        stored.pointer("/spec/externalProviders/safety/0/imagePullPolicy"),
        Some(&json!("IfNotPresent")),
        "the schema's default is filled in"
    );
    assert_eq!(
        stored.pointer("/spec/distribution/image"),
        Some(&Value::Null),
        "a nullable field keeps its null (and CEL's has() reads it as unset)"
    );
}

#[test]
fn other_kinds_are_skipped_and_a_missing_name_is_required() {
    let validator = validator();
    let (verdict, _) = validator.validate(&json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    assert!(matches!(verdict, Verdict::Skipped { .. }));
    let nameless = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {}, "spec": {"distribution": {"name": "starter"}}});
    match validator.validate(&nameless).0 {
        Verdict::Invalid { causes, .. } => {
            assert_eq!(causes[0].field, "metadata.name");
            assert_eq!(causes[0].kind, CauseType::Required);
        }
        other => panic!("{other:?}"),
    }
}

/// `OGXServer` admission refuses what the OGX operator's webhook refuses (a distribution name
/// outside the catalog, at `spec.distribution.name`) and what this operator would only hold
/// (`FieldNotServed`: here an annotation value it cannot read), naming the field; `rh-dev` is
/// a name there (Open Data Hub's OGX image).
#[test]
fn ogx_servers_are_refused_at_the_field_the_controller_would_hold_them_for() {
    let validator = validator();
    let server = |name: &str, annotations: Value| {
        json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "s", "annotations": annotations},
            "spec": {"distribution": {"name": name}}})
    };
    let admission = |fields: &[&str]| {
        Some((
            Stage::Admission,
            fields.iter().map(|f| (*f).to_owned()).collect::<Vec<_>>(),
        ))
    };
    assert_eq!(
        refusal(&validator, &server("startr", json!({}))),
        admission(&["spec.distribution.name"])
    );
    for name in ["starter", "rh", "rh-dev"] {
        assert_eq!(
            refusal(&validator, &server(name, json!({}))),
            None,
            "{name}"
        );
    }
    assert_eq!(
        refusal(
            &validator,
            &server("starter", json!({"llamastack.io/rollback": "Sometimes"}))
        ),
        admission(&["metadata.annotations[llamastack.io/rollback]"])
    );
}

/// The OGX operator's Praxis migration example
/// (tests/fixtures/ogx-operator/newer/praxis-migration-job.yaml): its `starter` is OGX 1.3.0 as
/// released, which has no `ogx migrate praxis`, so it is refused at the field that asks for the
/// Job, with the fix; where the operator's image-overrides name another image for `starter` (a
/// midstream build, as Red Hat's catalog does), it is admitted and the reconcile reads that
/// image's labels. A v1alpha2 stack asking for the migration of a llama-stack image is refused
/// alike.
#[test]
fn a_migration_asked_of_a_server_without_the_command_is_refused_offline() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ogx-operator/newer/praxis-migration-job.yaml"),
    )
    .unwrap();
    let sample: Value = serde_saphyr::from_str(&text).unwrap();
    let (stage, fields) = refusal(&validator(), &sample).expect("refused");
    assert_eq!(stage, Stage::Admission);
    assert_eq!(fields, ["spec.praxisMode.migrationJob"]);
    let findings = crate::validate::checks::check(&sample, &Catalog::embedded().unwrap());
    let message = &findings.errors[0].message;
    assert!(
        message.contains("docker.io/ogxai/distribution-starter:1.3.0")
            && message.contains("no `ogx migrate praxis`")
            && message.contains("remove the migration"),
        "{message}"
    );

    let overrides = std::collections::BTreeMap::from([(
        "starter".to_owned(),
        "quay.io/opendatahub/odh-ogx-core:3.6".to_owned(),
    )]);
    let midstream =
        Validator::new(Catalog::embedded().unwrap().with_overrides(&overrides)).unwrap();
    assert_eq!(refusal(&midstream, &sample), None);

    let llama = v1alpha2(
        json!({"distribution": {"image": "docker.io/llamastack/distribution-starter:0.2.0"},
        "gateway": {"praxis": {"migration": {
            "targetConnectionString": {"secretKeyRef": {"name": "praxis-pg", "key": "url"}}}}}}),
    );
    let findings = crate::validate::checks::check(&llama, &Catalog::embedded().unwrap());
    let fields: Vec<&str> = findings.errors.iter().map(|e| e.path.as_str()).collect();
    assert!(
        fields.contains(&"spec.gateway.praxis.migration"),
        "{fields:?}"
    );
}

/// Turning the migration off after asking for it earns the soft-rollback warning, through
/// either door; leaving it on, or never asking, earns none.
#[test]
fn turning_the_migration_off_is_warned_as_a_soft_rollback() {
    let server = |mode: Value| {
        json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer", "metadata": {"name": "s"},
            "spec": {"distribution": {"name": "starter"}, "praxisMode": mode}})
    };
    let job = json!({"targetConnectionString": {"name": "praxis-pg", "key": "url"}});
    let asked = server(json!({"enabled": true, "migrationJob": job}));
    let turned_off = |new: &Value| crate::validate::checks::migration_turned_off(&asked, new);
    assert!(turned_off(&server(json!({"enabled": true}))).is_some());
    assert!(turned_off(&server(json!({"enabled": false, "migrationJob": job}))).is_some());
    let mut disabled = job.clone();
    disabled["enabled"] = json!(false);
    assert!(turned_off(&server(json!({"migrationJob": disabled}))).is_some());
    assert!(turned_off(&asked).is_none());
    let never = server(json!({"enabled": true}));
    assert!(crate::validate::checks::migration_turned_off(&never, &never).is_none());

    let stack = |praxis: Value| {
        v1alpha2(json!({"distribution": {"name": "starter"}, "gateway": {"praxis": praxis}}))
    };
    let with = stack(
        json!({"migration": {"targetConnectionString": {"secretKeyRef": {"name": "p", "key": "url"}}}}),
    );
    let warning = crate::validate::checks::migration_turned_off(&with, &stack(json!({})));
    assert!(warning.is_some_and(|w| w.contains("soft rollback")));
}
