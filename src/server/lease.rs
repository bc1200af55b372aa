//! This instance's hold on the runs it drives: their leases are renewed while they run, a run whose lease was lost
//! is stopped, and runs whose instance died (their lease expired) are ended with one interrupted error.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::chat::Chat;

/// A lease is renewed three times per lease time, so one late renewal never lets it expire.
fn renew_every(ttl: Duration) -> Duration {
    ttl / 3
}

/// How often expired leases are looked for: a fifth of the lease time, within reason.
fn reap_every(ttl: Duration) -> Duration {
    (ttl / 5).clamp(Duration::from_millis(100), Duration::from_secs(3))
}

impl Chat {
    /// Renews this instance's leases; a local run whose lease is gone (another instance took the session over while
    /// this one was paused or cut off) is stopped, since none of its frames could be logged any more.
    async fn renew_leases(&self) {
        let held = match self.store.renew_leases(&self.instance, self.config.lease_ttl).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!("renewing this instance's run leases failed: {error}");
                return;
            }
        };
        for live in self.sessions.all() {
            // A run whose lease was taken after the renewal read the table is not in `held` yet: only the lease
            // itself says whether a run lost it.
            let candidate = live.with_active(|run| match run {
                Some(run) if !held.iter().any(|session| session == live.id()) => Some(run.lease.clone()),
                Some(_) | None => None,
            });
            let Some(lease) = candidate else { continue };
            let holder = match self.store.lease_holder(live.id()).await {
                Ok(holder) => holder,
                Err(error) => {
                    tracing::warn!("reading a lease failed: {error}");
                    continue;
                }
            };
            // No holder: the run just logged its end (which releases the lease), or its session was taken over and
            // ended already; either way its next append, if any, finds out by itself.
            match holder {
                Some(holder) if holder.owner != lease.owner || holder.generation != lease.generation => {}
                Some(_) | None => continue,
            }
            let lost = live.with_active(|run| match run {
                Some(run) if run.lease == lease => {
                    run.control.cancel.cancel();
                    Some(run.run_id.clone())
                }
                Some(_) | None => None,
            });
            if let Some(run_id) = lost {
                tracing::warn!(run = %run_id, session = %live.id(), "this instance lost its lease on a run; stopped it");
            }
        }
    }
}

/// Keeps the leases and ends dead instances' runs for as long as the chat lives.
pub(super) fn spawn(chat: &Arc<Chat>) {
    let weak: Weak<Chat> = Arc::downgrade(chat);
    let ttl = chat.config.lease_ttl;
    tokio::spawn(async move {
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(reap_every(ttl)).await;
            let Some(chat) = weak.upgrade() else { return };
            if renewed.elapsed() >= renew_every(ttl) {
                renewed = tokio::time::Instant::now();
                chat.renew_leases().await;
            }
            if let Err(error) = chat.end_stale_runs().await {
                tracing::warn!("ending the runs of stopped servers failed: {error}");
            }
        }
    });
}
