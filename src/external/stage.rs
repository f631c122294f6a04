//! `stage-provider`: the init container that runs inside a provider image (with the static
//! operator binary, so the image needs neither a shell nor pip). It checks
//! `/lls-provider/lls-provider-spec.yaml` field by field and the wheels it names, then copies
//! the metadata, the CRD's settings and the wheels to the shared volume for the later steps.

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use llama_stack_resolver::server_line::ServerLine;

use super::report::ProviderReport;
use crate::api::apis;
use crate::stack_config::merge::{ProviderPackage, metadata_api, parse_provider_package};

/// Largest metadata file read.
const MAX_METADATA_BYTES: u64 = 64 * 1024;
/// Most wheels staged for one provider.
const MAX_WHEELS: usize = 500;

/// What to stage.
#[derive(Clone, Debug)]
pub struct StageOptions {
    /// `providerId`.
    pub provider_id: String,
    /// The CRD section the provider is listed under (`safety`, `vectorIo`, ...).
    pub section: String,
    /// Provider image (for messages and the merge).
    pub image: String,
    /// Position in CRD order.
    pub order: u32,
    /// `config` from the CRD.
    pub config: Option<Map<String, Value>>,
    /// Root of the provider files (`/lls-provider` in the image).
    pub source: PathBuf,
    /// The shared volume.
    pub dest: PathBuf,
    /// This init container's name.
    pub init_container: String,
    /// The line of the server that will load the provider.
    pub server_line: ServerLine,
}

/// What was staged.
#[derive(Clone, Debug)]
pub struct Staged {
    /// The validated metadata.
    pub package: ProviderPackage,
    /// File names of the staged wheels.
    pub wheels: Vec<String>,
}

impl StageOptions {
    fn report(&self, headline: &str, detail: String, resolution: &str) -> Box<ProviderReport> {
        Box::new(ProviderReport {
            headline: headline.to_owned(),
            provider_id: self.provider_id.clone(),
            image: self.image.clone(),
            init_container: self.init_container.clone(),
            detail,
            resolution: resolution.to_owned(),
        })
    }

    fn io(&self, what: &str, path: &Path, e: &std::io::Error) -> Box<ProviderReport> {
        self.report(
            "Cannot stage the provider's files",
            format!("{what} {}: {e}", path.display()),
            "Check that the shared volume is writable and large enough, and that the image's files are readable by a non-root user.",
        )
    }
}

/// A wheel path from the metadata, as a path relative to the provider root, refusing anything
/// that leaves `packages/`.
fn wheel_relative(path: &str) -> Option<PathBuf> {
    let trimmed = path
        .strip_prefix(super::PROVIDER_ROOT)
        .unwrap_or(path)
        .trim_start_matches('/');
    let rel = Path::new(trimmed);
    let rel = if rel.starts_with("packages") {
        rel.to_owned()
    } else {
        Path::new("packages").join(rel)
    };
    let safe = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (safe && rel.extension().is_some_and(|e| e == "whl")).then_some(rel)
}

fn read_metadata(o: &StageOptions) -> Result<String, Box<ProviderReport>> {
    let path = o.source.join("lls-provider-spec.yaml");
    let missing = || {
        o.report(
            &format!("Missing /lls-provider/lls-provider-spec.yaml in image {}", o.image),
            "The provider image has no metadata file, so nothing says which Python package, provider type and API it provides.".to_owned(),
            "Add /lls-provider/lls-provider-spec.yaml (kind ProviderPackage, see docs/external-providers.md) and the wheels under /lls-provider/packages/ to the image, or fix spec.externalProviders to name the right image.",
        )
    };
    let file = fs::File::open(&path).map_err(|_| missing())?;
    let mut text = String::new();
    file.take(MAX_METADATA_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| o.io("cannot read", &path, &e))?;
    if text.len() as u64 > MAX_METADATA_BYTES {
        return Err(o.report(
            "Invalid provider metadata",
            format!(
                "/lls-provider/lls-provider-spec.yaml is larger than {MAX_METADATA_BYTES} bytes"
            ),
            "Keep the metadata file to the ProviderPackage fields.",
        ));
    }
    Ok(text)
}

/// Validates and stages one provider.
pub fn stage(o: &StageOptions) -> Result<Staged, Box<ProviderReport>> {
    let text = read_metadata(o)?;
    let package = parse_provider_package(&text, &o.image).map_err(|e| {
        o.report(
            "Invalid provider metadata",
            format!("/lls-provider/lls-provider-spec.yaml: {}", e.problem),
            "Fix the file in the provider image (see docs/external-providers.md for every field) and push a new image.",
        )
    })?;
    let declared = check_placement(o, &package)?;
    check_line(o, &package)?;
    let packages = o.source.join("packages");
    check_wheels(o, &package, &packages)?;
    let metadata_dir = o.dest.join("metadata").join(&o.provider_id);
    let wheels_dir = o.dest.join("wheels").join(&o.provider_id);
    for dir in [&metadata_dir, &wheels_dir] {
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(|e| o.io("cannot clear", dir, &e))?;
        }
        fs::create_dir_all(dir).map_err(|e| o.io("cannot create", dir, &e))?;
    }
    let wheels = copy_wheels(o, &packages, &wheels_dir)?;
    write_metadata(o, &metadata_dir, text, &package, declared)?;
    Ok(Staged { package, wheels })
}

