//! The operator's own image, which runs the external-provider steps in server Pods. Read from the
//! operator's own Pod (`POD_NAME`, `POD_NAMESPACE`): the image its container was started from,
//! pinned to the digest the node pulled, so that a kustomize `images:` edit, an OLM or mirror
//! rewrite of the Deployment reaches the init containers without a second setting to keep in
//! step. `--operator-image` (`OPERATOR_IMAGE`) still wins when set.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use llama_stack_resolver::ImageRef;

/// The container of the operator in its Pod (`deploy/base/deployment.yaml`).
pub const CONTAINER: &str = "manager";

/// The image the operator's container runs: the container named [`CONTAINER`], else the Pod's
/// only container; pinned to the digest of its status `imageID` when the node reported one.
pub fn image_of(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let container = spec
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)
        .or_else(|| (spec.containers.len() == 1).then(|| &spec.containers[0]))?;
    let image = container.image.clone().filter(|i| !i.is_empty())?;
    let digest = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|statuses| statuses.iter().find(|s| s.name == container.name))
        .and_then(|s| {
            s.image_id
                .rsplit_once("@sha256:")
                .map(|(_, hex)| hex.to_owned())
        })
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    match (ImageRef::parse(&image), digest) {
        (Ok(parsed), Some(hex)) => Some(format!("{}@sha256:{hex}", parsed.name())),
        _ => Some(image),
    }
}

/// Reads the operator's own Pod; `None` (logged) when it cannot be read: outside a cluster, or
/// without `get` on it.
pub async fn from_own_pod(client: &kube::Client, namespace: &str, name: &str) -> Option<String> {
    match Api::<Pod>::namespaced(client.clone(), namespace)
        .get(name)
        .await
    {
        Ok(pod) => image_of(&pod),
        Err(e) => {
            tracing::warn!(pod = %format!("{namespace}/{name}"), error = %e, "cannot read the operator's own Pod for its image; external providers need --operator-image");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value, statuses: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": spec, "status": {"containerStatuses": statuses}}))
            .unwrap()
    }

    #[test]
    fn the_manager_containers_image_pinned_to_what_the_node_pulled() {
        let hex = "a".repeat(64);
        let edited = pod(
            json!({"containers": [{"name": "sidecar", "image": "proxy:1"},
                                  {"name": "manager", "image": "mirror.corp:5000/llso/operator:0.2.0"}]}),
            json!([{"name": "manager", "image": "x", "imageID": format!("mirror.corp:5000/llso/operator@sha256:{hex}"),
                    "ready": true, "restartCount": 0}]),
        );
        assert_eq!(
            image_of(&edited).unwrap(),
            format!("mirror.corp:5000/llso/operator@sha256:{hex}")
        );
        // No digest reported yet (or a runtime's own id format): the image as written.
        let starting = pod(
            json!({"containers": [{"name": "manager", "image": "ghcr.io/llamastack/llama-stack-operator:0.1.0"}]}),
            json!([{"name": "manager", "image": "x", "imageID": "", "ready": false, "restartCount": 0}]),
        );
        assert_eq!(
            image_of(&starting).unwrap(),
            "ghcr.io/llamastack/llama-stack-operator:0.1.0"
        );
        let alone = pod(
            json!({"containers": [{"name": "op", "image": "op:1"}]}),
            json!([]),
        );
        assert_eq!(image_of(&alone).as_deref(), Some("op:1"));
        let ambiguous = pod(
            json!({"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}),
            json!([]),
        );
        assert_eq!(image_of(&ambiguous), None);
    }
}
