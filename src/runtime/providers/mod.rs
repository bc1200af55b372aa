//! Model providers over HTTP: the OpenAI-compatible Chat Completions API and the Anthropic Messages API, both
//! streamed as server-sent events. What they share lives here: the client, the API key, error classification.

pub mod anthropic;
pub mod openai;

use std::fmt;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::provider::ProviderError;

/// Bytes as the providers' JSON carries them: standard base64 with padding.
pub(crate) fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An API key. Its `Debug` form hides it, so a key cannot reach a log or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(hidden)")
    }
}

/// Where a provider sends its requests and for which model.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// e.g. `https://api.openai.com/v1`; the API's path (`/chat/completions`, `/messages`) is appended.
    pub base_url: String,
    /// The model id the provider knows.
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// Upper bound of the answer's tokens (required by Anthropic, optional for OpenAI-compatible servers).
    pub max_tokens: Option<u32>,
}

impl Endpoint {
    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url.trim_end_matches('/'))
    }
}

/// The HTTP client every provider uses: no overall timeout (answers stream for minutes), but a connection that
/// stays silent for five minutes is given up.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(Duration::from_secs(300))
        .build()
        .expect("a client with the built-in TLS configuration builds")
}

/// Sends the request; a status other than 2xx becomes the provider's error, classified for retry.
async fn send(
    provider: &str,
    request: reqwest::RequestBuilder,
    cancel: &CancellationToken,
) -> Result<reqwest::Response, ProviderError> {
    let response = tokio::select! {
        response = request.send() => response.map_err(|error| network_error(provider, &error))?,
        () = cancel.cancelled() => return Err(ProviderError::Aborted),
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let body = tokio::select! {
        body = response.text() => body.unwrap_or_default(),
        () = cancel.cancelled() => return Err(ProviderError::Aborted),
    };
    Err(status_error(provider, status.as_u16(), &body, retry_after))
}

fn network_error(provider: &str, error: &reqwest::Error) -> ProviderError {
    // reqwest's message names the URL but never a header, so the key stays out of it.
    let mut message = format!("could not reach {provider}: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ProviderError::Retryable { message, retry_after: None }
}

/// The error for an HTTP status: 408, 409, 429, 5xx and 529 (overloaded) are worth retrying, other 4xx fail fast
/// with the provider's own message.
fn status_error(provider: &str, status: u16, body: &str, retry_after: Option<Duration>) -> ProviderError {
    let detail = error_detail(body);
    let hint = match status {
        401 | 403 => " (check the API key: --api-key-env names the variable that holds it)",
        404 => " (check --base-url and --model)",
        _ => "",
    };
    let message = format!("{provider} answered {status}: {detail}{hint}");
    if is_context_overflow(&detail) {
        return ProviderError::ContextOverflow(message);
    }
    match status {
        408 | 409 | 429 | 500..=599 => ProviderError::Retryable { message, retry_after },
        _ => ProviderError::Fatal(message),
    }
}

/// The readable part of an error body: `error.message` (OpenAI, Anthropic), `error` as text (Ollama), or the body.
fn error_detail(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|value| {
        let error = value.get("error").unwrap_or(value);
        error.get("message").and_then(Value::as_str).or_else(|| error.as_str()).map(str::to_owned)
    });
    let detail = from_json.unwrap_or_else(|| body.trim().to_owned());
    match detail.is_empty() {
        true => "no details given".to_owned(),
        false => detail.chars().take(1000).collect(),
    }
}

/// Whether a provider's message says the prompt is longer than the model's context window. Servers word it
/// differently: OpenAI `context_length_exceeded` / "maximum context length", Anthropic "prompt is too long",
/// llama.cpp and vLLM "exceeds the context size/window".
fn is_context_overflow(message: &str) -> bool {
    let message = message.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceeds the context",
        "context window",
        "too many tokens",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// How long the provider asks to wait: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|ms| ms.is_finite()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let value = header("retry-after")?;
    if let Some(seconds) = value.parse::<f64>().ok().filter(|s| s.is_finite()) {
        return Some(Duration::from_secs_f64(seconds.max(0.0)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// The response body as server-sent events.
fn events(response: reqwest::Response) -> EventStream {
    Box::pin(response.bytes_stream().eventsource())
}

/// The next event, `None` at the end of the body. Abort drops the stream, which closes the connection.
async fn next_event(
    provider: &str,
    stream: &mut EventStream,
    cancel: &CancellationToken,
) -> Result<Option<Event>, ProviderError> {
    let next = tokio::select! {
        next = stream.next() => next,
        () = cancel.cancelled() => return Err(ProviderError::Aborted),
    };
    match next {
        None => Ok(None),
        Some(Ok(event)) => Ok(Some(event)),
        Some(Err(EventStreamError::Transport(error))) => Err(ProviderError::Retryable {
            message: format!("the connection to {provider} broke: {error}"),
            retry_after: None,
        }),
        Some(Err(error @ (EventStreamError::Utf8(_) | EventStreamError::Parser(_)))) => {
            Err(ProviderError::Fatal(format!("{provider} sent an unreadable event stream: {error}")))
        }
    }
}

/// The end of a stream that stopped before the provider said the answer was complete.
fn cut_off(provider: &str) -> ProviderError {
    ProviderError::Retryable {
        message: format!("the connection to {provider} closed before the answer was complete"),
        retry_after: None,
    }
}

fn unreadable(provider: &str, data: &str, error: &serde_json::Error) -> ProviderError {
    let start: String = data.chars().take(200).collect();
    ProviderError::Fatal(format!("{provider} sent an event that is not JSON ({error}): {start}"))
}

/// A request of one user message with one image, for the providers' tests of how each sends it.
#[cfg(test)]
fn request_with_image() -> super::provider::ModelRequest {
    use super::provider::{ModelImage, ModelMessage, ModelRequest};
    let image =
        ModelImage { name: "dot.png".into(), media_type: "image/png".into(), bytes: b"\x89PNG".to_vec().into() };
    ModelRequest {
        system: "sys".into(),
        messages: vec![ModelMessage::User { text: "what is it?".into(), images: vec![image] }],
        tools: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_takes_milliseconds_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        headers.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn statuses_are_classified_and_keep_the_providers_message() {
        let body = r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#;
        let error = status_error("openai", 429, body, Some(Duration::from_secs(1)));
        assert_eq!(
            error,
            ProviderError::Retryable {
                message: "openai answered 429: Rate limit reached".into(),
                retry_after: Some(Duration::from_secs(1))
            }
        );
        assert!(matches!(status_error("x", 400, "bad", None), ProviderError::Fatal(m) if m == "x answered 400: bad"));
        assert!(matches!(status_error("x", 529, "", None), ProviderError::Retryable { .. }));
        assert!(matches!(status_error("x", 401, r#"{"error":"no key"}"#, None),
            ProviderError::Fatal(m) if m.starts_with("x answered 401: no key (check the API key")));
        let overflow = r#"{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(status_error("anthropic", 400, overflow, None), ProviderError::ContextOverflow(_)));
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let endpoint = Endpoint {
            base_url: "http://x".into(),
            model: "m".into(),
            api_key: Some(ApiKey::new("sk-secret")),
            max_tokens: None,
        };
        assert!(!format!("{endpoint:?}").contains("sk-secret"));
    }
}
