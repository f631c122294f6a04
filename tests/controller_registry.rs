//! The controller resolving a private image with the ServiceAccount's pull secrets, as kubelet
//! would pull it: a real htpasswd + TLS registry and a real kube-apiserver.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::sync::Arc;

use base64::Engine;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::api::{Api, PostParams};
use llama_stack_operator::api::v1alpha2::{ConfigSource, LlamaStackDistribution};
use llama_stack_operator::controller::{Context, reconcile};
use llama_stack_resolver::credential_provider::CredentialProviders;
use llama_stack_resolver::{Catalog, Resolver, ResolverOptions};
use serde_json::json;
use support::control_plane::start_with_crd;
use support::credential_plugin;
use support::images::push_plain;
use support::oci::{Comp, Entry, ImageSpec, Layer, skopeo_copy, write_layout};
use support::registries::{PASSWORD, Registries, USER};
use support::wait::eventually;

#[test]
fn private_images_resolve_with_the_service_accounts_pull_secrets() {
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let config = "version: 2\ndistro_name: private-fixture\napis: [inference]\nproviders:\n  inference: []\n";
    let image = ImageSpec {
        arch: "amd64",
        labels: vec![(
            "io.llamastack.config.base64",
            base64::engine::general_purpose::STANDARD.encode(config),
        )],
        layers: vec![Layer {
            entries: vec![Entry::File("/etc/os-release", b"ID=t\n".to_vec())],
            comp: Comp::Gzip,
        }],
    };
    let digest = write_layout(&work.path().join("layout"), "v1", &[image], false).unwrap();
    let creds = format!("{USER}:{PASSWORD}");
    skopeo_copy(
        &format!("oci:{}:v1", work.path().join("layout").display()),
        &format!("docker://{}/t/private:v1", regs.basic.host),
        &[
            "--preserve-digests",
            "--dest-creds",
            &creds,
            "--dest-cert-dir",
            regs.cert_dir().to_str().unwrap(),
        ],
    )
    .unwrap();

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.extra_ca_pem = Some(regs.ca_pem());
        let ctx = Arc::new(Context::new(client.clone(), Arc::new(Resolver::new(options).unwrap())));
        let auth = base64::engine::general_purpose::STANDARD.encode(&creds);
        for (ns, with_secret) in [("with-creds", true), ("without-creds", false)] {
            let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
            Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
            let pull_secrets = if with_secret { json!([{"name": "regcred"}]) } else { json!([]) };
            let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"}, "imagePullSecrets": pull_secrets})).unwrap();
            Api::<ServiceAccount>::namespaced(client.clone(), ns).create(&PostParams::default(), &sa).await.unwrap();
            if with_secret {
                let docker_config = json!({"auths": {regs.basic.host.clone(): {"auth": auth}}}).to_string();
                let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "regcred"}, "type": "kubernetes.io/dockerconfigjson",
                    "stringData": {".dockerconfigjson": docker_config}})).unwrap();
                Api::<Secret>::namespaced(client.clone(), ns).create(&PostParams::default(), &secret).await.unwrap();
            }
            let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": "private"}, "spec": {"distribution": {"image": format!("{}/t/private:v1", regs.basic.host)}}})).unwrap();
            let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), ns);
            llsds.create(&PostParams::default(), &cr).await.unwrap();
            reconcile(Arc::new(llsds.get("private").await.unwrap()), ctx.clone()).await.unwrap();
            let status = llsds.get("private").await.unwrap().status.unwrap();
            if with_secret {
                let resolved = status.resolved_distribution.unwrap();
                assert_eq!(resolved.image.as_deref(), Some(format!("{}/t/private@{digest}", regs.basic.host).as_str()));
                assert_eq!(resolved.config_source, Some(ConfigSource::OciLabel));
                let d = Api::<Deployment>::namespaced(client.clone(), ns).get("private").await.unwrap();
                let pod = d.spec.unwrap().template.spec.unwrap();
                assert_eq!(pod.containers[0].image.as_deref(), Some(format!("{}/t/private@{digest}", regs.basic.host).as_str()), "the digest is deployed");
            } else {
                let c = status.conditions.unwrap().into_iter().find(|c| c.type_ == "ConfigGenerated").unwrap();
                assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "RegistryError"));
                assert!(c.message.contains("no pull secret matches this registry"), "{}", c.message);
                assert!(Api::<Deployment>::namespaced(client.clone(), ns).get_opt("private").await.unwrap().is_none());
            }
        }

        // Node credentials: kubelet's credential provider plugins (the same config and bin
        // directory) reach the registry with no pull secret; a failing plugin is named.
        for (ns, mode) in [("node-creds", "answer"), ("node-creds-failing", "fail")] {
            let plugin = credential_plugin::install(&work.path().join(ns), &regs.basic.host, USER, PASSWORD, mode, "5m").unwrap();
            let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
            options.extra_ca_pem = Some(regs.ca_pem());
            options.credential_providers = Some(Arc::new(CredentialProviders::load(&plugin.config, &plugin.bin_dir).unwrap()));
            let ctx = Arc::new(Context::new(client.clone(), Arc::new(Resolver::new(options).unwrap())));
            let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
            Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
            let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": "private"}, "spec": {"distribution": {"image": format!("{}/t/private:v1", regs.basic.host)}}})).unwrap();
            let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), ns);
            llsds.create(&PostParams::default(), &cr).await.unwrap();
            reconcile(Arc::new(llsds.get("private").await.unwrap()), ctx.clone()).await.unwrap();
            let status = llsds.get("private").await.unwrap().status.unwrap();
            assert_eq!(plugin.requests(), 1, "{ns}: the plugin was asked once");
            if mode == "answer" {
                let d = Api::<Deployment>::namespaced(client.clone(), ns).get("private").await.unwrap();
                let pod = d.spec.unwrap().template.spec.unwrap();
                assert_eq!(pod.containers[0].image.as_deref(), Some(format!("{}/t/private@{digest}", regs.basic.host).as_str()), "deployed with the plugin's credentials");
            } else {
                let c = status.conditions.unwrap().into_iter().find(|c| c.type_ == "ConfigGenerated").unwrap();
                assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "RegistryError"));
                assert!(c.message.contains("credential provider test-credential-provider failed: exit status: 1: token service unreachable"), "{}", c.message);
            }
        }
    });
}

