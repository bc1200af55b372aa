//! `--runtime pi` against stand-ins for `pi --mode rpc` (small POSIX shell scripts): a normal run, extension status
//! messages, and runtimes that print a non-JSON line, a line over the size limit, exit mid-run or hang — each of those
//! ends its run with exactly one `error` frame, and the session's next run gets a fresh, working process.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::server::{Lines, Server, kind, script_file};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// What a well-behaved pi prints for a prompt: its answer to the command, then one short run.
const ANSWER: &str = r#"
answer() {
  echo "{\"id\":\"$1\",\"type\":\"response\",\"command\":\"prompt\",\"success\":true}"
  echo '{"type":"agent_start"}'
  echo '{"type":"turn_start"}'
  echo '{"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"stop"}}'
  echo '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello from pi."}}'
  echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hello from pi."}],"stopReason":"stop"}}'
  echo '{"type":"turn_end"}'
  echo '{"type":"agent_end","messages":[]}'
}
"#;

/// A fake pi whose first prompt in a workspace runs `misbehave` (shell code) and whose later prompts are answered
/// normally; `get_state` is always answered, as pi does.
fn fake_pi(dir: &Path, name: &str, misbehave: &str) -> PathBuf {
    let script = format!(
        r#"#!/bin/sh
{ANSWER}
misbehave() {{
{misbehave}
}}
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  case "$line" in
    *'"type":"prompt"'*)
      if [ -e .misbehaved ]; then answer "$id"; else touch .misbehaved; misbehave "$id"; fi ;;
    *'"type":"get_state"'*)
      echo "{{\"id\":\"$id\",\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{{}}}}" ;;
  esac
done
"#
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn start(dir: &Path, pi: &Path) -> Server {
    let pi = pi.to_str().unwrap();
    Server::start(
        &dir.join("data"),
        &script_file(dir, r#"{"turns":[{"text":"unused"}]}"#),
        &["--runtime", "pi", "--pi-command", pi, "--pi-timeout-secs", "1"],
    )
}

async fn run(server: &Server, session: &str, message: &str) -> Vec<String> {
    let response = server.post("/api/chat", &json!({"sessionId": session, "message": message})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    Lines::new(response).rest(WAIT).await.into_iter().filter(|l| l != r#"{"type":"ping"}"#).collect()
}

fn text_of_done(lines: &[String]) -> String {
    let done: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(done["type"], "done", "{lines:#?}");
    done["message"]["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect()
}

/// A misbehaving first run: exactly one `error` (the last frame, with `code`), then a normal second run.
async fn fails_once_then_works(misbehave: &str, code: &str, message_part: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &fake_pi(dir.path(), "fake-pi", misbehave));
    let session = server.new_session().await;

    let first = run(&server, &session, "hello").await;
    let errors: Vec<Value> =
        first.iter().filter(|l| kind(l) == "error").map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(errors.len(), 1, "{first:#?}");
    assert_eq!(kind(first.last().unwrap()), "error");
    assert_eq!(errors[0]["code"], code, "{}", errors[0]);
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains(message_part), "{message}");

    let second = run(&server, &session, "again").await;
    assert_eq!(text_of_done(&second), "Hello from pi.", "the session works with a fresh pi: {second:#?}");
}

#[tokio::test]
async fn a_prompt_runs_on_pi_and_settles_once_pi_is_idle() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &fake_pi(dir.path(), "fake-pi", r#"answer "$1""#));
    let session = server.new_session().await;
    for message in ["hello", "and again"] {
        let lines = run(&server, &session, message).await;
        assert_eq!(kind(&lines[0]), "start");
        assert_eq!(text_of_done(&lines), "Hello from pi.");
        assert_eq!(lines.iter().filter(|l| kind(l) == "done").count(), 1);
    }
}

#[tokio::test]
async fn a_non_json_line_ends_the_run_with_one_error() {
    let misbehave = r#"  echo "{\"id\":\"$1\",\"type\":\"response\",\"command\":\"prompt\",\"success\":true}"
  echo '{"type":"agent_start"}'
  echo 'Traceback (most recent call last): not JSON'"#;
    fails_once_then_works(misbehave, "runtime_malformed", "malformed").await;
}

#[tokio::test]
async fn a_line_over_the_limit_ends_the_run_with_one_error() {
    // 17 MB of one string, past the 16 MiB limit, then a normal line that must not revive the run.
    let misbehave = r#"  echo '{"type":"agent_start"}'
  printf '{"type":"message_update","x":"'; head -c 17000000 /dev/zero | tr '\0' a; echo '"}'
  echo '{"type":"turn_start"}'"#;
    fails_once_then_works(misbehave, "runtime_malformed", "longer than").await;
}

#[tokio::test]
async fn a_runtime_that_exits_mid_run_ends_it_with_one_error() {
    let misbehave = r#"  echo '{"type":"agent_start"}'
  echo 'giving up' >&2
  exit 3"#;
    fails_once_then_works(misbehave, "runtime_exit", "exited").await;
}

#[tokio::test]
async fn a_runtime_that_hangs_ends_the_run_with_one_error() {
    // Stops reading its commands and saying anything: the quiet pi is asked for its state and never answers.
    let misbehave = r#"  echo "{\"id\":\"$1\",\"type\":\"response\",\"command\":\"prompt\",\"success\":true}"
  echo '{"type":"agent_start"}'
  sleep 600"#;
    fails_once_then_works(misbehave, "runtime_timeout", "did not answer").await;
}

/// A session's first run, in which pi answers the prompt, opens a turn, does `middle` (shell lines), then says
/// "Hello from pi." and ends; with its server, still running.
struct FirstRun {
    _dir: tempfile::TempDir,
    server: Server,
    session: String,
    lines: Vec<String>,
    frames: Vec<Value>,
}

async fn first_run_doing(middle: &str) -> FirstRun {
    let misbehave = format!(
        r#"  echo "{{\"id\":\"$1\",\"type\":\"response\",\"command\":\"prompt\",\"success\":true}}"
  echo '{{"type":"agent_start"}}'
  echo '{{"type":"turn_start"}}'
{middle}
  echo '{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"Hello from pi."}}}}'
  echo '{{"type":"turn_end"}}'
  echo '{{"type":"agent_end","messages":[]}}'"#
    );
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &fake_pi(dir.path(), "fake-pi", &misbehave));
    let session = server.new_session().await;
    let lines = run(&server, &session, "hello").await;
    assert_eq!(text_of_done(&lines), "Hello from pi.");
    let frames = lines.iter().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect();
    FirstRun { _dir: dir, server, session, lines, frames }
}

#[tokio::test]
async fn extension_status_messages_go_to_the_activity_line() {
    let FirstRun { frames, .. } = first_run_doing(
        r#"  echo '{"type":"extension_ui_request","id":"u1","method":"setStatus","statusKey":"ext","statusText":"Indexing files"}'
  echo '{"type":"extension_ui_request","id":"u2","method":"notify","message":"Disk almost full","notifyType":"warning"}'
  echo '{"type":"extension_ui_request","id":"u3","method":"setStatus","statusKey":"ext"}'"#,
    )
    .await;
    let states: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["type"] == "state" && frame["state"]["name"] == "turn_start")
        .map(|frame| &frame["state"])
        .collect();
    assert_eq!(
        states,
        [
            &json!({"name": "turn_start"}),
            &json!({"name": "turn_start", "message": "Indexing files"}),
            &json!({"name": "turn_start", "message": "Warning: Disk almost full"}),
            &json!({"name": "turn_start"}),
        ]
    );
}

