//! The ACP runtime against a small agent of the tests' own (tests/support/fake-acp.mjs) behind the real server: a
//! turn with thinking, text, a plan and a bash call; a permission request answered from its approval card; Stop;
//! files served inside the workspace and refused outside it; a refusal; and agents that exit mid-run, write a line
//! that is not JSON-RPC, never answer `initialize`, write a 10 MB line, or flood updates for another session. Each
//! failure is one `error` frame naming the agent, and the session's next run gets a fresh, working process.

use std::path::Path;
use std::time::Duration;

use crate::support::server::{Lines, Server, TOKEN, kind, script_file};
use serde_json::{Value, json};

/// A hang guard only: every wait below ends on an event long before it.
const WAIT: Duration = Duration::from_secs(30);

fn fake_agent() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-acp.mjs").display().to_string()
}

/// A server whose default agent is the fake one, named `fake`, misbehaving as `behaviour` says.
fn start(dir: &Path, behaviour: &str) -> Server {
    start_with(dir, behaviour, "")
}

/// `start`, with more lines for the agent's table.
fn start_with(dir: &Path, behaviour: &str, more: &str) -> Server {
    let config = agent_config(dir, behaviour, more);
    Server::start(&dir.join("data"), &unused_script(dir), &["--config", &config, "--default-agent", "fake"])
}

/// A config file whose agent `fake` is the fake agent; its path.
fn agent_config(dir: &Path, behaviour: &str, more: &str) -> String {
    let config = dir.join("chatwire.toml");
    let table = format!(
        "[agent.fake]\ncommand = \"node\"\nargs = [{:?}, {:?}]\nstart_timeout_secs = 2\n{more}",
        fake_agent(),
        behaviour
    );
    std::fs::write(&config, table).unwrap();
    config.display().to_string()
}