/// An image override rolls the new pinned image: one in the OGX operator's ConfigMap
/// (`ogx-operator-config`, kept by an installation that replaces it), then one in the operator's
/// own ConfigMap for the same name, which wins.
#[test]
fn an_image_override_in_the_operator_config_map_rolls_the_new_pinned_image() {
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let theirs = push_plain(&plain, work.path(), "mirror/starter", "v1", None);
    let ours = push_plain(&plain, work.path(), "ours/starter", "v1", None);

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator_ns = "llama-stack-operator-system";
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": operator_ns}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.timeout = std::time::Duration::from_secs(2);
        let ctx = Context::new(
            client.clone(),
            Arc::new(Resolver::new(options.clone()).unwrap()),
        )
        .with_operator_config(operator_ns, options);
        let controller = tokio::spawn(llama_stack_operator::controller::run(Arc::new(ctx)));
        let cr: LlamaStackDistribution = serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "stack"}, "spec": {"distribution": {"name": "starter"}}}),
        )
        .unwrap();
        Api::<LlamaStackDistribution>::namespaced(client.clone(), "default")
            .create(&PostParams::default(), &cr)
            .await
            .unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let image_of = |d: &Deployment| {
            d.spec
                .as_ref()
                .unwrap()
                .template
                .spec
                .as_ref()
                .unwrap()
                .containers[0]
                .image
                .clone()
                .unwrap_or_default()
        };
        let mut first = None;
        for _ in 0..100 {
            if let Some(d) = deployments.get_opt("stack").await.unwrap() {
                first = Some(d);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        let first = first.expect("the Deployment is created");
        assert_eq!(
            image_of(&first),
            "docker.io/ogxai/distribution-starter:1.3.0",
            "no registry reachable: the catalog tag, unpinned"
        );

        let config_maps =
            Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), operator_ns);
        let config_map =
            |name: &str, data: serde_json::Value| -> k8s_openapi::api::core::v1::ConfigMap {
                serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
            };
        let rolled_to = |wanted: String| {
            let deployments = deployments.clone();
            async move {
                for _ in 0..100 {
                    let d = deployments.get("stack").await.unwrap();
                    if image_of(&d) == wanted {
                        return d;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                panic!(
                    "{wanted} not rolled out within 20 s; the Deployment runs {}",
                    image_of(&deployments.get("stack").await.unwrap())
                );
            }
        };
        // The OGX operator's ConfigMap names the image; the operator's own says only how to reach it.
        let own = config_map(
            "llama-stack-operator-config",
            json!({"insecure-registries": format!("[\"{plain}\"]")}),
        );
        config_maps
            .create(&PostParams::default(), &own)
            .await
            .unwrap();
        let ogx = config_map(
            "ogx-operator-config",
            json!({"image-overrides": format!("starter: {plain}/mirror/starter:v1\n")}),
        );
        config_maps
            .create(&PostParams::default(), &ogx)
            .await
            .unwrap();
        let rolled = rolled_to(theirs).await;
        assert_eq!(
            rolled.metadata.generation,
            first.metadata.generation.map(|g| g + 1),
            "one Deployment update"
        );

        let own = config_map(
            "llama-stack-operator-config",
            json!({"insecure-registries": format!("[\"{plain}\"]"),
            "image-overrides": format!("starter: {plain}/ours/starter:v1\n")}),
        );
        config_maps
            .replace("llama-stack-operator-config", &PostParams::default(), &own)
            .await
            .unwrap();
        let again = rolled_to(ours).await;
        assert_eq!(
            again.metadata.generation,
            rolled.metadata.generation.map(|g| g + 1),
            "the operator's own override wins, in one update"
        );
        controller.abort();
    });
}

