//! Leader election with a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one runs the controller (every replica serves the webhooks).
//!
//! Every write of the Lease carries the resourceVersion that was read, so two candidates can
//! never both win: the API server refuses the second write with a conflict. A leader that cannot
//! renew before its renew deadline stops its controller before another replica may take over at
//! lease expiry, and rejoins the election in the same process.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

/// Timings and identity of one candidate.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (its Pod name).
    pub identity: String,
    /// How long a lease is valid without renewal.
    pub lease_duration: Duration,
    /// A leader that has not renewed for this long stops leading (less than `lease_duration`).
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// The usual timings (15 s lease, 10 s renew deadline, 2 s retry).
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// What a candidate should do with the Lease it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseStep {
    /// Nobody holds it (absent, released, or expired): take it.
    Acquire,
    /// This candidate holds it: renew it.
    Renew,
    /// Someone else holds a valid lease.
    Wait,
}

/// This candidate's view of the Lease: the record it last read and when that record last
/// changed, on this process's monotonic clock. A lease expires when its record has not changed
/// for its duration as this replica measures it, never by comparing the holder's `renewTime`
/// with this replica's wall clock: clocks that disagree between nodes can then not make two
/// leaders, nor keep a dead leader's lease alive (the same rule as client-go's).
#[derive(Clone, Debug, Default)]
pub struct Observation {
    record: Option<LeaseSpec>,
    changed: Option<Instant>,
}

impl Observation {
    /// Notes the Lease as read at `now`; returns how long its record has stood unchanged.
    pub fn see(&mut self, spec: Option<&LeaseSpec>, now: Instant) -> Duration {
        if self.changed.is_none() || self.record.as_ref() != spec {
            self.record = spec.cloned();
            self.changed = Some(now);
        }
        now.saturating_duration_since(self.changed.unwrap_or(now))
    }
}

/// Decides from the Lease as read, and how long its record has stood unchanged (pure).
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, unchanged_for: Duration) -> LeaseStep {
    let Some(spec) = spec else {
        return LeaseStep::Acquire;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == identity {
        return LeaseStep::Renew;
    }
    if holder.is_empty() {
        return LeaseStep::Acquire;
    }
    let duration = u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0);
    let expired = spec.renew_time.is_none() || unchanged_for > Duration::from_secs(duration);
    if expired {
        LeaseStep::Acquire
    } else {
        LeaseStep::Wait
    }
}

/// One attempt to acquire or renew; `true` when this candidate holds the lease afterwards.
pub async fn try_acquire_or_renew(
    api: &Api<Lease>,
    config: &LeaseConfig,
    observation: &mut Observation,
) -> kube::Result<bool> {
    let now = jiff::Timestamp::now();
    let current = api.get_opt(&config.name).await?;
    let spec = current.as_ref().and_then(|l| l.spec.as_ref());
    let unchanged_for = observation.see(spec, Instant::now());
    let decision = decide(spec, &config.identity, unchanged_for);
    if decision == LeaseStep::Wait {
        return Ok(false);
    }
    let previous = current
        .as_ref()
        .and_then(|l| l.spec.clone())
        .unwrap_or_default();
    let transitions = previous.lease_transitions.unwrap_or(0);
    let spec = LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: i32::try_from(config.lease_duration.as_secs()).ok(),
        acquire_time: match decision {
            LeaseStep::Renew => previous.acquire_time.clone(),
            _ => Some(MicroTime(now)),
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(match decision {
            LeaseStep::Acquire if current.is_some() => transitions + 1,
            _ => transitions,
        }),
        ..LeaseSpec::default()
    };
    let result = match current {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            api.create(&PostParams::default(), &lease).await
        }
        Some(mut lease) => {
            // The resourceVersion read above makes this write fail if anyone wrote in between.
            lease.spec = Some(spec);
            api.replace(&config.name, &PostParams::default(), &lease)
                .await
        }
    };
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs a fresh `work()` each time this candidate leads, while renewing the lease. When the lease
/// cannot be renewed before the renew deadline (an API server outage, a lost conflict), the work
/// is dropped at once, so nothing is written after that, and the candidate rejoins the election
/// in the same process: an outage costs a new election, not a process restart. Returns when the
/// work ends on its own (a shutdown; the lease is then released), or when `shutdown` completes
/// while this candidate is not leading.
pub async fn run_while_leading<W, F>(
    client: kube::Client,
    config: LeaseConfig,
    mut work: W,
    shutdown: impl Future<Output = ()>,
) where
    W: FnMut() -> F,
    F: Future<Output = ()>,
{
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut observation = Observation::default();
    loop {
        tokio::select! {
            () = acquire(&api, &config, &mut observation) => {}
            () = &mut shutdown => return,
        }
        tracing::info!(lease = %config.name, identity = %config.identity, "became the leader");
        match lead(&api, &config, &mut observation, work()).await {
            Led::Finished => return,
            Led::Lost(elapsed) => tracing::warn!(
                lease = %config.name,
                ?elapsed,
                "lost the leader lease (not renewed in time): the controller stopped; rejoining the election"
            ),
        }
    }
}

/// How a term as leader ended.
enum Led {
    /// The work ended on its own; the lease was released.
    Finished,
    /// The lease was not renewed for this long.
    Lost(Duration),
}

