//! The operator binary as it runs in a cluster: two `run --leader-elect` processes authenticated
//! as the operator's own ServiceAccount, whose only rights are the RBAC in `deploy/base`, on a
//! cluster whose Pods run (kube-controller-manager, kube-scheduler, kwok). A missing permission
//! fails these tests; so does a second writer. Their `/metrics` answers only bearers of a token
//! the API server allows to read it (`--metrics-auth=kubernetes`, as `deploy/` runs them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

#[path = "operator_process/road.rs"]
mod road;

use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use libtest_mimic::Failed;
use llama_stack_operator::api::common::DistributionPhase;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, start_cluster_with_crd};
use support::harness::{run_suite, table};
use support::operator::{
    OPERATOR_NAMESPACE as NS, OperatorProcess, SA_USER, install_operator_rbac, kubectl,
    shipped_webhooks, spawn_operator, spawn_operator_in_pod, spawn_operator_with_webhooks,
};
use support::process::free_port;
use support::test_ca::TestCa;

const CONVERGE: Duration = Duration::from_secs(90);

struct Operator {
    identity: &'static str,
    process: OperatorProcess,
}

struct Env {
    plane: ControlPlane,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    operators: Mutex<Vec<Operator>>,
    /// A token bound to `llama-stack-operator-metrics-reader`, and one of an account that is not.
    scraper_token: String,
    stranger_token: String,
    /// The operators serve /metrics over HTTPS with the certificate in these files.
    metrics_tls: ServingCert,
    /// A third replica that runs only the webhooks, and the URL of its /validate.
    _admission: Admission,
}

/// `run --no-controller`: the webhooks alone, as the operator's ServiceAccount.
struct Admission {
    _process: OperatorProcess,
    _cert: ServingCert,
    validate_url: String,
    ca_pem: String,
}

/// Namespaces with this label are validated by the webhook-only replica (and no others).
const ADMISSION_LABEL: (&str, &str) = ("llso-test/admission", "operator-c");

impl Admission {
    fn start(plane: &ControlPlane, kubeconfig: &std::path::Path) -> Result<Self, Failed> {
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
        let cert = ServingCert::new()?;
        let addr = format!("127.0.0.1:{}", free_port().map_err(|e| e.to_string())?);
        let process = spawn_operator_with_webhooks(
            plane,
            bin,
            "operator-c",
            kubeconfig,
            &addr,
            cert.dir.path(),
            &["--no-controller", "--log-format=json"],
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            _process: process,
            ca_pem: cert.ca_pem.clone(),
            _cert: cert,
            validate_url: format!("https://{addr}/validate"),
        })
    }

    /// Sends the labelled namespaces' LlamaStackDistribution writes to this replica.
    fn register(&self, plane: &ControlPlane) -> Result<(), Failed> {
        let (key, value) = ADMISSION_LABEL;
        let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "llama-stack-operator-c"},
            "webhooks": [{"name": "validate.llamastack.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 5,
                "namespaceSelector": {"matchLabels": {key: value}},
                "clientConfig": {"url": self.validate_url, "caBundle": B64.encode(&self.ca_pem)},
                "rules": [{"apiGroups": ["llamastack.io"], "apiVersions": ["v1alpha1", "v1alpha2"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["llamastackdistributions"]}]}]});
        kubectl(plane, &["apply", "-f", "-"], Some(&config.to_string()))?;
        Ok(())
    }
}

/// A serving certificate's files (`tls.crt`, `tls.key`) for 127.0.0.1 and the CA that signed them.
struct ServingCert {
    dir: tempfile::TempDir,
    ca_pem: String,
}

impl ServingCert {
    fn new() -> Result<Self, Failed> {
        let mut tls = Self {
            dir: tempfile::Builder::new()
                .prefix("llso-serving-cert-")
                .tempdir()?,
            ca_pem: String::new(),
        };
        tls.ca_pem = tls.issue()?;
        Ok(tls)
    }

    /// Writes a certificate for 127.0.0.1 from a new CA in place (a rotation); returns the CA.
    fn issue(&self) -> Result<String, Failed> {
        let ca = TestCa::new("llso-metrics-ca")?;
        let cert = ca.localhost(None)?;
        std::fs::write(self.path("tls.key"), cert.key)?;
        std::fs::write(self.path("tls.crt"), cert.cert)?;
        Ok(ca.pem)
    }

    fn path(&self, file: &str) -> std::path::PathBuf {
        self.dir.path().join(file)
    }

    /// The operator's flags for it.
    fn args(&self) -> [String; 3] {
        [
            format!("--metrics-tls-cert={}", self.path("tls.crt").display()),
            format!("--metrics-tls-key={}", self.path("tls.key").display()),
            "--cert-check-interval=1".to_owned(),
        ]
    }
}

/// A client that trusts only `ca_pem`.
fn client_trusting(ca_pem: &str) -> Result<reqwest::Client, Failed> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes())?)
        .timeout(Duration::from_secs(10))
        .build()?)
}

/// ServiceAccounts `monitoring/scraper` (bound to the metrics reader role deploy/ ships) and
/// `monitoring/stranger` (not bound); returns a token of each.
fn scrapers(plane: &ControlPlane) -> Result<(String, String), Failed> {
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "scraper", "namespace": "monitoring"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "stranger", "namespace": "monitoring"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "scraper-reads-metrics"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "llama-stack-operator-metrics-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": "monitoring"}]}]});
    kubectl(plane, &["apply", "-f", "-"], Some(&objects.to_string())).map_err(|e| e.to_string())?;
    let token = |sa: &str| -> Result<String, Failed> {
        Ok(
            kubectl(plane, &["create", "token", sa, "-n", "monitoring"], None)
                .map_err(|e| e.to_string())?
                .trim()
                .to_owned(),
        )
    };
    Ok((token("scraper")?, token("stranger")?))
}

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

