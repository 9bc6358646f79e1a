//! Leader election on a coordination.k8s.io Lease: one replica reconciles, the others wait.
//! The holder renews the Lease; a candidate takes it over only once it has expired, and every
//! update is guarded by the Lease's resourceVersion, so two replicas never both win. A holder
//! that shuts down cleanly releases the Lease, so a waiting replica takes over at its next try
//! instead of waiting for the Lease to expire.

use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::{
    api::coordination::v1::{Lease as LeaseObject, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use tokio::sync::watch;
use tracing::{debug, info, warn};

const LEASE_DURATION: Duration = Duration::from_secs(30);
const RENEW_EVERY: Duration = Duration::from_secs(10);
const RETRY_EVERY: Duration = Duration::from_secs(5);
/// A holder that has not renewed for this long stops reconciling. Shorter than the Lease's
/// duration, so it has stopped before another replica can see the Lease expire and take over.
const RENEW_DEADLINE: Duration = Duration::from_secs(20);
/// How soon a failed renewal is tried again.
const RENEW_RETRY: Duration = Duration::from_secs(2);

pub struct Lease {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
}

/// Proof of leadership; `keep` renews it until shutdown, or fails when it is lost.
pub struct Held {
    lease: Lease,
}

/// Whether a Lease may be taken by `identity` at `now`.
fn may_take(spec: &LeaseSpec, identity: &str, now: Timestamp) -> bool {
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == identity {
        return true;
    }
    let duration = SignedDuration::from_secs(i64::from(
        spec.lease_duration_seconds
            .unwrap_or(LEASE_DURATION.as_secs() as i32),
    ));
    match &spec.renew_time {
        Some(renewed) => now.duration_since(renewed.0) > duration,
        None => true,
    }
}

impl Lease {
    pub fn new(client: Client, namespace: &str, name: &str) -> Lease {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "windlass".into());
        Lease {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: format!("{host}_{}", std::process::id()),
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Waits until this replica holds the Lease; `None` when shut down first.
    pub async fn acquire(
        self,
        mut shutdown: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<Held>> {
        loop {
            if self.try_take().await? {
                return Ok(Some(Held { lease: self }));
            }
            tokio::select! {
                _ = tokio::time::sleep(RETRY_EVERY) => {}
                _ = shutdown.wait_for(|stop| *stop) => return Ok(None),
            }
        }
    }

    /// One attempt to create, renew or take over the Lease. Conflicts mean someone else won.
    async fn try_take(&self) -> anyhow::Result<bool> {
        let now = Timestamp::now();
        let existing = self
            .api
            .get_opt(&self.name)
            .await
            .context("reading the leader-election Lease")?;
        let spec = |transitions: i32, acquired: Option<MicroTime>| LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            acquire_time: acquired.or(Some(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..Default::default()
        };
        let result = match existing {
            None => {
                let lease = LeaseObject {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..Default::default()
                    },
                    spec: Some(spec(0, None)),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                let current = lease.spec.clone().unwrap_or_default();
                if !may_take(&current, &self.identity, now) {
                    debug!(holder = ?current.holder_identity, "lease held by another replica");
                    return Ok(false);
                }
                let ours = current.holder_identity.as_deref() == Some(self.identity.as_str());
                let transitions = current.lease_transitions.unwrap_or(0) + i32::from(!ours);
                lease.spec = Some(spec(
                    transitions,
                    if ours { current.acquire_time } else { None },
                ));
                // replace() sends the resourceVersion we read: a concurrent writer makes it fail.
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e).context("writing the leader-election Lease"),
        }
    }
}

/// How a holder paces its renewals.
#[derive(Clone, Copy, Debug)]
struct Renewal {
    every: Duration,
    retry: Duration,
    deadline: Duration,
}

const RENEWAL: Renewal = Renewal {
    every: RENEW_EVERY,
    retry: RENEW_RETRY,
    deadline: RENEW_DEADLINE,
};

impl Held {
    /// Renews the Lease until shutdown; returns an error when leadership is lost, or when it
    /// could not be renewed within the renew deadline (before the Lease can expire).
    pub async fn keep(&self, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
        keep_renewing(&self.lease.name, RENEWAL, shutdown, || {
            self.lease.try_take()
        })
        .await
    }
}

async fn keep_renewing<F, Fut>(
    name: &str,
    pace: Renewal,
    mut shutdown: watch::Receiver<bool>,
    mut renew: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    // When the Lease was last renewed, measured from before the request that renewed it (the
    // Lease's renewTime is no earlier), so the time left is never overestimated.
    let mut last_renewed = tokio::time::Instant::now();
    let mut failing = false;
    loop {
        let wait = if failing { pace.retry } else { pace.every };
        let left = pace.deadline.saturating_sub(last_renewed.elapsed());
        tokio::select! {
            _ = tokio::time::sleep(wait.min(left)) => {}
            _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
        }
        let left = pace.deadline.saturating_sub(last_renewed.elapsed());
        if left.is_zero() {
            bail!(
                "could not renew the Lease {name} within {:?}",
                pace.deadline
            );
        }
        let attempt = tokio::time::Instant::now();
        // A renewal that hangs must not carry the holder past the deadline either.
        match tokio::time::timeout(left, renew()).await {
            Ok(Ok(true)) => {
                last_renewed = attempt;
                failing = false;
            }
            Ok(Ok(false)) => bail!("another replica holds the Lease {name}"),
            Ok(Err(error)) => {
                debug!(%error, "renewal failed; retrying");
                failing = true;
            }
            Err(_) => bail!(
                "renewing the Lease {name} did not finish within the {:?} deadline",
                pace.deadline
            ),
        }
    }
}

impl Held {
    /// Gives the Lease up, once this replica has stopped reconciling: the holder is cleared and
    /// the duration cut to one second, as client-go does, so a waiting replica takes over at its
    /// next try. Best effort: when it fails, the Lease simply expires.
    pub async fn release(self) {
        let lease = &self.lease;
        let result = async {
            let Some(mut current) = lease.api.get_opt(&lease.name).await? else {
                return Ok(false);
            };
            let mut spec = current.spec.clone().unwrap_or_default();
            if spec.holder_identity.as_deref() != Some(lease.identity.as_str()) {
                return Ok(false);
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            current.spec = Some(spec);
            // Guarded by the resourceVersion just read, like every other write.
            lease
                .api
                .replace(&lease.name, &PostParams::default(), &current)
                .await
                .map(|_| true)
        }
        .await;
        match result {
            Ok(true) => info!(lease = %lease.name, "released the Lease"),
            Ok(false) => debug!("the Lease was no longer ours; nothing to release"),
            Err(error) => warn!(%error, "could not release the Lease; it expires on its own"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Renewal = Renewal {
        every: Duration::from_millis(40),
        retry: Duration::from_millis(10),
        deadline: Duration::from_millis(150),
    };

    #[tokio::test]
    async fn a_holder_that_cannot_renew_stops_at_the_deadline() {
        let (_stop, shutdown) = watch::channel(false);
        let started = tokio::time::Instant::now();
        let mut attempts = 0;
        let result = keep_renewing("l", FAST, shutdown, || {
            attempts += 1;
            async { Err(anyhow::anyhow!("the apiserver does not answer")) }
        })
        .await;
        let stopped = started.elapsed();
        assert!(result.unwrap_err().to_string().contains("within"));
        assert!(attempts >= 2, "failed renewals are retried: {attempts}");
        assert!(stopped >= FAST.deadline, "{stopped:?}");
        assert!(stopped < FAST.deadline * 2, "{stopped:?}");
    }

    #[tokio::test]
    async fn a_renewal_that_hangs_stops_the_holder_at_the_deadline() {
        let (_stop, shutdown) = watch::channel(false);
        let started = tokio::time::Instant::now();
        let result = keep_renewing("l", FAST, shutdown, || {
            std::future::pending::<anyhow::Result<bool>>()
        })
        .await;
        assert!(result.is_err());
        assert!(
            started.elapsed() < FAST.deadline * 2,
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn renewals_that_succeed_keep_the_lease_until_shutdown() {
        let (stop, shutdown) = watch::channel(false);
        let keeping = tokio::spawn(keep_renewing("l", FAST, shutdown, || async { Ok(true) }));
        tokio::time::sleep(FAST.deadline * 3).await;
        assert!(!keeping.is_finished(), "renewed leadership was given up");
        stop.send(true).unwrap();
        keeping.await.unwrap().unwrap();
    }

    #[test]
    fn the_holder_stops_before_the_lease_can_expire() {
        assert!(RENEWAL.deadline < LEASE_DURATION);
        assert!(
            RENEWAL.every * 2 <= RENEWAL.deadline,
            "two renewals fit in the deadline"
        );
    }

    fn spec(holder: &str, renewed_seconds_ago: i64, now: Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(30),
            renew_time: Some(MicroTime(
                now - SignedDuration::from_secs(renewed_seconds_ago),
            )),
            ..Default::default()
        }
    }

    #[test]
    fn a_live_lease_of_another_replica_is_not_taken_but_an_expired_one_is() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        assert!(!may_take(&spec("other", 5, now), "me", now));
        assert!(may_take(&spec("other", 31, now), "me", now));
        assert!(may_take(&spec("me", 5, now), "me", now));
        assert!(may_take(&LeaseSpec::default(), "me", now));
    }
}
