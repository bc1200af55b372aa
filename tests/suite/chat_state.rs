//! Properties of the shared reducer (DESIGN.md §6) over generated session logs: any chunking of the NDJSON
//! stream, re-applied `seq`s, and streams resumed mid-run all end in the snapshot of one straight pass.

use crate::support::strategies::text;
use chatwire::chat_state::{Activity, ChatSnapshot, apply};
use chatwire::ndjson::{FrameDecoder, encode_frame_into};
use chatwire::protocol::*;
use proptest::collection::vec;
use proptest::prelude::*;

/// One thing that happens inside a run; tool calls are picked from a small pool so that upserts collide.
#[derive(Debug, Clone)]
enum Step {
    Delta(String),
    Thinking(String),
    ModelMessage,
    Draft(u8),
    Args(u8, bool, String),
    Tool(u8, ToolState),
    Queue(Vec<String>),
    Steer(String),
    /// A lifecycle frame, with a status line of the runtime's own (as pi's extensions send) or without.
    Activity(LifecycleName, Option<String>),
    /// A retry starts: its attempt and its delay in ms.
    Retry(u32, u64),
    RetryEnd,
    /// A compaction starts (true) or ends.
    Compaction(bool),
}

/// Where a run goes in the conversation tree (DESIGN §11).
#[derive(Debug, Clone)]
enum Branching {
    /// After the branch on screen.
    Follows,
    /// An edit of one of the user messages on screen: a sibling of it.
    Edits(prop::sample::Index),
    /// A new answer to one of the user messages on screen: a sibling of its answer.
    Regenerates(prop::sample::Index),
}

#[derive(Debug, Clone)]
struct Run {
    prompt: String,
    steps: Vec<Step>,
    /// `done` when true, else `error`.
    succeeds: bool,
    branching: Branching,
    /// After the run, the user moves to a sibling of one of the messages on screen.
    then_switches: Option<prop::sample::Index>,
}

fn step() -> impl Strategy<Value = Step> {
    let call = 0..3_u8;
    prop_oneof![
        6 => text().prop_map(Step::Delta),
        2 => text().prop_map(Step::Thinking),
        1 => Just(Step::ModelMessage),
        1 => call.clone().prop_map(Step::Draft),
        2 => (call.clone(), any::<bool>(), text()).prop_map(|(call, nested, text)| Step::Args(call, nested, text)),
        2 => (call, crate::support::strategies::tool_state()).prop_map(|(call, state)| Step::Tool(call, state)),
        1 => vec("[a-z ]{0,6}", 0..3).prop_map(Step::Queue),
        1 => text().prop_map(Step::Steer),
        1 => (proptest::sample::select(LifecycleName::ALL.to_vec()), proptest::option::of("[a-z ]{1,8}"))
            .prop_map(|(name, status)| Step::Activity(name, status)),
        1 => (1..4_u32, 0..10_000_u64).prop_map(|(attempt, delay)| Step::Retry(attempt, delay)),
        1 => Just(Step::RetryEnd),
        1 => any::<bool>().prop_map(Step::Compaction),
    ]
}

fn run() -> impl Strategy<Value = Run> {
    (text(), vec(step(), 0..24), prop::bool::weighted(0.8)).prop_map(|(prompt, steps, succeeds)| Run {
        prompt,
        steps,
        succeeds,
        branching: Branching::Follows,
        then_switches: None,
    })
}

/// Runs that edit, regenerate and switch branches as well as follow on.
fn branching_run() -> impl Strategy<Value = Run> {
    let branching = prop_oneof![
        2 => Just(Branching::Follows),
        2 => any::<prop::sample::Index>().prop_map(Branching::Edits),
        1 => any::<prop::sample::Index>().prop_map(Branching::Regenerates),
    ];
    (run(), branching, proptest::option::weighted(0.4, any::<prop::sample::Index>()))
        .prop_map(|(run, branching, then_switches)| Run { branching, then_switches, ..run })
}

