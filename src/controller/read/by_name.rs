//! Secrets and ConfigMaps read by name, through what their watches know
//! ([`memory::read_once`](crate::controller::memory::read_once)): read from the API server only
//! when the watches cannot answer, or the object changed since it was last read.

use std::sync::Arc;

use kube::api::Api;
use kube::{Resource, ResourceExt as _};
use serde::de::DeserializeOwned;

use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::read_once::{Known, ReadOnce};

/// Whether a watch's word that the object does not exist is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Absence {
    /// Taken: the object's appearance reconciles the stack (a referenced object: its watch maps
    /// it to the stacks that refer to it), so a watch that has not seen it yet is corrected.
    Taken,
    /// Confirmed by a read: nothing reconciles the stack when it appears (a pull secret a
    /// ServiceAccount names; on OpenShift one always exists).
    Confirmed,
}

/// Where the object is: its namespace, its name and the door whose watches are asked.
pub(in crate::controller) struct Named<'a> {
    pub(in crate::controller) namespace: &'a str,
    pub(in crate::controller) name: &'a str,
    pub(in crate::controller) door: &'static str,
}

/// `named`, if it exists, as last read at its current version; `action` says what was read, for
/// an error.
pub(in crate::controller) async fn read<T>(
    client: &kube::Client,
    memory: &ReadOnce<T>,
    named: Named<'_>,
    absence: Absence,
    action: impl FnOnce() -> String,
) -> Result<Option<T>, ApiError>
where
    T: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let Named {
        namespace,
        name,
        door,
    } = named;
    match memory.lookup(namespace, name, door) {
        Known::Read(copy) => return Ok(Some(T::clone(&copy))),
        Known::Absent if absence == Absence::Taken => return Ok(None),
        Known::Absent | Known::Unknown | Known::Changed => {}
    }
    let read = Api::<T>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(api_err(action()))?;
    if let Some(object) = &read {
        let mut kept = object.clone();
        kept.managed_fields_mut().clear();
        let version = object.resource_version();
        memory.keep(namespace, name, door, version.as_deref(), Arc::new(kept));
    }
    Ok(read)
}
