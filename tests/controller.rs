//! The controller against a real kube-apiserver (no scheduler or kubelet: Deployments get no
//! Pods, so the checks are on the objects the operator writes and on its writes themselves).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use llama_stack_operator::api::common::DistributionPhase;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_operator::controller::{Context, reconcile};
use llama_stack_resolver::Resolver;
use serde_json::{Value, json};
use support::control_plane::start_with_crd;
use support::kube_objects::{condition, offline_resolver_options};

struct Fixture {
    client: kube::Client,
    ctx: Arc<Context>,
    ns: String,
}

impl Fixture {
    fn new(client: &kube::Client, ns: &str) -> Self {
        let resolver = Arc::new(Resolver::new(offline_resolver_options()).unwrap());
        Self {
            client: client.clone(),
            ctx: Arc::new(Context::new(client.clone(), resolver)),
            ns: ns.to_owned(),
        }
    }

    fn llsds(&self) -> Api<LlamaStackDistribution> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn reconcile(&self, name: &str) -> Action {
        let cr = self.llsds().get(name).await.expect("the LLSD exists");
        reconcile(Arc::new(cr), self.ctx.clone())
            .await
            .expect("reconcile succeeds")
    }

    async fn config_maps(&self, name: &str) -> Vec<ConfigMap> {
        let lp = ListParams::default().labels(&format!("app.kubernetes.io/instance={name}"));
        Api::<ConfigMap>::namespaced(self.client.clone(), &self.ns)
            .list(&lp)
            .await
            .unwrap()
            .items
    }

    async fn deployment(&self, name: &str) -> Deployment {
        Api::<Deployment>::namespaced(self.client.clone(), &self.ns)
            .get(name)
            .await
            .unwrap()
    }

    async fn condition(&self, name: &str, type_: &str) -> (String, String, String) {
        let cr = self.llsds().get(name).await.unwrap();
        condition(&cr, type_).unwrap_or_else(|| panic!("no {type_} condition"))
    }
}

fn container_env(d: &Deployment) -> Vec<Value> {
    serde_json::to_value(
        &d.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .env,
    )
    .unwrap()
    .as_array()
    .cloned()
    .unwrap_or_default()
}

#[test]
fn reconcile_creates_updates_and_preserves() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "stacks"}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
        let f = Fixture::new(&client, "stacks");

        // Missing Secret: no Deployment, the condition says which and where.
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s1"}, "spec": {"distribution": {"name": "starter"},
            "providers": {"inference": {"provider": "vllm", "endpoint": "http://vllm:8000/v1", "apiKey": {"secretKeyRef": {"name": "vllm-creds", "key": "token"}}}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("s1").await;
        assert_eq!(f.condition("s1", "SecretsResolved").await, ("False".into(), "SecretNotFound".into(),
            "Secret \"vllm-creds\" not found in namespace \"stacks\". Referenced by: spec.providers.inference.apiKey.secretKeyRef.name".into()));
        assert!(Api::<Deployment>::namespaced(client.clone(), "stacks").get_opt("s1").await.unwrap().is_none());

        // The Secret appears: config, Deployment and Service are created.
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "vllm-creds"}, "stringData": {"token": "not-logged"}})).unwrap();
        Api::<Secret>::namespaced(client.clone(), "stacks").create(&PostParams::default(), &secret).await.unwrap();
        f.reconcile("s1").await;
        let cms = f.config_maps("s1").await;
        assert_eq!(cms.len(), 1);
        let cm = &cms[0];
        assert_eq!(cm.immutable, Some(true));
        let yaml = &cm.data.as_ref().unwrap()["config.yaml"];
        assert!(yaml.contains("api_token: ${env.LLSD_VLLM_API_KEY}") && !yaml.contains("not-logged"));
        let hash = &cm.metadata.annotations.as_ref().unwrap()["llamastack.io/config-hash"];
        assert_eq!(cm.metadata.name.as_deref().unwrap(), format!("s1-config-{}", &hash["sha256:".len().."sha256:".len() + 8]));
        let d = f.deployment("s1").await;
        let env = container_env(&d);
        assert!(env.contains(&json!({"name": "LLSD_VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-creds", "key": "token"}}})));
        assert!(env.contains(&json!({"name": "OGX_PORT", "value": "8321"})), "the catalog's OGX image");
        let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        assert_eq!(pod.volumes.as_ref().unwrap()[0].config_map.as_ref().unwrap().name, cm.metadata.name.clone().unwrap());
        assert_eq!(pod.containers[0].image.as_deref(), Some("docker.io/ogxai/distribution-starter:1.3.0"));
        assert_eq!(d.metadata.owner_references.as_ref().unwrap()[0].controller, Some(true));
        Api::<Service>::namespaced(client.clone(), "stacks").get("s1-service").await.unwrap();
        assert_eq!(f.condition("s1", "ConfigGenerated").await.0, "True");
        let status = f.llsds().get("s1").await.unwrap().status.unwrap();
        assert_eq!(status.config_generation.as_ref().unwrap().config_map_name, cm.metadata.name);

        // Nothing changed (a label edit): no write at all, status included.
        let before = (f.deployment("s1").await.metadata.resource_version, f.llsds().get("s1").await.unwrap().metadata.resource_version);
        f.llsds().patch("s1", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}}))).await.unwrap();
        let cr_rv = f.llsds().get("s1").await.unwrap().metadata.resource_version;
        f.reconcile("s1").await;
        f.reconcile("s1").await;
        assert_eq!(f.deployment("s1").await.metadata.resource_version, before.0, "no Deployment write");
        assert_eq!(f.llsds().get("s1").await.unwrap().metadata.resource_version, cr_rv, "no status write");
        assert_eq!(f.config_maps("s1").await.len(), 1);

        // A real change: one new ConfigMap, one Deployment update.
        let gen_before = f.deployment("s1").await.metadata.generation;
        f.llsds().patch("s1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"resources": {"models": ["meta-llama/Llama-3.2-3B-Instruct"]}}}))).await.unwrap();
        f.reconcile("s1").await;
        assert_eq!(f.config_maps("s1").await.len(), 2);
        assert_eq!(f.deployment("s1").await.metadata.generation, gen_before.map(|g| g + 1), "exactly one Deployment update");

        // An invalid change: the Deployment stays exactly as it was, the condition says why.
        let rv = f.deployment("s1").await.metadata.resource_version;
        f.llsds().patch("s1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"resources": {"models": [{"name": "m", "provider": "nope"}]}}}))).await.unwrap();
        f.reconcile("s1").await;
        assert_eq!(f.deployment("s1").await.metadata.resource_version, rv, "a bad change never touches the running Deployment");
        let (status, reason, message) = f.condition("s1", "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "ConfigGenerationFailed"));
        assert!(message.contains("spec.resources.models[0].provider: no inference provider has id \"nope\""), "{message}");

        // Three more configs: only the newest two generated ConfigMaps are kept.
        for model in ["a", "b", "c"] {
            f.llsds().patch("s1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"resources": {"models": [model]}}}))).await.unwrap();
            f.reconcile("s1").await;
        }
        let kept = f.config_maps("s1").await;
        assert_eq!(kept.len(), 2);
        let current = f.deployment("s1").await.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0].config_map.clone().unwrap().name;
        assert!(kept.iter().any(|c| c.metadata.name.as_deref() == Some(current.as_str())), "the ConfigMap in use is never pruned");
    });
}

#[test]
fn override_config_mounts_the_users_config_map() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "own"}, "spec": {"distribution": {"name": "starter"}, "overrideConfig": {"configMapName": "my-config"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("own").await;
        let (status, _, message) = f.condition("own", "ConfigGenerated").await;
        assert_eq!(status, "False");
        assert_eq!(message, "ConfigMap \"my-config\" not found in namespace \"default\". Referenced by: spec.overrideConfig.configMapName");
        let user: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "my-config"}, "data": {"config.yaml": "version: 2\ndistro_name: mine\nproviders:\n  inference: []\n"}})).unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        cms.create(&PostParams::default(), &user).await.unwrap();
        f.reconcile("own").await;
        let d = f.deployment("own").await;
        let pod = d.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.volumes.unwrap()[0].config_map.as_ref().unwrap().name, "my-config");
        assert!(f.config_maps("own").await.iter().all(|c| !c.metadata.name.as_deref().unwrap_or_default().starts_with("own-config-")), "nothing is generated");
        let status = f.llsds().get("own").await.unwrap().status.unwrap();
        assert_eq!(status.resolved_distribution.unwrap().config_source, Some(llama_stack_operator::api::v1alpha2::ConfigSource::OverrideConfig));
        // Editing the user's ConfigMap changes the hash: the Pods roll.
        let hash_before = f.deployment("own").await.spec.unwrap().template.metadata.unwrap().annotations.unwrap()["llamastack.io/config-hash"].clone();
        cms.patch("my-config", &PatchParams::default(), &Patch::Merge(json!({"data": {"config.yaml": "version: 2\ndistro_name: mine2\nproviders: {}\n"}}))).await.unwrap();
        f.reconcile("own").await;
        let hash_after = f.deployment("own").await.spec.unwrap().template.metadata.unwrap().annotations.unwrap()["llamastack.io/config-hash"].clone();
        assert_ne!(hash_before, hash_after);
    });
}

#[test]
fn postgres_connection_strings_are_split_into_an_owned_secret() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
        let pg: Secret = serde_json::from_value(json!({"metadata": {"name": "pg"}, "stringData": {"url": "not a url with s3cr3t"}})).unwrap();
        secrets.create(&PostParams::default(), &pg).await.unwrap();
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "db"}, "spec": {"distribution": {"name": "starter"},
            "storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("db").await;
        let (status, _, message) = f.condition("db", "ConfigGenerated").await;
        assert_eq!(status, "False");
        assert!(message.contains("is not a PostgreSQL URL") && !message.contains("s3cr3t"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("db").await.unwrap().is_none());

        secrets.patch("pg", &PatchParams::default(), &Patch::Merge(json!({"stringData": {"url": "postgres://llama:p%40ss@pg.db:5433/stack?sslmode=verify-full"}}))).await.unwrap();
        f.reconcile("db").await;
        // Named after the referenced values' hash (the Pod template's secrets-hash): each revision
        // reads the connection string it started with.
        let derived_name = |d: &Deployment| {
            let env = container_env(d);
            let password = env.iter().find(|e| e["name"] == "LLSD_STORAGE_SQL_PASSWORD").unwrap();
            password["valueFrom"]["secretKeyRef"]["name"].as_str().unwrap().to_owned()
        };
        let first = derived_name(&f.deployment("db").await);
        let hash = f.deployment("db").await.spec.unwrap().template.metadata.unwrap().annotations.unwrap()["llamastack.io/secrets-hash"].clone();
        assert_eq!(first, format!("db-derived-{}", &hash["sha256:".len()..][..8]));
        let derived = secrets.get(&first).await.unwrap();
        let data = derived.data.unwrap();
        let text = |data: &std::collections::BTreeMap<String, k8s_openapi::ByteString>, k: &str| String::from_utf8(data[k].0.clone()).unwrap();
        assert_eq!((text(&data, "storage-sql-host"), text(&data, "storage-sql-port"), text(&data, "storage-sql-db"), text(&data, "storage-sql-user"), text(&data, "storage-sql-password")),
            ("pg.db".into(), "5433".into(), "stack".into(), "llama".into(), "p@ss".into()));
        assert_eq!(derived.metadata.owner_references.unwrap()[0].name, "db");
        let env = container_env(&f.deployment("db").await);
        assert!(env.contains(&json!({"name": "LLSD_STORAGE_SQL_PASSWORD", "valueFrom": {"secretKeyRef": {"name": first, "key": "storage-sql-password"}}})));
        // The URL's TLS mode reaches the client; an option the URL lacks stays unset.
        assert_eq!(text(&data, "storage-sql-sslmode"), "verify-full");
        assert!(!data.contains_key("storage-sql-sslrootcert"));
        assert!(env.contains(&json!({"name": "PGSSLROOTCERT", "valueFrom": {"secretKeyRef": {"name": first, "key": "storage-sql-sslrootcert", "optional": true}}})));
        let cm = &f.config_maps("db").await[0];
        let yaml = &cm.data.as_ref().unwrap()["config.yaml"];
        assert!(yaml.contains("password: ${env.LLSD_STORAGE_SQL_PASSWORD}") && !yaml.contains("p@ss"));
        // Unchanged: the derived Secret is not rewritten.
        let rv = secrets.get(&first).await.unwrap().metadata.resource_version;
        f.reconcile("db").await;
        assert_eq!(secrets.get(&first).await.unwrap().metadata.resource_version, rv);

        // A new connection string is a new Secret: the one the running revision reads is left as it
        // was, so a rollback to that revision returns to its connection string too.
        secrets.patch("pg", &PatchParams::default(), &Patch::Merge(json!({"stringData": {"url": "postgres://llama:rotated@pg.db:5433/stack"}}))).await.unwrap();
        f.reconcile("db").await;
        let second = derived_name(&f.deployment("db").await);
        assert_ne!(second, first);
        assert_eq!(text(&secrets.get(&second).await.unwrap().data.unwrap(), "storage-sql-password"), "rotated");
        let kept = secrets.get(&first).await.unwrap();
        assert_eq!((text(kept.data.as_ref().unwrap(), "storage-sql-password"), kept.metadata.resource_version), ("p@ss".to_owned(), rv), "untouched");

        // No longer needed (the stack left PostgreSQL): deleted once the rollout has settled.
        f.llsds().patch("db", &PatchParams::default(), &Patch::Merge(json!({"spec": {"storage": null}}))).await.unwrap();
        f.reconcile("db").await;
        assert!(secrets.get_opt(&second).await.unwrap().is_some(), "kept while old Pods may still read it");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let generation = f.deployment("db").await.metadata.generation;
        deployments.patch_status("db", &PatchParams::default(), &Patch::Merge(json!({"status": {
            "observedGeneration": generation, "replicas": 1, "updatedReplicas": 1}}))).await.unwrap();
        f.reconcile("db").await;
        for name in [&first, &second] {
            assert!(secrets.get_opt(name).await.unwrap().is_none(), "the unused derived Secret {name} is deleted");
        }

        // A Secret of that name the stack does not own (a user's) is never overwritten.
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "db2"}, "spec": {"distribution": {"name": "starter"},
            "storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("db2").await;
        let taken = derived_name(&f.deployment("db2").await);
        secrets.delete(&taken, &Default::default()).await.unwrap();
        let theirs: Secret = serde_json::from_value(json!({"metadata": {"name": taken}, "stringData": {"mine": "keep"}})).unwrap();
        secrets.create(&PostParams::default(), &theirs).await.unwrap();
        f.reconcile("db2").await;
        let (status, _, message) = f.condition("db2", "ConfigGenerated").await;
        assert_eq!(status, "False");
        assert!(message.contains(&format!("Secret \"{taken}\" exists and is not this stack's")), "{message}");
        let kept = secrets.get(&taken).await.unwrap();
        assert_eq!(kept.data.unwrap().keys().collect::<Vec<_>>(), vec!["mine"], "the user's Secret is untouched");
    });
}

