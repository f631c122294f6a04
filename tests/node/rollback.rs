//! Automatic rollback on the real node: a stack with storage rolls with `Recreate`, so while a
//! new revision starts nothing else serves. A config the server rejects must not leave it down.

use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::support::node_stack::slim_spec;
use super::{
    Env, condition, eventually, provider_ids, registry_host, service_address, wait_for_reason,
};

/// A hostPath PersistentVolume of `capacity` for the claim `ns/claim` (a cluster without a
/// provisioner needs one made); returns its directory on this machine.
pub(super) fn host_path_volume(
    env: &Env,
    ns: &str,
    claim: &str,
    capacity: &str,
) -> Result<std::path::PathBuf, Failed> {
    let dir = env.work.path().join(format!("pv-{ns}"));
    std::fs::create_dir_all(&dir)?;
    // The server runs as an unprivileged user, and fsGroup does not reach a hostPath volume.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": format!("pv-{ns}")},
        "spec": {"capacity": {"storage": capacity}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
            "claimRef": {"namespace": ns, "name": claim},
            "hostPath": {"path": dir.display().to_string(), "type": "Directory"}}});
    env.kubectl(&["create", "-f", "-"], Some(&pv.to_string()))?;
    Ok(dir)
}

/// How long a held rollback is watched for a retry of the rejected revision (longer than the
/// reconciles a status write, an annotation and the rollout requeue cause).
const HOLD: Duration = Duration::from_secs(20);

/// Creates `ns/name` with a data volume (a hostPath PersistentVolume made for it, as a cluster
/// without a provisioner needs), inference provider `id` and the spec fields of `extra`, after
/// the namespaced `objects` it refers to; returns its Service address once it serves.
fn stack_with_storage(
    env: &Env,
    ns: &str,
    name: &str,
    id: &str,
    extra: Value,
    objects: &[Value],
) -> Result<String, Failed> {
    env.namespace(ns, registry_host(&env.images.base64))?;
    for object in objects {
        let mut object = object.clone();
        object["metadata"]["namespace"] = json!(ns);
        env.kubectl(&["create", "-f", "-"], Some(&object.to_string()))?;
    }
    host_path_volume(env, ns, &format!("{name}-pvc"), "10Gi")?;
    let mut spec = slim_spec(&env.images.base64, id);
    spec["workload"]["storage"] = json!({});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    env.create_v1alpha2(ns, name, spec)?;
    env.wait_ready(ns, name)?;
    let address = service_address(env, ns, name)?;
    assert_eq!(provider_ids(&address)?, [id]);
    Ok(address)
}

/// Switches `ns/name` to the ConfigMap the server rejects.
fn apply_rejected_config(env: &Env, ns: &str, name: &str, extra: Value) -> Result<(), Failed> {
    let mut change = json!({"spec": {"providers": null, "disabled": null,
        "overrideConfig": {"configMapName": "rejected"}}});
    if let (Some(change), Value::Object(extra)) = (change["spec"].as_object_mut(), extra) {
        change.extend(extra);
    }
    env.patch_llsd(ns, name, &change)
}

