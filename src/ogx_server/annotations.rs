//! This operator's features that the `OGXServer` API has no field for, as annotations of its own
//! (`llamastack.io/…`, never the OGX operator's `ogx.io/…`): the rollback policy and the
//! progress deadline of `workload`, and external providers from provider images.
//! `convert --to ogx.io/v1beta1` writes them, so a stack that set them moves without losing them.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Untranslatable;
use crate::api::common::{ExternalProvidersSpec, RollbackPolicy};
use crate::api::v1alpha2::{LlamaStackDistributionSpec, WorkloadSpec};

/// `Automatic` or `Never`: the model's `workload.rollback`.
pub const ROLLBACK: &str = "llamastack.io/rollback";
/// Seconds, 10 to 86400: the model's `workload.progressDeadlineSeconds`.
pub const PROGRESS_DEADLINE: &str = "llamastack.io/progress-deadline-seconds";
/// YAML (or JSON) of the model's `externalProviders`: the same object as a v1alpha2
/// LlamaStackDistribution's, by API section.
pub const EXTERNAL_PROVIDERS: &str = "llamastack.io/external-providers";

/// At most this many providers per section (the LlamaStackDistribution CRD's limit).
const MAX_PER_SECTION: usize = 32;

fn field(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

/// Sets what the annotations ask for on `spec`; an annotation with a value the model does not
/// take is refused with its name.
pub fn apply(
    annotations: Option<&BTreeMap<String, String>>,
    spec: &mut LlamaStackDistributionSpec,
) -> Result<(), Untranslatable> {
    let Some(annotations) = annotations else {
        return Ok(());
    };
    apply_workload(annotations, &mut spec.workload)?;
    if let Some(text) = annotations.get(EXTERNAL_PROVIDERS) {
        spec.external_providers = Some(Box::new(external_providers(text)?));
    }
    Ok(())
}

fn apply_workload(
    annotations: &BTreeMap<String, String>,
    workload: &mut Option<Box<WorkloadSpec>>,
) -> Result<(), Untranslatable> {
    if let Some(value) = annotations.get(ROLLBACK) {
        let policy = match value.as_str() {
            "Automatic" => RollbackPolicy::Automatic,
            "Never" => RollbackPolicy::Never,
            other => {
                return Err(Untranslatable::new(
                    field(ROLLBACK),
                    format!("{other:?} is not a rollback policy: Automatic or Never"),
                ));
            }
        };
        workload.get_or_insert_with(Default::default).rollback = Some(policy);
    }
    if let Some(value) = annotations.get(PROGRESS_DEADLINE) {
        let seconds = value
            .parse::<i32>()
            .ok()
            .filter(|s| (10..=86400).contains(s))
            .ok_or_else(|| {
                Untranslatable::new(
                    field(PROGRESS_DEADLINE),
                    format!("{value:?} is not a number of seconds from 10 to 86400"),
                )
            })?;
        workload
            .get_or_insert_with(Default::default)
            .progress_deadline_seconds = Some(seconds);
    }
    Ok(())
}

/// Reads [`EXTERNAL_PROVIDERS`] as strictly as the LlamaStackDistribution CRD reads
/// `externalProviders` (an annotation has no schema to prune or check it): every key known,
/// the sections that no longer exist refused with the fix, ids that can name an init
/// container, unique within their section.
fn external_providers(text: &str) -> Result<ExternalProvidersSpec, Untranslatable> {
    let refuse = |path: &str, why: String| {
        let at = if path.is_empty() {
            field(EXTERNAL_PROVIDERS)
        } else {
            format!("{}.{path}", field(EXTERNAL_PROVIDERS))
        };
        Untranslatable::new(at, why)
    };
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| refuse("", format!("not YAML or JSON: {e}")))?;
    let Value::Object(sections) = &value else {
        return Err(refuse(
            "",
            "expected an object of API sections (inference, safety, responses, …), as v1alpha2's spec.externalProviders".to_owned(),
        ));
    };
    for (section, providers) in sections {
        if let Some((path, why)) = section_problem(section, providers) {
            return Err(refuse(&path, why));
        }
    }
    let spec: ExternalProvidersSpec =
        serde_json::from_value(value.clone()).map_err(|e| refuse("", e.to_string()))?;
    let read = serde_json::to_value(&spec).map_err(|e| refuse("", e.to_string()))?;
    if let Some(unknown) = first_unknown(&value, &read, "") {
        return Err(refuse(
            &unknown,
            "unknown field (see v1alpha2's spec.externalProviders)".to_owned(),
        ));
    }
    if let Some((api, provider)) = spec.ordered().into_iter().find(|(_, p)| p.image.is_empty()) {
        return Err(refuse(
            &format!("{api}.{}", provider.provider_id),
            "image is empty: name the provider image".to_owned(),
        ));
    }
    Ok(spec)
}

