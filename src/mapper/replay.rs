//! `chatwire map`: a JSONL stream of agent events in, the NDJSON frames a viewer of that session would receive out.

use std::io::{self, Read, Write};

use super::EventMapper;
use crate::ndjson::{LineEvent, LineSplitter, encode_frame_into};
use crate::protocol::{ChatFrame, Seq};
use crate::runtime::event::AgentEvent;

/// pi puts the whole conversation on some lines (`agent_end`, `get_messages`); they can be megabytes.
pub const MAX_EVENT_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    pub lines: u64,
    pub frames: u64,
    pub bad_lines: u64,
}

/// Maps every event of `input`, writes the frames (numbered with `seq` from 1, as in a session log) to `output`,
/// and describes each bad line on `diagnostics`. A bad line ends the run it fell into with an `error` frame;
/// the lines after it are still mapped.
pub fn replay(
    mapper: &mut EventMapper,
    mut input: impl Read,
    output: impl Write,
    mut diagnostics: impl Write,
) -> io::Result<ReplayReport> {
    let mut output = io::BufWriter::new(output);
    let mut report = ReplayReport::default();
    let mut seq: Seq = 0;
    let mut encoded = Vec::with_capacity(64 * 1024);
    let mut write_frames = |frames: &mut Vec<ChatFrame>, report: &mut ReplayReport, output: &mut dyn Write| {
        for frame in frames.drain(..) {
            let frame = match frame {
                ChatFrame::Ping => frame,
                logged => {
                    seq += 1;
                    logged.with_seq(seq)
                }
            };
            encode_frame_into(&frame, &mut encoded);
            report.frames += 1;
        }
        let written = output.write_all(&encoded);
        encoded.clear();
        written
    };

    let mut splitter = LineSplitter::new(MAX_EVENT_LINE_BYTES);
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut failure: Option<io::Error> = None;
    let mut frames = Vec::new();
    let mut handle =
        |event: LineEvent<'_>, mapper: &mut EventMapper, report: &mut ReplayReport| {
            let parsed = match event {
                LineEvent::Line(line) => {
                    report.lines = line.number;
                    if line.bytes.iter().all(u8::is_ascii_whitespace) {
                        return Ok(());
                    }
                    match std::str::from_utf8(line.bytes) {
                        Ok(text) => AgentEvent::parse(text).map_err(|e| (line.number, e.to_string())),
                        Err(e) => Err((line.number, format!("not UTF-8: {e}"))),
                    }
                }
                LineEvent::TooLong { number, limit } => {
                    report.lines = number;
                    Err((number, format!("line longer than {limit} bytes")))
                }
            };
            match parsed {
                Ok(event) => mapper.map_into(event, &mut frames),
                Err((number, problem)) => {
                    report.bad_lines += 1;
                    writeln!(diagnostics, "line {number}: {problem}")?;
                    frames.extend(mapper.fail(
                        format!("agent runtime sent malformed data: line {number}: {problem}"),
                        "malformed_event",
                    ));
                }
            }
            write_frames(&mut frames, report, &mut output)
        };

    loop {
        let read = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        splitter.feed(&chunk[..read], |event| {
            if failure.is_none()
                && let Err(e) = handle(event, mapper, &mut report)
            {
                failure = Some(e);
            }
        });
        if let Some(e) = failure.take() {
            return Err(e);
        }
    }
    splitter.finish(|event| {
        if failure.is_none()
            && let Err(e) = handle(event, mapper, &mut report)
        {
            failure = Some(e);
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let mut last = mapper.settle();
    write_frames(&mut last, &mut report, &mut output)?;
    output.flush()?;
    Ok(report)
}
