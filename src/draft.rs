//! What the composer's draft asks for besides being sent: a slash command (`/plan fix the bug`), or an `@` mention
//! being typed, and the edits that complete either. Pure text functions, shared by the composer and native tests.
//!
//! A draft is a command when it starts with `/` and a name of letters (then digits, `-`, `_`), followed by a space
//! or nothing: `/etc/hosts is wrong` and `/ 2` are sent as they are. A name that is one of the session's agent's
//! own commands (an ACP agent's `available_commands`) is text for the agent, which runs it; chatwire's own commands
//! keep their name when the agent offers the same. Any other name is said to be unknown, not sent. Carets are byte offsets into the draft; the browser's UTF-16 offsets are converted at the edge
//! ([`byte_offset`], [`utf16_offset`]).

use crate::i18n::{Key, fill, t};
use crate::protocol::AgentCommand;

/// A command the composer carries out instead of sending the draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// A new, empty chat.
    New,
    /// Plan mode from now on; the text, if any, is sent in it.
    Plan(String),
    /// Agent mode from now on; the text, if any, is sent in it.
    Agent(String),
    /// The model of the next messages, by its configured name; empty: say which there are.
    Model(String),
    /// Summarize the conversation and go on from the summary; the text says what the summary should keep.
    Compact(String),
    /// Stop the running agent.
    Stop,
    /// Download the conversation.
    Export(ExportFormat),
    /// List the commands.
    Help,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Json,
}

impl ExportFormat {
    /// The `format` of `GET /api/sessions/{id}/export`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::Json => "json",
        }
    }
}

/// What a draft is, read when it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Draft {
    /// Text for the model.
    Text,
    Command(SlashCommand),
    /// A command name that is none of ours (without the `/`).
    Unknown(String),
    /// One of ours, given something it does not take; the message says what it takes.
    Invalid(String),
}

/// One command as the suggestion list shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the `/`.
    pub name: &'static str,
    /// What may follow the name, as a hint ("[text]"); `None` when nothing does.
    pub args: Option<Key>,
    pub about: Key,
}

impl CommandInfo {
    /// True when the command takes something after its name: choosing it completes the name and waits for that.
    pub fn takes_args(&self) -> bool {
        self.args.is_some()
    }

    /// The hint of what may follow the name, in the page's language; empty when nothing does.
    pub fn args_hint(&self) -> &'static str {
        self.args.map_or("", t)
    }
}

/// One entry of the `/` list: one of chatwire's commands, or one the session's agent offers (sent to it as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offered {
    Own(CommandInfo),
    Agent(AgentCommand),
}

impl Offered {
    /// Without the `/`.
    pub fn name(&self) -> &str {
        match self {
            Offered::Own(command) => command.name,
            Offered::Agent(command) => &command.name,
        }
    }

    /// True when choosing it with Enter should wait for text: an agent's command says so with its hint.
    pub fn takes_args(&self) -> bool {
        match self {
            Offered::Own(command) => command.takes_args(),
            Offered::Agent(command) => command.hint.is_some(),
        }
    }
}

/// Every command, in the order the list shows them.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo { name: "new", args: None, about: Key::CommandNew },
    CommandInfo { name: "plan", args: Some(Key::ArgsText), about: Key::CommandPlan },
    CommandInfo { name: "agent", args: Some(Key::ArgsText), about: Key::CommandAgent },
    CommandInfo { name: "model", args: Some(Key::ArgsName), about: Key::CommandModel },
    CommandInfo { name: "compact", args: Some(Key::ArgsKeep), about: Key::CommandCompact },
    CommandInfo { name: "stop", args: None, about: Key::CommandStop },
    CommandInfo { name: "export", args: Some(Key::ArgsFormat), about: Key::CommandExport },
    CommandInfo { name: "help", args: None, about: Key::CommandHelp },
];

/// The commands whose name starts with `typed` (without the `/`, any case): ours in list order, then the agent's
/// in its order, leaving out one that has the name of ours (ours is what such a name runs).
pub fn commands_starting(typed: &str, agent: &[AgentCommand]) -> Vec<Offered> {
    let typed = typed.to_lowercase();
    let own = COMMANDS.iter().filter(|command| command.name.starts_with(&typed)).copied().map(Offered::Own);
    let theirs = agent
        .iter()
        .filter(|command| command.name.to_lowercase().starts_with(&typed) && !is_own(&command.name))
        .cloned()
        .map(Offered::Agent);
    own.chain(theirs).collect()
}

fn is_own(name: &str) -> bool {
    COMMANDS.iter().any(|command| command.name.eq_ignore_ascii_case(name))
}