#[test]
fn external_providers_are_checked_before_any_pod_then_installed_by_init_containers() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let create = |name: &str, external: Value, inline: Value| {
            let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": name}, "spec": {"distribution": {"name": "starter"}, "providers": inline, "externalProviders": external}})).unwrap();
            cr
        };
        // Without its own image the operator cannot run the install steps: said, no Pod.
        let cr = create("noimage", json!({"safety": [{"providerId": "p", "image": "reg/p:1"}]}), json!({}));
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("noimage").await;
        let (status, reason, message) = f.condition("noimage", "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "ExternalProviderInvalid"));
        assert!(message.contains("OPERATOR_IMAGE"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("noimage").await.unwrap().is_none());

        let resolver = Arc::new(Resolver::new(offline_resolver_options()).unwrap());
        let ctx = Arc::new(Context::new(client.clone(), resolver).with_operator_image(Some("reg/operator:1".into())));
        let reconcile_with_image = |name: &'static str| {
            let ctx = ctx.clone();
            let llsds = f.llsds();
            async move {
                let cr = llsds.get(name).await.unwrap();
                reconcile(Arc::new(cr), ctx).await.unwrap();
            }
        };
        // The same ID twice, in two sections: refused before any Pod, naming both images.
        let cr = create("dup", json!({"safety": [{"providerId": "p", "image": "reg/a:1"}], "inference": [{"providerId": "p", "image": "reg/b:1"}]}), json!({}));
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        reconcile_with_image("dup").await;
        let (status, _, message) = f.condition("dup", "ConfigGenerated").await;
        assert_eq!(status, "False");
        assert!(message.contains("Duplicate external provider ID 'p'") && message.contains("reg/a:1") && message.contains("reg/b:1"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("dup").await.unwrap().is_none());
        // An external ID equal to an inline provider's of another API: refused.
        let cr = create("clash", json!({"safety": [{"providerId": "vllm", "image": "reg/v:1"}]}), json!({"inference": {"provider": "vllm", "endpoint": "http://v:8000/v1"}}));
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        reconcile_with_image("clash").await;
        let message = f.condition("clash", "ConfigGenerated").await.2;
        assert!(message.contains("Provider ID 'vllm' is used by spec.providers.inference and by externalProviders.safety"), "{message}");
        // Of the same API: the external provider overrides it, with a warning.
        let cr = create("override", json!({"inference": [{"providerId": "vllm", "image": "reg/v:1"}]}), json!({"inference": {"provider": "vllm", "endpoint": "http://v:8000/v1"}}));
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        reconcile_with_image("override").await;
        let (status, _, message) = f.condition("override", "ConfigGenerated").await;
        assert_eq!(status, "True", "{message}");
        assert!(message.contains("WARNING: External provider 'vllm' (image reg/v:1) overrides the provider with the same ID in spec.providers.inference"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("override").await.unwrap().is_some());

        // Valid: the Deployment runs the steps in order, the provider's in its image.
        let cr = create("ok", json!({"safety": [{"providerId": "first", "image": "reg/f:1"}], "inference": [{"providerId": "second", "image": "reg/s:1", "imagePullPolicy": "Always"}]}), json!({}));
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        reconcile_with_image("ok").await;
        let pod = f.deployment("ok").await.spec.unwrap().template.spec.unwrap();
        let init: Vec<(String, String)> = pod.init_containers.unwrap().into_iter().map(|c| (c.name, c.image.unwrap_or_default())).collect();
        assert_eq!(init, [("copy-tools".into(), "reg/operator:1".into()), ("install-provider-second".into(), "reg/s:1".into()),
            ("install-provider-first".into(), "reg/f:1".into()), ("install-packages".into(), "docker.io/ogxai/distribution-starter:1.3.0".into()),
            ("merge-config".into(), "docker.io/ogxai/distribution-starter:1.3.0".into()), ("preflight".into(), "docker.io/ogxai/distribution-starter:1.3.0".into())],
            "CRD order: the API sections in the schema's order (inference before safety), then list order");
        let env = serde_json::to_value(&pod.containers[0].env).unwrap();
        // The catalog's OGX image runs its entrypoint on the merged config.
        assert!(env.as_array().unwrap().contains(&json!({"name": "RUN_CONFIG_PATH", "value": "/opt/llama-stack/config/config.yaml"})));
        assert!(env.as_array().unwrap().contains(&json!({"name": "OGX_CONFIG", "value": "/opt/llama-stack/config/config.yaml"})));
        let status = f.llsds().get("ok").await.unwrap().status.unwrap();
        let phases: Vec<_> = status.external_providers.unwrap().into_iter().map(|p| (p.provider_id, p.phase)).collect();
        use llama_stack_operator::api::common::ExternalProviderPhase::Pending;
        assert_eq!(phases, [("second".to_owned(), Pending), ("first".to_owned(), Pending)], "no Pod yet (no kubelet here)");
    });
}

#[test]
fn workload_storage_gets_a_pvc_that_is_never_shrunk() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "kept"}, "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {"size": "5Gi", "mountPath": "/data"}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("kept").await;
        let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
        let size = |p: &k8s_openapi::api::core::v1::PersistentVolumeClaim| p.spec.as_ref().unwrap().resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0.clone();
        let pvc = pvcs.get("kept-pvc").await.unwrap();
        assert_eq!(size(&pvc), "5Gi");
        assert_eq!(pvc.metadata.owner_references.unwrap()[0].name, "kept");
        let d = f.deployment("kept").await;
        let spec = d.spec.unwrap();
        assert_eq!(spec.strategy.unwrap().type_.as_deref(), Some("Recreate"), "an RWO volume needs Recreate");
        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.volumes.unwrap()[1].persistent_volume_claim.as_ref().unwrap().claim_name, "kept-pvc");
        let env = serde_json::to_value(&pod.containers[0].env).unwrap();
        assert!(env.as_array().unwrap().contains(&json!({"name": "OGX_CONFIG_DIR", "value": "/data"})));
        f.llsds().patch("kept", &PatchParams::default(), &Patch::Merge(json!({"spec": {"workload": {"storage": {"size": "2Gi"}}}}))).await.unwrap();
        f.reconcile("kept").await;
        assert_eq!(size(&pvcs.get("kept-pvc").await.unwrap()), "5Gi", "a PVC is never shrunk");

        // Storage added to a running stack (the OGX operator's TestRolloutWithStorage steps): the
        // API server defaulted a rollingUpdate beside RollingUpdate, which must go with the
        // switch to Recreate, or every write of the Deployment is refused from then on.
        let grows: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "grows"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &grows).await.unwrap();
        f.reconcile("grows").await;
        let strategy = f.deployment("grows").await.spec.unwrap().strategy.unwrap();
        assert!(strategy.rolling_update.is_some(), "defaulted by the API server: {strategy:?}");
        f.llsds().patch("grows", &PatchParams::default(), &Patch::Merge(json!({"spec": {"workload": {"storage": {}}}}))).await.unwrap();
        f.reconcile("grows").await;
        let (status, reason, message) = f.condition("grows", "DeploymentUpdated").await;
        assert_ne!(reason, "ApplyFailed", "{status} {message}");
        let spec = f.deployment("grows").await.spec.unwrap();
        let strategy = spec.strategy.unwrap();
        assert_eq!((strategy.type_.as_deref(), strategy.rolling_update), (Some("Recreate"), None));
        let claims: Vec<String> = spec.template.spec.unwrap().volumes.into_iter().flatten()
            .filter_map(|v| v.persistent_volume_claim).map(|c| c.claim_name).collect();
        assert_eq!(claims, ["grows-pvc"], "the claim is mounted");
        // The next change rolls out, and storage removed again switches back.
        f.llsds().patch("grows", &PatchParams::default(), &Patch::Merge(json!({"spec": {"workload": {"storage": null,
            "overrides": {"env": [{"name": "AFTER", "value": "1"}]}}}}))).await.unwrap();
        f.reconcile("grows").await;
        let d = f.deployment("grows").await;
        assert!(container_env(&d).iter().any(|e| e["name"] == "AFTER"), "the next change is applied");
        assert_eq!(d.spec.unwrap().strategy.unwrap().type_.as_deref(), Some("RollingUpdate"));
    });
}

#[test]
fn the_running_controller_converges_from_watches() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let ctx = Fixture::new(&client, "default").ctx;
        let controller = tokio::spawn(llama_stack_operator::controller::run(ctx));
        let cr: LlamaStackDistribution = serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "watched"}, "spec": {"distribution": {"name": "starter"}}}),
        )
        .unwrap();
        Api::<LlamaStackDistribution>::namespaced(client.clone(), "default")
            .create(&PostParams::default(), &cr)
            .await
            .unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let mut found = None;
        for _ in 0..100 {
            if let Some(d) = deployments.get_opt("watched").await.unwrap() {
                found = Some(d);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let d = found.expect("the controller created the Deployment from its watch");
        let cm_name = d.spec.unwrap().template.spec.unwrap().volumes.unwrap()[0]
            .config_map
            .clone()
            .unwrap()
            .name;
        let cm = Api::<ConfigMap>::namespaced(client.clone(), "default")
            .get(&cm_name)
            .await
            .unwrap();
        // Distribution defaults: the embedded config (the catalog's OGX release), told only that
        // it may serve plain HTTP.
        let mut expected: serde_json::Value = serde_saphyr::from_str(
            llama_stack_resolver::embedded_config("starter").unwrap(),
        )
        .unwrap();
        expected["server"]["insecure"] = serde_json::Value::Bool(true);
        let written: serde_json::Value =
            serde_saphyr::from_str(&cm.data.unwrap()["config.yaml"]).unwrap();
        assert_eq!(written, expected);
        // A Secret created later triggers a reconcile through the Secret watch (the requeue after a
        // missing Secret is 15 s; this must happen well before).
        let late: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "late"}, "spec": {"distribution": {"name": "starter"},
            "providers": {"inference": {"provider": "vllm", "endpoint": "http://v", "apiKey": {"secretKeyRef": {"name": "late-creds", "key": "token"}}}}}})).unwrap();
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        llsds.create(&PostParams::default(), &late).await.unwrap();
        let mut reported = false;
        for _ in 0..50 {
            let conds = llsds.get("late").await.unwrap().status.and_then(|s| s.conditions).unwrap_or_default();
            if conds.iter().any(|c| c.type_ == "SecretsResolved" && c.status == "False") {
                reported = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(reported, "the missing Secret is reported");
        // Let the reconciles caused by the status write settle, so only the Secret can trigger the next.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "late-creds"}, "stringData": {"token": "t"}})).unwrap();
        let created = std::time::Instant::now();
        Api::<Secret>::namespaced(client.clone(), "default").create(&PostParams::default(), &secret).await.unwrap();
        let mut converged = false;
        while created.elapsed() < Duration::from_secs(8) {
            if deployments.get_opt("late").await.unwrap().is_some() {
                converged = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!("late Secret: Deployment after {:?}", created.elapsed());
        assert!(converged, "the Secret watch reconciles the LlamaStackDistribution that refers to it");
        controller.abort();
    });
}

/// Hand edits of an owned object's fields are reverted on the next reconcile (the watch of the
/// Deployment triggers one); fields the operator does not set (an HPA's replicas) are left alone;
/// and a reconcile of an unchanged cluster writes nothing.
#[test]
fn hand_edits_are_reverted_and_a_quiet_resync_writes_nothing() {
    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let as_manager = |manager: &str| PatchParams { field_manager: Some(manager.to_owned()), ..PatchParams::default() };
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "drifty"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("drifty").await;
        let applied = f.deployment("drifty").await;
        let image = |d: &Deployment| d.spec.clone().unwrap().template.spec.unwrap().containers[0].image.clone().unwrap();
        let replicas = |d: &Deployment| d.spec.clone().unwrap().replicas;

        // `kubectl scale deployment drifty --replicas=3`
        deployments.patch_scale("drifty", &as_manager("kubectl"), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
        assert_eq!(replicas(&f.deployment("drifty").await), Some(3));
        f.reconcile("drifty").await;
        assert_eq!(replicas(&f.deployment("drifty").await), Some(1), "a hand scale is reverted");

        // `kubectl set image deployment/drifty llama-stack=evil:1`
        let set_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "llama-stack", "image": "registry.example.com/evil:1"}]}}}});
        deployments.patch("drifty", &as_manager("kubectl-set"), &Patch::Strategic(set_image)).await.unwrap();
        f.reconcile("drifty").await;
        assert_eq!(image(&f.deployment("drifty").await), image(&applied), "a hand-set image is reverted");

        // Quiet: nothing is written, however often it is reconciled.
        let before = plane.audit_writes("admin").unwrap().len();
        f.reconcile("drifty").await;
        f.reconcile("drifty").await;
        let writes: Vec<Value> = plane.audit_writes("admin").unwrap().into_iter().skip(before).collect();
        assert!(writes.is_empty(), "an unchanged cluster costs no write: {writes:?}");

        // Under an HPA the replicas are the autoscaler's: not drift.
        let scaled: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "scaled"}, "spec": {"distribution": {"name": "starter"}, "workload": {"autoscaling": {"minReplicas": 1, "maxReplicas": 4}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &scaled).await.unwrap();
        f.reconcile("scaled").await;
        deployments.patch_scale("scaled", &as_manager("kube-controller-manager"), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
        f.reconcile("scaled").await;
        assert_eq!(replicas(&f.deployment("scaled").await), Some(3), "the autoscaler's replicas stay");
    });
}

/// The operator's cache holds the providers the server listed as a digest (`slim_cache`). After
/// a restart, and before the server is read again (it may not answer), a status written from the
/// cache puts the stored list back: the operator's own server-side apply would otherwise drop
/// the field it owns.
#[test]
fn a_status_written_from_the_cache_keeps_the_providers_the_server_listed() {
    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "listed"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        f.reconcile("listed").await;
        // What a read of the server wrote, by the operator's own field manager, as a status
        // that has since lost its conditions (so the next reconcile has something to write).
        let providers = json!([
            {"api": "files", "provider_id": "localfs", "provider_type": "inline::localfs",
             "config": {"storage_dir": "/.llama/files", "metadata_store": {"table_name": "files_metadata", "backend": "sql_default"}},
             "health": {"status": "Not Implemented", "message": "Provider does not implement health check"}},
            {"api": "inference", "provider_id": "vllm", "provider_type": "remote::vllm",
             "config": {"base_url": "http://vllm:8000/v1", "max_tokens": 4096, "api_token": "********", "tls_verify": true},
             "health": {"status": "OK"}},
        ]);
        let mut status = serde_json::to_value(f.llsds().get("listed").await.unwrap().status).unwrap();
        status["distributionConfig"]["providers"] = providers.clone();
        status.as_object_mut().unwrap().remove("conditions");
        let apply = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "status": status});
        let as_operator = PatchParams::apply(llama_stack_operator::naming::FIELD_MANAGER).force();
        f.llsds().patch_status("listed", &as_operator, &Patch::Apply(&apply)).await.unwrap();

        let mut cached = f.llsds().get("listed").await.unwrap();
        llama_stack_operator::controller::slim_cache::slim(&mut cached);
        let kept = cached.status.as_ref().and_then(|s| s.distribution_config.as_ref());
        assert_eq!(kept.and_then(|d| d.providers.as_ref()), None, "the cache keeps a digest only");
        // A restarted operator: its server probe remembers nothing, so nothing is read here.
        let restarted = Fixture::new(&client, "default");
        let before = plane.audit_writes("admin").unwrap().len();
        reconcile(Arc::new(cached), restarted.ctx.clone()).await.expect("reconcile succeeds");
        let writes = plane.audit_writes("admin").unwrap().len() - before;
        assert!(writes > 0, "the status was written");
        let after = serde_json::to_value(f.llsds().get("listed").await.unwrap().status).unwrap();
        assert!(after["conditions"].as_array().is_some_and(|c| !c.is_empty()), "{after}");
        assert_eq!(after["distributionConfig"]["providers"], providers, "the stored list, as it was");
    });
}

