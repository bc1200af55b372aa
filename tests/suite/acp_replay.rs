//! Recorded ACP traffic of the real opencode 1.18.33 (tests/fixtures/acp) through the ACP translation and the mapper:
//! each prompt turn of a recording becomes one run, whose frames match the goldens in tests/golden/acp and keep the
//! run invariants. The session's own order of events is followed: `agent_start`, the turn, `agent_end`, settled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::support::golden::assert_golden;
use crate::support::invariants::{assert_no_null_fields, assert_run_invariants};
use crate::support::mapper::deterministic_mapper;
use chatwire::mapper::RunMeta;
use chatwire::ndjson::encode_frame;
use chatwire::protocol::ChatFrame;
use chatwire::runtime::acp::offered::Offered;
use chatwire::runtime::acp::schema::{PermissionRequest, PromptResponse, SessionUpdate};
use chatwire::runtime::acp::translate::{Turn, TurnEnd};
use chatwire::runtime::event::AgentEvent;
use serde_json::Value;

fn recordings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/opencode-1.18.33")
}

fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter(|line| !line.trim().is_empty()).map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// Every recording that sends a prompt, by scenario name.
fn scenarios() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(recordings_dir())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().ok()?;
            let scenario = name.strip_suffix(".client.jsonl")?.to_owned();
            let sent = lines(&recordings_dir().join(&name));
            sent.iter().any(|line| line["method"] == "session/prompt").then_some(scenario)
        })
        .collect();
    found.sort();
    assert!(found.len() >= 8, "expected the opencode recordings, found {found:?}");
    found
}

/// The frames of every prompt turn of `scenario`, as NDJSON.
fn replay(scenario: &str) -> (String, Vec<ChatFrame>) {
    let dir = recordings_dir();
    let sent = lines(&dir.join(format!("{scenario}.client.jsonl")));
    let said = lines(&dir.join(format!("{scenario}.jsonl")));
    let prompts: HashMap<u64, String> = sent
        .iter()
        .filter(|line| line["method"] == "session/prompt")
        .map(|line| (line["id"].as_u64().unwrap(), line["params"]["sessionId"].as_str().unwrap().to_owned()))
        .collect();
    let workspace =
        sent.iter().find_map(|line| line["params"]["cwd"].as_str()).map_or_else(|| PathBuf::from("/"), PathBuf::from);
    // The client's answers to the agent's requests, by the agent's request id.
    let answers: HashMap<u64, Value> = sent
        .iter()
        .filter(|line| line.get("method").is_none())
        .filter_map(|line| Some((line["id"].as_u64()?, line.get("result").cloned().unwrap_or(Value::Null))))
        .collect();

    let mut mapper = deterministic_mapper("session-1");
    let mut frames: Vec<ChatFrame> = Vec::new();
    let mut turn: Option<Turn> = None;
    // The agent's session is open once `session/new` or `session/load` answered; prompts are answered in order.
    let (mut opened, mut answered) = (false, 0);
    let mut session_cost = None;
    // What the agent offers is the session's: told whenever it changes, in a run or between runs.
    let mut offered = Offered::default();
    for line in &said {
        let method = line.get("method").and_then(Value::as_str);
        let answers_prompt = method.is_none() && line["id"].as_u64().is_some_and(|id| prompts.contains_key(&id));
        let belongs_to_prompt = match method {
            Some("session/update") => !matches!(
                line["params"]["update"]["sessionUpdate"].as_str(),
                Some("available_commands_update" | "config_option_update" | "current_mode_update")
            ),
            Some("session/request_permission") => true,
            _ => answers_prompt,
        };
        if turn.is_none() && opened && answered < prompts.len() && belongs_to_prompt {
            frames.extend(mapper.open_run(RunMeta::default()));
            let (opening, events) = Turn::start(&workspace, session_cost);
            map(vec![AgentEvent::AgentStart], &mut frames, &mut mapper);
            map(events, &mut frames, &mut mapper);
            turn = Some(opening);
        }
        match method {
            Some("session/update") => {
                let update = SessionUpdate::parse(&line["params"]["update"]).unwrap();
                if offered.update(&update) {
                    map(offered.event().into_iter().collect(), &mut frames, &mut mapper);
                    continue;
                }
                let Some(turn) = turn.as_mut() else { continue };
                if let Some(cost) = line["params"]["update"]["cost"]["amount"].as_f64() {
                    turn.cost(cost);
                }
                map(turn.update(update), &mut frames, &mut mapper);
            }
            Some("session/request_permission") => {
                let turn = turn.as_mut().expect("permission is asked during a prompt");
                let request: PermissionRequest = serde_json::from_value(line["params"].clone()).unwrap();
                map(turn.permission_asked(&request), &mut frames, &mut mapper);
                let answer = &answers[&line["id"].as_u64().unwrap()];
                let chosen = answer["outcome"]["optionId"].as_str();
                let approved = request
                    .options
                    .iter()
                    .any(|option| Some(option.option_id.as_str()) == chosen && option.kind.allows());
                let decided = turn.permission_decided(&request.tool_call.tool_call_id, approved);
                map(vec![decided], &mut frames, &mut mapper);
            }
            Some(_) => {}
            None if answers_prompt => {
                answered += 1;
                let turn = turn.take().expect("opened above");
                session_cost = turn.session_cost();
                let session = &prompts[&line["id"].as_u64().unwrap()];
                // An error answer fails the run at once, as the session does.
                let Some(result) = line.get("result") else {
                    let message =
                        format!("the agent answered `session/prompt` with error: {}", line["error"]["message"]);
                    frames.extend(mapper.fail(message, "runtime_refused"));
                    continue;
                };
                let answer: PromptResponse = serde_json::from_value(result.clone()).unwrap();
                let (events, end) = turn.finish(&answer.stop_reason, answer.usage.as_ref());
                map(events, &mut frames, &mut mapper);
                map(vec![AgentEvent::AgentEnd], &mut frames, &mut mapper);
                match end {
                    TurnEnd::Settled => frames.extend(mapper.settle_run(Some(session.clone()))),
                    TurnEnd::Failed { message, code } => frames.extend(mapper.fail(message, code)),
                }
            }
            None => {
                let result = line.get("result");
                if let Some(result) = result.filter(|result| result.get("configOptions").is_some()) {
                    offered.answered(result);
                    map(offered.event().into_iter().collect(), &mut frames, &mut mapper);
                }
                if result.is_some_and(|result| {
                    ["sessionId", "configOptions", "modes"].iter().any(|key| result.get(*key).is_some())
                }) {
                    opened = true;
                }
            }
        }
    }
    let ndjson: String = frames.iter().map(encode_frame).collect();
    (ndjson, frames)
}

