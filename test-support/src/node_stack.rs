//! What a stack on the real node needs: the slim spec the node suite and the demo run, the
//! distribution images built for it on both server lines (`scripts/build-test-images.sh`),
//! pushed to the test registries, and a namespace with the pull secret.

use std::path::{Path, PathBuf};

use base64::Engine;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use serde_json::{Value, json};

use crate::control_plane::{ControlPlane, Error};
use crate::llama_stack::{self, ServerLine};
use crate::oci::skopeo_copy;
use crate::operator::kubectl;
use crate::registries::{PASSWORD, Registries, USER};

/// The provider id of the config baked into the distribution image; stacks use another, so a
/// server listing theirs runs the operator's config, not the image's.
pub const BAKED_PROVIDER: &str = "vllm-baked";

/// A stack from `image`: vLLM inference (as `provider_id`) only, every other API turned off, so
/// the image needs few packages.
pub fn slim_spec(image: &str, provider_id: &str) -> Value {
    json!({
        "distribution": {"image": image},
        "disabled": ["batches", "datasetIo", "eval", "fileProcessors", "files", "responses",
                     "safety", "scoring", "toolRuntime", "vectorIo"],
        "providers": {"inference": {"id": provider_id, "provider": "vllm",
                                    "endpoint": "http://10.88.0.1:9/v1"}},
        // Several stacks and a rollout's surge Pod share a two-core node.
        "workload": {"resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}
    })
}

/// [`slim_spec`] with the safety API on (llama-guard, no shield model) and the example provider
/// (`examples/provider`) from `acme` as an external safety provider.
pub fn external_spec(image: &str, acme: &str) -> Value {
    let mut spec = slim_spec(image, "vllm-e2e");
    spec["disabled"] = json!(
        spec["disabled"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|api| *api != "safety")
            .collect::<Vec<_>>()
    );
    spec["providers"]["safety"] = json!({"id": "llama-guard", "provider": "llama-guard"});
    spec["externalProviders"] = json!({"safety": [{"providerId": "acme", "image": acme,
        "config": {"blocked_words": ["bomb"]}}]});
    spec
}

/// [`slim_spec`] for an OGX image: vLLM inference only, with the APIs OGX 1.x has turned off
/// (the builtin interactions and messages providers need nothing more).
pub fn ogx_slim_spec(image: &str, provider_id: &str) -> Value {
    let mut spec = slim_spec(image, provider_id);
    spec["disabled"] = json!(OGX_SLIM_DISABLED);
    spec
}

/// The APIs an OGX 1.x stack that needs inference alone turns off (`spec.disabled`).
pub const OGX_SLIM_DISABLED: [&str; 6] = [
    "batches",
    "fileProcessors",
    "files",
    "responses",
    "toolRuntime",
    "vectorIo",
];

/// Writes what the operator generates for `spec` over `line`'s starter config to `path`, and
/// returns the packages the line's `stack list-deps` names for it.
fn generated_base(
    line: ServerLine,
    venv: &Path,
    spec: Value,
    path: &Path,
) -> Result<Vec<String>, String> {
    let cr: LlamaStackDistribution = serde_json::from_value(json!({
        "apiVersion": "llamastack.io/v1alpha2", "kind": "LlamaStackDistribution",
        "metadata": {"name": "base"}, "spec": spec}))
    .map_err(|e| e.to_string())?;
    let generated =
        llama_stack::generate_over_starter(line, &cr.spec).map_err(|e| format!("{e:?}"))?;
    std::fs::write(path, &generated.yaml).map_err(|e| e.to_string())?;
    llama_stack::list_deps(venv, path).map_err(|e| e.to_string())
}

/// The image's base config: what the operator generates for [`slim_spec`] from the starter
/// distribution; and the packages `llama stack list-deps` names for it and for
/// [`external_spec`]'s config (so that one image serves both).
pub fn image_config(dir: &Path) -> Result<(PathBuf, Vec<String>), String> {
    let venv = llama_stack::venv(&[]).map_err(|e| e.to_string())?;
    let mut deps = Vec::new();
    let mut paths = Vec::new();
    for (file, spec) in [
        (
            "distribution-config.yaml",
            slim_spec("unused", BAKED_PROVIDER),
        ),
        ("external-config.yaml", external_spec("unused", "unused")),
    ] {
        let path = dir.join(file);
        deps.extend(generated_base(ServerLine::LlamaStack, &venv, spec, &path)?);
        paths.push(path);
    }
    deps.sort();
    deps.dedup();
    Ok((paths.swap_remove(0), deps))
}

pub fn push(layout: &Path, tag: &str, regs: &Registries) -> Result<String, String> {
    push_to(layout, tag, &regs.basic.host, regs)
}

pub fn push_to(layout: &Path, tag: &str, host: &str, regs: &Registries) -> Result<String, String> {
    copy_to_registry(layout, tag, &format!("{host}/e2e/distribution:{tag}"), regs)
}

/// Copies `layout:tag` to `target` (`host/repo:tag`), digests preserved; returns `target`.
pub fn copy_to_registry(
    layout: &Path,
    tag: &str,
    target: &str,
    regs: &Registries,
) -> Result<String, String> {
    skopeo_copy(
        &format!("oci:{}:{tag}", layout.display()),
        &format!("docker://{target}"),
        &[
            "--preserve-digests",
            "--dest-creds",
            &format!("{USER}:{PASSWORD}"),
            "--dest-cert-dir",
            regs.cert_dir().to_str().ok_or("cert dir")?,
        ],
    )
    .map_err(|e| e.to_string())?;
    Ok(target.to_owned())
}

/// Pushes `layout:latest` to `<basic registry>/e2e/<repo>`; returns the reference by digest.
pub fn push_pinned(layout: &Path, repo: &str, regs: &Registries) -> Result<String, String> {
    let tagged = copy_to_registry(
        layout,
        "latest",
        &format!("{}/e2e/{repo}:latest", regs.basic.host),
        regs,
    )?;
    let digest = layout_digest(layout, "latest")?;
    let repository = tagged.trim_end_matches(":latest");
    Ok(format!("{repository}@{digest}"))
}

/// The manifest digest of `layout:tag` (an OCI layout), as a registry serves it once copied.
pub fn layout_digest(layout: &Path, tag: &str) -> Result<String, String> {
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(layout.join("index.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    index["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .and_then(|m| m["digest"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("no `{tag}` in {}", layout.display()))
}

/// A namespace `ns` with a pull secret for `host` on its default ServiceAccount.
pub fn pull_secret_namespace(plane: &ControlPlane, ns: &str, host: &str) -> Result<(), Error> {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let docker_config = json!({"auths": {host: {"auth": auth}}}).to_string();
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
             "metadata": {"name": "regcred", "namespace": ns},
             "stringData": {".dockerconfigjson": docker_config}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns},
             "imagePullSecrets": [{"name": "regcred"}]}]});
    kubectl(
        plane,
        &["apply", "--server-side", "-f", "-"],
        Some(&objects.to_string()),
    )?;
    Ok(())
}

