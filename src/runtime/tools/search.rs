//! The `grep` and `glob` tools: gitignore-aware searches of file contents and file names.
//!
//! Both walk in path order (component by component, as `Path` sorts), so a match limit keeps the first matches
//! of that order without reading the rest of the tree.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, WalkBuilder};
use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Args, Tool, ToolContext, ToolFuture, ToolLimits, ToolOutput, Workspace, display_path, looks_binary, try_arg,
};

const DEFAULT_GREP_LIMIT: usize = 100;
/// A match on a minified line would otherwise fill the context with one line.
const MAX_LINE_CHARS: usize = 500;
const MAX_GLOB_RESULTS: usize = 1000;

pub(crate) struct GrepTool {
    limits: ToolLimits,
}

impl GrepTool {
    pub(crate) fn new(limits: ToolLimits) -> Self {
        Self { limits }
    }
}

impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents in the workspace for a regular expression, skipping gitignored, hidden and binary files. \
         Prints path:line:text for each matching line."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "Regular expression (Rust regex syntax)" },
                "path": { "type": "string", "description": "Directory or file to search (default: the workspace root)" },
                "glob": { "type": "string", "description": "Only search files matching this glob, e.g. *.rs or src/**/*.ts" },
                "ignoreCase": { "type": "boolean", "description": "Match case-insensitively" },
                "limit": { "type": "integer", "minimum": 1, "description": "Most matches to return (default 100)" }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let pattern = try_arg!(args.string("pattern"));
            let path = try_arg!(args.opt_string("path")).unwrap_or(".");
            let glob = try_arg!(args.opt_string("glob"));
            let ignore_case = try_arg!(args.opt_bool("ignoreCase")).unwrap_or(false);
            let limit = try_arg!(args.opt_count("limit", 1)).unwrap_or(DEFAULT_GREP_LIMIT);
            let regex = match RegexBuilder::new(pattern).case_insensitive(ignore_case).build() {
                Ok(regex) => regex,
                Err(e) => return ToolOutput::error(format!("Invalid regex: {e}")),
            };
            let filter = match glob.map(PathFilter::new).transpose() {
                Ok(filter) => filter,
                Err(message) => return ToolOutput::error(message),
            };
            let search = try_arg!(existing(ctx.workspace, path));
            let job = GrepJob {
                workspace: ctx.workspace.clone(),
                search,
                regex,
                filter,
                limit,
                max_bytes: self.limits.max_output_bytes,
                cancel: ctx.cancel.clone(),
            };
            run_blocking(&ctx.cancel, move || job.run()).await
        })
    }
}

pub(crate) struct GlobTool;

impl Tool for GlobTool {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Find files in the workspace whose path matches a glob pattern such as **/*.rs or src/**/*.ts, \
         skipping gitignored and hidden files. A pattern without / matches file names at any depth."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "Glob pattern, relative to path" },
                "path": { "type": "string", "description": "Directory to search (default: the workspace root)" }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let pattern = try_arg!(args.string("pattern"));
            let path = try_arg!(args.opt_string("path")).unwrap_or(".");
            let filter = try_arg!(PathFilter::new(pattern));
            let search = try_arg!(existing(ctx.workspace, path));
            let workspace = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            run_blocking(&ctx.cancel, move || glob_files(&workspace, &search, &filter, &cancel)).await
        })
    }
}

/// Resolves `path` and checks that it exists.
fn existing(workspace: &Workspace, path: &str) -> Result<PathBuf, String> {
    let resolved = workspace.resolve(path)?;
    if resolved.exists() {
        Ok(resolved)
    } else {
        Err(format!("Path not found: {}", display_path(workspace, &resolved)))
    }
}

/// Runs a walk off the async threads; an abort returns at once and the walk stops at its next entry.
async fn run_blocking(cancel: &CancellationToken, job: impl FnOnce() -> ToolOutput + Send + 'static) -> ToolOutput {
    let handle = tokio::task::spawn_blocking(job);
    tokio::select! {
        result = handle => result.unwrap_or_else(|e| ToolOutput::error(format!("Search failed: {e}"))),
        _ = cancel.cancelled() => ToolOutput::error("Search aborted"),
    }
}