/// The same for an `OGXServer`, whose cache is slimmed the same way (issue 62): a status written
/// from the cache keeps the list its server reported.
#[test]
fn an_ogx_servers_status_written_from_the_cache_keeps_the_providers_the_server_listed() {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "listed"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("listed").await.unwrap()), f.ctx.clone()).await.unwrap();
        // As the OGX operator's schema requires them: a healthy provider's empty message too.
        let providers = json!([
            {"api": "files", "provider_id": "localfs", "provider_type": "inline::localfs", "config": {},
             "health": {"status": "Not Implemented", "message": "Provider does not implement health check"}},
            {"api": "inference", "provider_id": "vllm", "provider_type": "remote::vllm",
             "config": {"base_url": "http://vllm:8000/v1", "max_tokens": 4096, "api_token": "********", "tls_verify": true},
             "health": {"status": "OK", "message": ""}},
        ]);
        let mut status = serde_json::to_value(servers.get("listed").await.unwrap().status).unwrap();
        status["distributionConfig"]["providers"] = providers.clone();
        status.as_object_mut().unwrap().remove("conditions");
        let apply = json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer", "status": status});
        let as_operator = PatchParams::apply(llama_stack_operator::naming::FIELD_MANAGER).force();
        servers.patch_status("listed", &as_operator, &Patch::Apply(&apply)).await.unwrap();

        let mut cached = servers.get("listed").await.unwrap();
        llama_stack_operator::controller::slim_cache::slim_server(&mut cached);
        let kept = cached.status.as_ref().and_then(|s| s.distribution_config.as_ref());
        assert_eq!(kept.and_then(|d| d.providers.as_ref()), None, "the cache keeps a digest only");
        let restarted = Fixture::new(&client, "default");
        let before = plane.audit_writes("admin").unwrap().len();
        reconcile_ogx(Arc::new(cached), restarted.ctx.clone()).await.expect("reconcile succeeds");
        let writes = plane.audit_writes("admin").unwrap().len() - before;
        assert!(writes > 0, "the status was written");
        let after = serde_json::to_value(servers.get("listed").await.unwrap().status).unwrap();
        assert!(after["conditions"].as_array().is_some_and(|c| !c.is_empty()), "{after}");
        assert_eq!(after["distributionConfig"]["providers"], providers, "the stored list, as it was");
    });
}

/// A write the API server refuses (here a ResourceQuota allowing no Deployment) is reported in
/// the status with the API server's own message, not only in the operator's log.
#[test]
fn a_refused_write_is_reported_in_the_status() {
    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "quota"}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
        let quota: k8s_openapi::api::core::v1::ResourceQuota = serde_json::from_value(json!({"metadata": {"name": "no-deployments"},
            "spec": {"hard": {"count/deployments.apps": "0"}}})).unwrap();
        let quotas = Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(client.clone(), "quota");
        quotas.create(&PostParams::default(), &quota).await.unwrap();
        // No kube-controller-manager here to compute the quota's usage: set it as it would.
        let usage = json!({"status": {"hard": {"count/deployments.apps": "0"}, "used": {"count/deployments.apps": "0"}}});
        quotas.patch_status("no-deployments", &PatchParams::default(), &Patch::Merge(usage)).await.unwrap();
        let f = Fixture::new(&client, "quota");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "refused"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &cr).await.unwrap();
        let cr = f.llsds().get("refused").await.unwrap();
        let result = reconcile(Arc::new(cr), f.ctx.clone()).await;
        assert!(result.is_err(), "the reconcile fails and is retried");
        let (status, reason, message) = f.condition("refused", "DeploymentUpdated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "ApplyFailed"), "{message}");
        assert!(message.contains("apply Deployment refused") && message.contains("quota"), "{message}");
        // Not served, and said so where kstatus and `kubectl wait` look: the generation is not
        // observed, and the stack is stalled on the refusal.
        let stored = f.llsds().get("refused").await.unwrap().status.unwrap();
        assert_eq!(stored.observed_generation, None, "a refused generation is not observed");
        assert_eq!(stored.phase, Some(DistributionPhase::Failed));
        let (status, reason, _) = f.condition("refused", "Stalled").await;
        assert_eq!((status.as_str(), reason.as_str()), ("True", "ApplyFailed"));
    });
}

/// A change of a running `OGXServer` that the cluster's own policy refuses (a
/// ValidatingAdmissionPolicy, as Gatekeeper or Kyverno would) is not reported as served: the
/// status names the refusal, the phase is not Ready and the generation asked for is not observed;
/// once the policy allows it, the next reconcile applies it.
#[test]
fn an_ogx_server_change_a_cluster_policy_refuses_is_not_reported_as_served() {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "policed"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("policed").await.unwrap()), f.ctx.clone()).await.unwrap();
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "refuse-marked"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "validations": [{"expression":
                    "!object.spec.template.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'REFUSED_BY_POLICY'))",
                    "message": "the cluster's policy refuses REFUSED_BY_POLICY"}]}});
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "refuse-marked"},
            "spec": {"policyName": "refuse-marked", "validationActions": ["Deny"]}});
        for object in [&policy, &binding] {
            support::operator::kubectl(&plane, &["create", "-f", "-"], Some(&object.to_string())).unwrap();
        }
        // The API server enforces a new policy once it has loaded it: a marked Deployment, tried
        // without being stored, until it is refused.
        let marked: Deployment = serde_json::from_value(json!({"metadata": {"name": "probe"},
            "spec": {"selector": {"matchLabels": {"app": "probe"}}, "template": {"metadata": {"labels": {"app": "probe"}},
                "spec": {"containers": [{"name": "c", "image": "probe", "env": [{"name": "REFUSED_BY_POLICY", "value": "1"}]}]}}}})).unwrap();
        let dry_run = PostParams { dry_run: true, ..PostParams::default() };
        let mut enforced = false;
        for _ in 0..100 {
            if Api::<Deployment>::namespaced(client.clone(), "default").create(&dry_run, &marked).await.is_err() {
                enforced = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(enforced, "the policy in force");
        let env = json!({"spec": {"workload": {"overrides": {"env": [{"name": "REFUSED_BY_POLICY", "value": "1"}]}}}});
        servers.patch("policed", &PatchParams::default(), &Patch::Merge(env)).await.unwrap();
        let result = reconcile_ogx(Arc::new(servers.get("policed").await.unwrap()), f.ctx.clone()).await;
        let error = result.expect_err("the Deployment write refused").to_string();
        assert!(error.contains("REFUSED_BY_POLICY"), "{error}");
        let stored = servers.get("policed").await.unwrap();
        let status = serde_json::to_value(&stored.status).unwrap();
        assert_eq!(json_condition(&status, "DeploymentUpdated"), ("False".into(), "ApplyFailed".into()), "{status:#}");
        assert_ne!(status["phase"], "Ready", "{status:#}");
        assert_ne!(json_condition(&status, "Ready").0, "True", "{status:#}");
        assert!(status["observedGeneration"].as_i64() < stored.metadata.generation, "{status:#}");
        let message = status["conditions"].as_array().unwrap().iter()
            .find(|c| c["type"] == "DeploymentUpdated").unwrap()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("refuses REFUSED_BY_POLICY"), "the API server's own words: {message}");

        support::operator::kubectl(&plane, &["delete", "validatingadmissionpolicybinding", "refuse-marked"], None).unwrap();
        let mut applied = false;
        for _ in 0..50 {
            if reconcile_ogx(Arc::new(servers.get("policed").await.unwrap()), f.ctx.clone()).await.is_ok() {
                applied = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(applied, "applied once the policy allows it");
        assert!(container_env(&f.deployment("policed").await).iter().any(|e| e["name"] == "REFUSED_BY_POLICY"));
        let stored = servers.get("policed").await.unwrap();
        assert_eq!(stored.status.unwrap().observed_generation, stored.metadata.generation);
    });
}

/// The suite and everything it starts run sealed (see `support::sealed`): only loopback exists,
/// a kwok-style Pod address is unreachable at once, loopback still works, and the one escape
/// hatch (registry fetches) really runs in another network namespace.
#[test]
fn the_tests_send_packets_only_to_loopback() {
    let interfaces = std::fs::read_to_string("/proc/net/dev").unwrap();
    let names: Vec<&str> = interfaces
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next().map(str::trim))
        .collect();
    assert_eq!(names, ["lo"], "interfaces in the test's namespace");

    let fake_pod = std::net::SocketAddr::from(([10, 244, 0, 5], 8321));
    let err = std::net::TcpStream::connect_timeout(&fake_pod, Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        err.raw_os_error(),
        Some(libc::ENETUNREACH),
        "a Pod address must be unreachable, not routed off the machine: {err}"
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std::net::TcpStream::connect(listener.local_addr().unwrap()).expect("loopback works");

    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let fetcher = support::sealed::with_host_network(&mut std::process::Command::new("readlink"))
        .arg("/proc/self/ns/net")
        .output()
        .unwrap();
    let theirs = String::from_utf8(fetcher.stdout).unwrap();
    assert!(fetcher.status.success());
    assert_ne!(
        theirs.trim(),
        ours.to_string_lossy(),
        "registry fetches run in the namespace the binary started in"
    );
}

/// An API read the plan needs that fails (the ServiceAccount, its pull secret, the
/// overrideConfig ConfigMap, each refused by RBAC in turn) is a reconcile error, retried with backoff and counted as `PlanError`: it says nothing about the
/// spec, so the stack is not marked Failed and its status is left as it was.
#[test]
fn an_api_error_while_planning_is_retried_and_never_fails_the_stack() {
    use support::operator::kubectl;
    let (plane, rt, admin) = start_with_crd().expect("control plane with the CRD");
    // Each read the plan makes, refused in turn: the reconciler's client may do everything a
    // reconcile touches, and write the status, but not read the one kind of the case.
    let cases = [
        (
            "serviceaccounts",
            json!({"distribution": {"name": "starter"}}),
            "read ServiceAccount hiccup-serviceaccounts/default for its imagePullSecrets",
        ),
        (
            "secrets",
            json!({"distribution": {"name": "starter"}}),
            "read pull secret hiccup-secrets/regcred",
        ),
        (
            "configmaps",
            json!({"distribution": {"name": "starter"},
                   "overrideConfig": {"configMapName": "user-config"}}),
            "read ConfigMap hiccup-configmaps/user-config (overrideConfig)",
        ),
    ];
    for (refused, spec, message) in cases {
        let ns = format!("hiccup-{refused}");
        let core: Vec<&str> = [
            "pods",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "services",
            "persistentvolumeclaims",
            "events",
        ]
        .into_iter()
        .filter(|kind| *kind != refused)
        .collect();
        let setup = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
             "metadata": {"name": "regcred", "namespace": ns},
             "stringData": {".dockerconfigjson": "{\"auths\": {}}"}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns},
             "imagePullSecrets": [{"name": "regcred"}]},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "user-config", "namespace": ns},
             "data": {"config.yaml": "version: 2\napis: []\nproviders: {}\n"}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "limited", "namespace": ns}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "limited", "namespace": ns},
             "rules": [
                {"apiGroups": ["llamastack.io"], "resources": ["llamastackdistributions", "llamastackdistributions/status"], "verbs": ["*"]},
                {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["*"]},
                {"apiGroups": [""], "resources": core, "verbs": ["*"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["*"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "limited", "namespace": ns},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "limited"},
             "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": ns}]}]});
        kubectl(&plane, &["apply", "-f", "-"], Some(&setup.to_string())).unwrap();
        let token = kubectl(&plane, &["create", "token", "limited", "-n", &ns], None).unwrap();
        let kubeconfig = plane
            .kubeconfig_with_token(&format!("limited-{refused}"), token.trim())
            .unwrap();
        rt.block_on(async {
            let config = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
                &Default::default(),
            )
            .await
            .unwrap();
            let limited = kube::Client::try_from(config).unwrap();
            let llsds: Api<LlamaStackDistribution> = Api::namespaced(admin.clone(), &ns);
            let cr: LlamaStackDistribution =
                serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
                "kind": "LlamaStackDistribution", "metadata": {"name": "hiccup"}, "spec": spec}))
                .unwrap();
            llsds.create(&PostParams::default(), &cr).await.unwrap();
            let ctx = Arc::new(Context::new(
                limited,
                Arc::new(Resolver::new(offline_resolver_options()).unwrap()),
            ));
            let error = reconcile(Arc::new(llsds.get("hiccup").await.unwrap()), ctx)
                .await
                .expect_err("the plan's read fails");
            let text = error.to_string();
            assert_eq!(error.metric_label(), "PlanError", "{refused}: {text}");
            assert!(text.contains(message), "{refused}: {text}");
            assert_eq!(
                llsds.get("hiccup").await.unwrap().status,
                None,
                "{refused}: no Failed phase, no condition"
            );
        });
    }
}

/// The OGX operator's `OGXServer` through the same core, and a LlamaStackDistribution moved to
/// the OGXServer of the same name in place: the Deployment (its selector, the Service's address
/// and the pinned image) is kept, the names OGX users rely on are applied, the LLSD stands down.
/// `(status, reason)` of the condition `type_` in a status read as JSON (an `OGXServer`'s).
/// The condition `type_` of the `OGXServer` `name` as stored: its status (`absent` when there
/// is none), reason and message.
async fn server_said(
    servers: &Api<llama_stack_operator::api::ogx::OGXServer>,
    name: &str,
    type_: &str,
) -> (String, String, String) {
    let status = serde_json::to_value(servers.get(name).await.unwrap().status).unwrap();
    let c = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null);
    let text = |key: &str, or: &str| c[key].as_str().unwrap_or(or).to_owned();
    (
        text("status", "absent"),
        text("reason", ""),
        text("message", ""),
    )
}

fn json_condition(status: &Value, type_: &str) -> (String, String) {
    let c = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == type_)
        .unwrap_or_else(|| panic!("no {type_}: {status:#}"));
    (
        c["status"].as_str().unwrap().to_owned(),
        c["reason"].as_str().unwrap().to_owned(),
    )
}

