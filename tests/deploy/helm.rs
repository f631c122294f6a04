//! The Helm chart (`charts/llama-stack-operator`) against the kustomize install, with the real
//! helm (`scripts/build-helm.sh`, built from Go modules): each certificate mode, monitoring and
//! a namespaced install render exactly the objects of the matching overlay (but the Namespace,
//! which `helm install --create-namespace` makes, and Helm's own labels and keep policy); the
//! chart follows its release's namespace; `helm lint --strict` passes; and a release installs,
//! upgrades and uninstalls on a real API server, leaving the CRD in place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::support::control_plane::ControlPlane;
use super::support::helm as support_helm;
use super::support::helm::{CHART, helm};
use super::support::operator::kubectl_status as kubectl;

/// Labels Helm's conventions add to every object; kustomize's install has none of them.
const HELM_LABELS: [&str; 4] = [
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "helm.sh/chart",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn helm_bin() -> PathBuf {
    support_helm::helm_bin().expect("helm")
}

/// `helm template` of the chart into `namespace`, for the tests' Kubernetes version, with `values`
/// (`--set` pairs and the like).
fn template(bin: &Path, home: &Path, namespace: &str, values: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "template",
        "llama-stack-operator",
        CHART,
        "--namespace",
        namespace,
        "--kube-version",
        "1.35.0",
    ];
    args.extend_from_slice(values);
    helm(bin, home, None, &args)
}

/// Objects by (kind, name, namespace), the Namespace left out; for the chart's, Helm's own labels
/// and the CRD's keep policy removed.
fn objects(yaml: &str, from_helm: bool) -> BTreeMap<(String, String, String), Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("YAML");
    let mut out = BTreeMap::new();
    for mut object in docs.into_iter().filter(|d| !d.is_null()) {
        if object["kind"] == "Namespace" {
            continue;
        }
        if from_helm {
            let metadata = object["metadata"].as_object_mut().expect("metadata");
            if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
                for label in HELM_LABELS {
                    labels.remove(label);
                }
            }
            let emptied = metadata
                .get_mut("annotations")
                .and_then(Value::as_object_mut)
                .map(|a| {
                    a.remove("helm.sh/resource-policy");
                    a.is_empty()
                })
                .unwrap_or(false);
            if emptied {
                metadata.remove("annotations");
            }
        }
        let key = (
            object["kind"].as_str().unwrap_or_default().to_owned(),
            object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        assert!(out.insert(key.clone(), object).is_none(), "{key:?} twice");
    }
    out
}

/// The same objects, each equal, in `want` (kustomize's) and `got` (the chart's).
fn assert_same_objects(
    what: &str,
    want: &BTreeMap<(String, String, String), Value>,
    got: &BTreeMap<(String, String, String), Value>,
) {
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: the chart lacks {missing:?} and adds {extra:?}"
    );
    for (key, object) in want {
        assert_eq!(&got[key], object, "{what}: {key:?} differs");
    }
}

