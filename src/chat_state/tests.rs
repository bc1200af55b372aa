//! Table-style tests of the reducer's rules.

use serde_json::json;

use super::*;

fn start(seq: Seq, id: &str) -> ChatFrame {
    ChatFrame::Start(StartFrame {
        seq: Some(seq),
        id: id.into(),
        run_id: "run-1".into(),
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
        diagnostics: None,
    })
}

fn user(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Message(MessageFrame {
        seq: Some(seq),
        message: ChatMessage {
            id: format!("u{seq}"),
            role: Role::User,
            parts: vec![ChatMessagePart::text(text)],
            created_at: None,
        },
    })
}

fn delta(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn thinking(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Thinking(ThinkingFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn run(frames: &[ChatFrame]) -> ChatSnapshot {
    let mut snapshot = ChatSnapshot::default();
    for frame in frames {
        apply(&mut snapshot, frame);
    }
    snapshot
}

#[test]
fn prompt_then_streamed_text_makes_user_then_assistant_message() {
    let snapshot = run(&[start(1, "a1"), user(2, "hi"), delta(3, "Hel"), delta(4, "lo")]);
    assert_eq!(snapshot.messages.len(), 2);
    assert_eq!(snapshot.messages[0].role, Role::User);
    assert_eq!(snapshot.messages[1].id, "a1");
    assert_eq!(snapshot.messages[1].parts, vec![ChatMessagePart::text("Hello")]);
    assert!(snapshot.is_running());
}

#[test]
fn text_after_a_tool_opens_a_new_part_and_thinking_stays_separate() {
    let mut part = ChatToolPart::new("Bash", "c1", ToolState::InputAvailable);
    part.input = Some(json!({"command": "ls"}));
    let snapshot = run(&[
        start(1, "a1"),
        thinking(2, "hmm"),
        delta(3, "A"),
        ChatFrame::Tool(ToolFrame { seq: Some(4), part, message_id: None }),
        delta(5, "B"),
    ]);
    let kinds: Vec<_> = snapshot.messages[0].parts.iter().map(|p| p.type_name().into_owned()).collect();
    assert_eq!(kinds, ["thinking", "text", "tool-Bash", "text"]);
}

#[test]
fn args_deltas_grow_the_draft_input_at_their_path() {
    let snapshot = run(&[
        start(1, "a1"),
        ChatFrame::ToolDraft(ToolDraftFrame {
            seq: Some(2),
            tool_call_id: "c1".into(),
            tool_name: "Write".into(),
            index: 0,
            message_id: None,
        }),
        ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
            seq: Some(3),
            tool_call_id: "c1".into(),
            path: vec![PathSegment::Key("content".into())],
            text: "fn ".into(),
            message_id: None,
        }),
        ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
            seq: Some(4),
            tool_call_id: "c1".into(),
            path: vec![PathSegment::Key("content".into())],
            text: "main".into(),
            message_id: None,
        }),
    ]);
    let tool = snapshot.messages[0].parts[0].as_tool().unwrap();
    assert_eq!(tool.state, ToolState::InputStreaming);
    assert_eq!(tool.input, Some(json!({"content": "fn main"})));
}

#[test]
fn already_seen_seq_changes_nothing() {
    let mut snapshot = run(&[start(1, "a1"), delta(2, "x")]);
    let before = snapshot.clone();
    assert_eq!(apply(&mut snapshot, &delta(2, "x")), Applied::AlreadySeen);
    assert_eq!(snapshot, before);
}

#[test]
fn a_resumed_stream_without_start_lands_on_the_named_message() {
    let mut snapshot = run(&[]);
    apply(
        &mut snapshot,
        &ChatFrame::Delta(DeltaFrame { seq: Some(7), text: "par".into(), message_id: Some("a9".into()) }),
    );
    apply(&mut snapshot, &delta(8, "tial"));
    assert_eq!(snapshot.messages.len(), 1);
    assert_eq!(snapshot.messages[0].id, "a9");
    assert_eq!(snapshot.messages[0].parts, vec![ChatMessagePart::text("partial")]);
}

#[test]
fn done_replaces_the_streamed_message_and_ends_the_run() {
    let final_message = ChatMessage {
        id: "a1".into(),
        role: Role::Assistant,
        parts: vec![ChatMessagePart::text("Hello!")],
        created_at: Some(5),
    };
    let snapshot = run(&[
        start(1, "a1"),
        user(2, "hi"),
        delta(3, "Hello"),
        ChatFrame::Done(DoneFrame {
            seq: Some(4),
            run_id: "run-1".into(),
            message: final_message.clone(),
            session_id: "s".into(),
            session_file: None,
            session_reset: None,
        }),
    ]);
    assert_eq!(snapshot.messages[1], final_message);
    assert!(!snapshot.is_running());
    assert_eq!(snapshot.activity, None);
}

#[test]
fn error_frame_becomes_a_visible_error_part_and_ends_the_run() {
    let snapshot = run(&[
        start(1, "a1"),
        ChatFrame::Error(ErrorFrame { seq: Some(2), message: "boom".into(), run_id: None, code: None }),
    ]);
    assert_eq!(
        snapshot.messages[0].parts,
        vec![ChatMessagePart::Error(ErrorPart { title: None, message: "boom".into() })]
    );
    assert_eq!(snapshot.last_error.as_deref(), Some("boom"));
    assert!(!snapshot.is_running());
}

#[test]
fn retry_and_compaction_set_the_activity_line() {
    let snapshot = run(&[
        start(1, "a1"),
        ChatFrame::Retry(RetryFrame::Start(RetryStart {
            seq: Some(2),
            attempt: 2,
            max_attempts: 3,
            delay_ms: 3500,
            error_message: "503".into(),
        })),
    ]);
    assert_eq!(snapshot.activity.as_deref(), Some("Retrying 2/3 in 4 s"));
    let snapshot = run(&[
        start(1, "a1"),
        ChatFrame::Compaction(CompactionFrame::Start(CompactionStart {
            seq: Some(2),
            reason: CompactionReason::Threshold,
        })),
    ]);
    assert_eq!(snapshot.activity.as_deref(), Some("Compacting context…"));
}

#[test]
fn each_model_message_starts_its_own_text_part() {
    let message_start = ChatFrame::State(StateFrame {
        seq: Some(3),
        state: Lifecycle { name: LifecycleName::MessageStart, message: None },
    });
    let snapshot = run(&[start(1, "a1"), delta(2, "first answer."), message_start, delta(4, "second")]);
    assert_eq!(
        snapshot.messages[0].parts,
        vec![ChatMessagePart::text("first answer."), ChatMessagePart::text("second")]
    );
}
