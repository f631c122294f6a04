//! The pin policy, pure: which digest-pinned image a stack keeps instead of looking its tag up
//! again, what the status records of where the pin came from, and when a running pin must not
//! give way to a distribution's embedded fallback.

use llama_stack_resolver::{Distribution, Resolution, Resolver};

use super::stack::Stack;
use crate::naming::REPIN_ANNOTATION;

/// The organisation Docker Hub no longer has (June 2026), where every llama-stack distribution
/// image and the upstream operator's catalog lived.
const DELETED_ORGANISATION: &str = "docker.io/llamastack/";

/// Where a pinned image came from, for the status.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pin {
    /// The reference the image was pinned from (catalog, overrides and mirrors applied).
    pub(crate) reference: String,
    /// The [`REPIN_ANNOTATION`] this plan honoured.
    pub(crate) request: Option<String>,
    /// The reference the distribution resolves from now, when the pin kept was taken from
    /// another one ([`pinned_in_deleted_organisation`]).
    pub(crate) superseded_by: Option<String>,
}

/// A pin that stands, and the reference it was taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kept<'a> {
    /// The digest-pinned image deployed.
    pub(crate) image: &'a str,
    /// The reference it was pinned from.
    pub(crate) from: &'a str,
}

/// The pinned image to keep instead of looking the tag up again: the one deployed, while the
/// distribution still resolves from the same `reference`, no re-pin was asked for with
/// [`REPIN_ANNOTATION`], and the operator's `repin-interval` (`repin_after`; default: never) has
/// not passed since the image last changed. So a tag pushed again upstream rolls nothing until
/// the user says so. A pin from [`DELETED_ORGANISATION`] also stands when the catalog moved its
/// name elsewhere.
pub(crate) fn to_keep<'a>(
    stack: &Stack<'a>,
    repin_after: Option<std::time::Duration>,
    reference: &str,
    now: jiff::Timestamp,
) -> Option<Kept<'a>> {
    let resolved = stack.recorded.resolved?;
    let image = resolved.image.as_deref().filter(|i| is_pinned(i))?;
    let from = resolved.reference.as_deref()?;
    if from != reference && !pinned_in_deleted_organisation(stack, from) {
        return None;
    }
    let requested = stack.repin_request;
    if requested.is_some() && requested != resolved.repin_request.as_deref() {
        return None;
    }
    if let Some(after) = repin_after {
        let pinned_at = resolved.pinned_at.as_ref()?.0;
        let age = now.duration_since(pinned_at);
        if age.unsigned_abs() >= after {
            return None;
        }
    }
    Some(Kept { image, from })
}

/// The reference a stack's distribution resolves from now (empty for one that cannot be
/// resolved: the resolution says why), and the pin kept instead of looking it up, as of `now`.
pub(crate) fn choose<'a>(
    stack: &Stack<'a>,
    resolver: &Resolver,
    now: jiff::Timestamp,
) -> (String, Option<Kept<'a>>) {
    let reference = resolver.reference(&stack.distribution).unwrap_or_default();
    let kept = Some(reference.as_str())
        .filter(|r| !r.is_empty())
        .and_then(|r| to_keep(stack, resolver.repin_after(), r, now));
    (reference, kept)
}

/// Whether a named stack runs a pin taken from its name's image in [`DELETED_ORGANISATION`]
/// (`docker.io/llamastack/distribution-<name>:…`). The catalog now names the OGX image of that
/// name, a major server release later: the running pin stands (a cluster whose nodes or mirror
/// still hold it keeps running what it ran) until the user asks with [`REPIN_ANNOTATION`] or the
/// operator's `repin-interval` passes.
fn pinned_in_deleted_organisation(stack: &Stack<'_>, pinned_from: &str) -> bool {
    let Distribution::Name(name) = &stack.distribution else {
        return false;
    };
    pinned_from
        .strip_prefix(DELETED_ORGANISATION)
        .and_then(|rest| rest.split([':', '@']).next())
        .is_some_and(|repository| repository == format!("distribution-{name}"))
}

/// What the status records of the pin: a kept pin keeps the reference it came from (`kept_from`,
/// so that it goes on standing on the next reconcile), with the one the distribution resolves
/// from now.
pub(crate) fn recorded(stack: &Stack<'_>, kept_from: Option<&str>, reference: &str) -> Pin {
    let (reference, superseded_by) = match kept_from {
        Some(from) if from != reference => (from.to_owned(), Some(reference.to_owned())),
        _ => (reference.to_owned(), None),
    };
    Pin {
        reference,
        request: stack.repin_request.map(str::to_owned),
        superseded_by,
    }
}

/// What a stack kept on a pin from [`DELETED_ORGANISATION`] should know.
pub(crate) fn superseded_warning(pin: &Pin) -> Option<String> {
    let now = pin.superseded_by.as_deref()?;
    let from = &pin.reference;
    Some(format!(
        "keeps running {from} (pinned), from docker.io/llamastack, which Docker Hub no longer has; the catalog now names {now}, an OGX release: annotate {REPIN_ANNOTATION}=<any new value> to move to it"
    ))
}