fn unused_script(dir: &Path) -> std::path::PathBuf {
    script_file(dir, r#"{"turns":[{"text":"unused"}]}"#)
}

async fn send(server: &Server, session: &str, message: &str) -> Lines {
    let response = server.post("/api/chat", &json!({"sessionId": session, "message": message})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    Lines::new(response)
}

async fn run(server: &Server, session: &str, message: &str) -> Vec<Value> {
    let lines = send(server, session, message).await.rest(WAIT).await;
    lines.iter().filter(|line| kind(line) != "ping").map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn last(frames: &[Value]) -> &Value {
    frames.last().expect("the run has frames")
}

fn answer_text(done: &Value) -> String {
    assert_eq!(done["type"], "done", "{done}");
    let parts = done["message"]["parts"].as_array().unwrap().iter();
    parts.filter(|part| part["type"] == "text").filter_map(|part| part["text"].as_str()).collect()
}

#[tokio::test]
async fn a_turn_streams_thinking_text_a_plan_and_a_bash_row_and_ends_done() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let frames = run(&server, &session, "hello").await;
    assert_eq!(frames[0]["type"], "start");
    let thinking: String =
        frames.iter().filter(|f| f["type"] == "thinking").map(|f| f["text"].as_str().unwrap()).collect();
    assert_eq!(thinking, "Thinking about it.");
    let plan = frames.iter().find(|f| f["type"] == "plan").unwrap_or_else(|| panic!("a plan frame: {frames:#?}"));
    assert_eq!((plan["completed"].as_u64(), plan["total"].as_u64()), (Some(1), Some(2)));
    let done = last(&frames);
    assert_eq!(answer_text(done), "Hello from the fake agent.");
    let bash = done["message"]["parts"].as_array().unwrap().iter().find(|p| p["type"] == "tool-Bash").unwrap();
    assert_eq!(bash["input"]["command"], "echo hi");
    assert_eq!(bash["output"], json!({"output": "hi\n", "exitCode": 0}));
    let usage = frames.iter().find(|f| f["type"] == "usage").expect("a usage frame");
    assert_eq!(usage["usage"]["input"], 1000);
    assert_eq!(usage["context"]["window"], 200000);
    // The agent's session id is the conversation the next process reopens.
    assert!(done["sessionFile"].as_str().unwrap().starts_with("fake-"), "{done}");

    let again = run(&server, &session, "hello again").await;
    assert_eq!(answer_text(last(&again)), "Hello from the fake agent.");
    assert_eq!(again[0]["sessionFile"], done["sessionFile"], "the warm process keeps the agent's session");
}

/// Sends a message that makes the fake agent ask for permission, and reads up to the approval card.
async fn until_the_card(server: &Server, session: &str) -> (Lines, Value) {
    let lines = send(server, session, "needs permission").await;
    read_to_the_card(lines).await
}

async fn read_to_the_card(mut lines: Lines) -> (Lines, Value) {
    loop {
        let line = lines.next_within(WAIT).await.expect("the card comes");
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["type"] == "tool" && frame["part"]["state"] == "approval-requested" {
            return (lines, frame);
        }
    }
}

#[tokio::test]
async fn a_permission_request_is_an_approval_card_whose_answer_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let cases = [
        (json!({"approve": true}), "output-available", "Done with once."),
        (json!({"approve": false}), "output-error", "Not allowed: reject."),
        (json!({"optionId": "always"}), "output-available", "Done with always."),
        (json!({"optionId": "never", "approve": false}), "output-error", "Not allowed: never."),
    ];
    for (choice, state, text) in cases {
        let session = server.new_session().await;
        let (mut lines, card) = until_the_card(&server, &session).await;
        assert_eq!(card["part"]["type"], "tool-Bash");
        assert_eq!(card["part"]["input"]["command"], "rm -rf build");
        let kinds: Vec<&str> =
            card["part"]["approvalOptions"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
        let mut decision = json!({"sessionId": session, "toolCallId": "call-1"});
        decision.as_object_mut().unwrap().extend(choice.as_object().unwrap().clone());
        assert_eq!(server.post("/api/chat/approval", &decision).send().await.unwrap().status(), 200, "{choice}");
        let rest: Vec<Value> = lines
            .rest(WAIT)
            .await
            .iter()
            .filter(|l| kind(l) != "ping")
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let done = last(&rest);
        assert_eq!(answer_text(done), text, "{choice}");
        let call = done["message"]["parts"].as_array().unwrap().iter().find(|p| p["toolCallId"] == "call-1").unwrap();
        assert_eq!(call["state"], state, "{call}");
    }
}

#[tokio::test]
async fn a_choice_the_agent_did_not_offer_is_refused_and_the_card_still_waits() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let (mut lines, _card) = until_the_card(&server, &session).await;
    let refused = [
        (json!({"optionId": "sometimes"}), 422, "the agent offers: once (Allow once), always (Always allow)"),
        (json!({"optionId": "never", "approve": true}), 422, "contradicts `approve`"),
        (json!({}), 400, "`optionId`"),
    ];
    for (choice, status, says) in refused {
        let mut decision = json!({"sessionId": session, "toolCallId": "call-1"});
        decision.as_object_mut().unwrap().extend(choice.as_object().unwrap().clone());
        let response = server.post("/api/chat/approval", &decision).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{choice}");
        let body: Value = response.json().await.unwrap();
        assert!(body["message"].as_str().unwrap().contains(says), "{choice}: {body}");
    }
    let decision = json!({"sessionId": session, "toolCallId": "call-1", "optionId": "once"});
    assert_eq!(server.post("/api/chat/approval", &decision).send().await.unwrap().status(), 200);
    let rest = lines.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.iter().rev().find(|l| kind(l) == "done").unwrap()).unwrap();
    assert_eq!(answer_text(&done), "Done with once.");
}

