//! Chat messages and their parts (DESIGN.md §2 "Messages and parts"), including the tool-part lifecycle.

use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::changes::RunChanges;
use super::tool::{TodoItem, ToolKind, ToolOutputView, checklist};
use super::usage::MessageUsage;

/// One message of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    pub id: String,
    pub role: Role,
    pub parts: Vec<ChatMessagePart>,
    /// Milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// What the run this answer finished changed in the workspace's files, from its `changes` frame. Boxed: few
    /// messages have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Box<RunChanges>>,
    /// What the run that wrote this answer used, from its `usage` frames. Boxed, like `changes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<MessageUsage>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl ChatMessage {
    /// The message's text parts, joined by blank lines: what the user wrote, or what an answer says.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                ChatMessagePart::Text(text) => Some(text.text.as_str()),
                ChatMessagePart::Thinking(_)
                | ChatMessagePart::Error(_)
                | ChatMessagePart::File(_)
                | ChatMessagePart::Tool(_) => None,
            })
            .collect();
        texts.join("\n\n")
    }

    /// The files the user attached to this message, in the order they were added.
    pub fn files(&self) -> impl Iterator<Item = &FilePart> {
        self.parts.iter().filter_map(|part| match part {
            ChatMessagePart::File(file) => Some(file),
            ChatMessagePart::Text(_)
            | ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::Tool(_) => None,
        })
    }
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// A part of a message, discriminated by `type`: `text`, `thinking`, `error`,
/// `file` (an attachment of a user message), or `tool-<Name>` for a tool call.
///
/// The tool variant's tag is open (`tool-` followed by any tool name), which a
/// derived internally tagged enum cannot express, hence the hand-written serde.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessagePart {
    Text(TextPart),
    Thinking(ThinkingPart),
    Error(ErrorPart),
    File(FilePart),
    /// Boxed: a tool part is several times the size of the other parts, which are the common case.
    Tool(Box<ChatToolPart>),
}

impl ChatMessagePart {
    pub fn text(text: impl Into<String>) -> Self {
        ChatMessagePart::Text(TextPart { text: text.into() })
    }

    pub fn thinking(text: impl Into<String>) -> Self {
        ChatMessagePart::Thinking(ThinkingPart { text: text.into() })
    }

    /// The part's `type` as it appears on the wire.
    pub fn type_name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ChatMessagePart::Text(_) => "text".into(),
            ChatMessagePart::Thinking(_) => "thinking".into(),
            ChatMessagePart::Error(_) => "error".into(),
            ChatMessagePart::File(_) => "file".into(),
            ChatMessagePart::Tool(tool) => tool.part_type().into(),
        }
    }

    pub fn tool(part: ChatToolPart) -> Self {
        ChatMessagePart::Tool(Box::new(part))
    }

    pub fn as_tool(&self) -> Option<&ChatToolPart> {
        match self {
            ChatMessagePart::Tool(tool) => Some(tool),
            ChatMessagePart::Text(_)
            | ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingPart {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorPart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub message: String,
}

/// A file the user attached: its bytes are kept by the server under `id`, the SHA-256 of the bytes in hex, and
/// served at `/api/attachments/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePart {
    pub id: String,
    /// The file's name as the user's machine called it.
    pub name: String,
    /// What the server found the bytes to be: `image/png`, `image/jpeg`, `image/gif`, `image/webp` or
    /// `text/plain`.
    pub media_type: String,
    /// In bytes.
    pub size: u64,
}

impl FilePart {
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }

    /// Where the page fetches the bytes.
    pub fn url(&self) -> String {
        format!("/api/attachments/{}", self.id)
    }
}

/// Where a tool call is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolState {
    /// Drafted: the model is still writing the arguments.
    InputStreaming,
    /// Arguments complete and validated; the tool is running.
    InputAvailable,
    /// Waiting for the user to approve or deny; the run is paused on it.
    ApprovalRequested,
    OutputAvailable,
    OutputError,
    /// The user denied the call.
    OutputDenied,
}

