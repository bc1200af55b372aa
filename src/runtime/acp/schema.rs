//! The Agent Client Protocol's messages as chatwire reads and writes them (protocol version 1): what `initialize`,
//! `session/new`, `session/load` and `session/prompt` answer, the `session/update` notifications, and the agent's
//! permission request. Open sets end in `Other(String)`; an update of a kind this version does not know is
//! `SessionUpdate::Other` (ignored and counted), never an error.

use serde::Deserialize;
use serde_json::Value;

/// The protocol version chatwire speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// `initialize`'s answer: what the agent can do.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitializeResponse {
    pub protocol_version: Option<u64>,
    pub agent_capabilities: AgentCapabilities,
    pub agent_info: Option<AgentInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInfo {
    pub name: String,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    pub load_session: bool,
    pub prompt_capabilities: PromptCapabilities,
    pub session_capabilities: SessionCapabilities,
}

/// Which content blocks a prompt may carry besides text and resource links.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromptCapabilities {
    pub image: bool,
    pub embedded_context: bool,
}

/// Each is offered when present (the protocol says so with an empty object).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionCapabilities {
    pub fork: Option<Value>,
    pub list: Option<Value>,
    pub resume: Option<Value>,
    pub close: Option<Value>,
}

/// `session/new`'s answer (and, without the id, `session/load`'s).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionOpened {
    pub session_id: Option<String>,
}

/// `session/list`'s answer: one page of the agent's own sessions.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionList {
    pub sessions: Vec<ListedSession>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<String>,
}

/// One of the agent's sessions as `session/list` names it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListedSession {
    pub session_id: String,
    pub cwd: String,
    /// Absent for a session the agent has not titled yet.
    pub title: Option<String>,
    /// ISO 8601, e.g. `2026-12-06T12:39:19.492Z`.
    pub updated_at: Option<String>,
}

/// Milliseconds since the Unix epoch of an ISO 8601 / RFC 3339 time (`2026-12-06T12:39:19.492Z`, `…+02:00`);
/// `None` for anything else, which is then shown without a time.
pub fn epoch_ms(time: &str) -> Option<u64> {
    let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse::<i64>().ok()).flatten();
    let (date, rest) = time.split_once(['T', 't', ' '])?;
    let mut date = date.splitn(3, '-');
    let (year, month, day) = (digits(date.next()?)?, digits(date.next()?)?, digits(date.next()?)?);
    let (clock, offset_minutes) = if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (clock, offset) = rest.split_at(at);
        let (hours, minutes) = offset[1..].split_once(':')?;
        let minutes = digits(hours)? * 60 + digits(minutes)?;
        (clock, if offset.starts_with('-') { -minutes } else { minutes })
    };
    let (whole, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut clock = whole.splitn(3, ':');
    let (hour, minute, second) = (digits(clock.next()?)?, digits(clock.next()?)?, digits(clock.next()?)?);
    let millis = if fraction.is_empty() { 0 } else { digits(&format!("{fraction:0<3}")[..3])? };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1000 + millis).ok()
}

/// `session/prompt`'s answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    pub stop_reason: StopReason,
    #[serde(default)]
    pub usage: Option<PromptUsage>,
}

/// The tokens of a whole turn, as opencode and the protocol's draft `usage` report them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub thought_tokens: Option<u64>,
    pub cached_read_tokens: Option<u64>,
    pub cached_write_tokens: Option<u64>,
}

/// Why a prompt turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
    Other(String),
}

impl From<String> for StopReason {
    fn from(text: String) -> StopReason {
        match text.as_str() {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "max_turn_requests" => StopReason::MaxTurnRequests,
            "refusal" => StopReason::Refusal,
            "cancelled" => StopReason::Cancelled,
            _ => StopReason::Other(text),
        }
    }
}

/// One `session/update` notification's `update`.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    AgentMessageChunk(ContentChunk),
    AgentThoughtChunk(ContentChunk),
    /// The user's own words, replayed by `session/load`.
    UserMessageChunk(ContentChunk),
    ToolCall(ToolCallFields),
    ToolCallUpdate(ToolCallFields),
    Plan(Vec<PlanEntry>),
    AvailableCommands(Vec<AvailableCommand>),
    CurrentMode(String),
    /// The session's configuration options (model, mode, thought level …), as the agent sent them.
    ConfigOptions(Value),
    /// How full the context window is: `used` of `size` tokens.
    Usage {
        used: u64,
        size: u64,
    },
    /// A kind chatwire has no place for yet, or does not know; its name.
    Other(String),
}