#[tokio::test]
async fn an_option_chosen_on_another_instance_reaches_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let config = agent_config(dir.path(), "normal", "");
    let extra = ["--config", config.as_str(), "--default-agent", "fake"];
    let server = Server::cluster(2, &dir.path().join("data"), &unused_script(dir.path()), &extra).await;
    let session = server.new_session().await;
    let on = |index: usize, path: &str, body: &Value| {
        server.http.post(server.instance_url(index, path)).bearer_auth(TOKEN).json(body).send()
    };
    let response = on(0, "/api/chat", &json!({"sessionId": session, "message": "needs permission"})).await.unwrap();
    let (mut lines, _card) = read_to_the_card(Lines::new(response)).await;
    let decision = json!({"sessionId": session, "toolCallId": "call-1", "optionId": "always"});
    // The other instance reads the card from the log, where it lands a moment after the owner streamed it.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let answered = on(1, "/api/chat/approval", &decision).await.unwrap();
        match answered.status().as_u16() {
            200 => break,
            404 if std::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            status => panic!("choosing on the other instance: {status}"),
        }
    }
    let rest = lines.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.iter().rev().find(|l| kind(l) == "done").unwrap()).unwrap();
    assert_eq!(answer_text(&done), "Done with always.", "the chosen option reached the agent");
}

#[tokio::test]
async fn a_terminal_the_agent_asks_for_streams_into_its_bash_row() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let server =
        start_with(dir.path(), "normal", &format!("env = {{ FAKE_ACP_GO = {:?} }}\n", go.display().to_string()));
    let session = server.new_session().await;
    let mut lines = send(&server, &session, "use a terminal").await;
    // The command prints `one` and then waits for the test: the row shows `one` while it still runs.
    loop {
        let line = lines.next_within(WAIT).await.expect("the terminal's output comes");
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["type"] == "tool" && frame["part"]["toolCallId"] == "call-t" {
            let shown = frame["part"]["output"]["output"].as_str().unwrap_or_default();
            assert!(!shown.contains("two"), "{frame}");
            if shown.contains("one") {
                assert_eq!(frame["part"]["state"], "input-available");
                break;
            }
        }
    }
    std::fs::write(&go, "").unwrap();
    let rest = lines.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.iter().rev().find(|l| kind(l) == "done").unwrap()).unwrap();
    assert_eq!(
        answer_text(&done),
        r#"exit 3; output "one\ntwo\n" {"exitCode":3,"signal":null}; killed SIGKILL; outside refused; released gone"#
    );
    let bash = done["message"]["parts"].as_array().unwrap().iter().find(|p| p["toolCallId"] == "call-t").unwrap();
    assert_eq!(bash["type"], "tool-Bash");
    assert_eq!(bash["state"], "output-error", "{bash}");
    assert_eq!(bash["output"]["exitCode"], 3, "{bash}");
    assert_eq!(bash["output"]["output"], "one\ntwo", "{bash}");
}

/// A real one-pixel PNG, which the server's sniffing takes for an image.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\x01\x01\x01\0\x18\xdd\x8d\xb4\0\0\0\0IEND\xaeB`\x82";

/// Uploads `bytes` as `name`; the reference a message attaches it by.
async fn attach(server: &Server, name: &str, media_type: &str, bytes: &[u8]) -> Value {
    let url = server.url(&format!("/api/attachments?name={name}&type={media_type}"));
    let request = server.http.post(url).bearer_auth(TOKEN).header("content-type", "application/octet-stream");
    let response = request.body(bytes.to_vec()).send().await.unwrap();
    let status = response.status();
    let kept: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "uploading {name}: {kept}");
    json!({"id": kept["id"], "name": name})
}

