//! The OGX operator's migration on the real node: the `OGXServer` of its migration guide, with
//! its adoption annotations, over a running LlamaStackDistribution of another name that has a
//! volume. The old Pod must be gone before the volume changes hands, the new server must come
//! up on that volume, and the old Service address must reach it.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::{
    Env, condition, eventually, registry_host, served_version, served_version_once_routed,
    service_address, wait_phase_ready,
};

/// Files in `dir` and below, as paths relative to it (what a server wrote on its volume).
pub(super) fn files(dir: &std::path::Path) -> Vec<String> {
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
    wait_phase_ready(env, "ogxserver", ns, name)?;
    // The address is taken once the server has an available replica: at the reconcile that
    // sees it, which may come just after the one that reported Ready.
    eventually("the old address taken", || {
        let server = env.json(&["get", "ogxserver", name, "-n", ns])?;
        Ok(condition(&server["status"], "NetworkingAdopted")["status"] == "True")
    })?;
    let ready = env.json(&["get", "ogxserver", name, "-n", ns])?;
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

/// The claims a Deployment's Pods mount.
fn mounted_claims(deployment: &Value) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .map(str::to_owned)
        .collect()
}

/// A running LlamaStackDistribution gains a volume (the switch to `Recreate` applies, the claim
/// is mounted), then moves to its `OGXServer` by the three steps of docs/ogx-server.md, run as
/// written: convert and apply, wait for Ready, delete the LlamaStackDistribution. The garbage
/// collector runs here: had the claim stayed the LlamaStackDistribution's, it would go with it.
/// Then the Pod is deleted, and the new one starts on the same claim, with the files on it.
pub(super) fn a_stack_gains_storage_then_moves_in_place_by_the_guide_and_keeps_its_volume(
    env: &Env,
) -> Result<(), Failed> {
    let (ns, name) = ("e2e-ogx-move-storage", "keeper");
    env.namespace(ns, registry_host(&env.images.ogx))?;
    let requests = json!({"requests": {"cpu": "100m", "memory": "256Mi"}});
    env.create_v1alpha2(
        ns,
        name,
        json!({"distribution": {"name": "starter"}, "workload": {"resources": requests}}),
    )?;
    env.wait_ready(ns, name)?;

    // Storage added to the running stack.
    let claim_name = format!("{name}-pvc");
    let dir = super::rollback::host_path_volume(env, ns, &claim_name, "1Gi")?;
    let storage = json!({"spec": {"workload": {"storage": {"size": "1Gi"}}}}).to_string();
    env.kubectl(
        &[
            "patch",
            "llsd",
            name,
            "-n",
            ns,
            "--type=merge",
            "-p",
            &storage,
        ],
        None,
    )?;
    eventually("the claim mounted by a Ready revision", || {
        let deployment = env.json(&["get", "deployment", name, "-n", ns])?;
        let llsd = env.json(&["get", "llsd", name, "-n", ns])?;
        let status = &deployment["status"];
        Ok(mounted_claims(&deployment) == [claim_name.clone()]
            && deployment["spec"]["strategy"]["type"] == "Recreate"
            && status["updatedReplicas"] == 1
            && status["readyReplicas"] == 1
            && status["replicas"] == 1
            && llsd["status"]["phase"] == "Ready"
            && llsd["status"]["observedGeneration"] == llsd["metadata"]["generation"])
    })?;
    let address = service_address(env, ns, name)?;
    assert_eq!(served_version_once_routed(&address)?, "1.3.0");
    let marker = dir.join("written-before-the-move");
    std::fs::write(&marker, "kept")?;
    eventually("the server's stores on the volume", || {
        Ok(files(&dir).iter().any(|f| f.ends_with(".db")))
    })?;
    let stores_before = files(&dir);
    let claim_uid = env.json(&["get", "pvc", &claim_name, "-n", ns])?["metadata"]["uid"].clone();

    // Step 1: the OGXServer `convert` writes, applied.
    let llsd = env.json(&["get", "llsd", name, "-n", ns])?;
    let stored = env.work.path().join(format!("{name}.json"));
    std::fs::write(&stored, llsd.to_string())?;
    let converted = std::process::Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args([
            "convert",
            "-f",
            &stored.to_string_lossy(),
            "--to",
            "ogx.io/v1beta1",
        ])
        .output()?;
    if !converted.status.success() {
        return Err(String::from_utf8_lossy(&converted.stderr)
            .into_owned()
            .into());
    }
    let mut manifest: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&converted.stdout))?;
    manifest["metadata"] = json!({"name": name, "namespace": ns});
    let prober = super::Prober::start(address.clone());
    let started = std::time::Instant::now();
    env.kubectl(
        &["apply", "--server-side", "-f", "-"],
        Some(&manifest.to_string()),
    )?;
    // Step 2: the OGXServer Ready.
    wait_phase_ready(env, "ogxserver", ns, name)?;
    eventually("the server Pod running the container ogx", || {
        let items = env.stack_pods(ns, name)?;
        Ok(!items.is_empty()
            && items.iter().all(|p| {
                p["spec"]["containers"][0]["name"] == "ogx"
                    && p["metadata"]["deletionTimestamp"].is_null()
            }))
    })?;
    let (ok, failed, errors) = prober.finish();
    // With a volume the Pods are replaced, not rolled (`Recreate`: one writer at a time), so the
    // move of a stack with storage has a gap: measured and shown, not hidden.
    eprintln!(
        "request log across the move with storage ({:?}): {ok} answered, {failed} failed {:?}",
        started.elapsed(),
        errors.iter().take(3).collect::<Vec<_>>()
    );
    assert!(ok > 0, "the server answered across the move");
    // Step 3: the LlamaStackDistribution deleted; the garbage collector gets its turn.
    env.kubectl(&["delete", "llsd", name, "-n", ns, "--wait=true"], None)?;
    std::thread::sleep(std::time::Duration::from_secs(20));
    let claim = env.json(&["get", "pvc", &claim_name, "-n", ns])?;
    assert!(
        claim["metadata"]["deletionTimestamp"].is_null(),
        "the claim outlives the LlamaStackDistribution: {}",
        claim["metadata"]
    );
    assert_eq!(claim["metadata"]["ownerReferences"][0]["kind"], "OGXServer");
    let config_maps = env.json(&["get", "configmaps", "-n", ns])?;
    let orphaned: Vec<&Value> = config_maps["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| !c["metadata"]["deletionTimestamp"].is_null())
        .collect();
    assert!(
        orphaned.is_empty(),
        "nothing of the server's is being deleted: {orphaned:?}"
    );

    // The Pod restarts: the new one starts on the same claim, with what was written before.
    env.kubectl(
        &[
            "delete",
            "pods",
            "-n",
            ns,
            "-l",
            &format!("app.kubernetes.io/instance={name}"),
            "--wait=true",
        ],
        None,
    )?;
    eventually("a new server Pod Ready", || {
        let deployment = env.json(&["get", "deployment", name, "-n", ns])?;
        Ok(deployment["status"]["readyReplicas"] == 1)
    })?;
    assert_eq!(served_version_once_routed(&address)?, "1.3.0");
    let claim = env.json(&["get", "pvc", &claim_name, "-n", ns])?;
    assert_eq!(claim["metadata"]["uid"], claim_uid, "the same claim");
    assert_eq!(std::fs::read_to_string(&marker)?, "kept");
    let stores_after = files(&dir);
    assert!(
        stores_before.iter().all(|f| stores_after.contains(f)),
        "before {stores_before:?}, after {stores_after:?}"
    );
    Ok(())
}
