//! The OGX operator's own samples (tests/fixtures/ogx-operator, its `config/samples` at
//! 1784464) read into the model, and their configs generated on OGX 1.5.0's starter config.

use serde_json::json;

use super::*;
use crate::api::ogx::OGXServer;
use crate::api::v1alpha2::LlamaStackDistribution;
use crate::api::v1alpha2::ProviderConfig;
use crate::core::stack::Stack;
use crate::stack_config::{ModelMerge, ProviderTable, generate, generate_merging, parse_base};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ogx-operator");
const OGX_STARTER: &str = include_str!("../../tests/fixtures/ogx-1.5.0/starter/config.yaml");

/// The `OGXServer` documents of one sample file.
fn servers(file: &str) -> Vec<OGXServer> {
    let text = std::fs::read_to_string(format!("{SAMPLES}/{file}")).unwrap();
    serde_saphyr::from_multiple::<serde_json::Value>(&text)
        .unwrap()
        .into_iter()
        .filter(|doc| doc["kind"] == "OGXServer")
        .map(|doc| serde_json::from_value(doc).unwrap())
        .collect()
}

fn env_of(spec: &LlamaStackDistributionSpec) -> Vec<(String, String)> {
    spec.workload
        .as_ref()
        .and_then(|w| w.overrides.as_ref())
        .and_then(|o| o.env.as_ref())
        .into_iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn every_sample_is_read_or_refused_with_its_field() {
    let mut read = 0;
    let mut refused = Vec::new();
    for file in [
        "_v1beta1_ogxserver.yaml",
        "example-with-ca-bundle.yaml",
        "example-with-configmap.yaml",
        "example-with-generated-config.yaml",
        "example-with-monitoring.yaml",
        "example-with-network-config.yaml",
        "example-withoutconfigmap.yaml",
    ] {
        for server in servers(file) {
            match to_model(&server) {
                Ok(modelled) => {
                    let stack = Stack::read_through(modelled.model(&server), door(&server))
                        .expect("a sample the door maps reads into the core's view");
                    assert_eq!(Some(stack.name()), server.metadata.name.as_deref());
                    assert_eq!(stack.subject.regarding.kind.as_deref(), Some("OGXServer"));
                    read += 1;
                }
                Err(e) => refused.push((server.metadata.name.clone().unwrap(), e.field)),
            }
        }
    }
    assert_eq!(read, 11);
    assert!(refused.is_empty(), "{refused:?}");
}

#[test]
fn network_policy_rules_of_ones_own_are_added_to_the_default() {
    // The OGX operator's network sample: namespaces allowed by name and by label.
    let example = &servers("example-with-network-config.yaml")[0];
    let networking = spec(&example.spec).unwrap().networking.unwrap();
    assert_eq!(networking.allowed_from, Some(Box::default()));
    let rules = networking.policy.unwrap();
    assert_eq!(rules.policy_types, None);
    let ingress = rules.ingress.unwrap();
    assert_eq!(ingress.len(), 1);
    assert_eq!(ingress[0].from.as_ref().unwrap().len(), 4);
    assert!(rules.egress.is_none());
}

#[test]
fn the_generated_config_sample_runs_its_openai_provider_without_vector_io() {
    let server = &servers("example-with-generated-config.yaml")[0];
    let model = spec(&server.spec).unwrap();
    let inference = model
        .providers
        .as_ref()
        .unwrap()
        .inference
        .as_ref()
        .unwrap();
    assert_eq!(
        inference.items(),
        [ProviderConfig {
            id: Some("openai-primary".to_owned()),
            provider: "remote::openai".to_owned(),
            api_key: Some(SecretValue {
                secret_key_ref: crate::api::v1alpha2::SecretKeyRef {
                    name: "openai-creds".to_owned(),
                    key: "api-key".to_owned()
                }
            }),
            ..ProviderConfig::default()
        }]
    );
    assert_eq!(model.disabled, Some(vec!["vectorIo".to_owned()]));

    let base = parse_base(OGX_STARTER).unwrap();
    // As the LlamaStackDistribution API merges, the base config's models stay beside the spec's.
    let added = generate(&model, &base, ProviderTable::ogx()).unwrap();
    assert!(added.resource_count == 1 && added.yaml.contains("claude-haiku"));
    let generated =
        generate_merging(&model, &base, ProviderTable::ogx(), ModelMerge::Replace).unwrap();
    let config: serde_json::Value = serde_saphyr::from_str(&generated.yaml).unwrap();
    let openai = &config["providers"]["inference"];
    assert_eq!(openai.as_array().unwrap().len(), 1);
    assert_eq!(openai[0]["provider_id"], "openai-primary");
    assert_eq!(openai[0]["provider_type"], "remote::openai");
    let key = openai[0]["config"]["api_key"].as_str().unwrap();
    assert!(key.starts_with("${env.") && !key.contains("openai-creds"));
    assert!(config["providers"].get("vector_io").is_none());
    assert!(
        !config["apis"]
            .as_array()
            .unwrap()
            .contains(&json!("vector_io"))
    );
    let models = config["registered_resources"]["models"].as_array().unwrap();
    assert_eq!(models.len(), 1);
    assert_eq!(models[0]["provider_id"], "openai-primary");
    assert_eq!(models[0]["model_id"], "gpt-4o-mini");
}

#[test]
fn monitoring_is_on_by_default_and_the_users_variables_win() {
    let servers = servers("example-with-monitoring.yaml");
    let envs: Vec<_> = servers
        .iter()
        .map(|s| env_of(&spec(&s.spec).unwrap()))
        .collect();
    let port = |env: &[(String, String)]| {
        env.iter()
            .find(|(n, _)| n == "OGX_METRICS_PORT")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(port(&envs[0]).as_deref(), Some("9464"));
    assert_eq!(port(&envs[1]).as_deref(), Some("9090"));
    assert_eq!(port(&envs[2]), None);
    assert!(!envs[2].iter().any(|(n, _)| n.starts_with("OGX_METRICS")));
    // The user's own variables come after the operator's, unchanged.
    assert_eq!(
        envs[2],
        [
            (
                "OLLAMA_INFERENCE_MODEL".to_owned(),
                "llama3.2:1b".to_owned()
            ),
            (
                "OLLAMA_URL".to_owned(),
                "http://ollama-server-service.ollama-dist.svc.cluster.local:11434".to_owned()
            ),
        ]
    );

    let mut own = servers[0].spec.clone();
    own.registry_refresh_interval_seconds = Some(300);
    let overrides = own.workload.as_mut().unwrap().overrides.as_mut().unwrap();
    overrides.env.as_mut().unwrap().push(EnvVar {
        name: "OGX_METRICS_PORT".to_owned(),
        value: Some("9999".to_owned()),
        value_from: None,
    });
    let env = env_of(&spec(&own).unwrap());
    let named = |name: &str| env.iter().filter(|(n, _)| n == name).collect::<Vec<_>>();
    assert_eq!(named("OGX_METRICS_PORT").len(), 1);
    assert_eq!(port(&env).as_deref(), Some("9999"));
    assert_eq!(named(REGISTRY_REFRESH_VAR)[0].1, "300");
}

#[test]
fn network_maps_port_tls_exposure_policy_and_trust() {
    let server = &servers("example-with-ca-bundle.yaml")[0];
    let model = spec(&server.spec).unwrap();
    let networking = model.networking.unwrap();
    assert_eq!(networking.port, 8321);
    let tls = networking.tls.unwrap();
    assert!(!tls.enabled);
    let bundle = tls.ca_bundle.unwrap();
    assert_eq!(bundle.config_map_name, "custom-ca-bundle");
    assert_eq!(
        bundle.config_map_keys,
        Some(vec!["ca-bundle.crt".to_owned()])
    );
    // The OGX operator makes its default NetworkPolicy unless told not to.
    assert_eq!(networking.allowed_from, Some(Box::default()));
    let over = model.override_config.unwrap();
    assert_eq!(
        (over.config_map_name.as_str(), over.key.as_deref()),
        ("starter-config", Some("config.yaml"))
    );

    let no_policy = &servers("example-with-network-config.yaml")[2];
    let networking = spec(&no_policy.spec).unwrap().networking.unwrap();
    assert_eq!(networking.allowed_from, None);
    assert_eq!(networking.expose, None);

    let mut exposed = no_policy.spec.clone();
    let network = exposed.network.as_mut().unwrap();
    network.port = Some(9000);
    network.tls = Some(ogx::TlsSpec {
        secret_name: "serving".to_owned(),
    });
    network.external_access = Some(ogx::ExternalAccessConfig {
        enabled: Some(true),
        hostname: Some("ogx.example.com".to_owned()),
        tls: Some(ogx::TlsSpec {
            secret_name: "ogx-example-com".to_owned(),
        }),
    });
    let networking = spec(&exposed).unwrap().networking.unwrap();
    assert_eq!(networking.port, 9000);
    let tls = networking.tls.unwrap();
    assert!(tls.enabled);
    assert_eq!(tls.secret_name.as_deref(), Some("serving"));
    let Some(BoolOrObject::Object(expose)) = networking.expose else {
        panic!("exposed");
    };
    assert_eq!(expose.hostname.as_deref(), Some("ogx.example.com"));
    assert_eq!(expose.tls_secret_name.as_deref(), Some("ogx-example-com"));
}

#[test]
fn what_is_not_served_is_refused_with_its_field() {
    let base = servers("example-withoutconfigmap.yaml")[0].spec.clone();
    let refused = |mutate: &dyn Fn(&mut OGXServerSpec)| {
        let mut spec_ = base.clone();
        mutate(&mut spec_);
        spec(&spec_).unwrap_err().field
    };
    let mut based = base.clone();
    based.base_config = Some(Box::new(ogx::ConfigMapKeyRef {
        name: "b".into(),
        key: "base.yaml".into(),
    }));
    let model = spec(&based).unwrap().base_config.unwrap();
    assert_eq!(
        (model.config_map_name.as_str(), model.key.as_deref()),
        ("b", Some("base.yaml"))
    );
    // Praxis mode off is served as without it; its migration Job is refused (no OGX release on
    // PyPI has `ogx migrate praxis`), and so is turning off the NetworkPolicy that keeps every
    // caller but Praxis away from a server trusting its headers.
    let praxis = |enabled: Option<bool>, job: bool| {
        move |s: &mut OGXServerSpec| {
            s.praxis_mode = Some(Box::new(ogx::PraxisModeSpec {
                enabled,
                migration_job: job.then(|| ogx::MigrationJobSpec {
                    target_connection_string: ogx::SecretKeyRef {
                        name: "praxis-pg".into(),
                        key: "url".into(),
                    },
                    ..Default::default()
                }),
                ..Default::default()
            }))
        }
    };
    let mut legacy = base.clone();
    praxis(Some(false), true)(&mut legacy);
    assert_eq!(spec(&legacy).unwrap().gateway, None);
    let mut migrating = base.clone();
    praxis(None, true)(&mut migrating);
    let migration = spec(&migrating).unwrap().gateway.unwrap().praxis.migration;
    assert_eq!(
        migration.map(|m| m.target_connection_string.secret_key_ref.name),
        Some("praxis-pg".to_owned()),
        "the migration Job is carried into the model"
    );
    let unguarded = |s: &mut OGXServerSpec| {
        praxis(Some(true), false)(s);
        s.network = Some(Box::new(ogx::NetworkSpec {
            policy: Some(ogx::NetworkPolicySpec {
                enabled: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        }));
    };
    assert_eq!(refused(&unguarded), "spec.network.policy.enabled");
    // A client identity is served: the certificate's ConfigMap and the key's Secret.
    let mut identified = base.clone();
    identified.tls = Some(Box::new(ogx::TlsClientConfig {
        trust: None,
        identity: Some(ogx::IdentityConfig {
            cert: ogx::ConfigMapKeyRef {
                name: "c".into(),
                key: "tls.crt".into(),
            },
            key: ogx::SecretKeyRef {
                name: "k".into(),
                key: "tls.key".into(),
            },
        }),
    }));
    let networking = spec(&identified).unwrap().networking.unwrap();
    let identity = networking.tls.unwrap().client_identity.unwrap();
    assert_eq!(
        (
            identity.certificate.name.as_str(),
            identity.private_key.key.as_str()
        ),
        ("c", "tls.key")
    );
    // Resource claims are served: the model carries them to the Pod.
    let mut claiming = base.clone();
    let claim: k8s_openapi::api::core::v1::PodResourceClaim =
        serde_json::from_value(json!({"name": "gpu", "resourceClaimTemplateName": "one-gpu"}))
            .unwrap();
    claiming
        .workload
        .get_or_insert_with(Default::default)
        .resource_claims = Some(vec![claim.clone()]);
    let workload = spec(&claiming).unwrap().workload.unwrap();
    assert_eq!(workload.resource_claims, Some(vec![claim]));
    let two = |s: &mut OGXServerSpec| {
        s.tls = Some(Box::new(ogx::TlsClientConfig {
            trust: Some(ogx::TrustConfig {
                ca_certificates: Some(vec![
                    ogx::ConfigMapKeyRef {
                        name: "a".into(),
                        key: "ca.crt".into(),
                    },
                    ogx::ConfigMapKeyRef {
                        name: "b".into(),
                        key: "ca.crt".into(),
                    },
                ]),
            }),
            identity: None,
        }))
    };
    // Several ConfigMaps: the first is the model's caBundle, the others its additional ones,
    // keys grouped by ConfigMap; and they come back as the same certificates.
    let mut several = base.clone();
    two(&mut several);
    several
        .tls
        .as_mut()
        .unwrap()
        .trust
        .as_mut()
        .unwrap()
        .ca_certificates
        .as_mut()
        .unwrap()
        .push(ogx::ConfigMapKeyRef {
            name: "a".into(),
            key: "more.crt".into(),
        });
    let tls = spec(&several).unwrap().networking.unwrap().tls.unwrap();
    let bundle = tls.ca_bundle.clone().unwrap();
    assert_eq!(
        (
            bundle.config_map_name.as_str(),
            bundle.config_map_keys.clone().unwrap()
        ),
        ("a", vec!["ca.crt".to_owned(), "more.crt".to_owned()])
    );
    let more = tls.additional_ca_bundles.clone().unwrap();
    assert_eq!(
        more.iter()
            .map(|b| b.config_map_name.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    let mut nine = base.clone();
    nine.tls = Some(Box::new(ogx::TlsClientConfig {
        trust: Some(ogx::TrustConfig {
            ca_certificates: Some(
                (0..10)
                    .map(|i| ogx::ConfigMapKeyRef {
                        name: format!("cm{i}"),
                        key: "ca.crt".into(),
                    })
                    .collect(),
            ),
        }),
        identity: None,
    }));
    assert_eq!(
        refused(&|s: &mut OGXServerSpec| s.tls = nine.tls.clone()),
        "spec.tls.trust.caCertificates"
    );
    // Rules of one's own are fine when the policy is off.
    let mut off = base.clone();
    off.network = Some(Box::new(ogx::NetworkSpec {
        policy: Some(ogx::NetworkPolicySpec {
            enabled: Some(false),
            ingress: Some(vec![Default::default()]),
            ..Default::default()
        }),
        ..Default::default()
    }));
    assert!(spec(&off).is_ok());
}

#[test]
fn typed_providers_become_the_servers_types_with_the_ogx_operators_ids() {
    // Shapes from the OGX operator's docs/additional/runtime-config-generation.md.
    let providers = json!({
        "inference": {"remote": {
            "vllm": [{"endpoint": "http://vllm:8000/v1", "apiToken": {"name": "vllm", "key": "token"},
                      "maxTokens": 4096, "network": {"tls": {"verify": false}, "headers": {"X-Team": "a"}}}],
            "bedrock": [{"id": "aws", "region": "us-east-1"}],
            "custom": [{"type": "remote::ollama", "settings": {"base_url": "http://ollama:11434/v1"}}]
        }},
        "toolRuntime": {"inline": {"fileSearch": {}}, "remote": {"braveSearch": {"apiKey": {"name": "b", "key": "k"}}}},
        "batches": {"inline": {"reference": {"maxConcurrentBatches": 2}}},
        "responses": {"inline": {"builtin": {}}},
        "files": {"remote": {"s3": {"bucketName": "x", "awsAccessKeyId": {"name": "s3", "key": "id"}}}}
    });
    let model = providers::providers(&providers).unwrap();
    let all: Vec<(&str, String, String)> = model
        .all()
        .into_iter()
        .map(|(api, p)| (api, p.config_id(), p.provider.clone()))
        .collect();
    let expected = [
        ("inference", "remote-vllm", "remote::vllm"),
        ("inference", "aws", "remote::bedrock"),
        ("inference", "remote-ollama", "remote::ollama"),
        ("toolRuntime", "remote-brave-search", "remote::brave-search"),
        ("toolRuntime", "inline-file-search", "inline::file-search"),
        ("responses", "inline-builtin", "inline::builtin"),
        ("batches", "inline-reference", "inline::reference"),
        ("files", "remote-s3", "remote::s3"),
    ];
    assert_eq!(
        all,
        expected.map(|(a, i, t)| (a, i.to_owned(), t.to_owned()))
    );
    let vllm = model.inference.as_ref().unwrap().items()[0].clone();
    assert_eq!(vllm.endpoint.as_deref(), Some("http://vllm:8000/v1"));
    let settings = vllm.settings.unwrap();
    assert_eq!(
        settings["api_token"],
        json!({"secretKeyRef": {"name": "vllm", "key": "token"}})
    );
    assert_eq!(settings["max_tokens"], 4096);
    assert_eq!(
        settings["network"],
        json!({"tls": {"verify": false}, "headers": {"X-Team": "a"}})
    );
    let bedrock = &model.inference.as_ref().unwrap().items()[1];
    assert_eq!(
        bedrock.settings.as_ref().unwrap()["region_name"],
        "us-east-1"
    );
    let s3 = &model.files.as_ref().unwrap().items()[0];
    assert_eq!(
        s3.settings.as_ref().unwrap()["aws_access_key_id"],
        json!({"secretKeyRef": {"name": "s3", "key": "id"}})
    );
}

#[test]
fn the_status_keeps_every_field_both_ways_under_the_ogx_names() {
    let model: crate::api::v1alpha2::LlamaStackDistributionStatus = serde_json::from_value(json!({
        "phase": "Ready",
        "observedGeneration": 3,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "m",
                        "lastTransitionTime": "2026-11-27T07:00:00Z", "observedGeneration": 3}],
        "resolvedDistribution": {"image": "docker.io/ogxai/distribution-starter@sha256:aa",
                                 "configSource": "oci-label", "configHash": "sha256:bb",
                                 "reference": "docker.io/ogxai/distribution-starter:1.5.0",
                                 "pinnedAt": "2026-11-27T07:00:00Z", "serverLine": "ogx"},
        "configGeneration": {"configMapName": "s-config-12345678", "providerCount": 4,
                             "resourceCount": 1, "configVersion": 2,
                             "generatedAt": "2026-11-27T07:00:00Z"},
        "version": {"operatorVersion": "0.9.0", "llamaStackServerVersion": "1.5.0"},
        "availableReplicas": 1,
        "serviceURL": "http://s-service.ns.svc.cluster.local:8321",
        "routeURL": "https://ogx.example.com",
        "rollback": {"lastReady": {"desiredHash": "h", "image": "i"}}
    }))
    .unwrap();
    let ogx = status::from_model(&model).unwrap();
    let json = serde_json::to_value(&ogx).unwrap();
    assert_eq!(json["version"]["serverVersion"], "1.5.0");
    assert_eq!(json["externalURL"], "https://ogx.example.com");
    assert_eq!(json["configGeneration"]["observedGeneration"], 3);
    assert_eq!(json["resolvedDistribution"]["configSource"], "oci-label");
    assert!(json.get("routeURL").is_none());
    assert_eq!(status::into_model(&ogx).unwrap(), model);
}

/// What servers report of their providers, in an OGXServer's status: a healthy provider's
/// health has no message (llama-stack's and OGX's `HealthResponse` for `OK`), and the OGX
/// operator's schema requires one, as it requires a config (`ogx.io_ogxservers.yaml`:
/// `required: [message, status]`, `[api, config, health, provider_id, provider_type]`); its Go
/// types write them empty. Both ways, nothing the model holds changes.
#[test]
fn providers_the_ogx_schema_requires_more_of_are_written_complete_and_read_back_as_reported() {
    let model: crate::api::v1alpha2::LlamaStackDistributionStatus = serde_json::from_value(json!({
        "phase": "Ready",
        "distributionConfig": {"activeDistribution": "starter", "providers": [
            {"api": "inference", "provider_id": "vllm", "provider_type": "remote::vllm",
             "config": {"base_url": "http://vllm:8000/v1"}, "health": {"status": "OK"}},
            {"api": "files", "provider_id": "localfs", "provider_type": "inline::localfs",
             "config": {}, "health": {"status": "Not Implemented", "message": "Provider does not implement health check"}},
            {"api": "safety", "provider_id": "guard", "provider_type": "inline::llama-guard", "config": {}}
        ]}
    }))
    .unwrap();
    let ogx = status::from_model(&model).expect("a status the OGX types can hold");
    let json = serde_json::to_value(&ogx).unwrap();
    let listed = &json["distributionConfig"]["providers"];
    assert_eq!(listed[0]["health"], json!({"status": "OK", "message": ""}));
    assert_eq!(
        listed[1]["health"]["message"],
        "Provider does not implement health check"
    );
    assert_eq!(listed[2]["health"], json!({"status": "", "message": ""}));
    for provider in listed.as_array().unwrap() {
        assert!(provider["config"].is_object(), "{provider}");
    }
    assert_eq!(status::into_model(&ogx).unwrap(), model);
}

/// Every LlamaStackDistribution of the real-world fixtures (tests/fixtures/real-world, sources
/// in its README), v1alpha1 ones converted first.
fn real_world_stacks() -> Vec<(String, LlamaStackDistribution)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real-world");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(docs) = serde_saphyr::from_multiple::<serde_json::Value>(&text) else {
            continue;
        };
        for doc in docs {
            if doc["kind"] != "LlamaStackDistribution" {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            // A few fixtures are refused by admission (their README says which): not stacks.
            let Ok(v2) = crate::convert::convert(&doc, "llamastack.io/v1alpha2") else {
                continue;
            };
            if let Ok(llsd) = serde_json::from_value(v2) {
                out.push((stem, llsd));
            }
        }
    }
    out
}

#[test]
fn a_converted_stack_generates_the_config_it_generated_before() {
    let base = parse_base(OGX_STARTER).unwrap();
    let (mut same, mut refused) = (0, Vec::new());
    for (file, llsd) in real_world_stacks() {
        let converted = match from_llsd::to_ogx_server(&llsd) {
            Ok(converted) => converted,
            Err(e) => {
                refused.push(format!("{file}: {e}"));
                continue;
            }
        };
        // Through the API server and back, as a user applying the output would.
        let json = serde_json::to_value(&converted.server).unwrap();
        let server: OGXServer = serde_json::from_value(json).unwrap();
        let model = spec(&server.spec).unwrap();
        let before = generate(&llsd.spec, &base, ProviderTable::ogx());
        let after = generate(&model, &base, ProviderTable::ogx());
        match (before, after) {
            (Ok(before), Ok(after)) => {
                assert_eq!(after.yaml, before.yaml, "{file}");
                same += 1;
            }
            (Err(_), Err(_)) => {}
            (before, after) => panic!("{file}: before {before:?}, after {after:?}"),
        }
    }
    eprintln!("{same} generate the same config; refused: {refused:#?}");
    assert!(same >= 35, "only {same} compared");
    for refusal in &refused {
        assert!(
            refusal.contains(": spec."),
            "a refusal names its field: {refusal}"
        );
    }
}

#[test]
fn conversion_refuses_what_ogx_server_cannot_say_naming_the_field() {
    let llsd = |spec: serde_json::Value| -> LlamaStackDistribution {
        serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s"}, "spec": spec}),
        )
        .unwrap()
    };
    let field = |spec| from_llsd::to_ogx_server(&llsd(spec)).unwrap_err().field;
    let d = json!({"name": "starter"});
    assert_eq!(
        field(json!({"distribution": d, "providers": {"safety": {"provider": "llama-guard"}}})),
        "spec.providers.safety"
    );
    assert_eq!(
        field(json!({"distribution": d, "resources": {"shields": ["s"]}})),
        "spec.resources.shields"
    );
    // An exposure's certificate and named PostgreSQL backends move as they are, and come back.
    let exposed = llsd(json!({"distribution": d,
        "networking": {"expose": {"enabled": true, "hostname": "ogx.example.com", "tlsSecretName": "ogx-cert"}},
        "storage": {"backends": {"pg": {"type": "kv_postgres", "user": "u"},
            "pgs": {"type": "sql_postgres", "user": "u", "password": {"name": "pg", "key": "pw"}}},
            "stores": {"metadata": {"backend": "pg", "namespace": "reg"}}}}));
    let server = from_llsd::to_ogx_server(&exposed).unwrap().server;
    let access = server
        .spec
        .network
        .as_ref()
        .unwrap()
        .external_access
        .clone()
        .unwrap();
    assert_eq!(access.tls.unwrap().secret_name, "ogx-cert");
    let back = to_model(&server).unwrap().spec;
    assert_eq!(back.storage, exposed.spec.storage);
    assert_eq!(
        back.networking.unwrap().expose,
        exposed.spec.networking.clone().unwrap().expose
    );
    // External providers travel in this operator's annotation, and come back whole.
    let with_providers = llsd(
        json!({"distribution": d, "externalProviders": {"inference": [{"providerId": "p", "image": "i"}]}}),
    );
    let server = from_llsd::to_ogx_server(&with_providers).unwrap().server;
    assert_eq!(
        to_model(&server).unwrap().spec.external_providers,
        with_providers.spec.external_providers
    );
    assert_eq!(
        field(
            json!({"distribution": d, "networking": {"tls": {"caBundle": {"configMapName": "c", "configMapNamespace": "other"}}}})
        ),
        "spec.networking.tls.caBundle.configMapNamespace"
    );
    assert_eq!(
        field(json!({"distribution": {"image": "reg/x:1", "serverVersion": "1.5.0"}})),
        "spec.distribution.serverVersion"
    );
    // The rollback policy and the progress deadline travel as annotations of this operator's,
    // and come back into the model.
    let kept = from_llsd::to_ogx_server(&llsd(
        json!({"distribution": d, "workload": {"rollback": "Never", "progressDeadlineSeconds": 120}}),
    ))
    .unwrap()
    .server;
    let annotations = kept.metadata.annotations.clone().unwrap();
    assert_eq!(annotations["llamastack.io/rollback"], "Never");
    assert_eq!(
        annotations["llamastack.io/progress-deadline-seconds"],
        "120"
    );
    assert_eq!(kept.spec.workload, None, "nothing else of workload to say");
    let workload = to_model(&kept).unwrap().spec.workload.unwrap();
    assert_eq!(
        workload.rollback,
        Some(crate::api::common::RollbackPolicy::Never)
    );
    assert_eq!(workload.progress_deadline_seconds, Some(120));
    assert_eq!(
        field(json!({"distribution": d, "providers": {"inference": {"provider": "no-such"}}})),
        "spec.providers.inference.provider"
    );
    // No policy in the LlamaStackDistribution: none in the OGXServer either (it makes one unless told).
    let converted = from_llsd::to_ogx_server(&llsd(json!({"distribution": d}))).unwrap();
    let policy = converted
        .server
        .spec
        .network
        .clone()
        .unwrap()
        .policy
        .unwrap();
    assert_eq!(policy.enabled, Some(false));
    let model = spec(&converted.server.spec).unwrap();
    assert_eq!(model.networking.unwrap().allowed_from, None);
}

/// Open Data Hub's OGX operator gives `rh` and `rh-dev` its one OGX image
/// (opendatahub-io/ogx-k8s-operator `pkg/cluster/cluster.go` @ 179d18e): an `OGXServer` naming
/// `rh-dev` is looked up as `rh`; a LlamaStackDistribution's `rh-dev` (the llama-stack image) is
/// not, and its move says the server changes line.
#[test]
fn rh_dev_on_an_ogx_server_is_odh_s_ogx_image() {
    let name_in_model = |name: &str| {
        let server: OGXServer = serde_json::from_value(json!({
            "apiVersion": "ogx.io/v1beta1", "kind": "OGXServer", "metadata": {"name": "s"},
            "spec": {"distribution": {"name": name}}}))
        .unwrap();
        spec(&server.spec).unwrap().distribution.name.unwrap()
    };
    assert_eq!(name_in_model("rh-dev"), "rh");
    assert_eq!(name_in_model("rh"), "rh");
    assert_eq!(name_in_model("starter"), "starter");
    let llsd = |spec: serde_json::Value| -> LlamaStackDistribution {
        serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s"}, "spec": spec}),
        )
        .unwrap()
    };
    let moved =
        from_llsd::to_ogx_server(&llsd(json!({"distribution": {"name": "rh-dev"}}))).unwrap();
    assert_eq!(
        moved.server.spec.distribution.name.as_deref(),
        Some("rh-dev")
    );
    assert!(
        moved
            .notes
            .iter()
            .any(|n| n.starts_with("spec.distribution.name: rh-dev")
                && n.contains("from llama-stack 0.x to OGX")),
        "{:?}",
        moved.notes
    );
    let starter =
        from_llsd::to_ogx_server(&llsd(json!({"distribution": {"name": "starter"}}))).unwrap();
    assert!(starter.notes.is_empty(), "{:?}", starter.notes);
}

