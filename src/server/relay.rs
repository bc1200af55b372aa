//! Controls for a run: Stop, a queued message (steer, follow-up), a question's answer, an approval decision. A
//! control for a run this instance drives applies at once; one for a run another instance owns is posted in the
//! store for that owner, which applies it and answers, so every instance gives the same answers.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::chat::{Chat, ChatError, now_ms};
use super::sessions::ActiveRun;
use crate::runtime::seam::ApprovalDecision;
use crate::store::LeaseHolder;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Control {
    Stop,
    Enqueue {
        message: String,
        steer: bool,
    },
    Decide {
        tool_call_id: String,
        approve: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        option_id: Option<String>,
    },
    Answer {
        tool_call_id: String,
        text: String,
    },
    /// One of the agent's options, set by the run's loop (`RunControl::options`).
    SetOption {
        config_id: String,
        value: String,
    },
}

impl Control {
    /// Applies the control to a run this instance drives; false when the run has nothing it applies to (no such
    /// call waiting, already stopping).
    pub(super) fn apply_to(&self, run: &ActiveRun) -> bool {
        match self {
            Control::Stop if run.control.cancel.is_cancelled() => false,
            Control::Stop => {
                run.control.cancel.cancel();
                true
            }
            Control::Enqueue { message, steer } => run.control.enqueue(message.clone(), *steer, &run.events),
            Control::Decide { tool_call_id, approve, option_id } => {
                run.control.decide(tool_call_id, ApprovalDecision { approve: *approve, option_id: option_id.clone() })
            }
            Control::Answer { tool_call_id, text } => run.control.answer(tool_call_id, text.clone()),
            Control::SetOption { config_id, value } => run
                .control
                .set_option(crate::runtime::seam::OptionSetting { id: config_id.clone(), value: value.clone() }),
        }
    }
}

/// How often a relay waiting for its answer looks again when no wake-up came, and how often an owner looks for
/// controls posted for it (wake-ups make both sooner).
const RELAY_POLL: Duration = Duration::from_millis(100);
const SERVE_POLL: Duration = Duration::from_millis(500);

impl Chat {
    /// Applies `control` to the session's active run, wherever it runs; false when there is none or the run has
    /// nothing it applies to.
    pub(super) async fn control(&self, session_id: &str, control: Control) -> Result<bool, ChatError> {
        let live = self.live(session_id).await?;
        if let Some(applied) = live.with_active(|run| run.map(|run| control.apply_to(run))) {
            return Ok(applied);
        }
        match self.store.lease_holder(session_id).await? {
            Some(holder) if holder.owner == self.instance => Ok(false),
            Some(holder) if holder.expired => match (&control, &holder.run_id) {
                // Its server is gone: Stop ends the run at once instead of waiting for another instance to notice.
                (Control::Stop, Some(run_id)) => self.end_stale_run(session_id, run_id).await,
                _ => Ok(false),
            },
            Some(holder) => self.relay(session_id, &holder, &control).await,
            None => Ok(false),
        }
    }

    /// Posts `control` for the owner of the session's lease and waits for its answer. An owner that does not answer
    /// within a lease time has died or is cut off: its lease expires meanwhile, and the run is ended by whoever
    /// sees that first.
    pub(super) async fn relay(
        &self,
        session_id: &str,
        holder: &LeaseHolder,
        control: &Control,
    ) -> Result<bool, ChatError> {
        let Some(run_id) = &holder.run_id else { return Ok(false) };
        let body = serde_json::to_string(control).expect("a control serializes");
        let mut replies = self.replies.subscribe();
        let id = self.store.post_control(session_id, run_id, &holder.owner, &body, now_ms()).await?;
        let deadline = tokio::time::Instant::now() + self.config.lease_ttl;
        loop {
            replies.borrow_and_update();
            if let Some(reply) = self.store.take_control_reply(id).await? {
                return Ok(reply == "true");
            }
            tokio::select! {
                _ = replies.changed() => continue,
                () = tokio::time::sleep(RELAY_POLL) => {}
            }
            match self.store.lease_holder(session_id).await? {
                Some(now) if now.owner == holder.owner && now.generation == holder.generation && !now.expired => {}
                // The run ended or changed hands before its owner answered: the control concerned a run that is gone.
                Some(_) | None => {
                    return match (control, self.store.take_control_reply(id).await?) {
                        (_, Some(reply)) => Ok(reply == "true"),
                        (Control::Stop, None) => self.control_after_owner_left(session_id, run_id).await,
                        (_, None) => Ok(false),
                    };
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ChatError::OwnerUnreachable);
            }
        }
    }

    /// Stop for a run whose owner let its lease go before answering: ends the run if it still is stale.
    async fn control_after_owner_left(&self, session_id: &str, run_id: &str) -> Result<bool, ChatError> {
        match self.store.lease_holder(session_id).await? {
            Some(holder) if holder.expired && holder.run_id.as_deref() == Some(run_id) => {
                self.end_stale_run(session_id, run_id).await
            }
            Some(_) | None => Ok(false),
        }
    }

    /// Applies and answers the controls other instances posted for this one's runs.
    async fn serve_controls(&self) -> Result<(), ChatError> {
        for posted in self.store.pending_controls(&self.instance).await? {
            let applied = match serde_json::from_str::<Control>(&posted.body) {
                Ok(control) => self.sessions.known(&posted.session_id).is_some_and(|live| {
                    live.with_active(|run| run.is_some_and(|run| run.run_id == posted.run_id && control.apply_to(run)))
                }),
                Err(error) => {
                    tracing::warn!(id = posted.id, "a posted control does not parse ({error}); answered false");
                    false
                }
            };
            self.store.answer_control(posted.id, if applied { "true" } else { "false" }).await?;
        }
        Ok(())
    }
}

/// Serves posted controls for as long as the chat lives: when woken, and every `SERVE_POLL` for a missed wake-up.
pub(super) fn spawn(chat: &Arc<Chat>) {
    let weak: Weak<Chat> = Arc::downgrade(chat);
    tokio::spawn(async move {
        loop {
            let Some(chat) = weak.upgrade() else { return };
            if let Err(error) = chat.serve_controls().await {
                tracing::warn!("serving posted controls failed: {error}");
            }
            let posted = async { chat.controls_posted.notified().await };
            tokio::select! {
                () = posted => {}
                () = tokio::time::sleep(SERVE_POLL) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::Control;

    #[test]
    fn controls_travel_as_tagged_json() {
        let control = Control::Decide { tool_call_id: "call-1".into(), approve: true, option_id: None };
        let json = serde_json::to_string(&control).unwrap();
        assert_eq!(json, r#"{"type":"decide","toolCallId":"call-1","approve":true}"#);
        assert_eq!(serde_json::from_str::<Control>(&json).unwrap(), control);
        let chosen = Control::Decide { tool_call_id: "call-1".into(), approve: true, option_id: Some("always".into()) };
        let json = serde_json::to_string(&chosen).unwrap();
        assert_eq!(json, r#"{"type":"decide","toolCallId":"call-1","approve":true,"optionId":"always"}"#);
        assert_eq!(serde_json::from_str::<Control>(&json).unwrap(), chosen);
        assert_eq!(serde_json::to_string(&Control::Stop).unwrap(), r#"{"type":"stop"}"#);
    }
}
