//! proptest strategies that generate any valid frame of the wire contract.

use chatwire::protocol::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Short text of any characters, including the line separators U+2028/U+2029, CR and LF.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => vec(any::<char>(), 0..12).prop_map(String::from_iter),
        1 => vec(prop_oneof![Just('\u{2028}'), Just('\u{2029}'), Just('\r'), Just('\n'), Just('é'), Just('😀')], 0..6)
            .prop_map(String::from_iter),
    ]
}

pub fn id() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-]{1,16}"
}

pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((id(), inner), 0..4).prop_map(|entries| Value::Object(Map::from_iter(entries))),
        ]
    })
}

/// A JSON object: tool inputs and outputs are objects, never a bare `null`.
pub fn json_object() -> impl Strategy<Value = Value> {
    vec((id(), json_value()), 0..4).prop_map(|entries| Value::Object(Map::from_iter(entries)))
}

pub fn tool_state() -> impl Strategy<Value = ToolState> {
    proptest::sample::select(ToolState::ALL.to_vec())
}

pub fn tool_part() -> impl Strategy<Value = ChatToolPart> {
    let reserved =
        ["type", "toolCallId", "state", "index", "input", "output", "errorText", "durationMs", "approvalOptions"];
    (
        prop_oneof!["[A-Z][A-Za-z]{0,10}", "mcp__[a-z]{1,6}__[a-z_]{1,8}"],
        id(),
        tool_state(),
        option::of(any::<u32>()),
        option::of(json_object()),
        option::of(json_object()),
        option::of(text()),
        option::of(any::<u64>()),
        vec(approval_option(), 0..3),
        vec(("x[a-zA-Z]{1,8}", json_value().prop_filter("extra fields are never null", |v| !v.is_null())), 0..3),
    )
        .prop_map(
            move |(name, call_id, state, index, input, output, error_text, duration_ms, approval_options, extra)| {
                ChatToolPart {
                    kind: name.into(),
                    tool_call_id: call_id,
                    state,
                    index,
                    input,
                    output,
                    error_text,
                    duration_ms,
                    approval_options,
                    extra: extra.into_iter().filter(|(k, _)| !reserved.contains(&k.as_str())).collect(),
                }
            },
        )
}

pub fn approval_option() -> impl Strategy<Value = ApprovalOption> {
    let kind = prop_oneof!["allow_once", "allow_always", "reject_once", "reject_always", "[a-z_]{1,10}"];
    (id(), text(), kind).prop_map(|(option_id, name, kind): (String, String, String)| ApprovalOption {
        option_id,
        name,
        kind: kind.into(),
    })
}

pub fn part() -> impl Strategy<Value = ChatMessagePart> {
    prop_oneof![
        text().prop_map(ChatMessagePart::text),
        text().prop_map(ChatMessagePart::thinking),
        (option::of(text()), text()).prop_map(|(title, message)| ChatMessagePart::Error(ErrorPart { title, message })),
        tool_part().prop_map(ChatMessagePart::tool),
        (text(), text(), text(), any::<u32>()).prop_map(|(id, name, media_type, size)| {
            ChatMessagePart::File(FilePart { id, name, media_type, size: size.into() })
        }),
    ]
}

pub fn message() -> impl Strategy<Value = ChatMessage> {
    (
        id(),
        prop_oneof![Just(Role::User), Just(Role::Assistant)],
        vec(part(), 0..4),
        option::of(any::<u64>()),
        option::of(run_changes()),
        option::of(message_usage()),
    )
        .prop_map(|(id, role, parts, created_at, changes, usage)| ChatMessage {
            id,
            role,
            parts,
            created_at,
            changes: changes.map(Box::new),
            usage: usage.map(Box::new),
        })
}

