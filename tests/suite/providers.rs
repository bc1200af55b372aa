//! The `openai` and `anthropic` providers against fake servers on loopback that replay recorded-format streams
//! (tests/fixtures/providers), through the agent loop and the mapper: the frames a browser would get.

use std::sync::Arc;
use std::time::Duration;

use crate::support::fake_openai::{FakeServer, KEY, Reply};
use crate::support::invariants::{assert_run_invariants, text_parts};
use crate::support::mapper::map_until_settled;
use chatwire::mapper::{EventMapper, RunMeta};
use chatwire::protocol::*;
use chatwire::runtime::agent::{Agent, AgentConfig, Conversation};
use chatwire::runtime::event::{AgentEvent, AssistantMessageEvent};
use chatwire::runtime::provider::Provider;
use chatwire::runtime::providers::anthropic::AnthropicProvider;
use chatwire::runtime::providers::openai::OpenAiProvider;
use chatwire::runtime::providers::{ApiKey, Endpoint, http_client};
use chatwire::runtime::seam::{RunControl, RunOptions};
use chatwire::runtime::tools::Workspace;
use serde_json::{Value, json};
use tokio::sync::mpsc;

impl FakeServer {
    fn endpoint(&self, model: &str) -> Endpoint {
        Endpoint {
            base_url: self.base_url.clone(),
            model: model.into(),
            api_key: Some(ApiKey::new(KEY)),
            max_tokens: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    async fn serve(self, replies: Vec<Reply>) -> FakeServer {
        FakeServer::start(replies, "/v1").await
    }

    fn provider(self, server: &FakeServer) -> Arc<dyn Provider> {
        match self {
            Api::OpenAi => Arc::new(OpenAiProvider::new(http_client(), server.endpoint("gpt-4.1-mini"))),
            Api::Anthropic => Arc::new(AnthropicProvider::new(http_client(), server.endpoint("claude-sonnet-4-5"))),
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }
}

fn config() -> AgentConfig {
    AgentConfig { retry_base_delay: Duration::from_millis(1), ..AgentConfig::default() }
}

fn mapper() -> EventMapper {
    crate::support::mapper::deterministic_mapper("s")
}

/// One session: the model's conversation, the mapper and a workspace, as the server keeps them.
struct Session {
    conversation: Conversation,
    mapper: EventMapper,
    workspace: Workspace,
    _dir: tempfile::TempDir,
}

impl Session {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        Session { conversation: Conversation::default(), mapper: mapper(), workspace, _dir: dir }
    }

    /// Runs one prompt and returns its frames; `react` sees each event (to stop the run).
    async fn run(
        &mut self,
        agent: &Agent,
        prompt: &str,
        control: &RunControl,
        mut react: impl FnMut(&AgentEvent, &RunControl) + Send,
    ) -> Vec<ChatFrame> {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let user = ChatMessage {
            id: "u".into(),
            role: Role::User,
            parts: vec![ChatMessagePart::text(prompt)],
            created_at: None,
            changes: None,
            usage: None,
        };
        let mut frames = self.mapper.open_run(RunMeta { prompt: Some(user), ..RunMeta::default() });
        let options = RunOptions::default();
        let run = agent.run(&mut self.conversation, &self.workspace, prompt.into(), &options, control, &sender);
        let collect = map_until_settled(&mut receiver, &mut self.mapper, &mut frames, |event| react(event, control));
        tokio::join!(run, collect);
        frames
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.workspace.root().join(name)).unwrap()
    }
}

async fn prompt(agent: &Agent, text: &str) -> (Vec<ChatFrame>, Session) {
    let mut session = Session::new();
    let frames = session.run(agent, text, &RunControl::default(), |_, _| {}).await;
    (frames, session)
}

fn done(frames: &[ChatFrame]) -> &DoneFrame {
    match frames.last() {
        Some(ChatFrame::Done(done)) => done,
        other => panic!("the run did not end with done: {other:?}"),
    }
}

fn deltas(frames: &[ChatFrame]) -> String {
    frames.iter().filter_map(|f| if let ChatFrame::Delta(d) = f { Some(d.text.as_str()) } else { None }).collect()
}

fn thinking(frames: &[ChatFrame]) -> String {
    frames.iter().filter_map(|f| if let ChatFrame::Thinking(t) = f { Some(t.text.as_str()) } else { None }).collect()
}

fn retries(frames: &[ChatFrame]) -> Vec<&RetryFrame> {
    frames.iter().filter_map(|f| if let ChatFrame::Retry(r) = f { Some(r) } else { None }).collect()
}

/// The decoded text the `tool_args_delta` frames of one call added to one string argument.
fn streamed_argument(frames: &[ChatFrame], call: &str, key: &str) -> String {
    frames
        .iter()
        .filter_map(|f| match f {
            ChatFrame::ToolArgsDelta(d) if d.tool_call_id == call && *d.path == [PathSegment::Key(key.into())] => {
                Some(d.text.as_str())
            }
            _ => None,
        })
        .collect()
}

fn tool_part<'a>(frames: &'a [ChatFrame], call: &str) -> &'a ChatToolPart {
    done(frames)
        .message
        .parts
        .iter()
        .filter_map(ChatMessagePart::as_tool)
        .find(|part| part.tool_call_id == call)
        .unwrap_or_else(|| panic!("no tool part {call}"))
}

