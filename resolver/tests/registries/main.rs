//! The resolver against real registries (Debian's docker-registry with htpasswd + TLS, token
//! auth + TLS, and plain HTTP), with fixtures written as OCI layouts and pushed with skopeo.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

mod credential_providers;
mod signatures;
use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::Failed;
use llama_stack_resolver::Catalog;
use llama_stack_resolver::Limits;
use llama_stack_resolver::Platform;
use llama_stack_resolver::base_config::ConfigSource;
use llama_stack_resolver::sha256_hex;
use llama_stack_resolver::{CredentialSource, Keyring};
use llama_stack_resolver::{DOCKER_CONFIG_JSON, add_pull_secret};
use llama_stack_resolver::{Distribution, ResolveError, Resolver, ResolverOptions};
use support::harness::{run_suite, table};
use support::oci::{Comp, Entry, ImageSpec, Layer, skopeo_copy, write_layout};
use support::registries::{PASSWORD, Registries, USER};

struct Env {
    regs: Registries,
    rt: tokio::runtime::Runtime,
    work: tempfile::TempDir,
}

type Test = fn(&Env) -> Result<(), Failed>;

fn config_yaml(marker: &str) -> String {
    format!("version: 2\ndistro_name: {marker}\napis: [inference]\nproviders:\n  inference: []\n")
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn image_with_labels(
    arch: &'static str,
    labels: Vec<(&'static str, String)>,
    layers: Vec<Layer>,
) -> ImageSpec {
    ImageSpec {
        arch,
        labels,
        layers,
    }
}

fn plain_layer() -> Layer {
    Layer {
        entries: vec![Entry::File("/etc/os-release", b"ID=test\n".to_vec())],
        comp: Comp::Gzip,
    }
}

fn config_layer(path: &'static str, yaml: &str, comp: Comp) -> Layer {
    Layer {
        entries: vec![
            Entry::File("/opt/app-root/README", b"fixture\n".to_vec()),
            Entry::File(path, yaml.as_bytes().to_vec()),
        ],
        comp,
    }
}

impl Env {
    fn layout(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// Writes and pushes a fixture; returns the top-level digest.
    fn push(
        &self,
        host: &str,
        repo: &str,
        tag: &str,
        images: &[ImageSpec],
        index: bool,
    ) -> Result<String, Failed> {
        let dir = self.layout(&format!("{}-{tag}", repo.replace('/', "_")));
        let digest = write_layout(&dir, tag, images, index)?;
        let dest = format!("docker://{host}/{repo}:{tag}");
        let src = format!("oci:{}:{tag}", dir.display());
        let cert_dir = self.regs.cert_dir();
        let creds = format!("{USER}:{PASSWORD}");
        let args: Vec<&str> = if host == self.regs.plain.host
            || !host.starts_with("127.0.0.1")
            || self.is_plain(host)
        {
            vec!["--preserve-digests", "--dest-tls-verify=false"]
        } else {
            vec![
                "--preserve-digests",
                "--dest-creds",
                &creds,
                "--dest-cert-dir",
                cert_dir.to_str().unwrap_or_default(),
            ]
        };
        skopeo_copy(&src, &dest, &args)?;
        Ok(digest)
    }

    fn is_plain(&self, host: &str) -> bool {
        host != self.regs.basic.host && host != self.regs.token.host
    }

    fn options(&self) -> ResolverOptions {
        let mut options = ResolverOptions::new(Catalog::embedded().expect("embedded catalog"));
        options.extra_ca_pem = Some(self.regs.ca_pem());
        options.insecure_registries = vec![self.regs.plain.host.clone()];
        options
    }

    fn resolver(&self, options: ResolverOptions) -> Result<Resolver, Failed> {
        Resolver::new(options).map_err(|e| e.to_string().into())
    }
}

/// A keyring built through the real pull-secret path.
fn keyring(secrets: &[(&str, &str, &str, &str)]) -> Keyring {
    let mut keyring = Keyring::default();
    for (name, host, user, password) in secrets {
        let json = serde_json::json!({"auths": {*host: {"username": user, "password": password}}});
        let data = BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            serde_json::to_vec(&json).unwrap_or_default(),
        )]);
        let source = CredentialSource {
            namespace: "team".to_owned(),
            name: (*name).to_owned(),
        };
        add_pull_secret(&mut keyring, source, DOCKER_CONFIG_JSON, &data)
            .expect("valid pull secret");
    }
    keyring
}

fn image(s: String) -> Distribution {
    Distribution::Image(s)
}

