//! External providers end to end: the Deployment the operator's builders make for a
//! LlamaStackDistribution with `externalProviders` is run on this machine by a Pod stand-in
//! (`support::pod_runner`): the init containers' real commands (this binary's `install-tools`
//! and `stage-provider`, the install and preflight steps with the llama-stack 0.7.3 venv, or the
//! OGX 1.3.0 one, standing in for the distribution image, `merge-config`), then the real server.
//! Provider images are directories built here following the provider image contract (the two
//! examples, `examples/provider` for llama-stack and `examples/ogx-provider` for OGX, by their own
//! scripts); their termination messages go through the operator's status mapping, as a Pod's
//! would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use libtest_mimic::Failed;
use llama_stack_operator::api::common::{ExternalProviderPhase, ExternalProviderStatus};
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use llama_stack_operator::core::builders::{self, Inputs};
use llama_stack_operator::core::external_status::provider_statuses;
use llama_stack_operator::core::stack::Stack;
use llama_stack_resolver::server_line::ServerRelease;
use serde_json::{Value, json};
use support::harness::{run_suite, table};
use support::llama_stack::{self, Server, ServerLine, http_post};
use support::pod_runner::{Image, PodRunner, Step};
use support::sealed;

const DISTRIBUTION: &str = "docker.io/llamastack/distribution-starter:0.7.3";
/// The OGX starter the catalog pins (OGX 1.3.0).
const OGX_DISTRIBUTION: &str = "docker.io/ogxai/distribution-starter:1.3.0";
const OPERATOR: &str = "ghcr.io/llamastack/llama-stack-operator:test";
const ACME: &str = "registry.example.com/acme/words:0.1.0";
const FMS: &str = "registry.example.com/trustyai/fms-provider:0.4.0";
const ECHO: &str = "registry.example.com/acme/echo:0.1.0";

struct Env {
    venv: PathBuf,
    ogx_venv: PathBuf,
    work: tempfile::TempDir,
    operator_image: PathBuf,
    acme: PathBuf,
    /// The example OGX provider's image (`examples/ogx-provider`).
    echo: PathBuf,
}

/// The distribution image a Pod runs: its reference, the venv standing in for it, and the server
/// it runs.
struct Distribution<'a> {
    image: &'static str,
    venv: &'a Path,
    server: ServerRelease,
}

impl Env {
    /// The llama-stack 0.7.3 starter.
    fn llama_stack(&self) -> Distribution<'_> {
        Distribution {
            image: DISTRIBUTION,
            venv: &self.venv,
            // As the suite always ran it: an image that says nothing of its server.
            server: ServerRelease::ASSUMED,
        }
    }

    /// The OGX 1.3.0 starter, as the catalog pins it.
    fn ogx(&self) -> Distribution<'_> {
        Distribution {
            image: OGX_DISTRIBUTION,
            venv: &self.ogx_venv,
            server: ServerRelease::CATALOG,
        }
    }
}

/// The base of every case: inference through a vLLM endpoint nobody serves (no model needed)
/// and only the APIs the cases use.
fn spec(external: Value) -> Value {
    json!({"distribution": {"name": "starter"},
        "providers": {"inference": {"provider": "vllm", "endpoint": "http://127.0.0.1:9/v1"}},
        "disabled": ["vectorIo", "toolRuntime", "files", "batches", "scoring", "eval", "datasetIo", "responses", "fileProcessors"],
        "externalProviders": external})
}

struct PodRun {
    runner: PodRunner,
    steps: Vec<Step>,
    pod: k8s_openapi::api::core::v1::PodSpec,
    statuses: Vec<ExternalProviderStatus>,
}

fn run_pod(env: &Env, spec: Value, images: &[(&str, PathBuf)]) -> Result<PodRun, Failed> {
    run_pod_on(env, &env.llama_stack(), spec, images)
}

