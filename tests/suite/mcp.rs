//! MCP tools in the built-in agent, against a real MCP server over stdio (`tests/support/mcp-server.mjs`, Node):
//! listing across pages, calls mapped to `tool-mcp__<server>__<tool>` parts, `isError`, a server that dies and is
//! started again, Stop during a call, approval and plan mode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::invariants::assert_run_invariants;
use crate::support::mapper::map_until_settled;
use chatwire::mapper::{EventMapper, RunMeta};
use chatwire::protocol::*;
use chatwire::runtime::agent::{Agent, AgentConfig, ApprovalPolicy, Conversation};
use chatwire::runtime::event::AgentEvent;
use chatwire::runtime::mcp::{McpServerConfig, McpServers, McpSettings};
use chatwire::runtime::provider::{ModelRequest, Provider, ProviderFuture, StreamEvent};
use chatwire::runtime::scripted::{Script, ScriptedProvider};
use chatwire::runtime::seam::{RunControl, RunOptions};
use chatwire::runtime::tools::{CancellationToken, Workspace};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const TEST_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp-server.mjs");

/// The test server as `weather`, logging what it receives to `log`, with extra `args`.
fn weather_config(log: &Path, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: "node".into(),
        args: std::iter::once(TEST_SERVER).chain(args.iter().copied()).map(str::to_owned).collect(),
        env: BTreeMap::from([("MCP_TEST_LOG".to_owned(), log.display().to_string())]),
        cwd: None,
        startup_timeout_secs: Some(20),
        tool_timeout_secs: None,
    }
}

async fn started(servers: BTreeMap<String, McpServerConfig>, cwd: &Path) -> Arc<McpServers> {
    let settings = McpSettings { default_cwd: cwd.to_path_buf(), max_output_bytes: 50 * 1024 };
    let servers = McpServers::new(servers, &settings).expect("valid names");
    servers.start().await;
    Arc::new(servers)
}

/// What the test server logged: every message it received, and a `started` line per process.
fn server_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("the test server logs JSON lines"))
        .collect()
}

/// A scripted provider that also records which tools each request offered.
struct Offered {
    inner: ScriptedProvider,
    tools: Mutex<Vec<Vec<String>>>,
}

impl Provider for Offered {
    fn name(&self) -> &str {
        "offered"
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        self.tools.lock().unwrap().push(request.tools.iter().map(|tool| tool.name.clone()).collect());
        self.inner.stream(request, sink, cancel)
    }
}

fn scripted(turns: Value) -> Arc<Offered> {
    let mut script = Script::parse(&json!({ "turns": turns }).to_string()).unwrap();
    script.delay_ms = 0;
    Arc::new(Offered { inner: ScriptedProvider::new(script), tools: Mutex::new(Vec::new()) })
}

fn mcp_agent(provider: Arc<Offered>, approval: ApprovalPolicy, mcp: Arc<McpServers>) -> Agent {
    let config = AgentConfig { approval, retry_base_delay: Duration::from_millis(5), ..AgentConfig::default() };
    Agent::new(provider, config).with_mcp(mcp)
}

/// One prompt in a fresh conversation; `react` sees every event as it happens. Returns the frames.
async fn run(
    agent: &Agent,
    workspace: &Workspace,
    options: &RunOptions,
    control: &RunControl,
    mut react: impl FnMut(&AgentEvent, &RunControl) + Send,
) -> Vec<ChatFrame> {
    let mut conversation = Conversation::default();
    let mut mapper: EventMapper = crate::support::mapper::deterministic_mapper("s");
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let mut frames = mapper.open_run(RunMeta { mode: options.effective_mode(), ..RunMeta::default() });
    let run = agent.run(&mut conversation, workspace, "go".into(), options, control, &sender);
    let collect = map_until_settled(&mut receiver, &mut mapper, &mut frames, |event| react(event, control));
    tokio::join!(run, collect);
    frames
}

/// The last state of every tool part, by call id, in call order.
fn final_parts(frames: &[ChatFrame]) -> Vec<ChatToolPart> {
    let Some(ChatFrame::Done(done)) = frames.last() else {
        panic!("the run did not end with done: {:?}", frames.last())
    };
    done.message.parts.iter().filter_map(|part| part.as_tool().cloned()).collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: Workspace,
    log: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let workspace = Workspace::new(&root).unwrap();
    let log = dir.path().join("mcp.log");
    Fixture { workspace, log, root, _dir: dir }
}

