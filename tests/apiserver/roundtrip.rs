//! The CRD as the API server serves it: versions, defaults, polymorphic forms, samples, printer
//! columns, the status subresource, and the limits of CEL that the webhook has to cover.

use std::io::Write;
use std::process::Stdio;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps, ValidationRule,
};
use kube::api::{Api, Patch, PatchParams, PostParams};
use libtest_mimic::Failed;
use llama_stack_operator::api::{v1alpha1, v1alpha2};
use serde_json::{Value, json};

use crate::fixtures::{
    Sample, V1ALPHA1_COMPAT_GROUP, committed_crd, create, llsd_api, namespace, to_compat_group,
};
use crate::{AsyncTest, Ctx};

pub const TESTS: &[(&str, AsyncTest)] = &[
    ("crd_serves_both_versions_and_stores_v1alpha2", |c| {
        Box::pin(crd_serves_both_versions(c))
    }),
    ("defaults_are_applied::v1alpha2", |c| {
        Box::pin(defaults_v1alpha2(c))
    }),
    ("defaults_are_applied::v1alpha1", |c| {
        Box::pin(defaults_v1alpha1(c))
    }),
    ("v1alpha1_full_object_round_trips", |c| {
        Box::pin(v1alpha1_full_object_round_trips(c))
    }),
    ("printer_columns_in_kubectl_get", |c| {
        Box::pin(printer_columns(c))
    }),
    ("status_is_a_subresource", |c| {
        Box::pin(status_is_a_subresource(c))
    }),
    ("unknown_fields_are_rejected_not_dropped", |c| {
        Box::pin(unknown_fields_are_rejected(c))
    }),
    ("cel_cannot_see_polymorphic_fields", |c| {
        Box::pin(cel_cannot_see_polymorphic_fields(c))
    }),
];

fn obj(api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "LlamaStackDistribution", "metadata": {"name": name}, "spec": spec})
}

/// True when every field of `given` is in `stored` with the same value (defaults may add more).
fn contains(stored: &Value, given: &Value) -> bool {
    match (stored, given) {
        (Value::Object(s), Value::Object(g)) => g
            .iter()
            .all(|(k, v)| s.get(k).is_some_and(|sv| contains(sv, v))),
        (Value::Array(s), Value::Array(g)) => {
            s.len() == g.len() && s.iter().zip(g).all(|(a, b)| contains(a, b))
        }
        _ => stored == given,
    }
}

async fn crd_serves_both_versions(ctx: &Ctx) -> Result<(), Failed> {
    let crd = Api::<CustomResourceDefinition>::all(ctx.client.clone())
        .get("llamastackdistributions.llamastack.io")
        .await?;
    let mut versions: Vec<(String, bool, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.clone(), v.served, v.storage))
        .collect();
    versions.sort();
    let expected = vec![
        ("v1alpha1".to_owned(), true, false),
        ("v1alpha2".to_owned(), true, true),
    ];
    if versions != expected {
        return Err(format!("versions {versions:?}, expected {expected:?}").into());
    }
    let stored = crd
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default();
    if stored != ["v1alpha2"] {
        return Err(format!("storedVersions {stored:?}").into());
    }
    for v in &crd.spec.versions {
        if v.subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_none()
        {
            return Err(format!("{} has no status subresource", v.name).into());
        }
    }
    if crd.spec.names.short_names.as_deref() != Some(&["llsd".to_owned()][..]) {
        return Err(format!("short names {:?}", crd.spec.names.short_names).into());
    }
    let strategy = crd.spec.conversion.as_ref().map(|c| c.strategy.as_str());
    if strategy != Some("Webhook") {
        return Err(format!("conversion strategy {strategy:?}, expected Webhook").into());
    }
    Ok(())
}