/// What is wrong with one API section of the annotation, as (path below it, why): an API
/// llama-stack 0.7 removed, a section that is not a list, too many providers, an id that is not
/// one or is listed twice.
fn section_problem(section: &str, providers: &Value) -> Option<(String, String)> {
    let removed = match section {
        "agents" => Some(crate::api::common::REMOVED_AGENTS),
        "postTraining" => Some(crate::api::common::REMOVED_POST_TRAINING),
        _ => None,
    };
    if let Some(why) = removed {
        return Some((section.to_owned(), why.to_owned()));
    }
    let Some(list) = providers.as_array() else {
        return Some((
            section.to_owned(),
            "expected a list of providers".to_owned(),
        ));
    };
    if list.len() > MAX_PER_SECTION {
        return Some((
            section.to_owned(),
            format!("at most {MAX_PER_SECTION} providers"),
        ));
    }
    let mut ids = std::collections::BTreeSet::new();
    list.iter().enumerate().find_map(|(i, provider)| {
        let id = provider
            .get("providerId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let path = format!("{section}[{i}].providerId");
        if !crate::naming::is_dns_label(id) {
            Some((path, format!(
                "{id:?} is not a provider id: 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
            )))
        } else if !ids.insert(id) {
            Some((path, format!("{id:?} is listed twice")))
        } else {
            None
        }
    })
}

/// The first key of `given` that reading it dropped, as a path (a provider's `config` is kept
/// whole, so nothing under it is ever unknown).
fn first_unknown(given: &Value, read: &Value, path: &str) -> Option<String> {
    match (given, read) {
        (Value::Object(given), Value::Object(read)) => given.iter().find_map(|(key, value)| {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            match read.get(key) {
                None => Some(at),
                Some(kept) => first_unknown(value, kept, &at),
            }
        }),
        (Value::Array(given), Value::Array(read)) => given
            .iter()
            .zip(read)
            .enumerate()
            .find_map(|(i, (g, r))| first_unknown(g, r, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// The annotations that carry what `spec` sets and `OGXServer` has no field for: `workload`'s
/// rollback policy and progress deadline, and the external providers.
pub fn of(spec: &LlamaStackDistributionSpec) -> BTreeMap<String, String> {
    let mut out = of_workload(spec.workload.as_deref());
    if let Some(providers) = &spec.external_providers {
        // Written as YAML, the form people read and edit; an error only for a defect.
        if let Ok(text) = serde_saphyr::to_string(providers) {
            out.insert(EXTERNAL_PROVIDERS.to_owned(), text);
        }
    }
    out
}

fn of_workload(workload: Option<&WorkloadSpec>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(workload) = workload else {
        return out;
    };
    if let Some(policy) = workload.rollback {
        let value = match policy {
            RollbackPolicy::Automatic => "Automatic",
            RollbackPolicy::Never => "Never",
        };
        out.insert(ROLLBACK.to_owned(), value.to_owned());
    }
    if let Some(seconds) = workload.progress_deadline_seconds {
        out.insert(PROGRESS_DEADLINE.to_owned(), seconds.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(workload: Option<WorkloadSpec>) -> LlamaStackDistributionSpec {
        let mut spec: LlamaStackDistributionSpec =
            serde_json::from_value(serde_json::json!({"distribution": {"name": "starter"}}))
                .unwrap();
        spec.workload = workload.map(Box::new);
        spec
    }

    fn refused(key: &str, value: &str) -> Untranslatable {
        let mut spec = spec_with(None);
        apply(
            Some(&BTreeMap::from([(key.to_owned(), value.to_owned())])),
            &mut spec,
        )
        .unwrap_err()
    }

    #[test]
    fn the_annotations_carry_the_policy_both_ways_and_refuse_what_the_model_does_not_take() {
        let workload = WorkloadSpec {
            rollback: Some(RollbackPolicy::Never),
            progress_deadline_seconds: Some(300),
            ..WorkloadSpec::default()
        };
        let annotations = of(&spec_with(Some(workload.clone())));
        let mut read = spec_with(None);
        apply(Some(&annotations), &mut read).unwrap();
        assert_eq!(read.workload.as_deref(), Some(&workload));

        assert_eq!(
            refused(ROLLBACK, "Sometimes").field,
            "metadata.annotations[llamastack.io/rollback]"
        );
        assert_eq!(
            refused(PROGRESS_DEADLINE, "5").field,
            "metadata.annotations[llamastack.io/progress-deadline-seconds]"
        );
        assert_eq!(
            refused(PROGRESS_DEADLINE, "soon").field,
            "metadata.annotations[llamastack.io/progress-deadline-seconds]"
        );
    }

    /// The repository's v1alpha2 external-provider sample, through the annotation and back.
    #[test]
    fn external_providers_travel_whole_and_are_read_as_strictly_as_the_crd_reads_them() {
        let sample = include_str!("../../deploy/samples/v1alpha2_ext_us1_custom_provider.yaml");
        let llsd: crate::api::v1alpha2::LlamaStackDistribution =
            serde_saphyr::from_str(sample).unwrap();
        let annotations = of(&llsd.spec);
        let text = &annotations[EXTERNAL_PROVIDERS];
        assert!(text.contains("providerId: trustyai-fms"), "{text}");
        let mut read = spec_with(None);
        apply(Some(&annotations), &mut read).unwrap();
        assert_eq!(read.external_providers, llsd.spec.external_providers);
        let json = r#"{"inference": [{"providerId": "a", "image": "r/a:1"}]}"#;
        let mut from_json = spec_with(None);
        apply(
            Some(&BTreeMap::from([(
                EXTERNAL_PROVIDERS.to_owned(),
                json.to_owned(),
            )])),
            &mut from_json,
        )
        .unwrap();
        let providers = from_json.external_providers.unwrap();
        assert_eq!(providers.ordered()[0].1.image, "r/a:1");

        let at = |path: &str| format!("metadata.annotations[{EXTERNAL_PROVIDERS}]{path}");
        for (text, path, why) in [
            (
                "inference: [{providerId: a, image: r/a, imagePolicy: Always}]",
                ".inference[0].imagePolicy",
                "unknown field",
            ),
            (
                "inferense: [{providerId: a, image: r/a}]",
                ".inferense",
                "unknown field",
            ),
            (
                "agents: [{providerId: a, image: r/a}]",
                ".agents",
                "responses",
            ),
            (
                "postTraining: [{providerId: a, image: r/a}]",
                ".postTraining",
                "removed",
            ),
            (
                "inference: [{providerId: A_b, image: r/a}]",
                ".inference[0].providerId",
                "not a provider id",
            ),
            (
                "inference: [{providerId: a, image: r/a}, {providerId: a, image: r/b}]",
                ".inference[1].providerId",
                "twice",
            ),
            (
                "inference: [{providerId: a, image: ''}]",
                ".inference.a",
                "image is empty",
            ),
            ("inference: {providerId: a}", ".inference", "a list"),
            ("[1, 2]", "", "an object of API sections"),
            ("inference: [{providerId: a}]", "", "image"),
            ("{{", "", "not YAML"),
        ] {
            let error = refused(EXTERNAL_PROVIDERS, text);
            assert_eq!(error.field, at(path), "{text}: {}", error.why);
            assert!(error.why.contains(why), "{text}: {}", error.why);
        }
        // A provider's own config is kept whole: any key goes.
        let mut spec = spec_with(None);
        let text = "safety: [{providerId: a, image: r/a, config: {anything: {nested: 1}}}]";
        apply(
            Some(&BTreeMap::from([(
                EXTERNAL_PROVIDERS.to_owned(),
                text.to_owned(),
            )])),
            &mut spec,
        )
        .unwrap();
    }
}
