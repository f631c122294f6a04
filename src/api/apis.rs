//! The one list of API names: the spec's camelCase names, llama-stack 0.7's names, and the ones
//! 0.7 removed. Schema rules, config generation, external providers and the merge all read it.

/// Spec name -> llama-stack 0.7 name, for the APIs that can host providers.
pub const APIS: &[(&str, &str)] = &[
    ("inference", "inference"),
    ("safety", "safety"),
    ("responses", "responses"),
    ("batches", "batches"),
    ("vectorIo", "vector_io"),
    ("datasetIo", "datasetio"),
    ("scoring", "scoring"),
    ("eval", "eval"),
    ("toolRuntime", "tool_runtime"),
    ("files", "files"),
    ("fileProcessors", "file_processors"),
];

/// APIs without providers of their own that a spec may name to switch off (spec name -> config
/// name): they leave the config's `apis` list, as the OGX operator writes it, but OGX 1.3.0 and
/// llama-stack 0.7.3 serve conversations with every config (their servers add it themselves), so
/// the generator says so in a warning.
pub const ROUTE_ONLY: &[(&str, &str)] = &[("conversations", "conversations")];

/// Config name of a spec name in [`ROUTE_ONLY`].
pub fn route_only(spec_name: &str) -> Option<&'static str> {
    ROUTE_ONLY
        .iter()
        .find(|(s, _)| *s == spec_name)
        .map(|(_, n)| *n)
}

/// Spec names of APIs llama-stack 0.7 no longer has, with what replaced them.
pub const REMOVED: &[(&str, &str)] = &[
    (
        "agents",
        "the agents API was replaced by responses in llama-stack 0.7",
    ),
    (
        "telemetry",
        "telemetry is no longer an API in llama-stack 0.7; it is configured with OpenTelemetry environment variables (providers.telemetry)",
    ),
    (
        "postTraining",
        "the postTraining API was removed in llama-stack 0.7",
    ),
];

/// llama-stack name of a spec API name.
pub fn stack_name(spec_name: &str) -> Option<&'static str> {
    APIS.iter().find(|(s, _)| *s == spec_name).map(|(_, n)| *n)
}

/// Why a spec API name no longer exists, if it was removed.
pub fn removed(spec_name: &str) -> Option<&'static str> {
    REMOVED
        .iter()
        .find(|(s, _)| *s == spec_name)
        .map(|(_, why)| *why)
}

/// The CEL rule and message for one item of `spec.disabled`: one of [`APIS`] or [`REMOVED`]
/// (disabling a removed API is accepted and reported as a warning, so manifests written for older
/// releases keep applying). Per item, with a bounded item length, so the API server's CEL cost
/// estimate stays low.
pub fn disabled_item_rule() -> (String, String) {
    let quoted = |names: &mut dyn Iterator<Item = &str>| {
        names
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let current_names = || APIS.iter().chain(ROUTE_ONLY).map(|(s, _)| *s);
    let accepted = quoted(&mut current_names().chain(REMOVED.iter().map(|(s, _)| *s)));
    let current = current_names().collect::<Vec<_>>().join(", ");
    (
        format!("self in [{accepted}]"),
        format!(
            "'unknown API name \"' + self + '\"; use one of the camelCase API names {current}'"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_current_and_removed_api_is_accepted_in_disabled() {
        let (rule, message) = disabled_item_rule();
        for (name, _) in APIS.iter().chain(ROUTE_ONLY).chain(REMOVED) {
            assert!(
                rule.contains(&format!("'{name}'")),
                "{name} missing from {rule}"
            );
        }
        for (name, _) in REMOVED {
            assert!(
                !message.contains(name),
                "the message suggests removed {name}"
            );
        }
    }
}