fn expect_err(
    result: Result<llama_stack_resolver::Resolution, Arc<ResolveError>>,
    needle: &str,
) -> Result<Arc<ResolveError>, Failed> {
    match result {
        Ok(r) => Err(format!("expected an error containing {needle:?}, got {}", r.image).into()),
        Err(e) if e.to_string().contains(needle) => Ok(e),
        Err(e) => Err(format!("expected an error containing {needle:?}, got: {e}").into()),
    }
}

fn base64_label_multi_arch(env: &Env) -> Result<(), Failed> {
    let (amd, arm) = (config_yaml("amd64-fixture"), config_yaml("arm64-fixture"));
    let digest = env.push(
        &env.regs.basic.host,
        "t/base64",
        "v1",
        &[
            image_with_labels(
                "amd64",
                vec![
                    ("io.llamastack.config.base64", b64(&amd)),
                    ("io.llamastack.config.version", "2".into()),
                ],
                vec![plain_layer()],
            ),
            image_with_labels(
                "arm64",
                vec![("io.llamastack.config.base64", b64(&arm))],
                vec![plain_layer()],
            ),
        ],
        true,
    )?;
    let keys = keyring(&[("pull", &env.regs.basic.host, USER, PASSWORD)]);
    let resolver = env.resolver(env.options())?;
    let r = env
        .rt
        .block_on(resolver.resolve(
            &image(format!("{}/t/base64:v1", env.regs.basic.host)),
            &keys,
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &r.image,
        &format!("{}/t/base64@{digest}", env.regs.basic.host),
        "pinned to the index digest",
    )?;
    assert_eq(&*r.config.yaml, &amd, "amd64 config")?;
    assert_eq(&r.config.hash, &sha256_hex(amd.as_bytes()), "config hash")?;
    assert_eq(&r.config.source, &ConfigSource::OciLabel, "source")?;
    assert_eq(&r.pinned, &true, "pinned")?;
    let before = resolver.registry_requests();
    env.rt
        .block_on(resolver.resolve(
            &image(format!("{}/t/base64:v1", env.regs.basic.host)),
            &keys,
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &resolver.registry_requests(),
        &before,
        "a warm resolve makes no registry request",
    )?;

    let mut options = env.options();
    options.platform = "linux/arm64".parse::<Platform>()?;
    let r = env
        .rt
        .block_on(env.resolver(options)?.resolve(
            &image(format!("{}/t/base64:v1", env.regs.basic.host)),
            &keys,
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(&*r.config.yaml, &arm, "arm64 config")?;
    let mut options = env.options();
    options.platform = "linux/s390x".parse::<Platform>()?;
    expect_err(
        env.rt.block_on(env.resolver(options)?.resolve(
            &image(format!("{}/t/base64:v1", env.regs.basic.host)),
            &keys,
        )),
        "has no manifest for platform linux/s390x; available: linux/amd64, linux/arm64",
    )?;
    Ok(())
}

fn assert_eq<T: PartialEq + std::fmt::Debug + ?Sized>(
    got: &T,
    want: &T,
    what: &str,
) -> Result<(), Failed> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}").into())
    }
}

/// An amd64 image whose labels name its second layer and the config file in it.
fn config_in_layer_image(yaml: &str, comp: Comp) -> ImageSpec {
    image_with_labels(
        "amd64",
        vec![
            ("io.llamastack.config.layer", "{layer1}".into()),
            (
                "io.llamastack.config.path",
                "/opt/app-root/config.yaml".into(),
            ),
        ],
        vec![
            plain_layer(),
            config_layer("/opt/app-root/config.yaml", yaml, comp),
        ],
    )
}

fn layer_labels(env: &Env, comp: Comp, repo: &str) -> Result<(), Failed> {
    let yaml = config_yaml(repo);
    env.push(
        &env.regs.plain.host,
        repo,
        "v1",
        &[config_in_layer_image(&yaml, comp)],
        false,
    )?;
    let r = env
        .rt
        .block_on(env.resolver(env.options())?.resolve(
            &image(format!("{}/{repo}:v1", env.regs.plain.host)),
            &Keyring::default(),
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(&*r.config.yaml, &yaml, "config from the layer")
}

fn layer_label_gzip(env: &Env) -> Result<(), Failed> {
    layer_labels(env, Comp::Gzip, "t/layer-gzip")
}

fn layer_label_uncompressed(env: &Env) -> Result<(), Failed> {
    layer_labels(env, Comp::None, "t/layer-tar")
}

/// The layers of the single image written at `layout` (an OCI layout of [`write_layout`]).
fn layout_layers(layout: &std::path::Path) -> Vec<String> {
    let blob = |digest: &str| -> serde_json::Value {
        let path = layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest = blob(index["manifests"][0]["digest"].as_str().unwrap());
    manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_owned())
        .collect()
}

/// A mirror whose storage was altered (a compromised mirror: the real registry serves whatever
/// its disk holds for a digest) serves other bytes for the layer the label names. The config read
/// from them is refused, naming the layer, and it poisons nothing: the same image (the same
/// config blob) from an intact registry then resolves to its own config, through the same
/// resolver and its config cache.
fn a_doctored_layer_is_refused_and_poisons_no_other_image(env: &Env) -> Result<(), Failed> {
    let repo = "t/doctored";
    let spec = |yaml: &str| config_in_layer_image(yaml, Comp::Gzip);
    let yaml = config_yaml("signed");
    let mirror = env.regs.start_extra_plain("doctored-mirror")?;
    env.push(&env.regs.plain.host, repo, "v1", &[spec(&yaml)], false)?;
    env.push(&mirror.host, repo, "v1", &[spec(&yaml)], false)?;
    // The doctored layer: the same file, another config, written over the mirror's copy.
    let doctored = env.layout("doctored-layer");
    write_layout(&doctored, "v1", &[spec(&config_yaml("doctored"))], false)?;
    let genuine = layout_layers(&env.layout(&format!("{}-v1", repo.replace('/', "_"))));
    let altered = layout_layers(&doctored);
    let hex = genuine[1].trim_start_matches("sha256:");
    let stored = env
        .regs
        .dir
        .path()
        .join("data-doctored-mirror/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    std::fs::copy(
        doctored
            .join("blobs/sha256")
            .join(altered[1].trim_start_matches("sha256:")),
        &stored,
    )
    .map_err(|e| format!("cannot alter {}: {e}", stored.display()))?;

    let mut options = env.options();
    options.insecure_registries.push(mirror.host.clone());
    let resolver = env.resolver(options)?;
    let from = |host: &str| image(format!("{host}/{repo}:v1"));
    for attempt in ["first", "second"] {
        match env
            .rt
            .block_on(resolver.resolve(&from(&mirror.host), &Keyring::default()))
        {
            Ok(r) => {
                return Err(format!(
                    "{attempt} resolve: the doctored layer was trusted: {}",
                    r.config.yaml
                )
                .into());
            }
            Err(e) => {
                let text = e.to_string();
                let want = format!(
                    "sent layer {} of {repo} whose content does not match digest {}",
                    genuine[1], genuine[1]
                );
                if !text.contains(&want) {
                    return Err(format!("{attempt} resolve: want {want:?} in {text:?}").into());
                }
            }
        }
    }
    let intact = env
        .rt
        .block_on(resolver.resolve(&from(&env.regs.plain.host), &Keyring::default()))
        .map_err(|e| e.to_string())?;
    assert_eq(&*intact.config.yaml, &yaml, "config of the intact image")
}

fn docker_media_types_and_zstd_mirror(env: &Env) -> Result<(), Failed> {
    let yaml = config_yaml("mirrored");
    let basic = &env.regs.basic.host;
    env.push(
        basic,
        "t/layered",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![
                ("io.llamastack.config.layer", "{layer1}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![
                plain_layer(),
                config_layer("/app/config.yaml", &yaml, Comp::Gzip),
            ],
        )],
        false,
    )?;
    // The same image labelled with the layer's diff_id (uncompressed digest), which survives
    // re-compression.
    env.push(
        basic,
        "t/layered-diff",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![
                ("io.llamastack.config.layer", "{diff1}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![
                plain_layer(),
                config_layer("/app/config.yaml", &yaml, Comp::Gzip),
            ],
        )],
        false,
    )?;
    let creds = format!("{USER}:{PASSWORD}");
    let cert_dir = env.regs.cert_dir();
    let cert_dir = cert_dir.to_str().unwrap_or_default();
    // Docker v2s2 media types.
    skopeo_copy(
        &format!("docker://{basic}/t/layered:v1"),
        &format!("docker://{basic}/t/layered:docker"),
        &[
            "--format",
            "v2s2",
            "--src-creds",
            &creds,
            "--src-cert-dir",
            cert_dir,
            "--dest-creds",
            &creds,
            "--dest-cert-dir",
            cert_dir,
        ],
    )?;
    let keys = keyring(&[("pull", basic, USER, PASSWORD)]);
    let r = env
        .rt
        .block_on(
            env.resolver(env.options())?
                .resolve(&image(format!("{basic}/t/layered:docker")), &keys),
        )
        .map_err(|e| e.to_string())?;
    assert_eq(&*r.config.yaml, &yaml, "docker media types")?;

    // A mirror that re-compressed the layers to zstd: a compressed-digest label no longer names
    // a layer (the resolver scans the layers for the path), a diff_id label still does. The
    // deployed image is the mirror's.
    let plain = &env.regs.plain.host;
    for repo in ["layered", "layered-diff"] {
        skopeo_copy(
            &format!("docker://{basic}/t/{repo}:v1"),
            &format!("docker://{plain}/mirror/{repo}:v1"),
            &[
                "--src-creds",
                &creds,
                "--src-cert-dir",
                cert_dir,
                "--dest-tls-verify=false",
                "--dest-compress",
                "--dest-compress-format",
                "zstd",
            ],
        )?;
        let mut options = env.options();
        options.mirrors = vec![
            format!("{basic}/t={plain}/mirror")
                .parse()
                .map_err(|e: llama_stack_resolver::MirrorRuleError| e.to_string())?,
        ];
        let r = env
            .rt
            .block_on(
                env.resolver(options)?
                    .resolve(&image(format!("{basic}/t/{repo}:v1")), &Keyring::default()),
            )
            .map_err(|e| e.to_string())?;
        assert_eq(
            &*r.config.yaml,
            &yaml,
            &format!("config from the zstd mirror copy of {repo}"),
        )?;
        if !r
            .image
            .starts_with(&format!("{plain}/mirror/{repo}@sha256:"))
        {
            return Err(format!("the deployed image must be the mirror's, got {}", r.image).into());
        }
    }
    Ok(())
}

fn tag_moves_after_ttl_only(env: &Env) -> Result<(), Failed> {
    let plain = &env.regs.plain.host;
    let one = |m: &str| {
        vec![image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml(m)))],
            vec![plain_layer()],
        )]
    };
    let d1 = env.push(plain, "t/moving", "v1", &one("first"), false)?;
    let mut options = env.options();
    options.tag_ttl = Duration::from_millis(1500);
    let resolver = env.resolver(options)?;
    let resolve = || {
        env.rt
            .block_on(resolver.resolve(&image(format!("{plain}/t/moving:v1")), &Keyring::default()))
            .map_err(|e| e.to_string())
    };
    assert_eq(
        &resolve()?.image,
        &format!("{plain}/t/moving@{d1}"),
        "first digest",
    )?;
    let d2 = env.push(plain, "t/moving", "v1", &one("second"), false)?;
    if d1 == d2 {
        return Err("fixture error: the two images have the same digest".into());
    }
    assert_eq(
        &resolve()?.image,
        &format!("{plain}/t/moving@{d1}"),
        "within the TTL the running digest stays",
    )?;
    std::thread::sleep(Duration::from_millis(1700));
    let r = resolve()?;
    assert_eq(
        &r.image,
        &format!("{plain}/t/moving@{d2}"),
        "after the TTL the new digest",
    )?;
    assert_eq(
        &*r.config.yaml,
        &config_yaml("second"),
        "and its own config",
    )?;
    // A digest reference is used as given.
    let r = env
        .rt
        .block_on(resolver.resolve(
            &image(format!("{plain}/t/moving@{d1}")),
            &Keyring::default(),
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &r.image,
        &format!("{plain}/t/moving@{d1}"),
        "digest reference",
    )?;
    assert_eq(
        &*r.config.yaml,
        &config_yaml("first"),
        "digest reference config",
    )
}

