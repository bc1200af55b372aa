//! WASM entry points of the decode bench: NDJSON bytes in, the number of lines decoded out.
//!
//! Each call takes a whole buffer (the bench's frames of one type, or all of them), as the browser feeds a network
//! chunk, so the JS ↔ WASM crossing and the copy of the bytes into WASM memory are counted once per buffer, as in
//! the client.

use chatwire::ndjson::{DEFAULT_MAX_LINE_BYTES, FrameDecoder, LineEvent, LineSplitter};
use wasm_bindgen::prelude::wasm_bindgen;

/// chatwire's decoder as the client runs it (`FrameDecoder`: lines, then `parse_frame` per line); the frames are
/// dropped. Returns how many lines gave a frame, so the caller can check that all did.
#[wasm_bindgen]
pub fn decode_frames(bytes: &[u8]) -> u32 {
    let mut decoder = FrameDecoder::default();
    let mut results = decoder.feed(bytes);
    results.extend(decoder.finish());
    results.iter().filter(|result| result.is_ok()).count() as u32
}

/// The same lines, each parsed into a `serde_json::Value` tree and nothing more: what a `Value` tree costs.
#[wasm_bindgen]
pub fn decode_values(bytes: &[u8]) -> u32 {
    each_line(bytes, |line| serde_json::from_slice::<serde_json::Value>(line).is_ok())
}

/// The same lines, only checked to be JSON (`IgnoredAny`): the floor of any serde_json decoder in this build.
#[wasm_bindgen]
pub fn scan_json(bytes: &[u8]) -> u32 {
    each_line(bytes, |line| serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok())
}

fn each_line(bytes: &[u8], mut decode: impl FnMut(&[u8]) -> bool) -> u32 {
    let mut splitter = LineSplitter::new(DEFAULT_MAX_LINE_BYTES);
    let mut decoded = 0;
    let mut on_event = |event: LineEvent<'_>| match event {
        LineEvent::Line(line) => decoded += u32::from(decode(line.bytes)),
        LineEvent::TooLong { .. } => {}
    };
    splitter.feed(bytes, &mut on_event);
    splitter.finish(&mut on_event);
    decoded
}