#[tokio::test]
async fn attachments_go_as_image_and_resource_blocks_where_the_agent_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), "normal", "env = { FAKE_ACP_TAKES = \"image,embeddedContext\" }\n");
    let session = server.new_session().await;
    let files = [
        attach(&server, "note.txt", "text/plain", b"hello note\n").await,
        attach(&server, "dot.png", "image/png", PNG).await,
    ];
    let body = json!({"sessionId": session, "message": "describe the prompt", "attachments": files});
    let response = server.post("/api/chat", &body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let frames = Lines::new(response).rest(WAIT).await;
    let done: Value = serde_json::from_str(frames.iter().rev().find(|l| kind(l) == "done").unwrap()).unwrap();
    let said = answer_text(&done);
    assert!(said.starts_with(r#"text "describe the prompt"; "#), "{said}");
    assert!(said.contains(r#"resource file:///note.txt text/plain "hello note\n""#), "{said}");
    assert!(said.contains(&format!("image image/png {} bytes", PNG.len())), "{said}");
}

#[tokio::test]
async fn an_agent_that_takes_no_images_refuses_them_by_name_and_gets_text_files_in_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let note = attach(&server, "note.txt", "text/plain", b"hello note\n").await;
    let body = json!({"sessionId": session, "message": "describe the prompt", "attachments": [note]});
    let frames = Lines::new(server.post("/api/chat", &body).send().await.unwrap()).rest(WAIT).await;
    let done: Value = serde_json::from_str(frames.iter().rev().find(|l| kind(l) == "done").unwrap()).unwrap();
    let said = answer_text(&done);
    assert!(said.starts_with(r#"text "describe the prompt"#) && said.contains("hello note"), "{said}");
    assert!(!said.contains("resource"), "{said}");

    let dot = attach(&server, "dot.png", "image/png", PNG).await;
    let body = json!({"sessionId": session, "message": "describe the prompt", "attachments": [dot]});
    let frames = Lines::new(server.post("/api/chat", &body).send().await.unwrap()).rest(WAIT).await;
    let error: Value = serde_json::from_str(frames.iter().rev().find(|l| kind(l) == "error").unwrap()).unwrap();
    assert_eq!(error["code"], "images_unsupported", "{error}");
    assert!(error["message"].as_str().unwrap().contains("dot.png"), "{error}");
}

#[tokio::test]
async fn stop_cancels_the_turn_and_keeps_what_was_said() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let mut lines = send(&server, &session, "be slow").await;
    lines.skip_to("delta", WAIT).await;
    let stop = server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap();
    assert_eq!(stop.status(), 200);
    let rest = lines.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(done["type"], "done", "a stopped turn keeps its partial answer: {rest:#?}");
    assert!(!answer_text(&done).is_empty());
    let again = run(&server, &session, "hello").await;
    assert_eq!(answer_text(last(&again)), "Hello from the fake agent.", "the process stays usable");
}

#[tokio::test]
async fn files_are_served_inside_the_workspace_and_refused_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let frames = run(&server, &session, "touch files").await;
    assert_eq!(
        answer_text(last(&frames)),
        r#"write: ok; read: "written by the agent\n"; outside: refused"#,
        "{frames:#?}"
    );
    let workspace = dir.path().join("data/workspaces").join(&session);
    assert_eq!(std::fs::read_to_string(workspace.join("from-agent.txt")).unwrap(), "written by the agent\n");
    assert!(!dir.path().join("data/workspaces/outside.txt").exists());
}

#[tokio::test]
async fn a_refusal_ends_the_run_with_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let frames = run(&server, &session, "please refuse").await;
    let error = last(&frames);
    assert_eq!((error["type"].as_str(), error["code"].as_str()), (Some("error"), Some("refusal")), "{error}");
    assert!(error["message"].as_str().unwrap().contains("refused"), "{error}");
}

/// A misbehaving first run: exactly one `error` (the last frame) with `code`, naming the agent; then a normal run.
async fn fails_once_then_works(behaviour: &str, code: &str, message_part: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), behaviour);
    let session = server.new_session().await;
    let first = run(&server, &session, "hello").await;
    let errors: Vec<&Value> = first.iter().filter(|frame| frame["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{first:#?}");
    assert_eq!(last(&first)["type"], "error");
    assert_eq!(errors[0]["code"], code, "{}", errors[0]);
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains(message_part), "{message}");
    let second = run(&server, &session, "hello").await;
    assert_eq!(answer_text(last(&second)), "Hello from the fake agent.", "a fresh process works: {second:#?}");
}

