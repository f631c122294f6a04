//! Leader election with a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one runs the controller (every replica serves the webhooks).
//!
//! Every write of the Lease carries the resourceVersion that was read, so two candidates can
//! never both win: the API server refuses the second write with a conflict. A leader that cannot
//! renew before its renew deadline stops its controller before another replica may take over at
//! lease expiry, and rejoins the election in the same process.

use std::time::Duration;

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
pub enum Decision {
    /// Nobody holds it (absent, released, or expired): take it.
    Acquire,
    /// This candidate holds it: renew it.
    Renew,
    /// Someone else holds a valid lease.
    Wait,
}

/// Decides from the Lease as read (pure).
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: jiff::Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Acquire;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::Acquire;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    let expired = match &spec.renew_time {
        Some(MicroTime(renewed)) => renewed.as_second().saturating_add(duration) < now.as_second(),
        None => true,
    };
    if expired {
        Decision::Acquire
    } else {
        Decision::Wait
    }
}

/// One attempt to acquire or renew; `true` when this candidate holds the lease afterwards.
pub async fn try_acquire_or_renew(api: &Api<Lease>, config: &LeaseConfig) -> kube::Result<bool> {
    let now = jiff::Timestamp::now();
    let current = api.get_opt(&config.name).await?;
    let decision = decide(
        current.as_ref().and_then(|l| l.spec.as_ref()),
        &config.identity,
        now,
    );
    if decision == Decision::Wait {
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
            Decision::Renew => previous.acquire_time.clone(),
            _ => Some(MicroTime(now)),
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(match decision {
            Decision::Acquire if current.is_some() => transitions + 1,
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
    loop {
        tokio::select! {
            () = acquire(&api, &config) => {}
            () = &mut shutdown => return,
        }
        tracing::info!(lease = %config.name, identity = %config.identity, "became the leader");
        match lead(&api, &config, work()).await {
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
async fn acquire(api: &Api<Lease>, config: &LeaseConfig) {
    loop {
        match try_acquire_or_renew(api, config).await {
            Ok(true) => return,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "leader election: cannot read or write the lease"),
        }
        tokio::time::sleep(config.retry_period).await;
    }
}

/// Runs `work` while renewing the lease; drops it when the lease is lost.
async fn lead(api: &Api<Lease>, config: &LeaseConfig, work: impl Future<Output = ()>) -> Led {
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
        match tokio::time::timeout(left, try_acquire_or_renew(api, config)).await {
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

    fn spec(holder: Option<&str>, renewed_secs_ago: i64) -> LeaseSpec {
        let now = jiff::Timestamp::now();
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(
                now - jiff::SignedDuration::from_secs(renewed_secs_ago),
            )),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn only_a_free_or_expired_lease_is_taken() {
        let now = jiff::Timestamp::now();
        assert_eq!(decide(None, "a", now), Decision::Acquire);
        assert_eq!(
            decide(Some(&spec(Some("a"), 100)), "a", now),
            Decision::Renew
        );
        assert_eq!(decide(Some(&spec(Some("b"), 3)), "a", now), Decision::Wait);
        assert_eq!(
            decide(Some(&spec(Some("b"), 60)), "a", now),
            Decision::Acquire
        );
        assert_eq!(
            decide(Some(&spec(None, 1)), "a", now),
            Decision::Acquire,
            "released"
        );
        let never_renewed = LeaseSpec {
            holder_identity: Some("b".into()),
            ..LeaseSpec::default()
        };
        assert_eq!(decide(Some(&never_renewed), "a", now), Decision::Acquire);
    }
}