/// The promise to digest-pinned users: once a named distribution runs pinned, a registry outage
/// followed by an operator restart (the resolver's last known good result is gone) never swaps
/// in the catalog's tag and the embedded config. What runs is kept; the status says why.
#[test]
fn a_restart_during_a_registry_outage_keeps_the_pinned_deployment() {
    let mut regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let config = "version: 2\ndistro_name: acme\napis: [inference]\nproviders:\n  inference: []\n";
    let plain = regs.plain.host.clone();
    let pinned = push_plain(&plain, work.path(), "acme/dist", "a", Some(config));

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let overrides = std::collections::BTreeMap::from([(
            "starter".to_owned(),
            format!("{plain}/acme/dist:a"),
        )]);
        let mut options =
            ResolverOptions::new(Catalog::embedded().unwrap().with_overrides(&overrides));
        options.insecure_registries = vec![plain.clone()];
        options.timeout = std::time::Duration::from_secs(2);
        // Each context is one run of the operator: its resolver starts with empty caches.
        let operator = || {
            Arc::new(Context::new(
                client.clone(),
                Arc::new(Resolver::new(options.clone()).unwrap()),
            ))
        };
        let cr: LlamaStackDistribution = serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "named"}, "spec": {"distribution": {"name": "starter"}}}),
        )
        .unwrap();
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        llsds.create(&PostParams::default(), &cr).await.unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        reconcile(Arc::new(llsds.get("named").await.unwrap()), operator())
            .await
            .unwrap();
        let before = deployments.get("named").await.unwrap();
        let pod = before.spec.clone().unwrap().template.spec.unwrap();
        assert_eq!(
            pod.containers[0].image.as_deref(),
            Some(pinned.as_str()),
            "deployed pinned"
        );
        let config_map = |d: &Deployment| {
            d.spec
                .clone()
                .unwrap()
                .template
                .spec
                .unwrap()
                .volumes
                .unwrap()
                .into_iter()
                .find(|v| v.name == "config")
                .unwrap()
                .config_map
                .unwrap()
                .name
        };

        regs.plain.stop();
        let writes_before = plane.audit_writes("admin").unwrap().len();
        let restarted = operator();
        reconcile(
            Arc::new(llsds.get("named").await.unwrap()),
            restarted.clone(),
        )
        .await
        .unwrap();
        let after = deployments.get("named").await.unwrap();
        assert_eq!(
            after.metadata.generation, before.metadata.generation,
            "the Deployment is untouched"
        );
        assert_eq!(
            after
                .spec
                .clone()
                .unwrap()
                .template
                .spec
                .unwrap()
                .containers[0]
                .image,
            pod.containers[0].image
        );
        assert_eq!(config_map(&after), config_map(&before), "the same config");
        let status = llsds.get("named").await.unwrap().status.unwrap();
        let c = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "ConfigGenerated")
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "RegistryError"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains("keeping the running image"),
            "{}",
            c.message
        );
        assert_eq!(
            status.resolved_distribution.unwrap().image.as_deref(),
            Some(pinned.as_str()),
            "the status still names what runs"
        );
        let writes: Vec<_> = plane
            .audit_writes("admin")
            .unwrap()
            .into_iter()
            .skip(writes_before)
            .filter(|w| {
                !w["objectRef"]["subresource"].is_string() && w["objectRef"]["resource"] != "events"
            })
            .collect();
        assert!(
            writes.is_empty(),
            "no object was written during the outage: {writes:?}"
        );
    });
}

/// An image without config labels, as in-house and provider images are, deploys as the upstream
/// operator deployed it, pinned by digest: with nothing to generate it runs its own entrypoint and
/// config; with the user's ConfigMap (`overrideConfig`) that ConfigMap, mounted whole, whatever
/// its key; an upstream catalog name (`remote-vllm`, no longer published) remapped by
/// `image-overrides` to an image a mirror still has runs the same way. Only a resource asking for a generated config needs a base config.
#[test]
fn unlabelled_images_run_their_own_config_or_the_users_config_map() {
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let pinned = push_plain(&plain, work.path(), "custom/server", "v1", None);

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let overrides = std::collections::BTreeMap::from([(
            "remote-vllm".to_owned(),
            format!("{plain}/custom/server:v1"),
        )]);
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap().with_overrides(&overrides));
        options.insecure_registries = vec![plain.clone()];
        let ctx = Arc::new(Context::new(client.clone(), Arc::new(Resolver::new(options).unwrap())));
        let config_maps = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "default");
        for (name, key) in [("mine", "config.yaml"), ("chart-run", "run.yaml")] {
            let cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({"metadata": {"name": name},
                "data": {key: "version: 2\nproviders:\n  inference: []\n", "notes.txt": "kept beside it"}})).unwrap();
            config_maps.create(&PostParams::default(), &cm).await.unwrap();
        }
        let image = format!("{plain}/custom/server:v1");
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cases = [
            ("own", json!({"distribution": {"image": image}})),
            ("legacy", json!({"distribution": {"name": "remote-vllm"}, "workload": {"workers": 2}})),
            ("custom", json!({"distribution": {"image": image}, "overrideConfig": {"configMapName": "mine"}})),
            ("run-yaml", json!({"distribution": {"image": image}, "overrideConfig": {"configMapName": "chart-run"},
                "workload": {"overrides": {"command": ["llama", "stack", "run", "/etc/llama-stack/run.yaml"]}}})),
            ("generated", json!({"distribution": {"image": image}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}})),
        ];
        create_and_reconcile(&llsds, &ctx, cases).await;
        let condition = config_generated;
        let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
        let pod_of = |d: Deployment| d.spec.unwrap().template.spec.unwrap();

        for name in ["own", "legacy"] {
            let status = llsds.get(name).await.unwrap().status.unwrap();
            let c = condition(&status);
            assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "ImageOwnConfig"), "{name}: {}", c.message);
            let resolved = status.resolved_distribution.unwrap();
            assert_eq!(resolved.config_source, Some(ConfigSource::Image));
            assert_eq!(resolved.image.as_deref(), Some(pinned.as_str()), "{name}: pinned by digest");
            assert_eq!(status.config_generation.unwrap().config_map_name, None);
            let pod = pod_of(deployments.get(name).await.unwrap());
            let server = &pod.containers[0];
            assert_eq!(server.image.as_deref(), Some(pinned.as_str()));
            assert_eq!(server.command, None, "{name}: the image's own entrypoint");
            assert!(pod.volumes.unwrap().iter().all(|v| v.config_map.is_none()), "{name}: no config mounted");
            assert!(server.env.iter().flatten().all(|e| e.name != "LLAMA_STACK_CONFIG"));
        }
        let legacy = condition(&llsds.get("legacy").await.unwrap().status.unwrap()).message;
        assert!(legacy.contains("workload.workers (2) has no effect"), "{legacy}");

        for (name, config_map, key) in [("custom", "mine", "config.yaml"), ("run-yaml", "chart-run", "run.yaml")] {
            let status = llsds.get(name).await.unwrap().status.unwrap();
            let resolved = status.resolved_distribution.unwrap();
            assert_eq!(resolved.config_source, Some(ConfigSource::OverrideConfig));
            assert_eq!(resolved.image.as_deref(), Some(pinned.as_str()));
            let pod = pod_of(deployments.get(name).await.unwrap());
            assert_eq!(pod.containers[0].image.as_deref(), Some(pinned.as_str()), "deployed by digest");
            let volume = pod.volumes.unwrap().into_iter().find(|v| v.name == "config").unwrap().config_map.unwrap();
            assert_eq!((volume.name.as_str(), volume.items), (config_map, None), "the whole ConfigMap");
            let env = pod.containers[0].env.clone().unwrap();
            let config = env.iter().find(|e| e.name == "LLAMA_STACK_CONFIG").unwrap();
            assert_eq!(config.value.as_deref(), Some(format!("/etc/llama-stack/{key}").as_str()));
        }
        let own_command = pod_of(deployments.get("run-yaml").await.unwrap()).containers[0].command.clone();
        assert_eq!(own_command.unwrap(), ["llama", "stack", "run", "/etc/llama-stack/run.yaml"], "the user's command wins");

        // An edit of the file beside the config rolls the Pods (the hash covers every key).
        let hash = |d: Deployment| d.spec.unwrap().template.metadata.unwrap().annotations.unwrap()["llamastack.io/config-hash"].clone();
        let before = hash(deployments.get("run-yaml").await.unwrap());
        config_maps.patch("chart-run", &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": {"notes.txt": "edited"}}))).await.unwrap();
        reconcile(Arc::new(llsds.get("run-yaml").await.unwrap()), ctx.clone()).await.unwrap();
        assert_ne!(hash(deployments.get("run-yaml").await.unwrap()), before);

        let status = llsds.get("generated").await.unwrap().status.unwrap();
        let c = condition(&status);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "BaseConfigRequired"), "{}", c.message);
        assert!(c.message.contains("spec.providers asks for a generated config") && c.message.contains("Fix:"), "{}", c.message);
        assert!(deployments.get_opt("generated").await.unwrap().is_none(), "nothing deployed");
    });
}