/// Starts an operator as deploy/ runs it: leader election, JSON logs, and /metrics over HTTPS
/// for reviewed tokens only.
fn start_operator(
    plane: &ControlPlane,
    identity: &'static str,
    kubeconfig: &std::path::Path,
    metrics_tls: &ServingCert,
) -> Result<Operator, Failed> {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    let identity_arg = format!("--identity={identity}");
    let tls = metrics_tls.args();
    let mut args = vec![
        "--leader-elect",
        "--log-format=json",
        "--metrics-auth=kubernetes",
        identity_arg.as_str(),
    ];
    args.extend(tls.iter().map(String::as_str));
    let mut process =
        spawn_operator(plane, bin, identity, kubeconfig, &args).map_err(|e| e.to_string())?;
    process.metrics = process.metrics.replacen("http://", "https://", 1);
    Ok(Operator { identity, process })
}

fn start() -> Result<Env, Failed> {
    let (plane, rt, client) = start_cluster_with_crd().map_err(|e| e.to_string())?;
    let kubeconfig = install_operator_rbac(&plane).map_err(|e| e.to_string())?;
    let (scraper_token, stranger_token) = scrapers(&plane)?;
    let metrics_tls = ServingCert::new()?;
    let admission = Admission::start(&plane, &kubeconfig)?;
    admission.register(&plane)?;
    let a = start_operator(&plane, "operator-a", &kubeconfig, &metrics_tls)?;
    let env = Env {
        plane,
        rt,
        client,
        operators: Mutex::new(vec![a]),
        scraper_token,
        stranger_token,
        metrics_tls,
        _admission: admission,
    };
    // The second replica starts once the first leads, so which one leads is known.
    env.eventually("operator-a leads", || async {
        (env.holder().await.as_deref() == Some("operator-a")).then_some(())
    })?;
    let b = start_operator(&env.plane, "operator-b", &kubeconfig, &env.metrics_tls)?;
    env.operators.lock().map_err(|e| e.to_string())?.push(b);
    Ok(env)
}