fn run_pod_on(
    env: &Env,
    distribution: &Distribution<'_>,
    spec: Value,
    images: &[(&str, PathBuf)],
) -> Result<PodRun, Failed> {
    let cr: LlamaStackDistribution = serde_json::from_value(json!({
        "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "ext", "namespace": "default", "uid": "u-1"}, "spec": spec}))?;
    let generated = llama_stack::generate_over_starter(distribution.server.line, &cr.spec)?;
    let config_map = format!("ext-config-{}", &generated.hash[7..15]);
    let inputs = Inputs {
        image: distribution.image,
        server: distribution.server,
        generated: Some(&generated),
        config: builders::ServerConfig::Generated(config_map.clone()),
        operator_image: OPERATOR,
        ..Default::default()
    };
    let stack = Stack::read(&cr)?;
    let desired = builders::desired(&stack, &inputs)?;
    let pod = desired
        .deployment
        .spec
        .ok_or("no spec")?
        .template
        .spec
        .ok_or("no pod")?;
    let mut image_map: HashMap<String, Image> = HashMap::from([
        (
            distribution.image.to_owned(),
            Image::Python(distribution.venv.to_owned()),
        ),
        (
            OPERATOR.to_owned(),
            Image::Files(env.operator_image.clone()),
        ),
    ]);
    for (reference, dir) in images {
        image_map.insert((*reference).to_owned(), Image::Files(dir.clone()));
    }
    let config_maps = HashMap::from([(
        config_map.clone(),
        BTreeMap::from([("config.yaml".to_owned(), generated.yaml.clone())]),
    )]);
    let runner = PodRunner::new(image_map, config_maps).map_err(|e| e.to_string())?;
    let steps = runner
        .run_init_containers(&pod)
        .map_err(|e| e.to_string())?;
    let status: Pod = serde_json::from_value(PodRunner::pod_status(&steps))?;
    let statuses = provider_statuses(
        &stack.external_providers,
        Some(&status),
        &[],
        jiff::Timestamp::now(),
    );
    Ok(PodRun {
        runner,
        steps,
        pod,
        statuses,
    })
}

fn start_server(env: &Env, run: &PodRun, name: &str) -> Result<Server, Failed> {
    start_server_of(env, &env.llama_stack(), run, name)
}

fn start_server_of(
    env: &Env,
    distribution: &Distribution<'_>,
    run: &PodRun,
    name: &str,
) -> Result<Server, Failed> {
    let main = &run.pod.containers[0];
    let vars = run.runner.env(main);
    let config_var = match distribution.server.line {
        ServerLine::LlamaStack => "LLAMA_STACK_CONFIG",
        ServerLine::Ogx => "OGX_CONFIG",
    };
    let config = vars
        .iter()
        .find(|(k, _)| k == config_var)
        .ok_or_else(|| format!("no {config_var}"))?
        .1
        .clone();
    let passed: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| k == "PYTHONPATH")
        .collect();
    let dir = env.work.path().join(name);
    std::fs::create_dir_all(&dir)?;
    Server::start(distribution.venv, Path::new(&config), &passed, &dir)
        .map_err(|e| Failed::from(e.to_string()))
}

fn all_succeeded(run: &PodRun) -> Result<(), Failed> {
    for step in &run.steps {
        if step.exit_code != 0 {
            return Err(format!(
                "{} failed ({}):\n{}\n{}",
                step.name, step.exit_code, step.termination_message, step.output
            )
            .into());
        }
    }
    let names: Vec<&str> = run.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names.last(),
        Some(&"preflight"),
        "every step ran: {names:?}"
    );
    Ok(())
}

/// Every step succeeded, the one provider is Ready, and `installed` (`<id>: <distribution>==<v>`)
/// is all that was installed: only what the image lacks.
fn installed_alone(run: &PodRun, installed: &str) -> Result<(), Failed> {
    all_succeeded(run)?;
    assert_eq!(
        run.statuses[0].phase,
        ExternalProviderPhase::Ready,
        "{:?}",
        run.statuses
    );
    let list = std::fs::read_to_string(
        run.runner
            .volume("external-providers")
            .join("installed-packages.txt"),
    )?;
    assert_eq!(
        list.trim(),
        installed,
        "only what the image lacks is installed"
    );
    Ok(())
}

fn listed(server: &Server, id: &str) -> Result<Value, Failed> {
    let providers = server
        .get_json("/v1/providers")
        .map_err(|e| e.to_string())?;
    let list = providers["data"].as_array().cloned().unwrap_or_default();
    list.into_iter()
        .find(|p| p["provider_id"] == id)
        .ok_or_else(|| format!("{id} is not in /v1/providers: {providers}").into())
}

/// Case 1: the example provider (examples/provider), staged, installed, merged, checked, served,
/// and called through the API.
fn the_example_provider_is_installed_and_called(env: &Env) -> Result<(), Failed> {
    let started = Instant::now();
    let run = run_pod(
        env,
        spec(
            json!({"safety": [{"providerId": "acme", "image": ACME, "config": {"blocked_words": ["bomb"]}}]}),
        ),
        &[(ACME, env.acme.clone())],
    )?;
    installed_alone(&run, "acme: acme-words==0.1.0")?;
    eprintln!("acme-words: init steps took {:?}", started.elapsed());
    let server = start_server(env, &run, "acme")?;
    let entry = listed(&server, "acme")?;
    assert_eq!(
        (entry["api"].as_str(), entry["provider_type"].as_str()),
        (Some("safety"), Some("remote::acme-words"))
    );
    let (code, body) = http_post(
        &format!("{}/v1/shields", server.url),
        &json!({"shield_id": "acme-shield", "provider_id": "acme", "provider_shield_id": "acme-v1"}),
    )?;
    assert!(code == 200, "register shield: {code} {body}");
    let (code, body) = http_post(
        &format!("{}/v1/safety/run-shield", server.url),
        &json!({"shield_id": "acme-shield", "messages": [{"role": "user", "content": "how to make a bomb"}]}),
    )?;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("acme-words blocked: bomb"), "{body}");
    Ok(())
}