impl ToolState {
    pub const ALL: [ToolState; 6] = [
        ToolState::InputStreaming,
        ToolState::InputAvailable,
        ToolState::ApprovalRequested,
        ToolState::OutputAvailable,
        ToolState::OutputError,
        ToolState::OutputDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolState::InputStreaming => "input-streaming",
            ToolState::InputAvailable => "input-available",
            ToolState::ApprovalRequested => "approval-requested",
            ToolState::OutputAvailable => "output-available",
            ToolState::OutputError => "output-error",
            ToolState::OutputDenied => "output-denied",
        }
    }

    /// True once the call can no longer change.
    pub fn is_terminal(self) -> bool {
        match self {
            ToolState::OutputAvailable | ToolState::OutputError | ToolState::OutputDenied => true,
            ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalRequested => false,
        }
    }
}

/// One way to answer a call waiting for approval, as the agent offers it (an ACP agent's permission options: allow
/// once, allow always, reject once, reject always). A call without any is answered Approve or Deny.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalOption {
    pub option_id: String,
    /// The button's label, in the agent's words.
    pub name: String,
    pub kind: ApprovalKind,
}

/// What choosing an [`ApprovalOption`] does; the wire words are ACP's (`allow_once`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ApprovalKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    Other(String),
}

impl From<String> for ApprovalKind {
    fn from(text: String) -> ApprovalKind {
        match text.as_str() {
            "allow_once" => ApprovalKind::AllowOnce,
            "allow_always" => ApprovalKind::AllowAlways,
            "reject_once" => ApprovalKind::RejectOnce,
            "reject_always" => ApprovalKind::RejectAlways,
            _ => ApprovalKind::Other(text),
        }
    }
}

impl From<ApprovalKind> for String {
    fn from(kind: ApprovalKind) -> String {
        kind.as_str().to_owned()
    }
}

impl ApprovalKind {
    pub fn as_str(&self) -> &str {
        match self {
            ApprovalKind::AllowOnce => "allow_once",
            ApprovalKind::AllowAlways => "allow_always",
            ApprovalKind::RejectOnce => "reject_once",
            ApprovalKind::RejectAlways => "reject_always",
            ApprovalKind::Other(text) => text,
        }
    }

    /// True when choosing it lets the call run; a kind this version does not know never does.
    pub fn allows(&self) -> bool {
        match self {
            ApprovalKind::AllowOnce | ApprovalKind::AllowAlways => true,
            ApprovalKind::RejectOnce | ApprovalKind::RejectAlways | ApprovalKind::Other(_) => false,
        }
    }
}

/// A tool call inside a message: `{ type: "tool-<Name>", toolCallId, state, index?, input?, output?, errorText?, ...extra }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatToolPart {
    /// What the tool is, parsed from the `<Name>` of `tool-<Name>` (e.g. `Bash` or `mcp__srv__tool`).
    pub kind: ToolKind,
    pub tool_call_id: String,
    pub state: ToolState,
    pub index: Option<u32>,
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub error_text: Option<String>,
    /// How long the call ran, from the start of its execution (or of its question) to its result, as the server
    /// measured it; absent while it runs and for a call that never started (denied, or ended while drafting).
    pub duration_ms: Option<u64>,
    /// The agent's ways to answer the call while it waits for approval (`approvalOptions`); empty when it is
    /// answered Approve or Deny.
    pub approval_options: Vec<ApprovalOption>,
    /// Fields this version does not model, kept so that nothing a runtime sent is lost.
    pub extra: Map<String, Value>,
}

pub const TOOL_PART_PREFIX: &str = "tool-";

/// The `errorText` of a call that was still open when its run ended: the mapper closes it with this, and the UI
/// shows such a row as interrupted rather than failed.
pub const INTERRUPTED_TOOL_ERROR: &str = "the run ended before this tool finished";

impl ChatToolPart {
    /// A part of kind `kind` (a [`ToolKind`], or a part name such as `"Bash"`).
    pub fn new(kind: impl Into<ToolKind>, tool_call_id: impl Into<String>, state: ToolState) -> Self {
        ChatToolPart {
            kind: kind.into(),
            tool_call_id: tool_call_id.into(),
            state,
            index: None,
            input: None,
            output: None,
            error_text: None,
            duration_ms: None,
            approval_options: Vec::new(),
            extra: Map::new(),
        }
    }

