//! Secrets and ConfigMaps read by name, through what their watches know
//! ([`memory::read_once`](crate::controller::memory::read_once)): read from the API server only
//! when the watches cannot answer, when the object changed since it was last read, or when they
//! see none and no read has found it missing yet.

use std::sync::Arc;

use kube::api::Api;
use kube::{Resource, ResourceExt as _};
use serde::de::DeserializeOwned;

use crate::controller::error::{ApiError, api_err};
use crate::controller::memory::read_once::{Known, ReadOnce};

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
        Known::Absent => return Ok(None),
        Known::Unknown | Known::Changed => {}
    }
    let read = Api::<T>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(api_err(action()))?;
    match &read {
        Some(object) => {
            let mut kept = object.clone();
            kept.managed_fields_mut().clear();
            let version = object.resource_version();
            memory.keep(namespace, name, door, version.as_deref(), Arc::new(kept));
        }
        None => memory.read_missing(namespace, name, door),
    }
    Ok(read)
}
