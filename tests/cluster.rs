//! The running controller on a cluster whose Pods run: kube-apiserver, etcd,
//! kube-controller-manager, kube-scheduler and kwok (the kubelet of a fake node). Deployments get
//! Pods that become Ready, owner references garbage-collect, HPAs scale. The operator writes as
//! its own user, so the API server's audit log counts exactly its writes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use libtest_mimic::Failed;
use llama_stack_operator::api::common::DistributionPhase;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_operator::controller::{self, Context};
use llama_stack_resolver::Resolver;
use serde_json::{Value, json};
use support::control_plane::{ControlPlane, OPERATOR_USER, start_cluster_with_crd};
use support::harness::{run_suite, table};
use support::kube_objects::{condition, create_namespace, create_stack, offline_resolver_options};
use support::kwok_stages::{
    CRASH_LOOP, CRASH_MESSAGE, IMAGE_PULL, INIT_CRASH_LOOP, INIT_CRASH_MESSAGE,
};

const OPERATOR_NAMESPACE: &str = "llama-stack-operator-system";
/// The operator's own image, which runs the external-provider steps in server Pods.
const OPERATOR_IMAGE: &str = "ghcr.io/llamastack/llama-stack-operator:test";
/// Pods on the kwok node become Ready within seconds; leave room on a loaded CI machine.
const CONVERGE: Duration = Duration::from_secs(60);

struct Env {
    plane: ControlPlane,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    operator: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Env {
    /// Starts the controller as the operator user.
    fn start_operator(&self) -> Result<(), Failed> {
        let client = self
            .rt
            .block_on(self.plane.operator_client())
            .map_err(|e| e.to_string())?;
        let resolver = Arc::new(Resolver::new(offline_resolver_options())?);
        let ctx = Context::new(client, resolver)
            .with_operator_config(OPERATOR_NAMESPACE, offline_resolver_options())
            .with_operator_image(Some(OPERATOR_IMAGE.to_owned()));
        let handle = self.rt.spawn(controller::run(Arc::new(ctx)));
        *self.operator.lock().unwrap() = Some(handle);
        Ok(())
    }

    fn stop_operator(&self) {
        if let Some(handle) = self.operator.lock().unwrap().take() {
            handle.abort();
            let _ = self.rt.block_on(handle);
        }
    }

    fn namespace(&self, name: &str) -> Result<(), Failed> {
        Ok(self.rt.block_on(create_namespace(&self.client, name))?)
    }

    fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    fn create_llsd(&self, ns: &str, name: &str, spec: Value) -> Result<(), Failed> {
        self.rt
            .block_on(create_stack(&self.client, ns, name, spec))?;
        Ok(())
    }

    /// Waits until the distribution is Ready for its current generation.
    fn wait_ready(&self, ns: &str, name: &str) -> Result<LlamaStackDistribution, Failed> {
        self.eventually(&format!("{ns}/{name} Ready"), || async {
            let cr = self
                .api::<LlamaStackDistribution>(ns)
                .get(name)
                .await
                .ok()?;
            let status = cr.status.as_ref()?;
            (status.phase == Some(DistributionPhase::Ready)
                && status.observed_generation == cr.metadata.generation)
                .then_some(cr.clone())
        })
    }

    fn eventually<T, F, Fut>(&self, what: &str, probe: F) -> Result<T, Failed>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        self.rt
            .block_on(support::wait::eventually(CONVERGE, what, probe))
            .map_err(|e| Failed::from(format!("{e}\n{}", self.what_runs())))
    }

    /// What the cluster shows when a wait fails: the Pods and Deployments, and the ends of the
    /// scheduler's, the controller manager's and kwok's logs.
    fn what_runs(&self) -> String {
        let kubectl = |args: &[&str]| {
            self.plane
                .kubectl()
                .args(args)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        let mut out = format!(
            "pods:\n{}deployments:\n{}",
            kubectl(&["get", "pods", "-A", "-o", "wide"]),
            kubectl(&["get", "deployments", "-A"]),
        );
        for component in ["kube-scheduler", "kube-controller-manager", "kwok"] {
            out.push_str(&format!(
                "{component} log:\n{}\n",
                self.plane.log_tail(component)
            ));
        }
        out
    }

    /// How many objects of kind `K` in `ns` match `lp` (`None` when the list fails).
    async fn count<K>(&self, ns: &str, lp: &ListParams) -> Option<usize>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Some(self.api::<K>(ns).list(lp).await.ok()?.items.len())
    }

    /// Writes the operator made in `ns` so far.
    fn operator_writes(&self, ns: &str) -> Result<Vec<Value>, Failed> {
        let writes = self
            .plane
            .audit_writes(OPERATOR_USER)
            .map_err(|e| e.to_string())?;
        Ok(writes
            .into_iter()
            .filter(|w| w["objectRef"]["namespace"] == ns)
            .collect())
    }

    fn condition(&self, cr: &LlamaStackDistribution, type_: &str) -> (String, String, String) {
        condition(cr, type_).unwrap_or_else(|| panic!("no {type_} condition in {:?}", cr.status))
    }
}

fn pod_template(d: &Deployment) -> k8s_openapi::api::core::v1::PodTemplateSpec {
    d.spec.as_ref().unwrap().template.clone()
}

fn env_of(d: &Deployment) -> Value {
    serde_json::to_value(&pod_template(d).spec.unwrap().containers[0].env).unwrap()
}

