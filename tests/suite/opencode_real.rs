//! chatwire over the real opencode (npm `opencode-ai` 1.18.33, installed by `./x test` into
//! `~/.cache/chatwire/opencode-1.18.33`, or named by `CHATWIRE_TEST_OPENCODE`) as an ACP agent, whose model is the
//! fake OpenAI-compatible server of tests/support, named in `OPENCODE_CONFIG_CONTENT`, with `HOME` and the XDG
//! directories in a temporary directory: a run with thinking, text, a bash call and a file write; Stop during a
//! model call that hangs; a second instance on PostgreSQL that tails a run the first one drives; one of opencode's
//! own sessions listed, opened in a new chatwire session with its messages, and continued there; and its model
//! option, offered in the session's detail and switched between runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::fake_openai::{FakeServer, Reply, openai_reasoning_text_tool_call, openai_text, openai_tool_call};
use crate::support::opencode;
use crate::support::server::{Lines, Server, kind, script_file};
use serde_json::{Value, json};

/// A hang guard only: opencode answers in seconds.
const WAIT: Duration = Duration::from_secs(120);

/// The config file naming opencode as the agent `opencode`, isolated in `dir`, its model the fake server.
fn config(dir: &Path, model_url: &str) -> PathBuf {
    config_with(dir, model_url, json!({}))
}

/// As [`config`], with `extra` in opencode's configuration.
fn config_with(dir: &Path, model_url: &str, extra: Value) -> PathBuf {
    let opencode = opencode::executable().unwrap_or_else(|| {
        panic!("opencode {} is not installed: `./x test` installs it into the cache", opencode::VERSION)
    });
    let env = opencode::isolated_env(&dir.join("opencode-home"), model_url, extra);
    let env: Vec<String> = env.iter().map(|(key, value)| format!("{key} = {value:?}")).collect();
    let table = format!(
        "[agent.opencode]\ncommand = {:?}\nargs = [\"acp\"]\nenv = {{ {} }}\n",
        opencode.display().to_string(),
        env.join(", ")
    );
    let path = dir.join("chatwire.toml");
    std::fs::write(&path, table).unwrap();
    path
}

fn flags(config: &Path) -> Vec<String> {
    vec!["--config".into(), config.display().to_string(), "--default-agent".into(), "opencode".into()]
}