    /// True for the keys of the modelled fields, which `extra` never overrides on the wire.
    pub fn is_field(key: &str) -> bool {
        TOOL_FIELDS.contains(&key)
    }

    /// The part's wire `type`, `tool-<Name>`.
    pub fn part_type(&self) -> String {
        format!("{TOOL_PART_PREFIX}{}", self.kind.part_name())
    }

    pub fn kind(&self) -> &ToolKind {
        &self.kind
    }

    /// The `<Name>` of `tool-<Name>`.
    pub fn tool_name(&self) -> std::borrow::Cow<'_, str> {
        self.kind.part_name()
    }

    /// The output as the typed view `T` (e.g. [`super::BashOutput`]); `None` without an output or when it has
    /// another shape.
    pub fn output_as<'a, T: ToolOutputView<'a>>(&'a self) -> Option<T> {
        T::from_output(self.output.as_ref()?)
    }

    /// The chart any tool's output may carry (`output.chart`, a Plotly-JSON subset).
    pub fn chart(&self) -> Option<&Value> {
        self.output.as_ref()?.get("chart")
    }

    /// A string argument, as far as it has been written.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.input.as_ref()?.get(key)?.as_str()
    }

    /// The checklist of a TodoWrite or PlanWrite call: its output's once it ran, its arguments' while the model
    /// writes them; empty for other kinds of call.
    pub fn checklist(&self) -> Vec<TodoItem> {
        if !self.kind.is_checklist() {
            return Vec::new();
        }
        fn todos(value: Option<&Value>) -> Option<&Value> {
            value?.get("todos")
        }
        todos(self.output.as_ref()).or_else(|| todos(self.input.as_ref())).and_then(checklist).unwrap_or_default()
    }
}

const TOOL_FIELDS: [&str; 9] =
    ["type", "toolCallId", "state", "index", "input", "output", "errorText", "durationMs", "approvalOptions"];

impl Serialize for ChatToolPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &self.part_type())?;
        map.serialize_entry("toolCallId", &self.tool_call_id)?;
        map.serialize_entry("state", &self.state)?;
        if let Some(index) = self.index {
            map.serialize_entry("index", &index)?;
        }
        if let Some(input) = &self.input {
            map.serialize_entry("input", input)?;
        }
        if let Some(output) = &self.output {
            map.serialize_entry("output", output)?;
        }
        if let Some(error_text) = &self.error_text {
            map.serialize_entry("errorText", error_text)?;
        }
        if let Some(duration_ms) = self.duration_ms {
            map.serialize_entry("durationMs", &duration_ms)?;
        }
        if !self.approval_options.is_empty() {
            map.serialize_entry("approvalOptions", &self.approval_options)?;
        }
        for (key, value) in &self.extra {
            if !ChatToolPart::is_field(key) && !value.is_null() {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ChatToolPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = deserializer.deserialize_map(PartVisitor)?;
        fields.take_type().and_then(|part_type| fields.into_tool_part(&part_type)).map_err(D::Error::custom)
    }
}

/// The keys a part may have, matched without allocating; any other key is kept by name.
enum PartKey {
    Type,
    Text,
    Title,
    Message,
    ToolCallId,
    State,
    Index,
    Input,
    Output,
    ErrorText,
    DurationMs,
    ApprovalOptions,
    Other(String),
}

impl<'de> Deserialize<'de> for PartKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(PartKeyVisitor)
    }
}

struct PartKeyVisitor;

impl Visitor<'_> for PartKeyVisitor {
    type Value = PartKey;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<PartKey, E> {
        Ok(match key {
            "type" => PartKey::Type,
            "text" => PartKey::Text,
            "title" => PartKey::Title,
            "message" => PartKey::Message,
            "toolCallId" => PartKey::ToolCallId,
            "state" => PartKey::State,
            "index" => PartKey::Index,
            "input" => PartKey::Input,
            "output" => PartKey::Output,
            "errorText" => PartKey::ErrorText,
            "durationMs" => PartKey::DurationMs,
            "approvalOptions" => PartKey::ApprovalOptions,
            other => PartKey::Other(other.to_owned()),
        })
    }
}

