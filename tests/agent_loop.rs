//! The built-in agent loop with the scripted provider and the real tools, mapped to frames: the demo, abort, queues, retries.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::mapper::EventMapper;
use chatwire::protocol::*;
use chatwire::runtime::agent::{Agent, AgentConfig, Conversation, RunControl};
use chatwire::runtime::event::AgentEvent;
use chatwire::runtime::scripted::{Script, ScriptedProvider};
use chatwire::runtime::tools::Workspace;
use support::invariants::{assert_no_null_fields, assert_run_invariants};
use tokio::sync::mpsc;

fn mapper() -> EventMapper {
    let mut counter = 0;
    EventMapper::new(
        "s",
        Box::new(|| 1_800_000_000_000),
        Box::new(move |kind| {
            counter += 1;
            format!("{kind}-{counter}")
        }),
    )
}

fn instant(mut script: Script) -> Script {
    script.delay_ms = 0;
    for turn in &mut script.turns {
        turn.delay_ms = None;
    }
    script
}

fn agent(script: Script) -> Agent {
    let config = AgentConfig { retry_base_delay: Duration::from_millis(5), ..AgentConfig::default() };
    Agent::new(Arc::new(ScriptedProvider::new(script)), config)
}

/// Runs one prompt; `react` sees every event as it happens (to answer, steer or stop). Returns the frames.
async fn run_prompt(
    agent: &Agent,
    workspace: &Workspace,
    prompt: &str,
    control: &RunControl,
    mut react: impl FnMut(&AgentEvent, &RunControl, &mpsc::UnboundedSender<AgentEvent>) + Send,
) -> Vec<ChatFrame> {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let mut conversation = Conversation::default();
    let mut mapper = mapper();
    let user =
        ChatMessage { id: "u1".into(), role: Role::User, parts: vec![ChatMessagePart::text(prompt)], created_at: None };
    let mut frames = mapper.open_run(Some(user));
    let reactions = sender.clone();
    let run = agent.run(&mut conversation, workspace, prompt.to_owned(), control, &sender);
    let collect = async {
        while let Some(event) = receiver.recv().await {
            react(&event, control, &reactions);
            let settled = event == AgentEvent::AgentSettled;
            frames.extend(mapper.map(event));
            if settled {
                break;
            }
        }
    };
    tokio::join!(run, collect);
    frames
}

fn tool_parts(frames: &[ChatFrame]) -> Vec<ChatToolPart> {
    let Some(ChatFrame::Done(done)) = frames.last() else {
        panic!("the run did not end with done: {:?}", frames.last())
    };
    done.message.parts.iter().filter_map(|p| p.as_tool().cloned()).collect()
}

