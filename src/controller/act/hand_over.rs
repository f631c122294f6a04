//! A stack moved in place: the `OGXServer` of a LlamaStackDistribution's name serves it now, and
//! every object the LlamaStackDistribution controlled becomes the `OGXServer`'s before anything
//! else is written. Server-side apply re-owns what it writes, but not what is written once (the
//! data volume, the hash-named configs a rollback returns to) nor what is unchanged; left to the
//! LlamaStackDistribution, deleting it (the guide's last step) lets the garbage collector delete
//! them, the data volume first among them.
//!
//! Whether a stack moves in place is the core's decision
//! ([`crate::core::take_over::moves_in_place`]); the patch is pure ([`hand_over_patch`]);
//! [`hand_over`] lists and patches, and says so in an Event.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DynamicObject, ListParams, Patch};
use serde_json::{Value, json};

use super::Noted;
use super::write::patch_by;
use crate::api::conditions::Reason;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::kinds::NamespacedKind;
use crate::core::adoption::ADOPTED_FROM;
use crate::core::builders;
use crate::core::stack::Stack;
use crate::core::take_over::service_back_patch;
use crate::naming::{FIELD_MANAGER, ingress_name, service_name};
use crate::ownership::{controlled_by, handed_to, owned_by_stack};
use kube::ResourceExt as _;

/// The patch that hands `meta` to `owner`: `owner` its controller, the LlamaStackDistribution
/// that controlled it kept as a plain owner (so deleting the `OGXServer` before it, the undo of
/// the move, leaves every object to it, the data volume first; [`handed_to`]); carries the
/// resource version read, so a change in between fails the write.
pub(in crate::controller) fn hand_over_patch(meta: &ObjectMeta, owner: &OwnerReference) -> Value {
    json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "ownerReferences": handed_to(meta, owner),
    }})
}

/// Hands every object the LlamaStackDistribution of the stack's name controls to the stack's
/// owner (its `OGXServer`); the Deployment last, so an interrupted hand-over is found again. An
/// Event says how many objects changed hands.
pub(in crate::controller) async fn hand_over(
    stack: &Stack<'_>,
    ctx: &Context,
    noted: &mut Vec<Noted>,
) -> Result<(), ApiError> {
    let Some(owner) = stack.subject.owner.as_ref() else {
        return Ok(());
    };
    let handed = handed_over(stack, ctx, owner).await?;
    let note = format!(
        "{handed} objects of LlamaStackDistribution {} are this OGXServer's now; deleting the LlamaStackDistribution deletes none of them",
        stack.name()
    );
    noted.push(Noted {
        reason: Reason::MovedToOGXServer,
        note,
    });
    Ok(())
}

/// [`hand_over`]'s writes; returns how many objects changed hands.
async fn handed_over(
    stack: &Stack<'_>,
    ctx: &Context,
    owner: &OwnerReference,
) -> Result<usize, ApiError> {
    let to = Handing {
        stack,
        ctx,
        owner,
        listed: ListParams::default().labels(&stack.owned_by),
    };
    let mut handed = 0;
    handed += to.kind::<ConfigMap>("ConfigMaps").await?;
    handed += to.kind::<Secret>("Secrets").await?;
    handed += to.kind::<ServiceAccount>("ServiceAccounts").await?;
    handed += to
        .kind::<PersistentVolumeClaim>("PersistentVolumeClaims")
        .await?;
    handed += to.kind::<Service>("Services").await?;
    handed += to.kind::<NetworkPolicy>("NetworkPolicies").await?;
    handed += to.kind::<Ingress>("Ingresses").await?;
    handed += to
        .kind::<HorizontalPodAutoscaler>("HorizontalPodAutoscalers")
        .await?;
    handed += to
        .kind::<PodDisruptionBudget>("PodDisruptionBudgets")
        .await?;
    if ctx.routes_available() {
        handed += to.route().await?;
    }
    handed += to.kind::<Deployment>("Deployments").await?;
    Ok(handed)
}

struct Handing<'a> {
    stack: &'a Stack<'a>,
    ctx: &'a Context,
    owner: &'a OwnerReference,
    listed: ListParams,
}