fn every_object_of_a_ready_distribution(env: &Env) -> Result<(), Failed> {
    let ns = "ready";
    env.namespace(ns)?;
    env.create_llsd(ns, "llama", json!({"distribution": {"name": "starter"},
        "networking": {"allowedFrom": {"namespaces": ["team-b"], "labels": ["llama-clients"]}, "expose": {"hostname": "llama.example.com"}},
        "workload": {"replicas": 2}}))?;
    let cr = env.wait_ready(ns, "llama")?;
    let status = cr.status.clone().unwrap();
    assert_eq!(status.available_replicas, Some(2));
    assert_eq!(
        status.service_url.as_deref(),
        Some("http://llama-service.ready.svc.cluster.local:8321")
    );
    assert_eq!(
        status.route_url.as_deref(),
        Some("http://llama.example.com")
    );
    for (type_, reason) in [
        ("Available", "MinimumReplicasAvailable"),
        ("DeploymentReady", "DeploymentReady"),
        ("HealthCheck", "HealthCheckPassed"),
        ("ServiceReady", "ServiceReady"),
        ("ConfigGenerated", "ConfigGenerationSucceeded"),
        ("DeploymentUpdated", "DeploymentUpdateSucceeded"),
        ("SecretsResolved", "AllSecretsFound"),
    ] {
        let (s, r, _) = env.condition(&cr, type_);
        assert_eq!((s.as_str(), r.as_str()), ("True", reason), "{type_}");
    }
    assert!(
        cr.status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .all(|c| c.type_ != "StorageReady"),
        "no storage, no StorageReady"
    );

    let uid = cr.uid().unwrap();
    let owned_by_cr = |meta: &kube::core::ObjectMeta| {
        meta.owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid && o.controller == Some(true))
    };
    let rt = &env.rt;
    let d = rt.block_on(env.api::<Deployment>(ns).get("llama"))?;
    assert!(owned_by_cr(&d.metadata));
    let pod = pod_template(&d).spec.unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("llama-sa"));
    assert_eq!(
        pod.topology_spread_constraints.as_ref().map(Vec::len),
        Some(1),
        "two replicas spread over nodes"
    );
    let sa = rt.block_on(env.api::<ServiceAccount>(ns).get("llama-sa"))?;
    assert_eq!(sa.automount_service_account_token, Some(false));
    assert!(owned_by_cr(&sa.metadata));
    let svc = rt.block_on(env.api::<Service>(ns).get("llama-service"))?;
    assert!(owned_by_cr(&svc.metadata));
    let np = rt.block_on(env.api::<NetworkPolicy>(ns).get("llama-network-policy"))?;
    let peers = serde_json::to_value(&np.spec.as_ref().unwrap().ingress.as_ref().unwrap()[0].from)?;
    assert_eq!(
        peers,
        json!([{"podSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": OPERATOR_NAMESPACE}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-b"}}},
        {"namespaceSelector": {"matchExpressions": [{"key": "llama-clients", "operator": "Exists"}]}}])
    );
    let ingress = rt.block_on(env.api::<Ingress>(ns).get("llama-ingress"))?;
    assert_eq!(
        ingress.spec.unwrap().rules.unwrap()[0].host.as_deref(),
        Some("llama.example.com")
    );
    let pdb = rt.block_on(env.api::<PodDisruptionBudget>(ns).get("llama-pdb"))?;
    assert_eq!(
        serde_json::to_value(pdb.spec.unwrap().max_unavailable)?,
        json!(1)
    );
    let pods = rt.block_on(
        env.api::<Pod>(ns)
            .list(&ListParams::default().labels("app.kubernetes.io/instance=llama")),
    )?;
    assert_eq!(pods.items.len(), 2, "two Pods run");
    let events = rt.block_on(env.api::<Event>(ns).list(&ListParams::default()))?;
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Created")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("llama")),
        "a Normal event for the rollout"
    );
    // Events are what a person acts on: the rollout and Ready, no Event per condition.
    let normal: Vec<&str> = events
        .items
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("llama"))
        .filter(|e| e.reporting_controller.as_deref() == Some("llama-stack-operator"))
        .filter(|e| e.type_.as_deref() == Some("Normal"))
        .filter_map(|e| e.reason.as_deref())
        .collect();
    assert!(normal.contains(&"Ready"), "a Ready event: {normal:?}");
    assert!(
        normal
            .iter()
            .all(|r| matches!(*r, "Created" | "RolloutStarted" | "Ready")),
        "only rollouts and Ready: {normal:?}"
    );

    // Exposure and the policy removed: their objects are deleted, nothing else is touched.
    let rv = d.metadata.resource_version.clone();
    rt.block_on(env.api::<LlamaStackDistribution>(ns).patch(
        "llama",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"networking": {"allowedFrom": null, "expose": null}}})),
    ))?;
    env.eventually("the Ingress and NetworkPolicy are deleted", || async {
        let gone = env
            .api::<Ingress>(ns)
            .get_opt("llama-ingress")
            .await
            .ok()?
            .is_none()
            && env
                .api::<NetworkPolicy>(ns)
                .get_opt("llama-network-policy")
                .await
                .ok()?
                .is_none();
        gone.then_some(())
    })?;
    let cr = env.wait_ready(ns, "llama")?;
    assert_eq!(cr.status.unwrap().route_url, None);
    assert_eq!(
        rt.block_on(env.api::<Deployment>(ns).get("llama"))?
            .metadata
            .resource_version,
        rv,
        "the Deployment is untouched"
    );
    Ok(())
}

fn an_hpa_owns_the_replicas_and_ready_follows_it(env: &Env) -> Result<(), Failed> {
    let ns = "scaled";
    env.namespace(ns)?;
    env.create_llsd(ns, "auto", json!({"distribution": {"name": "starter"},
        "workload": {"autoscaling": {"minReplicas": 2, "maxReplicas": 4, "targetMemoryUtilizationPercentage": 70}}}))?;
    let hpa = env.eventually("the HPA exists", || async {
        env.api::<HorizontalPodAutoscaler>(ns)
            .get_opt("auto-hpa")
            .await
            .ok()?
    })?;
    let spec = hpa.spec.unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 4));
    assert_eq!(
        serde_json::to_value(&spec.metrics)?[0]["resource"]["name"],
        "memory"
    );
    // The autoscaler (kube-controller-manager) raises the Deployment to its minimum; Ready is
    // judged against that, and the operator never fights it over the replica count.
    let cr = env.eventually("two replicas available", || async {
        let cr = env
            .api::<LlamaStackDistribution>(ns)
            .get("auto")
            .await
            .ok()?;
        let st = cr.status.as_ref()?;
        (st.phase == Some(DistributionPhase::Ready) && st.available_replicas == Some(2))
            .then_some(cr.clone())
    })?;
    assert_eq!(env.condition(&cr, "Available").2, "2/2 replicas available");
    let d = env.rt.block_on(env.api::<Deployment>(ns).get("auto"))?;
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(2));
    let pdb = env.eventually("a PDB for two replicas", || async {
        env.api::<PodDisruptionBudget>(ns)
            .get_opt("auto-pdb")
            .await
            .ok()?
    })?;
    assert!(pdb.spec.is_some());
    // Down to a single possible replica: the budget goes, so it can never block a drain.
    env.rt
        .block_on(env.api::<LlamaStackDistribution>(ns).patch(
            "auto",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"autoscaling": {"minReplicas": 1}}}})),
        ))?;
    env.eventually("the PDB is removed", || async {
        env.api::<PodDisruptionBudget>(ns)
            .get_opt("auto-pdb")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })?;
    Ok(())
}