/// `distribution.imageConfig` picks which of an OGX image's config files the generated config
/// starts from (an image labelled as OGX's own build labels the ogxai images, with OGX 1.3.0's
/// starter and postgres-demo configs as its two files); a file the image lacks is refused
/// naming those it has, and nothing is deployed for it.
#[test]
fn image_config_picks_which_of_the_images_configs_is_the_base() {
    use support::llama_stack::OGX_STARTER_CONFIG;
    const POSTGRES: &str = include_str!("../configs-ogx/postgres-demo/config.yaml");
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    support::images::push_labelled(
        &plain,
        work.path(),
        "ogxai/distribution-starter",
        "1.3.0",
        support::oci::ogx_starter_labels("1.3.0", OGX_STARTER_CONFIG, POSTGRES),
    );

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.insecure_registries = vec![plain.clone()];
        let ctx = Arc::new(Context::new(
            client.clone(),
            Arc::new(Resolver::new(options).unwrap()),
        ));
        let image = format!("{plain}/ogxai/distribution-starter:1.3.0");
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cases = [
            ("runs", json!({"image": image})),
            (
                "postgres",
                json!({"image": image, "imageConfig": "run-with-postgres-store.yaml"}),
            ),
            (
                "missing",
                json!({"image": image, "imageConfig": "gpu.yaml"}),
            ),
        ];
        for (name, distribution) in cases {
            let cr: LlamaStackDistribution = serde_json::from_value(
                json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": name}, "spec": {"distribution": distribution}}),
            )
            .unwrap();
            llsds.create(&PostParams::default(), &cr).await.unwrap();
            reconcile(Arc::new(llsds.get(name).await.unwrap()), ctx.clone())
                .await
                .unwrap();
        }
        let config_maps =
            Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "default");
        for (name, file, base, backend) in [
            ("runs", "config.yaml", OGX_STARTER_CONFIG, "kv_sqlite"),
            (
                "postgres",
                "run-with-postgres-store.yaml",
                POSTGRES,
                "kv_postgres",
            ),
        ] {
            let status = llsds.get(name).await.unwrap().status.unwrap();
            let resolved = status.resolved_distribution.unwrap();
            assert_eq!(resolved.image_config.as_deref(), Some(file), "{name}");
            assert_eq!(
                resolved.config_hash,
                Some(llama_stack_resolver::sha256_hex(base.as_bytes())),
                "{name}: the base is that file"
            );
            assert_eq!(resolved.server_line.as_deref(), Some("ogx"));
            let generated = status.config_generation.unwrap().config_map_name.unwrap();
            let yaml =
                config_maps.get(&generated).await.unwrap().data.unwrap()["config.yaml"].clone();
            let config: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
            assert_eq!(
                config["storage"]["backends"]["kv_default"]["type"],
                json!(backend),
                "{name}: generated from its file"
            );
        }
        let status = llsds.get("missing").await.unwrap().status.unwrap();
        let stalled = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "ConfigGenerated")
            .unwrap();
        assert_eq!(
            (stalled.status.as_str(), stalled.reason.as_str()),
            ("False", "InvalidBaseConfig"),
            "{}",
            stalled.message
        );
        assert!(
            stalled
                .message
                .contains("its configs: config.yaml, run-with-postgres-store.yaml"),
            "{}",
            stalled.message
        );
        assert!(
            Api::<Deployment>::namespaced(client.clone(), "default")
                .get_opt("missing")
                .await
                .unwrap()
                .is_none(),
            "nothing deployed"
        );
    });
}