#[tokio::test]
async fn the_demo_script_runs_every_tool_and_ends_with_a_markdown_answer() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(instant(Script::demo()));
    let control = RunControl::default();
    let frames = run_prompt(&agent, &workspace, "Show me what you can do", &control, |event, control, _| {
        if let AgentEvent::ToolExecutionStart { tool_call_id, tool_name, .. } = event
            && tool_name == "question"
        {
            let control = control.clone();
            let id = tool_call_id.clone();
            tokio::spawn(async move {
                // The question registers itself as the tool starts; answer once it waits.
                for _ in 0..100 {
                    if control.answer(&id, "Yes, include it".into()) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
        }
    })
    .await;

    assert_run_invariants("demo", &frames);
    for frame in &frames {
        assert_no_null_fields(&serde_json::to_value(frame).unwrap(), "demo");
    }
    let kinds: std::collections::BTreeSet<&str> = frames.iter().map(|f| f.frame_type().as_str()).collect();
    for kind in [
        "start",
        "message",
        "thinking",
        "delta",
        "tool_draft",
        "tool_args_delta",
        "tool",
        "plan",
        "state",
        "retry",
        "done",
    ] {
        assert!(kinds.contains(kind), "the demo sent no {kind} frame");
    }
    let tools = tool_parts(&frames);
    for name in ["TodoWrite", "Ls", "Bash", "Write", "Edit", "Read", "Grep", "Glob", "Question"] {
        let part = tools.iter().find(|t| t.tool_name == name).unwrap_or_else(|| panic!("no {name} part"));
        assert_eq!(part.state, ToolState::OutputAvailable, "{name}: {:?}", part.error_text);
    }
    let question = tools.iter().find(|t| t.tool_name == "Question").unwrap();
    assert_eq!(question.output.as_ref().unwrap()["answer"], "Yes, include it");
    let edit = tools.iter().find(|t| t.tool_name == "Edit").unwrap();
    assert!(edit.output.as_ref().unwrap()["diff"].as_str().unwrap().contains("+    for name in"));
    let written = std::fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(written.contains(r#"["world", "chatwire", "you"]"#), "{written}");
    let Some(ChatFrame::Plan(plan)) = frames.iter().rev().find(|f| matches!(f, ChatFrame::Plan(_))) else {
        unreachable!()
    };
    assert_eq!((plan.completed, plan.total), (5, 5));
    let Some(ChatFrame::Done(done)) = frames.last() else { unreachable!() };
    let answer = done.message.parts.iter().rev().find_map(|p| match p {
        ChatMessagePart::Text(t) => Some(t.text.clone()),
        _ => None,
    });
    assert!(answer.unwrap().contains("| step | tool | result |"));
}

fn script(json: &str) -> Script {
    instant(Script::parse(json).unwrap())
}

#[tokio::test]
async fn stop_during_a_command_kills_it_and_keeps_the_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(
        r#"{"turns":[{"text":"Running it.","toolCalls":[{"name":"bash","arguments":{"command":"echo started; sleep 30"}}]},{"text":"never"}]}"#,
    ));
    let control = RunControl::default();
    let started = Instant::now();
    let frames = run_prompt(&agent, &workspace, "run", &control, |event, control, _| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = event
            && partial_result.text.contains("started")
        {
            control.cancel.cancel();
        }
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10), "stop took {:?}", started.elapsed());
    assert_run_invariants("abort", &frames);
    let bash = tool_parts(&frames).into_iter().find(|t| t.tool_name == "Bash").unwrap();
    assert_eq!(bash.state, ToolState::OutputError);
    assert_eq!(bash.error_text.as_deref(), Some("Command aborted"));
    let Some(ChatFrame::Done(done)) = frames.last() else { unreachable!() };
    assert_eq!(done.message.parts[0], ChatMessagePart::text("Running it."));
}

#[tokio::test]
async fn steering_is_delivered_after_the_tool_calls_and_follow_ups_when_the_agent_would_stop() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(
        r#"{"turns":[
            {"text":"Listing.","toolCalls":[{"name":"ls","arguments":{}}]},
            {"text":"Steered."},
            {"text":"Followed up."}
        ]}"#,
    ));
    let control = RunControl::default();
    let frames = run_prompt(&agent, &workspace, "go", &control, |event, control, events| {
        if let AgentEvent::ToolExecutionStart { .. } = event {
            control.enqueue("then say steered".into(), true, events);
            control.enqueue("and then follow up".into(), false, events);
        }
    })
    .await;
    assert_run_invariants("queues", &frames);
    let delivered: Vec<String> = frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Message(m) => match &m.message.parts[0] {
                ChatMessagePart::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(delivered, ["go", "then say steered", "and then follow up"]);
    let queues: Vec<(usize, usize)> = frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Queue(q) => Some((q.steering.len(), q.follow_up.len())),
            _ => None,
        })
        .collect();
    assert_eq!(queues, [(1, 0), (1, 1), (0, 1), (0, 0)]);
    let Some(ChatFrame::Done(done)) = frames.last() else { unreachable!() };
    let texts: Vec<&str> = done
        .message
        .parts
        .iter()
        .filter_map(|p| match p {
            ChatMessagePart::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Listing.", "Steered.", "Followed up."]);
}

#[tokio::test]
async fn a_failing_model_is_retried_then_the_run_ends_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(r#"{"turns":[{"text":"x","fail":{"status":503,"message":"down","times":99}}]}"#));
    let frames = run_prompt(&agent, &workspace, "hi", &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("retry", &frames);
    let retries = frames.iter().filter(|f| matches!(f, ChatFrame::Retry(RetryFrame::Start(_)))).count();
    assert_eq!(retries, 3);
    let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error, got {:?}", frames.last()) };
    assert_eq!(error.message, "503 down");
    assert_eq!(error.code.as_deref(), Some("provider_error"));
}

#[tokio::test]
async fn a_bad_request_fails_at_once_without_retrying() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(r#"{"turns":[{"text":"x","fail":{"status":400,"message":"bad temperature"}}]}"#));
    let frames = run_prompt(&agent, &workspace, "hi", &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("fatal", &frames);
    assert!(!frames.iter().any(|f| matches!(f, ChatFrame::Retry(_))));
    let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error") };
    assert_eq!(error.message, "400 bad temperature");
}
