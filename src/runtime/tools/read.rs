//! The `read` tool: a range of lines of a text file, with a notice telling how to read on.

use serde_json::{Value, json};

use super::{Args, Tool, ToolContext, ToolFuture, ToolLimits, ToolOutput, display_path, looks_binary, try_arg};

pub(crate) struct ReadTool {
    limits: ToolLimits,
}

impl ReadTool {
    pub(crate) fn new(limits: ToolLimits) -> Self {
        Self { limits }
    }
}

impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> &'static str {
        "Read a text file in the workspace. Long files are returned in ranges of lines; \
         use offset (1-based) and limit to read a particular range."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path of the file, relative to the workspace root" },
                "offset": { "type": "integer", "minimum": 1, "description": "First line to read, 1-based (optional)" },
                "limit": { "type": "integer", "minimum": 1, "description": "Most lines to read (optional)" }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let path = try_arg!(args.string("path"));
            let offset = try_arg!(args.opt_count("offset", 1)).unwrap_or(1);
            let limit = try_arg!(args.opt_count("limit", 1)).unwrap_or(usize::MAX);
            let resolved = try_arg!(ctx.workspace.resolve(path));
            let shown_path = display_path(ctx.workspace, &resolved);

            match tokio::fs::metadata(&resolved).await {
                Ok(meta) if meta.is_dir() => {
                    return ToolOutput::error(format!("{shown_path} is a directory, not a file; use ls to list it"));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return ToolOutput::error(format!("File not found: {shown_path}"));
                }
                Err(e) => return ToolOutput::error(format!("Cannot read {shown_path}: {e}")),
            }
            let bytes = match tokio::fs::read(&resolved).await {
                Ok(bytes) => bytes,
                Err(e) => return ToolOutput::error(format!("Cannot read {shown_path}: {e}")),
            };
            if looks_binary(&bytes) {
                return ToolOutput::error(format!("{shown_path} looks like a binary file; it cannot be read as text"));
            }
            let text = String::from_utf8_lossy(&bytes);
            select_lines(
                &text,
                &shown_path,
                offset,
                limit.min(self.limits.max_read_lines),
                self.limits.max_output_bytes,
            )
        })
    }
}

