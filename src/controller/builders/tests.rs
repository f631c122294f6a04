use kube::ResourceExt;
use serde_json::{Value, json};

use super::*;
use crate::config::GeneratedConfig;

fn cr(spec: Value) -> LlamaStackDistribution {
    serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u-1"}, "spec": spec}),
    )
    .unwrap()
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
        config_map: "s-config-01234567",
        generated_config_map: true,
        ..Default::default()
    }
}

fn build(spec: Value, tweak: impl FnOnce(&mut Inputs)) -> Desired {
    let g = generated();
    let mut inputs = base_inputs(&g);
    tweak(&mut inputs);
    desired(&cr(spec), &inputs).unwrap()
}

fn value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

#[test]
fn one_replica_never_gets_a_budget_that_would_block_drains() {
    let one = build(
        json!({"distribution": {"name": "starter"}, "workload": {"podDisruptionBudget": {"minAvailable": 1}}}),
        |_| {},
    );
    assert!(
        one.pdb.is_none(),
        "a budget for one replica would block every drain"
    );
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
        &cr(json!({"distribution": {"name": "starter"}})),
        &Inputs {
            pull_secrets: &pull,
            config_map: "c",
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
    assert!(volumes.contains(&json!({"name": "ca-bundle", "configMap": {"name": "s-ca-bundle"}})));
    assert!(pod["metadata"]["annotations"][CA_BUNDLE_HASH].is_string());
    assert_eq!(value(&d.ca_bundle.unwrap().data)["ca-bundle.crt"], pem);
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
        config_map: "s-config-01234567",
        generated_config_map: true,
        existing_selector: Some(&upstream),
        ..Default::default()
    };
    let d = desired(&cr(json!({"distribution": {"name": "starter"}})), &inputs).unwrap();
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
        config_map: "s-config-01234567",
        generated_config_map: true,
        ..Default::default()
    };
    let cr = cr(json!({"distribution": {"name": "starter"}}));
    let first = desired(&cr, &base).unwrap();
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
        &cr,
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

/// A misspelt key would be dropped by the conversion to the typed object; the builders refuse it.
#[test]
fn a_field_the_type_lacks_is_refused_with_its_path() {
    let misspelt = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "s"},
        "spec": {"selector": {}, "template": {"spec": {"containers": [
            {"name": "c", "image": "i", "imagePullPolcy": "Always"}]}}}});
    match stamped::<Deployment>(misspelt) {
        Err(BuildError::UnknownField { kind, path }) => {
            assert_eq!(kind, "Deployment");
            assert_eq!(path, ".spec.template.spec.containers[0].imagePullPolcy");
        }
        other => panic!("expected UnknownField, got {other:?}"),
    }
    let correct = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "s", "namespace": null}, "immutable": true, "data": {}});
    let cm: ConfigMap = typed("ConfigMap", correct).unwrap();
    assert_eq!(cm.immutable, Some(true));
}

/// Every builder's output passes the check (a builder's own typo fails here first).
#[test]
fn every_builder_sets_only_fields_its_type_has() {
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
    let desired = desired(&cr(spec), &inputs).unwrap();
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