#[tokio::test]
async fn a_missing_pi_is_a_clear_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &dir.path().join("no-such-pi"));
    let session = server.new_session().await;
    let lines = run(&server, &session, "hello").await;
    let error: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["code"], "runtime_unavailable");
    assert!(error["message"].as_str().unwrap().contains("could not start"), "{error}");
}

#[tokio::test]
async fn a_question_pi_stops_waiting_for_ends_as_timed_out() {
    // pi asks with a 300 ms timeout, answers the dialog itself when that runs out, and goes on.
    let FirstRun { server, session, lines, frames, .. } = first_run_doing(
        r#"  echo '{"type":"extension_ui_request","id":"q1","method":"confirm","title":"Proceed?","message":"It is late.","timeout":300}'
  sleep 1"#,
    )
    .await;
    let question: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["type"] == "tool" && frame["part"]["toolCallId"] == "ui-q1")
        .map(|frame| &frame["part"])
        .collect();
    let states: Vec<&str> = question.iter().map(|part| part["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["input-available", "output-error"], "{lines:#?}");
    let why = question[1]["errorText"].as_str().unwrap();
    assert!(why.starts_with("timed out after 0.3 s"), "{why}");
    let text_at = lines.iter().position(|l| l.contains("Hello from pi.")).unwrap();
    let ended_at = lines.iter().position(|l| l.contains("timed out after")).unwrap();
    assert!(ended_at < text_at, "the card ends when pi stops waiting, not with the run");

    let answer = json!({"sessionId": session, "toolCallId": "ui-q1", "answer": {"kind": "text", "text": "yes"}});
    let late = server.post("/api/chat/question", &answer);
    assert_eq!(late.send().await.unwrap().status(), 404, "an answer after the timeout reaches nobody");
}

/// A follow-up queued in the moment pi's agent ends reaches pi only once it is idle, and pi says nothing more then:
/// the run still settles (pi keeps the message for its next prompt) instead of waiting for pi forever.
#[tokio::test]
async fn a_follow_up_that_reaches_pi_after_its_agent_ended_lets_the_run_settle() {
    use chatwire::runtime::event::AgentEvent;
    use chatwire::runtime::pi::{self, PiConfig};
    use chatwire::runtime::seam::RunControl;

    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        r#"#!/bin/sh
{ANSWER}
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  case "$line" in
    *'"type":"prompt"'*) answer "$id" ;;
    *'"type":"follow_up"'*) echo "{{\"id\":\"$id\",\"type\":\"response\",\"command\":\"follow_up\",\"success\":true}}" ;;
    *'"type":"get_state"'*)
      echo "{{\"id\":\"$id\",\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{{}}}}" ;;
  esac
done
"#
    );
    let program = dir.path().join("fake-pi");
    std::fs::write(&program, script).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = PiConfig { program, ..PiConfig::default() };
    let mut slot = None;
    pi::start(&mut slot, &config, dir.path(), None).await.unwrap();

    let control = RunControl::default();
    // Queued without waking the run yet: the wake comes only once the run has seen pi's agent end.
    control.queues.lock().unwrap().follow_up.push_back("And then?".into());
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let wake_after_the_end = {
        let control = control.clone();
        async move {
            while let Some(event) = received.recv().await {
                if matches!(event, AgentEvent::AgentEnd) {
                    control.wake.notify_one();
                }
            }
        }
    };
    let run = pi::run(&mut slot, &config, "Hello".into(), &control, &events);
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(WAIT, run) => outcome.expect("the run settles"),
        () = wake_after_the_end => unreachable!("the run holds a sender"),
    };
    outcome.unwrap();
    let queues = control.queues.lock().unwrap();
    assert!(queues.follow_up.is_empty(), "the follow-up went to pi");
    assert!(queues.closed, "a settled run takes no more messages");
}
