//! The wire contract: one example of every frame, part and state round-trips byte for byte; bad lines get precise errors.

use std::collections::HashSet;

use crate::support::golden::{assert_golden, golden_path};
use chatwire::ndjson::encode_frame;
use chatwire::protocol::*;
use proptest::prelude::*;
use serde_json::json;

fn tool(name: &str, call_id: &str, state: ToolState) -> ChatToolPart {
    ChatToolPart::new(name, call_id, state)
}

/// A run's changed files: one of each status, and a binary one.
fn changed_files() -> Vec<ChangedFile> {
    let file = |path: &str, status, additions, deletions, binary| ChangedFile {
        path: path.into(),
        status,
        additions,
        deletions,
        binary,
    };
    vec![
        file("src/new.rs", ChangeStatus::Added, 2, 0, false),
        file("README.md", ChangeStatus::Modified, 1, 1, false),
        file("old.txt", ChangeStatus::Deleted, 0, 0, false),
        file("logo.png", ChangeStatus::Modified, 0, 0, true),
    ]
}

/// One example of every frame type, part kind, tool state, lifecycle name and phase.
fn every_kind_of_frame() -> Vec<ChatFrame> {
    let user = ChatMessage {
        id: "msg-user-1".into(),
        role: Role::User,
        parts: vec![
            ChatMessagePart::text("List the files, then fix the typo in README.md"),
            ChatMessagePart::File(FilePart {
                id: "9f2c4b7d1e0a3f5c8b6d2e4a7c9f1b3d5e7a9c2b4d6f8e0a1c3b5d7f9e2a4c6b".into(),
                name: "screenshot.png".into(),
                media_type: "image/png".into(),
                size: 48_213,
            }),
        ],
        created_at: Some(1_764_470_000_000),
        changes: None,
        usage: None,
    };
    let mut bash_done = tool("Bash", "call-1", ToolState::OutputAvailable);
    bash_done.index = Some(0);
    bash_done.input = Some(json!({"command": "ls -la"}));
    bash_done.output = Some(json!({"output": "README.md\nsrc\n", "exitCode": 0}));
    let mut edit_error = tool("Edit", "call-2", ToolState::OutputError);
    edit_error.input = Some(json!({"path": "README.md", "oldText": "teh", "newText": "the"}));
    edit_error.error_text = Some("oldText not found in README.md".into());
    let mut mcp = tool("mcp__github__search_issues", "call-3", ToolState::OutputDenied);
    mcp.extra.insert("title".into(), json!("Search issues"));
    let assistant = ChatMessage {
        id: "msg-asst-1".into(),
        role: Role::Assistant,
        parts: vec![
            ChatMessagePart::thinking("The user wants a listing first."),
            ChatMessagePart::tool(bash_done.clone()),
            ChatMessagePart::text("Fixed the typo.\n\n| file | change |\n|---|---|\n| README.md | teh → the |"),
            ChatMessagePart::tool(edit_error),
            ChatMessagePart::tool(mcp),
            ChatMessagePart::Error(ErrorPart {
                title: Some("Provider error".into()),
                message: "429 Too Many Requests".into(),
            }),
            ChatMessagePart::Error(ErrorPart { title: None, message: "tool output truncated".into() }),
        ],
        created_at: None,
        changes: None,
        usage: None,
    };
    let mut draft = tool("Write", "call-4", ToolState::InputStreaming);
    draft.index = Some(1);
    draft.input = Some(json!({"path": "src/main.rs", "content": "fn main() {\n"}));
    let mut running = tool("TodoWrite", "call-5", ToolState::InputAvailable);
    running.input = Some(json!({"todos": [{"text": "write tests", "status": "in_progress"}]}));
    let mut approval = tool("Bash", "call-6", ToolState::ApprovalRequested);
    approval.input = Some(json!({"command": "rm -rf target"}));
    let plan_state = ChatPlanState {
        mode: AgentMode::Plan,
        executing: true,
        pending_decision: false,
        completed: 1,
        total: 2,
        todos: vec![
            PlanTodo { step: 1, text: "Read the code".into(), completed: true },
            PlanTodo { step: 2, text: "Write the fix".into(), completed: false },
        ],
        message: Some("Executing step 2".into()),
    };
    let mut frames = vec![
        ChatFrame::Start(StartFrame {
            seq: Some(1),
            id: "msg-asst-1".into(),
            run_id: "run-1".into(),
            session_id: "sess-1".into(),
            session_file: Some("/home/user/.pi/sessions/sess-1.jsonl".into()),
            session_reset: Some(false),
            diagnostics: Some(vec!["model: scripted".into()]),
            branch: None,
        }),
        ChatFrame::Start(StartFrame {
            seq: Some(2),
            id: "msg-asst-2".into(),
            run_id: "run-2".into(),
            session_id: "sess-1".into(),
            session_file: None,
            session_reset: None,
            diagnostics: None,
            branch: Some(BranchPoint { parent_id: Some("msg-user-0".into()) }),
        }),
        ChatFrame::Message(MessageFrame { seq: Some(3), message: user }),
        ChatFrame::Delta(DeltaFrame { seq: Some(4), text: "Hello, \u{2028}wörld 😀\n".into(), message_id: None }),
        ChatFrame::Delta(DeltaFrame { seq: Some(5), text: "more".into(), message_id: Some("msg-asst-1".into()) }),
        ChatFrame::Thinking(ThinkingFrame { seq: Some(6), text: "Let me look".into(), message_id: None }),
        ChatFrame::ToolDraft(ToolDraftFrame {
            seq: Some(7),
            tool_call_id: "call-4".into(),
            tool_name: "Write".into(),
            index: 1,
            message_id: Some("msg-asst-1".into()),
        }),
        ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
            seq: Some(8),
            tool_call_id: "call-4".into(),
            path: vec![PathSegment::Key("content".into())].into(),
            text: "fn main() {\n\t\"quoted\"".into(),
            message_id: None,
        }),
        ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
            seq: Some(9),
            tool_call_id: "call-5".into(),
            path: vec![PathSegment::Key("todos".into()), PathSegment::Index(0), PathSegment::Key("text".into())].into(),
            text: "write".into(),
            message_id: None,
        }),
        ChatFrame::Tool(ToolFrame { seq: Some(10), part: Box::new(draft), message_id: None }),
        ChatFrame::Tool(ToolFrame { seq: Some(11), part: Box::new(running), message_id: Some("msg-asst-1".into()) }),
        ChatFrame::Tool(ToolFrame { seq: Some(12), part: Box::new(approval), message_id: None }),
        ChatFrame::Tool(ToolFrame { seq: Some(13), part: Box::new(bash_done), message_id: None }),
        ChatFrame::Plan(PlanFrame {
            seq: Some(14),
            mode: AgentMode::Plan,
            executing: true,
            completed: 1,
            total: 2,
            message: Some("Executing step 2".into()),
            state: plan_state.clone(),
        }),
        ChatFrame::Plan(PlanFrame {
            seq: Some(15),
            mode: AgentMode::Agent,
            executing: false,
            completed: 0,
            total: 0,
            message: None,
            state: ChatPlanState { mode: AgentMode::Agent, pending_decision: true, message: None, ..plan_state },
        }),
        ChatFrame::Branch(BranchFrame { seq: Some(16), message_id: "msg-asst-1".into() }),
    ];
    let mut seq = 16;
    for (i, name) in LifecycleName::ALL.into_iter().enumerate() {
        seq += 1;
        let message = (i == 0).then(|| "Working".to_string());
        frames.push(ChatFrame::State(StateFrame { seq: Some(seq), state: Lifecycle { name, message } }));
    }
    let more = [
        ChatFrame::Queue(QueueFrame {
            seq: None,
            steering: vec!["use tabs".into()],
            follow_up: vec!["then run the tests".into(), "and commit".into()],
        }),
        ChatFrame::Queue(QueueFrame { seq: None, steering: vec![], follow_up: vec![] }),
        ChatFrame::Compaction(CompactionFrame::Start(CompactionStart { seq: None, reason: CompactionReason::Manual })),
        ChatFrame::Compaction(CompactionFrame::Start(CompactionStart {
            seq: None,
            reason: CompactionReason::Threshold,
        })),
        ChatFrame::Compaction(CompactionFrame::End(CompactionEnd {
            seq: None,
            reason: CompactionReason::Overflow,
            aborted: false,
            will_retry: true,
            error_message: None,
        })),
        ChatFrame::Compaction(CompactionFrame::End(CompactionEnd {
            seq: None,
            reason: CompactionReason::Other("idle".into()),
            aborted: true,
            will_retry: false,
            error_message: Some("Already compacted".into()),
        })),
        ChatFrame::Retry(RetryFrame::Start(RetryStart {
            seq: None,
            attempt: 2,
            max_attempts: 3,
            delay_ms: 4000,
            error_message: "503 Service Unavailable".into(),
        })),
        ChatFrame::Retry(RetryFrame::End(RetryEnd { seq: None, success: true, attempt: 2, final_error: None })),
        ChatFrame::Retry(RetryFrame::End(RetryEnd {
            seq: None,
            success: false,
            attempt: 3,
            final_error: Some("503 Service Unavailable".into()),
        })),
        ChatFrame::Usage(UsageFrame {
            seq: None,
            run_id: Some("run-1".into()),
            message_id: Some("msg-asst-2".into()),
            usage: TokenUsage { input: 1200, output: 40, cache_read: 800, cache_write: 0, cost: Some(0.0015) },
            context: Some(ContextUse { used: 2040, window: Some(128_000), compact_at: Some(111_616) }),
        }),
        ChatFrame::AgentOptions(AgentOptionsFrame {
            seq: None,
            commands: vec![AgentCommand {
                name: "review".into(),
                description: "review changes".into(),
                hint: Some("commit|branch".into()),
            }],
            options: vec![AgentOption {
                id: "model".into(),
                name: "Model".into(),
                description: None,
                category: OptionCategory::Model,
                current: "fake/fake-model".into(),
                choices: vec![OptionChoice {
                    value: "fake/fake-model".into(),
                    name: "Fake Model".into(),
                    description: None,
                }],
            }],
        }),
        ChatFrame::Changes(ChangesFrame {
            seq: None,
            checkpoint: "msg-user-2".into(),
            files: changed_files(),
            additions: 3,
            deletions: 1,
            message_id: Some("msg-asst-2".into()),
        }),
        ChatFrame::Done(DoneFrame {
            seq: None,
            run_id: "run-1".into(),
            message: assistant,
            session_id: "sess-1".into(),
            session_file: Some("/home/user/.pi/sessions/sess-1.jsonl".into()),
            session_reset: Some(true),
        }),
        ChatFrame::Done(DoneFrame {
            seq: None,
            run_id: "run-2".into(),
            message: ChatMessage {
                id: "msg-asst-2".into(),
                role: Role::Assistant,
                parts: vec![],
                created_at: None,
                changes: Some(Box::new(RunChanges {
                    checkpoint: "msg-user-2".into(),
                    files: changed_files(),
                    additions: 3,
                    deletions: 1,
                })),
                usage: None,
            },
            session_id: "sess-1".into(),
            session_file: None,
            session_reset: None,
        }),
        ChatFrame::Error(ErrorFrame {
            seq: None,
            message: "the model returned an empty response".into(),
            run_id: Some("run-3".into()),
            code: Some("empty_response".into()),
        }),
        ChatFrame::Error(ErrorFrame { seq: None, message: "unknown session".into(), run_id: None, code: None }),
    ];
    for frame in more {
        seq += 1;
        frames.push(frame.with_seq(seq));
    }
    frames.push(ChatFrame::Ping);
    frames
}

