//! How each kind of owned object is written: applied only when what the operator wants differs
//! from what it last applied (the [`DESIRED_HASH`] annotation), deleted when no longer wanted
//! (only if this resource controls it); immutable ConfigMaps created once and pruned; PVCs only
//! grown; the derived Secret compared by its data.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::drift::foreign_field;
use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::owned_index::{Known, OwnedIndex};
use crate::naming::{DESIRED_HASH, FIELD_MANAGER};

/// The parameters of a (non-apply) patch made by the field manager `manager`.
pub(in crate::controller) fn patch_by(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.to_owned()),
        ..PatchParams::default()
    }
}

/// What [`sync`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Change {
    /// Nothing to do.
    Unchanged,
    /// Created or updated.
    Applied,
    /// Deleted (no longer wanted).
    Deleted,
}

/// A namespaced built-in kind (every namespaced k8s-openapi type): what reading, listing and
/// patching it through an `Api` needs.
pub(in crate::controller) trait NamespacedKind:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
{
}

impl<K> NamespacedKind for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
{
}

/// What the apply does about one owned object, from what the watches know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Step {
    /// Read it, then decide as [`sync_from`] does.
    Read,
    /// Apply the desired object without reading: there is none.
    Apply,
    /// Nothing to do, without reading: it carries the desired hash and nobody changed it since
    /// the operator checked it; or it is not wanted and is absent or not the stack's.
    Keep,
}

/// The step for an object: `wanted` with its desired hash `want_hash`, or not wanted; `known`
/// what the watches say (for the stack's generation); `owner_uid` the stack's.
pub(in crate::controller) fn step(
    wanted: bool,
    want_hash: Option<&str>,
    known: Known,
    owner_uid: &str,
) -> Step {
    match (wanted, known) {
        (_, Known::Unknown) => Step::Read,
        (true, Known::Absent { .. }) => Step::Apply,
        (true, Known::Present(seen)) => {
            if want_hash.is_some_and(|h| seen.carries(h)) && seen.checked() {
                Step::Keep
            } else {
                Step::Read
            }
        }
        // Not in the watches: read once a generation, for an object of the stack's that lacks the
        // door's label (left by another operator, or stripped of it).
        (false, Known::Absent { confirmed: true }) => Step::Keep,
        (false, Known::Absent { confirmed: false }) => Step::Read,
        // Read before a delete: rare, and the read confirms what is deleted.
        (false, Known::Present(seen)) if seen.controlled_by(owner_uid) => Step::Read,
        (false, Known::Present(_)) => Step::Keep,
    }
}

/// What the watches of the owned kinds can answer for one stack's objects.
#[derive(Clone, Copy)]
pub(in crate::controller) struct Indexed<'a> {
    /// The watches' index.
    pub index: &'a OwnedIndex,
    /// The stack's generation.
    pub generation: Option<i64>,
    /// Nothing is recorded in the stack's status: no operator has reconciled it, so no object
    /// of its own can exist that the watches do not see (one without the door's label is what
    /// another operator, or an earlier owner, leaves). An object it does not want and the
    /// watches do not see is then absent without a read.
    pub untouched: bool,
}

/// What the watches' answer (`known`) comes to for a stack: an object it does not want
/// (`wanted` false), that the watches do not see, is confirmed absent without a read when the
/// stack is `untouched` (see [`Indexed::untouched`]).
pub(in crate::controller) fn for_stack(known: Known, wanted: bool, untouched: bool) -> Known {
    match known {
        Known::Absent { confirmed: false } if untouched && !wanted => {
            Known::Absent { confirmed: true }
        }
        known => known,
    }
}

