//! The reads and writes of taking over another stack's objects (the decisions are
//! [`super::adoption`]'s): only for an `OGXServer` whose annotations ask for it, or whose status
//! says it took something before.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::adoption::{
    ADOPTED_FROM, Adopted, Hold, Requests, Said, StorageSeen, StorageStep, TransferStep,
    config_said, detach_patch, networking_said, requests, selector_patch, storage_said,
    storage_step, transfer_patch, transfer_step, was_true,
};
use super::builders;
use super::context::Context;
use super::dereference::controlled_by;
use super::door::Door;
use super::error::{ApiError, api_err};
use super::stack::Stack;
use crate::api::conditions::{ConditionType, Reason};
use crate::naming::{ingress_name, labels, pvc_name, service_name};

/// Takes over what the stack's annotations ask for, as far as it can now, and says how far.
pub(super) async fn take_over(stack: &Stack<'_>, ctx: &Context) -> Result<Adopted, ApiError> {
    let previous = stack.recorded.conditions;
    let (Door::OgxServer { .. }, Some(owner)) = (stack.door, stack.owner.as_ref()) else {
        return Ok(Adopted::default());
    };
    let annotations = stack.annotations;
    let mut adopted = Adopted::default();
    let requests = match requests(stack.name, annotations) {
        Ok(requests) => {
            adopted.said.extend(config_said(previous, None));
            requests
        }
        Err(invalid) => {
            // As the OGX operator does: nothing is taken, and nothing taken before is let go.
            adopted.said.extend(config_said(previous, Some(&invalid)));
            return Ok(adopted);
        }
    };
    let taker = Taker {
        stack,
        ctx,
        owner,
        previous,
    };
    taker.storage(&requests, &mut adopted).await?;
    taker.networking(&requests, &mut adopted).await?;
    Ok(adopted)
}

struct Taker<'a> {
    stack: &'a Stack<'a>,
    ctx: &'a Context,
    owner: &'a OwnerReference,
    previous: &'a [Condition],
}

