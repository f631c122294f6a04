//! Signature-verified base configs against the TLS + htpasswd registry, with images signed by
//! the real cosign (v2.6: simple signing at `sha256-<hex>.sig`; v3.1: a sigstore bundle as an OCI
//! referrer, through the fallback tag this registry needs), both built from Go modules.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use libtest_mimic::Failed;
use llama_stack_resolver::signature::policy::{Mode, Rule};
use llama_stack_resolver::signature::{PublicKey, SignaturePolicy, Verdict};
use llama_stack_resolver::{Distribution, Resolution, ResolveError, ResolverOptions};

use super::support::oci::skopeo_copy;
use super::support::registries::{PASSWORD, USER};
use super::support::sealed::with_host_network;
use super::{Env, b64, config_yaml, image_with_labels, keyring, plain_layer};

/// The cosign releases the tests sign with.
const COSIGN_V2: &str = "v2.6.5";
const COSIGN_V3: &str = "v3.1.3";

/// What the signing tests share: both cosigns, two key pairs and cosign's registry settings.
pub struct Signing {
    v2: PathBuf,
    v3: PathBuf,
    dir: tempfile::TempDir,
}

static SIGNING: OnceLock<Result<Signing, String>> = OnceLock::new();

fn build_cosign(version: &str) -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/build-cosign.sh");
    let out = with_host_network(Command::new(&script).arg(version))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "build-cosign.sh {version} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

impl Signing {
    fn get(env: &Env) -> Result<&'static Signing, Failed> {
        SIGNING
            .get_or_init(|| Signing::start(env))
            .as_ref()
            .map_err(|e| e.clone().into())
    }

    fn start(env: &Env) -> Result<Signing, String> {
        let dir = tempfile::Builder::new()
            .prefix("llso-cosign-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let signing = Signing {
            v2: build_cosign(COSIGN_V2)?,
            v3: build_cosign(COSIGN_V3)?,
            dir,
        };
        for name in ["trusted", "other"] {
            let keys = signing.dir.path().join(name);
            std::fs::create_dir_all(&keys).map_err(|e| e.to_string())?;
            let out = Command::new(&signing.v2)
                .arg("generate-key-pair")
                .current_dir(&keys)
                .env("COSIGN_PASSWORD", "")
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "cosign generate-key-pair: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        let docker = signing.dir.path().join("docker");
        std::fs::create_dir_all(&docker).map_err(|e| e.to_string())?;
        let auth = b64(&format!("{USER}:{PASSWORD}"));
        let config = serde_json::json!({"auths": {env.regs.basic.host.as_str(): {"auth": auth}}});
        std::fs::write(docker.join("config.json"), config.to_string())
            .map_err(|e| e.to_string())?;
        std::fs::write(signing.dir.path().join("ca.pem"), env.regs.ca_pem())
            .map_err(|e| e.to_string())?;
        // No Rekor, no timestamp authority: a signing config with no service in it.
        std::fs::write(
            signing.dir.path().join("signing-config.json"),
            r#"{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json"}"#,
        )
        .map_err(|e| e.to_string())?;
        Ok(signing)
    }

    /// The public key of a pair, loaded as the operator loads it.
    fn public_key(&self, name: &str) -> Result<Vec<PublicKey>, Failed> {
        let path = self.dir.path().join(name).join("cosign.pub");
        Ok(PublicKey::from_pem(
            &format!("{name}/cosign.pub"),
            &std::fs::read(path)?,
        )?)
    }

    /// `cosign sign` of `image` (by digest) with the `key` pair: v2 writes simple signing, v3 a
    /// bundle. `signatures_in`: cosign's `COSIGN_REPOSITORY`.
    fn sign(
        &self,
        cosign_v3: bool,
        key: &str,
        image: &str,
        signatures_in: Option<&str>,
    ) -> Result<(), Failed> {
        let key_file = self.dir.path().join(key).join("cosign.key");
        let mut command = Command::new(if cosign_v3 { &self.v3 } else { &self.v2 });
        command
            .args(["sign", "--yes", "--key"])
            .arg(&key_file)
            .env("COSIGN_PASSWORD", "")
            .env("DOCKER_CONFIG", self.dir.path().join("docker"))
            .env("SSL_CERT_FILE", self.dir.path().join("ca.pem"))
            .env_remove("COSIGN_REPOSITORY");
        if cosign_v3 {
            command
                .arg("--signing-config")
                .arg(self.dir.path().join("signing-config.json"));
        } else {
            command.arg("--tlog-upload=false");
        }
        if let Some(repository) = signatures_in {
            command.env("COSIGN_REPOSITORY", repository);
        }
        let out = command.arg(image).output()?;
        if !out.status.success() {
            return Err(format!(
                "cosign sign {image}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(())
    }
}

fn policy(
    keys: Vec<PublicKey>,
    mode: Mode,
    signature_repository: Option<String>,
) -> Arc<SignaturePolicy> {
    Arc::new(SignaturePolicy {
        rules: vec![Rule {
            name: "test-policy".to_owned(),
            distributions: Vec::new(),
            images: vec!["*/t/sig-*".to_owned()],
            mode,
            keys,
            missing_keys: Vec::new(),
            signature_repository,
        }],
    })
}

/// Pushes a labelled image to the basic registry; returns `(tag reference, pinned reference)`.
fn push_labelled(
    env: &Env,
    repo: &str,
    tag: &str,
    marker: &str,
) -> Result<(String, String), Failed> {
    let host = &env.regs.basic.host;
    let digest = env.push(
        host,
        repo,
        tag,
        &[image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml(marker)))],
            vec![plain_layer()],
        )],
        false,
    )?;
    Ok((
        format!("{host}/{repo}:{tag}"),
        format!("{host}/{repo}@{digest}"),
    ))
}

