//! Storage added to a running `OGXServer` on the real node, as the OGX operator's
//! `TestRolloutWithStorage` does it: the claim is made, bound and mounted, the server writes its
//! stores there, the next change rolls out, and a write the API server refuses is never
//! reported as served.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::{
    Env, condition, eventually, registry_host, served_version, service_address, wait_phase_ready,
};

/// The OGX operator's sample `ogxserver-without-userconfig`
/// (tests/fixtures/ogx-operator/example-withoutconfigmap.yaml), in `ns`, as `name`, without its
/// Ollama variables (nothing answers there) and with small requests; returns it and the storage
/// it asks for, taken out to be added later.
fn sample_without_its_storage(ns: &str, name: &str) -> Result<(Value, Value), Failed> {
    let text = std::fs::read_to_string(
        super::support::workspace_root()
            .join("tests/fixtures/ogx-operator/example-withoutconfigmap.yaml"),
    )?;
    let mut server: Value = serde_saphyr::from_multiple::<Value>(&text)?.remove(0);
    server["metadata"] = json!({"name": name, "namespace": ns});
    let workload = &mut server["spec"]["workload"];
    let storage = workload["storage"].take();
    *workload = json!({"resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}});
    Ok((server, storage))
}

/// The stack's Pods that are not being deleted.
fn live_pods(env: &Env, ns: &str, name: &str) -> Result<Vec<Value>, Failed> {
    let pods = env.stack_pods(ns, name)?;
    Ok((pods.into_iter())
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect())
}

/// The claims the stack's live Pods mount.
fn mounted_claims(env: &Env, ns: &str, name: &str) -> Result<Vec<String>, Failed> {
    let mut claims = Vec::new();
    for pod in live_pods(env, ns, name)? {
        for volume in pod["spec"]["volumes"].as_array().into_iter().flatten() {
            if let Some(claim) = volume["persistentVolumeClaim"]["claimName"].as_str() {
                claims.push(claim.to_owned());
            }
        }
    }
    Ok(claims)
}

/// Whether the stack's live Pods all run with `var` in their environment (and there is one).
fn pods_have_env(env: &Env, ns: &str, name: &str, var: &str) -> Result<bool, Failed> {
    let live = live_pods(env, ns, name)?;
    Ok(!live.is_empty()
        && live.iter().all(|p| {
            (p["spec"]["containers"][0]["env"]
                .as_array()
                .into_iter()
                .flatten())
            .any(|e| e["name"] == var)
        }))
}

/// A ValidatingAdmissionPolicy (and its binding) refusing every Deployment write in `ns` whose
/// Pod template sets `REFUSED_BY_POLICY`: a write the API server refuses, as a cluster's own
/// policy (Gatekeeper, Kyverno, a quota) would.
fn refusing_policy(ns: &str) -> [Value; 2] {
    let name = format!("refuse-marked-deployments-{ns}");
    [
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "validations": [{"expression":
                    "!object.spec.template.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'REFUSED_BY_POLICY'))",
                    "message": "the cluster's policy refuses REFUSED_BY_POLICY"}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}}),
    ]
}

/// A merge patch of `OGXServer` `ns/name`.
pub(super) fn patch_server(env: &Env, ns: &str, name: &str, patch: &Value) -> Result<(), Failed> {
    let patch = patch.to_string();
    let args = [
        "patch",
        "ogxserver",
        name,
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        &patch,
    ];
    env.kubectl(&args, None)?;
    Ok(())
}

fn patch_env(env: &Env, ns: &str, name: &str, vars: Value) -> Result<(), Failed> {
    let patch = json!({"spec": {"workload": {"overrides": {"env": vars}}}});
    patch_server(env, ns, name, &patch)
}

