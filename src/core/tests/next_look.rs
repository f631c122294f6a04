use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;

use super::{Outcome, RESYNC, after, waited};

const MANAGER: &str = "llama-stack-operator";

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn pending(waited: Option<Duration>) -> Outcome {
    Outcome {
        retry: None,
        ready: false,
        rolled_back: false,
        waited,
        server_due: None,
    }
}

#[test]
fn a_young_rollout_is_looked_at_when_it_turns_ten_seconds_old() {
    let table = [(None, 11), (Some(0), 11), (Some(4), 7), (Some(9), 2)];
    for (waited, look) in table {
        assert_eq!(
            after(pending(waited.map(secs))),
            secs(look),
            "waited {waited:?} s"
        );
    }
}

/// Its Pods' and its Deployment's watch events wake it when anything moves: no timed look
/// between resyncs (at 10,000 stacks that could not start, those looks were most of the reads).
#[test]
fn a_rollout_looked_at_with_its_pods_waits_for_the_resync() {
    for waited in [10, 11, 40, 240, 1200, 86_400] {
        assert_eq!(
            after(pending(Some(secs(waited)))),
            RESYNC,
            "waited {waited} s"
        );
    }
}

#[test]
fn a_ready_stack_waits_for_the_resync_or_its_server_answers() {
    let ready = Outcome {
        ready: true,
        ..pending(Some(secs(5)))
    };
    assert_eq!(after(ready), RESYNC);
    let due = Outcome {
        server_due: Some(secs(60)),
        ..ready
    };
    assert_eq!(after(due), secs(60));
    // The server's schedule belongs to Ready stacks only.
    let not_ready = Outcome {
        server_due: Some(secs(2)),
        ..pending(Some(secs(4000)))
    };
    assert_eq!(after(not_ready), RESYNC);
}

#[test]
fn a_blocked_step_and_a_rollback_keep_their_own_times() {
    let blocked = Outcome {
        retry: Some(secs(15)),
        ..pending(Some(secs(4000)))
    };
    assert_eq!(after(blocked), secs(15));
    let rolled_back = Outcome {
        rolled_back: true,
        ..blocked
    };
    assert_eq!(after(rolled_back), secs(1));
}

fn deployment(value: serde_json::Value) -> Deployment {
    serde_json::from_value(value).unwrap()
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

#[test]
fn the_wait_counts_from_the_latest_change_or_progress() {
    let now = at("2026-11-26T12:10:00Z");
    let created_only = deployment(json!({
        "metadata": {"creationTimestamp": "2026-11-26T12:00:00Z"}
    }));
    assert_eq!(waited(&created_only, MANAGER, now), Some(secs(600)));

    // The operator changed the template two minutes ago; another manager's later entry (a
    // user's kubectl, the HPA) is not a change of revision the operator made.
    let changed = deployment(json!({
        "metadata": {
            "creationTimestamp": "2026-11-26T12:00:00Z",
            "managedFields": [
                {"manager": MANAGER, "operation": "Apply", "time": "2026-11-26T12:08:00Z"},
                {"manager": "kubectl", "operation": "Update", "time": "2026-11-26T12:09:50Z"}
            ]
        }
    }));
    assert_eq!(waited(&changed, MANAGER, now), Some(secs(120)));

    // A Pod became available 30 s ago: the Deployment controller recorded progress.
    let progressed = deployment(json!({
        "metadata": {"creationTimestamp": "2026-11-26T12:00:00Z"},
        "status": {"conditions": [
            {"type": "Available", "status": "False", "lastUpdateTime": "2026-11-26T12:09:59Z"},
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
             "lastUpdateTime": "2026-11-26T12:09:30Z"}
        ]}
    }));
    assert_eq!(waited(&progressed, MANAGER, now), Some(secs(30)));
}

#[test]
fn a_clock_behind_the_deployment_or_no_time_at_all_counts_as_no_wait() {
    let now = at("2026-11-26T12:00:00Z");
    let ahead = deployment(json!({
        "metadata": {"creationTimestamp": "2026-11-26T12:05:00Z"}
    }));
    assert_eq!(waited(&ahead, MANAGER, now), Some(secs(0)));
    assert_eq!(
        waited(&deployment(json!({"metadata": {}})), MANAGER, now),
        None
    );
    assert_eq!(after(pending(None)), after(pending(Some(secs(0)))));
}