fn resolve(
    env: &Env,
    options: ResolverOptions,
    image: &str,
) -> Result<Resolution, Arc<ResolveError>> {
    let keys = keyring(&[("pull", &env.regs.basic.host, USER, PASSWORD)]);
    let resolver = llama_stack_resolver::Resolver::new(options).map_err(Arc::new)?;
    env.rt
        .block_on(resolver.resolve(&Distribution::Image(image.to_owned()), &keys))
}

fn verified_by(resolution: &Resolution, key: &str, form: &str) -> Result<(), Failed> {
    match resolution.signature.as_ref().map(|c| &c.verdict) {
        Some(Verdict::Verified { key: k, form: f }) if k == key && *f == form => Ok(()),
        other => Err(format!("expected verified by {key} ({form}), got {other:?}").into()),
    }
}

fn refused(
    result: Result<Resolution, Arc<ResolveError>>,
    pinned: &str,
    wanted: &str,
) -> Result<(), Failed> {
    match result {
        Ok(r) => Err(format!("{pinned} was accepted: {:?}", r.signature).into()),
        Err(e) => {
            let text = e.to_string();
            for part in [
                pinned,
                wanted,
                "\"test-policy\" (required)",
                "keys tried: trusted/cosign.pub",
            ] {
                if !text.contains(part) {
                    return Err(format!("the refusal lacks {part:?}: {text}").into());
                }
            }
            if !matches!(e.as_ref(), ResolveError::Signature { .. }) {
                return Err(format!("not a signature refusal: {e:?}").into());
            }
            Ok(())
        }
    }
}

/// Both cosign forms verify with the trusted key, before the label is read; the other key's
/// signatures are refused, naming the digest, the policy and the keys tried.
pub fn both_forms_verify_with_the_trusted_key_only(env: &Env) -> Result<(), Failed> {
    let signing = Signing::get(env)?;
    for (v3, repo, form) in [
        (false, "t/sig-v2", "simple-signing"),
        (true, "t/sig-v3", "sigstore bundle"),
    ] {
        let (tagged, pinned) = push_labelled(env, repo, "v1", repo)?;
        signing.sign(v3, "trusted", &pinned, None)?;
        let mut options = env.options();
        options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
        let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
        verified_by(&resolution, "trusted/cosign.pub", form)?;
        super::assert_eq(
            &*resolution.config.yaml,
            config_yaml(repo).as_str(),
            "the label's config",
        )?;

        let (other_tagged, other_pinned) =
            push_labelled(env, repo, "v2", &format!("{repo}-other"))?;
        signing.sign(v3, "other", &other_pinned, None)?;
        let mut options = env.options();
        options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
        refused(
            resolve(env, options, &other_tagged),
            &other_pinned,
            "none of the keys verifies",
        )?;
    }
    Ok(())
}

/// An unsigned image is refused before its config blob is fetched; `audit` reports it and goes
/// on; the counters say what was checked.
pub fn unsigned_is_refused_or_audited(env: &Env) -> Result<(), Failed> {
    let signing = Signing::get(env)?;
    let (tagged, pinned) = push_labelled(env, "t/sig-unsigned", "v1", "unsigned")?;
    let mut options = env.options();
    options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
    let stats = options.stats.clone();
    refused(resolve(env, options, &tagged), &pinned, "has no signature")?;
    let snapshot = stats.snapshot();
    super::assert_eq(&snapshot.config_cache, &(0, 0), "no config was read")?;
    super::assert_eq(&snapshot.signatures, &(0, 1, 0), "one unsigned check")?;

    let mut options = env.options();
    options.signatures = policy(signing.public_key("trusted")?, Mode::Audit, None);
    let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
    let check = resolution.signature.ok_or("audit reports the check")?;
    super::assert_eq(&check.verdict, &Verdict::Unsigned, "audit verdict")?;
    super::assert_eq(
        &*resolution.config.yaml,
        config_yaml("unsigned").as_str(),
        "audit goes on",
    )?;
    Ok(())
}