/// [`sync_from`] for a namespaced built-in kind, reading the object only where `indexed` (the
/// watches of the owned kinds) cannot answer for it ([`step`]); `None` always reads (the caller
/// needs the object itself).
pub(in crate::controller) async fn sync_in<K: NamespacedKind + Serialize>(
    client: &kube::Client,
    indexed: Option<Indexed<'_>>,
    namespace: &str,
    name: &str,
    desired: Option<&K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError> {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let kind = K::kind(&());
    let Some(Indexed {
        index,
        generation,
        untouched,
    }) = indexed
    else {
        return sync(&api, &kind, name, desired, owner_uid).await;
    };
    let want_hash = desired.and_then(|d| d.annotations().get(DESIRED_HASH).map(String::as_str));
    let looked_up = index.lookup(&kind, namespace, name, generation);
    let known = for_stack(looked_up, desired.is_some(), untouched);
    if known != looked_up {
        index.confirmed_absent(&kind, namespace, name, generation);
    }
    let (change, object) = match step(desired.is_some(), want_hash, known, owner_uid) {
        Step::Keep => return Ok((Change::Unchanged, None)),
        Step::Apply => sync_from(&api, &kind, name, desired, None, owner_uid).await?,
        Step::Read => sync(&api, &kind, name, desired, owner_uid).await?,
    };
    // What was written, or read and found as wanted, is checked at its version; an object not
    // wanted is, once read (and deleted if it was the stack's), confirmed absent.
    match (&object, desired.is_some()) {
        (Some(object), true) if change != Change::Deleted => {
            let version = object.meta().resource_version.as_deref();
            index.checked(&kind, namespace, name, version);
        }
        (_, false) => index.confirmed_absent(&kind, namespace, name, generation),
        _ => {}
    }
    Ok((change, object))
}

/// [`sync_from`] after reading the object.
pub(in crate::controller) async fn sync<K>(
    api: &Api<K>,
    kind: &str,
    name: &str,
    desired: Option<&K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let existing = api
        .get_opt(name)
        .await
        .map_err(api_err(format!("read {kind} {name}")))?;
    sync_from(api, kind, name, desired, existing, owner_uid).await
}

/// Makes `name` in `api` (as `existing`, already read) match `desired`: applied when its desired
/// hash differs or another field manager changed a field the operator sets, deleted when `desired` is `None` and the object is controlled by `owner_uid`.
/// Returns the change and the object as the API server returned it (when it was read or written).
pub(in crate::controller) async fn sync_from<K>(
    api: &Api<K>,
    kind: &str,
    name: &str,
    desired: Option<&K>,
    existing: Option<K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    match desired {
        Some(desired) => {
            let want = desired.annotations().get(DESIRED_HASH);
            let body = serde_json::to_value(desired).map_err(|source| ApiError {
                action: format!("serialize {kind} {name}"),
                source: kube::Error::SerdeError(source),
            })?;
            if let Some(current) = &existing
                && current.annotations().get(DESIRED_HASH) == want
            {
                let managed = current.meta().managed_fields.as_deref().unwrap_or_default();
                let Some(drift) = foreign_field(managed, FIELD_MANAGER, &body) else {
                    return Ok((Change::Unchanged, existing));
                };
                tracing::info!(
                    kind,
                    name,
                    field = %drift.field,
                    manager = %drift.manager,
                    "reverting a change made outside the operator"
                );
            }
            let written = api
                .patch(
                    name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&body),
                )
                .await
                .map_err(api_err(format!("apply {kind} {name}")))?;
            Ok((Change::Applied, Some(written)))
        }
        None => {
            let controlled = existing
                .as_ref()
                .is_some_and(|o| crate::ownership::controlled_by(o.meta(), owner_uid));
            if !controlled {
                return Ok((Change::Unchanged, None));
            }
            api.delete(name, &DeleteParams::default())
                .await
                .map_err(api_err(format!("delete {kind} {name}")))?;
            Ok((Change::Deleted, None))
        }
    }
}

/// The merge patch that switches the Deployment `current` to the strategy `desired` asks for
/// (`Recreate` with a volume, else `RollingUpdate`), when they differ. The `rollingUpdate` the API
/// server defaulted must go in the same write as a switch to `Recreate`, or the update is refused
/// (`may not be specified when strategy type is 'Recreate'`); an apply cannot remove it (no field
/// manager owns a defaulted field, and a null in an apply only gives up ownership). And a switch
/// made by a patch stays owned by it, so the way back is a patch too. `None` when nothing has to
/// switch (at rest, always).
pub(in crate::controller) fn strategy_switch(
    desired: &k8s_openapi::api::apps::v1::Deployment,
    current: Option<&k8s_openapi::api::apps::v1::Deployment>,
) -> Option<Value> {
    let kind = |d: &k8s_openapi::api::apps::v1::Deployment| {
        let strategy = d.spec.as_ref().and_then(|s| s.strategy.as_ref());
        strategy
            .and_then(|s| s.type_.clone())
            .unwrap_or_else(|| "RollingUpdate".to_owned())
    };
    let wanted = kind(desired);
    (current.is_some_and(|c| kind(c) != wanted))
        .then(|| json!({"spec": {"strategy": {"type": wanted, "rollingUpdate": null}}}))
}

