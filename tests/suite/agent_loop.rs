//! The built-in agent loop with the scripted provider and the real tools, mapped to frames: the demo, abort, queues,
//! retries, plan mode.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::invariants::{assert_no_null_fields, assert_run_invariants, text_parts};
use crate::support::mapper::map_until_settled;
use chatwire::mapper::{EventMapper, RunMeta};
use chatwire::protocol::*;
use chatwire::runtime::agent::{Agent, AgentConfig, ApprovalPolicy, Conversation, TodoStatus};
use chatwire::runtime::event::AgentEvent;
use chatwire::runtime::price::TokenPrice;
use chatwire::runtime::provider::{ModelMessage, ModelRequest, ModelStop, Provider, ProviderFuture, StreamEvent};
use chatwire::runtime::scripted::{Script, ScriptedProvider};
use chatwire::runtime::seam::{RunControl, RunOptions};
use chatwire::runtime::tools::{CancellationToken, OptionalTools, SearchBackend, Workspace, find_python3};
use serde_json::json;
use tokio::sync::mpsc;

fn mapper() -> EventMapper {
    crate::support::mapper::deterministic_mapper("s")
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

/// Runs one prompt in a fresh session; `react` sees every event as it happens (to answer, steer or stop).
/// Returns the frames.
async fn run_prompt(
    agent: &Agent,
    workspace: &Workspace,
    prompt: &str,
    control: &RunControl,
    react: impl FnMut(&AgentEvent, &RunControl, &mpsc::UnboundedSender<AgentEvent>) + Send,
) -> Vec<ChatFrame> {
    let mut session = Session::new();
    session.run(agent, workspace, prompt, &RunOptions::default(), control, react).await
}

/// What the server keeps of one session between runs: the model's conversation and the frame mapper.
struct Session {
    conversation: Conversation,
    mapper: EventMapper,
}

impl Session {
    fn new() -> Self {
        Session { conversation: Conversation::default(), mapper: mapper() }
    }

    /// Runs one prompt with `options`, as `POST /api/chat` would; returns the run's frames.
    async fn run(
        &mut self,
        agent: &Agent,
        workspace: &Workspace,
        prompt: &str,
        options: &RunOptions,
        control: &RunControl,
        mut react: impl FnMut(&AgentEvent, &RunControl, &mpsc::UnboundedSender<AgentEvent>) + Send,
    ) -> Vec<ChatFrame> {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let user = ChatMessage {
            id: "u1".into(),
            role: Role::User,
            parts: vec![ChatMessagePart::text(prompt)],
            created_at: None,
            changes: None,
            usage: None,
        };
        // The server opens the run in the mode the run works in, which a plan action decides.
        let mut frames =
            self.mapper.open_run(RunMeta { prompt: Some(user), mode: options.effective_mode(), ..RunMeta::default() });
        let reactions = sender.clone();
        let run = agent.run(&mut self.conversation, workspace, prompt.into(), options, control, &sender);
        let collect =
            map_until_settled(&mut receiver, &mut self.mapper, &mut frames, |event| react(event, control, &reactions));
        tokio::join!(run, collect);
        frames
    }

    /// A run with `mode: "plan"`.
    async fn plan(&mut self, agent: &Agent, workspace: &Workspace, prompt: &str) -> Vec<ChatFrame> {
        let options = RunOptions { mode: AgentMode::Plan, plan_action: None };
        self.run(agent, workspace, prompt, &options, &RunControl::default(), |_, _, _| {}).await
    }
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
    let (python, _) = find_python3().expect("python3 on PATH (./x installs it)");
    let config = AgentConfig {
        retry_base_delay: Duration::from_millis(5),
        optional_tools: OptionalTools { python: Some(python), web_search: None },
        ..AgentConfig::default()
    };
    let agent = Agent::new(Arc::new(ScriptedProvider::new(instant(Script::demo()))), config);
    let control = RunControl::default();
    let frames = run_prompt(&agent, &workspace, "Show me what you can do", &control, |event, control, _| {
        if let AgentEvent::ToolExecutionStart { tool_call_id, tool_name, .. } = event
            && tool_name == "question"
        {
            answer_when_asked(control, tool_call_id, "Yes, include it");
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
    for name in
        ["TodoWrite", "Ls", "Bash", "IPython", "Write", "Edit", "Read", "Grep", "Glob", "Question", "Chart", "Task"]
    {
        let part = tools.iter().find(|t| t.tool_name() == name).unwrap_or_else(|| panic!("no {name} part"));
        assert_eq!(part.state, ToolState::OutputAvailable, "{name}: {:?}", part.error_text);
    }
    let ipython = tools.iter().find(|t| t.tool_name() == "IPython").unwrap();
    let output = ipython.output.as_ref().unwrap();
    assert_eq!(output["exitCode"], 0);
    let printed = output["output"].as_str().unwrap();
    assert!(printed.starts_with("plan         1  running total 1\n"), "{printed}");
    assert!(printed.ends_with("search       2  running total 10\n'10 calls in 5 steps'\n"), "{printed}");
    let chart = tools.iter().find(|t| t.tool_name() == "Chart").unwrap();
    chatwire::chart::Chart::parse(&chart.output.as_ref().unwrap()["chart"]).expect("the demo's chart is drawable");
    let task = tools.iter().find(|t| t.tool_name() == "Task").unwrap();
    assert!(task.output.as_ref().unwrap()["text"].as_str().unwrap().contains("`greet` (line 4)"));
    let children: Vec<(&ToolKind, ToolState)> = tools
        .iter()
        .filter(|t| t.tool_call_id.starts_with(&format!("{}:", task.tool_call_id)))
        .map(|t| (&t.kind, t.state))
        .collect();
    assert_eq!(
        children,
        [(&ToolKind::Grep, ToolState::OutputAvailable), (&ToolKind::Read, ToolState::OutputAvailable)]
    );
    let task_at = tools.iter().position(|t| t.tool_name() == "Task").unwrap();
    let first_child = tools.iter().position(|t| t.tool_call_id.contains(':')).unwrap();
    assert!(task_at < first_child, "the sub-agent's calls come after their task's row");
    let question = tools.iter().find(|t| t.tool_name() == "Question").unwrap();
    assert_eq!(question.output.as_ref().unwrap()["answer"], "Yes, include it");
    let edit = tools.iter().find(|t| t.tool_name() == "Edit").unwrap();
    assert!(edit.output.as_ref().unwrap()["diff"].as_str().unwrap().contains("+    for name in"));
    let written = std::fs::read_to_string(dir.path().join("hello.py")).unwrap();
    assert!(written.contains(r#"["world", "chatwire", "you"]"#), "{written}");
    assert!(written.contains("Greet everyone on the list."), "the optional edit runs without approvals: {written}");
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

/// Answers the question `id` once it waits: the tool registers it a moment after its start event is sent. After the
/// hang guard it stops the run instead, so the test fails on the missing answer rather than hanging on it.
fn answer_when_asked(control: &RunControl, id: &str, answer: &'static str) {
    const HANG_GUARD: Duration = Duration::from_secs(60);
    let (control, id) = (control.clone(), id.to_owned());
    tokio::spawn(async move {
        let answered = async {
            while !control.answer(&id, answer.into()) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        if tokio::time::timeout(HANG_GUARD, answered).await.is_err() {
            control.cancel.cancel();
        }
    });
}

fn script(json: &str) -> Script {
    instant(Script::parse(json).unwrap())
}

#[tokio::test]
async fn stop_during_a_command_kills_it_and_keeps_the_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(
        r#"{"turns":[{"text":"Running it.","toolCalls":[{"name":"bash","arguments":{"command":"echo started; sleep 1000"}}]},{"text":"never"}]}"#,
    ));
    let control = RunControl::default();
    let frames = run_prompt(&agent, &workspace, "run", &control, |event, control, events| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = event
            && partial_result.text.contains("started")
        {
            assert!(control.enqueue("and then this".into(), false, events));
            control.cancel.cancel();
        }
    })
    .await;
    assert_run_invariants("abort", &frames);
    let queues: Vec<usize> = frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Queue(q) => Some(q.steering.len() + q.follow_up.len()),
            _ => None,
        })
        .collect();
    assert_eq!(queues, [1, 0], "Stop drops the waiting follow-up, and the queue says so");
    let bash = tool_parts(&frames).into_iter().find(|t| t.tool_name() == "Bash").unwrap();
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
            {"text":"Asking.","toolCalls":[{"name":"question","arguments":{"question":"Go on?"}}]},
            {"text":"Steered."},
            {"text":"Followed up."}
        ]}"#,
    ));
    let control = RunControl::default();
    let frames = run_prompt(&agent, &workspace, "go", &control, |event, control, events| {
        // The question holds the run inside its tool call until it is answered, so both messages are queued while
        // the call runs, however slowly this test is scheduled.
        if let AgentEvent::ToolExecutionStart { tool_call_id, .. } = event {
            assert!(control.enqueue("then say steered".into(), true, events));
            assert!(control.enqueue("and then follow up".into(), false, events));
            answer_when_asked(control, tool_call_id, "yes");
        }
    })
    .await;
    assert!(
        !control.enqueue("too late".into(), true, &tokio::sync::mpsc::unbounded_channel().0),
        "a finished run refuses new messages instead of dropping them"
    );
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
    assert_eq!(text_parts(&done.message), ["Asking.", "Steered.", "Followed up."]);
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

