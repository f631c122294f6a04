//! Unit tests of the API types: the committed CRD, and the polymorphic forms in Rust.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::v1alpha2::{ExposeConfig, ModelConfigOrString, ProviderConfigOrList};
use super::{DEFAULT_CONVERSION_SERVICE, crd};

#[test]
fn committed_crd_matches_the_code() {
    let generated = super::crd_yaml(&DEFAULT_CONVERSION_SERVICE).unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crds/llamastackdistributions.llamastack.io.yaml"
    );
    let committed = std::fs::read_to_string(path).unwrap();
    assert!(
        generated == committed,
        "crds/ is out of date: run scripts/regenerate.sh (it writes every generated copy)"
    );
}

#[test]
fn committed_ogx_server_crd_matches_the_code() {
    let generated = super::ogx_crd_yaml().unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/crds/ogxservers.ogx.io.yaml");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated == committed,
        "crds/ is out of date: run scripts/regenerate.sh (it writes every generated copy)"
    );
}

#[test]
fn committed_api_reference_matches_the_code() {
    let generated = super::reference_markdown().unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api-reference.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated == committed,
        "docs/api-reference.md is out of date: run scripts/regenerate.sh (it writes every generated copy)"
    );
    for field in [
        "`spec.providers.inference`",
        "`spec.workload.autoscaling.maxReplicas`",
        "`status.observedGeneration`",
    ] {
        assert!(
            generated.contains(field),
            "{field} is missing from the reference"
        );
    }
}

#[test]
fn crd_stores_v1alpha2_and_converts_through_the_webhook() {
    let crd = crd(&DEFAULT_CONVERSION_SERVICE).unwrap();
    let storage: Vec<_> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.storage)
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(storage, ["v1alpha2"]);
    let conversion = crd.spec.conversion.unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let service = conversion
        .webhook
        .unwrap()
        .client_config
        .unwrap()
        .service
        .unwrap();
    assert_eq!(service.path.as_deref(), Some("/convert"));
}

#[test]
fn wrong_shapes_name_the_accepted_forms() {
    let err = serde_json::from_value::<ProviderConfigOrList>(json!("vllm")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a provider object or a list of provider objects, found a string"
    );
    let err = serde_json::from_value::<ModelConfigOrString>(json!(42)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a name (string) or a model object, found a number"
    );
    let err = serde_json::from_value::<ExposeConfig>(json!("yes")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected true, false or an object with enabled, hostname, ingressClassName and tlsSecretName, found a string"
    );
}

#[test]
fn errors_inside_a_form_point_at_the_field() {
    let err = serde_json::from_value::<ProviderConfigOrList>(json!([{"id": "a"}])).unwrap_err();
    assert!(
        err.to_string().contains("missing field `provider`"),
        "{err}"
    );
}

#[test]
fn list_form_is_remembered() {
    let one: ProviderConfigOrList = serde_json::from_value(json!({"provider": "vllm"})).unwrap();
    let many: ProviderConfigOrList = serde_json::from_value(json!([{"provider": "vllm"}])).unwrap();
    assert!(!one.is_list());
    assert!(many.is_list());
    assert_eq!(one.items(), many.items());
}

fn provider_json() -> impl Strategy<Value = Value> {
    (
        proptest::option::of("[a-z][a-z0-9-]{0,10}"),
        "[a-z][a-z-]{0,10}",
        proptest::option::of("http://[a-z]{1,8}:[0-9]{2,4}"),
        proptest::option::of(("[a-z]{1,8}", "[a-z]{1,8}")),
        proptest::option::of(proptest::collection::btree_map(
            "[a-z_]{1,8}",
            prop_oneof![
                any::<i64>().prop_map(Value::from),
                "[ -~]{0,12}".prop_map(Value::from),
                any::<bool>().prop_map(Value::from),
            ],
            0..4,
        )),
    )
        .prop_map(|(id, provider, endpoint, key, settings)| {
            let mut v = json!({"provider": provider});
            if let Some(id) = id {
                v["id"] = json!(id);
            }
            if let Some(endpoint) = endpoint {
                v["endpoint"] = json!(endpoint);
            }
            if let Some((name, key)) = key {
                v["apiKey"] = json!({"secretKeyRef": {"name": name, "key": key}});
            }
            if let Some(settings) = settings {
                v["settings"] = json!(settings);
            }
            v
        })
}

