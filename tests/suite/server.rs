//! The HTTP server, run as the real binary on a loopback port: durable runs, gap-free resume, request ids, Stop,
//! keepalives, restarts after a crash, and the safe defaults.

use std::time::{Duration, Instant};

use crate::support::server::{Lines, Server, TOKEN, kind, script_file, seq};
use serde_json::{Value, json};

pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// Where a reliability test runs: one server on its SQLite file, or three instances on one PostgreSQL database with
/// a shared data dir, each request going to the next instance in turn.
#[derive(Debug, Clone, Copy)]
enum Deploy {
    One,
    Three,
}

impl Deploy {
    /// A sleep duration of the test's own, so that the two deployments' commands can be told apart by `pgrep`.
    fn seconds(self, seconds: &str) -> &str {
        match (self, seconds) {
            (Deploy::One, _) => seconds,
            (Deploy::Three, "301.25") => "301.75",
            (Deploy::Three, "303.25") => "303.75",
            (Deploy::Three, other) => panic!("no three-instance twin for sleep {other}"),
        }
    }
}

async fn deploy(how: Deploy, data: &std::path::Path, script: &std::path::Path, extra: &[&str]) -> Server {
    match how {
        Deploy::One => Server::start(data, script, extra),
        Deploy::Three => Server::cluster(3, data, script, extra).await,
    }
}

/// The test `$name(how)` run on one server and on three instances.
macro_rules! both_deployments {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn on_one_server() {
                super::$name(super::Deploy::One).await
            }

            #[tokio::test]
            async fn on_three_instances() {
                super::$name(super::Deploy::Three).await
            }
        }
    };
}

/// A run with text, a multi-line file streamed as typed, a command with live output, and a final answer.
const LIVELY: &str = r#"{"chunkChars": 5, "delayMs": 2, "turns": [
  {"thinking": "Planning the file.", "text": "Writing it now.", "toolCalls": [
    {"name": "write", "arguments": {"path": "a.txt", "content": "line one\nline \"two\"\n\ttabbed é😀\n"}},
    {"name": "bash", "arguments": {"command": "for i in 1 2 3; do echo tick $i; sleep 0.05; done"}}]},
  {"text": "Done: the file has **three** lines."}
]}"#;

pub(crate) async fn chat(server: &Server, session: &str, body: Value) -> Lines {
    let mut body = body;
    body["sessionId"] = json!(session);
    let response =
        tokio::time::timeout(WAIT, server.post("/api/chat", &body).send()).await.expect("POST /api/chat answers");
    Lines::new(response.unwrap())
}

pub(crate) async fn replay_run(server: &Server, session: &str, after: u64) -> Vec<String> {
    let request = server.get(&format!("/api/sessions/{session}/events?after={after}")).send();
    let response = tokio::time::timeout(WAIT, request).await.expect("GET events answers").unwrap();
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/x-ndjson"));
    assert_stream_headers(&response);
    let mut lines = Lines::new(response);
    let mut out = Vec::new();
    let deadline = Instant::now() + WAIT;
    while let Some(line) = lines.next_within(deadline.saturating_duration_since(Instant::now())).await {
        if line == r#"{"type":"ping"}"# {
            continue;
        }
        let done = matches!(kind(&line).as_str(), "done" | "error");
        out.push(line);
        if done {
            break;
        }
    }
    out
}