/// A provider that records every request and plays canned answers by call number (the last one repeats).
struct Recorder {
    answers: Vec<(Vec<StreamEvent>, ModelStop)>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl Recorder {
    fn new(answers: Vec<(Vec<StreamEvent>, ModelStop)>) -> Self {
        Recorder { answers, requests: Mutex::new(Vec::new()) }
    }

    fn tool_names(&self, call: usize) -> Vec<String> {
        self.requests.lock().unwrap()[call].tools.iter().map(|tool| tool.name.clone()).collect()
    }

    fn request(&self, call: usize) -> ModelRequest {
        self.requests.lock().unwrap()[call].clone()
    }
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        _cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        let call = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(request.clone());
            requests.len() - 1
        };
        let (events, stop) = self.answers[call.min(self.answers.len() - 1)].clone();
        Box::pin(async move {
            for event in events {
                sink(event);
            }
            Ok(stop)
        })
    }
}

/// A canned answer that calls one tool.
fn calls(name: &str, arguments: serde_json::Value) -> (Vec<StreamEvent>, ModelStop) {
    let events = vec![
        StreamEvent::ToolCallStart { index: 0, id: format!("{name}-call"), name: name.into() },
        StreamEvent::ToolCallDelta { index: 0, fragment: arguments.to_string() },
    ];
    (events, ModelStop::ToolUse)
}