/// Creates the immutable generated ConfigMap unless it exists (same name = same content); the
/// watches of the owned ConfigMaps (`index`) say so without a read when they can.
pub(in crate::controller) async fn create_config_map_once(
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
pub(in crate::controller) async fn sync_derived_secret(
    api: &Api<Secret>,
    desired: &Secret,
) -> Result<(), ApiError> {
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
pub(in crate::controller) async fn sync_pvc(
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
    use super::{bytes, strategy_switch};
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    #[test]
    fn storage_quantities_compare_in_bytes() {
        assert_eq!(bytes("10Gi"), Some(10 * 1024 * 1024 * 1024));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("1073741824"), Some(1 << 30));
        assert!(bytes("1.5Gi") > bytes("1Gi"));
        assert_eq!(bytes("10Zz"), None);
    }

    #[test]
    fn a_switch_of_strategy_is_one_patch_that_drops_rolling_update() {
        let deployment = |strategy: serde_json::Value| -> Deployment {
            serde_json::from_value(
                json!({"spec": {"selector": {}, "template": {}, "strategy": strategy}}),
            )
            .unwrap()
        };
        let recreate = deployment(json!({"type": "Recreate"}));
        let rolling =
            deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}));
        let unset = deployment(json!({}));
        assert_eq!(
            strategy_switch(&recreate, Some(&rolling)),
            Some(json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}))
        );
        assert_eq!(
            strategy_switch(&unset, Some(&recreate)),
            Some(json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": null}}})),
            "back, once the volume is gone"
        );
        assert_eq!(
            strategy_switch(&recreate, Some(&recreate)),
            None,
            "already switched"
        );
        assert_eq!(
            strategy_switch(&recreate, None),
            None,
            "created as Recreate"
        );
        assert_eq!(
            strategy_switch(&unset, Some(&rolling)),
            None,
            "RollingUpdate is the default"
        );
    }
}

#[cfg(test)]
mod step_tests {
    use super::{Step, for_stack, step};
    use crate::controller::memory::owned_index::{Known, Seen};

    /// A stack no operator has reconciled yet has no object the watches miss; one whose status
    /// was written may (left by another operator), and is read once a generation.
    #[test]
    fn only_an_untouched_stack_skips_the_read_of_what_it_does_not_want() {
        let unconfirmed = Known::Absent { confirmed: false };
        let confirmed = Known::Absent { confirmed: true };
        let seen = Known::Present(Seen::new(Some("h"), Some("uid"), true));
        let cases = [
            // (known, wanted, untouched, comes to)
            (unconfirmed, false, true, confirmed),
            (unconfirmed, false, false, unconfirmed),
            (unconfirmed, true, true, unconfirmed),
            (Known::Unknown, false, true, Known::Unknown),
            (seen, false, true, seen),
        ];
        for (known, wanted, untouched, expected) in cases {
            assert_eq!(
                for_stack(known, wanted, untouched),
                expected,
                "{known:?} wanted={wanted} untouched={untouched}"
            );
        }
    }

    /// What the apply does about an object, by what the watches know of it: a read only where
    /// they cannot answer, or before a delete.
    #[test]
    fn an_object_is_read_only_where_the_watches_cannot_answer() {
        let ours = |hash, checked| Known::Present(Seen::new(Some(hash), Some("uid"), checked));
        let cases = [
            // (wanted, its hash, known, step)
            (true, Some("h"), Known::Unknown, Step::Read),
            (false, None, Known::Unknown, Step::Read),
            (
                true,
                Some("h"),
                Known::Absent { confirmed: false },
                Step::Apply,
            ),
            (true, Some("h"), ours("h", true), Step::Keep),
            // Changed since the operator checked it: read, for a drift check.
            (true, Some("h"), ours("h", false), Step::Read),
            // Another hash: read (and applied after it).
            (true, Some("h2"), ours("h", true), Step::Read),
            // A desired object without a hash is never taken as unchanged.
            (true, None, ours("h", true), Step::Read),
            (false, None, Known::Absent { confirmed: true }, Step::Keep),
            // Not confirmed at this generation: read once (an unlabelled object of the stack's).
            (false, None, Known::Absent { confirmed: false }, Step::Read),
            (false, None, ours("h", true), Step::Read),
            (
                false,
                None,
                Known::Present(Seen::new(None, Some("someone-else"), false)),
                Step::Keep,
            ),
            (
                false,
                None,
                Known::Present(Seen::new(None, None, false)),
                Step::Keep,
            ),
        ];
        for (wanted, hash, known, expected) in cases {
            assert_eq!(
                step(wanted, hash, known, "uid"),
                expected,
                "{wanted} {hash:?} {known:?}"
            );
        }
    }
}