both_deployments!(a_dropped_stream_resumes_from_its_last_seq_without_gap_or_duplicate);
async fn a_dropped_stream_resumes_from_its_last_seq_without_gap_or_duplicate(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server = deploy(how, &dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]).await;

    let session = server.new_session().await;
    let whole = chat(&server, &session, json!({"message": "go"})).await.rest(WAIT).await;
    assert_eq!(kind(whole.last().unwrap()), "done");
    assert!(whole.iter().any(|l| kind(l) == "tool_args_delta"), "the script streams tool arguments");
    let total = whole.len();

    let mut cuts: Vec<usize> = vec![1, 2, 3, total / 2, total - 2, total - 1];
    cuts.extend(whole.iter().enumerate().filter(|(_, l)| kind(l) == "tool_args_delta").map(|(i, _)| i + 1).take(3));
    cuts.extend(whole.iter().enumerate().filter(|(_, l)| l.contains("tick")).map(|(i, _)| i + 1).take(2));
    cuts.sort_unstable();
    cuts.dedup();
    for cut in cuts {
        let session = server.new_session().await;
        let mut first = chat(&server, &session, json!({"message": "go"})).await;
        let mut seen = Vec::new();
        while seen.len() < cut {
            let line = first.next_within(WAIT).await.expect("the stream has this many lines");
            seen.push(line);
        }
        drop(first);
        let last = seen.last().unwrap();
        let resumed = if matches!(kind(last).as_str(), "done" | "error") {
            Vec::new()
        } else {
            replay_run(&server, &session, seq(last)).await
        };
        let mut joined = seen.clone();
        joined.extend(resumed);
        let replayed = replay_run(&server, &session, 0).await;
        assert_eq!(joined, replayed, "cut after {cut} frames");
        let seqs: Vec<u64> = joined.iter().map(|l| seq(l)).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "cut after {cut}: seqs not consecutive");
    }
}

both_deployments!(a_run_survives_its_viewer_and_sse_carries_the_same_frames);
async fn a_run_survives_its_viewer_and_sse_carries_the_same_frames(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server = deploy(how, &dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]).await;
    let session = server.new_session().await;
    let mut stream = chat(&server, &session, json!({"message": "go"})).await;
    stream.next_within(WAIT).await.unwrap();
    drop(stream);
    let ndjson = replay_run(&server, &session, 0).await;
    assert_eq!(kind(ndjson.last().unwrap()), "done", "the run finished with nobody watching");

    let response = server
        .get(&format!("/api/sessions/{session}/events?after=0"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_stream_headers(&response);
    let mut lines = Lines::new(response);
    let mut events = Vec::new();
    let mut current = (String::new(), String::new(), String::new());
    while events.len() < ndjson.len() {
        let line = lines.next_within(WAIT).await.unwrap();
        if let Some(id) = line.strip_prefix("id: ") {
            current.0 = id.to_owned();
        } else if let Some(event) = line.strip_prefix("event: ") {
            current.1 = event.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            current.2 = data.to_owned();
        } else if line.is_empty() && !current.2.is_empty() {
            events.push(std::mem::take(&mut current));
        }
    }
    for (sse, line) in events.iter().zip(&ndjson) {
        assert_eq!(sse.2, *line);
        assert_eq!(sse.0, seq(line).to_string());
        assert_eq!(sse.1, kind(line));
    }
}

/// The headers every stream carries; `no-store` is left out on purpose (docs/decisions.md, "Stream caching").
fn assert_stream_headers(response: &reqwest::Response) {
    let headers = response.headers();
    assert_eq!(headers["cache-control"], "no-cache, no-transform");
    assert_eq!(headers["x-accel-buffering"], "no");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers.get("content-encoding").is_none(), "streams are never compressed");
}

/// A run whose command sleeps for `seconds` (each test its own duration, so `pgrep` finds only its own sleeper).
fn sleeper(seconds: &str) -> String {
    format!(
        r#"{{"delayMs": 1, "turns": [
          {{"text": "Sleeping.", "toolCalls": [{{"name": "bash", "arguments": {{"command": "echo started; sleep {seconds}"}}}}]}},
          {{"text": "Awake again."}}]}}"#
    )
}

pub(crate) async fn read_until(lines: &mut Lines, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = lines.next_within(WAIT).await.unwrap_or_else(|| panic!("the stream ended before {needle}"));
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return seen;
        }
    }
}

