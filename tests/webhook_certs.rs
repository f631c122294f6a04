//! Self-managed webhook certificates against a real kube-apiserver: the operator creates its CA
//! and serving certificate, injects the CA into the CRD and the ValidatingWebhookConfiguration,
//! and rotates the serving certificate and the CA without a failed request.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::sync::Arc;
use std::time::Duration as StdDuration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use llama_stack_operator::webhook::certs::{CertManager, Plan};
use llama_stack_operator::webhook::live_catalog::LiveCatalog;
use llama_stack_operator::webhook::{WebhookState, serve};
use llama_stack_resolver::Catalog;
use serde_json::json;
use support::control_plane::{ControlPlane, committed_crd, install_crd};
use time::{Duration, OffsetDateTime};

fn v1alpha1(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    support::kube_objects::llsd_api(client, ns, "llamastack.io/v1alpha1")
}

async fn create_v1alpha1(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let obj: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": name}, "spec": {"server": {"distribution": {"name": "starter"}}}}),
    )
    .map_err(kube::Error::SerdeError)?;
    v1alpha1(client, "default")
        .create(&PostParams::default(), &obj)
        .await
        .map(|_| ())
}

/// Every replica serves the certificate the Secret holds.
async fn assert_one_bundle(client: &kube::Client, replicas: &[&CertManager]) {
    let secret = Api::<Secret>::namespaced(client.clone(), "llama-stack-operator-system")
        .get("llama-stack-operator-webhook-certs")
        .await
        .unwrap();
    let data = secret.data.unwrap_or_default();
    let held = data
        .get("tls.crt")
        .map(|b| String::from_utf8_lossy(&b.0).into_owned());
    for replica in replicas {
        let served = std::fs::read_to_string(&replica.cert_file).unwrap();
        assert_eq!(
            Some(served),
            held,
            "{} serves another certificate than the Secret's",
            replica.cert_file.display()
        );
    }
}

#[test]
fn self_managed_certificates_are_created_injected_and_rotated() {
    let plane = ControlPlane::start().expect("control plane");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = plane.client().await.unwrap();
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "llama-stack-operator-system"}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let manager = CertManager {
            client: client.clone(),
            namespace: "llama-stack-operator-system".into(),
            secret_name: "llama-stack-operator-webhook-certs".into(),
            dns_names: vec!["localhost".into()],
            crd_name: "llamastackdistributions.llamastack.io".into(),
            webhook_configuration: "llama-stack-operator".into(),
            cert_file: cert_file.clone(),
            key_file: key_file.clone(),
        };
        // The certificate must exist before the server can start; the CRD and webhook
        // configuration may come later and get the bundle on the next reconcile.
        let now = OffsetDateTime::now_utc();
        // Two replicas start together (deploy/ runs two): both find no Secret and create one; the
        // one refused (409) reads again and serves the other's.
        // Each with a client of its own, connected, so that their reads go out together.
        let twin_dir = tempfile::tempdir().unwrap();
        let twin = CertManager {
            client: plane.client().await.unwrap(),
            cert_file: twin_dir.path().join("tls.crt"),
            key_file: twin_dir.path().join("tls.key"),
            ..manager.clone()
        };
        let secrets = Api::<Secret>::namespaced(client.clone(), "llama-stack-operator-system");
        for round in 0..5 {
            for replica in [&manager, &twin] {
                Api::<Namespace>::all(replica.client.clone()).get("llama-stack-operator-system").await.unwrap();
            }
            let (first, second) = tokio::join!(
                tokio::spawn({ let m = manager.clone(); async move { m.reconcile(now).await } }),
                tokio::spawn({ let m = twin.clone(); async move { m.reconcile(now).await } }),
            );
            let plans = [first.unwrap().expect("the first replica"), second.unwrap().expect("the second replica")];
            assert!(plans.contains(&Plan::Create), "{plans:?}");
            assert_one_bundle(&client, &[&manager, &twin]).await;
            if round < 4 {
                secrets.delete("llama-stack-operator-webhook-certs", &Default::default()).await.unwrap();
            }
        }
        let state = WebhookState { catalog: Arc::new(LiveCatalog::new(Catalog::embedded().unwrap())), client: None };
        let (server, addr, _task) = serve("127.0.0.1:0".parse().unwrap(), cert_file.clone(), key_file.clone(), state).await.unwrap();
        let mut crd = committed_crd().unwrap();
        let config = crd.spec.conversion.as_mut().and_then(|c| c.webhook.as_mut()).and_then(|w| w.client_config.as_mut()).unwrap();
        config.service = None;
        config.url = Some(format!("https://localhost:{}/convert", addr.port()));
        install_crd(&client, &crd).await.unwrap();
        let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({"metadata": {"name": "llama-stack-operator"},
            "webhooks": [{"name": "validate.llamastack.io", "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                "clientConfig": {"url": format!("https://localhost:{}/validate", addr.port())},
                "rules": [{"apiGroups": ["llamastack.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["llamastackdistributions"]}]}]})).unwrap();
        Api::<ValidatingWebhookConfiguration>::all(client.clone()).create(&PostParams::default(), &vwc).await.unwrap();
        assert!(create_v1alpha1(&client, "before-injection").await.is_err(), "without the CA bundle the API server cannot trust the webhook");

        assert_eq!(manager.reconcile(now).await.unwrap(), Plan::Keep);
        let secret = Api::<Secret>::namespaced(client.clone(), "llama-stack-operator-system").get("llama-stack-operator-webhook-certs").await.unwrap();
        let rv = secret.metadata.resource_version.clone();
        // The API server reads webhook configurations and CRDs asynchronously.
        let mut ok = false;
        for _ in 0..50 {
            if create_v1alpha1(&client, "after-injection").await.is_ok() {
                ok = true;
                break;
            }
            tokio::time::sleep(StdDuration::from_millis(200)).await;
        }
        assert!(ok, "the injected CA bundle must let the API server call the webhook");
        assert_eq!(manager.reconcile(now).await.unwrap(), Plan::Keep);
        let again = Api::<Secret>::namespaced(client.clone(), "llama-stack-operator-system").get("llama-stack-operator-webhook-certs").await.unwrap();
        assert_eq!(again.metadata.resource_version, rv, "a valid certificate is not rewritten");

        // Serving rotation (30 days before expiry): same CA, new certificate, no failed request.
        let later = now + Duration::days(340);
        assert_eq!(manager.reconcile(later).await.unwrap(), Plan::RotateServing);
        server.reload(&cert_file, &key_file).await.unwrap();
        for i in 0..10 {
            create_v1alpha1(&client, &format!("serving-rotated-{i}")).await.expect("requests keep working after a serving rotation");
        }
        // CA rotation: both CAs are trusted while the API server picks up the new bundle.
        let much_later = now + Duration::days(3300);
        assert_eq!(manager.reconcile(much_later).await.unwrap(), Plan::RotateCa);
        server.reload(&cert_file, &key_file).await.unwrap();
        for i in 0..10 {
            create_v1alpha1(&client, &format!("ca-rotated-{i}")).await.expect("requests keep working after a CA rotation");
        }
    });
}