fn a_secret_value_change_rolls_the_pods_once(env: &Env) -> Result<(), Failed> {
    let ns = "rotate";
    env.namespace(ns)?;
    let secrets = env.api::<Secret>(ns);
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "vllm"}, "stringData": {"token": "first-value"}}),
    )?;
    env.rt
        .block_on(secrets.create(&PostParams::default(), &secret))?;
    env.create_llsd(ns, "keyed", json!({"distribution": {"name": "starter"},
        "providers": {"inference": {"provider": "vllm", "endpoint": "http://vllm:8000/v1", "apiKey": {"secretKeyRef": {"name": "vllm", "key": "token"}}}}}))?;
    env.wait_ready(ns, "keyed")?;
    let deployments = env.api::<Deployment>(ns);
    let before = env.rt.block_on(deployments.get("keyed"))?;
    let hash_before =
        pod_template(&before).metadata.unwrap().annotations.unwrap()["llamastack.io/secrets-hash"]
            .clone();
    assert!(
        !serde_json::to_string(&before)?.contains("first-value"),
        "no secret value in the Deployment"
    );

    // A label on the Secret is not a value change: no rollout.
    env.rt.block_on(secrets.patch(
        "vllm",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"rotated": "no"}}})),
    ))?;
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        env.rt
            .block_on(deployments.get("keyed"))?
            .metadata
            .generation,
        before.metadata.generation
    );

    env.rt.block_on(secrets.patch(
        "vllm",
        &PatchParams::default(),
        &Patch::Merge(json!({"stringData": {"token": "second-value"}})),
    ))?;
    let after = env.eventually("the Pods roll", || async {
        let d = deployments.get("keyed").await.ok()?;
        (d.metadata.generation != before.metadata.generation).then_some(d)
    })?;
    let hash_after =
        pod_template(&after).metadata.unwrap().annotations.unwrap()["llamastack.io/secrets-hash"]
            .clone();
    assert_ne!(hash_before, hash_after);
    assert_eq!(
        after.metadata.generation,
        before.metadata.generation.map(|g| g + 1),
        "one update"
    );
    assert_eq!(
        env_of(&after),
        env_of(&before),
        "the Secret is read by reference: only the hash changed"
    );
    env.wait_ready(ns, "keyed")?;
    Ok(())
}

/// Deployment writes the operator made to `ns/name`.
fn deployment_writes(env: &Env, ns: &str, name: &str) -> Result<usize, Failed> {
    Ok(env
        .operator_writes(ns)?
        .iter()
        .filter(|w| w["objectRef"]["resource"] == "deployments" && w["objectRef"]["name"] == name)
        .count())
}

/// A spec edited into another form of the same config (the single provider as a one-item list,
/// the default replica count spelt out) generates the same bytes: the Pods are not restarted and
/// the Deployment is not written.
fn a_spec_change_to_the_same_config_restarts_nothing(env: &Env) -> Result<(), Failed> {
    let ns = "same-config";
    env.namespace(ns)?;
    env.create_llsd(
        ns,
        "same",
        json!({"distribution": {"name": "starter"},
        "providers": {"inference": {"provider": "vllm", "endpoint": "http://vllm:8000/v1"}}}),
    )?;
    env.wait_ready(ns, "same")?;
    let deployments = env.api::<Deployment>(ns);
    let before = env.rt.block_on(deployments.get("same"))?;
    let writes = deployment_writes(env, ns, "same")?;
    env.rt.block_on(env.api::<LlamaStackDistribution>(ns).patch(
        "same",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"workload": {"replicas": 1},
            "providers": {"inference": [{"provider": "vllm", "endpoint": "http://vllm:8000/v1"}]}}})),
    ))?;
    let cr = env.wait_ready(ns, "same")?;
    assert_eq!(cr.metadata.generation, Some(2), "the spec did change");
    let after = env.rt.block_on(deployments.get("same"))?;
    assert_eq!(
        after.metadata.generation, before.metadata.generation,
        "no rollout"
    );
    assert_eq!(pod_template(&after), pod_template(&before));
    assert_eq!(
        deployment_writes(env, ns, "same")?,
        writes,
        "no Deployment write"
    );
    Ok(())
}