fn credentials_kubelet_order(env: &Env) -> Result<(), Failed> {
    let basic = &env.regs.basic.host;
    env.push(
        basic,
        "t/private",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml("private")))],
            vec![plain_layer()],
        )],
        false,
    )?;
    let target = image(format!("{basic}/t/private:v1"));
    let resolver = env.resolver(env.options())?;
    // Wrong password: the error names the registry and the secret, not the password.
    let err = expect_err(
        env.rt
            .block_on(resolver.resolve(&target, &keyring(&[("wrong", basic, USER, "nope")]))),
        "rejected every pull secret",
    )?;
    let text = err.to_string();
    if !text.contains(basic.as_str()) || !text.contains("team/wrong") || text.contains("nope") {
        return Err(format!("unexpected message: {text}").into());
    }
    // No matching secret: anonymous, refused, with the hint.
    expect_err(
        env.rt
            .block_on(resolver.resolve(&target, &keyring(&[("other", "quay.io", "u", "p")]))),
        "no pull secret matches this registry",
    )?;
    // First matching credential wrong, second right: kubelet tries them in order.
    let both = keyring(&[
        ("stale", basic, USER, "old"),
        ("fresh", basic, USER, PASSWORD),
    ]);
    let r = env
        .rt
        .block_on(resolver.resolve(&target, &both))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &*r.config.yaml,
        &config_yaml("private"),
        "second credential",
    )?;
    // The same image with other credentials is not served from the first caller's cache.
    expect_err(
        env.rt
            .block_on(resolver.resolve(&target, &Keyring::default())),
        "no pull secret matches",
    )?;
    Ok(())
}

