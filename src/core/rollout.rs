//! Pure judgement of a rollout from the Deployment and its Pods: whether it is complete, and
//! when it is not, whether something a person must fix stops it (a crash-looping server, an
//! image that cannot be pulled, a container kubelet cannot create, a stalled rollout).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::ResourceExt;

use crate::api::conditions::Reason;

/// The reasons of a rollout that cannot finish until a person acts: they fail the phase and make
/// a Warning Event, although `DeploymentReady` is otherwise False during every rollout.
pub const TROUBLE: [Reason; 5] = [
    Reason::ServerCrashLooping,
    Reason::InitContainerCrashLooping,
    Reason::ImagePullFailed,
    Reason::ContainerCreateFailed,
    Reason::RolloutStalled,
];

/// A stack as the metrics count it: its phase (`Pending` before the first status), and the
/// reason its rollout is stuck, if it is one of [`TROUBLE`].
pub fn gauge_state(cr: &crate::api::v1alpha2::LlamaStackDistribution) -> (String, Option<String>) {
    let status = cr.status.as_ref();
    let phase = status.and_then(|s| s.phase).unwrap_or_default();
    let phase = serde_json::to_value(phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "Pending".to_owned());
    let conditions = status.map(|s| s.all_conditions()).unwrap_or_default();
    let stuck = conditions
        .iter()
        .find(|c| c.type_ == "DeploymentReady" && c.status == "False")
        .map(|c| c.reason.clone())
        .filter(|reason| TROUBLE.iter().any(|t| t.as_str() == reason));
    (phase, stuck)
}

/// The longest container message quoted in a condition.
const MESSAGE_LIMIT: usize = 256;

/// What stops a rollout, for `DeploymentReady` (False) and a Warning Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trouble {
    /// Why, as a condition reason.
    pub reason: Reason,
    /// What happened and where to look, bounded; never a secret value (only kubelet's and the
    /// container runtime's words, the exit code and the container's termination message).
    pub message: String,
}

/// Whether the Deployment's newest revision has all the replicas it wants, available, and no
/// Pod of an older revision is left (what `kubectl rollout status` waits for).
pub fn complete(deployment: &Deployment) -> bool {
    let desired = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let Some(status) = deployment.status.as_ref() else {
        return false;
    };
    let observed =
        status.observed_generation.unwrap_or(0) >= deployment.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    observed
        && updated >= desired
        && status.replicas.unwrap_or(0) <= updated
        && status.available_replicas.unwrap_or(0) >= desired
}

/// The first problem that stops the rollout, from the Deployment's Progressing condition and
/// the waiting containers of its Pods.
pub fn trouble(deployment: &Deployment, pods: &[Pod]) -> Option<Trouble> {
    pods.iter()
        .find_map(pod_trouble)
        .or_else(|| stalled(deployment))
}

/// The Deployment's own verdict that the rollout made no progress in its deadline.
pub fn stalled(deployment: &Deployment) -> Option<Trouble> {
    let progressing = deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Progressing")?;
    (progressing.status == "False"
        && progressing.reason.as_deref() == Some("ProgressDeadlineExceeded"))
    .then(|| Trouble {
        reason: Reason::RolloutStalled,
        message: format!(
            "the rollout made no progress within the Deployment's progressDeadlineSeconds: {}",
            bounded(progressing.message.as_deref().unwrap_or_default())
        ),
    })
}

/// Whether a Pod waits for a node (the scheduler found none with room): the revision has not
/// failed to start, the cluster lacks capacity, and returning to another revision would not
/// make room.
pub fn waiting_for_node(pods: &[Pod]) -> bool {
    pods.iter()
        .filter_map(pod_trouble)
        .any(|t| t.reason == Reason::PodUnschedulable)
}

