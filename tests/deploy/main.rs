//! `deploy/` against a real kube-apiserver: every overlay renders with kubectl's kustomize and is
//! accepted by a server-side dry run (cert-manager's own kinds are checked for shape only, as
//! cert-manager is not installed in the test control plane). `release/` is what
//! `scripts/build-release.sh` renders from the overlays, byte for byte, and each file applies
//! server-side (cert-manager's and prometheus-operator's kinds against schemaless stand-in CRDs).
//! `bundle/` is the OLM bundle `scripts/build-bundle.sh` makes from `deploy/base`, byte for byte,
//! and operator-framework's own validators (built from Go modules) accept it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_operator_tools::olm_bundle as olm;
use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod build_scripts;
mod helm;
mod release;

use std::path::Path;

use support::control_plane::ControlPlane;
use support::operator::{apply_crd, kubectl_status as kubectl};

/// `kubectl apply --server-side --dry-run=server` of `manifests` (in `namespace` when given):
/// (accepted, stdout, stderr).
fn server_dry_run(
    plane: &ControlPlane,
    namespace: Option<&str>,
    manifests: &str,
) -> (bool, String, String) {
    let mut args = vec!["apply", "--server-side", "--dry-run=server"];
    if let Some(ns) = namespace {
        args.extend(["-n", ns]);
    }
    args.extend(["-f", "-"]);
    kubectl(plane, &args, Some(manifests))
}

#[test]
fn overlays_render_and_pass_a_server_side_dry_run() {
    let plane = ControlPlane::start().expect("control plane");
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, _, err) = kubectl(
        &plane,
        &["create", "namespace", "llama-stack-operator-system"],
        None,
    );
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(&plane, &["create", "namespace", "llama-stack"], None);
    assert!(ok, "{err}");
    for overlay in ["self-managed", "cert-manager", "namespaced", "openshift"] {
        let dir = format!("{root}/deploy/overlays/{overlay}");
        let (ok, rendered, err) = kubectl(&plane, &["kustomize", &dir], None);
        assert!(ok, "{overlay}: kustomize failed: {err}");
        let docs: Vec<&str> = rendered.split("\n---\n").collect();
        let (cert_manager, rest): (Vec<&str>, Vec<&str>) = docs
            .into_iter()
            .partition(|d| d.contains("apiVersion: cert-manager.io/"));
        match overlay {
            "cert-manager" | "namespaced" => {
                assert_eq!(cert_manager.len(), 2, "Issuer and Certificate");
                assert!(
                    cert_manager
                        .iter()
                        .all(|d| d.contains("namespace: llama-stack-operator-system"))
                );
                assert_eq!(rendered.matches("cert-manager.io/inject-ca-from: llama-stack-operator-system/llama-stack-operator-webhook").count(), 2, "CRD and webhook configuration get the CA injected");
            }
            "openshift" => {
                assert!(cert_manager.is_empty());
                assert_eq!(
                    rendered
                        .matches("service.beta.openshift.io/inject-cabundle: 'true'")
                        .count()
                        + rendered
                            .matches("service.beta.openshift.io/inject-cabundle: \"true\"")
                            .count(),
                    2,
                    "CRD and webhook configuration get the service CA:\n{rendered}"
                );
                assert!(rendered.contains("service.beta.openshift.io/serving-cert-secret-name: llama-stack-operator-webhook-certs"));
            }
            _ => {
                assert!(cert_manager.is_empty());
                assert!(rendered.contains("- --self-managed-certs"));
            }
        }
        assert!(
            rendered.contains("- --leader-elect"),
            "{overlay}: leader election stays on"
        );
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&rendered).unwrap();
        assert_eq!(
            operator_pod_selectors(&docs).len(),
            5,
            "{overlay}: the Deployment, its anti-affinity, two Services and the budget"
        );
        assert!(
            rendered.contains("- --metrics-auth=kubernetes")
                && rendered.contains("name: llama-stack-operator-metrics\n"),
            "{overlay}: /metrics behind a Service, for reviewed tokens only"
        );
        if overlay == "namespaced" {
            assert!(rendered.contains("- --watch-namespaces=llama-stack"));
            assert!(!rendered.contains("kind: ClusterRoleBinding\nmetadata:\n  labels:\n    app.kubernetes.io/name: llama-stack-operator\n    app.kubernetes.io/part-of: llama-stack-operator\n  name: llama-stack-operator-controller"),
                "no cluster-wide grant of the controller's rules");
            let bindings: Vec<&&str> = rest
                .iter()
                .filter(|d| d.contains("kind: ClusterRoleBinding"))
                .collect();
            assert!(
                bindings.len() == 1 && bindings[0].contains("name: system:auth-delegator"),
                "a namespaced install binds no ClusterRole cluster-wide but the (cluster-scoped) token reviews of /metrics: {bindings:?}"
            );
            assert!(
                rest.iter()
                    .any(|d| d.contains("kind: RoleBinding")
                        && d.contains("namespace: llama-stack\n"))
            );
        }
        let stream = rest.join("\n---\n");
        let (ok, out, err) = server_dry_run(&plane, None, &stream);
        assert!(
            ok,
            "{overlay}: server-side dry run refused the manifests:\n{err}"
        );
        assert!(out.contains("validatingwebhookconfiguration.admissionregistration.k8s.io/llama-stack-operator serverside-applied (server dry run)"), "{out}");
        assert!(
            out.contains(
                "deployment.apps/llama-stack-operator serverside-applied (server dry run)"
            ),
            "{out}"
        );
    }
}

