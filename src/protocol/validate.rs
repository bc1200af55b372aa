//! The strict frame validator: a bad line gets an error naming the line, the field and what was expected.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::frame::{ChatFrame, FrameType, unknown_frame_type, without_position};

/// Why one line is not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{message}", line.map(|n| format!("line {n}: ")).unwrap_or_default(), field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct FrameError {
    /// 1-based line number in the stream, when the line came from one.
    pub line: Option<u64>,
    /// Dotted path of the offending field, when one field is to blame.
    pub field: Option<String>,
    pub message: String,
    /// The start of the offending text, kept for logs.
    pub excerpt: String,
}

const EXCERPT_CHARS: usize = 120;

impl FrameError {
    fn new(field: Option<String>, message: impl Into<String>, line_text: &[u8]) -> Self {
        let text = String::from_utf8_lossy(line_text);
        FrameError { line: None, field, message: message.into(), excerpt: text.chars().take(EXCERPT_CHARS).collect() }
    }

    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }
}

/// Parses one line (without its line ending) into a frame.
///
/// Valid lines take the direct serde path; only a failing line is parsed a
/// second time, field by field, to say exactly what is wrong with it.
pub fn parse_frame(line: &[u8]) -> Result<ChatFrame, FrameError> {
    serde_json::from_slice::<ChatFrame>(line).map_err(|fast_error| diagnose(line, &fast_error))
}

/// [`parse_frame`] for line `line_number` of a stream.
pub fn validate_frame(line_number: u64, line: &[u8]) -> Result<ChatFrame, FrameError> {
    parse_frame(line).map_err(|error| error.at_line(line_number))
}

fn diagnose(line: &[u8], fast_error: &serde_json::Error) -> FrameError {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(syntax) => {
            return FrameError::new(
                None,
                format!("invalid JSON at column {}: {}", syntax.column(), without_position(&syntax)),
                line,
            );
        }
    };
    let Value::Object(object) = &value else {
        return FrameError::new(None, format!("expected a JSON object, found {}", kind_of(&value)), line);
    };
    let frame_type = match object.get("type") {
        None => {
            return FrameError::new(Some("type".into()), "missing; every frame names its `type`", line);
        }
        Some(Value::String(name)) => name,
        Some(other) => {
            return FrameError::new(Some("type".into()), format!("expected a string, found {}", kind_of(other)), line);
        }
    };
    let Some(frame_type) = FrameType::parse(frame_type) else {
        return FrameError::new(Some("type".into()), unknown_frame_type(frame_type), line);
    };
    let payload_error = match frame_type {
        FrameType::Start => payload_error::<super::StartFrame>(&value),
        FrameType::Message => payload_error::<super::MessageFrame>(&value),
        FrameType::Delta => payload_error::<super::DeltaFrame>(&value),
        FrameType::Thinking => payload_error::<super::ThinkingFrame>(&value),
        FrameType::ToolDraft => payload_error::<super::ToolDraftFrame>(&value),
        FrameType::ToolArgsDelta => payload_error::<super::ToolArgsDeltaFrame>(&value),
        FrameType::Tool => payload_error::<super::ToolFrame>(&value),
        FrameType::Plan => payload_error::<super::PlanFrame>(&value),
        FrameType::State => payload_error::<super::StateFrame>(&value),
        FrameType::Queue => payload_error::<super::QueueFrame>(&value),
        FrameType::Branch => payload_error::<super::BranchFrame>(&value),
        FrameType::Changes => payload_error::<super::ChangesFrame>(&value),
        FrameType::Usage => payload_error::<super::UsageFrame>(&value),
        FrameType::AgentOptions => payload_error::<super::AgentOptionsFrame>(&value),
        FrameType::Compaction => phased_error::<super::CompactionStart, super::CompactionEnd>(&value),
        FrameType::Retry => phased_error::<super::RetryStart, super::RetryEnd>(&value),
        FrameType::Done => payload_error::<super::DoneFrame>(&value),
        FrameType::Error => payload_error::<super::ErrorFrame>(&value),
        FrameType::Ping => None,
    };
    match payload_error {
        Some((field, message)) => FrameError::new(field, message, line),
        // The field-by-field pass found nothing: report what serde said, without its position.
        None => FrameError::new(None, without_position(fast_error), line),
    }
}

/// The first error found deserializing `value` as `T`, with the dotted path of the field at fault.
#[cfg(feature = "frame-diagnostics")]
fn payload_error<T: DeserializeOwned>(value: &Value) -> Option<(Option<String>, String)> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => None,
        Err(error) => {
            let path = error.path().to_string();
            let field = (path != ".").then_some(path);
            Some((field, without_position(error.inner())))
        }
    }
}

/// Without field paths (the browser build, which only logs and skips a bad line), serde's own message is the
/// report: a second, path-tracking deserializer of every frame type would be a large part of the WASM.
#[cfg(not(feature = "frame-diagnostics"))]
#[expect(clippy::extra_unused_type_parameters, reason = "called like the diagnosing version")]
fn payload_error<T: DeserializeOwned>(_value: &Value) -> Option<(Option<String>, String)> {
    None
}

fn phased_error<S: DeserializeOwned, E: DeserializeOwned>(value: &Value) -> Option<(Option<String>, String)> {
    match value.get("phase") {
        Some(Value::String(phase)) if phase == "start" => payload_error::<S>(value),
        Some(Value::String(phase)) if phase == "end" => payload_error::<E>(value),
        Some(Value::String(phase)) => {
            Some((Some("phase".into()), format!("unknown phase `{phase}`, expected `start` or `end`")))
        }
        Some(other) => Some((Some("phase".into()), format!("expected a string, found {}", kind_of(other)))),
        None => Some((Some("phase".into()), "missing; expected `start` or `end`".into())),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
