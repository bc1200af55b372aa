//! Request ids are kept 24 h (DESIGN §4), then forgotten by this periodic task, so the table does not grow forever.

use std::sync::Arc;
use std::time::Duration;

use crate::store::Store;

/// How long a request id is kept: a retry within this long attaches to the run the id made.
pub(super) const REQUEST_ID_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// How often old request ids are looked for.
const EVERY: Duration = Duration::from_secs(10 * 60);

/// Runs until aborted: every ten minutes (and once at start) forgets request ids older than their lifetime by
/// `now` (ms since the epoch).
pub(crate) async fn forget_old_requests(store: Arc<dyn Store>, now: impl Fn() -> u64) {
    let mut ticks = tokio::time::interval(EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let cutoff = now().saturating_sub(REQUEST_ID_LIFETIME.as_millis() as u64);
        match store.forget_requests_before(cutoff).await {
            Ok(0) => {}
            Ok(forgotten) => tracing::debug!(forgotten, "forgot request ids older than 24 h"),
            Err(error) => tracing::warn!("forgetting old request ids failed: {error}"),
        }
    }
}