fn sleeper_running(seconds: &str) -> bool {
    let pattern = format!("sleep {seconds}");
    std::process::Command::new("pgrep")
        .args(["-f", &pattern])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

both_deployments!(stop_ends_a_long_command_quickly_and_keeps_the_partial_answer);
async fn stop_ends_a_long_command_quickly_and_keeps_the_partial_answer(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server =
        deploy(how, &dir.path().join("data"), &script_file(dir.path(), &sleeper(how.seconds("301.25"))), &[]).await;
    let session = server.new_session().await;
    let mut lines = chat(&server, &session, json!({"message": "sleep"})).await;
    read_until(&mut lines, "\"output\":\"started").await;
    assert!(sleeper_running(how.seconds("301.25")));

    let stop: Value =
        server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap().json().await.unwrap();
    assert_eq!(stop, json!({"ok": true, "aborted": true}));
    // The sleeper would run for five minutes: a `done` within the hang guard means Stop ended it.
    let rest = lines.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["message"]["parts"][0], json!({"type": "text", "text": "Sleeping."}));
    assert_eq!(done["message"]["parts"][1]["state"], "output-error");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!sleeper_running(how.seconds("301.25")), "the command's process group is still alive");

    let again: Value =
        server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap().json().await.unwrap();
    assert_eq!(again, json!({"ok": true, "aborted": false}));
}

#[tokio::test]
async fn a_killed_server_restarts_with_the_session_intact_and_the_run_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let script = script_file(dir.path(), &sleeper("302.25"));
    let mut server = Server::start(&data, &script, &[]);
    let session = server.new_session().await;
    let mut lines = chat(&server, &session, json!({"message": "sleep"})).await;
    let before = read_until(&mut lines, "\"output\":\"started").await;
    server.kill();
    drop(lines);
    // A crash leaves the command's process group behind; this test's own sleeper is cleaned up here.
    let _ = std::process::Command::new("pkill").args(["-f", "sleep 302.25"]).status();

    let server = Server::start(&data, &script, &[]);
    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(detail["session"]["status"], "interrupted");
    let log = replay_run(&server, &session, 0).await;
    assert_eq!(&log[..before.len()], &before[..], "the log lost committed frames");
    let interrupted: Value = serde_json::from_str(log.last().unwrap()).unwrap();
    assert_eq!(interrupted["type"], "error");
    assert_eq!(interrupted["code"], "interrupted");

    let next = chat(&server, &session, json!({"message": "again"})).await.rest(WAIT).await;
    let done: Value = serde_json::from_str(next.last().unwrap()).unwrap();
    assert_eq!(done["type"], "done", "a new run works after the restart: {next:?}");
    assert_eq!(seq(&next[0]), seq(log.last().unwrap()) + 1, "seq continues across the restart");
}

