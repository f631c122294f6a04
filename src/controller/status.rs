//! Status conditions: `lastTransitionTime` changes only when a condition's status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Sets a condition in `conditions`, keeping its transition time when the status is unchanged.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    previous: &[Condition],
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
) {
    let status = if ok { "True" } else { "False" };
    let last_transition_time = previous
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| Time(jiff::Timestamp::now()));
    conditions.retain(|c| c.type_ != type_);
    conditions.push(Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        last_transition_time,
        observed_generation: generation,
    });
}
