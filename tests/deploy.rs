//! `deploy/` against a real kube-apiserver: every overlay renders with kubectl's kustomize and is
//! accepted by a server-side dry run (cert-manager's own kinds are checked for shape only, as
//! cert-manager is not installed in the test control plane).

#[path = "support/mod.rs"]
mod support;

use support::control_plane::ControlPlane;
use support::operator::{apply_crd, kubectl_status as kubectl};

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
        if overlay == "namespaced" {
            assert!(rendered.contains("- --watch-namespaces=llama-stack"));
            assert!(!rendered.contains("kind: ClusterRoleBinding\nmetadata:\n  labels:\n    app.kubernetes.io/name: llama-stack-operator\n    app.kubernetes.io/part-of: llama-stack-operator\n  name: llama-stack-operator-controller"),
                "no cluster-wide grant of the controller's rules");
            let bindings = rest
                .iter()
                .filter(|d| d.contains("kind: ClusterRoleBinding"))
                .count();
            assert_eq!(
                bindings, 0,
                "a namespaced install binds no ClusterRole cluster-wide"
            );
            assert!(
                rest.iter()
                    .any(|d| d.contains("kind: RoleBinding")
                        && d.contains("namespace: llama-stack\n"))
            );
        }
        let stream = rest.join("\n---\n");
        let (ok, out, err) = kubectl(
            &plane,
            &["apply", "--server-side", "--dry-run=server", "-f", "-"],
            Some(&stream),
        );
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
    let (ok, out, err) = kubectl(
        &plane,
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-n",
            "default",
            "-f",
            "-",
        ],
        Some(&v1alpha2.join("\n---\n")),
    );
    assert!(ok, "the samples pass the API server's validation:\n{err}");
    assert_eq!(
        out.matches("serverside-applied (server dry run)").count(),
        files - 2,
        "{out}"
    );
}