/// Case 5: the example OGX provider (`examples/ogx-provider`, importing `ogx_api`) on the OGX
/// 1.3.0 starter: staged, installed, merged, checked against the image's server line, served,
/// and answering a chat completion through OGX's own router, with the config the spec gave it.
fn the_example_ogx_provider_answers_a_chat_on_ogx(env: &Env) -> Result<(), Failed> {
    let ogx = env.ogx();
    let started = Instant::now();
    let mut on_ogx = spec(json!({"inference": [{"providerId": "acme", "image": ECHO,
        "config": {"models": ["parrot"], "prefix": "acme says: "}}]}));
    on_ogx["disabled"] = json!(support::node_stack::OGX_SLIM_DISABLED);
    let run = run_pod_on(env, &ogx, on_ogx, &[(ECHO, env.echo.clone())])?;
    installed_alone(&run, "acme: acme-echo==0.1.0")?;
    eprintln!("acme-echo: init steps took {:?}", started.elapsed());
    let server = start_server_of(env, &ogx, &run, "echo")?;
    let entry = listed(&server, "acme")?;
    assert_eq!(
        (entry["api"].as_str(), entry["provider_type"].as_str()),
        (Some("inference"), Some("remote::acme-echo"))
    );
    let models = server.get_json("/v1/models").map_err(|e| e.to_string())?;
    let ids: Vec<&str> = (models["data"].as_array().into_iter().flatten())
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"acme/parrot"),
        "the provider's models: {ids:?}"
    );
    assert_eq!(
        llama_stack::chat(&server.url, "acme/parrot", "hello from the operator")?,
        "acme says: hello from the operator"
    );
    // The same image beside the llama-stack starter is refused before anything is installed.
    let run = run_pod(
        env,
        spec(json!({"inference": [{"providerId": "acme", "image": ECHO}]})),
        &[(ECHO, env.echo.clone())],
    )?;
    let text = failure(&run, "install-provider-acme")?;
    assert!(
        text.contains("Provider built for another server line")
            && text.contains("declares spec.serverLine: ogx"),
        "{text}"
    );
    Ok(())
}

/// Case 3: an external provider with the ID of a base provider replaces it, with the warning.
fn an_external_provider_replaces_a_base_provider_with_a_warning(env: &Env) -> Result<(), Failed> {
    let run = run_pod(
        env,
        spec(
            json!({"safety": [{"providerId": "code-scanner", "image": ACME, "config": {"blocked_words": ["x"]}}]}),
        ),
        &[(ACME, env.acme.clone())],
    )?;
    all_succeeded(&run)?;
    let merge = run
        .steps
        .iter()
        .find(|s| s.name == "merge-config")
        .ok_or("no merge step")?;
    assert!(
        merge
            .output
            .contains("External provider 'code-scanner' overrides base provider in API 'safety'"),
        "{}",
        merge.output
    );
    assert!(
        merge.output.contains("Base type: inline::code-scanner")
            && merge.output.contains("External type: remote::acme-words"),
        "{}",
        merge.output
    );
    let server = start_server(env, &run, "override")?;
    let entry = listed(&server, "code-scanner")?;
    assert_eq!(
        entry["provider_type"], "remote::acme-words",
        "the external provider wins"
    );
    Ok(())
}

