//! The built-in coding-agent tools (bash, read, write, edit, grep, glob, ls), confined to one workspace directory, and
//! those offered only when the machine or the configuration provides them (ipython, web_search).
//!
//! Result texts and details mimic the pi coding agent's, because the event mapper normalizes them per tool kind.

mod bash;
pub(crate) mod chart;
mod edit;
pub(crate) use edit::unified_diff;
mod ls;
mod python;
mod read;
mod search;
mod web_search;
mod workspace;
mod write;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

pub use python::find_python3;
pub use web_search::SearchBackend;
pub use workspace::Workspace;

/// What a tool call produced, final or partial.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub details: Option<Value>,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self { text: text.into(), details: None, is_error: false }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self { text: text.into(), details: None, is_error: true }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// What a running tool may use besides its arguments.
pub struct ToolContext<'a> {
    pub workspace: &'a Workspace,
    /// Cancelled on abort: the tool stops its work, kills its child processes and returns promptly.
    pub cancel: CancellationToken,
    /// Cumulative partial results while running (each call replaces the previous one).
    pub progress: &'a (dyn Fn(ToolOutput) + Send + Sync),
}

/// The future a tool call returns; boxed so tools stay object-safe.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (MCP tools have names only known at run time).
    fn name(&self) -> &str;
    /// One or two sentences for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// True when the tool never changes the workspace.
    fn read_only(&self) -> bool;
    /// Runs one call. Bad arguments give an error output, never a panic.
    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a>;
}

/// Bounds on what one tool call may take or return.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Used by bash when the call gives no `timeout`.
    pub bash_timeout: Duration,
    /// Most bytes of command output kept in a bash result (the rest goes to a log file).
    pub max_output_bytes: usize,
    /// Most lines one read returns.
    pub max_read_lines: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self { bash_timeout: Duration::from_secs(120), max_output_bytes: 50 * 1024, max_read_lines: 2000 }
    }
}

/// The built-in file and shell tools, in this order: bash, read, write, edit, grep, glob, ls.
pub fn builtin_tools(limits: ToolLimits) -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(bash::BashTool::new(limits.clone())),
        Box::new(read::ReadTool::new(limits.clone())),
        Box::new(write::WriteTool),
        Box::new(edit::EditTool),
        Box::new(search::GrepTool::new(limits)),
        Box::new(search::GlobTool),
        Box::new(ls::LsTool),
    ]
}

/// Tools offered only when something outside chatwire provides them; by default none is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OptionalTools {
    /// The `python3` the `ipython` tool runs (found on `PATH` at startup).
    pub python: Option<PathBuf>,
    /// The search backend `web_search` asks (`--search-url`, `[search] url`).
    pub web_search: Option<SearchBackend>,
}

/// The optional tools that `optional` provides, in this order: ipython, web_search.
pub fn optional_tools(limits: &ToolLimits, optional: &OptionalTools) -> Vec<Box<dyn Tool>> {
    let mut tools: Vec<Box<dyn Tool>> = Vec::new();
    if let Some(python) = &optional.python {
        tools.push(Box::new(python::PythonTool::new(python.clone(), limits.clone())));
    }
    if let Some(backend) = &optional.web_search {
        tools.push(Box::new(web_search::WebSearchTool::new(backend.clone())));
    }
    tools
}

/// Typed access to a call's arguments object, with errors that name the field.
pub(crate) struct Args<'v>(&'v serde_json::Map<String, Value>);

impl<'v> Args<'v> {
    pub(crate) fn new(args: &'v Value) -> Result<Self, String> {
        match args {
            Value::Object(map) => Ok(Self(map)),
            _ => Err("arguments must be a JSON object".to_owned()),
        }
    }

    /// A null counts as absent: models often send `"offset": null` for "not given".
    fn get(&self, field: &str) -> Option<&'v Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    pub(crate) fn string(&self, field: &str) -> Result<&'v str, String> {
        self.opt_string(field)?.ok_or_else(|| format!("missing required field `{field}` (a string)"))
    }

    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<&'v str>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("field `{field}` must be a string")),
        }
    }

    pub(crate) fn opt_bool(&self, field: &str) -> Result<Option<bool>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(_) => Err(format!("field `{field}` must be a boolean")),
        }
    }

    /// Numbers may arrive as strings from some models; both are accepted.
    pub(crate) fn opt_number(&self, field: &str) -> Result<Option<f64>, String> {
        let n = match self.get(field) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match n {
            Some(n) if n.is_finite() => Ok(Some(n)),
            _ => Err(format!("field `{field}` must be a number")),
        }
    }

    /// A positive number of seconds (at most 10^9, which `Duration` holds).
    pub(crate) fn opt_seconds(&self, field: &str) -> Result<Option<std::time::Duration>, String> {
        match self.opt_number(field)? {
            None => Ok(None),
            Some(secs) if secs > 0.0 && secs <= 1e9 => Ok(Some(std::time::Duration::from_secs_f64(secs))),
            Some(_) => Err(format!("field `{field}` must be a positive number of seconds")),
        }
    }

    /// A whole number of at least `min`.
    pub(crate) fn opt_count(&self, field: &str, min: usize) -> Result<Option<usize>, String> {
        match self.opt_number(field)? {
            None => Ok(None),
            Some(n) if n.fract() == 0.0 && n >= min as f64 && n <= usize::MAX as f64 => Ok(Some(n as usize)),
            Some(_) => Err(format!("field `{field}` must be a whole number of at least {min}")),
        }
    }
}