/// A valid signature copied to another digest's signature tag is refused: it signs another image.
pub fn a_signature_of_another_digest_is_refused(env: &Env) -> Result<(), Failed> {
    let signing = Signing::get(env)?;
    let (_, signed) = push_labelled(env, "t/sig-moved", "v1", "signed")?;
    let (tagged, unsigned) = push_labelled(env, "t/sig-moved", "v2", "unsigned")?;
    signing.sign(false, "trusted", &signed, None)?;
    let sig_tag = |pinned: &str| {
        pinned
            .replacen('@', ":", 1)
            .replacen("sha256:", "sha256-", 1)
            + ".sig"
    };
    let cert_dir = env.regs.cert_dir();
    let creds = format!("{USER}:{PASSWORD}");
    let auth = [
        "--src-creds",
        &creds,
        "--src-cert-dir",
        cert_dir.to_str().unwrap_or_default(),
        "--dest-creds",
        &creds,
        "--dest-cert-dir",
        cert_dir.to_str().unwrap_or_default(),
        "--preserve-digests",
    ];
    skopeo_copy(
        &format!("docker://{}", sig_tag(&signed)),
        &format!("docker://{}", sig_tag(&unsigned)),
        &auth,
    )?;
    let mut options = env.options();
    options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
    let digest = signed.split_once('@').map(|(_, d)| d).unwrap_or_default();
    refused(
        resolve(env, options, &tagged),
        &unsigned,
        &format!("of {digest} (a signature of another image)"),
    )
}

/// Signatures kept in another repository (`COSIGN_REPOSITORY`) are found through the rule's
/// `signatureRepository`, in both forms, and missed without it.
pub fn signatures_in_another_repository(env: &Env) -> Result<(), Failed> {
    let signing = Signing::get(env)?;
    let elsewhere = format!("{}/t/signatures", env.regs.basic.host);
    for (v3, repo) in [(false, "t/sig-apart-v2"), (true, "t/sig-apart-v3")] {
        let (tagged, pinned) = push_labelled(env, repo, "v1", repo)?;
        signing.sign(v3, "trusted", &pinned, Some(&elsewhere))?;
        let mut options = env.options();
        options.signatures = policy(
            signing.public_key("trusted")?,
            Mode::Required,
            Some(elsewhere.clone()),
        );
        let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
        if !resolution.signature.as_ref().is_some_and(|c| c.verified()) {
            return Err(format!("{repo}: not verified from {elsewhere}").into());
        }
        let mut options = env.options();
        options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
        refused(resolve(env, options, &tagged), &pinned, "has no signature")?;
    }
    Ok(())
}

/// A tag moved to an unsigned image is refused once the tag is looked up again, while the
/// verified digest still resolves (what a running stack keeps); a verified check is cached.
pub fn a_tag_moved_to_an_unsigned_image_is_refused(env: &Env) -> Result<(), Failed> {
    let signing = Signing::get(env)?;
    let (tagged, signed) = push_labelled(env, "t/sig-retag", "v1", "signed")?;
    signing.sign(true, "trusted", &signed, None)?;
    let mut options = env.options();
    options.signatures = policy(signing.public_key("trusted")?, Mode::Required, None);
    options.tag_ttl = std::time::Duration::from_millis(200);
    let keys = keyring(&[("pull", &env.regs.basic.host, USER, PASSWORD)]);
    let resolver = env.resolver(options.clone())?;
    let distribution = Distribution::Image(tagged.clone());
    let first = env
        .rt
        .block_on(resolver.resolve(&distribution, &keys))
        .map_err(|e| e.to_string())?;
    super::assert_eq(&first.image, &signed, "the signed image")?;
    let (_, moved) = push_labelled(env, "t/sig-retag", "v1", "unsigned")?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    refused(
        env.rt.block_on(resolver.resolve(&distribution, &keys)),
        &moved,
        "has no signature",
    )?;
    let kept = env
        .rt
        .block_on(resolver.resolve_pinned(&distribution, &signed, &keys))
        .map_err(|e| e.to_string())?;
    verified_by(&kept, "trusted/cosign.pub", "sigstore bundle")?;
    // The digest's verified check came from the cache: still one verified check.
    super::assert_eq(
        &options.stats.snapshot().signatures,
        &(1, 1, 0),
        "one verified, one unsigned",
    )?;
    Ok(())
}