#[test]
fn the_chart_renders_what_each_kustomize_install_applies() {
    let bin = helm_bin();
    let home = tempfile::tempdir().unwrap();
    let plane = ControlPlane::start().expect("control plane");
    let (ok, lint, err) = helm(&bin, home.path(), None, &["lint", "--strict", CHART]);
    assert!(ok, "helm lint: {lint}{err}");
    let cases: [(&str, &[&str]); 5] = [
        ("self-managed", &[]),
        ("cert-manager", &["--set", "certificates.mode=cert-manager"]),
        ("openshift", &["--set", "certificates.mode=openshift"]),
        ("monitoring", &["--set", "monitoring.enabled=true"]),
        (
            "namespaced",
            &[
                "--set",
                "certificates.mode=cert-manager",
                "--set",
                "watchNamespaces={llama-stack}",
            ],
        ),
    ];
    for (overlay, values) in cases {
        let (ok, kustomized, err) = kubectl(
            &plane,
            &[
                "kustomize",
                &root()
                    .join("deploy/overlays")
                    .join(overlay)
                    .display()
                    .to_string(),
            ],
            None,
        );
        assert!(ok, "{overlay}: {err}");
        let (ok, rendered, err) =
            template(&bin, home.path(), "llama-stack-operator-system", values);
        assert!(ok, "{overlay}: {err}");
        assert_same_objects(
            overlay,
            &objects(&kustomized, false),
            &objects(&rendered, true),
        );
    }
    // A mirror with a private CA and a pull secret: the chart mounts the CA and names it to the
    // operator exactly as image-overrides/registry-ca does (which also makes the ConfigMap; the
    // chart takes its name), and gives the operator's Pod the pull secret.
    let (ok, kustomized, err) = kubectl(
        &plane,
        &[
            "kustomize",
            &root()
                .join("image-overrides/registry-ca")
                .display()
                .to_string(),
        ],
        None,
    );
    assert!(ok, "registry-ca: {err}");
    let mut want = objects(&kustomized, false);
    let config_map = want
        .keys()
        .find(|(kind, name, _)| kind == "ConfigMap" && name.contains("registry-ca"))
        .cloned()
        .expect("the kustomization makes the CA's ConfigMap");
    want.remove(&config_map);
    let (ok, rendered, err) = template(
        &bin,
        home.path(),
        "llama-stack-operator-system",
        &[
            "--set",
            &format!("registryCA.configMap={}", config_map.1),
            "--set",
            "imagePullSecrets={mirror-pull}",
        ],
    );
    assert!(ok, "registry-ca: {err}");
    let mut got = objects(&rendered, true);
    let deployment = (
        "Deployment".to_owned(),
        "llama-stack-operator".to_owned(),
        "llama-stack-operator-system".to_owned(),
    );
    let pod = got
        .get_mut(&deployment)
        .and_then(|d| d["spec"]["template"]["spec"].as_object_mut())
        .expect("the operator's Pod template");
    assert_eq!(
        pod.remove("imagePullSecrets"),
        Some(serde_json::json!([{"name": "mirror-pull"}]))
    );
    assert_same_objects("registry-ca", &want, &got);
    // Another namespace: nothing names the default one.
    let (ok, rendered, err) = template(
        &bin,
        home.path(),
        "ai-platform",
        &[
            "--set",
            "certificates.mode=cert-manager",
            "--set",
            "monitoring.enabled=true",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        !rendered.contains("llama-stack-operator-system"),
        "the default namespace is still named"
    );
    // A wrong value is refused with the field named, before anything reaches a cluster.
    let (ok, _, err) = template(
        &bin,
        home.path(),
        "llama-stack-operator-system",
        &["--set", "certificates.mode=vault"],
    );
    assert!(!ok && err.contains("/certificates/mode"), "{err}");
}

/// `credentialProviders`: kubelet's config from a ConfigMap and the node's plugin directory,
/// read-only, named by the flags `run` reads; half of it is refused before anything is applied.
#[test]
fn credential_providers_mount_kubelets_config_and_plugins() {
    let bin = helm_bin();
    let home = tempfile::tempdir().unwrap();
    let set = [
        "--set",
        "credentialProviders.configMap=kubelet-credential-providers",
        "--set",
        "credentialProviders.hostPath=/etc/eks/image-credential-provider",
    ];
    let (ok, rendered, err) = template(&bin, home.path(), "llama-stack-operator-system", &set);
    assert!(ok, "{err}");
    let objects = objects(&rendered, true);
    let deployment = &objects[&(
        "Deployment".to_owned(),
        "llama-stack-operator".to_owned(),
        "llama-stack-operator-system".to_owned(),
    )];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let mounts = container["volumeMounts"].as_array().unwrap();
    let mount_of = |name: &str| {
        mounts
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no mount {name}: {mounts:?}"))
    };
    let config = mount_of("credential-providers");
    let plugins = mount_of("credential-provider-plugins");
    assert_eq!(
        (config["readOnly"].as_bool(), plugins["readOnly"].as_bool()),
        (Some(true), Some(true))
    );
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("no --{name} in {args:?}"))
    };
    assert_eq!(
        flag("image-credential-provider-config"),
        format!("{}/config.yaml", config["mountPath"].as_str().unwrap())
    );
    assert_eq!(
        flag("image-credential-provider-bin-dir"),
        plugins["mountPath"].as_str().unwrap()
    );
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes.contains(&serde_json::json!({"name": "credential-providers", "configMap": {"name": "kubelet-credential-providers"}})), "{volumes:?}");
    assert!(volumes.contains(&serde_json::json!({"name": "credential-provider-plugins", "hostPath": {"path": "/etc/eks/image-credential-provider", "type": "Directory"}})), "{volumes:?}");

    let (ok, _, err) = template(&bin, home.path(), "llama-stack-operator-system", &set[..2]);
    assert!(!ok && err.contains("set both configMap"), "{err}");
    let (ok, rendered, _) = template(&bin, home.path(), "llama-stack-operator-system", &[]);
    assert!(
        ok && !rendered.contains("credential-provider"),
        "off by default"
    );
}

