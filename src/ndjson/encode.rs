//! The frame encoder: writes the frames of a run straight into the output buffer, byte for byte what serde_json
//! writes for them, without its per-key and per-string overhead.
//!
//! Streamed frames are a few dozen bytes each, so serde's machinery (keys escaped like values, a serializer state
//! per struct, a tag serializer wrapping every frame) cost more than the bytes themselves. The rare frames that
//! carry nothing of a run's stream go through serde_json; `tests/suite/ndjson.rs` checks both paths against
//! `serde_json::to_vec` for every kind of frame.

use serde_json::Value;

use crate::protocol::*;

pub(super) fn frame(frame: &ChatFrame, out: &mut Vec<u8>) {
    match frame {
        ChatFrame::Delta(delta) => text_frame(out, b"{\"type\":\"delta\"", delta.seq, &delta.text, &delta.message_id),
        ChatFrame::Thinking(thinking) => {
            text_frame(out, b"{\"type\":\"thinking\"", thinking.seq, &thinking.text, &thinking.message_id)
        }
        ChatFrame::ToolArgsDelta(args) => {
            out.extend_from_slice(b"{\"type\":\"tool_args_delta\"");
            seq(out, args.seq);
            key_str(out, b",\"toolCallId\":", &args.tool_call_id);
            out.extend_from_slice(b",\"path\":[");
            for (i, segment) in args.path.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match segment {
                    PathSegment::Index(index) => number(out, *index),
                    PathSegment::Key(key) => string(out, key),
                }
            }
            out.push(b']');
            key_str(out, b",\"text\":", &args.text);
            optional_str(out, b",\"messageId\":", &args.message_id);
            out.push(b'}');
        }
        ChatFrame::ToolDraft(draft) => {
            out.extend_from_slice(b"{\"type\":\"tool_draft\"");
            seq(out, draft.seq);
            key_str(out, b",\"toolCallId\":", &draft.tool_call_id);
            key_str(out, b",\"toolName\":", &draft.tool_name);
            out.extend_from_slice(b",\"index\":");
            number(out, u64::from(draft.index));
            optional_str(out, b",\"messageId\":", &draft.message_id);
            out.push(b'}');
        }
        ChatFrame::Tool(tool) => {
            out.extend_from_slice(b"{\"type\":\"tool\"");
            seq(out, tool.seq);
            out.extend_from_slice(b",\"part\":");
            tool_part(out, &tool.part);
            optional_str(out, b",\"messageId\":", &tool.message_id);
            out.push(b'}');
        }
        ChatFrame::State(state) => {
            out.extend_from_slice(b"{\"type\":\"state\"");
            seq(out, state.seq);
            out.extend_from_slice(b",\"state\":{\"name\":\"");
            out.extend_from_slice(lifecycle_name(state.state.name));
            out.push(b'"');
            optional_str(out, b",\"message\":", &state.state.message);
            out.extend_from_slice(b"}}");
        }
        ChatFrame::Message(message) => {
            out.extend_from_slice(b"{\"type\":\"message\"");
            seq(out, message.seq);
            out.extend_from_slice(b",\"message\":");
            chat_message(out, &message.message);
            out.push(b'}');
        }
        ChatFrame::Done(done) => {
            out.extend_from_slice(b"{\"type\":\"done\"");
            seq(out, done.seq);
            key_str(out, b",\"runId\":", &done.run_id);
            out.extend_from_slice(b",\"message\":");
            chat_message(out, &done.message);
            key_str(out, b",\"sessionId\":", &done.session_id);
            optional_str(out, b",\"sessionFile\":", &done.session_file);
            if let Some(reset) = done.session_reset {
                out.extend_from_slice(if reset { b",\"sessionReset\":true" } else { b",\"sessionReset\":false" });
            }
            out.push(b'}');
        }
        ChatFrame::Start(_)
        | ChatFrame::Plan(_)
        | ChatFrame::Queue(_)
        | ChatFrame::Branch(_)
        | ChatFrame::Changes(_)
        | ChatFrame::Usage(_)
        | ChatFrame::AgentOptions(_)
        | ChatFrame::Compaction(_)
        | ChatFrame::Retry(_)
        | ChatFrame::Error(_)
        | ChatFrame::Ping => {
            // Writing derived Serialize impls into a Vec cannot fail: there is no I/O and every map key is a string.
            serde_json::to_writer(&mut *out, frame).expect("frames always serialize to JSON");
        }
    }
}