/// `tls.identity` through the core: the key's Secret, then the certificate's ConfigMap (a PEM
/// certificate) are required; then the Pods mount both, and a new certificate rolls them.
async fn a_client_identity_is_served(client: &kube::Client, f: &Fixture) {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;
    let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
    let identified: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "trusting"}, "spec": {"distribution": {"name": "starter"},
            "tls": {"identity": {"cert": {"name": "client-cert", "key": "tls.crt"}, "key": {"name": "client-key", "key": "tls.key"}}}}})).unwrap();
    servers
        .create(&PostParams::default(), &identified)
        .await
        .unwrap();
    let ca = support::test_ca::TestCa::new("llso-client-ca").unwrap();
    let (first, second) = (ca.client("first").unwrap(), ca.client("second").unwrap());
    let key: Secret = serde_json::from_value(
        json!({"metadata": {"name": "client-key"}, "stringData": {"tls.key": first.key}}),
    )
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &key)
        .await
        .unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let trusting = || async {
        reconcile_ogx(
            Arc::new(servers.get("trusting").await.unwrap()),
            f.ctx.clone(),
        )
        .await
        .unwrap();
        serde_json::to_value(servers.get("trusting").await.unwrap().status).unwrap()
    };
    let status = trusting().await;
    assert_eq!(
        json_condition(&status, "ConfigGenerated"),
        ("False".into(), "ClientCertificateInvalid".into()),
        "{status:#}"
    );
    let cert = |pem: &str| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": "client-cert"}, "data": {"tls.crt": pem}}),
        )
        .unwrap()
    };
    config_maps
        .create(&PostParams::default(), &cert("not a certificate"))
        .await
        .unwrap();
    let status = trusting().await;
    assert_eq!(
        json_condition(&status, "ConfigGenerated"),
        ("False".into(), "ClientCertificateInvalid".into()),
        "{status:#}"
    );
    assert!(
        Api::<Deployment>::namespaced(client.clone(), "default")
            .get_opt("trusting")
            .await
            .unwrap()
            .is_none()
    );
    config_maps
        .replace("client-cert", &PostParams::default(), &cert(&first.cert))
        .await
        .unwrap();
    let status = trusting().await;
    assert_eq!(
        json_condition(&status, "ConfigGenerated"),
        ("True".into(), "ConfigGenerationSucceeded".into()),
        "{status:#}"
    );
    let template = |d: Deployment| d.spec.unwrap().template;
    let before = template(f.deployment("trusting").await);
    let volumes = serde_json::to_value(&before.spec.as_ref().unwrap().volumes).unwrap();
    assert!(
        volumes
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "client-identity"
                && v["projected"]["sources"][0]["configMap"]["name"] == "client-cert"),
        "{volumes:#}"
    );
    let hash = |t: &k8s_openapi::api::core::v1::PodTemplateSpec| {
        t.metadata.as_ref().unwrap().annotations.as_ref().unwrap()["llamastack.io/secrets-hash"]
            .clone()
    };
    config_maps
        .replace("client-cert", &PostParams::default(), &cert(&second.cert))
        .await
        .unwrap();
    trusting().await;
    assert_ne!(
        hash(&before),
        hash(&template(f.deployment("trusting").await)),
        "a new certificate rolls the Pods"
    );
}

#[test]
fn an_ogx_server_is_served_and_takes_a_stack_over_in_place() {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::{reconcile_ogx, reconcile_stack};

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    let body = || {
        rt.block_on(Box::pin(async {
        let f = Fixture::new(&client, "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");

        // A sample of the OGX operator (tests/fixtures/ogx-operator), as written for it.
        let sample = std::fs::read_to_string(support::workspace_root().join("tests/fixtures/ogx-operator/example-with-generated-config.yaml")).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&sample).unwrap();
        let server: OGXServer = serde_json::from_value(docs[1].clone()).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let name = "ogxserver-with-generated-config";
        reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), f.ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get(name).await.unwrap().status).unwrap();
        // Its Secret is missing (the sample creates it first): the condition names it, nothing runs.
        assert_eq!(json_condition(&status, "SecretsResolved"), ("False".into(), "SecretNotFound".into()), "{status:#}");
        let secret: Secret = serde_json::from_value(docs[0].clone()).unwrap();
        Api::<Secret>::namespaced(client.clone(), "default").create(&PostParams::default(), &secret).await.unwrap();
        reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), f.ctx.clone()).await.unwrap();
        let stored = servers.get(name).await.unwrap();
        let status = serde_json::to_value(&stored.status).unwrap();
        assert_eq!(json_condition(&status, "ConfigGenerated"), ("True".into(), "ConfigGenerationSucceeded".into()), "{status:#}");
        // The catalog's image (offline here: the embedded config, no registry to pin at).
        assert!(status["resolvedDistribution"]["image"].as_str().unwrap().starts_with("docker.io/ogxai/distribution-starter:"), "{status:#}");
        let config_map = status["configGeneration"]["configMapName"].as_str().unwrap().to_owned();
        assert!(config_map.starts_with(&format!("{name}-config-")));
        assert_eq!(status["configGeneration"]["observedGeneration"], 1);
        let d = f.deployment(name).await;
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.api_version.as_str(), Some(&owner.uid)), ("OGXServer", "ogx.io/v1beta1", stored.metadata.uid.as_ref()));
        let labels = d.metadata.labels.clone().unwrap();
        assert_eq!(labels["app.kubernetes.io/managed-by"], "ogx-operator");
        assert_eq!(labels["app.kubernetes.io/part-of"], "ogx");
        let template = d.spec.clone().unwrap().template;
        assert_eq!(template.metadata.unwrap().labels.unwrap()["app"], "ogx");
        let pod = template.spec.unwrap();
        let container = &pod.containers[0];
        assert_eq!(container.name, "ogx");
        let mounts = serde_json::to_value(&container.volume_mounts).unwrap();
        assert!(mounts.as_array().unwrap().iter().any(|m| m["mountPath"] == "/etc/ogx"), "{mounts:#}");
        let env = container_env(&d);
        assert!(env.iter().any(|e| e["name"] == "OGX_METRICS_PORT" && e["value"] == "9464"), "{env:#?}");
        // Monitoring is on by default: the port a ServiceMonitor scrapes, named on both.
        let ports = serde_json::to_value(&container.ports).unwrap();
        assert!(ports.as_array().unwrap().iter().any(|p| p["name"] == "metrics" && p["containerPort"] == 9464), "{ports:#}");
        let service = Api::<Service>::namespaced(client.clone(), "default").get(&format!("{name}-service")).await.unwrap();
        let service_ports = serde_json::to_value(&service.spec.unwrap().ports).unwrap();
        assert!(service_ports.as_array().unwrap().iter().any(|p| p["name"] == "metrics" && p["port"] == 9464 && p["targetPort"] == "metrics"), "{service_ports:#}");
        let generated = Api::<ConfigMap>::namespaced(client.clone(), "default").get(&config_map).await.unwrap();
        let yaml = &generated.data.unwrap()["config.yaml"];
        assert!(yaml.contains("openai-primary") && !yaml.contains("vector_io"), "{yaml}");
        assert_eq!(generated.metadata.labels.unwrap()["app.kubernetes.io/managed-by"], "ogx-operator");

        // baseConfig: the config is generated on the user's ConfigMap, not on the image's.
        let base: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "my-base"}, "data": {"base.yaml":
            "version: 2\ndistro_name: mine\napis: [inference]\nproviders:\n  inference:\n  - provider_id: mine\n    provider_type: remote::vllm\n    config: {base_url: 'http://mine:8000/v1'}\nserver: {port: 8321}\n"}})).unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), "default").create(&PostParams::default(), &base).await.unwrap();
        let based: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "based"}, "spec": {"distribution": {"name": "starter"},
            "baseConfig": {"name": "my-base", "key": "base.yaml"}, "resources": {"models": [{"name": "m", "provider": "mine"}]}}})).unwrap();
        servers.create(&PostParams::default(), &based).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("based").await.unwrap()), f.ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get("based").await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "ConfigGenerated"), ("True".into(), "ConfigGenerationSucceeded".into()), "{status:#}");
        assert_eq!(status["resolvedDistribution"]["configSource"], "config-map");
        let config_map = status["configGeneration"]["configMapName"].as_str().unwrap().to_owned();
        let generated = Api::<ConfigMap>::namespaced(client.clone(), "default").get(&config_map).await.unwrap();
        let yaml = &generated.data.unwrap()["config.yaml"];
        assert!(yaml.contains("http://mine:8000/v1") && yaml.contains("distro_name: mine") && !yaml.contains("ollama"), "{yaml}");

        Box::pin(a_client_identity_is_served(&client, &f)).await;

        // Resource claims (DRA) reach the Pod, and the container uses them by name: the API
        // server accepts the Deployment.
        let claiming: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "claiming"}, "spec": {"distribution": {"name": "starter"},
            "workload": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                         "resources": {"claims": [{"name": "gpu"}]}}}})).unwrap();
        servers.create(&PostParams::default(), &claiming).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("claiming").await.unwrap()), f.ctx.clone()).await.unwrap();
        let pod = f.deployment("claiming").await.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.resource_claims.unwrap()[0].resource_claim_template_name.as_deref(), Some("one-gpu"));
        assert_eq!(pod.containers[0].resources.as_ref().unwrap().claims.as_ref().unwrap()[0].name, "gpu");
        // Storage added to the running OGXServer (the OGX operator's TestRolloutWithStorage): the
        // switch to Recreate applies and the claim is mounted, through this door too.
        servers.patch("claiming", &PatchParams::default(), &Patch::Merge(json!({"spec": {"workload": {"storage": {}}}}))).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("claiming").await.unwrap()), f.ctx.clone()).await.unwrap();
        let spec = f.deployment("claiming").await.spec.unwrap();
        let strategy = spec.strategy.unwrap();
        assert_eq!((strategy.type_.as_deref(), strategy.rolling_update), (Some("Recreate"), None));
        let mounted: Vec<String> = spec.template.spec.unwrap().volumes.into_iter().flatten()
            .filter_map(|v| v.persistent_volume_claim).map(|c| c.claim_name).collect();
        assert_eq!(mounted, ["claiming-pvc"]);

        // CA certificates from two ConfigMaps (a cluster's injected bundle and a private CA, say):
        // both are trusted, in one bundle; a missing one blocks the stack naming it.
        let several: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "trusting-two"}, "spec": {"distribution": {"name": "starter"},
            "tls": {"trust": {"caCertificates": [{"name": "a", "key": "ca.crt"}, {"name": "b", "key": "ca.crt"}]}}}})).unwrap();
        servers.create(&PostParams::default(), &several).await.unwrap();
        let (ca_a, ca_b) = (support::test_ca::TestCa::new("ca-a").unwrap(), support::test_ca::TestCa::new("ca-b").unwrap());
        let bundle = |name: &str, pem: &str| -> ConfigMap {
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"ca.crt": pem}})).unwrap()
        };
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), "default");
        config_maps.create(&PostParams::default(), &bundle("a", &ca_a.pem)).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("trusting-two").await.unwrap()), f.ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get("trusting-two").await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "ConfigGenerated"), ("False".into(), "CABundleInvalid".into()), "{status:#}");
        let message = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "ConfigGenerated").unwrap()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("ConfigMap \"b\" not found") && message.contains("additionalCaBundles[0]"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("trusting-two").await.unwrap().is_none());
        config_maps.create(&PostParams::default(), &bundle("b", &ca_b.pem)).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("trusting-two").await.unwrap()), f.ctx.clone()).await.unwrap();
        let pod = f.deployment("trusting-two").await.spec.unwrap().template.spec.unwrap();
        let mounted = pod.volumes.unwrap().into_iter().find_map(|v| v.config_map.map(|c| c.name).filter(|n| n.starts_with("trusting-two-ca-bundle"))).unwrap();
        let trusted = config_maps.get(&mounted).await.unwrap().data.unwrap().into_values().collect::<String>();
        let normalized = |pem: &str| pem.split_whitespace().collect::<String>();
        assert!(normalized(&trusted).contains(&normalized(&ca_a.pem)) && normalized(&trusted).contains(&normalized(&ca_b.pem)), "{trusted}");

        // A LlamaStackDistribution, running...
        let llsd: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "moving"}, "spec": {"distribution": {"name": "starter"}, "networking": {"allowedFrom": {}},
            "workload": {"storage": {}}, "resources": {"models": ["llama3.2:1b"]}}})).unwrap();
        f.llsds().create(&PostParams::default(), &llsd).await.unwrap();
        f.reconcile("moving").await;
        let before = f.deployment("moving").await;
        let pinned = f.llsds().get("moving").await.unwrap().status.unwrap().resolved_distribution.unwrap();
        let service_ip = Api::<Service>::namespaced(client.clone(), "default").get("moving-service").await.unwrap().spec.unwrap().cluster_ip;
        // ...is moved: its OGXServer of the same name, as `convert --to ogx` writes it.
        let manifest = plane.dir().join("moving.yaml");
        std::fs::write(&manifest, serde_saphyr::to_string(&f.llsds().get("moving").await.unwrap()).unwrap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
            .args(["convert", "-f", manifest.to_str().unwrap(), "--to", "ogx.io/v1beta1"])
            .output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut converted: Value = serde_saphyr::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
        converted["metadata"] = json!({"name": "moving"});
        let converted: OGXServer = serde_json::from_value(converted).unwrap();
        servers.create(&PostParams::default(), &converted).await.unwrap();
        // The LLSD sees it and stands down, changing nothing.
        reconcile_stack(Arc::new(f.llsds().get("moving").await.unwrap()), f.ctx.clone(), Some(servers_seen(&servers).await)).await.unwrap();
        let (status, reason, message) = f.condition("moving", "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "MovedToOGXServer"), "{message}");
        assert_eq!(f.deployment("moving").await.metadata.resource_version, before.metadata.resource_version, "nothing written");
        // The OGXServer takes the objects over: same Deployment (its selector cannot change),
        // the same pinned image, the same Service address, owned by the OGXServer.
        reconcile_ogx(Arc::new(servers.get("moving").await.unwrap()), f.ctx.clone()).await.unwrap();
        let after = f.deployment("moving").await;
        assert_eq!(after.metadata.uid, before.metadata.uid);
        // Until the OGXServers' list is synced (at start, after a change of leader) the LLSD
        // does nothing: it never re-applies its own template over its OGXServer's.
        let (unsynced, _writer) = kube::runtime::reflector::store();
        reconcile_stack(Arc::new(f.llsds().get("moving").await.unwrap()), f.ctx.clone(), Some(unsynced)).await.unwrap();
        assert_eq!(f.deployment("moving").await.metadata.resource_version, after.metadata.resource_version, "nothing written");
        assert_eq!(after.spec.as_ref().unwrap().selector, before.spec.as_ref().unwrap().selector);
        // The OGXServer controls it; the LLSD stays a plain owner (the undo: deleting the
        // OGXServer leaves every object to it).
        let owners = after.metadata.owner_references.clone().unwrap();
        let kinds: Vec<(&str, Option<bool>)> = owners.iter().map(|o| (o.kind.as_str(), o.controller)).collect();
        assert_eq!(kinds, [("LlamaStackDistribution", Some(false)), ("OGXServer", Some(true))], "{owners:?}");
        assert_eq!(owners[0].block_owner_deletion, None, "a plain owner blocks nothing");
        let container = &after.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.name, "ogx");
        assert_eq!(container.image.as_deref(), pinned.image.as_deref());
        let service = Api::<Service>::namespaced(client.clone(), "default").get("moving-service").await.unwrap();
        assert_eq!(service.spec.unwrap().cluster_ip, service_ip);
        let controller = service.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)).map(|o| o.kind.clone());
        assert_eq!(controller.as_deref(), Some("OGXServer"));
        let moved = servers.get("moving").await.unwrap().status.unwrap();
        let resolved = moved.resolved_distribution.unwrap();
        assert_eq!((resolved.image, resolved.pinned_at), (pinned.image, pinned.pinned_at), "the pin is kept");
        // Deleting the LLSD now takes nothing with it: it controls nothing any more, and every
        // object it still owns the OGXServer owns too, the data volume and every generated
        // config included (the garbage collector deletes an object only with its last owner).
        let llsd_uid = f.llsds().get("moving").await.unwrap().metadata.uid.unwrap();
        let server_uid = servers.get("moving").await.unwrap().metadata.uid.unwrap();
        let mut owned_by_llsd = Vec::new();
        let mut handed = Vec::new();
        macro_rules! sort_out {
            ($($kind:ty),+) => {$(
                for o in Api::<$kind>::namespaced(client.clone(), "default").list_metadata(&ListParams::default()).await.unwrap().items {
                    let name = format!("{} {}", stringify!($kind), o.metadata.name.clone().unwrap());
                    let refs: Vec<_> = o.metadata.owner_references.iter().flatten().collect();
                    let by_server = refs.iter().any(|r| r.uid == server_uid);
                    for r in &refs {
                        if r.uid == llsd_uid && (r.controller == Some(true) || !by_server) { owned_by_llsd.push(name.clone()); }
                        if r.uid == server_uid && r.controller == Some(true) { handed.push(name.clone()); }
                    }
                }
            )+};
        }
        sort_out!(ConfigMap, Secret, Service, Deployment, k8s_openapi::api::core::v1::PersistentVolumeClaim,
            k8s_openapi::api::core::v1::ServiceAccount, k8s_openapi::api::networking::v1::NetworkPolicy);
        assert!(owned_by_llsd.is_empty(), "still the LLSD's alone, or controlled by it: {owned_by_llsd:?}");
        for kind in ["PersistentVolumeClaim moving-pvc", "ConfigMap moving-config-", "NetworkPolicy moving-network-policy", "Deployment moving"] {
            assert!(handed.iter().any(|h| h.contains(kind)), "{kind} not the OGXServer's: {handed:?}");
        }
    }))
    };
    on_a_big_stack(body);
}