/// Every field of the `OGXServer`'s workload has a place in the model's (v1alpha2) workload, so
/// that `to_model` carries it: a field added to the `OGXServer` API without one fails here, where
/// it would otherwise be dropped on the way into the model (and refused at run time by
/// `first_dropped`). And the other way, every field of the model's workload has a place in the
/// `OGXServer`'s or is carried otherwise (`from_llsd`).
#[test]
fn every_workload_field_has_a_place_through_both_doors() {
    use std::collections::BTreeSet;

    use kube::CustomResourceExt;
    fn paths(schema: &Value, at: &str, out: &mut BTreeSet<String>) {
        for (key, below) in [
            ("properties", ""),
            ("items", "[]"),
            ("additionalProperties", "{}"),
        ] {
            match (key, schema.get(key)) {
                ("properties", Some(Value::Object(fields))) => {
                    for (name, child) in fields {
                        let path = format!("{at}.{name}");
                        out.insert(path.clone());
                        paths(child, &path, out);
                    }
                }
                (_, Some(child @ Value::Object(_))) => paths(child, &format!("{at}{below}"), out),
                _ => {}
            }
        }
    }
    let workload_of = |crd: Value| {
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let served = versions
            .into_iter()
            .find(|v| v["storage"] == true)
            .expect("a stored version");
        let mut out = BTreeSet::new();
        paths(
            &served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["workload"],
            "workload",
            &mut out,
        );
        out
    };
    let ogx = workload_of(serde_json::to_value(OGXServer::crd()).unwrap());
    let model = workload_of(serde_json::to_value(LlamaStackDistribution::crd()).unwrap());
    assert!(ogx.len() > 20, "the walk reaches the fields: {ogx:?}");
    let missing: Vec<&String> = ogx.difference(&model).collect();
    assert!(
        missing.is_empty(),
        "OGXServer workload fields the model lacks: {missing:?}"
    );
    // The other way (`convert --to ogx.io/v1beta1`, `from_llsd`) the workload goes by its JSON
    // too, and a model field OGXServer has no place for would be dropped without a word: each
    // has a home there or is carried otherwise, said here.
    let carried_otherwise = [
        ("workload.rollback", "an annotation"),
        ("workload.progressDeadlineSeconds", "an annotation"),
        (
            "workload.overrides.terminationGracePeriodSeconds",
            "refused by from_llsd",
        ),
    ];
    let homeless: Vec<&String> = model
        .difference(&ogx)
        .filter(|path| {
            !carried_otherwise
                .iter()
                .any(|(field, _)| path.as_str() == *field || path.starts_with(&format!("{field}.")))
        })
        .collect();
    assert!(
        homeless.is_empty(),
        "model workload fields OGXServer has no place for (give each one in from_llsd's workload, or refuse it there, and list it here): {homeless:?}"
    );
    // And at run time a value the model's type cannot hold is refused with its field.
    assert_eq!(
        first_dropped(
            &json!({"overrides": {"env": [{"name": "A", "value": "1", "extra": true}]}, "replicas": 2}),
            &json!({"overrides": {"env": [{"name": "A", "value": "1"}]}, "replicas": 2})
        )
        .as_deref(),
        Some("overrides.env.0.extra")
    );
    assert_eq!(
        first_dropped(&json!({"a": null, "b": 1}), &json!({"b": 1})),
        None
    );
}

