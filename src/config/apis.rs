//! API names: the spec's camelCase names, llama-stack 0.7's names, and the ones 0.7 removed.

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
