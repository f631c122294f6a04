//! Reading the config file a label names from an image layer: streamed from the registry into a
//! blocking tar reader that stops at the file, or searched for in every layer when a mirror
//! re-compressed them.

use super::Resolver;
use crate::error::ResolveError;
use crate::image_ref::ImageRef;
use crate::layer::{Compression, LayerError, extract_file};
use crate::manifest::Descriptor;
use crate::registry::RegistryClient;

impl Resolver {
    /// The labelled digest is not in the image: a mirror re-compressed the layers and the label
    /// named the compressed digest. Look for the path in the layers, topmost first (the file a
    /// container would see), each read within the usual bounds.
    pub(super) async fn scan_layers(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layers: &[Descriptor],
        digest: &str,
        path: &str,
    ) -> Result<Vec<u8>, ResolveError> {
        for layer in layers.iter().rev() {
            match self.read_layer_file(client, image, layer, path).await {
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

    /// Streams one layer into a blocking tar reader that stops at the file.
    pub(super) async fn read_layer_file(
        &self,
        client: &RegistryClient,
        image: &ImageRef,
        layer: &Descriptor,
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
            )
        });
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => Ok(chunk.to_vec()),
                Ok(None) => break,
                Err(e) => Err(std::io::Error::other(format!(
                    "reading the layer failed: {e}"
                ))),
            };
            let failed = chunk.is_err();
            // The reader hangs up once it has the file: stop downloading.
            if tx.send(chunk).await.is_err() || failed {
                break;
            }
        }
        drop(tx);
        let result = extraction
            .await
            .map_err(|e| ResolveError::Setup(format!("layer extraction task failed: {e}")))?;
        result.map_err(|source| ResolveError::Layer {
            image: shown,
            source,
        })
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
