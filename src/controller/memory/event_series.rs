//! The series of the Kubernetes Events (`events.k8s.io/v1`) published, kept as kube's
//! `Recorder` keeps them (the writes are the publish step's): an Event repeated within
//! [`SERIES_WINDOW`] (same type, action, reason and object reference) becomes a
//! series on the first one, a patch of its count and time, instead of a new object.
//!
//! Unlike kube's recorder, which keeps every Event it published for that window (about 2.8 KiB
//! each as decoded, measured at 300 stacks; a burst of 10,000 stacks' two Events each would hold
//! tens of MiB, in a map that never shrinks), each series is remembered in a few dozen bytes, and
//! the memory is given back once a burst has passed.

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::runtime::events::{Event, EventType};

use crate::controller::memory::field_digest::FieldDigest;

/// How long an Event can be repeated as a series (kube's recorder and client-go use 6 minutes).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Who reports the Events.
#[derive(Clone, Debug)]
pub struct Reporter {
    /// `reportingController`.
    pub controller: String,
    /// `reportingInstance` (the Pod's name; the controller's name when unknown).
    pub instance: Option<String>,
}

/// The series of the Events published in the last [`SERIES_WINDOW`], and who reports them: what
/// publishing an Event writes ([`EventRecorder::next`]), and what was written
/// ([`EventRecorder::published`]). The writes are the publish step's
/// (`controller::publish::events`).
pub struct EventRecorder {
    reporter: Reporter,
    series: Mutex<SeriesMemory>,
}

/// Which series an Event belongs to (its type, action, reason and whole object reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesKey([u8; 16]);

impl EventRecorder {
    /// A recorder of the Events `reporter` writes.
    pub fn new(reporter: Reporter) -> Self {
        Self {
            reporter,
            series: Mutex::new(SeriesMemory::default()),
        }
    }

    /// What publishing `event` about the object `regarding` at `now` writes: a new Event (the
    /// object to create), or the next of its series.
    pub fn next(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> (SeriesKey, Write) {
        let key = series_key(event, regarding);
        let write = match self.memory().next(key, now) {
            Next::Repeat { name, count } => Write::Repeat {
                name,
                series: EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                },
            },
            Next::New => Write::Create(Box::new(self.new_event(event, regarding, now))),
        };
        (SeriesKey(key), write)
    }

