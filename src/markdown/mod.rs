//! Streaming GFM to safe HTML: top-level blocks that can no longer change are rendered once; only the open tail is
//! re-parsed when more text arrives.
//!
//! The HTML is built here, not by the DOM, so that it can be tested natively: every piece of the model's text is
//! escaped (raw HTML included), and links with an unsafe scheme lose their `href`.

mod html;

pub use html::{escape_html, has_code_bar, is_safe_url, relabel_code_bars, render};

use pulldown_cmark::{Event, Options, Parser};

/// The GFM extensions an answer may use. Footnotes stay off: a definition can follow its reference anywhere in the
/// answer, which would make a finished block depend on text that has not arrived yet.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// One assistant text part being streamed: the text so far, the HTML of its finished blocks and of its open tail.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarkdownStream {
    source: String,
    /// `source[..settled]` is made of finished blocks; it always ends at a line start.
    settled: usize,
    finished: Vec<String>,
    tail: String,
}

impl MarkdownStream {
    pub fn new(text: &str) -> Self {
        let mut stream = MarkdownStream::default();
        stream.push(text);
        stream
    }

    /// The text rendered so far.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// HTML of each finished top-level block (with the blank lines after it), in order. Only ever grows.
    pub fn finished(&self) -> &[String] {
        &self.finished
    }

    /// HTML of the blocks that may still change.
    pub fn tail(&self) -> &str {
        &self.tail
    }

    /// Appends `text`: finishes the blocks it closes and re-renders only what is still open.
    pub fn push(&mut self, text: &str) {
        self.source.push_str(text);
        self.settle();
    }

    /// Brings the stream to `text`: an append when `text` extends what was rendered, otherwise a fresh start.
    /// Returns whether the finished blocks were kept (`false` when everything was rendered anew).
    pub fn sync(&mut self, text: &str) -> bool {
        if let Some(appended) = text.strip_prefix(self.source.as_str()) {
            if !appended.is_empty() {
                self.push(appended);
            }
            true
        } else {
            *self = MarkdownStream::new(text);
            false
        }
    }

    fn settle(&mut self) {
        let open = &self.source[self.settled..];
        let line_starts = block_line_starts(open);
        // A block is final once the next block starts on a complete line: the lines that follow can only extend
        // the last block or start new ones. A line still being written can change what the line before it is
        // (`#` is a heading, `#x` continues a paragraph), so it never closes anything.
        let complete = open.rfind('\n').map_or(0, |newline| newline + 1);
        let mut start = 0;
        for &next in line_starts.iter().skip(1) {
            if next >= complete {
                break;
            }
            self.finished.push(render(&open[start..next]));
            start = next;
        }
        self.settled += start;
        self.tail = render(&self.source[self.settled..]);
    }
}

/// Where each top-level block of `text` starts, moved back to the start of its line (so indentation stays with it).
fn block_line_starts(text: &str) -> Vec<usize> {
    let mut depth = 0usize;
    let mut starts = Vec::new();
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    starts.push(text[..range.start].rfind('\n').map_or(0, |newline| newline + 1));
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Rule if depth == 0 => starts.push(text[..range.start].rfind('\n').map_or(0, |newline| newline + 1)),
            Event::Html(_) | Event::InlineHtml(_) | Event::Text(_) | Event::Code(_) if depth == 0 => {
                starts.push(text[..range.start].rfind('\n').map_or(0, |newline| newline + 1))
            }
            Event::Rule
            | Event::Html(_)
            | Event::InlineHtml(_)
            | Event::Text(_)
            | Event::Code(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_)
            | Event::FootnoteReference(_)
            | Event::SoftBreak
            | Event::HardBreak
            | Event::TaskListMarker(_) => {}
        }
    }
    starts.dedup();
    starts
}

#[cfg(test)]
mod tests;
