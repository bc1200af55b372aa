//! Tool kinds and their normalized outputs (DESIGN.md §2 "Messages and parts"): the one place where a tool's name is
//! parsed (from the part type `tool-<Name>` or from a runtime's tool name) and where the output shapes of the
//! built-in tools are written down, with the one checklist item type that `todo_write`, `plan` frames and the
//! checklist row share.
//!
//! A part keeps its `input` and `output` as JSON on the wire (a runtime may send any shape, and nothing it sent is
//! lost); the typed outputs here are views of that JSON: reading one never fails loudly, it gives `None` when the
//! JSON has another shape, and the renderer falls back to its generic view.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// What a tool call is, parsed once from its name. Built-in kinds have a fixed part name; MCP tools keep theirs
/// (`mcp__<server>__<tool>`); any other name is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolKind {
    Bash,
    /// Our `ipython` tool: a fresh Python per call, reported like Bash.
    IPython,
    Read,
    Write,
    Edit,
    Grep,
    Glob,
    Ls,
    TodoWrite,
    PlanWrite,
    WebSearch,
    Question,
    /// A sub-agent (our `task` tool).
    Task,
    /// Another runtime's sub-agent tool, drawn as a Task.
    Agent,
    /// Our `chart` tool (its output's `chart` is drawn; so is any tool's).
    Chart,
    /// The legacy `tool-Thinking` part of runtimes that report thinking as a tool call.
    Thinking,
    /// `mcp__<server>__<tool>`: a tool of an MCP server.
    Mcp {
        server: String,
        tool: String,
    },
    /// Any other tool, by its part name.
    Other(String),
}

/// The prefix of an MCP tool's name, in the runtime and on the wire alike.
pub const MCP_PREFIX: &str = "mcp__";

impl ToolKind {
    /// Every kind with a fixed name, for tests and tables.
    pub const BUILTINS: [ToolKind; 16] = [
        ToolKind::Bash,
        ToolKind::IPython,
        ToolKind::Read,
        ToolKind::Write,
        ToolKind::Edit,
        ToolKind::Grep,
        ToolKind::Glob,
        ToolKind::Ls,
        ToolKind::TodoWrite,
        ToolKind::PlanWrite,
        ToolKind::WebSearch,
        ToolKind::Question,
        ToolKind::Task,
        ToolKind::Agent,
        ToolKind::Chart,
        ToolKind::Thinking,
    ];

    /// The kind of a part named `name` (the `<Name>` of `tool-<Name>`). Exact names only, so that
    /// `ToolKind::from_part_name(n).part_name() == n` for every `n`: the wire never changes by a round trip.
    pub fn from_part_name(name: &str) -> ToolKind {
        match name {
            "Bash" => ToolKind::Bash,
            "IPython" => ToolKind::IPython,
            "Read" => ToolKind::Read,
            "Write" => ToolKind::Write,
            "Edit" => ToolKind::Edit,
            "Grep" => ToolKind::Grep,
            "Glob" => ToolKind::Glob,
            "Ls" => ToolKind::Ls,
            "TodoWrite" => ToolKind::TodoWrite,
            "PlanWrite" => ToolKind::PlanWrite,
            "WebSearch" => ToolKind::WebSearch,
            "Question" => ToolKind::Question,
            "Task" => ToolKind::Task,
            "Agent" => ToolKind::Agent,
            "Chart" => ToolKind::Chart,
            "Thinking" => ToolKind::Thinking,
            other => ToolKind::mcp(other).unwrap_or_else(|| ToolKind::Other(other.to_owned())),
        }
    }