    /// Notes that the Event of series `key`, named `name`, was written at `now`.
    pub fn published(&self, key: SeriesKey, name: String, now: Timestamp) {
        self.memory().published(key.0, name, now);
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, SeriesMemory> {
        self.series.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let controller = &self.reporter.controller;
        let named = regarding.name.as_deref().unwrap_or(controller);
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!("{named}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            type_: Some(type_name(event.type_).to_owned()),
            ..K8sEvent::default()
        }
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// What identifies a series, as kube's recorder keys it: the type, action and reason, the whole
/// reference to the object (its resourceVersion included) and the related object's, hashed.
fn series_key(event: &Event, regarding: &ObjectReference) -> [u8; 16] {
    let mut key = FieldDigest::new();
    key.str(type_name(event.type_));
    key.str(&event.action);
    key.str(&event.reason);
    for reference in [Some(regarding), event.secondary.as_ref()] {
        let reference = reference.cloned().unwrap_or_default();
        for field in [
            &reference.api_version,
            &reference.kind,
            &reference.namespace,
            &reference.name,
            &reference.uid,
            &reference.resource_version,
            &reference.field_path,
        ] {
            key.opt_str(field.as_deref());
        }
    }
    key.finish()
}

/// What publishing one Event writes.
#[derive(Debug)]
pub enum Write {
    /// A new Event object.
    Create(Box<K8sEvent>),
    /// A patch of the series of the Event `name`.
    Repeat {
        /// The series' first Event.
        name: String,
        /// Its count and time.
        series: EventSeries,
    },
}

/// What the series memory says of an Event.
#[derive(Debug, PartialEq)]
enum Next {
    /// A new Event object.
    New,
    /// The `count`-th of the series of the Event `name`.
    Repeat { name: String, count: i32 },
}

/// The series published within the window: the first Event's name, how many, and when the last.
#[derive(Default)]
struct SeriesMemory {
    by_key: HashMap<[u8; 16], Series>,
}

struct Series {
    name: String,
    count: i32,
    last: Timestamp,
}

impl SeriesMemory {
    /// What publishing the Event `key` at `now` writes.
    fn next(&mut self, key: [u8; 16], now: Timestamp) -> Next {
        self.forget_before(now - SERIES_WINDOW);
        match self.by_key.get(&key) {
            Some(series) => Next::Repeat {
                name: series.name.clone(),
                count: series.count.saturating_add(1),
            },
            None => Next::New,
        }
    }

    /// Notes that the Event `key`, named `name`, was written at `now`.
    fn published(&mut self, key: [u8; 16], name: String, now: Timestamp) {
        let series = self.by_key.entry(key).or_insert(Series {
            name,
            count: 0,
            last: now,
        });
        // The Event itself is the first: its first repeat makes a series of two.
        series.count = series.count.saturating_add(1);
        series.last = now;
    }

    /// Forgets the series last seen before `cutoff`, and gives back the memory of a burst.
    fn forget_before(&mut self, cutoff: Timestamp) {
        self.by_key.retain(|_, series| series.last > cutoff);
        if self.by_key.capacity() > 64 && self.by_key.len() * 4 < self.by_key.capacity() {
            self.by_key.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str) -> Event {
        Event {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            note: Some("a note".to_owned()),
            action: "Reconcile".to_owned(),
            secondary: None,
        }
    }

    fn reference(name: &str, resource_version: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("llamastack.io/v1alpha2".to_owned()),
            kind: Some("LlamaStackDistribution".to_owned()),
            namespace: Some("team".to_owned()),
            name: Some(name.to_owned()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some(resource_version.to_owned()),
            field_path: None,
        }
    }

    fn repeat_of_a(count: i32) -> Next {
        Next::Repeat {
            name: "a.1".to_owned(),
            count,
        }
    }

    #[test]
    fn a_repeat_within_the_window_continues_the_series_of_the_first_event() {
        let mut memory = SeriesMemory::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        let key = series_key(&event("ImagePullBackOff"), &reference("a", "7"));
        assert_eq!(memory.next(key, t0), Next::New);
        memory.published(key, "a.1".to_owned(), t0);
        let later = t0 + SignedDuration::from_mins(1);
        assert_eq!(memory.next(key, later), repeat_of_a(2));
        memory.published(key, "a.1".to_owned(), later);
        let third = later + SignedDuration::from_mins(5);
        assert_eq!(
            memory.next(key, third),
            repeat_of_a(3),
            "the window runs from the last repeat"
        );
        memory.published(key, "a.1".to_owned(), third);
        let after = third + SERIES_WINDOW + SignedDuration::from_secs(1);
        assert_eq!(memory.next(key, after), Next::New, "the window has passed");
    }

    #[test]
    fn a_series_is_keyed_by_type_action_reason_and_the_whole_reference() {
        let base = series_key(&event("ImagePullBackOff"), &reference("a", "7"));
        assert_eq!(
            base,
            series_key(&event("ImagePullBackOff"), &reference("a", "7"))
        );
        let mut other_note = event("ImagePullBackOff");
        other_note.note = Some("another note".to_owned());
        assert_eq!(
            base,
            series_key(&other_note, &reference("a", "7")),
            "the note is not part of the key"
        );
        let mut normal = event("ImagePullBackOff");
        normal.type_ = EventType::Normal;
        for other in [
            series_key(&event("CrashLoopBackOff"), &reference("a", "7")),
            series_key(&event("ImagePullBackOff"), &reference("b", "7")),
            series_key(&event("ImagePullBackOff"), &reference("a", "8")),
            series_key(&normal, &reference("a", "7")),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn after_a_burst_the_memory_of_its_series_is_given_back() {
        let mut memory = SeriesMemory::default();
        let t0 = Timestamp::UNIX_EPOCH + SignedDuration::from_hours(1);
        for i in 0..10_000u32 {
            let key = series_key(&event("Ready"), &reference(&format!("s{i}"), "1"));
            memory.published(key, format!("s{i}.1"), t0);
        }
        let burst = memory.by_key.capacity();
        assert!(burst >= 10_000);
        let key = series_key(&event("Ready"), &reference("late", "1"));
        let _ = memory.next(key, t0 + SERIES_WINDOW + SignedDuration::from_secs(1));
        assert_eq!(memory.by_key.len(), 0, "every series of the burst expired");
        assert!(
            memory.by_key.capacity() < burst / 4,
            "capacity {} after the burst, {burst} during it",
            memory.by_key.capacity()
        );
    }
}
