//! The decision of which config a stack's server runs, as a table: the same decision the
//! controller's plan and `render` take.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use llama_stack_resolver::embedded_base_config;
use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};
use serde_json::{Value, json};

use super::*;
use crate::api::v1alpha2::LlamaStackDistribution;

fn resource(spec: Value) -> LlamaStackDistribution {
    serde_json::from_value(
        json!({"apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u-1"}, "spec": spec}),
    )
    .unwrap()
}

fn config_map(data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..ConfigMap::default()
    }
}

/// Each field only a generated config carries refuses the image's own config, naming itself;
/// a spec with none of them runs the image's config, with nothing generated or mounted.
#[test]
fn only_a_spec_that_asks_for_nothing_generated_runs_the_images_config() {
    let image = "registry.corp/own:1";
    let table = [
        (json!({}), None),
        (
            json!({"providers": {"inference": {"provider": "vllm", "endpoint": "http://v:8000/v1"}}}),
            Some("spec.providers"),
        ),
        (
            json!({"resources": {"models": ["m"]}}),
            Some("spec.resources"),
        ),
        (json!({"storage": {"kv": {}}}), Some("spec.storage")),
        (json!({"disabled": ["safety"]}), Some("spec.disabled")),
        (json!({"disabled": []}), None),
        (
            json!({"networking": {"tls": {"enabled": true, "secretName": "t"}}}),
            Some("spec.networking.tls.enabled"),
        ),
        (json!({"networking": {"tls": {"enabled": false}}}), None),
        (json!({"workload": {"replicas": 2}}), None),
    ];
    for (extra, refused_by) in table {
        let mut spec = json!({"distribution": {"image": image}});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let cr = resource(spec.clone());
        let stack = Stack::read(&cr).unwrap();
        let decided = image_own(&stack, ServerRelease::ASSUMED);
        match refused_by {
            Some(field) => assert_eq!(decided.map(|r| r.config).unwrap_err(), field, "{spec}"),
            None => {
                let run = decided.unwrap_or_else(|f| panic!("{spec}: refused by {f}"));
                assert_eq!(run.config, ServerConfig::Image, "{spec}");
                assert_eq!(run.config.config_map(), None);
                assert!(run.generated.yaml.is_empty() && run.generated.hash.is_empty());
            }
        }
    }
}

/// The user's ConfigMap is the config as it is: mounted whole, its config key run, hashed over
/// every key; one that holds no config is refused with a message naming it.
#[test]
fn a_users_config_map_runs_as_it_is() {
    let yaml =
        "version: 2\nproviders:\n  inference: [{provider_id: a, provider_type: remote::vllm}]\n";
    // The ConfigMap's data, and the key it runs or words of the refusal.
    type Row<'a> = (&'a [(&'a str, &'a str)], Result<&'a str, &'a str>);
    let table: [Row; 4] = [
        (&[("config.yaml", yaml), ("notes", "x")], Ok("config.yaml")),
        (&[("run.yaml", yaml), ("notes", "x")], Ok("run.yaml")),
        (&[("only-key", yaml)], Ok("only-key")),
        (
            &[("a", yaml), ("b", yaml)],
            Err("no config.yaml or run.yaml key"),
        ),
    ];
    for (data, expected) in table {
        let decided = from_user_config("mine", None, &config_map(data), ServerRelease::ASSUMED);
        match expected {
            Ok(key) => {
                let run = decided.unwrap();
                let wanted = ServerConfig::User {
                    config_map: "mine".to_owned(),
                    key: key.to_owned(),
                };
                assert_eq!(run.config, wanted);
                assert_eq!(run.generated.yaml, yaml);
                assert_eq!(run.generated.provider_count, 1);
                assert!(run.generated.hash.starts_with("sha256:"));
            }
            Err(words) => {
                let Unrunnable::Unusable(message) = decided.unwrap_err() else {
                    panic!("refused as another line's config")
                };
                assert!(
                    message.contains(words) && message.contains("\"mine\""),
                    "{message}"
                );
            }
        }
    }
}