/// The OGX operator's Praxis-mode samples (`newer/network-config-praxis.yaml`, red-hat-data-services
/// f74c8f0): the selector they name becomes the gateway, the one without a selector takes the
/// OGX operator's default (`app: payload-processing` in `openshift-ingress`), and the config
/// generated over OGX's starter trusts Praxis's headers, runs multi-tenant, leaves `responses`
/// to Praxis and keeps vector store metadata in its own table, as the OGX operator writes it.
#[test]
fn praxis_mode_samples_put_the_server_behind_praxis() {
    let samples = servers("newer/network-config-praxis.yaml");
    let selected = to_model(&samples[0]).unwrap();
    let gateway = selected.spec.gateway.clone().expect("behind Praxis");
    assert_eq!(gateway.praxis.namespace(), "praxis");
    assert_eq!(
        serde_json::to_value(gateway.praxis.pods()).unwrap(),
        json!({"matchLabels": {"app": "payload-processing"}})
    );
    let defaulted = to_model(&samples[1]).unwrap().spec.gateway.unwrap();
    assert_eq!(defaulted.praxis.namespace(), "openshift-ingress");
    assert_eq!(
        serde_json::to_value(defaulted.praxis.pods()).unwrap(),
        json!({"matchLabels": {"app": "payload-processing"}})
    );
    assert_eq!(to_model(&samples[2]).unwrap().spec.gateway, None);

    let base = parse_base(OGX_STARTER).unwrap();
    let generated = generate_merging(
        &selected.spec,
        &base,
        ProviderTable::ogx(),
        ModelMerge::Replace,
    )
    .unwrap();
    let config: serde_json::Value = serde_saphyr::from_str(&generated.yaml).unwrap();
    assert_eq!(
        config["server"]["auth"]["provider_config"],
        json!({"type": "upstream_header", "principal_header": "x-user-id", "tenant_header": "x-tenant-id"})
    );
    assert_eq!(
        config["server"]["auth"]["access_policy"],
        json!([
            {"permit": {"actions": ["read"]}, "when": "resource is unowned",
             "description": "All users can read system resources"},
            {"permit": {"actions": ["create"]},
             "description": "Authenticated users can create resources"},
            {"permit": {"actions": ["read", "update", "delete"]}, "when": "user is owner",
             "description": "Owners can manage their own resources"}])
    );
    assert_eq!(config["server"]["tenancy"], json!({"mode": "multi"}));
    let apis: Vec<&str> = config["apis"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        !apis.contains(&"responses") && !apis.contains(&"conversations"),
        "{apis:?}"
    );
    assert!(config["providers"].get("responses").is_none());
    assert_eq!(
        config["storage"]["stores"]["vector_stores"],
        json!({"backend": "sql_default", "table_name": "openai_vector_stores"})
    );
}

