//! Small images pushed to the test registries: one layer, amd64, labelled or not.

use base64::Engine;

use crate::oci::{Comp, Entry, ImageSpec, Layer, skopeo_copy, write_layout};

/// Pushes a one-layer amd64 image to the plain registry `plain` (no TLS, no auth) as
/// `<repo>:<tag>`, labelled with `config` as its base config when given (built under `work`);
/// returns `<plain>/<repo>@<digest>`.
pub fn push_plain(
    plain: &str,
    work: &std::path::Path,
    repo: &str,
    tag: &str,
    config: Option<&str>,
) -> String {
    let labels = config
        .map(|c| {
            (
                "io.llamastack.config.base64",
                base64::engine::general_purpose::STANDARD.encode(c),
            )
        })
        .into_iter()
        .collect();
    push_labelled(plain, work, repo, tag, labels)
}

/// Pushes a one-layer amd64 image with these `labels` to the plain registry `plain` as
/// `<repo>:<tag>` (built under `work`); returns `<plain>/<repo>@<digest>`.
pub fn push_labelled(
    plain: &str,
    work: &std::path::Path,
    repo: &str,
    tag: &str,
    labels: Vec<(&'static str, String)>,
) -> String {
    let image = ImageSpec {
        arch: "amd64",
        labels,
        layers: vec![Layer {
            entries: vec![Entry::File("/etc/os-release", b"ID=t\n".to_vec())],
            comp: Comp::Gzip,
        }],
    };
    let layout = work.join(format!("{}-{tag}", repo.replace('/', "-")));
    let digest = write_layout(&layout, tag, &[image], false).unwrap();
    skopeo_copy(
        &format!("oci:{}:{tag}", layout.display()),
        &format!("docker://{plain}/{repo}:{tag}"),
        &["--preserve-digests", "--dest-tls-verify=false"],
    )
    .unwrap();
    format!("{plain}/{repo}@{digest}")
}