async fn text_only(api: Api) {
    let server = api.serve(vec![Reply::Stream(leak(format!("{}/text.sse", api.dir())))]).await;
    let agent = Agent::new(api.provider(&server), config());
    let (frames, _) = prompt(&agent, "Say hello").await;
    assert_run_invariants("text", &frames);
    assert_eq!(deltas(&frames), "Hello, wörld! 👋");
    assert_eq!(text_parts(&done(&frames).message), ["Hello, wörld! 👋"]);
    assert_eq!(server.requests(), 1);
    let seen = server.seen.lock().unwrap();
    let request = &seen[0];
    match api {
        Api::OpenAi => {
            assert_eq!(request.path, "/v1/chat/completions");
            assert_eq!(request.headers["authorization"], format!("Bearer {KEY}").as_str());
            assert_eq!(request.body["stream"], json!(true));
            assert_eq!(request.body["stream_options"]["include_usage"], json!(true));
            assert_eq!(request.body["messages"][1], json!({"role": "user", "content": "Say hello"}));
            let tools = request.body["tools"].as_array().unwrap();
            let write = tools.iter().find(|t| t["function"]["name"] == "write").unwrap();
            assert_eq!(write["function"]["parameters"]["type"], "object");
        }
        Api::Anthropic => {
            assert_eq!(request.path, "/v1/messages");
            assert_eq!(request.headers["x-api-key"], KEY);
            assert_eq!(request.headers["anthropic-version"], "2023-06-01");
            assert_eq!(request.body["max_tokens"], json!(8192));
            assert_eq!(request.body["messages"][0]["content"][0], json!({"type": "text", "text": "Say hello"}));
            let tools = request.body["tools"].as_array().unwrap();
            assert!(tools.iter().any(|t| t["name"] == "write" && t["input_schema"]["type"] == "object"));
        }
    }
}

/// Fixture names are `'static` in `Reply`; the few a test builds live as long as the test binary.
fn leak(name: String) -> &'static str {
    Box::leak(name.into_boxed_str())
}

#[tokio::test]
async fn openai_text_only() {
    text_only(Api::OpenAi).await;
}

#[tokio::test]
async fn anthropic_text_only() {
    text_only(Api::Anthropic).await;
}

async fn thinking_then_text(api: Api) {
    let server = api.serve(vec![Reply::Stream(leak(format!("{}/thinking.sse", api.dir())))]).await;
    let agent = Agent::new(api.provider(&server), config());
    let (frames, _) = prompt(&agent, "Greet me").await;
    assert_run_invariants("thinking", &frames);
    assert_eq!(thinking(&frames), "The user wants a greeting.");
    assert_eq!(deltas(&frames), "Hi there.");
    let first_thinking = frames.iter().position(|f| matches!(f, ChatFrame::Thinking(_))).unwrap();
    let first_delta = frames.iter().position(|f| matches!(f, ChatFrame::Delta(_))).unwrap();
    assert!(first_thinking < first_delta);
    let parts = &done(&frames).message.parts;
    assert!(matches!(&parts[0], ChatMessagePart::Thinking(r) if r.text == "The user wants a greeting."), "{parts:?}");
}

#[tokio::test]
async fn openai_thinking_then_text() {
    thinking_then_text(Api::OpenAi).await;
}

#[tokio::test]
async fn anthropic_thinking_then_text() {
    thinking_then_text(Api::Anthropic).await;
}

