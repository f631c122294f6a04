//! Bounds on everything read from a registry or a user.

/// Caps applied while resolving. Defaults suit configs of a few hundred KiB in images of a few GiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest manifest or image config blob accepted.
    pub max_manifest_bytes: usize,
    /// Largest decoded `io.llamastack.config.base64` label.
    pub max_label_config_bytes: usize,
    /// Largest config file accepted from a layer.
    pub max_config_file_bytes: u64,
    /// Compressed bytes read from a layer before giving up on finding the file.
    pub max_layer_read_bytes: u64,
    /// Decompressed bytes read from a layer before giving up on finding the file.
    pub max_layer_unpacked_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_manifest_bytes: 4 << 20,
            max_label_config_bytes: 1 << 20,
            max_config_file_bytes: 4 << 20,
            max_layer_read_bytes: 512 << 20,
            max_layer_unpacked_bytes: 2 << 30,
        }
    }
}
