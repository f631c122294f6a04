//! The `<name>-derived` Secret: the parts of a PostgreSQL connection string (host, port, user,
//! password, database) that llama-stack reads from separate environment variables. The values
//! come from the user's Secret; this object only carries them, and is never logged.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use super::names::short_hash;
use super::object::metadata;
use crate::controller::stack::Stack;
use crate::stack_config::env::UrlPart;

/// Name of the derived Secret of the Secret values hashed to `secrets_hash` (the Pod
/// template's `llamastack.io/secrets-hash`, salted with the stack's uid):
/// `<name>-derived-<first 8 hex of it>`. A revision's Pods read the parts they started with, and a
/// rollback to the last Ready revision returns to its connection string too. The name tells no
/// more than the annotation already does.
pub fn derived_secret_name(stack: &Stack, secrets_hash: &str) -> String {
    format!(
        "{}-{}",
        derived_secret_prefix(stack.name),
        short_hash(secrets_hash)
    )
}

/// What every derived Secret of `cr` is named with (pruning finds the old ones by it; the Secret
/// of operators before content naming was `<cr>-derived`, which it also starts).
pub fn derived_secret_prefix(cr: &str) -> String {
    format!("{cr}-derived")
}

/// The key of one part of the SQL store's connection string.
pub fn derived_secret_key(part: UrlPart) -> String {
    let part = serde_json::to_value(part)
        .ok()
        .and_then(|p| p.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("storage-sql-{part}")
}

/// The derived Secret holding `data`; `None` when there is nothing to hold. It carries no
/// desired-hash annotation: a hash of a short password in metadata would invite guessing, so the
/// apply compares the data itself.
pub(super) fn secret(
    stack: &Stack,
    data: &BTreeMap<String, ByteString>,
    secrets_hash: &str,
) -> Option<Secret> {
    if data.is_empty() {
        return None;
    }
    Some(Secret {
        metadata: metadata(stack, &derived_secret_name(stack, secrets_hash)),
        type_: Some("Opaque".to_owned()),
        data: Some(data.clone()),
        ..Secret::default()
    })
}
