//! The reducer rules of DESIGN.md §6, one table row per rule: the frames applied, then what must hold.
//!
//! Each row becomes its own `#[test]`, named after the rule, so a failure names the rule it breaks.

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
        branch: None,
    })
}

fn user_message(id: &str, text: &str) -> ChatMessage {
    ChatMessage {
        id: id.into(),
        role: Role::User,
        parts: vec![ChatMessagePart::text(text)],
        created_at: None,
        changes: None,
        usage: None,
    }
}

fn user(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Message(MessageFrame { seq: Some(seq), message: user_message(&format!("u{seq}"), text) })
}

fn delta(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn delta_in(seq: Seq, message_id: &str, text: &str) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: text.into(), message_id: Some(message_id.into()) })
}

fn thinking(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Thinking(ThinkingFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn lifecycle(seq: Seq, name: LifecycleName) -> ChatFrame {
    ChatFrame::State(StateFrame { seq: Some(seq), state: Lifecycle { name, message: None } })
}

fn tool(seq: Seq, call_id: &str, state: ToolState, input: Option<serde_json::Value>) -> ChatFrame {
    let mut part = ChatToolPart::new("Bash", call_id, state);
    part.input = input;
    ChatFrame::Tool(ToolFrame { seq: Some(seq), part: Box::new(part), message_id: None })
}

fn draft(seq: Seq, call_id: &str) -> ChatFrame {
    ChatFrame::ToolDraft(ToolDraftFrame {
        seq: Some(seq),
        tool_call_id: call_id.into(),
        tool_name: "Write".into(),
        index: 0,
        message_id: None,
    })
}

fn args(seq: Seq, call_id: &str, path: Vec<PathSegment>, text: &str) -> ChatFrame {
    ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
        seq: Some(seq),
        tool_call_id: call_id.into(),
        path: path.into(),
        text: text.into(),
        message_id: None,
    })
}

fn key(name: &str) -> PathSegment {
    PathSegment::Key(name.into())
}

fn done(seq: Seq, message: ChatMessage) -> ChatFrame {
    ChatFrame::Done(DoneFrame {
        seq: Some(seq),
        run_id: "run-1".into(),
        message,
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
    })
}

fn queue(seq: Seq, steering: &[&str], follow_up: &[&str]) -> ChatFrame {
    ChatFrame::Queue(QueueFrame {
        seq: Some(seq),
        steering: steering.iter().map(|s| s.to_string()).collect(),
        follow_up: follow_up.iter().map(|s| s.to_string()).collect(),
    })
}

fn error(seq: Seq, message: &str) -> ChatFrame {
    ChatFrame::Error(ErrorFrame { seq: Some(seq), message: message.into(), run_id: None, code: None })
}

/// A `changes` frame of one modified file: `checkpoint` names the run, `message_id` the answer, if given.
fn changes(seq: Seq, checkpoint: &str, message_id: Option<&str>) -> ChatFrame {
    ChatFrame::Changes(ChangesFrame {
        seq: Some(seq),
        checkpoint: checkpoint.into(),
        files: vec![ChangedFile {
            path: "a.txt".into(),
            status: ChangeStatus::Modified,
            additions: 2,
            deletions: 1,
            binary: false,
        }],
        additions: 2,
        deletions: 1,
        message_id: message_id.map(str::to_owned),
    })
}

/// One model call's `usage` frame: `input` tokens in, 10 out, the context then `used` of a 1,000-token window.
fn call(seq: Seq, message_id: Option<&str>, input: u64, used: u64) -> ChatFrame {
    ChatFrame::Usage(UsageFrame {
        seq: Some(seq),
        run_id: Some("run-1".into()),
        message_id: message_id.map(str::to_owned),
        usage: TokenUsage { input, output: 10, cache_read: 0, cache_write: 0, cost: None },
        context: Some(ContextUse { used, window: Some(1000), compact_at: Some(800) }),
    })
}

fn answer(id: &str, said: &str) -> ChatMessage {
    ChatMessage {
        id: id.into(),
        role: Role::Assistant,
        parts: vec![text(said)],
        created_at: None,
        changes: None,
        usage: None,
    }
}

fn checkpoint_of(snapshot: &ChatSnapshot, id: &str) -> Option<String> {
    snapshot.message(id).and_then(|message| message.changes.as_ref()).map(|changes| changes.checkpoint.clone())
}