async fn defaults_v1alpha2(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "defaults-v1alpha2").await?;
    let spec = json!({
        "distribution": {"name": "starter"},
        "networking": {"tls": {}},
        "workload": {},
        "storage": {"kv": {}, "sql": {}},
        "externalProviders": {"inference": [{"providerId": "acme", "image": "quay.io/acme/p:1"}]},
    });
    let stored = create(&ctx.client, &ns, &obj("llamastack.io/v1alpha2", "d", spec)).await?;
    let s = &stored["spec"];
    let checks = [
        ("networking.port", &s["networking"]["port"], json!(8321)),
        (
            "networking.tls.enabled",
            &s["networking"]["tls"]["enabled"],
            json!(false),
        ),
        ("workload.replicas", &s["workload"]["replicas"], json!(1)),
        (
            "storage.kv.type",
            &s["storage"]["kv"]["type"],
            json!("sqlite"),
        ),
        (
            "storage.sql.type",
            &s["storage"]["sql"]["type"],
            json!("sqlite"),
        ),
        (
            "externalProviders.inference[0].imagePullPolicy",
            &s["externalProviders"]["inference"][0]["imagePullPolicy"],
            json!("IfNotPresent"),
        ),
    ];
    for (path, got, want) in checks {
        if *got != want {
            return Err(format!("spec.{path} = {got}, expected default {want}").into());
        }
    }
    serde_json::from_value::<v1alpha2::LlamaStackDistribution>(stored)?;
    Ok(())
}

async fn defaults_v1alpha1(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "defaults-v1alpha1").await?;
    let spec = json!({
        "server": {
            "distribution": {"name": "starter"},
            "containerSpec": {"port": 8321},
            "externalProviders": {"safety": [{"providerId": "acme", "image": "quay.io/acme/p:1"}]},
        },
        "network": {},
    });
    let api_version = format!("{V1ALPHA1_COMPAT_GROUP}/v1alpha1");
    let stored = create(&ctx.client, &ns, &obj(&api_version, "d", spec)).await?;
    let s = &stored["spec"];
    let checks = [
        ("replicas", &s["replicas"], json!(1)),
        (
            "server.containerSpec.name",
            &s["server"]["containerSpec"]["name"],
            json!("llama-stack"),
        ),
        (
            "network.exposeRoute",
            &s["network"]["exposeRoute"],
            json!(false),
        ),
        (
            "server.externalProviders.safety[0].imagePullPolicy",
            &s["server"]["externalProviders"]["safety"][0]["imagePullPolicy"],
            json!("IfNotPresent"),
        ),
    ];
    for (path, got, want) in checks {
        if *got != want {
            return Err(format!("spec.{path} = {got}, expected default {want}").into());
        }
    }
    serde_json::from_value::<v1alpha1::LlamaStackDistribution>(stored)?;
    Ok(())
}

/// Every v1alpha1 field of the upstream resource plus spec 001's externalProviders.
async fn v1alpha1_full_object_round_trips(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "v1alpha1-full").await?;
    let spec = json!({
        "replicas": 2,
        "server": {
            "distribution": {"image": "quay.io/acme/llama-stack:0.7.3"},
            "containerSpec": {
                "name": "server", "port": 9000,
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
                "env": [{"name": "A", "value": "b"}, {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                "command": ["python"], "args": ["-m", "x"],
            },
            "workers": 3,
            "podOverrides": {
                "serviceAccountName": "custom-sa", "terminationGracePeriodSeconds": 45,
                "volumes": [{"name": "extra", "emptyDir": {}}],
                "volumeMounts": [{"name": "extra", "mountPath": "/extra"}],
            },
            "podDisruptionBudget": {"maxUnavailable": "50%"},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}],
            "autoscaling": {"minReplicas": 2, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70, "targetMemoryUtilizationPercentage": 80},
            "storage": {"size": "20Gi", "mountPath": "/data"},
            "userConfig": {"configMapName": "cfg", "configMapNamespace": "other"},
            "tlsConfig": {"caBundle": {"configMapName": "ca", "configMapNamespace": "certs", "configMapKeys": ["a.crt", "b.pem"]}},
            "externalProviders": {
                "inference": [{"providerId": "p1", "image": "i1", "imagePullPolicy": "Always", "config": {"a": {"b": [1, 2]}}}],
                "responses": [{"providerId": "p2", "image": "i2", "imagePullPolicy": "Never"}],
            },
        },
        "network": {"exposeRoute": true, "allowedFrom": {"namespaces": ["*"], "labels": ["team"]}},
    });
    let api_version = format!("{V1ALPHA1_COMPAT_GROUP}/v1alpha1");
    let stored = create(&ctx.client, &ns, &obj(&api_version, "full", spec.clone())).await?;
    if stored["spec"] != spec {
        return Err(format!(
            "stored spec differs:\n{:#}\nexpected\n{spec:#}",
            stored["spec"]
        )
        .into());
    }
    let typed: v1alpha1::LlamaStackDistribution = serde_json::from_value(stored.clone())?;
    if serde_json::to_value(&typed.spec)? != spec {
        return Err("the Rust v1alpha1 types do not reproduce the stored spec".into());
    }
    Ok(())
}

