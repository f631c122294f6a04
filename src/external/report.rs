//! The error report of an in-Pod provider step: printed, and written to the container's
//! termination message, which the operator copies into `status.externalProviders[]` (no log
//! access needed). Every report names the provider, the image, the init container, the cause and
//! the fix.

use std::fmt;

/// Kubernetes keeps at most this many bytes of a termination message.
pub const MAX_TERMINATION_MESSAGE: usize = 4096;

/// A failed provider step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderReport {
    /// First line after `ERROR: `.
    pub headline: String,
    /// `providerId`.
    pub provider_id: String,
    /// Provider image.
    pub image: String,
    /// Init container that failed.
    pub init_container: String,
    /// What went wrong, with the offending values.
    pub detail: String,
    /// What to do.
    pub resolution: String,
}

impl fmt::Display for ProviderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR: {}\n\nProvider: {}\nImage: {}\nInit Container: {}\n\n{}\n\nResolution: {}",
            self.headline,
            self.provider_id,
            self.image,
            self.init_container,
            self.detail.trim_end(),
            self.resolution
        )
    }
}

impl std::error::Error for ProviderReport {}

/// `text` cut to Kubernetes' termination-message limit on a character boundary, keeping the end
/// (the resolution) when the middle must go.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_TERMINATION_MESSAGE {
        return text.to_owned();
    }
    let marker = "\n[...]\n";
    let keep_tail = 1024.min(text.len());
    let mut tail_start = text.len() - keep_tail;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let mut head_end = MAX_TERMINATION_MESSAGE - marker.len() - (text.len() - tail_start);
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    format!("{}{marker}{}", &text[..head_end], &text[tail_start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_follow_the_spec_layout_and_fit_a_termination_message() {
        let r = ProviderReport {
            headline: "Provider API type mismatch".into(),
            provider_id: "p".into(),
            image: "reg/p:1".into(),
            init_container: "install-provider-p".into(),
            detail: "declares api=safety".into(),
            resolution: "Move it.".into(),
        };
        assert_eq!(
            r.to_string(),
            "ERROR: Provider API type mismatch\n\nProvider: p\nImage: reg/p:1\nInit Container: install-provider-p\n\ndeclares api=safety\n\nResolution: Move it."
        );
        let long = format!("{}é{}", "x".repeat(5000), "Resolution: keep me");
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_TERMINATION_MESSAGE);
        assert!(cut.ends_with("Resolution: keep me"));
        assert_eq!(bounded("short"), "short");
    }
}
