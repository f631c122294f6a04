//! A stack's conditions as the operator's cache keeps them (`controller::slim_cache`): the words
//! this operator writes (type, status, reason) as the values of its own enums, the message and
//! times as they are. A Kubernetes `Condition` is 128 bytes and four strings on the heap; one kept
//! here is 64 bytes, and its message is shared with every condition of the same words
//! ([`SharedText`]). A condition in other words (another writer's) is kept whole.
//! Never serialized: it is the operator's memory, not the API.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::conditions::{ConditionType, Reason};
use super::shared_text::SharedText;

/// The conditions of a status, compact; [`CompactConditions::expand`] gives them back exactly.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CompactConditions(Box<[Compact]>);

#[derive(Clone, Debug, PartialEq)]
struct Compact {
    words: Words,
    message: SharedText,
    last_transition_time: Time,
    observed_generation: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
enum Words {
    Own {
        type_: ConditionType,
        status: Status,
        reason: Reason,
    },
    /// Type, status and reason as written, for words this operator does not write.
    Other(Box<[String; 3]>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    const ALL: [Self; 3] = [Self::True, Self::False, Self::Unknown];

    const fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

fn word<T: Copy>(all: &[T], as_str: impl Fn(T) -> &'static str, text: &str) -> Option<T> {
    all.iter().copied().find(|w| as_str(*w) == text)
}

impl Words {
    fn of(c: &Condition) -> Self {
        let own = (
            word(ConditionType::ALL, ConditionType::as_str, &c.type_),
            word(&Status::ALL, Status::as_str, &c.status),
            word(Reason::ALL, Reason::as_str, &c.reason),
        );
        match own {
            (Some(type_), Some(status), Some(reason)) => Self::Own {
                type_,
                status,
                reason,
            },
            _ => Self::Other(Box::new([
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
            ])),
        }
    }

    fn texts(&self) -> [String; 3] {
        match self {
            Self::Own {
                type_,
                status,
                reason,
            } => [
                type_.as_str().to_owned(),
                status.as_str().to_owned(),
                reason.as_str().to_owned(),
            ],
            Self::Other(texts) => (**texts).clone(),
        }
    }
}

impl CompactConditions {
    /// `conditions`, compact.
    pub fn new(conditions: &[Condition]) -> Self {
        Self(
            conditions
                .iter()
                .map(|c| Compact {
                    words: Words::of(c),
                    message: SharedText::new(&c.message),
                    last_transition_time: c.last_transition_time.clone(),
                    observed_generation: c.observed_generation,
                })
                .collect(),
        )
    }

    /// The conditions as they were given to [`CompactConditions::new`].
    pub fn expand(&self) -> Vec<Condition> {
        self.0
            .iter()
            .map(|c| {
                let [type_, status, reason] = c.words.texts();
                Condition {
                    type_,
                    status,
                    reason,
                    message: c.message.as_str().to_owned(),
                    last_transition_time: c.last_transition_time.clone(),
                    observed_generation: c.observed_generation,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time("2026-12-02T17:12:44Z".parse().unwrap()),
            observed_generation: Some(3),
        }
    }

    #[test]
    fn conditions_come_back_exactly_in_their_order_whoever_wrote_them() {
        let conditions = vec![
            condition("Ready", "True", "Ready", "Deployment is ready"),
            condition("DeploymentReady", "False", "ServerCrashLooping", ""),
            condition("HealthCheck", "Unknown", "HealthCheckFailed", "waiting"),
            // Another writer's words, and ours in a case we never write.
            condition("Synced", "True", "ArgoCD", "synced by Argo CD"),
            condition("Ready", "true", "Ready", "lower case"),
            condition("Ready", "True", "NotAReasonOfOurs", "x"),
        ];
        let compact = CompactConditions::new(&conditions);
        assert_eq!(compact.expand(), conditions);
        let own: Vec<bool> = compact
            .0
            .iter()
            .map(|c| matches!(c.words, Words::Own { .. }))
            .collect();
        assert_eq!(own, [true, true, true, false, false, false]);
    }

    /// The messages most stacks share are held once: a second stack of the same words holds
    /// only its own conditions.
    #[test]
    fn a_second_stack_of_the_same_words_holds_no_copy_of_them() {
        let conditions = [
            condition(
                "Ready",
                "True",
                "Ready",
                "compact test: Deployment is ready",
            ),
            condition(
                "ServiceReady",
                "True",
                "ServiceReady",
                "compact test: ready",
            ),
        ];
        let first = CompactConditions::new(&conditions);
        let (second, heap) = crate::heap_count::held_by(|| CompactConditions::new(&conditions));
        assert_eq!(heap, 2 * std::mem::size_of::<Compact>());
        assert!(first.0[0].message.same_copy(&second.0[0].message));
        assert_eq!(second.expand(), conditions);
    }

    #[test]
    fn a_compact_condition_is_half_the_size() {
        assert!(std::mem::size_of::<Compact>() <= std::mem::size_of::<Condition>() / 2);
    }
}
