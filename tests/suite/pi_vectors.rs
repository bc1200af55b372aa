//! The mapper over genuine pi RPC recordings: every line parses, frames match the goldens, and the run invariants hold.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::support::golden::assert_golden;
use crate::support::invariants::{assert_no_null_fields, assert_run_invariants};
use chatwire::mapper::{EventMapper, replay};
use chatwire::ndjson::decode_all;
use chatwire::protocol::*;
use chatwire::runtime::event::AgentEvent;
use serde_json::Value;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/pi-rpc")
}

/// `(scenario, path)` of every recording of pi's stdout, sorted.
fn recordings() -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(vectors_dir())
        .expect("the vectors are in the repository")
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            let scenario = name.strip_suffix(".jsonl")?;
            (!scenario.ends_with(".commands")).then(|| (scenario.to_owned(), path))
        })
        .collect();
    found.sort();
    assert!(found.len() >= 9, "expected the nine pi recordings, found {}", found.len());
    found
}

fn deterministic_mapper() -> EventMapper {
    crate::support::mapper::deterministic_mapper("session-1")
}

fn map_file(path: &Path) -> (String, EventMapper) {
    let mut mapper = deterministic_mapper();
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    let file = std::fs::File::open(path).expect("a vector opens");
    let report = replay(&mut mapper, file, &mut out, &mut diagnostics).expect("replay writes to memory");
    assert_eq!(report.bad_lines, 0, "{}: {}", path.display(), String::from_utf8_lossy(&diagnostics));
    (String::from_utf8(out).expect("frames are UTF-8"), mapper)
}

fn frames_of(ndjson: &str) -> Vec<ChatFrame> {
    decode_all(ndjson.as_bytes()).into_iter().map(|r| r.expect("the mapper writes valid frames")).collect()
}

/// `(file name, sha256)` of every recording, as `tests/vectors/SHA256SUMS.pi-rpc` lists them (taken from the shared
/// originals when they were copied).
fn recorded_sums() -> Vec<(String, String)> {
    let sums = vectors_dir().with_file_name("SHA256SUMS.pi-rpc");
    let text = std::fs::read_to_string(&sums).unwrap_or_else(|e| panic!("{}: {e}", sums.display()));
    text.lines()
        .map(|line| {
            let (sum, name) = line.split_once("  ").unwrap_or_else(|| panic!("a `sum  name` line: {line}"));
            (name.to_owned(), sum.to_owned())
        })
        .collect()
}

fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[test]
fn the_recordings_are_the_ones_recorded() {
    let sums = recorded_sums();
    let mut listed: Vec<&str> = sums.iter().map(|(name, _)| name.as_str()).collect();
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    present.sort();
    assert_eq!(present, listed, "a recording was added or removed without its sum");
    for (name, sum) in &sums {
        assert_eq!(&sha256_of(&vectors_dir().join(name)), sum, "{name} was edited: recordings are never edited");
    }
    // Where the shared originals sit next to the clone, the sums must be theirs too.
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/pi-rpc");
    if shared.is_dir() {
        for (name, sum) in &sums {
            assert_eq!(&sha256_of(&shared.join(name)), sum, "{name} differs from the shared original");
        }
    }
}

#[test]
fn every_line_of_every_recording_parses() {
    let mut unknown = BTreeMap::new();
    let mut lines = 0;
    for (_, path) in recordings() {
        for (number, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            lines += 1;
            match AgentEvent::parse(line) {
                Ok(AgentEvent::Unknown(kind)) => *unknown.entry(kind).or_insert(0) += 1,
                Ok(_) => {}
                Err(e) => panic!("{}:{}: {e}", path.display(), number + 1),
            }
        }
    }
    assert!(lines >= 900, "only {lines} lines read");
    assert!(unknown.is_empty(), "pi 0.73.1 types the mapper does not know: {unknown:?}");
}

#[test]
fn frames_match_the_golden_files() {
    for (scenario, path) in recordings() {
        let (ndjson, _) = map_file(&path);
        assert_golden(&format!("pi-rpc/{scenario}.ndjson"), &ndjson);
    }
}