fn pod_trouble(pod: &Pod) -> Option<Trouble> {
    let status = pod.status.as_ref()?;
    let unschedulable = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    if let Some(condition) = unschedulable {
        return Some(Trouble {
            reason: Reason::PodUnschedulable,
            message: format!(
                "Pod {} cannot be scheduled: {}",
                pod.name_any(),
                bounded(condition.message.as_deref().unwrap_or_default())
            ),
        });
    }
    let init = status
        .init_container_statuses
        .iter()
        .flatten()
        .map(|c| (c, true));
    let main = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| (c, false));
    init.chain(main)
        .filter_map(|(c, init)| container_trouble(&pod.name_any(), c, init))
        .next()
}

/// What stops `container` (an init container when `init`) of `pod`, if anything.
fn container_trouble(pod: &str, container: &ContainerStatus, init: bool) -> Option<Trouble> {
    let state = container.state.as_ref()?;
    if state.running.is_some() && restarted_after_failing(container, init) {
        return Some(crash_loop(pod, container, init));
    }
    let waiting = state.waiting.as_ref()?;
    let why = waiting.reason.as_deref()?;
    let said = bounded(waiting.message.as_deref().unwrap_or_default());
    let name = &container.name;
    match why {
        "CrashLoopBackOff" => Some(crash_loop(pod, container, init)),
        "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" => Some(Trouble {
            reason: Reason::ImagePullFailed,
            message: format!(
                "container {name} of Pod {pod} cannot pull {}: {why}: {said}. Check that a pull secret of the \
                 stack's ServiceAccount covers the registry",
                container.image
            ),
        }),
        "CreateContainerConfigError" | "CreateContainerError" => Some(Trouble {
            reason: Reason::ContainerCreateFailed,
            message: format!("container {name} of Pod {pod} cannot be created: {why}: {said}"),
        }),
        _ => None,
    }
}

/// Whether `container` has failed to start more than once and is starting again: the crash
/// loop between two back-offs. kubelet restarts a container at once after its first exit and
/// says `CrashLoopBackOff` only while it waits before a later restart (10 s, then 20 s, …);
/// a look on the rollout's clock mostly falls between those waits while a slow server starts
/// again, so the verdict is taken from the restarts instead. One failure is not a loop (a
/// database not up yet); a server that started since (its startup probe passed) is not
/// starting, whatever its readiness says. An init container (`init`) that runs again is still
/// trying: it has no startup probe, and its work ends when it exits.
fn restarted_after_failing(container: &ContainerStatus, init: bool) -> bool {
    let failed = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code != 0);
    let starting = init || !container.started.unwrap_or(container.ready);
    container.restart_count >= 2 && failed && starting
}

/// The crash loop of `container` (an init container when `init`) of `pod`.
fn crash_loop(pod: &str, container: &ContainerStatus, init: bool) -> Trouble {
    let name = &container.name;
    let last = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref());
    let exit = last.map_or_else(|| "?".to_owned(), |t| t.exit_code.to_string());
    let note = last
        .and_then(|t| t.message.as_deref())
        .map(|m| format!("; its last words: {}", bounded(m)))
        .unwrap_or_default();
    let (reason, what, consequence) = if init {
        (
            Reason::InitContainerCrashLooping,
            "init container",
            " so the server never starts in it",
        )
    } else {
        (Reason::ServerCrashLooping, "container", "")
    };
    Trouble {
        reason,
        message: format!(
            "{what} {name} of Pod {pod} keeps exiting (exit code {exit}, {} restarts){consequence}{note}; \
             Pods of a previous revision, if any, keep serving. See `kubectl logs {pod} -c {name} --previous`",
            container.restart_count
        ),
    }
}

