//! Pruning the objects of old revisions: the hash-named generated ConfigMaps, CA bundles and
//! derived Secrets a stack no longer runs. Each revision's Pod template names its own, so a
//! rollout's old Pods keep what they started with and a rollback returns to all of it; what
//! no live revision, no current template and not the last Ready revision names is deleted.
//!
//! The decision is pure ([`doomed`]); [`prune`] gathers the names (metadata only) and deletes,
//! once per rollout state ([`when_rollout_settles`]).
//! ReplicaSets are listed only when something could go.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplateSpec, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PartialObjectMeta};

use crate::api::v1alpha2::RevisionStatus;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::owned_index::OwnedIndex;
use crate::core::rollback;
use crate::core::stack::Stack;
use crate::naming::{ca_bundle_prefix, derived_secret_prefix, generated_config_map_prefix};
use crate::ownership::controlled_by;

/// Generated ConfigMaps kept besides those a live or remembered revision names: the newest ones,
/// for a person comparing configs.
const KEEP_GENERATED: usize = 2;

/// The names a set of Pod templates refers to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::controller) struct TemplateReferences {
    /// ConfigMaps (volumes, `envFrom`, `configMapKeyRef`).
    pub(in crate::controller) config_maps: BTreeSet<String>,
    /// Secrets (volumes, `envFrom`, `secretKeyRef`).
    pub(in crate::controller) secrets: BTreeSet<String>,
}

impl TemplateReferences {
    /// Adds what `template` refers to.
    pub(in crate::controller) fn add(&mut self, template: &PodTemplateSpec) {
        let Some(spec) = &template.spec else {
            return;
        };
        for volume in spec.volumes.iter().flatten() {
            self.config_maps
                .extend(volume.config_map.as_ref().map(|c| c.name.clone()));
            self.secrets
                .extend(volume.secret.as_ref().and_then(|s| s.secret_name.clone()));
        }
        let containers = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten());
        for container in containers {
            for from in container.env_from.iter().flatten() {
                self.config_maps
                    .extend(from.config_map_ref.as_ref().map(|r| r.name.clone()));
                self.secrets
                    .extend(from.secret_ref.as_ref().map(|r| r.name.clone()));
            }
            for var in container.env.iter().flatten() {
                let Some(from) = &var.value_from else {
                    continue;
                };
                self.config_maps
                    .extend(from.config_map_key_ref.as_ref().map(|r| r.name.clone()));
                self.secrets
                    .extend(from.secret_key_ref.as_ref().map(|r| r.name.clone()));
            }
        }
    }
}

/// An owned object that may be pruned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::controller) struct Owned {
    /// Its name.
    pub(in crate::controller) name: String,
    /// When it was made (newest generated configs are kept).
    pub(in crate::controller) created: Option<Time>,
}

/// What a stack owns that pruning looks at.
#[derive(Clone, Debug, Default)]
pub(in crate::controller) struct Candidates {
    /// Generated configs (`<name>-config-<hash>`).
    pub(in crate::controller) generated: Vec<Owned>,
    /// CA bundles (`<name>-ca-bundle-<hash>`, and the fixed name of older operators).
    pub(in crate::controller) ca_bundles: Vec<Owned>,
    /// Derived Secrets (`<name>-derived-<hash>`, and the fixed name of older operators).
    pub(in crate::controller) derived: Vec<Owned>,
}

/// What to delete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::controller) struct Doomed {
    /// ConfigMaps.
    pub(in crate::controller) config_maps: Vec<String>,
    /// Secrets.
    pub(in crate::controller) secrets: Vec<String>,
}

impl Doomed {
    fn is_empty(&self) -> bool {
        self.config_maps.is_empty() && self.secrets.is_empty()
    }
}

