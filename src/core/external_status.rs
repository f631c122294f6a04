//! `status.externalProviders[]` from the server Pod's init containers (pure): each provider's
//! own `install-provider-<id>` container, then the shared steps (`install-packages`,
//! `merge-config`, `preflight`). Messages come from the containers' termination messages, so the
//! operator needs no permission to read logs.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::common::{ExternalProviderPhase, ExternalProviderRef, ExternalProviderStatus};
use crate::external::install_container_name;

/// The steps every provider waits for after its own.
const SHARED_STEPS: [&str; 3] = ["install-packages", "merge-config", "preflight"];

/// Image pull failures as kubelet reports them.
const PULL_FAILURES: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// How one init container is doing.
#[derive(Debug, PartialEq)]
enum Step {
    NotStarted,
    PullFailed(String),
    Running,
    Succeeded,
    Failed(String),
}

fn step(statuses: &[ContainerStatus], name: &str) -> Step {
    let Some(status) = statuses.iter().find(|s| s.name == name) else {
        return Step::NotStarted;
    };
    let state = status.state.as_ref();
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let reason = waiting.reason.clone().unwrap_or_default();
        if PULL_FAILURES.contains(&reason.as_str()) {
            return Step::PullFailed(waiting.message.clone().unwrap_or(reason));
        }
        // A crash loop: the last run's termination message says why.
        if let Some(last) = status
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            && last.exit_code != 0
        {
            return Step::Failed(failure_text(
                name,
                last.exit_code,
                last.message.as_deref(),
                last.reason.as_deref(),
            ));
        }
        return Step::NotStarted;
    }
    if state.and_then(|s| s.running.as_ref()).is_some() {
        return Step::Running;
    }
    match state.and_then(|s| s.terminated.as_ref()) {
        Some(t) if t.exit_code == 0 => Step::Succeeded,
        Some(t) => Step::Failed(failure_text(
            name,
            t.exit_code,
            t.message.as_deref(),
            t.reason.as_deref(),
        )),
        None => Step::NotStarted,
    }
}

fn failure_text(name: &str, code: i32, message: Option<&str>, reason: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => m.to_owned(),
        None => format!(
            "Init container {name} exited with code {code} ({}) without a message; see `kubectl logs <pod> -c {name}`",
            reason.unwrap_or("Error")
        ),
    }
}

/// The phase and message of each provider, in CRD order; `previous` keeps transition times, and
/// a phase new since then changed at `now`.
pub fn provider_statuses(
    providers: &[(&str, &ExternalProviderRef)],
    pod: Option<&Pod>,
    previous: &[ExternalProviderStatus],
    now: jiff::Timestamp,
) -> Vec<ExternalProviderStatus> {
    let statuses: Vec<ContainerStatus> = pod
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.init_container_statuses.clone())
        .unwrap_or_default();
    let shared: Vec<(&str, Step)> = SHARED_STEPS
        .iter()
        .map(|n| (*n, step(&statuses, n)))
        .collect();
    providers
        .iter()
        .map(|(_, provider)| {
            let container = install_container_name(&provider.provider_id);
            let (phase, message) = match step(&statuses, &container) {
                Step::NotStarted if pod.is_none() => (ExternalProviderPhase::Pending, "Waiting for the server Pod".to_owned()),
                Step::NotStarted => (ExternalProviderPhase::Pending, format!("Waiting for init container {container}")),
                Step::PullFailed(detail) => (
                    ExternalProviderPhase::Failed,
                    format!(
                        "Failed to pull provider image {}: {detail}\n\nProvider: {}\nInit Container: {container}\n\nResolution: check the image reference, and that the registry's credentials are in an imagePullSecret of the Pod's ServiceAccount (the operator's <name>-sa copies those of the namespace's default ServiceAccount).",
                        provider.image, provider.provider_id
                    ),
                ),
                Step::Running => (ExternalProviderPhase::Installing, format!("Init container {container} is staging the provider")),
                Step::Failed(text) => (ExternalProviderPhase::Failed, text),
                Step::Succeeded => shared_outcome(&shared, &provider.provider_id),
            };
            let last_transition_time = previous
                .iter()
                .find(|p| p.provider_id == provider.provider_id && p.phase == phase)
                .and_then(|p| p.last_transition_time.clone())
                .or(Some(Time(now)));
            ExternalProviderStatus {
                provider_id: provider.provider_id.clone(),
                image: provider.image.clone(),
                phase,
                message: Some(message),
                init_container_name: Some(container),
                last_transition_time,
            }
        })
        .collect()
}