async fn one_tool_call(api: Api) {
    let dir = api.dir();
    let replies =
        vec![Reply::Stream(leak(format!("{dir}/one_tool.sse"))), Reply::Stream(leak(format!("{dir}/after_tools.sse")))];
    let server = api.serve(replies).await;
    let agent = Agent::new(api.provider(&server), config());
    let (frames, session) = prompt(&agent, "Write the notes").await;
    assert_run_invariants("one tool", &frames);
    let call = match api {
        Api::OpenAi => "call_Ab12",
        Api::Anthropic => "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
    };
    let draft = frames.iter().find_map(|f| if let ChatFrame::ToolDraft(d) = f { Some(d) } else { None }).unwrap();
    assert_eq!((draft.tool_call_id.as_str(), draft.tool_name.as_str()), (call, "Write"));
    let content = "line one\nline \"two\" café";
    assert_eq!(streamed_argument(&frames, call, "content"), content);
    assert_eq!(streamed_argument(&frames, call, "path"), "notes.txt");
    let part = tool_part(&frames, call);
    assert_eq!(part.state, ToolState::OutputAvailable, "{:?}", part.error_text);
    assert_eq!(part.input.as_ref().unwrap()["content"], content);
    assert_eq!(session.file("notes.txt"), content);
    assert!(deltas(&frames).ends_with("Done: written."));

    // The second request carries the call and its result in the provider's own shape.
    let second = server.body(1);
    match api {
        Api::OpenAi => {
            let messages = second["messages"].as_array().unwrap();
            let assistant = &messages[2];
            assert_eq!(assistant["tool_calls"][0]["id"], call);
            let arguments: Value =
                serde_json::from_str(assistant["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(arguments, json!({"path": "notes.txt", "content": content}));
            assert_eq!(messages[3]["role"], "tool");
            assert_eq!(messages[3]["tool_call_id"], call);
        }
        Api::Anthropic => {
            let messages = second["messages"].as_array().unwrap();
            assert_eq!(messages[1]["content"][1]["type"], "tool_use");
            assert_eq!(messages[1]["content"][1]["input"], json!({"path": "notes.txt", "content": content}));
            assert_eq!(messages[2]["content"][0]["type"], "tool_result");
            assert_eq!(messages[2]["content"][0]["tool_use_id"], call);
            assert_eq!(messages[2]["content"][0]["is_error"], false);
        }
    }
}

#[tokio::test]
async fn openai_one_tool_call_with_arguments_split_mid_token_and_mid_escape() {
    one_tool_call(Api::OpenAi).await;
}

#[tokio::test]
async fn anthropic_one_tool_call_with_arguments_split_mid_token_and_mid_escape() {
    one_tool_call(Api::Anthropic).await;
}

async fn two_parallel_calls(api: Api) {
    let dir = api.dir();
    let replies = vec![
        Reply::Stream(leak(format!("{dir}/two_tools.sse"))),
        Reply::Stream(leak(format!("{dir}/after_tools.sse"))),
    ];
    let server = api.serve(replies).await;
    let agent = Agent::new(api.provider(&server), config());
    let (frames, session) = prompt(&agent, "Write both").await;
    assert_run_invariants("two tools", &frames);
    let (a, b) = match api {
        Api::OpenAi => ("call_A", "call_B"),
        Api::Anthropic => ("toolu_A", "toolu_B"),
    };
    let drafts: Vec<(String, u32)> = frames
        .iter()
        .filter_map(|f| if let ChatFrame::ToolDraft(d) = f { Some((d.tool_call_id.clone(), d.index)) } else { None })
        .collect();
    assert_eq!(drafts.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), [a, b]);
    assert_ne!(drafts[0].1, drafts[1].1);
    assert_eq!(streamed_argument(&frames, a, "content"), "alpha\tbeta");
    assert_eq!(streamed_argument(&frames, b, "content"), "x\\y 😀");
    for (call, file, content) in [(a, "a.txt", "alpha\tbeta"), (b, "b.txt", "x\\y 😀")] {
        let part = tool_part(&frames, call);
        assert_eq!(part.state, ToolState::OutputAvailable, "{:?}", part.error_text);
        assert_eq!(part.input.as_ref().unwrap()["content"], content);
        assert_eq!(session.file(file), content);
    }
}

#[tokio::test]
async fn openai_two_parallel_tool_calls_interleaved() {
    two_parallel_calls(Api::OpenAi).await;
}

#[tokio::test]
async fn anthropic_two_parallel_tool_calls() {
    two_parallel_calls(Api::Anthropic).await;
}

const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
const SERVER_ERROR: &str = r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#;

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_the_time_it_asks_for() {
    let replies = vec![Reply::Status(429, vec![("retry-after", "1")], RATE_LIMITED), Reply::Stream("openai/text.sse")];
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), config());
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("429", &frames);
    let retries = retries(&frames);
    let [RetryFrame::Start(start), RetryFrame::End(end)] = retries.as_slice() else { panic!("{retries:?}") };
    assert_eq!((start.attempt, start.max_attempts), (1, 3));
    assert_eq!(start.delay_ms, 1000, "Retry-After wins over the 1 ms base delay");
    assert!(start.error_message.contains("429") && start.error_message.contains("Rate limit reached"));
    assert!(end.success);
    assert_eq!(text_parts(&done(&frames).message), ["Hello, wörld! 👋"]);
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_limit_ends_the_run_instead_of_waiting() {
    let replies = vec![Reply::Status(429, vec![("retry-after", "3600")], RATE_LIMITED)];
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), config());
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("429 too long", &frames);
    assert!(retries(&frames).is_empty());
    let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error, got {:?}", frames.last()) };
    assert!(error.message.ends_with("(asks to wait 3600 s, more than the 60 s limit)"), "{}", error.message);
}

