//! The `web_search` tool: asks a SearXNG-compatible search backend (`GET <url>?q=<query>&format=json`, answering
//! `{ results: [{ title, url, content }] }`) and returns the first results as `{ query, results: [{ title, url,
//! snippet }] }` in its details, and as a numbered list in its text for the model.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Args, Tool, ToolContext, ToolFuture, ToolOutput, try_arg};

/// Most results one call returns (and the default).
pub const MAX_RESULTS: usize = 10;
/// How long one search may take, connection included.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(15);
/// A search answer larger than this is refused rather than read into memory.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Snippets longer than this many characters are cut (with an ellipsis).
const MAX_SNIPPET_CHARS: usize = 500;

/// Where `web_search` sends its queries (`--search-url`, `[search] url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchBackend {
    url: reqwest::Url,
}

impl SearchBackend {
    /// The backend at `url`, an `http` or `https` URL; its own query parameters (e.g. `engines=…`) are kept.
    pub fn new(url: &str) -> Result<SearchBackend, String> {
        let parsed = reqwest::Url::parse(url.trim()).map_err(|error| format!("{url:?} is not a URL: {error}"))?;
        match parsed.scheme() {
            "http" | "https" => Ok(SearchBackend { url: parsed }),
            other => Err(format!("{url:?} is not an http(s) URL (scheme {other})")),
        }
    }

    pub fn url(&self) -> &str {
        self.url.as_str()
    }
}

pub(crate) struct WebSearchTool {
    backend: SearchBackend,
    client: reqwest::Client,
}

impl WebSearchTool {
    pub(crate) fn new(backend: SearchBackend) -> Self {
        let client = reqwest::Client::builder()
            .timeout(SEARCH_TIMEOUT)
            .build()
            .expect("a client with the built-in TLS configuration builds");
        Self { backend, client }
    }
}

/// The part of a SearXNG answer the tool reads; anything else in it is ignored.
#[derive(Deserialize)]
struct SearchAnswer {
    results: Vec<SearchHit>,
}

#[derive(Deserialize)]
struct SearchHit {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

impl Tool for WebSearchTool {
    fn name(&self) -> &'static str {
        "web_search"
    }

    fn description(&self) -> &'static str {
        "Search the web. Returns the first results, each with its title, URL and a snippet of the page."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "What to search for" },
                "limit": {
                    "type": "number",
                    "description": format!("Most results to return, 1 to {MAX_RESULTS} (default {MAX_RESULTS})")
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let query = try_arg!(args.string("query")).trim();
            if query.is_empty() {
                return ToolOutput::error("field `query` must not be empty");
            }
            let limit = try_arg!(args.opt_count("limit", 1)).unwrap_or(MAX_RESULTS).min(MAX_RESULTS);
            tokio::select! {
                outcome = self.search(query) => match outcome {
                    Ok(hits) => results(query, hits, limit),
                    Err(message) => ToolOutput::error(message),
                },
                () = ctx.cancel.cancelled() => ToolOutput::error("Search aborted"),
            }
        })
    }
}

impl WebSearchTool {
    async fn search(&self, query: &str) -> Result<Vec<SearchHit>, String> {
        let mut url = self.backend.url.clone();
        url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
        let mut response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("the search backend could not be reached: {}", describe(&error)))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) =
            response.chunk().await.map_err(|error| format!("reading the search answer failed: {}", describe(&error)))?
        {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(format!("the search backend's answer is larger than {} MiB", MAX_RESPONSE_BYTES >> 20));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let excerpt: String = text.trim().chars().take(200).collect();
            let excerpt = if excerpt.is_empty() { String::new() } else { format!(": {excerpt}") };
            return Err(format!("the search backend answered HTTP {status}{excerpt}"));
        }
        let answer: SearchAnswer = serde_json::from_slice(&body).map_err(|error| {
            format!("the search backend's answer is not the expected JSON ({{\"results\": [...]}}): {error}")
        })?;
        Ok(answer.results)
    }
}

