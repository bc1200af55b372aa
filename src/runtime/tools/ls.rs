//! The `ls` tool: the entries of one directory.

use serde_json::{Value, json};

use super::{Args, Tool, ToolContext, ToolFuture, ToolOutput, display_path, try_arg};

/// Enough for any directory a person would browse; more would only flood the context.
const MAX_ENTRIES: usize = 1000;

pub(crate) struct LsTool;

impl Tool for LsTool {
    fn name(&self) -> &'static str {
        "ls"
    }

    fn description(&self) -> &'static str {
        "List the entries of a directory in the workspace, sorted, with a trailing / on directories."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Directory to list, relative to the workspace root (default: the root)" }
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let path = try_arg!(args.opt_string("path")).unwrap_or(".");
            let resolved = try_arg!(ctx.workspace.resolve(path));
            let shown_path = display_path(ctx.workspace, &resolved);
            let mut dir = match tokio::fs::read_dir(&resolved).await {
                Ok(dir) => dir,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return ToolOutput::error(format!("Directory not found: {shown_path}"));
                }
                Err(_) if resolved.is_file() => return ToolOutput::error(format!("{shown_path} is not a directory")),
                Err(e) => return ToolOutput::error(format!("Cannot list {shown_path}: {e}")),
            };
            let mut entries = Vec::new();
            loop {
                match dir.next_entry().await {
                    Ok(Some(entry)) => {
                        let mut name = entry.file_name().to_string_lossy().into_owned();
                        // Following symlinks here only reads a type: a link to a directory lists like one.
                        if tokio::fs::metadata(entry.path()).await.is_ok_and(|m| m.is_dir()) {
                            name.push('/');
                        }
                        entries.push(name);
                    }
                    Ok(None) => break,
                    Err(e) => return ToolOutput::error(format!("Cannot list {shown_path}: {e}")),
                }
            }
            if entries.is_empty() {
                return ToolOutput::ok("(empty directory)");
            }
            entries.sort();
            let total = entries.len();
            entries.truncate(MAX_ENTRIES);
            let mut text = entries.join("\n");
            if total > MAX_ENTRIES {
                text.push_str(&format!("\n\n[Showing the first {MAX_ENTRIES} of {total} entries]"));
            }
            ToolOutput::ok(text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn lists_sorted_with_directory_slashes() {
        let (_dir, ws) = workspace();
        std::fs::create_dir_all(ws.root().join("src/inner")).expect("dirs");
        std::fs::write(ws.root().join("b.txt"), "").expect("write");
        std::fs::write(ws.root().join(".hidden"), "").expect("write");
        std::fs::write(ws.root().join("src/main.rs"), "").expect("write");
        assert_eq!(run(&LsTool, &ws, json!({})).await, ToolOutput::ok(".hidden\nb.txt\nsrc/"));
        assert_eq!(run(&LsTool, &ws, json!({"path": "src"})).await, ToolOutput::ok("inner/\nmain.rs"));
        assert_eq!(run(&LsTool, &ws, json!({"path": "src/inner"})).await, ToolOutput::ok("(empty directory)"));
    }

    #[tokio::test]
    async fn errors() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("f"), "").expect("write");
        for (path, needle) in [("nope", "Directory not found: nope"), ("f", "not a directory"), ("..", "outside")] {
            let out = run(&LsTool, &ws, json!({"path": path})).await;
            assert!(out.is_error && out.text.contains(needle), "{path}: {out:?}");
        }
    }
}
