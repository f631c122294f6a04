//! What each `OGXServer`'s adoption annotations named when its watch last saw it, so that a
//! change of them tells the stacks it no longer names as well as those it names now. A stack
//! stands down while a server names it; without this, the stack an annotation stopped naming
//! (removed, or pointed elsewhere) would resume only at its next timed look, minutes later, and
//! a volume given back to it would stay unmounted until then. An annotation that cannot be read
//! may name any stack of the namespace: while one is, and once it was, every stack there is told.
//!
//! Only servers that name a stack are remembered, and a server is forgotten when its watch
//! reports it gone (or, for a delete missed while the watch was away, when more servers are
//! remembered than exist: [`NamedBefore::forget_gone`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

/// The stacks one server's annotations name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::controller) enum Named {
    /// These (none, when it names none).
    Stacks(BTreeSet<String>),
    /// Any: an annotation cannot be read.
    Any,
}

impl Named {
    fn is_none(&self) -> bool {
        matches!(self, Named::Stacks(stacks) if stacks.is_empty())
    }

    fn and(self, other: Named) -> Named {
        match (self, other) {
            (Named::Stacks(mut these), Named::Stacks(those)) => {
                these.extend(those);
                Named::Stacks(these)
            }
            _ => Named::Any,
        }
    }
}

/// Per server (namespace, name): what it named when last seen.
#[derive(Default)]
pub(in crate::controller) struct NamedBefore {
    servers: Mutex<HashMap<(String, String), Named>>,
}

impl NamedBefore {
    fn servers(&self) -> MutexGuard<'_, HashMap<(String, String), Named>> {
        // Every update leaves the map whole: a panic elsewhere does not spoil it.
        self.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stacks to tell of a change of the server `name` in `namespace`, seen naming `now`
    /// (`exists`: false when its watch reports it deleted): those it named before and those it
    /// names now. What it names now is remembered while it exists.
    pub(in crate::controller) fn tell(
        &self,
        (namespace, name): (&str, &str),
        now: Named,
        exists: bool,
    ) -> Named {
        let key = (namespace.to_owned(), name.to_owned());
        let mut servers = self.servers();
        let before = match exists && !now.is_none() {
            true => servers.insert(key, now.clone()),
            false => servers.remove(&key),
        };
        match before {
            Some(before) => before.and(now),
            None => now,
        }
    }

    /// How many servers are remembered.
    pub(in crate::controller) fn len(&self) -> usize {
        self.servers().len()
    }

    /// Forgets the servers `exists` says are gone.
    pub(in crate::controller) fn forget_gone(&self, exists: impl Fn(&str, &str) -> bool) {
        self.servers()
            .retain(|(namespace, name), _| exists(namespace, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(names: &[&str]) -> Named {
        Named::Stacks(names.iter().map(|n| (*n).to_owned()).collect())
    }

    #[test]
    fn a_stack_no_longer_named_is_told_once() {
        let memory = NamedBefore::default();
        let server = ("ns", "new");
        assert_eq!(
            memory.tell(server, stacks(&["old"]), true),
            stacks(&["old"])
        );
        assert_eq!(
            memory.tell(server, stacks(&["other"]), true),
            stacks(&["old", "other"]),
            "pointed elsewhere: the stack it named before is told too"
        );
        assert_eq!(
            memory.tell(server, stacks(&[]), true),
            stacks(&["other"]),
            "removed"
        );
        assert_eq!(
            memory.tell(server, stacks(&[]), true),
            stacks(&[]),
            "told once"
        );
        assert_eq!(
            memory.len(),
            0,
            "a server that names nothing is not remembered"
        );
        assert_eq!(
            memory.tell(("other-ns", "new"), stacks(&["old"]), true),
            stacks(&["old"]),
            "another namespace's server of the same name is another server"
        );
    }

    #[test]
    fn an_unreadable_annotation_tells_every_stack_until_and_once_it_is_fixed() {
        let memory = NamedBefore::default();
        let server = ("ns", "new");
        memory.tell(server, stacks(&["old"]), true);
        assert_eq!(memory.tell(server, Named::Any, true), Named::Any);
        assert_eq!(
            memory.tell(server, stacks(&["old"]), true),
            Named::Any,
            "fixed"
        );
        assert_eq!(
            memory.tell(server, stacks(&["old"]), true),
            stacks(&["old"])
        );
    }

    #[test]
    fn a_deleted_server_tells_what_it_named_and_is_forgotten() {
        let memory = NamedBefore::default();
        memory.tell(("ns", "new"), stacks(&["old"]), true);
        memory.tell(("ns", "missed"), stacks(&["old"]), true);
        assert_eq!(
            memory.tell(("ns", "new"), stacks(&["old"]), false),
            stacks(&["old"])
        );
        assert_eq!(memory.len(), 1);
        memory.forget_gone(|_, name| name != "missed");
        assert_eq!(memory.len(), 0, "a delete the watch missed");
    }
}