/// Builds (or reuses) the OGX distribution image: OGX 1.3.0 with, as its base config, what the
/// operator generates for [`ogx_slim_spec`] over OGX's starter (provider [`BAKED_PROVIDER`]),
/// labelled as OGX's build labels real images (`com.ogx.*`); returns its OCI layout (tag
/// `latest`) and the config's path in `dir` (`ogx-distribution-config.yaml`).
pub fn ogx_distribution_image(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let venv = llama_stack::venv_of(ServerLine::Ogx, &[]).map_err(|e| e.to_string())?;
    let config = dir.join("ogx-distribution-config.yaml");
    let deps = generated_base(
        ServerLine::Ogx,
        &venv,
        ogx_slim_spec("unused", BAKED_PROVIDER),
        &config,
    )?;
    let mut args = vec!["ogx-distribution".to_owned(), config.display().to_string()];
    args.extend(deps);
    let layout = crate::node::build_image(&args).map_err(|e| e.to_string())?;
    Ok((layout, config))
}

/// Builds (or reuses) the OGX image `ogx_layout` (from [`ogx_distribution_image`]) with
/// `ogx migrate praxis` laid over it, as a midstream build has it
/// (`scripts/build-test-images.sh ogx-praxis`). Returns its OCI layout (tag `latest`).
pub fn ogx_praxis_image(ogx_layout: &Path) -> Result<PathBuf, String> {
    crate::node::build_image(&["ogx-praxis".to_owned(), ogx_layout.display().to_string()])
        .map_err(|e| e.to_string())
}

/// Builds (or reuses) OGX's starter image as OGX's own build makes it: OGX 1.3.0 with every
/// package its starter distribution's `stack list-deps` names (the same line `scripts/test.sh`
/// installs in the OGX venv), and that starter config as its base config. Less PyTorch and
/// sentence-transformers: their own line names an index this machine cannot reach, and PyPI's
/// torch pulls gigabytes of CUDA libraries. Returns its OCI layout (tag `latest`).
pub fn ogx_starter_image() -> Result<PathBuf, String> {
    let venv = llama_stack::venv_of(ServerLine::Ogx, &[]).map_err(|e| e.to_string())?;
    let config = crate::workspace_root().join("configs-ogx/starter/config.yaml");
    let out = std::process::Command::new(venv.join("bin/ogx"))
        .args(["stack", "list-deps"])
        .arg(&config)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "ogx stack list-deps {}: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let packages = text.lines().next().unwrap_or_default().split_whitespace();
    let mut args = vec!["ogx-distribution".to_owned(), config.display().to_string()];
    args.extend(
        packages
            .filter(|p| !p.starts_with("sentence-transformers") && !p.starts_with("torch"))
            .map(str::to_owned),
    );
    if args.len() == 2 {
        return Err(format!(
            "ogx stack list-deps {} named no package",
            config.display()
        ));
    }
    crate::node::build_image(&args).map_err(|e| e.to_string())
}

/// The two example providers' images (OCI layouts, tag `latest`), each built with its server's
/// Python: `examples/provider` (llama-stack's `acme-words`) and `examples/ogx-provider` (OGX's
/// `acme-echo`).
pub fn provider_images() -> Result<(PathBuf, PathBuf), String> {
    let build = |line: ServerLine, example: &str| -> Result<PathBuf, String> {
        let python = llama_stack::venv_of(line, &[])
            .map_err(|e| e.to_string())?
            .join("bin/python3");
        crate::node::build_image(&[
            "provider".to_owned(),
            python.display().to_string(),
            example.to_owned(),
        ])
        .map_err(|e| e.to_string())
    };
    Ok((
        build(ServerLine::LlamaStack, "provider")?,
        build(ServerLine::Ogx, "ogx-provider")?,
    ))
}

/// Builds (or reuses) the distribution image for [`image_config`]; returns its OCI layout
/// (tags `base64`, `layer` and `plain`).
pub fn distribution_image(dir: &Path) -> Result<PathBuf, String> {
    let (config, deps) = image_config(dir)?;
    let mut args = vec!["distribution".to_owned(), config.display().to_string()];
    args.extend(deps);
    crate::node::build_image(&args).map_err(|e| e.to_string())
}