/// `deploy/overlays/ogx-operator`: everything in the OGX operator's namespace, its names where
/// they are taken, and every reference following them (the e2e suite that runs on this install,
/// `tests/ogx_operator_e2e.rs`, never converts a LlamaStackDistribution).
/// Every selector of the operator's own Pods (the Deployment's, its anti-affinity's, the
/// Services' and the PodDisruptionBudget's), each checked to select the Pods the Deployment
/// makes: a renamed label that one of them missed would leave a Service without endpoints or a
/// budget that protects nothing.
fn operator_pod_selectors(docs: &[serde_json::Value]) -> Vec<(String, serde_json::Value)> {
    let deployment = docs
        .iter()
        .find(|d| {
            d["kind"] == "Deployment"
                && d["spec"]["template"]["spec"]["containers"][0]["name"] == "manager"
        })
        .expect("the manager Deployment");
    let pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .expect("the Pods' labels");
    let pod = &deployment["spec"]["template"]["spec"];
    let mut selectors = vec![(
        "Deployment".to_owned(),
        deployment["spec"]["selector"]["matchLabels"].clone(),
    )];
    for term in
        pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
    {
        selectors.push((
            "anti-affinity".to_owned(),
            term["podAffinityTerm"]["labelSelector"]["matchLabels"].clone(),
        ));
    }
    for doc in docs {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        match doc["kind"].as_str() {
            Some("Service") => {
                selectors.push((format!("Service {name}"), doc["spec"]["selector"].clone()))
            }
            Some("PodDisruptionBudget") => selectors.push((
                format!("PodDisruptionBudget {name}"),
                doc["spec"]["selector"]["matchLabels"].clone(),
            )),
            _ => {}
        }
    }
    for (whose, selector) in &selectors {
        let selector = selector
            .as_object()
            .unwrap_or_else(|| panic!("{whose} selects nothing"));
        assert!(!selector.is_empty(), "{whose} selects everything");
        for (key, value) in selector {
            assert_eq!(
                pod_labels.get(key),
                Some(value),
                "{whose} selects {key}={value}, which the operator's Pods do not carry ({pod_labels:?})"
            );
        }
    }
    selectors
}