#[tokio::test]
async fn three_500s_exhaust_the_retries_and_end_in_an_error_frame() {
    let replies = (0..3).map(|_| Reply::Status(500, vec![], SERVER_ERROR)).collect();
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), AgentConfig { max_retries: 2, ..config() });
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("500", &frames);
    let delays: Vec<u64> = retries(&frames)
        .iter()
        .filter_map(|r| if let RetryFrame::Start(s) = r { Some(s.delay_ms) } else { None })
        .collect();
    assert_eq!(delays, [1, 2], "exponential backoff from the configured base");
    let Some(ChatFrame::Retry(RetryFrame::End(end))) = frames.iter().rev().find(|f| matches!(f, ChatFrame::Retry(_)))
    else {
        unreachable!()
    };
    assert!(!end.success);
    let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error, got {:?}", frames.last()) };
    assert_eq!(
        error.message,
        "openai answered 500: The server had an error while processing your request. Sorry about that!"
    );
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn anthropic_overloaded_in_the_stream_is_retried() {
    let replies = vec![Reply::Stream("anthropic/overloaded.sse"), Reply::Stream("anthropic/text.sse")];
    let server = Api::Anthropic.serve(replies).await;
    let agent = Agent::new(Api::Anthropic.provider(&server), config());
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("overloaded", &frames);
    let Some(RetryFrame::Start(start)) = retries(&frames).first().copied() else { panic!("no retry") };
    assert_eq!(start.error_message, "anthropic reported overloaded_error: Overloaded");
    assert_eq!(text_parts(&done(&frames).message), ["Hello, wörld! 👋"]);
}

#[tokio::test]
async fn a_401_fails_at_once_with_a_clear_message() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let body = match api {
            Api::OpenAi => {
                r#"{"error":{"message":"Incorrect API key provided: sk-test****hown.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#
            }
            Api::Anthropic => {
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            }
        };
        let server = api.serve(vec![Reply::Status(401, vec![], body)]).await;
        let agent = Agent::new(api.provider(&server), config());
        let (frames, _) = prompt(&agent, "hi").await;
        assert_run_invariants("401", &frames);
        assert!(retries(&frames).is_empty());
        let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error, got {:?}", frames.last()) };
        assert!(error.message.contains("answered 401"), "{}", error.message);
        assert!(error.message.contains("check the API key"), "{}", error.message);
        assert!(!error.message.contains(KEY));
        assert_eq!(server.requests(), 1);
    }
}

#[tokio::test]
async fn a_stream_cut_after_output_keeps_the_partial_answer_and_reports_the_error() {
    let server = Api::OpenAi.serve(vec![Reply::Cut("openai/cut.sse")]).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), config());
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("cut", &frames);
    assert_eq!(deltas(&frames), "Partial answer before");
    assert!(retries(&frames).is_empty(), "output was shown, so the call is not repeated");
    assert_eq!(server.requests(), 1);
    let last = frames.last().unwrap();
    let error = match last {
        ChatFrame::Error(error) => error.message.clone(),
        ChatFrame::Done(done) => done
            .message
            .parts
            .iter()
            .find_map(|p| if let ChatMessagePart::Error(e) = p { Some(e.message.clone()) } else { None })
            .unwrap_or_else(|| panic!("no error part in {:?}", done.message.parts)),
        other => panic!("unexpected last frame {other:?}"),
    };
    assert!(error.contains("connection to openai"), "{error}");
}

