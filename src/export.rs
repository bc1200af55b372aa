//! A conversation as Markdown, for Copy and export: prompts and answers as they read, and each tool call as what it
//! ran (its command, path or pattern) and what came back, in fences longer than any backtick run inside them.
//! Thinking is left out: it is the model's scratch work, not the conversation.

use std::fmt::Write as _;

use crate::protocol::{
    BashOutput, ChatMessage, ChatMessagePart, ChatToolPart, EditOutput, MatchesOutput, QuestionOutput, ReadOutput,
    Role, ToolKind,
};

/// The whole conversation: a title, then each message under who said it.
pub fn session_markdown(title: &str, messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    let title = if title.trim().is_empty() { "Conversation" } else { title.trim() };
    let _ = writeln!(out, "# {title}\n");
    for message in messages {
        let who = match message.role {
            Role::User => "You",
            Role::Assistant => "Assistant",
        };
        let _ = writeln!(out, "## {who}\n");
        out.push_str(&message_markdown(message));
        out.push('\n');
    }
    out
}

/// One message, as its Copy button gives it.
pub fn message_markdown(message: &ChatMessage) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for part in &message.parts {
        match part {
            ChatMessagePart::Text(text) if !text.text.trim().is_empty() => blocks.push(text.text.trim_end().to_owned()),
            ChatMessagePart::Text(_) | ChatMessagePart::Thinking(_) => {}
            ChatMessagePart::Error(error) => blocks.push(match &error.title {
                Some(title) => format!("> **{title}:** {}", error.message),
                None => format!("> **Error:** {}", error.message),
            }),
            ChatMessagePart::File(file) => blocks.push(format!(
                "*Attached: {} ({}, {})*",
                file.name,
                file.media_type,
                crate::protocol::byte_size(file.size)
            )),
            ChatMessagePart::Tool(tool) => blocks.push(tool_markdown(tool)),
        }
    }
    let mut out = blocks.join("\n\n");
    out.push('\n');
    out
}

fn tool_markdown(part: &ChatToolPart) -> String {
    let mut out = String::new();
    let name = part.tool_name();
    let input = |key: &str| part.input_str(key).unwrap_or_default();
    match part.kind() {
        ToolKind::Bash | ToolKind::IPython => {
            let (language, code) =
                if *part.kind() == ToolKind::Bash { ("sh", input("command")) } else { ("python", input("code")) };
            let _ = writeln!(out, "**{name}**");
            fenced(language, code, &mut out);
            if let Some(output) = part.output_as::<BashOutput>() {
                fenced("text", &output.output, &mut out);
                if let Some(code) = output.exit_code.filter(|code| *code != 0) {
                    let _ = writeln!(out, "exit code {code}");
                }
            }
        }
        ToolKind::Read => {
            let _ = writeln!(out, "**Read** `{}`", input("path"));
            if let Some(output) = part.output_as::<ReadOutput>() {
                fenced("", &output.content, &mut out);
            }
        }
        ToolKind::Write => {
            let _ = writeln!(out, "**Write** `{}`", input("path"));
            fenced("", input("content"), &mut out);
        }
        ToolKind::Edit => {
            let _ = writeln!(out, "**Edit** `{}`", input("path"));
            if let Some(output) = part.output_as::<EditOutput>() {
                fenced("diff", &output.diff, &mut out);
            }
        }
        ToolKind::Grep | ToolKind::Glob | ToolKind::Ls => {
            let what = [input("pattern"), input("path")].into_iter().find(|s| !s.is_empty()).unwrap_or_default();
            let _ = writeln!(out, "**{name}** `{what}`");
            if let Some(output) = part.output_as::<MatchesOutput>() {
                fenced("text", &output.matches.join("\n"), &mut out);
            }
        }
        ToolKind::TodoWrite | ToolKind::PlanWrite => {
            let _ = writeln!(out, "**{name}**");
            for item in part.checklist() {
                let _ = writeln!(out, "- [{}] {}", if item.is_completed() { "x" } else { " " }, item.text);
            }
        }
        ToolKind::Question => {
            let _ = writeln!(out, "**Question:** {}", input("question"));
            if let Some(output) = part.output_as::<QuestionOutput>() {
                let _ = writeln!(out, "**Answer:** {}", output.answer);
            }
        }
        ToolKind::WebSearch => {
            let _ = writeln!(out, "**Web search** `{}`", input("query"));
            json_output(part, &mut out);
        }
        ToolKind::Task | ToolKind::Agent => {
            let _ = writeln!(out, "**{name}:** {}", input("description"));
            fenced("", input("prompt"), &mut out);
            json_output(part, &mut out);
        }
        ToolKind::Chart | ToolKind::Thinking | ToolKind::Mcp { .. } | ToolKind::Other(_) => {
            let _ = writeln!(out, "**{name}**");
            if let Some(input) = &part.input {
                fenced("json", &pretty(input), &mut out);
            }
            json_output(part, &mut out);
        }
    }
    if let Some(error) = &part.error_text {
        let _ = writeln!(out, "> **Error:** {error}");
    }
    out.trim_end().to_owned()
}