/// Another distribution name changes the image and the config together: one Deployment write,
/// one new ReplicaSet, whose Pods carry the new image with the new config (never one without the
/// other).
fn a_new_distribution_name_changes_image_and_config_at_once(env: &Env) -> Result<(), Failed> {
    let ns = "rename";
    env.namespace(ns)?;
    env.create_llsd(ns, "moving", json!({"distribution": {"name": "starter"}}))?;
    env.wait_ready(ns, "moving")?;
    let deployments = env.api::<Deployment>(ns);
    let before = env.rt.block_on(deployments.get("moving"))?;
    let writes = deployment_writes(env, ns, "moving")?;
    let image_and_config = |template: &k8s_openapi::api::core::v1::PodTemplateSpec| {
        let pod = template.spec.clone().unwrap();
        let image = pod.containers[0].image.clone().unwrap();
        let config = pod
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "config")
            .and_then(|v| v.config_map)
            .map(|c| c.name)
            .unwrap();
        (image, config)
    };
    let (old_image, old_config) = image_and_config(&pod_template(&before));
    env.rt
        .block_on(env.api::<LlamaStackDistribution>(ns).patch(
            "moving",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"distribution": {"name": "postgres-demo"}}})),
        ))?;
    env.wait_ready(ns, "moving")?;
    let after = env.rt.block_on(deployments.get("moving"))?;
    let (new_image, new_config) = image_and_config(&pod_template(&after));
    assert!(
        new_image.contains("distribution-postgres-demo"),
        "{new_image}"
    );
    assert_ne!((&new_image, &new_config), (&old_image, &old_config));
    assert!(
        new_image != old_image && new_config != old_config,
        "both changed"
    );
    assert_eq!(
        deployment_writes(env, ns, "moving")?,
        writes + 1,
        "in one write"
    );
    let sets = env.rt.block_on(
        env.api::<ReplicaSet>(ns)
            .list(&ListParams::default().labels("app.kubernetes.io/instance=moving")),
    )?;
    let mut pairs: Vec<(String, String)> = sets
        .items
        .iter()
        .map(|rs| image_and_config(&rs.spec.clone().unwrap().template.unwrap()))
        .collect();
    pairs.sort();
    let mut expected = vec![(old_image, old_config), (new_image, new_config.clone())];
    expected.sort();
    assert_eq!(pairs, expected, "only the old and the new pair ever ran");

    // A third config: once its rollout settles, the first one goes (the newest two generated
    // ConfigMaps stay), though the prune now lists only when the watches show something
    // unnamed.
    env.rt
        .block_on(env.api::<LlamaStackDistribution>(ns).patch(
            "moving",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": {"models": ["third"]}}})),
        ))?;
    let third = env.eventually("the third config's rollout", || async {
        let d = env.api::<Deployment>(ns).get("moving").await.ok()?;
        let (_, config) = image_and_config(&pod_template(&d));
        (config != new_config).then_some(config)
    })?;
    let mut kept = vec![new_config.clone(), third];
    kept.sort();
    env.eventually("the first config pruned", || async {
        let mut generated: Vec<String> = env
            .api::<ConfigMap>(ns)
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .filter(|n| n.starts_with("moving-config-"))
            .collect();
        generated.sort();
        (generated == kept).then_some(())
    })?;
    Ok(())
}

fn the_steady_state_makes_no_writes(env: &Env) -> Result<(), Failed> {
    let ns = "steady";
    env.namespace(ns)?;
    env.create_llsd(
        ns,
        "calm",
        json!({"distribution": {"name": "starter"}, "workload": {"replicas": 2},
        "networking": {"allowedFrom": {"namespaces": ["*"]}}}),
    )?;
    env.wait_ready(ns, "calm")?;
    // Let the last status write and its echo settle.
    std::thread::sleep(Duration::from_secs(3));
    let before = env.operator_writes(ns)?.len();
    assert!(before > 0, "the audit log sees the operator's writes");
    // Each of these triggers reconciles: a label on the resource, a whitespace-only edit of an
    // owned object's labels by someone else, a Pod deleted and replaced.
    let llsds = env.api::<LlamaStackDistribution>(ns);
    env.rt.block_on(llsds.patch(
        "calm",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
    ))?;
    env.rt.block_on(env.api::<Service>(ns).patch(
        "calm-service",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
    ))?;
    std::thread::sleep(Duration::from_secs(5));
    env.wait_ready(ns, "calm")?;
    let writes = env.operator_writes(ns)?;
    let extra: Vec<String> = writes[before..]
        .iter()
        .map(|w| {
            format!(
                "{} {}/{}",
                w["verb"], w["objectRef"]["resource"], w["objectRef"]["name"]
            )
        })
        .collect();
    assert!(extra.is_empty(), "steady state wrote: {extra:?}");
    Ok(())
}

