//! How an owned object is written: applied only when what the operator wants differs from what it
//! last applied (the [`DESIRED_HASH`] annotation) or another field manager changed a field the
//! operator sets, deleted when no longer wanted (only if this resource controls it), and read
//! only where the watches of the owned kinds cannot answer ([`step`]). The objects written
//! otherwise (the generated config, the derived Secret, the data volume, the Deployment's
//! strategy) are written where they are: [`super::for_the_pods`], [`super::deployment`].

use std::fmt::Debug;

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::drift::foreign_field;
use crate::controller::error::{ApiError, api_err};
use crate::controller::kinds::NamespacedKind;
use crate::controller::memory::owned_index::{Known, OwnedIndex};
use crate::naming::{DESIRED_HASH, FIELD_MANAGER};

/// The parameters of a (non-apply) patch made by the field manager `manager`.
pub(in crate::controller) fn patch_by(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.to_owned()),
        ..PatchParams::default()
    }
}

/// What [`sync`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Change {
    /// Nothing to do.
    Unchanged,
    /// Created or updated.
    Applied,
    /// Deleted (no longer wanted).
    Deleted,
}

/// What the apply does about one owned object, from what the watches know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Step {
    /// Read it, then decide as [`sync_from`] does.
    Read,
    /// Apply the desired object without reading: there is none.
    Apply,
    /// Nothing to do, without reading: it carries the desired hash and nobody changed it since
    /// the operator checked it; or it is not wanted and is absent or not the stack's.
    Keep,
}

/// The step for an object: `wanted` with its desired hash `want_hash`, or not wanted; `known`
/// what the watches say (for the stack's generation); `owner_uid` the stack's.
pub(in crate::controller) fn step(
    wanted: bool,
    want_hash: Option<&str>,
    known: Known,
    owner_uid: &str,
) -> Step {
    match (wanted, known) {
        (_, Known::Unknown) => Step::Read,
        (true, Known::Absent { .. }) => Step::Apply,
        (true, Known::Present(seen)) => {
            if want_hash.is_some_and(|h| seen.carries(h)) && seen.checked() {
                Step::Keep
            } else {
                Step::Read
            }
        }
        // Not in the watches: read once a generation, for an object of the stack's that lacks the
        // door's label (left by another operator, or stripped of it).
        (false, Known::Absent { confirmed: true }) => Step::Keep,
        (false, Known::Absent { confirmed: false }) => Step::Read,
        // Read before a delete: rare, and the read confirms what is deleted.
        (false, Known::Present(seen)) if seen.controlled_by(owner_uid) => Step::Read,
        (false, Known::Present(_)) => Step::Keep,
    }
}

/// What the watches of the owned kinds can answer for one stack's objects.
#[derive(Clone, Copy)]
pub(in crate::controller) struct Indexed<'a> {
    /// The watches' index.
    pub index: &'a OwnedIndex,
    /// The stack's generation.
    pub generation: Option<i64>,
    /// Nothing is recorded in the stack's status: no operator has reconciled it, so no object
    /// of its own can exist that the watches do not see (one without the door's label is what
    /// another operator, or an earlier owner, leaves). An object it does not want and the
    /// watches do not see is then absent without a read.
    pub untouched: bool,
}

/// What the watches' answer (`known`) comes to for a stack: an object it does not want
/// (`wanted` false), that the watches do not see, is confirmed absent without a read when the
/// stack is `untouched` (see [`Indexed::untouched`]).
pub(in crate::controller) fn for_stack(known: Known, wanted: bool, untouched: bool) -> Known {
    match known {
        Known::Absent { confirmed: false } if untouched && !wanted => {
            Known::Absent { confirmed: true }
        }
        known => known,
    }
}

