//! Reading the config file a label names from an image layer: streamed from the registry into a
//! blocking tar reader, or searched for in every layer when a mirror re-compressed them. Every
//! byte read is checked: the compressed stream against the layer's digest in the manifest (read to
//! its end for that), and, where the image's config lists one, the uncompressed stream against its
//! `diff_id`. A file is returned only from a layer that matched.

use super::Resolver;
use crate::digest::ContentHasher;
use crate::error::ResolveError;
use crate::image_ref::ImageRef;
use crate::layer::{Compression, LayerError, extract_file};
use crate::manifest::Descriptor;
use crate::registry::{RegistryClient, RegistryError};

impl Resolver {
    /// The labelled digest is not in the image: a mirror re-compressed the layers and the label
    /// named the compressed digest. Look for the path in the layers, topmost first (the file a
    /// container would see), each read within the usual bounds.
    pub(super) async fn scan_layers(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layers: &[Descriptor],
        diff_ids: &[String],
        digest: &str,
        path: &str,
    ) -> Result<Vec<u8>, ResolveError> {
        for (index, layer) in layers.iter().enumerate().rev() {
            let diff_id = diff_ids.get(index).map(String::as_str);
            match self
                .read_layer_file(client, image, layer, diff_id, path)
                .await
            {
                Err(ResolveError::Layer {
                    source: LayerError::NotFound { .. },
                    ..
                }) => continue,
                other => return other,
            }
        }
        Err(ResolveError::LayerNotInImage {
            image: image.to_string(),
            digest: digest.to_owned(),
            path: path.to_owned(),
        })
    }

    /// Streams one layer into a blocking tar reader; `diff_id` is the layer's uncompressed digest
    /// from the image's config, where it lists one.
    pub(super) async fn read_layer_file(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layer: &Descriptor,
        diff_id: Option<&str>,
        path: &str,
    ) -> Result<Vec<u8>, ResolveError> {
        let shown = image.to_string();
        let compression = Compression::from_media_type(&layer.media_type).ok_or_else(|| {
            ResolveError::LayerMediaType {
                image: shown.clone(),
                digest: layer.digest.clone(),
                media_type: layer.media_type.clone(),
            }
        })?;
        let mut response = client
            .blob_response(&image.repository, &layer.digest)
            .await
            .map_err(|source| ResolveError::Registry {
                image: shown.clone(),
                source,
            })?;
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(8);
        let limits = self.options.limits;
        let path_owned = path.to_owned();
        let diff_id_owned = diff_id.map(str::to_owned);
        let extraction = tokio::task::spawn_blocking(move || {
            extract_file(
                ChannelReader {
                    rx,
                    current: Vec::new(),
                    pos: 0,
                },
                compression,
                &path_owned,
                &limits,
                diff_id_owned.as_deref(),
            )
        });
        let streamed = stream(
            &mut response,
            tx,
            &layer.digest,
            limits.max_layer_read_bytes,
        )
        .await;
        let result = extraction
            .await
            .map_err(|e| ResolveError::Setup(format!("layer extraction task failed: {e}")))?;
        checked(client, image, layer, streamed, result)
    }
}

/// What reading `layer` of `image` came to: the file the reader found (`result`), only if every
/// byte it read arrived (`streamed`) and the bytes match the layer's digest. An incomplete or
/// altered layer is refused whatever the reader made of it.
fn checked(
    client: &RegistryClient,
    image: &ImageRef,
    layer: &Descriptor,
    streamed: Streamed,
    result: Result<Vec<u8>, LayerError>,
) -> Result<Vec<u8>, ResolveError> {
    let shown = image.to_string();
    let layer_error = |source| ResolveError::Layer {
        image: shown.clone(),
        source,
    };
    if let Some(detail) = streamed.transfer_error {
        return Err(result.err().map_or_else(
            || ResolveError::Registry {
                image: shown.clone(),
                source: RegistryError::Transport {
                    registry: client.registry().to_owned(),
                    what: format!("layer {} of {}", layer.digest, image.repository),
                    detail,
                },
            },
            layer_error,
        ));
    }
    let actual = streamed.digest;
    if actual != layer.digest {
        return Err(ResolveError::Registry {
            image: shown.clone(),
            source: RegistryError::DigestMismatch {
                registry: client.registry().to_owned(),
                what: format!("layer {} of {}", layer.digest, image.repository),
                expected: layer.digest.clone(),
                actual,
            },
        });
    }
    result.map_err(layer_error)
}

/// What streaming a layer to its reader came to: the digest of the bytes read, and why the
/// transfer stopped early, if it did.
struct Streamed {
    digest: String,
    transfer_error: Option<String>,
}

/// Streams the layer's bytes from `response` to the reader (`tx`), hashing each (`like`: the
/// digest whose algorithm is used), and stops past `limit` bytes. Once the reader has what it
/// needs, the rest is read only to finish the digest.
async fn stream(
    response: &mut reqwest::Response,
    tx: tokio::sync::mpsc::Sender<std::io::Result<Vec<u8>>>,
    like: &str,
    limit: u64,
) -> Streamed {
    let mut hasher = ContentHasher::like(like);
    let mut read: u64 = 0;
    let mut reader_open = true;
    let mut transfer_error = None;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                let message = format!("reading the layer failed: {e}");
                if reader_open {
                    let _ = tx.send(Err(std::io::Error::other(message.clone()))).await;
                }
                transfer_error = Some(message);
                break;
            }
        };
        read += chunk.len() as u64;
        if read > limit {
            // The reader's own cap says so when it is still reading; a drain past the file
            // stops here.
            if reader_open {
                let _ = tx.send(Ok(chunk.to_vec())).await;
            }
            transfer_error = Some(format!(
                "the layer is larger than the limit of {limit} bytes"
            ));
            break;
        }
        hasher.update(&chunk);
        if reader_open && tx.send(Ok(chunk.to_vec())).await.is_err() {
            reader_open = false;
        }
    }
    Streamed {
        digest: hasher.finish(),
        transfer_error,
    }
}

/// Blocking `Read` over chunks sent from the async side.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    current: Vec<u8>,
    pos: usize,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.current.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.current = chunk?;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