/// The ConfigMap the Deployment's Pods mount as their config, and its desired hash.
fn deployed(env: &Env, ns: &str, name: &str) -> Result<(String, String), Failed> {
    let d = env.json(&["get", "deployment", name, "-n", ns])?;
    let config = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "config")
        .map(|v| {
            v["configMap"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_default();
    let hash = d["metadata"]["annotations"]["llamastack.io/desired-hash"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((config, hash))
}

/// Waits for the Deployment to carry the rejected ConfigMap (the operator applied it).
fn wait_deployed_rejected(env: &Env, ns: &str, name: &str) -> Result<(), Failed> {
    eventually("the rejected config in the Deployment", || {
        Ok(deployed(env, ns, name)?.0 == "rejected")
    })
}

/// Checks the status and Events of a stack rolled back from the rejected config, and that the
/// rejected revision is not tried again; returns when the last Ready revision served again.
fn rolled_back_and_held(
    env: &Env,
    ns: &str,
    name: &str,
    address: &str,
    serving: &str,
) -> Result<Instant, Failed> {
    let status = wait_for_reason(env, ns, name, "DeploymentUpdated", "RolledBack")?;
    let rejected = &status["rollback"]["rejected"];
    assert_eq!(rejected["configMap"], "rejected", "{status}");
    assert_eq!(rejected["reason"], "ServerCrashLooping", "{status}");
    let last_ready = &status["rollback"]["lastReady"];
    assert_ne!(last_ready["configMap"], "rejected", "{status}");
    let message = condition(&status, "DeploymentUpdated")["message"].to_string();
    assert!(
        message.contains("rejected")
            && message.contains(last_ready["configMap"].as_str().unwrap_or("?")),
        "{message}"
    );
    eventually("the last Ready config serving again", || {
        Ok(provider_ids(address).is_ok_and(|ids| ids == [serving]))
    })?;
    let served = Instant::now();
    let status = env.json(&["get", "llsd", name, "-n", ns])?["status"].clone();
    assert_eq!(
        status["phase"], "Failed",
        "the spec's revision does not run: {status}"
    );
    let events = env.events(ns, "RolledBack")?;
    assert!(events.contains("Warning"), "a Warning Event: {events}");
    // A reconcile without a spec change (an annotation) must not try the rejected revision again.
    env.kubectl(
        &["annotate", "llsd", name, "-n", ns, "--overwrite", "poke=1"],
        None,
    )?;
    let until = Instant::now() + HOLD;
    while Instant::now() < until {
        let (config, hash) = deployed(env, ns, name)?;
        assert_ne!(config, "rejected", "the rejected revision was tried again");
        assert_eq!(hash, last_ready["desiredHash"].as_str().unwrap_or("?"));
        std::thread::sleep(Duration::from_secs(2));
    }
    assert_eq!(provider_ids(address)?, [serving]);
    Ok(served)
}

/// A ConfigMap `name` holding one self-signed CA certificate under `ca.pem`.
fn ca_config_map(name: &str) -> Result<Value, Failed> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let pem = params.self_signed(&KeyPair::generate()?)?.pem();
    Ok(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"ca.pem": pem}}),
    )
}

/// `networking.tls.caBundle` from the ConfigMap `name`.
fn ca_bundle(name: &str) -> Value {
    json!({"networking": {"tls": {"caBundle": {"configMapName": name, "configMapKeys": ["ca.pem"]}}}})
}

/// The managed CA bundle ConfigMap the Deployment's Pods mount, and its certificates.
fn mounted_ca_bundle(env: &Env, ns: &str, name: &str) -> Result<(String, String), Failed> {
    let d = env.json(&["get", "deployment", name, "-n", ns])?;
    let bundle = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "ca-bundle")
        .and_then(|v| v["configMap"]["name"].as_str())
        .ok_or("the Pods mount a CA bundle")?
        .to_owned();
    let cm = env.json(&["get", "configmap", &bundle, "-n", ns])?;
    let pem = cm["data"]["ca-bundle.crt"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((bundle, pem))
}

