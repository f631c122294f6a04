use crate::api::v1alpha2::LlamaStackDistribution;
use kube::ResourceExt;
use serde_json::{Value, json};

use super::*;
use crate::core::stack::{Model, Stack};
use crate::naming::*;
use crate::stack_config::GeneratedConfig;

fn cr(spec: Value) -> LlamaStackDistribution {
    serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u-1"}, "spec": spec}),
    )
    .unwrap()
}

/// The view the builders take.
fn view(cr: &LlamaStackDistribution) -> Stack<'_> {
    Stack::read(cr).unwrap()
}

fn generated() -> GeneratedConfig {
    GeneratedConfig {
        yaml: "version: 2\n".to_owned(),
        hash: "sha256:0123456789abcdef".to_owned(),
        env: Vec::new(),
        provider_count: 0,
        resource_count: 0,
        config_version: 2,
        warnings: Vec::new(),
    }
}

/// The inputs every test starts from: a generated config, mounted from its ConfigMap.
fn base_inputs(g: &GeneratedConfig) -> Inputs<'_> {
    Inputs {
        image: "reg/img@sha256:aa",
        generated: Some(g),
        config: ServerConfig::Generated("s-config-01234567".to_owned()),
        ..Default::default()
    }
}

fn build(spec: Value, tweak: impl FnOnce(&mut Inputs)) -> Desired {
    let g = generated();
    let mut inputs = base_inputs(&g);
    tweak(&mut inputs);
    desired(&view(&cr(spec)), &inputs).unwrap()
}

fn value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

#[test]
fn one_replica_gets_no_budget_unless_the_user_asks_and_is_then_warned() {
    let plain = build(json!({"distribution": {"name": "starter"}}), |_| {});
    assert!(
        plain.pdb.is_none(),
        "a budget for one replica would block every drain"
    );
    let spec = json!({"distribution": {"name": "starter"}, "workload": {"podDisruptionBudget": {"minAvailable": 1}}});
    let one = build(spec.clone(), |_| {});
    assert_eq!(
        value(&one.pdb.unwrap().spec)["minAvailable"],
        json!(1),
        "an explicit budget is made, as the upstream operator made it"
    );
    let warning = pdb_warning(&view(&cr(spec))).unwrap();
    assert!(warning.contains("every node drain waits"), "{warning}");
    for (budget, replicas, blocks) in [
        (json!({"maxUnavailable": 1}), 1, false),
        (json!({"maxUnavailable": 0}), 3, true),
        (json!({"maxUnavailable": "0%"}), 3, true),
        (json!({"maxUnavailable": "10%"}), 3, false),
        (json!({"minAvailable": "100%"}), 2, true),
        (json!({"minAvailable": "50%"}), 2, false),
        (json!({"minAvailable": 2}), 3, false),
        (json!({"minAvailable": 3}), 3, true),
    ] {
        let resource = cr(
            json!({"distribution": {"name": "starter"}, "workload": {"replicas": replicas, "podDisruptionBudget": budget}}),
        );
        assert_eq!(
            pdb_warning(&view(&resource)).is_some(),
            blocks,
            "{budget} with {replicas} replicas"
        );
    }
    let two = build(
        json!({"distribution": {"name": "starter"}, "workload": {"replicas": 2}}),
        |_| {},
    );
    assert_eq!(value(&two.pdb.unwrap().spec)["maxUnavailable"], json!(1));
    let user = build(
        json!({"distribution": {"name": "starter"}, "workload": {"replicas": 3, "podDisruptionBudget": {"minAvailable": "50%"}}}),
        |_| {},
    );
    let spec = value(&user.pdb.unwrap().spec);
    assert_eq!(
        (spec["minAvailable"].clone(), spec.get("maxUnavailable")),
        (json!("50%"), None)
    );
    let scaled = build(
        json!({"distribution": {"name": "starter"}, "workload": {"autoscaling": {"minReplicas": 2, "maxReplicas": 5}}}),
        |_| {},
    );
    assert!(scaled.pdb.is_some(), "the autoscaler's minimum counts");
}

#[test]
fn autoscaling_takes_the_replica_count_from_the_deployment() {
    let d = build(
        json!({"distribution": {"name": "starter"}, "workload": {"replicas": 3, "autoscaling": {"maxReplicas": 5}}}),
        |_| {},
    );
    assert_eq!(
        value(&d.deployment.spec)["replicas"],
        Value::Null,
        "the HPA owns replicas"
    );
    let hpa = value(&d.hpa.unwrap().spec);
    assert_eq!(hpa["minReplicas"], json!(1));
    assert_eq!(hpa["maxReplicas"], json!(5));
    assert_eq!(
        hpa["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(
        hpa["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "s"})
    );
}

#[test]
fn allowed_from_star_opens_every_namespace_only() {
    let open = build(
        json!({"distribution": {"name": "starter"}, "networking": {"allowedFrom": {"namespaces": ["*", "x"]}}}),
        |i| i.operator_namespace = Some("op"),
    );
    let spec = value(&open.network_policy.unwrap().spec);
    assert_eq!(
        spec["ingress"][0]["from"],
        json!([{"namespaceSelector": {}}])
    );
    assert_eq!(
        spec["ingress"][0]["ports"],
        json!([{"protocol": "TCP", "port": 8321}])
    );
    let none = build(json!({"distribution": {"name": "starter"}}), |_| {});
    assert!(none.network_policy.is_none());
}

#[test]
fn policy_rules_of_ones_own_join_the_default_and_egress_keeps_dns() {
    let extra = json!({"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]});
    let to_db = json!({"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP", "port": 5432}]});
    let built = build(
        json!({"distribution": {"name": "starter"}, "networking": {"policy": {"ingress": [extra], "egress": [to_db]}}}),
        |i| i.operator_namespace = Some("op"),
    );
    let spec = value(&built.network_policy.unwrap().spec);
    assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]));
    // The default rule first (the stack's namespace and the operator's), then the user's.
    assert_eq!(
        spec["ingress"][0]["from"][1],
        json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "op"}}})
    );
    assert_eq!(spec["ingress"][1], extra);
    assert_eq!(spec["egress"][0], to_db);
    assert_eq!(
        spec["egress"][1]["to"][0]["podSelector"],
        json!({"matchLabels": {"k8s-app": "kube-dns"}})
    );
    assert_eq!(
        spec["egress"][1]["ports"],
        json!([{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}])
    );
    // Egress named alone: only DNS goes out; ingress not governed when not listed.
    let egress_only = build(
        json!({"distribution": {"name": "starter"}, "networking": {"policy": {"policyTypes": ["Egress"]}}}),
        |_| {},
    );
    let spec = value(&egress_only.network_policy.unwrap().spec);
    assert_eq!(spec["policyTypes"], json!(["Egress"]));
    assert_eq!(spec.get("ingress"), None);
    assert_eq!(spec["egress"].as_array().unwrap().len(), 1);
}