/// Where a run of `branching` attaches given what is on screen, and whether it logs a prompt of its own (a
/// regeneration answers one the transcript has).
fn branch_point(built: &ChatSnapshot, branching: &Branching) -> (Option<BranchPoint>, bool) {
    let users: Vec<&ChatMessage> = built.messages.iter().filter(|message| message.role == Role::User).collect();
    match branching {
        Branching::Follows => (None, true),
        Branching::Edits(_) | Branching::Regenerates(_) if users.is_empty() => (None, true),
        Branching::Edits(pick) => {
            let edited = users[pick.index(users.len())];
            (Some(BranchPoint { parent_id: built.tree.parent(&edited.id).cloned().flatten() }), true)
        }
        Branching::Regenerates(pick) => {
            (Some(BranchPoint { parent_id: Some(users[pick.index(users.len())].id.clone()) }), false)
        }
    }
}

/// A `branch` frame as the server logs it when the user picks a sibling of a message on screen.
fn switch_frame(built: &ChatSnapshot, pick: &prop::sample::Index) -> ChatFrame {
    let choices: Vec<String> = built
        .messages
        .iter()
        .flat_map(|message| built.tree.siblings(&message.id).map(|siblings| siblings.ids.to_vec()).unwrap_or_default())
        .collect();
    let picked = &choices[pick.index(choices.len())];
    ChatFrame::Branch(BranchFrame { seq: None, message_id: built.tree.leaf_from(picked) })
}

/// The frames of a session log, numbered from 1, with each `done` carrying the message its frames built —
/// as the server's mapper makes it.
fn session_log(runs: &[Run]) -> Vec<ChatFrame> {
    let mut frames = Vec::new();
    let mut built = ChatSnapshot::default();
    let push = |frame: ChatFrame, frames: &mut Vec<ChatFrame>, built: &mut ChatSnapshot| {
        let frame = frame.with_seq(frames.len() as Seq + 1);
        apply(built, &frame);
        frames.push(frame);
    };
    for (r, run) in runs.iter().enumerate() {
        let answer_id = format!("a{r}");
        let call_id = |call: u8| format!("r{r}c{call}");
        let (branch, logs_prompt) = branch_point(&built, &run.branching);
        push(
            ChatFrame::Start(StartFrame {
                seq: None,
                id: answer_id.clone(),
                run_id: format!("run{r}"),
                session_id: "s".into(),
                session_file: None,
                session_reset: None,
                diagnostics: None,
                branch,
            }),
            &mut frames,
            &mut built,
        );
        let user = |id: String, text: &str| {
            ChatFrame::Message(MessageFrame {
                seq: None,
                message: ChatMessage {
                    id,
                    role: Role::User,
                    parts: vec![ChatMessagePart::text(text)],
                    created_at: None,
                    changes: None,
                    usage: None,
                },
            })
        };
        if logs_prompt {
            push(user(format!("u{r}"), &run.prompt), &mut frames, &mut built);
        }
        for (i, step) in run.steps.iter().enumerate() {
            let frame = match step {
                Step::Delta(text) => ChatFrame::Delta(DeltaFrame { seq: None, text: text.clone(), message_id: None }),
                Step::Thinking(text) => {
                    ChatFrame::Thinking(ThinkingFrame { seq: None, text: text.clone(), message_id: None })
                }
                Step::ModelMessage => lifecycle(LifecycleName::MessageStart),
                Step::Draft(call) => ChatFrame::ToolDraft(ToolDraftFrame {
                    seq: None,
                    tool_call_id: call_id(*call),
                    tool_name: "Write".into(),
                    index: u32::from(*call),
                    message_id: None,
                }),
                Step::Args(call, nested, text) => ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
                    seq: None,
                    tool_call_id: call_id(*call),
                    path: if *nested {
                        vec![PathSegment::Key("edits".into()), PathSegment::Index(0), PathSegment::Key("new".into())]
                    } else {
                        vec![PathSegment::Key("content".into())]
                    }
                    .into(),
                    text: text.clone(),
                    message_id: None,
                }),
                Step::Tool(call, state) => ChatFrame::Tool(ToolFrame {
                    seq: None,
                    part: Box::new(ChatToolPart::new("Bash", call_id(*call), *state)),
                    message_id: None,
                }),
                Step::Queue(steering) => {
                    ChatFrame::Queue(QueueFrame { seq: None, steering: steering.clone(), follow_up: Vec::new() })
                }
                Step::Steer(text) => user(format!("u{r}s{i}"), text),
                Step::Activity(name, status) => ChatFrame::State(StateFrame {
                    seq: None,
                    state: Lifecycle { name: *name, message: status.clone() },
                }),
                Step::Retry(attempt, delay_ms) => ChatFrame::Retry(RetryFrame::Start(RetryStart {
                    seq: None,
                    attempt: *attempt,
                    max_attempts: 3,
                    delay_ms: *delay_ms,
                    error_message: "503".into(),
                })),
                Step::RetryEnd => ChatFrame::Retry(RetryFrame::End(RetryEnd {
                    seq: None,
                    success: true,
                    attempt: 1,
                    final_error: None,
                })),
                Step::Compaction(true) => ChatFrame::Compaction(CompactionFrame::Start(CompactionStart {
                    seq: None,
                    reason: CompactionReason::Threshold,
                })),
                Step::Compaction(false) => ChatFrame::Compaction(CompactionFrame::End(CompactionEnd {
                    seq: None,
                    reason: CompactionReason::Threshold,
                    aborted: false,
                    will_retry: false,
                    error_message: None,
                })),
            };
            push(frame, &mut frames, &mut built);
        }
        let terminal = if run.succeeds {
            let message = built.message(&answer_id).cloned().expect("the run's answer is in the transcript");
            ChatFrame::Done(DoneFrame {
                seq: None,
                run_id: format!("run{r}"),
                message,
                session_id: "s".into(),
                session_file: None,
                session_reset: None,
            })
        } else {
            ChatFrame::Error(ErrorFrame {
                seq: None,
                message: "boom".into(),
                run_id: Some(format!("run{r}")),
                code: None,
            })
        };
        push(terminal, &mut frames, &mut built);
        if let Some(pick) = &run.then_switches
            && !built.messages.is_empty()
        {
            let frame = switch_frame(&built, pick);
            push(frame, &mut frames, &mut built);
        }
    }
    frames
}

