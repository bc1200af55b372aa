//! Cost of syntax highlighting per KiB of code: a whole file at once (a Read row, a finished block), and the same
//! file streamed in 40-byte pieces through one cache (a Write row, a code block being written), for Rust, Python
//! and C.
//!
//! `cargo bench --bench highlight` prints criterion's times for 64 KiB of each; divide by 64 for the cost per KiB.

use std::hint::black_box;

use chatwire::highlight::{CodeCache, Language, highlight};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const RUST: &str = "/// Adds two numbers.\n#[inline]\npub fn add(a: u32, b: u32) -> u32 {\n    let s = \"sum\"; // note\n    a.wrapping_add(b) /* done */\n}\n";
const PYTHON: &str = "@cache\ndef area(r: float) -> float:\n    \"\"\"Circle.\"\"\"\n    return 3.14 * r * r  # pi\nprint(f'{area(2)!r}')\n";
const C: &str = "#include <stdio.h>\nstatic int add(int a, int b) {\n    /* sum */ return a + b; // note\n}\nint main(void) { printf(\"%d\\n\", add(1, 2)); }\n";

fn sixty_four_kib(sample: &str) -> String {
    sample.repeat(64 * 1024 / sample.len() + 1)[..].chars().take(64 * 1024).collect::<String>()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("highlight 64 KiB");
    group.throughput(Throughput::Bytes(64 * 1024));
    for (name, sample) in [("rust", RUST), ("python", PYTHON), ("c", C)] {
        let language = Language::from_name(name).expect("a known language");
        let code = sixty_four_kib(sample);
        let code = &code[..code.rfind('\n').map_or(0, |at| at + 1)];
        group.bench_function(format!("{name} at once"), |b| b.iter(|| highlight(language, black_box(code))));
        group.bench_function(format!("{name} streamed in 40-byte pieces"), |b| {
            b.iter(|| {
                let mut cache = CodeCache::default();
                let mut end = 0;
                while end < code.len() {
                    end = (end + 40).min(code.len());
                    while !code.is_char_boundary(end) {
                        end += 1;
                    }
                    cache.sync(language, black_box(&code[..end]));
                }
                cache.lines().len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
