//! Chat messages and their parts (DESIGN.md §2 "Messages and parts"), including the tool-part lifecycle.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::tool::{TodoItem, ToolKind, ToolOutputView, checklist};

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
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
/// or `tool-<Name>` for a tool call.
///
/// The tool variant's tag is open (`tool-` followed by any tool name), which a
/// derived internally tagged enum cannot express, hence the hand-written serde.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessagePart {
    Text(TextPart),
    Thinking(ThinkingPart),
    Error(ErrorPart),
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
            ChatMessagePart::Tool(tool) => tool.part_type().into(),
        }
    }

    pub fn tool(part: ChatToolPart) -> Self {
        ChatMessagePart::Tool(Box::new(part))
    }

    pub fn as_tool(&self) -> Option<&ChatToolPart> {
        match self {
            ChatMessagePart::Tool(tool) => Some(tool),
            ChatMessagePart::Text(_) | ChatMessagePart::Thinking(_) | ChatMessagePart::Error(_) => None,
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

const TOOL_FIELDS: [&str; 8] = ["type", "toolCallId", "state", "index", "input", "output", "errorText", "durationMs"];

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
        let map = Map::<String, Value>::deserialize(deserializer)?;
        tool_part_from_map(map).map_err(D::Error::custom)
    }
}

fn tool_part_from_map(mut map: Map<String, Value>) -> Result<ChatToolPart, String> {
    let part_type = take_string(&mut map, "type")?;
    let Some(tool_name) = part_type.strip_prefix(TOOL_PART_PREFIX) else {
        return Err(format!("field `type`: expected `tool-<Name>`, found `{part_type}`"));
    };
    if tool_name.is_empty() {
        return Err("field `type`: the tool name after `tool-` is empty".into());
    }
    let tool_call_id = take_string(&mut map, "toolCallId")?;
    let state = match take(&mut map, "state") {
        Some(value) => serde_json::from_value::<ToolState>(value).map_err(|e| format!("field `state`: {e}"))?,
        None => return Err("missing field `state`".into()),
    };
    let index = match take_optional(&mut map, "index") {
        Some(value) => Some(serde_json::from_value::<u32>(value).map_err(|e| format!("field `index`: {e}"))?),
        None => None,
    };
    let error_text = match take_optional(&mut map, "errorText") {
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            return Err(format!("field `errorText`: expected a string, found {other}"));
        }
        None => None,
    };
    let duration_ms = match take_optional(&mut map, "durationMs") {
        Some(value) => Some(serde_json::from_value::<u64>(value).map_err(|e| format!("field `durationMs`: {e}"))?),
        None => None,
    };
    Ok(ChatToolPart {
        kind: ToolKind::from_part_name(tool_name),
        tool_call_id,
        state,
        index,
        input: take_optional(&mut map, "input"),
        output: take_optional(&mut map, "output"),
        error_text,
        duration_ms,
        extra: map,
    })
}

/// Removes `key`, keeping the order of the remaining (extra) fields: with `preserve_order` (the server's build) a
/// plain `remove` is a swap-remove that scrambles them, and without it (the browser's) there is no `shift_remove`.
fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let mut taken = None;
    map.retain(|name, value| {
        if name == key {
            taken = Some(std::mem::take(value));
        }
        name != key
    });
    taken
}

fn take_optional(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    take(map, key).filter(|value| !value.is_null())
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match take(map, key) {
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(format!("field `{key}`: expected a string, found {other}")),
        None => Err(format!("missing field `{key}`")),
    }
}

impl Serialize for ChatMessagePart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "lowercase")]
        enum Tagged<'a> {
            Text(&'a TextPart),
            Thinking(&'a ThinkingPart),
            Error(&'a ErrorPart),
        }
        match self {
            ChatMessagePart::Text(part) => Tagged::Text(part).serialize(serializer),
            ChatMessagePart::Thinking(part) => Tagged::Thinking(part).serialize(serializer),
            ChatMessagePart::Error(part) => Tagged::Error(part).serialize(serializer),
            ChatMessagePart::Tool(part) => part.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ChatMessagePart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let part_type = match map.get("type") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                return Err(D::Error::custom(format!("field `type`: expected a string, found {other}")));
            }
            None => return Err(D::Error::missing_field("type")),
        };
        let from_map = |map: Map<String, Value>| Value::Object(map);
        match part_type.as_str() {
            "text" => serde_json::from_value(from_map(map)).map(ChatMessagePart::Text),
            "thinking" => serde_json::from_value(from_map(map)).map(ChatMessagePart::Thinking),
            "error" => serde_json::from_value(from_map(map)).map(ChatMessagePart::Error),
            tool if tool.starts_with(TOOL_PART_PREFIX) => {
                map.insert("type".into(), Value::String(part_type));
                return tool_part_from_map(map)
                    .map(|part| ChatMessagePart::Tool(Box::new(part)))
                    .map_err(D::Error::custom);
            }
            unknown => {
                return Err(D::Error::custom(format!(
                    "field `type`: unknown part type `{unknown}`, expected `text`, `thinking`, `error` or `tool-<Name>`"
                )));
            }
        }
        .map_err(|e| D::Error::custom(format!("{part_type} part: {e}")))
    }
}