#[tokio::test]
async fn an_agent_that_exits_mid_run_is_one_error_with_its_last_words() {
    fails_once_then_works(
        "exit",
        "runtime_exit",
        "the agent `fake` exited (exit status: 3): fatal: the model went away",
    )
    .await;
}

#[tokio::test]
async fn a_line_that_is_not_json_rpc_is_one_error() {
    fails_once_then_works("garbage", "runtime_malformed", "not a JSON-RPC message: Traceback").await;
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_is_one_error() {
    fails_once_then_works("silent-init", "runtime_timeout", "did not answer `initialize` within 2 s").await;
}

#[tokio::test]
async fn a_10_mb_line_is_one_error() {
    fails_once_then_works("huge-line", "runtime_malformed", "longer than 4194304 bytes").await;
}

#[tokio::test]
async fn a_flood_of_updates_for_another_session_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "flood");
    let session = server.new_session().await;
    let frames = run(&server, &session, "hello").await;
    assert_eq!(answer_text(last(&frames)), "Starting…Done despite the noise.");
    assert!(frames.len() < 50, "the noise made no frames: {}", frames.len());
}

#[tokio::test]
async fn an_idle_agent_is_stopped_and_the_next_run_reopens_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), "normal", "idle_secs = 1\n");
    let session = server.new_session().await;
    let pid_of = |frames: &[Value]| -> u32 {
        answer_text(last(frames)).strip_prefix("pid ").expect("the agent says its pid").parse().unwrap()
    };
    let first = run(&server, &session, "your pid?").await;
    let pid = pid_of(&first);
    let deadline = std::time::Instant::now() + WAIT;
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(std::time::Instant::now() < deadline, "the idle agent {pid} was never stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let second = run(&server, &session, "your pid?").await;
    assert_ne!(pid_of(&second), pid, "a new process");
    assert_eq!(second[0]["sessionFile"], first[0]["sessionFile"], "which reopened the agent's session");
    assert_eq!(second[0].get("sessionReset"), None);
}

#[tokio::test]
async fn a_message_sent_while_the_agent_works_is_its_next_prompt_in_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let mut lines = send(&server, &session, "take your time").await;
    lines.skip_to("delta", WAIT).await;
    let steer = json!({"sessionId": session, "message": "and then say hello", "streamingBehavior": "steer"});
    let response = server.post("/api/chat", &steer).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let frames: Vec<Value> =
        lines.rest(WAIT).await.iter().filter(|l| kind(l) != "ping").map(|l| serde_json::from_str(l).unwrap()).collect();
    let queued = frames.iter().find(|f| f["type"] == "queue" && !f["steering"].as_array().unwrap().is_empty());
    assert!(queued.is_some(), "the message waits in the queue: {frames:#?}");
    let prompted = frames.iter().position(|f| f["type"] == "message" && f["message"]["role"] == "user").unwrap();
    let first_turn_end = frames.iter().position(|f| f["type"] == "state" && f["state"]["name"] == "turn_end").unwrap();
    assert!(first_turn_end < prompted, "it goes after the first turn ended");
    let done = last(&frames);
    assert!(answer_text(done).ends_with("Hello from the fake agent."), "{done}");
    assert_eq!(frames.iter().filter(|f| f["type"] == "done").count(), 1, "one run");
    let agents: Value = server.get("/api/agents").send().await.unwrap().json().await.unwrap();
    let fake = agents["agents"].as_array().unwrap().iter().find(|a| a["name"] == "fake").unwrap();
    assert!(fake["steerUnavailable"].as_str().unwrap().contains("next prompt"), "{fake}");
}

/// The session's detail, as a reload reads it.
async fn detail(server: &Server, session: &str) -> Value {
    server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap()
}