fn says(text: &str) -> (Vec<StreamEvent>, ModelStop) {
    (vec![StreamEvent::TextDelta(text.into())], ModelStop::Stop)
}

fn todos(statuses: &[&str]) -> serde_json::Value {
    let items: Vec<_> = statuses
        .iter()
        .enumerate()
        .map(|(i, status)| json!({"text": format!("step {}", i + 1), "status": status}))
        .collect();
    json!({ "todos": items })
}

fn plan_frames(frames: &[ChatFrame]) -> Vec<&PlanFrame> {
    frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Plan(plan) => Some(plan),
            _ => None,
        })
        .collect()
}

fn last_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ModelMessage::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn plan_mode_offers_only_read_only_tools_and_execute_offers_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let provider = Arc::new(Recorder::new(vec![
        calls("todo_write", todos(&["pending", "pending"])),
        says("The plan has two steps."),
        says("Done."),
    ]));
    let agent = Agent::new(provider.clone(), AgentConfig::default());
    let mut session = Session::new();

    let planned = session.plan(&agent, &workspace, "Add a greeting").await;
    assert_run_invariants("plan", &planned);
    assert_eq!(provider.tool_names(0), ["read", "grep", "glob", "ls", "todo_write", "question", "chart", "task"]);
    assert_eq!(provider.tool_names(1), provider.tool_names(0), "the second model call of the plan run");
    let system = provider.request(0).system;
    assert!(system.contains("plan mode") && system.contains("todo_write"), "{system}");
    assert_eq!(last_user_text(&provider.request(0)), "Add a greeting");

    let options = RunOptions { mode: AgentMode::Agent, plan_action: Some(PlanAction::Execute) };
    let executed = session.run(&agent, &workspace, "", &options, &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("execute", &executed);
    assert_eq!(
        provider.tool_names(2),
        ["bash", "read", "write", "edit", "grep", "glob", "ls", "todo_write", "question", "chart", "task"]
    );
    assert!(!provider.request(2).system.contains("plan mode"));
    let prompt = last_user_text(&provider.request(2));
    assert!(prompt.starts_with("Execute the plan"), "{prompt}");
    assert!(prompt.contains("1. [pending] step 1\n2. [pending] step 2"), "{prompt}");
}