/// The image of the server container of `d`.
pub fn image_of(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// The ConfigMap `d` mounts as the server's config (empty when the image runs its own).
pub fn config_of(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| {
            v.iter().find(|v| {
                v.name
                    .trim_start_matches(crate::core::builders::user_parts::RENAMED_PREFIX)
                    == crate::naming::volumes::CONFIG
            })
        })
        .and_then(|v| v.config_map.as_ref())
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

/// At most [`MESSAGE_LIMIT`] bytes of `text`, on one line.
fn bounded(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() <= MESSAGE_LIMIT {
        return line;
    }
    let mut end = MESSAGE_LIMIT;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn deployment(spec_replicas: i32, status: Value) -> Deployment {
        serde_json::from_value(json!({"metadata": {"name": "s", "generation": 2},
            "spec": {"replicas": spec_replicas, "selector": {}, "template": {}}, "status": status}))
        .unwrap()
    }

    fn pod(name: &str, statuses: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "status": {"containerStatuses": statuses}}),
        )
        .unwrap()
    }

    #[test]
    fn a_rollout_is_complete_only_when_no_old_pod_is_left_and_the_new_ones_are_available() {
        let done = json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1});
        assert!(complete(&deployment(1, done.clone())));
        // The new Pod exists but crashes; the old one is the available one.
        let old_serving = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1});
        assert!(!complete(&deployment(1, old_serving)));
        let stale = json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1});
        assert!(
            !complete(&deployment(1, stale)),
            "status of the previous generation"
        );
        assert!(!complete(&deployment(1, json!({}))));
    }

    #[test]
    fn a_crash_loop_names_the_container_exit_code_and_restarts() {
        let p = pod(
            "s-abc",
            json!([{"name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
            "lastState": {"terminated": {"exitCode": 1, "message": "provider remote::nope is not known"}}}]),
        );
        let t = trouble(&deployment(1, json!({})), &[p]).unwrap();
        assert_eq!(t.reason, Reason::ServerCrashLooping);
        for part in [
            "llama-stack",
            "s-abc",
            "exit code 1",
            "3 restarts",
            "remote::nope",
            "--previous",
        ] {
            assert!(t.message.contains(part), "{part} in {}", t.message);
        }
    }

    #[test]
    fn a_crash_loop_is_seen_between_back_offs_while_the_server_starts_again() {
        // Between two back-offs kubelet reports the restarted container as running: a look then
        // must still see the loop (the real node's rollback tests missed every window once on a
        // slow machine).
        let again = |restarts: i32, exit: i32, started: bool| {
            pod(
                "s-abc",
                json!([{"name": "llama-stack", "image": "i", "imageID": "", "ready": false, "started": started,
                "restartCount": restarts, "state": {"running": {"startedAt": "2026-11-28T16:00:00Z"}},
                "lastState": {"terminated": {"exitCode": exit, "message": "max_tokens: not a number"}}}]),
            )
        };
        let t = trouble(&deployment(1, json!({})), &[again(2, 1, false)]).unwrap();
        assert_eq!(t.reason, Reason::ServerCrashLooping);
        assert!(
            t.message.contains("exit code 1") && t.message.contains("2 restarts"),
            "{}",
            t.message
        );
        assert_eq!(
            trouble(&deployment(1, json!({})), &[again(1, 1, false)]),
            None,
            "one failure is not a loop (a database not up yet)"
        );
        assert_eq!(
            trouble(&deployment(1, json!({})), &[again(2, 1, true)]),
            None,
            "started since (not ready for a moment, or an old Pod stopping): not starting"
        );
        assert_eq!(
            trouble(&deployment(1, json!({})), &[again(2, 0, false)]),
            None,
            "a clean exit (a restart it asked for) is not a crash"
        );
        let init: Pod = serde_json::from_value(json!({"metadata": {"name": "s-abc"}, "status": {
            "initContainerStatuses": [{"name": "install-provider-acme", "image": "i", "imageID": "", "ready": false,
                "started": true, "restartCount": 2, "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 2}}}]}}))
        .unwrap();
        assert_eq!(
            trouble(&deployment(1, json!({})), &[init]).map(|t| t.reason),
            Some(Reason::InitContainerCrashLooping)
        );
    }

    #[test]
    fn a_crash_looping_init_container_is_not_called_the_server() {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "s-abc"}, "status": {
            "initContainerStatuses": [{"name": "install-provider-acme", "image": "i", "imageID": "", "ready": false,
                "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "message": "no wheel in /provider"}}}],
            "containerStatuses": [{"name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "PodInitializing"}}}]}}))
        .unwrap();
        let t = trouble(&deployment(1, json!({})), &[p]).unwrap();
        assert_eq!(t.reason, Reason::InitContainerCrashLooping);
        for part in [
            "init container install-provider-acme",
            "s-abc",
            "exit code 1",
            "2 restarts",
            "the server never starts",
            "no wheel in /provider",
            "-c install-provider-acme --previous",
        ] {
            assert!(t.message.contains(part), "{part} in {}", t.message);
        }
        assert!(TROUBLE.contains(&t.reason), "it needs a person");
    }

    #[test]
    fn pull_and_create_failures_are_told_apart_and_healthy_pods_are_not_trouble() {
        let pull = pod(
            "s-1",
            json!([{"name": "llama-stack", "image": "reg/x@sha256:1", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "401 Unauthorized"}}}]),
        );
        let t = trouble(&deployment(1, json!({})), &[pull]).unwrap();
        assert_eq!(t.reason, Reason::ImagePullFailed);
        assert!(
            t.message.contains("reg/x@sha256:1")
                && t.message.contains("401 Unauthorized")
                && t.message.contains("pull secret")
        );
        let create = pod(
            "s-2",
            json!([{"name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "CreateContainerConfigError", "message": "secret \"k\" not found"}}}]),
        );
        assert_eq!(
            trouble(&deployment(1, json!({})), &[create])
                .unwrap()
                .reason,
            Reason::ContainerCreateFailed
        );
        let starting = pod(
            "s-3",
            json!([{"name": "llama-stack", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}}]),
        );
        assert_eq!(trouble(&deployment(1, json!({})), &[starting]), None);
    }

    #[test]
    fn an_unschedulable_pod_is_reported_but_is_not_a_failure() {
        let pending: Pod = serde_json::from_value(
            json!({"metadata": {"name": "s-4"}, "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient cpu."}]}}),
        )
        .unwrap();
        let t = trouble(&deployment(1, json!({})), &[pending]).unwrap();
        assert_eq!(t.reason, Reason::PodUnschedulable);
        assert!(t.message.contains("Insufficient cpu"), "{}", t.message);
        assert!(
            !TROUBLE.contains(&t.reason),
            "a cluster autoscaler may still add a node"
        );
    }

    #[test]
    fn the_gauges_see_the_phase_and_only_rollouts_a_person_must_fix() {
        let cr = |status: Value| -> crate::api::v1alpha2::LlamaStackDistribution {
            serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
                "metadata": {"name": "s"}, "spec": {"distribution": {"name": "starter"}}, "status": status}))
            .unwrap()
        };
        let condition = |reason: &str| {
            json!([{"type": "DeploymentReady", "status": "False", "reason": reason,
            "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}])
        };
        assert_eq!(gauge_state(&cr(json!({}))), ("Pending".to_owned(), None));
        assert_eq!(
            gauge_state(&cr(
                json!({"phase": "Failed", "conditions": condition("ImagePullFailed")})
            )),
            ("Failed".to_owned(), Some("ImagePullFailed".to_owned()))
        );
        assert_eq!(
            gauge_state(&cr(
                json!({"phase": "Initializing", "conditions": condition("DeploymentScaling")})
            )),
            ("Initializing".to_owned(), None),
            "an ordinary rollout is not stuck"
        );
    }

    #[test]
    fn a_stalled_rollout_is_reported_and_long_messages_are_cut() {
        let stalled = deployment(
            1,
            json!({"conditions": [{"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "x".repeat(5000)}]}),
        );
        let t = trouble(&stalled, &[]).unwrap();
        assert_eq!(t.reason, Reason::RolloutStalled);
        assert!(t.message.len() < 400, "{} bytes", t.message.len());
    }
}