/// A reconcile of a Ready stack reads only what the watches cannot answer for: no owned object
/// but the Deployment (whose rollout state the status reports) is read, whether it exists (the
/// Service, ServiceAccount, NetworkPolicy, generated ConfigMap) or not (Ingress, HPA, PDB), nor
/// the namespace's `default` ServiceAccount (its watch has its pull secrets, and follows a
/// change to them); a new stack does not read what it does not want either. A
/// deleted Service is made again, and a field of it changed by someone else is put back (both
/// seen through the watch, then read).
fn a_ready_stacks_reconcile_reads_no_owned_object_the_watches_know(
    env: &Env,
) -> Result<(), Failed> {
    let ns = "reads";
    env.namespace(ns)?;
    // The operator's reads in the namespace since the `from`th, that `chosen` picks, as
    // `resource/name`; `reads_in` picks the `get`s.
    let reads_since = |from: usize, chosen: &dyn Fn(&Value) -> bool| {
        let reads = env.plane.audit_reads().map_err(|e| e.to_string())?;
        Ok::<_, Failed>(
            reads[from..]
                .iter()
                .filter(|r| r["objectRef"]["namespace"] == ns && chosen(r))
                .map(|r| {
                    let part =
                        |key: &str| r["objectRef"][key].as_str().unwrap_or_default().to_owned();
                    format!("{}/{}", part("resource"), part("name"))
                })
                .collect::<Vec<String>>(),
        )
    };
    let reads_in = |from: usize| reads_since(from, &|r| r["verb"] == "get");
    // The operator starts with the suite: a first stack Ready means its watches have listed
    // (before that, every object is read, as it must be).
    env.create_llsd(ns, "warm", json!({"distribution": {"name": "starter"}}))?;
    env.wait_ready(ns, "warm")?;
    let created = env.plane.audit_reads().map_err(|e| e.to_string())?.len();
    env.create_llsd(
        ns,
        "quiet",
        json!({"distribution": {"name": "starter"},
        "networking": {"allowedFrom": {"namespaces": ["team-b"]}}}),
    )?;
    env.wait_ready(ns, "quiet")?;
    std::thread::sleep(Duration::from_secs(3));
    // A new stack: no operator has written its status, so nothing of its own can exist that the
    // watches miss, and what it does not want is not read. Nor its Service, to read its server
    // once it is Ready: the operator kept the cluster IP it was given when it made it.
    let first = reads_in(created)?;
    let not_wanted = [
        "ingresses/quiet-ingress",
        "horizontalpodautoscalers/quiet-hpa",
        "poddisruptionbudgets/quiet-pdb",
        "services/quiet-service",
    ];
    let needless: Vec<&String> = first
        .iter()
        .filter(|r| not_wanted.contains(&r.as_str()))
        .collect();
    assert!(
        needless.is_empty(),
        "a new stack read what it does not want: {needless:?} (all reads: {first:?})"
    );
    // Nor reads anything of its own that does not exist yet.
    let missing = reads_since(created, &|r| r["responseStatus"]["code"] == 404)?;
    assert!(
        missing.is_empty(),
        "a new stack read what it has not made: {missing:?}"
    );
    // Nor lists its ConfigMaps or Secrets to prune them (the watches show that the stack
    // controls nothing its template does not name), nor its ReplicaSets to judge its rollout's
    // Pods (with no revision Ready before, no rollback can be due), nor the Pods of a rollout
    // that never went 10 s without progress.
    let lists = reads_since(created, &|r| {
        let resource = r["objectRef"]["resource"].as_str().unwrap_or_default();
        r["verb"] == "list" && ["configmaps", "secrets", "replicasets", "pods"].contains(&resource)
    })?;
    assert!(lists.is_empty(), "a new stack listed {lists:?}");
    let before = env.plane.audit_reads().map_err(|e| e.to_string())?.len();
    let llsds = env.api::<LlamaStackDistribution>(ns);
    env.rt.block_on(llsds.patch(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
    ))?;
    let reconciled = env.eventually("a reconcile after the label", || async {
        let reads = reads_in(before).ok()?;
        reads
            .iter()
            .any(|r| r == "deployments/quiet")
            .then_some(reads)
    })?;
    std::thread::sleep(Duration::from_secs(2));
    let reads = reads_in(before)?;
    let owned = [
        "serviceaccounts/quiet-sa",
        "services/quiet-service",
        "networkpolicies/quiet-network-policy",
        "ingresses/quiet-ingress",
        "horizontalpodautoscalers/quiet-hpa",
        "poddisruptionbudgets/quiet-pdb",
        // Not owned: the namespace's account, whose pull secrets the server Pod uses.
        "serviceaccounts/default",
    ];
    let needless: Vec<&String> = reads
        .iter()
        .filter(|r| owned.contains(&r.as_str()) || r.starts_with("configmaps/quiet-config"))
        .collect();
    assert!(
        needless.is_empty(),
        "read what the watches know: {needless:?} (all reads: {reads:?}, first look: {reconciled:?})"
    );

    // A pull secret added to the namespace's `default` ServiceAccount: the stack's own account
    // copies the list the watch of those accounts now holds (the watch follows the change; that
    // the change also starts the reconcile is not shown here: the server's answers are due
    // within seconds of Ready and start one anyway).
    let accounts = env.api::<ServiceAccount>(ns);
    env.rt.block_on(accounts.patch(
        "default",
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default"}, "imagePullSecrets": [{"name": "added-later"}]})),
    ))?;
    env.eventually("the stack's account copies the new pull secret", || async {
        let account = accounts.get("quiet-sa").await.ok()?;
        let names = account.image_pull_secrets?;
        names.iter().any(|r| r.name == "added-later").then_some(())
    })?;

    // Deleted by someone: made again.
    let services = env.api::<Service>(ns);
    env.rt
        .block_on(services.delete("quiet-service", &DeleteParams::default()))?;
    env.eventually("the Service made again", || async {
        services.get_opt("quiet-service").await.ok().flatten()
    })?;
    // A field the operator sets, changed by someone else: put back.
    let made = env.rt.block_on(services.get("quiet-service"))?;
    let port = made.spec.unwrap().ports.unwrap()[0].port;
    env.rt.block_on(services.patch(
        "quiet-service",
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "Service",
            "spec": {"ports": [{"port": port, "protocol": "TCP", "targetPort": 9999}]}})),
    ))?;
    env.eventually("the Service's target port put back", || async {
        let service = services.get("quiet-service").await.ok()?;
        let port = service.spec?.ports?.into_iter().next()?;
        (port.target_port
            != Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(9999)))
        .then_some(())
    })?;

    // An HPA the stack controls without the door's label (as another operator leaves one): the
    // watches never see it, so a new generation reads each object it does not want once, finds
    // it and deletes it. The NetworkPolicy it no longer asks for goes too.
    let uid = env.rt.block_on(llsds.get("quiet"))?.metadata.uid.unwrap();
    let hpas = env.api::<HorizontalPodAutoscaler>(ns);
    let stray: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "quiet-hpa", "ownerReferences": [{"apiVersion": "llamastack.io/v1alpha2",
            "kind": "LlamaStackDistribution", "name": "quiet", "uid": uid, "controller": true}]},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "quiet"},
            "minReplicas": 1, "maxReplicas": 2}}))?;
    env.rt
        .block_on(hpas.create(&PostParams::default(), &stray))?;
    env.rt.block_on(llsds.patch(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"networking": null}})),
    ))?;
    let policies = env.api::<NetworkPolicy>(ns);
    env.eventually(
        "the stray HPA and the policy no longer wanted deleted",
        || async {
            let hpa = hpas.get_opt("quiet-hpa").await.ok()?;
            let policy = policies.get_opt("quiet-network-policy").await.ok()?;
            (hpa.is_none() && policy.is_none()).then_some(())
        },
    )?;
    Ok(())
}