#[test]
fn an_ingress_without_tls_is_named_in_a_warning_and_a_route_is_not() {
    let bare = cr(json!({"distribution": {"name": "starter"}, "networking": {"expose": true}}));
    assert!(
        exposure_warning(&view(&bare), false)
            .unwrap()
            .contains("no host and no TLS"),
        "plain HTTP at any host"
    );
    assert_eq!(
        exposure_warning(&view(&bare), true),
        None,
        "a Route terminates TLS"
    );
    let named = cr(
        json!({"distribution": {"name": "starter"}, "networking": {"expose": {"hostname": "llama.example.com"}}}),
    );
    assert!(
        exposure_warning(&view(&named), false)
            .unwrap()
            .contains("for llama.example.com has no TLS section")
    );
    let hidden = cr(json!({"distribution": {"name": "starter"}}));
    assert_eq!(exposure_warning(&view(&hidden), false), None);
}

/// `expose.tlsSecretName` and `expose.ingressClassName` reach the Ingress: a TLS section for the
/// host (HTTPS at the edge, no warning left) and the class. Where Routes are served, a
/// certificate of one's own is still an Ingress (OpenShift makes its Route with that
/// certificate); a server serving TLS itself keeps its passthrough Route, and is told the
/// Secret is not used.
#[test]
fn an_ingress_gets_its_tls_secret_and_class() {
    let spec = json!({"distribution": {"name": "starter"}, "networking": {"expose": {
        "hostname": "llama.example.com", "tlsSecretName": "llama-cert", "ingressClassName": "nginx"}}});
    let built = build(spec.clone(), |_| {});
    let ingress = value(&built.ingress.expect("an Ingress").spec);
    assert_eq!(ingress["ingressClassName"], "nginx");
    assert_eq!(
        ingress["tls"],
        json!([{"hosts": ["llama.example.com"], "secretName": "llama-cert"}])
    );
    assert_eq!(exposure_warning(&view(&cr(spec.clone())), false), None);
    let openshift = build(spec.clone(), |i| i.routes_available = true);
    assert!(openshift.route.is_none(), "OpenShift makes the Route");
    assert_eq!(
        value(&openshift.ingress.expect("an Ingress").spec)["tls"][0]["secretName"],
        "llama-cert"
    );
    assert_eq!(exposure_warning(&view(&cr(spec.clone())), true), None);
    let mut serving = spec;
    serving["networking"]["tls"] = json!({"enabled": true, "secretName": "server-cert"});
    let route = build(serving.clone(), |i| i.routes_available = true)
        .route
        .expect("a passthrough Route");
    assert_eq!(route.data["spec"]["tls"]["termination"], "passthrough");
    assert!(
        exposure_warning(&view(&cr(serving)), true)
            .is_some_and(|w| w.contains("tlsSecretName is not used")),
        "the unused certificate is named"
    );
    let hostless = cr(
        json!({"distribution": {"name": "starter"}, "networking": {"expose": {"tlsSecretName": "c"}}}),
    );
    assert!(
        exposure_warning(&view(&hostless), false)
            .is_some_and(|w| w.contains("TLS Secret but no host")),
        "a certificate without a host is named"
    );
    // On OpenShift, without a host there would be no Route from an Ingress: the Route serves,
    // and the unused Secret is named.
    let hostless_spec = json!({"distribution": {"name": "starter"}, "networking": {"expose": {"tlsSecretName": "c"}}});
    assert!(
        build(hostless_spec, |i| i.routes_available = true)
            .route
            .is_some()
    );
    assert!(
        exposure_warning(&view(&hostless), true).is_some_and(
            |w| w.contains("tlsSecretName is not used without networking.expose.hostname")
        ),
        "the unused Secret is named"
    );
}

#[test]
fn expose_is_an_ingress_or_a_route_never_both() {
    let spec = json!({"distribution": {"name": "starter"}, "networking": {"expose": {"hostname": "h.example"}}});
    let plain = build(spec.clone(), |_| {});
    assert!(plain.route.is_none());
    assert_eq!(
        value(&plain.ingress.unwrap().spec)["rules"][0]["host"],
        "h.example"
    );
    let openshift = build(spec, |i| i.routes_available = true);
    assert!(openshift.ingress.is_none());
    let route = openshift.route.unwrap();
    assert_eq!(route.data["spec"]["host"], "h.example");
    assert_eq!(route.data["spec"]["to"]["name"], "s-service");
    let off = build(
        json!({"distribution": {"name": "starter"}, "networking": {"expose": {"enabled": false, "hostname": "h"}}}),
        |_| {},
    );
    assert!(off.ingress.is_none() && off.route.is_none());
}

#[test]
fn the_managed_service_account_has_no_token_and_the_namespace_pull_secrets() {
    let pull = vec!["regcred".to_owned()];
    let d = build(json!({"distribution": {"name": "starter"}}), |i| {
        i.pull_secrets = &[]
    });
    assert_eq!(
        d.service_account
            .as_ref()
            .unwrap()
            .automount_service_account_token,
        Some(false)
    );
    let with = desired(
        &view(&cr(json!({"distribution": {"name": "starter"}}))),
        &Inputs {
            pull_secrets: &pull,
            config: ServerConfig::Generated("c".to_owned()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        value(&with.service_account.unwrap().image_pull_secrets),
        json!([{"name": "regcred"}])
    );
    let own = build(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"serviceAccountName": "mine"}}}),
        |_| {},
    );
    assert!(own.service_account.is_none());
    assert_eq!(
        value(&own.deployment.spec)["template"]["spec"]["serviceAccountName"],
        "mine"
    );
}