#[tokio::test]
async fn a_plan_run_ends_with_a_pending_decision_in_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    std::fs::write(dir.path().join("main.py"), "print('hi')\n").unwrap();
    let agent = agent(script(
        r#"{"turns":[
            {"text":"Looking first.","toolCalls":[{"name":"read","arguments":{"path":"main.py"}}]},
            {"toolCalls":[{"name":"todo_write","arguments":{"todos":[
                {"text":"Add a greet function","status":"pending"},
                {"text":"Call it from main","status":"pending"},
                {"text":"Run it","status":"pending"}]}}]},
            {"text":"Three steps: add greet, call it, run it."}
        ]}"#,
    ));
    let mut session = Session::new();
    let frames = session.plan(&agent, &workspace, "Plan a greeting").await;
    assert_run_invariants("plan", &frames);

    let plans = plan_frames(&frames);
    assert_eq!(plans.len(), 2, "one per todo_write, then the decision");
    assert!(plans.iter().all(|p| p.mode == AgentMode::Plan && p.state.mode == AgentMode::Plan));
    assert!(plans.iter().all(|p| !p.executing && !p.state.executing));
    assert!(!plans[0].state.pending_decision);
    let decision = plans[1];
    assert!(decision.state.pending_decision);
    assert_eq!((decision.completed, decision.total), (0, 3));
    let steps: Vec<&str> = decision.state.todos.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(steps, ["Add a greet function", "Call it from main", "Run it"]);
    // The decision is the run's last word before it settles.
    let at = frames.iter().position(|f| matches!(f, ChatFrame::Plan(p) if p.state.pending_decision)).unwrap();
    assert!(matches!(&frames[at + 1], ChatFrame::State(s) if s.state.name == LifecycleName::AgentSettled));
    assert!(matches!(frames.last(), Some(ChatFrame::Done(_))));
    let plan = session.conversation.plan().expect("the conversation keeps the plan");
    assert_eq!(plan.len(), 3);
    assert!(plan.iter().all(|todo| todo.status == TodoStatus::Pending));
}

#[tokio::test]
async fn a_write_in_plan_mode_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(
        r#"{"turns":[
            {"toolCalls":[
                {"name":"write","arguments":{"path":"notes.txt","content":"changed"}},
                {"name":"bash","arguments":{"command":"touch touched.txt"}}]},
            {"toolCalls":[{"name":"todo_write","arguments":{"todos":[{"text":"Write notes.txt","status":"pending"}]}}]},
            {"text":"Planned."}
        ]}"#,
    ));
    let mut session = Session::new();
    let options = RunOptions { mode: AgentMode::Plan, plan_action: None };
    let mut started = Vec::new();
    let frames = session
        .run(&agent, &workspace, "Plan it", &options, &RunControl::default(), |event, _, _| {
            if let AgentEvent::ToolExecutionStart { tool_name, .. } = event {
                started.push(tool_name.clone());
            }
        })
        .await;
    assert_run_invariants("refused", &frames);
    assert_eq!(started, ["todo_write"], "refused calls never start");
    assert!(!dir.path().join("notes.txt").exists());
    assert!(!dir.path().join("touched.txt").exists());
    let tools = tool_parts(&frames);
    for name in ["Write", "Bash"] {
        let part = tools.iter().find(|t| t.tool_name() == name).unwrap();
        assert_eq!(part.state, ToolState::OutputError);
        let error = part.error_text.as_deref().unwrap();
        assert!(error.contains("not available in plan mode"), "{name}: {error}");
    }
    let last_plan = *plan_frames(&frames).last().unwrap();
    assert!(last_plan.state.pending_decision);
}

