//! The OGX operator's migration on the real node: the `OGXServer` of its migration guide, with
//! its adoption annotations, over a running LlamaStackDistribution of another name that has a
//! volume. The old Pod must be gone before the volume changes hands, the new server must come
//! up on that volume, and the old Service address must reach it.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::{
    Env, condition, eventually, registry_host, served_version, service_address, wait_phase_ready,
};

/// Files in `dir` and below, as paths relative to it (what a server wrote on its volume).
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                found.push(relative.display().to_string());
            }
        }
    }
    found.sort();
    found
}

pub(super) fn an_ogx_server_adopts_the_volume_and_service_of_a_stack_of_another_name(
    env: &Env,
) -> Result<(), Failed> {
    let ns = "e2e-ogx-adopt";
    let old = "legacy";
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let requests = json!({"requests": {"cpu": "100m", "memory": "256Mi"}});
    // A volume for the old stack (a hostPath PersistentVolume, as a cluster without a
    // provisioner needs), as large as the migration guide's OGXServer asks for: its class
    // cannot grow, and the adopted claim must not be resized anyway.
    let dir = super::rollback::host_path_volume(env, ns, &format!("{old}-pvc"), "20Gi")?;
    env.create_v1alpha2(
        ns,
        old,
        json!({"distribution": {"name": "starter"},
            "workload": {"resources": requests, "storage": {"size": "10Gi"}}}),
    )?;
    env.wait_ready(ns, old)?;
    let address = service_address(env, ns, old)?;
    assert_eq!(served_version(&address)?, "1.3.0");
    let written_before = files(&dir);
    eprintln!("the old server's volume holds {written_before:?}");
    assert!(
        !written_before.is_empty(),
        "the old server wrote its stores on the volume"
    );

    // The migration guide's OGXServer, for this stack and namespace, with small requests and
    // without the Ollama variables (nothing answers there; the server starts without them).
    let text = std::fs::read_to_string(
        super::support::workspace_root()
            .join("tests/fixtures/ogx-operator/migration-guide-adoption.yaml"),
    )?;
    let mut server: Value = serde_saphyr::from_str(&text)?;
    server["metadata"]["namespace"] = json!(ns);
    for key in ["ogx.io/adopt-storage", "ogx.io/adopt-networking"] {
        server["metadata"]["annotations"][key] = json!(old);
    }
    server["spec"]["workload"]["overrides"] = Value::Null;
    server["spec"]["workload"]["resources"] = requests;
    let name = "my-server";
    env.kubectl(&["create", "-f", "-"], Some(&server.to_string()))?;
    eventually("the LlamaStackDistribution standing down", || {
        let llsd = env.json(&["get", "llsd", old, "-n", ns])?;
        Ok(condition(&llsd["status"], "ConfigGenerated")["reason"] == "AdoptedByOGXServer")
    })?;
    let ready = wait_phase_ready(env, "ogxserver", ns, name)?;
    let status = &ready["status"];
    for (type_, reason) in [
        ("StorageAdopted", "StorageAdopted"),
        ("NetworkingAdopted", "NetworkingAdopted"),
    ] {
        let c = condition(status, type_);
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str()),
            (Some("True"), Some(reason)),
            "{status}"
        );
    }
    let legacy = env.json(&["get", "deployment", old, "-n", ns])?;
    assert_eq!(
        legacy["spec"]["replicas"], 0,
        "the old stack scaled to zero"
    );
    let deployment = env.json(&["get", "deployment", name, "-n", ns])?;
    let claims: Vec<&str> = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .collect();
    assert_eq!(claims, [format!("{old}-pvc")]);
    let claim = env.json(&["get", "pvc", &format!("{old}-pvc"), "-n", ns])?;
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(
        claim["spec"]["resources"]["requests"]["storage"], "10Gi",
        "not resized"
    );
    assert!(
        claim["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    // The old address reaches the new server, which runs on the old server's files.
    assert_eq!(
        service_address(env, ns, old)?,
        address,
        "the same Service address"
    );
    assert_eq!(served_version(&address)?, "1.3.0");
    let written_after = files(&dir);
    assert!(
        written_before.iter().all(|f| written_after.contains(f)),
        "before {written_before:?}, after {written_after:?}"
    );
    // Deleting the old resource takes what it still owns, not what was taken.
    env.kubectl(&["delete", "llsd", old, "-n", ns, "--wait=true"], None)?;
    eventually("the old Deployment collected", || {
        Ok(env
            .kubectl(
                &["get", "deployment", old, "-n", ns, "--ignore-not-found"],
                None,
            )?
            .trim()
            .is_empty())
    })?;
    env.json(&["get", "pvc", &format!("{old}-pvc"), "-n", ns])?;
    assert_eq!(
        served_version(&address)?,
        "1.3.0",
        "still serving through the old address"
    );
    Ok(())
}