fn json_output(part: &ChatToolPart, out: &mut String) {
    match &part.output {
        Some(serde_json::Value::String(text)) => fenced("text", text, out),
        Some(output) => fenced("json", &pretty(output), out),
        None => {}
    }
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// `body` in a fence one backtick longer than its longest backtick run (at least three), so nothing inside can
/// close it.
fn fenced(info: &str, body: &str, out: &mut String) {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let _ = writeln!(out, "{fence}{info}\n{}\n{fence}", body.trim_end_matches('\n'));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ErrorPart, ToolState};
    use serde_json::json;

    fn message(role: Role, parts: Vec<ChatMessagePart>) -> ChatMessage {
        ChatMessage { id: "m".into(), role, parts, created_at: None, changes: None, usage: None }
    }

    fn tool(kind: &str, input: serde_json::Value, output: serde_json::Value) -> ChatMessagePart {
        let mut part = ChatToolPart::new(kind, "call-1", ToolState::OutputAvailable);
        part.input = Some(input);
        part.output = Some(output);
        ChatMessagePart::tool(part)
    }

    #[test]
    fn a_conversation_reads_as_prompts_answers_and_what_each_tool_ran() {
        let messages = vec![
            message(Role::User, vec![ChatMessagePart::text("List the files")]),
            message(
                Role::Assistant,
                vec![
                    ChatMessagePart::thinking("secret plan"),
                    ChatMessagePart::text("Here they are:"),
                    tool("Bash", json!({"command": "ls"}), json!({"output": "a.txt\nb.txt\n", "exitCode": 0})),
                    tool("Edit", json!({"path": "a.txt"}), json!({"diff": "-old\n+new"})),
                    ChatMessagePart::text("Done."),
                ],
            ),
        ];
        assert_eq!(
            session_markdown("Files", &messages),
            "# Files\n\n## You\n\nList the files\n\n## Assistant\n\nHere they are:\n\n**Bash**\n```sh\nls\n```\n\
             ```text\na.txt\nb.txt\n```\n\n**Edit** `a.txt`\n```diff\n-old\n+new\n```\n\nDone.\n\n"
        );
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside_it_and_failures_are_said() {
        let messages = [message(
            Role::Assistant,
            vec![
                tool("Read", json!({"path": "README.md"}), json!({"content": "````sh\nrun\n````"})),
                ChatMessagePart::Error(ErrorPart { title: None, message: "rate limited".into() }),
            ],
        )];
        let markdown = message_markdown(&messages[0]);
        assert!(markdown.contains("`````\n````sh\nrun\n````\n`````"), "{markdown}");
        assert!(markdown.ends_with("> **Error:** rate limited\n"), "{markdown}");
    }

    #[test]
    fn an_unknown_tool_shows_its_input_and_output_as_json() {
        let part = tool("mcp__weather__lookup", json!({"city": "Oslo"}), json!({"temperature": 3}));
        let markdown = message_markdown(&message(Role::Assistant, vec![part]));
        assert!(
            markdown.starts_with("**mcp__weather__lookup**\n```json\n{\n  \"city\": \"Oslo\"\n}\n```"),
            "{markdown}"
        );
        assert!(markdown.contains("\"temperature\": 3"));
    }
}
