//! Writes OCI image layouts for the tests (no container engine needed) and pushes or copies
//! them with `skopeo`.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::registries::Error;

/// Compression of a fixture layer.
#[derive(Clone, Copy, Debug)]
pub enum Comp {
    /// `tar+gzip`
    Gzip,
    /// plain `tar`
    None,
}

/// One tar entry.
#[derive(Clone, Debug)]
pub enum Entry {
    /// A regular file.
    File(&'static str, Vec<u8>),
    /// A symlink.
    Symlink(&'static str, &'static str),
    /// A file whose raw name bypasses path checks (for hostile archives).
    RawName(&'static [u8], Vec<u8>),
}

/// One layer.
#[derive(Clone, Debug)]
pub struct Layer {
    pub entries: Vec<Entry>,
    pub comp: Comp,
}

/// One platform image. In label values, `{layer0}`, `{layer1}`… become layer digests and
/// `{diff0}`… uncompressed digests.
#[derive(Clone, Debug)]
pub struct ImageSpec {
    pub arch: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub layers: Vec<Layer>,
}

pub fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

fn tar_bytes(entries: &[Entry]) -> Result<Vec<u8>, Error> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_mtime(0);
        match entry {
            Entry::File(path, data) => {
                header.set_size(data.len() as u64);
                header.set_entry_type(tar::EntryType::Regular);
                builder.append_data(&mut header, path.trim_start_matches('/'), data.as_slice())?;
            }
            Entry::Symlink(path, target) => {
                header.set_size(0);
                header.set_entry_type(tar::EntryType::Symlink);
                builder.append_link(&mut header, path.trim_start_matches('/'), target)?;
            }
            Entry::RawName(name, data) => {
                header.set_size(data.len() as u64);
                header.set_entry_type(tar::EntryType::Regular);
                header.as_old_mut().name[..name.len()].copy_from_slice(name);
                header.set_cksum();
                builder.append(&header, data.as_slice())?;
            }
        }
    }
    Ok(builder.into_inner()?)
}

struct Blobs(BTreeMap<String, Vec<u8>>);

impl Blobs {
    fn add(&mut self, media_type: &str, bytes: Vec<u8>) -> Value {
        let digest = sha256(&bytes);
        let desc = json!({"mediaType": media_type, "digest": digest, "size": bytes.len()});
        self.0.insert(digest, bytes);
        desc
    }
}

fn build_image(spec: &ImageSpec, blobs: &mut Blobs) -> Result<Value, Error> {
    let mut layer_descs = Vec::new();
    let mut diff_ids = Vec::new();
    for layer in &spec.layers {
        let raw = tar_bytes(&layer.entries)?;
        diff_ids.push(sha256(&raw));
        let (media, bytes) = match layer.comp {
            Comp::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&raw)?;
                ("application/vnd.oci.image.layer.v1.tar+gzip", gz.finish()?)
            }
            Comp::None => ("application/vnd.oci.image.layer.v1.tar", raw),
        };
        layer_descs.push(blobs.add(media, bytes));
    }
    let mut labels = serde_json::Map::new();
    for (key, value) in &spec.labels {
        let mut value = value.clone();
        for (i, d) in layer_descs.iter().enumerate() {
            value = value.replace(
                &format!("{{layer{i}}}"),
                d["digest"].as_str().unwrap_or_default(),
            );
        }
        for (i, d) in diff_ids.iter().enumerate() {
            value = value.replace(&format!("{{diff{i}}}"), d);
        }
        labels.insert((*key).to_owned(), Value::String(value));
    }
    let config = json!({
        "architecture": spec.arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    let config_desc = blobs.add(
        "application/vnd.oci.image.config.v1+json",
        serde_json::to_vec(&config)?,
    );
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc, "layers": layer_descs,
    });
    let mut desc = blobs.add(
        "application/vnd.oci.image.manifest.v1+json",
        serde_json::to_vec(&manifest)?,
    );
    desc["platform"] = json!({"architecture": spec.arch, "os": "linux"});
    Ok(desc)
}

/// Writes a layout at `dir` with `tag`: one image, or an index of several when `index`.
/// Returns the digest of the top-level manifest (what a registry pins the tag to).
pub fn write_layout(
    dir: &Path,
    tag: &str,
    images: &[ImageSpec],
    index: bool,
) -> Result<String, Error> {
    let mut blobs = Blobs(BTreeMap::new());
    let mut descs = Vec::new();
    for spec in images {
        descs.push(build_image(spec, &mut blobs)?);
    }
    let mut top = if index {
        let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": descs});
        blobs.add(
            "application/vnd.oci.image.index.v1+json",
            serde_json::to_vec(&index)?,
        )
    } else {
        let mut d = descs.into_iter().next().ok_or("no image")?;
        d.as_object_mut().map(|o| o.remove("platform"));
        d
    };
    top["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("blobs/sha256"))?;
    for (digest, bytes) in &blobs.0 {
        fs::write(
            dir.join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
            bytes,
        )?;
    }
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#)?;
    fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": [top.clone()]}))?,
    )?;
    Ok(top["digest"].as_str().unwrap_or_default().to_owned())
}

/// `skopeo copy` with the given extra arguments; errors carry skopeo's output.
pub fn skopeo_copy(src: &str, dest: &str, args: &[&str]) -> Result<(), Error> {
    let out = Command::new("skopeo")
        .args(["copy", "--quiet", "--all"])
        .args(args)
        .args([src, dest])
        .output()
        .map_err(|e| format!("cannot run skopeo: {e} (.ci/run installs it)"))?;
    if !out.status.success() {
        return Err(format!(
            "skopeo copy {src} {dest} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

/// The labels OGX's own image build (`scripts/generate-config-labels.sh` in ogx-ai/ogx) puts on
/// a starter image of `version` carrying two configs: `config.yaml` (`runs`, the one it runs) and
/// `run-with-postgres-store.yaml` (`postgres`).
pub fn ogx_starter_labels(
    version: &str,
    runs: &str,
    postgres: &str,
) -> Vec<(&'static str, String)> {
    use base64::Engine as _;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    vec![
        ("com.ogx.config.config.yaml", b64(runs)),
        ("com.ogx.config.run-with-postgres-store.yaml", b64(postgres)),
        ("com.ogx.distribution.name", "starter".into()),
        ("com.ogx.distribution.version", version.into()),
        ("com.ogx.distribution.default-config", "config.yaml".into()),
        (
            "com.ogx.distribution.configs",
            "config.yaml,run-with-postgres-store.yaml".into(),
        ),
        ("org.opencontainers.image.version", version.into()),
    ]
}

/// The labels Open Data Hub's OGX image build sets (opendatahub-io/ogx-distribution
/// `Containerfile` @ 0e0fd42, the `rh` distribution of OGX `v1.2.1+rhaiv.0`), with `config` as
/// its one config file.
pub fn odh_ogx_labels(config: &str) -> Vec<(&'static str, String)> {
    use base64::Engine as _;
    let version = "v1.2.1+rhaiv.0";
    vec![
        (
            "com.ogx.config.config.yaml",
            base64::engine::general_purpose::STANDARD.encode(config),
        ),
        ("com.ogx.distribution.name", "rh".into()),
        ("com.ogx.distribution.version", version.into()),
        ("com.ogx.distribution.default-config", "config.yaml".into()),
        ("com.ogx.distribution.configs", "config.yaml".into()),
        ("org.opencontainers.image.title", "OGX - rh".into()),
        ("org.opencontainers.image.version", version.into()),
    ]
}