fn token_auth(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.token.host;
    env.push(
        host,
        "t/token",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml("token")))],
            vec![plain_layer()],
        )],
        false,
    )?;
    let before = env.regs.token_requests()?;
    let resolver = env.resolver(env.options())?;
    let r = env
        .rt
        .block_on(resolver.resolve(
            &image(format!("{host}/t/token:v1")),
            &keyring(&[("pull", host, USER, PASSWORD)]),
        ))
        .map_err(|e| e.to_string())?;
    assert_eq(&*r.config.yaml, &config_yaml("token"), "token registry")?;
    let used = env.regs.token_requests()? - before;
    assert_eq(
        &used,
        &1,
        "one token serves manifest and blob requests of the repository",
    )?;
    expect_err(
        env.rt.block_on(env.resolver(env.options())?.resolve(
            &image(format!("{host}/t/token:v1")),
            &keyring(&[("bad", host, USER, "wrong")]),
        )),
        "rejected every pull secret that matches",
    )?;
    Ok(())
}

fn registry_down_serves_last_known_good(env: &Env) -> Result<(), Failed> {
    let mut extra = env.regs.start_extra_plain("outage")?;
    let host = extra.host.clone();
    env.push(
        &host,
        "t/outage",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml("outage")))],
            vec![plain_layer()],
        )],
        false,
    )?;
    let mut options = env.options();
    options.insecure_registries.push(host.clone());
    options.tag_ttl = Duration::from_millis(200);
    options.failure_ttl = Duration::from_millis(200);
    options.timeout = Duration::from_secs(3);
    // A name overridden to the outage registry, to check the embedded fallback too.
    let overrides = BTreeMap::from([("starter".to_owned(), format!("{host}/t/unseen:v1"))]);
    options.catalog = options.catalog.with_overrides(&overrides);
    let resolver = env.resolver(options)?;
    let target = image(format!("{host}/t/outage:v1"));
    let good = env
        .rt
        .block_on(resolver.resolve(&target, &Keyring::default()))
        .map_err(|e| e.to_string())?;
    extra.stop();
    std::thread::sleep(Duration::from_millis(300));
    let stale = env
        .rt
        .block_on(resolver.resolve(&target, &Keyring::default()))
        .map_err(|e| e.to_string())?;
    assert_eq(&stale.image, &good.image, "last known good image")?;
    let err = stale.stale.ok_or("the result must be marked stale")?;
    if !err.to_string().contains("cannot reach registry") {
        return Err(format!("stale reason: {err}").into());
    }
    let named = env
        .rt
        .block_on(resolver.resolve(&Distribution::Name("starter".into()), &Keyring::default()))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &named.config.source,
        &ConfigSource::Embedded,
        "embedded fallback",
    )?;
    assert_eq(&named.pinned, &false, "unpinned while the registry is down")?;
    assert_eq(&named.stale.is_some(), &true, "marked stale")?;
    // The embedded config is the file the image runs: it never stands in for another one asked
    // for by name.
    expect_err(
        env.rt.block_on(resolver.resolve_choosing(
            &Distribution::Name("starter".into()),
            Some("run-with-postgres-store.yaml"),
            &Keyring::default(),
        )),
        "cannot reach registry",
    )?;
    Ok(())
}