/// Of `candidates`, what no template in `referenced` names; of the generated configs, the
/// newest [`KEEP_GENERATED`] stay too. Pure.
pub(in crate::controller) fn doomed(
    candidates: &Candidates,
    referenced: &TemplateReferences,
) -> Doomed {
    let mut generated: Vec<&Owned> = candidates.generated.iter().collect();
    // Creation times have whole seconds: of configs made within one, those a revision names
    // (the current one, the way back) count as the newer.
    generated.sort_by_key(|o| {
        (
            std::cmp::Reverse(o.created.as_ref().map(|t| t.0)),
            !referenced.config_maps.contains(&o.name),
        )
    });
    let unreferenced_config = |o: &&Owned| !referenced.config_maps.contains(&o.name);
    let config_maps = generated
        .into_iter()
        .skip(KEEP_GENERATED)
        .chain(&candidates.ca_bundles)
        .filter(unreferenced_config)
        .map(|o| o.name.clone())
        .collect();
    let secrets = candidates
        .derived
        .iter()
        .filter(|o| !referenced.secrets.contains(&o.name))
        .map(|o| o.name.clone())
        .collect();
    Doomed {
        config_maps,
        secrets,
    }
}

/// Sorts owned objects (their metadata) into the candidates of `stack`: only those it controls.
fn candidates(
    stack: &Stack<'_>,
    config_maps: Vec<PartialObjectMeta<ConfigMap>>,
    secrets: Vec<PartialObjectMeta<Secret>>,
) -> Candidates {
    let uid = stack.uid();
    let owned = |meta: &kube::core::ObjectMeta| Owned {
        name: meta.name.clone().unwrap_or_default(),
        created: meta.creation_timestamp.clone(),
    };
    let (generated_prefix, bundle_prefix) = (
        generated_config_map_prefix(stack.name()),
        ca_bundle_prefix(stack.name()),
    );
    let mut found = Candidates::default();
    for cm in config_maps
        .iter()
        .filter(|c| controlled_by(&c.metadata, uid))
    {
        let name = cm.name_any();
        if name.starts_with(&generated_prefix) {
            found.generated.push(owned(&cm.metadata));
        } else if name.starts_with(&bundle_prefix) {
            found.ca_bundles.push(owned(&cm.metadata));
        }
    }
    let derived_prefix = derived_secret_prefix(stack.name());
    found.derived = secrets
        .iter()
        .filter(|s| controlled_by(&s.metadata, uid) && s.name_any().starts_with(&derived_prefix))
        .map(|s| owned(&s.metadata))
        .collect();
    found
}

/// Prunes old revisions' objects once per rollout state (not on every resync: LISTs per object
/// per resync would dominate a large cluster's load); `created_now` when this reconcile made the
/// Deployment.
pub(in crate::controller) async fn when_rollout_settles(
    stack: &Stack<'_>,
    ctx: &Context,
    deployment: &Deployment,
    created_now: bool,
) -> Result<(), ApiError> {
    let generation = deployment.metadata.generation.unwrap_or_default();
    let settled = deployment.status.as_ref().is_some_and(|s| {
        s.observed_generation == Some(generation) && s.replicas == s.updated_replicas
    });
    let key = stack.uid();
    if !ctx.needs_prune(key, (generation, settled)) {
        return Ok(());
    }
    // The Deployment was made by this very reconcile: no earlier revision runs, and what an
    // earlier one left (a Deployment deleted and made again) waits for the prune once this
    // rollout settles, which still looks.
    if !settled && created_now {
        ctx.pruned(key, (generation, settled));
        return Ok(());
    }
    prune(&ctx.client, &ctx.owned, stack, deployment, settled).await?;
    ctx.pruned(key, (generation, settled));
    Ok(())
}