fn frames(lines: &[String]) -> Vec<Value> {
    lines.iter().filter(|line| kind(line) != "ping").map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[tokio::test]
async fn real_opencode_thinks_runs_bash_writes_a_file_and_ends_done() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = FakeServer::start(Vec::new(), "/v1").await;
    let config = config(dir.path(), &model.base_url);
    let flags = flags(&config);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Server::start(&data, &script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#), &flags);
    let session = server.new_session().await;
    // The model names the file by its path in the session's workspace, known once the session is.
    std::fs::create_dir_all(data.join("workspaces").join(&session)).unwrap();
    let written = data.join("workspaces").join(&session).canonicalize().unwrap().join("hello.txt");
    model.push([
        Reply::Sse(openai_reasoning_text_tool_call(
            "I should run it first.",
            "Running it.",
            "call_bash",
            "bash",
            &json!({"command": "echo hi", "description": "Print hi"}),
        )),
        Reply::Sse(openai_tool_call(
            "call_write",
            "write",
            &json!({"filePath": written.display().to_string(), "content": "hello from opencode\n"}),
        )),
        Reply::Sse(openai_text("All done.")),
    ]);

    let response =
        server.post("/api/chat", &json!({"sessionId": session, "message": "Run echo hi, then write hello.txt."}));
    let lines = Lines::new(response.send().await.unwrap()).rest(WAIT).await;
    let frames = frames(&lines);
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{frames:#?}");
    let thinking: String =
        frames.iter().filter(|frame| frame["type"] == "thinking").filter_map(|frame| frame["text"].as_str()).collect();
    assert_eq!(thinking, "I should run it first.");
    let parts = done["message"]["parts"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().filter_map(|part| part["type"].as_str()).collect();
    assert_eq!(kinds, ["thinking", "text", "tool-Bash", "tool-Write", "text"], "{parts:#?}");
    let bash = &parts[2];
    assert_eq!(bash["input"]["command"], "echo hi");
    assert_eq!(bash["output"]["output"], "hi\n");
    assert_eq!(bash["state"], "output-available");
    assert_eq!(parts[3]["input"]["path"], "hello.txt");
    assert_eq!(parts[4]["text"], "All done.");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "hello from opencode\n");
    assert!(frames.iter().any(|frame| frame["type"] == "usage"), "opencode reports usage");
}

#[tokio::test]
async fn stop_ends_a_real_opencode_run_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        FakeServer::start(vec![Reply::Hang("openai/first_words.sse"), Reply::Sse(openai_text("Back again."))], "/v1")
            .await;
    let config = config(dir.path(), &model.base_url);
    let flags = flags(&config);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server =
        Server::start(&dir.path().join("data"), &script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#), &flags);
    let session = server.new_session().await;
    let response = server.post("/api/chat", &json!({"sessionId": session, "message": "Write a long essay."}));
    let mut lines = Lines::new(response.send().await.unwrap());
    // The model call hangs after its first words: the run is going.
    lines.skip_to("delta", WAIT).await;
    let stop = server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap();
    assert_eq!(stop.status(), 200);
    let rest = frames(&lines.rest(WAIT).await);
    let end = rest.last().unwrap();
    assert!(end["type"] == "done" || end["type"] == "error", "{rest:#?}");
    tokio::time::timeout(WAIT, model.closed.notified()).await.expect("opencode gave up its model call");

    let response = server.post("/api/chat", &json!({"sessionId": session, "message": "Short answer please."}));
    let again = frames(&Lines::new(response.send().await.unwrap()).rest(WAIT).await);
    let done = again.last().unwrap();
    assert_eq!(done["type"], "done", "{again:#?}");
    let text: String = done["message"]["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(text, "Back again.");
}

/// Reads a stream until its run's terminal frame, leaving out pings.
async fn until_terminal(lines: &mut Lines, seen: &mut Vec<Value>) {
    while !seen.last().is_some_and(|frame| frame["type"] == "done" || frame["type"] == "error") {
        let line = lines.next_within(WAIT).await.expect("the run goes on to its end");
        if kind(&line) != "ping" {
            seen.push(serde_json::from_str(&line).unwrap());
        }
    }
}

#[tokio::test]
async fn a_second_instance_on_postgres_tails_a_real_opencode_run_and_a_dropped_viewer_resumes_without_gaps() {
    use crate::support::server::TOKEN;
    let dir = tempfile::tempdir().unwrap();
    let model = FakeServer::start(
        vec![
            Reply::Sse(openai_tool_call(
                "call_sleep",
                "bash",
                &json!({"command": "sleep 2; echo slept", "description": "Wait"}),
            )),
            Reply::Sse(openai_text("Slept and done.")),
        ],
        "/v1",
    )
    .await;
    let config = config(dir.path(), &model.base_url);
    let flags = flags(&config);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Server::cluster(
        2,
        &dir.path().join("data"),
        &script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#),
        &flags,
    )
    .await;
    let session = server.new_session().await;
    let response = server
        .http
        .post(server.instance_url(0, "/api/chat"))
        .bearer_auth(TOKEN)
        .json(&json!({"sessionId": session, "message": "Sleep a little."}))
        .send()
        .await
        .unwrap();
    // The owner's viewer reads the start of the run, then goes away (a reload) and comes back by `seq`.
    let mut owner = Lines::new(response);
    let mut before_reload: Vec<Value> = Vec::new();
    while before_reload.len() < 3 {
        let line = owner.next_within(WAIT).await.unwrap();
        if kind(&line) != "ping" {
            before_reload.push(serde_json::from_str(&line).unwrap());
        }
    }
    drop(owner);
    let tail = server.instance_url(1, &format!("/api/sessions/{session}/events?after=0"));
    let mut viewer = Lines::new(server.http.get(tail).bearer_auth(TOKEN).send().await.unwrap());
    let last_seen = before_reload.last().unwrap()["seq"].as_u64().unwrap();
    let resume = server.instance_url(0, &format!("/api/sessions/{session}/events?after={last_seen}"));
    let mut resumed = Lines::new(server.http.get(resume).bearer_auth(TOKEN).send().await.unwrap());

    let mut on_second: Vec<Value> = Vec::new();
    until_terminal(&mut viewer, &mut on_second).await;
    let mut after_reload = before_reload.clone();
    until_terminal(&mut resumed, &mut after_reload).await;

    let seqs = |frames: &[Value]| frames.iter().map(|frame| frame["seq"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(&on_second), (1..=on_second.len() as u64).collect::<Vec<_>>(), "no gap, no duplicate");
    let first = after_reload[0]["seq"].as_u64().unwrap();
    assert_eq!(seqs(&after_reload), (first..first + after_reload.len() as u64).collect::<Vec<_>>());
    assert_eq!(&on_second[(first - 1) as usize..], &after_reload[..], "both viewers saw the same frames");
    let done = on_second.last().unwrap();
    assert_eq!(done["type"], "done", "{on_second:#?}");
    let bash = done["message"]["parts"].as_array().unwrap().iter().find(|part| part["type"] == "tool-Bash").unwrap();
    assert_eq!(bash["output"]["output"], "slept\n");
}

#[tokio::test]
async fn an_opencode_session_is_listed_opened_in_a_new_session_and_goes_on_there() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "remember me\n").unwrap();
    let model = FakeServer::start(
        vec![
            Reply::Sse(openai_reasoning_text_tool_call(
                "I should look at the files.",
                "Let me list them.",
                "call_ls",
                "bash",
                &json!({"command": "ls", "description": "List files"}),
            )),
            Reply::Sse(openai_text("There is notes.txt.")),
            Reply::Sse(openai_text("Yes: notes.txt.")),
        ],
        "/v1",
    )
    .await;
    let config = config(dir.path(), &model.base_url);
    let mut flags = flags(&config);
    flags.extend(["--workspace".to_owned(), workspace.display().to_string()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server =
        Server::start(&dir.path().join("data"), &script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#), &flags);
    // opencode's own session in the workspace (made here over ACP; its CLI keeps its sessions in the same store).
    let first = server.new_session().await;
    let response = server.post("/api/chat", &json!({"sessionId": first, "message": "Which files are here?"}));
    let made = frames(&Lines::new(response.send().await.unwrap()).rest(WAIT).await);
    assert_eq!(made.last().unwrap()["type"], "done", "{made:#?}");
    let own = made[0]["sessionFile"].as_str().expect("opencode's session id").to_owned();

    let listed: Value = server.get("/api/agents/opencode/conversations").send().await.unwrap().json().await.unwrap();
    let conversations = listed["conversations"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let found = conversations.iter().find(|c| c["id"] == own.as_str()).unwrap_or_else(|| panic!("{listed}"));
    assert!(found["updatedAt"].as_u64().is_some(), "{found}");

    let response =
        server.post("/api/sessions", &json!({"agent": "opencode", "conversation": own})).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    let session = created["session"]["sessionId"].as_str().unwrap().to_owned();
    let messages = created["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{created:#}");
    assert_eq!(messages[0]["parts"][0]["text"], "Which files are here?");
    let parts = messages[1]["parts"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().filter_map(|part| part["type"].as_str()).collect();
    assert_eq!(kinds, ["thinking", "text", "tool-Bash", "text"], "{parts:#?}");
    assert_eq!(parts[2]["input"]["command"], "ls");
    assert!(parts[2]["output"]["output"].as_str().unwrap().contains("notes.txt"), "{:#}", parts[2]);
    assert_eq!(parts[3]["text"], "There is notes.txt.");

    // The imported session goes on with opencode's session: the model sees the earlier turn.
    let response = server.post("/api/chat", &json!({"sessionId": session, "message": "Do you remember the files?"}));
    let again = frames(&Lines::new(response.send().await.unwrap()).rest(WAIT).await);
    let done = again.last().unwrap();
    assert_eq!(done["type"], "done", "{again:#?}");
    assert_eq!(again[0]["sessionFile"], own.as_str());
    assert_eq!(done["message"]["parts"].as_array().unwrap().last().unwrap()["text"], "Yes: notes.txt.");
    let asked =
        (0..model.requests()).map(|at| model.body(at).to_string()).find(|body| body.contains("Do you remember"));
    let asked = asked.expect("the model was asked the follow-up");
    assert!(asked.contains("Which files are here?") && asked.contains("There is notes.txt."), "{asked}");
}

#[tokio::test]
async fn the_model_opencode_offers_is_switched_and_the_next_prompt_goes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let model =
        FakeServer::start(vec![Reply::Sse(openai_text("First.")), Reply::Sse(openai_text("Second."))], "/v1").await;
    // Two models at the same fake server, the first the default.
    let limit = json!({"context": 100000, "output": 8192});
    let models = json!({
        "fake-model": {"name": "Fake Model", "tool_call": true, "limit": limit},
        "fake-model-2": {"name": "Fake Model Two", "tool_call": true, "limit": limit},
    });
    let provider = json!({"fake": {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": model.base_url, "apiKey": "test-key"},
        "models": models,
    }});
    let config = config_with(dir.path(), &model.base_url, json!({"provider": provider}));
    let flags = flags(&config);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server =
        Server::start(&dir.path().join("data"), &script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#), &flags);
    let session = server.new_session().await;
    let run = |message: &'static str| {
        let response = server.post("/api/chat", &json!({"sessionId": session, "message": message}));
        async move { frames(&Lines::new(response.send().await.unwrap()).rest(WAIT).await) }
    };
    let first = run("First question").await;
    assert_eq!(first.last().unwrap()["type"], "done", "{first:#?}");

    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    let options = detail["agentOptions"]["options"].as_array().unwrap_or_else(|| panic!("{detail:#}"));
    let option = options.iter().find(|option| option["category"] == "model").unwrap_or_else(|| panic!("{detail:#}"));
    assert_eq!(option["current"], "fake/fake-model", "{option:#}");
    let values: Vec<&str> = option["choices"].as_array().unwrap().iter().filter_map(|c| c["value"].as_str()).collect();
    assert!(values.contains(&"fake/fake-model-2"), "{option:#}");
    let commands = detail["agentOptions"]["commands"].as_array().unwrap_or_else(|| panic!("{detail:#}"));
    assert!(commands.iter().any(|command| command["name"] == "init"), "{commands:#?}");

    let id = option["id"].as_str().unwrap();
    let path = format!("/api/sessions/{session}/agent-option");
    let response = server.post(&path, &json!({"configId": id, "value": "fake/fake-model-2"})).send().await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    let options = detail["agentOptions"]["options"].as_array().unwrap();
    let option = options.iter().find(|option| option["id"] == id).unwrap();
    assert_eq!(option["current"], "fake/fake-model-2", "{option:#}");

    let second = run("Second question").await;
    assert_eq!(second.last().unwrap()["type"], "done", "{second:#?}");
    // The model of the first request (not a title's, which goes to the small model) that carried the prompt: the
    // later ones carry it too, as history.
    let asked = |text: &str| {
        (0..model.requests())
            .map(|at| model.body(at).to_string())
            .find(|body| body.contains(text) && !body.contains("You are a title generator"))
            .map(|body| serde_json::from_str::<Value>(&body).unwrap()["model"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("the model was asked {text:?}"))
    };
    assert_eq!(asked("First question"), "fake-model");
    assert_eq!(asked("Second question"), "fake-model-2");
}