both_deployments!(request_ids_make_a_send_idempotent);
async fn request_ids_make_a_send_idempotent(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server = deploy(how, &dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]).await;
    let session = server.new_session().await;
    let body = json!({"message": "go", "requestId": "req-1"});
    let (a, b) = tokio::join!(chat(&server, &session, body.clone()), chat(&server, &session, body.clone()));
    let (mut a, mut b) = (a, b);
    let (a, b) = tokio::join!(a.rest(WAIT), b.rest(WAIT));
    assert_eq!(a, b, "both requests tail the same run");
    assert_eq!(a.iter().filter(|l| kind(l) == "start").count(), 1);
    let retry = chat(&server, &session, body).await.rest(WAIT).await;
    assert_eq!(retry.concat(), a.concat(), "a retry after the run replays it byte for byte");

    let other = server
        .post("/api/chat", &json!({"sessionId": session, "message": "something else", "requestId": "req-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 422);
    let log = replay_run(&server, &session, 0).await;
    assert_eq!(log.iter().filter(|l| kind(l) == "start").count(), 1, "one run for one request id");
}

both_deployments!(a_second_send_during_a_run_is_refused_or_queued);
async fn a_second_send_during_a_run_is_refused_or_queued(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server =
        deploy(how, &dir.path().join("data"), &script_file(dir.path(), &sleeper(how.seconds("303.25"))), &[]).await;
    let session = server.new_session().await;
    let mut running = chat(&server, &session, json!({"message": "sleep"})).await;
    read_until(&mut running, "\"output\":\"started").await;

    let refused = server.post("/api/chat", &json!({"sessionId": session, "message": "hello?"})).send().await.unwrap();
    assert_eq!(refused.status(), 409);
    let error: Value = refused.json().await.unwrap();
    assert!(error["message"].as_str().unwrap().contains("streamingBehavior"));

    let mut steered = chat(&server, &session, json!({"message": "also this", "streamingBehavior": "steer"})).await;
    let queue = read_until(&mut steered, "\"type\":\"queue\"").await;
    let queue: Value = serde_json::from_str(queue.last().unwrap()).unwrap();
    assert_eq!(queue["steering"], json!(["also this"]));
    server.post("/api/chat/abort", &json!({"sessionId": session})).send().await.unwrap();
    let rest = steered.rest(WAIT).await;
    assert!(
        matches!(kind(rest.last().unwrap()).as_str(), "done" | "error"),
        "the queued send tails the run to its end"
    );
}

both_deployments!(a_steer_sent_while_a_run_ends_is_delivered_or_starts_the_next_run);
async fn a_steer_sent_while_a_run_ends_is_delivered_or_starts_the_next_run(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"delayMs": 1, "chunkChars": 50, "turns": [{"text": "Short answer."}]}"#;
    let server = deploy(how, &dir.path().join("data"), &script_file(dir.path(), script), &[]).await;
    let session = server.new_session().await;
    let mut accepted = Vec::new();
    for round in 0..20 {
        let prompt = format!("round {round}");
        let mut run = chat(&server, &session, json!({"message": prompt})).await;
        accepted.push(prompt);
        // `agent_end` is logged once the agent has decided to stop: the steer arrives as the run ends.
        read_until(&mut run, "\"name\":\"agent_end\"").await;
        let steer = format!("steer {round}");
        let body = json!({"sessionId": session, "message": steer, "streamingBehavior": "steer"});
        let response = server.post("/api/chat", &body).send().await.unwrap();
        assert_eq!(response.status(), 200, "round {round}");
        accepted.push(steer);
        let mut steered = Lines::new(response);
        for stream in [&mut run, &mut steered] {
            let rest = stream.rest(WAIT).await;
            assert!(matches!(kind(rest.last().unwrap()).as_str(), "done" | "error"), "round {round}: a stream ends");
        }
    }
    let log = replay_all(&server, &session).await;
    let delivered: Vec<String> = log
        .iter()
        .filter(|l| kind(l) == "message")
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["message"]["role"] == "user")
        .map(|m| m["message"]["parts"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(delivered, accepted, "every accepted message reaches the transcript, once, in order");
}

/// The whole log of a session that has no run in progress.
async fn replay_all(server: &Server, session: &str) -> Vec<String> {
    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    let last = detail["lastSeq"].as_u64().unwrap();
    let response = server.get(&format!("/api/sessions/{session}/events?after=0")).send().await.unwrap();
    let mut lines = Lines::new(response);
    let mut out = Vec::new();
    while out.last().is_none_or(|l: &String| seq(l) < last) {
        let line = lines.next_within(WAIT).await.expect("the log has lastSeq frames");
        if line != r#"{"type":"ping"}"# {
            out.push(line);
        }
    }
    out
}

#[tokio::test]
async fn a_shutdown_ends_held_streams_and_the_server_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]);
    let session = server.new_session().await;
    let response = server.get(&format!("/api/sessions/{session}/events?after=0")).send().await.unwrap();
    let mut held = Lines::new(response);

    let status = server.terminate(Duration::from_secs(20)).expect("the server exits while a stream is held");
    assert!(status.success(), "a shutdown is a clean exit: {status}");
    assert_eq!(held.next_within(WAIT).await, None, "the held stream ended (its viewer resumes by seq)");
}

/// A run whose log is far larger than what socket buffers absorb (a few MiB on loopback): 16 MiB of text, and the
/// same again in `done`.
fn big_answer_script(dir: &std::path::Path) -> std::path::PathBuf {
    let text = "All work and no play makes a long answer. ".repeat((16 << 20) / 42);
    script_file(dir, &json!({"chunkChars": 8192, "delayMs": 0, "turns": [{"text": text}]}).to_string())
}