    /// The kind of a runtime's tool name (`bash`, `todo_write`, `ask_user`, `mcp__srv__tool`, …): the names of
    /// DESIGN.md §2's table, MCP names unchanged, names that start upper-case as they are, and any other name in
    /// PascalCase (`web_fetch` → `Other("WebFetch")`).
    pub fn from_runtime_name(name: &str) -> ToolKind {
        match name {
            "bash" => ToolKind::Bash,
            "ipython" => ToolKind::IPython,
            "read" => ToolKind::Read,
            "write" => ToolKind::Write,
            "edit" => ToolKind::Edit,
            "grep" => ToolKind::Grep,
            // pi calls its glob tool `find`.
            "glob" | "find" => ToolKind::Glob,
            "ls" => ToolKind::Ls,
            "todo_write" => ToolKind::TodoWrite,
            "plan_write" => ToolKind::PlanWrite,
            "web_search" => ToolKind::WebSearch,
            "question" | "ask_user" => ToolKind::Question,
            "task" => ToolKind::Task,
            "chart" => ToolKind::Chart,
            // An MCP name without a server and a tool is still kept as it is, never PascalCased.
            mcp if mcp.starts_with(MCP_PREFIX) => ToolKind::from_part_name(mcp),
            upper if upper.chars().next().is_some_and(char::is_uppercase) => ToolKind::from_part_name(upper),
            other => ToolKind::from_part_name(&pascal_case(other)),
        }
    }

    fn mcp(name: &str) -> Option<ToolKind> {
        // Server names never contain `__` (checked at startup), tool names may.
        let (server, tool) = name.strip_prefix(MCP_PREFIX)?.split_once("__")?;
        (!server.is_empty() && !tool.is_empty())
            .then(|| ToolKind::Mcp { server: server.to_owned(), tool: tool.to_owned() })
    }

    /// The `<Name>` of the part type `tool-<Name>`.
    pub fn part_name(&self) -> Cow<'_, str> {
        let name = match self {
            ToolKind::Bash => "Bash",
            ToolKind::IPython => "IPython",
            ToolKind::Read => "Read",
            ToolKind::Write => "Write",
            ToolKind::Edit => "Edit",
            ToolKind::Grep => "Grep",
            ToolKind::Glob => "Glob",
            ToolKind::Ls => "Ls",
            ToolKind::TodoWrite => "TodoWrite",
            ToolKind::PlanWrite => "PlanWrite",
            ToolKind::WebSearch => "WebSearch",
            ToolKind::Question => "Question",
            ToolKind::Task => "Task",
            ToolKind::Agent => "Agent",
            ToolKind::Chart => "Chart",
            ToolKind::Thinking => "Thinking",
            ToolKind::Mcp { server, tool } => return Cow::Owned(format!("{MCP_PREFIX}{server}__{tool}")),
            ToolKind::Other(name) => name,
        };
        Cow::Borrowed(name)
    }

    /// The name chatwire's own agent gives the tool, for the kinds it has.
    pub fn runtime_name(&self) -> Option<&'static str> {
        match self {
            ToolKind::Bash => Some("bash"),
            ToolKind::IPython => Some("ipython"),
            ToolKind::Read => Some("read"),
            ToolKind::Write => Some("write"),
            ToolKind::Edit => Some("edit"),
            ToolKind::Grep => Some("grep"),
            ToolKind::Glob => Some("glob"),
            ToolKind::Ls => Some("ls"),
            ToolKind::TodoWrite => Some("todo_write"),
            ToolKind::WebSearch => Some("web_search"),
            ToolKind::Question => Some("question"),
            ToolKind::Task => Some("task"),
            ToolKind::Chart => Some("chart"),
            ToolKind::PlanWrite | ToolKind::Agent | ToolKind::Thinking | ToolKind::Mcp { .. } | ToolKind::Other(_) => {
                None
            }
        }
    }

    /// A checklist (TodoWrite, PlanWrite): its output and arguments hold `todos`.
    pub fn is_checklist(&self) -> bool {
        matches!(self, ToolKind::TodoWrite | ToolKind::PlanWrite)
    }

    /// A command runner (Bash, IPython): `output`, `exitCode`, truncation.
    pub fn is_command(&self) -> bool {
        matches!(self, ToolKind::Bash | ToolKind::IPython)
    }
}

impl From<&str> for ToolKind {
    /// From a part name, as [`ToolKind::from_part_name`].
    fn from(name: &str) -> ToolKind {
        ToolKind::from_part_name(name)
    }
}