/// A tag pushed again upstream rolls nothing by itself: the deployed pin stands until the user
/// asks (`llamastack.io/repin`), or the operator's `repin-interval` has passed.
#[test]
fn a_re_pushed_tag_rolls_only_when_asked() {
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    // Pushes an image whose base config names `distro` to acme/dist:a; returns it pinned.
    let push = |distro: &str| {
        let config = format!(
            "version: 2\ndistro_name: {distro}\napis: [inference]\nproviders:\n  inference: []\n"
        );
        let work = work.path().join(distro);
        push_plain(&plain, &work, "acme/dist", "a", Some(&config))
    };
    let first = push("first");

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let overrides = std::collections::BTreeMap::from([(
            "starter".to_owned(),
            format!("{plain}/acme/dist:a"),
        )]);
        let mut options =
            ResolverOptions::new(Catalog::embedded().unwrap().with_overrides(&overrides));
        options.insecure_registries = vec![plain.clone()];
        // A fresh resolver each time, so that its tag cache never hides a push.
        let operator = |repin_after: Option<std::time::Duration>| {
            let mut options = options.clone();
            options.repin_after = repin_after;
            Arc::new(Context::new(
                client.clone(),
                Arc::new(Resolver::new(options).unwrap()),
            ))
        };
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cr: LlamaStackDistribution = serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "pinned"}, "spec": {"distribution": {"name": "starter"}}}),
        )
        .unwrap();
        llsds.create(&PostParams::default(), &cr).await.unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let deployed = || async {
            deployments
                .get("pinned")
                .await
                .unwrap()
                .spec
                .unwrap()
                .template
                .spec
                .unwrap()
                .containers[0]
                .image
                .clone()
                .unwrap()
        };
        let reconcile_with = |ctx: Arc<Context>| async {
            reconcile(Arc::new(llsds.get("pinned").await.unwrap()), ctx)
                .await
                .unwrap()
        };
        reconcile_with(operator(None)).await;
        assert_eq!(deployed().await, first);

        let second = push("second");
        assert_ne!(first, second);
        reconcile_with(operator(None)).await;
        assert_eq!(
            deployed().await,
            first,
            "a re-pushed tag rolls nothing by itself"
        );

        llsds
            .patch(
                "pinned",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(
                    json!({"metadata": {"annotations": {"llamastack.io/repin": "1"}}}),
                ),
            )
            .await
            .unwrap();
        reconcile_with(operator(None)).await;
        assert_eq!(deployed().await, second, "asked to re-pin: the new digest");
        let generation = deployments.get("pinned").await.unwrap().metadata.generation;
        let resolved = llsds
            .get("pinned")
            .await
            .unwrap()
            .status
            .unwrap()
            .resolved_distribution
            .unwrap();
        assert_eq!(resolved.repin_request.as_deref(), Some("1"));
        assert_eq!(
            resolved.reference.as_deref(),
            Some(format!("{plain}/acme/dist:a").as_str())
        );

        let third = push("third");
        reconcile_with(operator(None)).await;
        assert_eq!(
            deployments.get("pinned").await.unwrap().metadata.generation,
            generation,
            "a request is honoured once"
        );
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        reconcile_with(operator(Some(std::time::Duration::from_secs(1)))).await;
        assert_eq!(
            deployed().await,
            third,
            "the operator's repin-interval passed"
        );
    });
}

/// An operator upgrade whose catalog names a new image whose base config no longer takes the
/// spec: the running Deployment is kept and the reason is `UpgradeConfigFailure`.
#[test]
fn an_upgrade_to_an_image_that_rejects_the_spec_keeps_the_stack() {
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let push =
        |tag: &str, config: &str| push_plain(&plain, work.path(), "acme/dist", tag, Some(config));
    // The old release serves web search; the new one dropped its tool runtime.
    let old = push(
        "old",
        "version: 2\ndistro_name: acme\napis: [inference, tool_runtime]\nproviders:\n  inference: []\n  tool_runtime:\n  - provider_id: tavily-search\n    provider_type: remote::tavily-search\n    config: {}\n",
    );
    push(
        "new",
        "version: 2\ndistro_name: acme\napis: [inference]\nproviders:\n  inference: []\n",
    );

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let operator = |tag: &str| {
            let overrides = std::collections::BTreeMap::from([("starter".to_owned(), format!("{plain}/acme/dist:{tag}"))]);
            let mut options = ResolverOptions::new(Catalog::embedded().unwrap().with_overrides(&overrides));
            options.insecure_registries = vec![plain.clone()];
            Arc::new(Context::new(client.clone(), Arc::new(Resolver::new(options).unwrap())))
        };
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "searching"}, "spec": {"distribution": {"name": "starter"}, "resources": {"tools": ["builtin::websearch"]}}})).unwrap();
        llsds.create(&PostParams::default(), &cr).await.unwrap();
        reconcile(Arc::new(llsds.get("searching").await.unwrap()), operator("old")).await.unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let before = deployments.get("searching").await.unwrap();
        assert_eq!(before.spec.clone().unwrap().template.spec.unwrap().containers[0].image.as_deref(), Some(old.as_str()));

        reconcile(Arc::new(llsds.get("searching").await.unwrap()), operator("new")).await.unwrap();
        let c = llsds.get("searching").await.unwrap().status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "ConfigGenerated").unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "UpgradeConfigFailure"), "{}", c.message);
        assert!(c.message.contains("resources.tools requires at least one toolRuntime provider"), "{}", c.message);
        let after = deployments.get("searching").await.unwrap();
        assert_eq!(after.metadata.generation, before.metadata.generation, "the running stack is kept");
    });
}