/// A generated config lands in the ConfigMap named by its own hash, and the server is the one the
/// base config names, unless the spec declares one the base config does not.
#[test]
fn a_generated_config_is_named_by_its_hash_and_runs_on_the_base_configs_server() {
    let base = embedded_base_config("starter").unwrap().unwrap();
    let cr = resource(json!({"distribution": {"name": "starter"}}));
    let stack = Stack::read(&cr).unwrap();
    let run = from_base(&stack, &base).unwrap();
    let hex = run.generated.hash.strip_prefix("sha256:").unwrap();
    assert_eq!(
        run.config,
        ServerConfig::Generated(format!("s-config-{}", &hex[..8]))
    );
    assert_eq!(Some(run.server), base.server);

    let mut unlabelled = BaseConfig::clone(&base);
    unlabelled.server = None;
    let cr = resource(
        json!({"distribution": {"image": "registry.corp/own:1", "serverVersion": "0.7.3"}}),
    );
    let stack = Stack::read(&cr).unwrap();
    let run = from_base(&stack, &Arc::new(unlabelled)).unwrap();
    assert_eq!(Some(run.server), stack.declared_server);

    // RHOAI's image names the OGX line without a release (its version labels are `0.0`): the
    // release the spec declares completes it; a release the labels name wins over the spec.
    let mut rhoai = BaseConfig::clone(&base);
    rhoai.server = Some(ServerRelease {
        line: ServerLine::Ogx,
        version: None,
        evidence: Evidence::OgxConfigLabels,
        suffixed: false,
    });
    let cr = resource(
        json!({"distribution": {"image": "registry.redhat.io/rhoai/odh-ogx-core-rhel9:v3.5", "serverVersion": "1.2.4"}}),
    );
    let stack = Stack::read(&cr).unwrap();
    let run = from_base(&stack, &Arc::new(rhoai)).unwrap();
    assert_eq!(run.server.version, Some(ServerVersion::new(1, 2, 4)));
    let cr = resource(
        json!({"distribution": {"image": "docker.io/ogxai/distribution-starter:1.3.0", "serverVersion": "1.2.4"}}),
    );
    let stack = Stack::read(&cr).unwrap();
    let run = from_base(&stack, &base).unwrap();
    assert_eq!(run.server, base.server.unwrap(), "the labels' release wins");
}

#[test]
fn the_images_labels_win_over_the_declared_release_which_wins_over_the_assumption() {
    let stack_with =
        |distribution: serde_json::Value| resource(json!({"distribution": distribution}));
    let declared = stack_with(json!({"image": "reg/i:1", "serverVersion": "1.3.0"}));
    let declared = Stack::read(&declared).unwrap();
    let ogx_1_3 = ServerRelease {
        line: ServerLine::Ogx,
        version: Some(ServerVersion::new(1, 3, 0)),
        evidence: Evidence::Spec,
        suffixed: false,
    };
    assert_eq!(server(&declared, None), ogx_1_3);
    let labelled = ServerRelease {
        line: ServerLine::LlamaStack,
        version: Some(ServerVersion::new(0, 7, 3)),
        evidence: Evidence::LlamaStackLabels,
        suffixed: false,
    };
    assert_eq!(server(&declared, Some(labelled)), labelled);

    let old = stack_with(json!({"image": "reg/i:1", "serverVersion": "v0.6"}));
    let old = Stack::read(&old).unwrap();
    assert_eq!(
        (server(&old, None).line, server(&old, None).version),
        (ServerLine::LlamaStack, Some(ServerVersion::new(0, 6, 0)))
    );
    let silent = stack_with(json!({"image": "reg/i:1"}));
    assert_eq!(
        server(&Stack::read(&silent).unwrap(), None),
        ServerRelease::ASSUMED
    );

    let unlabelled = std::sync::Arc::new(
        llama_stack_resolver::base_config::parse_base_config(
            b"version: 2\nproviders: {}\n",
            None,
            llama_stack_resolver::base_config::ConfigSource::OciLabel,
        )
        .unwrap(),
    );
    assert_eq!(
        base_for_server(&declared, &unlabelled).server,
        Some(ogx_1_3)
    );
    assert_eq!(
        unlabelled.server, None,
        "the shared config stays as the image said"
    );
    let told = std::sync::Arc::new(BaseConfig {
        server: Some(labelled),
        ..BaseConfig::clone(&unlabelled)
    });
    assert!(std::sync::Arc::ptr_eq(
        &base_for_server(&declared, &told),
        &told
    ));
}
