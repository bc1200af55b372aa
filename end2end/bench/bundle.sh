#!/usr/bin/env bash
# Bundle-size bench (not a test): builds the browser half exactly as it ships (`cargo leptos build --release
# --precompress --split --frontend-only`, into target/site, sharing the release build's cache, then the short import
# names of tools/short-import-names.mjs, as `./x` builds it), then prints raw and
# brotli sizes (the `.br` files the server sends) of what a first page load fetches — the main wasm, its JS glue and
# the loader of the split chunks, which the glue imports — and of each chunk fetched later. Where the main module's
# bytes go: end2end/bench/size.sh (`./x size`); the budget they are held to: budget.toml.
#
#   CARGO_TARGET_DIR=… end2end/bench/bundle.sh
#
# To try other wasm-opt flags, set
# LEPTOS_WASM_OPT_FEATURES (comma-separated, read by cargo-leptos); for another profile, `lib-profile-release` in
# Cargo.toml.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
: "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"

cargo leptos build --release --precompress --split --frontend-only >&2
node tools/short-import-names.mjs "$ROOT/target/site/pkg" chatwire >&2

node --input-type=module - "$ROOT/target/site/pkg" <<'EOF'
import fs from 'node:fs';
import path from 'node:path';
const [pkg] = process.argv.slice(2);
const names = fs.readdirSync(pkg);
const size = (name) => fs.statSync(path.join(pkg, name)).size;
const kib = (n) => +(n / 1024).toFixed(1);
const one = (re) => {
  const found = names.filter((n) => re.test(n));
  if (found.length !== 1) throw new Error(`expected one file matching ${re} in ${pkg}, found ${found}`);
  return found[0];
};
const file = (name) => ({ name, bytes: size(name), brotliBytes: size(`${name}.br`) });
const initial = [one(/^chatwire\.[^.]+\.wasm$/), one(/^chatwire\.[^.]+\.js$/), one(/^__wasm_split\.[^.]+\.js$/)].map(file);
const chunks = names.filter((n) => /^(split|chunk)_.*\.wasm$/.test(n)).sort().map(file);
const sum = (files, key) => files.reduce((total, f) => total + f[key], 0);
for (const f of [...initial, ...chunks]) console.log(`${f.name}\t${f.bytes} B\tbrotli ${f.brotliBytes} B`);
console.log(JSON.stringify({
  initialKiB: kib(sum(initial, 'bytes')), initialBrotliKiB: kib(sum(initial, 'brotliBytes')),
  chunksKiB: kib(sum(chunks, 'bytes')), chunksBrotliKiB: kib(sum(chunks, 'brotliBytes')),
  totalBrotliKiB: kib(sum(initial, 'brotliBytes') + sum(chunks, 'brotliBytes')),
}));
EOF