#[tokio::test]
async fn executing_the_plan_reports_progress_up_to_total_of_total() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let write = |path: &str, statuses: &[&str]| {
        json!({"toolCalls": [
            {"name": "todo_write", "arguments": todos(statuses)},
            {"name": "write", "arguments": {"path": path, "content": path}}
        ]})
    };
    let turns = json!({"turns": [
        {"toolCalls": [{"name": "todo_write", "arguments": todos(&["pending", "pending", "pending"])}]},
        {"text": "Three steps, one file each."},
        write("a.txt", &["in_progress", "pending", "pending"]),
        write("b.txt", &["completed", "in_progress", "pending"]),
        write("c.txt", &["completed", "completed", "in_progress"]),
        {"toolCalls": [{"name": "todo_write", "arguments": todos(&["completed", "completed", "completed"])}]},
        {"text": "All three files are written."}
    ]});
    let agent = agent(script(&turns.to_string()));
    let mut session = Session::new();
    let planned = session.plan(&agent, &workspace, "Plan three files").await;
    assert!(plan_frames(&planned).last().unwrap().state.pending_decision);

    let options = RunOptions { mode: AgentMode::Agent, plan_action: Some(PlanAction::Execute) };
    let frames = session.run(&agent, &workspace, "Go ahead", &options, &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("execute", &frames);
    let progress: Vec<(AgentMode, bool, u32, u32, bool)> = plan_frames(&frames)
        .iter()
        .map(|p| (p.mode, p.executing, p.completed, p.total, p.state.pending_decision))
        .collect();
    assert_eq!(
        progress,
        [
            (AgentMode::Agent, true, 0, 3, false),
            (AgentMode::Agent, true, 1, 3, false),
            (AgentMode::Agent, true, 2, 3, false),
            (AgentMode::Agent, false, 3, 3, false),
        ]
    );
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(std::fs::read_to_string(dir.path().join(file)).unwrap(), file);
    }
    let plan = session.conversation.plan().unwrap();
    assert!(plan.iter().all(|todo| todo.status == TodoStatus::Completed));
    // The transcript shows what the user typed; the model got the plan with it.
    let shown = frames.iter().find_map(|f| match f {
        ChatFrame::Message(m) => Some(m.message.parts[0].clone()),
        _ => None,
    });
    assert_eq!(shown, Some(ChatMessagePart::text("Go ahead")));
    let seen = session
        .conversation
        .messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .next_back()
        .unwrap();
    assert!(seen.contains("3. [pending] step 3") && seen.ends_with("The user adds: Go ahead"), "{seen}");
}

#[tokio::test]
async fn refine_plans_again_with_the_users_change() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let provider = Arc::new(Recorder::new(vec![
        calls("todo_write", todos(&["pending"])),
        says("One step."),
        calls("todo_write", todos(&["pending", "pending"])),
        says("Two steps now."),
    ]));
    let agent = Agent::new(provider.clone(), AgentConfig::default());
    let mut session = Session::new();
    session.plan(&agent, &workspace, "Plan it").await;

    // `refine` plans again even when the request says agent mode.
    let options = RunOptions { mode: AgentMode::Agent, plan_action: Some(PlanAction::Refine) };
    let frames =
        session.run(&agent, &workspace, "add a test step", &options, &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("refine", &frames);
    assert_eq!(provider.tool_names(2), ["read", "grep", "glob", "ls", "todo_write", "question", "chart", "task"]);
    let prompt = last_user_text(&provider.request(2));
    assert!(prompt.starts_with("Revise the plan with this change: add a test step"), "{prompt}");
    assert!(prompt.contains("1. [pending] step 1"), "{prompt}");
    let decision = *plan_frames(&frames).last().unwrap();
    assert!(decision.state.pending_decision && decision.mode == AgentMode::Plan);
    assert_eq!(decision.total, 2);
}

fn agent_asking(script: Script, approval: ApprovalPolicy) -> Agent {
    let config = AgentConfig { approval, ..AgentConfig::default() };
    Agent::new(Arc::new(ScriptedProvider::new(script)), config)
}

const WRITE_THEN_READ: &str = r#"{"delayMs": 0, "turns":[
    {"text":"Writing.","toolCalls":[{"name":"write","arguments":{"path":"note.txt","content":"hi\n"}},
                                    {"name":"read","arguments":{"path":"note.txt"}}]},
    {"text":"Finished."}
]}"#;

/// Runs WRITE_THEN_READ under `approval`, deciding every approval request with `approve`.
async fn decided_run(approval: ApprovalPolicy, approve: bool) -> (Vec<ChatFrame>, bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent_asking(script(WRITE_THEN_READ), approval);
    let control = RunControl::default();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    let frames = run_prompt(&agent, &workspace, "write a note", &control, move |event, control, _| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, tool_name, .. } = event {
            record.lock().unwrap().push(tool_name.clone());
            assert!(control.decide(tool_call_id, approve), "the call waits for a decision");
            assert!(!control.decide(tool_call_id, !approve), "a second decision finds nothing waiting");
        }
    })
    .await;
    let written = dir.path().join("note.txt").exists();
    let asked = asked.lock().unwrap().clone();
    (frames, written, asked)
}