/// Costs in steps of 1/1024 dollar up to $16,384: exactly representable in at most 15 digits, so that they survive
/// JSON's decimal form unchanged.
pub fn token_usage() -> impl Strategy<Value = TokenUsage> {
    (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), option::of(0..1_u32 << 24)).prop_map(
        |(input, output, cache_read, cache_write, cost)| TokenUsage {
            input,
            output,
            cache_read,
            cache_write,
            cost: cost.map(|steps| f64::from(steps) / 1024.0),
        },
    )
}

pub fn context_use() -> impl Strategy<Value = ContextUse> {
    (any::<u64>(), option::of(any::<u64>()), option::of(any::<u64>()))
        .prop_map(|(used, window, compact_at)| ContextUse { used, window, compact_at })
}

fn message_usage() -> impl Strategy<Value = MessageUsage> {
    (token_usage(), any::<u32>(), option::of(context_use())).prop_map(|(total, calls, context)| MessageUsage {
        total,
        calls,
        context,
    })
}

fn changed_file() -> impl Strategy<Value = ChangedFile> {
    let status = prop_oneof![Just(ChangeStatus::Added), Just(ChangeStatus::Modified), Just(ChangeStatus::Deleted)];
    (text(), status, any::<u32>(), any::<u32>(), any::<bool>()).prop_map(
        |(path, status, additions, deletions, binary)| ChangedFile { path, status, additions, deletions, binary },
    )
}

pub fn run_changes() -> impl Strategy<Value = RunChanges> {
    (id(), vec(changed_file(), 0..3), any::<u32>(), any::<u32>())
        .prop_map(|(checkpoint, files, additions, deletions)| RunChanges { checkpoint, files, additions, deletions })
}

fn seq() -> impl Strategy<Value = Option<Seq>> {
    option::of(1..u64::MAX)
}

fn plan_state() -> impl Strategy<Value = ChatPlanState> {
    (
        prop_oneof![Just(AgentMode::Agent), Just(AgentMode::Plan)],
        any::<bool>(),
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
        vec(
            (any::<u32>(), text(), any::<bool>()).prop_map(|(step, text, completed)| PlanTodo {
                step,
                text,
                completed,
            }),
            0..3,
        ),
        option::of(text()),
    )
        .prop_map(|(mode, executing, pending_decision, completed, total, todos, message)| ChatPlanState {
            mode,
            executing,
            pending_decision,
            completed,
            total,
            todos,
            message,
        })
}

pub fn path_segment() -> impl Strategy<Value = PathSegment> {
    prop_oneof![any::<u64>().prop_map(PathSegment::Index), id().prop_map(PathSegment::Key)]
}