fn deleting_the_resource_collects_everything(env: &Env) -> Result<(), Failed> {
    let ns = "gone";
    env.namespace(ns)?;
    env.create_llsd(ns, "brief", json!({"distribution": {"name": "starter"}, "workload": {"replicas": 2, "storage": {"size": "1Gi"}},
        "networking": {"allowedFrom": {"namespaces": ["x"]}, "expose": true}}))?;
    env.eventually("the objects exist", || async {
        env.api::<Ingress>(ns)
            .get_opt("brief-ingress")
            .await
            .ok()?
            .map(|_| ())
    })?;
    assert!(
        env.rt
            .block_on(env.api::<PersistentVolumeClaim>(ns).get_opt("brief-pvc"))?
            .is_some()
    );
    env.rt.block_on(
        env.api::<LlamaStackDistribution>(ns)
            .delete("brief", &DeleteParams::default()),
    )?;
    env.eventually("everything garbage-collected", || async {
        let lp = ListParams::default().labels("app.kubernetes.io/instance=brief");
        let left = env.count::<Deployment>(ns, &lp).await?
            + env.count::<ReplicaSet>(ns, &lp).await?
            + env.count::<Service>(ns, &lp).await?
            + env.count::<ConfigMap>(ns, &lp).await?
            + env.count::<ServiceAccount>(ns, &lp).await?
            + env.count::<NetworkPolicy>(ns, &lp).await?
            + env.count::<Ingress>(ns, &lp).await?
            + env.count::<PodDisruptionBudget>(ns, &lp).await?
            + env.count::<PersistentVolumeClaim>(ns, &lp).await?;
        (left == 0).then_some(())
    })?;
    Ok(())
}

fn ca_bundles_are_validated_copied_and_mounted(env: &Env) -> Result<(), Failed> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ns = "trust";
    env.namespace(ns)?;
    env.namespace("shared-certs")?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key)?.pem();
    // A stray private key next to the certificate must never reach the Pods.
    let source: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "corp-ca"},
        "data": {"ca.pem": format!("{cert}{}", key.serialize_pem()), "broken.pem": "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"}}))?;
    env.rt.block_on(
        env.api::<ConfigMap>("shared-certs")
            .create(&PostParams::default(), &source),
    )?;
    env.create_llsd(ns, "tls", json!({"distribution": {"name": "starter"},
        "networking": {"tls": {"caBundle": {"configMapName": "corp-ca", "configMapNamespace": "shared-certs", "configMapKeys": ["ca.pem"]}}}}))?;
    env.wait_ready(ns, "tls")?;
    // Named by content: `tls-ca-bundle-<hash>`, the one the Pods mount.
    let d = env.rt.block_on(env.api::<Deployment>(ns).get("tls"))?;
    let mounted = d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == "ca-bundle"))
        .and_then(|v| v.config_map.as_ref())
        .map(|c| c.name.clone())
        .ok_or("the Pods mount the CA bundle")?;
    assert!(mounted.starts_with("tls-ca-bundle-"), "{mounted}");
    let managed = env.rt.block_on(env.api::<ConfigMap>(ns).get(&mounted))?;
    let bundle = managed.data.unwrap()["ca-bundle.crt"].clone();
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 1);
    assert!(
        !bundle.contains("PRIVATE KEY"),
        "only certificates are copied"
    );
    let d = env.rt.block_on(env.api::<Deployment>(ns).get("tls"))?;
    assert!(env_of(&d).as_array().unwrap().contains(
        &json!({"name": "SSL_CERT_FILE", "value": "/etc/ssl/certs/ca-bundle/ca-bundle.crt"})
    ));
    let rv = d.metadata.resource_version.clone();

    // A key holding garbage: the running Deployment stays, the condition names the key.
    env.rt.block_on(env.api::<LlamaStackDistribution>(ns).patch("tls", &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"networking": {"tls": {"caBundle": {"configMapKeys": ["ca.pem", "broken.pem"]}}}}}))))?;
    let cr = env.eventually("the bad bundle is reported", || async {
        let cr = env
            .api::<LlamaStackDistribution>(ns)
            .get("tls")
            .await
            .ok()?;
        (cr.status.as_ref()?.phase == Some(DistributionPhase::Failed)).then_some(cr)
    })?;
    let (status, reason, message) = env.condition(&cr, "ConfigGenerated");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "CABundleInvalid")
    );
    assert!(
        message.contains("key \"broken.pem\"") && message.contains("shared-certs/corp-ca"),
        "{message}"
    );
    assert_eq!(
        env.rt
            .block_on(env.api::<Deployment>(ns).get("tls"))?
            .metadata
            .resource_version,
        rv
    );
    let events = env
        .rt
        .block_on(env.api::<Event>(ns).list(&ListParams::default()))?;
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("CABundleInvalid")
                && e.type_.as_deref() == Some("Warning"))
    );
    Ok(())
}

/// Runs last, alone: it restarts the operator.
fn a_restarted_operator_converges_without_duplicates(env: &Env) -> Result<(), Failed> {
    let ns = "restart";
    env.namespace(ns)?;
    env.stop_operator();
    let names = ["r1", "r2", "r3"];
    for name in names {
        env.create_llsd(
            ns,
            name,
            json!({"distribution": {"name": "starter"}, "workload": {"replicas": 2}}),
        )?;
    }
    // Interrupted right after it started writing.
    env.start_operator()?;
    env.eventually("a first write", || async {
        env.api::<Deployment>(ns)
            .get_opt("r1")
            .await
            .ok()?
            .map(|_| ())
    })?;
    env.stop_operator();
    env.start_operator()?;
    for name in names {
        env.wait_ready(ns, name)?;
        let lp = ListParams::default().labels(&format!("app.kubernetes.io/instance={name}"));
        let rt = &env.rt;
        assert_eq!(
            rt.block_on(env.api::<Deployment>(ns).list(&lp))?
                .items
                .len(),
            1
        );
        assert_eq!(
            rt.block_on(env.api::<ConfigMap>(ns).list(&lp))?.items.len(),
            1,
            "one generated ConfigMap"
        );
        assert_eq!(
            rt.block_on(env.api::<ReplicaSet>(ns).list(&lp))?
                .items
                .len(),
            1,
            "one rollout only"
        );
        assert_eq!(rt.block_on(env.api::<Pod>(ns).list(&lp))?.items.len(), 2);
    }
    env.stop_operator();
    Ok(())
}

