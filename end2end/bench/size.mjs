// Where the main WASM module's bytes go (issue 39, item 2), from twiggy's JSON of the module size.sh rebuilt with
// its names: the code and data by crate, the largest items, and the dominator tree (what keeps what in the module)
// by crate. Run by size.sh, which says how the module is made; not on its own.
//
//   node end2end/bench/size.mjs <profile dir> <site pkg dir>
//
// <profile dir> holds named.wasm, top.json (`twiggy top --format json`, every item) and dominators.json (`twiggy
// dominators --format json`); <site pkg dir> the shipped site, whose main module the profile must match.
import fs from 'node:fs';
import path from 'node:path';

const [dir, pkg] = process.argv.slice(2);
const TOP = Number(process.env.SIZE_TOP ?? 30);

// The sizes of a module's sections by id (custom sections by name), to compare the profile with what ships.
function sections(file) {
  const bytes = fs.readFileSync(file);
  const found = {};
  let at = 8;
  const leb = () => {
    let value = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    const start = at;
    let key = `section ${id}`;
    if (id === 0) {
      const length = leb();
      key = `custom ${bytes.subarray(at, at + length).toString()}`;
    }
    found[key] = size;
    at = start + size;
  }
  return { total: bytes.length, found };
}

const shippedName = fs.readdirSync(pkg).find((name) => /^chatwire(\.[^.]+)?\.wasm$/.test(name));
const shipped = sections(path.join(pkg, shippedName));
const profiled = sections(path.join(dir, 'named.wasm'));
const nameSection = profiled.found['custom name'] ?? 0;
const same = ['section 10', 'section 11'].every((key) => profiled.found[key] === shipped.found[key]);
console.log(
  `profiled: ${profiled.total.toLocaleString('en')} B with its name section (${nameSection.toLocaleString('en')} B); ` +
    `code ${profiled.found['section 10'].toLocaleString('en')} B, data ${profiled.found['section 11'].toLocaleString('en')} B`,
);
console.log(
  `shipped ${shippedName}: ${shipped.total.toLocaleString('en')} B; code ${shipped.found['section 10'].toLocaleString('en')} B, ` +
    `data ${shipped.found['section 11'].toLocaleString('en')} B: ${same ? 'the same code and data' : 'NOT the same build: the profile is of other code'}`,
);