/// The API the package declares, which must be the section it is placed in.
fn check_placement(
    o: &StageOptions,
    package: &ProviderPackage,
) -> Result<&'static str, Box<ProviderReport>> {
    let declared = metadata_api(&package.spec.api).unwrap_or_default();
    if apis::stack_name(&o.section) == Some(declared) {
        return Ok(declared);
    }
    let declared_section = apis::APIS
        .iter()
        .find(|(_, snake)| *snake == declared)
        .map_or(declared, |(camel, _)| *camel);
    Err(o.report(
        "Provider API type mismatch",
        format!(
            "Provider '{}' (image: {})\ndeclares api={} in lls-provider-spec.yaml\nbut is placed under externalProviders.{}",
            o.provider_id, o.image, package.spec.api, o.section
        ),
        &format!("Move the provider to externalProviders.{declared_section} section in the LLSD spec."),
    ))
}

/// The provider was written for the server line that will load it: a provider importing
/// `llama_stack_api` cannot load on OGX (and the reverse), and without this check the server
/// would fail on the import with a message that names neither.
fn check_line(o: &StageOptions, package: &ProviderPackage) -> Result<(), Box<ProviderReport>> {
    let built_for = package.spec.built_for();
    if built_for == o.server_line {
        return Ok(());
    }
    let module = |line: ServerLine| match line {
        ServerLine::Ogx => "ogx_api",
        ServerLine::LlamaStack => "llama_stack_api",
    };
    let said = match &package.spec.server_line {
        Some(line) => format!("declares spec.serverLine: {line}"),
        None => "declares no spec.serverLine, so it is taken for llama-stack".to_owned(),
    };
    Err(o.report(
        "Provider built for another server line",
        format!(
            "Provider '{}' (image: {})\n{said} in lls-provider-spec.yaml (it imports {})\nbut the distribution image runs {}, whose API package is {}",
            o.provider_id,
            o.image,
            module(built_for),
            o.server_line.display_name(),
            module(o.server_line),
        ),
        &format!(
            "Use a build of the provider written for {} (importing {}, with spec.serverLine: {} in its metadata), or run it with a {} distribution image.",
            o.server_line.display_name(),
            module(o.server_line),
            o.server_line.as_str(),
            built_for.display_name(),
        ),
    ))
}

/// Every wheel the metadata names is in the image's packages directory.
fn check_wheels(
    o: &StageOptions,
    package: &ProviderPackage,
    packages: &Path,
) -> Result<(), Box<ProviderReport>> {
    if !packages.is_dir() {
        return Err(o.report(
            "Missing /lls-provider/packages/",
            format!("Image {} has no /lls-provider/packages/ directory with the provider's wheels.", o.image),
            "Put the provider's wheel and every dependency wheel the distribution image lacks under /lls-provider/packages/.",
        ));
    }
    let named = std::iter::once(&package.spec.wheel_path)
        .chain(package.spec.dependency_wheels.iter().flatten());
    for wheel in named {
        let present = wheel_relative(wheel).is_some_and(|rel| o.source.join(rel).is_file());
        if !present {
            return Err(o.report(
                "Missing provider wheel",
                format!("lls-provider-spec.yaml names {wheel:?}, which is not a .whl file under /lls-provider/packages/ in image {}", o.image),
                "Fix spec.wheelPath / spec.dependencyWheels, or add the wheel to the image.",
            ));
        }
    }
    Ok(())
}