#[test]
fn tls_and_ca_bundle_change_the_pod() {
    let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
    let d = build(
        json!({"distribution": {"name": "starter"}, "networking": {"tls": {"enabled": true, "secretName": "srv"}}}),
        |i| i.ca_bundle = Some(pem),
    );
    let pod = value(&d.deployment.spec)["template"].clone();
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert!(container["env"].as_array().unwrap().contains(
        &json!({"name": "SSL_CERT_FILE", "value": "/etc/ssl/certs/ca-bundle/ca-bundle.crt"})
    ));
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    assert!(volumes.contains(&json!({"name": "tls", "secret": {"secretName": "srv"}})));
    // Named by content: another bundle is another object, so a revision keeps its own.
    let hash = llama_stack_resolver::sha256_hex(pem.as_bytes());
    let name = format!("s-ca-bundle-{}", &hash[7..15]);
    assert!(volumes.contains(&json!({"name": "ca-bundle", "configMap": {"name": name}})));
    assert!(pod["metadata"]["annotations"][CA_BUNDLE_HASH].is_string());
    let bundle = d.ca_bundle.unwrap();
    assert_eq!(bundle.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(value(&bundle.data)["ca-bundle.crt"], pem);
}

#[test]
fn the_desired_hash_follows_the_content() {
    let spec = json!({"distribution": {"name": "starter"}});
    let a = build(spec.clone(), |_| {});
    let b = build(spec.clone(), |_| {});
    let hash = |d: &Desired| d.deployment.annotations().get(DESIRED_HASH).cloned();
    assert!(hash(&a).is_some());
    assert_eq!(hash(&a), hash(&b), "same input, same hash: no write");
    let c = build(spec, |i| i.secrets_hash = Some("0011"));
    assert_ne!(hash(&a), hash(&c), "a Secret value change rolls");
}

#[test]
fn ca_bundles_keep_only_valid_certificates_and_respect_the_limits() {
    use rcgen::{CertificateParams, KeyPair};
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["ca".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem();
    let with_key = format!("{cert}{}", key.serialize_pem());
    let out = collect_certificates(&[("a".into(), with_key)]).unwrap();
    assert_eq!(out.matches("BEGIN CERTIFICATE").count(), 1);
    assert!(!out.contains("PRIVATE"));
    assert_eq!(
        collect_certificates(&[("k".into(), key.serialize_pem())]),
        Err(CaBundleError::Empty { key: "k".into() })
    );
    let garbage =
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n".to_owned();
    assert!(
        matches!(collect_certificates(&[("g".into(), garbage)]), Err(CaBundleError::Invalid { key, .. }) if key == "g")
    );
    let many = cert.repeat(ca_bundle::MAX_CERTIFICATES + 1);
    assert_eq!(
        collect_certificates(&[("m".into(), many)]),
        Err(CaBundleError::TooMany)
    );
    let huge = "x".repeat(ca_bundle::MAX_BUNDLE_BYTES + 1);
    assert_eq!(
        collect_certificates(&[("h".into(), huge)]),
        Err(CaBundleError::TooLarge)
    );
}

#[test]
fn a_new_provider_image_rolls_the_deployment() {
    let with = |image: &str| {
        let spec = json!({"distribution": {"name": "starter"},
            "externalProviders": {"safety": [{"providerId": "p", "image": image}]}});
        build(spec, |i| i.operator_image = "reg/operator:1")
    };
    let hash = |d: &Desired| d.deployment.annotations().get(DESIRED_HASH).cloned();
    let (a, b) = (with("reg/p:1"), with("reg/p@sha256:0123"));
    assert_ne!(
        hash(&a),
        hash(&b),
        "a new tag or digest is a new Pod template"
    );
    let pod = value(&b.deployment.spec)["template"]["spec"].clone();
    let staged = pod["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "install-provider-p")
        .unwrap()
        .clone();
    assert_eq!(staged["image"], "reg/p@sha256:0123");
    assert_eq!(
        staged["securityContext"]["capabilities"]["drop"],
        json!(["ALL"])
    );
    assert_eq!(
        staged["securityContext"]["allowPrivilegeEscalation"],
        json!(false)
    );
    assert!(staged["resources"]["limits"]["memory"].is_string());
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(
        volumes
            .iter()
            .any(|v| v["name"] == "external-providers" && v["emptyDir"]["sizeLimit"] == "4Gi")
    );
    assert_eq!(
        value(&b.deployment.spec)["template"]["metadata"]["labels"]["llamastack.io/external-providers"],
        "true"
    );
}

/// The provider's init container is told the server's line, so it can refuse a provider written
/// for the other one; llama-stack, the default, adds nothing, so those Pods keep their template.
#[test]
fn the_provider_step_is_told_the_server_line_only_when_it_is_not_the_default() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease};
    let spec = json!({"distribution": {"name": "starter"},
        "externalProviders": {"inference": [{"providerId": "p", "image": "reg/p:1"}]}});
    let command_on = |line| {
        let built = build(spec.clone(), |i| {
            i.server = ServerRelease {
                line,
                version: None,
                evidence: Evidence::Catalog,
                suffixed: false,
            }
        });
        let pod = value(&built.deployment.spec)["template"]["spec"].clone();
        pod["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "install-provider-p")
            .unwrap()["command"]
            .clone()
    };
    let ogx = command_on(ServerLine::Ogx);
    assert!(
        ogx.as_array()
            .unwrap()
            .contains(&json!("--server-line=ogx")),
        "{ogx}"
    );
    let llama = command_on(ServerLine::LlamaStack);
    assert!(!llama.to_string().contains("--server-line"), "{llama}");
}

#[test]
fn pods_run_as_a_fixed_non_root_user_except_where_openshift_assigns_one() {
    let spec = json!({"distribution": {"name": "starter"}});
    let plain =
        value(&build(spec.clone(), |_| {}).deployment.spec)["template"]["spec"]["securityContext"]
            .clone();
    assert_eq!(
        (
            plain["runAsNonRoot"].clone(),
            plain["runAsUser"].clone(),
            plain["fsGroup"].clone()
        ),
        (json!(true), json!(1001), json!(1001))
    );
    let openshift = value(&build(spec, |i| i.routes_available = true).deployment.spec)["template"]
        ["spec"]["securityContext"]
        .clone();
    assert_eq!(openshift["runAsNonRoot"], json!(true));
    assert!(
        openshift.get("runAsUser").is_none(),
        "the restricted SCC assigns the UID"
    );
}

#[test]
fn an_existing_deployments_selector_is_kept_and_its_labels_reach_the_pods() {
    // The upstream operator selects on `app: llama-stack`; a selector cannot change.
    let upstream = std::collections::BTreeMap::from([
        ("app".to_owned(), "llama-stack".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), "s".to_owned()),
    ]);
    let g = generated();
    let inputs = Inputs {
        image: "reg/img@sha256:aa",
        generated: Some(&g),
        config: ServerConfig::Generated("s-config-01234567".to_owned()),
        existing_selector: Some(&upstream),
        ..Default::default()
    };
    let d = desired(
        &view(&cr(json!({"distribution": {"name": "starter"}}))),
        &inputs,
    )
    .unwrap();
    let spec = value(&d.deployment.spec);
    assert_eq!(
        spec["selector"]["matchLabels"],
        json!({"app": "llama-stack", "app.kubernetes.io/instance": "s"})
    );
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(labels["app"], "llama-stack");
    assert_eq!(
        labels["app.kubernetes.io/name"], "llama-stack",
        "the Service's selector still matches"
    );
}

#[test]
fn the_operators_own_selector_read_back_changes_nothing() {
    let g = generated();
    let base = Inputs {
        image: "reg/img@sha256:aa",
        generated: Some(&g),
        config: ServerConfig::Generated("s-config-01234567".to_owned()),
        ..Default::default()
    };
    let cr = cr(json!({"distribution": {"name": "starter"}}));
    let first = desired(&view(&cr), &base).unwrap();
    let own = first
        .deployment
        .spec
        .as_ref()
        .unwrap()
        .selector
        .match_labels
        .clone()
        .unwrap();
    let again = desired(
        &view(&cr),
        &Inputs {
            existing_selector: Some(&own),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(
        value(&first.deployment),
        value(&again.deployment),
        "reading our own selector back is a no-op"
    );
}

/// A spec that asks for every owned object gets each of them.
#[test]
fn a_full_spec_builds_every_owned_object() {
    let spec = json!({"distribution": {"name": "starter"},
        "networking": {"expose": true, "allowedFrom": {"namespaces": ["a"]}, "tls": {"enabled": true, "secretName": "srv"}},
        "workload": {"replicas": 2, "storage": {"size": "1Gi"}, "autoscaling": {"minReplicas": 2, "maxReplicas": 4}},
        "externalProviders": {"inference": [{"providerId": "p", "image": "reg/p:1"}]}});
    let data = std::collections::BTreeMap::from([(
        "storage-sql-host".to_owned(),
        k8s_openapi::ByteString(b"db".to_vec()),
    )]);
    let g = generated();
    let inputs = Inputs {
        ca_bundle: Some("pem"),
        derived: Some(&data),
        operator_image: "reg/op:1",
        ..base_inputs(&g)
    };
    let desired = desired(&view(&cr(spec)), &inputs).unwrap();
    assert!(desired.derived_secret.is_some());
    assert!(desired.pvc.is_some() && desired.hpa.is_some() && desired.pdb.is_some());
    assert!(desired.network_policy.is_some() && desired.ingress.is_some());
}

#[test]
fn the_server_runs_the_generated_config_whatever_the_images_entrypoint() {
    let server = |spec: Value| {
        let d = build(spec, |_| {});
        value(&d.deployment)["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let default = server(json!({"distribution": {"name": "starter"}}));
    assert_eq!(
        default["command"],
        json!(["llama", "stack", "run", "$(LLAMA_STACK_CONFIG)"])
    );
    assert!(default["args"].is_null(), "no image CMD is appended");
    let env = default["env"].as_array().unwrap();
    assert!(
        env.iter().any(|e| e["name"] == "LLAMA_STACK_CONFIG"),
        "the command's variable is set"
    );

    let with_args = server(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"args": ["--enable-ui"]}}}),
    );
    assert_eq!(with_args["command"], default["command"]);
    assert_eq!(with_args["args"], json!(["--enable-ui"]));

    assert_eq!(
        default["lifecycle"]["preStop"]["sleep"]["seconds"], 5,
        "a stopping server serves until the endpoints forget it"
    );
    let own = server(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"command": ["/start.sh"]}}}),
    );
    assert_eq!(
        own["command"],
        json!(["/start.sh"]),
        "the user's command wins"
    );
}

