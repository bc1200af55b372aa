// Decode bench (not a test; issue 21, item 4): chatwire's frame decoder, built to WASM as the page ships it
// (decode/build.sh), against a zod 4 schema of the same frames (frame-schema.mjs) and bare JSON.parse, in one Node
// process, over the same NDJSON of real frames: the golden files under tests/golden. Prints ns per frame, overall
// and per frame type, and the ratios.
//
//   end2end/bench/decode/build.sh                  # builds decode/pkg/current
//   node end2end/bench/decode.mjs [name …]         # the builds under decode/pkg/ to time (default: all of them)
//
// BENCH_ROUNDS (default 15) rounds; each round times every decoder on every group once, the decoders in an order
// that rotates from round to round, and each timing repeats the group until it has run BENCH_MIN_MS (default 20)
// ms. The figures are medians over the rounds.
//
// What each decoder is given: chatwire gets the group's NDJSON bytes in one call, as the client feeds it a network
// chunk (the copy into WASM memory and the line splitting are counted); JSON.parse and zod get the lines as
// strings already split and decoded from UTF-8, which flatters them: a JS client would first have to do that too.
// `JSON.parse (bytes)` is that JS client's full path (TextDecoder, split, parse) for reference. For each build the
// bench also times two floors of serde_json in that build: every line into a `serde_json::Value` tree (`values`),
// and every line checked and thrown away (`scan`, serde's `IgnoredAny`).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chatFrame } from './frame-schema.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 15);
const minMs = Number(process.env.BENCH_MIN_MS ?? 20);

function goldenFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return goldenFiles(full);
      return entry.name.endsWith('.ndjson') ? [full] : [];
    })
    .sort();
}

const lines = goldenFiles(path.join(root, 'tests/golden')).flatMap((file) =>
  fs.readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== ''),
);
const encoder = new TextEncoder();
// A group of fewer than MIN_GROUP frames is repeated up to it, so that one call's fixed cost (printed apart, as
// `per call`) is spread over a chunk's worth of frames, as in a stream, and not charged to one ping.
const MIN_GROUP = 100;
const group = (name, members) => {
  const repeated = Array.from({ length: Math.ceil(MIN_GROUP / members.length) }, () => members).flat();
  return { name, lines: repeated, bytes: encoder.encode(repeated.map((line) => `${line}\n`).join('')) };
};
const typeOf = (line) => JSON.parse(line).type;
const types = [...new Set(lines.map(typeOf))];
const counts = new Map(types.map((type) => [type, lines.filter((line) => typeOf(line) === type).length]));
counts.set('all', lines.length);
const groups = [group('all', lines), ...types.map((type) => group(type, lines.filter((line) => typeOf(line) === type)))];
groups.push({ name: 'per call', lines: [], bytes: new Uint8Array(0), perCall: true });

const pkgDir = path.join(here, 'decode/pkg');
const builds = process.argv.slice(2).length > 0 ? process.argv.slice(2) : fs.existsSync(pkgDir) ? fs.readdirSync(pkgDir).sort() : [];
if (builds.length === 0) throw new Error(`no build under ${pkgDir}: run end2end/bench/decode/build.sh first`);
const require = createRequire(import.meta.url);

const decoder = new TextDecoder();
let sink = 0;
const decoders = [
  { name: 'JSON.parse', run: (g) => g.lines.forEach((line) => (sink += JSON.parse(line) === null)) },
  { name: 'zod', run: (g) => g.lines.forEach((line) => (sink += chatFrame.parse(JSON.parse(line)) === null)) },
  {
    name: 'JSON.parse (bytes)',
    run: (g) => {
      const text = decoder.decode(g.bytes);
      let start = 0;
      for (let end = text.indexOf('\n'); end !== -1; start = end + 1, end = text.indexOf('\n', start)) {
        sink += JSON.parse(text.slice(start, end)) === null;
      }
    },
  },
  ...builds.flatMap((build) => {
    const wasm = require(path.join(pkgDir, build, 'chatwire_decode_bench.js'));
    return [
      { name: `chatwire ${build}`, build, run: (g) => wasm.decode_frames(g.bytes), expected: true },
      { name: `values ${build}`, build, run: (g) => wasm.decode_values(g.bytes), expected: true },
      { name: `scan ${build}`, build, run: (g) => wasm.scan_json(g.bytes), expected: true },
    ];
  }),
];

