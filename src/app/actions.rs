//! What the chat page does in the browser: load a session, send, stop, answer — talking to the server over HTTP.
//!
//! These run only in the browser (from effects and event handlers); the
//! server renders the page without them, so their bodies exist only in the
//! `hydrate` build.

use leptos::prelude::*;

use crate::chat_state::ChatSnapshot;
use crate::protocol::{QuestionAnswer, SessionSummary};

/// The page's state, and the requests that change it.
#[derive(Clone, Copy)]
pub struct ChatActions {
    pub chat: RwSignal<ChatSnapshot>,
    pub sessions: RwSignal<Vec<SessionSummary>>,
    pub session_id: RwSignal<Option<String>>,
    /// The last request that failed, shown above the composer.
    pub problem: RwSignal<Option<String>>,
}

impl ChatActions {
    pub fn new(session_id: Option<String>) -> Self {
        ChatActions {
            chat: RwSignal::new(ChatSnapshot::default()),
            sessions: RwSignal::new(Vec::new()),
            session_id: RwSignal::new(session_id),
            problem: RwSignal::new(None),
        }
    }

    /// Loads the sessions list and, when the URL names one, its transcript.
    pub fn load(self) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            self.refresh_sessions().await;
            let Some(id) = self.session_id.get_untracked() else { return };
            match crate::client::session_detail(&id).await {
                Ok(detail) => self.chat.set(browser::snapshot_of(detail)),
                Err(error) => self.problem.set(Some(error.to_string())),
            }
        });
    }

    /// Sends a message: starts a run, or steers the running one.
    pub fn send(self, text: String) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(browser::send(self, text));
        #[cfg(not(feature = "hydrate"))]
        let _ = text;
    }

    pub fn stop(self) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let Some(id) = self.session_id.get_untracked() else { return };
            if let Err(error) = crate::client::stop(&id).await {
                self.problem.set(Some(error.to_string()));
            }
        });
    }

    pub fn answer(self, tool_call_id: String, answer: QuestionAnswer) {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let Some(session_id) = self.session_id.get_untracked() else { return };
            let request = crate::protocol::QuestionAnswerRequest { session_id, tool_call_id, answer };
            if let Err(error) = crate::client::answer_question(&request).await {
                self.problem.set(Some(error.to_string()));
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (tool_call_id, answer);
    }

    #[cfg(feature = "hydrate")]
    async fn refresh_sessions(self) {
        match crate::client::list_sessions().await {
            Ok(sessions) => self.sessions.set(sessions),
            Err(error) => self.problem.set(Some(error.to_string())),
        }
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;

    use super::ChatActions;
    use crate::chat_state::{ChatSnapshot, apply};
    use crate::client;
    use crate::protocol::*;

    pub fn snapshot_of(detail: SessionDetail) -> ChatSnapshot {
        ChatSnapshot::from_detail(detail)
    }

    pub async fn send(actions: ChatActions, text: String) {
        actions.problem.set(None);
        let session_id = match actions.session_id.get_untracked() {
            Some(id) => id,
            None => match client::create_session().await {
                Ok(session) => {
                    client::show_session_in_url(&session.session_id);
                    actions.session_id.set(Some(session.session_id.clone()));
                    session.session_id
                }
                Err(error) => {
                    actions.problem.set(Some(error.to_string()));
                    return;
                }
            },
        };
        let steer = actions.chat.with_untracked(ChatSnapshot::is_running).then_some(StreamingBehavior::Steer);
        let request = ChatRequest {
            session_id,
            message: text,
            request_id: Some(client::request_id()),
            mode: None,
            plan_action: None,
            model: None,
            streaming_behavior: steer,
            attachments: None,
        };
        let outcome = client::send(&request, |frames| {
            actions.chat.update(|snapshot| {
                for frame in &frames {
                    apply(snapshot, frame);
                }
            })
        })
        .await;
        if let Err(error) = outcome {
            actions.problem.set(Some(error.to_string()));
        }
        actions.refresh_sessions().await;
    }
}
