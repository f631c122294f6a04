//! The OGX operator's adoption annotations on an `OGXServer` (`ogx.io/adopt-storage`,
//! `ogx.io/adopt-networking`: take over the volume, or the Service and Ingress, of the
//! LlamaStackDistribution they name). Naming the `OGXServer`'s own name is this operator's move
//! in place, which needs no annotation: the objects are already the stack's. Taking over the
//! objects of a stack of another name is not served yet; rather than ignoring the annotation
//! silently, the status says so and names the move in place that keeps them. Pure.

use super::door::Door;
use super::stack::Stack;

/// The annotations, and what each would take over.
const ANNOTATIONS: [(&str, &str); 2] = [
    ("ogx.io/adopt-storage", "its volume"),
    ("ogx.io/adopt-networking", "its Service and Ingress"),
];

/// What the user should know about the stack's adoption annotations (none for a
/// LlamaStackDistribution, which has no such annotations).
pub(super) fn warnings(stack: &Stack<'_>) -> Vec<String> {
    if stack.door == Door::LlamaStackDistribution {
        return Vec::new();
    }
    let annotations = stack.resource.metadata.annotations.as_ref();
    ANNOTATIONS
        .iter()
        .filter_map(|(key, what)| {
            let named = annotations?.get(*key)?;
            (named != stack.name).then(|| {
                format!(
                    "{key} names LlamaStackDistribution \"{named}\": taking over {what} is not served, so {} runs with its own; to keep {what} and serve without a gap, apply this OGXServer under the name \"{named}\" instead (`llama-stack-operator convert --to ogx.io/v1beta1` writes it), which moves that stack in place",
                    stack.name
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::api::v1alpha2::LlamaStackDistribution;

    fn with_annotations(annotations: BTreeMap<String, String>) -> LlamaStackDistribution {
        let mut cr: LlamaStackDistribution = serde_json::from_value(json!({
            "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
            "metadata": {"name": "new", "namespace": "ns", "uid": "u"},
            "spec": {"distribution": {"name": "starter"}}}))
        .unwrap();
        cr.metadata.annotations = Some(annotations);
        cr
    }

    #[test]
    fn another_stacks_objects_are_not_taken_silently_and_the_same_name_needs_nothing() {
        let ogx = Door::OgxServer { metrics_port: None };
        let other = with_annotations(BTreeMap::from([
            ("ogx.io/adopt-storage".to_owned(), "old".to_owned()),
            ("ogx.io/adopt-networking".to_owned(), "old".to_owned()),
        ]));
        let said = warnings(&Stack::read_through(&other, ogx).unwrap());
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with("ogx.io/adopt-storage names LlamaStackDistribution \"old\""),
            "{said:?}"
        );
        assert!(
            said.iter().all(|w| w.contains("under the name \"old\"")),
            "{said:?}"
        );

        let same = with_annotations(BTreeMap::from([(
            "ogx.io/adopt-storage".to_owned(),
            "new".to_owned(),
        )]));
        assert!(warnings(&Stack::read_through(&same, ogx).unwrap()).is_empty());
        assert!(
            warnings(&Stack::read(&other).unwrap()).is_empty(),
            "an LLSD has no such annotations"
        );
    }
}
