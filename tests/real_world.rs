//! Real `LlamaStackDistribution` manifests written outside this project
//! (`tests/fixtures/real-world/`, each with its source in its header and in the README there),
//! applied as their authors apply them (`kubectl apply`, server-side) to a real API server with
//! the operator running: its admission webhook, its conversion webhook and its controller, on a
//! cluster whose Pods run (kwok). Every registry they name is mirrored to a local registry that
//! holds unlabelled images, as in-house and provider images are, through the operator's
//! `mirrors` rules.
//!
//! Each manifest must do what it did under the upstream operator: deploy faithfully (the image
//! pinned, the user's ConfigMap mounted whole, the user's command, env, volumes, mounts, port,
//! replicas, budget and storage all in the Deployment) and become Ready; or, where the upstream
//! operator could not run it either, be refused or blocked for the same reason.
//!
//! Each stack that runs is also rendered offline (`render`, which shares the controller's
//! decision): its Deployment and generated ConfigMap as applied must hold everything render
//! printed, the image (the mirror's pin in the cluster) aside.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use llama_stack_resolver::ImageRef;
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, start_cluster_with_crd};
use support::images::push_plain;
use support::operator::{
    OPERATOR_NAMESPACE, convert_through, kubectl, kubectl_status, spawn_operator_with_webhooks,
    webhook_certificates,
};
use support::process::free_port;
use support::registries::Registries;

/// How long every admitted stack may take to become Ready (or blocked) on the kwok node.
const CONVERGE: Duration = Duration::from_secs(180);

/// What the upstream operator did with a manifest, and so what this operator must do.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Every stack in it deploys faithfully and becomes Ready.
    Ready,
    /// `kubectl apply` is refused; the message names each of these.
    Refused(&'static [&'static str]),
    /// Admitted, and every stack in it stops with `ConfigGenerated` or another condition False
    /// for this reason before anything is deployed (the upstream operator failed its reconcile
    /// the same way).
    Blocked(&'static str),
}