#[tokio::test]
async fn tools_from_every_page_are_offered_and_a_call_shows_its_input_and_structured_result() {
    let f = fixture();
    let mcp = started(BTreeMap::from([("weather".to_owned(), weather_config(&f.log, &[]))]), &f.root).await;
    let names: Vec<String> = mcp.tools().iter().map(|tool| tool.name().to_owned()).collect();
    assert_eq!(
        names,
        ["lookup", "add_note", "fail", "slow", "crash"].map(|tool| format!("mcp__weather__{tool}")),
        "both pages of tools/list"
    );
    let lookup = mcp.tool("mcp__weather__lookup").unwrap();
    assert_eq!(lookup.description(), "The current weather of a city.");
    assert_eq!(lookup.parameters()["required"], json!(["city"]));

    let provider = scripted(json!([
        {"text": "Looking.", "toolCalls": [{"name": "mcp__weather__lookup", "arguments": {"city": "Lisbon"}}]},
        {"text": "Sunny."}
    ]));
    let agent = mcp_agent(provider.clone(), ApprovalPolicy::Never, mcp.clone());
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |_, _| {}).await;
    assert_run_invariants("lookup", &frames);
    let offered = provider.tools.lock().unwrap()[0].clone();
    assert!(offered.iter().any(|name| name == "mcp__weather__crash") && offered.iter().any(|name| name == "bash"));

    let parts = final_parts(&frames);
    let [part] = parts.as_slice() else { panic!("{parts:?}") };
    assert_eq!(part.kind, ToolKind::Mcp { server: "weather".into(), tool: "lookup".into() });
    assert_eq!(part.tool_name(), "mcp__weather__lookup");
    assert_eq!(part.state, ToolState::OutputAvailable);
    assert_eq!(part.input, Some(json!({"city": "Lisbon"})));
    let weather = json!({"city": "Lisbon", "temperature": {"value": 21.5, "unit": "C"}, "sky": "clear"});
    assert_eq!(part.output, Some(json!({"text": weather.to_string(), "structuredContent": weather})));
    let encoded = serde_json::to_string(&frames.last().unwrap()).unwrap();
    assert!(encoded.contains(r#""type":"tool-mcp__weather__lookup""#), "{encoded}");

    let log = server_log(&f.log);
    assert_eq!(log[0]["cwd"], json!(f.root.display().to_string()), "a server without cwd runs in the default");
    let initialize = log.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(initialize["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(initialize["params"]["clientInfo"]["name"], "chatwire");
    let methods: Vec<&str> = log.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list", "tools/list", "tools/call"]);
    let listed_again = log.iter().filter(|m| m["method"] == "tools/list").nth(1).unwrap();
    assert_eq!(listed_again["params"]["cursor"], "page-2");
    mcp.shutdown().await;
}

#[tokio::test]
async fn an_error_result_ends_the_part_in_output_error_with_the_servers_text() {
    let f = fixture();
    let mcp = started(BTreeMap::from([("weather".to_owned(), weather_config(&f.log, &[]))]), &f.root).await;
    let provider = scripted(json!([
        {"toolCalls": [
            {"name": "mcp__weather__fail", "arguments": {"why": "no such city"}},
            {"name": "mcp__weather__nope", "arguments": {}}
        ]},
        {"text": "It failed."}
    ]));
    let agent = mcp_agent(provider, ApprovalPolicy::Never, mcp.clone());
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |_, _| {}).await;
    assert_run_invariants("fail", &frames);
    let parts = final_parts(&frames);
    assert_eq!(parts[0].state, ToolState::OutputError);
    assert_eq!(parts[0].error_text.as_deref(), Some("lookup failed: no such city"));
    assert_eq!(parts[1].state, ToolState::OutputError);
    assert_eq!(parts[1].error_text.as_deref(), Some("there is no tool named `mcp__weather__nope`"));
    mcp.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_ends_the_call_and_is_started_again_on_the_next_one() {
    let f = fixture();
    let gate = f.root.join("no-restart");
    let gate_arg = gate.display().to_string();
    let config = weather_config(&f.log, &["--exit-at-start-if", &gate_arg]);
    let mcp = started(BTreeMap::from([("weather".to_owned(), config)]), &f.root).await;
    let lookup = json!({"name": "mcp__weather__lookup", "arguments": {"city": "Oslo"}});
    let provider = scripted(json!([
        {"toolCalls": [{"name": "mcp__weather__crash", "arguments": {}}, lookup]},
        {"text": "Recovered."}
    ]));
    let agent = mcp_agent(provider, ApprovalPolicy::Never, mcp.clone());

    // First the restart fails (the gate is there), then it works.
    std::fs::write(&gate, "").unwrap();
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |_, _| {}).await;
    let parts = final_parts(&frames);
    assert_eq!(parts[0].state, ToolState::OutputError);
    let crash_error = parts[0].error_text.clone().unwrap();
    assert!(crash_error.starts_with("the MCP server `weather` exited during the call"), "{crash_error}");
    assert!(crash_error.contains("exit status: 3") && crash_error.contains("crashing on purpose"), "{crash_error}");
    assert_eq!(parts[1].state, ToolState::OutputError);
    let start_error = parts[1].error_text.clone().unwrap();
    assert!(start_error.starts_with("the MCP server `weather` is not available: the server exited"), "{start_error}");
    assert!(start_error.contains("cannot start without a token"), "{start_error}");

    std::fs::remove_file(&gate).unwrap();
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |_, _| {}).await;
    let parts = final_parts(&frames);
    assert_eq!(parts[0].state, ToolState::OutputError, "it crashes again");
    assert_eq!(parts[1].state, ToolState::OutputAvailable, "{:?}", parts[1].error_text);
    let starts = server_log(&f.log).iter().filter(|entry| entry.get("started").is_some()).count();
    assert_eq!(starts, 3, "the first process, the one that crashed again, the last one");
    mcp.shutdown().await;
}

#[tokio::test]
async fn stop_during_a_call_cancels_it_on_the_server_and_ends_promptly() {
    let f = fixture();
    let mcp = started(BTreeMap::from([("weather".to_owned(), weather_config(&f.log, &[]))]), &f.root).await;
    let provider = scripted(json!([
        {"text": "Waiting.", "toolCalls": [{"name": "mcp__weather__slow", "arguments": {"ms": 60000}}]},
        {"text": "never"}
    ]));
    let agent = mcp_agent(provider, ApprovalPolicy::Never, mcp.clone());
    let control = RunControl::default();
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &control, |event, control| {
        if let AgentEvent::ToolExecutionStart { .. } = event {
            let cancel = control.cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                cancel.cancel();
            });
        }
    })
    .await;
    assert_run_invariants("stopped", &frames);
    let Some(ChatFrame::Done(done)) = frames.last() else { panic!("{:?}", frames.last()) };
    let part = done.message.parts.iter().find_map(|p| p.as_tool()).unwrap();
    assert_eq!(part.state, ToolState::OutputError);
    assert_eq!(part.error_text.as_deref(), Some("stopped; the MCP server was told to cancel the call"));

    let call_id = server_log(&f.log).iter().find(|m| m["method"] == "tools/call").unwrap()["id"].clone();
    let mut cancelled = None;
    for _ in 0..50 {
        cancelled = server_log(&f.log).into_iter().find(|m| m["method"] == "notifications/cancelled");
        if cancelled.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = cancelled.expect("the server was told");
    assert_eq!(cancelled["params"]["requestId"], call_id);
    mcp.shutdown().await;
}

