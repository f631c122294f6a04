//! Every OGX 1.x release before its own server. The pinned release (1.3.0) runs in every other
//! test of the suite; here the last release of each minor and RHOAI 3.5's 1.2.2
//! (`ogx-releases.txt`, which `scripts/test.sh` prepares too) each get, over the starter config
//! their own package ships and with the provider table of that release (as an image labelled
//! with it gets), every generating sample checked by the release's own validation, and one case
//! started on the release's real server (`ogx stack run`): two providers, each API key reaching
//! its upstream.

use std::path::{Path, PathBuf};

use libtest_mimic::Failed;
use llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec;
use llama_stack_operator::stack_config::{GeneratedConfig, ProviderTable, generate, parse_base};
use llama_stack_resolver::server_line::{Evidence, ServerRelease, ServerVersion};

use super::support::llama_stack::{self, ServerLine};
use super::{Case, Env, FakeUpstream};

/// The releases checked here, one a line.
pub(crate) const RELEASES: &str = include_str!("ogx-releases.txt");

/// The releases of [`RELEASES`].
fn versions() -> impl Iterator<Item = &'static str> {
    RELEASES.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// The case each release starts its server on.
const STARTED_CASE: &str = "ogx_us2_multiple_providers_and_key_mapping";

/// One release, prepared: its venv (with what the started case's config needs), its own
/// starter config, and the started case generated for it with its upstreams.
pub(crate) struct Release {
    pub(crate) version: String,
    venv: PathBuf,
    starter: String,
    started: (Case, GeneratedConfig, FakeUpstream, FakeUpstream),
}

/// What an image labelled `com.ogx.distribution.version: <version>` gets: the config generated
/// over `starter` with the release's provider table.
fn generate_for(
    version: &str,
    starter: &str,
    spec: &LlamaStackDistributionSpec,
) -> Result<GeneratedConfig, String> {
    let mut base = parse_base(starter).map_err(|e| e.to_string())?;
    base.server = Some(ServerRelease {
        line: ServerLine::Ogx,
        version: Some(ServerVersion::parse(version).ok_or("not a version")?),
        evidence: Evidence::OgxVersionLabel,
        suffixed: false,
    });
    let table = ProviderTable::for_server(base.server.as_ref());
    generate(spec, &base, table).map_err(|e| e.to_string())
}

/// Builds (or finds) each release's venv, with the dependencies of its started case's config.
pub(crate) fn prepare() -> Result<Vec<Release>, Failed> {
    let scratch = tempfile::tempdir()?;
    let mut out = Vec::new();
    for version in versions() {
        let bare = llama_stack::ogx_release_venv(version, &[])?;
        let starter = llama_stack::ogx_release_starter(&bare)?;
        let case = super::cases()
            .into_iter()
            .find(|case| case.name == STARTED_CASE)
            .ok_or("the started case is gone")?;
        let (a, b) = (FakeUpstream::start()?, FakeUpstream::start()?);
        let generated = generate_for(version, &starter, &super::case_spec(&case, &a.url, &b.url)?)
            .map_err(|e| format!("{STARTED_CASE} for OGX {version}: {e}"))?;
        let path = scratch.path().join(format!("{version}.yaml"));
        std::fs::write(&path, &generated.yaml)?;
        let deps = llama_stack::list_deps(&bare, &path)?;
        let venv = llama_stack::ogx_release_venv(version, &deps)?;
        out.push(Release {
            version: version.to_owned(),
            venv,
            starter,
            started: (case, generated, a, b),
        });
    }
    Ok(out)
}

/// The test of one release: every generating sample passes its validation, and its server
/// starts on the started case and serves it.
pub(crate) fn takes_what_is_generated_for_it(env: &Env, index: usize) -> Result<(), Failed> {
    let release = &env.releases[index];
    let version = &release.version;
    let scratch = tempfile::tempdir()?;
    table_is_the_releases_own(release, scratch.path())?;
    let mut paths = Vec::new();
    let mut variables = Vec::new();
    for (name, cr) in super::generating_samples()? {
        let generated = generate_for(version, &release.starter, &cr.spec)
            .map_err(|e| format!("{name} for OGX {version}: {e}"))?;
        let path = scratch.path().join(format!("{name}.yaml"));
        std::fs::write(&path, &generated.yaml)?;
        variables.extend(generated.env.iter().map(|e| e.name.clone()));
        paths.push(path);
    }
    // 9 samples generate today (us6 is overrideConfig); a sample set that shrank is a failure.
    if paths.len() < 9 {
        return Err(format!("only {} samples generate", paths.len()).into());
    }
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    if let Some(said) = super::verdict_of(
        &release.venv,
        "ogx",
        &paths,
        variables.into_iter(),
        scratch.path(),
    )? {
        return Err(format!("OGX {version} refuses what was generated for it:\n{said}").into());
    }
    let (case, generated, a, b) = &release.started;
    super::start_and_check(&release.venv, case, generated, a, b).map_err(|e| {
        format!(
            "OGX {version}, {}: {}",
            case.name,
            e.message().unwrap_or_default()
        )
        .into()
    })
}

/// The provider table an image of the release gets is the one its own package gives
/// (`scripts/llama_stack_data.py table-ogx`, as `scripts/update-ogx-data.sh` exported it).
fn table_is_the_releases_own(release: &Release, scratch: &Path) -> Result<(), Failed> {
    let version = &release.version;
    let exported = scratch.join("table.json");
    let out = std::process::Command::new(release.venv.join("bin/python3"))
        .arg(super::support::workspace_root().join("scripts/llama_stack_data.py"))
        .arg("table-ogx")
        .arg(&exported)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "OGX {version}'s table could not be exported: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let own: ProviderTable = serde_json::from_str(&std::fs::read_to_string(&exported)?)?;
    if own.llama_stack_version != *version {
        return Err(format!(
            "the venv runs OGX {}, not {version}",
            own.llama_stack_version
        )
        .into());
    }
    let parsed = ServerVersion::parse(version).ok_or("not a version")?;
    let embedded = ProviderTable::ogx_release(parsed);
    if !embedded.lists(parsed) || embedded.providers != own.providers {
        return Err(format!(
            "the embedded table for OGX {version} ({}) is not the release's own; run scripts/update-ogx-data.sh",
            embedded.server_name()
        )
        .into());
    }
    Ok(())
}

/// The test names, one a release.
pub(crate) fn names() -> Vec<String> {
    versions()
        .map(|version| {
            format!(
                "ogx_{}_takes_what_is_generated_for_it",
                version.replace('.', "_")
            )
        })
        .collect()
}