/// Any frame of the contract.
pub fn frame() -> impl Strategy<Value = ChatFrame> {
    prop_oneof![
        (
            seq(),
            id(),
            id(),
            id(),
            option::of(text()),
            option::of(any::<bool>()),
            option::of(vec(text(), 0..3)),
            option::of(option::of(id()))
        )
            .prop_map(|(seq, id, run_id, session_id, session_file, session_reset, diagnostics, branch)| {
                ChatFrame::Start(StartFrame {
                    seq,
                    id,
                    run_id,
                    session_id,
                    session_file,
                    session_reset,
                    diagnostics,
                    branch: branch.map(|parent_id| BranchPoint { parent_id }),
                })
            }),
        (seq(), id()).prop_map(|(seq, message_id)| ChatFrame::Branch(BranchFrame { seq, message_id })),
        (seq(), run_changes(), option::of(id())).prop_map(|(seq, changes, message_id)| {
            let RunChanges { checkpoint, files, additions, deletions } = changes;
            ChatFrame::Changes(ChangesFrame { seq, checkpoint, files, additions, deletions, message_id })
        }),
        (seq(), message()).prop_map(|(seq, message)| ChatFrame::Message(MessageFrame { seq, message })),
        (seq(), option::of(id()), option::of(id()), token_usage(), option::of(context_use())).prop_map(
            |(seq, run_id, message_id, usage, context)| ChatFrame::Usage(UsageFrame {
                seq,
                run_id,
                message_id,
                usage,
                context
            })
        ),
        (seq(), text(), option::of(id())).prop_map(|(seq, text, message_id)| ChatFrame::Delta(DeltaFrame {
            seq,
            text,
            message_id
        })),
        (seq(), text(), option::of(id())).prop_map(|(seq, text, message_id)| ChatFrame::Thinking(ThinkingFrame {
            seq,
            text,
            message_id
        })),
        (seq(), id(), id(), any::<u32>(), option::of(id())).prop_map(
            |(seq, tool_call_id, tool_name, index, message_id)| {
                ChatFrame::ToolDraft(ToolDraftFrame { seq, tool_call_id, tool_name, index, message_id })
            }
        ),
        (seq(), id(), vec(path_segment(), 0..3), text(), option::of(id())).prop_map(
            |(seq, tool_call_id, path, text, message_id)| {
                ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame { seq, tool_call_id, path: path.into(), text, message_id })
            }
        ),
        (seq(), tool_part(), option::of(id())).prop_map(|(seq, part, message_id)| ChatFrame::Tool(ToolFrame {
            seq,
            part: Box::new(part),
            message_id
        })),
        (seq(), plan_state(), option::of(text())).prop_map(|(seq, state, message)| {
            ChatFrame::Plan(PlanFrame {
                seq,
                mode: state.mode,
                executing: state.executing,
                completed: state.completed,
                total: state.total,
                message,
                state,
            })
        }),
        (seq(), proptest::sample::select(LifecycleName::ALL.to_vec()), option::of(text()))
            .prop_map(|(seq, name, message)| ChatFrame::State(StateFrame { seq, state: Lifecycle { name, message } })),
        (seq(), vec(text(), 0..3), vec(text(), 0..3))
            .prop_map(|(seq, steering, follow_up)| { ChatFrame::Queue(QueueFrame { seq, steering, follow_up }) }),
        (seq(), reason())
            .prop_map(|(seq, reason)| ChatFrame::Compaction(CompactionFrame::Start(CompactionStart { seq, reason }))),
        (seq(), reason(), any::<bool>(), any::<bool>(), option::of(text())).prop_map(
            |(seq, reason, aborted, will_retry, error_message)| {
                ChatFrame::Compaction(CompactionFrame::End(CompactionEnd {
                    seq,
                    reason,
                    aborted,
                    will_retry,
                    error_message,
                }))
            }
        ),
        (seq(), any::<u32>(), any::<u32>(), any::<u64>(), text()).prop_map(
            |(seq, attempt, max_attempts, delay_ms, error_message)| {
                ChatFrame::Retry(RetryFrame::Start(RetryStart { seq, attempt, max_attempts, delay_ms, error_message }))
            }
        ),
        (seq(), any::<bool>(), any::<u32>(), option::of(text())).prop_map(|(seq, success, attempt, final_error)| {
            ChatFrame::Retry(RetryFrame::End(RetryEnd { seq, success, attempt, final_error }))
        }),
        (seq(), id(), message(), id(), option::of(text()), option::of(any::<bool>())).prop_map(
            |(seq, run_id, message, session_id, session_file, session_reset)| {
                ChatFrame::Done(DoneFrame { seq, run_id, message, session_id, session_file, session_reset })
            }
        ),
        (seq(), text(), option::of(id()), option::of(id()))
            .prop_map(|(seq, message, run_id, code)| ChatFrame::Error(ErrorFrame { seq, message, run_id, code })),
        Just(ChatFrame::Ping),
    ]
}

fn reason() -> impl Strategy<Value = CompactionReason> {
    prop_oneof![
        Just(CompactionReason::Manual),
        Just(CompactionReason::Threshold),
        Just(CompactionReason::Overflow),
        "[a-z]{1,8}".prop_map(|text| CompactionReason::parse(&text)),
    ]
}
