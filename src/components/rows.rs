//! The transcript's keyed rows: one signal per message part, set only when that part changed.
//!
//! The reducer hands over a whole snapshot per batch of frames. Diffing it here, row by row, keeps the DOM work of
//! a `delta` to the one part it grew: finished rows keep their signals untouched, so their DOM is never rebuilt.
//! A text part keeps its [`MarkdownStream`], so a delta re-parses only the answer's open tail block.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use leptos::prelude::*;

use crate::chat_state::ChatSnapshot;
use crate::markdown::{MarkdownStream, escape_html};
use crate::protocol::{
    ChatMessage, ChatMessagePart, ChatToolPart, ErrorPart, FilePart, MessageUsage, Role, RunChanges,
};

/// Brings a text part's markdown to the text so far: [`MarkdownStream::sync`], which in the browser comes from a WASM
/// chunk of its own (`markdown_chunk`).
type SyncMarkdown = fn(&mut MarkdownStream, &str) -> bool;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod markdown_chunk;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
use markdown_chunk::parser_or_load;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use markdown_chunk::{prefetch_parser, track_parser};

/// The server and the native tests link the parser in.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn parser_or_load() -> Option<SyncMarkdown> {
    Some(MarkdownStream::sync)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn track_parser() {}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn prefetch_parser() {}

/// What identifies a row of a message: text, thinking and error parts by position, tool parts by call id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PartKey {
    Text(usize),
    Thinking(usize),
    Error(usize),
    File(usize),
    Tool(String),
}

impl PartKey {
    fn of(index: usize, part: &ChatMessagePart) -> Self {
        match part {
            ChatMessagePart::Text(_) => PartKey::Text(index),
            ChatMessagePart::Thinking(_) => PartKey::Thinking(index),
            ChatMessagePart::Error(_) => PartKey::Error(index),
            ChatMessagePart::File(_) => PartKey::File(index),
            ChatMessagePart::Tool(tool) => PartKey::Tool(tool.tool_call_id.clone()),
        }
    }
}

/// A message as the view sees it.
#[derive(Clone)]
pub struct MessageRow {
    pub id: String,
    pub role: Role,
    pub parts: ArcRwSignal<Vec<PartRow>>,
    /// Where the message stands among its siblings, when it has any (an edit, a regeneration).
    pub place: ArcRwSignal<Option<BranchPlace>>,
    /// What the run that finished this answer changed in the workspace's files, if it changed any.
    pub changes: ArcRwSignal<Option<RunChanges>>,
    /// What the model calls of the run that wrote this answer used, once the runtime has counted one.
    pub usage: ArcRwSignal<Option<MessageUsage>>,
}

/// "‹ 2/3 ›": a message's place among the versions of it, and the versions on either side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchPlace {
    /// 1-based, as shown.
    pub number: usize,
    pub count: usize,
    pub previous: Option<String>,
    pub next: Option<String>,
}

impl BranchPlace {
    pub fn of(snapshot: &ChatSnapshot, id: &str) -> Option<BranchPlace> {
        let siblings = snapshot.tree.siblings(id).filter(|siblings| siblings.ids.len() > 1)?;
        Some(BranchPlace {
            number: siblings.position + 1,
            count: siblings.ids.len(),
            previous: siblings.previous().map(str::to_owned),
            next: siblings.next().map(str::to_owned),
        })
    }
}

/// A part as the view sees it: its key and the signals of its content.
#[derive(Clone)]
pub struct PartRow {
    pub key: PartKey,
    pub content: PartSignals,
}

#[derive(Clone)]
pub enum PartSignals {
    /// Assistant text, rendered as markdown.
    Text(MarkdownSignals),
    /// The user's text, shown as typed.
    Plain(ArcRwSignal<String>),
    Thinking {
        text: ArcRwSignal<String>,
        open: ArcRwSignal<bool>,
    },
    Error(ArcRwSignal<ErrorPart>),
    /// An attached file: it never changes once logged.
    File(FilePart),
    Tool(ArcRwSignal<ChatToolPart>),
}