#[tokio::test]
async fn a_stream_that_ends_before_any_output_is_retried() {
    let replies = vec![Reply::Status(200, vec![], ""), Reply::Stream("openai/text.sse")];
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), config());
    let (frames, _) = prompt(&agent, "hi").await;
    assert_run_invariants("cut before output", &frames);
    let Some(RetryFrame::Start(start)) = retries(&frames).first().copied() else { panic!("no retry") };
    assert!(start.error_message.contains("closed before the answer was complete"), "{}", start.error_message);
    assert_eq!(text_parts(&done(&frames).message), ["Hello, wörld! 👋"]);
}

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    let replies = vec![
        Reply::Stream("openai/text.sse"),
        Reply::Status(400, vec![], OVERFLOW),
        Reply::Stream("openai/summary.sse"),
        Reply::Stream("openai/after_tools.sse"),
    ];
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), AgentConfig { keep_recent_tokens: 1, ..config() });
    let mut session = Session::new();
    session.run(&agent, "Say hello", &RunControl::default(), |_, _| {}).await;
    let frames = session.run(&agent, "Now write it down", &RunControl::default(), |_, _| {}).await;
    assert_run_invariants("overflow", &frames);
    let compactions: Vec<&CompactionFrame> =
        frames.iter().filter_map(|f| if let ChatFrame::Compaction(c) = f { Some(c) } else { None }).collect();
    let [CompactionFrame::Start(start), CompactionFrame::End(end)] = compactions.as_slice() else {
        panic!("{compactions:?}")
    };
    assert_eq!(start.reason, CompactionReason::Overflow);
    assert!(end.will_retry && !end.aborted && end.error_message.is_none(), "{end:?}");
    assert_eq!(text_parts(&done(&frames).message), ["Done: written."]);

    // The summary request has no tools and the old turns as text; the retry sends the summary and the new prompt.
    let summary_request = server.body(2);
    assert!(summary_request.get("tools").is_none());
    let transcript = summary_request["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.contains("User: Say hello") && transcript.contains("Assistant: Hello, wörld! 👋"),
        "{transcript}"
    );
    let retried = server.body(3);
    let messages = retried["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "system + one user message: {messages:?}");
    let user = messages[1]["content"].as_str().unwrap();
    assert!(
        user.contains("- The user asked for a greeting; it was given.") && user.ends_with("Now write it down"),
        "{user}"
    );
}

#[tokio::test]
async fn a_second_overflow_after_compaction_ends_the_run() {
    let replies = vec![
        Reply::Stream("openai/text.sse"),
        Reply::Status(400, vec![], OVERFLOW),
        Reply::Stream("openai/summary.sse"),
        Reply::Status(400, vec![], OVERFLOW),
    ];
    let server = Api::OpenAi.serve(replies).await;
    let agent = Agent::new(Api::OpenAi.provider(&server), AgentConfig { keep_recent_tokens: 1, ..config() });
    let mut session = Session::new();
    session.run(&agent, "Say hello", &RunControl::default(), |_, _| {}).await;
    let frames = session.run(&agent, "again", &RunControl::default(), |_, _| {}).await;
    assert_run_invariants("overflow twice", &frames);
    let Some(ChatFrame::Error(error)) = frames.last() else { panic!("expected error, got {:?}", frames.last()) };
    assert!(error.message.contains("maximum context length"), "{}", error.message);
    assert_eq!(server.requests(), 4);
}

