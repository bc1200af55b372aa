// Tests of the byte-budget check (check.mjs): that it fails, naming the module and its bytes, whenever a line of the
// budget is exceeded by a single byte, so that it cannot pass silently. Most run against a made-up site of known
// sizes; the last runs it against the real release site (target/site/pkg, or BUDGET_PKG) with one line of the real
// budget.toml lowered, which `./x test` runs right after the release build.
//
//   node --test end2end/budget/
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const check = (...args) => {
  const run = spawnSync(process.execPath, [path.join(here, 'check.mjs'), ...args], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr, stdout: run.stdout };
};

const temp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'budget-'));
// A made-up site: each module's `.br` has exactly the given size (only the `.br` is measured).
const BYTES = {
  'chatwire.aaa.wasm': 5000,
  'chatwire.bbb.js': 700,
  '__wasm_split.ccc.js': 120,
  'split_markdown.ddd.wasm': 900,
  'split_tool_renderers.eee.wasm': 1500,
  'chunk_8.fff.wasm': 30,
  'chunk_9.ggg.wasm': 45,
};
function site(bytes = BYTES) {
  const pkg = temp();
  for (const [name, size] of Object.entries(bytes)) {
    fs.writeFileSync(path.join(pkg, name), 'x');
    fs.writeFileSync(path.join(pkg, `${name}.br`), Buffer.alloc(size));
  }
  // Not modules: a stylesheet and the manifest, which must not be counted.
  fs.writeFileSync(path.join(pkg, 'chatwire.hhh.css'), 'body{}');
  fs.writeFileSync(path.join(pkg, '__wasm_split_manifest.iii.json'), '{}');
  return pkg;
}
const LINES = {
  'first-load': { main: 5000, glue: 700, loader: 120, total: 5820 },
  chunks: { split_markdown: 900, split_tool_renderers: 1500, shared: 75 },
};
function budget(lines = LINES) {
  const file = path.join(temp(), 'budget.toml');
  const text = Object.entries(lines)
    .map(([section, entries]) => `# a comment\n[${section}]\n${Object.entries(entries).map(([k, v]) => `${k} = ${v} # bytes`).join('\n')}`)
    .join('\n\n');
  fs.writeFileSync(file, `${text}\n`);
  return file;
}
const lowered = (section, key) => ({ ...LINES, [section]: { ...LINES[section], [key]: LINES[section][key] - 1 } });

test('a site exactly at its budget passes and every module is listed with its bytes and budget', () => {
  const { status, out } = check('--pkg', site(), '--budget', budget());
  assert.equal(status, 0, out);
  assert.match(out, /first-load\.main\s+5,000 B\s+of\s+5,000 B.*chatwire\.aaa\.wasm/);
  assert.match(out, /first-load\.total\s+5,820 B\s+of\s+5,820 B/);
  assert.match(out, /chunks\.split_tool_renderers\s+1,500 B\s+of\s+1,500 B/);
  assert.match(out, /chunks\.shared\s+75 B\s+of\s+75 B/);
  assert.match(out, /within the byte budget/);
});

for (const [section, key, module, bytes] of [
  ['first-load', 'main', 'chatwire.aaa.wasm', 5000],
  ['first-load', 'glue', 'chatwire.bbb.js', 700],
  ['first-load', 'loader', '__wasm_split.ccc.js', 120],
  ['first-load', 'total', 'main + glue + loader', 5820],
  ['chunks', 'split_markdown', 'split_markdown.ddd.wasm', 900],
  ['chunks', 'split_tool_renderers', 'split_tool_renderers.eee.wasm', 1500],
  ['chunks', 'shared', 'chunk_<n>', 75],
]) {
  test(`one byte over ${section}.${key} fails naming it and its bytes`, () => {
    const { status, out } = check('--pkg', site(), '--budget', budget(lowered(section, key)));
    assert.equal(status, 1, out);
    const over = out.split('\n').filter((line) => line.startsWith('over budget'));
    assert.equal(over.length, 1, out);
    assert.ok(over[0].includes(`${section}.${key} (`) && over[0].includes(module), over[0]);
    assert.ok(over[0].includes(`is ${bytes} B brotli, its budget ${bytes - 1} B (+1 B)`), over[0]);
  });
}

test('a named chunk without a budget line fails, naming it', () => {
  const { status, out } = check('--pkg', site({ ...BYTES, 'split_settings.jjj.wasm': 10 }), '--budget', budget());
  assert.equal(status, 1, out);
  assert.match(out, /no budget: chunks\.split_settings \(split_settings\.jjj\.wasm\) is 10 B brotli/);
});

test('a budget line for a chunk the site no longer has fails', () => {
  const { 'split_markdown.ddd.wasm': _, ...rest } = BYTES;
  const { status, out } = check('--pkg', site(rest), '--budget', budget());
  assert.equal(status, 1, out);
  assert.match(out, /stale budget: chunks\.split_markdown/);
});

test('a site without its main module fails rather than measuring nothing', () => {
  const { 'chatwire.aaa.wasm': _, ...rest } = BYTES;
  const { status, out } = check('--pkg', site(rest), '--budget', budget());
  assert.equal(status, 1, out);
  assert.match(out, /main wasm: expected one file/);
});

test('a budget line the parser does not understand is an error, not a line skipped', () => {
  const file = budget();
  fs.appendFileSync(file, 'split_highlighter = 20 KiB\n');
  const { status, out } = check('--pkg', site(), '--budget', file);
  assert.notEqual(status, 0, out);
  assert.match(out, /expected \[section\] or key = bytes/);
});

test('a module without a .br copy is compressed with brotli at quality 11', () => {
  const pkg = site();
  const wasm = Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 251));
  fs.writeFileSync(path.join(pkg, 'split_markdown.ddd.wasm'), wasm);
  fs.rmSync(path.join(pkg, 'split_markdown.ddd.wasm.br'));
  const expected = zlib.brotliCompressSync(wasm, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
  const { stdout } = check('--pkg', pkg, '--json');
  const measured = JSON.parse(stdout).chunks.find((chunk) => chunk.key === 'split_markdown');
  assert.equal(measured.bytes, expected);
});

// The real site and the real budget: every line of budget.toml names a module of the build, and lowering the main
// module's line to one byte under what it measures fails on that module.
test('the release site fails against budget.toml with the main module one byte under its size', () => {
  const pkg = process.env.BUDGET_PKG ?? path.join(root, 'target/site/pkg');
  assert.ok(fs.existsSync(pkg), `no release site at ${pkg}: build it first (./x test does)`);
  const measured = JSON.parse(check('--pkg', pkg, '--json').stdout);
  const main = measured.firstLoad.find((module) => module.key === 'main');
  const text = fs.readFileSync(path.join(root, 'budget.toml'), 'utf8');
  const file = path.join(temp(), 'budget.toml');
  fs.writeFileSync(file, text.replace(/^main = .*$/m, `main = ${main.bytes - 1}`));
  const { status, out } = check('--pkg', pkg, '--budget', file);
  assert.equal(status, 1, out);
  assert.ok(out.includes(`over budget: first-load.main (${main.file}) is ${main.bytes} B brotli`), out);
});
