//! llama-stack-operator: deploys and runs llama-stack servers from `LlamaStackDistribution`
//! resources.

pub mod api;
pub mod cli;
pub mod controller;
pub(crate) mod convert;
pub mod core;
#[cfg(test)]
mod doc_links;
pub(crate) mod external;
#[cfg(test)]
pub(crate) mod heap_count;
pub(crate) mod leader;
pub(crate) mod metrics;
pub mod naming;
pub mod ogx_server;
pub(crate) mod operator_config;
pub(crate) mod ownership;
pub mod stack_config;
pub(crate) mod tls_files;
pub mod validate;
pub(crate) mod watch_backoff;
pub mod webhook;

/// An error and its causes on one line, `outer: cause: root cause`. A cause whose text the
/// message already contains is not repeated (many messages embed their direct cause).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot start")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("reading config: {0}")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn every_cause_appears_once() {
        let error = Outer(Middle(std::io::Error::other("disk on fire")));
        assert_eq!(
            error_chain(&error),
            "cannot start: reading config: disk on fire"
        );
    }
}
