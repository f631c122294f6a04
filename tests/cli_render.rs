//! `llama-stack-operator render` on every v1alpha2 sample: offline, on the embedded configs.

use std::path::PathBuf;
use std::process::Command;

use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_operator::config::{ProviderTable, generate};
use serde_json::Value;

fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .arg("render")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sample(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/samples")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn every_generating_sample_renders_a_hash_named_immutable_config_map() {
    const BASE: &[&str] = &["ConfigMap", "ServiceAccount", "Deployment", "Service"];
    // us5 sets allowedFrom and expose; us8 sets storage, autoscaling with two replicas at least.
    const NETWORKED: &[&str] = &[
        "ConfigMap",
        "ServiceAccount",
        "Deployment",
        "Service",
        "NetworkPolicy",
        "Ingress",
    ];
    const PRODUCTION: &[&str] = &[
        "ConfigMap",
        "ServiceAccount",
        "PersistentVolumeClaim",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ];
    for (name, expected_kinds) in [
        ("v1alpha2_us1_minimal_inference.yaml", BASE),
        ("v1alpha2_us1_distribution_defaults.yaml", BASE),
        ("v1alpha2_us2_multiple_providers.yaml", BASE),
        ("v1alpha2_us3_resources.yaml", BASE),
        ("v1alpha2_us4_state_storage.yaml", BASE),
        ("v1alpha2_us5_networking.yaml", NETWORKED),
        ("v1alpha2_us8_production.yaml", PRODUCTION),
        ("v1alpha2_ext_us1_custom_provider.yaml", BASE),
        ("v1alpha2_ext_us2_override_provider.yaml", BASE),
    ] {
        let path = sample(name);
        let (code, stdout, stderr) = render(&["-f", &path]);
        assert_eq!(code, 0, "{name}: {stderr}");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
        let kinds: Vec<&str> = docs
            .iter()
            .map(|d| d["kind"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(kinds, expected_kinds, "{name}");
        let cm = &docs[0];
        let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
        assert_eq!(
            deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
            cm["metadata"]["name"],
            "{name}: the Deployment mounts the generated ConfigMap"
        );
        let cr: LlamaStackDistribution =
            serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let expected = generate(
            &cr.spec,
            &llama_stack_resolver::embedded::embedded_base_config("starter")
                .unwrap()
                .unwrap(),
            ProviderTable::embedded(),
        )
        .unwrap();
        let hex = expected.hash.trim_start_matches("sha256:");
        assert_eq!(cm["kind"], "ConfigMap");
        assert_eq!(cm["immutable"], true);
        assert_eq!(
            cm["metadata"]["name"],
            format!("{}-config-{}", cr.metadata.name.unwrap(), &hex[..8]),
            "{name}"
        );
        assert_eq!(cm["data"]["config.yaml"], expected.yaml.as_str(), "{name}");
        let (code, config, _) = render(&["-f", &path, "--config"]);
        assert_eq!(
            (code, config.as_str()),
            (0, expected.yaml.as_str()),
            "{name} --config"
        );
        let (_, again, _) = render(&["-f", &path]);
        assert_eq!(
            again, stdout,
            "{name}: rendering twice gives the same bytes"
        );
    }
}

#[test]
fn env_output_names_secrets_but_never_holds_values() {
    let (code, stdout, _) = render(&[
        "-f",
        &sample("v1alpha2_us2_multiple_providers.yaml"),
        "--env",
    ]);
    assert_eq!(code, 0);
    let env: Vec<Value> = serde_saphyr::from_str(&stdout).unwrap();
    let names: Vec<&str> = env.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["LLSD_OPENAI_FALLBACK_API_KEY", "LLSD_VLLM_PRIMARY_API_KEY"]
    );
    assert_eq!(env[1]["secretKeyRef"]["name"], "vllm-credentials");
}

#[test]
fn errors_name_the_field_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, spec: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, format!("apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {{name: x}}\nspec:\n{spec}")).unwrap();
        path.display().to_string()
    };
    let cases = [
        (
            write("a.yaml", "  distribution: {name: ollama}\n"),
            "spec.distribution.name: distribution \"ollama\" no longer exists in llama-stack 0.7",
        ),
        (
            write("b.yaml", "  distribution: {image: quay.io/x/y:1}\n"),
            "spec.distribution.image: the base config comes from the image's labels",
        ),
        (
            write(
                "c.yaml",
                "  distribution: {name: starter}\n  providers:\n    inference: [{provider: vllm}, {provider: openai}]\n",
            ),
            "spec.providers.inference[0].id: id is required when inference lists more than one provider",
        ),
        (
            write(
                "d.yaml",
                "  distribution: {name: starter}\n  providers:\n    inference: vllm\n",
            ),
            "expected a provider object or a list of provider objects, found a string",
        ),
        (
            sample("v1alpha2_us6_override_config.yaml"),
            "spec.overrideConfig: the server uses ConfigMap \"my-llama-stack-config\" as is",
        ),
    ];
    for (path, needle) in cases {
        let (code, _, stderr) = render(&["-f", &path]);
        assert_eq!(code, 1, "{path}");
        assert!(stderr.contains(needle), "{path}: {stderr}");
    }
}
