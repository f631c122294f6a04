//! What the server Pods need before they start, written first of the apply: the generated
//! config (immutable, created once and pruned), the derived Secret (compared by its data), the
//! ServiceAccount, the CA bundle (named by content) and the data volume (created, and only ever
//! grown).

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, ServiceAccount};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::write::{Indexed, sync_in};
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::owned_index::{Known, OwnedIndex};
use crate::core::builders::Desired;
use crate::core::decide::Intent;
use crate::core::observed::Observed;
use crate::core::stack::Stack;
use crate::naming::{self, FIELD_MANAGER};

/// Writes what the server Pods need before they start: the config, the derived Secret, the
/// ServiceAccount, the CA bundle and the data volume. Returns the volume's claim phase.
pub(in crate::controller) async fn what_the_pods_need(
    stack: &Stack<'_>,
    ctx: &Context,
    intent: &Intent,
    observed: &Observed,
    index: Option<Indexed<'_>>,
) -> Result<Option<String>, ApiError> {
    let desired = &intent.desired;
    // Every field named: an object added to `Desired` is written here or around the server, or
    // said to be written elsewhere.
    let Desired {
        config_map,
        deployment: _,
        service: _,
        service_account,
        pvc,
        ca_bundle,
        network_policy: _,
        ingress: _,
        route: _,
        hpa: _,
        pdb: _,
        derived_secret,
        service_monitor: _,
        prometheus_rule: _,
    } = desired;
    let (ns, uid, client) = (stack.namespace(), stack.uid(), &ctx.client);
    if let Some(cm) = config_map
        && create_config_map_once(&Api::namespaced(client.clone(), ns), &ctx.owned, cm).await?
    {
        ctx.metrics.config_generated();
    }
    if let Some(secret) = derived_secret {
        sync_derived_secret(&Api::<Secret>::namespaced(client.clone(), ns), secret).await?;
    }
    let sa_name = naming::managed_service_account_name(stack.name());
    sync_in::<ServiceAccount>(client, index, ns, &sa_name, service_account.as_ref(), uid).await?;
    // Named by content: a new bundle is a new object, the old one is pruned once no revision
    // that runs or may be returned to names it.
    if let Some(bundle) = ca_bundle {
        let name = bundle.name_any();
        sync_in::<ConfigMap>(client, index, ns, &name, Some(bundle), uid).await?;
    }
    // A volume taken over from another stack keeps its size: it was sized (and its class
    // chosen) for that stack, and a refused resize must not hold the server back.
    let grow = stack.adoption.claim.is_none();
    match pvc {
        Some(pvc) => {
            let api = Api::namespaced(client.clone(), ns);
            if let Some(reclaim) = &intent.reclaim {
                let name = pvc.name_any();
                api.patch(&name, &PatchParams::default(), &Patch::Merge(reclaim))
                    .await
                    .map_err(api_err(format!(
                        "take PersistentVolumeClaim {name} back from the OGXServer that took it"
                    )))?;
            }
            Ok(Some(
                sync_pvc(&api, pvc, observed.claim.as_ref(), grow).await?,
            ))
        }
        None => Ok(None),
    }
}

/// Creates the immutable generated ConfigMap unless it exists (same name = same content); the
/// watches of the owned ConfigMaps (`index`) say so without a read when they can.
async fn create_config_map_once(
    api: &Api<ConfigMap>,
    index: &OwnedIndex,
    cm: &ConfigMap,
) -> Result<bool, ApiError> {
    let name = cm.name_any();
    let namespace = cm.namespace().unwrap_or_default();
    match index.lookup("ConfigMap", &namespace, &name, None) {
        Known::Present(_) => return Ok(false),
        Known::Absent { .. } => {}
        Known::Unknown => {
            let found = api
                .get_opt(&name)
                .await
                .map_err(api_err(format!("read ConfigMap {name}")))?;
            if found.is_some() {
                return Ok(false);
            }
        }
    }
    match api.create(&PostParams::default(), cm).await {
        Ok(_) => Ok(true),
        // Created since the watch last said (or by a reconcile on another cache): the same
        // content under the same name.
        Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
            Ok(false)
        }
        Err(source) => Err(api_err(format!("create ConfigMap {name}"))(source)),
    }
}

/// Applies the derived Secret when its data differs from what is stored (it carries no desired
/// hash: a hash of a password in metadata would invite guessing).
async fn sync_derived_secret(api: &Api<Secret>, desired: &Secret) -> Result<(), ApiError> {
    let name = desired.name_any();
    let ns = desired.namespace().unwrap_or_default();
    let existing = api
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read Secret {ns}/{name}")))?;
    if existing.and_then(|s| s.data) != desired.data {
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(desired),
        )
        .await
        .map_err(api_err(format!("apply Secret {ns}/{name}")))?;
    }
    Ok(())
}

/// Creates the data PVC unless it exists (`existing`, as gathered), or grows it when `grow`; a
/// PVC is never shrunk (that would lose data, and the API server refuses it anyway). Returns the
/// claim's phase (`Pending` right after creation).
async fn sync_pvc(
    api: &Api<PersistentVolumeClaim>,
    desired: &PersistentVolumeClaim,
    existing: Option<&PersistentVolumeClaim>,
    grow: bool,
) -> Result<String, ApiError> {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let name = desired.name_any();
    let size = |p: &PersistentVolumeClaim| -> Option<Quantity> {
        p.spec
            .as_ref()?
            .resources
            .as_ref()?
            .requests
            .as_ref()?
            .get("storage")
            .cloned()
    };
    match existing {
        None => {
            api.create(&PostParams::default(), desired)
                .await
                .map_err(api_err(format!("create PersistentVolumeClaim {name}")))?;
            Ok("Pending".to_owned())
        }
        Some(current) => {
            let phase = current
                .status
                .as_ref()
                .and_then(|st| st.phase.clone())
                .unwrap_or_else(|| "Pending".to_owned());
            let (Some(have), Some(want)) = (
                size(current).and_then(|q| bytes(&q.0)),
                size(desired).and_then(|q| bytes(&q.0)),
            ) else {
                return Ok(phase);
            };
            // The API server lets a claim grow only once it is bound (and its class allows it).
            if grow && want > have && phase == "Bound" {
                let patch = json!({"spec": {"resources": {"requests": {"storage": size(desired).map(|q| q.0)}}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(api_err(format!("grow PersistentVolumeClaim {name}")))?;
            }
            Ok(phase)
        }
    }
}

/// Bytes of a storage quantity (`10Gi`, `500M`, `1073741824`); `None` when not understood.
fn bytes(quantity: &str) -> Option<u128> {
    let split = quantity
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return None,
    };
    Some((number * factor) as u128)
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn storage_quantities_compare_in_bytes() {
        assert_eq!(bytes("10Gi"), Some(10 * 1024 * 1024 * 1024));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("1073741824"), Some(1 << 30));
        assert!(bytes("1.5Gi") > bytes("1Gi"));
        assert_eq!(bytes("10Zz"), None);
    }
}
