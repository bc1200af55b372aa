//! The agent's own conversations (issue 38, item 8): New chat lists those an agent made itself in the directory a
//! new session would work in (`GET /api/agents/{name}/conversations`), and opens one as a new session bound to that
//! agent (`POST /api/sessions { agent, conversation }`): its replay logged as one settled run, its conversation the
//! one the session's runs go on with.

use std::sync::{Arc, Mutex};

use super::chat::{Chat, ChatError, new_id, now_ms};
use crate::mapper::{Clock, EventMapper, IdGenerator, RunMeta};
use crate::protocol::*;
use crate::runtime::seam::{Availability, ConversationRef, ReplayedTurn};

impl Chat {
    /// `GET /api/agents/{name}/conversations`.
    pub async fn agent_conversations(&self, agent: &str) -> Result<AgentConversations, ChatError> {
        let entry = self.offered(agent)?;
        let listed = entry.runtime.list_conversations(self.config.workspace.as_deref()).await?;
        let conversations = listed
            .into_iter()
            .map(|own| AgentConversation { id: own.id, title: own.title, updated_at: own.updated_at, cwd: own.cwd })
            .collect();
        Ok(AgentConversations { conversations })
    }

    /// `POST /api/sessions { agent, conversation }`: a new session on `agent` holding its conversation
    /// `conversation` as the agent replays it. Nothing is created when the agent cannot replay it.
    pub async fn import_conversation(
        self: &Arc<Self>,
        agent: &str,
        conversation: &str,
        title: Option<String>,
    ) -> Result<SessionCreated, ChatError> {
        let entry = self.offered(agent)?.clone();
        if let Availability::Unavailable(why) = entry.runtime.own_conversations(self.config.workspace.as_deref()) {
            return Err(ChatError::Unsupported(why));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let replayed = entry.runtime.replay_conversation(conversation, &self.workspace_of(&id)).await?;
        let title = title.filter(|title| !title.trim().is_empty()).or(replayed.title).unwrap_or_default();
        let messages = imported_messages(&id, &replayed.conversation, replayed.turns, Box::new(now_ms), ids());
        let session = self.create_session_as(&id, &title, &entry.name).await?;
        if let Err(error) = self.log_messages(&id, "import", messages.clone(), Some(replayed.conversation)).await {
            if let Err(cleanup) = self.delete(&id).await {
                tracing::warn!(session = %id, "removing an import that failed: {cleanup}");
            }
            return Err(error);
        }
        let session = self.store.session(&id).await?.unwrap_or(session);
        Ok(SessionCreated { session, messages })
    }
}

fn ids() -> IdGenerator {
    Box::new(new_id)
}

/// The messages of a replayed conversation: each turn's prompt as the user's message, and its answer as the
/// assistant message the mapper builds of its events, as a live run's `done` carries it (each turn is a run of the
/// mapper's). A turn whose answer shows nothing (the agent said nothing chatwire draws) keeps only its prompt.
pub(super) fn imported_messages(
    session_id: &str,
    conversation: &ConversationRef,
    turns: Vec<ReplayedTurn>,
    clock: Clock,
    ids: IdGenerator,
) -> Vec<ChatMessage> {
    // The prompts' messages take their ids and times from the same sources as the mapper's.
    let (clock, ids) = (Arc::new(Mutex::new(clock)), Arc::new(Mutex::new(ids)));
    let (now, id) = (clock.clone(), ids.clone());
    let now = move || (now.lock().expect("never poisoned"))();
    let id = move |kind: &str| (id.lock().expect("never poisoned"))(kind);
    let mut mapper = EventMapper::new(
        session_id,
        Box::new(move || (clock.lock().expect("never poisoned"))()),
        Box::new(move |kind| (ids.lock().expect("never poisoned"))(kind)),
    );
    let session_file = Some(conversation.as_str().to_owned());
    let mut messages = Vec::new();
    for turn in turns {
        if let Some(prompt) = turn.prompt {
            messages.push(ChatMessage {
                id: id("msg"),
                role: Role::User,
                parts: vec![ChatMessagePart::text(prompt)],
                created_at: Some(now()),
                changes: None,
                usage: None,
            });
        }
        if turn.events.is_empty() {
            continue;
        }
        let meta = RunMeta { answers_again: true, session_file: session_file.clone(), ..RunMeta::default() };
        let mut frames = mapper.open_run(meta);
        for event in turn.events {
            frames.extend(mapper.map(event));
        }
        frames.extend(mapper.settle_run(session_file.clone()));
        if let Some(ChatFrame::Done(done)) = frames.last() {
            messages.push(done.message.clone());
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;

    use super::*;
    use crate::runtime::acp::replay::Replay;
    use crate::runtime::acp::schema::SessionUpdate;

    /// opencode's replay of a session on `session/load` (recorded): a question, a thought, text, an `ls` and the
    /// answer.
    fn recorded_replay() -> Vec<ReplayedTurn> {
        let recording = include_str!("../../tests/fixtures/acp/opencode-1.18.33/load.jsonl");
        let lines: Vec<Value> = recording.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        // The updates between the answer to the second `session/list` (id 2) and the answer to `session/load` (id 3).
        let from = lines.iter().position(|line| line["id"] == 2).unwrap() + 1;
        let to = lines.iter().position(|line| line["id"] == 3).unwrap();
        let mut replay = Replay::new(Path::new("/tmp/chatwire-acp-rec/load/ws"));
        for line in &lines[from..to] {
            replay.update(SessionUpdate::parse(&line["params"]["update"]).unwrap());
        }
        replay.finish()
    }

    fn counting() -> (Clock, IdGenerator) {
        let mut count = 0;
        (
            Box::new(|| 1_000),
            Box::new(move |kind| {
                count += 1;
                format!("{kind}-{count}")
            }),
        )
    }

    #[test]
    fn a_replayed_opencode_session_is_the_users_message_and_the_answer_with_its_rows() {
        let (clock, ids) = counting();
        let conversation = ConversationRef::new("ses_1");
        let messages = imported_messages("s1", &conversation, recorded_replay(), clock, ids);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert_eq!((messages[0].role, messages[0].text()), (Role::User, "Which files are here?".to_owned()));
        assert_eq!(messages[0].id, "msg-1");
        let answer = &messages[1];
        assert_eq!(answer.role, Role::Assistant);
        let kinds: Vec<String> = answer
            .parts
            .iter()
            .map(|part| serde_json::to_value(part).unwrap()["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(kinds, ["thinking", "text", "tool-Bash", "text"]);
        let bash = serde_json::to_value(&answer.parts[2]).unwrap();
        assert_eq!(bash["input"]["command"], "ls");
        assert_eq!(bash["state"], "output-available");
        assert_eq!(answer.text(), "Let me list the files.\n\nThere are two files: notes.txt and opencode.json.");
    }

    #[test]
    fn an_unanswered_prompt_is_only_the_users_message() {
        let (clock, ids) = counting();
        let turns = vec![ReplayedTurn { prompt: Some("hello?".into()), events: Vec::new() }];
        let messages = imported_messages("s1", &ConversationRef::new("ses_1"), turns, clock, ids);
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].text(), "hello?");
    }
}