#[test]
fn the_ogx_operator_overlay_moves_every_reference_to_its_names() {
    let plane = ControlPlane::start().expect("control plane");
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, _, err) = kubectl(
        &plane,
        &["create", "namespace", "ogx-k8s-operator-system"],
        None,
    );
    assert!(ok, "{err}");
    let dir = format!("{root}/deploy/overlays/ogx-operator");
    let (ok, rendered, err) = kubectl(&plane, &["kustomize", &dir], None);
    assert!(ok, "kustomize failed: {err}");
    assert!(
        !rendered.contains("llama-stack-operator-system"),
        "nothing names the old namespace:\n{rendered}"
    );
    // The Service itself, the CRD's conversion webhook and the two admission webhooks.
    assert_eq!(
        rendered
            .matches("name: ogx-k8s-operator-webhook-service\n")
            .count(),
        4,
        "{rendered}"
    );
    assert!(rendered.contains("- --webhook-service=ogx-k8s-operator-webhook-service"));
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&rendered).unwrap();
    let selectors = operator_pod_selectors(&docs);
    assert_eq!(
        selectors.len(),
        5,
        "the Deployment's selector, its anti-affinity, both Services' selectors and the budget's: {selectors:?}"
    );
    let (ok, out, err) = server_dry_run(&plane, None, &rendered);
    assert!(ok, "server-side dry run refused the manifests:\n{err}");
    for object in [
        "deployment.apps/ogx-k8s-operator-controller-manager",
        "service/ogx-k8s-operator-webhook-service",
        "service/llama-stack-operator-metrics",
    ] {
        assert!(
            out.contains(&format!("{object} serverside-applied (server dry run)")),
            "{object}: {out}"
        );
    }
}

#[test]
fn the_samples_kustomization_holds_every_user_story() {
    let plane = ControlPlane::start().expect("control plane");
    let root = env!("CARGO_MANIFEST_DIR");
    apply_crd(&plane).expect("the CRD installs");
    let (ok, rendered, err) = kubectl(
        &plane,
        &["kustomize", &format!("{root}/deploy/samples")],
        None,
    );
    assert!(ok, "{err}");
    let files = std::fs::read_dir(format!("{root}/deploy/samples"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("v1alpha")
        })
        .count();
    let docs: Vec<&str> = rendered.split("\n---\n").collect();
    assert_eq!(
        docs.len(),
        files,
        "every sample file is in the kustomization"
    );
    // v1alpha1 objects go through the conversion webhook, which does not run here.
    let v1alpha2: Vec<&str> = docs
        .into_iter()
        .filter(|d| d.contains("apiVersion: llamastack.io/v1alpha2"))
        .collect();
    assert_eq!(v1alpha2.len(), files - 2);
    let (ok, out, err) = server_dry_run(&plane, Some("default"), &v1alpha2.join("\n---\n"));
    assert!(ok, "the samples pass the API server's validation:\n{err}");
    assert_eq!(
        out.matches("serverside-applied (server dry run)").count(),
        files - 2,
        "{out}"
    );
}

/// The release files `scripts/build-release.sh` writes.
const RELEASE_FILES: [&str; 4] = [
    "operator.yaml",
    "operator-cert-manager.yaml",
    "operator-openshift.yaml",
    "operator-monitoring.yaml",
];

#[test]
fn release_manifests_are_the_overlays_rendered_now() {
    let plane = ControlPlane::start().expect("control plane");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let kubectl_bin = plane.kubectl().get_program().to_owned();
    let built = std::process::Command::new(root.join("scripts/build-release.sh"))
        .arg(out.path())
        .env("KUBECTL", kubectl_bin)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let written = files_under(out.path());
    let mut expected: Vec<String> = RELEASE_FILES.iter().map(|f| (*f).to_owned()).collect();
    expected.sort();
    assert_eq!(written, expected);
    for file in RELEASE_FILES {
        let fresh = std::fs::read_to_string(out.path().join(file)).unwrap();
        let committed = std::fs::read_to_string(root.join("release").join(file))
            .unwrap_or_else(|e| panic!("release/{file}: {e}"));
        assert!(
            fresh == committed,
            "release/{file} differs from deploy/ rendered now: run scripts/regenerate.sh"
        );
    }
}