/// A part's fields as read, in any order, each value as JSON: which of them count, and what they must be, depends
/// on the part's `type`, which need not come first. Checking the values only at the end keeps every error a
/// part-level one (`message.parts[0]`, `part`), as the field path of the validator's report says.
///
/// `text`, `title` and `message` belong to text, thinking and error parts, and are anybody's extra fields on a tool
/// part; until the `type` says which, they go to `extra`, so a tool part keeps its extra fields in their order.
#[derive(Default)]
struct PartFields {
    part_type: Option<Value>,
    /// The `type` seen so far names a text, thinking or error part.
    plain: bool,
    text: Option<Value>,
    title: Option<Value>,
    message: Option<Value>,
    tool_call_id: Option<Value>,
    state: Option<Value>,
    index: Option<Value>,
    input: Option<Value>,
    output: Option<Value>,
    error_text: Option<Value>,
    duration_ms: Option<Value>,
    approval_options: Option<Value>,
    extra: Map<String, Value>,
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = PartFields;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a message part (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PartFields, A::Error> {
        let mut fields = PartFields::default();
        while let Some(key) = map.next_key::<PartKey>()? {
            let slot = match key {
                PartKey::Type => {
                    let part_type: Value = map.next_value()?;
                    fields.plain = matches!(part_type.as_str(), Some("text" | "thinking" | "error"));
                    fields.part_type = Some(part_type);
                    continue;
                }
                PartKey::Text if fields.plain => &mut fields.text,
                PartKey::Title if fields.plain => &mut fields.title,
                PartKey::Message if fields.plain => &mut fields.message,
                PartKey::Text => {
                    fields.extra.insert("text".to_owned(), map.next_value()?);
                    continue;
                }
                PartKey::Title => {
                    fields.extra.insert("title".to_owned(), map.next_value()?);
                    continue;
                }
                PartKey::Message => {
                    fields.extra.insert("message".to_owned(), map.next_value()?);
                    continue;
                }
                PartKey::ToolCallId => &mut fields.tool_call_id,
                PartKey::State => &mut fields.state,
                PartKey::Index => &mut fields.index,
                PartKey::Input => &mut fields.input,
                PartKey::Output => &mut fields.output,
                PartKey::ErrorText => &mut fields.error_text,
                PartKey::DurationMs => &mut fields.duration_ms,
                PartKey::ApprovalOptions => &mut fields.approval_options,
                PartKey::Other(key) => {
                    fields.extra.insert(key, map.next_value()?);
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(fields)
    }
}

impl PartFields {
    fn take_type(&mut self) -> Result<String, String> {
        match self.part_type.take() {
            Some(Value::String(part_type)) => Ok(part_type),
            Some(other) => Err(format!("field `type`: expected a string, found {other}")),
            None => Err("missing field `type`".into()),
        }
    }

    fn into_part(mut self) -> Result<ChatMessagePart, String> {
        let part_type = self.take_type()?;
        match part_type.as_str() {
            "text" => Ok(ChatMessagePart::Text(TextPart { text: self.plain_field("text", "text")? })),
            "thinking" => Ok(ChatMessagePart::Thinking(ThinkingPart { text: self.plain_field("thinking", "text")? })),
            "error" => {
                let message = self.plain_field("error", "message")?;
                let title = match self.title.take().or_else(|| self.extra.remove("title")) {
                    Some(value) => Option::<String>::deserialize(value).map_err(|e| format!("error part: {e}"))?,
                    None => None,
                };
                Ok(ChatMessagePart::Error(ErrorPart { title, message }))
            }
            "file" => self.into_file_part().map(ChatMessagePart::File),
            tool if tool.starts_with(TOOL_PART_PREFIX) => self.into_tool_part(tool).map(ChatMessagePart::tool),
            unknown => Err(format!(
                "field `type`: unknown part type `{unknown}`, expected `text`, `thinking`, `error`, `file` or \
                 `tool-<Name>`"
            )),
        }
    }

    /// The string field `key` of a text, thinking or error part: where it went if it came before the `type`, its
    /// slot if after.
    fn plain_field(&mut self, part_type: &str, key: &str) -> Result<String, String> {
        let slot = if key == "message" { &mut self.message } else { &mut self.text };
        match slot.take().or_else(|| self.extra.remove(key)) {
            Some(value) => String::deserialize(value).map_err(|e| format!("{part_type} part: {e}")),
            None => Err(format!("{part_type} part: missing field `{key}`")),
        }
    }

    /// A file part's fields are none a tool part has, so they all wait in `extra`.
    fn into_file_part(mut self) -> Result<FilePart, String> {
        let mut string = |key: &str| match self.extra.remove(key) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(format!("file part: field `{key}`: expected a string, found {other}")),
            None => Err(format!("file part: missing field `{key}`")),
        };
        let (id, name, media_type) = (string("id")?, string("name")?, string("mediaType")?);
        let size = match self.extra.remove("size") {
            Some(value) => u64::deserialize(value).map_err(|e| format!("file part: field `size`: {e}"))?,
            None => return Err("file part: missing field `size`".into()),
        };
        Ok(FilePart { id, name, media_type, size })
    }

    fn into_tool_part(self, part_type: &str) -> Result<ChatToolPart, String> {
        let Some(tool_name) = part_type.strip_prefix(TOOL_PART_PREFIX) else {
            return Err(format!("field `type`: expected `tool-<Name>`, found `{part_type}`"));
        };
        if tool_name.is_empty() {
            return Err("field `type`: the tool name after `tool-` is empty".into());
        }
        let kind = ToolKind::from_part_name(tool_name);
        let tool_call_id = match self.tool_call_id {
            Some(Value::String(id)) => id,
            Some(other) => return Err(format!("field `toolCallId`: expected a string, found {other}")),
            None => return Err("missing field `toolCallId`".into()),
        };
        let state = match self.state {
            Some(value) => ToolState::deserialize(value).map_err(|e| format!("field `state`: {e}"))?,
            None => return Err("missing field `state`".into()),
        };
        let index = match non_null(self.index) {
            Some(value) => Some(u32::deserialize(value).map_err(|e| format!("field `index`: {e}"))?),
            None => None,
        };
        let error_text = match non_null(self.error_text) {
            Some(Value::String(text)) => Some(text),
            Some(other) => return Err(format!("field `errorText`: expected a string, found {other}")),
            None => None,
        };
        let duration_ms = match non_null(self.duration_ms) {
            Some(value) => Some(u64::deserialize(value).map_err(|e| format!("field `durationMs`: {e}"))?),
            None => None,
        };
        let approval_options = match non_null(self.approval_options) {
            Some(value) => {
                Vec::<ApprovalOption>::deserialize(value).map_err(|e| format!("field `approvalOptions`: {e}"))?
            }
            None => Vec::new(),
        };
        Ok(ChatToolPart {
            kind,
            tool_call_id,
            state,
            index,
            input: non_null(self.input),
            output: non_null(self.output),
            error_text,
            duration_ms,
            approval_options,
            extra: self.extra,
        })
    }
}

/// An optional field given as `null` is one not given.
fn non_null(value: Option<Value>) -> Option<Value> {
    value.filter(|value| !value.is_null())
}

impl Serialize for ChatMessagePart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "lowercase")]
        enum Tagged<'a> {
            Text(&'a TextPart),
            Thinking(&'a ThinkingPart),
            Error(&'a ErrorPart),
            File(&'a FilePart),
        }
        match self {
            ChatMessagePart::Text(part) => Tagged::Text(part).serialize(serializer),
            ChatMessagePart::Thinking(part) => Tagged::Thinking(part).serialize(serializer),
            ChatMessagePart::Error(part) => Tagged::Error(part).serialize(serializer),
            ChatMessagePart::File(part) => Tagged::File(part).serialize(serializer),
            ChatMessagePart::Tool(part) => part.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ChatMessagePart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartVisitor)?.into_part().map_err(D::Error::custom)
    }
}