/// "/new, /plan, …": the commands, for messages.
pub fn command_names() -> String {
    COMMANDS.iter().map(|command| format!("/{}", command.name)).collect::<Vec<_>>().join(", ")
}

/// The command name a draft starts with (without the `/`) and the rest after it, trimmed; `None` when the draft
/// is not a command.
fn split_command(draft: &str) -> Option<(&str, &str)> {
    let rest = draft.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let mut chars = name.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    (first_is_letter && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .then(|| (name, rest[end..].trim()))
}

/// Reads a draft being sent; `agent` are the commands the session's agent offers.
pub fn parse(draft: &str, agent: &[AgentCommand]) -> Draft {
    let Some((name, rest)) = split_command(draft) else { return Draft::Text };
    let nothing_after = |command: SlashCommand| {
        if rest.is_empty() {
            Draft::Command(command)
        } else {
            Draft::Invalid(fill(Key::TakesNothing, &[("command", &format!("/{}", name.to_lowercase()))]))
        }
    };
    match name.to_lowercase().as_str() {
        "new" => nothing_after(SlashCommand::New),
        "plan" => Draft::Command(SlashCommand::Plan(rest.to_owned())),
        "agent" => Draft::Command(SlashCommand::Agent(rest.to_owned())),
        "model" => Draft::Command(SlashCommand::Model(rest.to_owned())),
        "compact" => Draft::Command(SlashCommand::Compact(rest.to_owned())),
        "stop" => nothing_after(SlashCommand::Stop),
        "help" => nothing_after(SlashCommand::Help),
        "export" => match rest.to_lowercase().as_str() {
            "" | "md" | "markdown" => Draft::Command(SlashCommand::Export(ExportFormat::Markdown)),
            "json" => Draft::Command(SlashCommand::Export(ExportFormat::Json)),
            _ => Draft::Invalid(fill(Key::ExportTakes, &[("given", &format!("{rest:?}"))])),
        },
        _ if agent.iter().any(|command| command.name.eq_ignore_ascii_case(name)) => Draft::Text,
        _ => Draft::Unknown(name.to_owned()),
    }
}

/// The command name being typed (without the `/`) when the caret is in a draft's first word and that word is a
/// `/` and the start of a name: the suggestion list then shows the commands. `None` once a space follows it.
pub fn command_being_typed(draft: &str, caret: usize) -> Option<&str> {
    let word = draft.get(..caret)?.strip_prefix('/')?;
    if draft[caret..].chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let mut chars = word.chars();
    match chars.next() {
        None => Some(word),
        Some(first) if first.is_ascii_alphabetic() => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_').then_some(word)
        }
        Some(_) => None,
    }
}

/// The draft with its first word replaced by the command's name and a space, and the caret after that space.
pub fn complete_command(draft: &str, name: &str) -> (String, usize) {
    let end = draft.find(char::is_whitespace).unwrap_or(draft.len());
    let rest = draft[end..].trim_start();
    let head = format!("/{name} ");
    let caret = head.len();
    (format!("{head}{rest}"), caret)
}

/// An `@` mention the caret is in: where its `@` is (a byte offset) and what follows it up to the caret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub start: usize,
    pub query: String,
}

/// The mention being typed: the caret ends a word that starts with `@`, at the start of the draft or after
/// whitespace (so `me@example.com` is not one).
pub fn mention_being_typed(draft: &str, caret: usize) -> Option<Mention> {
    let before = draft.get(..caret)?;
    if draft[caret..].chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let start = before.char_indices().rev().find(|(_, c)| c.is_whitespace()).map_or(0, |(at, c)| at + c.len_utf8());
    let word = &before[start..];
    let query = word.strip_prefix('@')?;
    Some(Mention { start, query: query.to_owned() })
}

/// The draft with the mention at `start` (up to the caret) replaced by `@path`, and the caret after it. A file gets
/// one space after it (the mention is done); a directory (`src/`) none, so the list goes on inside it.
pub fn complete_mention(draft: &str, start: usize, caret: usize, path: &str) -> (String, usize) {
    let after = draft.get(caret..).unwrap_or_default();
    let head = format!("{}@{path}", draft.get(..start).unwrap_or_default());
    if path.ends_with('/') {
        return (format!("{head}{after}"), head.len());
    }
    let rest = after.strip_prefix(' ').unwrap_or(after);
    (format!("{head} {rest}"), head.len() + 1)
}