/// A glob on paths relative to the search root; without a `/` it matches the file name alone, as in ripgrep.
struct PathFilter {
    matcher: GlobMatcher,
    on_name: bool,
}

impl PathFilter {
    fn new(pattern: &str) -> Result<Self, String> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("Invalid glob pattern {pattern:?}: {e}"))?;
        Ok(Self { matcher: glob.compile_matcher(), on_name: !pattern.contains('/') })
    }

    fn matches(&self, search_root: &Path, path: &Path) -> bool {
        if self.on_name {
            return path.file_name().is_some_and(|name| self.matcher.is_match(name));
        }
        let rel = path.strip_prefix(search_root).unwrap_or(path);
        self.matcher.is_match(rel)
    }
}

/// Regular files under `root` in path order, minus ignored and hidden ones; `.git` is never entered.
fn walk_files(root: &Path) -> impl Iterator<Item = DirEntry> {
    WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
}

struct GrepJob {
    workspace: Workspace,
    search: PathBuf,
    regex: Regex,
    filter: Option<PathFilter>,
    limit: usize,
    max_bytes: usize,
    cancel: CancellationToken,
}

impl GrepJob {
    fn run(self) -> ToolOutput {
        let mut lines: Vec<String> = Vec::new();
        let mut bytes = 0;
        let mut cut = false;
        'files: for entry in walk_files(&self.search) {
            if self.cancel.is_cancelled() {
                return ToolOutput::error("Search aborted");
            }
            let path = entry.path();
            if self.filter.as_ref().is_some_and(|f| !f.matches(&self.search, path)) {
                continue;
            }
            let Ok(content) = std::fs::read(path) else { continue };
            if looks_binary(&content) {
                continue;
            }
            let content = String::from_utf8_lossy(&content);
            let shown_path = display_path(&self.workspace, path);
            for (i, line) in content.lines().enumerate() {
                if !self.regex.is_match(line) {
                    continue;
                }
                let line = format!("{shown_path}:{}:{}", i + 1, clip(line));
                if lines.len() == self.limit || bytes + line.len() + 1 > self.max_bytes {
                    cut = true;
                    break 'files;
                }
                bytes += line.len() + 1;
                lines.push(line);
            }
        }
        if lines.is_empty() {
            return ToolOutput::ok("No matches found");
        }
        let mut text = lines.join("\n");
        if cut {
            text.push_str(&format!("\n\n[Showing the first {} matches]", lines.len()));
        }
        ToolOutput::ok(text)
    }
}

fn clip(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}… [line truncated]", &line[..end]).into(),
        None => line.into(),
    }
}