/// Copies the image's wheels (at most [`MAX_WHEELS`]); returns their names, sorted.
fn copy_wheels(
    o: &StageOptions,
    packages: &Path,
    wheels_dir: &Path,
) -> Result<Vec<String>, Box<ProviderReport>> {
    let mut wheels = Vec::new();
    let entries = fs::read_dir(packages).map_err(|e| o.io("cannot list", packages, &e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "whl") || !path.is_file() {
            continue;
        }
        if wheels.len() == MAX_WHEELS {
            return Err(o.report(
                "Too many wheels",
                format!("/lls-provider/packages/ holds more than {MAX_WHEELS} wheels"),
                "Ship only the wheels the provider needs beyond what the distribution image has.",
            ));
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        fs::copy(&path, wheels_dir.join(&name)).map_err(|e| o.io("cannot copy", &path, &e))?;
        wheels.push(name);
    }
    wheels.sort();
    Ok(wheels)
}

/// Writes what the later steps read: the image's metadata as is, the CRD's settings for the
/// provider, and a summary of the stage.
fn write_metadata(
    o: &StageOptions,
    metadata_dir: &Path,
    text: String,
    package: &ProviderPackage,
    declared: &str,
) -> Result<(), Box<ProviderReport>> {
    let write = |name: &str, text: String| {
        let path = metadata_dir.join(name);
        fs::write(&path, text).map_err(|e| o.io("cannot write", &path, &e))
    };
    write("lls-provider-spec.yaml", text)?;
    // JSON is YAML too: `merge-config` reads it as YAML, the Python steps as JSON.
    let crd = json!({"providerId": o.provider_id, "api": o.section, "image": o.image, "order": o.order, "config": o.config});
    write("crd-config.yaml", crd.to_string())?;
    let main_wheel = wheel_relative(&package.spec.wheel_path)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let staged = json!({"providerId": o.provider_id, "section": o.section, "image": o.image, "order": o.order,
        "initContainer": o.init_container, "packageName": package.spec.package_name,
        "providerType": package.spec.provider_type, "api": declared, "mainWheel": main_wheel, "config": o.config});
    write("stage.json", staged.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staging(line: ServerLine, dir: &Path) -> StageOptions {
        StageOptions {
            provider_id: "words".to_owned(),
            section: "inference".to_owned(),
            image: "reg/words:1".to_owned(),
            order: 0,
            config: None,
            source: dir.join("lls-provider"),
            dest: dir.join("shared"),
            init_container: "install-provider-words".to_owned(),
            server_line: line,
        }
    }

    /// The metadata of a provider image, with `extra` lines in its spec; no wheels.
    fn provider_image(dir: &Path, extra: &str) {
        let root = dir.join("lls-provider");
        fs::create_dir_all(root.join("packages")).unwrap();
        fs::write(
            root.join("lls-provider-spec.yaml"),
            format!("apiVersion: llamastack.io/v1alpha1\nkind: ProviderPackage\nmetadata: {{name: words, version: 0.1.0, vendor: acme}}\nspec:\n  packageName: words\n  providerType: remote::words\n  api: inference\n  wheelPath: /lls-provider/packages/words-0.1.0-py3-none-any.whl\n{extra}"),
        )
        .unwrap();
    }

    fn headline(result: Result<Staged, Box<ProviderReport>>) -> String {
        result.err().map(|r| r.headline).unwrap_or_default()
    }

    #[test]
    fn a_provider_for_another_line_is_refused_before_anything_is_staged() {
        let dir = tempfile::tempdir().unwrap();
        provider_image(dir.path(), "");
        let report = stage(&staging(ServerLine::Ogx, dir.path())).unwrap_err();
        assert_eq!(report.headline, "Provider built for another server line");
        assert!(
            report.detail.contains("taken for llama-stack")
                && report.detail.contains("llama_stack_api")
                && report
                    .detail
                    .contains("runs OGX, whose API package is ogx_api"),
            "{}",
            report.detail
        );
        assert!(
            report.resolution.contains("spec.serverLine: ogx"),
            "{}",
            report.resolution
        );
        assert!(!dir.path().join("shared").exists(), "nothing staged");
        // Without a line of its own it is the llama-stack provider it always was.
        let llama = headline(stage(&staging(ServerLine::LlamaStack, dir.path())));
        assert_ne!(llama, "Provider built for another server line");

        provider_image(dir.path(), "  serverLine: ogx\n");
        let ogx = headline(stage(&staging(ServerLine::Ogx, dir.path())));
        assert_ne!(
            ogx, "Provider built for another server line",
            "past the line check"
        );
        assert_eq!(
            headline(stage(&staging(ServerLine::LlamaStack, dir.path()))),
            "Provider built for another server line"
        );

        provider_image(dir.path(), "  serverLine: ogx-1\n");
        let report = stage(&staging(ServerLine::Ogx, dir.path())).unwrap_err();
        assert_eq!(report.headline, "Invalid provider metadata");
        assert!(
            report.detail.contains("spec.serverLine"),
            "{}",
            report.detail
        );
    }

    #[test]
    fn wheel_paths_stay_under_packages() {
        assert_eq!(
            wheel_relative("/lls-provider/packages/a-1-py3-none-any.whl"),
            Some(PathBuf::from("packages/a-1-py3-none-any.whl"))
        );
        assert_eq!(
            wheel_relative("packages/a.whl"),
            Some(PathBuf::from("packages/a.whl"))
        );
        assert_eq!(
            wheel_relative("a.whl"),
            Some(PathBuf::from("packages/a.whl"))
        );
        assert_eq!(
            wheel_relative("/lls-provider/packages/../../etc/passwd.whl"),
            None
        );
        assert_eq!(wheel_relative("/lls-provider/packages/a.tar.gz"), None);
    }
}