// Inlined so that the key literals are copied as constants, not through a `memcpy` call each.
#[inline(always)]
fn text_frame(out: &mut Vec<u8>, head: &[u8], frame_seq: Option<Seq>, text: &str, message_id: &Option<String>) {
    out.extend_from_slice(head);
    seq(out, frame_seq);
    key_str(out, b",\"text\":", text);
    optional_str(out, b",\"messageId\":", message_id);
    out.push(b'}');
}

#[inline(always)]
fn seq(out: &mut Vec<u8>, seq: Option<Seq>) {
    if let Some(seq) = seq {
        out.extend_from_slice(b",\"seq\":");
        number(out, seq);
    }
}

#[inline(always)]
fn key_str(out: &mut Vec<u8>, key: &[u8], value: &str) {
    out.extend_from_slice(key);
    string(out, value);
}

#[inline(always)]
fn optional_str(out: &mut Vec<u8>, key: &[u8], value: &Option<String>) {
    if let Some(value) = value {
        key_str(out, key, value);
    }
}

fn lifecycle_name(name: LifecycleName) -> &'static [u8] {
    match name {
        LifecycleName::AgentStart => b"agent_start",
        LifecycleName::AgentEnd => b"agent_end",
        LifecycleName::AgentSettled => b"agent_settled",
        LifecycleName::TurnStart => b"turn_start",
        LifecycleName::TurnEnd => b"turn_end",
        LifecycleName::MessageStart => b"message_start",
        LifecycleName::MessageEnd => b"message_end",
    }
}

fn chat_message(out: &mut Vec<u8>, message: &ChatMessage) {
    key_str(out, b"{\"id\":", &message.id);
    out.extend_from_slice(match message.role {
        Role::User => b",\"role\":\"user\",\"parts\":[",
        Role::Assistant => b",\"role\":\"assistant\",\"parts\":[",
    });
    for (i, part) in message.parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match part {
            ChatMessagePart::Text(text) => {
                key_str(out, b"{\"type\":\"text\",\"text\":", &text.text);
                out.push(b'}');
            }
            ChatMessagePart::Thinking(thinking) => {
                key_str(out, b"{\"type\":\"thinking\",\"text\":", &thinking.text);
                out.push(b'}');
            }
            ChatMessagePart::Error(error) => {
                out.extend_from_slice(b"{\"type\":\"error\"");
                optional_str(out, b",\"title\":", &error.title);
                key_str(out, b",\"message\":", &error.message);
                out.push(b'}');
            }
            ChatMessagePart::File(file) => {
                key_str(out, b"{\"type\":\"file\",\"id\":", &file.id);
                key_str(out, b",\"name\":", &file.name);
                key_str(out, b",\"mediaType\":", &file.media_type);
                out.extend_from_slice(b",\"size\":");
                number(out, file.size);
                out.push(b'}');
            }
            ChatMessagePart::Tool(tool) => tool_part(out, tool),
        }
    }
    out.push(b']');
    if let Some(created_at) = message.created_at {
        out.extend_from_slice(b",\"createdAt\":");
        number(out, created_at);
    }
    // One per finished run at most: serde_json's own path is fast enough.
    if let Some(changes) = &message.changes {
        out.extend_from_slice(b",\"changes\":");
        serde_json::to_writer(&mut *out, changes).expect("a changes summary always serializes to JSON");
    }
    if let Some(usage) = &message.usage {
        out.extend_from_slice(b",\"usage\":");
        serde_json::to_writer(&mut *out, usage).expect("a usage summary always serializes to JSON");
    }
    out.push(b'}');
}

