//! This operator's features that the `OGXServer` API has no field for, as annotations of its own
//! (`llamastack.io/…`, never the OGX operator's `ogx.io/…`): the rollback policy and the
//! progress deadline of `workload`. `convert --to ogx.io/v1beta1` writes them, so a stack that
//! set them moves without losing them.

use std::collections::BTreeMap;

use super::Untranslatable;
use crate::api::common::RollbackPolicy;
use crate::api::v1alpha2::WorkloadSpec;

/// `Automatic` or `Never`: the model's `workload.rollback`.
pub const ROLLBACK: &str = "llamastack.io/rollback";
/// Seconds, 10 to 86400: the model's `workload.progressDeadlineSeconds`.
pub const PROGRESS_DEADLINE: &str = "llamastack.io/progress-deadline-seconds";

/// Sets what the annotations ask for on `workload`; an annotation with a value the model does
/// not take is refused with its name.
pub fn apply(
    annotations: Option<&BTreeMap<String, String>>,
    workload: &mut Option<WorkloadSpec>,
) -> Result<(), Untranslatable> {
    let Some(annotations) = annotations else {
        return Ok(());
    };
    let field = |key: &str| format!("metadata.annotations[{key}]");
    if let Some(value) = annotations.get(ROLLBACK) {
        let policy = match value.as_str() {
            "Automatic" => RollbackPolicy::Automatic,
            "Never" => RollbackPolicy::Never,
            other => {
                return Err(Untranslatable::new(
                    field(ROLLBACK),
                    format!("{other:?} is not a rollback policy: Automatic or Never"),
                ));
            }
        };
        workload.get_or_insert_with(Default::default).rollback = Some(policy);
    }
    if let Some(value) = annotations.get(PROGRESS_DEADLINE) {
        let seconds = value
            .parse::<i32>()
            .ok()
            .filter(|s| (10..=86400).contains(s))
            .ok_or_else(|| {
                Untranslatable::new(
                    field(PROGRESS_DEADLINE),
                    format!("{value:?} is not a number of seconds from 10 to 86400"),
                )
            })?;
        workload
            .get_or_insert_with(Default::default)
            .progress_deadline_seconds = Some(seconds);
    }
    Ok(())
}

/// The annotations that carry `workload`'s rollback policy and progress deadline.
pub fn of(workload: Option<&WorkloadSpec>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(workload) = workload else {
        return out;
    };
    if let Some(policy) = workload.rollback {
        let value = match policy {
            RollbackPolicy::Automatic => "Automatic",
            RollbackPolicy::Never => "Never",
        };
        out.insert(ROLLBACK.to_owned(), value.to_owned());
    }
    if let Some(seconds) = workload.progress_deadline_seconds {
        out.insert(PROGRESS_DEADLINE.to_owned(), seconds.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_annotations_carry_the_policy_both_ways_and_refuse_what_the_model_does_not_take() {
        let workload = WorkloadSpec {
            rollback: Some(RollbackPolicy::Never),
            progress_deadline_seconds: Some(300),
            ..WorkloadSpec::default()
        };
        let annotations = of(Some(&workload));
        let mut read = None;
        apply(Some(&annotations), &mut read).unwrap();
        assert_eq!(read, Some(workload));

        let bad = |key: &str, value: &str| {
            let mut w = None;
            apply(
                Some(&BTreeMap::from([(key.to_owned(), value.to_owned())])),
                &mut w,
            )
            .unwrap_err()
            .field
        };
        assert_eq!(
            bad(ROLLBACK, "Sometimes"),
            "metadata.annotations[llamastack.io/rollback]"
        );
        assert_eq!(
            bad(PROGRESS_DEADLINE, "5"),
            "metadata.annotations[llamastack.io/progress-deadline-seconds]"
        );
        assert_eq!(
            bad(PROGRESS_DEADLINE, "soon"),
            "metadata.annotations[llamastack.io/progress-deadline-seconds]"
        );
    }
}