// Rust names are demangled by twiggy. An item's crate is the first path segment of its name; for a trait method
// implemented on a type parameter or a primitive (`<T as tachys::view::Render>::build`) it is the trait's crate,
// since that is the code the generic instance comes from. Monomorphised generics are charged to the crate that
// defines them, not to the crate that instantiated them: `tachys` holds chatwire's views, `serde` its derives.
const STD = new Set(['core', 'alloc', 'std']);
function crateOf(name) {
  if (name.startsWith('data segment')) return '(data segments)';
  if (/^(elem|table|type|global|memory|code|func)\[\d+\]$|^(import|export) |^start$|section$|subsection$/.test(name)) {
    return '(wasm structure)';
  }
  if (isNameSection(name)) return '(name section)';
  // A v0-mangled name wasm-opt suffixed (`…_408`), which twiggy leaves mangled: its first crate root (`C…<len><name>`).
  const mangled = /^_R\w*?C(?:s[0-9A-Za-z]*_)?(\d+)([A-Za-z_]\w*)/.exec(name);
  if (mangled) return crateName(mangled[2].slice(0, Number(mangled[1])));
  // No path: the wasm-bindgen exports and shims, the `hydrate` entry point, compiler builtins (memcmp, __multi3).
  if (!name.includes('::')) return /^<(str|char|\[)/.test(name) ? crateName('core') : '(exports, glue, builtins)';
  let rest = name;
  for (;;) {
    const stripped = rest.replace(/^(<|&|mut |dyn |\*const |\*mut |\(|\[)/, '');
    if (stripped === rest) break;
    rest = stripped;
  }
  let head = /^([A-Za-z_][\w]*)/.exec(rest)?.[1];
  const generic = !head || /^[A-Z]\w{0,2}$/.test(head) || PRIMITIVE.test(head);
  const isPathRoot = head && new RegExp(`^${head}(\\[[0-9a-f]+\\])?::`).test(rest);
  if (generic || !isPathRoot) {
    const trait = / as ([A-Za-z_]\w*)(\[[0-9a-f]+\])?::/.exec(rest);
    head = trait ? trait[1] : head;
  }
  return head ? crateName(head) : '(other)';
}
// A primitive's inherent methods (`<char>::escape_debug_ext`) are core's.
const PRIMITIVE = /^(str|char|bool|u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64)$/;
function crateName(crate) {
  return STD.has(crate) || PRIMITIVE.test(crate) ? 'core/alloc/std' : crate;
}
const isNameSection = (name) => /^"[\w ]+" subsection$|^"name" section/.test(name);

const top = JSON.parse(fs.readFileSync(path.join(dir, 'top.json'), 'utf8')).filter((item) => !isNameSection(item.name));
const total = top.reduce((sum, item) => sum + item.shallow_size, 0);
const kib = (n) => (n / 1024).toFixed(1);
const pct = (n) => ((100 * n) / total).toFixed(1);

const byCrate = new Map();
for (const item of top) {
  const crate = crateOf(item.name);
  const entry = byCrate.get(crate) ?? { bytes: 0, items: 0, retained: 0 };
  entry.bytes += item.shallow_size;
  entry.items += 1;
  byCrate.set(crate, entry);
}

// The dominator tree: an item's retained size is what would leave the module with it. Under twiggy's meta root
// sit the exports and the function table (wasm-split exports the table, so most code hangs off `elem[0]`); the
// first named item below those roots is an entry point, and an entry's retained bytes are charged to its crate.
const dominators = JSON.parse(fs.readFileSync(path.join(dir, 'dominators.json'), 'utf8')).items;
const isRoot = (name) => name === '<meta root>' || /^(table|elem)\[\d+\]$|^export /.test(name);
const entries = [];
(function walk(nodes) {
  for (const node of nodes) {
    if (isRoot(node.name)) walk(node.children ?? []);
    else if (!isNameSection(node.name)) entries.push(node);
  }
})(dominators);
for (const node of entries.filter((node) => !/^\(wasm structure\)$/.test(crateOf(node.name)))) {
  const crate = crateOf(node.name);
  const entry = byCrate.get(crate) ?? { bytes: 0, items: 0, retained: 0 };
  entry.retained += node.retained_size;
  byCrate.set(crate, entry);
}

console.log(`\nby crate (shallow: the item's own bytes; retained: what the crate's entry points keep alive), of ${total.toLocaleString('en')} B code and data`);
console.log(`${'crate'.padEnd(24)} ${'items'.padStart(6)} ${'shallow KiB'.padStart(12)} ${'%'.padStart(6)} ${'retained KiB'.padStart(13)}`);
for (const [crate, entry] of [...byCrate].sort((a, b) => b[1].bytes - a[1].bytes)) {
  if (entry.bytes < total / 1000 && entry.retained < total / 1000) continue;
  console.log(
    `${crate.padEnd(24)} ${String(entry.items).padStart(6)} ${kib(entry.bytes).padStart(12)} ${pct(entry.bytes).padStart(6)} ${kib(entry.retained).padStart(13)}`,
  );
}
const small = [...byCrate].filter(([, e]) => e.bytes < total / 1000 && e.retained < total / 1000);
console.log(`(${small.length} crates under 0.1 % each: ${kib(small.reduce((s, [, e]) => s + e.bytes, 0))} KiB)`);

// chatwire's own items by module (two levels under `components` and `client`, where the page's parts are).
const byModule = new Map();
for (const item of top.filter((item) => crateOf(item.name) === 'chatwire')) {
  // Modules are the lower-case segments after `chatwire::` (a type or `{{closure}}` ends them).
  const segments = (/chatwire::((?:[a-z_][a-z0-9_]*::)*)/.exec(item.name)?.[1] ?? '').split('::').filter(Boolean);
  const depth = ['components', 'client'].includes(segments[0]) ? 2 : 1;
  const key = segments.slice(0, depth).join('::') || '(crate root)';
  byModule.set(key, (byModule.get(key) ?? 0) + item.shallow_size);
}
console.log('\nchatwire by module (shallow; its generic code instantiated in other crates is theirs, above)');
for (const [module, bytes] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
  console.log(`${kib(bytes).padStart(8)} KiB ${pct(bytes).padStart(5)} %  ${module}`);
}

const short = (name) => (name.length > 120 ? `${name.slice(0, 117)}...` : name);
console.log(`\ntop ${TOP} items (shallow)`);
for (const item of top.slice(0, TOP)) {
  console.log(`${item.shallow_size.toLocaleString('en').padStart(9)} B ${pct(item.shallow_size).padStart(5)} %  ${crateOf(item.name).padEnd(16)} ${short(item.name)}`);
}

console.log(`\ndominator tree: the ${TOP} entry points that retain most (below the exports and the function table)`);
for (const node of entries.sort((a, b) => b.retained_size - a.retained_size).slice(0, TOP)) {
  console.log(
    `${node.retained_size.toLocaleString('en').padStart(9)} B ${pct(node.retained_size).padStart(5)} %  ${crateOf(node.name).padEnd(16)} ${short(node.name)}`,
  );
}
if (!same) {
  console.error(`\nthe profile is not of ${shippedName}: rebuild (size.sh without --no-build)`);
  process.exit(1);
}