/// The OGXServers' metadata as the LlamaStackDistributions' controller keeps it: listed now, and
/// synced (a store that never synced holds every stack back).
async fn servers_seen(
    servers: &Api<llama_stack_operator::api::ogx::OGXServer>,
) -> kube::runtime::reflector::Store<
    kube::api::PartialObjectMeta<llama_stack_operator::api::ogx::OGXServer>,
> {
    use kube::runtime::{reflector, watcher};
    let (reader, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for server in servers
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .items
    {
        writer.apply_watcher_event(&watcher::Event::InitApply(server));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    reader
}

/// Runs `body` on a thread with room for a long test body and the reconciles it awaits: in a
/// debug build their frames come close to the 2 MiB of a test thread.
fn on_a_big_stack(body: impl FnOnce() + Send) {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn_scoped(scope, body)
            .expect("a test thread")
            .join()
            .expect("the test body does not panic")
    });
}

/// What the cluster serves, asked at start while the API server cannot answer (it restarts, as
/// in an upgrade): asked again until it answers, so the `OGXServer` API is served once it does,
/// instead of being off until the operator restarts.
#[test]
fn discovery_at_start_is_asked_again_until_the_api_server_answers() {
    use llama_stack_operator::controller::served_apis;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    plane
        .stop("kube-apiserver")
        .expect("kube-apiserver stopped");
    let asking = rt.spawn(async move { served_apis(&client).await });
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !asking.is_finished(),
        "no answer from a stopped API server: still asking"
    );
    plane
        .start_again("kube-apiserver")
        .expect("kube-apiserver started again");
    let served = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(60), asking).await })
        .expect("answered once the API server is back")
        .expect("the task does not panic");
    assert!(served.ogx_servers, "{served:?}");
}

/// An `OGXServer`'s `monitoring` (on by default): where the Prometheus Operator's CRDs are
/// installed (its own, `tests/fixtures/prometheus-operator`, so its schema checks what the
/// operator writes), a ServiceMonitor that selects the server's Service and scrapes its
/// `metrics` port, and the PrometheusRule; none with monitoring off, and none where the kinds
/// are not served. Driven by the OGX operator's own monitoring samples.
#[test]
fn an_ogx_servers_monitoring_makes_a_service_monitor_and_rules_the_prometheus_operator_accepts() {
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use kube::api::DynamicObject;
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::{follow_served_apis, reconcile_ogx, served_apis};
    use llama_stack_operator::core::builders::{
        prometheus_rule_resource, service_monitor_resource,
    };

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let f = Fixture::new(&client, "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let monitors: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &service_monitor_resource());
        let rules: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &prometheus_rule_resource());
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let reconcile = |name: &'static str| {
            let (servers, ctx) = (servers.clone(), f.ctx.clone());
            async move { reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), ctx).await.unwrap() }
        };
        let sample = std::fs::read_to_string(support::workspace_root().join("tests/fixtures/ogx-operator/example-with-monitoring.yaml")).unwrap();
        for doc in serde_saphyr::from_multiple::<Value>(&sample).unwrap() {
            servers.create(&PostParams::default(), &serde_json::from_value(doc).unwrap()).await.unwrap();
        }

        // Not served yet: the server exports its metrics, nothing else is attempted.
        f.ctx.learn(&served_apis(&client).await);
        assert!(!f.ctx.monitoring_available());
        reconcile("ogxserver-monitoring-defaults").await;
        let ports = |service: Service| serde_json::to_value(service.spec.unwrap().ports).unwrap();
        let service_ports = ports(services.get("ogxserver-monitoring-defaults-service").await.unwrap());
        assert!(service_ports.as_array().unwrap().iter().any(|p| p["name"] == "metrics" && p["port"] == 9464), "{service_ports:#}");

        // The operator reads discovery again while it runs (every minute; here every 200 ms), so
        // the Prometheus Operator installed after it is used without a restart. An Established
        // CRD's group reaches discovery a moment later: the follower keeps looking.
        let known = served_apis(&client).await;
        let (found, mut changes) = tokio::sync::mpsc::unbounded_channel();
        let follower = tokio::spawn({
            let client = client.clone();
            async move {
                follow_served_apis(&client, known, Duration::from_millis(200), |now| {
                    let _ = found.send(now);
                    std::ops::ControlFlow::Continue(())
                })
                .await;
            }
        });
        for crd in ["servicemonitors", "prometheusrules"] {
            let path = support::workspace_root().join(format!("tests/fixtures/prometheus-operator/monitoring.coreos.com_{crd}.yaml"));
            let crd = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            support::control_plane::install_crd(&client, &crd).await.unwrap();
        }
        let mut served = known;
        while !served.monitoring {
            served = tokio::time::timeout(Duration::from_secs(30), changes.recv())
                .await
                .expect("the follower sees the monitoring APIs within 30 s")
                .unwrap();
        }
        follower.abort();
        assert!(served.monitoring && served.ogx_servers && !served.routes, "{served:?}");
        f.ctx.learn(&served);
        for name in ["ogxserver-monitoring-defaults", "ogxserver-monitoring-custom-port", "ogxserver-monitoring-disabled"] {
            reconcile(name).await;
        }

        // The ServiceMonitor selects exactly this server's Service and scrapes a port it names.
        for (name, port) in [("ogxserver-monitoring-defaults", 9464), ("ogxserver-monitoring-custom-port", 9090)] {
            let monitor = monitors.get(&format!("{name}-service-monitor")).await.unwrap();
            let labels = monitor.metadata.labels.clone().unwrap();
            assert_eq!(labels["monitoring.opendatahub.io/scrape"], "true");
            assert_eq!(labels["app.kubernetes.io/managed-by"], "ogx-operator");
            assert_eq!(monitor.metadata.owner_references.as_ref().unwrap()[0].kind, "OGXServer");
            let selector = monitor.data["spec"]["selector"]["matchLabels"].as_object().unwrap()
                .iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap())).collect::<Vec<_>>().join(",");
            let selected: Vec<String> = services.list(&ListParams::default().labels(&selector)).await.unwrap()
                .items.into_iter().filter_map(|s| s.metadata.name).collect();
            assert_eq!(selected, [format!("{name}-service")], "{selector}");
            let endpoint = &monitor.data["spec"]["endpoints"][0];
            assert_eq!((endpoint["targetPort"].as_str(), endpoint["path"].as_str()), (Some("metrics"), Some("/metrics")), "{endpoint:#}");
            let service_ports = ports(services.get(&format!("{name}-service")).await.unwrap());
            assert!(service_ports.as_array().unwrap().iter().any(|p| p["name"] == "metrics" && p["port"] == port), "{service_ports:#}");
            let rule = rules.get(&format!("{name}-prometheus-rules")).await.unwrap();
            let recorded = &rule.data["spec"]["groups"][0]["rules"];
            let apis: Vec<&str> = recorded.as_array().unwrap().iter().map(|r| r["labels"]["api"].as_str().unwrap()).collect();
            assert_eq!(apis, ["inference", "vector_io", "responses", "rag", "agentic"], "{recorded:#}");
            assert!(recorded.as_array().unwrap().iter().all(|r| r["record"] == "ogx:api_info:max"), "{recorded:#}");
            // Its NetworkPolicy lets the monitoring namespaces reach that port.
            let policy = Api::<NetworkPolicy>::namespaced(client.clone(), "default").get(&format!("{name}-network-policy")).await.unwrap();
            let ingress = serde_json::to_value(policy.spec.unwrap().ingress).unwrap();
            assert!(ingress.as_array().unwrap().iter().any(|r| r["ports"][0]["port"] == port
                && r["from"][0]["namespaceSelector"]["matchLabels"]["network.openshift.io/policy-group"] == "monitoring"), "{ingress:#}");
        }

        // Off: neither is made (one of the same name made by someone else stays untouched)...
        assert!(monitors.get_opt("ogxserver-monitoring-disabled-service-monitor").await.unwrap().is_none());
        let foreign: DynamicObject = serde_json::from_value(json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "ogxserver-monitoring-disabled-prometheus-rules"}, "spec": {"groups": []}})).unwrap();
        rules.create(&PostParams::default(), &foreign).await.unwrap();
        reconcile("ogxserver-monitoring-disabled").await;
        assert!(rules.get_opt("ogxserver-monitoring-disabled-prometheus-rules").await.unwrap().is_some(), "not ours: kept");
        let service_ports = ports(services.get("ogxserver-monitoring-disabled-service").await.unwrap());
        assert!(service_ports.as_array().unwrap().iter().all(|p| p["name"] != "metrics"), "{service_ports:#}");
        // ...and turning it off removes the ones the operator made.
        let off = json!({"spec": {"monitoring": {"enabled": false}}});
        servers.patch("ogxserver-monitoring-defaults", &PatchParams::default(), &Patch::Merge(&off)).await.unwrap();
        reconcile("ogxserver-monitoring-defaults").await;
        assert!(monitors.get_opt("ogxserver-monitoring-defaults-service-monitor").await.unwrap().is_none());
        assert!(rules.get_opt("ogxserver-monitoring-defaults-prometheus-rules").await.unwrap().is_none());
    });
}

/// The running operator serves OGXServers from its watches when their CRD is installed: an
/// OGXServer of the same name takes a running LlamaStackDistribution over, and a Secret created
/// later reaches the OGXServer that refers to it.
/// The OGXServer API installed while the operator runs (the OGX operator's CRD applied after
/// this operator, as an upgrade to RHOAI 3.5 does): the controllers start again on what is served
/// and serve it, in the same process.
#[test]
fn an_ogx_server_api_installed_later_is_served_without_a_restart() {
    use llama_stack_operator::api::ogx::OGXServer;

    let plane = support::control_plane::ControlPlane::start().expect("control plane");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = plane.client().await.unwrap();
        support::control_plane::install_crd(
            &client,
            &support::control_plane::committed_crd().unwrap(),
        )
        .await
        .unwrap();
        let resolver = Arc::new(Resolver::new(offline_resolver_options()).unwrap());
        let ctx = Arc::new(
            Context::new(client.clone(), resolver).with_rediscovery(Duration::from_millis(300)),
        );
        let controller = tokio::spawn(llama_stack_operator::controller::run(ctx));
        tokio::time::sleep(Duration::from_secs(1)).await;
        support::control_plane::install_crd(
            &client,
            &support::control_plane::committed_ogx_crd().unwrap(),
        )
        .await
        .unwrap();
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let server: OGXServer =
            serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "late"}, "spec": {"distribution": {"name": "starter"}}}))
            .unwrap();
        servers
            .create(&PostParams::default(), &server)
            .await
            .unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let mut served = false;
        for _ in 0..150 {
            if deployments.get_opt("late").await.unwrap().is_some_and(|d| {
                d.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.kind == "OGXServer")
            }) {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(served, "the OGXServer got its Deployment without a restart");
        controller.abort();
    });
}

#[test]
fn the_running_controller_serves_ogx_servers_from_watches() {
    use llama_stack_operator::api::ogx::OGXServer;

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let ctx = Fixture::new(&client, "default").ctx;
        let controller = tokio::spawn(llama_stack_operator::controller::run(ctx));
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let until = |what: &'static str| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            what
        };
        let llsd: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "live"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        llsds.create(&PostParams::default(), &llsd).await.unwrap();
        let mut created = false;
        for _ in 0..100 {
            if deployments.get_opt("live").await.unwrap().is_some() {
                created = true;
                break;
            }
            until("the LLSD's Deployment").await;
        }
        assert!(created, "the LLSD's Deployment");
        let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "live"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let mut moved = false;
        for _ in 0..100 {
            let d = deployments.get("live").await.unwrap();
            let owned = d.metadata.owner_references.iter().flatten().any(|o| o.kind == "OGXServer");
            let stood_down = llsds.get("live").await.unwrap().status.and_then(|s| s.conditions).unwrap_or_default()
                .iter().any(|c| c.reason == "MovedToOGXServer");
            if owned && stood_down {
                moved = true;
                break;
            }
            until("the move").await;
        }
        assert!(moved, "the OGXServer took the Deployment over and the LLSD stood down");
        // Stays moved: the LLSD's controller does not take it back.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let d = deployments.get("live").await.unwrap();
        let controlling = d.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)).map(|o| o.kind.clone());
        assert_eq!(controlling.as_deref(), Some("OGXServer"));

        let waiting: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "waiting"}, "spec": {"distribution": {"name": "starter"},
            "providers": {"inference": {"remote": {"vllm": [{"endpoint": "http://v:8000/v1", "apiToken": {"name": "waiting-creds", "key": "token"}}]}}}}})).unwrap();
        servers.create(&PostParams::default(), &waiting).await.unwrap();
        let mut reported = false;
        for _ in 0..50 {
            let status = serde_json::to_value(servers.get("waiting").await.unwrap().status).unwrap();
            if status["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "SecretsResolved" && c["status"] == "False")) {
                reported = true;
                break;
            }
            until("the missing Secret").await;
        }
        assert!(reported, "the missing Secret is reported on the OGXServer");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "waiting-creds"}, "stringData": {"token": "t"}})).unwrap();
        let started = std::time::Instant::now();
        Api::<Secret>::namespaced(client.clone(), "default").create(&PostParams::default(), &secret).await.unwrap();
        let mut converged = false;
        while started.elapsed() < Duration::from_secs(8) {
            if deployments.get_opt("waiting").await.unwrap().is_some() {
                converged = true;
                break;
            }
            until("the Secret's watch").await;
        }
        assert!(converged, "the Secret watch reconciles the OGXServer that refers to it");
        controller.abort();
    });
}