/// Runs the big answer once, with a reader that reads everything or one that never reads after sending;
/// returns the server's peak memory (KiB) and the session's last `seq` once the run is over.
async fn big_run(dir: &std::path::Path, reads: bool) -> (u64, u64) {
    // One malloc arena: memory freed on one thread is reused on another, so peaks compare between processes.
    let env = [("MALLOC_ARENA_MAX", "1")];
    let server = Server::start_with_env(&dir.join(format!("data-{reads}")), &big_answer_script(dir), &[], &env);
    let session = server.new_session().await;
    let body = json!({"sessionId": session, "message": "go"}).to_string();
    let mut stalled = None;
    if reads {
        let lines = chat(&server, &session, json!({"message": "go"})).await.rest(WAIT).await;
        assert_eq!(kind(lines.last().unwrap()), "done");
    } else {
        use std::io::Write;
        let address = server.base.trim_start_matches("http://").to_owned();
        let mut socket = std::net::TcpStream::connect(&address).unwrap();
        write!(
            socket,
            "POST /api/chat HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        stalled = Some(socket);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let last_seq = loop {
        // The list, not the session's detail: that one rebuilds the transcript, and its memory would blur the peak.
        let list: Value = server.get("/api/sessions").send().await.unwrap().json().await.unwrap();
        let summary = list["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == session).unwrap().clone();
        if summary["status"] == "idle" && summary["lastSeq"].as_u64() > Some(0) {
            break summary["lastSeq"].as_u64().unwrap();
        }
        assert!(Instant::now() < deadline, "the run never finished: {summary}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let peak = server.peak_memory_kib();
    drop(stalled);
    (peak, last_seq)
}

#[tokio::test]
async fn a_consumer_that_never_reads_holds_no_frames_in_the_server_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (peak_reading, frames_reading) = big_run(dir.path(), true).await;
    let (peak_stalled, frames_stalled) = big_run(dir.path(), false).await;
    eprintln!("peak memory: {peak_reading} KiB with a reader, {peak_stalled} KiB with a stalled one");
    assert_eq!(frames_stalled, frames_reading, "the whole run reached the log with nobody reading");
    // Had the server queued what the stalled socket did not take, it would hold most of the 32 MiB log. It may hold
    // one chunk (a batch of frames) per stream; the peaks of two runs differ by under 1 MiB otherwise.
    assert!(
        peak_stalled < peak_reading + 8 * 1024,
        "peak memory {peak_stalled} KiB with a stalled reader against {peak_reading} KiB with a reader"
    );
}

both_deployments!(an_approval_is_taken_once_and_the_approved_call_runs);
async fn an_approval_is_taken_once_and_the_approved_call_runs(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"delayMs": 0, "turns": [
      {"text": "Writing.", "toolCalls": [{"name": "write", "arguments": {"path": "note.txt", "content": "hi"}}]},
      {"text": "Done."}]}"#;
    let server =
        deploy(how, &dir.path().join("data"), &script_file(dir.path(), script), &["--approve", "writes"]).await;
    let session = server.new_session().await;
    let mut run = chat(&server, &session, json!({"message": "write"})).await;
    let waiting = read_until(&mut run, "\"state\":\"approval-requested\"").await;
    let part: Value = serde_json::from_str(waiting.last().unwrap()).unwrap();
    let call = part["part"]["toolCallId"].as_str().unwrap().to_owned();

    let decide = |approve: bool| {
        server.post("/api/chat/approval", &json!({"sessionId": session, "toolCallId": call, "approve": approve})).send()
    };
    let first = decide(true).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.json::<Value>().await.unwrap(), json!({"ok": true}));
    assert_eq!(decide(false).await.unwrap().status(), 404, "a decided call is no longer pending");
    let rest = run.rest(WAIT).await;
    assert_eq!(kind(rest.last().unwrap()), "done");
    let workspace = server.data_dir.join("workspaces").join(&session);
    assert_eq!(std::fs::read_to_string(workspace.join("note.txt")).unwrap(), "hi");
}

#[tokio::test]
async fn tool_limits_come_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"delayMs": 0, "turns": [
      {"text": "Printing.", "toolCalls": [{"name": "bash", "arguments": {"command": "head -c 5000 /dev/zero | tr '\\0' x"}}]},
      {"text": "Done."}]}"#;
    let limits = ["--max-tool-output-bytes", "1024"];
    let server = Server::start(&dir.path().join("data"), &script_file(dir.path(), script), &limits);
    let session = server.new_session().await;
    let lines = chat(&server, &session, json!({"message": "print"})).await.rest(WAIT).await;
    let done: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let bash = done["message"]["parts"].as_array().unwrap().iter().find(|p| p["type"] == "tool-Bash").unwrap().clone();
    assert_eq!(bash["output"]["truncated"], true, "{bash}");
    assert!(bash["output"]["output"].as_str().unwrap().len() <= 1024 + 200, "{bash}");
}

