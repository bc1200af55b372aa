// Gives the main module's JS imports short names, in the module and in its glue, and compresses both again.
//
//   node tools/short-import-names.mjs <site pkg dir> <output name>
//
// wasm-bindgen names each function the module imports from its glue `__wbg_<name>_<16 hex digits>`: 227 names
// whose hashes brotli cannot shrink, once in the module's import section and once in the glue's imports object,
// which the page carries inline. Short names (`a`, `b`, … `Z`, `aa`, …) take 3.3 KB brotli off the main module and
// 2.4 KB off the page (docs/decisions.md, "Short import names"). `./x` runs this between cargo-leptos' front-end
// build and its server build, so the binary embeds the renamed files; a site built by cargo-leptos alone works the
// same with the long names.
//
// Every check comes before the first write: a name the glue does not hold exactly once, or a module that is not one,
// stops it with a message and the site as it was. Each file is then replaced whole (written beside, then renamed
// over it). A site already renamed has no long names left: nothing to do.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

/** The glue's names for imported functions: wasm-bindgen's `__wbg_` prefix and its hash. */
const LONG_NAME = /^__wbg_[A-Za-z0-9_]*_[0-9a-f]{16}$/;
const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** The `index`th short name: `a` … `Z`, then `aa`, `ab`, …; letters only, so never a key the glue already has. */
export function shortName(index) {
  let name = '';
  let rest = index;
  do {
    name = LETTERS[rest % LETTERS.length] + name;
    rest = Math.floor(rest / LETTERS.length) - 1;
  } while (rest >= 0);
  return name;
}

function readLeb(bytes, at) {
  let value = 0;
  let shift = 0;
  let position = at;
  for (;;) {
    if (position >= bytes.length) throw new Error('the module ends inside a number');
    const byte = bytes[position++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(byte & 0x80)) return { value, next: position };
  }
}

function leb(value) {
  const out = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
    if (rest) byte |= 0x80;
    out.push(byte);
  } while (rest);
  return Buffer.from(out);
}

/** Where an import's description ends: a function's type index, a table's, a memory's, a global's, a tag's. */
function skipImportDescription(bytes, at) {
  const kind = bytes[at];
  let position = at + 1;
  const skipLimits = () => {
    const flags = readLeb(bytes, position);
    position = readLeb(bytes, flags.next).next;
    if (flags.value & 1) position = readLeb(bytes, position).next;
  };
  switch (kind) {
    case 0:
      return readLeb(bytes, position).next;
    case 1:
      position += 1;
      skipLimits();
      return position;
    case 2:
      skipLimits();
      return position;
    case 3:
      return position + 2;
    case 4:
      return readLeb(bytes, position + 1).next;
    default:
      throw new Error(`an import of unknown kind ${kind}`);
  }
}

/**
 * The module `wasm` with its long import names replaced, and the names it replaced, in order: `[long, short]`.
 * Every other byte stays as it was.
 */
export function renameImports(wasm) {
  if (wasm.length < 8 || wasm.readUInt32LE(0) !== 0x6d736100) throw new Error('not a WebAssembly module');
  const renames = [];
  const parts = [wasm.subarray(0, 8)];
  let position = 8;
  while (position < wasm.length) {
    const start = position;
    const id = wasm[position];
    const size = readLeb(wasm, position + 1);
    const end = size.next + size.value;
    if (end > wasm.length) throw new Error('a section runs past the end of the module');
    if (id !== 2) {
      parts.push(wasm.subarray(start, end));
      position = end;
      continue;
    }
    const count = readLeb(wasm, size.next);
    const section = [leb(count.value)];
    let at = count.next;
    for (let index = 0; index < count.value; index++) {
      const moduleLength = readLeb(wasm, at);
      const moduleName = wasm.subarray(moduleLength.next, moduleLength.next + moduleLength.value);
      const fieldLength = readLeb(wasm, moduleLength.next + moduleLength.value);
      const fieldStart = fieldLength.next;
      let field = wasm.subarray(fieldStart, fieldStart + fieldLength.value);
      const descriptionEnd = skipImportDescription(wasm, fieldStart + fieldLength.value);
      const long = field.toString();
      if (LONG_NAME.test(long)) {
        const short = shortName(renames.length);
        renames.push([long, short]);
        field = Buffer.from(short);
      }
      section.push(leb(moduleName.length), moduleName, leb(field.length), field);
      section.push(wasm.subarray(fieldStart + fieldLength.value, descriptionEnd));
      at = descriptionEnd;
    }
    if (at !== end) throw new Error('the import section holds more than its imports');
    const body = Buffer.concat(section);
    parts.push(Buffer.from([2]), leb(body.length), body);
    position = end;
  }
  return { wasm: Buffer.concat(parts), renames };
}