#[test]
fn run_invariants_hold_on_every_recording() {
    for (scenario, path) in recordings() {
        let (ndjson, _) = map_file(&path);
        for line in ndjson.lines() {
            assert_no_null_fields(&serde_json::from_str(line).unwrap(), &scenario);
        }
        assert_run_invariants(&scenario, &frames_of(&ndjson));
    }
}

#[test]
fn streamed_arguments_concatenate_to_the_final_string_arguments() {
    let mut calls_checked = 0;
    for (scenario, path) in recordings() {
        let (ndjson, _) = map_file(&path);
        let mut streamed: HashMap<(String, String), String> = HashMap::new();
        let mut finals: HashMap<String, Value> = HashMap::new();
        for frame in frames_of(&ndjson) {
            match frame {
                ChatFrame::ToolArgsDelta(args) => {
                    let key = (args.tool_call_id.clone(), serde_json::to_string(&args.path).unwrap());
                    streamed.entry(key).or_default().push_str(&args.text);
                }
                ChatFrame::Tool(tool)
                    if tool.part.state == ToolState::InputAvailable
                        && !finals.contains_key(&tool.part.tool_call_id) =>
                {
                    if let Some(input) = tool.part.input {
                        finals.insert(tool.part.tool_call_id, input);
                    }
                }
                _ => {}
            }
        }
        for ((call, path), text) in &streamed {
            let segments: Vec<PathSegment> = serde_json::from_str(path).unwrap();
            let mut value = &finals[call];
            for segment in &segments {
                value = match segment {
                    PathSegment::Key(k) => &value[k.as_str()],
                    PathSegment::Index(i) => &value[*i as usize],
                };
            }
            assert_eq!(value.as_str(), Some(text.as_str()), "{scenario}: {call} {path}");
        }
        let streamed_calls: std::collections::HashSet<_> = streamed.keys().map(|(call, _)| call).collect();
        calls_checked += streamed_calls.len();
        // Every string argument of every streamed call arrived through tool_args_delta.
        for call in streamed_calls {
            if let Value::Object(args) = &finals[call] {
                for (key, value) in args {
                    if let Value::String(text) = value
                        && !text.is_empty()
                    {
                        let path = serde_json::to_string(&[key]).unwrap();
                        assert_eq!(
                            streamed.get(&(call.clone(), path.clone())),
                            Some(text),
                            "{scenario}: {call} {path} not streamed"
                        );
                    }
                }
            }
        }
    }
    assert!(calls_checked >= 5, "only {calls_checked} streamed tool calls in the vectors");
}

#[test]
fn older_and_newer_pi_dialects_map_the_same() {
    let lines = [
        r#"{"type":"agent_start"}"#,
        r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#,
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hi"}}"#,
        r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stopReason":"stop"}}"#,
        r#"{"type":"agent_end","messages":[]}"#,
        r#"{"type":"auto_compaction_start","reason":"threshold"}"#,
        r#"{"type":"auto_compaction_end","reason":"threshold","aborted":false,"willRetry":false}"#,
        r#"{"type":"agent_settled"}"#,
        r#"{"type":"some_future_event","x":1}"#,
    ];
    let mut mapper = deterministic_mapper();
    let mut out = Vec::new();
    replay(&mut mapper, lines.join("\n").as_bytes(), &mut out, std::io::sink()).unwrap();
    let frames = frames_of(std::str::from_utf8(&out).unwrap());
    let types: Vec<&str> = frames.iter().map(|f| f.frame_type().as_str()).collect();
    assert_eq!(
        types,
        ["start", "state", "state", "delta", "state", "state", "compaction", "compaction", "state", "done"],
        "agent_settled ends the run at once; auto_compaction_* become compaction frames"
    );
    assert_eq!(mapper.stats().unknown.get("some_future_event"), Some(&1));
}

