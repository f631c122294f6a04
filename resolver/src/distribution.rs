//! What the resolver is asked for: a distribution name or an image reference.

/// What to resolve.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// A catalog name (`starter`).
    Name(String),
    /// An image reference.
    Image(String),
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Name(n) => write!(f, "distribution {n:?}"),
            Self::Image(i) => write!(f, "image {i}"),
        }
    }
}