/// The same fields, in the same order, as `ChatToolPart`'s `Serialize`.
fn tool_part(out: &mut Vec<u8>, part: &ChatToolPart) {
    out.extend_from_slice(b"{\"type\":\"");
    // `tool-` plus the name, escaped as one string.
    out.extend_from_slice(TOOL_PART_PREFIX.as_bytes());
    string_contents(out, &part.kind.part_name());
    out.push(b'"');
    key_str(out, b",\"toolCallId\":", &part.tool_call_id);
    out.extend_from_slice(b",\"state\":\"");
    out.extend_from_slice(part.state.as_str().as_bytes());
    out.push(b'"');
    if let Some(index) = part.index {
        out.extend_from_slice(b",\"index\":");
        number(out, u64::from(index));
    }
    if let Some(input) = &part.input {
        out.extend_from_slice(b",\"input\":");
        value(out, input);
    }
    if let Some(output) = &part.output {
        out.extend_from_slice(b",\"output\":");
        value(out, output);
    }
    optional_str(out, b",\"errorText\":", &part.error_text);
    if let Some(duration_ms) = part.duration_ms {
        out.extend_from_slice(b",\"durationMs\":");
        number(out, duration_ms);
    }
    // Only while a call waits for approval: serde_json's own path is fast enough.
    if !part.approval_options.is_empty() {
        out.extend_from_slice(b",\"approvalOptions\":");
        serde_json::to_writer(&mut *out, &part.approval_options).expect("approval options always serialize to JSON");
    }
    for (key, extra) in &part.extra {
        if !ChatToolPart::is_field(key) && !extra.is_null() {
            out.push(b',');
            string(out, key);
            out.push(b':');
            value(out, extra);
        }
    }
    out.push(b'}');
}

fn value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => match number.as_u64() {
            Some(unsigned) => self::number(out, unsigned),
            // Negative and fractional numbers are rare in frames; serde_json's own formatting keeps them exact.
            None => serde_json::to_writer(&mut *out, number).expect("numbers always serialize to JSON"),
        },
        Value::String(text) => string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self::value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, key);
                out.push(b':');
                self::value(out, item);
            }
            out.push(b'}');
        }
    }
}

fn number(out: &mut Vec<u8>, mut number: u64) {
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (number % 10) as u8;
        number /= 10;
        if number == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[inline(always)]
fn string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    string_contents(out, text);
    out.push(b'"');
}

/// What serde_json escapes: `"`, `\` and the C0 controls — the common ones by letter, the others as `\u00XX` —
/// and nothing else (DEL, U+2028 and U+2029 stay as they are).
const ESCAPES: [u8; 256] = {
    let mut table = [0_u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// True when one of the eight bytes of `word` needs an escape: below 0x20, `"` or `\`.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    (below_space | has_zero(word ^ (ONES * u64::from(b'"'))) | has_zero(word ^ (ONES * u64::from(b'\\')))) != 0
}

fn string_contents(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    // Most text needs no escape at all: skip it eight bytes at a time.
    let mut clean = 0;
    while let Some(word) = bytes.get(clean..clean + 8) {
        if needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
            break;
        }
        clean += 8;
    }
    let mut copied = 0;
    for (at, &byte) in bytes.iter().enumerate().skip(clean) {
        let escape = ESCAPES[usize::from(byte)];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[copied..at]);
        copied = at + 1;
        match escape {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX_DIGITS[usize::from(byte >> 4)],
                HEX_DIGITS[usize::from(byte & 0xf)],
            ]),
            letter => out.extend_from_slice(&[b'\\', letter]),
        }
    }
    out.extend_from_slice(&bytes[copied..]);
}
