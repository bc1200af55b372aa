//! The `write` tool: creates or overwrites a file, creating its parent directories.

use serde_json::{Value, json};

use super::{Args, Tool, ToolContext, ToolFuture, ToolOutput, display_path, try_arg};

pub(crate) struct WriteTool;

impl Tool for WriteTool {
    fn name(&self) -> &'static str {
        "write"
    }

    fn description(&self) -> &'static str {
        "Write content to a file in the workspace, creating it and its parent directories if needed \
         and overwriting it if it exists."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path of the file, relative to the workspace root" },
                "content": { "type": "string", "description": "The whole new content of the file" }
            },
            "required": ["path", "content"],
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
            let content = try_arg!(args.string("content"));
            let resolved = try_arg!(ctx.workspace.resolve(path));
            let shown_path = display_path(ctx.workspace, &resolved);
            if resolved.is_dir() {
                return ToolOutput::error(format!("{shown_path} is a directory"));
            }
            if let Some(parent) = resolved.parent()
                && let Err(e) = tokio::fs::create_dir_all(parent).await
            {
                return ToolOutput::error(format!("Cannot create the directories for {shown_path}: {e}"));
            }
            match tokio::fs::write(&resolved, content).await {
                Ok(()) => ToolOutput::ok(format!("Successfully wrote {} bytes to {path}", content.len())),
                Err(e) => ToolOutput::error(format!("Cannot write {shown_path}: {e}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn creates_parent_directories() {
        let (_dir, ws) = workspace();
        let out = run(&WriteTool, &ws, json!({"path": "a/b/c.txt", "content": "héllo\n"})).await;
        assert_eq!(out, ToolOutput::ok("Successfully wrote 7 bytes to a/b/c.txt"));
        assert_eq!(std::fs::read_to_string(ws.root().join("a/b/c.txt")).expect("read"), "héllo\n");
        let out = run(&WriteTool, &ws, json!({"path": "a/b/c.txt", "content": ""})).await;
        assert_eq!(out.text, "Successfully wrote 0 bytes to a/b/c.txt");
        assert_eq!(std::fs::read_to_string(ws.root().join("a/b/c.txt")).expect("read"), "");
    }

    #[tokio::test]
    async fn accepts_absolute_paths_inside() {
        let (_dir, ws) = workspace();
        let abs = ws.root().join("x.txt");
        let abs = abs.to_str().expect("utf-8");
        let out = run(&WriteTool, &ws, json!({"path": abs, "content": "x"})).await;
        assert_eq!(out, ToolOutput::ok(format!("Successfully wrote 1 bytes to {abs}")));
    }

    #[tokio::test]
    async fn escapes_touch_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = super::super::Workspace::new(dir.path().join("ws")).expect("workspace");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).expect("outside");
        symlink(&outside, ws.root().join("link")).expect("symlink");
        let before = std::fs::read_dir(dir.path()).expect("list").count();
        for path in ["../x", "a/../../x", "link/x", "link/new/dir/x", outside.join("y").to_str().expect("utf-8")] {
            let out = run(&WriteTool, &ws, json!({"path": path, "content": "pwned"})).await;
            assert!(out.is_error, "{path}: {out:?}");
        }
        let out = run(&WriteTool, &ws, json!({"path": "/etc/passwd", "content": "pwned"})).await;
        assert!(out.is_error);
        assert_eq!(std::fs::read_dir(&outside).expect("list").count(), 0);
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), before);
        assert_eq!(std::fs::read_dir(ws.root()).expect("list").count(), 1);
    }
}
