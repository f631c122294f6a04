//! `llama-stack-operator resolve` against real registries: what a user runs to see what the
//! operator would deploy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::path::Path;
use std::process::{Command, ExitCode};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use libtest_mimic::Failed;
use serde_json::{Value, json};
use support::cosign::Cosign;
use support::harness::{run_suite, table};
use support::oci::{Comp, Entry, ImageSpec, Layer, sha256, skopeo_copy, write_layout};
use support::registries::{PASSWORD, Registries, USER};

struct Env {
    regs: Registries,
    dir: tempfile::TempDir,
    digest: String,
    config: String,
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llama-stack-operator"))
        .arg("resolve")
        .args(args)
        .output()
        .expect("the operator binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn secret_file(dir: &Path, name: &str, host: &str, password: &str, secret_type: &str) -> String {
    let config = json!({"auths": {host: {"auth": STANDARD.encode(format!("{USER}:{password}"))}}});
    let key = if secret_type == "kubernetes.io/dockercfg" {
        ".dockercfg"
    } else {
        ".dockerconfigjson"
    };
    let body = if secret_type == "kubernetes.io/dockercfg" {
        config["auths"].clone()
    } else {
        config
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: team}}\ntype: {secret_type}\ndata:\n  {key}: {}\n",
        STANDARD.encode(body.to_string())
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, yaml).expect("write secret");
    path.display().to_string()
}

fn pinned_with_pull_secret(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.basic.host;
    let ca = env.regs.dir.path().join("ca.pem");
    let secret = secret_file(
        env.dir.path(),
        "pull",
        host,
        PASSWORD,
        "kubernetes.io/dockerconfigjson",
    );
    let (code, stdout, stderr) = run(&[
        &format!("{host}/cli/app:v1"),
        "--pull-secret",
        &secret,
        "--ca-file",
        ca.to_str().unwrap_or_default(),
    ]);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_json::from_str(&stdout)?;
    let want = json!({
        "image": format!("{host}/cli/app@{}", env.digest),
        "pinned": true,
        "configSource": "oci-label",
        "configHash": sha256(env.config.as_bytes()),
        "configVersion": 2,
        "serverLine": "llama-stack",
        "serverLineSource": "labels io.llamastack.config.*",
        "stale": false,
    });
    if out != want {
        return Err(format!("got {out:#}\nwant {want:#}").into());
    }
    Ok(())
}

fn legacy_dockercfg_yaml_output_and_config(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.basic.host;
    let ca = env.regs.dir.path().join("ca.pem");
    let secret = secret_file(
        env.dir.path(),
        "legacy",
        host,
        PASSWORD,
        "kubernetes.io/dockercfg",
    );
    let (code, stdout, stderr) = run(&[
        &format!("{host}/cli/app:v1"),
        "--pull-secret",
        &secret,
        "--ca-file",
        ca.to_str().unwrap_or_default(),
        "-o",
        "yaml",
        "--show-config",
    ]);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_saphyr::from_str(&stdout)?;
    if out["config"] != json!(env.config) || out["configSource"] != json!("oci-label") {
        return Err(format!("unexpected YAML output:\n{stdout}").into());
    }
    Ok(())
}

fn mirror_and_insecure_registry(env: &Env) -> Result<(), Failed> {
    let (basic, plain) = (&env.regs.basic.host, &env.regs.plain.host);
    let (code, stdout, stderr) = run(&[
        &format!("{basic}/cli/app:v1"),
        "--mirror",
        &format!("{basic}/cli={plain}/mirrored"),
        "--insecure-registry",
        plain,
    ]);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_json::from_str(&stdout)?;
    if out["image"] != json!(format!("{plain}/mirrored/app@{}", env.digest)) {
        return Err(format!("the mirror must be deployed: {out}").into());
    }
    Ok(())
}