fn states_of(frames: &[ChatFrame], tool: &str) -> Vec<ToolState> {
    frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Tool(t) if t.part.tool_name() == tool => Some(t.part.state),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_denied_write_is_not_run_and_ends_denied_while_reads_need_no_approval() {
    let (frames, written, asked) = decided_run(ApprovalPolicy::Writes, false).await;
    assert_run_invariants("denied", &frames);
    assert_eq!(asked, ["write"], "under `writes` only the write waits");
    assert!(!written, "a denied write touches nothing");
    assert_eq!(
        states_of(&frames, "Write").last().copied(),
        Some(ToolState::OutputDenied),
        "{:?}",
        states_of(&frames, "Write")
    );
    assert!(states_of(&frames, "Write").contains(&ToolState::ApprovalRequested));
    let Some(ChatFrame::Done(done)) = frames.last() else { panic!("the run ends with done") };
    assert_eq!(text_parts(&done.message), ["Writing.", "Finished."]);
}

#[tokio::test]
async fn the_model_is_told_that_a_call_was_denied() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent_asking(script(WRITE_THEN_READ), ApprovalPolicy::Writes);
    let mut session = Session::new();
    session
        .run(&agent, &workspace, "write", &RunOptions::default(), &RunControl::default(), |event, control, _| {
            if let AgentEvent::ToolApprovalRequest { tool_call_id, .. } = event {
                assert!(control.decide(tool_call_id, false));
            }
        })
        .await;
    let told: Vec<&str> = session
        .conversation
        .messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::ToolResult { tool_name, text, is_error: true, .. } if tool_name == "write" => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(told, ["The user denied this call; it was not run. Ask or try another way."]);
}

#[tokio::test]
async fn an_approved_write_runs_once_and_always_asks_for_reads_too() {
    let (frames, written, asked) = decided_run(ApprovalPolicy::Always, true).await;
    assert_run_invariants("approved", &frames);
    assert_eq!(asked, ["write", "read"]);
    assert!(written);
    let write = states_of(&frames, "Write");
    assert!(
        write.ends_with(&[ToolState::ApprovalRequested, ToolState::InputAvailable, ToolState::OutputAvailable]),
        "the written arguments wait, then run once: {write:?}"
    );

    let (_, written, asked) = decided_run(ApprovalPolicy::Never, false).await;
    assert!(asked.is_empty() && written, "`never` asks nothing");
}

/// A script that proposes an edit of `f.txt`, then finishes.
const EDIT_F: &str = r#"{"delayMs": 0, "turns":[
    {"text":"Editing.","toolCalls":[{"name":"edit","arguments":{"path":"f.txt","oldText":"one","newText":"ONE"}}]},
    {"text":"Finished."}
]}"#;

#[tokio::test]
async fn an_approved_edit_is_not_applied_when_the_file_changed_while_it_waited() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    let agent = agent_asking(script(EDIT_F), ApprovalPolicy::Writes);
    let control = RunControl::default();
    let file = dir.path().join("f.txt");
    let mut session = Session::new();
    let frames = session
        .run(&agent, &workspace, "edit", &RunOptions::default(), &control, move |event, control, _| {
            if let AgentEvent::ToolApprovalRequest { tool_call_id, .. } = event {
                // Someone changes the file between the proposal and the approval; the edit would still apply.
                std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
                assert!(control.decide(tool_call_id, true));
            }
        })
        .await;
    assert!(
        session.conversation.messages.iter().any(|m| matches!(m,
            ModelMessage::ToolResult { text, is_error: true, .. } if text == chatwire::runtime::agent::FILE_CHANGED)),
        "the model is told why nothing was written"
    );
    assert_run_invariants("file changed", &frames);
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "one\ntwo\nthree\n", "nothing written");
    let edit = tool_parts(&frames).into_iter().find(|t| t.tool_name() == "Edit").unwrap();
    assert_eq!(edit.state, ToolState::OutputError);
    assert_eq!(edit.error_text.as_deref(), Some(chatwire::runtime::agent::FILE_CHANGED));
    let states = states_of(&frames, "Edit");
    assert!(states.ends_with(&[ToolState::ApprovalRequested, ToolState::OutputError]), "never ran: {states:?}");

    // Unchanged, the same approval applies the edit.
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    let agent = agent_asking(script(EDIT_F), ApprovalPolicy::Writes);
    let frames = run_prompt(&agent, &workspace, "edit", &RunControl::default(), |event, control, _| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, .. } = event {
            assert!(control.decide(tool_call_id, true));
        }
    })
    .await;
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "ONE\ntwo\n");
    let edit = tool_parts(&frames).into_iter().find(|t| t.tool_name() == "Edit").unwrap();
    assert_eq!(edit.state, ToolState::OutputAvailable, "{:?}", edit.error_text);
}