/// Lines `offset..` of `text`, at most `limit` of them and `max_bytes` bytes.
///
/// A read that reaches the end of the file returns its exact text to the end, trailing newline included; a read that
/// stops earlier drops the last shown line's newline and appends the continuation notice.
fn select_lines(text: &str, path: &str, offset: usize, limit: usize, max_bytes: usize) -> ToolOutput {
    let mut starts = vec![0];
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    if starts.last() == Some(&text.len()) {
        starts.pop();
    }
    let total = starts.len();
    if offset > total.max(1) {
        return ToolOutput::error(format!("offset {offset} is past the end of {path} ({total} lines)"));
    }
    if total == 0 {
        return ToolOutput::ok("");
    }
    let first = offset - 1;
    let line_end = |i: usize| starts.get(i + 1).map_or(text.len(), |&next| next - 1);
    let begin = starts[first];

    // Bytes from the first shown line through line `i`, its newline included.
    let through = |i: usize| starts.get(i + 1).map_or(text.len(), |&next| next) - begin;
    let mut last = first;
    let wanted_last = first.saturating_add(limit - 1).min(total - 1);
    while last < wanted_last && through(last + 1) <= max_bytes {
        last += 1;
    }
    let first_line_len = line_end(first) - begin;
    if first_line_len > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(begin + cut) {
            cut -= 1;
        }
        let line_no = offset;
        let mut out = format!(
            "{}\n\n[Line {line_no} is {first_line_len} bytes; showing its first {cut}.",
            &text[begin..begin + cut]
        );
        if line_no < total {
            out.push_str(&format!(
                " Showing lines {line_no}-{line_no} of {total}. Use offset={} to continue.",
                line_no + 1
            ));
        }
        out.push(']');
        return ToolOutput::ok(out).with_details(json!({ "truncation": { "totalLines": total, "shownLines": 1 } }));
    }
    if last == total - 1 {
        return ToolOutput::ok(&text[begin..]);
    }
    let shown = last - first + 1;
    let (a, b) = (offset, last + 1);
    ToolOutput::ok(format!(
        "{}\n\n[Showing lines {a}-{b} of {total}. Use offset={} to continue.]",
        &text[begin..line_end(last)],
        b + 1
    ))
    .with_details(json!({ "truncation": { "totalLines": total, "shownLines": shown } }))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn tool(max_read_lines: usize) -> ReadTool {
        ReadTool::new(ToolLimits { max_read_lines, ..ToolLimits::default() })
    }

    #[tokio::test]
    async fn whole_file_is_exact() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("f.txt"), "one\r\ntwo\n\nfour\n").expect("write");
        let out = run(&tool(2000), &ws, json!({"path": "f.txt"})).await;
        assert_eq!(out, ToolOutput::ok("one\r\ntwo\n\nfour\n"));
        std::fs::write(ws.root().join("g.txt"), "no newline").expect("write");
        assert_eq!(run(&tool(2000), &ws, json!({"path": "g.txt"})).await.text, "no newline");
    }

    #[tokio::test]
    async fn ranges_and_continuation_notice() {
        let (_dir, ws) = workspace();
        let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(ws.root().join("f.txt"), &content).expect("write");

        let out = run(&tool(2000), &ws, json!({"path": "f.txt", "offset": 3, "limit": 2})).await;
        assert_eq!(out.text, "line 3\nline 4\n\n[Showing lines 3-4 of 10. Use offset=5 to continue.]");
        assert_eq!(out.details, Some(json!({"truncation": {"totalLines": 10, "shownLines": 2}})));

        let out = run(&tool(2000), &ws, json!({"path": "f.txt", "offset": 9})).await;
        assert_eq!(out, ToolOutput::ok("line 9\nline 10\n"));

        let out = run(&tool(2000), &ws, json!({"path": "f.txt", "offset": 8, "limit": 3})).await;
        assert_eq!(out, ToolOutput::ok("line 8\nline 9\nline 10\n"));

        let out = run(&tool(4), &ws, json!({"path": "f.txt"})).await;
        assert_eq!(out.text, "line 1\nline 2\nline 3\nline 4\n\n[Showing lines 1-4 of 10. Use offset=5 to continue.]");
        assert_eq!(out.details, Some(json!({"truncation": {"totalLines": 10, "shownLines": 4}})));

        let out = run(&tool(2000), &ws, json!({"path": "f.txt", "offset": 11})).await;
        assert!(out.is_error && out.text.contains("past the end"), "{out:?}");
    }

    #[tokio::test]
    async fn byte_limit_cuts_at_lines() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("f.txt"), "aaaa\nbbbb\ncccc\n").expect("write");
        let tool = ReadTool::new(ToolLimits { max_output_bytes: 10, ..ToolLimits::default() });
        let out = run(&tool, &ws, json!({"path": "f.txt"})).await;
        assert_eq!(out.text, "aaaa\nbbbb\n\n[Showing lines 1-2 of 3. Use offset=3 to continue.]");
        std::fs::write(ws.root().join("long.txt"), "ééééééé\nx\n").expect("write");
        let out = run(&tool, &ws, json!({"path": "long.txt"})).await;
        assert_eq!(
            out.text,
            "ééééé\n\n[Line 1 is 14 bytes; showing its first 10. Showing lines 1-1 of 2. Use offset=2 to continue.]"
        );
    }

    #[tokio::test]
    async fn missing_directory_and_binary_are_errors() {
        let (_dir, ws) = workspace();
        std::fs::create_dir(ws.root().join("d")).expect("dir");
        std::fs::write(ws.root().join("b.bin"), b"ab\0cd").expect("write");
        for (path, needle) in [("nope.txt", "File not found: nope.txt"), ("d", "directory"), ("b.bin", "binary")] {
            let out = run(&tool(2000), &ws, json!({"path": path})).await;
            assert!(out.is_error && out.text.contains(needle), "{path}: {out:?}");
        }
        let out = run(&tool(2000), &ws, json!({"path": "../x"})).await;
        assert!(out.is_error && out.text.contains("outside the workspace"), "{out:?}");
    }

    #[tokio::test]
    async fn empty_file_reads_as_empty() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("e"), "").expect("write");
        assert_eq!(run(&tool(2000), &ws, json!({"path": "e"})).await, ToolOutput::ok(""));
    }
}
