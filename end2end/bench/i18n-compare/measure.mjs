// Prints build.sh's figures from out/: raw and brotli (quality 11) bytes of each variant's WASM and JS glue, the
// differences, the Chinese found in each WASM, and what the server sends besides (inlined or fetched texts).
import { readFileSync, existsSync } from 'node:fs';
import { brotliCompressSync, constants } from 'node:zlib';
import { join } from 'node:path';

const root = process.argv[2];
const br = (bytes) => brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const fmt = (n) => n.toLocaleString('en-US');
const signed = (n) => (n > 0 ? '+' : n < 0 ? '−' : '±') + fmt(Math.abs(n));

// The zh-CN texts that have a Chinese character (a few are the same in both languages, `[md|json]`), and runs of
// two or more Chinese characters (a lone one can be any three bytes of code).
const cjk = /[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]/u;
const zhTexts = readFileSync(join(root, 'texts/zh-CN.txt'), 'utf8').split('\n').filter((t) => cjk.test(t));
const cjkRuns = /[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]{2,}/gu;

const variants = [
  ['a', 'plain', 'no i18n (literals, no switch)'],
  ['b', 'table', "chatwire's table"],
  ['c', 'leptos_i18n', 'leptos_i18n, both locales compiled in'],
  ['d', 'leptos_i18n_dynamic', 'leptos_i18n, dynamic_load'],
  ['e', 'leptos_i18n_lean', 'leptos_i18n, dynamic_load, no cookie feature'],
];
const sizes = {};
console.log('| variant | wasm raw | wasm br | js raw | js br | wasm+js br | zh-CN texts in wasm | runs of 2+ Chinese chars in wasm |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [id, name, what] of variants) {
  const dir = join(root, 'out', name);
  if (!existsSync(dir)) continue;
  const wasm = readFileSync(join(dir, `${name}_bg.wasm`));
  const js = readFileSync(join(dir, `${name}.js`));
  const text = wasm.toString('utf8');
  const found = zhTexts.filter((t) => text.includes(t)).length;
  const runs = (text.match(cjkRuns) || []).length;
  sizes[id] = { wasm: wasm.length, wasmBr: br(wasm), js: js.length, jsBr: br(js) };
  const s = sizes[id];
  console.log(`| (${id}) ${what} | ${fmt(s.wasm)} | ${fmt(s.wasmBr)} | ${fmt(s.js)} | ${fmt(s.jsBr)} | ` +
    `${fmt(s.wasmBr + s.jsBr)} | ${found} of ${zhTexts.length} | ${fmt(runs)} |`);
}

console.log('\n| difference | wasm raw | wasm+js raw | wasm+js br |');
console.log('|---|---|---|---|');
for (const [x, y] of [['b', 'a'], ['c', 'a'], ['d', 'a'], ['e', 'a'], ['c', 'b'], ['d', 'b'], ['e', 'b']]) {
  if (!sizes[x] || !sizes[y]) continue;
  const [p, q] = [sizes[x], sizes[y]];
  console.log(`| ${x} − ${y} | ${signed(p.wasm - q.wasm)} | ${signed(p.wasm + p.js - q.wasm - q.js)} | ` +
    `${signed(p.wasmBr + p.jsBr - q.wasmBr - q.jsBr)} |`);
}

// What the server sends besides the WASM. (b): an English page nothing, a switch fetches zh-CN.txt; a zh-CN page
// inlines the same lines. (d): every page inlines its locale's strings as leptos_i18n writes them
// (`window.__LEPTOS_I18N_TRANSLATIONS=[{"locale":..,"id":null,"values":[..]}];` in a <script>), and a switch
// fetches the other locale's array from its server function.
const zh = readFileSync(join(root, 'texts/zh-CN.txt'));
console.log(`\n(b) zh-CN table fetched at the switch (or inlined for a zh-CN page): ${fmt(zh.length)} B raw, ${fmt(br(zh))} B br`);
const modRs = join(root, 'out/leptos_i18n/i18n_mod.rs');
if (existsSync(modRs)) {
  const mod = readFileSync(modRs, 'utf8');
  const strings = (unit) => {
    const at = mod.indexOf(`TranslationUnit for I18nKeys_${unit} {`);
    const open = mod.indexOf('const STRINGS', at);
    const body = mod.slice(mod.indexOf('& [', open + 14) + 3, mod.indexOf('] ;', open));
    return [...body.matchAll(/"((?:[^"\\]|\\.)*)"/gsu)].map((m) =>
      m[1].replace(/\\u\{([0-9a-f]+)\}|\\(.)/gu, (_, hex, c) =>
        hex ? String.fromCodePoint(parseInt(hex, 16)) : ({ n: '\n', t: '\t', r: '\r', '0': '\0' })[c] ?? c));
  };
  for (const [unit, tag] of [['en', 'en'], ['zh_CN', 'zh-CN']]) {
    const values = strings(unit);
    const script = Buffer.from(`<script>window.__LEPTOS_I18N_TRANSLATIONS=${JSON.stringify([{ locale: tag, id: null, values }])};</script>`);
    const array = Buffer.from(JSON.stringify(values));
    console.log(`(d) ${tag}: ${values.length} strings; inlined in a ${tag} page ${fmt(script.length)} B raw, ${fmt(br(script))} B br; ` +
      `fetched at a switch ${fmt(array.length)} B raw, ${fmt(br(array))} B br`);
  }
}