impl Env {
    fn eventually<T, F, Fut>(&self, what: &str, probe: F) -> Result<T, Failed>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        self.rt
            .block_on(support::wait::eventually(CONVERGE, what, probe))
            .map_err(|e| Failed::from(format!("{e}\n{}", self.logs())))
    }

    async fn holder(&self) -> Option<String> {
        let lease = Api::<Lease>::namespaced(self.client.clone(), NS)
            .get_opt("llama-stack-operator-leader")
            .await
            .ok()??;
        lease.spec?.holder_identity
    }

    /// Each operator process's whole log, by identity.
    fn full_logs(&self) -> Result<Vec<(&'static str, String)>, Failed> {
        ["operator-a", "operator-b", "operator-c"]
            .into_iter()
            .map(|id| {
                let path = self.plane.dir().join(format!("operator-{id}.log"));
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok((id, text))
            })
            .collect()
    }

    /// The last lines of each operator's log, for failure messages.
    fn logs(&self) -> String {
        let logs = match self.full_logs() {
            Ok(logs) => logs,
            Err(e) => return e.message().unwrap_or_default().to_owned(),
        };
        logs.iter()
            .map(|(id, text)| {
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- {id}:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn apply(&self, manifest: Value) -> Result<(), Failed> {
        kubectl(
            &self.plane,
            &["apply", "-f", "-"],
            Some(&manifest.to_string()),
        )?;
        Ok(())
    }

    fn sample(&self, name: &str, namespace: &str) -> Result<(), Failed> {
        let path = format!("{}/deploy/samples/{name}", root());
        kubectl(&self.plane, &["apply", "-n", namespace, "-f", &path], None)
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

fn ca_pem() -> Result<String, Failed> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    Ok(params.self_signed(&key)?.pem())
}

/// User stories 5 and 8 of spec 002 touch every kind the operator writes: generated and CA
/// ConfigMaps, ServiceAccount, Secret (postgres parts), PVC, Deployment, Service, NetworkPolicy,
/// Ingress, HPA, PDB and Events.
fn samples_reconcile_as_the_operators_own_service_account(env: &Env) -> Result<(), Failed> {
    let ns = "samples";
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    for (name, key, value) in [
        ("vllm-credentials", "token", "tok-not-logged"),
        ("pgvector-credentials", "host", "pgvector.db"),
        (
            "postgres-credentials",
            "url",
            "postgres://llama:s3cret@pg.db:5432/stack",
        ),
    ] {
        env.apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "stringData": {key: value}}))?;
    }
    env.apply(json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": "llama-stack-tls", "namespace": ns},
        "stringData": {"tls.crt": "cert", "tls.key": "key"}}))?;
    let (corporate, cluster) = (ca_pem()?, ca_pem()?);
    env.apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "corporate-ca", "namespace": ns}, "data": {"ca-bundle.crt": corporate}}))?;
    env.apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-trusted-ca", "namespace": ns}, "data": {"ca-bundle.crt": cluster}}))?;
    env.sample("v1alpha2_us5_networking.yaml", ns)?;
    env.sample("v1alpha2_us8_production.yaml", ns)?;

    let llsds: Api<LlamaStackDistribution> = Api::namespaced(env.client.clone(), ns);
    env.eventually("us5 Ready", || async {
        let cr = llsds.get("us5-networking").await.ok()?;
        (cr.status?.phase == Some(DistributionPhase::Ready)).then_some(())
    })?;
    // us8 mounts a PVC no provisioner binds here, so its Pods wait; everything else is applied.
    let us8 = env.eventually("us8 generated", || async {
        let cr = llsds.get("us8-production").await.ok()?;
        let generated = cr
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .any(|c| c.type_ == "DeploymentUpdated" && c.status == "True");
        generated.then_some(cr)
    })?;
    let storage = us8
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "StorageReady")
        .ok_or("no StorageReady")?;
    assert_eq!(
        (storage.status.as_str(), storage.reason.as_str()),
        ("False", "StorageNotBound")
    );

    let rt = &env.rt;
    rt.block_on(
        Api::<NetworkPolicy>::namespaced(env.client.clone(), ns)
            .get("us5-networking-network-policy"),
    )?;
    rt.block_on(Api::<Ingress>::namespaced(env.client.clone(), ns).get("us5-networking-ingress"))?;
    // Named by content (`<name>-ca-bundle-<hash>`, `<name>-derived-<hash>`).
    let named = |names: Vec<String>, prefix: &str| {
        names
            .into_iter()
            .find(|n| n.starts_with(prefix))
            .ok_or_else(|| format!("no object named {prefix}<hash>"))
    };
    let config_maps = rt.block_on(
        Api::<ConfigMap>::namespaced(env.client.clone(), ns).list_metadata(&Default::default()),
    )?;
    let bundle = named(
        config_maps.items.iter().map(|c| c.name_any()).collect(),
        "us5-networking-ca-bundle-",
    )?;
    // Both ConfigMaps' certificates, in the one bundle.
    let trusted = rt.block_on(Api::<ConfigMap>::namespaced(env.client.clone(), ns).get(&bundle))?;
    let trusted: String = trusted.data.unwrap_or_default().into_values().collect();
    let flat = |pem: &str| pem.split_whitespace().collect::<String>();
    assert!(
        flat(&trusted).contains(&flat(&corporate)) && flat(&trusted).contains(&flat(&cluster)),
        "{trusted}"
    );
    rt.block_on(
        Api::<HorizontalPodAutoscaler>::namespaced(env.client.clone(), ns)
            .get("us8-production-hpa"),
    )?;
    rt.block_on(
        Api::<k8s_openapi::api::policy::v1::PodDisruptionBudget>::namespaced(
            env.client.clone(),
            ns,
        )
        .get("us8-production-pdb"),
    )?;
    let secrets = Api::<Secret>::namespaced(env.client.clone(), ns);
    let derived = named(
        rt.block_on(secrets.list_metadata(&Default::default()))?
            .items
            .iter()
            .map(|s| s.name_any())
            .collect(),
        "us8-production-derived-",
    )?;
    let derived = rt.block_on(secrets.get(&derived))?;
    assert!(derived.data.unwrap().contains_key("storage-sql-password"));
    let d =
        rt.block_on(Api::<Deployment>::namespaced(env.client.clone(), ns).get("us5-networking"))?;
    let config = d.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0]
        .config_map
        .clone()
        .unwrap()
        .name;
    let cm = rt.block_on(Api::<ConfigMap>::namespaced(env.client.clone(), ns).get(&config))?;
    assert!(cm.data.unwrap()["config.yaml"].contains("tls_certfile: /etc/llama-stack-tls/tls.crt"));
    let events =
        rt.block_on(Api::<Event>::namespaced(env.client.clone(), ns).list(&ListParams::default()))?;
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reporting_controller.as_deref() == Some("llama-stack-operator")),
        "Events are published"
    );

    // Every write was the ServiceAccount's, none was refused, and no secret value was logged.
    let writes = env.plane.audit_writes(SA_USER).map_err(|e| e.to_string())?;
    let refused: Vec<String> = writes
        .iter()
        .filter(|w| w["responseStatus"]["code"] == 403)
        .map(|w| format!("{} {}", w["verb"], w["objectRef"]["resource"]))
        .collect();
    assert!(refused.is_empty(), "forbidden: {refused:?}");
    assert!(
        writes
            .iter()
            .any(|w| w["objectRef"]["resource"] == "deployments")
    );
    // Every request names the operator, so audit logs and API Priority and Fairness can.
    let agent = concat!("llama-stack-operator/", env!("CARGO_PKG_VERSION"));
    let anonymous: Vec<String> = writes
        .iter()
        .filter(|w| w["userAgent"] != agent)
        .map(|w| {
            format!(
                "{} {} by {}",
                w["verb"], w["objectRef"]["resource"], w["userAgent"]
            )
        })
        .collect();
    assert!(
        anonymous.is_empty(),
        "writes without the operator's User-Agent: {anonymous:?}"
    );
    for (id, log) in env.full_logs()? {
        // Read the right files: every process logs its start.
        assert!(log.contains("starting"), "{id} logged nothing:\n{log}");
        for secret in ["tok-not-logged", "s3cret"] {
            assert!(!log.contains(secret), "a secret value reached {id}'s log");
        }
        assert!(!log.contains("forbidden"), "{id}:\n{log}");
    }
    Ok(())
}