/// A provider image directory from the example's layout with `edit` applied.
fn variant(
    env: &Env,
    name: &str,
    edit: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<PathBuf, Failed> {
    let dir = env.work.path().join("images").join(name);
    std::fs::create_dir_all(dir.join("lls-provider/packages"))?;
    for entry in std::fs::read_dir(env.acme.join("lls-provider/packages"))? {
        let entry = entry?;
        std::fs::copy(
            entry.path(),
            dir.join("lls-provider/packages").join(entry.file_name()),
        )?;
    }
    std::fs::copy(
        env.acme.join("lls-provider/lls-provider-spec.yaml"),
        dir.join("lls-provider/lls-provider-spec.yaml"),
    )?;
    edit(&dir)?;
    Ok(dir)
}

fn failure(run: &PodRun, container: &str) -> Result<String, Failed> {
    let step = run.steps.last().ok_or("no step ran")?;
    assert_eq!(step.name, container, "the failing step");
    assert_ne!(step.exit_code, 0);
    let failed = run
        .statuses
        .iter()
        .find(|s| s.phase == ExternalProviderPhase::Failed)
        .ok_or_else(|| format!("no provider Failed: {:?}", run.statuses))?;
    assert_eq!(
        failed.message.as_deref(),
        Some(step.termination_message.trim()),
        "the status carries the termination message"
    );
    Ok(step.termination_message.clone())
}

/// Case 4: each failure of spec 001 user story 3 ends in its status message.
fn every_failure_names_the_provider_and_the_fix(env: &Env) -> Result<(), Failed> {
    let one = |image: &str| spec(json!({"safety": [{"providerId": "bad", "image": image}]}));
    // Missing metadata.
    let dir = variant(env, "no-metadata", |d| {
        std::fs::remove_file(d.join("lls-provider/lls-provider-spec.yaml"))
    })?;
    let run = run_pod(env, one("reg/no-metadata:1"), &[("reg/no-metadata:1", dir)])?;
    let text = failure(&run, "install-provider-bad")?;
    assert!(
        text.contains("Missing /lls-provider/lls-provider-spec.yaml in image reg/no-metadata:1")
            && text.contains("Init Container: install-provider-bad"),
        "{text}"
    );
    // Invalid YAML: the line number.
    let dir = variant(env, "bad-yaml", |d| {
        std::fs::write(
            d.join("lls-provider/lls-provider-spec.yaml"),
            "apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata:\n  name: [unclosed\n",
        )
    })?;
    let run = run_pod(env, one("reg/bad-yaml:1"), &[("reg/bad-yaml:1", dir)])?;
    let text = failure(&run, "install-provider-bad")?;
    assert!(
        text.contains("Invalid provider metadata") && text.contains("line 4"),
        "{text}"
    );
    // API mismatch: a safety provider placed under inference.
    let run = run_pod(
        env,
        spec(json!({"inference": [{"providerId": "bad", "image": ACME}]})),
        &[(ACME, env.acme.clone())],
    )?;
    let text = failure(&run, "install-provider-bad")?;
    assert!(text.contains("ERROR: Provider API type mismatch") && text.contains("declares api=safety in lls-provider-spec.yaml")
        && text.contains("but is placed under externalProviders.inference")
        && text.contains("Resolution: Move the provider to externalProviders.safety section in the LLSD spec."), "{text}");
    // A failing install: the main wheel needs a distribution whose wheel is not in the image.
    let dir = with_wheels(
        env,
        "missing-dep",
        &[("acme_words", "0.1.0", &["acme-helper==9.9"], PURE)],
    )?;
    let run = run_pod(env, one("reg/missing-dep:1"), &[("reg/missing-dep:1", dir)])?;
    let text = failure(&run, "install-packages")?;
    assert!(
        text.contains("Cannot install provider 'bad': a dependency wheel is missing")
            && text.contains("acme-helper"),
        "{text}"
    );
    // Wheels built for another platform: a dependency, then the provider's own wheel. Pip alone
    // calls the first a missing wheel and the second a dependency conflict.
    let dir = with_wheels(
        env,
        "foreign-dep",
        &[
            ("acme_words", "0.1.0", &["acme-native==1.0"], PURE),
            ("acme_native", "1.0", &[], FOREIGN),
        ],
    )?;
    let run = run_pod(env, one("reg/foreign-dep:1"), &[("reg/foreign-dep:1", dir)])?;
    let text = failure(&run, "install-packages")?;
    let arch = std::env::consts::ARCH;
    assert!(
        text.contains(&format!("Cannot install provider 'bad': acme_native-1.0-{FOREIGN}.whl is not built for this Pod's platform"))
            && text.contains(&format!("on linux/{arch}"))
            && text.contains(&format!("--platform manylinux2014_{arch}"))
            && !text.contains("dependency wheel is missing"),
        "{text}"
    );
    let dir = with_wheels(
        env,
        "foreign-main",
        &[("acme_words", "0.1.0", &[], FOREIGN)],
    )?;
    let run = run_pod(
        env,
        one("reg/foreign-main:1"),
        &[("reg/foreign-main:1", dir)],
    )?;
    let text = failure(&run, "install-packages")?;
    assert!(
        text.contains(&format!(
            "acme_words-0.1.0-{FOREIGN}.whl is not built for this Pod's platform"
        )) && text.contains("py3-none-any")
            && !text.contains("dependency conflict"),
        "{text}"
    );
    // A dependency conflict between two providers.
    let first = with_wheels(
        env,
        "dep-one",
        &[
            ("acme_words", "0.1.0", &["acme-shared==1.0"], PURE),
            ("acme_shared", "1.0", &[], PURE),
        ],
    )?;
    let second = with_wheels(
        env,
        "dep-two",
        &[
            ("acme_words", "0.1.0", &["acme-shared==2.0"], PURE),
            ("acme_shared", "2.0", &[], PURE),
        ],
    )?;
    let run = run_pod(
        env,
        spec(
            json!({"safety": [{"providerId": "one", "image": "reg/one:1"}, {"providerId": "two", "image": "reg/two:1"}]}),
        ),
        &[("reg/one:1", first), ("reg/two:1", second)],
    )?;
    let text = failure(&run, "install-packages")?;
    assert!(
        text.contains("ERROR: Cannot install provider 'two' due to dependency conflict")
            && text.contains("acme_shared==1.0")
            && text.contains("installed-packages.txt")
            && text.contains("Resolution: Update provider images"),
        "{text}"
    );
    assert_eq!(
        run.statuses.iter().map(|s| s.phase).collect::<Vec<_>>(),
        [
            ExternalProviderPhase::Installing,
            ExternalProviderPhase::Failed
        ],
        "the conflict is the second provider's"
    );
    // A missing module: packageName names a package the wheel does not contain.
    let dir = variant(env, "wrong-module", |d| {
        let path = d.join("lls-provider/lls-provider-spec.yaml");
        let text = std::fs::read_to_string(&path)?
            .replace("packageName: acme_words", "packageName: acme_wordz");
        std::fs::write(path, text)
    })?;
    let run = run_pod(
        env,
        one("reg/wrong-module:1"),
        &[("reg/wrong-module:1", dir)],
    )?;
    let text = failure(&run, "preflight")?;
    assert!(
        text.contains("Provider 'bad' cannot be imported")
            && text.contains("Python package 'acme_wordz' is not installed"),
        "{text}"
    );
    assert!(
        !text.contains("get_provider_spec not found"),
        "the real cause, not llama-stack's generic message"
    );
    Ok(())
}

/// The example image with its wheel replaced by minimal wheels `(name, version, requires)`.
/// `(name, version, requires, tag)`; [`PURE`] for a pure-Python wheel. A main wheel with another
/// tag is named in the metadata's `wheelPath`.
fn with_wheels(
    env: &Env,
    name: &str,
    wheels: &[(&str, &str, &[&str], &str)],
) -> Result<PathBuf, Failed> {
    variant(env, name, |d| {
        let packages = d.join("lls-provider/packages");
        std::fs::remove_file(packages.join("acme_words-0.1.0-py3-none-any.whl"))?;
        for (wheel, version, requires, tag) in wheels {
            make_wheel(&env.venv, &packages, wheel, version, requires, tag)?;
            if *wheel == "acme_words" && *tag != PURE {
                let spec = d.join("lls-provider/lls-provider-spec.yaml");
                let text = std::fs::read_to_string(&spec)?.replace(
                    "acme_words-0.1.0-py3-none-any.whl",
                    &format!("acme_words-{version}-{tag}.whl"),
                );
                std::fs::write(spec, text)?;
            }
        }
        Ok(())
    })
}

/// The tag of a pure-Python wheel, installable anywhere.
const PURE: &str = "py3-none-any";
/// A CPython 3.12 wheel for IBM Z: a platform no test machine is.
const FOREIGN: &str = "cp312-cp312-manylinux_2_17_s390x";

/// A minimal wheel (no code) declaring `requires`, tagged `tag`, written with the venv's Python.
fn make_wheel(
    venv: &Path,
    dir: &Path,
    name: &str,
    version: &str,
    requires: &[&str],
    tag: &str,
) -> std::io::Result<()> {
    let script = r#"
import sys, zipfile
out, tag, name, version, *requires = sys.argv[1:]
dist = f"{name}-{version}.dist-info"
meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
files = {f"{name}/__init__.py": "", f"{dist}/METADATA": meta,
         f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: {str(tag == 'py3-none-any').lower()}\nTag: {tag}\n"}
files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
with zipfile.ZipFile(f"{out}/{name}-{version}-{tag}.whl", "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
"#;
    let status = Command::new(venv.join("bin/python3"))
        .arg("-c")
        .arg(script)
        .arg(dir)
        .arg(tag)
        .arg(name)
        .arg(version)
        .args(requires)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("wheel build failed"))
    }
}

/// Case 2: the real PyPI package llama-stack-provider-trustyai-fms 0.4.0 with its dependency
/// wheels, installed offline from its provider image layout.
fn trustyai_fms_installs_offline_and_is_listed(env: &Env) -> Result<(), Failed> {
    let image = fms_image(env)?;
    let started = Instant::now();
    let run = run_pod(
        env,
        spec(
            json!({"safety": [{"providerId": "trustyai_fms", "image": FMS,
        "config": {"orchestrator_url": "http://127.0.0.1:9", "shields": {"regex": {"type": "content", "detector_params": {"regex": ["email"]}}}}}]}),
        ),
        &[(FMS, image)],
    )?;
    all_succeeded(&run)?;
    let took = started.elapsed();
    let installed = std::fs::read_to_string(
        run.runner
            .volume("external-providers")
            .join("installed-packages.txt"),
    )?;
    let count = installed.lines().count();
    let bytes = run.runner.disk_use("external-providers");
    eprintln!(
        "trustyai-fms: init steps {took:?}; {count} distributions installed (the image lacked them); shared volume {:.1} MiB",
        bytes as f64 / 1048576.0
    );
    assert!(
        installed.contains("trustyai_fms: llama-stack-provider-trustyai-fms==0.4.0")
            || installed.contains("trustyai_fms: llama_stack_provider_trustyai_fms==0.4.0"),
        "{installed}"
    );
    assert!(
        !installed.to_lowercase().contains(": pydantic=="),
        "the image's pydantic is never shadowed:\n{installed}"
    );
    let server = start_server(env, &run, "fms")?;
    let entry = listed(&server, "trustyai_fms")?;
    assert_eq!(
        (entry["api"].as_str(), entry["provider_type"].as_str()),
        (Some("safety"), Some("remote::trustyai_fms"))
    );
    Ok(())
}

/// The trustyai-fms provider image layout: its wheels (downloaded once, constrained to the venv's
/// versions, cached outside the clone) and a metadata file.
fn fms_image(env: &Env) -> Result<PathBuf, Failed> {
    let cache = std::env::var("LLSO_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/llama-stack-operator")
        });
    let wheels = cache.join("wheels/trustyai-fms-0.4.0");
    if !wheels.join(".complete").exists() {
        std::fs::create_dir_all(&wheels)?;
        let freeze = Command::new(env.venv.join("bin/python3"))
            .args(["-m", "pip", "freeze"])
            .output()?;
        let constraints = wheels.join("constraints.txt");
        std::fs::write(&constraints, &freeze.stdout)?;
        let status = sealed::with_host_network(&mut Command::new(env.venv.join("bin/python3")))
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--only-binary=:all:",
                "-d",
            ])
            .arg(&wheels)
            .arg("-c")
            .arg(&constraints)
            .arg("llama-stack-provider-trustyai-fms==0.4.0")
            .status()?;
        if !status.success() {
            return Err("pip download of llama-stack-provider-trustyai-fms 0.4.0 failed (PyPI must be reachable the first time)".into());
        }
        std::fs::write(wheels.join(".complete"), "")?;
    }
    let dir = env.work.path().join("images/fms");
    let packages = dir.join("lls-provider/packages");
    std::fs::create_dir_all(&packages)?;
    let mut main = None;
    for entry in std::fs::read_dir(&wheels)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".whl") {
            if name.starts_with("llama_stack_provider_trustyai_fms-") {
                main = Some(name.clone());
            }
            std::fs::copy(entry.path(), packages.join(&name))?;
        }
    }
    let main = main.ok_or("the provider wheel was not downloaded")?;
    std::fs::write(
        dir.join("lls-provider/lls-provider-spec.yaml"),
        format!(
            "apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata:\n  name: llama-stack-provider-trustyai-fms\n  version: 0.4.0\n  vendor: trustyai\nspec:\n  packageName: llama_stack_provider_trustyai_fms\n  providerType: remote::trustyai_fms\n  api: safety\n  wheelPath: /lls-provider/packages/{main}\n"
        ),
    )?;
    Ok(dir)
}