/// A stack scaled to zero is Ready (nothing to wait for), and its conditions say nothing serves
/// (it used to stay Initializing forever).
fn a_stack_scaled_to_zero_is_ready_and_says_so(env: &Env) -> Result<(), Failed> {
    let ns = "zero";
    env.namespace(ns)?;
    env.create_llsd(
        ns,
        "idle",
        json!({"distribution": {"name": "starter"}, "workload": {"replicas": 0}}),
    )?;
    let llsd = env.wait_ready(ns, "idle")?;
    let (status, reason, _) = env.condition(&llsd, "Available");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ScaledToZero")
    );
    Ok(())
}

/// kwok renews a heartbeat Lease for its node, so the node stays Ready past the node-monitor
/// grace period for as long as the cluster runs (benches and a kept demo run for long).
fn the_fake_node_renews_its_heartbeat_lease(env: &Env) -> Result<(), Failed> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), "kube-node-lease");
    let renewed = |env: &Env| -> Result<Option<String>, Failed> {
        let lease = env.rt.block_on(leases.get_opt("kwok-node-0"))?;
        Ok(lease
            .and_then(|l| l.spec)
            .and_then(|s| s.renew_time)
            .map(|t| format!("{:?}", t.0)))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let first = loop {
        if let Some(time) = renewed(env)? {
            break time;
        }
        if std::time::Instant::now() > deadline {
            return Err("no heartbeat Lease for kwok-node-0 in kube-node-lease".into());
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    while renewed(env)?.as_deref() == Some(first.as_str()) {
        if std::time::Instant::now() > deadline {
            return Err(format!("the Lease of kwok-node-0 was not renewed since {first}").into());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok(())
}

/// kwok's failure stages (`test-support/src/kwok_stages.rs`) make three stacks' Pods fail the way a
/// kubelet reports it; each status names the failure with the container's words, the phase is
/// Failed, and a Warning Event says why.
fn pod_failures_reach_the_status_and_a_warning(env: &Env) -> Result<(), Failed> {
    let ns = "failing";
    env.namespace(ns)?;
    let cases = [
        (CRASH_LOOP, "ServerCrashLooping", CRASH_MESSAGE),
        (IMAGE_PULL, "ImagePullFailed", "401 Unauthorized"),
        (
            INIT_CRASH_LOOP,
            "InitContainerCrashLooping",
            INIT_CRASH_MESSAGE,
        ),
    ];
    let starter = json!({"distribution": {"name": "starter"}});
    // Init containers come with an external provider: the first, copy-tools, crash-loops.
    let with_provider = json!({"distribution": {"name": "starter"}, "externalProviders": {"safety": [
        {"providerId": "acme", "image": "registry.example.com/acme/words:0.1.0"}]}});
    for (name, _, _) in cases {
        let spec = if name == INIT_CRASH_LOOP {
            &with_provider
        } else {
            &starter
        };
        env.create_llsd(ns, name, spec.clone())?;
    }
    for (name, reason, says) in cases {
        let cr = env.eventually(&format!("{name}: DeploymentReady {reason}"), || async {
            let cr = env.api::<LlamaStackDistribution>(ns).get(name).await.ok()?;
            let conditions = cr.status.as_ref()?.conditions.as_ref()?;
            conditions
                .iter()
                .any(|c| c.type_ == "DeploymentReady" && c.reason == reason)
                .then_some(cr.clone())
        })?;
        let (status, _, message) = env.condition(&cr, "DeploymentReady");
        assert_eq!(status, "False", "{name}");
        assert!(message.contains(says), "{name}: {message}");
        let phase = cr.status.as_ref().and_then(|s| s.phase);
        assert_eq!(phase, Some(DistributionPhase::Failed), "{name}");
        env.eventually(&format!("{name}: a Warning {reason}"), || async {
            let events = env
                .api::<Event>(ns)
                .list(&ListParams::default())
                .await
                .ok()?;
            events
                .items
                .iter()
                .any(|e| {
                    e.type_.as_deref() == Some("Warning")
                        && e.reason.as_deref() == Some(reason)
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                        && e.note.as_deref().is_some_and(|n| n.contains(says))
                })
                .then_some(())
        })?;
    }
    // The Pods of those without external providers were listed for the status, but not before
    // their rollout went 10 s without progress (the Deployments' creation times have whole
    // seconds, hence 8); the ReplicaSets of none, to judge a rollback: with no revision Ready
    // before, none can be due.
    let at = |event: &Value| {
        event["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let created = env
        .plane
        .audit_writes(OPERATOR_USER)
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|w| {
            w["objectRef"]["namespace"] == ns && w["objectRef"]["resource"] == "deployments"
        })
        .find_map(at)
        .ok_or("the Deployments' creation in the audit log")?;
    let lists = |resource: &str, of: &[&str]| -> Result<Vec<jiff::Timestamp>, Failed> {
        let selects = |uri: &str| {
            of.iter().any(|name| {
                uri.contains(&format!("instance%3D{name}%2C"))
                    || uri.contains(&format!("instance={name},"))
            })
        };
        Ok(env
            .plane
            .audit_reads()
            .map_err(|e| e.to_string())?
            .iter()
            .filter(|r| {
                r["objectRef"]["namespace"] == ns
                    && r["verb"] == "list"
                    && r["objectRef"]["resource"] == resource
                    && selects(r["requestURI"].as_str().unwrap_or_default())
            })
            .filter_map(at)
            .collect())
    };
    let first_pod_list = lists("pods", &[CRASH_LOOP, IMAGE_PULL])?
        .into_iter()
        .min()
        .ok_or("the Pods were listed")?;
    let after = first_pod_list.duration_since(created);
    assert!(
        after >= jiff::SignedDuration::from_secs(8),
        "Pods listed {after:?} after the first Deployment was made"
    );
    let every = [CRASH_LOOP, IMAGE_PULL, INIT_CRASH_LOOP];
    assert_eq!(
        lists("replicasets", &every)?,
        Vec::new(),
        "ReplicaSets listed"
    );
    Ok(())
}

/// In every state the operator produces, kstatus agrees with the phase (Ready is `Current`,
/// converging is `InProgress`, Failed is `Failed`), and `kubectl wait --for=condition=Ready`
/// returns for a Ready stack and not for a failed one.
fn kstatus_and_kubectl_wait_agree_with_the_operator(env: &Env) -> Result<(), Failed> {
    let kstatus = support::kstatus::kstatus_bin().map_err(|e| e.to_string())?;
    let ns = "kstatus";
    env.namespace(ns)?;
    let starter = json!({"distribution": {"name": "starter"}});
    let cases = [
        (
            "ready",
            starter.clone(),
            DistributionPhase::Ready,
            "Current",
        ),
        (
            "stopped",
            json!({"distribution": {"name": "starter"}, "workload": {"replicas": 0}}),
            DistributionPhase::Ready,
            "Current",
        ),
        (
            "unschedulable",
            // More than the fake node's 4000 cores: exactly 4000 fits an empty node, and a Pod
            // scheduled there first left no room for any other stack of the suite.
            json!({"distribution": {"name": "starter"},
                "workload": {"resources": {"requests": {"cpu": "5000"}}}}),
            DistributionPhase::Initializing,
            "InProgress",
        ),
        (CRASH_LOOP, starter, DistributionPhase::Failed, "Failed"),
        (
            "secret-missing",
            json!({"distribution": {"name": "starter"}, "storage": {"sql": {"type": "postgres",
                "connectionString": {"secretKeyRef": {"name": "absent", "key": "url"}}}}}),
            DistributionPhase::Failed,
            "Failed",
        ),
        (
            "registry-down",
            json!({"distribution": {"image": "127.0.0.1:9/nowhere/distribution:1"}}),
            DistributionPhase::Failed,
            "Failed",
        ),
    ];
    for (name, spec, _, _) in &cases {
        env.create_llsd(ns, name, spec.clone())?;
    }
    for (name, _, phase, expected) in &cases {
        env.eventually(&format!("{name}: phase {phase:?}"), || async {
            let cr = env.api::<LlamaStackDistribution>(ns).get(name).await.ok()?;
            let status = cr.status.as_ref()?;
            // Settled: the unschedulable stack has said why it waits.
            let said = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "DeploymentReady" && c.reason != "DeploymentPending")
                || *phase != DistributionPhase::Initializing;
            (status.phase == Some(*phase)
                && status.observed_generation == cr.metadata.generation
                && said)
                .then_some(())
        })?;
        let verdict =
            support::kstatus::verdict(&env.plane, &kstatus, ns, name).map_err(|e| e.to_string())?;
        assert_eq!(verdict, *expected, "{name} in phase {phase:?}");
    }
    let wait = |name: &str, timeout: &str| -> Result<bool, Failed> {
        let out = env
            .plane
            .kubectl()
            .args([
                "wait",
                "--for=condition=Ready",
                "-n",
                ns,
                &format!("llsd/{name}"),
            ])
            .arg(format!("--timeout={timeout}"))
            .output()?;
        Ok(out.status.success())
    };
    assert!(
        wait("ready", "60s")?,
        "kubectl wait returns for a Ready stack"
    );
    assert!(
        !wait(CRASH_LOOP, "3s")?,
        "kubectl wait does not return for a crash-looping stack"
    );
    Ok(())
}

fn start() -> Result<Env, Failed> {
    let (plane, rt, client) = start_cluster_with_crd().map_err(|e| e.to_string())?;
    let env = Env {
        plane,
        rt,
        client,
        operator: Mutex::new(None),
    };
    env.namespace(OPERATOR_NAMESPACE)?;
    env.start_operator()?;
    Ok(env)
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "every_object_of_a_ready_distribution",
                every_object_of_a_ready_distribution,
            ),
            (
                "a_ready_stacks_reconcile_reads_no_owned_object_the_watches_know",
                a_ready_stacks_reconcile_reads_no_owned_object_the_watches_know,
            ),
            (
                "kstatus_and_kubectl_wait_agree_with_the_operator",
                kstatus_and_kubectl_wait_agree_with_the_operator,
            ),
            (
                "an_hpa_owns_the_replicas_and_ready_follows_it",
                an_hpa_owns_the_replicas_and_ready_follows_it,
            ),
            (
                "a_secret_value_change_rolls_the_pods_once",
                a_secret_value_change_rolls_the_pods_once,
            ),
            (
                "the_steady_state_makes_no_writes",
                the_steady_state_makes_no_writes,
            ),
            (
                "a_spec_change_to_the_same_config_restarts_nothing",
                a_spec_change_to_the_same_config_restarts_nothing,
            ),
            (
                "a_new_distribution_name_changes_image_and_config_at_once",
                a_new_distribution_name_changes_image_and_config_at_once,
            ),
            (
                "deleting_the_resource_collects_everything",
                deleting_the_resource_collects_everything,
            ),
            (
                "ca_bundles_are_validated_copied_and_mounted",
                ca_bundles_are_validated_copied_and_mounted,
            ),
            (
                "the_fake_node_renews_its_heartbeat_lease",
                the_fake_node_renews_its_heartbeat_lease,
            ),
            (
                "a_stack_scaled_to_zero_is_ready_and_says_so",
                a_stack_scaled_to_zero_is_ready_and_says_so,
            ),
            (
                "pod_failures_reach_the_status_and_a_warning",
                pod_failures_reach_the_status_and_a_warning,
            ),
        ]),
        "the cluster (control plane, controllers, scheduler, kwok) and the operator",
        || start().map_err(|e| e.message().unwrap_or_default().to_owned()),
        Some((
            "a_restarted_operator_converges_without_duplicates",
            a_restarted_operator_converges_without_duplicates,
        )),
    )
}
