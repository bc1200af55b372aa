//! Invariants every chat stream keeps (DESIGN.md §2): runs open with `start`, end with one terminal frame, and close every tool.

use std::collections::HashMap;

use chatwire::protocol::{ChatFrame, ChatMessage, ChatMessagePart};
use serde_json::Value;

/// The frames of one run: `start` … terminal.
pub fn runs(frames: &[ChatFrame]) -> Vec<&[ChatFrame]> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, frame) in frames.iter().enumerate() {
        match frame {
            ChatFrame::Start(_) => {
                assert!(start.is_none(), "a run started inside another at frame {i}");
                start = Some(i);
            }
            ChatFrame::Done(_) | ChatFrame::Error(_) => {
                let from = start.take().unwrap_or_else(|| panic!("terminal frame {i} outside any run"));
                runs.push(&frames[from..=i]);
            }
            other => {
                let allowed_outside = matches!(other, ChatFrame::Compaction(_) | ChatFrame::Queue(_));
                assert!(start.is_some() || allowed_outside, "{:?} outside any run (frame {i})", other.frame_type());
            }
        }
    }
    assert!(start.is_none(), "the last run never ended");
    runs
}

pub fn assert_no_null_fields(value: &Value, path: &str) {
    match value {
        Value::Null => panic!("null at {path}"),
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, v)| assert_no_null_fields(v, &format!("{path}[{i}]")))
        }
        Value::Object(map) => {
            for (key, v) in map {
                // Tool arguments and results are the tools' own JSON; null is a value there.
                if key != "input" && key != "output" {
                    assert_no_null_fields(v, &format!("{path}.{key}"));
                }
            }
        }
        Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// `start` first, `seq` +1 when present, and per run: the `done` text is the concatenated deltas and every tool ended.
pub fn assert_run_invariants(label: &str, frames: &[ChatFrame]) {
    assert!(matches!(frames.first(), Some(ChatFrame::Start(_))), "{label}: the first frame is not start");
    if frames.iter().all(|f| f.seq().is_some()) {
        for (i, frame) in frames.iter().enumerate() {
            assert_eq!(frame.seq(), Some(i as u64 + 1), "{label}: seq is not +1 at frame {i}");
        }
    }
    for run in runs(frames) {
        let deltas: String = run
            .iter()
            .filter_map(|f| match f {
                ChatFrame::Delta(d) => Some(d.text.as_str()),
                _ => None,
            })
            .collect();
        let mut last_tool_state = HashMap::new();
        for frame in run {
            if let ChatFrame::Tool(tool) = frame {
                last_tool_state.insert(tool.part.tool_call_id.clone(), tool.part.state);
            }
        }
        for (id, state) in &last_tool_state {
            assert!(state.is_terminal(), "{label}: tool {id} ended in {state:?}");
        }
        match run.last().expect("a run has at least start and its terminal frame") {
            ChatFrame::Done(done) => {
                let text = text_parts(&done.message).concat();
                assert_eq!(text, deltas, "{label}: done text is not the concatenated deltas");
                assert!(!text.trim().is_empty() || !last_tool_state.is_empty(), "{label}: empty done");
            }
            ChatFrame::Error(error) => assert!(!error.message.is_empty()),
            _ => unreachable!("runs() ends every run at its terminal frame"),
        }
    }
}

/// The texts of a message's text parts, in order.
pub fn text_parts(message: &ChatMessage) -> Vec<&str> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ChatMessagePart::Text(text) => Some(text.text.as_str()),
            ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_)
            | ChatMessagePart::Tool(_) => None,
        })
        .collect()
}
