//! Provider ids of external providers, checked before anything runs: in admission and in the
//! controller's plan, with the same words. Pure.

use crate::api::common::ExternalProviderRef;
use crate::api::v1alpha2::LlamaStackDistributionSpec;

/// The warnings for external providers that replace an inline provider of their own API; an
/// error when one id is used twice: by two external providers, or by an external provider and
/// an inline provider of another API (the merge in the Pod would then leave one id on two
/// providers, and the server would fail only after the rollout).
pub fn check_ids(spec: &LlamaStackDistributionSpec) -> Result<Vec<String>, String> {
    let external = spec
        .external_providers
        .as_ref()
        .map(|e| e.ordered())
        .unwrap_or_default();
    check_provider_ids(&external, &inline_ids(spec))
}

/// The ids of the spec's inline providers (`spec.providers`), with the API section of each.
pub fn inline_ids(spec: &LlamaStackDistributionSpec) -> Vec<(&'static str, String)> {
    (spec.providers.as_ref())
        .map(|p| p.all())
        .unwrap_or_default()
        .into_iter()
        .map(|(section, provider)| (section, provider.config_id()))
        .collect()
}

/// [`check_ids`] on the external providers in CRD order and the inline providers' ids, each with
/// its API section.
pub fn check_provider_ids(
    external: &[(&'static str, &ExternalProviderRef)],
    inline: &[(&'static str, String)],
) -> Result<Vec<String>, String> {
    let mut seen: Vec<(&str, &str, &str)> = Vec::new();
    for (section, provider) in external {
        if let Some((other_section, _, other_image)) =
            seen.iter().find(|(_, id, _)| *id == provider.provider_id)
        {
            return Err(format!(
                "ERROR: Duplicate external provider ID '{}': used by externalProviders.{other_section} (image {other_image}) and externalProviders.{section} (image {}). Resolution: give each external provider its own providerId.",
                provider.provider_id, provider.image
            ));
        }
        seen.push((section, &provider.provider_id, &provider.image));
    }
    let mut warnings = Vec::new();
    for (section, provider) in external {
        let Some((inline_section, _)) = inline.iter().find(|(_, id)| *id == provider.provider_id)
        else {
            continue;
        };
        // In the same API the external provider takes the inline one's place (the merge in the
        // Pod replaces it); across APIs that would leave one id on two providers.
        if inline_section != section {
            return Err(format!(
                "ERROR: Provider ID '{}' is used by spec.providers.{inline_section} and by externalProviders.{section} (image {}). Resolution: rename one of them; an external provider can replace a provider of its own API only.",
                provider.provider_id, provider.image
            ));
        }
        warnings.push(format!(
            "WARNING: External provider '{}' (image {}) overrides the provider with the same ID in spec.providers.{section}",
            provider.provider_id, provider.image
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> LlamaStackDistributionSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn ids_twice_are_errors_and_a_same_api_override_a_warning() {
        let twice = spec(
            json!({"distribution": {"name": "starter"}, "externalProviders": {
            "inference": [{"providerId": "acme", "image": "a:1"}],
            "safety": [{"providerId": "acme", "image": "b:1"}]}}),
        );
        assert!(
            check_ids(&twice)
                .unwrap_err()
                .contains("Duplicate external provider ID 'acme'")
        );
        let across = spec(json!({"distribution": {"name": "starter"},
            "providers": {"inference": {"id": "acme", "provider": "vllm", "endpoint": "http://v"}},
            "externalProviders": {"safety": [{"providerId": "acme", "image": "b:1"}]}}));
        assert!(
            check_ids(&across)
                .unwrap_err()
                .contains("spec.providers.inference and by externalProviders.safety")
        );
        let same = spec(json!({"distribution": {"name": "starter"},
            "providers": {"safety": {"id": "acme", "provider": "llama-guard"}},
            "externalProviders": {"safety": [{"providerId": "acme", "image": "b:1"}]}}));
        assert_eq!(check_ids(&same).unwrap().len(), 1);
    }
}