fn pod_of(d: &Desired) -> Value {
    value(&d.deployment)["spec"]["template"]["spec"].clone()
}

fn env_value(container: &Value, name: &str) -> Option<Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .cloned()
}

#[test]
fn the_images_own_config_mounts_nothing_and_keeps_the_images_entrypoint() {
    let d = build(
        json!({"distribution": {"image": "quay.io/acme/stack:1"}, "workload": {"overrides": {"args": ["--x"]}}}),
        |inputs| {
            inputs.generated = None;
            inputs.config = ServerConfig::Image;
        },
    );
    assert!(d.config_map.is_none());
    let pod = pod_of(&d);
    let server = &pod["containers"][0];
    assert!(
        server.get("command").is_none(),
        "the image's entrypoint runs its own config: {server}"
    );
    assert_eq!(
        server["args"],
        json!(["--x"]),
        "the user's args still apply"
    );
    assert!(env_value(server, "LLAMA_STACK_CONFIG").is_none());
    assert!(env_value(server, "LLAMA_STACK_PORT").is_some());
    let volumes: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(volumes, ["data"], "no config volume");
    assert!(
        value(&d.deployment)["spec"]["template"]["metadata"]["annotations"]
            .get(CONFIG_HASH)
            .is_none()
    );
}

#[test]
fn a_users_config_map_is_mounted_whole_and_its_key_is_the_config() {
    let d = build(json!({"distribution": {"name": "starter"}}), |inputs| {
        inputs.config = ServerConfig::User {
            config_map: "llama-stack-config".to_owned(),
            key: "run.yaml".to_owned(),
        };
    });
    assert!(d.config_map.is_none(), "the user's ConfigMap is not built");
    let pod = pod_of(&d);
    assert_eq!(
        pod["volumes"][0],
        json!({"name": "config", "configMap": {"name": "llama-stack-config"}}),
        "every key, as the upstream operator mounted it"
    );
    let server = &pod["containers"][0];
    assert_eq!(
        env_value(server, "LLAMA_STACK_CONFIG").unwrap()["value"],
        "/etc/llama-stack/run.yaml"
    );
    assert_eq!(server["volumeMounts"][0]["mountPath"], "/etc/llama-stack");
    // A real manifest's own command naming the file runs as written.
    let own = build(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"command": ["llama", "stack", "run", "/etc/llama-stack/run.yaml"]}}}),
        |inputs| {
            inputs.config = ServerConfig::User {
                config_map: "llama-stack-config".to_owned(),
                key: "run.yaml".to_owned(),
            };
        },
    );
    assert_eq!(
        pod_of(&own)["containers"][0]["command"],
        json!(["llama", "stack", "run", "/etc/llama-stack/run.yaml"])
    );
}

#[test]
fn a_user_mount_at_the_data_path_replaces_the_operators_and_env_names_are_the_users() {
    // From a chart's defaults: a PVC of the user's own mounted at /.llama, HOME set.
    let d = build(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "chart-pvc"}},
                        {"name": "config", "emptyDir": {}}],
            "volumeMounts": [{"name": "data", "mountPath": "/.llama/"},
                             {"name": "config", "mountPath": "/etc/llama-stack"}],
            "env": [{"name": "HOME", "value": "/tmp"}, {"name": "LLAMA_STACK_CONFIG_DIR", "value": "/a"},
                    {"name": "LLAMA_STACK_CONFIG_DIR", "value": "/b"}]}}}),
        |_| {},
    );
    let pod = pod_of(&d);
    let volumes = pod["volumes"].as_array().unwrap();
    let named = |name: &str| volumes.iter().find(|v| v["name"] == name).cloned();
    assert_eq!(
        named("data").unwrap()["persistentVolumeClaim"]["claimName"],
        "chart-pvc",
        "the user's volume keeps its name"
    );
    assert_eq!(
        named("llso-config").unwrap()["configMap"]["name"],
        "s-config-01234567",
        "the operator's config volume is renamed, not lost"
    );
    assert!(
        volumes
            .iter()
            .all(|v| v.get("emptyDir").is_none() || v["name"] == "config"),
        "the operator's data emptyDir, no longer mounted, is gone: {volumes:?}"
    );
    let server = &pod["containers"][0];
    let mounts = server["volumeMounts"].as_array().unwrap();
    assert!(mounts.contains(&json!({"name": "llso-config", "mountPath": "/etc/llama-stack-operator", "readOnly": true})),
        "the generated config moves aside for the user's mount: {mounts:?}");
    assert_eq!(
        env_value(server, "LLAMA_STACK_CONFIG").unwrap()["value"],
        "/etc/llama-stack-operator/config.yaml"
    );
    assert_eq!(env_value(server, "HOME").unwrap()["value"], "/tmp");
    assert_eq!(
        env_value(server, "LLAMA_STACK_CONFIG_DIR").unwrap()["value"],
        "/b",
        "the last of the user's duplicates wins, as in the kubelet"
    );
}