/// The operator ConfigMap's `image-signatures`: a named distribution deploys only a signed image;
/// a tag moved to an unsigned image is refused on re-pin, with a condition naming the digest, the
/// policy and the keys tried, while the stack keeps its signed pair; `audit` lets it through and
/// says so.
#[test]
fn a_signature_policy_keeps_a_stack_on_its_signed_image() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use support::cosign::Cosign;
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let config = |distro: &str| {
        format!(
            "version: 2\ndistro_name: {distro}\napis: [inference]\nproviders:\n  inference: []\n"
        )
    };
    let signed = push_plain(
        &plain,
        &work.path().join("a"),
        "acme/signed",
        "a",
        Some(&config("signed")),
    );
    let cosign = Cosign::start(&regs.basic.host, USER, PASSWORD, &regs.ca_pem()).expect("cosign");
    cosign
        .sign(false, "trusted", &signed, None, true)
        .expect("signed");

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let system = "llama-stack-operator-system";
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": system}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        let key = std::fs::read_to_string(cosign.public_key("trusted")).unwrap();
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "llama-stack-signing"},
            "stringData": {"cosign.pub": key}})).unwrap();
        Api::<Secret>::namespaced(client.clone(), system).create(&PostParams::default(), &secret).await.unwrap();
        let operator_config = |mode: &str| -> ConfigMap {
            serde_json::from_value(json!({"metadata": {"name": "llama-stack-operator-config"}, "data": {
                "image-overrides": format!("starter: {plain}/acme/signed:a\n"),
                "insecure-registries": format!("[\"{plain}\"]"),
                "image-signatures": format!("- name: signed-starter\n  distributions: [starter]\n  mode: {mode}\n  keys: [{{secret: llama-stack-signing, key: cosign.pub}}]\n"),
            }})).unwrap()
        };
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), system);
        config_maps.create(&PostParams::default(), &operator_config("required")).await.unwrap();
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.timeout = std::time::Duration::from_secs(2);
        // A re-pushed tag is seen at once (the re-pin asks for it; the tag cache must not hide it).
        options.tag_ttl = std::time::Duration::from_millis(500);
        let ctx = Context::new(client.clone(), Arc::new(Resolver::new(options.clone()).unwrap()))
            .with_operator_config(system, options);
        let controller = tokio::spawn(llama_stack_operator::controller::run(Arc::new(ctx)));

        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cr: LlamaStackDistribution = serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "stack"}, "spec": {"distribution": {"name": "starter"}}})).unwrap();
        llsds.create(&PostParams::default(), &cr).await.unwrap();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let image_of = |d: &Deployment| d.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0].image.clone().unwrap_or_default();
        let deployed = || async {
            deployments.get_opt("stack").await.unwrap().map(|d| image_of(&d)).unwrap_or_default()
        };
        let thirty = std::time::Duration::from_secs(30);
        eventually(thirty, "the signed image is deployed", || async {
            (deployed().await == signed).then_some(())
        })
        .await
        .unwrap();

        let unsigned = push_plain(&plain, &work.path().join("b"), "acme/signed", "a", Some(&config("unsigned")));
        // Past the tag TTL, so that the re-pin looks the tag up again.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        llsds.patch("stack", &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"annotations": {"llamastack.io/repin": "1"}}}))).await.unwrap();
        let digest = unsigned.split_once('@').unwrap().1.to_owned();
        let condition_with = |reason: &'static str| {
            let llsds = llsds.clone();
            async move {
                let status = llsds.get("stack").await.ok()?.status?;
                status.conditions?.into_iter().find(|c| c.reason == reason).map(|c| c.message)
            }
        };
        let refusal = match eventually(thirty, "a SignatureVerificationFailed condition", || {
            condition_with("SignatureVerificationFailed")
        })
        .await
        {
            Ok(message) => message,
            Err(e) => panic!("{e}; status: {:?}", llsds.get("stack").await.unwrap().status),
        };
        for part in [digest.as_str(), "\"signed-starter\" (required)", "llama-stack-signing/cosign.pub", "has no signature"] {
            assert!(refusal.contains(part), "{part:?} missing from {refusal}");
        }
        assert_eq!(deployed().await, signed, "the stack keeps its signed image and config");

        config_maps.replace("llama-stack-operator-config", &PostParams::default(), &operator_config("audit")).await.unwrap();
        let audited = eventually(thirty, "audit deploys the unsigned image and says so", || async {
            if deployed().await != unsigned {
                return None;
            }
            let status = llsds.get("stack").await.ok()?.status?;
            status.conditions?.into_iter().find(|c| c.message.contains("signature audit")).map(|c| c.message)
        })
        .await
        .unwrap();
        assert!(audited.contains(&digest), "{audited}");
        controller.abort();
    });
}