/// A stack behind Praxis moves to an `OGXServer` that runs behind Praxis too: the gateway as
/// `praxisMode` (a selector half left to its default written out), the NetworkPolicy left on
/// even when the stack asked for none (`enabled: false` would be refused here and leave the
/// server open under the OGX operator), `allowedFrom`'s `*` not written as a rule that would open
/// it; and back into the model, the same gateway.
#[test]
fn a_stack_behind_praxis_moves_to_an_ogx_server_behind_praxis() {
    let llsd = |spec: serde_json::Value| -> LlamaStackDistribution {
        serde_json::from_value(
            json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "ns"}, "spec": spec}),
        )
        .unwrap()
    };
    let bare = llsd(json!({"distribution": {"name": "starter"},
        "gateway": {"praxis": {"namespace": "praxis"}}}));
    let server = from_llsd::to_ogx_server(&bare).unwrap().server;
    let written = serde_json::to_value(&server.spec).unwrap();
    assert_eq!(
        written["praxisMode"],
        json!({"enabled": true, "praxisSelector": {"namespace": "praxis",
            "podSelector": {"matchLabels": {"app": "payload-processing"}}}})
    );
    assert_eq!(written["network"].get("policy"), None, "{written:#}");
    let back = to_model(&server).expect("the moved server is served");
    assert_eq!(
        back.spec.gateway,
        bare.spec.gateway.map(|g| {
            let mut g = g;
            g.praxis.pod_selector = Some(g.praxis.pods());
            g
        })
    );
    let starred = llsd(
        json!({"distribution": {"name": "starter"}, "gateway": {"praxis": {}},
        "networking": {"allowedFrom": {"namespaces": ["*", "team-a"]}}}),
    );
    let written =
        serde_json::to_value(&from_llsd::to_ogx_server(&starred).unwrap().server.spec).unwrap();
    assert_eq!(
        written["network"]["policy"]["ingress"],
        json!([{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}}],
            "ports": [{"protocol": "TCP", "port": 8321}]}]),
        "{written:#}"
    );
}