/// Waits until this candidate holds the lease.
async fn acquire(api: &Api<Lease>, config: &LeaseConfig, observation: &mut Observation) {
    loop {
        match try_acquire_or_renew(api, config, observation).await {
            Ok(true) => return,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "leader election: cannot read or write the lease"),
        }
        tokio::time::sleep(config.retry_period).await;
    }
}

/// Runs `work` while renewing the lease; drops it when the lease is lost.
async fn lead(
    api: &Api<Lease>,
    config: &LeaseConfig,
    observation: &mut Observation,
    work: impl Future<Output = ()>,
) -> Led {
    let mut work = std::pin::pin!(work);
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = &mut work => {
                release(api, config).await;
                return Led::Finished;
            }
            () = tokio::time::sleep(config.retry_period) => {}
        }
        // A renewal that hangs must not outlive the deadline either.
        let left = config.renew_deadline.saturating_sub(renewed.elapsed());
        match tokio::time::timeout(left, try_acquire_or_renew(api, config, observation)).await {
            Ok(Ok(true)) => renewed = tokio::time::Instant::now(),
            Ok(Ok(false)) => return Led::Lost(renewed.elapsed()),
            Ok(Err(error)) => tracing::warn!(%error, "leader election: renewing the lease failed"),
            Err(_) => tracing::warn!("leader election: renewing the lease timed out"),
        }
        if renewed.elapsed() > config.renew_deadline {
            return Led::Lost(renewed.elapsed());
        }
    }
}

/// Gives the lease up on a clean shutdown, so a standby takes over at once instead of at expiry.
pub async fn release(api: &Api<Lease>, config: &LeaseConfig) {
    let Ok(Some(mut lease)) = api.get_opt(&config.name).await else {
        return;
    };
    let Some(spec) = lease.spec.as_mut() else {
        return;
    };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    if let Err(error) = api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        tracing::warn!(%error, "leader election: cannot release the lease");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease held by `holder`, renewed at `renewed` by the holder's own clock.
    fn spec(holder: Option<&str>, renewed: jiff::Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(renewed)),
            ..LeaseSpec::default()
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn only_a_free_or_expired_lease_is_taken() {
        let now = jiff::Timestamp::now();
        assert_eq!(decide(None, "a", secs(0)), LeaseStep::Acquire);
        assert_eq!(
            decide(Some(&spec(Some("a"), now)), "a", secs(100)),
            LeaseStep::Renew
        );
        assert_eq!(
            decide(Some(&spec(Some("b"), now)), "a", secs(3)),
            LeaseStep::Wait
        );
        assert_eq!(
            decide(Some(&spec(Some("b"), now)), "a", secs(16)),
            LeaseStep::Acquire
        );
        assert_eq!(
            decide(Some(&spec(None, now)), "a", secs(0)),
            LeaseStep::Acquire,
            "released"
        );
        let never_renewed = LeaseSpec {
            holder_identity: Some("b".into()),
            ..LeaseSpec::default()
        };
        assert_eq!(
            decide(Some(&never_renewed), "a", secs(0)),
            LeaseStep::Acquire
        );
    }

    /// The candidate's view of a holder that renews every 2 s, read every 2 s by this replica.
    fn watch(renewals: &[jiff::Timestamp], reads_after_last: u64) -> LeaseStep {
        let mut observation = Observation::default();
        let start = Instant::now();
        let mut unchanged_for = Duration::ZERO;
        let mut read = 0;
        for renewed in renewals {
            unchanged_for = observation.see(Some(&spec(Some("b"), *renewed)), start + secs(read));
            read += 2;
        }
        let last = spec(Some("b"), *renewals.last().unwrap());
        for _ in 0..reads_after_last {
            unchanged_for = observation.see(Some(&last), start + secs(read));
            read += 2;
        }
        decide(Some(&last), "a", unchanged_for)
    }

    #[test]
    fn a_holder_whose_clock_is_an_hour_behind_keeps_its_lease_while_it_renews() {
        let behind = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
        let renewals: Vec<_> = (0..10)
            .map(|i| behind + jiff::SignedDuration::from_secs(2 * i))
            .collect();
        // By its renewTime the lease expired an hour ago; it is renewed, so nobody takes it.
        assert_eq!(watch(&renewals, 0), LeaseStep::Wait);
    }

    #[test]
    fn a_dead_holder_whose_clock_is_an_hour_ahead_loses_its_lease_after_the_duration() {
        let ahead = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
        let renewals = [ahead];
        // Its renewTime says the lease is valid for another hour; this replica's clock says the
        // record has not changed for the lease's duration.
        assert_eq!(watch(&renewals, 7), LeaseStep::Wait, "14 s unchanged");
        assert_eq!(watch(&renewals, 8), LeaseStep::Acquire, "16 s unchanged");
    }

    #[test]
    fn a_candidate_that_just_started_waits_a_full_duration_for_a_silent_holder() {
        let mut observation = Observation::default();
        let now = Instant::now();
        let old = spec(
            Some("b"),
            jiff::Timestamp::now() - jiff::SignedDuration::from_hours(5),
        );
        assert_eq!(observation.see(Some(&old), now), Duration::ZERO);
        assert_eq!(
            decide(Some(&old), "a", observation.see(Some(&old), now + secs(10))),
            LeaseStep::Wait
        );
        assert_eq!(
            decide(Some(&old), "a", observation.see(Some(&old), now + secs(16))),
            LeaseStep::Acquire
        );
    }
}
