//! Signature-verified base configs against the TLS + htpasswd registry, with images signed by
//! the real cosign 3.1 in both forms it writes (simple signing at `sha256-<hex>.sig`, cosign 2's
//! default; a sigstore bundle as an OCI referrer, through the fallback tag this registry needs),
//! built from Go modules.

use std::sync::{Arc, OnceLock};

use libtest_mimic::Failed;
use llama_stack_resolver::signature::policy::{Mode, Rule};
use llama_stack_resolver::signature::{PublicKey, SignaturePolicy, SignatureVerdict};
use llama_stack_resolver::{Distribution, Resolution, ResolveError, ResolverOptions};

use super::support::cosign::Cosign;
use super::support::oci::skopeo_copy;
use super::support::registries::{PASSWORD, USER};
use super::{Env, b64, config_yaml, image_with_labels, keyring, plain_layer};

static SIGNING: OnceLock<Result<Cosign, String>> = OnceLock::new();

/// The cosigns, started once for the suite.
fn signing(env: &Env) -> Result<&'static Cosign, Failed> {
    SIGNING
        .get_or_init(|| Cosign::start(&env.regs.basic.host, USER, PASSWORD, &env.regs.ca_pem()))
        .as_ref()
        .map_err(|e| e.clone().into())
}

/// The public key of a pair, loaded as the operator loads it.
fn public_key(cosign: &Cosign, pair: &str) -> Result<Vec<PublicKey>, Failed> {
    Ok(PublicKey::from_pem(
        &format!("{pair}/cosign.pub"),
        &std::fs::read(cosign.public_key(pair))?,
    )?)
}

fn sign(
    cosign: &Cosign,
    bundle: bool,
    pair: &str,
    image: &str,
    elsewhere: Option<&str>,
) -> Result<(), Failed> {
    cosign
        .sign(bundle, pair, image, elsewhere, false)
        .map_err(Into::into)
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
        Some(SignatureVerdict::Verified { key: k, form: f }) if k == key && *f == form => Ok(()),
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
    let signing = signing(env)?;
    for (bundle, repo, form) in [
        (false, "t/sig-v2", "simple-signing"),
        (true, "t/sig-bundle", "sigstore bundle"),
    ] {
        let (tagged, pinned) = push_labelled(env, repo, "v1", repo)?;
        sign(signing, bundle, "trusted", &pinned, None)?;
        let mut options = env.options();
        options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
        let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
        verified_by(&resolution, "trusted/cosign.pub", form)?;
        super::assert_eq(
            &*resolution.config.yaml,
            config_yaml(repo).as_str(),
            "the label's config",
        )?;

        let (other_tagged, other_pinned) =
            push_labelled(env, repo, "v2", &format!("{repo}-other"))?;
        sign(signing, bundle, "other", &other_pinned, None)?;
        let mut options = env.options();
        options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
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
    let signing = signing(env)?;
    let (tagged, pinned) = push_labelled(env, "t/sig-unsigned", "v1", "unsigned")?;
    let mut options = env.options();
    options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
    let stats = options.stats.clone();
    refused(resolve(env, options, &tagged), &pinned, "has no signature")?;
    let snapshot = stats.snapshot();
    super::assert_eq(&snapshot.config_cache, &(0, 0), "no config was read")?;
    super::assert_eq(&snapshot.signatures, &(0, 1, 0), "one unsigned check")?;

    let mut options = env.options();
    options.signatures = policy(public_key(signing, "trusted")?, Mode::Audit, None);
    let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
    let check = resolution.signature.ok_or("audit reports the check")?;
    super::assert_eq(&check.verdict, &SignatureVerdict::Unsigned, "audit verdict")?;
    super::assert_eq(
        &*resolution.config.yaml,
        config_yaml("unsigned").as_str(),
        "audit goes on",
    )?;
    Ok(())
}

/// A valid signature copied to another digest's signature tag is refused: it signs another image.
pub fn a_signature_of_another_digest_is_refused(env: &Env) -> Result<(), Failed> {
    let signing = signing(env)?;
    let (_, signed) = push_labelled(env, "t/sig-moved", "v1", "signed")?;
    let (tagged, unsigned) = push_labelled(env, "t/sig-moved", "v2", "unsigned")?;
    sign(signing, false, "trusted", &signed, None)?;
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
    options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
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
    let signing = signing(env)?;
    let elsewhere = format!("{}/t/signatures", env.regs.basic.host);
    for (bundle, repo) in [(false, "t/sig-apart-v2"), (true, "t/sig-apart-bundle")] {
        let (tagged, pinned) = push_labelled(env, repo, "v1", repo)?;
        sign(signing, bundle, "trusted", &pinned, Some(&elsewhere))?;
        let mut options = env.options();
        options.signatures = policy(
            public_key(signing, "trusted")?,
            Mode::Required,
            Some(elsewhere.clone()),
        );
        let resolution = resolve(env, options, &tagged).map_err(|e| e.to_string())?;
        if !resolution.signature.as_ref().is_some_and(|c| c.verified()) {
            return Err(format!("{repo}: not verified from {elsewhere}").into());
        }
        let mut options = env.options();
        options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
        refused(resolve(env, options, &tagged), &pinned, "has no signature")?;
    }
    Ok(())
}

/// A tag moved to an unsigned image is refused once the tag is looked up again, while the
/// verified digest still resolves (what a running stack keeps); a verified check is cached.
pub fn a_tag_moved_to_an_unsigned_image_is_refused(env: &Env) -> Result<(), Failed> {
    let signing = signing(env)?;
    let (tagged, signed) = push_labelled(env, "t/sig-retag", "v1", "signed")?;
    sign(signing, true, "trusted", &signed, None)?;
    let mut options = env.options();
    options.signatures = policy(public_key(signing, "trusted")?, Mode::Required, None);
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
        .block_on(resolver.resolve_pinned(&distribution, None, &signed, &keys))
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