#[test]
fn a_users_pythonpath_comes_after_the_external_providers_packages() {
    let providers = json!({"inference": [{"providerId": "acme", "image": "quay.io/acme/p:1"}]});
    let path = |env: Value| {
        let d = build(
            json!({"distribution": {"name": "starter"}, "externalProviders": providers,
                   "workload": {"overrides": {"env": env}}}),
            |inputs| inputs.operator_image = "op@sha256:00",
        );
        let server = pod_of(&d)["containers"][0].clone();
        (
            env_value(&server, "PYTHONPATH").unwrap()["value"].clone(),
            env_value(&server, user_parts::USER_PYTHONPATH),
        )
    };
    assert_eq!(
        path(json!([{"name": "PYTHONPATH", "value": "/opt/mine"}])).0,
        json!(format!("{}:/opt/mine", external::PYTHON_PACKAGES))
    );
    let (value_from, kept) = path(
        json!([{"name": "PYTHONPATH", "valueFrom": {"configMapKeyRef": {"name": "paths", "key": "py"}}}]),
    );
    assert_eq!(
        value_from,
        json!(format!(
            "{}:$({})",
            external::PYTHON_PACKAGES,
            user_parts::USER_PYTHONPATH
        ))
    );
    assert_eq!(
        kept.unwrap()["valueFrom"]["configMapKeyRef"]["name"],
        "paths"
    );
    assert_eq!(
        path(json!([])).0,
        json!(external::PYTHON_PACKAGES),
        "without the user's, only the packages"
    );
}

mod by_construction {
    //! Whatever mix of volumes, mounts and env the user writes, the Pod the operator builds
    //! has no duplicate the API server would refuse, and keeps every one of the user's entries.

    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Names and paths that collide with the operator's, and some that do not.
    const VOLUME_NAMES: &[&str] = &[
        "config",
        "data",
        "ca-bundle",
        "tls",
        "llso-tools",
        "external-providers",
        "merged-config",
        "llso-config",
        "mine",
    ];
    const PATHS: &[&str] = &[
        "/.llama",
        "/.llama/",
        "/etc/llama-stack",
        "/etc/llama-stack/",
        "/etc/llama-stack-operator",
        "/etc/ssl/certs/ca-bundle",
        "/etc/llama-stack/tls",
        "/opt/llama-stack/external-providers",
        "/data",
        "/cache",
    ];
    const ENV_NAMES: &[&str] = &[
        "HOME",
        "LLAMA_STACK_CONFIG",
        "LLAMA_STACK_CONFIG_DIR",
        "SQLITE_STORE_DIR",
        "HF_HOME",
        "LLAMA_STACK_PORT",
        "PYTHONPATH",
        "SSL_CERT_FILE",
        "MINE",
    ];

