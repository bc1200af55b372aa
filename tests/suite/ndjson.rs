//! The NDJSON codec: LF-only framing, chunk-safe UTF-8, line limits, and recovery after bad lines.

use chatwire::ndjson::*;
use chatwire::protocol::{ChatFrame, DeltaFrame};
use proptest::prelude::*;

fn delta(text: &str) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: None, text: text.into(), message_id: None })
}

fn frames_of(results: Vec<Result<ChatFrame, DecodeError>>) -> Vec<ChatFrame> {
    results.into_iter().map(|r| r.expect("every line decodes")).collect()
}

fn decode_in_chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Result<ChatFrame, DecodeError>> {
    let mut decoder = FrameDecoder::default();
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        decoder.feed_into(&bytes[start..cut], &mut out);
        start = cut;
    }
    decoder.feed_into(&bytes[start..], &mut out);
    out.extend(decoder.finish());
    out
}

#[test]
fn encoder_writes_one_line_ending_in_lf() {
    let line = encode_frame(&delta("a\nb\u{2028}c"));
    assert_eq!(line, "{\"type\":\"delta\",\"text\":\"a\\nb\u{2028}c\"}\n");
}

#[test]
fn line_separators_inside_strings_do_not_split_a_frame() {
    let stream = encode_frame(&delta("one\u{2028}two\u{2029}three\u{85}four"));
    assert_eq!(frames_of(decode_all(stream.as_bytes())), vec![delta("one\u{2028}two\u{2029}three\u{85}four")]);
}

#[test]
fn one_trailing_cr_is_stripped() {
    let stream = b"{\"type\":\"delta\",\"text\":\"a\"}\r\n{\"type\":\"delta\",\"text\":\"b\"}\n";
    assert_eq!(frames_of(decode_all(stream)), vec![delta("a"), delta("b")]);
}

#[test]
fn a_split_inside_a_multibyte_character_decodes_the_same() {
    let stream = encode_frame(&delta("é😀漢字"));
    let bytes = stream.as_bytes();
    for cut in 1..bytes.len() {
        assert_eq!(frames_of(decode_in_chunks(bytes, &[cut])), vec![delta("é😀漢字")], "cut at byte {cut}");
    }
    let byte_by_byte: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(frames_of(decode_in_chunks(bytes, &byte_by_byte)), vec![delta("é😀漢字")]);
}

#[test]
fn final_line_without_lf_is_flushed_at_end() {
    let mut decoder = FrameDecoder::default();
    assert!(decoder.feed(br#"{"type":"delta","text":"tail"}"#).is_empty());
    assert_eq!(frames_of(decoder.finish()), vec![delta("tail")]);
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let stream = b"\n\r\n   \n{\"type\":\"delta\"}\n";
    let results = decode_all(stream);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].as_ref().unwrap_err().line(), Some(4));
}

#[test]
fn a_bad_line_is_reported_with_its_number_and_the_next_lines_still_decode() {
    let stream =
        b"{\"type\":\"delta\",\"text\":\"a\"}\nnot json\n{\"type\":\"nope\"}\n{\"type\":\"delta\",\"text\":\"b\"}\n";
    let results = decode_all(stream);
    assert_eq!(results.len(), 4);
    assert_eq!(results[0], Ok(delta("a")));
    let bad = results[1].as_ref().unwrap_err();
    assert_eq!(bad.line(), Some(2));
    assert!(bad.to_string().starts_with("line 2: invalid JSON"), "{bad}");
    assert!(results[2].as_ref().unwrap_err().to_string().contains("unknown frame type `nope`"));
    assert_eq!(results[3], Ok(delta("b")));
}

#[test]
fn an_over_long_line_is_an_error_and_decoding_recovers_at_the_next_lf() {
    let long = encode_frame(&delta(&"x".repeat(500)));
    let stream = format!("{}{long}{}", encode_frame(&delta("before")), encode_frame(&delta("after")));
    // Over the limit inside one chunk, and over it across many small chunks.
    for chunk in [stream.len(), 7] {
        let cuts: Vec<usize> = (chunk..stream.len()).step_by(chunk).collect();
        let results = {
            let mut decoder = FrameDecoder::new(100);
            let mut out = Vec::new();
            let mut start = 0;
            for cut in cuts {
                decoder.feed_into(&stream.as_bytes()[start..cut], &mut out);
                start = cut;
            }
            decoder.feed_into(&stream.as_bytes()[start..], &mut out);
            out.extend(decoder.finish());
            out
        };
        assert_eq!(results.len(), 3, "chunk size {chunk}: {results:?}");
        assert_eq!(results[0], Ok(delta("before")));
        assert_eq!(results[1], Err(DecodeError::TooLong { number: 2, limit: 100 }));
        assert_eq!(results[2], Ok(delta("after")));
    }
}

#[test]
fn an_over_long_last_line_without_lf_is_reported_once() {
    let mut decoder = FrameDecoder::new(10);
    let mut results = decoder.feed(b"{\"type\":\"delta\",");
    results.extend(decoder.feed(b"\"text\":\"abc\"}"));
    results.extend(decoder.finish());
    assert_eq!(results, vec![Err(DecodeError::TooLong { number: 1, limit: 10 })]);
}

#[test]
fn line_splitter_hands_out_lines_with_numbers() {
    let mut splitter = LineSplitter::new(1024);
    let mut lines = Vec::new();
    let mut collect = |event: LineEvent<'_>| match event {
        LineEvent::Line(line) => lines.push((line.number, String::from_utf8(line.bytes.to_vec()).unwrap())),
        LineEvent::TooLong { number, .. } => panic!("line {number} is not too long"),
    };
    splitter.feed(b"a\r\nb", &mut collect);
    splitter.feed(b"c\n\nd\r\r\n", &mut collect);
    splitter.finish(&mut collect);
    assert_eq!(lines, vec![(1, "a".into()), (2, "bc".into()), (3, "".into()), (4, "d\r".into())]);
}

proptest! {
    #[test]
    fn any_chunking_of_a_valid_stream_yields_the_same_frames(
        frames in proptest::collection::vec(crate::support::strategies::frame(), 1..12),
        cut_seeds in proptest::collection::vec(any::<proptest::sample::Index>(), 0..16),
        crlf in any::<bool>(),
    ) {
        let mut stream = Vec::new();
        for frame in &frames {
            encode_frame_into(frame, &mut stream);
            if crlf {
                stream.insert(stream.len() - 1, b'\r');
            }
        }
        let mut cuts: Vec<usize> = cut_seeds.iter().map(|i| i.index(stream.len())).collect();
        cuts.sort_unstable();
        let decoded = frames_of(decode_in_chunks(&stream, &cuts));
        prop_assert_eq!(decoded, frames);
    }
}

proptest! {
    #[test]
    fn the_encoder_writes_what_serde_json_writes(frame in crate::support::strategies::frame()) {
        let mut expected = serde_json::to_vec(&frame).expect("frames serialize");
        expected.push(b'\n');
        prop_assert_eq!(String::from_utf8(encode_frame(&frame).into_bytes()).unwrap(), String::from_utf8(expected).unwrap());
    }
}

#[test]
fn the_encoder_escapes_every_control_character_as_serde_json_does() {
    let text: String = (0_u8..0x80).map(char::from).chain(['\u{2028}', '\u{2029}', 'é', '😀']).collect();
    let frame = delta(&text);
    let mut expected = serde_json::to_vec(&frame).expect("frames serialize");
    expected.push(b'\n');
    assert_eq!(encode_frame(&frame).into_bytes(), expected);
}
