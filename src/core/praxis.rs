//! A server behind Praxis (an `OGXServer`'s `praxisMode`): the two conditions the OGX operator
//! reports there. `PraxisReachable` says whether a Ready Praxis Pod matches the gateway's
//! selector (the server is reached only through Praxis, so without one it has no way in);
//! `TLSConfigured` whether the server's own TLS Secret is named and exists. Both only inform:
//! the phase does not depend on them. Pure: the shell lists the Pods [`look`] asks for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::adoption::Said;
use crate::api::conditions::{ConditionType, Reason};
use crate::api::v1alpha2::PraxisGateway;

/// The Praxis Pods to list: their namespace and label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PraxisLook {
    /// The namespace of the Praxis Pods.
    pub namespace: String,
    /// Their labels, as a list's `labelSelector`.
    pub selector: String,
}

/// What to list for `gateway`, or why its selector cannot list anything.
pub fn look(gateway: &PraxisGateway) -> Result<PraxisLook, String> {
    Ok(PraxisLook {
        namespace: gateway.namespace().to_owned(),
        selector: selector_text(&gateway.pods())?,
    })
}

/// A label selector in the form a list takes (`app=x,tier in (a,b),!canary`), or why it has
/// none: an operator Kubernetes does not know, values where none belong or none where they do,
/// or nothing to select by (which would select every Pod of the namespace).
fn selector_text(selector: &LabelSelector) -> Result<String, String> {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    for requirement in selector.match_expressions.iter().flatten() {
        let (key, values) = (
            &requirement.key,
            requirement.values.as_deref().unwrap_or(&[]),
        );
        let part = match (requirement.operator.as_str(), values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.clone(),
            ("DoesNotExist", true) => format!("!{key}"),
            ("In" | "NotIn", true) => {
                return Err(format!(
                    "operator {} on {key} needs values",
                    requirement.operator
                ));
            }
            ("Exists" | "DoesNotExist", false) => {
                return Err(format!(
                    "operator {} on {key} takes no values",
                    requirement.operator
                ));
            }
            (other, _) => return Err(format!("unknown operator {other:?} on {key}")),
        };
        parts.push(part);
    }
    if parts.is_empty() {
        return Err(
            "it selects nothing by, so it would take every Pod of the namespace".to_owned(),
        );
    }
    Ok(parts.join(","))
}

/// How many of `pods` are Ready and not being deleted.
pub fn ready_count(pods: &[Pod]) -> usize {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
            conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .count()
}

/// `PraxisReachable`, from what [`look`] asked for and what listing came to (the number of
/// Ready Pods, or why they could not be listed); `None` when nothing was listed this time.
pub fn reachable(
    looked: &Result<PraxisLook, String>,
    listed: Option<&Result<usize, String>>,
) -> Option<Said> {
    let condition = ConditionType::PraxisReachable;
    let look = match looked {
        Ok(look) => look,
        Err(why) => {
            let message = format!("Invalid praxisMode.praxisSelector: {why}");
            return Some(Said::new(
                condition,
                false,
                Reason::PraxisSelectorInvalid,
                message,
            ));
        }
    };
    let ns = &look.namespace;
    Some(match listed? {
        Ok(0) => Said::new(
            condition,
            false,
            Reason::NoReadyPraxisPods,
            format!(
                "No Ready Praxis pods match the selector in namespace {ns:?}; the server is reached only through Praxis and has no way in until Praxis is available"
            ),
        ),
        Ok(ready) => Said::new(
            condition,
            true,
            Reason::PraxisPodsReady,
            format!("{ready} Ready Praxis pod(s) match the selector in namespace {ns:?}"),
        ),
        Err(error) => Said::new(
            condition,
            false,
            Reason::NoReadyPraxisPods,
            format!("Failed to list Praxis pods in namespace {ns:?}: {error}"),
        ),
    })
}