#[tokio::test]
async fn passing_the_threshold_compacts_before_the_call() {
    let replies = vec![
        Reply::Stream("openai/text.sse"),
        Reply::Stream("openai/summary.sse"),
        Reply::Stream("openai/after_tools.sse"),
    ];
    let server = Api::OpenAi.serve(replies).await;
    // The first answer reports 812 + 9 tokens of usage; a 1000-token window at 0.8 is passed by the next prompt.
    let config = AgentConfig { context_window: 1000, compaction_threshold: 0.8, keep_recent_tokens: 1, ..config() };
    let agent = Agent::new(Api::OpenAi.provider(&server), config);
    let mut session = Session::new();
    let first = session.run(&agent, "Say hello", &RunControl::default(), |_, _| {}).await;
    assert!(!first.iter().any(|f| matches!(f, ChatFrame::Compaction(_))));
    let frames = session.run(&agent, "Now write it down", &RunControl::default(), |_, _| {}).await;
    assert_run_invariants("threshold", &frames);
    let reasons: Vec<CompactionReason> = frames
        .iter()
        .filter_map(|f| {
            if let ChatFrame::Compaction(CompactionFrame::Start(s)) = f { Some(s.reason.clone()) } else { None }
        })
        .collect();
    assert_eq!(reasons, [CompactionReason::Threshold]);
    assert!(retries(&frames).is_empty());
    assert_eq!(text_parts(&done(&frames).message), ["Done: written."]);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn abort_closes_the_http_request_at_once() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = api.serve(vec![Reply::Hang(leak(format!("{}/first_words.sse", api.dir())))]).await;
        let agent = Agent::new(api.provider(&server), config());
        let mut session = Session::new();
        let control = RunControl::default();
        let closed = server.closed.clone();
        let watch = tokio::spawn(async move { closed.notified().await });
        let frames = session
            .run(&agent, "hi", &control, |event, control| {
                if let AgentEvent::MessageUpdate(AssistantMessageEvent::TextDelta { .. }) = event {
                    control.cancel.cancel();
                }
            })
            .await;
        assert_run_invariants("abort", &frames);
        assert_eq!(deltas(&frames), "Thinking about it");
        assert_eq!(text_parts(&done(&frames).message), ["Thinking about it"]);
        // Bounded only so that a regression fails instead of hanging.
        tokio::time::timeout(Duration::from_secs(20), watch)
            .await
            .expect("the fake server saw the connection close")
            .unwrap();
        assert_eq!(server.requests(), 1);
    }
}

/// The key reaches the provider and nothing else: not `--help`, not the health or models answer, not the chat
/// stream of a failing call, not the log at info level.
#[tokio::test]
async fn the_api_key_never_leaves_the_server() {
    use std::process::{Command, Stdio};

    let key = "sk-ant-secret-0123456789";
    let help =
        Command::new(env!("CARGO_BIN_EXE_chatwire")).arg("--help").env("ANTHROPIC_API_KEY", key).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--api-key-env") && !help.contains(key), "{help}");

    let unauthorized = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = Api::Anthropic.serve(vec![Reply::Status(401, vec![], unauthorized)]).await;
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chatwire"))
        .args(["serve", "--addr", "127.0.0.1:0", "--token", "t0ken-for-the-test", "--provider", "anthropic"])
        .args(["--model", "claude-sonnet-4-5", "--base-url", &server.base_url])
        .arg("--data-dir")
        .arg(data.path())
        .env("ANTHROPIC_API_KEY", key)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    let base =
        line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().split("/?").next().unwrap().to_owned();
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("{base}{path}")).bearer_auth("t0ken-for-the-test").send();
    let health = get("/api/health").await.unwrap().text().await.unwrap();
    let models: Value = get("/api/models").await.unwrap().json().await.unwrap();
    assert_eq!(models["default"], "claude-sonnet-4-5");
    assert_eq!(models["models"][0]["provider"], "anthropic");
    let post = |path: &str, body: Value| {
        http.post(format!("{base}{path}")).bearer_auth("t0ken-for-the-test").json(&body).send()
    };
    let session: Value = post("/api/sessions", json!({})).await.unwrap().json().await.unwrap();
    let session = session["session"]["sessionId"].as_str().unwrap().to_owned();
    let unknown = post("/api/chat", json!({"sessionId": session, "message": "hi", "model": "gpt-9"})).await.unwrap();
    assert_eq!(unknown.status(), 400);
    let unknown: Value = unknown.json().await.unwrap();
    assert_eq!(unknown["message"], "unknown model \"gpt-9\"; the configured models are: claude-sonnet-4-5");
    let stream = post("/api/chat", json!({"sessionId": session, "message": "hi", "model": "claude-sonnet-4-5"}))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(stream.contains("invalid x-api-key"), "{stream}");
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("model configured"), "the log is at info level: {log}");
    for (what, text) in [("health", &health), ("models", &models.to_string()), ("stream", &stream), ("log", &log)] {
        assert!(!text.contains(key), "the key is in the {what}: {text}");
    }
    assert_eq!(server.seen.lock().unwrap()[0].headers["x-api-key"], key);
}