/// Deletes what no revision that runs, the current template (`deployment`) nor the last Ready
/// revision names. CA bundles and derived Secrets only once the rollout has `settled` (every
/// replica updated): until then the Deployment controller may not have made the new ReplicaSet,
/// and the old Pods read them. Lists nothing when the owned objects' watches (`index`) show
/// that everything the stack controls is named by the current template or the last Ready
/// revision: nothing could go.
async fn prune(
    client: &kube::Client,
    index: &OwnedIndex,
    stack: &Stack<'_>,
    deployment: &Deployment,
    settled: bool,
) -> Result<(), ApiError> {
    let last_ready = rollback::memory(stack).last_ready;
    let mut referenced = TemplateReferences::default();
    if let Some(template) = deployment.spec.as_ref().map(|s| &s.template) {
        referenced.add(template);
    }
    referenced
        .config_maps
        .extend(last_ready.as_ref().and_then(|r| r.config_map.clone()));
    let all_named = |kind, names| index.all_named(kind, stack.namespace(), stack.uid(), names);
    if all_named("ConfigMap", &referenced.config_maps) == Some(true)
        && (!settled || all_named("Secret", &referenced.secrets) == Some(true))
    {
        return Ok(());
    }
    let found = listed_candidates(client, stack, settled).await?;
    if doomed(&found, &referenced).is_empty() {
        return Ok(());
    }
    // Something may go: what the live revisions and the last Ready one name stays.
    for template in kept_revisions(client, stack, last_ready.as_ref()).await? {
        referenced.add(&template);
    }
    delete(client, stack.namespace(), &doomed(&found, &referenced)).await
}

/// The candidates, as listed (metadata only): CA bundles and derived Secrets only once the
/// rollout has `settled`.
async fn listed_candidates(
    client: &kube::Client,
    stack: &Stack<'_>,
    settled: bool,
) -> Result<Candidates, ApiError> {
    let (ns, name) = (stack.namespace(), stack.name());
    let lp = ListParams::default().labels(&stack.owned_by);
    let owned_secrets = match settled {
        true => {
            Api::<Secret>::namespaced(client.clone(), ns)
                .list_metadata(&lp)
                .await
                .map_err(api_err(format!("list Secrets of {ns}/{name}")))?
                .items
        }
        false => Vec::new(),
    };
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .list_metadata(&lp)
        .await
        .map_err(api_err(format!("list ConfigMaps of {ns}/{name}")))?
        .items;
    let mut found = candidates(stack, config_maps, owned_secrets);
    if !settled {
        found.ca_bundles.clear();
    }
    Ok(found)
}

/// The Pod templates of the revisions that run (a ReplicaSet with replicas) and of the last
/// Ready one (`last_ready`), which a rollback returns to.
async fn kept_revisions(
    client: &kube::Client,
    stack: &Stack<'_>,
    last_ready: Option<&RevisionStatus>,
) -> Result<Vec<PodTemplateSpec>, ApiError> {
    let (ns, name) = (stack.namespace(), stack.name());
    let replica_sets = Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&stack.owned_by))
        .await
        .map_err(api_err(format!("list ReplicaSets of {ns}/{name}")))?
        .items;
    let live = replica_sets
        .iter()
        .filter(|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0) > 0);
    let remembered =
        last_ready.and_then(|r| rollback::replica_set_of(&replica_sets, &r.desired_hash));
    Ok(live
        .chain(remembered)
        .filter_map(|rs| rs.spec.as_ref()?.template.clone())
        .collect())
}

