//! The user's volumes, volume mounts and environment (`workload.overrides`) put into the
//! operator's Pod so that the result is always a Pod the API server accepts: no two volumes of
//! one name, no two mounts of one path in a container, no two variables of one name. Where the
//! user and the operator want the same thing, the user wins, as with the upstream operator
//! (whose user env came last, so Kubernetes took it):
//!
//! - a user mount at a path the operator mounts (its data directory `/.llama`, say) replaces the
//!   operator's mount; an operator volume no container mounts any more is dropped;
//! - a user volume named like one of the operator's keeps its name, and the operator's is renamed
//!   (`llso-<name>`) together with every mount of it;
//! - a user variable replaces the operator's variable of that name, except `PYTHONPATH` next to
//!   external providers, where the providers' packages come first and the user's path after;
//! - within the user's own lists, the last entry of a name or path wins (what the kubelet does
//!   with duplicate variables).
//!
//! Pure: typed objects in and out.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{EnvVar, PodSpec, Volume, VolumeMount};

use crate::naming::mount_path;

/// Prefix of an operator volume renamed because the user has a volume of its name.
pub const RENAMED_PREFIX: &str = "llso-";
/// The user's `PYTHONPATH`, kept under this name when it is read from a Secret or ConfigMap, so
/// that the providers' packages can come first (`$(…)` expands it).
pub const USER_PYTHONPATH: &str = "LLSO_USER_PYTHONPATH";

/// What the user adds to the Pod.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserParts<'a> {
    /// `workload.overrides.volumes`.
    pub volumes: &'a [Volume],
    /// `workload.overrides.volumeMounts` (of the server container).
    pub mounts: &'a [VolumeMount],
    /// `workload.overrides.env` (of the server container).
    pub env: &'a [EnvVar],
}

/// The last entry of each key, in the order of those last entries.
fn last_of_each<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<&T> {
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| !items[i + 1..].iter().any(|later| key(later) == key(item)))
        .map(|(_, item)| item)
        .collect()
}

/// Adds what the user adds to `pod`, built with the operator's parts alone: the server
/// container's environment (see [`merge_env`]), the user's volumes and the server container's
/// mounts (see [`merge_volumes`]). `server` is the index of the server container in
/// `pod.containers`; `providers_path` the external providers' packages, which must stay on
/// `PYTHONPATH`.
pub fn merge(pod: &mut PodSpec, server: usize, user: &UserParts, providers_path: Option<&str>) {
    if let Some(container) = pod.containers.get_mut(server) {
        let operator = container.env.take().unwrap_or_default();
        container.env = Some(merge_env(operator, user.env, providers_path));
    }
    merge_volumes(pod, server, user);
}

/// The server container's environment: the operator's, then the user's, each name once.
/// `providers_path`: the external providers' packages, which must stay on `PYTHONPATH`.
fn merge_env(operator: Vec<EnvVar>, user: &[EnvVar], providers_path: Option<&str>) -> Vec<EnvVar> {
    let user = last_of_each(user, |v| v.name.as_str());
    let user_names: BTreeSet<&str> = user.iter().map(|v| v.name.as_str()).collect();
    let mut env: Vec<EnvVar> = operator
        .into_iter()
        .filter(|v| !user_names.contains(v.name.as_str()))
        .collect();
    let value = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    for var in user {
        match (providers_path, var.name.as_str(), &var.value) {
            (Some(packages), "PYTHONPATH", Some(path)) => {
                env.push(value("PYTHONPATH", format!("{packages}:{path}")));
            }
            (Some(packages), "PYTHONPATH", None) if var.value_from.is_some() => {
                env.push(EnvVar {
                    name: USER_PYTHONPATH.to_owned(),
                    ..var.clone()
                });
                env.push(value(
                    "PYTHONPATH",
                    format!("{packages}:$({USER_PYTHONPATH})"),
                ));
            }
            _ => env.push(var.clone()),
        }
    }
    env
}

/// Adds the user's volumes and the server container's mounts to `pod` (built with the
/// operator's alone). `server` is the index of the server container in `pod.containers`.
fn merge_volumes(pod: &mut PodSpec, server: usize, user: &UserParts) {
    let user_volumes = last_of_each(user.volumes, |v| v.name.as_str());
    let user_mounts = last_of_each(user.mounts, |m| mount_path(&m.mount_path));
    let taken: BTreeSet<&str> = user_volumes.iter().map(|v| v.name.as_str()).collect();
    rename_taken_volumes(pod, &taken);
    let user_paths: BTreeSet<&str> = user_mounts
        .iter()
        .map(|m| mount_path(&m.mount_path))
        .collect();
    let server_mounts = pod
        .containers
        .get_mut(server)
        .and_then(|c| c.volume_mounts.as_mut());
    if let Some(mounts) = server_mounts {
        mounts.retain(|m| !user_paths.contains(mount_path(&m.mount_path)));
        mounts.extend(user_mounts.iter().map(|m| (*m).clone()));
    }
    drop_unmounted_operator_volumes(pod, &taken);
    if let Some(volumes) = pod.volumes.as_mut() {
        volumes.extend(user_volumes.iter().map(|v| (*v).clone()));
    }
}

/// Every container's and init container's mounts.
fn all_mounts(pod: &mut PodSpec) -> impl Iterator<Item = &mut VolumeMount> {
    pod.containers
        .iter_mut()
        .chain(pod.init_containers.iter_mut().flatten())
        .filter_map(|c| c.volume_mounts.as_mut())
        .flatten()
}

/// Renames each operator volume whose name a user volume has, and every mount of it.
fn rename_taken_volumes(pod: &mut PodSpec, taken: &BTreeSet<&str>) {
    let names: Vec<String> = pod
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.clone())
        .collect();
    for name in names.iter().filter(|n| taken.contains(n.as_str())) {
        let mut renamed = format!("{RENAMED_PREFIX}{name}");
        while taken.contains(renamed.as_str()) || names.contains(&renamed) {
            renamed.insert_str(0, RENAMED_PREFIX);
        }
        for volume in pod.volumes.iter_mut().flatten() {
            if volume.name == *name {
                volume.name.clone_from(&renamed);
            }
        }
        for mount in all_mounts(pod) {
            if mount.name == *name {
                mount.name.clone_from(&renamed);
            }
        }
    }
}

/// Drops the operator's volumes that no container mounts any more (a user mount replaced the
/// only mount of them). User volumes (`taken` names) are added after this and never dropped.
fn drop_unmounted_operator_volumes(pod: &mut PodSpec, taken: &BTreeSet<&str>) {
    let mounted: BTreeSet<String> = all_mounts(pod).map(|m| m.name.clone()).collect();
    if let Some(volumes) = pod.volumes.as_mut() {
        volumes.retain(|v| mounted.contains(&v.name) || taken.contains(v.name.as_str()));
    }
}