impl From<&String> for ToolKind {
    fn from(name: &String) -> ToolKind {
        ToolKind::from_part_name(name)
    }
}

impl From<String> for ToolKind {
    fn from(name: String) -> ToolKind {
        ToolKind::from_part_name(&name)
    }
}

impl std::fmt::Display for ToolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.part_name())
    }
}

/// snake_case or kebab-case → PascalCase; nothing else is changed.
fn pascal_case(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// Where a checklist item is. The wire names are `todo_write`'s: `pending`, `in_progress`, `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    pub const ALL: [TodoStatus; 3] = [TodoStatus::Pending, TodoStatus::InProgress, TodoStatus::Completed];

    /// A status as `todo_write` takes it; `None` for any other word (the tool refuses it).
    pub fn parse(status: &str) -> Option<TodoStatus> {
        match status {
            "pending" => Some(TodoStatus::Pending),
            "in_progress" => Some(TodoStatus::InProgress),
            "completed" => Some(TodoStatus::Completed),
            _ => None,
        }
    }

    /// A status as other runtimes' checklists say it too (`done`, `in-progress`, `active`); anything else, or none,
    /// is pending.
    pub fn parse_lenient(status: Option<&str>) -> TodoStatus {
        match status {
            Some("completed" | "done") => TodoStatus::Completed,
            Some("in_progress" | "in-progress" | "active") => TodoStatus::InProgress,
            Some(_) | None => TodoStatus::Pending,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

/// One item of a checklist: what `todo_write` takes, what a TodoWrite row draws, and, numbered, a plan step
/// ([`crate::protocol::PlanTodo`] is its shape in `plan` frames).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoItem {
    pub text: String,
    pub status: TodoStatus,
}

impl TodoItem {
    pub fn new(text: impl Into<String>, status: TodoStatus) -> Self {
        TodoItem { text: text.into(), status }
    }

    /// An item exactly as `todo_write` takes it: a `text` and a known `status`.
    pub fn parse_strict(item: &Value) -> Option<TodoItem> {
        let text = item.get("text")?.as_str()?;
        let status = TodoStatus::parse(item.get("status")?.as_str()?)?;
        Some(TodoItem::new(text, status))
    }

    /// An item of any runtime's checklist: its text under `text`, `content` or `step`, its status as a word or as
    /// `completed: bool`; `None` without a text.
    pub fn parse_lenient(item: &Value) -> Option<TodoItem> {
        let text = ["text", "content", "step"].iter().find_map(|key| item.get(*key).and_then(Value::as_str))?;
        let status = match item.get("status").and_then(Value::as_str) {
            Some(status) => TodoStatus::parse_lenient(Some(status)),
            None => match item.get("completed").and_then(Value::as_bool) {
                Some(true) => TodoStatus::Completed,
                Some(false) | None => TodoStatus::Pending,
            },
        };
        Some(TodoItem::new(text, status))
    }

    pub fn is_completed(&self) -> bool {
        self.status == TodoStatus::Completed
    }

    /// `{ text, status }`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("text".into(), Value::String(self.text.clone()));
        map.insert("status".into(), Value::String(self.status.as_str().into()));
        Value::Object(map)
    }
}

/// The items of a `todos` array, read leniently (items without a text are left out); `None` when it is no array.
pub fn checklist(todos: &Value) -> Option<Vec<TodoItem>> {
    Some(todos.as_array()?.iter().filter_map(TodoItem::parse_lenient).collect())
}

/// The typed view of a tool output: built by the mapper, read by the renderers.
pub trait ToolOutputView<'a>: Sized {
    /// The view of `output`; `None` when it has another shape.
    fn from_output(output: &'a Value) -> Option<Self>;
    /// The normalized output, field order as on the wire.
    fn into_output(self) -> Value;
}

fn object_of(value: &Value) -> Option<&Map<String, Value>> {
    value.as_object()
}

/// Bash and IPython: `{ output, exitCode?, truncated?, totalBytes?, fullOutputPath? }`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BashOutput<'a> {
    pub output: Cow<'a, str>,
    /// Absent while the command runs, and for a command that was stopped.
    pub exit_code: Option<i64>,
    pub truncated: bool,
    /// The whole output's size when it was truncated.
    pub total_bytes: Option<u64>,
    /// Where the whole output was saved when it was truncated.
    pub full_output_path: Option<Cow<'a, str>>,
}

