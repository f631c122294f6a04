//! Finding one file in an image layer: a tar stream, uncompressed, gzip or zstd, read within the
//! byte limits. When the image's config names the layer's `diff_id`, the whole uncompressed stream
//! is read and checked against it before the file is returned; otherwise reading stops at the file.

use std::io::{self, Read};
use std::path::{Component, Path};

use crate::digest::ContentHasher;
use crate::limits::Limits;

/// Layer compression, from the descriptor's media type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `…tar`
    None,
    /// `…tar+gzip`, Docker's `rootfs.diff.tar.gzip`
    Gzip,
    /// `…tar+zstd`
    Zstd,
}

impl Compression {
    /// The compression of a layer media type; `None` for media types that are not tar layers.
    pub fn from_media_type(media_type: &str) -> Option<Self> {
        match media_type {
            "application/vnd.oci.image.layer.v1.tar"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar"
            | "application/vnd.docker.image.rootfs.diff.tar" => Some(Self::None),
            "application/vnd.oci.image.layer.v1.tar+gzip"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
            | "application/vnd.docker.image.rootfs.diff.tar.gzip" => Some(Self::Gzip),
            "application/vnd.oci.image.layer.v1.tar+zstd"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd" => Some(Self::Zstd),
            _ => None,
        }
    }
}

/// Why a file could not be taken from a layer.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// The file is not in the layer.
    #[error("{path} is not in the layer")]
    NotFound {
        /// The wanted path.
        path: String,
    },
    /// The wanted path is not a plain relative path inside the image.
    #[error("config path {path:?} must be an absolute path without '..' (e.g. /app/config.yaml)")]
    BadPath {
        /// The path from the label.
        path: String,
    },
    /// The layer holds an entry that escapes the root.
    #[error(
        "the layer contains an unsafe tar entry {entry:?} (absolute or with '..'); refusing to read it"
    )]
    UnsafeEntry {
        /// The entry name.
        entry: String,
    },
    /// The entry at the path is not a regular file.
    #[error(
        "{path} in the layer is not a regular file (a link or directory); point the label at the file itself"
    )]
    NotAFile {
        /// The wanted path.
        path: String,
    },
    /// A byte limit was hit.
    #[error("{what} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Which quantity.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The uncompressed layer does not hash to the `diff_id` the image's config lists for it.
    #[error(
        "the uncompressed layer does not match its diff_id {expected} (got {actual}); refusing the file read from it"
    )]
    DigestMismatch {
        /// The diff_id from the image's config.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// The stream is not a valid (compressed) tar.
    #[error("the layer is not a valid {compression} tar stream: {source}")]
    Corrupt {
        /// Expected compression.
        compression: &'static str,
        /// Underlying error.
        source: io::Error,
    },
}

/// A reader that fails (instead of truncating) once more than `limit` bytes were read.
struct Capped<R> {
    inner: R,
    remaining: u64,
    what: &'static str,
    limit: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.remaining = self
            .remaining
            .checked_sub(n as u64)
            .ok_or_else(|| io::Error::other(CapExceeded(self.what, self.limit)))?;
        Ok(n)
    }
}

#[derive(Debug)]
struct CapExceeded(&'static str, u64);

impl std::fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} exceeds {} bytes", self.0, self.1)
    }
}

impl std::error::Error for CapExceeded {}

fn capped<R: Read>(inner: R, what: &'static str, limit: u64) -> Capped<R> {
    Capped {
        inner,
        remaining: limit,
        what,
        limit,
    }
}

/// `/app/config.yaml` -> `app/config.yaml`; rejects `..` and empty paths.
fn wanted_path(path: &str) -> Result<String, LayerError> {
    let bad = || LayerError::BadPath {
        path: path.to_owned(),
    };
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(p) => parts.push(p.to_str().ok_or_else(bad)?),
            Component::ParentDir | Component::Prefix(_) => return Err(bad()),
        }
    }
    if parts.is_empty() {
        return Err(bad());
    }
    Ok(parts.join("/"))
}