/// `path` relative to the workspace root with `/` separators, `.` for the root itself.
pub(crate) fn display_path(workspace: &Workspace, path: &Path) -> String {
    let rel = path.strip_prefix(workspace.root()).unwrap_or(path);
    let parts: Vec<_> = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
    if parts.is_empty() { ".".to_owned() } else { parts.join("/") }
}

/// Files whose first 8 KiB hold a NUL byte are treated as binary, as git and ripgrep do.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
}

/// Unwraps an argument result inside a tool's `run`, turning the error into the tool's error output.
macro_rules! try_arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(message) => return $crate::runtime::tools::ToolOutput::error(message),
        }
    };
}
pub(crate) use try_arg;

#[cfg(test)]
pub(crate) mod test_support {
    use std::sync::Mutex;

    use super::*;

    /// A fresh workspace in a temp dir; the `TempDir` must outlive the workspace.
    pub(crate) fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        (dir, ws)
    }

    /// Runs `tool` with `args`, collecting progress calls.
    pub(crate) async fn run_tool(
        tool: &dyn Tool,
        ws: &Workspace,
        args: Value,
        cancel: CancellationToken,
    ) -> (ToolOutput, Vec<ToolOutput>) {
        let seen = Mutex::new(Vec::new());
        let progress = |o: ToolOutput| seen.lock().expect("progress lock").push(o);
        let out = tool.run(args, ToolContext { workspace: ws, cancel, progress: &progress }).await;
        (out, seen.into_inner().expect("progress lock"))
    }

    pub(crate) async fn run(tool: &dyn Tool, ws: &Workspace, args: Value) -> ToolOutput {
        run_tool(tool, ws, args, CancellationToken::new()).await.0
    }

    /// Awaits `call`, failing the test if it has not ended within a minute: the commands of the process tests would
    /// run for a quarter of an hour if what they test (a timeout, Stop, closed stdin) did not work.
    pub(crate) async fn within_hang_guard<T>(call: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(60), call).await.expect("the call ended within the hang guard")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::test_support::*;
    use super::*;

    #[test]
    fn builtin_tools_come_in_order_with_object_schemas() {
        let tools = builtin_tools(ToolLimits::default());
        let names: Vec<_> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["bash", "read", "write", "edit", "grep", "glob", "ls"]);
        for t in &tools {
            assert_eq!(t.parameters()["type"], "object", "{}", t.name());
            assert!(!t.description().is_empty());
            assert_eq!(t.read_only(), matches!(t.name(), "read" | "grep" | "glob" | "ls"), "{}", t.name());
        }
    }

    #[test]
    fn a_timeout_is_a_positive_number_of_seconds() {
        let seconds = |value: Value| Args::new(&json!({ "timeout": value })).unwrap().opt_seconds("timeout");
        assert_eq!(seconds(json!(1.5)), Ok(Some(std::time::Duration::from_millis(1500))));
        assert_eq!(seconds(json!("30")), Ok(Some(std::time::Duration::from_secs(30))));
        for bad in [json!(0), json!(-1), json!(1e10)] {
            assert_eq!(
                seconds(bad.clone()),
                Err("field `timeout` must be a positive number of seconds".into()),
                "{bad}"
            );
        }
        assert_eq!(Args::new(&json!({})).unwrap().opt_seconds("timeout"), Ok(None));
    }

    #[test]
    fn optional_tools_are_offered_only_when_provided() {
        let limits = ToolLimits::default();
        assert!(optional_tools(&limits, &OptionalTools::default()).is_empty());
        let optional = OptionalTools {
            python: Some(PathBuf::from("/usr/bin/python3")),
            web_search: Some(SearchBackend::new("http://127.0.0.1:8888/search").expect("url")),
        };
        let tools = optional_tools(&limits, &optional);
        let names: Vec<_> = tools.iter().map(|t| (t.name(), t.read_only())).collect();
        assert_eq!(names, [("ipython", false), ("web_search", true)]);
        let only_search = OptionalTools { python: None, ..optional };
        let tools = optional_tools(&limits, &only_search);
        let names: Vec<_> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["web_search"]);
    }

    #[tokio::test]
    async fn bad_arguments_name_the_field() {
        let (_dir, ws) = workspace();
        let tools = builtin_tools(ToolLimits::default());
        let by_name = |n: &str| tools.iter().find(|t| t.name() == n).expect("tool").as_ref();
        let cases = [
            ("bash", json!({}), "command"),
            ("bash", json!({"command": 3}), "command"),
            ("bash", json!({"command": "true", "timeout": "soon"}), "timeout"),
            ("read", json!({"path": "a", "offset": 0}), "offset"),
            ("read", json!({"path": ["a"]}), "path"),
            ("write", json!({"path": "a"}), "content"),
            ("edit", json!({"path": "a", "oldText": "x"}), "newText"),
            ("grep", json!({"pattern": "x", "ignoreCase": 2}), "ignoreCase"),
            ("glob", json!({}), "pattern"),
            ("ls", json!({"path": 1}), "path"),
            ("ls", json!("not an object"), "object"),
        ];
        for (tool, args, field) in cases {
            let out = run(by_name(tool), &ws, args.clone()).await;
            assert!(out.is_error, "{tool} {args}");
            assert!(out.text.contains(field), "{tool} {args}: {}", out.text);
        }
    }
}
