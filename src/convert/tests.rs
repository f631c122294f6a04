//! Conversion: the migration table, the annotations, and round trips on random objects.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{V1ALPHA1_FIELDS, V1ALPHA2_FIELDS, convert};

fn full_v1() -> Value {
    json!({
        "apiVersion": "llamastack.io/v1alpha1", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "labels": {"team": "a"}, "annotations": {"note": "x"}},
        "spec": {
            "replicas": 2,
            "server": {
                "distribution": {"name": "starter"},
                "containerSpec": {"name": "server", "port": 9000, "resources": {"requests": {"cpu": "1"}},
                    "env": [{"name": "A", "value": "b"}], "command": ["python"], "args": ["-m", "x"]},
                "workers": 3,
                "podOverrides": {"serviceAccountName": "sa", "terminationGracePeriodSeconds": 30,
                    "volumes": [{"name": "v", "emptyDir": {}}], "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                "podDisruptionBudget": {"maxUnavailable": 1},
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "ScheduleAnyway"}],
                "autoscaling": {"minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 80},
                "storage": {"size": "10Gi", "mountPath": "/.llama"},
                "userConfig": {"configMapName": "cfg", "configMapNamespace": "other"},
                "tlsConfig": {"caBundle": {"configMapName": "ca", "configMapKeys": ["a.crt"]}},
                "externalProviders": {"safety": [{"providerId": "p", "image": "i", "imagePullPolicy": "Always", "config": {"k": 1}}]},
                "rollback": "Never"
            },
            "network": {"exposeRoute": true, "allowedFrom": {"namespaces": ["*"], "labels": ["l"]}}
        },
        "status": {"phase": "Ready", "availableReplicas": 1, "serviceURL": "http://s", "routeURL": "",
            "version": {"operatorVersion": "1"}, "conditions": [{"type": "Available", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "distributionConfig": {"activeDistribution": "starter"}, "externalProviders": [{"providerId": "p", "image": "i", "phase": "Ready"}]}
    })
}

fn full_v2() -> Value {
    json!({
        "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {
            "distribution": {"image": "quay.io/x/y:1"},
            "providers": {"inference": [{"id": "a", "provider": "vllm", "endpoint": "http://v"}], "safety": {"provider": "llama-guard"}},
            "resources": {"models": ["m", {"name": "n", "provider": "a"}], "tools": ["websearch"], "shields": ["s"]},
            "storage": {"kv": {"type": "sqlite"}, "sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg", "key": "u"}}}},
            "disabled": ["eval"],
            "networking": {"port": 8321, "tls": {"enabled": true, "secretName": "t", "caBundle": {"configMapName": "ca"}},
                "expose": {"hostname": "h.example.com", "ingressClassName": "nginx", "tlsSecretName": "h-cert"}, "allowedFrom": {"namespaces": ["a"]}},
            "workload": {"replicas": 1, "workers": 2, "resources": {"limits": {"memory": "4Gi"}}, "autoscaling": {"maxReplicas": 4},
                "storage": {}, "podDisruptionBudget": {"minAvailable": 1}, "topologySpreadConstraints": [],
                "overrides": {"serviceAccountName": "sa", "env": [], "command": ["c"], "args": ["a"], "volumes": [], "volumeMounts": [], "terminationGracePeriodSeconds": 5},
                "rollback": "Automatic", "progressDeadlineSeconds": 120},
            "externalProviders": {"inference": [{"providerId": "e", "image": "i", "imagePullPolicy": "IfNotPresent"}]},
            "overrideConfig": {"configMapName": "cfg"}
        },
        "status": {"phase": "Ready", "resolvedDistribution": {"image": "quay.io/x/y@sha256:00", "configSource": "oci-label"},
            "configGeneration": {"configMapName": "s-config-0000", "providerCount": 2}, "availableReplicas": 1,
            "rollback": {"lastReady": {"desiredHash": "h1", "image": "quay.io/x/y@sha256:00", "configMap": "s-config-0000"},
                "rejected": {"desiredHash": "h2", "image": "quay.io/x/y@sha256:11", "generation": 4,
                    "reason": "ServerCrashLooping", "message": "m"}}}
    })
}