impl<'a> ToolOutputView<'a> for BashOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let map = object_of(output)?;
        Some(BashOutput {
            output: Cow::Borrowed(map.get("output")?.as_str()?),
            exit_code: map.get("exitCode").and_then(Value::as_i64),
            truncated: map.get("truncated").and_then(Value::as_bool) == Some(true),
            total_bytes: map.get("totalBytes").and_then(Value::as_u64),
            full_output_path: map.get("fullOutputPath").and_then(Value::as_str).map(Cow::Borrowed),
        })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("output".into(), Value::String(self.output.into_owned()));
        if let Some(code) = self.exit_code {
            map.insert("exitCode".into(), code.into());
        }
        if self.truncated {
            map.insert("truncated".into(), true.into());
        }
        if let Some(total) = self.total_bytes {
            map.insert("totalBytes".into(), total.into());
        }
        if let Some(path) = self.full_output_path {
            map.insert("fullOutputPath".into(), Value::String(path.into_owned()));
        }
        Value::Object(map)
    }
}

/// Read: `{ content, truncated? }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput<'a> {
    pub content: Cow<'a, str>,
    pub truncated: bool,
}

impl<'a> ToolOutputView<'a> for ReadOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let map = object_of(output)?;
        Some(ReadOutput {
            content: Cow::Borrowed(map.get("content")?.as_str()?),
            truncated: map.get("truncated").and_then(Value::as_bool) == Some(true),
        })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("content".into(), Value::String(self.content.into_owned()));
        if self.truncated {
            map.insert("truncated".into(), true.into());
        }
        Value::Object(map)
    }
}

/// Write: `{ bytes }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutput {
    pub bytes: u64,
}

impl<'a> ToolOutputView<'a> for WriteOutput {
    fn from_output(output: &'a Value) -> Option<Self> {
        Some(WriteOutput { bytes: object_of(output)?.get("bytes")?.as_u64()? })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("bytes".into(), self.bytes.into());
        Value::Object(map)
    }
}

/// Edit: `{ diff, firstChangedLine? }`; the diff is unified for our agent, pi's own numbered format for pi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutput<'a> {
    pub diff: Cow<'a, str>,
    pub first_changed_line: Option<u64>,
}

impl<'a> ToolOutputView<'a> for EditOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let map = object_of(output)?;
        Some(EditOutput {
            diff: Cow::Borrowed(map.get("diff")?.as_str()?),
            first_changed_line: map.get("firstChangedLine").and_then(Value::as_u64),
        })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("diff".into(), Value::String(self.diff.into_owned()));
        if let Some(line) = self.first_changed_line {
            map.insert("firstChangedLine".into(), line.into());
        }
        Value::Object(map)
    }
}

/// Grep, Glob and Ls: `{ matches: [line, …] }` (items that are not strings are left out when read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchesOutput<'a> {
    pub matches: Vec<Cow<'a, str>>,
}

impl<'a> ToolOutputView<'a> for MatchesOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let matches = object_of(output)?.get("matches")?.as_array()?;
        Some(MatchesOutput { matches: matches.iter().filter_map(Value::as_str).map(Cow::Borrowed).collect() })
    }

    fn into_output(self) -> Value {
        let matches = self.matches.into_iter().map(|line| Value::String(line.into_owned())).collect();
        let mut map = Map::new();
        map.insert("matches".into(), Value::Array(matches));
        Value::Object(map)
    }
}

/// TodoWrite and PlanWrite: `{ todos: [{ text, status }] }`, read leniently (see [`TodoItem::parse_lenient`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodosOutput {
    pub todos: Vec<TodoItem>,
}

