//! Full-text search, the part both stores share: what of a logged frame is indexed, how text and queries are cut
//! into words, and the highlighted snippet of a hit. Doing these in Rust, not in each database's own functions,
//! makes SQLite (FTS5) and PostgreSQL (`tsvector`) find the same hits and show the same snippets.

use crate::protocol::{ChatFrame, ChatMessage, ChatMessagePart, SnippetPiece};

/// At most this many bytes of a message are indexed (a tool's 1 MB command line costs no more than this): a
/// PostgreSQL `tsvector` has a 1 MB limit, and a longer document's tail is rarely what anyone searches for.
pub const MAX_INDEXED_BYTES: usize = 32 * 1024;

/// Queries longer than this are refused (400): a search box never needs more, and the words become one SQL
/// expression each.
pub const MAX_QUERY_CHARS: usize = 500;

/// A query that matches more documents than this ranks only the newest this many of them: ranking every one of
/// 250,000 matches of a common word took 0.5–0.8 s (benches/search.rs), and the newest are the likeliest wanted.
pub const RANKED_AT_MOST: i64 = 2_000;

/// A query of several words ranks fewer matches, but never fewer than this many.
const RANKED_AT_LEAST: i64 = 500;

/// Only the first words of a query count.
const MAX_QUERY_WORDS: usize = 16;

/// Words longer than this are neither indexed nor searched: they are hashes and base64, and PostgreSQL refuses
/// lexemes over 2 KB.
const MAX_WORD_CHARS: usize = 64;

/// Characters of context shown on each side of the first match.
const SNIPPET_CONTEXT: usize = 60;

/// Characters a snippet shows at most.
const SNIPPET_CHARS: usize = 180;

/// The keys of a tool part's input that hold a command or a path: what people search their tool calls for.
const TOOL_INPUT_KEYS: [&str; 4] = ["command", "path", "file_path", "filePath"];

/// A message of the log as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedMessage {
    pub message_id: String,
    /// The searchable text (prompt or answer text, tool commands and paths, one per line; never thinking).
    pub body: String,
}

/// What a frame adds to the index: `message` and `done` frames with some searchable text.
pub fn indexed(frame: &ChatFrame) -> Option<IndexedMessage> {
    let message = match frame {
        ChatFrame::Message(frame) => &frame.message,
        ChatFrame::Done(frame) => &frame.message,
        ChatFrame::Start(_)
        | ChatFrame::Delta(_)
        | ChatFrame::Thinking(_)
        | ChatFrame::ToolDraft(_)
        | ChatFrame::ToolArgsDelta(_)
        | ChatFrame::Tool(_)
        | ChatFrame::Plan(_)
        | ChatFrame::State(_)
        | ChatFrame::Queue(_)
        | ChatFrame::Branch(_)
        | ChatFrame::Changes(_)
        | ChatFrame::Usage(_)
        | ChatFrame::AgentOptions(_)
        | ChatFrame::Compaction(_)
        | ChatFrame::Retry(_)
        | ChatFrame::Error(_)
        | ChatFrame::Ping => return None,
    };
    let body = message_text(message);
    (!body.trim().is_empty()).then(|| IndexedMessage { message_id: message.id.clone(), body })
}

fn message_text(message: &ChatMessage) -> String {
    let mut body = String::new();
    let mut add = |text: &str| {
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(text);
    };
    for part in &message.parts {
        match part {
            ChatMessagePart::Text(text) => add(&text.text),
            ChatMessagePart::File(file) => add(&file.name),
            ChatMessagePart::Tool(tool) => {
                let Some(input) = tool.input.as_ref().and_then(|input| input.as_object()) else { continue };
                for key in TOOL_INPUT_KEYS {
                    if let Some(value) = input.get(key).and_then(|value| value.as_str()) {
                        add(value);
                    }
                }
            }
            ChatMessagePart::Thinking(_) | ChatMessagePart::Error(_) => {}
        }
    }
    truncate(body, MAX_INDEXED_BYTES)
}