    fn spec(
        volumes: &[usize],
        mounts: &[(usize, usize)],
        env: &[(usize, bool)],
        flags: (bool, bool, bool, bool),
    ) -> Value {
        let (storage, tls, external, ca) = flags;
        let mut spec = json!({"distribution": {"name": "starter"}, "workload": {"overrides": {
            "volumes": volumes.iter().map(|i| json!({"name": VOLUME_NAMES[*i], "emptyDir": {}})).collect::<Vec<_>>(),
            "volumeMounts": mounts.iter().map(|(v, p)| json!({"name": VOLUME_NAMES[*v], "mountPath": PATHS[*p]})).collect::<Vec<_>>(),
            "env": env.iter().map(|(i, from)| if *from {
                json!({"name": ENV_NAMES[*i], "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})
            } else {
                json!({"name": ENV_NAMES[*i], "value": format!("v{i}")})
            }).collect::<Vec<_>>(),
        }}});
        if storage {
            spec["workload"]["storage"] = json!({"size": "1Gi"});
        }
        if tls {
            spec["networking"] = json!({"tls": {"enabled": true, "secretName": "cert"}});
        }
        if external {
            spec["externalProviders"] =
                json!({"inference": [{"providerId": "acme", "image": "quay.io/acme/p:1"}]});
        }
        if ca {
            spec["networking"]["tls"]["caBundle"] = json!({"configMapName": "cas"});
        }
        spec
    }

    fn assert_unique<'a>(what: &str, items: impl Iterator<Item = &'a str>) {
        let mut seen = BTreeSet::new();
        for item in items {
            assert!(seen.insert(item), "duplicate {what} {item:?}");
        }
    }

    proptest! {
        #[test]
        fn no_duplicate_ever_reaches_the_api_server(
            volumes in proptest::collection::vec(0..VOLUME_NAMES.len(), 0..6),
            mounts in proptest::collection::vec((0..VOLUME_NAMES.len(), 0..PATHS.len()), 0..6),
            env in proptest::collection::vec((0..ENV_NAMES.len(), any::<bool>()), 0..8),
            flags in any::<(bool, bool, bool, bool)>(),
            config in 0..3usize,
        ) {
            let g = generated();
            let mut inputs = base_inputs(&g);
            inputs.operator_image = "op@sha256:00";
            inputs.ca_bundle = flags.3.then_some("pem");
            inputs.config = match config {
                0 => ServerConfig::Generated("s-config-01234567".to_owned()),
                1 => ServerConfig::User { config_map: "mine".to_owned(), key: "run.yaml".to_owned() },
                // The image's own config never comes with external providers (they need a
                // config to merge into: the plan refuses that).
                _ if !flags.2 => ServerConfig::Image,
                _ => ServerConfig::Generated("s-config-01234567".to_owned()),
            };
            // Mounts name the user's own volumes (a mount of a volume nobody declares is refused
            // by the API server whatever the operator does).
            let mounts: Vec<(usize, usize)> = if volumes.is_empty() { Vec::new() } else {
                mounts.iter().map(|(v, p)| (volumes[v % volumes.len()], *p)).collect()
            };
            let resource = cr(spec(&volumes, &mounts, &env, flags));
            let d = desired(&view(&resource), &inputs).unwrap();
            let pod = pod_of(&d);
            let volume_list = pod["volumes"].as_array().unwrap();
            assert_unique("volume", volume_list.iter().map(|v| v["name"].as_str().unwrap()));
            let volume_names: BTreeSet<&str> =
                volume_list.iter().map(|v| v["name"].as_str().unwrap()).collect();
            let containers = pod["containers"].as_array().unwrap().iter()
                .chain(pod["initContainers"].as_array().into_iter().flatten());
            for container in containers {
                let mounts = container["volumeMounts"].as_array().cloned().unwrap_or_default();
                assert_unique("mount path", mounts.iter()
                    .map(|m| mount_path(m["mountPath"].as_str().unwrap())));
                for mount in &mounts {
                    let name = mount["name"].as_str().unwrap();
                    assert!(volume_names.contains(name), "mount of missing volume {name}: {pod}");
                }
                let env = container["env"].as_array().cloned().unwrap_or_default();
                assert_unique("env var", env.iter().map(|e| e["name"].as_str().unwrap()));
            }
            // Every one of the user's entries is there (the last of each name or path).
            let server = &pod["containers"][0];
            for (v, p) in &mounts {
                let path = mount_path(PATHS[*p]);
                let last = mounts.iter().rev()
                    .find(|(_, q)| mount_path(PATHS[*q]) == path).unwrap();
                let found = server["volumeMounts"].as_array().unwrap().iter()
                    .find(|m| mount_path(m["mountPath"].as_str().unwrap()) == path)
                    .unwrap_or_else(|| panic!("the user's mount at {path} is missing"));
                if (v, p) == (&last.0, &last.1) {
                    prop_assert_eq!(&found["name"], &json!(VOLUME_NAMES[*v]));
                }
            }
            for name in volumes.iter().map(|i| VOLUME_NAMES[*i]) {
                prop_assert!(volume_names.contains(name), "the user's volume {} is missing", name);
            }
            for (i, _) in &env {
                let name = ENV_NAMES[*i];
                prop_assert!(env_value(server, name).is_some(), "the user's {} is missing", name);
            }
        }
    }
}

/// OGX images run through their own entrypoint (`ogx-entrypoint.sh` runs `ogx stack run
/// "$RUN_CONFIG_PATH"`): no `llama` command exists in them, and they read `OGX_*` variables only.
#[test]
fn an_ogx_image_runs_its_entrypoint_on_the_mounted_config_with_ogx_variables() {
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let ogx = |version| ServerRelease {
        line: ServerLine::Ogx,
        version: Some(version),
        evidence: Evidence::OgxVersionLabel,
        suffixed: false,
    };
    let v1_3 = ogx(ServerVersion::new(1, 3, 0));
    let server_of = |spec: Value, tweak: &dyn Fn(&mut Inputs)| {
        let d = build(spec, |inputs| tweak(inputs));
        pod_of(&d)["containers"][0].clone()
    };
    let starter = json!({"distribution": {"name": "starter"}, "workload": {"workers": 3}});
    let generated = server_of(starter.clone(), &|i| i.server = v1_3);
    assert!(generated.get("command").is_none(), "{generated}");
    assert!(
        generated["args"].is_null(),
        "a generated config says server.insecure itself"
    );
    for (name, value) in [
        ("RUN_CONFIG_PATH", "/etc/llama-stack/config.yaml"),
        ("OGX_CONFIG", "/etc/llama-stack/config.yaml"),
        ("OGX_PORT", "8321"),
        ("OGX_CONFIG_DIR", "/.ogx"),
        ("OGX_WORKERS", "3"),
        ("HOME", "/.ogx"),
    ] {
        assert_eq!(
            env_value(&generated, name).map(|e| e["value"].clone()),
            Some(json!(value)),
            "{name}"
        );
    }
    assert!(
        generated["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["name"].as_str().unwrap().starts_with("LLAMA_STACK_")),
        "{generated}"
    );
    assert_eq!(generated["volumeMounts"][1]["mountPath"], "/.ogx");

    // A config the operator did not write: OGX 1.2+ is told it may serve plain HTTP, after the
    // user's own arguments; 1.0 would stop at the unknown flag; TLS needs no flag.
    let image_config = |i: &mut Inputs| {
        i.server = v1_3;
        i.generated = None;
        i.config = ServerConfig::Image;
    };
    let own = server_of(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"args": ["--enable-ui"]}}}),
        &image_config,
    );
    assert_eq!(own["args"], json!(["--enable-ui", "--insecure"]));
    assert!(env_value(&own, "RUN_CONFIG_PATH").is_none());
    let users = server_of(json!({"distribution": {"name": "starter"}}), &|i| {
        i.server = v1_3;
        i.config = ServerConfig::User {
            config_map: "mine".to_owned(),
            key: "run.yaml".to_owned(),
        };
    });
    assert_eq!(users["args"], json!(["--insecure"]));
    assert_eq!(
        env_value(&users, "RUN_CONFIG_PATH").unwrap()["value"],
        "/etc/llama-stack/run.yaml"
    );
    let old = server_of(json!({"distribution": {"name": "starter"}}), &|i| {
        image_config(i);
        i.server = ogx(ServerVersion::new(1, 0, 4));
    });
    assert!(old["args"].is_null(), "{old}");
    let commanded = server_of(
        json!({"distribution": {"name": "starter"}, "workload": {"overrides": {"command": ["/start.sh"]}}}),
        &image_config,
    );
    assert!(
        commanded["args"].is_null(),
        "the user's command takes no flag of ours"
    );

    // The llama-stack line is unchanged: `llama stack run` on LLAMA_STACK_CONFIG.
    let llama = server_of(starter, &|_| {});
    assert_eq!(
        llama["command"],
        json!(["llama", "stack", "run", "$(LLAMA_STACK_CONFIG)"])
    );
    assert!(env_value(&llama, "RUN_CONFIG_PATH").is_none());
    assert!(env_value(&llama, "OGX_WORKERS").is_none());
    assert_eq!(env_value(&llama, "HOME").unwrap()["value"], "/.llama");
}

#[test]
fn an_ogx_server_exporting_metrics_gets_a_service_monitor_where_the_cluster_serves_one() {
    use crate::core::door::Door;
    let g = generated();
    let resource = cr(json!({"distribution": {"name": "starter"}}));
    let ogx = Stack::read_through(
        Model::of(&resource),
        Door::OgxServer {
            metrics_port: Some(9090),
        },
    )
    .unwrap();
    let served = Inputs {
        monitoring_available: true,
        ..base_inputs(&g)
    };
    let built = desired(&ogx, &served).unwrap();
    let monitor = built.service_monitor.expect("a ServiceMonitor");
    assert_eq!(monitor.metadata.name.as_deref(), Some("s-service-monitor"));
    // Its selector is a subset of the Service's labels, and names the instance: this
    // server's Service only.
    let service_labels = built.service.metadata.labels.clone().unwrap();
    let selector = monitor.data["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(
        selector
            .iter()
            .all(|(k, v)| service_labels.get(k).map(String::as_str) == v.as_str()),
        "{selector:?}"
    );
    assert_eq!(selector[labels::INSTANCE], "s");
    let scraped = monitor.data["spec"]["endpoints"][0]["targetPort"]
        .as_str()
        .unwrap();
    let service_ports = built.service.spec.unwrap().ports.unwrap();
    assert!(
        service_ports
            .iter()
            .any(|p| p.name.as_deref() == Some(scraped) && p.port == 9090)
    );
    assert_eq!(
        built.prometheus_rule.unwrap().metadata.name.as_deref(),
        Some("s-prometheus-rules")
    );

    // Not served, monitoring off, or a LlamaStackDistribution: none.
    let unserved = desired(&ogx, &base_inputs(&g)).unwrap();
    assert!(unserved.service_monitor.is_none() && unserved.prometheus_rule.is_none());
    let off =
        Stack::read_through(Model::of(&resource), Door::OgxServer { metrics_port: None }).unwrap();
    assert!(desired(&off, &served).unwrap().service_monitor.is_none());
    assert!(
        desired(&view(&resource), &served)
            .unwrap()
            .service_monitor
            .is_none()
    );
}