fn metrics_and_health_are_served(env: &Env) -> Result<(), Failed> {
    let leader = {
        let ops = env.operators.lock().map_err(|e| e.to_string())?;
        ops.iter()
            .find(|o| o.identity == "operator-a")
            .ok_or("no operator-a")?
            .process
            .metrics
            .clone()
    };
    let http = client_trusting(&env.metrics_tls.ca_pem)?;
    let fetch = |path: &str, token: Option<&str>| {
        let mut request = http.get(format!("{leader}{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    };
    let send = |request: reqwest::RequestBuilder| -> Result<(u16, String, String), Failed> {
        env.rt.block_on(async {
            let response = request.send().await?;
            let challenge = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            Ok((
                response.status().as_u16(),
                challenge,
                response.text().await?,
            ))
        })
    };
    // Probes need no token; /metrics does, and one the API server allows.
    let get = |path: &str| -> Result<(u16, String), Failed> {
        let (code, _, body) = send(fetch(path, None))?;
        Ok((code, body))
    };
    let (code, challenge, body) = send(fetch("/metrics", None))?;
    assert_eq!((code, challenge.as_str()), (401, "Bearer"), "{body}");
    let (code, _, body) = send(fetch("/metrics", Some("not-a-token")))?;
    assert_eq!(code, 401, "{body}");
    let (code, _, body) = send(fetch("/metrics", Some(&env.stranger_token)))?;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("system:serviceaccount:monitoring:stranger may not get /metrics"),
        "{body}"
    );
    assert!(!body.contains("llso_"), "{body}");
    let scrape = || -> Result<String, Failed> {
        let (code, _, body) = send(fetch("/metrics", Some(&env.scraper_token)))?;
        if code != 200 {
            return Err(format!("/metrics with the scraper's token: {code} {body}").into());
        }
        Ok(body)
    };
    assert_eq!(get("/healthz")?, (200, "ok".to_owned()));
    assert_eq!(get("/readyz")?, (200, "ok".to_owned()));
    // Series appear once something was reconciled.
    env.eventually(
        "reconciles, rollouts and generations are counted",
        || async {
            let text = fetch("/metrics", Some(&env.scraper_token))
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            let counted = |series: &str| {
                text.lines()
                    .filter(|l| l.starts_with(series))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum::<f64>()
            };
            (text.contains("llso_reconciles_total{result=\"success\"")
                && counted("llso_rollouts_total") > 0.0
                && counted("llso_config_generations_total") > 0.0)
                .then_some(())
        },
    )?;
    let text = scrape()?;
    for series in [
        "llso_reconciles_total",
        "llso_reconcile_duration_seconds_bucket",
        "llso_config_generations_total",
        "llso_rollouts_total",
        "llso_registry_requests_total",
        "llso_registry_errors_total",
        "llso_registry_request_duration_seconds_bucket",
        "llso_resolver_manifest_cache_hits_total",
        "llso_resolver_manifest_cache_misses_total",
        "llso_resolver_config_cache_hits_total",
        "llso_resolver_config_cache_misses_total",
    ] {
        assert!(
            text.contains(series),
            "{series} missing from /metrics:\n{text}"
        );
    }
    // The stacks the leader's cache holds, by phase.
    let stacks: f64 = text
        .lines()
        .filter(|l| l.starts_with("llso_stacks{phase="))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        stacks >= 1.0,
        "llso_stacks counts the reconciled stacks:\n{text}"
    );
    // No sample's rollout is stuck (an empty family is not printed at all).
    assert!(!text.contains("llso_rollouts_stuck{"), "{text}");
    metrics_are_served_over_https_only(env, &leader)
}

/// The metrics server answers nothing in plain HTTP, and serves a rotated certificate without a
/// restart.
fn metrics_are_served_over_https_only(env: &Env, url: &str) -> Result<(), Failed> {
    let plain = url.replacen("https://", "http://", 1);
    let answered = env.rt.block_on(async {
        reqwest::get(format!("{plain}/healthz"))
            .await
            .map(|r| r.status().as_u16())
    });
    assert!(
        !matches!(answered, Ok(200)),
        "plain HTTP answered: {answered:?}"
    );
    let new_ca = env.metrics_tls.issue()?;
    let renewed = client_trusting(&new_ca)?;
    env.eventually("the rotated certificate is served", || async {
        let response = renewed.get(format!("{url}/healthz")).send().await.ok()?;
        (response.status() == 200).then_some(())
    })?;
    let old = client_trusting(&env.metrics_tls.ca_pem)?;
    let stale = env
        .rt
        .block_on(async { old.get(format!("{url}/healthz")).send().await });
    assert!(
        stale.is_err(),
        "a client trusting only the previous CA still connects"
    );
    Ok(())
}

/// Runs last: it stops the leader.
/// A distribution name added to the operator ConfigMap's `image-overrides` (or to the OGX
/// operator's `ogx-operator-config`) is accepted by admission on a replica that does not run the
/// controller, without a restart; removed, it is refused again. (The controller follows the ConfigMap only while it
/// leads, so a webhook that learnt names only from it, or only at start, refused them.)
fn admission_follows_the_operator_config_map(env: &Env) -> Result<(), Failed> {
    let ns = "admission";
    let (key, value) = ADMISSION_LABEL;
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {key: value}}}))?;
    // Server-side dry runs: admission runs, nothing is stored (so a probe that passes before the
    // webhook is called cannot make the next one fail as AlreadyExists). v1alpha2 only: this
    // cluster's CRD converts through a webhook Service it cannot reach.
    let create = |name: &str, distribution: &str| {
        let manifest = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": name, "namespace": ns}, "spec": {"distribution": {"name": distribution}}});
        support::operator::kubectl_status(
            &env.plane,
            &["create", "--dry-run=server", "-f", "-"],
            Some(&manifest.to_string()),
        )
    };
    // The API server calls a new webhook configuration only after a moment. (A denial with
    // causes reads `… is invalid: spec.distribution.name: unknown distribution "startr" …`.)
    let last = Mutex::new(String::new());
    env.eventually("the webhook-only replica validates", || async {
        let (created, out, err) = create("probe", "startr");
        let refused = !created && err.contains("unknown distribution \"startr\"");
        if let Ok(mut last) = last.lock() {
            *last = format!("{out}{err}");
        }
        refused.then_some(())
    })
    .map_err(|e| {
        format!(
            "{}\nlast answer: {}",
            e.message().unwrap_or_default(),
            last.lock().map(|l| l.clone()).unwrap_or_default()
        )
    })?;
    let (created, _, refused) = create("acme", "acme-internal");
    assert!(!created, "an unknown name is accepted");
    assert!(
        refused.contains("spec.distribution.name") && refused.contains("acme-internal"),
        "the refusal names the field and the name: {refused}"
    );

    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), NS);
    let manager = PatchParams::apply("admission-test").force();
    let overrides = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "llama-stack-operator-config", "namespace": NS}, "data": data})
    };
    env.rt.block_on(config_maps.patch(
        "llama-stack-operator-config",
        &manager,
        &Patch::Apply(overrides(
            json!({"image-overrides": "acme-internal: 127.0.0.1:1/acme/stack:1.0\n"}),
        )),
    ))?;
    let started = Instant::now();
    env.eventually("the added name is accepted", || async {
        create("acme", "acme-internal").0.then_some(())
    })?;
    eprintln!("admission learnt the name after {:?}", started.elapsed());

    env.rt.block_on(config_maps.patch(
        "llama-stack-operator-config",
        &manager,
        &Patch::Apply(overrides(json!({}))),
    ))?;
    env.eventually("the removed name is refused again", || async {
        let (created, _, err) = create("acme-again", "acme-internal");
        (!created && err.contains("acme-internal")).then_some(())
    })?;

    // The OGX operator's ConfigMap, kept by an installation that replaces it, names images too.
    let ogx = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ogx-operator-config", "namespace": NS},
        "data": {"image-overrides": "acme-internal: 127.0.0.1:1/acme/stack:1.0\n"}});
    env.rt
        .block_on(config_maps.patch("ogx-operator-config", &manager, &Patch::Apply(ogx)))?;
    env.eventually("the name in ogx-operator-config is accepted", || async {
        create("acme-ogx", "acme-internal").0.then_some(())
    })?;
    env.rt
        .block_on(config_maps.delete("ogx-operator-config", &kube::api::DeleteParams::default()))?;
    env.eventually("refused again once it is deleted", || async {
        let (created, _, err) = create("acme-ogx-again", "acme-internal");
        (!created && err.contains("acme-internal")).then_some(())
    })?;
    Ok(())
}

