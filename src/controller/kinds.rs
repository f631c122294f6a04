//! The kinds the shell reads and writes through a typed `Api`.

use std::fmt::Debug;

use kube::Resource;
use serde::de::DeserializeOwned;

/// A namespaced built-in kind (every namespaced k8s-openapi type): what reading, listing and
/// patching it through an `Api` needs.
pub(in crate::controller) trait NamespacedKind:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
{
}

impl<K> NamespacedKind for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
{
}