#[test]
fn a_client_identity_is_mounted_from_its_config_map_and_secret() {
    let built = build(
        json!({"distribution": {"name": "starter"}, "networking": {"tls": {"clientIdentity":
            {"certificate": {"name": "c", "key": "client.pem"}, "privateKey": {"name": "k", "key": "client.key"}}}}}),
        |_| {},
    );
    let pod = value(&built.deployment.spec.unwrap().template.spec.unwrap());
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "client-identity")
        .unwrap();
    let sources = &volume["projected"]["sources"];
    assert_eq!(sources[0]["configMap"]["name"], "c");
    assert_eq!(
        sources[0]["configMap"]["items"][0],
        json!({"key": "client.pem", "path": "tls.crt"})
    );
    assert_eq!(sources[1]["secret"]["name"], "k");
    assert_eq!(
        sources[1]["secret"]["items"][0],
        json!({"key": "client.key", "path": "tls.key", "mode": 0o440})
    );
    let mounts = &pod["containers"][0]["volumeMounts"];
    assert!(
        mounts
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "client-identity"
                && m["mountPath"] == "/etc/llama-stack-client-identity"
                && m["readOnly"] == true),
        "{mounts:#}"
    );
}

#[test]
fn resource_claims_reach_the_pod_and_the_container_uses_them_by_name() {
    let built = build(
        json!({"distribution": {"name": "starter"}, "workload": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "resources": {"claims": [{"name": "gpu"}], "limits": {"memory": "4Gi"}}}}),
        |_| {},
    );
    let pod = value(&built.deployment.spec.unwrap().template.spec.unwrap());
    assert_eq!(
        pod["resourceClaims"],
        json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    );
    assert_eq!(
        pod["containers"][0]["resources"]["claims"],
        json!([{"name": "gpu"}])
    );
    let plain = build(json!({"distribution": {"name": "starter"}}), |_| {});
    assert!(
        plain
            .deployment
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .resource_claims
            .is_none()
    );
}

/// A Service named `ogx` in the namespace would give every server `OGX_PORT=tcp://…` (and each
/// Service seven variables): server Pods run without service links, on both lines.
#[test]
fn server_pods_get_no_service_links() {
    use llama_stack_resolver::server_line::ServerRelease;
    for server in [ServerRelease::CATALOG, ServerRelease::ASSUMED] {
        let d = build(json!({"distribution": {"name": "starter"}}), |i| {
            i.server = server
        });
        assert_eq!(
            pod_of(&d)["enableServiceLinks"],
            json!(false),
            "{}",
            server.describe()
        );
    }
}