impl Handing<'_> {
    /// Whether `meta` is to be handed over: the LlamaStackDistribution of the stack's name owns
    /// it (as its controller, or as an owner left by an undone move) and the server does not
    /// control it yet.
    fn to_hand(&self, meta: &ObjectMeta) -> bool {
        owned_by_stack(meta, self.stack.name()) && !controlled_by(meta, &self.owner.uid)
    }

    async fn kind<K: NamespacedKind>(&self, plural: &str) -> Result<usize, ApiError> {
        let (ns, name) = (self.stack.namespace(), self.stack.name());
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), ns);
        let found = api
            .list_metadata(&self.listed)
            .await
            .map_err(api_err(format!("listing the {plural} of {ns}/{name}")))?;
        let mut handed = 0;
        for object in found.items {
            let Some(object_name) = object
                .metadata
                .name
                .as_deref()
                .filter(|_| self.to_hand(&object.metadata))
            else {
                continue;
            };
            let patch = hand_over_patch(&object.metadata, self.owner);
            api.patch_metadata(object_name, &patch_by(FIELD_MANAGER), &Patch::Merge(&patch))
                .await
                .map_err(api_err(format!(
                    "handing {object_name} ({plural}) over from LlamaStackDistribution {name}"
                )))?;
            if K::kind(&()) == "Service"
                && object_name == service_name(name)
                && object.labels().contains_key(ADOPTED_FROM)
            {
                let patch = service_back_patch(name);
                Api::<Service>::namespaced(self.ctx.client.clone(), ns)
                    .patch(object_name, &patch_by(FIELD_MANAGER), &Patch::Merge(&patch))
                    .await
                    .map_err(api_err(format!(
                        "pointing Service {object_name} at the Pods of {name} again"
                    )))?;
            }
            handed += 1;
        }
        Ok(handed)
    }

    /// The Route has a fixed name (and the operator may only read it by name).
    async fn route(&self) -> Result<usize, ApiError> {
        let (ns, name) = (self.stack.namespace(), self.stack.name());
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.ctx.client.clone(), ns, &builders::route_resource());
        let route_name = ingress_name(name);
        let route = api
            .get_metadata_opt(&route_name)
            .await
            .map_err(api_err(format!("reading Route {ns}/{route_name}")))?;
        let Some(route) = route.filter(|r| self.to_hand(&r.metadata)) else {
            return Ok(0);
        };
        let patch = hand_over_patch(&route.metadata, self.owner);
        api.patch_metadata(&route_name, &patch_by(FIELD_MANAGER), &Patch::Merge(&patch))
            .await
            .map_err(api_err(format!(
                "handing Route {route_name} over from LlamaStackDistribution {name}"
            )))?;
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned_by(kind: &str, api_version: &str, name: &str, controller: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("x".into()),
            resource_version: Some("7".into()),
            owner_references: Some(vec![
                OwnerReference {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: "keeps".into(),
                    uid: "u-keep".into(),
                    ..OwnerReference::default()
                },
                OwnerReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: name.into(),
                    uid: "u-old".into(),
                    controller: Some(controller),
                    ..OwnerReference::default()
                },
            ]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn only_the_stack_of_the_same_name_counts_as_an_owner() {
        let llsd = "llamastack.io/v1alpha1";
        assert!(owned_by_stack(
            &owned_by("LlamaStackDistribution", llsd, "s", true),
            "s"
        ));
        assert!(owned_by_stack(
            &owned_by(
                "LlamaStackDistribution",
                "llamastack.io/v1alpha2",
                "s",
                true
            ),
            "s"
        ));
        assert!(!owned_by_stack(
            &owned_by("LlamaStackDistribution", llsd, "other", true),
            "s"
        ));
        // An owner that no longer controls (an undone move) is still handed over: the garbage
        // collector would delete the object with it.
        assert!(owned_by_stack(
            &owned_by("LlamaStackDistribution", llsd, "s", false),
            "s"
        ));
        assert!(!owned_by_stack(
            &owned_by("LlamaStackDistribution", "example.com/v1", "s", true),
            "s"
        ));
        assert!(!owned_by_stack(
            &owned_by("OGXServer", "ogx.io/v1beta1", "s", true),
            "s"
        ));
    }

    #[test]
    fn the_controller_is_replaced_and_other_owners_stay() {
        let owner = OwnerReference {
            api_version: "ogx.io/v1beta1".into(),
            kind: "OGXServer".into(),
            name: "s".into(),
            uid: "u-new".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let patch = hand_over_patch(
            &owned_by(
                "LlamaStackDistribution",
                "llamastack.io/v1alpha2",
                "s",
                true,
            ),
            &owner,
        );
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
        let uids: Vec<&str> = patch["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["uid"].as_str().unwrap())
            .collect();
        assert_eq!(uids, ["u-keep", "u-old", "u-new"]);
        let controllers: Vec<Option<bool>> = patch["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["controller"].as_bool())
            .collect();
        assert_eq!(controllers, [None, Some(false), Some(true)]);
    }
}