/// `TLSConfigured` for a server behind Praxis: its TLS Secret (`tls_secret`) named and found
/// among the Secrets read (`secrets`; a name not read is not judged).
pub fn tls_configured(
    tls_secret: Option<&str>,
    secrets: &BTreeMap<String, Option<Secret>>,
) -> Option<Said> {
    let condition = ConditionType::TLSConfigured;
    let Some(name) = tls_secret else {
        return Some(Said::new(
            condition,
            false,
            Reason::TLSSecretNotSet,
            "network.tls.secretName is not set; a server behind Praxis is expected to serve its internal endpoint over TLS".to_owned(),
        ));
    };
    Some(match secrets.get(name)? {
        Some(_) => Said::new(
            condition,
            true,
            Reason::TLSSecretFound,
            format!("TLS Secret {name:?} found"),
        ),
        None => Said::new(
            condition,
            false,
            Reason::TLSSecretMissing,
            format!("TLS Secret {name:?} not found in the server's namespace"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use serde_json::json;

    use super::*;

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    #[test]
    fn a_selector_is_written_as_a_list_takes_it() {
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_owned(), "praxis".to_owned())])),
            match_expressions: Some(vec![
                requirement("tier", "In", &["a", "b"]),
                requirement("zone", "NotIn", &["x"]),
                requirement("ready", "Exists", &[]),
                requirement("canary", "DoesNotExist", &[]),
            ]),
        };
        assert_eq!(
            selector_text(&selector).unwrap(),
            "app=praxis,tier in (a,b),zone notin (x),ready,!canary"
        );
        let default = look(&PraxisGateway::default()).unwrap();
        assert_eq!(
            (default.namespace.as_str(), default.selector.as_str()),
            ("openshift-ingress", "app=payload-processing")
        );
    }

    #[test]
    fn a_selector_that_cannot_list_is_said_why() {
        let with = |r| LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![r]),
        };
        for (selector, says) in [
            (with(requirement("a", "In", &[])), "needs values"),
            (with(requirement("a", "Exists", &["x"])), "takes no values"),
            (with(requirement("a", "Near", &["x"])), "unknown operator"),
            (LabelSelector::default(), "every Pod"),
        ] {
            let why = selector_text(&selector).unwrap_err();
            assert!(why.contains(says), "{why}");
        }
        let gateway = PraxisGateway {
            pod_selector: Some(with(requirement("a", "In", &[]))),
            ..PraxisGateway::default()
        };
        let said = reachable(&look(&gateway), None).unwrap();
        assert_eq!(
            (said.ok, said.reason),
            (false, Reason::PraxisSelectorInvalid)
        );
    }

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_ready_pods_not_being_deleted_count() {
        let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let pods = [
            pod(json!({"metadata": {"name": "a"}, "status": ready})),
            pod(
                json!({"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            ),
            pod(
                json!({"metadata": {"name": "c", "deletionTimestamp": "2026-12-06T00:00:00Z"}, "status": ready}),
            ),
            pod(json!({"metadata": {"name": "d"}})),
        ];
        assert_eq!(ready_count(&pods), 1);
    }

    #[test]
    fn reachable_says_what_the_list_came_to() {
        let looked = look(&PraxisGateway::default());
        assert_eq!(
            reachable(&looked, None),
            None,
            "nothing listed, nothing said"
        );
        let said = |listed: Result<usize, String>| reachable(&looked, Some(&listed)).unwrap();
        let two = said(Ok(2));
        assert_eq!((two.ok, two.reason), (true, Reason::PraxisPodsReady));
        assert!(
            two.message.starts_with("2 Ready Praxis pod(s)"),
            "{}",
            two.message
        );
        let none = said(Ok(0));
        assert_eq!((none.ok, none.reason), (false, Reason::NoReadyPraxisPods));
        let refused = said(Err("pods is forbidden".to_owned()));
        assert_eq!(
            (refused.ok, refused.reason),
            (false, Reason::NoReadyPraxisPods)
        );
        assert!(refused.message.contains("pods is forbidden"));
    }

    #[test]
    fn tls_is_configured_when_its_secret_is_named_and_found() {
        let secrets = BTreeMap::from([
            ("tls".to_owned(), Some(Secret::default())),
            ("gone".to_owned(), None),
        ]);
        let said = |name| tls_configured(name, &secrets).map(|s| (s.ok, s.reason));
        assert_eq!(said(None), Some((false, Reason::TLSSecretNotSet)));
        assert_eq!(said(Some("tls")), Some((true, Reason::TLSSecretFound)));
        assert_eq!(said(Some("gone")), Some((false, Reason::TLSSecretMissing)));
        assert_eq!(
            said(Some("unread")),
            None,
            "a Secret not read is not judged"
        );
    }
}