/// A finished markdown block: its HTML never changes, so its DOM is built once.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkdownBlock {
    /// Unique within its text part, also across a restart of the part's text.
    pub key: u64,
    pub html: Arc<str>,
}

#[derive(Clone)]
pub struct MarkdownSignals {
    pub blocks: ArcRwSignal<Vec<MarkdownBlock>>,
    pub tail: ArcRwSignal<String>,
}

/// What one [`TranscriptRows::sync`] changed.
#[derive(Debug, Default, PartialEq)]
pub struct SyncReport {
    /// The list of messages changed (one added, removed, or the session switched).
    pub rows_changed: bool,
    /// The first message is not the one it was: another session, or the first load of one.
    pub session_replaced: bool,
    /// Parts whose signals were set: message id and part key.
    pub parts_updated: Vec<(String, PartKey)>,
}

struct RowState {
    row: MessageRow,
    parts: Vec<PartState>,
}

struct PartState {
    row: PartRow,
    markdown: Option<MarkdownStream>,
    blocks_made: u64,
    /// Not yet reported as updated.
    new: bool,
}

/// The rows of a transcript, kept in step with the reducer's snapshot.
pub struct TranscriptRows {
    rows: Vec<RowState>,
    view: ArcRwSignal<Vec<MessageRow>>,
}

impl Default for TranscriptRows {
    fn default() -> Self {
        TranscriptRows { rows: Vec::new(), view: ArcRwSignal::new(Vec::new()) }
    }
}

impl TranscriptRows {
    /// The rows to render, keyed by message id.
    pub fn view(&self) -> ArcRwSignal<Vec<MessageRow>> {
        self.view.clone()
    }

    /// Brings the rows to `snapshot`, setting only the signals of what changed. The text of a message the page has
    /// not built (`built` says which are, by position) is parsed only once it is built ([`Self::render_markdown`]):
    /// a session of thousands of answers opens without parsing them all.
    pub fn sync(&mut self, snapshot: &ChatSnapshot, built: &dyn Fn(usize) -> bool) -> SyncReport {
        let mut report = SyncReport::default();
        // Answers follow the first message: the parser is fetched now rather than when their text arrives.
        let parser = if snapshot.messages.is_empty() { None } else { parser_or_load() };
        let same_rows = self.rows.len() == snapshot.messages.len()
            && self.rows.iter().zip(&snapshot.messages).all(|(row, m)| row.row.id == m.id && row.row.role == m.role);
        if !same_rows {
            report.rows_changed = true;
            report.session_replaced =
                self.rows.first().map(|row| &row.row.id) != snapshot.messages.first().map(|m| &m.id);
            let mut old: HashMap<String, RowState> =
                self.rows.drain(..).map(|state| (state.row.id.clone(), state)).collect();
            self.rows = snapshot
                .messages
                .iter()
                .map(|message| match old.remove(&message.id) {
                    Some(state) if state.row.role == message.role => state,
                    Some(_) | None => RowState {
                        row: MessageRow {
                            id: message.id.clone(),
                            role: message.role,
                            parts: ArcRwSignal::new(Vec::new()),
                            place: ArcRwSignal::new(None),
                            changes: ArcRwSignal::new(None),
                            usage: ArcRwSignal::new(None),
                        },
                        parts: Vec::new(),
                    },
                })
                .collect();
        }
        let streaming = snapshot.run.as_ref().map(|run| run.message);
        let branched = snapshot.tree.has_branches();
        for (index, (state, message)) in self.rows.iter_mut().zip(&snapshot.messages).enumerate() {
            let markdown = if built(index) { Markdown::of(parser) } else { Markdown::Later };
            sync_parts(state, message, streaming == Some(index), markdown, &mut report);
            let place = if branched { BranchPlace::of(snapshot, &message.id) } else { None };
            set_if_changed(&state.row.place, &place);
            // Compared before cloning: a sync runs per batch of frames, and the summary rarely changes.
            if state.row.changes.with_untracked(|shown| shown.as_ref() != message.changes.as_deref()) {
                state.row.changes.set(message.changes.as_deref().cloned());
            }
            if state.row.usage.with_untracked(|shown| shown.as_ref() != message.usage.as_deref()) {
                state.row.usage.set(message.usage.as_deref().cloned());
            }
        }
        if report.rows_changed {
            self.view.set(self.rows.iter().map(|state| state.row.clone()).collect());
        }
        report
    }