#[tokio::test]
async fn under_writes_only_tools_not_marked_read_only_wait_for_approval() {
    let f = fixture();
    let mcp = started(BTreeMap::from([("weather".to_owned(), weather_config(&f.log, &[]))]), &f.root).await;
    let provider = scripted(json!([
        {"toolCalls": [
            {"name": "mcp__weather__lookup", "arguments": {"city": "Rome"}},
            {"name": "mcp__weather__add_note", "arguments": {"text": "bring a hat"}}
        ]},
        {"text": "Noted."}
    ]));
    let agent = mcp_agent(provider, ApprovalPolicy::Writes, mcp.clone());
    let mut asked = Vec::new();
    let frames = run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |event, control| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, tool_name, .. } = event {
            asked.push(tool_name.clone());
            assert!(control.decide(tool_call_id, true));
        }
    })
    .await;
    assert_eq!(asked, ["mcp__weather__add_note"]);
    let parts = final_parts(&frames);
    assert_eq!(parts[1].output.as_ref().unwrap()["text"], "Noted: bring a hat");
    let add_note_states: Vec<ToolState> = frames
        .iter()
        .filter_map(|frame| match frame {
            ChatFrame::Tool(tool) if tool.part.tool_name() == "mcp__weather__add_note" => Some(tool.part.state),
            _ => None,
        })
        .collect();
    assert!(add_note_states.contains(&ToolState::ApprovalRequested), "{add_note_states:?}");

    let provider = scripted(json!([
        {"toolCalls": [{"name": "mcp__weather__lookup", "arguments": {"city": "Rome"}}]},
        {"text": "Done."}
    ]));
    let agent = mcp_agent(provider, ApprovalPolicy::Always, mcp.clone());
    let mut asked = Vec::new();
    run(&agent, &f.workspace, &RunOptions::default(), &RunControl::default(), |event, control| {
        if let AgentEvent::ToolApprovalRequest { tool_call_id, tool_name, .. } = event {
            asked.push(tool_name.clone());
            assert!(control.decide(tool_call_id, true));
        }
    })
    .await;
    assert_eq!(asked, ["mcp__weather__lookup"], "under `always` read-only tools wait too");
    mcp.shutdown().await;
}