pub(super) fn storage_added_to_a_running_ogx_server_is_mounted_and_a_refused_write_is_not_ready(
    env: &Env,
) -> Result<(), Failed> {
    let (ns, name) = ("e2e-ogx-storage", "grows");
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let (server, storage) = sample_without_its_storage(ns, name)?;
    assert_eq!(storage["size"], "10Gi", "the sample's own storage");
    // No provisioner on this node: a hostPath volume made for the claim the operator will make.
    let dir = super::rollback::host_path_volume(env, ns, &format!("{name}-pvc"), "10Gi")?;
    env.kubectl(&["create", "-f", "-"], Some(&server.to_string()))?;
    wait_phase_ready(env, "ogxserver", ns, name)?;
    assert_eq!(mounted_claims(env, ns, name)?, Vec::<String>::new());

    // Storage added to the running server: Recreate replaces the defaulted rolling update, and
    // the new Pod mounts the claim and writes the server's stores on it.
    patch_server(
        env,
        ns,
        name,
        &json!({"spec": {"workload": {"storage": storage}}}),
    )?;
    eventually("the new Pod mounting the claim", || {
        Ok(mounted_claims(env, ns, name)? == [format!("{name}-pvc")])
    })?;
    let ready = wait_phase_ready(env, "ogxserver", ns, name)?;
    assert_eq!(
        condition(&ready["status"], "DeploymentUpdated")["status"],
        "True",
        "{}",
        ready["status"]
    );
    let strategy = env.json(&["get", "deployment", name, "-n", ns])?["spec"]["strategy"].clone();
    assert_eq!(
        strategy,
        json!({"type": "Recreate"}),
        "one writer per volume"
    );
    eventually("the server's stores on the volume", || {
        Ok(!super::adoption::files(&dir).is_empty())
    })?;
    let stores = super::adoption::files(&dir);
    eprintln!("the server wrote {stores:?} on its volume");

    // The next change rolls out.
    patch_env(
        env,
        ns,
        name,
        json!([{"name": "AFTER_STORAGE", "value": "1"}]),
    )?;
    eventually("the next change on every Pod", || {
        pods_have_env(env, ns, name, "AFTER_STORAGE")
    })?;
    wait_phase_ready(env, "ogxserver", ns, name)?;
    let address = service_address(env, ns, name)?;
    assert_eq!(served_version(&address)?, "1.3.0");

    // A change the API server refuses: the status says it is not served, the generation asked
    // for is not observed, and the running Pod keeps serving.
    for object in refusing_policy(ns) {
        env.kubectl(&["create", "-f", "-"], Some(&object.to_string()))?;
    }
    // The API server enforces a new policy once it has loaded it: a marked Deployment, tried
    // without being stored, until it is refused.
    let probe = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "probe", "namespace": ns},
        "spec": {"selector": {"matchLabels": {"app": "probe"}}, "template": {"metadata": {"labels": {"app": "probe"}},
            "spec": {"containers": [{"name": "c", "image": "probe", "env": [{"name": "REFUSED_BY_POLICY", "value": "1"}]}]}}}});
    eventually("the policy in force", || {
        let tried = env.kubectl(
            &["create", "--dry-run=server", "-f", "-"],
            Some(&probe.to_string()),
        );
        Ok(tried.is_err())
    })?;
    let refused = json!([{"name": "AFTER_STORAGE", "value": "1"}, {"name": "REFUSED_BY_POLICY", "value": "1"}]);
    patch_env(env, ns, name, refused)?;
    eventually("the change refused and said so", || {
        let status = env.json(&["get", "ogxserver", name, "-n", ns])?["status"].clone();
        Ok(condition(&status, "DeploymentUpdated")["reason"] == "ApplyFailed")
    })?;
    let stored = env.json(&["get", "ogxserver", name, "-n", ns])?;
    let status = &stored["status"];
    let updated = condition(status, "DeploymentUpdated");
    assert_eq!(updated["status"], "False", "{status}");
    let message = updated["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("refuses REFUSED_BY_POLICY"),
        "the API server's own words: {message}"
    );
    assert_ne!(status["phase"], "Ready", "{status}");
    assert_ne!(condition(status, "Ready")["status"], "True", "{status}");
    assert!(
        status["observedGeneration"].as_i64() < stored["metadata"]["generation"].as_i64(),
        "the refused generation is not observed: {status}"
    );
    assert!(!pods_have_env(env, ns, name, "REFUSED_BY_POLICY")?);
    assert_eq!(
        served_version(&address)?,
        "1.3.0",
        "the running revision serves on"
    );

    // The policy lifted, the change is applied on the next retry and the server is Ready on it.
    for object in refusing_policy(ns) {
        let kind = object["kind"].as_str().unwrap_or_default().to_lowercase();
        let object_name = object["metadata"]["name"].as_str().unwrap_or_default();
        env.kubectl(&["delete", &kind, object_name], None)?;
    }
    eventually("the refused change applied once allowed", || {
        pods_have_env(env, ns, name, "REFUSED_BY_POLICY")
    })?;
    let ready = wait_phase_ready(env, "ogxserver", ns, name)?;
    assert_eq!(
        ready["status"]["observedGeneration"],
        ready["metadata"]["generation"]
    );
    assert_eq!(mounted_claims(env, ns, name)?, [format!("{name}-pvc")]);
    Ok(())
}