/// With storage (so `Recreate`: nothing serves while the new revision starts), a config the
/// server rejects is rolled back without a person, and held back, with the CA bundle the last
/// Ready revision had (the rejected change brought another one); a fixed config then rolls
/// forward; with `rollback: Never` the crash loop stays for a person.
pub fn a_rejected_config_on_storage_rolls_back_then_forward_and_never_means_never(
    env: &Env,
) -> Result<(), Failed> {
    let (ns, name) = ("e2e-rollback", "keep");
    let objects = [ca_config_map("ca-a")?, ca_config_map("ca-b")?];
    let address = stack_with_storage(env, ns, name, "vllm-good", ca_bundle("ca-a"), &objects)?;
    env.create_rejected_config(ns, "rejected")?;
    let (bundle_a, served_pem) = mounted_ca_bundle(env, ns, name)?;
    assert_eq!(served_pem.matches("BEGIN CERTIFICATE").count(), 1);

    let started = Instant::now();
    apply_rejected_config(env, ns, name, ca_bundle("ca-b"))?;
    wait_deployed_rejected(env, ns, name)?;
    let (bundle_b, _) = mounted_ca_bundle(env, ns, name)?;
    assert_ne!(bundle_b, bundle_a, "another bundle is another object");
    let served = rolled_back_and_held(env, ns, name, &address, "vllm-good")?;
    eprintln!(
        "rollback: {:?} from applying the rejected config to the last Ready revision serving again",
        served - started
    );
    // The last Ready revision is back with its own bundle, as it was: the rejected change's
    // bundle did not replace it in place.
    assert_eq!(
        mounted_ca_bundle(env, ns, name)?,
        (bundle_a, served_pem),
        "the Ready revision's CA bundle, unchanged"
    );

    env.patch_llsd(
        ns,
        name,
        &json!({"spec": {"overrideConfig": null, "disabled": slim_spec("", "")["disabled"],
            "providers": {"inference": {"id": "vllm-fixed", "provider": "vllm", "endpoint": "http://10.88.0.1:9/v1"}}}}),
    )?;
    eventually("the fixed config serving", || {
        Ok(provider_ids(&address).is_ok_and(|ids| ids == ["vllm-fixed"]))
    })?;
    let status = env.wait_ready(ns, name)?["status"].clone();
    assert!(
        status["rollback"]["rejected"].is_null(),
        "the rejection is lifted: {status}"
    );
    assert_eq!(
        condition(&status, "DeploymentUpdated")["status"],
        "True",
        "{status}"
    );

    apply_rejected_config(env, ns, name, json!({"workload": {"rollback": "Never"}}))?;
    let status = wait_for_reason(env, ns, name, "DeploymentReady", "ServerCrashLooping")?;
    assert_eq!(status["phase"], "Failed");
    let until = Instant::now() + HOLD;
    while Instant::now() < until {
        let (config, _) = deployed(env, ns, name)?;
        assert_eq!(
            config, "rejected",
            "Never: the operator left the revision alone"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let status = env.json(&["get", "llsd", name, "-n", ns])?["status"].clone();
    assert_ne!(
        condition(&status, "DeploymentUpdated")["reason"],
        "RolledBack",
        "{status}"
    );
    env.kubectl(&["delete", "namespace", ns, "--wait=false"], None)?;
    Ok(())
}

/// The rollback memory is in the cluster: an operator stopped after it applied a rejected
/// config, and started again once the new Pod crash-loops, still returns to the last Ready
/// revision.
pub fn an_operator_restarted_mid_crash_loop_still_rolls_back(env: &Env) -> Result<(), Failed> {
    let (ns, name) = ("e2e-rollback-restart", "keep");
    let address = stack_with_storage(env, ns, name, "vllm-before", json!({}), &[])?;
    env.create_rejected_config(ns, "rejected")?;
    apply_rejected_config(env, ns, name, json!({}))?;
    wait_deployed_rejected(env, ns, name)?;
    env.stop_operator();
    eventually("the new Pod crash-looping", || {
        let pods = env.stack_pods(ns, name)?;
        Ok(Value::Array(pods).to_string().contains("CrashLoopBackOff"))
    })?;
    eventually("nothing serving while the operator is away", || {
        Ok(provider_ids(&address).is_err())
    })?;
    env.restart_operator()?;
    rolled_back_and_held(env, ns, name, &address, "vllm-before")?;
    env.kubectl(&["delete", "namespace", ns, "--wait=false"], None)?;
    Ok(())
}
