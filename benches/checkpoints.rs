//! File checkpoints (`chatwire::checkpoints`) of a workspace of a few thousand small files: the first record, a
//! record of the unchanged workspace (what every run starts with), a record after a run edited a few files, the
//! changes of that run and a restore of it. Prints the median and the slowest of each over the rounds. Target: an
//! unchanged workspace recorded in tens of milliseconds.
//!
//! `cargo bench --features ssr --bench checkpoints -- [--files N] [--rounds R]`
#![allow(clippy::unwrap_used)]

use std::fs;
use std::future::Future;
use std::time::{Duration, Instant};

use chatwire::checkpoints::Checkpoints;

/// Files per directory, so that the tree has the depth of a small project.
const PER_DIRECTORY: usize = 50;

/// Files a round's run edits.
const EDITED: usize = 10;

struct Options {
    files: usize,
    rounds: usize,
}

fn options() -> Options {
    let mut options = Options { files: 3_000, rounds: 20 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok()).expect("a number after the flag");
        match arg.as_str() {
            "--files" => options.files = value(),
            "--rounds" => options.rounds = value(),
            _ => {}
        }
    }
    options
}

async fn timed<T>(times: &mut Vec<Duration>, call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let result = call.await;
    times.push(started.elapsed());
    result
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let median = times[times.len() / 2];
    let slowest = times[times.len() - 1];
    println!("{what:<34} median {:>8.1} ms   slowest {:>8.1} ms", ms(median), ms(slowest));
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let options = options();
    let dir = tempfile::tempdir().unwrap();
    let work_tree = dir.path().join("workspace");
    for file in 0..options.files {
        let directory = work_tree.join(format!("src/module{}", file / PER_DIRECTORY));
        fs::create_dir_all(&directory).unwrap();
        let lines: String = (0..40).map(|line| format!("fn item_{file}_{line}() {{}}\n")).collect();
        fs::write(directory.join(format!("file{file}.rs")), lines).unwrap();
    }
    let checkpoints = Checkpoints::new(dir.path().join("shadow"), work_tree.clone(), 1 << 20);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();

    runtime.block_on(async {
        let started = Instant::now();
        checkpoints.record("first").await.unwrap();
        println!("{} files, first record: {:.1} ms", options.files, ms(started.elapsed()));

        let (mut unchanged, mut edited, mut changes, mut restore) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..options.rounds {
            let before = format!("before/run-{round}");
            let after = format!("after/run-{round}");
            // Takes in what the last round's restore wrote, so that the next record finds nothing changed.
            checkpoints.record(&before).await.unwrap();
            timed(&mut unchanged, checkpoints.record(&format!("unchanged/run-{round}"))).await.unwrap();
            for file in 0..EDITED {
                let file = (round * EDITED + file) % options.files;
                let path = work_tree.join(format!("src/module{}/file{file}.rs", file / PER_DIRECTORY));
                let mut text = fs::read_to_string(&path).unwrap();
                text.push_str(&format!("fn added_in_round_{round}() {{}}\n"));
                fs::write(&path, text).unwrap();
            }
            timed(&mut edited, checkpoints.record(&after)).await.unwrap();
            let run = timed(&mut changes, checkpoints.changes(&before, &after)).await.unwrap();
            assert_eq!(run.files.len(), EDITED);
            let restored = timed(&mut restore, checkpoints.restore(&before)).await.unwrap();
            assert_eq!(restored.changed.len(), EDITED);
        }
        report("record, unchanged workspace", &mut unchanged);
        report(&format!("record, {EDITED} files edited"), &mut edited);
        report(&format!("changes of {EDITED} edited files"), &mut changes);
        report(&format!("restore of {EDITED} edited files"), &mut restore);
    });
}