/// Stacks that exist before the operator starts are reconciled only on its settings: each is
/// written once, on the mirror's digest the image-overrides give (never first from the upstream
/// catalog, then again), and an image a `required` signature rule covers, unsigned, never gets a
/// Deployment. Restarts, with the registry up and then down, write nothing.
#[test]
fn stacks_existing_before_the_operator_starts_are_deployed_once_on_its_settings() {
    use k8s_openapi::api::core::v1::ConfigMap;
    const STACKS: usize = 12;
    let mut regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let config =
        "version: 2\ndistro_name: mirrored\napis: [inference]\nproviders:\n  inference: []\n";
    let pinned = push_plain(
        &plain,
        &work.path().join("a"),
        "mirror/starter",
        "v1",
        Some(config),
    );
    push_plain(
        &plain,
        &work.path().join("b"),
        "acme/unsigned",
        "v1",
        Some(config),
    );
    let key = rcgen::KeyPair::generate().unwrap().public_key_pem();

    let (plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let system = "llama-stack-operator-system";
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": system}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "llama-stack-signing"},
            "stringData": {"cosign.pub": key}})).unwrap();
        Api::<Secret>::namespaced(client.clone(), system).create(&PostParams::default(), &secret).await.unwrap();
        let operator_config: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "llama-stack-operator-config"}, "data": {
            "image-overrides": format!("starter: {plain}/mirror/starter:v1\n"),
            "insecure-registries": format!("[\"{plain}\"]"),
            "image-signatures": format!("- name: acme\n  images: [\"{plain}/acme/*\"]\n  mode: required\n  keys: [{{secret: llama-stack-signing, key: cosign.pub}}]\n"),
        }})).unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), system).create(&PostParams::default(), &operator_config).await.unwrap();
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let stack = |name: String, distribution: serde_json::Value| -> LlamaStackDistribution {
            serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": name}, "spec": {"distribution": distribution}})).unwrap()
        };
        for i in 0..STACKS {
            llsds.create(&PostParams::default(), &stack(format!("stack-{i}"), json!({"name": "starter"}))).await.unwrap();
        }
        llsds.create(&PostParams::default(), &stack("unsigned".into(), json!({"image": format!("{plain}/acme/unsigned:v1")}))).await.unwrap();

        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.timeout = std::time::Duration::from_secs(2);
        // Each start is a new operator: a fresh resolver, caches and watches.
        let start = || {
            let ctx = Context::new(client.clone(), Arc::new(Resolver::new(options.clone()).unwrap()))
                .with_operator_config(system, options.clone());
            tokio::spawn(llama_stack_operator::controller::run(Arc::new(ctx)))
        };
        let controller = start();
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let image_of = |d: &Deployment| d.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0].image.clone().unwrap_or_default();
        let sixty = std::time::Duration::from_secs(60);
        eventually(sixty, "every stack deployed from the mirror", || async {
            let list = deployments.list(&Default::default()).await.ok()?;
            let mirrored = list.items.iter().filter(|d| image_of(d) == pinned).count();
            (mirrored == STACKS).then_some(())
        })
        .await
        .unwrap();
        let refused = eventually(sixty, "the unsigned image refused", || async {
            let status = llsds.get("unsigned").await.ok()?.status?;
            status.conditions?.into_iter().find(|c| c.reason == "SignatureVerificationFailed").map(|c| c.message)
        })
        .await
        .unwrap();
        assert!(refused.contains("(required)"), "{refused}");
        for d in deployments.list(&Default::default()).await.unwrap().items {
            let name = d.metadata.name.clone().unwrap_or_default();
            assert_ne!(name, "unsigned", "an unsigned image under a required rule was deployed");
            assert_eq!(image_of(&d), pinned, "{name}");
            // The API server counts spec changes: 1 is a Deployment created right and never rewritten.
            assert_eq!(d.metadata.generation, Some(1), "{name} was written more than once");
        }
        controller.abort();

        let object_writes = || {
            plane
                .audit_writes("admin")
                .unwrap()
                .into_iter()
                .filter(|w| {
                    !w["objectRef"]["subresource"].is_string()
                        && w["objectRef"]["resource"] != "events"
                        && w["objectRef"]["namespace"] == "default"
                })
                .count()
        };
        // Restarted twice: with the registry up, then down (no last known good result left).
        for registry in ["up", "down"] {
            if registry == "down" {
                regs.plain.stop();
            }
            let before = object_writes();
            let controller = start();
            // Long enough for every stack's first reconcile (a few seconds with the registry's
            // timeouts); any write in it would be a redeploy.
            tokio::time::sleep(std::time::Duration::from_secs(8)).await;
            controller.abort();
            let after = object_writes();
            assert_eq!(after, before, "a restart with the registry {registry} wrote objects");
        }
        for d in deployments.list(&Default::default()).await.unwrap().items {
            assert_eq!(d.metadata.generation, Some(1));
        }
    });
}

