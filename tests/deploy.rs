//! `deploy/` against a real kube-apiserver: every overlay renders with kubectl's kustomize and is
//! accepted by a server-side dry run (cert-manager's own kinds are checked for shape only, as
//! cert-manager is not installed in the test control plane).

#[path = "support/mod.rs"]
mod support;

use std::io::Write;
use std::process::Stdio;

use support::control_plane::ControlPlane;

fn kubectl(plane: &ControlPlane, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = plane
        .kubectl()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("kubectl finishes");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    for overlay in ["self-managed", "cert-manager"] {
        let dir = format!("{root}/deploy/overlays/{overlay}");
        let (ok, rendered, err) = kubectl(&plane, &["kustomize", &dir], None);
        assert!(ok, "{overlay}: kustomize failed: {err}");
        let docs: Vec<&str> = rendered.split("\n---\n").collect();
        let (cert_manager, rest): (Vec<&str>, Vec<&str>) = docs
            .into_iter()
            .partition(|d| d.contains("apiVersion: cert-manager.io/"));
        if overlay == "cert-manager" {
            assert_eq!(cert_manager.len(), 2, "Issuer and Certificate");
            assert!(
                cert_manager
                    .iter()
                    .all(|d| d.contains("namespace: llama-stack-operator-system"))
            );
            assert_eq!(rendered.matches("cert-manager.io/inject-ca-from: llama-stack-operator-system/llama-stack-operator-webhook").count(), 2, "CRD and webhook configuration get the CA injected");
        } else {
            assert!(cert_manager.is_empty());
            assert!(rendered.contains("- --self-managed-certs"));
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