/// Outcome per fixture. Where it is not `Ready`, the reason the upstream operator had too.
const EXPECTED: &[(&str, Expect)] = &[
    ("01-upstream-sample-ha.yaml", Expect::Ready),
    ("02-odh-sample-pdb-minavailable.yaml", Expect::Ready),
    ("03-upstream-userconfig-config-yaml.yaml", Expect::Ready),
    // 04, 05 and 32 name `remote-vllm`, whose only image was under docker.io/llamastack, an
    // organisation Docker Hub no longer has: the upstream operator's Pods cannot pull it. Admitted
    // with a warning, then stopped with what to write instead (before their other faults: 04's CA
    // ConfigMap is not part of the sample, 05's holds placeholder text).
    (
        "04-upstream-ca-bundle-remote-vllm.yaml",
        Expect::Blocked("InvalidDistribution"),
    ),
    (
        "05-upstream-multiple-ca-keys.yaml",
        Expect::Blocked("InvalidDistribution"),
    ),
    ("06-upstream-network-config.yaml", Expect::Ready),
    ("07-upstream-without-configmap.yaml", Expect::Ready),
    ("08-v1alpha2-basic.yaml", Expect::Ready),
    ("09-v1alpha2-ha.yaml", Expect::Ready),
    // 08 to 11 come from the upstream operator's unmerged v1alpha2 proposal (its PR #253), never
    // released. Where that design differs from this v1alpha2, the API server says where: here a
    // Secret reference written `{name, key}` instead of `{secretKeyRef: {name, key}}`. The API
    // server names one of the two undeclared fields, `name` or `key`, whichever its map iteration
    // meets first (both seen).
    (
        "10-v1alpha2-vllm-postgres.yaml",
        Expect::Refused(&[
            ".spec.storage.sql.connectionString.",
            ": field not declared in schema",
        ]),
    ),
    // Its first stack names a CA ConfigMap the sample does not include; the second runs.
    ("11-v1alpha2-networking.yaml", Expect::Ready),
    ("12-odh-demos-starter-vllm.yaml", Expect::Ready),
    ("13-trustyai-lmeval-kind.yaml", Expect::Ready),
    ("14-trustyai-fms-kind.yaml", Expect::Ready),
    ("15-trustyai-ragas-demo.yaml", Expect::Ready),
    ("16-trustyai-garak-remote.yaml", Expect::Ready),
    ("17-psap-external-embedding.yaml", Expect::Ready),
    ("18-psap-otel-tracing-patch.yaml", Expect::Ready),
    ("19-psap-tekton-rh-dev.yaml", Expect::Ready),
    ("20-psap-postgres-userconfig-run-yaml.yaml", Expect::Ready),
    ("21-psap-uvicorn-command.yaml", Expect::Ready),
    ("22-psap-benchmark-4-replicas.yaml", Expect::Ready),
    ("23-varsha-starter-image-run-yaml.yaml", Expect::Ready),
    ("24-varsha-playground-command.yaml", Expect::Ready),
    // Not in the upstream operator's catalog at its last release either: admitted with a
    // warning (as 04), stopped with what to write instead.
    (
        "25-yagohar-ollama.yaml",
        Expect::Blocked("InvalidDistribution"),
    ),
    ("26-sukantadash-rh-dev-auth.yaml", Expect::Ready),
    ("27-ravisharma-expose-route.yaml", Expect::Ready),
    ("28-crenwick-template-milvus-inline.yaml", Expect::Ready),
    ("29-derekhiggins-showroom-keycloak.yaml", Expect::Ready),
    ("30-ai-architecture-charts-helm.yaml", Expect::Ready),
    ("31-genaiops-helm-current.yaml", Expect::Ready),
    (
        "32-genaiops-helm-remote-vllm.yaml",
        Expect::Blocked("InvalidDistribution"),
    ),
    // Its userConfig ConfigMap is rendered by a template not in the fixture (upstream: "failed to
    // find referenced ConfigMap").
    (
        "33-alpha-hack-demo-helm.yaml",
        Expect::Blocked("ConfigGenerationFailed"),
    ),
    ("34-eligibility-helm.yaml", Expect::Ready),
    ("35-lls-observability-helm.yaml", Expect::Ready),
    // The Open Data Hub documentation's own `rh-dev` examples. 36 names its userConfig in the
    // operator's namespace, and the documentation never shows the whole file: not found.
    (
        "36-odh-docs-auth-configmap-namespace.yaml",
        Expect::Blocked("ConfigGenerationFailed"),
    ),
    // 37 and 40 keep the documentation's placeholders `<postgres-secret-name>` and
    // `"<ragas_s3_credentials>"` as Secret names, which no Secret can have: the API server refuses
    // the Deployment, and the stack says so.
    (
        "37-odh-docs-milvus-inline-postgres.yaml",
        Expect::Blocked("ApplyFailed"),
    ),
    ("38-odh-docs-v3.0-faiss-config-dir.yaml", Expect::Ready),
    ("39-odh-docs-v2.24-milvus-db-path.yaml", Expect::Ready),
    (
        "40-odh-docs-ragas-remote-configmap.yaml",
        Expect::Blocked("ApplyFailed"),
    ),
];

/// Stacks that stop for a reason of their own inside a fixture expected `Ready` otherwise.
const BLOCKED_STACKS: &[(&str, &str, &str)] = &[(
    "11-v1alpha2-networking.yaml",
    "llamastack-network-example",
    "CABundleInvalid",
)];

/// `rh-dev`, the name Open Data Hub and OpenShift AI users write: the catalog gives it the
/// llama-stack image the ODH build of the upstream operator deploys for it. That image carries no
/// config labels (opendatahub-io/llama-stack-distribution `distribution/Containerfile`: its
/// `run.yaml` is a file the entrypoint runs), as the suite's unlabelled copy.
const RH_DEV_IMAGE: &str = "quay.io/opendatahub/llama-stack:odh";

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-world")
}

/// The YAML documents of a fixture, as JSON.
fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text)
        .unwrap_or_else(|e| panic!("a fixture does not parse: {e}"))
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

/// The image a stack's distribution names, as written or through the catalogs.
fn image_of(llsd: &Value) -> String {
    let distribution = llsd
        .pointer("/spec/server/distribution")
        .or_else(|| llsd.pointer("/spec/distribution"))
        .cloned()
        .unwrap_or_default();
    if let Some(image) = distribution["image"].as_str().filter(|i| !i.is_empty()) {
        return image.to_owned();
    }
    let name = distribution["name"].as_str().unwrap_or_default();
    // Written out, not read from the catalog: what a stack naming `rh-dev` must deploy.
    if name == "rh-dev" {
        return RH_DEV_IMAGE.to_owned();
    }
    let catalog = llama_stack_resolver::Catalog::embedded().expect("catalog");
    catalog.image(name).map(str::to_owned).unwrap_or_default()
}

