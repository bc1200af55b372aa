//! chatwire over the real pi (npm `@mariozechner/pi-coding-agent` 0.73.1, installed by `./x test` into
//! `~/.cache/chatwire/pi-0.73.1`, or named by `CHATWIRE_TEST_PI`), whose model is the fake OpenAI-compatible server of
//! tests/support, registered as a pi custom provider in a temporary agent dir with `HOME` in a temporary directory:
//! one prompt that runs `bash` and `write`, a Stop during a `sleep`, a steer, and a chatwire restart after which the
//! session's new pi process reopens pi's session file — asserted on the frames, the files and what the model was sent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::fake_openai::{FakeServer, Reply, openai_text, openai_tool_call};
use crate::support::server::{Lines, Server, kind, script_file};
use serde_json::{Value, json};

const PI_VERSION: &str = "0.73.1";
const WAIT: Duration = Duration::from_secs(60);

fn pi_executable() -> PathBuf {
    let pi = match std::env::var_os("CHATWIRE_TEST_PI") {
        Some(path) => PathBuf::from(path),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache"));
            cache.join(format!("chatwire/pi-{PI_VERSION}/node_modules/.bin/pi"))
        }
    };
    assert!(pi.is_file(), "pi {PI_VERSION} is not installed at {}: `./x test` installs it", pi.display());
    pi
}

