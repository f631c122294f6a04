//! The image the bench's `OGXServer`s run, served by a registry of the bench's own (issue 62,
//! item 5). The OGX operator embeds no configs: it reads a distribution's base config from the
//! labels of the image the name resolves to, and a sealed bench reaches no docker.io, so v0.14
//! made no Deployment at all. In the OGX mode the bench pushes an image labelled as OGX's own build
//! labels `ogxai/distribution-starter:1.3.0` (OGX 1.3.0's starter config as the one it runs,
//! `test-support`'s `ogx_starter_labels`) to a plain-HTTP registry on loopback, and both operators'
//! settings name it as the `starter` distribution: each reads the same base config from the same
//! registry, the way it would read a mirror's.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use support::llama_stack::OGX_STARTER_CONFIG;
use support::operator::OPERATOR_NAMESPACE;
use support::registries::{Registry, start_plain};

use super::support;

/// OGX 1.3.0's postgres-demo config, the image's second config file (never the one it runs).
const POSTGRES_DEMO_CONFIG: &str = include_str!("../../configs-ogx/postgres-demo/config.yaml");

/// The registry and the image it serves; the registry stops on drop.
pub struct StarterImage {
    registry: Registry,
    _storage: tempfile::TempDir,
    /// `127.0.0.1:<port>/ogxai/distribution-starter:1.3.0`
    reference: String,
}

impl StarterImage {
    /// Starts the registry and pushes the image.
    pub fn serve() -> Self {
        let storage = tempfile::tempdir().expect("the registry's storage");
        let registry = start_plain(storage.path(), "starter").expect("the starter's registry");
        let pinned = support::images::push_labelled(
            &registry.host,
            storage.path(),
            "ogxai/distribution-starter",
            "1.3.0",
            support::oci::ogx_starter_labels("1.3.0", OGX_STARTER_CONFIG, POSTGRES_DEMO_CONFIG),
        );
        println!("the OGXServers' starter image: {pinned}");
        let reference = format!("{}/ogxai/distribution-starter:1.3.0", registry.host);
        StarterImage {
            registry,
            _storage: storage,
            reference,
        }
    }

    /// Names the image as `starter` in this operator's settings (`image-overrides`), with the
    /// registry among `insecure-registries` (it serves plain HTTP).
    pub async fn name_for_this_operator(&self, client: &kube::Client) {
        create_settings(
            client,
            "llama-stack-operator-config",
            json!({
                "image-overrides": format!("starter: {}\n", self.reference),
                "insecure-registries": format!("- {}\n", self.registry.host),
            }),
        )
        .await;
    }

    /// Names the image as `starter` in the OGX operator's settings (`image-overrides` of its
    /// `ogx-operator-config`; it tries HTTPS, then plain HTTP, by itself).
    pub async fn name_for_the_peer(&self, client: &kube::Client) {
        create_settings(
            client,
            "ogx-operator-config",
            json!({"image-overrides": format!("starter: {}\n", self.reference)}),
        )
        .await;
    }
}

async fn create_settings(client: &kube::Client, name: &str, data: serde_json::Value) {
    let settings: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}, "data": data}))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .create(&PostParams::default(), &settings)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}