/// Deletes `doomed` in `ns`.
async fn delete(client: &kube::Client, ns: &str, doomed: &Doomed) -> Result<(), ApiError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    for cm in &doomed.config_maps {
        config_maps
            .delete(cm, &DeleteParams::default())
            .await
            .map_err(api_err(format!("delete ConfigMap {ns}/{cm}")))?;
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    for secret in &doomed.secrets {
        secrets
            .delete(secret, &DeleteParams::default())
            .await
            .map_err(api_err(format!("delete Secret {ns}/{secret}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn owned(name: &str, second: i64) -> Owned {
        Owned {
            name: name.to_owned(),
            created: Some(Time(
                jiff::Timestamp::from_second(1_700_000_000 + second).unwrap(),
            )),
        }
    }

    fn template(config: &str, bundle: &str, derived: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({"spec": {
            "containers": [{"name": "llama-stack", "env": [
                {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": derived, "key": "storage-sql-password"}}}
            ]}],
            "volumes": [
                {"name": "config", "configMap": {"name": config}},
                {"name": "ca-bundle", "configMap": {"name": bundle}}
            ]
        }}))
        .unwrap()
    }

    fn candidates() -> Candidates {
        Candidates {
            generated: vec![
                owned("s-config-1", 1),
                owned("s-config-2", 2),
                owned("s-config-3", 3),
                owned("s-config-4", 4),
            ],
            ca_bundles: vec![
                owned("s-ca-bundle", 0),
                owned("s-ca-bundle-aaaa", 1),
                owned("s-ca-bundle-bbbb", 2),
            ],
            derived: vec![
                owned("s-derived", 0),
                owned("s-derived-1111", 1),
                owned("s-derived-2222", 2),
            ],
        }
    }

    #[test]
    fn of_configs_made_within_one_second_the_named_ones_count_as_newest() {
        let mut referenced = TemplateReferences::default();
        referenced.add(&template("s-config-c", "", ""));
        referenced.config_maps.insert("s-config-b".to_owned());
        let same_second = |order: [&str; 3]| Candidates {
            generated: order.iter().map(|name| owned(name, 7)).collect(),
            ..Candidates::default()
        };
        for order in [
            ["s-config-a", "s-config-b", "s-config-c"],
            ["s-config-c", "s-config-a", "s-config-b"],
            ["s-config-b", "s-config-c", "s-config-a"],
        ] {
            assert_eq!(
                doomed(&same_second(order), &referenced).config_maps,
                vec!["s-config-a".to_owned()],
                "listed as {order:?}"
            );
        }
    }

    #[test]
    fn what_a_named_template_refers_to_stays_and_the_rest_goes() {
        let mut referenced = TemplateReferences::default();
        // The current revision and the last Ready one (the rollback's way back).
        referenced.add(&template(
            "s-config-4",
            "s-ca-bundle-bbbb",
            "s-derived-2222",
        ));
        referenced.add(&template(
            "s-config-1",
            "s-ca-bundle-aaaa",
            "s-derived-1111",
        ));
        assert_eq!(
            doomed(&candidates(), &referenced),
            Doomed {
                config_maps: vec!["s-config-2".to_owned(), "s-ca-bundle".to_owned()],
                secrets: vec!["s-derived".to_owned()],
            },
            "config 3 is among the newest two; the fixed names of older operators go once unused"
        );
    }

    #[test]
    fn nothing_named_goes_and_an_unreferenced_bundle_or_secret_always_goes() {
        let mut referenced = TemplateReferences::default();
        for (config, bundle, derived) in [
            ("s-config-1", "s-ca-bundle", "s-derived"),
            ("s-config-2", "s-ca-bundle-aaaa", "s-derived-1111"),
            ("s-config-3", "s-ca-bundle-bbbb", "s-derived-2222"),
        ] {
            referenced.add(&template(config, bundle, derived));
        }
        assert_eq!(doomed(&candidates(), &referenced), Doomed::default());
        let nothing = doomed(&candidates(), &TemplateReferences::default());
        assert_eq!(
            nothing.config_maps.len(),
            2 + 3,
            "all but the newest two configs"
        );
        assert_eq!(nothing.secrets.len(), 3);
    }

    #[test]
    fn every_place_a_template_names_an_object_counts() {
        let template: PodTemplateSpec = serde_json::from_value(json!({"spec": {
            "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "cm-a"}}, {"secretRef": {"name": "s-a"}}]}],
            "containers": [{"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm-b", "key": "k"}}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "s-b"}}]
        }}))
        .unwrap();
        let mut referenced = TemplateReferences::default();
        referenced.add(&template);
        assert_eq!(
            referenced,
            TemplateReferences {
                config_maps: ["cm-a", "cm-b"].map(str::to_owned).into(),
                secrets: ["s-a", "s-b"].map(str::to_owned).into(),
            }
        );
    }
}
