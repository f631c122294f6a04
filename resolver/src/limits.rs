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

/// Reads the file at `path`, refusing (with [`std::io::ErrorKind::FileTooLarge`]) one larger
/// than `max` bytes, of which it reads no more than one byte past the bound.
pub fn read_file_within(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        let bound = if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
            format!("{} MiB", max >> 20)
        } else {
            format!("{max} bytes")
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {bound}"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod file_tests {
    use super::read_file_within;

    #[test]
    fn a_file_over_the_bound_is_refused_and_one_at_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![b'x'; 2 << 20]).unwrap();
        let error = read_file_within(&path, 1 << 20).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(error.to_string(), "larger than 1 MiB");
        assert_eq!(read_file_within(&path, 2 << 20).unwrap().len(), 2 << 20);
        let error = read_file_within(&path, 1000).unwrap_err();
        assert_eq!(error.to_string(), "larger than 1000 bytes");
    }
}
