//! Hand edits of owned objects, found without a write (pure). Server-side apply records which
//! field manager owns each field (`metadata.managedFields`). A field the operator sets that
//! another manager now owns was changed outside the operator (`kubectl scale`, `kubectl set
//! image`, `kubectl edit`): the operator applies its desired object again, which takes the field
//! back. Fields the operator does not set are never drift: an HPA's replicas, a `kubectl rollout
//! restart` annotation, labels other tools add. An unchanged cluster has no foreign owner of the
//! operator's fields, so finding drift costs no write.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::Value;

/// A field the operator sets, owned by another manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    /// The other manager (`kubectl`, `kubectl-edit`, …).
    pub manager: String,
    /// The field, as a path (`.spec.replicas`, `.spec.template.spec.containers[name=x].image`).
    pub field: String,
}

/// The first field of `desired` (the operator's object, as JSON) that a manager other than
/// `ours` owns, according to `managed`. Ownership of `metadata` and `status` is not judged:
/// other tools add labels and annotations, and the status is not the operator's to apply.
pub fn foreign_field(managed: &[ManagedFieldsEntry], ours: &str, desired: &Value) -> Option<Drift> {
    managed
        .iter()
        .filter(|entry| entry.manager.as_deref() != Some(ours))
        .filter(|entry| entry.subresource.as_deref() != Some("status"))
        .find_map(|entry| {
            let fields = entry.fields_v1.as_ref()?;
            let Value::Object(top) = &fields.0 else {
                return None;
            };
            top.iter()
                .filter(|(key, _)| !matches!(key.as_str(), "f:metadata" | "f:status"))
                .find_map(|(key, owned)| shared(key, owned, desired, ""))
                .map(|field| Drift {
                    manager: entry.manager.clone().unwrap_or_default(),
                    field,
                })
        })
}

/// Follows one key of a managed-fields trie into `desired`; the path of the first leaf that
/// `desired` also sets.
fn shared(key: &str, owned: &Value, desired: &Value, path: &str) -> Option<String> {
    let (here, value) = if let Some(name) = key.strip_prefix("f:") {
        (format!("{path}.{name}"), desired.get(name)?)
    } else if let Some(keys) = key.strip_prefix("k:") {
        let keys: serde_json::Map<String, Value> = serde_json::from_str(keys).ok()?;
        let item = desired
            .as_array()?
            .iter()
            .find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))?;
        let label: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
        (format!("{path}[{}]", label.join(",")), item)
    } else if let Some(member) = key.strip_prefix("v:") {
        let member: Value = serde_json::from_str(member).ok()?;
        desired.as_array()?.contains(&member).then_some(())?;
        return Some(format!("{path}[{member}]"));
    } else {
        // `.` (the item itself) and `i:` (an index) name no value of the operator's.
        return None;
    };
    if value.is_null() {
        return None;
    }
    match owned {
        Value::Object(children) if !children.is_empty() => children
            .iter()
            .find_map(|(key, owned)| shared(key, owned, value, &here)),
        _ => Some(here),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use serde_json::json;

    use super::*;

    fn entry(manager: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            subresource: subresource.map(str::to_owned),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        }
    }

    fn desired() -> Value {
        json!({"spec": {"replicas": 1, "template": {"metadata": {"annotations": {"llamastack.io/config-hash": "h"}},
            "spec": {"containers": [{"name": "llama-stack", "image": "reg/img@sha256:aa", "args": ["x"]}]}}}})
    }

    #[test]
    fn a_hand_scaled_or_edited_field_is_drift() {
        let scaled = entry(
            "kubectl",
            Some("scale"),
            json!({"f:spec": {"f:replicas": {}}}),
        );
        assert_eq!(
            foreign_field(&[scaled], "llama-stack-operator", &desired()),
            Some(Drift {
                manager: "kubectl".into(),
                field: ".spec.replicas".into()
            })
        );
        let image = entry(
            "kubectl-set",
            None,
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"llama-stack\"}": {".": {}, "f:image": {}}}}}}}),
        );
        let drift = foreign_field(&[image], "llama-stack-operator", &desired()).unwrap();
        assert_eq!(
            drift.field,
            ".spec.template.spec.containers[name=\"llama-stack\"].image"
        );
        let args = entry(
            "kubectl-edit",
            None,
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"llama-stack\"}": {"f:args": {}}}}}}}),
        );
        assert!(foreign_field(&[args], "llama-stack-operator", &desired()).is_some());
    }

    #[test]
    fn fields_the_operator_does_not_set_are_not_drift() {
        let entries = [
            // Our own apply.
            entry(
                "llama-stack-operator",
                None,
                json!({"f:spec": {"f:replicas": {}}}),
            ),
            // `kubectl rollout restart`: an annotation the operator does not set.
            entry(
                "kubectl-rollout",
                None,
                json!({"f:spec": {"f:template": {"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/restartedAt": {}}}}}}),
            ),
            // A sidecar someone added: not one of the operator's containers.
            entry(
                "kubectl-edit",
                None,
                json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}}}}}}}),
            ),
            // Labels, and the status.
            entry(
                "kubectl-label",
                None,
                json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
            ),
            entry(
                "kube-controller-manager",
                Some("status"),
                json!({"f:status": {"f:replicas": {}}}),
            ),
        ];
        assert_eq!(
            foreign_field(&entries, "llama-stack-operator", &desired()),
            None
        );
        // Under an HPA the operator sets no replicas: the autoscaler's are not drift.
        let mut autoscaled = desired();
        autoscaled["spec"]
            .as_object_mut()
            .unwrap()
            .remove("replicas");
        let hpa = entry(
            "kube-controller-manager",
            Some("scale"),
            json!({"f:spec": {"f:replicas": {}}}),
        );
        assert_eq!(
            foreign_field(&[hpa], "llama-stack-operator", &autoscaled),
            None
        );
    }
}
