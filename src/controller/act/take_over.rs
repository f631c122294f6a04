//! The reads and writes of taking over another stack's objects (the decisions are
//! [`crate::core::adoption`]'s): only for an `OGXServer` whose annotations ask for it, or that took a
//! volume before.
//!
//! Reading, choosing and writing are apart: [`survey`] reads before the server's own decision and
//! says what would be written; `decide` keeps the writes that take something only when the server
//! will run ([`decided`]); [`carry_out`] makes those kept, first of the apply. A server that cannot
//! run (a missing Secret, an image that does not resolve, ...) takes nothing, so the old stack
//! keeps serving.

use std::collections::HashSet;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::api::{Api, ListParams, Patch};
use serde_json::json;

use super::write::{NamespacedKind, patch_by};
use crate::api::conditions::{ConditionType, Reason};
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::core::adoption::{
    ADOPTED_FROM, Adopted, Hold, Requests, Said, StorageSeen, StorageStep, TransferStep,
    config_said, detach_patch, hand_back_patch, networking_said, requests, selector_patch,
    storage_said, storage_step, transfer_patch, transfer_step, was_true,
};
use crate::core::builders;
use crate::core::door::Door;
use crate::core::stack::Stack;
use crate::core::take_over::{Kind, Survey, Write};
use crate::naming::{ADOPTION_FIELD_MANAGER, ingress_name, labels, pvc_name, service_name};
use crate::ownership::controlled_by;

/// Makes the `writes` [`decided`] kept, first of the apply.
pub(in crate::controller) async fn carry_out(
    stack: &Stack<'_>,
    ctx: &Context,
    writes: &[Write],
) -> Result<(), ApiError> {
    for write in writes {
        let api = (&ctx.client, stack.namespace);
        match write.kind {
            Kind::Deployment => patch::<Deployment>(api, write).await,
            Kind::Claim => patch::<PersistentVolumeClaim>(api, write).await,
            Kind::Service => patch::<Service>(api, write).await,
            Kind::Ingress => patch::<Ingress>(api, write).await,
        }?;
    }
    Ok(())
}

/// Makes `write` on an object of kind `K` in the namespace, as the adoption's field manager.
async fn patch<K: NamespacedKind>(
    (client, ns): (&kube::Client, &str),
    write: &Write,
) -> Result<(), ApiError> {
    let name = &write.name;
    Api::<K>::namespaced(client.clone(), ns)
        .patch(
            name,
            &patch_by(ADOPTION_FIELD_MANAGER),
            &Patch::Merge(&write.patch),
        )
        .await
        .map(drop)
        .map_err(api_err(format!("{:?} {name}: taking over", write.kind)))
}

/// Reads what the stack's annotations ask to take over, and says what taking it needs and how
/// far it would get; writes nothing.
pub(in crate::controller) async fn survey(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Survey, ApiError> {
    let previous = stack.recorded.conditions;
    let (Door::OgxServer { .. }, Some(owner)) = (stack.door, stack.subject.owner.as_ref()) else {
        return Ok(Survey::default());
    };
    let annotations = stack.annotations;
    let mut survey = Survey::default();
    let requests = match requests(stack.name, annotations) {
        Ok(requests) => {
            survey.adopted.said.extend(config_said(previous, None));
            requests
        }
        Err(invalid) => {
            // As the OGX operator does: nothing is taken, and nothing taken before is let go.
            survey
                .adopted
                .said
                .extend(config_said(previous, Some(&invalid)));
            return Ok(survey);
        }
    };
    let taker = Taker {
        stack,
        ctx,
        owner,
        previous,
    };
    taker.storage(&requests, &mut survey).await?;
    taker.networking(&requests, &mut survey).await?;
    Ok(survey)
}

struct Taker<'a> {
    stack: &'a Stack<'a>,
    ctx: &'a Context,
    owner: &'a OwnerReference,
    previous: &'a [Condition],
}