#[tokio::test]
async fn a_sub_agents_calls_nest_under_its_task_and_wait_for_approval_like_the_agents_own() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent_asking(
        script(
            r#"{"delayMs": 0,
                "turns": [
                    {"text":"Delegating.","toolCalls":[{"name":"task","arguments":{"description":"note","prompt":"write a note"}}]},
                    {"text":"Done."}
                ],
                "subagents": [{"prompt": "write a note", "turns": [
                    {"toolCalls":[{"name":"write","arguments":{"path":"note.txt","content":"hi"}},
                                  {"name":"question","arguments":{"question":"?"}}]},
                    {"text":"Wrote note.txt."}
                ]}]}"#,
        ),
        ApprovalPolicy::Writes,
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    let frames = run_prompt(&agent, &workspace, "go", &RunControl::default(), move |event, control, _| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, .. } = event {
            record.lock().unwrap().push(tool_call_id.clone());
            assert!(control.decide(tool_call_id, true));
        }
    })
    .await;
    assert_run_invariants("task", &frames);
    let tools = tool_parts(&frames);
    let task = tools.iter().find(|t| t.tool_name() == "Task").unwrap();
    assert_eq!(task.state, ToolState::OutputAvailable, "{:?}", task.error_text);
    assert_eq!(task.output.as_ref().unwrap()["text"], "Wrote note.txt.");
    let write_id = format!("{}:call_0_0", task.tool_call_id);
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        std::slice::from_ref(&write_id),
        "the sub-agent's write waited under its nested id"
    );
    let write = tools.iter().find(|t| t.tool_call_id == write_id).unwrap();
    assert_eq!((&write.kind, write.state), (&ToolKind::Write, ToolState::OutputAvailable));
    let question = tools.iter().find(|t| t.tool_call_id == format!("{}:call_0_1", task.tool_call_id)).unwrap();
    assert_eq!(question.state, ToolState::OutputError);
    assert_eq!(question.error_text.as_deref(), Some("`question` is not available to a sub-agent"));
    assert_eq!(std::fs::read_to_string(dir.path().join("note.txt")).unwrap(), "hi");
    let Some(ChatFrame::Done(done)) = frames.last() else { unreachable!() };
    assert_eq!(text_parts(&done.message), ["Delegating.", "Done."], "the sub-agent's text is only its report");
}

/// The optional tools with a python3 from PATH and a search backend nobody listens on.
fn optional_tools() -> OptionalTools {
    let (python, _) = find_python3().expect("python3 on PATH (./x installs it)");
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let web_search = Some(SearchBackend::new(&format!("http://{unused}/search")).unwrap());
    OptionalTools { python: Some(python), web_search }
}

#[tokio::test]
async fn optional_tools_are_offered_by_mode_web_search_in_plan_mode_too() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let provider = Arc::new(Recorder::new(vec![says("Planned."), says("Done.")]));
    let config = AgentConfig { optional_tools: optional_tools(), ..AgentConfig::default() };
    let agent = Agent::new(provider.clone(), config);
    let mut session = Session::new();
    session.plan(&agent, &workspace, "Find out").await;
    assert_eq!(
        provider.tool_names(0),
        ["read", "grep", "glob", "ls", "web_search", "todo_write", "question", "chart", "task"],
        "ipython runs code, so plan mode leaves it out"
    );
    session.run(&agent, &workspace, "Do it", &RunOptions::default(), &RunControl::default(), |_, _, _| {}).await;
    assert_eq!(
        provider.tool_names(1),
        [
            "bash",
            "read",
            "write",
            "edit",
            "grep",
            "glob",
            "ls",
            "ipython",
            "web_search",
            "todo_write",
            "question",
            "chart",
            "task"
        ]
    );
}