fn start() -> Result<Env, Failed> {
    let venv = llama_stack::venv(&[]).map_err(|e| e.to_string())?;
    let ogx_venv = llama_stack::venv_of(ServerLine::Ogx, &[]).map_err(|e| e.to_string())?;
    let work = tempfile::Builder::new().prefix("llso-ext-").tempdir()?;
    // The operator image: this build's binary where the Dockerfile puts it.
    let operator_image = work.path().join("images/operator");
    std::fs::create_dir_all(operator_image.join("usr/local/bin"))?;
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_llama-stack-operator"),
        operator_image.join("usr/local/bin/llama-stack-operator"),
    )?;
    // The example providers' images, each built by its own script with its server's Python.
    let acme = work.path().join("images/acme");
    build_example("examples/provider", &acme, &venv)?;
    let echo = work.path().join("images/echo");
    build_example("examples/ogx-provider", &echo, &ogx_venv)?;
    Ok(Env {
        venv,
        ogx_venv,
        work,
        operator_image,
        acme,
        echo,
    })
}

/// Runs `<example>/build.sh` into `out` with the venv's Python.
fn build_example(example: &str, out: &Path, venv: &Path) -> Result<(), Failed> {
    // pip fetches the wheel's build backend from PyPI.
    let build = sealed::with_host_network(&mut Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(example)
            .join("build.sh"),
    ))
    .arg(out)
    .arg(venv.join("bin/python3"))
    .output()?;
    if !build.status.success() {
        return Err(format!(
            "{example}/build.sh failed: {}",
            String::from_utf8_lossy(&build.stderr)
        )
        .into());
    }
    Ok(())
}

fn main() -> ExitCode {
    run_suite(
        table(&[
            (
                "the_example_provider_is_installed_and_called",
                the_example_provider_is_installed_and_called,
            ),
            (
                "the_example_ogx_provider_answers_a_chat_on_ogx",
                the_example_ogx_provider_answers_a_chat_on_ogx,
            ),
            (
                "an_external_provider_replaces_a_base_provider_with_a_warning",
                an_external_provider_replaces_a_base_provider_with_a_warning,
            ),
            (
                "every_failure_names_the_provider_and_the_fix",
                every_failure_names_the_provider_and_the_fix,
            ),
            (
                "trustyai_fms_installs_offline_and_is_listed",
                trustyai_fms_installs_offline_and_is_listed,
            ),
        ]),
        "the server venvs and the example providers",
        || start().map_err(|e| e.message().unwrap_or_default().to_owned()),
        None,
    )
}