/// Where the mirror keeps a registry's repositories: `<mirror>/mirror/<host, ':' as '-'>`.
fn mirror_prefix(mirror: &str, registry: &str) -> String {
    format!("{mirror}/mirror/{}", registry.replace(':', "-"))
}

/// Whether every field of `want` is in `have` with the same value (what the API server adds,
/// defaults, may be there too; an empty map or list it drops).
fn subset(want: &Value, have: &Value) -> bool {
    let dropped = |v: &Value| {
        v.is_null()
            || v.as_object().is_some_and(|o| o.is_empty())
            || v.as_array().is_some_and(|a| a.is_empty())
    };
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().all(|(k, v)| match h.get(k) {
            Some(hv) => v.is_null() || subset(v, hv),
            None => dropped(v),
        }),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| subset(a, b))
        }
        (Value::Number(w), Value::String(h)) | (Value::String(h), Value::Number(w)) => {
            w.to_string() == *h
        }
        // Quantities as the API server writes them back: `1000m` is `1`, `1024Mi` is `1Gi`.
        (Value::String(w), Value::String(h)) => {
            w == h || quantity(w).is_some_and(|q| quantity(h) == Some(q))
        }
        _ => want == have,
    }
}

/// Where `want` is first not a [`subset`] of `have`: the path, with both values there.
fn first_difference(want: &Value, have: &Value, path: &str) -> Option<String> {
    if subset(want, have) {
        return None;
    }
    let deeper = match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().find_map(|(k, v)| {
            first_difference(v, h.get(k).unwrap_or(&Value::Null), &format!("{path}.{k}"))
        }),
        (Value::Array(w), Value::Array(h)) if w.len() == h.len() => w
            .iter()
            .zip(h)
            .enumerate()
            .find_map(|(i, (a, b))| first_difference(a, b, &format!("{path}[{i}]"))),
        _ => None,
    };
    deeper.or_else(|| Some(format!("{path}: {want} vs {have}")))
}

/// A resource quantity's value in thousandths of its unit (`500m` → 500, `1Gi` → 2^30 × 1000).
fn quantity(text: &str) -> Option<u128> {
    let suffixes: [(&str, u128); 11] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("m", 0),
        ("", 1),
        ("", 1),
    ];
    let (number, factor) = suffixes
        .iter()
        .find_map(|(suffix, factor)| text.strip_suffix(suffix).map(|n| (n, *factor)))?;
    let value: u128 = number.parse().ok()?;
    Some(if factor == 0 {
        value
    } else {
        value * factor * 1000
    })
}

/// The last entry of each name (what Kubernetes runs for duplicated names).
fn last_by<'a>(items: &'a [Value], key: &str) -> Vec<&'a Value> {
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| !items[i + 1..].iter().any(|later| later[key] == item[key]))
        .map(|(_, item)| item)
        .collect()
}

struct Suite {
    plane: ControlPlane,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    _registries: Registries,
    _operator: support::operator::OperatorProcess,
    /// Image as written (normalised) → its mirror's copy, pinned (`<repository>@sha256:…`).
    mirrored: BTreeMap<String, String>,
    _work: tempfile::TempDir,
}

impl Suite {
    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        kubectl(&self.plane, args, stdin).map_err(|e| e.to_string())
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        self.kubectl(&all, None)
            .ok()
            .and_then(|out| serde_json::from_str(&out).ok())
            .unwrap_or(Value::Null)
    }
}

