//! `scripts/release.sh` end to end against the local TLS registry with htpasswd auth: the image
//! pushed, its digest signed and each SBOM attached as a signed attestation, checked with the real
//! cosign (`scripts/build-cosign.sh`, built from Go modules) as a user would; the manifests and the
//! chart pinned to that digest. One platform here (the image for both is built by `.ci/run`).

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;

use super::support::control_plane::run_build_script;
use super::support::registries::{PASSWORD, Registries, USER};

const VERSION: &str = "0.1.0-test.1";

fn run(command: &mut Command) -> Output {
    command.output().expect("run")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A cosign key pair in `dir` (cosign.key, cosign.pub), with the password `password`.
fn key_pair(cosign: &Path, dir: &Path, password: &str) {
    let out = run(Command::new(cosign)
        .arg("generate-key-pair")
        .current_dir(dir)
        .env("COSIGN_PASSWORD", password));
    assert!(out.status.success(), "generate-key-pair: {}", text(&out));
}

#[test]
fn a_release_is_pushed_signed_attested_and_pinned() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Built on the host network (they fetch modules and crates); release.sh then finds them cached.
    let cosign = run_build_script("build-cosign.sh", &[], &[]).expect("cosign");
    let helm = run_build_script("build-helm.sh", &[], &[]).expect("helm");
    run_build_script("build-operator-image.sh", &["amd64".to_owned()], &[]).expect("image");
    // Installs cargo-cyclonedx where it is missing (crates.io), then writes the SBOM.
    run_build_script("build-sbom.sh", &["amd64".to_owned()], &[]).expect("SBOM");
    let regs = Registries::start().expect("registries");
    let work = tempfile::tempdir().unwrap();
    let (keys, other_keys, docker) = (
        work.path().join("keys"),
        work.path().join("other"),
        work.path().join("docker"),
    );
    for dir in [&keys, &other_keys, &docker] {
        std::fs::create_dir_all(dir).unwrap();
    }
    key_pair(&cosign, &keys, "release-pass");
    key_pair(&cosign, &other_keys, "other-pass");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        docker.join("config.json"),
        serde_json::json!({"auths": {regs.basic.host.as_str(): {"auth": auth}}}).to_string(),
    )
    .unwrap();
    let ca = regs.dir.path().join("ca.pem");
    let out_dir = work.path().join("dist");
    let registry = format!("{}/llso", regs.basic.host);

    let released = run(Command::new(root.join("scripts/release.sh"))
        .args([registry.as_str(), VERSION, &out_dir.display().to_string()])
        .env(
            "COSIGN_PRIVATE_KEY",
            std::fs::read_to_string(keys.join("cosign.key")).unwrap(),
        )
        .env("COSIGN_PASSWORD", "release-pass")
        .env("LLSO_RELEASE_ARCHES", "amd64")
        .env("REGISTRY_CA_FILE", &ca)
        .env("DOCKER_CONFIG", &docker));
    assert!(released.status.success(), "release.sh: {}", text(&released));
    let reference = String::from_utf8_lossy(&released.stdout).trim().to_owned();
    let prefix = format!("{registry}/llama-stack-operator@sha256:");
    assert!(
        reference.starts_with(&prefix) && reference.len() == prefix.len() + 64,
        "{reference}"
    );

    let cosign_check = |args: &[&str], key: &Path| -> Output {
        run(Command::new(&cosign)
            .args(args)
            .args([
                "--key",
                &key.join("cosign.pub").display().to_string(),
                "--insecure-ignore-tlog=true",
                &reference,
            ])
            .env("SSL_CERT_FILE", &ca)
            .env("DOCKER_CONFIG", &docker))
    };
    let verified = cosign_check(&["verify"], &keys);
    assert!(
        verified.status.success(),
        "cosign verify: {}",
        text(&verified)
    );
    let digest = reference.rsplit('@').next().unwrap();
    assert!(
        String::from_utf8_lossy(&verified.stdout).contains(digest),
        "{}",
        text(&verified)
    );
    let attested = cosign_check(&["verify-attestation", "--type", "cyclonedx"], &keys);
    assert!(
        attested.status.success(),
        "cosign verify-attestation: {}",
        text(&attested)
    );
    // Each line is a DSSE envelope; its payload is the in-toto statement about the digest.
    let statements: Vec<serde_json::Value> = String::from_utf8_lossy(&attested.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|envelope| {
            let payload = base64::engine::general_purpose::STANDARD
                .decode(envelope["payload"].as_str()?)
                .ok()?;
            serde_json::from_slice(&payload).ok()
        })
        .collect();
    assert!(!statements.is_empty(), "no attestation printed");
    for statement in &statements {
        assert_eq!(statement["predicateType"], "https://cyclonedx.org/bom");
        assert_eq!(
            statement["subject"][0]["digest"]["sha256"].as_str(),
            digest.strip_prefix("sha256:")
        );
        assert_eq!(
            statement["predicate"]["metadata"]["component"]["name"],
            "llama-stack-operator"
        );
    }
    let forged = cosign_check(&["verify"], &other_keys);
    assert!(
        !forged.status.success(),
        "another key verified the release: {}",
        text(&forged)
    );

    for file in [
        "operator.yaml",
        "operator-cert-manager.yaml",
        "operator-openshift.yaml",
        "operator-monitoring.yaml",
    ] {
        let manifests = std::fs::read_to_string(out_dir.join("release").join(file)).unwrap();
        assert!(
            manifests.contains(&format!("image: {reference}\n")),
            "{file} is not pinned"
        );
        assert!(
            !manifests.contains("ghcr.io/llamastack/llama-stack-operator:"),
            "{file} names a tag"
        );
    }
    let chart = out_dir.join(format!("llama-stack-operator-{VERSION}.tgz"));
    let rendered = run(Command::new(&helm)
        .args([
            "template",
            "x",
            &chart.display().to_string(),
            "--kube-version",
            "1.35.0",
        ])
        .env("HELM_CACHE_HOME", work.path().join("helm-cache"))
        .env("HELM_CONFIG_HOME", work.path().join("helm-config")));
    assert!(rendered.status.success(), "{}", text(&rendered));
    assert!(
        String::from_utf8_lossy(&rendered.stdout).contains(&format!("image: {reference}\n")),
        "the chart is not pinned"
    );
}
