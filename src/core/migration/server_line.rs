//! Whether the server can run `ogx migrate praxis` at all. The command lives in Red Hat's
//! midstream OGX; no release published on PyPI has it (`ogx` 0.8.0 to 1.5.0, checked
//! 2026-12-06), so an image that is such a release as published would run a Job that fails on
//! its first line. Said from what is known: the image's labels once it is read (the reconcile),
//! its reference before (`validate` and admission). An image that says nothing, a build of a
//! release (a version with a `.dev`, `rc` or `+local` suffix) and a newer release pass: the
//! Job's own failure, with its logs, is the word on those.

use llama_stack_resolver::ImageRef;
use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};

use super::FIELD;

/// The field the migration is asked for by, in a v1alpha2 `LlamaStackDistribution`.
pub const V1ALPHA2_FIELD: &str = "spec.gateway.praxis.migration";

/// The newest OGX release known to lack the command (every published one up to it does).
const NEWEST_WITHOUT: ServerVersion = ServerVersion::new(1, 5, 0);

/// Docker Hub's OGX images, built from the PyPI releases their tags name.
const OGX_IMAGES: &str = "ogxai/";
/// Docker Hub's llama-stack images: no `ogx` command at all.
const LLAMA_STACK_IMAGES: &str = "llamastack/";

/// Why `server` (what the image's labels, the catalog or the spec say it runs) cannot run the
/// migration, or `None` when it may.
pub fn lacks_command(server: &ServerRelease, image: &str) -> Option<String> {
    match server.evidence {
        Evidence::Assumed => return None,
        // The labels were not read (the embedded config stands in): the reference says what
        // it can, as at admission.
        Evidence::Catalog => return lacks_command_by_reference(image),
        _ => {}
    }
    let what = match (server.line, server.version) {
        (ServerLine::LlamaStack, _) => format!("{} (no `ogx` command)", server.describe()),
        (ServerLine::Ogx, Some(v)) if !server.suffixed && v <= NEWEST_WITHOUT => {
            format!("OGX {v} as released")
        }
        _ => return None,
    };
    Some(refusal(image, &what, server.evidence.as_str()))
}

/// Why the image `reference` names cannot run the migration, told from the reference alone
/// (Docker Hub's `ogxai/*` images tagged with a release, any `llamastack/*` image), or `None`
/// when the reference does not say.
pub fn lacks_command_by_reference(reference: &str) -> Option<String> {
    let image = ImageRef::parse(reference).ok()?;
    if image.registry != "docker.io" {
        return None;
    }
    if image.repository.starts_with(LLAMA_STACK_IMAGES) {
        return Some(refusal(
            reference,
            "llama-stack (no `ogx` command)",
            "its repository",
        ));
    }
    let tag = image.tag.as_deref()?;
    let version = ServerVersion::parse(tag)?;
    let released = image.repository.starts_with(OGX_IMAGES)
        && !ServerVersion::is_suffixed(tag)
        && ServerLine::of_version(version) == ServerLine::Ogx
        && version <= NEWEST_WITHOUT;
    released.then(|| refusal(reference, &format!("OGX {version} as released"), "its tag"))
}

fn refusal(image: &str, what: &str, told_by: &str) -> String {
    format!(
        "the image {image} runs {what} (told by {told_by}), which has no `ogx migrate praxis`: no OGX release on PyPI up to {NEWEST_WITHOUT} has it. Run an image whose server has the command (Red Hat's OGX builds, e.g. distribution `rh`, or your own in spec.distribution.image), or remove the migration ({FIELD}; v1alpha2: {V1ALPHA2_FIELD}) and migrate by hand"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ogx(version: &str, suffixed: bool, evidence: Evidence) -> ServerRelease {
        ServerRelease {
            line: ServerLine::Ogx,
            version: ServerVersion::parse(version),
            evidence,
            suffixed,
        }
    }

    #[test]
    fn a_published_release_lacks_the_command_and_a_build_of_one_may_have_it() {
        let image = "registry.example/ogx@sha256:00";
        for (server, lacks) in [
            (ogx("1.3.0", false, Evidence::OgxVersionLabel), true),
            (ogx("1.5.0", false, Evidence::OgxVersionLabel), true),
            (ogx("0.8.0", false, Evidence::OgxConfigLabels), true),
            (ogx("1.3.0", false, Evidence::Catalog), false),
            (ogx("1.3.1", true, Evidence::OgxVersionLabel), false),
            (ogx("1.6.0", false, Evidence::OgxVersionLabel), false),
            (
                ServerRelease {
                    version: None,
                    ..ogx("1.0.0", false, Evidence::OgxConfigLabels)
                },
                false,
            ),
            (
                ServerRelease {
                    line: ServerLine::LlamaStack,
                    ..ogx("0.7.3", false, Evidence::LlamaStackLabels)
                },
                true,
            ),
            (ServerRelease::ASSUMED, false),
        ] {
            let said = lacks_command(&server, image);
            assert_eq!(said.is_some(), lacks, "{server:?}: {said:?}");
            let catalog = ServerRelease {
                evidence: Evidence::Catalog,
                ..server
            };
            let by_reference =
                lacks_command(&catalog, "docker.io/ogxai/distribution-starter:1.3.0");
            assert!(
                by_reference.is_some(),
                "the catalog's: told by its reference"
            );
            if let Some(said) = said {
                assert!(said.contains(image), "{said}");
                assert!(
                    said.contains("remove the migration (spec.praxisMode.migrationJob"),
                    "{said}"
                );
            }
        }
    }

    #[test]
    fn a_reference_says_so_only_for_the_published_images() {
        for (reference, lacks) in [
            ("docker.io/ogxai/distribution-starter:1.3.0", true),
            ("ogxai/distribution-starter:1.5.0", true),
            ("docker.io/llamastack/distribution-starter:0.2.0", true),
            ("docker.io/ogxai/distribution-starter:1.3.1.dev0", false),
            ("docker.io/ogxai/distribution-starter:latest", false),
            ("docker.io/ogxai/distribution-starter:1.6.0", false),
            ("quay.io/opendatahub/odh-ogx-core:latest", false),
            ("quay.io/ogxai/distribution-starter:1.3.0", false),
            ("registry.example/ogxai/distribution-starter:1.3.0", false),
            ("not a reference", false),
        ] {
            let said = lacks_command_by_reference(reference);
            assert_eq!(said.is_some(), lacks, "{reference}: {said:?}");
        }
    }
}