#[test]
fn the_charts_copies_of_the_crd_and_the_monitoring_files_are_current() {
    for (copy, source) in [
        (
            "files/llamastackdistributions.llamastack.io.yaml",
            "crds/llamastackdistributions.llamastack.io.yaml",
        ),
        (
            "files/ogxservers.ogx.io.yaml",
            "crds/ogxservers.ogx.io.yaml",
        ),
        (
            "files/llama-stack-operator-dashboard.json",
            "deploy/components/monitoring/llama-stack-operator-dashboard.json",
        ),
        (
            "files/prometheus_rule.yaml",
            "deploy/components/monitoring/prometheus_rule.yaml",
        ),
    ] {
        let copied = std::fs::read_to_string(root().join(CHART).join(copy)).unwrap();
        let original = std::fs::read_to_string(root().join(source)).unwrap();
        assert!(
            copied == original,
            "{CHART}/{copy} differs from {source}: run scripts/regenerate.sh"
        );
    }
}

#[test]
fn a_release_installs_upgrades_and_uninstalls_keeping_the_crd() {
    let bin = helm_bin();
    let home = tempfile::tempdir().unwrap();
    let plane = ControlPlane::start().expect("control plane");
    let ns = "llso";
    let (ok, out, err) = helm(
        &bin,
        home.path(),
        Some(&plane),
        &[
            "install",
            "llso",
            CHART,
            "--namespace",
            ns,
            "--create-namespace",
            "--set",
            "image.digest=sha256:0000000000000000000000000000000000000000000000000000000000000001",
        ],
    );
    assert!(ok, "install: {out}{err}");
    let deployment = |plane: &ControlPlane| -> Value {
        let (ok, out, err) = kubectl(
            plane,
            &[
                "get",
                "deployment",
                "llama-stack-operator",
                "-n",
                ns,
                "-o",
                "json",
            ],
            None,
        );
        assert!(ok, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let installed = deployment(&plane);
    assert_eq!(
        installed["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/llamastack/llama-stack-operator@sha256:0000000000000000000000000000000000000000000000000000000000000001"
    );
    let (ok, crd, err) = kubectl(
        &plane,
        &[
            "get",
            "crd",
            "llamastackdistributions.llamastack.io",
            "-o",
            "json",
        ],
        None,
    );
    assert!(ok, "{err}");
    let crd: Value = serde_json::from_str(&crd).unwrap();
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
        ns
    );

    let (ok, _, err) = kubectl(&plane, &["create", "namespace", "team-a"], None);
    assert!(ok, "{err}");
    let (ok, out, err) = helm(
        &bin,
        home.path(),
        Some(&plane),
        &[
            "upgrade",
            "llso",
            CHART,
            "--namespace",
            ns,
            "--reuse-values",
            "--set",
            "replicas=3",
            "--set",
            "watchNamespaces={team-a}",
        ],
    );
    assert!(ok, "upgrade: {out}{err}");
    let upgraded = deployment(&plane);
    assert_eq!(upgraded["spec"]["replicas"], 3);
    let (ok, budget, err) = kubectl(
        &plane,
        &["get", "pdb", "llama-stack-operator", "-n", ns, "-o", "json"],
        None,
    );
    assert!(ok, "more than one replica, a PodDisruptionBudget: {err}");
    let budget: Value = serde_json::from_str(&budget).unwrap();
    assert_eq!(budget["spec"]["maxUnavailable"], 1, "{budget}");
    let args = upgraded["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--watch-namespaces=team-a"), "{args}");
    let (cluster_wide, _, _) = kubectl(
        &plane,
        &[
            "get",
            "clusterrolebinding",
            "llama-stack-operator-controller",
        ],
        None,
    );
    assert!(
        !cluster_wide,
        "a namespaced upgrade drops the cluster-wide grant"
    );

    let (ok, out, err) = helm(
        &bin,
        home.path(),
        Some(&plane),
        &["uninstall", "llso", "--namespace", ns, "--wait"],
    );
    assert!(ok, "uninstall: {out}{err}");
    let (left, _, _) = kubectl(
        &plane,
        &["get", "deployment", "llama-stack-operator", "-n", ns],
        None,
    );
    assert!(!left, "the Deployment is gone");
    let (kept, _, err) = kubectl(
        &plane,
        &["get", "crd", "llamastackdistributions.llamastack.io"],
        None,
    );
    assert!(kept, "the CRD, and with it every stack, stays: {err}");
}
