//! Mapper cost: maps N agent events (the `basic_tools` pi recording, cycled) to frames and encodes them as NDJSON.
//!
//! `cargo bench --features ssr --bench map_events` prints events/s and frames/s.
//! For instruction counts, run the built bench binary under
//! `valgrind --tool=callgrind --toggle-collect='map_events::map_and_encode'` with `--events N` and
//! `--events 2N`: (Ir(2N) − Ir(N)) / N is the cost of mapping and encoding one event, setup and the
//! bench's own copying of events excluded.

use std::time::Instant;

use chatwire::mapper::EventMapper;
use chatwire::ndjson::encode_frame_into;
use chatwire::protocol::ChatFrame;
use chatwire::runtime::event::AgentEvent;

const RECORDING: &str = include_str!("../tests/vectors/pi-rpc/basic_tools.jsonl");

/// What is measured: one event mapped and its frames encoded. Kept out of line so that
/// `valgrind --tool=callgrind --toggle-collect=map_events::map_and_encode` counts exactly this.
/// `frames` is the caller's reusable buffer, as in `chatwire map` and the server's run task.
#[inline(never)]
fn map_and_encode(
    mapper: &mut EventMapper,
    event: AgentEvent,
    frames: &mut Vec<ChatFrame>,
    encoded: &mut Vec<u8>,
) -> u64 {
    mapper.map_into(event, frames);
    let count = frames.len() as u64;
    for frame in frames.drain(..) {
        encode_frame_into(&frame, encoded);
    }
    count
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events_wanted: usize = args
        .iter()
        .position(|a| a == "--events")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let events: Vec<AgentEvent> =
        RECORDING.lines().map(|line| AgentEvent::parse(line).expect("the recording parses")).collect();

    let mut counter = 0_u64;
    let mut mapper = EventMapper::new(
        "bench",
        Box::new(|| 1_800_000_000_000),
        Box::new(move |kind| {
            counter += 1;
            format!("{kind}-{counter}")
        }),
    );
    let mut encoded = Vec::with_capacity(1 << 20);
    let mut mapped = Vec::new();
    let mut frames = 0_u64;
    let mut bytes = 0_u64;
    let started = Instant::now();
    for event in events.iter().cycle().take(events_wanted) {
        frames += map_and_encode(&mut mapper, event.clone(), &mut mapped, &mut encoded);
        if encoded.len() > 1 << 19 {
            bytes += encoded.len() as u64;
            encoded.clear();
        }
    }
    for frame in mapper.settle() {
        encode_frame_into(&frame, &mut encoded);
        frames += 1;
    }
    bytes += encoded.len() as u64;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "mapped {events_wanted} events into {frames} frames ({:.1} MB NDJSON) in {seconds:.3} s: {:.0} events/s, {:.0} frames/s",
        bytes as f64 / 1e6,
        events_wanted as f64 / seconds,
        frames as f64 / seconds
    );
}