impl Taker<'_> {
    fn api<K: NamespacedKind>(&self) -> Api<K> {
        Api::namespaced(self.ctx.client.clone(), self.stack.namespace)
    }

    async fn storage(&self, requests: &Requests, survey: &mut Survey) -> Result<(), ApiError> {
        let adopted = &mut survey.adopted;
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
            // Found by its labels, whatever the status says (it may be lost or older).
            (None, Some(_)) => return self.taken_before(adopted).await,
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
        let (deployment, pods) = if free {
            self.legacy_workload(source, &claim_name).await?
        } else {
            (None, 0)
        };
        let seen = StorageSeen {
            claim: claim.as_ref().map(|c| &c.metadata),
            replicas: deployment
                .as_ref()
                .map(|d| d.spec.as_ref().and_then(|s| s.replicas)),
            deployment: deployment.as_ref().map(|d| &d.metadata),
            pods,
        };
        let step = storage_step(name, source, seen);
        match &step {
            StorageStep::ScaleDown => survey.writes.push(Write {
                kind: Kind::Deployment,
                name: source.clone(),
                patch: json!({"spec": {"replicas": 0}}),
                takes: true,
            }),
            StorageStep::Detach => {
                if let Some(meta) = seen.claim {
                    survey.writes.push(Write {
                        kind: Kind::Claim,
                        name: claim_name.clone(),
                        patch: detach_patch(meta, name, source, &now()),
                        takes: true,
                    });
                }
            }
            _ => {}
        }
        let adopted = &mut survey.adopted;
        if matches!(step, StorageStep::Taken | StorageStep::Detach) {
            adopted.claim = Some(claim_name);
        }
        adopted.hold = step.hold();
        adopted.said.push(storage_said(source, &step));
        Ok(())
    }

    /// The old Deployment (if it exists), and how many Pods would still write the volume: the
    /// old stack's, and any that mounts the claim `claim` (a Job, a debugging Pod, ...).
    async fn legacy_workload(
        &self,
        source: &str,
        claim: &str,
    ) -> Result<(Option<Deployment>, usize), ApiError> {
        let deployment = self
            .api::<Deployment>()
            .get_opt(source)
            .await
            .map_err(api_err(format!("reading Deployment {source}")))?;
        let pods = self
            .api::<Pod>()
            .list(&ListParams::default())
            .await
            .map_err(api_err(format!(
                "listing the Pods that may mount PVC {claim}"
            )))?;
        let writers = pods
            .items
            .iter()
            .filter(|pod| {
                let of_source = pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::INSTANCE))
                    .is_some_and(|instance| instance == source);
                let mounts = pod
                    .spec
                    .iter()
                    .flat_map(|s| s.volumes.iter().flatten())
                    .any(|v| {
                        v.persistent_volume_claim
                            .as_ref()
                            .is_some_and(|c| c.claim_name == claim)
                    });
                of_source || mounts
            })
            .count();
        Ok((deployment, writers))
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
            // Nothing was ever taken, or what was is gone: said only when it had been said
            // before.
            [] if was_true(self.previous, ConditionType::StorageAdopted) => {
                adopted.said.push(Said::new(
                    ConditionType::StorageAdopted,
                    false,
                    Reason::AdoptionSourceNotFound,
                    format!(
                        "no PVC labelled {ADOPTED_FROM} for {name} is left: the server has a volume of its own"
                    ),
                ));
            }
            [] => {}
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

    async fn networking(&self, requests: &Requests, survey: &mut Survey) -> Result<(), ApiError> {
        let uid = &self.owner.uid;
        let seen = std::time::Instant::now();
        let Some(source) = &requests.networking else {
            let (memory, ns) = (&self.ctx.handed_back, self.stack.namespace);
            let returned = if memory.holds_nothing(ns, uid, seen) {
                0
            } else {
                let ticket = memory.begin_list();
                let mut holders = HashSet::new();
                let returned = self
                    .hand_back::<Service>(Kind::Service, survey, &mut holders)
                    .await?
                    + self
                        .hand_back::<Ingress>(Kind::Ingress, survey, &mut holders)
                        .await?;
                memory.listed(ns, ticket, holders);
                returned
            };
            if returned > 0 || was_true(self.previous, ConditionType::NetworkingAdopted) {
                survey.adopted.said.push(Said::new(
                    ConditionType::NetworkingAdopted,
                    false,
                    Reason::AdoptionAnnotationRemoved,
                    "Adoption annotation removed: the adopted Service and Ingress were handed back (the Service selects the old stack's Pods again, at the same address)"
                        .to_owned(),
                ));
            }
            return Ok(());
        };
        self.ctx.handed_back.may_take(uid, seen);
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
            survey.writes.push(Write {
                kind: Kind::Service,
                name: service_name.clone(),
                patch,
                takes: true,
            });
        }
        let ingresses = self.api::<Ingress>();
        let ingress_name = ingress_name(source);
        let ingress = ingresses
            .get_metadata_opt(&ingress_name)
            .await
            .map_err(api_err(format!("reading Ingress {ingress_name}")))?;
        let ingress_step = transfer_step(ingress.as_ref().map(|i| &i.metadata), source, self.owner);
        if let (TransferStep::Transfer, Some(ingress)) = (&ingress_step, &ingress) {
            survey.writes.push(Write {
                kind: Kind::Ingress,
                name: ingress_name.clone(),
                patch: transfer_patch(&ingress.metadata, source, self.owner, &at),
                takes: true,
            });
        }
        survey
            .adopted
            .said
            .extend(networking_said(source, [&service_step, &ingress_step]));
        Ok(())
    }

    /// Plans handing back the objects of kind `K` taken before (labelled and controlled by the
    /// server); returns how many. The controllers of all the namespace's taken objects of that
    /// kind, the server's or another's, go to `holders`.
    async fn hand_back<K: NamespacedKind>(
        &self,
        kind: Kind,
        survey: &mut Survey,
        holders: &mut HashSet<String>,
    ) -> Result<usize, ApiError> {
        let taken = self
            .api::<K>()
            .list_metadata(&ListParams::default().labels(ADOPTED_FROM))
            .await
            .map_err(api_err("listing adopted objects"))?;
        let mut returned = 0;
        for object in taken.items {
            let meta = &object.metadata;
            let source = meta.labels.as_ref().and_then(|l| l.get(ADOPTED_FROM));
            let (Some(name), Some(source)) = (meta.name.as_ref(), source) else {
                continue;
            };
            let mut owners = meta.owner_references.iter().flatten();
            if let Some(holder) = owners.find(|r| r.controller == Some(true)) {
                holders.insert(holder.uid.clone());
            }
            if !controlled_by(meta, &self.owner.uid) {
                continue;
            }
            survey.writes.push(Write {
                kind,
                name: name.clone(),
                patch: hand_back_patch(meta, source, kind == Kind::Service),
                takes: false,
            });
            returned += 1;
        }
        Ok(returned)
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