impl<'a> ToolOutputView<'a> for TodosOutput {
    fn from_output(output: &'a Value) -> Option<Self> {
        Some(TodosOutput { todos: checklist(object_of(output)?.get("todos")?)? })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("todos".into(), Value::Array(self.todos.iter().map(TodoItem::to_value).collect()));
        Value::Object(map)
    }
}

/// Question: `{ answer }`, the text of the answer (option ids for a pick; see the question card).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOutput<'a> {
    pub answer: Cow<'a, str>,
}

impl<'a> ToolOutputView<'a> for QuestionOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        Some(QuestionOutput { answer: Cow::Borrowed(object_of(output)?.get("answer")?.as_str()?) })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("answer".into(), Value::String(self.answer.into_owned()));
        Value::Object(map)
    }
}

/// One result of a web search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult<'a> {
    pub title: Cow<'a, str>,
    pub url: Cow<'a, str>,
    pub snippet: Cow<'a, str>,
}

/// WebSearch: `{ query, results: [{ title, url, snippet }] }` (a missing field of a result reads as empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSearchOutput<'a> {
    pub query: Cow<'a, str>,
    pub results: Vec<SearchResult<'a>>,
}

impl<'a> ToolOutputView<'a> for WebSearchOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let map = object_of(output)?;
        let text = |result: &'a Value, field: &str| {
            Cow::Borrowed(result.get(field).and_then(Value::as_str).unwrap_or_default())
        };
        let results = map
            .get("results")?
            .as_array()?
            .iter()
            .map(|result| SearchResult {
                title: text(result, "title"),
                url: text(result, "url"),
                snippet: text(result, "snippet"),
            })
            .collect();
        Some(WebSearchOutput {
            query: Cow::Borrowed(map.get("query").and_then(Value::as_str).unwrap_or_default()),
            results,
        })
    }

    fn into_output(self) -> Value {
        let results = self
            .results
            .into_iter()
            .map(|result| {
                let mut item = Map::new();
                item.insert("title".into(), Value::String(result.title.into_owned()));
                item.insert("url".into(), Value::String(result.url.into_owned()));
                item.insert("snippet".into(), Value::String(result.snippet.into_owned()));
                Value::Object(item)
            })
            .collect();
        let mut map = Map::new();
        map.insert("query".into(), Value::String(self.query.into_owned()));
        map.insert("results".into(), Value::Array(results));
        Value::Object(map)
    }
}

/// The output of a tool the design does not shape (and of MCP tools): `{ text, chart?, details? }`, where `chart`
/// is a Plotly-JSON subset any tool may add (parsed by `crate::chart` where it is drawn).
#[derive(Debug, Clone, PartialEq)]
pub struct GenericOutput<'a> {
    pub text: Cow<'a, str>,
    pub chart: Option<Cow<'a, Value>>,
    pub details: Option<Cow<'a, Value>>,
}

