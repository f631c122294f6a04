//! The Deployment, written once everything its Pods need is: applied when its desired hash
//! changed (with an Event saying what rolls out), its strategy switched first by a patch where
//! an apply cannot.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch};
use serde_json::{Value, json};

use super::Noted;
use super::write::{Change, patch_by, sync_from};
use crate::api::conditions::Reason;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::core::rollout;
use crate::core::stack::Stack;
use crate::naming;

/// Applies the Deployment when its desired hash changed, with an Event (in `noted`) saying what
/// rolls out.
pub(in crate::controller) async fn apply_deployment(
    stack: &Stack<'_>,
    ctx: &Context,
    (desired, current): (&Deployment, Option<&Deployment>),
    noted: &mut Vec<Noted>,
) -> Result<Option<Deployment>, ApiError> {
    let ns = stack.namespace();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
    if let Some(switch) = strategy_switch(desired, current) {
        deployments
            .patch(
                stack.name(),
                &patch_by(naming::FIELD_MANAGER),
                &Patch::Merge(&switch),
            )
            .await
            .map_err(api_err(format!(
                "switch Deployment {} to Recreate",
                stack.name()
            )))?;
    }
    let (change, deployment) = sync_from(
        &deployments,
        "Deployment",
        stack.name(),
        Some(desired),
        current.cloned(),
        stack.uid(),
    )
    .await?;
    if change == Change::Applied {
        ctx.metrics.rollout();
        let reason = match current {
            Some(_) => Reason::RolloutStarted,
            None => Reason::Created,
        };
        let note = format!(
            "Deployment {} applied with image {} and config {}",
            stack.name(),
            rollout::image_of(desired),
            rollout::config_of(desired)
        );
        noted.push(Noted { reason, note });
    }
    Ok(deployment)
}

/// The merge patch that switches the Deployment `current` to the strategy `desired` asks for
/// (`Recreate` with a volume, else `RollingUpdate`), when they differ. The `rollingUpdate` the API
/// server defaulted must go in the same write as a switch to `Recreate`, or the update is refused
/// (`may not be specified when strategy type is 'Recreate'`); an apply cannot remove it (no field
/// manager owns a defaulted field, and a null in an apply only gives up ownership). And a switch
/// made by a patch stays owned by it, so the way back is a patch too. `None` when nothing has to
/// switch (at rest, always).
fn strategy_switch(desired: &Deployment, current: Option<&Deployment>) -> Option<Value> {
    let kind = |d: &Deployment| {
        let strategy = d.spec.as_ref().and_then(|s| s.strategy.as_ref());
        strategy
            .and_then(|s| s.type_.clone())
            .unwrap_or_else(|| "RollingUpdate".to_owned())
    };
    let wanted = kind(desired);
    (current.is_some_and(|c| kind(c) != wanted))
        .then(|| json!({"spec": {"strategy": {"type": wanted, "rollingUpdate": null}}}))
}

#[cfg(test)]
mod tests {
    use super::strategy_switch;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    #[test]
    fn a_switch_of_strategy_is_one_patch_that_drops_rolling_update() {
        let deployment = |strategy: serde_json::Value| -> Deployment {
            serde_json::from_value(
                json!({"spec": {"selector": {}, "template": {}, "strategy": strategy}}),
            )
            .unwrap()
        };
        let recreate = deployment(json!({"type": "Recreate"}));
        let rolling =
            deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}));
        let unset = deployment(json!({}));
        assert_eq!(
            strategy_switch(&recreate, Some(&rolling)),
            Some(json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}))
        );
        assert_eq!(
            strategy_switch(&unset, Some(&recreate)),
            Some(json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": null}}})),
            "back, once the volume is gone"
        );
        assert_eq!(
            strategy_switch(&recreate, Some(&recreate)),
            None,
            "already switched"
        );
        assert_eq!(
            strategy_switch(&recreate, None),
            None,
            "created as Recreate"
        );
        assert_eq!(
            strategy_switch(&unset, Some(&rolling)),
            None,
            "RollingUpdate is the default"
        );
    }
}