#[test]
fn golden_file_holds_one_of_every_frame_and_matches_the_encoder() {
    let encoded: String = every_kind_of_frame().iter().map(encode_frame).collect();
    assert_golden("frames.ndjson", &encoded);
}

#[test]
fn golden_file_round_trips_byte_for_byte() {
    let golden = std::fs::read_to_string(golden_path("frames.ndjson")).expect("golden frames file exists");
    for (number, line) in golden.lines().enumerate() {
        let frame = validate_frame(number as u64 + 1, line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(encode_frame(&frame), format!("{line}\n"), "line {} changed on a round trip", number + 1);
    }
}

#[test]
fn golden_file_covers_every_frame_part_state_and_phase() {
    let frames = every_kind_of_frame();
    let frame_types: HashSet<FrameType> = frames.iter().map(ChatFrame::frame_type).collect();
    assert_eq!(frame_types, FrameType::ALL.into_iter().collect());

    let mut parts = HashSet::new();
    let mut states = HashSet::new();
    let mut lifecycle = HashSet::new();
    let mut phases = HashSet::new();
    let mut note_part = |part: &ChatMessagePart| {
        let kind = match part {
            ChatMessagePart::Text(_) => "text",
            ChatMessagePart::Thinking(_) => "thinking",
            ChatMessagePart::Error(_) => "error",
            ChatMessagePart::File(_) => "file",
            ChatMessagePart::Tool(tool) => {
                states.insert(tool.state);
                "tool"
            }
        };
        parts.insert(kind);
    };
    for frame in &frames {
        match frame {
            ChatFrame::Message(MessageFrame { message, .. }) | ChatFrame::Done(DoneFrame { message, .. }) => {
                message.parts.iter().for_each(&mut note_part)
            }
            ChatFrame::Tool(ToolFrame { part, .. }) => note_part(&ChatMessagePart::tool((**part).clone())),
            ChatFrame::State(StateFrame { state, .. }) => {
                lifecycle.insert(state.name);
            }
            ChatFrame::Compaction(CompactionFrame::Start(_)) => {
                phases.insert("compaction/start");
            }
            ChatFrame::Compaction(CompactionFrame::End(_)) => {
                phases.insert("compaction/end");
            }
            ChatFrame::Retry(RetryFrame::Start(_)) => {
                phases.insert("retry/start");
            }
            ChatFrame::Retry(RetryFrame::End(_)) => {
                phases.insert("retry/end");
            }
            ChatFrame::Start(_)
            | ChatFrame::Delta(_)
            | ChatFrame::Thinking(_)
            | ChatFrame::ToolDraft(_)
            | ChatFrame::ToolArgsDelta(_)
            | ChatFrame::Plan(_)
            | ChatFrame::Queue(_)
            | ChatFrame::Branch(_)
            | ChatFrame::Changes(_)
            | ChatFrame::Usage(_)
            | ChatFrame::AgentOptions(_)
            | ChatFrame::Error(_)
            | ChatFrame::Ping => {}
        }
    }
    assert_eq!(parts, HashSet::from(["text", "thinking", "error", "file", "tool"]));
    assert_eq!(states, ToolState::ALL.into_iter().collect());
    assert_eq!(lifecycle, LifecycleName::ALL.into_iter().collect());
    assert_eq!(phases.len(), 4);
}

#[test]
fn logged_frames_carry_seq_and_ping_never_does() {
    for frame in every_kind_of_frame() {
        match frame.frame_type() {
            FrameType::Ping => assert_eq!(frame.clone().with_seq(9).seq(), None),
            _ => assert!(frame.seq().is_some(), "{:?} has no seq", frame.frame_type()),
        }
    }
}

#[test]
fn optional_fields_are_omitted_never_null() {
    for frame in every_kind_of_frame() {
        let line = encode_frame(&frame);
        assert!(!line.contains("null"), "null in {line}");
    }
}

#[test]
fn unknown_fields_are_accepted_and_ignored() {
    let frame = parse_frame(br#"{"type":"delta","text":"hi","fromTheFuture":{"x":1},"seq":4}"#).unwrap();
    assert_eq!(frame, ChatFrame::Delta(DeltaFrame { seq: Some(4), text: "hi".into(), message_id: None }));
}

#[test]
fn tool_part_keeps_fields_it_does_not_model() {
    let line = r#"{"type":"tool","part":{"type":"tool-Bash","toolCallId":"c","state":"input-available","providerExecuted":true}}"#;
    let frame = parse_frame(line.as_bytes()).unwrap();
    assert_eq!(encode_frame(&frame), format!("{line}\n"));
}

/// (bad line, the field blamed, text the message must contain)
const BAD_LINES: &[(&[u8], Option<&str>, &str)] = &[
    (b"not json", None, "invalid JSON at column 2"),
    (br#"{"type":"delta","text":"a"} trailing"#, None, "trailing characters"),
    (b"{\"type\":\"delta\",\"text\":\"\xff\"}", None, "invalid JSON"),
    (b"[1,2]", None, "expected a JSON object, found an array"),
    (br#"{"text":"hi"}"#, Some("type"), "missing"),
    (br#"{"type":7}"#, Some("type"), "expected a string, found a number"),
    (br#"{"type":"nope"}"#, Some("type"), "unknown frame type `nope`, expected one of start, message"),
    (br#"{"type":"delta"}"#, None, "missing field `text`"),
    (br#"{"type":"delta","text":5}"#, Some("text"), "expected a string"),
    (br#"{"type":"delta","text":null}"#, Some("text"), "expected a string"),
    (br#"{"type":"delta","text":"x","seq":-1}"#, Some("seq"), "expected u64"),
    (
        br#"{"type":"tool","part":{"type":"tool-Bash","toolCallId":"c1","state":"bogus"}}"#,
        Some("part"),
        "unknown variant `bogus`",
    ),
    (br#"{"type":"tool","part":{"type":"text","text":"x"}}"#, Some("part"), "expected `tool-<Name>`"),
    (
        br#"{"type":"tool","part":{"type":"tool-","toolCallId":"c","state":"input-available"}}"#,
        Some("part"),
        "tool name after `tool-` is empty",
    ),
    (
        br#"{"type":"tool","part":{"type":"tool-Bash","state":"input-available"}}"#,
        Some("part"),
        "missing field `toolCallId`",
    ),
    (
        br#"{"type":"message","message":{"id":"m","role":"user","parts":[{"type":"picture"}]}}"#,
        Some("message.parts[0]"),
        "unknown part type `picture`",
    ),
    (
        br#"{"type":"message","message":{"id":"m","role":"robot","parts":[]}}"#,
        Some("message.role"),
        "unknown variant `robot`",
    ),
    (br#"{"type":"compaction","reason":"manual"}"#, Some("phase"), "missing; expected `start` or `end`"),
    (br#"{"type":"compaction","phase":"middle","reason":"manual"}"#, Some("phase"), "unknown phase `middle`"),
    (br#"{"type":"retry","phase":"start","attempt":1}"#, None, "missing field `maxAttempts`"),
    (br#"{"type":"state","state":{"name":"sleeping"}}"#, Some("state.name"), "unknown variant `sleeping`"),
    (
        br#"{"type":"tool_args_delta","toolCallId":"c","path":[true],"text":""}"#,
        Some("path[0]"),
        "did not match any variant",
    ),
    (
        br#"{"type":"plan","mode":"plan","executing":true,"completed":1,"total":2,"state":{}}"#,
        Some("state"),
        "missing field `mode`",
    ),
];

#[test]
fn bad_lines_are_rejected_with_the_line_field_and_expectation() {
    for (number, (line, field, needle)) in BAD_LINES.iter().enumerate() {
        let line_number = number as u64 + 10;
        let error = validate_frame(line_number, line).expect_err(&String::from_utf8_lossy(line));
        let shown = error.to_string();
        assert_eq!(error.line, Some(line_number));
        assert!(shown.starts_with(&format!("line {line_number}: ")), "{shown}");
        assert_eq!(error.field.as_deref(), *field, "field blamed for {}: {shown}", String::from_utf8_lossy(line));
        assert!(shown.contains(needle), "{shown:?} should contain {needle:?}");
        if let Some(field) = field {
            assert!(shown.contains(&format!("field `{field}`: ")), "{shown}");
        }
    }
}

proptest! {
    #[test]
    fn any_frame_round_trips(frame in crate::support::strategies::frame()) {
        let line = encode_frame(&frame);
        prop_assert!(line.ends_with('\n'));
        prop_assert_eq!(line.matches('\n').count(), 1, "one frame is one line: {}", line);
        let decoded = parse_frame(line.trim_end_matches('\n').as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&decoded, &frame);
        prop_assert_eq!(encode_frame(&decoded), line);
    }
}

/// `value` with the keys of every object in an order drawn from `seed` (the tests' build keeps object key order).
fn shuffled(value: &serde_json::Value, seed: &mut u64) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), shuffled(v, seed))).collect();
            for i in (1..entries.len()).rev() {
                *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                entries.swap(i, (*seed >> 33) as usize % (i + 1));
            }
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| shuffled(item, seed)).collect()),
        other => other.clone(),
    }
}

/// `value` with `type` (and `phase`) moved to the end of every object that has one.
fn tags_last(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let is_tag = |key: &str| key == "type" || key == "phase";
            let rest = map.iter().filter(|(key, _)| !is_tag(key));
            let tags = map.iter().filter(|(key, _)| is_tag(key));
            Value::Object(rest.chain(tags).map(|(k, v)| (k.clone(), tags_last(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(tags_last).collect()),
        other => other.clone(),
    }
}

#[test]
fn frames_and_parts_with_their_tags_last_decode_as_with_the_tags_first() {
    let golden = std::fs::read_to_string(golden_path("frames.ndjson")).expect("golden frames file exists");
    for line in golden.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let moved = serde_json::to_string(&tags_last(&value)).unwrap();
        assert!(moved == line || !moved.starts_with(r#"{"type""#), "the tags moved: {moved}");
        let frame = parse_frame(moved.as_bytes()).unwrap_or_else(|e| panic!("{e}: {moved}"));
        assert_eq!(encode_frame(&frame), format!("{line}\n"), "from {moved}");
    }
}

#[test]
fn a_tool_part_keeps_its_extra_fields_in_order_whatever_comes_before_its_type() {
    let line = r#"{"type":"tool","part":{"title":"Search","toolCallId":"c","zeta":1,"message":"m","type":"tool-Bash","state":"input-available","alpha":2,"text":"t"}}"#;
    let frame = parse_frame(line.as_bytes()).unwrap();
    let ChatFrame::Tool(ToolFrame { part, .. }) = &frame else { panic!("{frame:?}") };
    let extra: Vec<&str> = part.extra.keys().map(String::as_str).collect();
    assert_eq!(extra, ["title", "zeta", "message", "alpha", "text"]);
}

#[test]
fn text_thinking_and_error_parts_read_their_fields_before_or_after_their_type() {
    let parts = r#"[{"text":"a","type":"text"},{"type":"thinking","text":"b"},{"message":"c","type":"error","title":"T"},{"type":"text","text":"d","title":5,"input":{"x":[1]}}]"#;
    let line = format!(r#"{{"type":"message","message":{{"id":"m","role":"user","parts":{parts}}}}}"#);
    let frame = parse_frame(line.as_bytes()).unwrap();
    let ChatFrame::Message(MessageFrame { message, .. }) = frame else { panic!() };
    assert_eq!(
        message.parts,
        [
            ChatMessagePart::text("a"),
            ChatMessagePart::thinking("b"),
            ChatMessagePart::Error(ErrorPart { title: Some("T".into()), message: "c".into() }),
            ChatMessagePart::text("d"),
        ]
    );
}

#[test]
fn frames_with_their_tags_further_in_get_the_same_errors() {
    for (line, field, needle) in [
        (&br#"{"seq":1,"type":"nope"}"#[..], Some("type"), "unknown frame type `nope`"),
        (br#"{"seq":1,"type":"compaction","reason":"manual"}"#, Some("phase"), "missing; expected `start` or `end`"),
        (br#"{"type":"retry","seq":1,"phase":"later"}"#, Some("phase"), "unknown phase `later`"),
        (br#"{"text":"a","type":"delta","seq":-1}"#, Some("seq"), "expected u64"),
        (br#"{"seq":1}"#, Some("type"), "missing"),
    ] {
        let error = parse_frame(line).expect_err(&String::from_utf8_lossy(line));
        assert_eq!(error.field.as_deref(), field, "{error}");
        assert!(error.to_string().contains(needle), "{error} should contain {needle:?}");
    }
}

#[test]
fn every_frame_type_parses_from_its_name() {
    for frame_type in FrameType::ALL {
        assert_eq!(FrameType::parse(frame_type.as_str()), Some(frame_type));
    }
    assert_eq!(FrameType::parse("Delta"), None);
}

proptest! {
    #[test]
    fn any_frame_decodes_the_same_whatever_its_key_order(frame in crate::support::strategies::frame(), mut seed in any::<u64>()) {
        let line = encode_frame(&frame);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let reordered = serde_json::to_string(&shuffled(&value, &mut seed)).unwrap();
        let decoded = parse_frame(reordered.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}: {reordered}")))?;
        prop_assert_eq!(&decoded, &frame);
    }
}

#[test]
fn fixed_shows_a_number_with_its_decimals_as_format_does() {
    use chatwire::protocol::{byte_size, fixed};
    for (value, places) in [(0.0, 1), (1.25, 1), (9.94, 1), (12.5, 0), (0.00161, 4), (0.425, 2), (1234.5678, 2)] {
        let expected = format!("{value:.prec$}", prec = places as usize);
        let shown = fixed(value, places);
        // `format!` rounds the binary value half to even; `fixed` rounds half away from zero: they differ only on
        // an exact half, by one unit in the last place.
        if shown != expected {
            let last = |text: &str| text.replace('.', "").parse::<i64>().unwrap();
            assert_eq!((last(&shown) - last(&expected)).abs(), 1, "{value} to {places}: {shown} against {expected}");
        }
    }
    assert_eq!(fixed(12.5, 0), "13");
    assert_eq!(fixed(0.0016, 4), "0.0016");
    assert_eq!(fixed(-0.04, 1), "0.0");
    assert_eq!(fixed(-2.26, 1), "-2.3");
    assert_eq!(fixed(1_048_575.0 / 1024.0, 1), "1024.0");
    assert_eq!(byte_size(1536), "1.5 KiB");
    assert_eq!(byte_size(5 * 1024 * 1024), "5 MiB");
    assert_eq!(byte_size(512), "512 B");
}