/// Every property path under `schema` (an OpenAPI schema of a CRD, subschemas inlined), as
/// `a.b.c`; the items of a list are `a[].b`.
fn property_paths(schema: &serde_json::Value, at: &str, paths: &mut Vec<String>) {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, below) in properties {
            let path = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}.{name}")
            };
            paths.push(path.clone());
            property_paths(below, &path, paths);
        }
    }
    if schema["items"].is_object() {
        property_paths(&schema["items"], &format!("{at}[]"), paths);
    }
    if schema["additionalProperties"].is_object() {
        property_paths(&schema["additionalProperties"], &format!("{at}{{}}"), paths);
    }
}

/// The schema of `spec.workload` in a CRD's served version `version`.
fn workload_schema(crd: serde_json::Value, version: &str) -> serde_json::Value {
    let versions = crd["spec"]["versions"].as_array().unwrap().clone();
    let served = versions
        .into_iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("no version {version}"));
    served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["workload"].clone()
}

/// The model carries every field of an `OGXServer`'s `spec.workload`, to the leaves (the Pod's
/// own types included): a field the OGX operator's API gains (`src/api/ogx/`, held to its CRD
/// by `api::ogx::tests`) and the model lacks fails here, before a user's `OGXServer` is refused
/// for it at run time (`Untranslatable`, `spec.workload.<field>`).
#[test]
fn the_model_has_a_place_for_every_ogx_workload_field() {
    use kube::CustomResourceExt;
    let ogx = workload_schema(serde_json::to_value(OGXServer::crd()).unwrap(), "v1beta1");
    let model = workload_schema(
        serde_json::to_value(crate::api::v1alpha2::LlamaStackDistribution::crd()).unwrap(),
        "v1alpha2",
    );
    let (mut ogx_paths, mut model_paths) = (Vec::new(), Vec::new());
    property_paths(&ogx, "", &mut ogx_paths);
    property_paths(&model, "", &mut model_paths);
    assert!(
        ogx_paths
            .iter()
            .any(|p| p == "overrides.volumeMounts[].mountPath"),
        "the walk reaches the leaves: {ogx_paths:?}"
    );
    let missing: Vec<&String> = ogx_paths
        .iter()
        .filter(|path| !model_paths.contains(path))
        .collect();
    assert!(
        missing.is_empty(),
        "spec.workload fields of OGXServer the model has no place for (add them to v1alpha2's WorkloadSpec and map them in ogx_server::workload): {missing:?}"
    );
}

/// The door names the API version of the OGXServer API (the core keeps its own copy, as it
/// does not name this module), and carries the server's metrics port.
#[test]
fn the_door_of_a_server_is_its_api_and_its_metrics_port() {
    let server: OGXServer = serde_json::from_value(json!({"apiVersion": "ogx.io/v1beta1",
        "kind": "OGXServer", "metadata": {"name": "s"},
        "spec": {"distribution": {"name": "starter"}, "monitoring": {"metricsPort": 9100}}}))
    .unwrap();
    let door = door(&server);
    assert_eq!(
        door.type_meta(),
        (crate::api::ogx::API_VERSION, "OGXServer")
    );
    assert_eq!(
        door,
        crate::core::door::Door::OgxServer {
            metrics_port: Some(9100)
        }
    );
}