    /// Parses the text of the messages at `messages` (positions) that [`Self::sync`] left for later, before the page
    /// builds them.
    pub fn render_markdown(&mut self, snapshot: &ChatSnapshot, messages: Range<usize>) {
        let markdown = Markdown::of(parser_or_load());
        let rows = self.rows.iter_mut().zip(&snapshot.messages).skip(messages.start).take(messages.len());
        // Rows not yet in step with the snapshot (a message added since the last sync) wait for the next sync.
        for (state, message) in rows.filter(|(state, message)| state.row.id == message.id) {
            for (part_state, part) in state.parts.iter_mut().zip(&message.parts) {
                if matches!(part_state.row.content, PartSignals::Text(_)) {
                    update_part(part_state, part, false, markdown);
                }
            }
        }
    }
}

/// What becomes of an answer's text in a sync.
#[derive(Clone, Copy)]
enum Markdown {
    /// Parsed into blocks.
    Parsed(SyncMarkdown),
    /// Shown as plain text: the parser's chunk is on its way.
    Unparsed,
    /// Left as it is: the message is not built, and is parsed when it is.
    Later,
}

impl Markdown {
    fn of(parser: Option<SyncMarkdown>) -> Self {
        parser.map_or(Markdown::Unparsed, Markdown::Parsed)
    }
}

fn sync_parts(
    state: &mut RowState,
    message: &ChatMessage,
    streaming: bool,
    markdown: Markdown,
    report: &mut SyncReport,
) {
    let same_parts = state.parts.len() == message.parts.len()
        && state
            .parts
            .iter()
            .zip(message.parts.iter().enumerate())
            .all(|(part, (index, p))| part.row.key == PartKey::of(index, p));
    if !same_parts {
        let mut old: HashMap<PartKey, PartState> =
            state.parts.drain(..).map(|part| (part.row.key.clone(), part)).collect();
        state.parts = message
            .parts
            .iter()
            .enumerate()
            .map(|(index, part)| {
                let key = PartKey::of(index, part);
                old.remove(&key).unwrap_or_else(|| new_part(key, part, message.role))
            })
            .collect();
        state.row.parts.set(state.parts.iter().map(|part| part.row.clone()).collect());
    }
    let last = message.parts.len().saturating_sub(1);
    for (index, (part_state, part)) in state.parts.iter_mut().zip(&message.parts).enumerate() {
        let created = std::mem::take(&mut part_state.new);
        // A part made in this sync holds a copy of its content already; comparing it again costs a session of
        // thousands of tool calls tens of milliseconds on open. Text and thinking still need their first update.
        let copied = created
            && match part_state.row.content {
                PartSignals::Plain(_) | PartSignals::Error(_) | PartSignals::File(_) | PartSignals::Tool(_) => true,
                PartSignals::Text(_) | PartSignals::Thinking { .. } => false,
            };
        let changed = !copied && update_part(part_state, part, streaming && index == last, markdown);
        if changed || created {
            report.parts_updated.push((message.id.clone(), part_state.row.key.clone()));
        }
    }
}