async fn set_option(server: &Server, session: &str, id: &str, value: &str) -> reqwest::Response {
    let path = format!("/api/sessions/{session}/agent-option");
    server.post(&path, &json!({"configId": id, "value": value})).send().await.unwrap()
}

fn current(offered: &Value, id: &str) -> String {
    let options = offered["options"].as_array().unwrap_or_else(|| panic!("options in {offered}"));
    let option = options.iter().find(|option| option["id"] == id).unwrap_or_else(|| panic!("{id} in {offered}"));
    option["current"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_agents_commands_and_options_reach_the_session_and_setting_one_goes_to_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    let frames = run(&server, &session, "hello").await;
    let offered: Vec<&Value> = frames.iter().filter(|f| f["type"] == "agent_options").collect();
    let latest = offered.last().unwrap_or_else(|| panic!("an agent_options frame: {frames:#?}"));
    assert_eq!(current(latest, "model"), "m1");
    let names: Vec<&str> = latest["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["review", "init"]);
    assert_eq!(latest["commands"][0]["hint"], "commit|branch");
    assert_eq!(latest["options"][1]["category"], "mode");
    let mut state = (*latest).clone();
    state.as_object_mut().unwrap().retain(|key, _| key != "type" && key != "seq");
    assert_eq!(detail(&server, &session).await["agentOptions"], state, "a reload shows the same");

    // Between runs: the warm process is asked, and what it answers is logged.
    assert_eq!(set_option(&server, &session, "model", "m2").await.status(), 200);
    assert_eq!(current(&detail(&server, &session).await["agentOptions"], "model"), "m2");
    let frames = run(&server, &session, "which model").await;
    assert_eq!(answer_text(last(&frames)), "model m2, mode ask");
    // The agent's command goes to it as the prompt's text.
    let frames = run(&server, &session, "/review main").await;
    assert_eq!(answer_text(last(&frames)), "reviewing main");

    for (id, value, names) in [("speed", "fast", "model, mode"), ("mode", "yolo", "ask, code")] {
        let refused = set_option(&server, &session, id, value).await;
        assert_eq!(refused.status(), 422);
        let body: Value = refused.json().await.unwrap();
        assert!(body["message"].as_str().unwrap().contains(names), "{body}");
    }
}

#[tokio::test]
async fn an_option_set_while_the_agent_works_reaches_it_during_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "normal");
    let session = server.new_session().await;
    run(&server, &session, "hello").await;
    let mut lines = send(&server, &session, "slow").await;
    lines.skip_to("delta", WAIT).await;
    assert_eq!(set_option(&server, &session, "mode", "code").await.status(), 200);
    let changed = loop {
        let line = lines.next_within(WAIT).await.expect("the options frame comes during the run");
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["type"] == "agent_options" {
            break frame;
        }
    };
    assert_eq!(current(&changed, "mode"), "code");
    server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap();
    lines.rest(WAIT).await;
    let frames = run(&server, &session, "which model").await;
    assert_eq!(answer_text(last(&frames)), "model m1, mode code");
}

#[tokio::test]
async fn a_chosen_option_is_set_again_on_an_agent_process_that_forgot_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = {
        let server = start(dir.path(), "normal");
        let session = server.new_session().await;
        run(&server, &session, "hello").await;
        assert_eq!(set_option(&server, &session, "model", "m2").await.status(), 200);
        session
    };
    // A new server: a new agent process, whose `session/load` comes back with the default model.
    let server = start(dir.path(), "normal");
    let frames = run(&server, &session, "which model").await;
    assert_eq!(answer_text(last(&frames)), "model m2, mode ask");
}

/// A server like `start`'s whose sessions all work in `workspace` (`--workspace`), where the agent's own sessions
/// are.
fn start_in(dir: &Path, behaviour: &str, workspace: &Path) -> Server {
    let config = agent_config(dir, behaviour, "");
    let args = ["--config", config.as_str(), "--default-agent", "fake", "--workspace", workspace.to_str().unwrap()];
    Server::start(&dir.join("data"), &unused_script(dir), &args)
}

