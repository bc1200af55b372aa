//! Reducer cost per `delta` must not grow with the answer: 10-byte deltas applied to an answer of 10 KB and of
//! 1 MB (the size a 100k-delta answer reaches) should cost the same.
//!
//! `cargo bench --bench reducer_delta` runs criterion for both sizes, then prints the ratio of the two
//! per-delta times measured in this one run (medians of interleaved blocks, so drift hits both alike).

use std::hint::black_box;
use std::time::{Duration, Instant};

use chatwire::chat_state::{ChatSnapshot, apply};
use chatwire::protocol::*;
use criterion::{Criterion, criterion_group};

const DELTA: &str = "0123456789";
const BLOCK: usize = 1_000;

fn delta(seq: Seq) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: DELTA.into(), message_id: None })
}

/// A running answer of `bytes` streamed text, after a prompt, as `bytes / 10` deltas made it.
fn answer_of(bytes: usize) -> ChatSnapshot {
    let mut snapshot = ChatSnapshot::default();
    apply(
        &mut snapshot,
        &ChatFrame::Start(StartFrame {
            seq: Some(1),
            id: "a1".into(),
            run_id: "run-1".into(),
            session_id: "s".into(),
            session_file: None,
            session_reset: None,
            diagnostics: None,
            branch: None,
        }),
    );
    apply(
        &mut snapshot,
        &ChatFrame::Message(MessageFrame {
            seq: Some(2),
            message: ChatMessage {
                id: "u1".into(),
                role: Role::User,
                parts: vec![ChatMessagePart::text("Write a long answer.")],
                created_at: None,
                changes: None,
                usage: None,
            },
        }),
    );
    for i in 0..bytes / DELTA.len() {
        apply(&mut snapshot, &delta(i as Seq + 3));
    }
    snapshot
}

/// Keeps the answer at its size between measurements: the text is cut back, its capacity stays.
fn cut_back(snapshot: &mut ChatSnapshot, bytes: usize) {
    let answer = snapshot.messages.last_mut().expect("the answer is there");
    match answer.parts.last_mut() {
        Some(ChatMessagePart::Text(part)) => part.text.truncate(bytes),
        other => panic!("the answer ends in its text, not {other:?}"),
    }
}

/// The frames of one block, made before timing so that only `apply` is measured.
fn block_frames(first_seq: Seq, count: usize) -> Vec<ChatFrame> {
    (0..count).map(|i| delta(first_seq + i as Seq)).collect()
}

/// Applies `frames` to the answer of `bytes`, returning the time taken.
fn timed_block(snapshot: &mut ChatSnapshot, bytes: usize, frames: &[ChatFrame]) -> Duration {
    cut_back(snapshot, bytes);
    let started = Instant::now();
    for frame in frames {
        black_box(apply(snapshot, black_box(frame)));
    }
    started.elapsed()
}

const SIZES: [(usize, &str); 2] = [(10_000, "10 KB"), (1_000_000, "1 MB")];

fn per_delta(c: &mut Criterion) {
    let mut group = c.benchmark_group("reducer delta");
    for (bytes, label) in SIZES {
        let mut snapshot = answer_of(bytes);
        let mut next_seq = snapshot.last_seq + 1;
        group.bench_function(format!("10-byte delta at {label}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let count = left.min(BLOCK);
                    let frames = block_frames(next_seq, count);
                    next_seq += count as Seq;
                    total += timed_block(&mut snapshot, bytes, &frames);
                    left -= count;
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, per_delta);

/// Interleaves blocks at both sizes and compares the medians of their per-delta times.
fn print_ratio() {
    const ROUNDS: usize = 400;
    let mut snapshots: Vec<ChatSnapshot> = SIZES.iter().map(|&(bytes, _)| answer_of(bytes)).collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); SIZES.len()];
    for _ in 0..ROUNDS {
        for (i, &(bytes, _)) in SIZES.iter().enumerate() {
            let frames = block_frames(snapshots[i].last_seq + 1, BLOCK);
            let elapsed = timed_block(&mut snapshots[i], bytes, &frames);
            times[i].push(elapsed.as_secs_f64() * 1e9 / BLOCK as f64);
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|samples| {
            samples.sort_by(f64::total_cmp);
            samples[samples.len() / 2]
        })
        .collect();
    for ((_, label), median) in SIZES.iter().zip(&medians) {
        println!("reducer: 10-byte delta at {label}: {median:.1} ns (median of {ROUNDS} blocks of {BLOCK})");
    }
    println!("reducer: per-delta time at 1 MB / at 10 KB = {:.2}", medians[1] / medians[0]);
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratio();
}
