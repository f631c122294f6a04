//! A short digest over a sequence of fields, for what the operator remembers instead of the
//! values (a stack's providers, an Event series). Every field is fed with its length or a marker,
//! so no two different sequences feed the same bytes.

use sha2::{Digest as _, Sha256};

/// Feeds fields in order; [`FieldDigest::finish`] gives the first 16 bytes of their SHA-256.
pub(in crate::controller) struct FieldDigest(Sha256);

impl FieldDigest {
    pub(in crate::controller) fn new() -> Self {
        Self(Sha256::new())
    }

    /// A one-byte marker (the kind of what follows, or an absent value).
    pub(in crate::controller) fn tag(&mut self, tag: u8) {
        self.0.update([tag]);
    }

    /// A count of what follows (a list's length).
    pub(in crate::controller) fn count(&mut self, count: usize) {
        self.0.update((count as u64).to_le_bytes());
    }

    pub(in crate::controller) fn str(&mut self, value: &str) {
        self.count(value.len());
        self.0.update(value.as_bytes());
    }

    /// An optional string: absent differs from every string, the empty one included.
    pub(in crate::controller) fn opt_str(&mut self, value: Option<&str>) {
        match value {
            Some(value) => {
                self.tag(b's');
                self.str(value);
            }
            None => self.tag(b'-'),
        }
    }

    pub(in crate::controller) fn finish(self) -> [u8; 16] {
        let hash = self.0.finalize();
        let mut digest = [0; 16];
        digest.copy_from_slice(&hash[..16]);
        digest
    }
}

#[cfg(test)]
mod tests {
    use super::FieldDigest;

    fn of(fields: &[Option<&str>]) -> [u8; 16] {
        let mut digest = FieldDigest::new();
        for field in fields {
            digest.opt_str(*field);
        }
        digest.finish()
    }

    #[test]
    fn fields_do_not_run_into_each_other() {
        assert_ne!(of(&[Some("ab"), Some("c")]), of(&[Some("a"), Some("bc")]));
        assert_ne!(of(&[Some(""), None]), of(&[None, Some("")]));
        assert_ne!(of(&[None]), of(&[Some("")]));
        assert_eq!(of(&[Some("a"), None]), of(&[Some("a"), None]));
    }
}