fn the_standby_takes_over_when_the_leader_stops(env: &Env) -> Result<(), Failed> {
    let rt = &env.rt;
    assert_eq!(
        rt.block_on(env.holder()).as_deref(),
        Some("operator-a"),
        "the first replica still leads"
    );
    let standby_log = std::fs::read_to_string(env.plane.dir().join("operator-operator-b.log"))?;
    assert!(
        !standby_log.contains("became the leader"),
        "the standby never led:\n{standby_log}"
    );
    {
        let mut ops = env.operators.lock().map_err(|e| e.to_string())?;
        let a = ops
            .iter_mut()
            .find(|o| o.identity == "operator-a")
            .ok_or("no operator-a")?;
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(a.process.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let status = a.process.child.wait()?;
        assert!(status.success(), "a clean stop: {status}");
    }
    let started = Instant::now();
    env.eventually("operator-b leads", || async {
        (env.holder().await.as_deref() == Some("operator-b")).then_some(())
    })?;
    eprintln!(
        "take-over after {:?} (the lease was released)",
        started.elapsed()
    );
    let ns = "after-failover";
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    let cr: LlamaStackDistribution = serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "late"}, "spec": {"distribution": {"name": "starter"}}}),
    )?;
    let llsds: Api<LlamaStackDistribution> = Api::namespaced(env.client.clone(), ns);
    rt.block_on(llsds.create(&PostParams::default(), &cr))?;
    env.eventually("the new leader reconciles", || async {
        (llsds.get("late").await.ok()?.status?.phase == Some(DistributionPhase::Ready))
            .then_some(())
    })?;
    Ok(())
}