/// After its own step: Ready once every shared step succeeded; Failed when one failed naming
/// this provider (or naming none, as for a merge error); Installing otherwise.
fn shared_outcome(shared: &[(&str, Step)], provider_id: &str) -> (ExternalProviderPhase, String) {
    for (name, step) in shared {
        match step {
            Step::Succeeded => continue,
            Step::Failed(text) => {
                // Reports name their provider on a `Provider:` line; a report naming none (a
                // merge error) concerns every provider.
                let names_it = text.contains(&format!("\nProvider: {provider_id}\n"));
                let names_any = text.contains("\nProvider: ");
                if names_it || !names_any {
                    return (ExternalProviderPhase::Failed, text.clone());
                }
                return (
                    ExternalProviderPhase::Installing,
                    format!("Staged; waiting for {name}, which failed for another provider"),
                );
            }
            Step::PullFailed(detail) => {
                return (
                    ExternalProviderPhase::Failed,
                    format!(
                        "Failed to pull the distribution image for init container {name}: {detail}"
                    ),
                );
            }
            Step::Running | Step::NotStarted => {
                return (
                    ExternalProviderPhase::Installing,
                    format!("Staged; init container {name} is next"),
                );
            }
        }
    }
    (
        ExternalProviderPhase::Ready,
        "Installed and validated by preflight".to_owned(),
    )
}

/// The newest Pod (the current rollout's, as it is created last).
pub fn newest(pods: &[Pod]) -> Option<&Pod> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .max_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The instant every status here is made at.
    const AT: jiff::Timestamp = jiff::Timestamp::constant(1_764_374_400, 0);

    fn refs() -> Vec<ExternalProviderRef> {
        vec![
            serde_json::from_value(json!({"providerId": "a", "image": "reg/a:1"})).unwrap(),
            serde_json::from_value(json!({"providerId": "b", "image": "reg/b:1"})).unwrap(),
        ]
    }

    fn pod(statuses: serde_json::Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "p"}, "status": {"initContainerStatuses": statuses}}),
        )
        .unwrap()
    }

    fn cs(name: &str, state: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": state})
    }

    fn phases(list: &[ExternalProviderStatus]) -> Vec<ExternalProviderPhase> {
        list.iter().map(|s| s.phase).collect()
    }

    #[test]
    fn phases_follow_the_init_containers() {
        let r = refs();
        let providers: Vec<(&str, &ExternalProviderRef)> =
            r.iter().map(|p| ("safety", p)).collect();
        use ExternalProviderPhase::*;
        assert_eq!(
            phases(&provider_statuses(&providers, None, &[], AT)),
            [Pending, Pending]
        );
        let done = json!({"terminated": {"exitCode": 0}});
        let running = pod(json!([
            cs("copy-tools", done.clone()),
            cs("install-provider-a", done.clone()),
            cs("install-provider-b", json!({"running": {}}))
        ]));
        assert_eq!(
            phases(&provider_statuses(&providers, Some(&running), &[], AT)),
            [Installing, Installing]
        );
        let all = pod(json!([
            cs("install-provider-a", done.clone()),
            cs("install-provider-b", done.clone()),
            cs("install-packages", done.clone()),
            cs("merge-config", done.clone()),
            cs("preflight", done.clone())
        ]));
        let ready = provider_statuses(&providers, Some(&all), &[], AT);
        assert_eq!(phases(&ready), [Ready, Ready]);
        assert_eq!(ready[0].last_transition_time, Some(Time(AT)));
        // Unchanged phase: the transition time stays.
        let later = AT + jiff::SignedDuration::from_secs(60);
        let again = provider_statuses(&providers, Some(&all), &ready, later);
        assert_eq!(again[0].last_transition_time, ready[0].last_transition_time);
    }

    #[test]
    fn failures_are_attributed_to_the_provider_named() {
        let r = refs();
        let providers: Vec<(&str, &ExternalProviderRef)> =
            r.iter().map(|p| ("safety", p)).collect();
        use ExternalProviderPhase::*;
        let done = json!({"terminated": {"exitCode": 0}});
        let message = "ERROR: Cannot install provider 'b' due to dependency conflict\n\nProvider: b\nImage: reg/b:1\nInit Container: install-packages\n\nx";
        let p = pod(json!([
            cs("install-provider-a", done.clone()),
            cs("install-provider-b", done.clone()),
            cs(
                "install-packages",
                json!({"terminated": {"exitCode": 1, "message": message}})
            )
        ]));
        let s = provider_statuses(&providers, Some(&p), &[], AT);
        assert_eq!(phases(&s), [Installing, Failed]);
        assert_eq!(s[1].message.as_deref(), Some(message));

        let pull = pod(json!([cs(
            "install-provider-a",
            json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"reg/a:1\""}})
        )]));
        let s = provider_statuses(&providers, Some(&pull), &[], AT);
        assert_eq!(s[0].phase, Failed);
        let text = s[0].message.clone().unwrap();
        assert!(
            text.starts_with("Failed to pull provider image reg/a:1"),
            "{text}"
        );
        assert!(
            text.contains("imagePullSecret") && text.contains("Init Container: install-provider-a")
        );

        let crash = pod(
            json!([{"name": "install-provider-a", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1, "message": "ERROR: Invalid provider metadata"}}}]),
        );
        let s = provider_statuses(&providers, Some(&crash), &[], AT);
        assert_eq!(
            (s[0].phase, s[0].message.as_deref()),
            (Failed, Some("ERROR: Invalid provider metadata"))
        );
    }
}