fn new_part(key: PartKey, part: &ChatMessagePart, role: Role) -> PartState {
    let (content, markdown) = match part {
        ChatMessagePart::Text(text) if role == Role::User => {
            (PartSignals::Plain(ArcRwSignal::new(text.text.clone())), None)
        }
        ChatMessagePart::Text(_) => (
            PartSignals::Text(MarkdownSignals {
                blocks: ArcRwSignal::new(Vec::new()),
                tail: ArcRwSignal::new(String::new()),
            }),
            Some(MarkdownStream::default()),
        ),
        ChatMessagePart::Thinking(thinking) => (
            PartSignals::Thinking { text: ArcRwSignal::new(thinking.text.clone()), open: ArcRwSignal::new(false) },
            None,
        ),
        ChatMessagePart::Error(error) => (PartSignals::Error(ArcRwSignal::new(error.clone())), None),
        ChatMessagePart::File(file) => (PartSignals::File(file.clone()), None),
        ChatMessagePart::Tool(tool) => (PartSignals::Tool(ArcRwSignal::new((**tool).clone())), None),
    };
    PartState { row: PartRow { key, content }, markdown, blocks_made: 0, new: true }
}

/// Sets the part's signals that differ from `part`; returns whether any did.
fn update_part(state: &mut PartState, part: &ChatMessagePart, open: bool, markdown: Markdown) -> bool {
    match (&state.row.content, part) {
        (PartSignals::Text(signals), ChatMessagePart::Text(text)) => {
            let stream = state.markdown.get_or_insert_with(MarkdownStream::default);
            if stream.source() == text.text {
                return false;
            }
            let sync_markdown = match markdown {
                Markdown::Parsed(sync_markdown) => sync_markdown,
                // Unformatted until the parser is there; the stream stays empty, so the sync after its arrival
                // renders the whole text.
                Markdown::Unparsed => {
                    let mut plain = String::from("<p class=\"markdown__unparsed\">");
                    escape_html(&mut plain, &text.text);
                    plain.push_str("</p>");
                    return set_if_changed(&signals.tail, &plain);
                }
                Markdown::Later => return false,
            };
            let finished_before = stream.finished().len();
            let kept = sync_markdown(stream, &text.text);
            let start = if kept { finished_before } else { 0 };
            if !kept || stream.finished().len() > finished_before {
                let mut made = state.blocks_made;
                let fresh: Vec<MarkdownBlock> = stream.finished()[start..]
                    .iter()
                    .map(|html| {
                        made += 1;
                        MarkdownBlock { key: made, html: Arc::from(html.as_str()) }
                    })
                    .collect();
                state.blocks_made = made;
                if kept {
                    signals.blocks.update(|blocks| blocks.extend(fresh));
                } else {
                    signals.blocks.set(fresh);
                }
            }
            if signals.tail.with_untracked(|tail| tail != stream.tail()) {
                signals.tail.set(stream.tail().to_owned());
            }
            true
        }
        (PartSignals::Plain(signal), ChatMessagePart::Text(text)) => set_if_changed(signal, &text.text),
        (PartSignals::Thinking { text, open: is_open }, ChatMessagePart::Thinking(thinking)) => {
            let mut changed = false;
            if text.with_untracked(|old| *old != thinking.text) {
                text.set(thinking.text.clone());
                changed = true;
            }
            if is_open.get_untracked() != open {
                is_open.set(open);
                changed = true;
            }
            changed
        }
        (PartSignals::Error(signal), ChatMessagePart::Error(error)) => set_if_changed(signal, error),
        (PartSignals::Tool(signal), ChatMessagePart::Tool(tool)) => set_if_changed(signal, &**tool),
        // Keys carry the kind, so a part never meets signals of another kind; should it, nothing is shown wrong.
        // A file never changes.
        (
            PartSignals::Text(_)
            | PartSignals::Plain(_)
            | PartSignals::Thinking { .. }
            | PartSignals::Error(_)
            | PartSignals::File(_)
            | PartSignals::Tool(_),
            ChatMessagePart::Text(_)
            | ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_)
            | ChatMessagePart::Tool(_),
        ) => false,
    }
}

fn set_if_changed<T: Clone + PartialEq + Send + Sync + 'static>(signal: &ArcRwSignal<T>, value: &T) -> bool {
    if signal.with_untracked(|old| old == value) {
        return false;
    }
    signal.set(value.clone());
    true
}

#[cfg(test)]
mod tests;