fn errors_are_one_actionable_line(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.basic.host;
    let ca = env.regs.dir.path().join("ca.pem");
    let ca = ca.to_str().unwrap_or_default();
    let wrong = secret_file(
        env.dir.path(),
        "wrong",
        host,
        "not-the-password",
        "kubernetes.io/dockerconfigjson",
    );
    let opaque = env.dir.path().join("opaque.yaml");
    std::fs::write(
        &opaque,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: opaque}\ntype: Opaque\nstringData: {a: b}\n",
    )?;
    // A CA file is read with a bound: a path to something huge is refused, not read whole.
    let huge = env.dir.path().join("huge.pem");
    std::fs::File::create(&huge)?.set_len(11 << 20)?;
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![
                format!("{host}/cli/app:v1"),
                "--ca-file".into(),
                huge.display().to_string(),
            ],
            "larger than 10 MiB".into(),
        ),
        (
            vec![
                format!("{host}/cli/app:v1"),
                "--pull-secret".into(),
                wrong,
                "--ca-file".into(),
                ca.into(),
            ],
            format!(
                "error: registry {host} rejected every pull secret that matches {host}/cli/app:v1 (tried, in kubelet's order: team/wrong)"
            ),
        ),
        (
            vec![format!("{host}/cli/app:v1"), "--ca-file".into(), ca.into()],
            "no pull secret matches this registry".into(),
        ),
        (
            vec!["startr".into()],
            "error: unknown distribution \"startr\"; known distributions: postgres-demo, rh, rh-dev, starter"
                .into(),
        ),
        (
            vec!["ollama".into()],
            "distribution \"ollama\" has no published image any more".into(),
        ),
        (
            vec![
                "starter".into(),
                "--pull-secret".into(),
                opaque.display().to_string(),
            ],
            "type Opaque is not a pull secret".into(),
        ),
        (
            vec!["starter".into(), "--mirror".into(), "quay.io".into()],
            "must be FROM=TO".into(),
        ),
        (
            vec!["starter".into(), "--platform".into(), "amd64".into()],
            "must be OS/ARCH".into(),
        ),
    ];
    for (args, needle) in cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, stderr) = run(&refs);
        if code == 0 || !stderr.contains(&needle) || stderr.trim().lines().count() > 3 {
            return Err(
                format!("{args:?}: exit {code}, stderr {stderr:?}, expected {needle:?}").into(),
            );
        }
        if stderr.contains("not-the-password") {
            return Err("a password reached the output".into());
        }
    }
    Ok(())
}

/// The resolve command's pinned image for `args` (with the mirror's pull secret and CA).
fn resolved_image(env: &Env, args: &[&str]) -> Result<Value, Failed> {
    let secret = secret_file(
        env.dir.path(),
        "mirror-pull",
        &env.regs.basic.host,
        PASSWORD,
        "kubernetes.io/dockerconfigjson",
    );
    let ca = env.regs.dir.path().join("ca.pem");
    let mut all = args.to_vec();
    all.extend([
        "--pull-secret",
        &secret,
        "--ca-file",
        ca.to_str().unwrap_or_default(),
    ]);
    let (code, stdout, stderr) = run(&all);
    if code != 0 {
        return Err(format!("resolve {args:?}: exit {code}: {stderr}").into());
    }
    Ok(serde_json::from_str(&stdout)?)
}