impl SessionUpdate {
    /// Reads an `update` object; `Err` says which field of a known kind is wrong.
    pub fn parse(update: &Value) -> Result<SessionUpdate, String> {
        let kind = update.get("sessionUpdate").and_then(Value::as_str).ok_or("an update without `sessionUpdate`")?;
        let shape = |error: serde_json::Error| format!("`{kind}`: {error}");
        Ok(match kind {
            "agent_message_chunk" => SessionUpdate::AgentMessageChunk(ContentChunk::parse(update).map_err(shape)?),
            "agent_thought_chunk" => SessionUpdate::AgentThoughtChunk(ContentChunk::parse(update).map_err(shape)?),
            "user_message_chunk" => SessionUpdate::UserMessageChunk(ContentChunk::parse(update).map_err(shape)?),
            "tool_call" => SessionUpdate::ToolCall(ToolCallFields::deserialize(update).map_err(shape)?),
            "tool_call_update" => SessionUpdate::ToolCallUpdate(ToolCallFields::deserialize(update).map_err(shape)?),
            "plan" => {
                let entries = update.get("entries").cloned().unwrap_or(Value::Array(Vec::new()));
                SessionUpdate::Plan(serde_json::from_value(entries).map_err(shape)?)
            }
            "available_commands_update" => {
                let commands = update.get("availableCommands").cloned().unwrap_or(Value::Array(Vec::new()));
                SessionUpdate::AvailableCommands(serde_json::from_value(commands).map_err(shape)?)
            }
            "current_mode_update" => SessionUpdate::CurrentMode(
                update
                    .get("currentModeId")
                    .and_then(Value::as_str)
                    .ok_or("`current_mode_update` without an id")?
                    .into(),
            ),
            "config_option_update" => {
                SessionUpdate::ConfigOptions(update.get("configOptions").cloned().unwrap_or(Value::Null))
            }
            "usage_update" => SessionUpdate::Usage {
                used: update.get("used").and_then(Value::as_u64).unwrap_or(0),
                size: update.get("size").and_then(Value::as_u64).unwrap_or(0),
            },
            other => SessionUpdate::Other(other.to_owned()),
        })
    }
}

/// A piece of a message: `agent_message_chunk`, `agent_thought_chunk`, `user_message_chunk`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentChunk {
    pub content: ContentBlock,
    pub message_id: Option<String>,
}

impl ContentChunk {
    fn parse(update: &Value) -> Result<ContentChunk, serde_json::Error> {
        let content = update.get("content").cloned().unwrap_or(Value::Null);
        let message_id = update.get("messageId").and_then(Value::as_str).map(str::to_owned);
        Ok(ContentChunk { content: ContentBlock::parse(&content), message_id })
    }
}

/// A content block of a message or of a tool call's content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text(String),
    /// An image, by its media type (its bytes are not kept).
    Image {
        mime_type: String,
    },
    /// A link to, or the text of, a resource: its URI.
    Resource {
        uri: String,
        text: Option<String>,
    },
    /// A block type chatwire does not show; its type.
    Other(String),
}

impl ContentBlock {
    pub fn parse(block: &Value) -> ContentBlock {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        match block.get("type").and_then(Value::as_str).unwrap_or_default() {
            "text" => ContentBlock::Text(text("text")),
            "image" => ContentBlock::Image { mime_type: text("mimeType") },
            "resource_link" => ContentBlock::Resource { uri: text("uri"), text: None },
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                ContentBlock::Resource {
                    uri: resource.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    text: resource.get("text").and_then(Value::as_str).map(str::to_owned),
                }
            }
            other => ContentBlock::Other(other.to_owned()),
        }
    }
}

/// The fields of `tool_call` and `tool_call_update`: all but the id may be absent from an update, which then keeps
/// what the call had.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFields {
    pub tool_call_id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub kind: Option<AcpToolKind>,
    #[serde(default)]
    pub status: Option<ToolCallStatus>,
    #[serde(default, deserialize_with = "tool_contents")]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(default)]
    pub locations: Option<Vec<Location>>,
    #[serde(default)]
    pub raw_input: Option<Value>,
    #[serde(default)]
    pub raw_output: Option<Value>,
}

fn tool_contents<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<ToolCallContent>>, D::Error> {
    let items: Option<Vec<Value>> = Option::deserialize(deserializer)?;
    Ok(items.map(|items| items.iter().map(ToolCallContent::parse).collect()))
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum AcpToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other(String),
}