fn lifecycle(name: LifecycleName) -> ChatFrame {
    ChatFrame::State(StateFrame { seq: None, state: Lifecycle { name, message: None } })
}

fn reduce<'a>(mut snapshot: ChatSnapshot, frames: impl IntoIterator<Item = &'a ChatFrame>) -> ChatSnapshot {
    for frame in frames {
        apply(&mut snapshot, frame);
    }
    snapshot
}

/// `GET /api/sessions/{id}` as the server answers it: the transcript without the run's answer, that answer as
/// `pending`, the plan, the other branches, and the last `seq`; through JSON, as the page gets it.
fn session_detail(snapshot: &ChatSnapshot) -> SessionDetail {
    let summary = SessionSummary {
        session_id: "s".into(),
        title: "t".into(),
        created_at: 0,
        updated_at: 0,
        status: if snapshot.is_running() { SessionStatus::Running } else { SessionStatus::Idle },
        message_count: snapshot.messages.len() as u64,
        last_seq: snapshot.last_seq,
        usage: None,
        agent: None,
    };
    let json = serde_json::to_string(&snapshot.to_detail(summary)).expect("a detail serializes");
    serde_json::from_str(&json).expect("a detail decodes")
}

/// The activity the reducer keeps after `frame`, `before` being the one before it: what the last frame that says
/// anything about it said, with its numbers and the runtime's own text; nothing once the agent or the run is done.
fn activity_after(frame: &ChatFrame, before: Option<Activity>) -> Option<Activity> {
    match frame {
        ChatFrame::Start(_) | ChatFrame::Compaction(CompactionFrame::End(_)) | ChatFrame::Retry(RetryFrame::End(_)) => {
            Some(Activity::Working)
        }
        ChatFrame::State(state) => match state.state.name {
            LifecycleName::AgentEnd | LifecycleName::AgentSettled => None,
            phase @ (LifecycleName::AgentStart
            | LifecycleName::TurnStart
            | LifecycleName::TurnEnd
            | LifecycleName::MessageStart
            | LifecycleName::MessageEnd) => Some(Activity::Phase { phase, status: state.state.message.clone() }),
        },
        ChatFrame::Compaction(CompactionFrame::Start(_)) => Some(Activity::Compacting),
        ChatFrame::Retry(RetryFrame::Start(retry)) => Some(Activity::Retrying {
            attempt: retry.attempt,
            max_attempts: retry.max_attempts,
            delay_ms: retry.delay_ms,
        }),
        ChatFrame::Done(_) | ChatFrame::Error(_) => None,
        ChatFrame::Message(_)
        | ChatFrame::Branch(_)
        | ChatFrame::Changes(_)
        | ChatFrame::Usage(_)
        | ChatFrame::AgentOptions(_)
        | ChatFrame::Delta(_)
        | ChatFrame::Thinking(_)
        | ChatFrame::ToolDraft(_)
        | ChatFrame::ToolArgsDelta(_)
        | ChatFrame::Tool(_)
        | ChatFrame::Plan(_)
        | ChatFrame::Queue(_)
        | ChatFrame::Ping => before,
    }
}