/// Schemaless CRDs standing in for cert-manager's and prometheus-operator's kinds.
fn foreign_kinds_crds() -> String {
    let crd = |group: &str, kind: &str, plural: &str| {
        serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    let items = vec![
        crd("cert-manager.io", "Issuer", "issuers"),
        crd("cert-manager.io", "Certificate", "certificates"),
        crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
        crd("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
    ];
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

#[test]
fn each_release_file_applies_server_side() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in RELEASE_FILES {
        // One API server per file: each installs the same objects its own way.
        let plane = ControlPlane::start().expect("control plane");
        let (ok, _, err) = kubectl(&plane, &["apply", "-f", "-"], Some(&foreign_kinds_crds()));
        assert!(ok, "{err}");
        let (ok, _, err) = kubectl(
            &plane,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd",
                "--all",
            ],
            None,
        );
        assert!(ok, "{err}");
        let path = root.join("release").join(file);
        let (ok, out, err) = kubectl(
            &plane,
            &["apply", "--server-side", "-f", &path.display().to_string()],
            None,
        );
        assert!(ok, "{file}: {err}");
        for object in [
            "customresourcedefinition.apiextensions.k8s.io/llamastackdistributions.llamastack.io serverside-applied",
            "deployment.apps/llama-stack-operator serverside-applied",
            "service/llama-stack-operator-metrics serverside-applied",
            "validatingwebhookconfiguration.admissionregistration.k8s.io/llama-stack-operator serverside-applied",
        ] {
            assert!(
                out.contains(object),
                "{file}: {object} missing from:\n{out}"
            );
        }
        if file == "operator-monitoring.yaml" {
            for object in [
                "servicemonitor.monitoring.coreos.com/llama-stack-operator serverside-applied",
                "prometheusrule.monitoring.coreos.com/llama-stack-operator serverside-applied",
                "configmap/llama-stack-operator-dashboard serverside-applied",
            ] {
                assert!(
                    out.contains(object),
                    "{file}: {object} missing from:\n{out}"
                );
            }
        }
        let (ok, _, err) = kubectl(
            &plane,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd/llamastackdistributions.llamastack.io",
            ],
            None,
        );
        assert!(ok, "{file}: the CRD is served: {err}");
    }
}

/// The default install moved to another namespace with kustomize's `namespace:` (what a
/// platform team's own kustomization does) keeps nothing of the old one: the bindings name the
/// ServiceAccount where it now runs, and the webhooks call the Service where it now is.
#[test]
fn the_install_follows_a_kustomize_namespace() {
    let plane = ControlPlane::start().expect("control plane");
    let top = tempfile::tempdir().unwrap();
    let overlay = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/overlays/self-managed");
    // kustomize takes only relative paths: up to `/`, then down to the overlay.
    let up = "../".repeat(top.path().components().count() - 1);
    let relative = format!(
        "{up}{}",
        overlay.display().to_string().trim_start_matches('/')
    );
    std::fs::write(
        top.path().join("kustomization.yaml"),
        format!("namespace: ai-platform\nresources:\n  - {relative}\n"),
    )
    .unwrap();
    let (ok, rendered, err) = kubectl(
        &plane,
        &["kustomize", &top.path().display().to_string()],
        None,
    );
    assert!(ok, "{err}");
    assert!(
        !rendered.contains("llama-stack-operator-system"),
        "the old namespace is still named:\n{}",
        rendered
            .lines()
            .filter(|l| l.contains("llama-stack-operator-system"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut subjects = 0;
    let objects: Vec<serde_json::Value> = serde_saphyr::from_multiple(&rendered).unwrap();
    for object in objects {
        for subject in object["subjects"].as_array().into_iter().flatten() {
            assert_eq!(subject["namespace"], "ai-platform", "{object}");
            subjects += 1;
        }
    }
    assert!(subjects >= 4, "every binding was looked at ({subjects})");
    let (ok, _, err) = kubectl(&plane, &["create", "namespace", "ai-platform"], None);
    assert!(ok, "{err}");
    let (ok, _, err) = server_dry_run(&plane, None, &rendered);
    assert!(ok, "{err}");
}

/// Namespace users with the built-in roles reach stacks through aggregation: `edit` (and
/// `admin`) may create and change them in their namespace and nowhere else, `view` may read.
#[test]
fn namespace_editors_manage_stacks_and_viewers_read_them() {
    let plane = ControlPlane::start_with_controllers().expect("control plane");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let release = root.join("release/operator.yaml").display().to_string();
    let (ok, _, err) = kubectl(&plane, &["apply", "--server-side", "-f", &release], None);
    assert!(ok, "{err}");
    let grants = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n\
        apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: jane-edits, namespace: team-a}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: vic-views, namespace: team-a}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: vic}]\n";
    let (ok, _, err) = kubectl(&plane, &["apply", "-f", "-"], Some(grants));
    assert!(ok, "{err}");
    let can = |user: &str, verb: &str, ns: &str| -> bool {
        let (ok, out, _) = kubectl(
            &plane,
            &[
                "auth",
                "can-i",
                verb,
                "llamastackdistributions.llamastack.io",
                "-n",
                ns,
                "--as",
                user,
            ],
            None,
        );
        ok && out.trim() == "yes"
    };
    // kube-controller-manager aggregates the rules into the built-in roles within seconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(can("jane", "create", "team-a") && can("vic", "list", "team-a")) {
        assert!(
            std::time::Instant::now() < deadline,
            "edit and view never gained LlamaStackDistributions"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    for verb in [
        "create", "update", "patch", "delete", "get", "list", "watch",
    ] {
        assert!(can("jane", verb, "team-a"), "an editor may {verb}");
        assert!(
            !can("jane", verb, "team-b"),
            "only in their namespace: {verb}"
        );
    }
    for verb in ["get", "list", "watch"] {
        assert!(can("vic", verb, "team-a"), "a viewer may {verb}");
    }
    for verb in ["create", "update", "patch", "delete"] {
        assert!(!can("vic", verb, "team-a"), "a viewer may not {verb}");
    }
}