/// A replica started without `--operator-image` (deploy/ no longer sets it) reads its own Pod,
/// as its ServiceAccount may, and takes the image the Pod runs: an image rewritten by kustomize,
/// OLM or a mirror reaches the external-provider steps without a second setting.
fn the_operator_finds_its_own_image_in_its_pod(env: &Env) -> Result<(), Failed> {
    const IMAGE: &str = "mirror.example:5000/llso/operator:edited";
    env.apply(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llso-self-empty"}}),
    )?;
    env.apply(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llso-self", "namespace": NS},
        "spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "manager", "image": IMAGE, "securityContext":
                {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}))?;
    let kubeconfig = install_operator_rbac(&env.plane).map_err(|e| e.to_string())?;
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    // Its own Lease and an empty namespace: it never competes with the replicas under test.
    let _process = spawn_operator_in_pod(
        &env.plane,
        bin,
        "operator-self",
        &kubeconfig,
        "llso-self",
        &[
            "--leader-elect",
            "--lease-name=llso-self",
            "--watch-namespaces=llso-self-empty",
            "--log-format=json",
        ],
    )
    .map_err(|e| e.to_string())?;
    let log = env.plane.dir().join("operator-operator-self.log");
    env.eventually("the own image in the log", || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["message"] == "the operator's own image, from its Pod")
            .map(|l| l["image"].as_str().unwrap_or_default().to_owned())
            .filter(|image| image.starts_with("mirror.example:5000/llso/operator"))
    })
    .map_err(|e| {
        format!(
            "{e:?}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    })?;
    Ok(())
}

/// A namespaced install (`deploy/overlays/namespaced`: RoleBindings per watched namespace, no
/// cluster-wide grant) told to watch two namespaces, one of them without its RoleBindings: the
/// watches of the unbound namespace are refused at every list while the same kinds list fine
/// in the bound one, and `/healthz` fails naming the unbound namespace's watches (one healthy
/// sibling of a kind used to hide them, and the watcher's "list begins" counted as working).
/// Once the RoleBindings are there, it is healthy again without a restart.
fn a_namespaced_install_missing_a_binding_is_unhealthy_and_names_the_watch(
    env: &Env,
) -> Result<(), Failed> {
    const ACCOUNT: &str = "llso-namespaced";
    const BOUND: &str = "llama-stack";
    const UNBOUND: &str = "llso-unbound";
    for ns in [BOUND, UNBOUND] {
        env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    }
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": NS}}))?;
    // The overlay's own grants, for an account of this test's (the cluster-wide install's
    // account already holds ClusterRoleBindings), under names of their own.
    let overlay = format!("{}/deploy/overlays/namespaced", root());
    let rendered =
        kubectl(&env.plane, &["kustomize", &overlay], None).map_err(|e| e.to_string())?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&rendered).map_err(|e| e.to_string())?;
    let grants: Vec<Value> = docs
        .into_iter()
        .filter(|d| d["kind"] == "RoleBinding")
        .map(|mut d| {
            let name = format!(
                "{}-{ACCOUNT}",
                d["metadata"]["name"].as_str().unwrap_or_default()
            );
            d["metadata"]["name"] = json!(name);
            d["subjects"] = json!([{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NS}]);
            d
        })
        .collect();
    let in_bound = grants
        .iter()
        .filter(|d| d["metadata"]["namespace"] == BOUND)
        .count();
    if in_bound < 2 || !grants.iter().any(|d| d["metadata"]["namespace"] == NS) {
        return Err(format!("the namespaced overlay's RoleBindings moved: {grants:?}").into());
    }
    for grant in &grants {
        env.apply(grant.clone())?;
    }
    let token = kubectl(
        &env.plane,
        &["create", "token", ACCOUNT, "-n", NS, "--duration=1h"],
        None,
    )
    .map_err(|e| e.to_string())?;
    let kubeconfig = env
        .plane
        .kubeconfig_with_token(ACCOUNT, token.trim())
        .map_err(|e| e.to_string())?;
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    let watch = format!("--watch-namespaces={BOUND},{UNBOUND}");
    let process = spawn_operator(
        &env.plane,
        bin,
        "namespaced",
        &kubeconfig,
        &[&watch, "--watch-stuck-after=5", "--log-format=json"],
    )
    .map_err(|e| e.to_string())?;
    let log = env.plane.dir().join("operator-namespaced.log");
    let healthz = format!("{}/healthz", process.metrics);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;
    let probe = || async {
        let response = http.get(&healthz).send().await.ok()?;
        Some((response.status().as_u16(), response.text().await.ok()?))
    };
    let with_log = |e: Failed| -> Failed {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        format!("{}\n{}", e.message().unwrap_or_default(), tail.join("\n")).into()
    };
    // Each watch is named once it has failed for the bound; they start a moment apart, so the
    // first 503 may name some of them only: wait for the stacks' own watch to be named.
    let named = format!("LlamaStackDistribution for llama-stack-operator in namespace {UNBOUND}: ");
    let unhealthy = env
        .eventually(
            "/healthz fails for the unbound namespace, naming its stacks' watch",
            || async {
                probe()
                    .await
                    .filter(|(code, body)| *code != 200 && body.contains(&named))
            },
        )
        .map_err(with_log)?;
    let (code, body) = unhealthy;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("forbidden"), "{body}");
    assert!(
        !body.contains(&format!("in namespace {BOUND}:")),
        "the bound namespace's watches work: {body}"
    );
    // The missing RoleBindings, as the overlay's comment says to add them.
    for grant in grants
        .iter()
        .filter(|d| d["metadata"]["namespace"] == BOUND)
    {
        let mut grant = grant.clone();
        grant["metadata"]["namespace"] = json!(UNBOUND);
        env.apply(grant)?;
    }
    env.eventually("/healthz passes once the namespace is bound", || async {
        probe().await.filter(|(code, _)| *code == 200)
    })
    .map_err(with_log)?;
    drop(process);
    Ok(())
}

/// The webhook never blocks the cluster: a webhook-only replica serving the webhooks as
/// `deploy/base` registers them (its `matchConditions` included) is stopped while a foreground
/// delete of an `OGXServer` waits on the garbage collector and an annotation is removed from
/// another; both complete with no replica answering (the collector's removal of
/// `foregroundDeletion` and the annotation's removal write no spec, so they are not sent), while
/// a spec change is still refused (failurePolicy Fail). Started again, it judges again.
fn a_foreground_delete_and_an_annotation_removal_complete_while_the_webhook_restarts(
    env: &Env,
) -> Result<(), Failed> {
    use llama_stack_operator::api::ogx::OGXServer;

    const NS_LABEL: (&str, &str) = ("llso-test/admission", "operator-d");
    let ns = "webhook-restart";
    let (key, value) = NS_LABEL;
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": {key: value}}}))?;
    let kubeconfig = install_operator_rbac(&env.plane).map_err(|e| e.to_string())?;
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_llama-stack-operator"));
    let cert = ServingCert::new()?;
    let addr = format!("127.0.0.1:{}", free_port().map_err(|e| e.to_string())?);
    let start = || {
        spawn_operator_with_webhooks(
            &env.plane,
            bin,
            "operator-d",
            &kubeconfig,
            &addr,
            cert.dir.path(),
            &["--no-controller", "--log-format=json"],
        )
        .map_err(|e| Failed::from(e.to_string()))
    };
    let webhook = start()?;
    // The shipped webhooks, for this namespace only, called at this replica.
    let mut config = shipped_webhooks(&format!("https://{addr}/validate"), &cert.ca_pem)
        .map_err(|e| e.to_string())?;
    config["metadata"]["name"] = json!("llama-stack-operator-d");
    for hook in config["webhooks"].as_array_mut().ok_or("no webhooks")? {
        hook["namespaceSelector"] = json!({"matchLabels": {key: value}});
    }
    env.apply(config)?;
    let servers: Api<OGXServer> = Api::namespaced(env.client.clone(), ns);
    let server = |name: &str, annotations: Value| {
        json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations},
            "spec": {"distribution": {"name": "starter"}}})
    };
    // The API server picks the configuration up on its own time: until it calls the replica,
    // a name the catalog does not hold is admitted.
    env.eventually("the webhook judging this namespace", || async {
        let probe: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1",
            "kind": "OGXServer", "metadata": {"name": "probe"},
            "spec": {"distribution": {"name": "not-a-distribution"}}}))
        .ok()?;
        let dry = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        match servers.create(&dry, &probe).await {
            Err(kube::Error::Api(s)) if s.message.contains("denied the request") => Some(()),
            _ => None,
        }
    })?;
    env.apply(server("doomed", json!({})))?;
    env.apply(server("kept", json!({"example.com/owner": "team-b"})))?;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    env.eventually(
        "the doomed server's Deployment, blocking its owner's deletion",
        || async {
            let deployment = deployments.get_opt("doomed").await.ok()??;
            deployment
                .owner_references()
                .iter()
                .any(|o| o.kind == "OGXServer" && o.block_owner_deletion == Some(true))
                .then_some(())
        },
    )?;
    drop(webhook);
    // Both in flight with no replica answering.
    kubectl(
        &env.plane,
        &[
            "delete",
            "ogxserver",
            "doomed",
            "-n",
            ns,
            "--cascade=foreground",
            "--wait=false",
        ],
        None,
    )
    .map_err(|e| e.to_string())?;
    kubectl(
        &env.plane,
        &[
            "annotate",
            "ogxserver",
            "kept",
            "-n",
            ns,
            "example.com/owner-",
        ],
        None,
    )
    .map_err(|e| format!("the annotation's removal with the webhook down: {e}"))?;
    env.eventually(
        "the foreground delete done by the garbage collector",
        || async {
            servers
                .get_opt("doomed")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )?;
    let kept = env.rt.block_on(servers.get("kept"))?;
    assert!(
        !kept.annotations().contains_key("example.com/owner"),
        "{:?}",
        kept.annotations()
    );
    let spec_change = json!({"spec": {"workload": {"replicas": 2}}});
    let patch = || {
        env.rt
            .block_on(servers.patch("kept", &PatchParams::default(), &Patch::Merge(&spec_change)))
    };
    match patch() {
        Err(kube::Error::Api(s)) if s.message.contains("failed calling webhook") => {}
        other => {
            return Err(format!(
                "with the webhook down a spec change must be refused (failurePolicy Fail), got {other:?}"
            )
            .into());
        }
    }
    let _webhook = start()?;
    env.eventually("the restarted webhook admitting a spec change", || async {
        servers
            .patch("kept", &PatchParams::default(), &Patch::Merge(&spec_change))
            .await
            .ok()
            .map(|_| ())
    })?;
    Ok(())
}