/// OGXServers that ask to take nothing list the Services and Ingresses they might have taken (to
/// hand them back) once a namespace, not on every look nor once a server, and never read a
/// LlamaStackDistribution of their name that the stacks' cache can answer for: at 100 servers
/// those three reads were 7.4 of the 10 a server cost until quiet, and two of the three a resync
/// cost; listed once a server, 2 of 4.5 (issue 62). One server becomes Ready-bound (its
/// Deployment made), one waits for a Secret and so never records a resolved distribution, which
/// every look then looked up again; a third, made after the namespace was listed, lists nothing.
#[test]
fn an_ogx_server_looks_again_without_listing_what_it_never_took_or_reading_a_stack() {
    use llama_stack_operator::api::ogx::OGXServer;

    let (plane, rt, _admin) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator = plane.operator_client().await.expect("the operator's client");
        let ns = "default";
        let controller = tokio::spawn(llama_stack_operator::controller::run(Fixture::new(&operator, ns).ctx));
        // The stacks' cache lists first (it starts with the controller).
        tokio::time::sleep(Duration::from_secs(2)).await;
        let servers: Api<OGXServer> = Api::namespaced(operator.clone(), ns);
        let deployments: Api<Deployment> = Api::namespaced(operator.clone(), ns);
        for (name, spec) in [
            ("plain", json!({"distribution": {"name": "starter"}})),
            ("waiting", json!({"distribution": {"name": "starter"}, "providers": {"inference": {"remote": {"vllm": [
                {"endpoint": "http://v:8000/v1", "apiToken": {"name": "never-made", "key": "token"}}]}}}})),
        ] {
            let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
                "metadata": {"name": name}, "spec": spec})).unwrap();
            servers.create(&PostParams::default(), &server).await.unwrap();
        }
        let mut made = false;
        for _ in 0..100 {
            let waiting = serde_json::to_value(servers.get("waiting").await.unwrap().status).unwrap();
            let reported = waiting["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "SecretsResolved"));
            if reported && deployments.get_opt("plain").await.unwrap().is_some() {
                made = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(made, "the plain server's Deployment and the waiting one's status");
        let lists = || plane.audit_reads().unwrap().iter()
            .filter(|r| r["verb"] == "list" && r["objectRef"]["namespace"] == ns
                && (r["objectRef"]["resource"] == "services" || r["objectRef"]["resource"] == "ingresses"))
            .count();
        let listed = lists();
        let later: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "later"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &later).await.unwrap();
        let mut later_made = false;
        for _ in 0..100 {
            if deployments.get_opt("later").await.unwrap().is_some() {
                later_made = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(later_made, "the later server's Deployment");
        // Each server looked at three times more (a label starts a reconcile).
        for round in 0..3 {
            for name in ["plain", "waiting", "later"] {
                servers.patch(name, &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"round": round.to_string()}}}))).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let reads = plane.audit_reads().unwrap();
        let in_ns: Vec<String> = reads
            .iter()
            .filter(|r| r["objectRef"]["namespace"] == ns)
            .map(|r| format!("{} {}/{}", r["verb"].as_str().unwrap_or_default(),
                r["objectRef"]["resource"].as_str().unwrap_or_default(),
                r["objectRef"]["name"].as_str().unwrap_or_default()))
            .collect();
        let count = |wanted: &str| in_ns.iter().filter(|r| r.starts_with(wanted)).count();
        // A look at a server with a Deployment reads it (its rollout state is reported).
        assert!(count("get deployments/plain") >= 4, "the plain server was looked at again: {in_ns:?}");
        // At most once for each of the first two servers (their first looks may run at once), in
        // each kind; the namespace listed, nothing more.
        assert!(count("list services/") <= 2 && count("list ingresses/") <= 2,
            "listed again what the servers never took: {in_ns:?}");
        assert_eq!(lists(), listed, "a server made after its namespace was listed lists it again: {in_ns:?}");
        assert_eq!(count("get llamastackdistributions/"), 0,
            "read a stack the stacks' cache knows does not exist: {in_ns:?}");
        controller.abort();
    });
}