async fn get_json(server: &Server, path: &str) -> (u16, Value) {
    let response = server.get(path).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn post_json(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    let response = server.post(path, body).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_agents_own_session_is_listed_opened_with_its_messages_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let server = start_in(dir.path(), "normal", &workspace);
    // The agent's own session: made here by a chatwire session, as its own CLI would in the same directory.
    let first = server.new_session().await;
    assert_eq!(answer_text(last(&run(&server, &first, "hello").await)), "Hello from the fake agent.");

    let (status, agents) = get_json(&server, "/api/agents").await;
    assert_eq!((status, &agents["agents"][1]["openUnavailable"]), (200, &Value::Null), "{agents}");
    let (status, listed) = get_json(&server, "/api/agents/fake/conversations").await;
    assert_eq!(status, 200, "{listed}");
    let conversations = listed["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1, "{listed}");
    assert_eq!((&conversations[0]["id"], &conversations[0]["title"]), (&json!("fake-1"), &json!("hello")));
    assert!(conversations[0]["updatedAt"].as_u64().is_some_and(|at| at > 1_700_000_000_000), "{listed}");

    let (status, created) =
        post_json(&server, "/api/sessions", &json!({"agent": "fake", "conversation": "fake-1"})).await;
    assert_eq!(status, 201, "{created}");
    let session = created["session"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!((&created["session"]["agent"], &created["session"]["title"]), (&json!("fake"), &json!("hello")));
    let (_, detail) = get_json(&server, &format!("/api/sessions/{session}")).await;
    let messages = detail["messages"].as_array().unwrap();
    assert_eq!(messages, created["messages"].as_array().unwrap(), "the log holds what the import answered");
    assert_eq!(messages.len(), 2, "{detail:#}");
    assert_eq!((&messages[0]["role"], &messages[0]["parts"][0]["text"]), (&json!("user"), &json!("hello")));
    let parts = messages[1]["parts"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|part| part["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["thinking", "text", "tool-Bash"], "{parts:#?}");
    assert_eq!(parts[2]["input"]["command"], "echo hi");
    assert_eq!(detail["activeRunId"], Value::Null, "the replay is a settled run: {detail:#}");

    // It goes on with the agent's session: the next run reopens it, and the agent remembers the first message.
    let frames = run(&server, &session, "what is in the history?").await;
    assert_eq!(frames[0]["type"], "start");
    assert_eq!((&frames[0]["sessionFile"], &frames[0]["sessionReset"]), (&json!("fake-1"), &Value::Null));
    assert_eq!(answer_text(last(&frames)), "You said: hello | what is in the history?");
}

#[tokio::test]
async fn an_unknown_conversation_is_404_and_makes_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let server = start_in(dir.path(), "normal", &workspace);
    let (status, body) = post_json(&server, "/api/sessions", &json!({"agent": "fake", "conversation": "fake-9"})).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["message"].as_str().unwrap().contains("fake-9"), "{body}");
    let (_, list) = get_json(&server, "/api/sessions").await;
    assert_eq!(list["sessions"], json!([]), "no session was made");
}

#[tokio::test]
async fn an_agent_that_cannot_list_or_a_session_per_directory_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let server = start_in(dir.path(), "no-list", &workspace);
    let (status, body) = get_json(&server, "/api/agents/fake/conversations").await;
    assert_eq!(status, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains("session/list"), "{body}");
    drop(server);

    // Each session in a directory of its own: no session of the agent's own can be there.
    let other = tempfile::tempdir().unwrap();
    let server = start(other.path(), "normal");
    let (_, agents) = get_json(&server, "/api/agents").await;
    let why = agents["agents"][1]["openUnavailable"].as_str().expect("a reason").to_owned();
    assert!(why.contains("--workspace"), "{why}");
    let (status, body) = get_json(&server, "/api/agents/fake/conversations").await;
    assert_eq!((status, body["message"].as_str()), (422, Some(why.as_str())));
}
