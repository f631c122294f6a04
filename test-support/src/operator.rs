//! The operator as it is installed from `deploy/`: its Namespace, ServiceAccount and RBAC
//! applied from the kustomize base, a token of that ServiceAccount, and the binary run with it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::control_plane::{ControlPlane, Error};
use crate::process::{free_port, spawn_tied};
use crate::test_ca::TestCa;

/// Namespace the operator is installed in.
pub const OPERATOR_NAMESPACE: &str = "llama-stack-operator-system";
/// The user name the API server gives the operator's ServiceAccount token.
pub const SA_USER: &str = "system:serviceaccount:llama-stack-operator-system:llama-stack-operator";

/// Runs kubectl against `plane`, feeding `stdin`: (success, stdout, stderr).
pub fn kubectl_status(
    plane: &ControlPlane,
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String) {
    let run = || -> std::io::Result<std::process::Output> {
        let mut child = plane
            .kubectl()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(text) = stdin
            && let Some(mut input) = child.stdin.take()
        {
            input.write_all(text.as_bytes())?;
        }
        drop(child.stdin.take());
        child.wait_with_output()
    };
    match run() {
        Ok(out) => (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        Err(e) => (false, String::new(), format!("cannot run kubectl: {e}")),
    }
}

/// Runs kubectl against `plane`, feeding `stdin`; the output, or an error with kubectl's stderr.
pub fn kubectl(plane: &ControlPlane, args: &[&str], stdin: Option<&str>) -> Result<String, Error> {
    match kubectl_status(plane, args, stdin) {
        (true, out, _) => Ok(out),
        (false, _, err) => Err(format!("kubectl {args:?}: {err}").into()),
    }
}

/// Applies `crds/` with kubectl (server-side: the CRD is too large for client-side apply) and
/// waits until it is Established.
pub fn apply_crd(plane: &ControlPlane) -> Result<(), Error> {
    let crd = crate::workspace_root().join("crds/llamastackdistributions.llamastack.io.yaml");
    let crd = crd.to_string_lossy();
    kubectl(plane, &["apply", "--server-side", "-f", &crd], None)?;
    // `kubectl wait` fails at once ("status.conditions accessor error") when it reads the CRD
    // before the API server has given it any condition: wait again until it is Established.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match kubectl(
            plane,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=10s",
                "crd/llamastackdistributions.llamastack.io",
            ],
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(e) if std::time::Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

/// Applies what `deploy/base` grants the operator (Namespace, ServiceAccount, RBAC), without the
/// webhook configuration (no webhook Service is reachable from a local API server) and without
/// the manager Deployment (no container runtime). Returns a kubeconfig holding a token of the
/// operator's ServiceAccount: a process using it has exactly the rights `deploy/` grants.
pub fn install_operator_rbac(plane: &ControlPlane) -> Result<PathBuf, Error> {
    let base = crate::workspace_root().join("deploy/base");
    let base = base.to_string_lossy();
    let rendered = kubectl(plane, &["kustomize", &base], None)?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&rendered)?;
    let wanted = [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ];
    let picked: Vec<String> = docs
        .iter()
        .filter(|d| wanted.contains(&d["kind"].as_str().unwrap_or_default()))
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    if picked.len() < 7 {
        return Err(format!("deploy/base holds only {} RBAC objects", picked.len()).into());
    }
    kubectl(plane, &["apply", "-f", "-"], Some(&picked.join("\n")))?;
    let token = kubectl(
        plane,
        &[
            "create",
            "token",
            "llama-stack-operator",
            "-n",
            OPERATOR_NAMESPACE,
            "--duration=2h",
        ],
        None,
    )?;
    plane.kubeconfig_with_token("operator-sa", token.trim())
}

/// The ValidatingWebhookConfiguration `deploy/base` ships (its rules and `matchConditions`), each
/// webhook called at `validate_url` and trusting `ca_pem` (in place of the webhook Service, which
/// no local API server reaches).
pub fn shipped_webhooks(validate_url: &str, ca_pem: &str) -> Result<Value, Error> {
    let path = crate::workspace_root().join("deploy/base/validating_webhook.yaml");
    let mut config: Value = serde_saphyr::from_str(&std::fs::read_to_string(path)?)?;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    for hook in config["webhooks"]
        .as_array_mut()
        .ok_or("deploy/base's webhook configuration has no webhooks")?
    {
        hook["clientConfig"] = json!({"url": validate_url, "caBundle": ca_bundle});
    }
    Ok(config)
}

