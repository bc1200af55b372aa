//! Decoder throughput: a 100k-frame NDJSON stream, fed in 64 KiB chunks, in frames/s and bytes/s.

use chatwire::ndjson::{FrameDecoder, encode_frame_into};
use chatwire::protocol::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const FRAMES: usize = 100_000;
const CHUNK: usize = 64 * 1024;

/// A stream shaped like a real run: mostly text deltas, some thinking, tool args and tool upserts.
fn stream() -> Vec<u8> {
    let mut bytes = Vec::new();
    for i in 0..FRAMES {
        let seq = Some(i as u64 + 1);
        let frame = match i % 20 {
            0 => {
                ChatFrame::Thinking(ThinkingFrame {
                    seq, text: "Considering the next step… ".into(), message_id: None
                })
            }
            1 => ChatFrame::ToolArgsDelta(ToolArgsDeltaFrame {
                seq,
                tool_call_id: "call_01HZX".into(),
                path: vec![PathSegment::Key("content".into())].into(),
                text: "    let value = compute(\"input\");\n".into(),
                message_id: None,
            }),
            2 => {
                let mut part = ChatToolPart::new("Bash", format!("call_{i}"), ToolState::OutputAvailable);
                part.input = Some(json!({"command": "cargo test --quiet"}));
                part.output = Some(json!({"output": "running 12 tests\n............\ntest result: ok", "exitCode": 0}));
                ChatFrame::Tool(ToolFrame { seq, part: Box::new(part), message_id: None })
            }
            _ => ChatFrame::Delta(DeltaFrame {
                seq,
                text: "some streamed answer text, ünïcode ".into(),
                message_id: None,
            }),
        };
        encode_frame_into(&frame, &mut bytes);
    }
    bytes
}

fn decode(bytes: &[u8]) -> usize {
    let mut decoder = FrameDecoder::default();
    let mut out = Vec::with_capacity(4096);
    let mut frames = 0;
    for chunk in bytes.chunks(CHUNK) {
        decoder.feed_into(chunk, &mut out);
        frames += out.iter().filter(|r| r.is_ok()).count();
        out.clear();
    }
    frames + decoder.finish().len()
}

fn bench(c: &mut Criterion) {
    let bytes = stream();
    assert_eq!(decode(&bytes), FRAMES, "every frame of the bench stream decodes");
    let mut group = c.benchmark_group("ndjson_decode_100k");
    group.sample_size(10);
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.bench_function("frames", |b| b.iter(|| decode(&bytes)));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes", |b| b.iter(|| decode(&bytes)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