const OGX_STARTER: &str = include_str!("../../../tests/fixtures/ogx-1.5.0/starter/config.yaml");
const OGX_POSTGRES: &str =
    include_str!("../../../tests/fixtures/ogx-1.5.0/starter/run-with-postgres-store.yaml");

/// An image labelled as OGX's `scripts/generate-config-labels.sh` labels the ogxai images, with
/// its two starter configs (OGX 1.5.0's own files): the file it runs is read by default, the
/// other one when asked for by name, and a file it lacks is refused naming those it has.
fn ogx_labels_give_the_config_it_runs_or_the_one_asked_for(env: &Env) -> Result<(), Failed> {
    let plain = &env.regs.plain.host;
    let postgres = "run-with-postgres-store.yaml";
    let digest = env.push(
        plain,
        "ogxai/distribution-starter",
        "1.5.0",
        &[image_with_labels(
            "amd64",
            support::oci::ogx_starter_labels("1.5.0", OGX_STARTER, OGX_POSTGRES),
            vec![plain_layer()],
        )],
        false,
    )?;
    let resolver = env.resolver(env.options())?;
    let target = image(format!("{plain}/ogxai/distribution-starter:1.5.0"));
    let none = Keyring::default();
    let runs = env
        .rt
        .block_on(resolver.resolve(&target, &none))
        .map_err(|e| e.to_string())?;
    // Hashes, not texts: a failure names two digests, not two 20 KB configs.
    assert_eq(
        &runs.config.hash,
        &sha256_hex(OGX_STARTER.as_bytes()),
        "the file the image runs",
    )?;
    assert_eq(&runs.config.file.as_deref(), &Some("config.yaml"), "file")?;
    assert_eq(
        &runs.config.configs,
        &vec!["config.yaml".to_owned(), postgres.to_owned()],
        "the files it carries",
    )?;
    let server = runs.config.server.ok_or("the labels name the server")?;
    assert_eq(
        &server.version.map(|v| v.to_string()),
        &Some("1.5.0".to_owned()),
        "server version",
    )?;
    // Same resolver, warm: the answer for another file is its own, not the memo of the first.
    let chosen = env
        .rt
        .block_on(resolver.resolve_choosing(&target, Some(postgres), &none))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &chosen.config.hash,
        &sha256_hex(OGX_POSTGRES.as_bytes()),
        "the file asked for",
    )?;
    assert_eq(&chosen.config.file.as_deref(), &Some(postgres), "file")?;
    assert_eq(
        &chosen.image,
        &format!("{plain}/ogxai/distribution-starter@{digest}"),
        "the same pin",
    )?;
    let pinned = env
        .rt
        .block_on(resolver.resolve_pinned(&target, Some(postgres), &chosen.image, &none))
        .map_err(|e| e.to_string())?;
    assert_eq(&pinned.config.hash, &chosen.config.hash, "at the kept pin")?;
    let again = env
        .rt
        .block_on(resolver.resolve(&target, &none))
        .map_err(|e| e.to_string())?;
    assert_eq(&again.config.hash, &runs.config.hash, "the default again")?;
    let err = expect_err(
        env.rt
            .block_on(resolver.resolve_choosing(&target, Some("gpu.yaml"), &none)),
        "distribution.imageConfig names \"gpu.yaml\", but the image has no label com.ogx.config.gpu.yaml; its configs: config.yaml, run-with-postgres-store.yaml",
    )?;
    assert_eq(
        &err.kind(),
        &llama_stack_resolver::FailureKind::InvalidBaseConfig,
        "kind",
    )
}