/// A reconcile reads a Secret it names once per change, not on every look (issue 62, item 1):
/// the Secret a stack references, the pull secret of the namespace's `default` ServiceAccount (on
/// OpenShift every one names a dockercfg Secret, which every look of every stack read) and a
/// Secret that does not exist are not read again while they stay as they are, once their watch
/// has listed; a change is read once, and what it says is what the stack reports.
#[test]
fn a_stack_reads_the_secrets_it_names_once_per_change() {
    let (plane, rt, admin) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator = plane.operator_client().await.expect("the operator's client");
        let ns = "default";
        let secrets: Api<Secret> = Api::namespaced(admin.clone(), ns);
        let pull: Secret = serde_json::from_value(json!({"metadata": {"name": "default-dockercfg-x7k2p"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": r#"{"auths":{"registry.example":{"auth":"dTpw"}}}"#}})).unwrap();
        secrets.create(&PostParams::default(), &pull).await.unwrap();
        let key: Secret = serde_json::from_value(json!({"metadata": {"name": "api-key"}, "stringData": {"token": "t"}})).unwrap();
        secrets.create(&PostParams::default(), &key).await.unwrap();
        let account: k8s_openapi::api::core::v1::ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"},
            "imagePullSecrets": [{"name": "default-dockercfg-x7k2p"}]})).unwrap();
        Api::namespaced(admin.clone(), ns).create(&PostParams::default(), &account).await.unwrap();
        let controller = tokio::spawn(llama_stack_operator::controller::run(Fixture::new(&operator, ns).ctx));
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(operator.clone(), ns);
        for (name, secret) in [("keyed", "api-key"), ("waiting", "never-made")] {
            let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
                "kind": "LlamaStackDistribution", "metadata": {"name": name}, "spec": {"distribution": {"name": "starter"},
                "providers": {"inference": {"provider": "vllm", "endpoint": "http://v",
                    "apiKey": {"secretKeyRef": {"name": secret, "key": "token"}}}}}})).unwrap();
            llsds.create(&PostParams::default(), &cr).await.unwrap();
        }
        let secrets_resolved = |name: &'static str| {
            let llsds = llsds.clone();
            async move {
                let conditions = llsds.get(name).await.unwrap().status.and_then(|s| s.conditions).unwrap_or_default();
                conditions.into_iter().find(|c| c.type_ == "SecretsResolved").map(|c| (c.status, c.message))
            }
        };
        let deployments: Api<Deployment> = Api::namespaced(operator.clone(), ns);
        let mut settled = false;
        for _ in 0..100 {
            let waiting = secrets_resolved("waiting").await.is_some_and(|(status, _)| status == "False");
            if waiting && deployments.get_opt("keyed").await.unwrap().is_some() {
                settled = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(settled, "the keyed stack's Deployment and the waiting one's status");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let secret_reads = || {
            let mut counts = std::collections::BTreeMap::new();
            for read in plane.audit_reads().unwrap() {
                if read["verb"] == "get" && read["objectRef"]["resource"] == "secrets" && read["objectRef"]["namespace"] == ns {
                    *counts.entry(read["objectRef"]["name"].as_str().unwrap_or_default().to_owned()).or_insert(0) += 1;
                }
            }
            counts
        };
        let deployment_reads = || plane.audit_reads().unwrap().iter()
            .filter(|r| r["verb"] == "get" && r["objectRef"]["resource"] == "deployments" && r["objectRef"]["name"] == "keyed").count();
        let before = secret_reads();
        let looks_before = deployment_reads();
        assert!(before.contains_key("api-key") && before.contains_key("default-dockercfg-x7k2p"), "read at first: {before:?}");
        // Each stack looked at three times more (a label starts a reconcile).
        for round in 0..3 {
            for name in ["keyed", "waiting"] {
                llsds.patch(name, &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"round": round.to_string()}}}))).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        assert!(deployment_reads() >= looks_before + 3, "the keyed stack was looked at again");
        assert_eq!(secret_reads(), before, "a Secret read again, unchanged (or read though its watch knows it is missing)");

        // The key goes from the Secret: read once, and reported.
        secrets.patch("api-key", &PatchParams::default(),
            &Patch::Merge(json!({"data": {"token": null, "other": "eA=="}}))).await.unwrap();
        let mut reported = None;
        for _ in 0..50 {
            if let Some((status, message)) = secrets_resolved("keyed").await.filter(|(status, _)| status == "False") {
                reported = Some((status, message));
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let (_, message) = reported.expect("the changed Secret is read and its missing key reported");
        assert!(message.contains(r#"Key "token" not found in Secret "default/api-key""#), "{message}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = secret_reads();
        assert_eq!(after["api-key"], before["api-key"] + 1, "the change read once: {after:?}");
        assert_eq!(after.get("never-made"), before.get("never-made"), "{after:?}");
        controller.abort();
    });
}

/// The OGX operator's adoption annotations (`ogx.io/adopt-storage`, `ogx.io/adopt-networking`)
/// on the `OGXServer` of its migration guide, over a running LlamaStackDistribution of another
/// name (a real-world one): the old stack stands down, its Deployment is scaled to zero, its
/// volume is taken only once its Pods are gone and is mounted instead of a new one, its Service
/// selects the new Pods under the new controller; removing the annotations lets the Service go
/// and keeps the volume.
#[test]
fn an_ogx_server_adopts_the_volume_and_service_of_a_stack_of_another_name() {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};

    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::{reconcile_ogx, reconcile_stack};

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    let body = || {
        rt.block_on(Box::pin(async {
        let f = Fixture::new(&client, "default");
        let ns = || Api::<Deployment>::namespaced(client.clone(), "default");
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");

        // The old stack, as its users wrote it (v1alpha1, through `convert`), running.
        let old = "llamastack-vllm";
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
            .args(["convert", "-f", support::workspace_root().join("tests/fixtures/real-world/12-odh-demos-starter-vllm.yaml").to_str().unwrap(), "--to", "v1alpha2"])
            .output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let llsd: LlamaStackDistribution = serde_saphyr::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
        f.llsds().create(&PostParams::default(), &llsd).await.unwrap();
        f.reconcile(old).await;
        let old_deployment = f.deployment(old).await;
        let old_claim = format!("{old}-pvc");
        let llsd_uid = f.llsds().get(old).await.unwrap().metadata.uid.unwrap();
        let controller_uid = |refs: &Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>| {
            refs.iter().flatten().find(|o| o.controller == Some(true)).map(|o| o.uid.clone())
        };
        assert_eq!(controller_uid(&claims.get(&old_claim).await.unwrap().metadata.owner_references), Some(llsd_uid.clone()));
        let service_ip = services.get(&format!("{old}-service")).await.unwrap().spec.unwrap().cluster_ip;
        // One of its Pods (no kubelet here: it stays until deleted, as a terminating Pod would;
        // no controller manager either, so the ServiceAccount it runs as is made here).
        let account: k8s_openapi::api::core::v1::ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
        Api::namespaced(client.clone(), "default").create(&PostParams::default(), &account).await.unwrap();
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": format!("{old}-abc"),
            "labels": {"app.kubernetes.io/instance": old}},
            "spec": {"containers": [{"name": "llama-stack", "image": "x"}]}})).unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();

        // The migration guide's OGXServer, with both annotations.
        let text = std::fs::read_to_string(support::workspace_root().join("tests/fixtures/ogx-operator/migration-guide-adoption.yaml")).unwrap();
        let server: OGXServer = serde_saphyr::from_str(&text).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let name = "my-server";
        let reconcile_server = || {
            let (servers, ctx) = (servers.clone(), f.ctx.clone());
            async move { reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), ctx).await.unwrap() }
        };
        let server_condition = |type_: &'static str| server_said(&servers, name, type_);

        // The old stack, reconciled with the server as the OGXServer watch holds it now.
        let reconcile_old = || async {
            reconcile_stack(Arc::new(f.llsds().get(old).await.unwrap()), f.ctx.clone(), Some(servers_seen(&servers).await)).await.unwrap();
        };
        // The old stack stands down, changing nothing.
        reconcile_old().await;
        let (status, reason, message) = f.condition(old, "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "AdoptedByOGXServer"), "{message}");
        assert!(message.contains("OGXServer my-server takes over its volume and its Service and Ingress"), "{message}");
        assert_eq!(f.deployment(old).await.metadata.resource_version, old_deployment.metadata.resource_version);

        // First pass: the old Deployment is scaled to zero; the server waits for its Pods.
        let action = reconcile_server().await;
        assert_eq!(action, Action::requeue(Duration::from_secs(5)));
        assert_eq!(f.deployment(old).await.spec.unwrap().replicas, Some(0));
        let (status, reason, message) = server_condition("StorageAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "WaitingForLegacyPods"), "{message}");
        assert!(ns().get_opt(name).await.unwrap().is_none(), "nothing of its own runs beside the old Pods");
        assert_eq!(controller_uid(&claims.get(&old_claim).await.unwrap().metadata.owner_references), Some(llsd_uid.clone()), "not taken yet");
        // The scale-down is labelled with the server and the replicas before, to be given back
        // if the take is abandoned.
        let scaled = f.deployment(old).await.metadata;
        let server_uid = servers.get(name).await.unwrap().metadata.uid.unwrap();
        assert_eq!(scaled.labels.unwrap()["llamastack.io/scaled-down-by"], server_uid);
        assert_eq!(scaled.annotations.unwrap()["llamastack.io/replicas-before"], "1");
        // The Service stays the old stack's, selecting its Pods, until the server serves.
        let service = services.get(&format!("{old}-service")).await.unwrap();
        assert_eq!(controller_uid(&service.metadata.owner_references), Some(llsd_uid.clone()));
        assert_eq!(service.spec.as_ref().unwrap().selector.as_ref().unwrap()["app.kubernetes.io/instance"], old);
        let (status, reason, _) = server_condition("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "WaitingForServer"));

        // Still a Pod: still waiting. And a Pod of any other kind that mounts the volume (a
        // debugging Pod, a backup Job's) counts too: one server writes a volume at a time.
        let debugger: Pod = serde_json::from_value(json!({"metadata": {"name": "debugger"},
            "spec": {"containers": [{"name": "sh", "image": "x"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": old_claim}}]}})).unwrap();
        pods.create(&PostParams::default(), &debugger).await.unwrap();
        // A backup Job's Pod that mounted it and finished, still listed, writes nothing: it
        // does not count (it used to hold the take forever).
        let backup: Pod = serde_json::from_value(json!({"metadata": {"name": "backup"},
            "spec": {"containers": [{"name": "sh", "image": "x"}], "restartPolicy": "Never",
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": old_claim}}]}})).unwrap();
        pods.create(&PostParams::default(), &backup).await.unwrap();
        pods.patch_status("backup", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Succeeded"}}))).await.unwrap();
        reconcile_server().await;
        let (_, reason, message) = server_condition("StorageAdopted").await;
        assert_eq!(reason, "WaitingForLegacyPods");
        assert!(message.contains("waiting for 2 Pods"), "{message}");
        assert!(ns().get_opt(name).await.unwrap().is_none());

        // Gone: the volume is taken (no controller, labelled) and mounted; no new one is made.
        for pod in [format!("{old}-abc"), "debugger".to_owned()] {
            pods.delete(&pod, &Default::default()).await.unwrap();
            while pods.get_opt(&pod).await.unwrap().is_some() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        reconcile_server().await;
        let (status, reason, message) = server_condition("StorageAdopted").await;
        assert_eq!((status.as_str(), reason.as_str(), message.as_str()), ("True", "StorageAdopted", "PVC llamastack-vllm-pvc adopted"));
        let claim = claims.get(&old_claim).await.unwrap();
        assert_eq!(controller_uid(&claim.metadata.owner_references), None, "data outlives both resources");
        let labels = claim.metadata.labels.clone().unwrap();
        assert_eq!((labels["ogx.io/adopted-from"].as_str(), labels["app.kubernetes.io/instance"].as_str()), (old, name));
        assert!(claim.metadata.annotations.unwrap().contains_key("ogx.io/adopted-at"));
        let deployment = f.deployment(name).await;
        let pod_spec = deployment.spec.as_ref().unwrap().template.spec.clone().unwrap();
        let mounted: Vec<_> = pod_spec.volumes.iter().flatten().filter_map(|v| v.persistent_volume_claim.as_ref()).map(|c| c.claim_name.clone()).collect();
        assert_eq!(mounted, std::slice::from_ref(&old_claim));
        assert!(claims.get_opt(&format!("{name}-pvc")).await.unwrap().is_none(), "no fresh volume beside the adopted one");
        assert!(!f.deployment(old).await.metadata.labels.unwrap_or_default().contains_key("llamastack.io/scaled-down-by"), "the volume changed hands: the scale-down is for good");
        // Not serving yet (no kubelet here): the address stays the old stack's.
        let (status, reason, _) = server_condition("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "WaitingForServer"));
        assert_eq!(controller_uid(&services.get(&format!("{old}-service")).await.unwrap().metadata.owner_references), Some(llsd_uid.clone()));
        // An available replica of the revision it runs: the Service is the server's, selecting
        // its Pods; same address; the old stack stays an owner (the undo).
        let available = json!({"status": {"replicas": 1, "availableReplicas": 1, "readyReplicas": 1, "updatedReplicas": 1}});
        ns().patch_status(name, &PatchParams::default(), &Patch::Merge(&available)).await.unwrap();
        reconcile_server().await;
        let service = services.get(&format!("{old}-service")).await.unwrap();
        assert_eq!(controller_uid(&service.metadata.owner_references), Some(server_uid.clone()));
        assert!(service.metadata.owner_references.iter().flatten().any(|o| o.uid == llsd_uid && o.controller == Some(false)), "{:?}", service.metadata.owner_references);
        assert_eq!(service.metadata.labels.as_ref().unwrap()["ogx.io/adopted-from"], old);
        assert_eq!(service.spec.as_ref().unwrap().cluster_ip, service_ip);
        let (status, reason, _) = server_condition("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("True", "NetworkingAdopted"));
        // The adopted Service selects exactly the new Pods.
        let selector = services.get(&format!("{old}-service")).await.unwrap().spec.unwrap().selector.unwrap();
        let pod_labels = deployment.spec.unwrap().template.metadata.unwrap().labels.unwrap();
        assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)), "{selector:?} vs {pod_labels:?}");
        assert_eq!(selector["app.kubernetes.io/instance"], name);
        let (status, _, _) = server_condition("AdoptionConfigInvalid").await;
        assert_eq!(status, "absent");

        // Annotations removed: the adopted Service is handed back (same address, selecting the
        // old stack's Pods, no controller); the server has its own; the volume stays.
        let annotations = json!({"metadata": {"annotations": {"ogx.io/adopt-storage": null, "ogx.io/adopt-networking": null}}});
        servers.patch(name, &PatchParams::default(), &Patch::Merge(&annotations)).await.unwrap();
        reconcile_server().await;
        let returned = services.get(&format!("{old}-service")).await.unwrap();
        assert_eq!(controller_uid(&returned.metadata.owner_references), None);
        assert!(!returned.metadata.labels.clone().unwrap_or_default().contains_key("ogx.io/adopted-from"));
        let spec = returned.spec.unwrap();
        assert_eq!((spec.cluster_ip, spec.selector.unwrap()["app.kubernetes.io/instance"].as_str()), (service_ip.clone(), old));
        assert!(services.get_opt(&format!("{name}-service")).await.unwrap().is_some());
        let (status, reason, _) = server_condition("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "AdoptionAnnotationRemoved"));
        let (status, _, _) = server_condition("StorageAdopted").await;
        assert_eq!(status, "True");
        let mounted = || async {
            f.deployment(name).await.spec.unwrap().template.spec.unwrap().volumes.into_iter().flatten()
                .filter_map(|v| v.persistent_volume_claim).map(|c| c.claim_name).collect::<Vec<_>>()
        };
        assert_eq!(mounted().await, std::slice::from_ref(&old_claim), "the adopted volume stays mounted");
        // Found by its labels alone: with the status lost (restored from a backup without it,
        // say), the taken volume is still the one mounted, and no fresh one is made.
        servers.patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": {"conditions": []}}))).await.unwrap();
        reconcile_server().await;
        assert_eq!(mounted().await, std::slice::from_ref(&old_claim), "found again without a status");
        assert!(claims.get_opt(&format!("{name}-pvc")).await.unwrap().is_none());
        // The old stack, kept and named by no annotation now, resumes; its volume is the server's,
        // so it stops there: two servers never write one volume.
        let before = f.deployment(old).await;
        reconcile_old().await;
        let (status, reason, message) = f.condition(old, "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "AdoptedByOGXServer"), "{message}");
        assert!(message.contains("PVC llamastack-vllm-pvc was taken from llamastack-vllm by OGXServer my-server"), "{message}");
        let after = f.deployment(old).await;
        assert_eq!((after.spec.unwrap().replicas, after.metadata.resource_version), (Some(0), before.metadata.resource_version));

        // A value that cannot name a stack: said, and nothing is taken.
        let bad = json!({"metadata": {"annotations": {"ogx.io/adopt-networking": "Not_A_Name"}}});
        servers.patch(name, &PatchParams::default(), &Patch::Merge(&bad)).await.unwrap();
        reconcile_server().await;
        let (status, reason, message) = server_condition("AdoptionConfigInvalid").await;
        assert_eq!((status.as_str(), reason.as_str()), ("True", "AdoptionConfigInvalid"), "{message}");
        assert!(message.starts_with("ogx.io/adopt-networking: \"Not_A_Name\""), "{message}");
        // Nothing taken is let go: the taken volume stays mounted and no fresh one is made (it
        // used to mount a fresh `my-server-pvc`), and the old stack, which the value may name,
        // stands down instead of resuming beside the server.
        assert_eq!(mounted().await, std::slice::from_ref(&old_claim), "the taken volume stays mounted");
        assert!(claims.get_opt(&format!("{name}-pvc")).await.unwrap().is_none());
        reconcile_old().await;
        let (status, reason, message) = f.condition(old, "ConfigGenerated").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "AdoptedByOGXServer"), "{message}");
        assert!(message.contains("whatever its unreadable ogx.io/adopt-* annotation names"), "{message}");
        drop(plane);
    }))
    };
    on_a_big_stack(body);
}

/// The address is taken only from a server that serves, and a Service taken from a stack that
/// was deleted since stays the server's when the annotation goes: it used to be handed back to
/// the deleted stack, ownerless, selecting Pods nobody makes (issue 84, the fifth order).
#[test]
fn an_address_taken_from_a_stack_deleted_since_stays_with_the_server() {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    let body = || {
        rt.block_on(Box::pin(async {
        let f = Fixture::new(&client, "default");
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let old: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "old"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        f.llsds().create(&PostParams::default(), &old).await.unwrap();
        f.reconcile("old").await;
        let address = services.get("old-service").await.unwrap().spec.unwrap().cluster_ip;
        let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "new", "annotations": {"ogx.io/adopt-networking": "old"}},
            "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let reconcile_new = || async { reconcile_ogx(Arc::new(servers.get("new").await.unwrap()), f.ctx.clone()).await.unwrap() };
        let said = |type_: &'static str| server_said(&servers, "new", type_);
        let selects = || async { services.get("old-service").await.unwrap().spec.unwrap().selector.unwrap()["app.kubernetes.io/instance"].clone() };

        // Its Deployment made, not available (a quota without room, an image still pulling):
        // the old address serves the old Pods.
        reconcile_new().await;
        assert!(deployments.get_opt("new").await.unwrap().is_some());
        let (status, reason, message) = said("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "WaitingForServer"), "{message}");
        assert_eq!(selects().await, "old");

        // Available: taken, same address.
        let available = json!({"status": {"replicas": 1, "availableReplicas": 1, "readyReplicas": 1, "updatedReplicas": 1}});
        deployments.patch_status("new", &PatchParams::default(), &Patch::Merge(&available)).await.unwrap();
        reconcile_new().await;
        let (status, reason, message) = said("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("True", "NetworkingAdopted"), "{message}");
        assert_eq!(selects().await, "new");

        // The old stack deleted (the guide's last step), then the annotation removed: the
        // Service stays the server's, serving its Pods at the same address, and says so.
        f.llsds().delete("old", &Default::default()).await.unwrap();
        let removed = json!({"metadata": {"annotations": {"ogx.io/adopt-networking": null}}});
        servers.patch("new", &PatchParams::default(), &Patch::Merge(&removed)).await.unwrap();
        reconcile_new().await;
        let service = services.get("old-service").await.unwrap();
        let server_uid = servers.get("new").await.unwrap().metadata.uid.unwrap();
        let controller = service.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)).map(|o| o.uid.clone());
        assert_eq!(controller, Some(server_uid));
        let spec = service.spec.unwrap();
        assert_eq!((spec.cluster_ip, spec.selector.unwrap()["app.kubernetes.io/instance"].as_str()), (address, "new"));
        let (status, reason, message) = said("NetworkingAdopted").await;
        assert_eq!((status.as_str(), reason.as_str()), ("False", "AdoptionAnnotationRemoved"), "{message}");
        assert!(message.contains("old-service stay this server's"), "{message}");
    }))
    };
    on_a_big_stack(body);
}

/// External providers through the `OGXServer` door: the stack of the test above, converted by
/// `convert --to ogx.io/v1beta1`, carries them in `llamastack.io/external-providers` and gets the
/// same install steps in the same order; a bad value is refused with the annotation named.
/// An `OGXServer` that cannot run takes nothing: with each adoption annotation and a provider
/// Secret that does not exist, the old stack keeps its replicas, its Service's selector and
/// owner, and its claim; the conditions say why. Once the Secret exists, the take-over follows.
/// An annotation naming no stack is refused, and no fresh volume is made while it stands.
#[test]
fn a_blocked_ogx_server_takes_nothing_from_the_old_stack() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    let body = || {
        rt.block_on(Box::pin(async {
        let f = Fixture::new(&client, "default");
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let old: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "old"}, "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {}}}})).unwrap();
        f.llsds().create(&PostParams::default(), &old).await.unwrap();
        f.reconcile("old").await;
        let llsd_uid = f.llsds().get("old").await.unwrap().metadata.uid.unwrap();
        let controller = |refs: Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>| {
            refs.into_iter().flatten().find(|o| o.controller == Some(true)).map(|o| o.uid)
        };
        let old_stack = || async {
            let replicas = f.deployment("old").await.spec.unwrap().replicas;
            let service = services.get("old-service").await.unwrap();
            let claim = claims.get("old-pvc").await.unwrap();
            (replicas, service.spec.unwrap().selector, controller(service.metadata.owner_references), controller(claim.metadata.owner_references))
        };
        let before = old_stack().await;
        assert_eq!((before.2.as_ref(), before.3.as_ref()), (Some(&llsd_uid), Some(&llsd_uid)));

        // The OGX operator's sample's providers (tests/fixtures/ogx-operator), its Secret missing.
        let sample = std::fs::read_to_string(support::workspace_root().join("tests/fixtures/ogx-operator/example-with-generated-config.yaml")).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&sample).unwrap();
        let mut server = docs[1].clone();
        server["metadata"] = json!({"name": "new", "annotations": {"ogx.io/adopt-storage": "old", "ogx.io/adopt-networking": "old"}});
        server["spec"]["workload"] = json!({"storage": {}});
        let server: OGXServer = serde_json::from_value(server).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let reconcile_new = || async { reconcile_ogx(Arc::new(servers.get("new").await.unwrap()), f.ctx.clone()).await.unwrap() };
        let said = |type_: &'static str| {
            let servers = servers.clone();
            async move {
                let status = serde_json::to_value(servers.get("new").await.unwrap().status).unwrap();
                json_condition(&status, type_)
            }
        };
        for _ in 0..2 {
            reconcile_new().await;
            assert_eq!(said("SecretsResolved").await, ("False".into(), "SecretNotFound".into()));
            assert_eq!(said("StorageAdopted").await, ("False".into(), "AdoptionDeferred".into()));
            assert_eq!(said("NetworkingAdopted").await, ("False".into(), "AdoptionDeferred".into()));
            assert_eq!(old_stack().await, before, "the old stack is untouched");
            assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("new").await.unwrap().is_none());
        }

        // Unblocked: the take-over begins (the old Deployment is scaled to zero first).
        let secret: Secret = serde_json::from_value(docs[0].clone()).unwrap();
        Api::<Secret>::namespaced(client.clone(), "default").create(&PostParams::default(), &secret).await.unwrap();
        reconcile_new().await;
        let after = old_stack().await;
        assert_eq!(after.0, Some(0), "scaled down once the server can run");
        assert_eq!((after.1.as_ref(), after.2.as_ref()), (before.1.as_ref(), before.2.as_ref()), "the address waits for the server to serve");
        assert_eq!(said("NetworkingAdopted").await, ("False".into(), "WaitingForServer".into()));
        let scaled = f.deployment("old").await;
        let managers: Vec<String> = scaled.metadata.managed_fields.into_iter().flatten().filter_map(|m| m.manager).collect();
        assert!(managers.iter().any(|m| m == "llama-stack-operator-adoption"), "the scale-down carries the operator's field manager: {managers:?}");

        // Abandoned before the volume was taken: the server gives the replicas back, and the old stack,
        // named by no annotation now, resumes with its replicas (its drift repair takes
        // `spec.replicas` back from the adoption's field manager).
        let removed = json!({"metadata": {"annotations": {"ogx.io/adopt-storage": null, "ogx.io/adopt-networking": null}}});
        servers.patch("new", &PatchParams::default(), &Patch::Merge(&removed)).await.unwrap();
        reconcile_new().await;
        llama_stack_operator::controller::reconcile_stack(Arc::new(f.llsds().get("old").await.unwrap()), f.ctx.clone(), Some(servers_seen(&servers).await)).await.unwrap();
        let resumed = old_stack().await;
        assert_eq!(resumed.0, before.0, "the old Deployment's replicas are restored");
        assert_eq!((resumed.1.as_ref(), resumed.2.as_ref(), resumed.3.as_ref()), (before.1.as_ref(), before.2.as_ref(), before.3.as_ref()), "its Service and claim are its own again");

        // A name that is no stack's volume (a typo): refused, and no fresh volume is made; the
        // Service the same server asks for is not taken either (a server that never starts
        // must not take the old address: it used to).
        let typo: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "typo", "annotations": {"ogx.io/adopt-storage": "olld", "ogx.io/adopt-networking": "old"}},
            "spec": {"distribution": {"name": "starter"}, "workload": {"storage": {}}}})).unwrap();
        servers.create(&PostParams::default(), &typo).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("typo").await.unwrap()), f.ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get("typo").await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "StorageAdopted"), ("False".into(), "AdoptionSourceNotFound".into()), "{status:#}");
        assert!(claims.get_opt("typo-pvc").await.unwrap().is_none(), "no fresh volume hides the typo");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("typo").await.unwrap().is_none());
        assert_eq!(json_condition(&status, "NetworkingAdopted"), ("False".into(), "AdoptionDeferred".into()), "{status:#}");
        let service = old_stack().await;
        assert_eq!((service.1.as_ref(), service.2.as_ref()), (before.1.as_ref(), before.2.as_ref()), "the old address stays with the old stack");
    }))
    };
    on_a_big_stack(body);
}

