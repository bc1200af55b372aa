//! NDJSON framing of chat frames: the encoder and the incremental, chunk-safe decoder (DESIGN.md §6).
//!
//! Lines end at LF only, with one trailing CR stripped. A generic "lines"
//! reader is wrong here: some split on U+2028/U+2029 too, which are legal
//! unescaped inside JSON strings, and would cut a frame in half. Splitting on
//! the byte `\n` is safe across chunk boundaries that fall inside a multi-byte
//! UTF-8 character, because no byte of such a character is `\n`; UTF-8 is
//! validated per complete line.

mod encode;

use crate::protocol::{ChatFrame, FrameError, validate_frame};

/// Longest line accepted by default: big enough for a `done` frame carrying a long answer.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Appends one frame as one line, ending in `\n`: the bytes `serde_json::to_writer` writes for it.
pub fn encode_frame_into(frame: &ChatFrame, out: &mut Vec<u8>) {
    encode::frame(frame, out);
    out.push(b'\n');
}

/// One frame as one line, ending in `\n`.
pub fn encode_frame(frame: &ChatFrame) -> String {
    let mut out = Vec::with_capacity(128);
    encode_frame_into(frame, &mut out);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).expect("serde_json output is UTF-8")
}

/// A complete line, without its line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based number of the line in the stream, blank lines included.
    pub number: u64,
    pub bytes: &'a [u8],
}

/// What the splitter found: a line, or a line that was too long and was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEvent<'a> {
    Line(Line<'a>),
    TooLong { number: u64, limit: usize },
}

/// Splits a byte stream fed in arbitrary chunks into lines.
///
/// A line longer than the limit is reported once, as soon as it passes the
/// limit, and its bytes are dropped up to the next LF, so memory stays bounded
/// and the lines after it still come through.
#[derive(Debug)]
pub struct LineSplitter {
    pending: Vec<u8>,
    max_line_bytes: usize,
    lines_seen: u64,
    discarding: bool,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> Self {
        LineSplitter { pending: Vec::new(), max_line_bytes, lines_seen: 0, discarding: false }
    }

    /// Feeds one chunk; `on_event` sees every line completed by it, in order.
    pub fn feed(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(LineEvent<'_>)) {
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(end) => {
                    let (head, rest) = (&chunk[..end], &chunk[end + 1..]);
                    chunk = rest;
                    self.lines_seen += 1;
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    if self.pending.len() + head.len() > self.max_line_bytes {
                        self.pending.clear();
                        on_event(LineEvent::TooLong { number: self.lines_seen, limit: self.max_line_bytes });
                        continue;
                    }
                    // The common case — a whole line inside one chunk — is handed out without a copy.
                    if self.pending.is_empty() {
                        emit(self.lines_seen, head, &mut on_event);
                    } else {
                        self.pending.extend_from_slice(head);
                        emit(self.lines_seen, &self.pending, &mut on_event);
                        self.pending.clear();
                    }
                }
                None => {
                    if !self.discarding {
                        if self.pending.len() + chunk.len() > self.max_line_bytes {
                            self.pending.clear();
                            self.discarding = true;
                            on_event(LineEvent::TooLong { number: self.lines_seen + 1, limit: self.max_line_bytes });
                        } else {
                            self.pending.extend_from_slice(chunk);
                        }
                    }
                    chunk = &[];
                }
            }
        }
    }

    /// Ends the stream: a last line without LF is still a line.
    pub fn finish(&mut self, mut on_event: impl FnMut(LineEvent<'_>)) {
        if self.discarding {
            self.discarding = false;
            self.lines_seen += 1;
            return;
        }
        if !self.pending.is_empty() {
            self.lines_seen += 1;
            let pending = std::mem::take(&mut self.pending);
            emit(self.lines_seen, &pending, &mut on_event);
        }
    }
}

fn emit(number: u64, mut bytes: &[u8], on_event: &mut impl FnMut(LineEvent<'_>)) {
    if let [rest @ .., b'\r'] = bytes {
        bytes = rest;
    }
    on_event(LineEvent::Line(Line { number, bytes }));
}

/// A line of the stream that did not yield a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Invalid(#[from] FrameError),
    #[error("line {number}: longer than {limit} bytes; skipped")]
    TooLong { number: u64, limit: usize },
}

impl DecodeError {
    pub fn line(&self) -> Option<u64> {
        match self {
            DecodeError::Invalid(error) => error.line,
            DecodeError::TooLong { number, .. } => Some(*number),
        }
    }
}

/// Incremental decoder: bytes in any chunking → frames, one result per non-blank line.
///
/// A bad line yields an error carrying its line number, and decoding goes on with the next line.
#[derive(Debug)]
pub struct FrameDecoder {
    lines: LineSplitter,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl FrameDecoder {
    pub fn new(max_line_bytes: usize) -> Self {
        FrameDecoder { lines: LineSplitter::new(max_line_bytes) }
    }

    /// Decodes every line completed by `chunk`, appending the results to `out`.
    pub fn feed_into(&mut self, chunk: &[u8], out: &mut Vec<Result<ChatFrame, DecodeError>>) {
        self.lines.feed(chunk, |event| push_decoded(event, out));
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Result<ChatFrame, DecodeError>> {
        let mut out = Vec::new();
        self.feed_into(chunk, &mut out);
        out
    }

    /// Ends the stream, decoding a last line that had no LF.
    pub fn finish(&mut self) -> Vec<Result<ChatFrame, DecodeError>> {
        let mut out = Vec::new();
        self.lines.finish(|event| push_decoded(event, &mut out));
        out
    }
}

fn push_decoded(event: LineEvent<'_>, out: &mut Vec<Result<ChatFrame, DecodeError>>) {
    match event {
        LineEvent::Line(line) => {
            if line.bytes.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            out.push(validate_frame(line.number, line.bytes).map_err(DecodeError::from));
        }
        LineEvent::TooLong { number, limit } => out.push(Err(DecodeError::TooLong { number, limit })),
    }
}

/// Decodes a whole buffer at once.
pub fn decode_all(bytes: &[u8]) -> Vec<Result<ChatFrame, DecodeError>> {
    let mut decoder = FrameDecoder::default();
    let mut out = decoder.feed(bytes);
    out.extend(decoder.finish());
    out
}