async fn printer_columns(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "printer-columns").await?;
    create(
        &ctx.client,
        &ns,
        &obj(
            "llamastack.io/v1alpha2",
            "cols",
            json!({"distribution": {"name": "starter"}}),
        ),
    )
    .await?;
    let status = json!({"status": {
        "phase": "Ready",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Deployment is ready",
            "lastTransitionTime": "2026-11-25T00:00:00Z"}],
        "availableReplicas": 1,
        "resolvedDistribution": {"image": "docker.io/llamastack/distribution-starter@sha256:0123", "configSource": "embedded"},
        "configGeneration": {"configMapName": "cols-config-0123abcd", "providerCount": 3, "resourceCount": 2},
    }});
    llsd_api(&ctx.client, &ns, "llamastack.io/v1alpha2")
        .patch_status("cols", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    let kubectl = |wide: bool| -> Result<String, Failed> {
        let mut cmd = ctx.plane.kubectl();
        cmd.args(["get", "llsd", "cols", "-n", &ns]);
        if wide {
            cmd.args(["-o", "wide"]);
        }
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
        }
        Ok(String::from_utf8(out.stdout)?)
    };
    let words = |s: &str, line: usize| -> Vec<String> {
        s.lines()
            .nth(line)
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let normal = kubectl(false)?;
    let (head, row) = (words(&normal, 0), words(&normal, 1));
    if head != ["NAME", "READY", "PHASE", "PROVIDERS", "AVAILABLE", "AGE"]
        || row[..5] != ["cols", "True", "Ready", "3", "1"]
    {
        return Err(format!("unexpected `kubectl get llsd` output:\n{normal}").into());
    }
    let wide = kubectl(true)?;
    let (head, row) = (words(&wide, 0), words(&wide, 1));
    // Wide output keeps the definition order of the columns, as the spec lists them.
    let want_head = [
        "NAME",
        "READY",
        "PHASE",
        "DISTRIBUTION",
        "CONFIG",
        "PROVIDERS",
        "AVAILABLE",
        "AGE",
    ];
    if head != want_head
        || row[..7]
            != [
                "cols",
                "True",
                "Ready",
                "docker.io/llamastack/distribution-starter@sha256:0123",
                "cols-config-0123abcd",
                "3",
                "1",
            ]
    {
        return Err(format!("unexpected `kubectl get llsd -o wide` output:\n{wide}").into());
    }
    Ok(())
}

async fn status_is_a_subresource(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "status-subresource").await?;
    let mut object = obj(
        "llamastack.io/v1alpha2",
        "st",
        json!({"distribution": {"name": "starter"}}),
    );
    object["status"] = json!({"phase": "Ready"});
    let created = create(&ctx.client, &ns, &object).await?;
    if !created["status"].is_null() {
        return Err(format!(
            "status written through the main resource: {}",
            created["status"]
        )
        .into());
    }
    let api = llsd_api(&ctx.client, &ns, "llamastack.io/v1alpha2");
    let patched = api
        .patch_status(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Failed", "conditions": [{
                "type": "ConfigGenerated", "status": "False", "reason": "ConfigGenerationFailed",
                "message": "Failed to generate config.yaml: x", "lastTransitionTime": "2026-11-22T00:00:00Z"}]}})),
        )
        .await?;
    let typed: v1alpha2::LlamaStackDistribution =
        serde_json::from_value(serde_json::to_value(patched)?)?;
    let status = typed.status.ok_or("no status after patch")?;
    if status.phase != Some(llama_stack_operator::api::common::DistributionPhase::Failed) {
        return Err(format!("phase {:?}", status.phase).into());
    }
    let bad = api
        .patch_status(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Exploded"}})),
        )
        .await;
    match bad {
        Err(kube::Error::Api(s))
            if s.code == 422 && s.message.contains("Unsupported value: \"Exploded\"") =>
        {
            Ok(())
        }
        other => Err(format!("an unknown phase was not rejected: {other:?}").into()),
    }
}