#[tokio::test]
async fn plan_mode_offers_only_the_read_only_mcp_tools_and_refuses_the_others() {
    let f = fixture();
    let mcp = started(BTreeMap::from([("weather".to_owned(), weather_config(&f.log, &[]))]), &f.root).await;
    let provider = scripted(json!([
        {"toolCalls": [{"name": "mcp__weather__add_note", "arguments": {"text": "x"}}]},
        {"text": "Planned."}
    ]));
    let agent = mcp_agent(provider.clone(), ApprovalPolicy::Never, mcp.clone());
    let options = RunOptions { mode: AgentMode::Plan, plan_action: None };
    let frames = run(&agent, &f.workspace, &options, &RunControl::default(), |_, _| {}).await;
    let offered: Vec<String> =
        provider.tools.lock().unwrap()[0].iter().filter(|name| name.starts_with("mcp__")).cloned().collect();
    assert_eq!(offered, ["mcp__weather__lookup", "mcp__weather__fail", "mcp__weather__slow"]);
    let parts = final_parts(&frames);
    assert_eq!(parts[0].state, ToolState::OutputError);
    assert!(parts[0].error_text.as_deref().unwrap().contains("not available in plan mode"), "{parts:?}");
    assert!(!server_log(&f.log).iter().any(|m| m["method"] == "tools/call"), "nothing was run");
    mcp.shutdown().await;
}

#[tokio::test]
async fn servers_that_cannot_start_are_left_out_without_stopping_the_others() {
    let f = fixture();
    let mut missing = weather_config(&f.log, &[]);
    missing.command = "/nonexistent/mcp-server".into();
    let servers = BTreeMap::from([
        ("broken".to_owned(), weather_config(&f.log, &["--exit-at-start"])),
        ("missing".to_owned(), missing),
        ("weather".to_owned(), weather_config(&f.log, &[])),
    ]);
    let mcp = started(servers, &f.root).await;
    let names: Vec<String> = mcp.tools().iter().map(|tool| tool.name().to_owned()).collect();
    assert!(names.iter().all(|name| name.starts_with("mcp__weather__")), "{names:?}");
    assert_eq!(names.len(), 5);

    let settings = McpSettings { default_cwd: f.root.clone(), max_output_bytes: 1024 };
    for bad in ["a__b", "", "x.y"] {
        let configs = BTreeMap::from([(bad.to_owned(), weather_config(&f.log, &[]))]);
        assert!(McpServers::new(configs, &settings).is_err(), "{bad:?}");
    }
    mcp.shutdown().await;
}