proptest! {
    #[test]
    fn provider_forms_round_trip_unchanged(
        providers in proptest::collection::vec(provider_json(), 1..4),
        as_list in any::<bool>(),
    ) {
        let input = if as_list || providers.len() > 1 {
            Value::Array(providers)
        } else {
            providers[0].clone()
        };
        let parsed: ProviderConfigOrList = serde_json::from_value(input.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&parsed).unwrap(), input);
    }

    #[test]
    fn model_forms_round_trip_unchanged(
        names in proptest::collection::vec("[a-zA-Z0-9./-]{1,20}", 1..5),
        objects in proptest::collection::vec(any::<bool>(), 1..5),
    ) {
        let input: Vec<Value> = names
            .iter()
            .zip(objects.iter().cycle())
            .map(|(n, obj)| if *obj { json!({"name": n, "contextLength": 4096}) } else { json!(n) })
            .collect();
        let parsed: Vec<ModelConfigOrString> = serde_json::from_value(Value::Array(input.clone())).unwrap();
        prop_assert_eq!(serde_json::to_value(&parsed).unwrap(), Value::Array(input));
    }

    #[test]
    fn expose_forms_round_trip_unchanged(
        form in prop_oneof![
            any::<bool>().prop_map(Value::from),
            Just(json!({})),
            "[a-z]{1,10}\\.example\\.com".prop_map(|h| json!({"hostname": h})),
            any::<bool>().prop_map(|e| json!({"enabled": e})),
        ],
    ) {
        let parsed: ExposeConfig = serde_json::from_value(form.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&parsed).unwrap(), form);
    }
}

/// Every API of the one list is a section of `externalProviders`, in the list's order.
#[test]
fn external_provider_sections_follow_the_api_list() {
    use super::apis::APIS;
    use super::common::ExternalProvidersSpec;
    let mut spec = serde_json::Map::new();
    for (i, (api, _)) in APIS.iter().enumerate().rev() {
        spec.insert(
            (*api).to_owned(),
            json!([{"providerId": format!("p{i}"), "image": "registry.example.com/p:1"}]),
        );
    }
    let spec: ExternalProvidersSpec = serde_json::from_value(Value::Object(spec)).unwrap();
    let sections: Vec<&str> = spec.ordered().iter().map(|(api, _)| *api).collect();
    let expected: Vec<&str> = APIS.iter().map(|(api, _)| *api).collect();
    assert_eq!(sections, expected);
}

/// `kubectl explain llsd` opens with the root description: written for people, not the derive
/// macro's placeholder.
#[test]
fn the_root_description_is_written_for_people() {
    let crd = super::crd(&super::DEFAULT_CONVERSION_SERVICE).expect("CRD");
    for version in crd.spec.versions {
        let description = version
            .schema
            .and_then(|s| s.open_api_v3_schema)
            .and_then(|s| s.description)
            .unwrap_or_default();
        assert!(
            description.starts_with("A llama-stack server")
                && !description.contains("Auto-generated"),
            "{}: {description}",
            version.name
        );
    }
}

/// The operator's cache holds one decoded stack per LlamaStackDistribution: the spec's large,
/// mostly absent parts (providers, storage, networking, workload, external providers) are boxed,
/// so an absent one costs a pointer, not its whole size (5016 bytes a stack before, 1592 after).
#[test]
fn a_cached_stack_does_not_carry_the_size_of_the_parts_it_lacks() {
    let size = std::mem::size_of::<super::v1alpha2::LlamaStackDistribution>();
    assert!(size <= 2048, "a decoded stack is {size} bytes inline");
}