impl Taker<'_> {
    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.ctx.client.clone(), self.stack.namespace)
    }

    async fn storage(&self, requests: &Requests, adopted: &mut Adopted) -> Result<(), ApiError> {
        let name = self.stack.name;
        let source = match (&requests.storage, self.stack.storage) {
            (Some(source), Some(_)) => source,
            (Some(source), None) => {
                adopted.said.push(Said::new(
                    ConditionType::StorageAdopted,
                    false,
                    Reason::NoStorageToAdoptInto,
                    format!(
                        "ogx.io/adopt-storage names {source}, but spec.workload.storage is not set, so there is nowhere to mount its volume: nothing was taken"
                    ),
                ));
                return Ok(());
            }
            (None, Some(_)) if was_true(self.previous, ConditionType::StorageAdopted) => {
                return self.taken_before(adopted).await;
            }
            (None, _) => return Ok(()),
        };
        let claims = self.api::<PersistentVolumeClaim>();
        let claim_name = pvc_name(source);
        let claim = claims
            .get_metadata_opt(&claim_name)
            .await
            .map_err(api_err(format!("reading PVC {claim_name}")))?;
        let free = claim.as_ref().is_some_and(|c| {
            !c.metadata
                .labels
                .iter()
                .flatten()
                .any(|(k, _)| k == ADOPTED_FROM)
        });
        let (replicas, pods) = if free {
            self.legacy_workload(source).await?
        } else {
            (None, 0)
        };
        let seen = StorageSeen {
            claim: claim.as_ref().map(|c| &c.metadata),
            replicas,
            pods,
        };
        let step = storage_step(name, source, seen);
        match &step {
            StorageStep::ScaleDown => {
                let zero = json!({"spec": {"replicas": 0}});
                self.api::<Deployment>()
                    .patch(source, &PatchParams::default(), &Patch::Merge(&zero))
                    .await
                    .map_err(api_err(format!("scaling Deployment {source} to zero")))?;
            }
            StorageStep::Detach => {
                let meta = seen.claim.map(|m| detach_patch(m, name, source, &now()));
                let patch = meta.unwrap_or(Value::Null);
                claims
                    .patch_metadata(&claim_name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(api_err(format!("detaching PVC {claim_name}")))?;
            }
            _ => {}
        }
        if matches!(step, StorageStep::Taken | StorageStep::Detach) {
            adopted.claim = Some(claim_name);
        }
        adopted.hold = step.hold();
        adopted.said.push(storage_said(source, &step));
        Ok(())
    }

    /// The old Deployment's replicas (if it exists) and how many of its Pods are left.
    async fn legacy_workload(
        &self,
        source: &str,
    ) -> Result<(Option<Option<i32>>, usize), ApiError> {
        let deployment = self
            .api::<Deployment>()
            .get_opt(source)
            .await
            .map_err(api_err(format!("reading Deployment {source}")))?;
        let selector = format!("{}={source}", labels::INSTANCE);
        let pods = self
            .api::<Pod>()
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(api_err(format!("listing the Pods of {source}")))?;
        let replicas = deployment.map(|d| d.spec.and_then(|s| s.replicas));
        Ok((replicas, pods.items.len()))
    }

    /// With the annotation gone, the volume taken before is found by its labels and stays
    /// mounted (the OGX operator's rule: data outlives the annotation).
    async fn taken_before(&self, adopted: &mut Adopted) -> Result<(), ApiError> {
        let name = self.stack.name;
        let selector = format!("{ADOPTED_FROM},{}={name}", labels::INSTANCE);
        let found = self
            .api::<PersistentVolumeClaim>()
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(api_err("listing adopted PVCs"))?;
        let names: Vec<String> = found
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        match names.as_slice() {
            [one] => {
                adopted.claim = Some(one.clone());
                adopted.said.push(Said::new(
                    ConditionType::StorageAdopted,
                    true,
                    Reason::StorageAdopted,
                    format!("PVC {one} adopted"),
                ));
            }
            [] => adopted.said.push(Said::new(
                ConditionType::StorageAdopted,
                false,
                Reason::AdoptionSourceNotFound,
                format!(
                    "no PVC labelled {ADOPTED_FROM} for {name} is left: the server has a volume of its own"
                ),
            )),
            several => {
                adopted.said.extend(config_said(
                    self.previous,
                    Some(&format!(
                        "several PVCs are labelled {ADOPTED_FROM} for {name} ({}): remove the label from all but one",
                        several.join(", ")
                    )),
                ));
                adopted.hold = Some(Hold::Refused);
            }
        }
        Ok(())
    }

    async fn networking(&self, requests: &Requests, adopted: &mut Adopted) -> Result<(), ApiError> {
        let Some(source) = &requests.networking else {
            if was_true(self.previous, ConditionType::NetworkingAdopted) {
                self.let_go::<Service>().await?;
                self.let_go::<Ingress>().await?;
                adopted.said.push(Said::new(
                    ConditionType::NetworkingAdopted,
                    false,
                    Reason::AdoptionAnnotationRemoved,
                    "Adoption annotation removed: the adopted Service and Ingress were deleted"
                        .to_owned(),
                ));
            }
            return Ok(());
        };
        let at = now();
        let services = self.api::<Service>();
        let service_name = service_name(source);
        let service = services
            .get_opt(&service_name)
            .await
            .map_err(api_err(format!("reading Service {service_name}")))?;
        let service_step = transfer_step(service.as_ref().map(|s| &s.metadata), source, self.owner);
        if let (TransferStep::Transfer, Some(service)) = (&service_step, &service) {
            let mut patch = transfer_patch(&service.metadata, source, self.owner, &at);
            let selector = builders::pod_selector_labels(self.stack);
            patch["spec"] = selector_patch(service, &selector)["spec"].take();
            services
                .patch(
                    &service_name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(api_err(format!("taking over Service {service_name}")))?;
        }
        let ingresses = self.api::<Ingress>();
        let ingress_name = ingress_name(source);
        let ingress = ingresses
            .get_metadata_opt(&ingress_name)
            .await
            .map_err(api_err(format!("reading Ingress {ingress_name}")))?;
        let ingress_step = transfer_step(ingress.as_ref().map(|i| &i.metadata), source, self.owner);
        if let (TransferStep::Transfer, Some(ingress)) = (&ingress_step, &ingress) {
            let patch = transfer_patch(&ingress.metadata, source, self.owner, &at);
            ingresses
                .patch_metadata(
                    &ingress_name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(api_err(format!("taking over Ingress {ingress_name}")))?;
        }
        adopted
            .said
            .extend(networking_said(source, [&service_step, &ingress_step]));
        Ok(())
    }

    /// Deletes the objects of kind `K` taken before (labelled and controlled by the server).
    async fn let_go<K>(&self) -> Result<(), ApiError>
    where
        K: kube::Resource<Scope = NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api = self.api::<K>();
        let taken = api
            .list_metadata(&ListParams::default().labels(ADOPTED_FROM))
            .await
            .map_err(api_err("listing adopted objects"))?;
        for object in taken.items {
            let ours = controlled_by(&object.metadata, &self.owner.uid);
            let Some(name) = object.metadata.name.filter(|_| ours) else {
                continue;
            };
            api.delete(&name, &DeleteParams::default())
                .await
                .map_err(api_err(format!("deleting adopted {name}")))?;
        }
        Ok(())
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