/// What a viewer sees; the activity line and the reducer's own bookkeeping may differ after a resume.
fn transcript(snapshot: &ChatSnapshot) -> (&[ChatMessage], bool, Seq, &QueueFrame) {
    (&snapshot.messages, snapshot.is_running(), snapshot.last_seq, &snapshot.queue)
}

/// The messages with adjacent text parts, and adjacent thinking parts, joined into one.
fn joined_parts(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut joined = messages.to_vec();
    for message in &mut joined {
        let mut parts: Vec<ChatMessagePart> = Vec::new();
        for part in message.parts.drain(..) {
            match (parts.last_mut(), part) {
                (Some(ChatMessagePart::Text(last)), ChatMessagePart::Text(next)) => last.text.push_str(&next.text),
                (Some(ChatMessagePart::Thinking(last)), ChatMessagePart::Thinking(next)) => {
                    last.text.push_str(&next.text)
                }
                (_, part) => parts.push(part),
            }
        }
        message.parts = parts;
    }
    joined
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_same_frames_in_any_chunking_give_the_same_snapshot(
        runs in vec(run(), 1..4),
        cut_seeds in vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let frames = session_log(&runs);
        let mut stream = Vec::new();
        for frame in &frames {
            encode_frame_into(frame, &mut stream);
        }
        let mut cuts: Vec<usize> = cut_seeds.iter().map(|i| i.index(stream.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(stream.len());
        let mut decoder = FrameDecoder::default();
        let mut snapshot = ChatSnapshot::default();
        let mut from = 0;
        // Each chunk's frames are applied as one batch, as the browser does once per animation frame.
        for cut in cuts {
            for decoded in decoder.feed(&stream[from..cut]) {
                apply(&mut snapshot, &decoded.expect("every encoded frame decodes"));
            }
            from = cut;
        }
        prop_assert!(decoder.finish().is_empty());
        prop_assert_eq!(snapshot, reduce(ChatSnapshot::default(), &frames));
    }

    #[test]
    fn the_activity_is_what_the_last_frame_about_it_said(runs in vec(run(), 1..4)) {
        let mut snapshot = ChatSnapshot::default();
        let mut expected = None;
        for frame in session_log(&runs) {
            expected = activity_after(&frame, expected);
            apply(&mut snapshot, &frame);
            prop_assert_eq!(&snapshot.activity, &expected, "after {:?}", frame);
        }
    }

    #[test]
    fn frames_re_applied_with_an_already_seen_seq_change_nothing(
        runs in vec(run(), 1..4),
        seen in any::<prop::sample::Index>(),
        replay_from in any::<prop::sample::Index>(),
    ) {
        let frames = session_log(&runs);
        let seen = seen.index(frames.len() + 1);
        let replay_from = replay_from.index(seen + 1);
        let before = reduce(ChatSnapshot::default(), &frames[..seen]);
        // A reconnect that asks from an older `seq` gets frames it already has, then the new ones.
        let replayed = reduce(before.clone(), &frames[replay_from..seen]);
        prop_assert_eq!(&replayed, &before);
        prop_assert_eq!(reduce(replayed, &frames[replay_from..]), reduce(ChatSnapshot::default(), &frames));
    }

    #[test]
    fn a_session_loaded_mid_run_and_tailed_after_its_last_seq_reconciles_onto_the_pending_message(
        runs in vec(run(), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let frames = session_log(&runs);
        let cut = cut.index(frames.len() + 1);
        let server = reduce(ChatSnapshot::default(), &frames[..cut]);
        let resumed = reduce(ChatSnapshot::from_detail(session_detail(&server)), &frames[cut..]);
        let straight = reduce(ChatSnapshot::default(), &frames);
        if runs.iter().all(|run| run.succeeds) {
            prop_assert_eq!(transcript(&resumed), transcript(&straight));
        }
        // Where a model message began is not in the detail: a run that ends in `error` (no final message to
        // replace the streamed one) may join the text of two model messages that the straight pass kept apart.
        let (messages, running, last_seq, queue) = transcript(&resumed);
        let straight_view = transcript(&straight);
        prop_assert_eq!(joined_parts(messages), joined_parts(straight_view.0));
        prop_assert_eq!((running, last_seq, queue), (straight_view.1, straight_view.2, straight_view.3));
    }

    #[test]
    fn a_stream_joined_mid_run_without_its_start_ends_with_the_runs_final_message(
        runs in vec(run(), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let frames = session_log(&runs);
        let cut = cut.index(frames.len());
        let joined = reduce(ChatSnapshot::default(), &frames[cut..]);
        let straight = reduce(ChatSnapshot::default(), &frames);
        // Every answer `done` delivered is in place under its own id, as in the straight pass.
        for frame in &frames[cut..] {
            if let ChatFrame::Done(done) = frame {
                prop_assert_eq!(joined.message(&done.message.id), straight.message(&done.message.id));
            }
        }
        // The answer streamed last is the same one, whether or not its `start` was seen.
        let tail = |s: &ChatSnapshot| s.messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.parts.clone());
        if matches!(frames.last(), Some(ChatFrame::Done(_))) {
            prop_assert_eq!(tail(&joined), tail(&straight));
        }
        prop_assert_eq!(joined.is_running(), straight.is_running());
    }

    #[test]
    fn edits_regenerations_and_branch_switches_replay_to_the_same_tree(
        runs in vec(branching_run(), 1..6),
        cut in any::<prop::sample::Index>(),
        cut_seeds in vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let frames = session_log(&runs);
        let straight = reduce(ChatSnapshot::default(), &frames);
        // The shown branch is the tree's path to its last message, and nothing is both shown and set aside.
        let shown: Vec<String> = straight.messages.iter().map(|message| message.id.clone()).collect();
        prop_assert_eq!(&straight.tree.path_to(shown.last().map(String::as_str)), &shown);
        for id in &shown {
            prop_assert!(straight.tree.shelved(id).is_none(), "{} is shown and shelved", id);
        }
        // Replayed again, through NDJSON in any chunking: the same tree.
        let mut stream = Vec::new();
        for frame in &frames {
            encode_frame_into(frame, &mut stream);
        }
        let mut cuts: Vec<usize> = cut_seeds.iter().map(|i| i.index(stream.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(stream.len());
        let (mut decoder, mut decoded, mut from) = (FrameDecoder::default(), ChatSnapshot::default(), 0);
        for cut in cuts {
            for frame in decoder.feed(&stream[from..cut]) {
                apply(&mut decoded, &frame.expect("every encoded frame decodes"));
            }
            from = cut;
        }
        prop_assert_eq!(&decoded, &straight);
        // Loaded from `GET /api/sessions/{id}` at any point and tailed from there: the same branch on screen and
        // the same forks; the same tree whole when every run ended with its final message.
        let cut = cut.index(frames.len() + 1);
        let server = reduce(ChatSnapshot::default(), &frames[..cut]);
        let resumed = reduce(ChatSnapshot::from_detail(session_detail(&server)), &frames[cut..]);
        let ids = |s: &ChatSnapshot| s.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
        prop_assert_eq!(ids(&resumed), ids(&straight));
        prop_assert_eq!(resumed.tree.to_wire().forks, straight.tree.to_wire().forks);
        if runs.iter().all(|run| run.succeeds) {
            prop_assert_eq!(&resumed.tree, &straight.tree);
            prop_assert_eq!(&resumed.messages, &straight.messages);
        }
    }
}
