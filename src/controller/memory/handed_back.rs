//! Which `OGXServer`s are known to hold no Service, Ingress or claim taken from another stack, so
//! a server that asks to take none lists them (to hand back what it took before) only when one
//! might: at 100 servers those two lists, made on every look, were 6 of the 10 reads a server
//! cost until quiet, and once a server, still 2 of 4.5 (issue 62). One list of a namespace answers
//! for every server in it: what it found taken, it found with the server that holds it (a
//! Service's or Ingress's controller; a claim, which a take leaves with no controller, names its
//! server by its instance label).
//!
//! Only the operator takes an object for a server, and only while the server's annotation asks:
//! a server that asks is known clean again only by a list begun after it last asked (a list under
//! way may have missed what it takes). A new leadership term forgets everything, as another
//! replica may have taken objects meanwhile. Servers that asked and are no longer reconciled
//! (deleted ones) are forgotten (`recently_seen`).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use super::recently_seen::RecentlySeen;

/// When something happened, in the order of this memory's own counter.
type Tick = u64;

/// The newest list of one namespace.
struct Listed {
    /// When it began.
    began: Tick,
    /// The servers it found holding something taken.
    holders: Holders,
}

/// The servers a list found holding something taken: by uid (the controller of a Service or an
/// Ingress) or by name (the server a claim is labelled for; a server made again under that name
/// lists again, which costs a list and loses nothing).
#[derive(Debug, Default)]
pub(in crate::controller) struct Holders {
    /// By uid.
    pub(in crate::controller) uids: HashSet<String>,
    /// By name.
    pub(in crate::controller) names: HashSet<String>,
}

#[derive(Default)]
struct State {
    clock: Tick,
    namespaces: HashMap<String, Listed>,
}

impl State {
    fn tick(&mut self) -> Tick {
        self.clock += 1;
        self.clock
    }
}

/// A list under way: when it began (see [`HandedBack::begin_list`]).
#[derive(Clone, Copy, Debug)]
pub(in crate::controller) struct ListTicket(Tick);

/// The namespaces' lists (see the module documentation).
#[derive(Default)]
pub(in crate::controller) struct HandedBack {
    state: Mutex<State>,
    /// Per server uid that asked to take something: when it last asked. Locked only with
    /// `state` held.
    asked: RecentlySeen<Tick>,
}

impl HandedBack {
    fn state(&self) -> MutexGuard<'_, State> {
        // Every update leaves the state whole: a panic elsewhere does not spoil it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the server `name` (uid `uid`) in `namespace` is known to hold nothing taken.
    pub(in crate::controller) fn holds_nothing(
        &self,
        namespace: &str,
        (uid, name): (&str, &str),
        now: Instant,
    ) -> bool {
        let state = self.state();
        let asked = self.asked.look(uid, now, |&at| at);
        let Some(listed) = state.namespaces.get(namespace) else {
            return false;
        };
        let asked_since = asked.is_some_and(|at| at >= listed.began);
        !asked_since && !listed.holders.uids.contains(uid) && !listed.holders.names.contains(name)
    }

    /// A list of `namespace`'s taken objects begins now.
    pub(in crate::controller) fn begin_list(&self) -> ListTicket {
        ListTicket(self.state().tick())
    }

    /// The list begun at `ticket` found objects taken by `holders` in `namespace`; it answers
    /// unless a list begun later already did.
    pub(in crate::controller) fn listed(
        &self,
        namespace: &str,
        ticket: ListTicket,
        holders: Holders,
    ) {
        let mut state = self.state();
        let newer = state
            .namespaces
            .get(namespace)
            .is_some_and(|listed| listed.began > ticket.0);
        if !newer {
            state.namespaces.insert(
                namespace.to_owned(),
                Listed {
                    began: ticket.0,
                    holders,
                },
            );
        }
    }

    /// The server `uid` asks to take something: it may hold it soon.
    pub(in crate::controller) fn may_take(&self, uid: &str, now: Instant) {
        let mut state = self.state();
        let at = state.tick();
        self.asked.remember(uid, at, now);
    }

    /// Forgets everything: the controllers start again (a new leadership term), and another
    /// replica may have taken objects meanwhile.
    pub(in crate::controller) fn clear(&self) {
        let mut state = self.state();
        state.namespaces.clear();
        self.asked.forget_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Instant {
        Instant::now()
    }

    fn holders(uids: &[&str]) -> Holders {
        Holders {
            uids: uids.iter().map(|u| (*u).to_owned()).collect(),
            names: HashSet::new(),
        }
    }

    /// A claim names its server, not its uid: that server (or one made again under its name)
    /// is not known clean.
    #[test]
    fn a_claim_labelled_for_a_server_answers_for_its_name() {
        let memory = HandedBack::default();
        let ticket = memory.begin_list();
        let holders = Holders {
            uids: HashSet::new(),
            names: ["taker".to_owned()].into(),
        };
        memory.listed("ns", ticket, holders);
        assert!(!memory.holds_nothing("ns", ("u-1", "taker"), now()));
        assert!(memory.holds_nothing("ns", ("u-2", "other"), now()));
    }

    #[test]
    fn one_list_answers_for_every_server_of_its_namespace() {
        let memory = HandedBack::default();
        assert!(
            !memory.holds_nothing("ns", ("a", "name-a"), now()),
            "never listed"
        );
        let ticket = memory.begin_list();
        memory.listed("ns", ticket, holders(&["b"]));
        assert!(memory.holds_nothing("ns", ("a", "name-a"), now()));
        assert!(
            memory.holds_nothing("ns", ("new", "name-new"), now()),
            "a server the list saw nothing of"
        );
        assert!(
            !memory.holds_nothing("ns", ("b", "name-b"), now()),
            "it holds something"
        );
        assert!(
            !memory.holds_nothing("other", ("a", "name-a"), now()),
            "another namespace"
        );
        memory.clear();
        assert!(
            !memory.holds_nothing("ns", ("a", "name-a"), now()),
            "a new term: listed again"
        );
    }

    #[test]
    fn a_server_that_asks_is_known_clean_only_by_a_list_begun_after() {
        let memory = HandedBack::default();
        let first = memory.begin_list();
        memory.listed("ns", first, holders(&[]));
        memory.may_take("a", now());
        assert!(
            !memory.holds_nothing("ns", ("a", "name-a"), now()),
            "it asked after the list"
        );
        let raced = memory.begin_list();
        memory.may_take("a", now());
        memory.listed("ns", raced, holders(&[]));
        assert!(
            !memory.holds_nothing("ns", ("a", "name-a"), now()),
            "it asked while a list was under way: that list may have missed what it took"
        );
        let after = memory.begin_list();
        memory.listed("ns", after, holders(&[]));
        assert!(memory.holds_nothing("ns", ("a", "name-a"), now()));
    }

    #[test]
    fn an_older_list_finishing_late_does_not_answer() {
        let memory = HandedBack::default();
        let old = memory.begin_list();
        let new = memory.begin_list();
        memory.listed("ns", new, holders(&[]));
        memory.listed("ns", old, holders(&["a"]));
        assert!(
            memory.holds_nothing("ns", ("a", "name-a"), now()),
            "the newer list stands"
        );
    }
}