/// image-overrides/: `mirror.sh` copies every catalog image from a source registry (standing in
/// for docker.io and quay.io) into the mirror (htpasswd, private CA) and prints the operator
/// ConfigMap; each name resolves with its overrides, the mirror's pull secret and CA to the
/// mirrored digest; and `mirror-registry.yaml`'s rules, pointed at the same mirror, resolve to
/// the same images.
fn image_overrides_run_air_gapped(env: &Env) -> Result<(), Failed> {
    let (basic, plain) = (&env.regs.basic.host, &env.regs.plain.host);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let catalog: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(root.join("distributions.json"))?)?;
    let layout = env.dir.path().join("layout");
    for image in catalog.values() {
        let path = ["docker.io/", "quay.io/"]
            .iter()
            .find_map(|registry| image.strip_prefix(registry))
            .ok_or_else(|| format!("{image} is on neither docker.io nor quay.io"))?;
        skopeo_copy(
            &format!("oci:{}:v1", layout.display()),
            &format!("docker://{plain}/{path}"),
            &["--preserve-digests", "--dest-tls-verify=false"],
        )?;
    }
    // Signed at the source, as a vendor signs: starter with simple signing (cosign 2's default),
    // postgres-demo with a sigstore bundle (cosign 3's, kept by this registry under the referrers fallback tag).
    let cosign = Cosign::start(basic, USER, PASSWORD, &env.regs.ca_pem())?;
    for (bundle, repository) in [
        (false, "distribution-starter"),
        (true, "distribution-postgres-demo"),
    ] {
        cosign.sign(
            bundle,
            "trusted",
            &format!("{plain}/ogxai/{repository}@{}", env.digest),
            None,
            true,
        )?;
    }
    let out = Command::new(root.join("image-overrides/mirror.sh"))
        .args(["--to", &format!("{basic}/distributions")])
        .args(["--from", &format!("docker.io/ogxai={plain}/ogxai")])
        .args([
            "--from",
            &format!("quay.io/opendatahub={plain}/opendatahub"),
        ])
        .arg("--src-tls-verify=false")
        .args(["--dest-creds", &format!("{USER}:{PASSWORD}")])
        .args([
            "--dest-cert-dir",
            env.regs.cert_dir().to_str().unwrap_or_default(),
        ])
        .output()?;
    if !out.status.success() {
        return Err(format!("mirror.sh: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let config_map: Value = serde_saphyr::from_str(&String::from_utf8(out.stdout)?)?;
    assert_eq!(
        config_map["metadata"]["name"],
        "llama-stack-operator-config"
    );
    let overrides_text = config_map["data"]["image-overrides"]
        .as_str()
        .ok_or("no image-overrides in the ConfigMap")?;
    let overrides: std::collections::BTreeMap<String, String> =
        serde_saphyr::from_str(overrides_text)?;
    assert_eq!(
        overrides.keys().collect::<Vec<_>>(),
        catalog.keys().collect::<Vec<_>>(),
        "every catalog name is pinned"
    );
    let overrides_file = env.dir.path().join("image-overrides.yaml");
    std::fs::write(&overrides_file, overrides_text)?;
    for (name, image) in &catalog {
        let repository = image.rsplit('/').next().unwrap_or_default();
        let repository = repository.split(':').next().unwrap_or_default();
        let mirrored = format!("{basic}/distributions/{repository}@{}", env.digest);
        assert_eq!(overrides[name], mirrored, "{name}: the index digest, kept");
        let out = resolved_image(
            env,
            &[
                name,
                "--overrides",
                overrides_file.to_str().unwrap_or_default(),
            ],
        )?;
        assert_eq!(out["image"], json!(mirrored), "{name}: {out}");
        assert_eq!(out["configSource"], "oci-label", "{name}: {out}");
    }
    verify_keys_on_the_mirror(env, &cosign, &overrides_file)?;

    let ready: Value = serde_saphyr::from_str(&std::fs::read_to_string(
        root.join("image-overrides/mirror-registry.yaml"),
    )?)?;
    let rules: Vec<String> =
        serde_saphyr::from_str(ready["data"]["mirrors"].as_str().ok_or("no mirrors")?)?;
    assert_eq!(
        rules.len(),
        2,
        "one rule per registry the catalog names: {rules:?}"
    );
    let mut args = Vec::new();
    for rule in &rules {
        args.extend([
            "--mirror".to_owned(),
            rule.replace("mirror.example.com:5000", basic),
        ]);
    }
    for name in catalog.keys() {
        let mut all = vec![name.as_str()];
        all.extend(args.iter().map(String::as_str));
        let out = resolved_image(env, &all)?;
        assert_eq!(
            out["image"],
            json!(overrides[name]),
            "{name} through {args:?}: {out}"
        );
    }
    Ok(())
}

/// `resolve --verify-key` on the mirror `mirror.sh` filled: the signatures it copied verify in
/// both forms; an unsigned image and a key that signed nothing are refused, naming the digest.
fn verify_keys_on_the_mirror(env: &Env, cosign: &Cosign, overrides: &Path) -> Result<(), Failed> {
    // Every catalog image is signed at the source; an unsigned one is the same image copied to a
    // repository of the mirror that holds no signature.
    let (basic, plain) = (&env.regs.basic.host, &env.regs.plain.host);
    skopeo_copy(
        &format!("docker://{plain}/ogxai/distribution-starter@{}", env.digest),
        &format!("docker://{basic}/ogxai/unsigned:v1"),
        &[
            "--preserve-digests",
            "--src-tls-verify=false",
            "--dest-creds",
            &format!("{USER}:{PASSWORD}"),
            "--dest-cert-dir",
            env.regs.cert_dir().to_str().unwrap_or_default(),
        ],
    )?;
    let mut text = std::fs::read_to_string(overrides)?;
    text.push_str(&format!(
        "unsigned: {basic}/ogxai/unsigned@{}\n",
        env.digest
    ));
    std::fs::write(overrides, text)?;
    let overrides = overrides.to_str().unwrap_or_default();
    let trusted = cosign.public_key("trusted");
    let trusted = trusted.to_str().unwrap_or_default();
    for (name, form) in [
        ("starter", "simple-signing"),
        ("postgres-demo", "sigstore bundle"),
    ] {
        let out = resolved_image(
            env,
            &[name, "--overrides", overrides, "--verify-key", trusted],
        )?;
        let signature = &out["signature"];
        if signature["result"] != "verified" || signature["form"] != form {
            return Err(format!("{name}: expected verified ({form}): {out}").into());
        }
    }
    let secret = secret_file(
        env.dir.path(),
        "verify-pull",
        &env.regs.basic.host,
        PASSWORD,
        "kubernetes.io/dockerconfigjson",
    );
    let ca = env.regs.dir.path().join("ca.pem");
    let other = cosign.public_key("other");
    let refusals = [
        ("unsigned", trusted, "has no signature"),
        (
            "starter",
            other.to_str().unwrap_or_default(),
            "none of the keys verifies",
        ),
    ];
    for (name, key, needle) in refusals {
        let (code, stdout, stderr) = run(&[
            name,
            "--overrides",
            overrides,
            "--verify-key",
            key,
            "--pull-secret",
            &secret,
            "--ca-file",
            ca.to_str().unwrap_or_default(),
        ]);
        let digest = &env.digest;
        if code != 1
            || !stderr.contains(needle)
            || !stderr.contains(digest.as_str())
            || !stdout.is_empty()
        {
            return Err(format!(
                "{name} with {key}: exit {code}, stdout {stdout:?}, stderr {stderr:?}; expected exit 1 naming {digest} and {needle:?}"
            )
            .into());
        }
    }
    Ok(())
}

/// `--image-credential-provider-config` and `--image-credential-provider-bin-dir`, the files
/// kubelet reads: the plugin's credentials reach the registry with no pull secret; a config
/// kubelet would refuse is named.
fn credential_provider_flags(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.basic.host;
    let plugin = support::credential_plugin::install(
        &env.dir.path().join("plugin"),
        host,
        USER,
        PASSWORD,
        "answer",
        "5m",
    )?;
    let ca = env.regs.dir.path().join("ca.pem");
    let (config, bin_dir) = (
        plugin.config.to_str().unwrap_or_default(),
        plugin.bin_dir.to_str().unwrap_or_default(),
    );
    let image = format!("{host}/cli/app:v1");
    let with_plugin = |bin: &str| {
        run(&[
            &image,
            "--image-credential-provider-config",
            config,
            "--image-credential-provider-bin-dir",
            bin,
            "--ca-file",
            ca.to_str().unwrap_or_default(),
        ])
    };
    let (code, stdout, stderr) = with_plugin(bin_dir);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_json::from_str(&stdout)?;
    if out["image"] != json!(format!("{host}/cli/app@{}", env.digest)) || plugin.requests() != 1 {
        return Err(format!("not resolved through the plugin: {out}").into());
    }
    let (code, _, stderr) = with_plugin(env.dir.path().to_str().unwrap_or_default());
    if code == 0
        || !stderr.contains("no executable")
        || !stderr.contains("test-credential-provider")
    {
        return Err(format!("a bin directory without the plugin: exit {code}, {stderr}").into());
    }
    Ok(())
}

type Test = fn(&Env) -> Result<(), Failed>;

/// The air-gap guide's check of a mirror must not pass on a dead one: without `--strict` a name
/// resolves to the embedded fallback (marked stale), with it the command fails after printing
/// that answer; a live registry passes `--strict`.
fn strict_fails_on_a_dead_mirror_and_passes_a_live_one(env: &Env) -> Result<(), Failed> {
    let dead = ["starter", "--mirror", "docker.io/ogxai=127.0.0.1:9/ogxai"];
    let (code, stdout, stderr) = run(&dead);
    let answer: Value = serde_json::from_str(&stdout)?;
    if code != 0 || answer["stale"] != json!(true) || answer["configSource"] != "embedded" {
        return Err(format!("without --strict: exit {code}, {answer}, {stderr}").into());
    }
    let strict: Vec<&str> = dead.iter().copied().chain(["--strict"]).collect();
    let (code, stdout, stderr) = run(&strict);
    if code == 0 || !stderr.contains("--strict: the answer is stale") || stdout.is_empty() {
        return Err(
            format!("with --strict: exit {code}, stdout {stdout:?}, stderr {stderr:?}").into(),
        );
    }
    let (plain, digest) = (&env.regs.plain.host, &env.digest);
    let (code, _, stderr) = run(&[
        &format!("{plain}/mirrored/app@{digest}"),
        "--insecure-registry",
        plain,
        "--strict",
    ]);
    if code != 0 {
        return Err(format!("a live registry with labels fails --strict: {stderr}").into());
    }
    Ok(())
}

/// An image labelled as OGX's own build labels the ogxai images (two config files, the one it
/// runs named): `resolve` reads the one it runs, lists the others, reads the one
/// `--image-config` names, and refuses a file the image lacks in one line naming those it has.
fn image_config_picks_one_of_an_ogx_images_configs(env: &Env) -> Result<(), Failed> {
    let plain = &env.regs.plain.host;
    let (runs, other) = (
        "version: 2\ndistro_name: starter\nproviders: {}\n",
        "version: 2\ndistro_name: starter-postgres\nproviders: {}\n",
    );
    let layout = env.dir.path().join("ogx-layout");
    write_layout(
        &layout,
        "1.3.0",
        &[ImageSpec {
            arch: "amd64",
            labels: support::oci::ogx_starter_labels("1.3.0", runs, other),
            layers: vec![Layer {
                entries: vec![Entry::File("/etc/os-release", b"ID=test\n".to_vec())],
                comp: Comp::Gzip,
            }],
        }],
        false,
    )?;
    skopeo_copy(
        &format!("oci:{}:1.3.0", layout.display()),
        &format!("docker://{plain}/cli/ogx:1.3.0"),
        &["--preserve-digests", "--dest-tls-verify=false"],
    )?;
    let image = format!("{plain}/cli/ogx:1.3.0");
    let base = [
        image.as_str(),
        "--insecure-registry",
        plain,
        "--show-config",
    ];
    let (code, stdout, stderr) = run(&base);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_json::from_str(&stdout)?;
    let want = json!(["config.yaml", "run-with-postgres-store.yaml"]);
    if out["imageConfig"] != json!("config.yaml")
        || out["imageConfigs"] != want
        || out["config"] != json!(runs)
        || out["serverLine"] != json!("ogx")
    {
        return Err(format!("the file the image runs, and the list: {out}").into());
    }
    let chosen = [
        &base[..],
        &["--image-config", "run-with-postgres-store.yaml"],
    ]
    .concat();
    let (code, stdout, stderr) = run(&chosen);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}").into());
    }
    let out: Value = serde_json::from_str(&stdout)?;
    if out["imageConfig"] != json!("run-with-postgres-store.yaml") || out["config"] != json!(other)
    {
        return Err(format!("the file asked for: {out}").into());
    }
    let missing = [&base[..], &["--image-config", "gpu.yaml"]].concat();
    let (code, stdout, stderr) = run(&missing);
    let line = stderr.trim();
    if code != 1
        || !stdout.is_empty()
        || line.lines().count() != 1
        || !line.ends_with(
            "distribution.imageConfig names \"gpu.yaml\", but the image has no label com.ogx.config.gpu.yaml; its configs: config.yaml, run-with-postgres-store.yaml",
        )
    {
        return Err(format!("exit {code}, stdout {stdout:?}, stderr {stderr:?}").into());
    }
    Ok(())
}