/// The OGX operator's adoption annotations, run by the operator process under its own
/// ServiceAccount and the RBAC the install grants: the volume detached, labelled and mounted; the
/// Service taken once the server's Pod is available; the old resource deleted (the guide's last
/// step) and then the annotations removed: the volume found again by its labels (a list of
/// claims) and the Service kept by the server at the same address, serving its Pods (it used to
/// be handed back to the deleted stack, selecting Pods nobody makes). The API server runs OpenShift's
/// OwnerReferencesPermissionEnforcement: every owner reference the operator sets or changes needs
/// the grants it checks (`update` on `ogxservers/finalizers`, `delete` on the object). A verb
/// missing from the RBAC fails the reconcile, so the conditions below never come.
fn adoption_runs_on_the_operators_own_rbac(env: &Env) -> Result<(), Failed> {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
    use llama_stack_operator::api::ogx::OGXServer;

    let ns = "adoption";
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    // A volume for the old stack's claim (the cluster has no provisioner): without one, no Pod
    // that mounts it is scheduled, and the new server, never available, would never take the
    // old address.
    env.apply(
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "adoption-old"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
            "claimRef": {"namespace": ns, "name": "old-pvc"},
            "hostPath": {"path": "/tmp/llso-adoption-old", "type": "DirectoryOrCreate"}}}),
    )?;
    env.apply(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "old", "namespace": ns},
        "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {}}}}),
    )?;
    let rt = &env.rt;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), ns);
    env.eventually("the old stack's volume", || async {
        claims.get_opt("old-pvc").await.ok()?.map(|_| ())
    })?;
    env.apply(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
        "metadata": {"name": "new", "namespace": ns,
            "annotations": {"ogx.io/adopt-storage": "old", "ogx.io/adopt-networking": "old"}},
        "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {}}}}))?;
    let servers: Api<OGXServer> = Api::namespaced(env.client.clone(), ns);
    let said = |type_: &'static str, reason: &'static str| {
        let servers = servers.clone();
        async move {
            let status = serde_json::to_value(servers.get("new").await.ok()?.status).ok()?;
            status["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == type_ && c["reason"] == reason)
                .then_some(())
        }
    };
    env.eventually("the volume adopted", || {
        said("StorageAdopted", "StorageAdopted")
    })?;
    env.eventually("the Service adopted", || {
        said("NetworkingAdopted", "NetworkingAdopted")
    })?;
    let claim = rt.block_on(claims.get("old-pvc"))?;
    assert_eq!(
        claim
            .labels()
            .get("ogx.io/adopted-from")
            .map(String::as_str),
        Some("old")
    );
    let mounted = |deployment: Deployment| -> Vec<String> {
        deployment
            .spec
            .and_then(|s| s.template.spec)
            .and_then(|p| p.volumes)
            .into_iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.map(|c| c.claim_name))
            .collect()
    };
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    assert_eq!(mounted(rt.block_on(deployments.get("new"))?), ["old-pvc"]);

    // The documented order: the old resource goes once the server has its objects (kept, it
    // would resume when no longer named).
    kubectl(
        &env.plane,
        &["delete", "llsd", "old", "-n", ns, "--wait=true"],
        None,
    )?;
    let removed = json!({"metadata": {"annotations": {"ogx.io/adopt-storage": null, "ogx.io/adopt-networking": null}}});
    rt.block_on(servers.patch("new", &PatchParams::default(), &Patch::Merge(&removed)))?;
    env.eventually("the annotation's removal said", || {
        said("NetworkingAdopted", "AdoptionAnnotationRemoved")
    })?;
    // Kept, never deleted: its address stays, and it selects the server's Pods.
    let services: Api<Service> = Api::namespaced(env.client.clone(), ns);
    let kept = rt.block_on(services.get("old-service"))?;
    let server_uid = rt
        .block_on(servers.get("new"))?
        .metadata
        .uid
        .unwrap_or_default();
    assert!(
        kept.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && o.uid == server_uid),
        "{:?}",
        kept.metadata.owner_references
    );
    assert_eq!(
        kept.spec.and_then(|s| s.selector).unwrap_or_default()["app.kubernetes.io/instance"],
        "new"
    );
    assert_eq!(
        mounted(rt.block_on(deployments.get("new"))?),
        ["old-pvc"],
        "found again by its labels"
    );
    Ok(())
}