/// Whether an image reference is pinned by digest (`repo@sha256:…`), as the status records it.
pub(crate) fn is_pinned(image: &str) -> bool {
    image.contains("@sha256:") || image.contains("@sha512:")
}

/// The embedded config of a name stands in for the image's own only until the stack runs a
/// pinned image. Once it does, a registry outage must never replace the pinned image and its
/// config with the catalog's tag and the embedded config (after an operator restart the
/// resolver's last known good result is gone): what runs is kept until the registry answers, and
/// the status says why (`Err`: what it says). A stack that runs the unpinned fallback already
/// keeps using it.
pub(crate) fn keep_pinned_over_fallback(
    running: Option<&str>,
    resolution: &Resolution,
) -> Result<(), String> {
    let runs_pinned = running.is_some_and(is_pinned);
    let Some(error) = resolution
        .stale
        .as_ref()
        .filter(|_| runs_pinned && !resolution.pinned)
    else {
        return Ok(());
    };
    Err(format!(
        "{error}; keeping the running image and config until the registry answers (the embedded config of a distribution is used only for a first deployment)"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::v1alpha2::LlamaStackDistribution;

    const OLD: &str = "docker.io/llamastack/distribution-starter:0.7.3";
    const PINNED: &str = "docker.io/llamastack/distribution-starter@sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn stack_resource(name: &str, annotations: serde_json::Value) -> LlamaStackDistribution {
        serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "s", "namespace": "ns", "annotations": annotations},
            "spec": {"distribution": {"name": name}},
            "status": {"resolvedDistribution": {"image": PINNED, "reference": OLD, "repinRequest": "1",
                "pinnedAt": "2026-11-01T00:00:00Z"}}}))
        .unwrap()
    }

    fn at(time: &str) -> jiff::Timestamp {
        time.parse().unwrap()
    }

    /// A stack pinned from the deleted organisation keeps its pin when the catalog moves its name
    /// to the OGX image; a renamed distribution or a repin request moves it.
    #[test]
    fn a_pin_from_the_deleted_organisation_stands_until_the_user_asks() {
        let now = "docker.io/ogxai/distribution-starter:1.3.0";
        let today = at("2026-11-27T00:00:00Z");
        let kept = stack_resource("starter", json!({}));
        let stack = Stack::read(&kept).unwrap();
        let kept_pin = to_keep(&stack, None, now, today);
        assert_eq!(
            kept_pin,
            Some(Kept {
                image: PINNED,
                from: OLD
            })
        );
        // The status goes on naming the old reference, so the pin stands on the next reconcile.
        let recorded_pin = recorded(&stack, kept_pin.map(|k| k.from), now);
        assert_eq!(recorded_pin.reference, OLD);
        assert_eq!(recorded_pin.superseded_by.as_deref(), Some(now));
        let recorded_pin = recorded(&stack, Some(now), now);
        assert_eq!(
            (recorded_pin.reference.as_str(), recorded_pin.superseded_by),
            (now, None)
        );

        let renamed = stack_resource("postgres-demo", json!({}));
        let stack = Stack::read(&renamed).unwrap();
        let moved = "docker.io/ogxai/distribution-postgres-demo:1.3.0";
        assert_eq!(to_keep(&stack, None, moved, today), None);

        let asked = stack_resource("starter", json!({REPIN_ANNOTATION: "2"}));
        let stack = Stack::read(&asked).unwrap();
        assert_eq!(to_keep(&stack, None, now, today), None);

        let elsewhere = "mirror.corp/llamastack/distribution-starter:0.7.3";
        assert!(!pinned_in_deleted_organisation(
            &Stack::read(&kept).unwrap(),
            elsewhere
        ));
    }

    /// The operator's `repin-interval` moves a pin once the image is older than it, and not before.
    #[test]
    fn a_pin_stands_until_the_repin_interval_passes() {
        let cr = stack_resource("starter", json!({}));
        let stack = Stack::read(&cr).unwrap();
        let week = std::time::Duration::from_secs(7 * 24 * 3600);
        assert!(to_keep(&stack, Some(week), OLD, at("2026-11-07T23:59:00Z")).is_some());
        assert_eq!(
            to_keep(&stack, Some(week), OLD, at("2026-11-08T00:00:00Z")),
            None
        );
    }

    /// The warning names the pin kept and where the catalog points now; a pin that merely stands
    /// (same reference) warns of nothing.
    #[test]
    fn only_a_superseded_pin_warns() {
        let pin = |superseded_by: Option<&str>| Pin {
            reference: OLD.to_owned(),
            request: None,
            superseded_by: superseded_by.map(str::to_owned),
        };
        let now = "docker.io/ogxai/distribution-starter:1.3.0";
        let warning = superseded_warning(&pin(Some(now))).unwrap();
        assert!(
            warning.contains(OLD) && warning.contains(now) && warning.contains(REPIN_ANNOTATION),
            "{warning}"
        );
        assert_eq!(superseded_warning(&pin(None)), None);
    }
}