impl From<String> for AcpToolKind {
    fn from(text: String) -> AcpToolKind {
        match text.as_str() {
            "read" => AcpToolKind::Read,
            "edit" => AcpToolKind::Edit,
            "delete" => AcpToolKind::Delete,
            "move" => AcpToolKind::Move,
            "search" => AcpToolKind::Search,
            "execute" => AcpToolKind::Execute,
            "think" => AcpToolKind::Think,
            "fetch" => AcpToolKind::Fetch,
            "switch_mode" => AcpToolKind::SwitchMode,
            _ => AcpToolKind::Other(text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
    Other(String),
}

impl From<String> for ToolCallStatus {
    fn from(text: String) -> ToolCallStatus {
        match text.as_str() {
            "pending" => ToolCallStatus::Pending,
            "in_progress" => ToolCallStatus::InProgress,
            "completed" => ToolCallStatus::Completed,
            "failed" => ToolCallStatus::Failed,
            _ => ToolCallStatus::Other(text),
        }
    }
}

/// One item of a tool call's `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallContent {
    Content(ContentBlock),
    /// A file's change: its path, its text before (none for a new file) and after.
    Diff {
        path: String,
        old_text: Option<String>,
        new_text: String,
    },
    /// Output of a terminal the client runs (`terminal/*`), by its id.
    Terminal {
        terminal_id: String,
    },
    Other(String),
}

impl ToolCallContent {
    fn parse(item: &Value) -> ToolCallContent {
        let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
        match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            "content" => ToolCallContent::Content(ContentBlock::parse(item.get("content").unwrap_or(&Value::Null))),
            "diff" => ToolCallContent::Diff {
                path: text("path").unwrap_or_default(),
                old_text: text("oldText"),
                new_text: text("newText").unwrap_or_default(),
            },
            "terminal" => ToolCallContent::Terminal { terminal_id: text("terminalId").unwrap_or_default() },
            other => ToolCallContent::Other(other.to_owned()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Location {
    pub path: String,
    #[serde(default)]
    pub line: Option<u64>,
}

/// One step of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    /// `pending`, `in_progress` or `completed`; chatwire's checklist reads the same words.
    #[serde(default)]
    pub status: String,
}

/// A slash command the agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AvailableCommand {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Set when the command takes text after its name.
    #[serde(default)]
    pub input: Option<CommandInput>,
}

/// What a command takes after its name (ACP's unstructured input: a hint of what to type).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommandInput {
    #[serde(default)]
    pub hint: Option<String>,
}

/// `session/request_permission`'s params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCallFields,
    /// The wire shape is chatwire's own approval option's: the card offers them as they are.
    pub options: Vec<crate::protocol::ApprovalOption>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_read_as_epoch_milliseconds() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_ms("2026-12-06T12:39:19.492Z"), Some(1_796_560_759_492));
        assert_eq!(epoch_ms("2026-12-06T14:39:19.492+02:00"), Some(1_796_560_759_492));
        assert_eq!(epoch_ms("2000-02-29T00:00:00.5Z"), Some(951_782_400_500));
        assert_eq!(epoch_ms("yesterday"), None);
        assert_eq!(epoch_ms("2026-13-06T12:39:19Z"), None);
    }
    use serde_json::json;

    #[test]
    fn known_updates_are_read_and_unknown_ones_are_named() {
        let chunk = json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}});
        assert_eq!(
            SessionUpdate::parse(&chunk).unwrap(),
            SessionUpdate::AgentMessageChunk(ContentChunk {
                content: ContentBlock::Text("hi".into()),
                message_id: Some("m1".into())
            })
        );
        let unknown = json!({"sessionUpdate": "subagent_update", "whatever": 1});
        assert_eq!(SessionUpdate::parse(&unknown).unwrap(), SessionUpdate::Other("subagent_update".into()));
        assert!(SessionUpdate::parse(&json!({"content": {}})).is_err());
        let bad = json!({"sessionUpdate": "tool_call", "toolCallId": 5});
        assert!(SessionUpdate::parse(&bad).unwrap_err().starts_with("`tool_call`:"));
    }

    #[test]
    fn a_tool_calls_content_keeps_diffs_and_names_what_it_does_not_know() {
        let update = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
        "kind": "edit", "content": [
            {"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"},
            {"type": "content", "content": {"type": "text", "text": "ok"}},
            {"type": "hologram"},
        ]});
        let SessionUpdate::ToolCallUpdate(fields) = SessionUpdate::parse(&update).unwrap() else { panic!() };
        assert_eq!(fields.kind, Some(AcpToolKind::Edit));
        assert_eq!(fields.status, Some(ToolCallStatus::Completed));
        assert_eq!(
            fields.content.unwrap(),
            [
                ToolCallContent::Diff { path: "/w/a.txt".into(), old_text: Some("a\n".into()), new_text: "b\n".into() },
                ToolCallContent::Content(ContentBlock::Text("ok".into())),
                ToolCallContent::Other("hologram".into()),
            ]
        );
    }

    #[test]
    fn open_sets_keep_words_they_do_not_know() {
        let answer: PromptResponse = serde_json::from_value(json!({"stopReason": "tired"})).unwrap();
        assert_eq!(answer.stop_reason, StopReason::Other("tired".into()));
        let option: crate::protocol::ApprovalOption =
            serde_json::from_value(json!({"optionId": "x", "name": "Maybe", "kind": "ask_later"})).unwrap();
        assert_eq!(option.kind, crate::protocol::ApprovalKind::Other("ask_later".into()));
        assert!(!option.kind.allows());
    }
}