/// Pushes an unlabelled image for every image the fixtures name (catalog names resolved), and
/// returns the operator ConfigMap's mirror rules and each image's mirror copy, pinned.
fn mirror_everything(
    plain: &str,
    work: &Path,
    fixtures: &[(String, Vec<Value>)],
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut registries = BTreeSet::new();
    let mut mirrored = BTreeMap::new();
    let images: BTreeSet<String> = fixtures
        .iter()
        .flat_map(|(_, docs)| docs.iter())
        .filter(|d| d["kind"] == "LlamaStackDistribution")
        .map(image_of)
        .filter(|i| !i.is_empty())
        .collect();
    for written in images {
        let image = ImageRef::parse(&written).expect("a fixture's image parses");
        let prefix = mirror_prefix(plain, &image.registry);
        let repository = format!("{prefix}/{}", image.repository);
        let repo_path = repository.trim_start_matches(&format!("{plain}/"));
        let tag = image.tag.clone().unwrap_or_else(|| "pinned".to_owned());
        let dir = work.join(mirrored.len().to_string());
        let pinned = push_plain(plain, &dir, repo_path, &tag, None);
        registries.insert(image.registry.clone());
        mirrored.insert(image.name(), pinned);
    }
    let rules = registries
        .iter()
        .map(|r| format!("{r}={}", mirror_prefix(plain, r)))
        .collect();
    (rules, mirrored)
}

fn start(fixtures: &[(String, Vec<Value>)]) -> Suite {
    let (plane, rt, client) = start_cluster_with_crd().expect("a cluster with the CRD");
    let registries = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = registries.plain.host.clone();
    let (rules, mirrored) = mirror_everything(&plain, work.path(), fixtures);
    let config = json!({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}},
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "llama-stack-operator-config", "namespace": OPERATOR_NAMESPACE},
     "data": {
        "mirrors": serde_json::to_string(&rules).unwrap(),
        "insecure-registries": serde_json::to_string(&[&plain]).unwrap(),
     }}]});
    kubectl(&plane, &["apply", "-f", "-"], Some(&config.to_string())).expect("operator config");
    let certs = work.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let ca = webhook_certificates(&certs).expect("webhook certificates");
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let bin = Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    let operator = spawn_operator_with_webhooks(
        &plane,
        bin,
        "real-world",
        &plane.kubeconfig,
        &addr,
        &certs,
        &["--log-format=json"],
    )
    .expect("the operator");
    convert_through(&plane, &format!("https://{addr}/convert"), &ca).expect("conversion");
    use base64::Engine;
    let admission = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "llama-stack-operator"},
        "webhooks": [{"name": "validate.llamastack.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail", "timeoutSeconds": 10,
            "clientConfig": {"url": format!("https://{addr}/validate"),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca)},
            "rules": [{"apiGroups": ["llamastack.io"], "apiVersions": ["v1alpha1", "v1alpha2"],
                "operations": ["CREATE", "UPDATE"], "resources": ["llamastackdistributions"]}]}]});
    kubectl(&plane, &["apply", "-f", "-"], Some(&admission.to_string())).expect("admission");
    Suite {
        plane,
        rt,
        client,
        _registries: registries,
        _operator: operator,
        mirrored,
        _work: work,
    }
}