/// A running `llama-stack-operator run` process and its metrics URL.
pub struct OperatorProcess {
    /// The process (killed with the test binary).
    pub child: Child,
    /// `http://127.0.0.1:<port>` serving /metrics, /healthz, /readyz.
    pub metrics: String,
}

/// Starts `bin run --no-webhooks` with `kubeconfig`, logging to `<plane dir>/operator-<name>.log`.
pub fn spawn_operator(
    plane: &ControlPlane,
    bin: &Path,
    name: &str,
    kubeconfig: &Path,
    extra: &[&str],
) -> Result<OperatorProcess, Error> {
    spawn_operator_with_env(plane, bin, name, kubeconfig, extra, &[])
}

/// [`spawn_operator`] as a replica in the Pod `pod` (`POD_NAME`, as the downward API sets it in
/// deploy/), without `--operator-image`: it finds its own image in that Pod.
pub fn spawn_operator_in_pod(
    plane: &ControlPlane,
    bin: &Path,
    name: &str,
    kubeconfig: &Path,
    pod: &str,
    extra: &[&str],
) -> Result<OperatorProcess, Error> {
    spawn_operator_with_env(plane, bin, name, kubeconfig, extra, &[("POD_NAME", pod)])
}

/// [`spawn_operator`] with `env` set in its environment.
pub fn spawn_operator_with_env(
    plane: &ControlPlane,
    bin: &Path,
    name: &str,
    kubeconfig: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<OperatorProcess, Error> {
    let mut args = vec!["--no-webhooks"];
    args.extend_from_slice(extra);
    spawn_run(plane, bin, name, kubeconfig, &args, env)
}

/// Starts `bin run` with `kubeconfig`, serving its webhooks too, on `webhook_addr` with the
/// certificate and key in `cert_dir` (`tls.crt`, `tls.key`).
pub fn spawn_operator_with_webhooks(
    plane: &ControlPlane,
    bin: &Path,
    name: &str,
    kubeconfig: &Path,
    webhook_addr: &str,
    cert_dir: &Path,
    extra: &[&str],
) -> Result<OperatorProcess, Error> {
    let addr = format!("--webhook-addr={webhook_addr}");
    let cert = format!("--tls-cert={}", cert_dir.join("tls.crt").display());
    let key = format!("--tls-key={}", cert_dir.join("tls.key").display());
    let mut args = vec![addr.as_str(), cert.as_str(), key.as_str()];
    args.extend_from_slice(extra);
    spawn_run(plane, bin, name, kubeconfig, &args, &[])
}

fn spawn_run(
    plane: &ControlPlane,
    bin: &Path,
    name: &str,
    kubeconfig: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<OperatorProcess, Error> {
    let port = free_port()?;
    let child = spawn_tied(
        Command::new(bin)
            .args(["run", "--registry-timeout=2"])
            .arg(format!("--namespace={OPERATOR_NAMESPACE}"))
            .arg(format!("--metrics-addr=127.0.0.1:{port}"))
            .args(extra)
            .envs(env.iter().copied())
            .env("KUBECONFIG", kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST"),
        &plane.dir().join(format!("operator-{name}.log")),
    )?;
    Ok(OperatorProcess {
        child,
        metrics: format!("http://127.0.0.1:{port}"),
    })
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        // SIGTERM: the operator releases its Lease and stops cleanly.
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA and a serving certificate for 127.0.0.1 in `dir` (`tls.crt`, `tls.key`); returns the
/// CA's PEM.
pub fn webhook_certificates(dir: &Path) -> Result<String, String> {
    let e = |e: rcgen::Error| e.to_string();
    let ca = TestCa::new("llso-e2e-webhook-ca").map_err(e)?;
    let server = ca.localhost(None).map_err(e)?;
    std::fs::write(dir.join("tls.crt"), server.cert).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("tls.key"), server.key).map_err(|e| e.to_string())?;
    Ok(ca.pem)
}

/// Points the CRD's conversion webhook at `url` (the operator process, in place of its Service)
/// and waits until the API server converts through it.
pub fn convert_through(plane: &ControlPlane, url: &str, ca_pem: &str) -> Result<(), String> {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": url, "caBundle": ca, "service": null}}}}});
    kubectl(
        plane,
        &[
            "patch",
            "crd",
            "llamastackdistributions.llamastack.io",
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    )
    .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match kubectl(
            plane,
            &[
                "get",
                "llamastackdistributions.v1alpha1.llamastack.io",
                "-A",
            ],
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("conversion through {url}: {e}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}
