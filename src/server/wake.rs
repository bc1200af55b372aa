//! Other instances' appends reaching this instance's viewers: a wake-up from the store's listener bumps the
//! session's latest `seq`, and a periodic re-read of every watched session covers wake-ups that were lost (a
//! dropped listener connection, a notification the database could not deliver).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::chat::Chat;

/// How often watched sessions are read again without a wake-up: the most a lost wake-up delays a viewer.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

impl Chat {
    /// Reads the latest `seq` of every session someone here is tailing.
    async fn sweep_watched(&self) {
        for live in self.sessions.all().into_iter().filter(|live| live.is_watched()) {
            match self.store.last_seq(live.id()).await {
                Ok(Some(seq)) => live.bump(seq),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!("reading a watched session's log failed: {error}");
                    return;
                }
            }
        }
    }
}

/// Sweeps the watched sessions for as long as the chat lives: every `SWEEP_EVERY`, and at once after the listener
/// reconnected.
pub(super) fn spawn(chat: &Arc<Chat>) {
    let weak: Weak<Chat> = Arc::downgrade(chat);
    tokio::spawn(async move {
        loop {
            let Some(chat) = weak.upgrade() else { return };
            chat.sweep_watched().await;
            let resync = async { chat.resync.notified().await };
            tokio::select! {
                () = resync => {}
                () = tokio::time::sleep(SWEEP_EVERY) => {}
            }
        }
    });
}