fn text(text: &str) -> ChatMessagePart {
    ChatMessagePart::text(text)
}

fn kinds(message: &ChatMessage) -> Vec<String> {
    message.parts.iter().map(|part| part.type_name().into_owned()).collect()
}

fn ids(snapshot: &ChatSnapshot) -> Vec<&str> {
    snapshot.messages.iter().map(|message| message.id.as_str()).collect()
}

fn reduce(snapshot: &mut ChatSnapshot, frames: &[ChatFrame]) {
    for frame in frames {
        apply(snapshot, frame);
    }
}

/// One `#[test]` per row: `name: initial snapshot, frames => |snapshot| checks`.
macro_rules! rules {
    ($($rule:ident: $initial:expr, [$($frame:expr),* $(,)?] => |$snapshot:ident| $check:block)*) => {
        $(
            #[test]
            fn $rule() {
                let mut $snapshot: ChatSnapshot = $initial;
                reduce(&mut $snapshot, &[$($frame),*]);
                $check
            }
        )*
    };
}

fn empty() -> ChatSnapshot {
    ChatSnapshot::default()
}

rules! {
    // "It reconciles the in-flight assistant message id: frames may name a messageId different from start.id …"
    frames_naming_another_message_id_stream_into_the_run_and_done_takes_the_final_id:
        empty(), [start(1, "a1"), delta_in(2, "m7", "Hel"), delta_in(3, "m7", "lo"), done(4, ChatMessage {
            id: "m7".into(), role: Role::Assistant, parts: vec![text("Hello")], created_at: None,
            changes: None,
        usage: None,
        })] => |s| {
        assert_eq!(ids(&s), ["m7"]);
        assert_eq!(s.messages[0].parts, [text("Hello")]);
        assert!(s.message("a1").is_none());
    }

    // "… frames may arrive before start on a resumed stream."
    frames_before_start_land_on_the_message_start_then_names:
        empty(), [delta(7, "par"), thinking(8, "hm"), start(9, "a1"), delta(10, "x")] => |s| {
        assert_eq!(ids(&s), ["a1"]);
        assert_eq!(kinds(&s.messages[0]), ["text", "thinking", "text"]);
        assert_eq!(s.run.as_ref().and_then(|run| run.run_id.as_deref()), Some("run-1"));
    }

    frames_before_start_naming_a_message_id_adopt_that_id:
        empty(), [delta_in(7, "a9", "par"), delta(8, "tial")] => |s| {
        assert_eq!(ids(&s), ["a9"]);
        assert_eq!(s.messages[0].parts, [text("partial")]);
        assert!(s.is_running());
    }

    two_runs_whose_start_was_missed_keep_two_messages:
        empty(), [delta(5, "one"), error(6, "boom"), delta(7, "two")] => |s| {
        assert_eq!(s.messages.len(), 2);
        assert_ne!(s.messages[0].id, s.messages[1].id);
        assert_eq!(s.messages[1].parts, [text("two")]);
    }

    a_resumed_snapshot_streams_into_its_pending_message:
        ChatSnapshot::from_detail(SessionDetail {
            agent_options: None,
            session: SessionSummary {
                session_id: "s".into(), title: "t".into(), status: SessionStatus::Running,
                created_at: 1, updated_at: 2, message_count: 2, last_seq: 4, usage: None, agent: None,
            },
            messages: vec![user_message("u1", "hi")],
            last_seq: 4,
            pending: Some(ChatMessage {
                id: "a1".into(), role: Role::Assistant, parts: vec![text("Hel")], created_at: None,
                changes: None,
            usage: None,
            }),
            plan: None,
            branches: None,
        }), [delta(4, "stale"), delta(5, "lo")] => |s| {
        assert_eq!(ids(&s), ["u1", "a1"]);
        assert_eq!(s.messages[1].parts, [text("Hello")]);
        assert!(s.is_running());
    }

    // "… adds message frames' messages to the transcript"
    message_frames_join_the_transcript_before_the_runs_empty_answer:
        empty(), [start(1, "a1"), user(2, "hi"), delta(3, "Hello")] => |s| {
        assert_eq!(ids(&s), ["u2", "a1"]);
        assert_eq!(s.messages[0].role, Role::User);
        assert_eq!(s.messages[1].parts, [text("Hello")]);
    }

    // The run's answer stays last, as the `pending` message of a resumed session does.
    message_frames_during_a_run_join_before_its_answer:
        empty(), [start(1, "a1"), user(2, "hi"), delta(3, "Hel"), user(4, "steer"), delta(5, "lo"),
                  tool(6, "c1", ToolState::InputAvailable, None), tool(7, "c1", ToolState::OutputAvailable, None)]
        => |s| {
        assert_eq!(ids(&s), ["u2", "u4", "a1"]);
        assert_eq!(kinds(&s.messages[2]), ["text", "tool-Bash"]);
        assert_eq!(s.messages[2].parts[1].as_tool().map(|t| t.state), Some(ToolState::OutputAvailable));
        assert!(s.messages[1].parts.iter().all(|part| part.as_tool().is_none()));
    }

    // "… appends delta and thinking text to the last part of that kind"
    delta_appends_to_the_last_text_part:
        empty(), [start(1, "a1"), delta(2, "Hel"), delta(3, "lo")] => |s| {
        assert_eq!(s.messages[0].parts, [text("Hello")]);
    }

    thinking_appends_to_the_last_thinking_part:
        empty(), [start(1, "a1"), thinking(2, "hm"), thinking(3, "m")] => |s| {
        assert_eq!(s.messages[0].parts, [ChatMessagePart::thinking("hmm")]);
    }

    text_and_thinking_keep_the_order_they_happened_in:
        empty(), [start(1, "a1"), thinking(2, "a"), delta(3, "b"), thinking(4, "c")] => |s| {
        assert_eq!(kinds(&s.messages[0]), ["thinking", "text", "thinking"]);
    }

    // "… (or opens a new one after a tool part)"
    text_after_a_tool_part_opens_a_new_part:
        empty(), [start(1, "a1"), delta(2, "A"), tool(3, "c1", ToolState::InputAvailable, None), delta(4, "B"),
                  thinking(5, "t"), tool(6, "c2", ToolState::InputAvailable, None), thinking(7, "u")] => |s| {
        assert_eq!(kinds(&s.messages[0]), ["text", "tool-Bash", "text", "thinking", "tool-Bash", "thinking"]);
    }

    each_model_message_starts_its_own_text_part:
        empty(), [start(1, "a1"), delta(2, "first."), lifecycle(3, LifecycleName::MessageStart), delta(4, "second")]
        => |s| {
        assert_eq!(s.messages[0].parts, [text("first."), text("second")]);
    }

    // "… upserts tool parts by toolCallId"
    tool_frames_upsert_their_part_by_tool_call_id:
        empty(), [start(1, "a1"), tool(2, "c1", ToolState::InputAvailable, Some(json!({"command": "ls"}))),
                  delta(3, "x"), tool(4, "c1", ToolState::OutputAvailable, Some(json!({"command": "ls"})))] => |s| {
        assert_eq!(kinds(&s.messages[0]), ["tool-Bash", "text"]);
        assert_eq!(s.messages[0].parts[0].as_tool().map(|t| t.state), Some(ToolState::OutputAvailable));
    }

    tool_draft_opens_a_streaming_row_once:
        empty(), [start(1, "a1"), draft(2, "c1"), draft(3, "c1")] => |s| {
        assert_eq!(kinds(&s.messages[0]), ["tool-Write"]);
        let tool = s.messages[0].parts[0].as_tool().expect("a tool part");
        assert_eq!((tool.state, tool.index), (ToolState::InputStreaming, Some(0)));
    }

    // "… applies tool_args_delta to the draft's input at path"
    tool_args_delta_grows_the_draft_input_at_its_path:
        empty(), [start(1, "a1"), draft(2, "c1"), args(3, "c1", vec![key("content")], "fn "),
                  args(4, "c1", vec![key("content")], "main"), args(5, "c1", vec![key("edits"), PathSegment::Index(0),
                  key("old")], "a"), args(6, "c1", vec![key("edits"), PathSegment::Index(0), key("old")], "b")] => |s| {
        let tool = s.messages[0].parts[0].as_tool().expect("a tool part");
        assert_eq!(tool.input, Some(json!({"content": "fn main", "edits": [{"old": "ab"}]})));
    }

    tool_args_delta_for_an_unknown_call_changes_nothing_but_seq:
        empty(), [start(1, "a1"), args(2, "nope", vec![key("content")], "x")] => |s| {
        assert!(s.messages[0].parts.is_empty());
        assert_eq!(s.last_seq, 2);
    }

    // "… sets the activity label from state, compaction and retry frames": the reducer keeps what the frames say,
    // with their numbers and the runtime's own text; the activity line words it.
    start_and_a_resumed_pending_message_set_working:
        empty(), [start(1, "a1")] => |s| {
        assert_eq!(s.activity, Some(Activity::Working));
        let resumed = ChatSnapshot::from_detail(SessionDetail {
            agent_options: None,
            session: SessionSummary {
                session_id: "s".into(), title: "t".into(), status: SessionStatus::Running,
                created_at: 1, updated_at: 2, message_count: 1, last_seq: 3, usage: None, agent: None,
            },
            messages: Vec::new(),
            last_seq: 3,
            pending: Some(ChatMessage { id: "a1".into(), role: Role::Assistant, parts: Vec::new(), created_at: None, changes: None, usage: None }),
            plan: None,
            branches: None,
        });
        assert_eq!(resumed.activity, Some(Activity::Working));
    }

    state_frames_set_the_phase_and_agent_end_clears_it:
        empty(), [start(1, "a1"), lifecycle(2, LifecycleName::MessageStart)] => |s| {
        assert_eq!(s.activity, Some(Activity::Phase { phase: LifecycleName::MessageStart, status: None }));
        let mut s = s;
        apply(&mut s, &lifecycle(3, LifecycleName::TurnEnd));
        assert_eq!(s.activity, Some(Activity::Phase { phase: LifecycleName::TurnEnd, status: None }));
        apply(&mut s, &lifecycle(4, LifecycleName::AgentEnd));
        assert_eq!(s.activity, None);
        apply(&mut s, &lifecycle(5, LifecycleName::AgentStart));
        apply(&mut s, &lifecycle(6, LifecycleName::AgentSettled));
        assert_eq!(s.activity, None);
    }

    a_status_line_of_the_runtime_is_kept_as_its_text:
        empty(), [start(1, "a1"), ChatFrame::State(StateFrame {
            seq: Some(2),
            state: Lifecycle { name: LifecycleName::TurnStart, message: Some("Indexing 3 files".into()) },
        })] => |s| {
        assert_eq!(
            s.activity,
            Some(Activity::Phase { phase: LifecycleName::TurnStart, status: Some("Indexing 3 files".into()) })
        );
    }

    compaction_frames_set_compacting_until_it_ends:
        empty(), [start(1, "a1"), ChatFrame::Compaction(CompactionFrame::Start(CompactionStart {
            seq: Some(2), reason: CompactionReason::Threshold,
        }))] => |s| {
        assert_eq!(s.activity, Some(Activity::Compacting));
        let mut s = s;
        apply(&mut s, &ChatFrame::Compaction(CompactionFrame::End(CompactionEnd {
            seq: Some(3), reason: CompactionReason::Threshold, aborted: false, will_retry: false, error_message: None,
        })));
        assert_eq!(s.activity, Some(Activity::Working));
    }

    retry_frames_keep_the_attempt_and_the_delay_until_it_ends:
        empty(), [start(1, "a1"), ChatFrame::Retry(RetryFrame::Start(RetryStart {
            seq: Some(2), attempt: 2, max_attempts: 3, delay_ms: 3500, error_message: "503".into(),
        }))] => |s| {
        assert_eq!(s.activity, Some(Activity::Retrying { attempt: 2, max_attempts: 3, delay_ms: 3500 }));
        let mut s = s;
        apply(&mut s, &ChatFrame::Retry(RetryFrame::End(RetryEnd {
            seq: Some(3), success: true, attempt: 2, final_error: None,
        })));
        assert_eq!(s.activity, Some(Activity::Working));
    }

    // "… replaces the queue on queue"
    queue_frames_replace_the_whole_queue:
        empty(), [start(1, "a1"), queue(2, &["a", "b"], &["c"]), queue(3, &["b"], &[])] => |s| {
        assert_eq!(s.queue.steering, ["b"]);
        assert!(s.queue.follow_up.is_empty());
    }

    // "… merges the final message on done"
    done_merges_the_final_message_and_ends_the_run:
        empty(), [start(1, "a1"), user(2, "hi"), delta(3, "Hello"), tool(4, "c1", ToolState::InputAvailable, None),
                  done(5, ChatMessage {
                      id: "a1".into(), role: Role::Assistant, created_at: Some(5),
                      parts: vec![text("Hello!"), ChatMessagePart::tool(ChatToolPart::new(
                          "Bash", "c1", ToolState::OutputAvailable))],
                          changes: None,
                  usage: None,
                  }), tool(6, "c1", ToolState::OutputError, None)] => |s| {
        assert_eq!(ids(&s), ["u2", "a1"]);
        assert_eq!(s.messages[1].parts[0], text("Hello!"));
        assert_eq!(s.messages[1].created_at, Some(5));
        // The tool index follows the final message's parts: a later upsert lands on the same row.
        assert_eq!(kinds(&s.messages[1]), ["text", "tool-Bash"]);
        assert!(!s.is_running());
        assert_eq!(s.activity, None);
    }

    done_clears_the_queue:
        empty(), [start(1, "a1"), queue(2, &["a"], &[]), done(3, ChatMessage {
            id: "a1".into(), role: Role::Assistant, parts: vec![text("ok")], created_at: None,
            changes: None,
        usage: None,
        })] => |s| {
        assert!(s.queue.steering.is_empty());
    }

    // "… and records error."
    error_frames_are_recorded_as_a_visible_error_part_and_end_the_run:
        empty(), [start(1, "a1"), delta(2, "partial"), error(3, "boom")] => |s| {
        assert_eq!(s.messages[0].parts, [text("partial"), ChatMessagePart::Error(ErrorPart {
            title: None, message: "boom".into(),
        })]);
        assert_eq!(s.last_error.as_deref(), Some("boom"));
        assert!(!s.is_running());
    }

    error_frames_clear_the_queue:
        empty(), [start(1, "a1"), queue(2, &["a"], &["b"]), error(3, "boom")] => |s| {
        assert!(s.queue.steering.is_empty() && s.queue.follow_up.is_empty());
    }

    a_new_start_clears_the_last_error:
        empty(), [error(1, "refused"), start(2, "a1")] => |s| {
        assert_eq!(s.last_error, None);
        assert!(s.is_running());
    }

    // "… re-applying an already-seen seq is a no-op."
    an_already_seen_seq_changes_nothing:
        empty(), [start(1, "a1"), delta(2, "x"), delta(2, "x"), delta(1, "y"), queue(2, &["q"], &[])] => |s| {
        assert_eq!(s.messages[0].parts, [text("x")]);
        assert!(s.queue.steering.is_empty());
        assert_eq!(s.last_seq, 2);
    }

    // The run's changes go on its answer and stay there through `done`, which does not repeat them.
    changes_land_on_the_runs_answer_and_outlive_its_done:
        empty(), [start(1, "a1"), user(2, "go"), delta(3, "ok"), changes(4, "u2", None), done(5, answer("a1", "ok"))]
        => |s| {
        assert_eq!(ids(&s), ["u2", "a1"]);
        assert_eq!(checkpoint_of(&s, "a1").as_deref(), Some("u2"));
        assert_eq!(s.message("u2").unwrap().changes, None, "the prompt has no changes of its own");
        let summary = s.message("a1").unwrap().changes.clone().unwrap();
        assert_eq!((summary.files.len(), summary.additions, summary.deletions), (1, 2, 1));
        assert_eq!(summary.summary(), "1 file changed, +2 −1");
    }

    // Each answer of a replayed session keeps its own run's changes; a run that changed nothing logs none.
    replay_puts_each_runs_changes_on_its_own_answer:
        empty(), [
            start(1, "a1"), user(2, "one"), changes(3, "u2", Some("a1")), done(4, answer("a1", "first")),
            start(5, "a5"), user(6, "two"), done(7, answer("a5", "second")),
            start(8, "a8"), user(9, "three"), changes(10, "u9", Some("a8")), error(11, "stopped"),
        ] => |s| {
        assert_eq!(ids(&s), ["u2", "a1", "u6", "a5", "u9", "a8"]);
        assert_eq!(checkpoint_of(&s, "a1").as_deref(), Some("u2"));
        assert_eq!(checkpoint_of(&s, "a5"), None);
        assert_eq!(checkpoint_of(&s, "a8").as_deref(), Some("u9"), "a run that failed still says what it changed");
    }

    // A stream joined mid-run names the answer by a placeholder until `done`: the summary follows it.
    changes_of_a_run_joined_mid_stream_follow_the_answer_to_its_final_id:
        empty(), [delta(4, "ok"), changes(5, "u3", Some("a1")), done(6, answer("a1", "ok"))] => |s| {
        assert_eq!(ids(&s), ["a1"]);
        assert_eq!(checkpoint_of(&s, "a1").as_deref(), Some("u3"));
    }

    changes_outside_any_run_naming_no_known_message_are_dropped:
        empty(), [changes(1, "u0", Some("nowhere"))] => |s| {
        assert!(s.messages.is_empty());
        assert_eq!(s.last_seq, 1);
    }

    // Each call adds into the run's answer; `done`, which here carries no usage, keeps the sum.
    usage_sums_the_runs_calls_on_its_answer_and_outlives_its_done:
        empty(), [start(1, "a1"), user(2, "go"), call(3, None, 100, 110), delta(4, "ok"), call(5, None, 200, 320),
            done(6, answer("a1", "ok"))] => |s| {
        let usage = s.message("a1").unwrap().usage.clone().unwrap();
        assert_eq!((usage.calls, usage.total.input, usage.total.output), (2, 300, 20));
        assert_eq!(usage.context.as_ref().map(|context| context.used), Some(320), "the last call's context");
        assert_eq!(s.message("u2").unwrap().usage, None);
        assert_eq!(s.context().map(|context| context.used), Some(320));
    }

    // The meter reads the last answer on screen that counted anything: a later run that counted nothing leaves it.
    the_context_is_the_last_counted_calls:
        empty(), [
            start(1, "a1"), user(2, "one"), call(3, Some("a1"), 100, 110), done(4, answer("a1", "first")),
            start(5, "a5"), user(6, "two"), call(7, Some("a5"), 500, 900), done(8, answer("a5", "second")),
            start(9, "a9"), user(10, "three"), done(11, answer("a9", "third")),
        ] => |s| {
        let context = s.context().unwrap();
        assert_eq!(context.used, 900);
        assert!(context.past_compaction());
        assert_eq!(s.message("a1").unwrap().usage.as_ref().map(|usage| usage.calls), Some(1));
    }

    usage_outside_any_run_naming_no_known_message_is_dropped:
        empty(), [call(1, Some("nowhere"), 5, 5)] => |s| {
        assert!(s.messages.is_empty());
        assert_eq!(s.context(), None);
    }

    ping_changes_nothing_but_a_pause_in_the_output:
        empty(), [start(1, "a1"), delta(2, "x"), ChatFrame::Ping] => |s| {
        assert_eq!(s.last_seq, 2);
        assert_eq!(ids(&s), ["a1"]);
        assert_eq!(s.messages[0].parts, [text("x")]);
        assert!(!s.output_streaming);
    }

    // Not a rule of DESIGN §6: whether the activity line's dot pulses (docs/decisions.md).
    output_streams_while_text_thinking_or_tool_arguments_arrive:
        empty(), [start(1, "a1"), lifecycle(2, LifecycleName::MessageStart)] => |s| {
        assert!(!s.output_streaming, "nothing shown yet: the dot pulses");
        let mut s = s;
        for frame in [delta(3, "x"), thinking(4, "y"), args(5, "c1", vec![key("command")], "l")] {
            apply(&mut s, &frame);
            assert!(s.output_streaming, "{frame:?}");
        }
        apply(&mut s, &tool(6, "c1", ToolState::InputAvailable, None));
        assert!(!s.output_streaming, "a tool that runs shows no output as it goes");
        apply(&mut s, &delta(6, "seen"));
        assert!(!s.output_streaming, "a frame already applied changes nothing");
    }
}

#[test]
fn apply_says_what_it_did() {
    let mut snapshot = ChatSnapshot::default();
    assert_eq!(apply(&mut snapshot, &start(1, "a1")), Applied::Changed);
    assert_eq!(apply(&mut snapshot, &start(1, "a1")), Applied::AlreadySeen);
    assert_eq!(apply(&mut snapshot, &ChatFrame::Ping), Applied::Ignored);
}