#[tokio::test]
async fn a_run_with_nothing_to_show_ends_in_an_error_not_an_empty_done() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &script_file(dir.path(), r#"{"turns": [{"text": ""}]}"#), &[]);
    let session = server.new_session().await;
    let lines = chat(&server, &session, json!({"message": "say nothing"})).await.rest(WAIT).await;
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["message"], "the model returned an empty response");
    let again = chat(&server, &session, json!({"message": "still there?"})).await.rest(WAIT).await;
    assert_eq!(kind(again.last().unwrap()), "error", "the session stays usable");
}

both_deployments!(sessions_can_be_listed_renamed_and_deleted);
async fn sessions_can_be_listed_renamed_and_deleted(how: Deploy) {
    let dir = tempfile::tempdir().unwrap();
    let server = deploy(how, &dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]).await;
    let session = server.new_session().await;
    chat(&server, &session, json!({"message": "Fix the build\nplease"})).await.rest(WAIT).await;
    let list: Value = server.get("/api/sessions").send().await.unwrap().json().await.unwrap();
    assert_eq!(list["sessions"][0]["title"], "Fix the build", "titled after the first message");
    assert_eq!(list["sessions"][0]["status"], "idle");
    assert_eq!(list["sessions"][0]["messageCount"], 2);

    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(detail["messages"].as_array().unwrap().len(), 2);
    assert_eq!(detail["messages"][0]["role"], "user");
    assert!(detail.get("pending").is_none());

    let renamed = server
        .http
        .patch(server.url(&format!("/api/sessions/{session}")))
        .bearer_auth(TOKEN)
        .json(&json!({"title": "Build fix"}))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);
    let deleted =
        server.http.delete(server.url(&format!("/api/sessions/{session}"))).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    let gone = server.get(&format!("/api/sessions/{session}")).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let unknown = server.post("/api/chat", &json!({"sessionId": session, "message": "hi"})).send().await.unwrap();
    assert_eq!(unknown.status(), 404, "a deleted session is unknown");
    let other = server.new_session().await;
    let empty = server.post("/api/chat", &json!({"sessionId": other, "message": "  "})).send().await.unwrap();
    assert_eq!(empty.status(), 400, "an empty message");
}

#[tokio::test]
async fn the_api_is_closed_to_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &script_file(dir.path(), LIVELY), &[]);
    let http = &server.http;

    assert_eq!(http.get(server.url("/api/health")).send().await.unwrap().status(), 200, "health is public");
    for template in chatwire::server::http::API_ROUTES.iter().filter(|r| **r != "/api/health") {
        let route = template.replace("{id}", "x").replace("{*rest}", "anything");
        let status = http.post(server.url(&route)).json(&json!({})).send().await.unwrap().status();
        assert_eq!(status, 401, "POST {route} without a token");
        let status = http.get(server.url(&route)).bearer_auth("wrong").send().await.unwrap().status();
        assert_eq!(status, 401, "GET {route} with a wrong token");
    }
    let page = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 401, "pages need the token too");

    let rebinding = http
        .get(server.url("/api/sessions"))
        .bearer_auth(TOKEN)
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(rebinding.status(), 403, "a foreign Host (DNS rebinding)");
    let cross_site =
        server.post("/api/sessions", &json!({})).header("origin", "http://evil.example").send().await.unwrap();
    assert_eq!(cross_site.status(), 403, "a foreign Origin");
    let same_site =
        server.post("/api/sessions", &json!({})).header("origin", server.base.clone()).send().await.unwrap();
    assert_eq!(same_site.status(), 201);
    let form = http
        .post(server.url("/api/sessions"))
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415, "a simple-request content type");
    assert_eq!(status_of_oversized_post(&server).await, 413);
    let malformed = http
        .post(server.url("/api/chat"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    let body: Value = malformed.json().await.unwrap();
    assert!(body["message"].is_string());

    // The printed URL's token is exchanged for a cookie, then the page renders with a strict policy.
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let exchange = no_redirects.get(server.url(&format!("/?token={TOKEN}"))).send().await.unwrap();
    assert_eq!(exchange.status(), 303);
    assert_eq!(exchange.headers()["location"], "/");
    let cookie = exchange.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let page =
        no_redirects.get(server.url("/")).header("cookie", cookie.split(';').next().unwrap()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let nonce = csp.split("'nonce-").nth(1).unwrap().split('\'').next().unwrap().to_owned();
    assert!(page.text().await.unwrap().contains(&format!("nonce=\"{nonce}\"")), "the boot script carries the nonce");
}

#[test]
fn an_open_server_on_a_public_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_chatwire"))
        .args(["serve", "--addr", "0.0.0.0:0", "--no-auth"])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("refusing to listen on 0.0.0.0:0 without an access token")
    );
}

