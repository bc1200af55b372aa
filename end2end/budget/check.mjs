// The page's byte budget (issue 39, item 1), enforced: compares the brotli bytes of the built site's modules with
// budget.toml at the repository's root and exits non-zero, naming each module over its budget and its bytes.
// `./x test` runs it right after the release build, so the next feature cannot grow the first load unseen.
//
//   node end2end/budget/check.mjs [--budget FILE] [--pkg DIR] [--json]
//
// FILE defaults to budget.toml, DIR to target/site/pkg (Cargo.toml's site-root and site-pkg-dir). Bytes are those
// of the `.br` copies cargo-leptos' `--precompress` writes, which are what a browser gets over HTTPS; a module
// without one is compressed here (brotli, quality 11) so that a build without --precompress is still checked.
// --json prints what was measured as one JSON object (the tests use it) instead of the table.
//
// What it checks: the first load (main wasm, its JS glue and the split chunks' loader, which the glue imports),
// each of those three, each named chunk (`split_<name>`, the file name up to its hash), and the shared chunks
// (`chunk_<n>`) together. wasm-split numbers the shared chunks and renumbers them when split points change, so a
// budget per number would name a different chunk after the next split; their sum is stable. A named chunk with no
// budget fails, and so does a budget naming a chunk the site no longer has: every module is budgeted on purpose.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
};
const budgetFile = option('--budget', path.join(root, 'budget.toml'));
const pkg = option('--pkg', path.join(root, 'target/site/pkg'));
const asJson = process.argv.includes('--json');

// The TOML budget.toml needs and no more: `[section]`, `key = integer` (underscores allowed), comments. Anything
// else is an error rather than a line silently skipped, since a skipped line would be a budget not enforced.
function parseBudget(text) {
  const sections = {};
  let section;
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const header = /^\[([\w-]+)\]$/.exec(line);
    if (header) {
      section = sections[header[1]] = {};
      return;
    }
    const entry = /^([\w-]+)\s*=\s*(\d[\d_]*)$/.exec(line);
    if (!entry || !section) throw new Error(`${budgetFile}:${i + 1}: expected [section] or key = bytes, got "${raw}"`);
    section[entry[1]] = Number(entry[2].replaceAll('_', ''));
  });
  for (const name of ['first-load', 'chunks']) {
    if (!sections[name]) throw new Error(`${budgetFile}: no [${name}] section`);
  }
  return sections;
}

const brotliBytes = (name) => {
  const compressed = path.join(pkg, `${name}.br`);
  if (fs.existsSync(compressed)) return fs.statSync(compressed).size;
  const bytes = fs.readFileSync(path.join(pkg, name));
  return zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
};

if (!fs.existsSync(pkg)) {
  console.error(`no site at ${pkg}: build it first (cargo leptos build --release --precompress --split)`);
  process.exit(2);
}
const names = fs.readdirSync(pkg).filter((name) => !/\.(br|gz)$/.test(name));
const problems = [];
const one = (what, pattern) => {
  const found = names.filter((name) => pattern.test(name));
  if (found.length !== 1) problems.push(`${what}: expected one file matching ${pattern} in ${pkg}, found [${found}]`);
  return found[0];
};
const firstLoad = [
  ['main', one('main wasm', /^chatwire(\.[^.]+)?\.wasm$/)],
  ['glue', one('JS glue', /^chatwire(\.[^.]+)?\.js$/)],
  ['loader', one('chunk loader', /^__wasm_split(\.[^.]+)?\.js$/)],
]
  .filter(([, file]) => file)
  .map(([key, file]) => ({ key, file, bytes: brotliBytes(file) }));
// A chunk's name is its file name up to the hash cargo-leptos adds.
const chunks = names
  .filter((name) => /^(split_\w+|chunk_\d+)(\.[^.]+)?\.wasm$/.test(name))
  .map((file) => ({ key: file.split('.')[0], file, bytes: brotliBytes(file) }))
  .sort((a, b) => a.key.localeCompare(b.key, 'en', { numeric: true }));
const named = chunks.filter((chunk) => chunk.key.startsWith('split_'));
const shared = chunks.filter((chunk) => chunk.key.startsWith('chunk_'));
const sum = (modules) => modules.reduce((total, module) => total + module.bytes, 0);

if (asJson) {
  console.log(JSON.stringify({ firstLoad, firstLoadTotal: sum(firstLoad), chunks, sharedTotal: sum(shared) }));
  process.exit(problems.length > 0 ? 1 : 0);
}

const budget = parseBudget(fs.readFileSync(budgetFile, 'utf8'));
const rows = [];
// One budgeted line: a module, or a sum of them.
const line = (label, file, bytes, limit) => {
  if (limit === undefined) {
    problems.push(`no budget: ${label} (${file}) is ${bytes} B brotli and ${path.basename(budgetFile)} has no line for it`);
  } else if (bytes > limit) {
    problems.push(`over budget: ${label} (${file}) is ${bytes} B brotli, its budget ${limit} B (+${bytes - limit} B)`);
  }
  rows.push([label, file, bytes, limit]);
};
for (const module of firstLoad) line(`first-load.${module.key}`, module.file, module.bytes, budget['first-load'][module.key]);
line('first-load.total', 'main + glue + loader', sum(firstLoad), budget['first-load'].total);
for (const chunk of named) line(`chunks.${chunk.key}`, chunk.file, chunk.bytes, budget.chunks[chunk.key]);
line('chunks.shared', `${shared.length} × chunk_<n>, below`, sum(shared), budget.chunks.shared);
for (const key of Object.keys(budget.chunks)) {
  if (key !== 'shared' && !named.some((chunk) => chunk.key === key)) {
    problems.push(`stale budget: chunks.${key} names a chunk the site does not have; remove its line`);
  }
}

const shown = (file) => (file.startsWith(root) ? path.relative(root, file) : file);
const group = (n) => (n === undefined ? '—' : n.toLocaleString('en'));
console.log(`brotli bytes of ${shown(pkg)} against ${shown(budgetFile)}`);
for (const [label, file, bytes, limit] of rows) {
  const room = limit === undefined ? '' : `  ${((100 * bytes) / limit).toFixed(1)} %`;
  console.log(`${label.padEnd(34)} ${group(bytes).padStart(9)} B  of ${group(limit).padStart(9)} B${room}  ${file}`);
}
for (const chunk of shared) console.log(`  ${chunk.key.padEnd(32)} ${group(chunk.bytes).padStart(9)} B  ${chunk.file}`);
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error('Over the byte budget. Make it smaller, or raise budget.toml in a commit that says why (issue 39).');
  process.exit(1);
}
console.log('within the byte budget');