/// pi's configuration for the test: the fake server as its only provider, in an agent dir of its own.
fn configure_pi(agent_dir: &Path, base_url: &str) {
    std::fs::create_dir_all(agent_dir).unwrap();
    let models = json!({"providers": {"fake": {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": "sk-fake-key",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
        "models": [{"id": "fake-model", "reasoning": false, "contextWindow": 128000, "maxTokens": 4096}],
    }}});
    std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
    let settings = json!({"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false});
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn frame(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

/// Reads the stream until a Bash row is running; returns the lines read.
async fn until_bash_runs(lines: &mut Lines) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = lines.next_within(WAIT).await.expect("the run goes on until bash runs");
        let value = frame(&line);
        seen.push(line);
        if value["type"] == "tool"
            && value["part"]["type"] == "tool-Bash"
            && value["part"]["state"] == "input-available"
        {
            return seen;
        }
    }
}

fn tool_states(lines: &[String], part_type: &str) -> Vec<String> {
    lines
        .iter()
        .map(|line| frame(line))
        .filter(|value| value["type"] == "tool" && value["part"]["type"] == part_type)
        .map(|value| value["part"]["state"].as_str().unwrap().to_owned())
        .collect()
}

/// chatwire on the real pi, whose model is `model`: chatwire's data, pi's agent dir and `HOME` under `dir`.
fn start_chatwire_on_pi(dir: &Path, model: &FakeServer) -> Server {
    let (home, agent_dir) = (dir.join("home"), dir.join("pi-agent"));
    std::fs::create_dir_all(&home).unwrap();
    configure_pi(&agent_dir, &model.base_url);
    let pi_command = format!("{} --offline", pi_executable().display());
    let script = script_file(dir, r#"{"turns":[{"text":"unused"}]}"#);
    Server::start_with_env(
        &dir.join("data"),
        &script,
        &["--runtime", "pi", "--pi-command", &pi_command],
        &[
            ("HOME", home.to_str().unwrap()),
            ("PI_CODING_AGENT_DIR", agent_dir.to_str().unwrap()),
            ("PI_OFFLINE", "1"),
            ("PI_TELEMETRY", "0"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_pi_runs_tools_stops_and_steers() {
    let model = FakeServer::start(
        vec![
            Reply::Sse(openai_tool_call("call_1", "bash", &json!({"command": "echo hello from bash > hello.txt"}))),
            Reply::Sse(openai_tool_call("call_2", "write", &json!({"path": "notes.txt", "content": "line one\n"}))),
            Reply::Sse(openai_text("Both files are written.")),
            Reply::Sse(openai_tool_call("call_3", "bash", &json!({"command": "sleep 30"}))),
            Reply::Sse(openai_tool_call("call_4", "bash", &json!({"command": "sleep 2; echo slept"}))),
            Reply::Sse(openai_text("Steered as asked.")),
            Reply::Sse(openai_text("Still here.")),
        ],
        "/v1",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("pi-agent");
    let start_chatwire = || start_chatwire_on_pi(dir.path(), &model);
    let server = start_chatwire();
    let session = server.new_session().await;
    let workspace = dir.path().join("data/workspaces").join(&session);
    let send = |message: &str, behavior: Option<&str>| {
        let mut body = json!({"sessionId": session, "message": message});
        if let Some(behavior) = behavior {
            body["streamingBehavior"] = json!(behavior);
        }
        server.post("/api/chat", &body).send()
    };

    // bash and write, then an answer.
    let first =
        Lines::new(send("Write hello.txt with bash and notes.txt with write.", None).await.unwrap()).rest(WAIT).await;
    let start = frame(&first[0]);
    assert_eq!(start["type"], "start");
    let session_file = start["sessionFile"].as_str().expect("start names pi's session file").to_owned();
    let done = frame(first.last().unwrap());
    assert_eq!(done["type"], "done", "{first:#?}");
    assert_eq!(done["sessionFile"], session_file.as_str());
    assert_eq!(tool_states(&first, "tool-Bash").last().map(String::as_str), Some("output-available"));
    assert_eq!(tool_states(&first, "tool-Write").last().map(String::as_str), Some("output-available"));
    let text: String = done["message"]["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(text, "Both files are written.");
    assert_eq!(std::fs::read_to_string(workspace.join("hello.txt")).unwrap(), "hello from bash\n");
    assert_eq!(std::fs::read_to_string(workspace.join("notes.txt")).unwrap(), "line one\n");
    assert!(Path::new(&session_file).starts_with(&agent_dir), "{session_file} is in pi's agent dir");

    // Stop while `sleep 30` runs: the run ends at once with the call ended as failed.
    let mut second = Lines::new(send("Now sleep for a while.", None).await.unwrap());
    let mut lines = until_bash_runs(&mut second).await;
    let abort: Value =
        server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap().json().await.unwrap();
    assert_eq!(abort["aborted"], true);
    lines.extend(second.rest(WAIT).await);
    assert_eq!(lines.iter().filter(|l| matches!(kind(l).as_str(), "done" | "error")).count(), 1, "{lines:#?}");
    assert_eq!(tool_states(&lines, "tool-Bash").last().map(String::as_str), Some("output-error"), "{lines:#?}");

    // A steer while `sleep 2` runs reaches the model with the tool's result.
    let mut third = Lines::new(send("Sleep briefly.", None).await.unwrap());
    let mut lines = until_bash_runs(&mut third).await;
    assert_eq!(send("Also mention the steer.", Some("steer")).await.unwrap().status(), 200);
    lines.extend(third.rest(WAIT).await);
    let done = frame(lines.last().unwrap());
    assert_eq!(done["type"], "done", "{lines:#?}");
    let steer_logged = lines
        .iter()
        .map(|l| frame(l))
        .any(|value| value["type"] == "message" && value["message"]["parts"][0]["text"] == "Also mention the steer.");
    assert!(steer_logged, "the steer joined the transcript: {lines:#?}");
    let last_request = model.body(model.requests() - 1).to_string();
    assert!(last_request.contains("Also mention the steer.") && last_request.contains("slept"), "{last_request}");
    assert_eq!(model.requests(), 6, "pi asked the model exactly once per reply");

    // After a restart, the session's new pi process reopens its session file: the model sees the earlier turns.
    drop(server);
    let server = start_chatwire();
    let body = json!({"sessionId": session, "message": "Are you still there?"});
    let fourth = Lines::new(server.post("/api/chat", &body).send().await.unwrap()).rest(WAIT).await;
    let start = frame(&fourth[0]);
    assert_eq!(start["sessionFile"], session_file.as_str(), "{start}");
    assert!(start.get("sessionReset").is_none(), "{start}");
    assert_eq!(frame(fourth.last().unwrap())["type"], "done", "{fourth:#?}");
    let resumed_request = model.body(6).to_string();
    assert!(resumed_request.contains("Write hello.txt with bash"), "{resumed_request}");
}

/// The texts of the messages a model request carried, in order, by role.
fn sent_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user" || message["role"] == "assistant")
        .map(|message| {
            let content = &message["content"];
            let text = match content.as_str() {
                Some(text) => text.to_owned(),
                None => content.as_array().into_iter().flatten().filter_map(|part| part["text"].as_str()).collect(),
            };
            format!("{}: {text}", message["role"].as_str().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_pi_edits_regenerates_and_switches_branches_through_its_own_forks() {
    let replies = ["answer one", "answer two", "answer three", "answer four", "answer five", "answer six"];
    let model = FakeServer::start(replies.iter().map(|text| Reply::Sse(openai_text(text))).collect(), "/v1").await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_chatwire_on_pi(dir.path(), &model);
    let models: Value = server.get("/api/models").send().await.unwrap().json().await.unwrap();
    assert!(models.get("rerunUnavailable").is_none(), "pi offers edit and regenerate: {models}");
    let session = server.new_session().await;
    // Runs a request to its end; the lines of the run.
    let run = |body: Value| {
        let request = server.post("/api/chat", &body).send();
        async move { Lines::new(request.await.unwrap()).rest(WAIT).await }
    };
    let prompt_id = |lines: &[String], text: &str| {
        lines
            .iter()
            .map(|line| frame(line))
            .find(|value| value["type"] == "message" && value["message"]["parts"][0]["text"] == text)
            .map(|value| value["message"]["id"].as_str().unwrap().to_owned())
            .expect("the prompt is logged")
    };
    let ended_well = |lines: &[String]| {
        assert_eq!(kind(lines.last().unwrap()), "done", "{lines:#?}");
        frame(&lines[0])["sessionFile"].as_str().expect("the run names pi's session file").to_owned()
    };

    let first = run(json!({"sessionId": session, "message": "first question"})).await;
    let first_file = ended_well(&first);
    let first_id = prompt_id(&first, "first question");
    let second = run(json!({"sessionId": session, "message": "second question"})).await;
    assert_eq!(ended_well(&second), first_file);
    let second_id = prompt_id(&second, "second question");

    // Edit the second question: pi forks before it, and the model sees the first exchange and the new text only.
    let edit =
        json!({"sessionId": session, "message": "second, edited", "rerun": {"kind": "edit", "messageId": second_id}});
    let edited = run(edit).await;
    let edited_file = ended_well(&edited);
    assert_ne!(edited_file, first_file, "the edit works on a fork of pi's session file");
    assert_eq!(
        sent_messages(&model.body(2)),
        ["user: first question", "assistant: answer one", "user: second, edited"]
    );
    let original = std::fs::read_to_string(&first_file).unwrap();
    assert!(
        original.contains("second question") && !original.contains("second, edited"),
        "the old branch's file is kept"
    );
    let edited_id = prompt_id(&edited, "second, edited");

    // Regenerate the answer to the edit: once more from just before that message, which is sent once.
    let regenerate =
        json!({"sessionId": session, "message": "", "rerun": {"kind": "regenerate", "messageId": edited_id}});
    let regenerated = run(regenerate).await;
    ended_well(&regenerated);
    assert_eq!(
        sent_messages(&model.body(3)),
        ["user: first question", "assistant: answer one", "user: second, edited"]
    );

    // Back to the original second question: the next prompt continues pi's file of that branch.
    let switched =
        server.post(&format!("/api/sessions/{session}/branch"), &json!({"messageId": second_id})).send().await;
    assert_eq!(switched.unwrap().status(), 200);
    let third = run(json!({"sessionId": session, "message": "third question"})).await;
    assert_eq!(ended_well(&third), first_file, "pi reopened the first branch's own file");
    assert_eq!(
        sent_messages(&model.body(4)),
        [
            "user: first question",
            "assistant: answer one",
            "user: second question",
            "assistant: answer two",
            "user: third question"
        ]
    );

    // Editing the first question starts from an empty conversation.
    let edit_first =
        json!({"sessionId": session, "message": "first, edited", "rerun": {"kind": "edit", "messageId": first_id}});
    ended_well(&run(edit_first).await);
    assert_eq!(sent_messages(&model.body(5)), ["user: first, edited"]);
    assert_eq!(model.requests(), 6, "pi asked the model once per run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_pi_forks_a_session_into_a_new_one_with_its_own_session_file() {
    let replies = ["answer one", "answer two", "fork answer", "whole answer", "fresh answer", "answer three"];
    let model = FakeServer::start(replies.iter().map(|text| Reply::Sse(openai_text(text))).collect(), "/v1").await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_chatwire_on_pi(dir.path(), &model);
    let session = server.new_session().await;
    let run = |session: String, message: &str| {
        let request = server.post("/api/chat", &json!({"sessionId": session, "message": message})).send();
        async move {
            let lines = Lines::new(request.await.unwrap()).rest(WAIT).await;
            assert_eq!(kind(lines.last().unwrap()), "done", "{lines:#?}");
            frame(&lines[0])["sessionFile"].as_str().expect("the run names pi's session file").to_owned()
        }
    };
    let message_id = |detail: &Value, text: &str| {
        let messages = detail["messages"].as_array().unwrap();
        let found = messages.iter().find(|m| m["parts"][0]["text"] == text).expect("the message is shown");
        found["id"].as_str().unwrap().to_owned()
    };
    let fork = |message_id: String| {
        let request = server.post(&format!("/api/sessions/{session}/fork"), &json!({"messageId": message_id})).send();
        async move {
            let response = request.await.unwrap();
            assert_eq!(response.status(), 201);
            response.json::<Value>().await.unwrap()
        }
    };

    let first_file = run(session.clone(), "first question").await;
    run(session.clone(), "second question").await;
    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();

    // At the first answer: pi's file is cut before the second question and carried into the fork's workspace.
    let at_answer = fork(message_id(&detail, "answer one")).await;
    let forked = at_answer["session"]["sessionId"].as_str().unwrap().to_owned();
    let forked_file = run(forked.clone(), "fork question").await;
    assert_ne!(forked_file, first_file);
    assert_eq!(sent_messages(&model.body(2)), ["user: first question", "assistant: answer one", "user: fork question"]);
    let header: Value =
        serde_json::from_str(std::fs::read_to_string(&forked_file).unwrap().lines().next().unwrap()).unwrap();
    let forked_workspace = dir.path().join("data/workspaces").join(&forked);
    assert_eq!(header["cwd"], forked_workspace.to_str().unwrap(), "pi works in the fork's own workspace");

    // At the last answer: all of pi's file, copied.
    let at_end = fork(message_id(&detail, "answer two")).await;
    let whole = at_end["session"]["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(run(whole, "whole question").await, first_file);
    assert_eq!(
        sent_messages(&model.body(3)),
        [
            "user: first question",
            "assistant: answer one",
            "user: second question",
            "assistant: answer two",
            "user: whole question"
        ]
    );

    // At the first question: an empty conversation, the question handed back.
    let at_start = fork(message_id(&detail, "first question")).await;
    assert_eq!(at_start["draft"], "first question");
    run(at_start["session"]["sessionId"].as_str().unwrap().to_owned(), "fresh question").await;
    assert_eq!(sent_messages(&model.body(4)), ["user: fresh question"]);

    // The first session goes on in its own file, untouched by the forks.
    assert_eq!(run(session.clone(), "third question").await, first_file);
    assert_eq!(sent_messages(&model.body(5)).len(), 5);
    assert_eq!(model.requests(), 6);
}