// Every decoder must accept every line, or it would be timed on less work than the others.
for (const line of lines) {
  const checked = chatFrame.safeParse(JSON.parse(line));
  if (!checked.success) throw new Error(`zod rejects a golden line: ${checked.error.message}\n${line}`);
}
for (const d of decoders.filter((d) => d.expected)) {
  for (const g of groups) {
    const decoded = d.run(g);
    if (!g.perCall && decoded !== g.lines.length) throw new Error(`${d.name} decoded ${decoded} of ${g.lines.length} ${g.name} lines`);
  }
}

const timeOnce = (d, g, reps) => {
  const start = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) d.run(g);
  return Number(process.hrtime.bigint() - start);
};
// Repetitions per timing, found once per decoder and group (after a warm-up that lets V8 optimise).
const reps = new Map();
for (const d of decoders) {
  for (const g of groups) {
    let n = 1;
    timeOnce(d, g, 50);
    while (timeOnce(d, g, n) < minMs * 1e6 && n < 1 << 24) n *= 2;
    reps.set(`${d.name}\t${g.name}`, n);
  }
}

const samples = new Map();
for (let round = 0; round < rounds; round++) {
  const order = decoders.map((_, i) => decoders[(i + round) % decoders.length]);
  for (const g of groups) {
    for (const d of order) {
      const key = `${d.name}\t${g.name}`;
      const n = reps.get(key);
      const nsPerFrame = timeOnce(d, g, n) / (n * Math.max(1, g.lines.length));
      samples.set(key, [...(samples.get(key) ?? []), nsPerFrame]);
    }
  }
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ns = (d, g) => median(samples.get(`${d.name}\t${g.name}`));

const pad = (text, width) => String(text).padStart(width);
const fixed = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
console.log(`${lines.length} frames from tests/golden, ${rounds} rounds, medians; ns per frame`);
const head = ['type', 'frames', 'bytes/frame', ...decoders.map((d) => d.name)];
const widths = head.map((h) => Math.max(h.length, 9));
console.log(head.map((h, i) => (i === 0 ? h.padEnd(16) : pad(h, widths[i]))).join(' '));
for (const g of groups) {
  const perFrame = g.perCall ? 0 : Math.round(g.bytes.length / g.lines.length);
  const cells = [g.name.padEnd(16), pad(counts.get(g.name) ?? 0, widths[1]), pad(perFrame, widths[2])];
  decoders.forEach((d, i) => cells.push(pad(fixed(ns(d, g)), widths[i + 3])));
  console.log(cells.join(' '));
}

const [jsonParse, zod] = decoders;
console.log('\nratios: zod ÷ chatwire (goal ≥ 2), chatwire ÷ JSON.parse (goal ≤ 1.5)');
const ratioHead = ['type', ...builds.flatMap((b) => [`zod/${b}`, `${b}/JSON`])];
const ratioWidths = ratioHead.map((h) => Math.max(h.length, 8));
console.log(ratioHead.map((h, i) => (i === 0 ? h.padEnd(16) : pad(h, ratioWidths[i]))).join(' '));
for (const g of groups.filter((g) => !g.perCall)) {
  const cells = [g.name.padEnd(16)];
  builds.forEach((build) => {
    const chatwire = decoders.find((d) => d.name === `chatwire ${build}`);
    cells.push(pad((ns(zod, g) / ns(chatwire, g)).toFixed(2), ratioWidths[cells.length]));
    cells.push(pad((ns(chatwire, g) / ns(jsonParse, g)).toFixed(2), ratioWidths[cells.length]));
  });
  console.log(cells.join(' '));
}
if (sink < 0) console.log(sink);