/// `text` cut to at most `bytes` bytes, at a character boundary.
pub fn truncate(mut text: String, bytes: usize) -> String {
    if text.len() > bytes {
        let mut end = bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The words of `text`, lower-cased, with their byte ranges: runs of letters and digits (so `src/main.rs` is
/// `src`, `main`, `rs`), as SQLite's `unicode61` tokenizer cuts them; over-long words are left out.
pub fn words(text: &str) -> impl Iterator<Item = (std::ops::Range<usize>, String)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        loop {
            let (start, _) = chars.by_ref().find(|(_, c)| c.is_alphanumeric())?;
            let mut end = text.len();
            let mut count = 1;
            while let Some(&(at, c)) = chars.peek() {
                if !c.is_alphanumeric() {
                    end = at;
                    break;
                }
                count += 1;
                chars.next();
            }
            if count <= MAX_WORD_CHARS {
                return Some((start..end, text[start..end].to_lowercase()));
            }
        }
    })
}

/// The text as the PostgreSQL index is fed it: its words, lower-cased, one space apart, so that PostgreSQL's own
/// parser (which would keep `src/main.rs` whole) sees exactly the words SQLite sees.
pub fn index_terms(text: &str) -> String {
    words(text).map(|(_, word)| word).collect::<Vec<_>>().join(" ")
}