/// Behind Praxis the NetworkPolicy is made even without `allowedFrom` (the server trusts whoever
/// reaches it): the Praxis Pods (the gateway's selector, else `app: payload-processing` in
/// `openshift-ingress`) take the own namespace's place beside the operator's; rules of one's own
/// are added; `expose` makes no Ingress or Route and says why.
#[test]
fn behind_praxis_only_praxis_and_the_operator_reach_the_server() {
    let defaulted = build(
        json!({"distribution": {"name": "starter"}, "gateway": {"praxis": {}},
            "networking": {"expose": {"hostname": "ogx.example.com"}}}),
        |i| i.operator_namespace = Some("op"),
    );
    let spec = value(&defaulted.network_policy.unwrap().spec);
    assert_eq!(
        spec["ingress"][0]["from"],
        json!([
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-ingress"}},
             "podSelector": {"matchLabels": {"app": "payload-processing"}}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "op"}}}])
    );
    assert!(defaulted.ingress.is_none() && defaulted.route.is_none());
    let exposed = cr(
        json!({"distribution": {"name": "starter"}, "gateway": {"praxis": {}},
        "networking": {"expose": true}}),
    );
    assert_eq!(exposure_warning(&view(&exposed), true), None);
    let said = gateway_warnings(&view(&exposed));
    assert!(
        said.len() == 1 && said[0].contains("no Ingress or Route is made"),
        "expose behind Praxis is named: {said:?}"
    );
    // Neither `*` nor a policy that leaves ingress alone opens the server behind Praxis.
    let opened = json!({"distribution": {"name": "starter"}, "gateway": {"praxis": {}},
        "networking": {"allowedFrom": {"namespaces": ["*", "team-a"]},
            "policy": {"policyTypes": ["Egress"]}}});
    let built = build(opened.clone(), |i| i.operator_namespace = Some("op"));
    let spec = value(&built.network_policy.unwrap().spec);
    assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        spec["ingress"][0]["from"],
        json!([
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-ingress"}},
             "podSelector": {"matchLabels": {"app": "payload-processing"}}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "op"}}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}}]),
        "{spec:#}"
    );
    let said = gateway_warnings(&view(&cr(opened)));
    assert!(
        said.iter().any(|w| w.contains("\"*\" is not used"))
            && said
                .iter()
                .any(|w| w.contains("Ingress is governed anyway")),
        "{said:?}"
    );
    let extra = json!({"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]});
    let selected = build(
        json!({"distribution": {"name": "starter"},
            "gateway": {"praxis": {"namespace": "praxis",
                "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}},
            "networking": {"policy": {"ingress": [extra]}}}),
        |i| i.operator_namespace = Some("op"),
    );
    let spec = value(&selected.network_policy.unwrap().spec);
    assert_eq!(
        spec["ingress"][0]["from"][0],
        json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "praxis"}},
            "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}})
    );
    assert_eq!(spec["ingress"][1], extra);
}

#[test]
fn every_object_is_the_stacks_and_all_but_two_carry_their_hash() {
    use crate::core::door::Door;
    let spec = json!({"distribution": {"name": "starter"},
        "networking": {"expose": true, "allowedFrom": {"namespaces": ["a"]}},
        "workload": {"replicas": 2, "storage": {"size": "1Gi"}, "autoscaling": {"minReplicas": 2, "maxReplicas": 4}}});
    let data = std::collections::BTreeMap::from([(
        "storage-sql-host".to_owned(),
        k8s_openapi::ByteString(b"db".to_vec()),
    )]);
    let resource = cr(spec);
    let stack = Stack::read_through(
        Model::of(&resource),
        Door::OgxServer {
            metrics_port: Some(9090),
        },
    )
    .unwrap();
    let g = generated();
    for routes_available in [false, true] {
        let inputs = Inputs {
            ca_bundle: Some("pem"),
            derived: Some(&data),
            routes_available,
            monitoring_available: true,
            ..base_inputs(&g)
        };
        let d = desired(&stack, &inputs).unwrap();
        let hashed: Vec<(&str, Value)> = [
            ("Deployment", Some(value(&d.deployment))),
            ("Service", Some(value(&d.service))),
            ("ServiceAccount", d.service_account.as_ref().map(value)),
            ("PersistentVolumeClaim", d.pvc.as_ref().map(value)),
            ("CA bundle", d.ca_bundle.as_ref().map(value)),
            ("NetworkPolicy", d.network_policy.as_ref().map(value)),
            (
                "exposure",
                d.ingress
                    .as_ref()
                    .map(value)
                    .or(d.route.as_ref().map(value)),
            ),
            ("HorizontalPodAutoscaler", d.hpa.as_ref().map(value)),
            ("PodDisruptionBudget", d.pdb.as_ref().map(value)),
            ("ServiceMonitor", d.service_monitor.as_ref().map(value)),
            ("PrometheusRule", d.prometheus_rule.as_ref().map(value)),
        ]
        .into_iter()
        .map(|(what, v)| (what, v.unwrap_or_else(|| panic!("{what} is built"))))
        .collect();
        let unhashed = [
            ("generated ConfigMap", value(d.config_map.as_ref().unwrap())),
            ("derived Secret", value(d.derived_secret.as_ref().unwrap())),
        ];
        for (what, object) in hashed.iter().chain(&unhashed) {
            let meta = &object["metadata"];
            assert_eq!(meta["namespace"], "ns", "{what}");
            assert_eq!(meta["ownerReferences"][0]["uid"], "u-1", "{what}");
            assert_eq!(meta["labels"][labels::MANAGED_BY], "ogx-operator", "{what}");
            assert_eq!(meta["labels"][labels::INSTANCE], "s", "{what}");
        }
        for (what, object) in &hashed {
            let hash = &object["metadata"]["annotations"][DESIRED_HASH];
            assert!(
                hash.as_str().is_some_and(|h| h.starts_with("sha256:")),
                "{what}: {hash}"
            );
        }
        for (what, object) in &unhashed {
            assert!(
                object["metadata"]["annotations"]
                    .get(DESIRED_HASH)
                    .is_none(),
                "{what}"
            );
        }
        // A label the builder gives its object stays beside the stack's.
        let bundle = &hashed[4].1["metadata"]["labels"];
        assert_eq!(bundle[labels::COMPONENT], "ca-bundle");
    }
}

/// The Praxis migration Job is the server's Pod running the migration: the same image, config,
/// Secrets, ServiceAccount and security context; no probes, ports, init containers or data
/// volume; Praxis's database from its Secret, never inlined; the fallbacks as variables; no
/// label the server's Service selects by; the attempt on the Job and its Pods; one Pod per try,
/// each kept.
#[test]
fn the_migration_job_is_the_servers_pod_running_the_migration() {
    use crate::core::door::Door;
    use crate::core::migration::Attempt;
    let g = generated();
    let resource = cr(json!({"distribution": {"name": "starter"},
        "workload": {"storage": {"size": "1Gi"}},
        "gateway": {"praxis": {"migration": {
            "targetConnectionString": {"secretKeyRef": {"name": "praxis-pg", "key": "url"}},
            "fallbackTenant": "acme"}}}}));
    let ogx =
        Stack::read_through(Model::of(&resource), Door::OgxServer { metrics_port: None }).unwrap();
    use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
    let inputs = Inputs {
        server: ServerRelease {
            line: ServerLine::Ogx,
            version: Some(ServerVersion::new(1, 3, 1)),
            evidence: Evidence::OgxVersionLabel,
            suffixed: false,
        },
        ..base_inputs(&g)
    };
    let server = desired(&ogx, &inputs).unwrap().deployment;
    let wanted = ogx.networking.gateway.unwrap().migration.as_ref().unwrap();
    let attempt = Attempt {
        key: "0123456789abcdef".to_owned(),
        job_name: "s-praxis-migration".to_owned(),
    };
    let job = super::migration_job(&ogx, &inputs, wanted, &attempt).unwrap();
    let job = value(&job);
    let server = value(&server);
    assert_eq!(job["metadata"]["name"], "s-praxis-migration");
    assert_eq!(
        job["metadata"]["annotations"]["ogx.io/migration-attempt"],
        "0123456789abcdef"
    );
    assert_eq!(
        job["metadata"]["ownerReferences"],
        server["metadata"]["ownerReferences"]
    );
    assert_eq!(
        (
            job["spec"]["backoffLimit"].as_i64(),
            job["spec"]["activeDeadlineSeconds"].as_i64()
        ),
        (Some(2), Some(3600))
    );
    let (pod, server_pod) = (
        &job["spec"]["template"]["spec"],
        &server["spec"]["template"]["spec"],
    );
    assert_eq!(
        pod["restartPolicy"], "Never",
        "each try in its own Pod, kept with its logs"
    );
    for same in [
        "serviceAccountName",
        "securityContext",
        "automountServiceAccountToken",
    ] {
        assert_eq!(pod[same], server_pod[same], "{same}");
    }
    let (c, s) = (&pod["containers"][0], &server_pod["containers"][0]);
    assert_eq!(c["image"], s["image"]);
    assert_eq!(c["command"], json!(["/bin/sh", "-c"]));
    assert!(
        c["args"][0]
            .as_str()
            .unwrap()
            .contains(r#"--fallback-tenant "$PRAXIS_FALLBACK_TENANT""#)
    );
    for gone in [
        "ports",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
    ] {
        assert!(c.get(gone).is_none(), "{gone}: {c:#}");
    }
    assert!(pod.get("initContainers").is_none());
    let env = c["env"].as_array().unwrap();
    let var = |name: &str| env.iter().find(|e| e["name"] == name).cloned();
    assert_eq!(
        var("PRAXIS_DATABASE_URL").unwrap()["valueFrom"]["secretKeyRef"],
        json!({"name": "praxis-pg", "key": "url", "optional": false})
    );
    assert_eq!(var("PRAXIS_FALLBACK_TENANT").unwrap()["value"], "acme");
    assert!(var("PRAXIS_FALLBACK_OWNER_SUBJECT").is_none());
    assert_eq!(
        var("OGX_CONFIG"),
        s["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "OGX_CONFIG")
            .cloned()
    );
    assert!(var("OGX_CONFIG").is_some(), "the config the server reads");
    let claims = |spec: &Value| {
        spec["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v.get("persistentVolumeClaim").is_some())
            .count()
    };
    assert_eq!(
        (claims(server_pod), claims(pod)),
        (1, 0),
        "the data volume stays the server's"
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    let selector = &server["spec"]["selector"]["matchLabels"];
    let selected = selector
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| &labels[k] == v);
    assert!(
        !selected,
        "the server's Service must not select a migration Pod: {labels} vs {selector}"
    );
    assert_eq!(labels["app.kubernetes.io/component"], "praxis-migration");
}
