//! One copy of a text that many cached objects hold. Most of a cached stack's condition
//! messages are the same words in every stack ("Deployment is ready", "Service is ready", the
//! registry's error while it is away); kept once each, a thousand stacks hold a thousand
//! pointers instead of a thousand copies. Never serialized: it is the operator's memory.
//!
//! The texts are kept in one set for the process. A text no holder keeps any more is dropped
//! from it at the next sweep, which runs when the set has doubled since the last one, so the
//! set holds at most about twice the texts in use.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

/// A text, shared with every other holder of the same words.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedText(Arc<str>);

/// The set is swept no sooner than at this many texts.
const FIRST_SWEEP: usize = 256;

#[derive(Default)]
struct Texts {
    held: HashSet<Arc<str>>,
    sweep_at: usize,
}

fn texts() -> &'static Mutex<Texts> {
    static TEXTS: OnceLock<Mutex<Texts>> = OnceLock::new();
    TEXTS.get_or_init(Mutex::default)
}

impl SharedText {
    /// `text`, as the copy already held if there is one.
    pub fn new(text: &str) -> Self {
        let Ok(mut texts) = texts().lock() else {
            return Self(Arc::from(text));
        };
        if let Some(held) = texts.held.get(text) {
            return Self(Arc::clone(held));
        }
        if texts.held.len() >= texts.sweep_at.max(FIRST_SWEEP) {
            // Under the lock, a text only the set holds cannot be taken by anyone meanwhile.
            texts.held.retain(|held| Arc::strong_count(held) > 1);
            texts.sweep_at = texts.held.len() * 2;
        }
        let held: Arc<str> = Arc::from(text);
        texts.held.insert(Arc::clone(&held));
        Self(held)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `self` and `other` are one copy.
    #[cfg(test)]
    pub(crate) fn same_copy(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_words_are_one_copy_and_other_words_another() {
        let a = SharedText::new(&String::from("shared-text test: Deployment is ready"));
        let b = SharedText::new(&String::from("shared-text test: Deployment is ready"));
        let c = SharedText::new("shared-text test: Service is ready");
        assert!(a.same_copy(&b));
        assert!(!a.same_copy(&c));
        assert_eq!(b.as_str(), "shared-text test: Deployment is ready");
        let (again, heap) =
            crate::heap_count::held_by(|| SharedText::new("shared-text test: Deployment is ready"));
        assert_eq!(heap, 0, "a held text is not copied again");
        assert!(again.same_copy(&a));
    }

    #[test]
    fn texts_no_one_holds_are_swept_and_those_held_stay() {
        let kept = SharedText::new("shared-text sweep test: kept");
        for i in 0..4 * FIRST_SWEEP {
            drop(SharedText::new(&format!(
                "shared-text sweep test: dropped {i}"
            )));
        }
        let held = texts().lock().unwrap().held.len();
        assert!(
            held < 3 * FIRST_SWEEP,
            "{held} texts held after {} were dropped",
            4 * FIRST_SWEEP
        );
        assert!(SharedText::new("shared-text sweep test: kept").same_copy(&kept));
    }
}
