// The renaming of wasm-bindgen's import names (tools/short-import-names.mjs), on a small module made here.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { renameImports, renameInGlue, shortName, shortenSite } from './short-import-names.mjs';

const LONG = '__wbg_log_0123456789abcdef';
const OTHER_LONG = '__wbg___wbindgen_is_null_c22311b1cc228e3a';

function leb(value) {
  const out = [];
  let rest = value;
  do {
    out.push((rest & 0x7f) | (rest >= 0x80 ? 0x80 : 0));
    rest >>= 7;
  } while (rest);
  return out;
}

const section = (id, body) => [id, ...leb(body.length), ...body];

function bytesOf(text) {
  const bytes = Buffer.from(text);
  return [bytes.length, ...bytes];
}

/** A module importing two glue functions with long names, one without a hash, and a memory; with a custom section. */
function module() {
  const imports = [
    4,
    ...bytesOf('./site_bg.js'), ...bytesOf(LONG), 0x00, 0x00,
    ...bytesOf('./site_bg.js'), ...bytesOf('__wbindgen_init_externref_table'), 0x00, 0x00,
    ...bytesOf('./site_bg.js'), ...bytesOf(OTHER_LONG), 0x00, 0x01,
    ...bytesOf('env'), ...bytesOf('memory'), 0x02, 0x01, 0x01, 0x02,
  ];
  const types = [2, 0x60, 0x00, 0x00, 0x60, 0x01, 0x7f, 0x01, 0x7f];
  const custom = [...bytesOf('producers'), 1, 2, 3];
  return Buffer.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, types),
    ...section(2, imports),
    ...section(0, custom),
  ]);
}

const GLUE = `function f(){return{__proto__:null,"./site_bg.js":{__proto__:null,${LONG}:function(){},${OTHER_LONG}:function(e){return null===e},__wbindgen_init_externref_table:function(){}}}}`;

test('short names are letters, distinct, and grow a letter at a time', () => {
  const names = Array.from({ length: 3000 }, (_, index) => shortName(index));
  assert.deepEqual(names.slice(0, 3), ['a', 'b', 'c']);
  assert.equal(names[51], 'Z');
  assert.equal(names[52], 'aa');
  assert.equal(new Set(names).size, names.length);
  assert.ok(names.every((name) => /^[A-Za-z]+$/.test(name)));
});

test('the long import names become short and the module stays valid, its other bytes kept', () => {
  const before = module();
  assert.ok(WebAssembly.validate(before));
  const { wasm, renames } = renameImports(before);
  assert.deepEqual(renames, [[LONG, 'a'], [OTHER_LONG, 'b']]);
  assert.ok(WebAssembly.validate(wasm));
  const imports = WebAssembly.Module.imports(new WebAssembly.Module(wasm));
  assert.deepEqual(imports.map(({ module, name }) => `${module} ${name}`), [
    './site_bg.js a',
    './site_bg.js __wbindgen_init_externref_table',
    './site_bg.js b',
    'env memory',
  ]);
  assert.deepEqual(WebAssembly.Module.customSections(new WebAssembly.Module(wasm), 'producers').map((s) => [...new Uint8Array(s)]), [[1, 2, 3]]);
  assert.equal(renameImports(wasm).renames.length, 0, 'a module renamed once has nothing left to rename');
});

test('the glue gets the same short names, and a name it does not hold exactly once stops the renaming', () => {
  const { renames } = renameImports(module());
  const glue = renameInGlue(GLUE, renames);
  assert.ok(glue.includes('a:function(){}') && glue.includes('b:function(e)'), glue);
  assert.ok(!glue.includes(LONG) && glue.includes('__wbindgen_init_externref_table'));
  assert.throws(() => renameInGlue(GLUE.replace(LONG, '__wbg_other'), renames), /names __wbg_log_0123456789abcdef 0 times/);
  assert.throws(() => renameInGlue(`${GLUE}${LONG}`, renames), /2 times/);
  // A longer name that starts with one to rename is not that name.
  assert.throws(() => renameInGlue(GLUE.replace(`${LONG}:`, `${LONG}0:`), renames), /0 times/);
});

test('a site is rewritten with its compressed copies, or left as it was', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'short-imports-'));
  try {
    const files = {
      'site.AbC123.wasm': module(),
      'site.XyZ_9.js': Buffer.from(GLUE),
      'site.d.Q1.ts': Buffer.from('export {}'),
    };
    const write = (glue) => {
      for (const [name, bytes] of Object.entries({ ...files, 'site.XyZ_9.js': Buffer.from(glue) })) {
        fs.writeFileSync(path.join(dir, name), bytes);
        fs.writeFileSync(path.join(dir, `${name}.br`), zlib.brotliCompressSync(bytes));
        fs.writeFileSync(path.join(dir, `${name}.gz`), zlib.gzipSync(bytes));
      }
    };
    const read = (name) => fs.readFileSync(path.join(dir, name));

    write(GLUE.replace(OTHER_LONG, '__wbg_missing'));
    assert.throws(() => shortenSite(dir, 'site'), /0 times/);
    assert.deepEqual(read('site.AbC123.wasm'), module(), 'nothing written when the glue does not match');
    assert.deepEqual(fs.readdirSync(dir).filter((name) => name.endsWith('.tmp')), []);

    write(GLUE);
    assert.equal(shortenSite(dir, 'site').renamed, 2);
    const wasm = read('site.AbC123.wasm');
    assert.deepEqual(renameImports(module()).wasm, wasm);
    assert.deepEqual(zlib.brotliDecompressSync(read('site.AbC123.wasm.br')), wasm);
    assert.deepEqual(zlib.gunzipSync(read('site.AbC123.wasm.gz')), wasm);
    const glue = read('site.XyZ_9.js');
    assert.ok(glue.toString().includes('a:function(){}'));
    assert.deepEqual(zlib.brotliDecompressSync(read('site.XyZ_9.js.br')), glue);
    assert.deepEqual(zlib.gunzipSync(read('site.XyZ_9.js.gz')), glue);
    assert.equal(shortenSite(dir, 'site').renamed, 0, 'a second run finds nothing to do');

    fs.writeFileSync(path.join(dir, 'site.Other.wasm'), module());
    assert.throws(() => shortenSite(dir, 'site'), /2 files site\.<hash>\.wasm/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