/// The move in place of docs/ogx-server.md, step by step, by the operator process under its own
/// RBAC, on an API server that enforces owner-reference permissions and with the garbage
/// collector running: `convert` applied, the OGXServer gets every object (the volume included),
/// the LlamaStackDistribution is deleted, and nothing of the server's goes with it. Changing the
/// owner of a Deployment or a claim needs `delete` on it (OwnerReferencesPermissionEnforcement);
/// the audit log shows the operator never used it.
fn the_documented_move_keeps_the_volume_on_the_operators_own_rbac(env: &Env) -> Result<(), Failed> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;

    let ns = "moving";
    env.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    env.apply(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "kept", "namespace": ns},
        "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {}}}}),
    )?;
    let rt = &env.rt;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    env.eventually("the stack's volume and Deployment", || async {
        claims.get_opt("kept-pvc").await.ok()??;
        deployments.get_opt("kept").await.ok()?.map(|_| ())
    })?;
    let claim_uid = rt.block_on(claims.get("kept-pvc"))?.metadata.uid;
    // Step 1: convert the stored object, apply what it prints.
    let stored = kubectl(
        &env.plane,
        &["get", "llsd", "kept", "-n", ns, "-o", "yaml"],
        None,
    )?;
    let file = env.plane.dir().join("kept.yaml");
    std::fs::write(&file, stored)?;
    let bin = env!("CARGO_BIN_EXE_llama-stack-operator");
    let converted = std::process::Command::new(bin)
        .args([
            "convert",
            "-f",
            &file.to_string_lossy(),
            "--to",
            "ogx.io/v1beta1",
        ])
        .output()?;
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stderr)
    );
    let mut server: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&converted.stdout))?;
    server["metadata"] = json!({"name": "kept", "namespace": ns});
    kubectl(
        &env.plane,
        &["apply", "--server-side", "-f", "-"],
        Some(&server.to_string()),
    )?;
    // Step 2: the OGXServer has the stack's objects.
    let controlled_by_server = |meta: &kube::api::ObjectMeta| {
        meta.owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && o.kind == "OGXServer")
    };
    env.eventually("the Deployment and the volume the OGXServer's", || async {
        let claim = claims.get("kept-pvc").await.ok()?;
        let deployment = deployments.get("kept").await.ok()?;
        (controlled_by_server(&claim.metadata) && controlled_by_server(&deployment.metadata))
            .then_some(())
    })?;
    // Step 3: the LlamaStackDistribution deleted; the garbage collector gets its turn.
    kubectl(
        &env.plane,
        &["delete", "llsd", "kept", "-n", ns, "--wait=true"],
        None,
    )?;
    std::thread::sleep(Duration::from_secs(5));
    let claim = rt.block_on(claims.get("kept-pvc"))?;
    assert_eq!(claim.metadata.uid, claim_uid);
    assert!(
        claim.metadata.deletion_timestamp.is_none(),
        "the volume stays"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), ns);
    let going: Vec<String> = rt
        .block_on(config_maps.list(&ListParams::default()))?
        .items
        .into_iter()
        .filter(|c| c.metadata.deletion_timestamp.is_some())
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(going.is_empty(), "{going:?}");
    assert!(rt.block_on(deployments.get_opt("kept"))?.is_some());
    // The grants OwnerReferencesPermissionEnforcement needs were never used to delete.
    let deletes: Vec<Value> = env
        .plane
        .audit_writes(SA_USER)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|w| w["verb"] == "delete")
        .filter(|w| {
            ["persistentvolumeclaims", "deployments"]
                .contains(&w["objectRef"]["resource"].as_str().unwrap_or_default())
        })
        .collect();
    assert!(deletes.is_empty(), "the operator deleted {deletes:?}");
    Ok(())
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "samples_reconcile_as_the_operators_own_service_account",
                samples_reconcile_as_the_operators_own_service_account,
            ),
            (
                "metrics_and_health_are_served",
                metrics_and_health_are_served,
            ),
            (
                "admission_follows_the_operator_config_map",
                admission_follows_the_operator_config_map,
            ),
            (
                "the_operator_finds_its_own_image_in_its_pod",
                the_operator_finds_its_own_image_in_its_pod,
            ),
            (
                "the_documented_move_keeps_the_volume_on_the_operators_own_rbac",
                the_documented_move_keeps_the_volume_on_the_operators_own_rbac,
            ),
            (
                "adoption_runs_on_the_operators_own_rbac",
                adoption_runs_on_the_operators_own_rbac,
            ),
            (
                "a_namespaced_install_missing_a_binding_is_unhealthy_and_names_the_watch",
                a_namespaced_install_missing_a_binding_is_unhealthy_and_names_the_watch,
            ),
            (
                "a_foreground_delete_and_an_annotation_removal_complete_while_the_webhook_restarts",
                a_foreground_delete_and_an_annotation_removal_complete_while_the_webhook_restarts,
            ),
            (
                "the_road_keeps_every_address_and_volume_on_the_real_api_server",
                road::the_road_keeps_every_address_and_volume_on_the_real_api_server,
            ),
        ]),
        "the cluster and two operator processes",
        || start().map_err(|e| e.message().unwrap_or_default().to_owned()),
        Some((
            "the_standby_takes_over_when_the_leader_stops",
            the_standby_takes_over_when_the_leader_stops,
        )),
    )
}