#[test]
fn the_registry_ca_kustomization_mounts_the_ca_and_names_it() {
    let plane = ControlPlane::start().expect("control plane");
    let root = env!("CARGO_MANIFEST_DIR");
    let (ok, rendered, err) = kubectl(
        &plane,
        &["kustomize", &format!("{root}/image-overrides/registry-ca")],
        None,
    );
    assert!(ok, "{err}");
    assert!(rendered.contains("- --registry-ca-file=/etc/llama-stack-operator/registry-ca/ca.crt"));
    assert!(rendered.contains("mountPath: /etc/llama-stack-operator/registry-ca"));
    assert!(rendered.contains("ca.crt: |\n    -----BEGIN CERTIFICATE-----"));
    let (ok, _, err) = kubectl(
        &plane,
        &["create", "namespace", "llama-stack-operator-system"],
        None,
    );
    assert!(ok, "{err}");
    let (ok, out, err) = server_dry_run(&plane, None, &rendered);
    assert!(ok, "server-side dry run refused it:\n{err}");
    assert!(
        out.contains("configmap/llama-stack-operator-registry-ca"),
        "{out}"
    );
    let mirror =
        std::fs::read_to_string(format!("{root}/image-overrides/mirror-registry.yaml")).unwrap();
    let (ok, out, err) = server_dry_run(&plane, None, &mirror);
    assert!(
        ok && out.contains("llama-stack-operator-config"),
        "{out}{err}"
    );
}