/// A reqwest error with its cause (a timeout, a refused connection), which its own text leaves out.
fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", SEARCH_TIMEOUT.as_secs());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first `limit` hits that have a URL, as the tool's output.
fn results(query: &str, hits: Vec<SearchHit>, limit: usize) -> ToolOutput {
    let results: Vec<Value> = hits
        .into_iter()
        .filter_map(|hit| {
            let url = hit.url.map(|url| url.trim().to_owned()).filter(|url| !url.is_empty())?;
            let title = hit.title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).unwrap_or_else(|| url.clone());
            let snippet = shorten(hit.content.as_deref().unwrap_or_default().trim());
            Some(json!({ "title": title, "url": url, "snippet": snippet }))
        })
        .take(limit)
        .collect();
    let text = if results.is_empty() {
        format!("No results for \"{query}\".")
    } else {
        let mut text = format!("Results for \"{query}\":\n");
        for (n, result) in results.iter().enumerate() {
            let field = |name: &str| result[name].as_str().unwrap_or_default().to_owned();
            text.push_str(&format!("\n{}. {}\n   {}\n", n + 1, field("title"), field("url")));
            let snippet = field("snippet");
            if !snippet.is_empty() {
                text.push_str(&format!("   {snippet}\n"));
            }
        }
        text
    };
    ToolOutput::ok(text).with_details(json!({ "query": query, "results": results }))
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::extract::{Query, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;

    use super::super::test_support::*;
    use super::*;

    /// The query parameters of each request the test backend got.
    type Seen = Arc<Mutex<Vec<Vec<(String, String)>>>>;

    /// A local search backend that answers every query with `answer`, and records the queries it got.
    async fn backend(answer: (StatusCode, &'static str)) -> (String, Seen) {
        let seen = Seen::default();
        async fn search(
            State((answer, seen)): State<((StatusCode, &'static str), Seen)>,
            Query(params): Query<Vec<(String, String)>>,
        ) -> Response {
            seen.lock().unwrap().push(params);
            (answer.0, [("content-type", "application/json")], answer.1).into_response()
        }
        let app = Router::new().route("/search", get(search)).with_state((answer, seen.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}/search?engines=test"), seen)
    }

    fn tool(url: &str) -> WebSearchTool {
        WebSearchTool::new(SearchBackend::new(url).unwrap())
    }

    const ANSWER: &str = r#"{"query": "rust", "number_of_results": 3, "results": [
        {"title": "Rust <lang>", "url": "https://www.rust-lang.org/", "content": "A language empowering everyone", "engine": "x"},
        {"url": "https://doc.rust-lang.org/book/", "content": null},
        {"title": "no url"},
        {"title": "Crates", "url": "https://crates.io/", "content": "The Rust community's crate registry"}
    ]}"#;

    #[tokio::test]
    async fn results_come_with_title_url_and_snippet() {
        let (url, seen) = backend((StatusCode::OK, ANSWER)).await;
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": " rust lang " })).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(
            out.details,
            Some(json!({ "query": "rust lang", "results": [
                {"title": "Rust <lang>", "url": "https://www.rust-lang.org/", "snippet": "A language empowering everyone"},
                {"title": "https://doc.rust-lang.org/book/", "url": "https://doc.rust-lang.org/book/", "snippet": ""},
                {"title": "Crates", "url": "https://crates.io/", "snippet": "The Rust community's crate registry"},
            ]}))
        );
        assert!(out.text.starts_with("Results for \"rust lang\":\n\n1. Rust <lang>\n   https://www.rust-lang.org/\n"));
        let params = seen.lock().unwrap().clone();
        let expected: Vec<(String, String)> = [("engines", "test"), ("q", "rust lang"), ("format", "json")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(params, [expected], "the backend's own parameters are kept");
    }

    #[tokio::test]
    async fn limit_caps_the_results() {
        let (url, _) = backend((StatusCode::OK, ANSWER)).await;
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": "rust", "limit": 1 })).await;
        assert_eq!(out.details.unwrap()["results"].as_array().unwrap().len(), 1);
        let out = run(&tool(&url), &ws, json!({ "query": "rust", "limit": 0 })).await;
        assert!(out.is_error && out.text.contains("`limit`"), "{}", out.text);
    }

    #[tokio::test]
    async fn no_results_is_not_an_error() {
        let (url, _) = backend((StatusCode::OK, r#"{"results": []}"#)).await;
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": "zzz" })).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "No results for \"zzz\".");
        assert_eq!(out.details, Some(json!({ "query": "zzz", "results": [] })));
    }

    #[tokio::test]
    async fn an_http_error_is_a_tool_error() {
        let (url, _) = backend((StatusCode::INTERNAL_SERVER_ERROR, "engine exploded")).await;
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": "rust" })).await;
        assert!(out.is_error);
        assert_eq!(out.text, "the search backend answered HTTP 500 Internal Server Error: engine exploded");
    }

    #[tokio::test]
    async fn malformed_json_is_a_tool_error() {
        for body in ["<html>rate limited</html>", r#"{"answers": []}"#, r#"{"results": "none"}"#] {
            let (url, _) = backend((StatusCode::OK, body)).await;
            let (_dir, ws) = workspace();
            let out = run(&tool(&url), &ws, json!({ "query": "rust" })).await;
            assert!(out.is_error, "{body}");
            assert!(out.text.starts_with("the search backend's answer is not the expected JSON"), "{}", out.text);
        }
    }

    #[tokio::test]
    async fn an_unreachable_backend_is_a_tool_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/search", listener.local_addr().unwrap());
        drop(listener);
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": "rust" })).await;
        assert!(out.is_error);
        assert!(out.text.starts_with("the search backend could not be reached: "), "{}", out.text);
    }

    #[tokio::test]
    async fn an_empty_query_is_refused_before_any_request() {
        let (url, seen) = backend((StatusCode::OK, ANSWER)).await;
        let (_dir, ws) = workspace();
        let out = run(&tool(&url), &ws, json!({ "query": "  " })).await;
        assert!(out.is_error && out.text.contains("`query`"));
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn only_http_urls_are_backends() {
        assert!(SearchBackend::new("https://search.example/search").is_ok());
        assert!(SearchBackend::new("file:///etc/passwd").unwrap_err().contains("not an http(s) URL"));
        assert!(SearchBackend::new("search.example").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn long_snippets_are_cut() {
        let long = "é".repeat(MAX_SNIPPET_CHARS + 10);
        let cut = shorten(&long);
        assert_eq!(cut.chars().count(), MAX_SNIPPET_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