fn no_labels(env: &Env) -> Result<(), Failed> {
    let plain = &env.regs.plain.host;
    env.push(
        plain,
        "t/bare",
        "v1",
        &[image_with_labels("amd64", vec![], vec![plain_layer()])],
        false,
    )?;
    let mut options = env.options();
    let overrides = BTreeMap::from([("starter".to_owned(), format!("{plain}/t/bare:v1"))]);
    options.catalog = options.catalog.with_overrides(&overrides);
    let resolver = env.resolver(options)?;
    let r = env
        .rt
        .block_on(resolver.resolve(&Distribution::Name("starter".into()), &Keyring::default()))
        .map_err(|e| e.to_string())?;
    assert_eq(
        &r.config.source,
        &ConfigSource::Embedded,
        "a name without labels uses the embedded config",
    )?;
    assert_eq(&r.pinned, &true, "but the image is pinned")?;
    let err = expect_err(
        env.rt
            .block_on(resolver.resolve(&image(format!("{plain}/t/bare:v1")), &Keyring::default())),
        "Direct image references require either overrideConfig.configMapName or OCI config labels on the image. See docs/configuration.md for details.",
    )?;
    assert_eq(
        &err.kind(),
        &llama_stack_resolver::FailureKind::BaseConfigRequired,
        "kind",
    )
}

