// Decode bench (not a test; issue 21, item 4): chatwire's frame decoder, built to WASM as the page ships it
// (decode/build.sh), against a zod 4 schema of the same frames (frame-schema.mjs) and bare JSON.parse, in one Node
// process, over the same NDJSON of real frames: the golden files under tests/golden. Prints ns per frame, overall
// and per frame type, and the ratios.
//
//   end2end/bench/decode/build.sh                  # builds decode/pkg/current
//   node end2end/bench/decode.mjs [name …]         # the builds under decode/pkg/ to time (default: all of them)
//   node end2end/bench/decode.mjs --check [name …] # only the checks below, no timing (`./x test` runs this)
//
// Before timing, and alone with --check, it checks that the bench still measures what it says (issue 39, item 5),
// so that it cannot rot unseen as frames are added: the schema's frame types are exactly the variants of
// `enum ChatFrame` in src/protocol/frame.rs; zod accepts every golden line and strips nothing from it (a field the
// schema does not know would be stripped, so zod would be timed on less than the frame); and every build's decoder
// decodes every golden line, one by one, so that a failure names its file and line.
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
import { isDeepStrictEqual } from 'node:util';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
// DECODE_SCHEMA: another schema module (decode-check.test.mjs gives it broken ones, to see the check fail).
const { chatFrame } = await import(process.env.DECODE_SCHEMA ?? './frame-schema.mjs');

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

const args = process.argv.slice(2);
const checkOnly = args.includes('--check');
// Each golden line with where it comes from, for the checks' messages.
const sourced = goldenFiles(path.join(root, 'tests/golden')).flatMap((file) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => (line.trim() === '' ? [] : [{ line, where: `${path.relative(root, file)}:${i + 1}` }])),
);
const lines = sourced.map(({ line }) => line);
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
const named = args.filter((arg) => arg !== '--check');
const builds = named.length > 0 ? named : fs.existsSync(pkgDir) ? fs.readdirSync(pkgDir).sort() : [];
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

// The frame types the schema names, nested discriminated unions (on `phase`) included.
const schemaTypes = (schema) => [
  ...new Set(schema.options.flatMap((option) => (option.options ? schemaTypes(option) : [option.shape.type.value]))),
];
// The wire names of `enum ChatFrame`'s variants (serde's `rename_all = "snake_case"` on the enum).
const rustTypes = () => {
  const source = fs.readFileSync(path.join(root, 'src/protocol/frame.rs'), 'utf8');
  const body = /pub enum ChatFrame \{([^}]*)\}/.exec(source);
  if (!body) throw new Error('no `pub enum ChatFrame { … }` in src/protocol/frame.rs');
  return [...body[1].matchAll(/^\s*([A-Z]\w*)\s*[(,]/gm)].map((m) => m[1].replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase());
};
const sameSet = (a, b) => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

// Every decoder must accept every line, or it would be timed on less work than the others.
const problems = [];
const [inRust, inSchema] = [rustTypes(), schemaTypes(chatFrame)];
if (!sameSet(inRust, inSchema)) {
  problems.push(`frame types: src/protocol/frame.rs has [${inRust}], frame-schema.mjs has [${inSchema}]`);
}
for (const { line, where } of sourced) {
  const input = JSON.parse(line);
  const checked = chatFrame.safeParse(input);
  if (!checked.success) problems.push(`${where}: zod rejects it: ${checked.error.message}\n${line}`);
  else if (!isDeepStrictEqual(checked.data, input)) problems.push(`${where}: zod strips a field the schema lacks\n${line}`);
}
for (const build of builds) {
  const wasm = require(path.join(pkgDir, build, 'chatwire_decode_bench.js'));
  for (const { line, where } of sourced) {
    if (wasm.decode_frames(encoder.encode(`${line}\n`)) !== 1) problems.push(`${where}: chatwire ${build} rejects it\n${line}`);
  }
}
for (const d of decoders.filter((d) => d.expected)) {
  for (const g of groups) {
    const decoded = d.run(g);
    if (!g.perCall && decoded !== g.lines.length) problems.push(`${d.name} decoded ${decoded} of ${g.lines.length} ${g.name} lines`);
  }
}
if (problems.length > 0) {
  console.error(problems.slice(0, 20).join('\n'));
  console.error(`decode bench check: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(
  `decode bench check: ${inSchema.length} frame types as in frame.rs; ${lines.length} golden lines accepted by zod ` +
    `(nothing stripped) and by chatwire ${builds.join(', ')}`,
);
if (checkOnly) process.exit(0);

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
console.log('\nratios: zod ÷ chatwire (goal ≥ 1.2 overall), chatwire ÷ JSON.parse (goal ≤ 1.5 overall)');
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
