//! The `edit` tool: replaces one unique occurrence of a text in a file and returns the unified diff.

use std::time::Duration;

use serde_json::{Value, json};
use similar::{DiffTag, TextDiff};

use super::{Args, Tool, ToolContext, ToolFuture, ToolOutput, display_path, looks_binary, try_arg};

pub(crate) struct EditTool;

impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Edit a file by replacing an exact text with a new one. oldText must occur exactly once in the file; \
         include enough surrounding lines to make it unique."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path of the file, relative to the workspace root" },
                "oldText": { "type": "string", "description": "Exact text to replace (must occur exactly once)" },
                "newText": { "type": "string", "description": "Text to put in its place" }
            },
            "required": ["path", "oldText", "newText"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let path = try_arg!(args.string("path"));
            let old_text = try_arg!(args.string("oldText"));
            let new_text = try_arg!(args.string("newText"));
            if old_text.is_empty() {
                return ToolOutput::error("field `oldText` must not be empty");
            }
            let resolved = try_arg!(ctx.workspace.resolve(path));
            let shown_path = display_path(ctx.workspace, &resolved);
            let bytes = match tokio::fs::read(&resolved).await {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return ToolOutput::error(format!("File not found: {shown_path}"));
                }
                Err(e) => return ToolOutput::error(format!("Cannot read {shown_path}: {e}")),
            };
            let Ok(content) = String::from_utf8(bytes) else {
                return ToolOutput::error(format!("{shown_path} is not a UTF-8 text file"));
            };
            if looks_binary(content.as_bytes()) {
                return ToolOutput::error(format!("{shown_path} looks like a binary file"));
            }
            let updated = match replace_unique(&content, old_text, new_text, &shown_path) {
                Ok(updated) => updated,
                Err(message) => return ToolOutput::error(message),
            };
            if updated == content {
                return ToolOutput::error(format!("oldText and newText are identical; {shown_path} is unchanged"));
            }
            if let Err(e) = tokio::fs::write(&resolved, &updated).await {
                return ToolOutput::error(format!("Cannot write {shown_path}: {e}"));
            }
            let (diff, first_changed_line) = unified_diff(&content, &updated, &shown_path);
            ToolOutput::ok(format!("Successfully replaced 1 block(s) in {shown_path}."))
                .with_details(json!({ "diff": diff, "firstChangedLine": first_changed_line }))
        })
    }
}

/// Replaces the one occurrence of `old` in `content`.
///
/// Models write `\n` even when the file uses `\r\n`; when the exact text is absent, the CRLF form of both texts is
/// tried so such edits still apply and keep the file's line endings.
fn replace_unique(content: &str, old: &str, new: &str, path: &str) -> Result<String, String> {
    let attempt = |old: &str, new: &str| match content.matches(old).count() {
        0 => None,
        1 => Some(Ok(content.replacen(old, new, 1))),
        k => Some(Err(format!("oldText occurs {k} times in {path}; include more context to make it unique"))),
    };
    if let Some(result) = attempt(old, new) {
        return result;
    }
    if content.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        if let Some(result) = attempt(&crlf(old), &crlf(new)) {
            return result;
        }
    }
    Err(format!("oldText not found in {path}"))
}

/// The unified diff (3 lines of context) and the 1-based line of the new file where the change starts.
pub(crate) fn unified_diff(old: &str, new: &str, path: &str) -> (String, usize) {
    let diff = TextDiff::configure().timeout(Duration::from_secs(2)).diff_lines(old, new);
    let first_changed = diff.ops().iter().find(|op| op.tag() != DiffTag::Equal).map_or(0, |op| op.new_range().start);
    let text = diff.unified_diff().context_radius(3).header(&format!("a/{path}"), &format!("b/{path}")).to_string();
    (text, first_changed + 1)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn unique_replacement_with_diff() {
        let (_dir, ws) = workspace();
        std::fs::create_dir(ws.root().join("src")).expect("dir");
        std::fs::write(ws.root().join("src/f.txt"), numbered(10)).expect("write");
        let out = run(
            &EditTool,
            &ws,
            json!({"path": "src/f.txt", "oldText": "line 5\nline 6\n", "newText": "line 5\nFIVE\n"}),
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "Successfully replaced 1 block(s) in src/f.txt.");
        let expected = numbered(10).replace("line 6\n", "FIVE\n");
        assert_eq!(std::fs::read_to_string(ws.root().join("src/f.txt")).expect("read"), expected);
        let details = out.details.expect("details");
        assert_eq!(details["firstChangedLine"], 6);
        assert_eq!(
            details["diff"],
            "--- a/src/f.txt\n+++ b/src/f.txt\n@@ -3,7 +3,7 @@\n line 3\n line 4\n line 5\n-line 6\n+FIVE\n line 7\n line 8\n line 9\n"
        );
    }

    #[tokio::test]
    async fn missing_and_ambiguous() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("f.txt"), "a\nb\na\n").expect("write");
        let out = run(&EditTool, &ws, json!({"path": "f.txt", "oldText": "zzz", "newText": "y"})).await;
        assert_eq!(out, ToolOutput::error("oldText not found in f.txt"));
        let out = run(&EditTool, &ws, json!({"path": "f.txt", "oldText": "a\n", "newText": "y"})).await;
        assert_eq!(out, ToolOutput::error("oldText occurs 2 times in f.txt; include more context to make it unique"));
        assert_eq!(std::fs::read_to_string(ws.root().join("f.txt")).expect("read"), "a\nb\na\n");
        let out = run(&EditTool, &ws, json!({"path": "nope.txt", "oldText": "a", "newText": "b"})).await;
        assert!(out.is_error && out.text.contains("not found"), "{out:?}");
    }

    #[tokio::test]
    async fn crlf_files_accept_lf_edits() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("w.txt"), "one\r\ntwo\r\nthree\r\n").expect("write");
        let out = run(&EditTool, &ws, json!({"path": "w.txt", "oldText": "one\ntwo", "newText": "1\n2"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(std::fs::read_to_string(ws.root().join("w.txt")).expect("read"), "1\r\n2\r\nthree\r\n");
        assert_eq!(out.details.expect("details")["firstChangedLine"], 1);
    }

    #[tokio::test]
    async fn first_changed_line_skips_unchanged_lines_inside_old_text() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("f"), numbered(5)).expect("write");
        let out =
            run(&EditTool, &ws, json!({"path": "f", "oldText": "line 2\nline 3", "newText": "line 2\nthree"})).await;
        assert_eq!(out.details.expect("details")["firstChangedLine"], 3);
    }
}