/// Open Data Hub's names, as its users write them, resolve through the catalog to ODH's images on
/// a mirror (`quay.io/opendatahub` → a local registry), pinned: `rh` to its OGX image, labelled
/// as ODH's build labels it (OGX `v1.2.1+rhaiv.0`, distribution `rh`), whose config is generated
/// on; `rh-dev` to its llama-stack image, which carries no labels and runs its own config. A
/// llama-stack 0.x run.yaml given to the OGX image stops with `ConfigServerMismatch` and nothing
/// is deployed for it. The config is generated with the provider table of the release the label
/// tells: a provider that came in OGX 1.3.0 is refused on ODH's 1.2.1, naming the releases.
#[test]
fn odh_names_run_odh_images_on_a_mirror_pinned() {
    use llama_stack_resolver::MirrorRule;
    use support::llama_stack::OGX_STARTER_CONFIG;
    const LLAMA_STACK_STARTER: &str = include_str!("../configs/starter/config.yaml");
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let plain = regs.plain.host.clone();
    let ogx_pinned = support::images::push_labelled(
        &plain,
        work.path(),
        "opendatahub/odh-ogx-core",
        "latest",
        support::oci::odh_ogx_labels(OGX_STARTER_CONFIG),
    );
    let llama_stack_pinned =
        push_plain(&plain, work.path(), "opendatahub/llama-stack", "odh", None);

    let (_plane, rt, client) = start_with_crd().expect("control plane with the CRD");
    rt.block_on(async {
        let mut options = ResolverOptions::new(Catalog::embedded().unwrap());
        options.insecure_registries = vec![plain.clone()];
        let rule: MirrorRule = format!("quay.io/opendatahub={plain}/opendatahub").parse().unwrap();
        options.mirrors = vec![rule];
        let ctx = Arc::new(Context::new(client.clone(), Arc::new(Resolver::new(options).unwrap())));
        let config_maps = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), "default");
        let old: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({"metadata": {"name": "old-run"},
            "data": {"run.yaml": LLAMA_STACK_STARTER}})).unwrap();
        config_maps.create(&PostParams::default(), &old).await.unwrap();
        let llsds: Api<LlamaStackDistribution> = Api::namespaced(client.clone(), "default");
        let cases = [
            ("ogx", json!({"distribution": {"name": "rh"}, "providers": {"inference": {"provider": "vllm", "endpoint": "http://v"}}})),
            ("legacy", json!({"distribution": {"name": "rh-dev"}})),
            ("mismatch", json!({"distribution": {"name": "rh"}, "overrideConfig": {"configMapName": "old-run"}})),
            ("newer-provider", json!({"distribution": {"name": "rh"}, "providers": {"inference": {"provider": "deepseek", "endpoint": "http://d"}}})),
        ];
        create_and_reconcile(&llsds, &ctx, cases).await;
        let condition = config_generated;
        let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
        let server_of = |d: Deployment| d.spec.unwrap().template.spec.unwrap().containers[0].clone();

        let status = llsds.get("ogx").await.unwrap().status.unwrap();
        let c = condition(&status);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "ConfigGenerationSucceeded"), "{}", c.message);
        let resolved = status.resolved_distribution.unwrap();
        assert_eq!(resolved.image.as_deref(), Some(ogx_pinned.as_str()));
        assert_eq!(resolved.reference.as_deref(), Some(format!("{plain}/opendatahub/odh-ogx-core:latest").as_str()));
        assert_eq!(resolved.config_source, Some(ConfigSource::OciLabel));
        assert_eq!(
            (resolved.server_line.as_deref(), resolved.server_version.as_deref()),
            (Some("ogx"), Some("1.2.1"))
        );
        let server = server_of(deployments.get("ogx").await.unwrap());
        assert_eq!(server.image.as_deref(), Some(ogx_pinned.as_str()));
        assert!(server.env.iter().flatten().any(|e| e.name == "OGX_PORT"), "started as OGX");

        let status = llsds.get("legacy").await.unwrap().status.unwrap();
        let c = condition(&status);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "ImageOwnConfig"), "{}", c.message);
        let server = server_of(deployments.get("legacy").await.unwrap());
        assert_eq!(server.image.as_deref(), Some(llama_stack_pinned.as_str()));
        assert!(server.env.iter().flatten().any(|e| e.name == "LLAMA_STACK_PORT"), "started as llama-stack");

        let status = llsds.get("mismatch").await.unwrap().status.unwrap();
        let c = condition(&status);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "ConfigServerMismatch"), "{}", c.message);
        assert!(
            c.message.contains("is written for llama-stack 0.x (it names the APIs datasetio, eval, safety, scoring")
                && c.message.contains("the image runs ogx 1.2.1 (label com.ogx.distribution.version)"),
            "{}",
            c.message
        );
        assert!(deployments.get_opt("mismatch").await.unwrap().is_none(), "nothing deployed");

        let status = llsds.get("newer-provider").await.unwrap().status.unwrap();
        let c = condition(&status);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "ConfigGenerationFailed"), "{}", c.message);
        assert!(
            c.message.contains("\"deepseek\"") && c.message.contains("OGX 1.2.0 to 1.2.4"),
            "{}",
            c.message
        );
        assert!(deployments.get_opt("newer-provider").await.unwrap().is_none(), "nothing deployed");
    });
}

/// Creates each (name, v1alpha2 spec) stack and reconciles it once.
async fn create_and_reconcile(
    llsds: &Api<LlamaStackDistribution>,
    ctx: &Arc<Context>,
    cases: impl IntoIterator<Item = (&str, serde_json::Value)>,
) {
    for (name, spec) in cases {
        let cr: LlamaStackDistribution = serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": name}, "spec": spec}),
        )
        .unwrap();
        llsds.create(&PostParams::default(), &cr).await.unwrap();
        reconcile(Arc::new(llsds.get(name).await.unwrap()), ctx.clone())
            .await
            .unwrap();
    }
}

/// A stack's `ConfigGenerated` condition.
fn config_generated(
    status: &llama_stack_operator::api::v1alpha2::LlamaStackDistributionStatus,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    status
        .conditions
        .clone()
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "ConfigGenerated")
        .unwrap()
}