/// (repository name, labels, layers, expected error text)
type HostileCase = (
    &'static str,
    Vec<(&'static str, String)>,
    Vec<Layer>,
    &'static str,
);

fn hostile_inputs(env: &Env) -> Result<(), Failed> {
    let plain = &env.regs.plain.host;
    let big = "x".repeat(4096);
    let cases: Vec<HostileCase> = vec![
        (
            "bad-base64",
            vec![("io.llamastack.config.base64", "%%%not base64%%%".into())],
            vec![plain_layer()],
            "is not valid base64",
        ),
        (
            "layer-without-path",
            vec![("io.llamastack.config.layer", "{layer0}".into())],
            vec![plain_layer()],
            "must be set together; found only io.llamastack.config.layer",
        ),
        (
            "path-not-in-layer",
            vec![
                ("io.llamastack.config.layer", "{layer0}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![plain_layer()],
            "/app/config.yaml is not in the layer",
        ),
        (
            "traversal-entry",
            vec![
                ("io.llamastack.config.layer", "{layer0}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![Layer {
                entries: vec![
                    Entry::RawName(b"../../etc/evil", b"x".to_vec()),
                    Entry::File("/app/config.yaml", config_yaml("t").into_bytes()),
                ],
                comp: Comp::Gzip,
            }],
            "unsafe tar entry \"../../etc/evil\"",
        ),
        (
            "symlink",
            vec![
                ("io.llamastack.config.layer", "{layer0}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![Layer {
                entries: vec![Entry::Symlink("/app/config.yaml", "/etc/passwd")],
                comp: Comp::Gzip,
            }],
            "is not a regular file",
        ),
        (
            "foreign-layer-digest",
            vec![
                (
                    "io.llamastack.config.layer",
                    format!("sha256:{}", "0".repeat(64)),
                ),
                ("io.llamastack.config.path", "/a".into()),
            ],
            vec![plain_layer()],
            "which is neither a layer nor a diff_id of the image, and no layer contains /a",
        ),
        (
            "bad-digest-label",
            vec![
                ("io.llamastack.config.layer", "latest".into()),
                ("io.llamastack.config.path", "/a".into()),
            ],
            vec![plain_layer()],
            "must be a digest like sha256:",
        ),
        (
            "future-version",
            vec![
                ("io.llamastack.config.base64", b64(&config_yaml("v"))),
                ("io.llamastack.config.version", "7".into()),
            ],
            vec![plain_layer()],
            "Unsupported config.yaml version 7. Supported versions: 2, 1",
        ),
        (
            "not-a-mapping",
            vec![("io.llamastack.config.base64", b64("- just\n- a list\n"))],
            vec![plain_layer()],
            "is not a YAML mapping",
        ),
        (
            "oversized-label",
            vec![("io.llamastack.config.base64", b64(&big))],
            vec![plain_layer()],
            "decodes to more than 1024 bytes",
        ),
        (
            "oversized-layer",
            vec![
                ("io.llamastack.config.layer", "{layer0}".into()),
                ("io.llamastack.config.path", "/app/config.yaml".into()),
            ],
            vec![Layer {
                entries: vec![
                    Entry::File("/big", vec![7u8; 300_000]),
                    Entry::File("/app/config.yaml", config_yaml("late").into_bytes()),
                ],
                comp: Comp::Gzip,
            }],
            "the decompressed layer read exceeds the limit of 65536 bytes",
        ),
    ];
    let mut options = env.options();
    options.limits = Limits {
        max_label_config_bytes: 1024,
        max_layer_unpacked_bytes: 64 << 10,
        ..Limits::default()
    };
    let resolver = env.resolver(options)?;
    let mut failures = Vec::new();
    for (name, labels, layers, needle) in cases {
        let repo = format!("hostile/{name}");
        env.push(
            plain,
            &repo,
            "v1",
            &[image_with_labels("amd64", labels, layers)],
            false,
        )?;
        let result = env
            .rt
            .block_on(resolver.resolve(&image(format!("{plain}/{repo}:v1")), &Keyring::default()));
        if let Err(e) = expect_err(result, needle) {
            failures.push(format!("{name}: {}", e.message().unwrap_or_default()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n").into())
    }
}

fn concurrent_resolves_share_one_fetch(env: &Env) -> Result<(), Failed> {
    let host = &env.regs.basic.host;
    env.push(
        host,
        "t/concurrent",
        "v1",
        &[image_with_labels(
            "amd64",
            vec![
                ("io.llamastack.config.layer", "{layer1}".into()),
                ("io.llamastack.config.path", "/c.yaml".into()),
            ],
            vec![
                plain_layer(),
                config_layer("/c.yaml", &config_yaml("c"), Comp::Gzip),
            ],
        )],
        false,
    )?;
    let keys = keyring(&[("pull", host, USER, PASSWORD)]);
    let target = image(format!("{host}/t/concurrent:v1"));
    let single = env.resolver(env.options())?;
    env.rt
        .block_on(single.resolve(&target, &keys))
        .map_err(|e| e.to_string())?;
    let one = single.registry_requests();
    let shared = Arc::new(env.resolver(env.options())?);
    let results = env.rt.block_on(async {
        let tasks: Vec<_> = (0..24)
            .map(|_| {
                let (r, k, t) = (shared.clone(), keys.clone(), target.clone());
                tokio::spawn(async move { r.resolve(&t, &k).await.map(|r| r.image) })
            })
            .collect();
        futures_join(tasks).await
    });
    let images: std::collections::BTreeSet<String> =
        results.into_iter().collect::<Result<_, _>>()?;
    assert_eq(&images.len(), &1, "every caller got the same image")?;
    assert_eq(
        &shared.registry_requests(),
        &one,
        "24 concurrent resolves make the requests of one",
    )
}

async fn futures_join(
    tasks: Vec<tokio::task::JoinHandle<Result<String, Arc<ResolveError>>>>,
) -> Vec<Result<String, String>> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(match t.await {
            Ok(Ok(image)) => Ok(image),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        });
    }
    out
}

const TESTS: &[(&str, Test)] = &[
    (
        "base64_label_multi_arch_pins_index_digest",
        base64_label_multi_arch,
    ),
    ("layer_label_gzip", layer_label_gzip),
    ("layer_label_uncompressed", layer_label_uncompressed),
    (
        "docker_media_types_and_zstd_recompressed_mirror",
        docker_media_types_and_zstd_mirror,
    ),
    (
        "tag_moves_after_ttl_only_and_digests_are_used_as_given",
        tag_moves_after_ttl_only,
    ),
    ("credentials_in_kubelet_order", credentials_kubelet_order),
    ("token_auth", token_auth),
    (
        "registry_down_serves_last_known_good",
        registry_down_serves_last_known_good,
    ),
    ("no_labels_embedded_or_base_config_required", no_labels),
    (
        "ogx_labels_give_the_config_it_runs_or_the_one_asked_for",
        ogx_labels_give_the_config_it_runs_or_the_one_asked_for,
    ),
    (
        "a_doctored_layer_is_refused_and_poisons_no_other_image",
        a_doctored_layer_is_refused_and_poisons_no_other_image,
    ),
    ("hostile_inputs_are_clear_errors", hostile_inputs),
    (
        "concurrent_resolves_share_one_fetch",
        concurrent_resolves_share_one_fetch,
    ),
    (
        "signatures_both_cosign_forms_verify_with_the_trusted_key_only",
        signatures::both_forms_verify_with_the_trusted_key_only,
    ),
    (
        "signatures_unsigned_is_refused_or_audited",
        signatures::unsigned_is_refused_or_audited,
    ),
    (
        "signatures_of_another_digest_are_refused",
        signatures::a_signature_of_another_digest_is_refused,
    ),
    (
        "signatures_in_another_repository",
        signatures::signatures_in_another_repository,
    ),
    (
        "signatures_a_tag_moved_to_an_unsigned_image_is_refused",
        signatures::a_tag_moved_to_an_unsigned_image_is_refused,
    ),
    (
        "credential_provider_a_private_image_resolves_with_the_plugins_credentials",
        credential_providers::a_private_image_resolves_with_the_plugins_credentials,
    ),
    (
        "credential_provider_credentials_follow_the_pull_secrets",
        credential_providers::plugin_credentials_follow_the_pull_secrets,
    ),
    (
        "credential_provider_a_failing_plugin_is_named",
        credential_providers::a_failing_plugin_is_named,
    ),
    (
        "credential_provider_a_remembered_answer_runs_no_plugin",
        credential_providers::a_remembered_answer_runs_no_plugin,
    ),
];

fn main() -> ExitCode {
    run_suite(
        table(TESTS),
        "the test registries",
        || {
            let regs = Registries::start().map_err(|e| e.to_string())?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let work = tempfile::Builder::new()
                .prefix("llso-fixtures-")
                .tempdir()
                .map_err(|e| e.to_string())?;
            Ok(Env { regs, rt, work })
        },
        None,
    )
}
