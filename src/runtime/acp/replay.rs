//! One of the agent's own conversations, as `session/load` replays it, turned into the turns chatwire logs (pure):
//! each user message opens a turn, and what the agent said after it (thoughts, text, tool calls, plans) is that turn's
//! answer, translated by the same `Turn` as a live prompt, so an imported answer draws exactly as a live one.

use std::path::{Path, PathBuf};

use super::schema::{ContentBlock, ContentChunk, SessionUpdate, StopReason};
use super::translate::Turn;
use crate::runtime::event::AgentEvent;
use crate::runtime::seam::ReplayedTurn;

/// A replay being read, update by update.
#[derive(Debug)]
pub struct Replay {
    workspace: PathBuf,
    turns: Vec<ReplayedTurn>,
    open: Option<OpenTurn>,
}

#[derive(Debug)]
struct OpenTurn {
    prompt: Option<String>,
    /// The agent's id of the user message, when it names one: a chunk of another id is another message.
    prompt_id: Option<String>,
    /// The answer so far; `None` until the agent said something after the prompt.
    answer: Option<(Turn, Vec<AgentEvent>)>,
}

impl Replay {
    /// `workspace`: the directory the conversation works in, which tool paths are shown relative to.
    pub fn new(workspace: &Path) -> Replay {
        Replay { workspace: workspace.to_owned(), turns: Vec::new(), open: None }
    }

    /// Reads the next update of the replay.
    pub fn update(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::UserMessageChunk(chunk) => self.user_chunk(chunk),
            SessionUpdate::AgentMessageChunk(_)
            | SessionUpdate::AgentThoughtChunk(_)
            | SessionUpdate::ToolCall(_)
            | SessionUpdate::ToolCallUpdate(_)
            | SessionUpdate::Plan(_) => {
                let workspace = self.workspace.clone();
                let open = self.open.get_or_insert(OpenTurn { prompt: None, prompt_id: None, answer: None });
                let (turn, events) = open.answer.get_or_insert_with(|| {
                    let (turn, opening) = Turn::start(&workspace, None);
                    (turn, [vec![AgentEvent::AgentStart], opening].concat())
                });
                events.extend(turn.update(update));
            }
            // The commands, mode, options and context of the session as it is now, not parts of the conversation:
            // a turn's answer counts them as a live turn does, and nothing else shows them.
            SessionUpdate::AvailableCommands(_)
            | SessionUpdate::CurrentMode(_)
            | SessionUpdate::ConfigOptions(_)
            | SessionUpdate::Usage { .. }
            | SessionUpdate::Other(_) => {
                if let Some((turn, events)) = self.open.as_mut().and_then(|open| open.answer.as_mut()) {
                    events.extend(turn.update(update));
                }
            }
        }
    }

    /// The conversation's turns, the last one closed as ended (a replay has no turn still going).
    pub fn finish(mut self) -> Vec<ReplayedTurn> {
        self.close();
        self.turns
    }

    fn user_chunk(&mut self, chunk: ContentChunk) {
        // Pieces of one message: text streams on as it is; a file or an image is a part of its own, on its own line.
        let (piece, own_line) = match chunk.content {
            ContentBlock::Text(text) => (text, false),
            ContentBlock::Resource { uri, .. } => (format!("[{uri}]"), true),
            ContentBlock::Image { mime_type } => (format!("[image {mime_type}]"), true),
            ContentBlock::Other(kind) => (format!("[{kind}]"), true),
        };
        let continues = self.open.as_ref().is_some_and(|open| {
            open.answer.is_none() && open.prompt.is_some() && same_message(&open.prompt_id, &chunk.message_id)
        });
        if !continues {
            self.close();
            self.open = Some(OpenTurn { prompt: Some(String::new()), prompt_id: chunk.message_id, answer: None });
        }
        let prompt = self.open.as_mut().and_then(|open| open.prompt.as_mut()).expect("opened just above");
        if own_line && !prompt.is_empty() && !prompt.ends_with('\n') {
            prompt.push('\n');
        }
        prompt.push_str(&piece);
    }

    fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let events = match open.answer {
            Some((turn, mut events)) => {
                let (ending, _) = turn.finish(&StopReason::EndTurn, None);
                events.extend(ending);
                events.push(AgentEvent::AgentEnd);
                events
            }
            None => Vec::new(),
        };
        self.turns.push(ReplayedTurn { prompt: open.prompt, events });
    }
}