/** The glue `source` with each long name of `renames` replaced; each must be there exactly once, as a whole word. */
export function renameInGlue(source, renames) {
  let renamed = source;
  for (const [long, short] of renames) {
    const pattern = new RegExp(`(?<![A-Za-z0-9_$])${long}(?![A-Za-z0-9_$])`, 'g');
    const found = renamed.match(pattern)?.length ?? 0;
    if (found !== 1) throw new Error(`the glue names ${long} ${found} times, not once`);
    renamed = renamed.replace(pattern, short);
  }
  return renamed;
}

function compressed(bytes) {
  return {
    br: zlib.brotliCompressSync(bytes, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY,
        [zlib.constants.BROTLI_PARAM_LGWIN]: zlib.constants.BROTLI_MAX_WINDOW_BITS,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    }),
    gz: zlib.gzipSync(bytes, { level: zlib.constants.Z_BEST_COMPRESSION }),
  };
}

/** The one file in `dir` named `<name>.<hash>.<extension>`. */
function builtFile(dir, name, extension) {
  const pattern = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.[A-Za-z0-9_-]+\\.${extension}$`);
  const found = fs.readdirSync(dir).filter((file) => pattern.test(file));
  if (found.length !== 1) throw new Error(`${dir} holds ${found.length} files ${name}.<hash>.${extension}, not one`);
  return path.join(dir, found[0]);
}

/** Renames the imports of `<pkgDir>/<outputName>.<hash>.wasm` and its glue's, and their `.br` and `.gz` copies. */
export function shortenSite(pkgDir, outputName) {
  const wasmFile = builtFile(pkgDir, outputName, 'wasm');
  const glueFile = builtFile(pkgDir, outputName, 'js');
  const { wasm, renames } = renameImports(fs.readFileSync(wasmFile));
  if (renames.length === 0) return { renamed: 0 };
  const glue = Buffer.from(renameInGlue(fs.readFileSync(glueFile, 'utf8'), renames));
  const writes = [];
  for (const [file, bytes] of [[wasmFile, wasm], [glueFile, glue]]) {
    const { br, gz } = compressed(bytes);
    writes.push([file, bytes], [`${file}.br`, br], [`${file}.gz`, gz]);
  }
  for (const [file, bytes] of writes) fs.writeFileSync(`${file}.tmp`, bytes);
  for (const [file] of writes) fs.renameSync(`${file}.tmp`, file);
  return { renamed: renames.length, wasmFile, glueFile };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const [pkgDir, outputName] = process.argv.slice(2);
  if (!pkgDir || !outputName) {
    console.error('usage: node tools/short-import-names.mjs <site pkg dir> <output name>');
    process.exit(2);
  }
  try {
    const { renamed, wasmFile } = shortenSite(pkgDir, outputName);
    console.log(renamed ? `${renamed} import names made short in ${wasmFile} and its glue` : 'no long import names left');
  } catch (error) {
    console.error(`short import names: ${error.message}; the site is left as cargo-leptos built it`);
    process.exit(1);
  }
}