const TESTS: &[(&str, Test)] = &[
    (
        "image_config_picks_one_of_an_ogx_images_configs",
        image_config_picks_one_of_an_ogx_images_configs,
    ),
    (
        "strict_fails_on_a_dead_mirror_and_passes_a_live_one",
        strict_fails_on_a_dead_mirror_and_passes_a_live_one,
    ),
    ("pinned_with_pull_secret", pinned_with_pull_secret),
    (
        "legacy_dockercfg_yaml_output_and_config",
        legacy_dockercfg_yaml_output_and_config,
    ),
    ("mirror_and_insecure_registry", mirror_and_insecure_registry),
    (
        "image_overrides_run_air_gapped",
        image_overrides_run_air_gapped,
    ),
    (
        "errors_are_one_actionable_line",
        errors_are_one_actionable_line,
    ),
    ("credential_provider_flags", credential_provider_flags),
];

fn start() -> Result<Env, support::registries::Error> {
    let regs = Registries::start()?;
    let dir = tempfile::Builder::new().prefix("llso-cli-").tempdir()?;
    let config = "version: 2\ndistro_name: cli-fixture\nproviders: {}\n".to_owned();
    let image = ImageSpec {
        arch: "amd64",
        labels: vec![
            ("io.llamastack.config.layer", "{layer0}".into()),
            ("io.llamastack.config.path", "/app/config.yaml".into()),
        ],
        layers: vec![Layer {
            entries: vec![Entry::File("/app/config.yaml", config.clone().into_bytes())],
            comp: Comp::Gzip,
        }],
    };
    let layout = dir.path().join("layout");
    let digest = write_layout(
        &layout,
        "v1",
        &[
            image.clone(),
            ImageSpec {
                arch: "arm64",
                ..image
            },
        ],
        true,
    )?;
    let cert_dir = regs.cert_dir();
    let creds = format!("{USER}:{PASSWORD}");
    skopeo_copy(
        &format!("oci:{}:v1", layout.display()),
        &format!("docker://{}/cli/app:v1", regs.basic.host),
        &[
            "--preserve-digests",
            "--dest-creds",
            &creds,
            "--dest-cert-dir",
            cert_dir.to_str().unwrap_or_default(),
        ],
    )?;
    skopeo_copy(
        &format!("oci:{}:v1", layout.display()),
        &format!("docker://{}/mirrored/app:v1", regs.plain.host),
        &["--preserve-digests", "--dest-tls-verify=false"],
    )?;
    Ok(Env {
        regs,
        dir,
        digest,
        config,
    })
}

fn main() -> ExitCode {
    run_suite(
        table(TESTS),
        "the test registries",
        || start().map_err(|e| e.to_string()),
        None,
    )
}