fn map(events: Vec<AgentEvent>, frames: &mut Vec<ChatFrame>, mapper: &mut chatwire::mapper::EventMapper) {
    for event in events {
        frames.extend(mapper.map(event));
    }
}

#[test]
fn opencode_recordings_map_to_the_golden_frames() {
    for scenario in scenarios() {
        let (ndjson, frames) = replay(&scenario);
        assert!(!frames.is_empty(), "{scenario}: no frames");
        let runs: Vec<&[ChatFrame]> = split_runs(&frames);
        for (at, run) in runs.iter().enumerate() {
            assert_run_invariants(&format!("{scenario} run {at}"), run);
        }
        for frame in &frames {
            assert_no_null_fields(&serde_json::to_value(frame).unwrap(), &scenario);
        }
        assert_golden(&format!("acp/{scenario}.ndjson"), &ndjson);
    }
}

/// Each run's frames, from its `start` to its end; an `agent_options` frame between runs belongs to none.
fn split_runs(frames: &[ChatFrame]) -> Vec<&[ChatFrame]> {
    let mut runs = Vec::new();
    let mut start = 0;
    for (at, frame) in frames.iter().enumerate() {
        if matches!(frame, ChatFrame::AgentOptions(_)) && start == at {
            start = at + 1;
        } else if frame.is_terminal() {
            runs.push(&frames[start..=at]);
            start = at + 1;
        }
    }
    runs
}

#[test]
fn a_bash_call_and_a_file_write_draw_as_bash_and_write_rows() {
    let (_, frames) = replay("bash-write");
    let kinds: Vec<String> = frames
        .iter()
        .filter_map(|frame| match frame {
            ChatFrame::Tool(tool) if tool.part.state.is_terminal() => Some(tool.part.part_type()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["tool-Bash", "tool-Write"]);
    let ChatFrame::Done(done) = frames.last().unwrap() else { panic!("the run ends in done: {:?}", frames.last()) };
    let bash = done.message.parts.iter().find_map(|part| part.as_tool().filter(|tool| tool.part_type() == "tool-Bash"));
    let bash = bash.expect("a Bash part");
    assert_eq!(bash.input.as_ref().unwrap()["command"], "echo hi");
    assert_eq!(bash.output.as_ref().unwrap()["output"], "hi\n");
    assert_eq!(bash.output.as_ref().unwrap()["exitCode"], 0);
}
