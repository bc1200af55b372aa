#!/usr/bin/env bash
# Bundle-size bench (not a test): builds the browser half as `cargo leptos build --release` does (same profile, same
# environment, so the build cache is shared), then prints wasm + js sizes raw and brotli-compressed, and where the
# wasm's bytes go (a copy with its name section, through twiggy when it is installed).
#
#   CARGO_TARGET_DIR=… end2end/bench/bundle.sh [wasm-opt flags…]     (default flags: cargo-leptos' own)
#
# BUNDLE_PROFILE picks another cargo profile (default wasm-release); BUNDLE_RUSTFLAGS adds rustc flags (for example
# `--cfg erase_components`); BUNDLE_TOP is how many twiggy rows to show (default 40, 0 for none).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
TARGET="${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}/front"
PROFILE="${BUNDLE_PROFILE:-wasm-release}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# What cargo-leptos sets for the front build (see its `Project::to_envs`); a different value would rebuild leptos.
export LEPTOS_OUTPUT_NAME=chatwire LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_PKG_DIR=pkg LEPTOS_SITE_ADDR=127.0.0.1:3000 \
  LEPTOS_RELOAD_PORT=3001 LEPTOS_LIB_DIR=. LEPTOS_BIN_DIR=. LEPTOS_JS_MINIFY=true LEPTOS_HASH_FILES=true \
  LEPTOS_HASH_FILE_NAME=hash.txt
if [ -n "${BUNDLE_RUSTFLAGS:-}" ]; then export RUSTFLAGS="$BUNDLE_RUSTFLAGS"; fi

cargo build --package=chatwire --lib --target-dir="$TARGET" --target=wasm32-unknown-unknown --no-default-features \
  --features=hydrate --profile="$PROFILE" >&2
wasm-bindgen --target web --no-typescript --out-dir "$OUT" --out-name chatwire \
  "$TARGET/wasm32-unknown-unknown/$PROFILE/chatwire.wasm"
if [ "$#" -gt 0 ]; then FLAGS=("$@"); else FLAGS=(-Oz --enable-bulk-memory --enable-nontrapping-float-to-int); fi
# -g keeps the name section for the breakdown; the measured copy is written without it, as cargo-leptos does.
wasm-opt "${FLAGS[@]}" -g "$OUT/chatwire_bg.wasm" -o "$OUT/named.wasm"
wasm-opt "${FLAGS[@]}" "$OUT/chatwire_bg.wasm" -o "$OUT/chatwire.wasm"

node --input-type=module - "$OUT/chatwire.wasm" "$OUT/chatwire.js" "${FLAGS[*]}" "$PROFILE" <<'EOF'
import fs from 'node:fs';
import zlib from 'node:zlib';
const [wasmPath, jsPath, flags, profile] = process.argv.slice(2);
const brotli = (bytes) =>
  zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const kib = (n) => (n / 1024).toFixed(1);
const wasm = fs.readFileSync(wasmPath);
// cargo-leptos minifies the JS glue; unminified it is ~1 KiB more after brotli, so this slightly overstates it.
const js = fs.readFileSync(jsPath);
const [wb, jb] = [brotli(wasm), brotli(js)];
console.log(JSON.stringify({ profile, wasmOpt: flags, wasmKiB: +kib(wasm.length), wasmBrotliKiB: +kib(wb),
  jsKiB: +kib(js.length), jsBrotliKiB: +kib(jb), totalBrotliKiB: +kib(wb + jb) }));
EOF

TOP="${BUNDLE_TOP:-40}"
if [ "$TOP" -gt 0 ] && command -v twiggy >/dev/null; then
  twiggy top -n "$TOP" "$OUT/named.wasm"
fi