fn glob_files(workspace: &Workspace, search: &Path, filter: &PathFilter, cancel: &CancellationToken) -> ToolOutput {
    let mut found = Vec::new();
    for entry in walk_files(search) {
        if cancel.is_cancelled() {
            return ToolOutput::error("Search aborted");
        }
        if filter.matches(search, entry.path()) {
            if found.len() == MAX_GLOB_RESULTS {
                let mut text = found.join("\n");
                text.push_str(&format!("\n\n[Showing the first {MAX_GLOB_RESULTS} files]"));
                return ToolOutput::ok(text);
            }
            found.push(display_path(workspace, entry.path()));
        }
    }
    if found.is_empty() { ToolOutput::ok("No files found") } else { ToolOutput::ok(found.join("\n")) }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn put(ws: &Workspace, path: &str, content: &str) {
        let full = ws.root().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("dirs");
        std::fs::write(full, content).expect("write");
    }

    fn tree() -> (tempfile::TempDir, Workspace) {
        let (dir, ws) = workspace();
        put(&ws, ".gitignore", "target/\n*.log\n");
        put(&ws, "src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
        put(&ws, "src/lib/util.rs", "// Hello from util\npub fn hello() {}\n");
        put(&ws, "src/notes.txt", "hello notes\n");
        put(&ws, "README.md", "say hello\n");
        put(&ws, "target/debug/out.rs", "hello built\n");
        put(&ws, "run.log", "hello log\n");
        put(&ws, ".hidden/h.rs", "hello hidden\n");
        put(&ws, ".git/config", "hello git\n");
        std::fs::write(ws.root().join("bin.dat"), b"hello\0binary").expect("write");
        (dir, ws)
    }

    fn grep() -> GrepTool {
        GrepTool::new(ToolLimits::default())
    }

    #[tokio::test]
    async fn grep_respects_gitignore_hidden_and_binary() {
        let (_dir, ws) = tree();
        let out = run(&grep(), &ws, json!({"pattern": "hello"})).await;
        assert_eq!(
            out,
            ToolOutput::ok(
                "README.md:1:say hello\nsrc/lib/util.rs:2:pub fn hello() {}\nsrc/main.rs:2:    println!(\"hello\");\nsrc/notes.txt:1:hello notes"
            )
        );
    }

    #[tokio::test]
    async fn grep_glob_case_and_path() {
        let (_dir, ws) = tree();
        let out = run(&grep(), &ws, json!({"pattern": "HELLO", "glob": "*.rs", "ignoreCase": true})).await;
        assert_eq!(
            out.text,
            "src/lib/util.rs:1:// Hello from util\nsrc/lib/util.rs:2:pub fn hello() {}\nsrc/main.rs:2:    println!(\"hello\");"
        );
        let out = run(&grep(), &ws, json!({"pattern": "hello", "path": "src/lib"})).await;
        assert_eq!(out.text, "src/lib/util.rs:2:pub fn hello() {}");
        let out = run(&grep(), &ws, json!({"pattern": "hello", "path": "src/notes.txt"})).await;
        assert_eq!(out.text, "src/notes.txt:1:hello notes");
        let out = run(&grep(), &ws, json!({"pattern": "hello", "glob": "src/**/*.rs"})).await;
        assert_eq!(out.text, "src/lib/util.rs:2:pub fn hello() {}\nsrc/main.rs:2:    println!(\"hello\");");
    }

    #[tokio::test]
    async fn grep_limit_no_match_and_bad_regex() {
        let (_dir, ws) = tree();
        let out = run(&grep(), &ws, json!({"pattern": "hello", "limit": 2})).await;
        assert_eq!(
            out.text,
            "README.md:1:say hello\nsrc/lib/util.rs:2:pub fn hello() {}\n\n[Showing the first 2 matches]"
        );
        let out = run(&grep(), &ws, json!({"pattern": "hello", "limit": 4})).await;
        assert!(!out.text.contains("[Showing"), "{}", out.text);
        assert_eq!(run(&grep(), &ws, json!({"pattern": "zzz"})).await, ToolOutput::ok("No matches found"));
        let out = run(&grep(), &ws, json!({"pattern": "("})).await;
        assert!(out.is_error && out.text.starts_with("Invalid regex"), "{out:?}");
        let out = run(&grep(), &ws, json!({"pattern": "x", "path": "nope"})).await;
        assert!(out.is_error && out.text.contains("not found"), "{out:?}");
    }

    #[tokio::test]
    async fn glob_lists_matching_files() {
        let (_dir, ws) = tree();
        let out = run(&GlobTool, &ws, json!({"pattern": "src/**/*.rs"})).await;
        assert_eq!(out, ToolOutput::ok("src/lib/util.rs\nsrc/main.rs"));
        let out = run(&GlobTool, &ws, json!({"pattern": "*.rs"})).await;
        assert_eq!(out.text, "src/lib/util.rs\nsrc/main.rs");
        let out = run(&GlobTool, &ws, json!({"pattern": "*.rs", "path": "src/lib"})).await;
        assert_eq!(out.text, "src/lib/util.rs");
        let out = run(&GlobTool, &ws, json!({"pattern": "*"})).await;
        assert_eq!(out.text, "README.md\nbin.dat\nsrc/lib/util.rs\nsrc/main.rs\nsrc/notes.txt");
        assert_eq!(run(&GlobTool, &ws, json!({"pattern": "**/*.py"})).await, ToolOutput::ok("No files found"));
        let out = run(&GlobTool, &ws, json!({"pattern": "a[", "path": "."})).await;
        assert!(out.is_error && out.text.contains("Invalid glob"), "{out:?}");
    }
}