/// `kubectl apply` validates fields strictly: a typo is an error naming the field, never a silent
/// prune. Inside the polymorphic nodes the API server keeps unknown keys as written (the webhook
/// reports them).
async fn unknown_fields_are_rejected(ctx: &Ctx) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, "unknown-fields").await?;
    let manifest = "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata:\n  name: typo\nspec:\n  distribution: {name: starter}\n  networking: {prot: 9000}\n";
    let mut child = ctx
        .plane
        .kubectl()
        .args(["apply", "--server-side", "-n", &ns, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(manifest.as_bytes())?;
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success()
        || !stderr.contains(".spec.networking.prot: field not declared in schema")
    {
        return Err(format!(
            "expected a strict field validation error, got {:?}: {stderr}",
            out.status
        )
        .into());
    }
    Ok(())
}

/// A CEL rule on a polymorphic field does not compile: structural schemas cannot declare a
/// union type, the field is untyped, and CEL only sees typed fields. These rules are the
/// admission webhook's job (explicit ids in lists, unique ids across APIs, an API both
/// configured and disabled, model provider references). A positive control proves the probe.
async fn cel_cannot_see_polymorphic_fields(ctx: &Ctx) -> Result<(), Failed> {
    let probes = [
        (
            "self.providers.inference.size() <= 1",
            Some("undefined field 'inference'"),
        ),
        (
            "!has(self.providers) || !has(self.providers.inference) || !('inference' in self.disabled)",
            Some("undefined field 'inference'"),
        ),
        (
            "!has(self.resources) || self.resources.models.all(m, has(m.provider))",
            Some("undefined field 'models'"),
        ),
        (
            "!has(self.networking) || !has(self.networking.expose)",
            Some("undefined field 'expose'"),
        ),
        // Positive control: a typed field compiles, so the failures above are about the union.
        (
            "!has(self.storage) || !has(self.storage.kv) || self.storage.kv.type == 'sqlite' || has(self.storage.kv.endpoint)",
            None,
        ),
    ];
    let api = Api::<CustomResourceDefinition>::all(ctx.client.clone());
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    for (rule, expected_error) in probes {
        let crd = probe_crd(rule)?;
        let result = api.create(&dry_run, &crd).await;
        match (result, expected_error) {
            (Ok(_), None) => {}
            (Err(kube::Error::Api(s)), Some(needle)) if s.message.contains(needle) => {}
            (result, _) => {
                return Err(
                    format!("rule {rule:?}: expected {expected_error:?}, got {result:?}").into(),
                );
            }
        }
    }
    Ok(())
}

/// The committed v1alpha2 schema under a probe group, with one extra rule on `spec`.
fn probe_crd(rule: &str) -> Result<CustomResourceDefinition, Failed> {
    let mut crd = committed_crd().map_err(|e| e.to_string())?;
    crd.spec.group = "probe.llamastack.test".to_owned();
    crd.metadata.name = Some("llamastackdistributions.probe.llamastack.test".to_owned());
    crd.spec.names.short_names = None;
    crd.spec.conversion = None;
    crd.spec.versions.retain(|v| v.name == "v1alpha2");
    let version = crd
        .spec
        .versions
        .first_mut()
        .ok_or("no v1alpha2 in the CRD")?;
    let spec: &mut JSONSchemaProps = version
        .schema
        .as_mut()
        .and_then(|s: &mut CustomResourceValidation| s.open_api_v3_schema.as_mut())
        .and_then(|root| root.properties.as_mut())
        .and_then(|p| p.get_mut("spec"))
        .ok_or("no spec schema")?;
    spec.x_kubernetes_validations
        .get_or_insert_with(Vec::new)
        .push(ValidationRule {
            rule: rule.to_owned(),
            message: Some("probe".to_owned()),
            ..Default::default()
        });
    Ok(crd)
}

pub async fn sample_is_accepted(ctx: &Ctx, sample: &Sample) -> Result<(), Failed> {
    let api_version = sample.object["apiVersion"].as_str().unwrap_or_default();
    let object = match api_version {
        "llamastack.io/v1alpha2" => sample.object.clone(),
        // See fixtures::V1ALPHA1_COMPAT_GROUP.
        "llamastack.io/v1alpha1" => to_compat_group(&sample.object),
        other => {
            return Err(format!("{}: unexpected apiVersion {other}", sample.path.display()).into());
        }
    };
    let ns = namespace(&ctx.client, "sample").await?;
    let stored = create(&ctx.client, &ns, &object)
        .await
        .map_err(|e| format!("{} was rejected: {e}", sample.path.display()))?;
    if !contains(&stored["spec"], &object["spec"]) {
        return Err(format!(
            "stored spec lost fields of the sample:\n{:#}",
            stored["spec"]
        )
        .into());
    }
    if api_version == "llamastack.io/v1alpha2" {
        serde_json::from_value::<v1alpha2::LlamaStackDistribution>(stored)?;
    } else {
        serde_json::from_value::<v1alpha1::LlamaStackDistribution>(stored)?;
    }
    Ok(())
}

pub struct PolymorphicCase {
    pub name: &'static str,
    pub spec: Value,
}

pub fn polymorphic_cases() -> Vec<PolymorphicCase> {
    let d = json!({"name": "starter"});
    let case = |name, extra: Value| {
        let mut spec = json!({"distribution": d.clone()});
        if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
            s.extend(e);
        }
        PolymorphicCase { name, spec }
    };
    vec![
        case(
            "provider_single_object",
            json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://v:8000/v1",
            "apiKey": {"secretKeyRef": {"name": "s", "key": "k"}}}}}),
        ),
        case(
            "provider_single_object_with_id",
            json!({"providers": {"safety": {"id": "guard", "provider": "llama-guard"}}}),
        ),
        case(
            "provider_list",
            json!({"providers": {"inference": [
            {"id": "a", "provider": "vllm", "endpoint": "http://a:8000/v1"},
            {"id": "b", "provider": "openai", "settings": {"max_tokens": 8192}}]}}),
        ),
        case(
            "provider_list_of_one",
            json!({"providers": {"toolRuntime": [{"id": "search", "provider": "brave-search"}]}}),
        ),
        case(
            "provider_settings_nested_and_secret_refs",
            json!({"providers": {"vectorIo": {"provider": "pgvector", "settings": {
            "host": {"secretKeyRef": {"name": "pg", "key": "host"}},
            "database": {"connection": {"secretKeyRef": {"name": "db", "key": "url"}}},
            "ports": [5432, 5433], "ssl": true, "ratio": 0.5}}}}),
        ),
        case(
            "provider_every_api",
            json!({"providers": {
            "inference": {"provider": "vllm"}, "safety": {"provider": "llama-guard"}, "vectorIo": {"provider": "faiss"},
            "toolRuntime": {"provider": "brave-search"}, "telemetry": {"provider": "opentelemetry", "endpoint": "http://otel:4318"}}}),
        ),
        case(
            "model_strings",
            json!({"resources": {"models": ["llama3.2-8b", "meta-llama/Llama-3.3-70B-Instruct"]}}),
        ),
        case(
            "model_objects",
            json!({"resources": {"models": [{"name": "big", "provider": "vllm-large",
            "contextLength": 128000, "modelType": "llm", "quantization": "fp8"}]}}),
        ),
        case(
            "model_mixed",
            json!({"resources": {"models": ["small", {"name": "big", "provider": "p"}]}}),
        ),
        case("expose_true", json!({"networking": {"expose": true}})),
        case("expose_false", json!({"networking": {"expose": false}})),
        case("expose_empty_object", json!({"networking": {"expose": {}}})),
        case(
            "expose_hostname",
            json!({"networking": {"expose": {"hostname": "llama.example.com"}}}),
        ),
        case(
            "expose_enabled_false_object",
            json!({"networking": {"expose": {"enabled": false, "hostname": "h.example.com"}}}),
        ),
    ]
}

/// The API server stores each form exactly as written, and the Rust types read and write it
/// back in the same form.
pub async fn polymorphic_round_trip(ctx: &Ctx, case: &PolymorphicCase) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, case.name).await?;
    let stored = create(
        &ctx.client,
        &ns,
        &obj("llamastack.io/v1alpha2", "poly", case.spec.clone()),
    )
    .await?;
    for key in ["providers", "resources"] {
        if stored["spec"][key] != case.spec[key] {
            return Err(format!(
                "spec.{key} changed:\n{:#}\nexpected\n{:#}",
                stored["spec"][key], case.spec[key]
            )
            .into());
        }
    }
    if stored["spec"]["networking"]["expose"] != case.spec["networking"]["expose"] {
        return Err(format!(
            "spec.networking.expose changed: {}",
            stored["spec"]["networking"]["expose"]
        )
        .into());
    }
    let typed: v1alpha2::LlamaStackDistribution = serde_json::from_value(stored.clone())?;
    let rewritten = serde_json::to_value(&typed.spec)?;
    if rewritten != stored["spec"] {
        return Err(format!(
            "the Rust types changed the form:\n{rewritten:#}\nstored\n{:#}",
            stored["spec"]
        )
        .into());
    }
    Ok(())
}