#[test]
fn an_ogx_server_installs_external_providers_named_by_this_operators_annotation() {
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    let body = || {
        rt.block_on(Box::pin(async {
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let resolver = Arc::new(Resolver::new(offline_resolver_options()).unwrap());
        let ctx = Arc::new(Context::new(client.clone(), resolver).with_operator_image(Some("reg/operator:1".into())));
        let llsd = json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution", "metadata": {"name": "ok"},
            "spec": {"distribution": {"name": "starter"}, "externalProviders": {"safety": [{"providerId": "first", "image": "reg/f:1"}],
            "inference": [{"providerId": "second", "image": "reg/s:1", "imagePullPolicy": "Always"}]}}});
        let manifest = plane.dir().join("ok.yaml");
        std::fs::write(&manifest, serde_json::to_string(&llsd).unwrap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
            .args(["convert", "-f", manifest.to_str().unwrap(), "--to", "ogx.io/v1beta1"])
            .output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let server: OGXServer = serde_saphyr::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("ok").await.unwrap()), ctx.clone()).await.unwrap();
        let pod = Api::<Deployment>::namespaced(client.clone(), "default").get("ok").await.unwrap().spec.unwrap().template.spec.unwrap();
        let init: Vec<String> = pod.init_containers.unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(init, ["copy-tools", "install-provider-second", "install-provider-first", "install-packages", "merge-config", "preflight"]);
        assert_eq!(pod.containers[0].name, "ogx");
        let status = serde_json::to_value(servers.get("ok").await.unwrap().status).unwrap();
        let ids: Vec<&str> = status["externalProviders"].as_array().unwrap().iter().map(|p| p["providerId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["second", "first"], "{status:#}");

        // A value the model does not take: refused with the annotation and the key, nothing made.
        let bad: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "bad", "annotations": {"llamastack.io/external-providers": "inference: [{providerId: a, image: r/a, pullPolicy: Always}]"}},
            "spec": {"distribution": {"name": "starter"}}})).unwrap();
        servers.create(&PostParams::default(), &bad).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("bad").await.unwrap()), ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get("bad").await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "ConfigGenerated"), ("False".into(), "FieldNotServed".into()), "{status:#}");
        let message = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "ConfigGenerated").unwrap()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("metadata.annotations[llamastack.io/external-providers].inference[0].pullPolicy"), "{message}");
        assert!(Api::<Deployment>::namespaced(client.clone(), "default").get_opt("bad").await.unwrap().is_none());
    }))
    };
    on_a_big_stack(body);
}

/// The OGX operator's Praxis sample with external access asked for
/// (`tests/fixtures/ogx-operator/newer/network-config-praxis.yaml`, second document, the RHOAI fork
/// at f74c8f0), reconciled on the API server: the config it runs trusts Praxis's headers, the
/// NetworkPolicy the API server stores admits the Praxis Pods by the OGX operator's default
/// selector, no Ingress is made, and the status says why. Reconciled under the operator's own
/// RBAC, the status says whether a Ready Praxis Pod reaches the server (none, then one made in
/// `openshift-ingress`) and that no TLS Secret is named.
#[test]
fn an_ogx_server_in_praxis_mode_is_reached_only_from_praxis() {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator = plane.operator_client().await.expect("the operator's client");
        let f = Fixture::new(&operator, "default");
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let sample = std::fs::read_to_string(
            support::workspace_root().join("tests/fixtures/ogx-operator/newer/network-config-praxis.yaml"),
        )
        .unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&sample).unwrap();
        let server: OGXServer = serde_json::from_value(docs[1].clone()).unwrap();
        let name = "ogxserver-external-access-ignored";
        servers.create(&PostParams::default(), &server).await.unwrap();
        reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), f.ctx.clone()).await.unwrap();

        let configs = f.config_maps(name).await;
        let config = configs
            .iter()
            .filter_map(|c| c.data.as_ref()?.get("config.yaml"))
            .next()
            .unwrap_or_else(|| panic!("no config ConfigMap: {configs:?}"));
        let config: Value = serde_saphyr::from_str(config).unwrap();
        assert_eq!(config["server"]["auth"]["provider_config"]["type"], "upstream_header");
        assert_eq!(config["server"]["tenancy"]["mode"], "multi");

        let policies = Api::<NetworkPolicy>::namespaced(client.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert_eq!(policies.len(), 1, "{policies:?}");
        let spec = serde_json::to_value(&policies[0].spec).unwrap();
        assert_eq!(
            spec["ingress"][0]["from"][0],
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-ingress"}},
                "podSelector": {"matchLabels": {"app": "payload-processing"}}}),
            "{spec:#}"
        );
        let ingresses = Api::<Ingress>::namespaced(client.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert!(ingresses.is_empty(), "{ingresses:?}");
        let status = serde_json::to_string(&servers.get(name).await.unwrap().status).unwrap();
        assert!(status.contains("no Ingress or Route is made"), "{status}");

        let status = serde_json::to_value(servers.get(name).await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "PraxisReachable"), ("False".into(), "NoReadyPraxisPods".into()), "{status:#}");
        assert_eq!(json_condition(&status, "TLSConfigured"), ("False".into(), "TLSSecretNotSet".into()), "{status:#}");
        assert_eq!(json_condition(&status, "ConfigGenerated").0, "True", "informational only: {status:#}");

        // A Ready Praxis Pod where the OGX operator's default selector finds it.
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": "openshift-ingress"}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        // No controller makes the namespace's `default` ServiceAccount here; the Pod needs one.
        let account: k8s_openapi::api::core::v1::ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
        Api::namespaced(client.clone(), "openshift-ingress").create(&PostParams::default(), &account).await.unwrap();
        let praxis_pods: Api<Pod> = Api::namespaced(client.clone(), "openshift-ingress");
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "praxis-0", "labels": {"app": "payload-processing"}},
            "spec": {"containers": [{"name": "praxis", "image": "praxis.invalid/praxis:1"}]}})).unwrap();
        praxis_pods.create(&PostParams::default(), &pod).await.unwrap();
        let ready = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-06T10:00:00Z"}]}});
        praxis_pods.patch_status("praxis-0", &PatchParams::default(), &Patch::Merge(&ready)).await.unwrap();
        reconcile_ogx(Arc::new(servers.get(name).await.unwrap()), f.ctx.clone()).await.unwrap();
        let status = serde_json::to_value(servers.get(name).await.unwrap().status).unwrap();
        assert_eq!(json_condition(&status, "PraxisReachable"), ("True".into(), "PraxisPodsReady".into()), "{status:#}");
        let said = status["conditions"].as_array().unwrap().iter()
            .find(|c| c["type"] == "PraxisReachable").unwrap()["message"].clone();
        assert_eq!(said, "1 Ready Praxis pod(s) match the selector in namespace \"openshift-ingress\"");
    });
}

/// The Praxis migration Job on the API server, under the operator's own RBAC and OpenShift's
/// admission: made once for its attempt (a second reconcile and a restarted operator make no
/// other), the server's image and config, Praxis's database from its Secret; once the Job
/// fails (as the Job controller records it) it is kept, not made again, and the status says so
/// with the command to read its logs.
#[test]
fn a_praxis_migration_job_is_made_once_and_a_failed_one_is_kept() {
    use k8s_openapi::api::batch::v1::Job;
    use llama_stack_operator::api::ogx::OGXServer;
    use llama_stack_operator::controller::reconcile_ogx;

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator = plane.operator_client().await.expect("the operator's client");
        let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
        for (name, url) in [("ogx-pg", "postgresql://u:p@ogx-db/ogx"), ("praxis-pg", "postgresql://u:p@praxis-db/praxis")] {
            let secret: Secret = serde_json::from_value(json!({"metadata": {"name": name}, "stringData": {"url": url}})).unwrap();
            secrets.create(&PostParams::default(), &secret).await.unwrap();
        }
        let servers: Api<OGXServer> = Api::namespaced(client.clone(), "default");
        let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1", "kind": "OGXServer",
            "metadata": {"name": "demo"},
            "spec": {"distribution": {"name": "starter"},
                "storage": {"sql": {"type": "postgres", "connectionString": {"name": "ogx-pg", "key": "url"}}},
                "praxisMode": {"enabled": true, "migrationJob": {
                    "targetConnectionString": {"name": "praxis-pg", "key": "url"}, "fallbackTenant": "acme"}}}})).unwrap();
        servers.create(&PostParams::default(), &server).await.unwrap();
        let f = Fixture::new(&operator, "default");
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), f.ctx.clone()).await.unwrap();
        let jobs: Api<Job> = Api::namespaced(client.clone(), "default");

        // The catalog's starter is OGX 1.3.0 as released: no `ogx migrate praxis`, no Job.
        let status = serde_json::to_value(servers.get("demo").await.unwrap().status).unwrap();
        assert_eq!(status["migration"]["phase"], "PreflightFailed", "{status:#}");
        assert!(status["migration"]["message"].as_str().unwrap().contains("no `ogx migrate praxis`"), "{status:#}");
        assert!(jobs.get_opt("demo-praxis-migration").await.unwrap().is_none());

        // An operator whose image-overrides name a midstream build for starter, as Red Hat's
        // catalog does (its reference says nothing against it): the attempt's Job.
        let midstream = || {
            let mut options = offline_resolver_options();
            let overrides = std::collections::BTreeMap::from([("starter".to_owned(), "quay.io/opendatahub/odh-ogx-core:3.6".to_owned())]);
            options.catalog = options.catalog.with_overrides(&overrides);
            Fixture {
                client: operator.clone(),
                ctx: Arc::new(Context::new(operator.clone(), Arc::new(Resolver::new(options).unwrap()))),
                ns: "default".to_owned(),
            }
        };
        let f = midstream();
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), f.ctx.clone()).await.unwrap();

        let Some(job) = jobs.get_opt("demo-praxis-migration").await.unwrap() else {
            let status = serde_json::to_value(servers.get("demo").await.unwrap().status).unwrap();
            panic!("no migration Job: {status:#}");
        };
        let uid = job.metadata.uid.clone();
        let status = serde_json::to_value(servers.get("demo").await.unwrap().status).unwrap();
        let key = status["migration"]["attemptKey"].as_str().unwrap().to_owned();
        assert_eq!(job.metadata.annotations.as_ref().unwrap()["ogx.io/migration-attempt"], key);
        assert_eq!(status["migration"]["phase"], "Running", "{status:#}");
        let pod = serde_json::to_value(&job.spec.as_ref().unwrap().template.spec).unwrap();
        let deployment = serde_json::to_value(f.deployment("demo").await.spec.unwrap().template.spec).unwrap();
        assert_eq!(pod["containers"][0]["image"], deployment["containers"][0]["image"]);
        let env = pod["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "PRAXIS_DATABASE_URL"
            && e["valueFrom"]["secretKeyRef"] == json!({"name": "praxis-pg", "key": "url", "optional": false})), "{pod:#}");
        assert!(!serde_json::to_string(&pod).unwrap().contains("praxis-db"), "the target's URL is never inlined");

        // Again, and from a restarted operator (a new context): the same Job.
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), f.ctx.clone()).await.unwrap();
        let restarted = midstream();
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), restarted.ctx.clone()).await.unwrap();
        assert_eq!(jobs.get("demo-praxis-migration").await.unwrap().metadata.uid, uid);

        // The Job fails, as the Job controller records it.
        let failed = json!({"status": {"startTime": "2026-12-06T10:00:00Z", "failed": 3, "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit", "lastTransitionTime": "2026-12-06T10:05:00Z"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit", "lastTransitionTime": "2026-12-06T10:05:00Z"}]}});
        jobs.patch_status("demo-praxis-migration", &PatchParams::default(), &Patch::Merge(&failed)).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), restarted.ctx.clone()).await.unwrap();
        assert_eq!(jobs.get("demo-praxis-migration").await.unwrap().metadata.uid, uid, "kept for its logs");
        let status = serde_json::to_value(servers.get("demo").await.unwrap().status).unwrap();
        assert_eq!(status["migration"]["phase"], "Failed", "{status:#}");
        assert!(status["migration"]["message"].as_str().unwrap().contains("kubectl logs job/demo-praxis-migration"), "{status:#}");
        assert_eq!(json_condition(&status, "MigrationJobSucceeded"), ("False".into(), "MigrationJobFailed".into()));
        assert_eq!(json_condition(&status, "PraxisCutoverReady"), ("False".into(), "PraxisCutoverNotReady".into()));

        // Turned off: a soft rollback. The failed Job stays for its logs, the record stays with
        // the warning, the conditions of a migration under way go.
        let off = json!({"spec": {"praxisMode": {"migrationJob": {"enabled": false}}}});
        servers.patch("demo", &PatchParams::default(), &Patch::Merge(&off)).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("demo").await.unwrap()), restarted.ctx.clone()).await.unwrap();
        assert_eq!(jobs.get("demo-praxis-migration").await.unwrap().metadata.uid, uid, "a failed Job is kept");
        let status = serde_json::to_value(servers.get("demo").await.unwrap().status).unwrap();
        assert_eq!(status["migration"]["phase"], "Pending", "{status:#}");
        assert!(status["migration"]["softRollbackWarning"].as_str().unwrap().contains("soft rollback"), "{status:#}");
        let types: Vec<&str> = status["conditions"].as_array().unwrap().iter().filter_map(|c| c["type"].as_str()).collect();
        for gone in ["MigrationPreflightReady", "MigrationJobSucceeded", "MigrationValidated", "PraxisCutoverReady"] {
            assert!(!types.contains(&gone), "{gone}: {status:#}");
        }

        // A target that is the server's own database, spelt another way: no Job, and why.
        let same: Secret = serde_json::from_value(json!({"metadata": {"name": "same-pg"},
            "stringData": {"url": "postgres://other@OGX-DB:5432/ogx?sslmode=require"}})).unwrap();
        secrets.create(&PostParams::default(), &same).await.unwrap();
        let mut server = server.clone();
        server.metadata.name = Some("same".to_owned());
        server.spec.praxis_mode.as_mut().unwrap().migration_job.as_mut().unwrap().target_connection_string.name = "same-pg".to_owned();
        servers.create(&PostParams::default(), &server).await.unwrap();
        reconcile_ogx(Arc::new(servers.get("same").await.unwrap()), restarted.ctx.clone()).await.unwrap();
        assert!(jobs.get_opt("same-praxis-migration").await.unwrap().is_none());
        let status = serde_json::to_value(servers.get("same").await.unwrap().status).unwrap();
        assert_eq!(status["migration"]["phase"], "PreflightFailed", "{status:#}");
        assert_eq!(json_condition(&status, "MigrationPreflightReady"), ("False".into(), "MigrationPreflightFailed".into()));
    });
}
