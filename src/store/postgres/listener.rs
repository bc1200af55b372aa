//! The wake-up listener: one connection per instance that `LISTEN`s for appends, posted controls and replies, and
//! comes back after the connection drops. What it hears only says where to look again; the store is the truth.

use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::protocol::Seq;
use crate::store::{Wake, WakeSink};

/// A session's log grew: the payload is `<last seq> <session id>`.
pub const APPENDED: &str = "chatwire_appended";
/// Controls were posted: the payload is the owner's instance id.
pub const CONTROL: &str = "chatwire_control";
/// A control was answered: the payload is its id.
pub const REPLIED: &str = "chatwire_replied";

/// What the listener's connection calls itself in `pg_stat_activity`, so that an operator (and a test) can find it.
pub const APPLICATION_NAME: &str = "chatwire-listener";

const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_MOST: Duration = Duration::from_secs(2);

pub fn appended_payload(session_id: &str, last_seq: Seq) -> String {
    format!("{last_seq} {session_id}")
}

fn wake_of(channel: &str, payload: &str) -> Option<Wake> {
    match channel {
        APPENDED => {
            let (seq, session_id) = payload.split_once(' ')?;
            Some(Wake::Appended { session_id: session_id.to_owned(), last_seq: seq.parse().ok()? })
        }
        CONTROL => Some(Wake::Control { owner: payload.to_owned() }),
        REPLIED => Some(Wake::Replied { id: payload.parse().ok()? }),
        _ => None,
    }
}

/// Listens until `sink` says it is no longer wanted, reconnecting (with a growing pause) whenever the connection
/// ends. Every (re)connection is followed by `Wake::Resync`, because wake-ups sent while it was down are lost.
pub async fn listen(mut config: tokio_postgres::Config, sink: WakeSink) {
    config.application_name(APPLICATION_NAME);
    let mut pause = RECONNECT_FIRST;
    loop {
        match listen_once(&config, &sink).await {
            Ok(Listened::Unwanted) => return,
            Ok(Listened::Dropped) => {
                tracing::warn!("the wake-up listener's database connection ended; reconnecting");
                pause = RECONNECT_FIRST;
            }
            Err(error) => {
                tracing::warn!("the wake-up listener cannot reach the database ({error}); retrying in {pause:?}");
            }
        }
        // Viewers fall back to the periodic re-read meanwhile.
        if !sink(Wake::Resync) {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RECONNECT_MOST);
    }
}

enum Listened {
    Unwanted,
    Dropped,
}

async fn listen_once(config: &tokio_postgres::Config, sink: &WakeSink) -> Result<Listened, tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let (heard, mut hearing) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |context| connection.poll_message(context));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(notification) = message
                && heard.send((notification.channel().to_owned(), notification.payload().to_owned())).is_err()
            {
                return;
            }
        }
    });
    let listening = client.batch_execute(&format!("LISTEN {APPENDED}; LISTEN {CONTROL}; LISTEN {REPLIED}")).await;
    if let Err(error) = listening {
        driver.abort();
        return Err(error);
    }
    if !sink(Wake::Resync) {
        driver.abort();
        return Ok(Listened::Unwanted);
    }
    while let Some((channel, payload)) = hearing.recv().await {
        let Some(wake) = wake_of(&channel, &payload) else {
            tracing::warn!(channel, payload, "ignored a wake-up the listener does not understand");
            continue;
        };
        if !sink(wake) {
            driver.abort();
            return Ok(Listened::Unwanted);
        }
    }
    drop(client);
    Ok(Listened::Dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_back_as_the_wake_ups_they_were_made_for() {
        let appended = appended_payload("a b", 42);
        assert_eq!(wake_of(APPENDED, &appended), Some(Wake::Appended { session_id: "a b".into(), last_seq: 42 }));
        assert_eq!(wake_of(CONTROL, "inst-1"), Some(Wake::Control { owner: "inst-1".into() }));
        assert_eq!(wake_of(REPLIED, "7"), Some(Wake::Replied { id: 7 }));
        assert_eq!(wake_of(REPLIED, "seven"), None);
        assert_eq!(wake_of(APPENDED, "no-space"), None);
        assert_eq!(wake_of("other", "x"), None);
    }
}