/// The status of a POST announcing a 9 MiB body; the server answers before reading it (and then closes the
/// connection, which is why this is written by hand: an HTTP client would report the broken upload instead).
async fn status_of_oversized_post(server: &Server) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = server.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /api/chat HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        9 * 1024 * 1024
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(b"{\"sessionId\":\"x\",\"message\":\"").await.unwrap();
    let mut answer = vec![0; 512];
    let read = tokio::time::timeout(WAIT, stream.read(&mut answer)).await.unwrap().unwrap();
    let status_line = String::from_utf8_lossy(&answer[..read]).lines().next().unwrap_or_default().to_owned();
    status_line.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn the_models_of_a_config_file_are_listed_without_secrets_and_picked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let alpha = dir.path().join("alpha.json");
    let beta = dir.path().join("beta.json");
    std::fs::write(&alpha, r#"{"turns": [{"text": "Alpha answers."}]}"#).unwrap();
    std::fs::write(&beta, r#"{"turns": [{"text": "Beta answers."}]}"#).unwrap();
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        format!(
            "[[model]]\nname = \"alpha\"\nprovider = \"scripted\"\nscript = {alpha:?}\n\n\
             [[model]]\nname = \"beta\"\nprovider = \"scripted\"\nscript = {beta:?}\n\n\
             [[model]]\nname = \"remote\"\nprovider = \"openai\"\nmodel = \"gpt-x\"\n\
             base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"PICKER_TEST_KEY\"\n"
        ),
    )
    .unwrap();
    let key = "sk-picker-secret-42";
    let server = Server::start_with_env(
        &dir.path().join("data"),
        &alpha,
        &["--config", config.to_str().unwrap()],
        &[("PICKER_TEST_KEY", key)],
    );

    let response = server.get("/api/models").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(!body.contains(key) && !body.contains("127.0.0.1:9"), "no key, no endpoint: {body}");
    let models: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(models["default"], "alpha", "the first model is the default");
    let names: Vec<&str> = models["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha", "beta", "remote"]);
    assert_eq!(models["models"][2]["provider"], "openai");
    assert_eq!(models["models"][2]["model"], "gpt-x");

    let session = server.new_session().await;
    let picked = chat(&server, &session, json!({"message": "who are you?", "model": "beta"})).await.rest(WAIT).await;
    assert_eq!(kind(picked.last().unwrap()), "done");
    assert!(picked.iter().any(|l| l.contains("Beta answers.")) && !picked.iter().any(|l| l.contains("Alpha")));
    let default = chat(&server, &session, json!({"message": "and now?"})).await.rest(WAIT).await;
    assert!(default.iter().any(|l| l.contains("Alpha answers.")), "no `model` runs the default");

    let unknown = server.post("/api/chat", &json!({"sessionId": session, "message": "hi", "model": "gamma"}));
    let unknown = unknown.send().await.unwrap();
    assert_eq!(unknown.status(), 400);
    let unknown: Value = unknown.json().await.unwrap();
    assert_eq!(unknown["message"], "unknown model \"gamma\"; the configured models are: alpha, beta, remote");
    let detail: Value = server.get(&format!("/api/sessions/{session}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(detail["messages"].as_array().unwrap().len(), 4, "the refused message was not recorded");
}