/// Every file under `dir`, relative.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_olm_bundle_is_deploy_base_rendered_now() {
    let plane = ControlPlane::start().expect("control plane");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (ok, rendered, err) = kubectl(
        &plane,
        &["kustomize", &root.join("deploy/base").display().to_string()],
        None,
    );
    assert!(ok, "{err}");
    let files = olm::files(&rendered, env!("CARGO_PKG_VERSION")).unwrap();
    let mut paths: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    paths.sort();
    assert_eq!(
        files_under(&root.join("bundle")),
        paths,
        "bundle/ holds exactly the generated files"
    );
    for (path, content) in &files {
        let committed = std::fs::read_to_string(root.join("bundle").join(path)).unwrap();
        assert!(
            &committed == content,
            "bundle/{path} differs from deploy/base rendered now: run scripts/regenerate.sh"
        );
    }

    let csv: serde_json::Value = serde_saphyr::from_str(
        &files
            .iter()
            .find(|(p, _)| p.ends_with(".clusterserviceversion.yaml"))
            .unwrap()
            .1,
    )
    .unwrap();
    let spec = &csv["spec"];
    let manager = &spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    let env = manager["containers"][0]["env"].as_array().unwrap();
    assert!(env.iter().any(|e| e["name"] == "WATCH_NAMESPACES"
        && e["valueFrom"]["fieldRef"]["fieldPath"]
            == "metadata.annotations['olm.targetNamespaces']"));
    assert!(
        manager["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["name"] != "serving-certs"),
        "OLM mounts the webhook certificate itself"
    );
    let rules = spec["install"]["spec"]["clusterPermissions"][0]["rules"].to_string();
    assert!(rules.contains("tokenreviews") && rules.contains("subjectaccessreviews"));
    assert!(rules.contains("llamastackdistributions/status"));
    let hooks = spec["webhookdefinitions"].as_array().unwrap();
    let served: Vec<(&str, &str)> = hooks
        .iter()
        .filter_map(|h| Some((h["generateName"].as_str()?, h["webhookPath"].as_str()?)))
        .collect();
    assert_eq!(
        served,
        [
            ("validate.llamastack.io", "/validate"),
            ("validate.ogx.io", "/validate"),
            ("convert.llamastack.io", "/convert")
        ]
    );
    assert_eq!(
        hooks[1]["rules"][0]["resources"],
        serde_json::json!(["ogxservers"])
    );
    assert_eq!(
        hooks[2]["conversionCRDs"][0],
        "llamastackdistributions.llamastack.io"
    );
    let owned: Vec<(&str, &str)> = spec["customresourcedefinitions"]["owned"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| Some((o["kind"].as_str()?, o["version"].as_str()?)))
        .collect();
    assert_eq!(
        owned,
        [
            ("LlamaStackDistribution", "v1alpha2"),
            ("LlamaStackDistribution", "v1alpha1"),
            ("OGXServer", "v1beta1")
        ],
        "the storage version first"
    );
    let modes: Vec<(&str, bool)> = spec["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["type"].as_str().unwrap(), m["supported"] == true))
        .collect();
    assert_eq!(
        modes,
        [
            ("OwnNamespace", false),
            ("SingleNamespace", false),
            ("MultiNamespace", false),
            ("AllNamespaces", true)
        ],
        "a conversion webhook serves every namespace"
    );
    let examples: Vec<serde_json::Value> = serde_json::from_str(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let example_versions: Vec<&str> = examples
        .iter()
        .filter_map(|e| e["apiVersion"].as_str())
        .collect();
    assert_eq!(
        example_versions,
        [
            "llamastack.io/v1alpha2",
            "llamastack.io/v1alpha1",
            "ogx.io/v1beta1"
        ],
        "an example per owned version"
    );

    bundle_image_is_labelled_with_its_annotations(&root.join("bundle"));

    // The plain manifests beside the CSV are what the API server accepts.
    for (path, content) in files
        .iter()
        .filter(|(p, _)| p.starts_with("manifests/") && !p.ends_with(".clusterserviceversion.yaml"))
    {
        let (ok, _, err) = server_dry_run(&plane, Some("default"), content);
        assert!(ok, "{path}: {err}");
    }
}

/// Runs operator-framework's validators (`scripts/build-olm-validator.sh`) on `bundle`:
/// (passed, findings as printed, one per line).
fn olm_validate(bundle: &Path) -> (bool, Vec<String>) {
    let validator = support::control_plane::run_build_script("build-olm-validator.sh", &[], &[])
        .expect("olm-validate builds");
    let out = std::process::Command::new(&validator)
        .arg(bundle)
        .arg("1.35")
        .output()
        .expect("olm-validate runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "olm-validate could not read {}: {}",
        bundle.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let findings = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    (out.status.success(), findings)
}

#[test]
fn operator_frameworks_validators_accept_the_bundle() {
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("bundle");
    let (passed, findings) = olm_validate(&bundle);
    assert!(passed, "{findings:#?}");
    // The one accepted warning is a heuristic: RBAC rules carry no version, so a rule on a
    // resource one of whose old versions was removed is flagged. The operator uses
    // events.k8s.io/v1, autoscaling/v2 and policy/v1.
    for finding in &findings {
        let flagged = finding
            .split_once("Migrate the API(s) for ")
            .map(|(_, apis)| apis)
            .unwrap_or_else(|| panic!("a finding not accepted: {finding}"));
        for api in flagged.split("),").filter(|a| !a.is_empty()) {
            let resource = api.split(':').next().unwrap_or_default();
            assert!(
                ["events", "horizontalpodautoscalers", "poddisruptionbudgets"].contains(&resource),
                "a removed API not accepted: {resource} in {finding}"
            );
        }
    }

    // The validator fails a namespaced install mode beside the conversion webhook: the error
    // the generator's AllNamespaces-only modes avoid.
    // (The bundle loader skips hidden paths, so not tempfile's default ".tmp" name.)
    let copy = tempfile::Builder::new()
        .prefix("llso-bundle-")
        .tempdir()
        .unwrap();
    for path in files_under(&bundle) {
        let to = copy.path().join(&path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let mut content = std::fs::read_to_string(bundle.join(&path)).unwrap();
        if path.ends_with(".clusterserviceversion.yaml") {
            let own = "- type: OwnNamespace\n    supported: false";
            assert!(content.contains(own));
            content = content.replace(own, "- type: OwnNamespace\n    supported: true");
        }
        std::fs::write(to, content).unwrap();
    }
    let (passed, findings) = olm_validate(copy.path());
    assert!(!passed);
    assert!(
        findings.iter().any(|f| f.starts_with("error: ")
            && f.contains(
                "only AllNamespaces InstallModeType is supported when conversionCRDs is present"
            )),
        "{findings:#?}"
    );
}

/// buildah builds `bundle.Dockerfile` offline, and the image's labels are the bundle's
/// annotations (what OLM reads from a bundle image).
fn bundle_image_is_labelled_with_its_annotations(bundle: &Path) {
    let store = tempfile::tempdir().unwrap();
    let buildah = |args: &[&str]| {
        let out = std::process::Command::new("buildah")
            .args([
                "--root",
                &store.path().join("storage").display().to_string(),
            ])
            .args(["--runroot", &store.path().join("run").display().to_string()])
            .args(["--storage-driver", "vfs"])
            .args(args)
            .output()
            .expect("buildah runs (scripts/install-test-deps.sh installs it)");
        assert!(
            out.status.success(),
            "buildah {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dockerfile = bundle.join("bundle.Dockerfile").display().to_string();
    let context = bundle.display().to_string();
    buildah(&[
        "build",
        "--pull-never",
        "--layers=false",
        "-f",
        &dockerfile,
        "-t",
        "llso-bundle",
        &context,
    ]);
    let inspected: serde_json::Value =
        serde_json::from_str(&buildah(&["inspect", "--type", "image", "llso-bundle"])).unwrap();
    let labels = &inspected["OCIv1"]["config"]["Labels"];
    let annotations: serde_json::Value = serde_saphyr::from_str(
        &std::fs::read_to_string(bundle.join("metadata/annotations.yaml")).unwrap(),
    )
    .unwrap();
    for (key, value) in annotations["annotations"].as_object().unwrap() {
        assert_eq!(&labels[key], value, "label {key}");
    }
    // The image holds manifests/ and metadata/ as they are in bundle/.
    let container = buildah(&["from", "llso-bundle"]).trim().to_owned();
    let mounted = std::path::PathBuf::from(buildah(&["mount", &container]).trim());
    for dir in ["manifests", "metadata"] {
        assert_eq!(
            files_under(&mounted.join(dir)),
            files_under(&bundle.join(dir)),
            "{dir}/ in the bundle image"
        );
    }
    buildah(&["umount", &container]);
}