impl<'a> ToolOutputView<'a> for GenericOutput<'a> {
    fn from_output(output: &'a Value) -> Option<Self> {
        let map = object_of(output)?;
        Some(GenericOutput {
            text: Cow::Borrowed(map.get("text")?.as_str()?),
            chart: map.get("chart").map(Cow::Borrowed),
            details: map.get("details").map(Cow::Borrowed),
        })
    }

    fn into_output(self) -> Value {
        let mut map = Map::new();
        map.insert("text".into(), Value::String(self.text.into_owned()));
        if let Some(chart) = self.chart {
            map.insert("chart".into(), chart.into_owned());
        }
        if let Some(details) = self.details {
            map.insert("details".into(), details.into_owned());
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn part_names_round_trip_exactly() {
        for kind in ToolKind::BUILTINS {
            assert_eq!(ToolKind::from_part_name(&kind.part_name()), kind);
        }
        for name in ["mcp__github__search_issues", "mcp__a__b__c", "mcp__broken", "mcp____x", "bash", "WEBSearch", ""] {
            assert_eq!(ToolKind::from_part_name(name).part_name(), name);
        }
        assert_eq!(ToolKind::from_part_name("mcp__a__b__c"), ToolKind::Mcp { server: "a".into(), tool: "b__c".into() });
        assert_eq!(ToolKind::from_part_name("mcp__broken"), ToolKind::Other("mcp__broken".into()));
    }

    #[test]
    fn runtime_names_follow_the_design_table() {
        for (raw, part) in [
            ("bash", "Bash"),
            ("read", "Read"),
            ("write", "Write"),
            ("edit", "Edit"),
            ("grep", "Grep"),
            ("glob", "Glob"),
            ("find", "Glob"),
            ("ls", "Ls"),
            ("todo_write", "TodoWrite"),
            ("plan_write", "PlanWrite"),
            ("web_search", "WebSearch"),
            ("question", "Question"),
            ("ask_user", "Question"),
            ("task", "Task"),
            ("ipython", "IPython"),
            ("chart", "Chart"),
            ("mcp__github__search_issues", "mcp__github__search_issues"),
            ("mcp__broken", "mcp__broken"),
            ("web_fetch", "WebFetch"),
            ("Task", "Task"),
            ("WEBSearch", "WEBSearch"),
        ] {
            assert_eq!(ToolKind::from_runtime_name(raw).part_name(), part, "{raw}");
        }
        for kind in ToolKind::BUILTINS {
            if let Some(name) = kind.runtime_name() {
                assert_eq!(ToolKind::from_runtime_name(name), kind, "{name}");
            }
        }
    }

    #[test]
    fn outputs_of_another_shape_are_no_view() {
        assert_eq!(BashOutput::from_output(&json!("text")), None);
        assert_eq!(BashOutput::from_output(&json!({"text": "hi"})), None);
        assert_eq!(WriteOutput::from_output(&json!({"bytes": -1})), None);
        assert_eq!(TodosOutput::from_output(&json!({"todos": {}})), None);
        let odd = json!({"output": "x", "exitCode": "2", "truncated": 1});
        let odd = BashOutput::from_output(&odd).unwrap();
        assert_eq!(odd, BashOutput { output: "x".into(), ..BashOutput::default() }, "odd fields are dropped");
    }

    #[test]
    fn typed_outputs_write_the_wire_shape() {
        let bash = BashOutput {
            output: "tail".into(),
            exit_code: Some(0),
            truncated: true,
            total_bytes: Some(9000),
            full_output_path: Some("/tmp/x.log".into()),
        };
        let value = bash.clone().into_output();
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"output":"tail","exitCode":0,"truncated":true,"totalBytes":9000,"fullOutputPath":"/tmp/x.log"}"#
        );
        assert_eq!(BashOutput::from_output(&value), Some(bash));
        let todos = TodosOutput { todos: vec![TodoItem::new("a", TodoStatus::InProgress)] };
        let value = todos.clone().into_output();
        assert_eq!(value, json!({"todos": [{"text": "a", "status": "in_progress"}]}));
        assert_eq!(TodosOutput::from_output(&value), Some(todos));
    }

    #[test]
    fn checklist_items_are_read_strictly_for_the_tool_and_leniently_for_the_row() {
        let item = json!({"content": "Read", "status": "done"});
        assert_eq!(TodoItem::parse_strict(&item), None);
        assert_eq!(TodoItem::parse_lenient(&item), Some(TodoItem::new("Read", TodoStatus::Completed)));
        assert_eq!(
            TodoItem::parse_lenient(&json!({"step": "Fix", "completed": true})),
            Some(TodoItem::new("Fix", TodoStatus::Completed))
        );
        assert_eq!(TodoItem::parse_lenient(&json!({"step": 2})), None);
        for status in TodoStatus::ALL {
            assert_eq!(TodoStatus::parse(status.as_str()), Some(status));
            assert_eq!(TodoStatus::parse_lenient(Some(status.as_str())), status);
        }
    }
}
