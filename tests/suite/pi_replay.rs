//! The full server path over every pi recording: the real `chatwire` binary runs with `--runtime pi` on a fake pi
//! (tests/support/fake-pi.mjs) that replays `tests/vectors/pi-rpc/<name>.jsonl` in answer to chatwire's commands,
//! while the test drives the session over HTTP as the recording's client did (sends, steering, follow-ups, Stop).
//! The session's logged frames keep the run invariants of the mapper's golden tests, end each run as the mapper
//! alone ends the same recording, and name pi's session file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::invariants::{assert_no_null_fields, assert_run_invariants, runs, text_parts};
use crate::support::server::{Lines, Server, script_file};
use chatwire::mapper::replay;
use chatwire::ndjson::decode_all;
use chatwire::protocol::*;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// What the recording's client did, by the id of the command it sent pi.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A message that starts a run, once the previous one has ended.
    Send(&'static str),
    Steer(&'static str),
    FollowUp(&'static str),
    Stop,
}

use Step::*;

/// The scenarios, with what chatwire's user does in each; commands chatwire never sends (queries, `bash`,
/// `compact`, idle aborts) are replayed by the fake pi on its own.
const SCENARIOS: &[(&str, &[Step])] = &[
    ("abort_bash", &[Send("p1"), Stop, Send("p2")]),
    ("abort_retry", &[Send("p1"), Stop, Send("p2")]),
    ("basic_tools", &[Send("p1")]),
    ("commands", &[Send("c-p1"), Send("c-p2")]),
    ("compact", &[Send("p1"), Send("p2"), Send("p3")]),
    ("provider_error", &[Send("p1"), Send("p2"), Send("p3"), Send("p4")]),
    ("retry", &[Send("p1")]),
    ("steer_followup", &[Send("p1"), Steer("st1"), FollowUp("fu1"), Steer("st2"), FollowUp("fu2")]),
    ("truncation", &[Send("p1")]),
];

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/pi-rpc")
}

/// The message of the recorded command `id`.
fn message_of(scenario: &str, id: &str) -> String {
    let path = vectors_dir().join(format!("{scenario}.commands.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|command| command["id"] == id)
        .and_then(|command| command["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{}: no command {id} with a message", path.display()))
}

/// The session files pi named in its answers to `get_state` in the recording.
fn recorded_session_files(scenario: &str) -> Vec<String> {
    std::fs::read_to_string(vectors_dir().join(format!("{scenario}.jsonl")))
        .unwrap()
        .lines()
        .filter(|line| line.contains(r#""command":"get_state""#))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|response| response["data"]["sessionFile"].as_str().map(str::to_owned))
        .collect()
}

/// The frames the mapper alone makes of the recording.
fn mapped_alone(scenario: &str) -> Vec<ChatFrame> {
    let mut mapper = crate::support::mapper::deterministic_mapper("session-1");
    let (mut out, mut diagnostics) = (Vec::new(), Vec::new());
    let file = std::fs::File::open(vectors_dir().join(format!("{scenario}.jsonl"))).unwrap();
    replay(&mut mapper, file, &mut out, &mut diagnostics).unwrap();
    decode_all(&out).into_iter().map(|frame| frame.unwrap()).collect()
}

/// How a run ended: `done` with its text, or `error` with its code.
fn ending(run: &[ChatFrame]) -> String {
    match run.last().unwrap() {
        ChatFrame::Done(done) => format!("done: {}", text_parts(&done.message).concat()),
        ChatFrame::Error(error) => format!("error {:?}", error.code),
        other => panic!("a run ended with {other:?}"),
    }
}

fn fake_pi_command(scenario: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-pi.mjs");
    let recording = vectors_dir().join(format!("{scenario}.jsonl"));
    for path in [&script, &recording] {
        assert!(!path.to_str().unwrap().contains(' '), "--pi-command splits on spaces: {}", path.display());
    }
    format!("node {} {}", script.display(), recording.display())
}

async fn play(scenario: &'static str, steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), r#"{"turns":[{"text":"unused"}]}"#);
    let command = fake_pi_command(scenario);
    let server = Server::start(&dir.path().join("data"), &script, &["--runtime", "pi", "--pi-command", &command]);
    let session = server.new_session().await;
    let mut open: Option<Lines> = None;
    let mut runs_started = 0;
    for step in steps {
        let (message, behavior) = match *step {
            Send(id) => (message_of(scenario, id), None),
            Steer(id) => (message_of(scenario, id), Some("steer")),
            FollowUp(id) => (message_of(scenario, id), Some("followUp")),
            Stop => {
                let answer: Value = server
                    .post("/api/chat/abort", &json!({"sessionId": session}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                assert_eq!(answer["aborted"], true, "{scenario}: Stop found no run to stop");
                continue;
            }
        };
        if behavior.is_none()
            && let Some(mut previous) = open.take()
        {
            previous.rest(WAIT).await;
        }
        let mut body = json!({"sessionId": session, "message": message});
        if let Some(behavior) = behavior {
            body["streamingBehavior"] = json!(behavior);
        }
        let response = server.post("/api/chat", &body).send().await.unwrap();
        assert_eq!(response.status(), 200, "{scenario}: {step:?}");
        if behavior.is_none() {
            runs_started += 1;
            open = Some(Lines::new(response));
        }
    }
    if let Some(mut last) = open.take() {
        last.rest(WAIT).await;
    }

    let response = server.get(&format!("/api/sessions/{session}/events?after=0")).send().await.unwrap();
    let mut log = Lines::new(response);
    let mut lines = Vec::new();
    while lines.iter().filter(|l: &&String| l.contains(r#""type":"done""#) || l.contains(r#""type":"error""#)).count()
        < runs_started
    {
        let line = log.next_within(WAIT).await.expect("the log holds every run");
        if line != r#"{"type":"ping"}"# {
            lines.push(line);
        }
    }
    let text = lines.join("\n") + "\n";
    let frames: Vec<ChatFrame> = decode_all(text.as_bytes()).into_iter().map(|frame| frame.unwrap()).collect();
    for line in &lines {
        assert_no_null_fields(&serde_json::from_str(line).unwrap(), scenario);
    }
    assert_run_invariants(scenario, &frames);

    let served: Vec<String> = runs(&frames).iter().map(|run| ending(run)).collect();
    let alone: Vec<String> = runs(&mapped_alone(scenario)).iter().map(|run| ending(run)).collect();
    assert_eq!(served, alone, "{scenario}: the server's runs end unlike the mapper's");

    let recorded = recorded_session_files(scenario);
    let named = frames.iter().filter_map(|frame| {
        if let ChatFrame::Start(start) = frame {
            Some((frame, &start.session_file))
        } else if let ChatFrame::Done(done) = frame {
            Some((frame, &done.session_file))
        } else {
            None
        }
    });
    for (frame, named) in named {
        let named = named.as_ref().unwrap_or_else(|| panic!("{scenario}: {frame:?} names no session file"));
        assert!(
            recorded.is_empty() || recorded.contains(named),
            "{scenario}: {named} is none of the recorded session files {recorded:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recording_through_the_server() {
    let mut names: Vec<String> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".jsonl").filter(|n| !n.ends_with(".commands")).map(str::to_owned))
        .collect();
    names.sort();
    let covered: Vec<&str> = SCENARIOS.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, covered, "every recording has a scenario");
    // Streams send keepalives, so a stuck scenario would never time out line by line.
    let plays = SCENARIOS.iter().map(|(scenario, steps)| async move {
        let limit = Duration::from_secs(90);
        tokio::time::timeout(limit, play(scenario, steps)).await.unwrap_or_else(|_| panic!("{scenario} is stuck"));
    });
    futures_util::future::join_all(plays).await;
}

/// chatwire passes on what was queued since it last looked all at once, steering first; pi keeps the two kinds in
/// separate queues, so the fake pi must replay a recording whatever the order across kinds.
#[tokio::test]
async fn the_fake_pi_takes_steering_and_follow_ups_in_either_order() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let scenario = "steer_followup";
    let command = fake_pi_command(scenario);
    let mut words = command.split(' ');
    let mut pi = tokio::process::Command::new(words.next().unwrap())
        .args(words)
        .args(["--mode", "rpc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let sent = [("p1", "prompt"), ("st1", "steer"), ("st2", "steer"), ("fu1", "follow_up"), ("fu2", "follow_up")];
    let mut stdin = pi.stdin.take().unwrap();
    for (id, kind) in sent {
        let line = json!({"type": kind, "message": message_of(scenario, id), "id": format!("sent-{id}")});
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut stdout = BufReader::new(pi.stdout.take().unwrap()).lines();
    let mut answered = Vec::new();
    while answered.len() < sent.len() {
        let line = tokio::time::timeout(WAIT, stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("the fake pi stopped after answering {answered:?}"))
            .unwrap()
            .expect("the fake pi replays to the end");
        let event: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = event["id"].as_str().and_then(|id| id.strip_prefix("sent-")) {
            assert_eq!(event["success"], true, "{line}");
            answered.push(id.to_owned());
        }
    }
    assert_eq!(answered, ["p1", "st1", "fu1", "st2", "fu2"], "answered as the recording's gates come");
}
