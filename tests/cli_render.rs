//! `llama-stack-operator render` on every v1alpha2 sample: offline, on the embedded configs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::path::PathBuf;
use std::process::Command;

use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_operator::stack_config::{ProviderTable, generate};
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
        let base = llama_stack_resolver::embedded_base_config("starter")
            .unwrap()
            .unwrap();
        let expected = generate(
            &cr.spec,
            &base,
            ProviderTable::for_server(base.server.as_ref()),
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

/// Each warning once, with the file it is about: admission and generation find the same ones.
#[test]
fn each_warning_is_printed_once_with_its_file() {
    let file = sample("v1alpha2_us1_minimal_inference.yaml");
    let (code, _, stderr) = render(&["-f", &file, "--config"]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("default_embedding_model")),
        "replacing the starter's inference providers drops its embedding model default: {stderr}"
    );
    for warning in &warnings {
        assert!(
            warning.starts_with(&format!("warning: {file}: ")),
            "{warning}"
        );
        assert_eq!(
            warnings.iter().filter(|w| *w == warning).count(),
            1,
            "printed more than once: {warning}\n{stderr}"
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
            "distribution \"ollama\" has no published image any more",
        ),
        (
            write(
                "b.yaml",
                "  distribution: {image: quay.io/x/y:1}\n  disabled: [eval]\n",
            ),
            "spec.disabled asks for a generated config, and the base config of quay.io/x/y:1 is in its labels",
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
        // What the API server refuses, render refuses too, naming the field.
        (
            write(
                "e.yaml",
                "  distribution: {name: starter}\n  providres: {}\n",
            ),
            "spec.providres: unknown field",
        ),
        (
            write(
                "f.yaml",
                "  distribution: {name: starter}\n  networking: {port: 80}\n",
            ),
            "spec.networking.port: Invalid value: 80: spec.networking.port in body should be greater than or equal to 1024",
        ),
        (
            write(
                "g.yaml",
                "  distribution: {name: starter}\n  workload: {replicas: -1}\n",
            ),
            "spec.workload.replicas: Invalid value: -1",
        ),
    ];
    for (path, needle) in cases {
        let (code, _, stderr) = render(&["-f", &path]);
        assert_eq!(code, 1, "{path}");
        assert!(stderr.contains(needle), "{path}: {stderr}");
    }
}

/// An in-house image whose labels do not name its server runs as `distribution.serverVersion`
/// declares: OGX 1.3.0 through the image's entrypoint with `OGX_*` variables and a config that
/// lets it serve plain HTTP, and generation follows OGX's provider table; without the field the
/// image is taken for llama-stack 0.x, as before.
#[test]
fn a_declared_server_version_decides_how_an_unlabelled_image_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs-ogx/starter/config.yaml");
    let manifest = |version: &str, extra: &str| {
        let path = tmp.path().join(format!("inhouse-{version}.yaml"));
        let version = if version.is_empty() {
            String::new()
        } else {
            format!(", serverVersion: '{version}'")
        };
        std::fs::write(&path, format!("apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {{name: inhouse}}\nspec:\n  distribution: {{image: registry.example/inhouse:1{version}}}\n  providers:\n    inference: {{provider: vllm, endpoint: 'http://vllm:8000/v1'}}\n{extra}")).unwrap();
        path.display().to_string()
    };
    let server_of = |file: &str| {
        let (code, stdout, stderr) =
            render(&["-f", file, "--base-config", &base.display().to_string()]);
        assert_eq!(code, 0, "{stderr}");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
        let deployment = docs
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .unwrap()
            .clone();
        let (_, config, _) = render(&[
            "-f",
            file,
            "--base-config",
            &base.display().to_string(),
            "--config",
        ]);
        let config: Value = serde_saphyr::from_str(&config).unwrap();
        (
            deployment["spec"]["template"]["spec"]["containers"][0].clone(),
            config,
        )
    };
    let env_names = |container: &Value| -> Vec<String> {
        container["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    };

    let (ogx, config) = server_of(&manifest("1.3.0", ""));
    assert!(
        ogx.get("command").is_none(),
        "the image's entrypoint runs: {ogx}"
    );
    assert!(env_names(&ogx).contains(&"OGX_PORT".to_owned()), "{ogx}");
    assert_eq!(
        config["server"]["insecure"], true,
        "OGX 1.3.0 needs leave to serve plain HTTP: {config}"
    );

    let (llama, config) = server_of(&manifest("", ""));
    assert_eq!(
        llama["command"][0], "llama",
        "taken for llama-stack: {llama}"
    );
    assert!(
        env_names(&llama).contains(&"LLAMA_STACK_PORT".to_owned()),
        "{llama}"
    );
    assert!(config["server"].get("insecure").is_none(), "{config}");

    // Under spec.providers, beside inference.
    let safety = manifest("1.3.0", "    safety: {provider: llama-guard}\n");
    let (code, _, stderr) = render(&["-f", &safety, "--base-config", &base.display().to_string()]);
    assert_ne!(code, 0, "OGX 1.3.0 has no safety API");
    assert!(
        stderr.contains("OGX 1.3.0") && stderr.contains("safety"),
        "{stderr}"
    );
}

/// `baseConfig` on a named distribution: the user's ConfigMap is the base, but the server is the
/// one the distribution's image runs (its config tells it; offline, the embedded one), as the
/// controller decides: render and the controller share one decision. Render once ran such a
/// stack on the server an unlabelled image is taken for (llama-stack), which the OGX image of
/// the catalog does not have.
#[test]
fn a_base_config_map_on_a_named_distribution_runs_the_server_of_its_image() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs-ogx/starter/config.yaml"),
    )
    .unwrap();
    let indented: String = base.lines().map(|l| format!("    {l}\n")).collect();
    let path = tmp.path().join("base.yaml");
    std::fs::write(
        &path,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: my-base}}\ndata:\n  config.yaml: |\n{indented}---\napiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {{name: based}}\nspec:\n  distribution: {{name: starter}}\n  baseConfig: {{configMapName: my-base}}\n"),
    )
    .unwrap();
    let (code, stdout, stderr) = render(&["-f", &path.display().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let server = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(
        server["image"]
            .as_str()
            .unwrap()
            .contains("ogxai/distribution-starter"),
        "{server}"
    );
    assert!(
        server.get("command").is_none(),
        "the OGX image's entrypoint runs: {server}"
    );
    assert!(
        server["env"].to_string().contains("\"OGX_CONFIG\""),
        "the OGX server's variables: {server}"
    );
}

/// The plan's warnings, which the controller puts in `ConfigGenerated`, are render's too (one
/// decision): a budget that blocks every drain (a real manifest), workers an image's own config
/// does not see; each once.
#[test]
fn the_plans_warnings_are_printed_as_the_controller_gives_them() {
    let warned_once = |file: &std::path::Path, warning: &str| {
        let (code, _, stderr) = render(&["-f", &file.display().to_string()]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    };
    let real = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real-world/02-odh-sample-pdb-minavailable.yaml");
    warned_once(
        &real,
        "workload.podDisruptionBudget lets no Pod of 1 replica(s) be evicted",
    );
    let tmp = tempfile::tempdir().unwrap();
    let own = tmp.path().join("own.yaml");
    std::fs::write(&own, "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: own}\nspec:\n  distribution: {image: quay.io/x/y:1}\n  workload: {workers: 3}\n").unwrap();
    warned_once(
        &own,
        "workload.workers (3) has no effect: the server runs the image's own config",
    );
}

/// What the cluster would run when render cannot generate: an image's own config (nothing
/// mounted, its own entrypoint), and a user's ConfigMap mounted whole, its key found in the
/// ConfigMap when it is among the inputs.
#[test]
fn an_images_own_config_and_a_users_config_map_render_as_the_cluster_runs_them() {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("image.yaml");
    std::fs::write(&image, "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: own}\nspec:\n  distribution: {image: quay.io/x/y:1}\n").unwrap();
    let (code, stdout, stderr) = render(&["-f", &image.display().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    assert!(docs.iter().all(|d| d["kind"] != "ConfigMap"), "{stdout}");
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let server = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(server["image"], "quay.io/x/y:1");
    assert!(
        server.get("command").is_none(),
        "the image's entrypoint runs: {server}"
    );

    let user = tmp.path().join("user.yaml");
    std::fs::write(
        &user,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: my-config}\ndata:\n  run.yaml: |\n    version: 2\n    providers: {inference: [{provider_id: a, provider_type: remote::vllm, config: {}}]}\n---\n".to_owned()
            + "apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: mine}\nspec:\n  distribution: {name: starter}\n  overrideConfig: {configMapName: my-config}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = render(&["-f", &user.display().to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    assert!(
        pod["volumes"].to_string().contains("\"my-config\""),
        "the user's ConfigMap is mounted: {pod}"
    );
    assert!(
        pod["containers"][0].to_string().contains("run.yaml"),
        "the server runs the ConfigMap's run.yaml: {}",
        pod["containers"][0]
    );
    let (code, config, _) = render(&["-f", &user.display().to_string(), "--config"]);
    assert_eq!(code, 0);
    assert!(config.contains("provider_id: a"), "{config}");
}

/// Inputs as users have them: several documents, `kind: List` (what `kubectl get -o yaml`
/// prints), standard input, and v1alpha1 (converted as the conversion webhook converts it).
#[test]
fn lists_several_documents_stdin_and_v1alpha1_render() {
    let v1alpha1 = "apiVersion: llamastack.io/v1alpha1\nkind: LlamaStackDistribution\nmetadata: {name: upstream}\nspec:\n  replicas: 1\n  server:\n    distribution: {name: starter}\n";
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}\n",
        serde_json::to_string(&serde_saphyr::from_str::<Value>(v1alpha1).unwrap()).unwrap()
    );
    let input = format!(
        "{list}---\n{}",
        std::fs::read_to_string(sample("v1alpha2_us1_minimal_inference.yaml")).unwrap()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .args(["render", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let deployments: Vec<&str> = docs
        .iter()
        .filter(|d| d["kind"] == "Deployment")
        .map(|d| d["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(deployments.len(), 2, "{deployments:?}");
    assert_eq!(deployments[0], "upstream");
}

/// Every real manifest of `tests/fixtures/real-world` (written outside this project) renders
/// offline, as the cluster would run it; those the API server refuses, or the controller stops
/// for an unpublished distribution, are refused by render, naming why. The Open Data Hub build's name comes from image-overrides, as
/// its platform team would map it.
#[test]
fn every_real_manifest_renders_or_is_refused_as_the_api_server_refuses_it() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-world");
    let tmp = tempfile::tempdir().unwrap();
    let overrides = tmp.path().join("image-overrides.yaml");
    std::fs::write(&overrides, "rh-dev: quay.io/opendatahub/llama-stack:odh\n").unwrap();
    let refused = [
        (
            "10-v1alpha2-vllm-postgres.yaml",
            "spec.storage.sql.connectionString.key: unknown field",
        ),
        // Names no published image carries: the cluster admits them with a warning and runs
        // nothing; render cannot show what would run.
        (
            "04-upstream-ca-bundle-remote-vllm.yaml",
            "distribution \"remote-vllm\" has no published image any more",
        ),
        (
            "05-upstream-multiple-ca-keys.yaml",
            "distribution \"remote-vllm\" has no published image any more",
        ),
        (
            "25-yagohar-ollama.yaml",
            "distribution \"ollama\" has no published image any more",
        ),
        (
            "32-genaiops-helm-remote-vllm.yaml",
            "distribution \"remote-vllm\" has no published image any more",
        ),
    ];
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 35);
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let (code, stdout, stderr) = render(&[
            "-f",
            &file.display().to_string(),
            "--overrides",
            &overrides.display().to_string(),
        ]);
        match refused.iter().find(|(f, _)| *f == name) {
            Some((_, needle)) => {
                assert_eq!(code, 1, "{name} renders, the API server refuses it");
                assert!(stderr.contains(needle), "{name}: {stderr}");
            }
            None => {
                assert_eq!(code, 0, "{name}: {stderr}");
                let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
                assert!(
                    docs.iter().any(|d| d["kind"] == "Deployment"),
                    "{name}: no Deployment in {stdout}"
                );
            }
        }
    }
}

/// `OGXServer`s render as the controller serves them (the OGX operator's samples, from
/// tests/fixtures/ogx-operator): its names and labels, the config generated over a `baseConfig`
/// ConfigMap given beside it, a client identity mounted, and what is not served yet refused
/// with the field.
#[test]
fn ogx_servers_render_through_their_door() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ogx-operator");
    let monitoring = format!("{samples}/example-with-monitoring.yaml");
    let (code, out, err) = render(&["-f", &monitoring]);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&out).unwrap();
    let deployment = docs
        .iter()
        .find(|d| {
            d["kind"] == "Deployment" && d["metadata"]["name"] == "ogxserver-monitoring-custom-port"
        })
        .unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "ogx");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"]["app"],
        "ogx"
    );
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "ogx-operator"
    );
    assert!(
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "metrics" && p["containerPort"] == 9090),
        "{container:#}"
    );

    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("based.yaml");
    std::fs::write(
        &manifest,
        r#"apiVersion: v1
kind: ConfigMap
metadata: {name: my-base}
data:
  base.yaml: |
    version: 2
    distro_name: mine
    apis: [inference]
    providers:
      inference:
      - {provider_id: mine, provider_type: remote::vllm, config: {base_url: "http://mine:8000/v1"}}
---
apiVersion: ogx.io/v1beta1
kind: OGXServer
metadata: {name: based}
spec:
  distribution: {name: starter}
  baseConfig: {name: my-base, key: base.yaml}
  resources:
    models: [{name: m, provider: mine}]
"#,
    )
    .unwrap();
    let (code, config, err) = render(&["-f", manifest.to_str().unwrap(), "--config"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        config.contains("distro_name: mine") && config.contains("model_id: m"),
        "{config}"
    );
    // Without its ConfigMap, render says where the base config is.
    let alone = dir.path().join("alone.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&alone, text.split("---\n").nth(1).unwrap()).unwrap();
    let (code, _, err) = render(&["-f", alone.to_str().unwrap(), "--config"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("spec.baseConfig") && err.contains("my-base"),
        "{err}"
    );

    // tls.identity is served: the Pod mounts the certificate and the key.
    let identity = dir.path().join("identity.yaml");
    std::fs::write(&identity, "apiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata: {name: i}\nspec:\n  distribution: {name: starter}\n  tls:\n    identity:\n      cert: {name: c, key: tls.crt}\n      key: {name: c, key: tls.key}\n").unwrap();
    let (code, out, err) = render(&["-f", identity.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("/etc/llama-stack-client-identity"), "{out}");
    // What the model cannot carry is refused with the field: here this operator's annotation
    // with a key the CRD's externalProviders does not have.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: ogx.io/v1beta1\nkind: OGXServer\nmetadata:\n  name: t\n  annotations:\n    llamastack.io/external-providers: 'inference: [{providerId: a, image: r/a, pullPolicy: Always}]'\nspec:\n  distribution: {name: starter}\n").unwrap();
    let (code, _, err) = render(&["-f", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(
        err.contains(
            "metadata.annotations[llamastack.io/external-providers].inference[0].pullPolicy"
        ),
        "{err}"
    );
}