#[test]
fn a_bad_line_ends_its_run_with_an_error_frame_and_the_next_runs_still_map() {
    let input = concat!(
        r#"{"type":"agent_start"}"#,
        "\n",
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"par"}}"#,
        "\n",
        "this is not json\n",
        r#"{"type":"agent_start"}"#,
        "\n",
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"ok"}}"#,
        "\n",
        r#"{"type":"agent_end","messages":[]}"#,
        "\n",
    );
    let mut mapper = deterministic_mapper();
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    let report = replay(&mut mapper, input.as_bytes(), &mut out, &mut diagnostics).unwrap();
    assert_eq!(report.bad_lines, 1);
    assert!(String::from_utf8(diagnostics).unwrap().starts_with("line 3: not JSON"));
    let frames = frames_of(std::str::from_utf8(&out).unwrap());
    let terminals: Vec<&ChatFrame> = frames.iter().filter(|f| f.is_terminal()).collect();
    assert_eq!(terminals.len(), 2);
    let ChatFrame::Error(error) = terminals[0] else { panic!("the bad line ends the first run with error") };
    assert!(error.message.starts_with("agent runtime sent malformed data: line 3"), "{}", error.message);
    let ChatFrame::Done(done) = terminals[1] else { panic!("the second run completes") };
    assert_eq!(done.message.parts, vec![ChatMessagePart::text("ok")]);
}

#[test]
fn a_finished_tool_part_says_how_long_it_ran_from_its_start_to_its_result() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let now = Arc::new(AtomicU64::new(1_000));
    let clock = now.clone();
    let mut counter = 0;
    let mut mapper = EventMapper::new(
        "s",
        Box::new(move || clock.load(Ordering::SeqCst)),
        Box::new(move |kind| {
            counter += 1;
            format!("{kind}-{counter}")
        }),
    );
    let mut map = |line: &str, at: u64| {
        now.store(at, Ordering::SeqCst);
        mapper.map(AgentEvent::parse(line).expect("the event parses"))
    };
    let tool_parts = |frames: Vec<ChatFrame>| -> Vec<ChatToolPart> {
        frames
            .into_iter()
            .filter_map(|frame| match frame {
                ChatFrame::Tool(tool) => Some(*tool.part),
                _ => None,
            })
            .collect()
    };
    map(r#"{"type":"agent_start"}"#, 1_000);
    let start = map(
        r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"sleep 1"}}"#,
        1_100,
    );
    assert_eq!(tool_parts(start)[0].duration_ms, None, "a running call has no duration yet");
    let update = map(
        r#"{"type":"tool_execution_update","toolCallId":"c1","toolName":"bash","args":{"command":"sleep 1"},"partialResult":{"content":[{"type":"text","text":"."}]}}"#,
        1_600,
    );
    assert_eq!(tool_parts(update)[0].duration_ms, None);
    let end = map(
        r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"done"}]},"isError":false}"#,
        2_350,
    );
    assert_eq!(tool_parts(end)[0].duration_ms, Some(1_250));
    map(r#"{"type":"tool_execution_start","toolCallId":"c2","toolName":"bash","args":{"command":"sleep 9"}}"#, 3_000);
    map(r#"{"type":"agent_end","messages":[]}"#, 3_300);
    let settled = map(r#"{"type":"agent_settled"}"#, 3_400);
    let interrupted = tool_parts(settled);
    assert_eq!(interrupted[0].error_text.as_deref(), Some(INTERRUPTED_TOOL_ERROR));
    assert_eq!(interrupted[0].duration_ms, Some(400), "an interrupted call ran until its run ended");
}

#[test]
fn each_model_call_is_one_usage_frame_and_the_answer_carries_their_sum() {
    let (ndjson, _) = map_file(&vectors_dir().join("basic_tools.jsonl"));
    let frames = frames_of(&ndjson);
    let calls: Vec<&UsageFrame> = frames
        .iter()
        .filter_map(|frame| match frame {
            ChatFrame::Usage(usage) => Some(usage),
            _ => None,
        })
        .collect();
    let inputs: Vec<u64> = calls.iter().map(|call| call.usage.input).collect();
    assert_eq!(inputs, [1200, 1400, 1600, 1750, 1900], "pi's counts, and none for its zero-counted messages");
    let cost = calls[0].usage.cost.expect("pi's own price");
    assert!((cost - 0.00128).abs() < 1e-12, "{cost}");
    assert_eq!(calls[0].context.as_ref().map(|context| context.used), Some(1240));
    let answer = frames
        .iter()
        .rev()
        .find_map(|frame| match frame {
            ChatFrame::Done(done) => done.message.usage.clone(),
            _ => None,
        })
        .expect("the answer carries the run's usage");
    assert_eq!((answer.calls, answer.total.input, answer.total.output), (5, 7850, 293));
}