/// Whether two chunks are of one message: the same id, or no id to tell them apart.
fn same_message(open: &Option<String>, chunk: &Option<String>) -> bool {
    match (open, chunk) {
        (Some(open), Some(chunk)) => open == chunk,
        (None, _) | (_, None) => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::runtime::event::{AssistantMessageEvent, MessageRole};

    fn parse(update: Value) -> SessionUpdate {
        SessionUpdate::parse(&update).unwrap()
    }

    fn user(text: &str, id: &str) -> SessionUpdate {
        parse(
            json!({"sessionUpdate": "user_message_chunk", "messageId": id, "content": {"type": "text", "text": text}}),
        )
    }

    fn said(text: &str) -> SessionUpdate {
        parse(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}))
    }

    fn texts(events: &[AgentEvent]) -> String {
        events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::MessageUpdate(AssistantMessageEvent::TextDelta { delta, .. }) => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_user_message_opens_a_turn_whose_answer_is_what_the_agent_said_after_it() {
        let mut replay = Replay::new(Path::new("/ws"));
        replay.update(user("Which files", "m1"));
        replay.update(user(" are here?", "m1"));
        replay.update(parse(json!({"sessionUpdate": "resource_link_ignored"})));
        replay.update(said("Two "));
        replay.update(said("files."));
        replay.update(user("Thanks", "m2"));
        replay.update(said("You are welcome."));
        let turns = replay.finish();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].prompt.as_deref(), Some("Which files are here?"));
        assert_eq!(texts(&turns[0].events), "Two files.");
        assert_eq!(turns[0].events.first(), Some(&AgentEvent::AgentStart));
        assert_eq!(turns[0].events.last(), Some(&AgentEvent::AgentEnd));
        assert!(turns[0].events.iter().any(|event| matches!(event, AgentEvent::MessageEnd(message)
            if message.stop_reason == Some(crate::runtime::event::StopReason::Stop))));
        assert_eq!(turns[1].prompt.as_deref(), Some("Thanks"));
        assert_eq!(texts(&turns[1].events), "You are welcome.");
    }

    #[test]
    fn two_user_messages_in_a_row_are_two_turns_the_first_unanswered() {
        let mut replay = Replay::new(Path::new("/ws"));
        replay.update(user("first", "m1"));
        replay.update(user("second", "m2"));
        replay.update(said("Answer."));
        let turns = replay.finish();
        assert_eq!(
            turns.iter().map(|turn| turn.prompt.clone()).collect::<Vec<_>>(),
            [Some("first".to_owned()), Some("second".to_owned())]
        );
        assert!(turns[0].events.is_empty());
        assert_eq!(texts(&turns[1].events), "Answer.");
    }

    #[test]
    fn what_the_agent_said_before_any_user_message_is_a_turn_without_a_prompt() {
        let mut replay = Replay::new(Path::new("/ws"));
        replay.update(parse(json!({"sessionUpdate": "available_commands_update", "availableCommands": []})));
        replay.update(said("Welcome."));
        let turns = replay.finish();
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].prompt, None);
        assert_eq!(texts(&turns[0].events), "Welcome.");
    }

    #[test]
    fn a_file_of_the_user_message_is_a_line_of_its_own() {
        let mut replay = Replay::new(Path::new("/ws"));
        replay.update(user("Look at this", "m1"));
        replay.update(parse(json!({"sessionUpdate": "user_message_chunk", "messageId": "m1",
            "content": {"type": "resource_link", "uri": "file:///ws/a.txt", "name": "a.txt"}})));
        let turns = replay.finish();
        assert_eq!(turns[0].prompt.as_deref(), Some("Look at this\n[file:///ws/a.txt]"));
    }

    #[test]
    fn a_replayed_tool_call_is_a_finished_tool_execution_and_one_left_open_ends_unfinished() {
        let mut replay = Replay::new(Path::new("/ws"));
        replay.update(user("List", "m1"));
        replay
            .update(parse(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute",
            "status": "pending", "rawInput": {"command": "ls", "description": "List files"}})));
        replay.update(parse(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "a.txt\n"}}]})));
        replay
            .update(parse(json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "ls", "kind": "execute",
            "status": "in_progress", "rawInput": {"command": "sleep 9"}})));
        let turns = replay.finish();
        let ends: Vec<(&str, bool)> = turns[0]
            .events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolExecutionEnd { tool_call_id, is_error, tool_name, .. } => {
                    assert_eq!(tool_name, "bash");
                    Some((tool_call_id.as_str(), *is_error))
                }
                _ => None,
            })
            .collect();
        assert_eq!(ends, [("c1", false), ("c2", true)]);
        // No user echo: the server logs the prompt itself.
        assert!(
            !turns[0]
                .events
                .iter()
                .any(|event| matches!(event, AgentEvent::MessageStart(message) if message.role == MessageRole::User))
        );
    }
}
