//! The `<name>-derived` Secret: the parts of a PostgreSQL connection string (host, port, user,
//! password, database) that llama-stack reads from separate environment variables. The values
//! come from the user's Secret; this object only carries them, and is never logged.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::core::stack::Stack;
use crate::naming::derived_secret_name;

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
        metadata: ObjectMeta {
            name: Some(derived_secret_name(stack.name(), secrets_hash)),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(data.clone()),
        ..Secret::default()
    })
}