/// Binds every pending claim to a hostPath volume of its own, as a provisioner would (the
/// fixtures ask for storage; the kwok node mounts nothing).
async fn provision(client: kube::Client) {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use kube::api::{Api, ListParams, PostParams};
    let claims: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let volumes: Api<PersistentVolume> = Api::all(client);
    loop {
        for claim in claims
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            if claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_ref())
                .is_some()
            {
                continue;
            }
            let (ns, name) = (
                claim.metadata.namespace.unwrap_or_default(),
                claim.metadata.name.unwrap_or_default(),
            );
            let spec = claim.spec.unwrap_or_default();
            let size = spec
                .resources
                .and_then(|r| r.requests)
                .and_then(|r| r.get("storage").cloned());
            let volume = json!({"metadata": {"name": format!("pv-{ns}-{name}")},
                "spec": {"capacity": {"storage": size.map_or("1Gi".to_owned(), |q| q.0)},
                    "accessModes": spec.access_modes, "hostPath": {"path": format!("/tmp/pv-{ns}-{name}")},
                    "claimRef": {"namespace": ns, "name": name}, "storageClassName": spec.storage_class_name.unwrap_or_default()}});
            if let Ok(volume) = serde_json::from_value::<PersistentVolume>(volume) {
                let _ = volumes.create(&PostParams::default(), &volume).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Fixture 16 pins its image by a digest of quay.io; a mirror holds that same digest, which no
/// other image can have: the test's mirror holds another, so the manifest is given that one.
fn with_mirrored_digests(text: &str, suite: &Suite, llsds: &[Value]) -> String {
    let mut text = text.to_owned();
    for llsd in llsds {
        let written = image_of(llsd);
        let Ok(image) = ImageRef::parse(&written) else {
            continue;
        };
        let Some(digest) = &image.digest else {
            continue;
        };
        let (_, local) = suite.mirrored[&image.name()]
            .split_once('@')
            .expect("a pinned reference");
        text = text.replace(digest.as_str(), local);
    }
    text
}

/// The problems of one stack's Deployment, compared with its manifest (v1alpha1 or v1alpha2).
fn unfaithful(suite: &Suite, ns: &str, llsd: &Value) -> Vec<String> {
    let name = llsd["metadata"]["name"].as_str().unwrap_or_default();
    let mut problems = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    let deployment = suite.json(&["get", "deployment", name, "-n", ns]);
    let pod = &deployment["spec"]["template"]["spec"];
    let server = &pod["containers"][0];
    let v1 = llsd["apiVersion"] == "llamastack.io/v1alpha1";
    let (container_spec, pod_overrides, replicas, budget, storage) = if v1 {
        let s = &llsd["spec"]["server"];
        (
            s["containerSpec"].clone(),
            s["podOverrides"].clone(),
            llsd["spec"]["replicas"].clone(),
            s["podDisruptionBudget"].clone(),
            s["storage"].clone(),
        )
    } else {
        let w = &llsd["spec"]["workload"];
        let mut container = w["overrides"].clone();
        if let Some(port) = llsd.pointer("/spec/networking/port") {
            container["port"] = port.clone();
        }
        if let Some(resources) = w.get("resources") {
            container["resources"] = resources.clone();
        }
        (
            container,
            w["overrides"].clone(),
            w["replicas"].clone(),
            w["podDisruptionBudget"].clone(),
            w["storage"].clone(),
        )
    };
    // What the upstream operator's users read in the status.
    let status = suite.json(&["get", "llsd", name, "-n", ns])["status"].clone();
    let config = &status["distributionConfig"];
    let written_name = llsd
        .pointer("/spec/server/distribution/name")
        .or_else(|| llsd.pointer("/spec/distribution/name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    check(
        config["activeDistribution"] == written_name.unwrap_or("custom"),
        format!("activeDistribution {}", config["activeDistribution"]),
    );
    check(
        config["availableDistributions"]["rh-dev"] == RH_DEV_IMAGE
            && config["availableDistributions"]["rh"] == "quay.io/opendatahub/odh-ogx-core:latest"
            && config["availableDistributions"]["postgres-demo"].is_string()
            && config["availableDistributions"]["starter"].is_string(),
        format!(
            "availableDistributions {}",
            config["availableDistributions"]
        ),
    );
    // The image, pinned by digest in the mirror that holds it.
    let written = ImageRef::parse(&image_of(llsd)).expect("image");
    let (repository, _) = suite.mirrored[&written.name()]
        .split_once('@')
        .expect("a pinned reference");
    let image = server["image"].as_str().unwrap_or_default();
    check(
        image.starts_with(&format!("{repository}@sha256:")),
        format!("image {image} is not {repository} pinned"),
    );
    // The user's ConfigMap, whole.
    let user_config = llsd
        .pointer("/spec/server/userConfig/configMapName")
        .or_else(|| llsd.pointer("/spec/overrideConfig/configMapName"));
    if let Some(cm) = user_config {
        let mounted = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v["configMap"]["name"] == *cm && v["configMap"]["items"].is_null());
        check(mounted, format!("ConfigMap {cm} is not mounted whole"));
    }
    for field in ["command", "args"] {
        if !container_spec[field].is_null() {
            check(
                server[field] == container_spec[field],
                format!(
                    "{field} {} is not the manifest's {}",
                    server[field], container_spec[field]
                ),
            );
        }
    }
    if let Some(port) = container_spec["port"].as_i64() {
        check(
            server["ports"][0]["containerPort"] == port,
            format!("port {} is not {port}", server["ports"][0]),
        );
    }
    if !container_spec["resources"].is_null() {
        check(
            subset(&container_spec["resources"], &server["resources"]),
            format!(
                "resources {} lack {}",
                server["resources"], container_spec["resources"]
            ),
        );
    }
    let env = server["env"].as_array().cloned().unwrap_or_default();
    let user_env = container_spec["env"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for var in last_by(&user_env, "name") {
        let found = env.iter().find(|e| e["name"] == var["name"]);
        check(
            found.is_some_and(|f| subset(var, f)),
            format!("env {var} is {found:?}"),
        );
    }
    let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
    for volume in pod_overrides["volumes"].as_array().into_iter().flatten() {
        check(
            volumes.iter().any(|v| subset(volume, v)),
            format!("volume {volume} is missing"),
        );
    }
    let mounts = server["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for mount in pod_overrides["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        check(
            mounts.iter().any(|m| subset(mount, m)),
            format!("mount {mount} is missing"),
        );
    }
    let autoscaled = !llsd
        .pointer("/spec/server/autoscaling")
        .unwrap_or(&llsd["spec"]["workload"]["autoscaling"])
        .is_null();
    if let (Some(replicas), false) = (replicas.as_i64(), autoscaled) {
        check(
            deployment["spec"]["replicas"] == replicas,
            format!(
                "replicas {} is not {replicas}",
                deployment["spec"]["replicas"]
            ),
        );
    }
    if budget.is_object() {
        let pdb = suite.json(&["get", "pdb", &format!("{name}-pdb"), "-n", ns]);
        check(
            subset(&budget, &pdb["spec"]),
            format!("budget {budget} is not the PDB's {}", pdb["spec"]),
        );
    }
    if storage.is_object() {
        let pvc = suite.json(&["get", "pvc", &format!("{name}-pvc"), "-n", ns]);
        check(!pvc.is_null(), "no PVC for storage".to_owned());
        // Unset, the state directory of the image's server line: /.ogx or /.llama.
        let paths: Vec<&str> = match storage["mountPath"].as_str() {
            Some(path) => vec![path],
            None => vec!["/.ogx", "/.llama"],
        };
        check(
            mounts.iter().any(|m| {
                m["mountPath"].as_str().is_some_and(|p| {
                    paths
                        .iter()
                        .any(|want| want.trim_end_matches('/') == p.trim_end_matches('/'))
                })
            }),
            format!("nothing mounted at the storage path {paths:?}"),
        );
    }
    problems
}

/// What `render` prints for a fixture (`text`, as applied), offline: every object, as JSON.
fn render_offline(text: &str) -> Result<Vec<Value>, String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args(["render", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(documents(&String::from_utf8_lossy(&out.stdout)))
}

/// Where what `render` showed for stack `name` (`rendered`: the fixture's render) differs from
/// what the operator applied in `ns`: its Deployment and generated ConfigMap, as applied, must
/// hold everything render printed. Render and the controller share one decision; what only the
/// cluster knows is set aside: the image (render shows the catalog's or the manifest's
/// reference, the cluster runs the mirror's pin) and so the desired hash, which covers it.
fn render_differs(suite: &Suite, ns: &str, name: &str, rendered: &[Value]) -> Vec<String> {
    let deployment = suite.json(&["get", "deployment", name, "-n", ns]);
    let Some(mut shown) = rendered
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == name)
        .cloned()
    else {
        return vec![format!("render printed no Deployment {name}")];
    };
    let running = deployment["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    let offline = shown["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    let text = shown
        .to_string()
        .replace(&offline.to_string(), &running.to_string());
    shown = serde_json::from_str(&text).expect("JSON");
    if let Some(annotations) = shown["metadata"]["annotations"].as_object_mut() {
        annotations.remove("llamastack.io/desired-hash");
    }
    let mut problems = Vec::new();
    if let Some(difference) = first_difference(&shown["spec"], &deployment["spec"], "spec") {
        problems.push(format!(
            "render's Deployment differs from the applied one at {difference}"
        ));
    }
    let config_map = shown["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["configMap"]["name"].as_str())
        .find(|n| n.starts_with(&format!("{name}-config-")));
    if let Some(config_map) = config_map {
        let shown = rendered
            .iter()
            .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == config_map);
        let applied = suite.json(&["get", "configmap", config_map, "-n", ns]);
        if shown.is_none_or(|cm| cm["data"] != applied["data"]) {
            problems.push(format!(
                "render's ConfigMap {config_map} is not the applied one"
            ));
        }
    }
    problems
}

/// The reason of the first False condition among the config and its inputs.
fn blocked_reason(status: &Value) -> Option<String> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| {
            c["status"] == "False"
                && ["ConfigGenerated", "SecretsResolved", "DeploymentUpdated"]
                    .contains(&c["type"].as_str().unwrap_or_default())
        })
        .and_then(|c| c["reason"].as_str().map(str::to_owned))
}

#[test]
fn real_manifests_deploy_as_the_upstream_operator_deployed_them() {
    let mut fixtures = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            fixtures.push((file, documents(&std::fs::read_to_string(&path).unwrap())));
        }
    }
    fixtures.sort_by(|a, b| a.0.cmp(&b.0));
    let listed: Vec<&str> = EXPECTED.iter().map(|(f, _)| *f).collect();
    let present: Vec<&str> = fixtures.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        present, listed,
        "every fixture has an expected outcome, and every outcome a fixture"
    );

    let suite = start(&fixtures);
    suite.rt.spawn(provision(suite.client.clone()));
    let mut failures = Vec::new();
    let mut admitted = Vec::new();
    for (index, ((file, docs), (_, expect))) in fixtures.iter().zip(EXPECTED).enumerate() {
        let ns = format!("rw-{index:02}");
        suite
            .kubectl(&["create", "namespace", &ns], None)
            .expect("namespace");
        let llsds: Vec<Value> = docs
            .iter()
            .filter(|d| d["kind"] == "LlamaStackDistribution")
            .cloned()
            .collect();
        let text = std::fs::read_to_string(fixtures_dir().join(file)).unwrap();
        let text = with_mirrored_digests(&text, &suite, &llsds);
        let (applied, stdout, stderr) = kubectl_status(
            &suite.plane,
            &["apply", "--server-side", "-n", &ns, "-f", "-"],
            Some(&text),
        );
        // Offline, what the operator would apply, for the fixtures whose stacks run.
        let rendered = match expect {
            Expect::Ready => render_offline(&text),
            _ => Ok(Vec::new()),
        };
        match expect {
            Expect::Refused(needles) => {
                if applied || !needles.iter().all(|needle| stderr.contains(needle)) {
                    failures.push(format!("{file}: expected a refusal naming {needles:?}; applied={applied} {stdout} {stderr}"));
                }
            }
            _ if !applied => failures.push(format!("{file}: refused: {stderr}")),
            _ => admitted.extend(llsds.into_iter().map(|l| {
                let name = l["metadata"]["name"].as_str().unwrap_or_default();
                let expect = BLOCKED_STACKS
                    .iter()
                    .find(|(f, n, _)| f == file && *n == name)
                    .map_or(*expect, |(_, _, reason)| Expect::Blocked(reason));
                (file.clone(), ns.clone(), l, expect, rendered.clone())
            })),
        }
    }
    // Every admitted stack becomes Ready (and is then checked), or is blocked as expected.
    let deadline = Instant::now() + CONVERGE;
    let mut pending = admitted;
    while !pending.is_empty() {
        let mut still = Vec::new();
        for (file, ns, llsd, expect, rendered) in pending {
            let name = llsd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let status = suite.json(&["get", "llsd", &name, "-n", &ns])["status"].clone();
            let done = match expect {
                Expect::Ready if status["phase"] == "Ready" => {
                    let mut problems = unfaithful(&suite, &ns, &llsd);
                    match &rendered {
                        Ok(rendered) => {
                            problems.extend(render_differs(&suite, &ns, &name, rendered))
                        }
                        Err(refused) => problems.push(format!("render refused it: {refused}")),
                    }
                    if !problems.is_empty() {
                        failures.push(format!("{file} {name}: {}", problems.join("; ")));
                    }
                    true
                }
                Expect::Blocked(reason) => match blocked_reason(&status) {
                    Some(found) if found == reason => true,
                    Some(other) if Instant::now() > deadline => {
                        failures.push(format!(
                            "{file} {name}: blocked by {other}, expected {reason}: {status}"
                        ));
                        true
                    }
                    _ => false,
                },
                _ => false,
            };
            if done {
                continue;
            }
            if Instant::now() > deadline {
                failures.push(format!(
                    "{file} {name}: not {expect:?} after {CONVERGE:?}: {status}"
                ));
            } else {
                still.push((file, ns, llsd, expect, rendered));
            }
        }
        pending = still;
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_secs(2));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures differ:\n{}\noperator log: {}",
        failures.len(),
        EXPECTED.len(),
        failures.join("\n"),
        suite.plane.dir().join("operator-real-world.log").display()
    );
}