/// The normalised name of a tar entry, or an error for entries that escape the root.
fn entry_path(raw: &[u8]) -> Result<String, LayerError> {
    let name = String::from_utf8_lossy(raw);
    let unsafe_entry = || LayerError::UnsafeEntry {
        entry: name.to_string(),
    };
    if name.starts_with('/') {
        return Err(unsafe_entry());
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(unsafe_entry()),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

fn classify(err: io::Error, compression: &'static str) -> LayerError {
    if let Some(CapExceeded(what, limit)) =
        err.get_ref().and_then(|e| e.downcast_ref::<CapExceeded>())
    {
        return LayerError::TooLarge {
            what,
            limit: *limit,
        };
    }
    LayerError::Corrupt {
        compression,
        source: err,
    }
}

/// A reader that hashes what passes through it, when there is a digest to check.
struct Hashing<R> {
    inner: R,
    hasher: Option<ContentHasher>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Reads `path` out of a layer stream. With `diff_id` (the uncompressed layer's digest from the
/// image's config), the rest of the stream is read too and the file is returned only when the
/// whole uncompressed layer matches it; without, reading stops at the file.
pub fn extract_file<R: Read>(
    layer: R,
    compression: Compression,
    path: &str,
    limits: &Limits,
    diff_id: Option<&str>,
) -> Result<Vec<u8>, LayerError> {
    let wanted = wanted_path(path)?;
    let raw = capped(
        layer,
        "the compressed layer read",
        limits.max_layer_read_bytes,
    );
    let (decoder, name): (Box<dyn Read>, &'static str) = match compression {
        Compression::None => (Box::new(raw), "uncompressed"),
        Compression::Gzip => (Box::new(flate2::read::MultiGzDecoder::new(raw)), "gzip"),
        Compression::Zstd => {
            let decoder =
                ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| LayerError::Corrupt {
                    compression: "zstd",
                    source: io::Error::other(e.to_string()),
                })?;
            (Box::new(decoder), "zstd")
        }
    };
    let unpacked = Hashing {
        inner: capped(
            decoder,
            "the decompressed layer read",
            limits.max_layer_unpacked_bytes,
        ),
        hasher: diff_id.map(ContentHasher::like),
    };
    let mut archive = tar::Archive::new(unpacked);
    let content = find_file(&mut archive, &wanted, path, limits, name)?;
    let Some(expected) = diff_id else {
        return Ok(content);
    };
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(|e| classify(e, name))?;
    let actual = rest.hasher.map(ContentHasher::finish).unwrap_or_default();
    if actual != expected {
        return Err(LayerError::DigestMismatch {
            expected: expected.to_owned(),
            actual,
        });
    }
    Ok(content)
}

/// The content of the regular file `wanted` in the tar stream, read no further than its end.
fn find_file<R: Read>(
    archive: &mut tar::Archive<R>,
    wanted: &str,
    path: &str,
    limits: &Limits,
    name: &'static str,
) -> Result<Vec<u8>, LayerError> {
    let entries = archive.entries().map_err(|e| classify(e, name))?;
    for entry in entries {
        let entry = entry.map_err(|e| classify(e, name))?;
        let entry_name = entry_path(&entry.path_bytes())?;
        if entry_name != wanted {
            continue;
        }
        if !entry.header().entry_type().is_file() {
            return Err(LayerError::NotAFile {
                path: path.to_owned(),
            });
        }
        let size = entry.header().size().map_err(|e| classify(e, name))?;
        if size > limits.max_config_file_bytes {
            return Err(LayerError::TooLarge {
                what: "the config file",
                limit: limits.max_config_file_bytes,
            });
        }
        let mut content = Vec::with_capacity(size as usize);
        entry
            .take(limits.max_config_file_bytes)
            .read_to_end(&mut content)
            .map_err(|e| classify(e, name))?;
        return Ok(content);
    }
    Err(LayerError::NotFound {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Compression, LayerError, extract_file};
    use crate::digest::sha256_hex;
    use crate::limits::Limits;

    /// An uncompressed tar holding `app/config.yaml` and, after it, another file.
    fn layer(config: &[u8]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, content) in [
            ("app/config.yaml", config),
            ("app/after.txt", b"read only to verify" as &[u8]),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, content).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// `app/config.yaml` read from `tar` served uncompressed, then gzipped, checked against
    /// `diff_id`.
    fn read_both_ways(tar: &[u8], diff_id: &str) -> [Result<Vec<u8>, LayerError>; 2] {
        [
            (tar.to_vec(), Compression::None),
            (gzip(tar), Compression::Gzip),
        ]
        .map(|(bytes, compression)| {
            extract_file(
                bytes.as_slice(),
                compression,
                "/app/config.yaml",
                &Limits::default(),
                Some(diff_id),
            )
        })
    }

    #[test]
    fn a_file_from_a_layer_matching_its_diff_id_is_returned() {
        let tar = layer(b"version: 2\n");
        for got in read_both_ways(&tar, &sha256_hex(&tar)) {
            assert_eq!(got.unwrap(), b"version: 2\n");
        }
    }

    #[test]
    fn a_layer_not_matching_its_diff_id_gives_no_file() {
        let listed = sha256_hex(&layer(b"version: 2\n"));
        let served = layer(b"version: 9\n");
        for got in read_both_ways(&served, &listed) {
            match got.unwrap_err() {
                LayerError::DigestMismatch { expected, actual } => {
                    assert_eq!(expected, listed);
                    assert_eq!(actual, sha256_hex(&served));
                }
                other => panic!("expected a diff_id mismatch, got {other}"),
            }
        }
    }

    #[test]
    fn without_a_diff_id_reading_stops_at_the_file() {
        let mut tar = layer(b"version: 2\n");
        // Garbage after the file: never read when there is nothing to verify.
        tar.truncate(1024 + 512);
        tar.extend_from_slice(&[0xff; 512]);
        let got = extract_file(
            tar.as_slice(),
            Compression::None,
            "/app/config.yaml",
            &Limits::default(),
            None,
        )
        .unwrap();
        assert_eq!(got, b"version: 2\n");
    }
}