/// The words of a query, each of which a hit must contain as the start of one of its words; none for a query
/// without letters or digits (`"*:(` finds nothing rather than everything).
pub fn query_words(query: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (_, word) in words(query) {
        if !found.contains(&word) {
            found.push(word);
        }
        if found.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    found
}

/// How many of a query's newest matches are ranked: `RANKED_AT_MOST` shared out among the words. Scoring a match
/// costs about as much again for each word (bm25 reads each word's hits in it), so a query of three common words,
/// each in most messages, costs what a one-word query does (`fix build test` took 58 ms of a 59.7 ms p99 when
/// 2,000 were ranked for every query).
pub fn ranked_at_most(words: &[String]) -> i64 {
    let words = i64::try_from(words.len().max(1)).unwrap_or(i64::MAX);
    (RANKED_AT_MOST / words).max(RANKED_AT_LEAST)
}

/// The FTS5 `MATCH` expression: every word quoted (so nothing in it is FTS syntax) and a prefix.
pub fn fts5_query(words: &[String]) -> String {
    words.iter().map(|word| format!("\"{}\"*", word.replace('"', "\"\""))).collect::<Vec<_>>().join(" ")
}

/// The `to_tsquery` expression: every word quoted as a lexeme and a prefix, all of them required.
pub fn tsquery(words: &[String]) -> String {
    words
        .iter()
        .map(|word| format!("'{}':*", word.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" & ")
}

/// A window of `body` around its first match, cut into plain and highlighted pieces.
pub fn snippet(body: &str, words_sought: &[String]) -> Vec<SnippetPiece> {
    let matches: Vec<std::ops::Range<usize>> = words(body)
        .filter(|(_, word)| words_sought.iter().any(|sought| word.starts_with(sought.as_str())))
        .map(|(range, _)| range)
        .collect();
    let first = matches.first().map_or(0, |range| range.start);
    let start = char_back(body, first, SNIPPET_CONTEXT);
    let end = char_forward(body, start, SNIPPET_CHARS);
    let mut pieces = Vec::new();
    let mut push = |text: &str, highlight: bool| {
        if !text.is_empty() {
            pieces.push(SnippetPiece { text: text.to_owned(), highlight });
        }
    };
    if start > 0 {
        push("…", false);
    }
    let mut at = start;
    for range in matches.iter().filter(|range| range.start >= start && range.end <= end) {
        push(&body[at..range.start], false);
        push(&body[range.clone()], true);
        at = range.end;
    }
    push(&body[at..end], false);
    if end < body.len() {
        push("…", false);
    }
    pieces
}

/// The byte offset `count` characters before `at` (or 0).
fn char_back(text: &str, at: usize, count: usize) -> usize {
    text[..at].char_indices().rev().nth(count.saturating_sub(1)).map_or(0, |(index, _)| index)
}

/// The byte offset `count` characters after `at` (or the end).
fn char_forward(text: &str, at: usize, count: usize) -> usize {
    text[at..].char_indices().nth(count).map_or(text.len(), |(index, _)| at + index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ChatToolPart, MessageFrame, Role, ToolState};

    #[test]
    fn more_words_rank_fewer_matches_down_to_a_floor() {
        let words = |n: usize| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>();
        let ranked: Vec<i64> = [0, 1, 2, 3, 4, 16].map(|n| ranked_at_most(&words(n))).into();
        assert_eq!(ranked, [2_000, 2_000, 1_000, 666, 500, 500]);
    }

    fn pieces(snippet: &[SnippetPiece]) -> String {
        snippet.iter().map(|p| if p.highlight { format!("[{}]", p.text) } else { p.text.clone() }).collect()
    }

    #[test]
    fn words_are_runs_of_letters_and_digits_lower_cased() {
        let found: Vec<String> = words("Fix src/main.rs: Straße_2 ÉTÉ").map(|(_, w)| w).collect();
        assert_eq!(found, ["fix", "src", "main", "rs", "straße", "2", "été"]);
        assert_eq!(index_terms("a-b  C"), "a b c");
        assert_eq!(words(&"x".repeat(65)).count(), 0, "over-long words are left out");
    }

    #[test]
    fn query_syntax_is_never_syntax() {
        assert_eq!(query_words(r#""foo* NEAR(bar) -baz ^qux: foo"#), ["foo", "near", "bar", "baz", "qux"]);
        assert!(query_words(r#""*:()-^"#).is_empty());
        assert_eq!(fts5_query(&query_words("a\"b")), r#""a"* "b"*"#);
        assert_eq!(tsquery(&query_words("it's")), "'it':* & 's':*");
        assert_eq!(query_words(&"word ".repeat(2000)).len(), 1);
        assert_eq!(query_words(&(0..100).map(|i| format!("w{i} ")).collect::<String>()).len(), 16);
    }

    #[test]
    fn the_snippet_highlights_every_match_in_a_window_around_the_first() {
        let body = format!("{} the Needle is here, and needles too {}", "lead ".repeat(40), "tail ".repeat(60));
        let snippet = snippet(&body, &["needle".to_owned()]);
        let text = pieces(&snippet);
        assert!(text.starts_with('…') && text.ends_with('…'), "{text}");
        assert!(text.contains("the [Needle] is here, and [needles] too"), "{text}");
        let shown: usize = snippet.iter().map(|piece| piece.text.chars().count()).sum();
        assert!(shown <= SNIPPET_CHARS + 2, "{shown}");
        assert_eq!(pieces(&super::snippet("short <b>x</b>", &["b".to_owned()])), "short <[b]>x</[b]>");
    }

    #[test]
    fn a_message_indexes_text_and_tool_commands_not_thinking() {
        let mut bash = ChatToolPart::new("Bash", "t1", ToolState::OutputAvailable);
        bash.input = Some(serde_json::json!({ "command": "cargo build", "timeout": 5 }));
        let message = ChatMessage {
            id: "m1".into(),
            role: Role::Assistant,
            parts: vec![
                ChatMessagePart::thinking("secret"),
                ChatMessagePart::text("Answer"),
                ChatMessagePart::tool(bash),
            ],
            created_at: None,
            changes: None,
            usage: None,
        };
        let frame = ChatFrame::Message(MessageFrame { seq: None, message });
        assert_eq!(
            indexed(&frame),
            Some(IndexedMessage { message_id: "m1".into(), body: "Answer\ncargo build".into() })
        );
        assert_eq!(truncate("aé".into(), 2), "a");
    }
}