#[test]
fn migration_table() {
    let v2 = convert(&full_v1(), "llamastack.io/v1alpha2").unwrap();
    let s = &v2["spec"];
    assert_eq!(s["workload"]["replicas"], 2);
    assert_eq!(s["distribution"], json!({"name": "starter"}));
    assert_eq!(s["networking"]["port"], 9000);
    assert_eq!(
        s["workload"]["resources"],
        json!({"requests": {"cpu": "1"}})
    );
    assert_eq!(
        s["workload"]["overrides"]["env"],
        json!([{"name": "A", "value": "b"}])
    );
    assert_eq!(s["workload"]["overrides"]["command"], json!(["python"]));
    assert_eq!(s["workload"]["overrides"]["serviceAccountName"], "sa");
    assert_eq!(s["overrideConfig"], json!({"configMapName": "cfg"}));
    assert_eq!(
        s["workload"]["storage"],
        json!({"size": "10Gi", "mountPath": "/.llama"})
    );
    assert_eq!(s["networking"]["tls"]["caBundle"]["configMapName"], "ca");
    assert_eq!(s["workload"]["autoscaling"]["maxReplicas"], 3);
    assert_eq!(s["workload"]["workers"], 3);
    assert_eq!(
        s["workload"]["podDisruptionBudget"],
        json!({"maxUnavailable": 1})
    );
    assert_eq!(s["networking"]["expose"], true);
    assert_eq!(s["networking"]["allowedFrom"]["namespaces"], json!(["*"]));
    assert_eq!(s["externalProviders"]["safety"][0]["providerId"], "p");
    assert_eq!(s["workload"]["rollback"], "Never");
    let carried: Value = serde_json::from_str(
        v2["metadata"]["annotations"][V1ALPHA1_FIELDS]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        carried,
        json!({"containerName": "server", "userConfigNamespace": "other"})
    );
    assert_eq!(
        v2["metadata"]["annotations"]["note"], "x",
        "other annotations stay"
    );
}

#[test]
fn v1alpha2_only_fields_ride_in_the_annotation() {
    let v1 = convert(&full_v2(), "llamastack.io/v1alpha1").unwrap();
    assert_eq!(
        v1["spec"]["network"],
        json!({"allowedFrom": {"namespaces": ["a"]}}),
        "the object form of expose cannot be exposeRoute"
    );
    let carried: Value = serde_json::from_str(
        v1["metadata"]["annotations"][V1ALPHA2_FIELDS]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    for key in ["providers", "resources", "storage", "disabled"] {
        assert!(
            carried["spec"].get(key).is_some(),
            "{key} missing from {carried}"
        );
    }
    assert_eq!(
        carried["spec"]["networking"],
        json!({"tls": {"enabled": true, "secretName": "t"}, "expose": {"hostname": "h.example.com", "ingressClassName": "nginx", "tlsSecretName": "h-cert"}})
    );
    assert_eq!(
        carried["status"]["resolvedDistribution"]["configSource"],
        "oci-label"
    );
    assert_eq!(v1["spec"]["server"]["rollback"], "Automatic");
    assert_eq!(carried["spec"]["workload"]["progressDeadlineSeconds"], 120);
    assert_eq!(
        carried["status"]["rollback"]["rejected"]["desiredHash"],
        "h2"
    );
    assert_eq!(
        v1["status"],
        json!({"phase": "Ready", "availableReplicas": 1})
    );
}

#[test]
fn full_objects_round_trip() {
    let v1 = full_v1();
    assert_eq!(
        convert(
            &convert(&v1, "llamastack.io/v1alpha2").unwrap(),
            "llamastack.io/v1alpha1"
        )
        .unwrap(),
        v1
    );
    let v2 = full_v2();
    assert_eq!(
        convert(
            &convert(&v2, "llamastack.io/v1alpha1").unwrap(),
            "llamastack.io/v1alpha2"
        )
        .unwrap(),
        v2
    );
}

#[test]
fn bad_input_is_an_error() {
    assert!(
        convert(
            &json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            "llamastack.io/v1alpha2"
        )
        .is_err()
    );
    let mut v1 = full_v1();
    v1["metadata"]["annotations"][V1ALPHA2_FIELDS] = json!("{not json");
    let err = convert(&v1, "llamastack.io/v1alpha2").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("annotation llamastack.io/v1alpha2-fields is not valid JSON"),
        "{err}"
    );
}

/// A random sub-tree of `v`: every object key is kept or dropped (apiVersion/kind/metadata.name kept).
fn prune(v: &Value, bits: &mut impl Iterator<Item = bool>, depth: usize) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, child) in map {
                let fixed = depth == 0 && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                if !fixed && !bits.next().unwrap_or(true) {
                    continue;
                }
                let child = if k == "metadata" {
                    child.clone()
                } else {
                    prune(child, bits, depth + 1)
                };
                out.insert(k.clone(), child);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn v1alpha1_to_v1alpha2_and_back_is_identity(bits in proptest::collection::vec(any::<bool>(), 200)) {
        let v1 = prune(&full_v1(), &mut bits.into_iter(), 0);
        let back = convert(&convert(&v1, "llamastack.io/v1alpha2").unwrap(), "llamastack.io/v1alpha1").unwrap();
        prop_assert_eq!(back, v1);
    }

    #[test]
    fn v1alpha2_to_v1alpha1_and_back_is_identity(bits in proptest::collection::vec(any::<bool>(), 200)) {
        let v2 = prune(&full_v2(), &mut bits.into_iter(), 0);
        let back = convert(&convert(&v2, "llamastack.io/v1alpha1").unwrap(), "llamastack.io/v1alpha2").unwrap();
        prop_assert_eq!(back, v2);
    }
}