/// The byte offset of a UTF-16 offset into `text` (a textarea's `selectionStart`), clamped to the text.
pub fn byte_offset(text: &str, utf16: usize) -> usize {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        if units >= utf16 {
            return at;
        }
        units += c.len_utf16();
    }
    text.len()
}

/// The UTF-16 offset of a byte offset into `text`, for setting a textarea's caret.
pub fn utf16_offset(text: &str, byte: usize) -> usize {
    text.get(..byte).unwrap_or(text).encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn parse_ours(draft: &str) -> Draft {
        parse(draft, &[])
    }

    fn agent(name: &str, hint: Option<&str>) -> AgentCommand {
        AgentCommand { name: name.into(), description: format!("{name} it"), hint: hint.map(str::to_owned) }
    }

    #[test]
    fn a_command_the_agent_offers_goes_to_it_as_text() {
        let offered = [agent("review", Some("branch")), agent("init", None), agent("new", None)];
        assert_eq!(parse("/review main", &offered), Draft::Text);
        assert_eq!(parse("/init", &offered), Draft::Text);
        assert_eq!(parse("/REVIEW", &offered), Draft::Text, "any case, as ours");
        assert_eq!(parse("/new", &offered), Draft::Command(SlashCommand::New), "ours keeps its name");
        assert!(matches!(parse("/new chat", &offered), Draft::Invalid(_)), "ours, read as ours");
        assert_eq!(parse("/deploy", &offered), Draft::Unknown("deploy".into()));
        assert_eq!(parse("/review main", &[]), Draft::Unknown("review".into()), "another session's agent's");
    }

    #[test]
    fn the_list_shows_the_agents_commands_after_ours() {
        let offered = [agent("review", Some("branch")), agent("init", None), agent("Plan", None)];
        let names = |typed: &str| -> Vec<String> {
            commands_starting(typed, &offered).iter().map(|c| c.name().to_owned()).collect()
        };
        assert_eq!(names("")[8..], ["review", "init"], "ours first; the agent's /Plan is ours");
        assert_eq!(names("r"), ["review"]);
        assert_eq!(names("I"), ["init"]);
        assert_eq!(names("p"), ["plan"]);
        let found = commands_starting("re", &offered);
        assert_eq!(found, [Offered::Agent(offered[0].clone())]);
        assert!(found[0].takes_args(), "its hint says it takes text");
        assert!(!commands_starting("in", &offered)[0].takes_args());
        assert!(commands_starting("n", &offered)[0].eq(&Offered::Own(COMMANDS[0])));
    }

    #[test]
    fn commands_are_read_with_their_text() {
        assert_eq!(parse_ours("/new"), Draft::Command(SlashCommand::New));
        assert_eq!(parse_ours("  /NEW  "), Draft::Command(SlashCommand::New), "any case, surrounding blanks");
        assert_eq!(parse_ours("/plan fix the bug"), Draft::Command(SlashCommand::Plan("fix the bug".into())));
        assert_eq!(parse_ours("/plan"), Draft::Command(SlashCommand::Plan(String::new())));
        assert_eq!(parse_ours("/agent\n go  on "), Draft::Command(SlashCommand::Agent("go  on".into())));
        assert_eq!(parse_ours("/model fast"), Draft::Command(SlashCommand::Model("fast".into())));
        assert_eq!(parse_ours("/compact"), Draft::Command(SlashCommand::Compact(String::new())));
        assert_eq!(parse_ours("/compact keep the API"), Draft::Command(SlashCommand::Compact("keep the API".into())));
        assert_eq!(parse_ours("/stop"), Draft::Command(SlashCommand::Stop));
        assert_eq!(parse_ours("/export"), Draft::Command(SlashCommand::Export(ExportFormat::Markdown)));
        assert_eq!(parse_ours("/export JSON"), Draft::Command(SlashCommand::Export(ExportFormat::Json)));
        assert_eq!(parse_ours("/help"), Draft::Command(SlashCommand::Help));
    }

    #[test]
    fn an_unknown_name_is_said_and_a_wrong_argument_is_explained() {
        assert_eq!(parse_ours("/deploy now"), Draft::Unknown("deploy".into()));
        assert_eq!(parse_ours("/x-1"), Draft::Unknown("x-1".into()));
        assert!(matches!(parse_ours("/export pdf"), Draft::Invalid(message) if message.contains("md or json")));
        assert!(matches!(parse_ours("/new chat"), Draft::Invalid(message) if message.starts_with("/new")));
        assert!(matches!(parse_ours("/stop it"), Draft::Invalid(_)));
    }

    #[test]
    fn text_that_only_starts_with_a_slash_is_sent() {
        for text in ["/etc/hosts is wrong", "/ 2", "/", "//comment", "/1st try", "hello /new", "", "/é"] {
            assert_eq!(parse_ours(text), Draft::Text, "{text:?}");
        }
    }

    #[test]
    fn the_list_shows_commands_while_their_name_is_typed() {
        assert_eq!(command_being_typed("/", 1), Some(""));
        assert_eq!(command_being_typed("/pl", 3), Some("pl"));
        assert_eq!(command_being_typed("/pl", 2), None, "the caret is inside the name, not at its end");
        assert_eq!(command_being_typed("/plan ", 6), None, "a space ends the name");
        assert_eq!(command_being_typed("/plan x", 5), Some("plan"), "caret back at the name's end");
        assert_eq!(command_being_typed(" /plan", 6), None, "only at the very start");
        assert_eq!(command_being_typed("/etc/", 5), None);
        assert_eq!(command_being_typed("/p", 9), None, "a caret past the end");
        let names: Vec<String> = commands_starting("", &[]).iter().map(|c| c.name().to_owned()).collect();
        assert_eq!(names, ["new", "plan", "agent", "model", "compact", "stop", "export", "help"]);
        let names: Vec<String> = commands_starting("C", &[]).iter().map(|c| c.name().to_owned()).collect();
        assert_eq!(names, ["compact"]);
        assert!(commands_starting("zz", &[]).is_empty());
    }

    #[test]
    fn completing_a_command_replaces_the_first_word() {
        assert_eq!(complete_command("/pl", "plan"), ("/plan ".into(), 6));
        assert_eq!(complete_command("/pl fix it", "plan"), ("/plan fix it".into(), 6));
    }

    #[test]
    fn a_mention_is_an_at_word_ending_at_the_caret() {
        let at = |draft: &str, caret: usize| mention_being_typed(draft, caret);
        assert_eq!(at("@", 1), Some(Mention { start: 0, query: String::new() }));
        assert_eq!(at("look at @src/ma", 15), Some(Mention { start: 8, query: "src/ma".into() }));
        assert_eq!(at("look at @src/ma now", 15), Some(Mention { start: 8, query: "src/ma".into() }));
        assert_eq!(at("look at @src/ma", 12), None, "the caret is inside the word");
        assert_eq!(at("mail me@example.com", 19), None, "an @ inside a word");
        assert_eq!(at("a\n@x", 4), Some(Mention { start: 2, query: "x".into() }));
        assert_eq!(at("été @é", 9), Some(Mention { start: 6, query: "é".into() }), "byte offsets");
        assert_eq!(at("été @é", 8), None, "not a character boundary");
        assert_eq!(at("@a", 3), None);
    }

    #[test]
    fn completing_a_mention_puts_the_path_and_one_space() {
        assert_eq!(complete_mention("see @ma", 4, 7, "src/main.rs"), ("see @src/main.rs ".into(), 17));
        assert_eq!(complete_mention("see @ma and", 4, 7, "src/main.rs"), ("see @src/main.rs and".into(), 17));
        assert_eq!(complete_mention("@", 0, 1, "a/"), ("@a/".into(), 3), "a directory: the list goes on inside it");
    }

    #[test]
    fn carets_convert_between_utf16_and_bytes() {
        let text = "a😀é b";
        assert_eq!(byte_offset(text, 0), 0);
        assert_eq!(byte_offset(text, 1), 1);
        assert_eq!(byte_offset(text, 3), 5, "the emoji is two UTF-16 units and four bytes");
        assert_eq!(byte_offset(text, 4), 7);
        assert_eq!(byte_offset(text, 99), text.len());
        assert_eq!(utf16_offset(text, 5), 3);
        assert_eq!(utf16_offset(text, text.len()), 6);
    }

    proptest! {
        #[test]
        fn reading_and_completing_never_panic(draft in "\\PC{0,12}", caret in 0_usize..40, path in "[a-z/.]{0,8}") {
            let _ = parse(&draft, &[agent("review", None)]);
            let _ = command_being_typed(&draft, caret);
            if let Some(mention) = mention_being_typed(&draft, caret) {
                let (text, at) = complete_mention(&draft, mention.start, caret, &path);
                prop_assert!(text.is_char_boundary(at));
                let inserted = if path.ends_with('/') { format!("@{path}") } else { format!("@{path} ") };
                prop_assert!(text[..at].ends_with(&inserted));
            }
            let byte = byte_offset(&draft, caret);
            prop_assert!(draft.is_char_boundary(byte));
            prop_assert_eq!(byte_offset(&draft, utf16_offset(&draft, byte)), byte);
        }
    }
}
