//! kubelet credential provider plugins against the TLS + htpasswd registry: a plugin of the
//! tests' own, configured with kubelet's own config format, gives the only credentials the
//! registry accepts.

use std::sync::Arc;

use libtest_mimic::Failed;
use llama_stack_resolver::Keyring;
use llama_stack_resolver::credential_provider::CredentialProviders;
use llama_stack_resolver::{Distribution, ResolverOptions};

use super::support::credential_plugin;
use super::support::registries::{PASSWORD, USER};
use super::{Env, b64, config_yaml, image_with_labels, keyring, plain_layer};

/// The plugin installed under the suite's work directory; the providers loaded from its config.
fn providers(
    env: &Env,
    name: &str,
    mode: &str,
    cache: &str,
) -> Result<(Arc<CredentialProviders>, credential_plugin::Installed), Failed> {
    let installed = credential_plugin::install(
        &env.work.path().join(format!("plugins-{name}")),
        &env.regs.basic.host,
        USER,
        PASSWORD,
        mode,
        cache,
    )?;
    let loaded = CredentialProviders::load(&installed.config, &installed.bin_dir)?;
    Ok((Arc::new(loaded), installed))
}

fn push_private(env: &Env, repo: &str) -> Result<String, Failed> {
    let digest = env.push(
        &env.regs.basic.host,
        repo,
        "v1",
        &[image_with_labels(
            "amd64",
            vec![("io.llamastack.config.base64", b64(&config_yaml(repo)))],
            vec![plain_layer()],
        )],
        false,
    )?;
    Ok(format!("{}/{repo}@{digest}", env.regs.basic.host))
}

fn options_with(env: &Env, providers: &Arc<CredentialProviders>) -> ResolverOptions {
    let mut options = env.options();
    options.credential_providers = Some(providers.clone());
    options
}

/// With no pull secret, a direct image on a registry only the plugin's credentials reach
/// resolves; the answer is cached for its `cacheDuration` across resolvers (a ConfigMap change
/// makes a new one), and `0s` asks every time.
pub fn a_private_image_resolves_with_the_plugins_credentials(env: &Env) -> Result<(), Failed> {
    let pinned = push_private(env, "t/plugin")?;
    let tagged = format!("{}/t/plugin:v1", env.regs.basic.host);
    let distribution = Distribution::Image(tagged);
    let (cached, log) = providers(env, "cached", "answer", "5m")?;
    for _ in 0..2 {
        let resolver = env.resolver(options_with(env, &cached))?;
        let resolution = env
            .rt
            .block_on(resolver.resolve(&distribution, &Keyring::default()))
            .map_err(|e| e.to_string())?;
        super::assert_eq(
            &resolution.image,
            &pinned,
            "pinned with the plugin's credentials",
        )?;
    }
    super::assert_eq(
        &log.requests(),
        &1,
        "one plugin run for two resolvers (cached)",
    )?;
    let asked = std::fs::read_to_string(&log.log)?;
    let wanted = format!(r#""image":"{}/t/plugin""#, env.regs.basic.host);
    if !asked.contains(&wanted) || !asked.contains("CredentialProviderRequest") {
        return Err(format!("the request lacks {wanted}: {asked}").into());
    }

    let (uncached, log) = providers(env, "uncached", "answer", "0s")?;
    for _ in 0..2 {
        let resolver = env.resolver(options_with(env, &uncached))?;
        env.rt
            .block_on(resolver.resolve(&distribution, &Keyring::default()))
            .map_err(|e| e.to_string())?;
    }
    super::assert_eq(&log.requests(), &2, "cacheDuration 0s: asked each time")?;
    Ok(())
}

/// kubelet's order: the Pod's pull secrets first (here one the registry rejects), then the
/// plugin's credentials, which the registry accepts.
pub fn plugin_credentials_follow_the_pull_secrets(env: &Env) -> Result<(), Failed> {
    let pinned = push_private(env, "t/plugin-order")?;
    let (plugins, log) = providers(env, "order", "answer", "5m")?;
    let wrong = keyring(&[("stale", &env.regs.basic.host, USER, "not-the-password")]);
    let resolver = env.resolver(options_with(env, &plugins))?;
    let resolution = env
        .rt
        .block_on(resolver.resolve(
            &Distribution::Image(format!("{}/t/plugin-order:v1", env.regs.basic.host)),
            &wrong,
        ))
        .map_err(|e| e.to_string())?;
    super::assert_eq(
        &resolution.image,
        &pinned,
        "the plugin's credential, after the rejected secret",
    )?;
    super::assert_eq(&log.requests(), &1, "the plugin was asked")?;
    Ok(())
}

/// A failing plugin is named, with its stderr, beside the registry's refusal.
pub fn a_failing_plugin_is_named(env: &Env) -> Result<(), Failed> {
    push_private(env, "t/plugin-fails")?;
    let (failing, _) = providers(env, "failing", "fail", "5m")?;
    let resolver = env.resolver(options_with(env, &failing))?;
    let result = env.rt.block_on(resolver.resolve(
        &Distribution::Image(format!("{}/t/plugin-fails:v1", env.regs.basic.host)),
        &Keyring::default(),
    ));
    let err = result.err().ok_or("resolved without credentials")?;
    let text = err.to_string();
    for part in [
        "refused access",
        "credential provider test-credential-provider failed: exit status: 1: token service unreachable",
    ] {
        if !text.contains(part) {
            return Err(format!("{part:?} missing from: {text}").into());
        }
    }
    if text.contains(PASSWORD) {
        return Err("a password reached the message".into());
    }
    Ok(())
}

/// The resolver's memo and its failure cache are looked up before any plugin runs: repeated
/// resolves of one image with the same pull secrets ask the plugin once, even one whose answers
/// are never cached (`0s`) or one that fails, so a slow or failing plugin does not slow every
/// reconcile that matches it.
pub fn a_remembered_answer_runs_no_plugin(env: &Env) -> Result<(), Failed> {
    push_private(env, "t/plugin-memo")?;
    let distribution = Distribution::Image(format!("{}/t/plugin-memo:v1", env.regs.basic.host));
    let (uncached, log) = providers(env, "memo", "answer", "0s")?;
    let resolver = env.resolver(options_with(env, &uncached))?;
    for _ in 0..3 {
        env.rt
            .block_on(resolver.resolve(&distribution, &Keyring::default()))
            .map_err(|e| e.to_string())?;
    }
    super::assert_eq(&log.requests(), &1, "asked for the first resolve only")?;

    let (failing, log) = providers(env, "memo-failing", "fail", "5m")?;
    let resolver = env.resolver(options_with(env, &failing))?;
    for _ in 0..3 {
        let refused = env
            .rt
            .block_on(resolver.resolve(&distribution, &Keyring::default()));
        if refused.is_ok() {
            return Err("resolved without credentials".into());
        }
    }
    super::assert_eq(
        &log.requests(),
        &1,
        "a failure is remembered for the failure TTL, with the plugin's part in it",
    )?;
    Ok(())
}