#[tokio::test]
async fn under_writes_ipython_waits_for_approval_and_web_search_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let config =
        AgentConfig { approval: ApprovalPolicy::Writes, optional_tools: optional_tools(), ..AgentConfig::default() };
    let agent = Agent::new(
        Arc::new(ScriptedProvider::new(script(
            r#"{"turns":[{"text":"Both.","toolCalls":[
                {"name":"ipython","arguments":{"code":"print(6 * 7)"}},
                {"name":"web_search","arguments":{"query":"rust"}}]},{"text":"Finished."}]}"#,
        ))),
        config,
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    let frames = run_prompt(&agent, &workspace, "go", &RunControl::default(), move |event, control, _| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, tool_name, .. } = event {
            record.lock().unwrap().push(tool_name.clone());
            assert!(control.decide(tool_call_id, true));
        }
    })
    .await;
    assert_run_invariants("optional tools", &frames);
    assert_eq!(*asked.lock().unwrap(), ["ipython"]);
    let tools = tool_parts(&frames);
    let ipython = tools.iter().find(|t| t.tool_name() == "IPython").unwrap();
    assert_eq!(ipython.output, Some(json!({"output": "42\n", "exitCode": 0})));
    let search = tools.iter().find(|t| t.tool_name() == "WebSearch").unwrap();
    assert_eq!(search.state, ToolState::OutputError, "nobody listens at the backend's address");
    assert!(search.error_text.as_deref().unwrap().starts_with("the search backend could not be reached"));
}

#[tokio::test]
async fn each_model_call_logs_its_priced_usage_and_the_answer_sums_them() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let turns = r#"{"turns":[
        {"text":"Looking.","toolCalls":[{"name":"ls","arguments":{}}],"usage":{"input":2000,"output":100}},
        {"text":"Done.","usage":{"input":500,"output":50,"cacheRead":2100}}
    ]}"#;
    let price = TokenPrice { input: 3.0, output: 15.0, cache_read: Some(0.3), cache_write: None };
    let config =
        AgentConfig { context_window: 10_000, compaction_threshold: 0.5, price: Some(price), ..AgentConfig::default() };
    let agent = Agent::new(Arc::new(ScriptedProvider::new(script(turns))), config);
    let frames = run_prompt(&agent, &workspace, "look", &RunControl::default(), |_, _, _| {}).await;
    assert_run_invariants("usage", &frames);
    let calls: Vec<&UsageFrame> = frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::Usage(usage) => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "one per model call");
    let cost = |usage: &TokenUsage| usage.cost.expect("a priced model's calls have a cost");
    assert!((cost(&calls[0].usage) - (2000.0 * 3.0 + 100.0 * 15.0) / 1e6).abs() < 1e-12);
    assert!((cost(&calls[1].usage) - (500.0 * 3.0 + 50.0 * 15.0 + 2100.0 * 0.3) / 1e6).abs() < 1e-12);
    let contexts: Vec<ContextUse> = calls.iter().map(|call| call.context.clone().unwrap()).collect();
    assert_eq!(contexts[0], ContextUse { used: 2100, window: Some(10_000), compact_at: Some(5_000) });
    assert_eq!(contexts[1].used, 2650);
    let Some(ChatFrame::Done(done)) = frames.last() else { panic!("the run ends with done") };
    let total = done.message.usage.clone().expect("done carries the run's usage");
    assert_eq!((total.calls, total.total.input, total.total.output, total.total.cache_read), (2, 2500, 150, 2100));
    assert_eq!(total.context, Some(contexts[1].clone()));
}

#[tokio::test]
async fn an_unpriced_model_reports_tokens_and_no_cost() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let agent = agent(script(r#"{"turns":[{"text":"Hi.","usage":{"input":40,"output":2}}]}"#));
    let frames = run_prompt(&agent, &workspace, "hi", &RunControl::default(), |_, _, _| {}).await;
    let Some(ChatFrame::Done(done)) = frames.last() else { panic!("the run ends with done") };
    let usage = done.message.usage.clone().unwrap();
    assert_eq!((usage.total.input, usage.total.output, usage.total.cost), (40, 2, None));
}