/// [`sync_from`] for a namespaced built-in kind, reading the object only where `indexed` (the
/// watches of the owned kinds) cannot answer for it ([`step`]); `None` always reads (the caller
/// needs the object itself).
pub(in crate::controller) async fn sync_in<K: NamespacedKind + Serialize>(
    client: &kube::Client,
    indexed: Option<Indexed<'_>>,
    namespace: &str,
    name: &str,
    desired: Option<&K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError> {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let kind = K::kind(&());
    let Some(Indexed {
        index,
        generation,
        untouched,
    }) = indexed
    else {
        return sync(&api, &kind, name, desired, owner_uid).await;
    };
    let want_hash = desired.and_then(|d| d.annotations().get(DESIRED_HASH).map(String::as_str));
    let looked_up = index.lookup(&kind, namespace, name, generation);
    let known = for_stack(looked_up, desired.is_some(), untouched);
    if known != looked_up {
        index.confirmed_absent(&kind, namespace, name, generation);
    }
    let (change, object) = match step(desired.is_some(), want_hash, known, owner_uid) {
        Step::Keep => return Ok((Change::Unchanged, None)),
        Step::Apply => sync_from(&api, &kind, name, desired, None, owner_uid).await?,
        Step::Read => sync(&api, &kind, name, desired, owner_uid).await?,
    };
    // What was written, or read and found as wanted, is checked at its version; an object not
    // wanted is, once read (and deleted if it was the stack's), confirmed absent.
    match (&object, desired.is_some()) {
        (Some(object), true) if change != Change::Deleted => {
            let version = object.meta().resource_version.as_deref();
            index.checked(&kind, namespace, name, version);
        }
        (_, false) => index.confirmed_absent(&kind, namespace, name, generation),
        _ => {}
    }
    Ok((change, object))
}

/// [`sync_from`] after reading the object.
pub(in crate::controller) async fn sync<K>(
    api: &Api<K>,
    kind: &str,
    name: &str,
    desired: Option<&K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let existing = api
        .get_opt(name)
        .await
        .map_err(api_err(format!("read {kind} {name}")))?;
    sync_from(api, kind, name, desired, existing, owner_uid).await
}

/// Makes `name` in `api` (as `existing`, already read) match `desired`: applied when its desired
/// hash differs or another field manager changed a field the operator sets, deleted when `desired` is `None` and the object is controlled by `owner_uid`.
/// Returns the change and the object as the API server returned it (when it was read or written).
pub(in crate::controller) async fn sync_from<K>(
    api: &Api<K>,
    kind: &str,
    name: &str,
    desired: Option<&K>,
    existing: Option<K>,
    owner_uid: &str,
) -> Result<(Change, Option<K>), ApiError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    match desired {
        Some(desired) => {
            let want = desired.annotations().get(DESIRED_HASH);
            let body = serde_json::to_value(desired).map_err(|source| ApiError {
                action: format!("serialize {kind} {name}"),
                source: kube::Error::SerdeError(source),
            })?;
            if let Some(current) = &existing
                && current.annotations().get(DESIRED_HASH) == want
            {
                let managed = current.meta().managed_fields.as_deref().unwrap_or_default();
                let Some(drift) = foreign_field(managed, FIELD_MANAGER, &body) else {
                    return Ok((Change::Unchanged, existing));
                };
                tracing::info!(
                    kind,
                    name,
                    field = %drift.field,
                    manager = %drift.manager,
                    "reverting a change made outside the operator"
                );
            }
            let written = api
                .patch(
                    name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&body),
                )
                .await
                .map_err(api_err(format!("apply {kind} {name}")))?;
            Ok((Change::Applied, Some(written)))
        }
        None => {
            let controlled = existing
                .as_ref()
                .is_some_and(|o| crate::ownership::controlled_by(o.meta(), owner_uid));
            if !controlled {
                return Ok((Change::Unchanged, None));
            }
            api.delete(name, &DeleteParams::default())
                .await
                .map_err(api_err(format!("delete {kind} {name}")))?;
            Ok((Change::Deleted, None))
        }
    }
}

#[cfg(test)]
mod step_tests {
    use super::{Step, for_stack, step};
    use crate::controller::memory::owned_index::{Known, Seen};

    /// A stack no operator has reconciled yet has no object the watches miss; one whose status
    /// was written may (left by another operator), and is read once a generation.
    #[test]
    fn only_an_untouched_stack_skips_the_read_of_what_it_does_not_want() {
        let unconfirmed = Known::Absent { confirmed: false };
        let confirmed = Known::Absent { confirmed: true };
        let seen = Known::Present(Seen::new(Some("h"), Some("uid"), true));
        let cases = [
            // (known, wanted, untouched, comes to)
            (unconfirmed, false, true, confirmed),
            (unconfirmed, false, false, unconfirmed),
            (unconfirmed, true, true, unconfirmed),
            (Known::Unknown, false, true, Known::Unknown),
            (seen, false, true, seen),
        ];
        for (known, wanted, untouched, expected) in cases {
            assert_eq!(
                for_stack(known, wanted, untouched),
                expected,
                "{known:?} wanted={wanted} untouched={untouched}"
            );
        }
    }

    /// What the apply does about an object, by what the watches know of it: a read only where
    /// they cannot answer, or before a delete.
    #[test]
    fn an_object_is_read_only_where_the_watches_cannot_answer() {
        let ours = |hash, checked| Known::Present(Seen::new(Some(hash), Some("uid"), checked));
        let cases = [
            // (wanted, its hash, known, step)
            (true, Some("h"), Known::Unknown, Step::Read),
            (false, None, Known::Unknown, Step::Read),
            (
                true,
                Some("h"),
                Known::Absent { confirmed: false },
                Step::Apply,
            ),
            (true, Some("h"), ours("h", true), Step::Keep),
            // Changed since the operator checked it: read, for a drift check.
            (true, Some("h"), ours("h", false), Step::Read),
            // Another hash: read (and applied after it).
            (true, Some("h2"), ours("h", true), Step::Read),
            // A desired object without a hash is never taken as unchanged.
            (true, None, ours("h", true), Step::Read),
            (false, None, Known::Absent { confirmed: true }, Step::Keep),
            // Not confirmed at this generation: read once (an unlabelled object of the stack's).
            (false, None, Known::Absent { confirmed: false }, Step::Read),
            (false, None, ours("h", true), Step::Read),
            (
                false,
                None,
                Known::Present(Seen::new(None, Some("someone-else"), false)),
                Step::Keep,
            ),
            (
                false,
                None,
                Known::Present(Seen::new(None, None, false)),
                Step::Keep,
            ),
        ];
        for (wanted, hash, known, expected) in cases {
            assert_eq!(
                step(wanted, hash, known, "uid"),
                expected,
                "{wanted} {hash:?} {known:?}"
            );
        }
    }
}
