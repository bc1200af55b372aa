#!/usr/bin/env bash
# Builds the decode bench's WASM (decode/lib.rs around chatwire's frame decoder) the way cargo-leptos builds the
# page's: the `wasm-release` profile, wasm-bindgen, then `wasm-opt -Oz` with cargo-leptos' flags. The result goes
# to decode/pkg/<name>/, so builds of different code or settings can sit side by side and be timed in one run.
#
#   CARGO_TARGET_DIR=… end2end/bench/decode/build.sh [name]     (name defaults to `current`)
#
# Extra cargo arguments come from DECODE_BENCH_CARGO_ARGS, e.g. to measure other settings:
#   DECODE_BENCH_CARGO_ARGS="--config profile.wasm-release.opt-level=3" …/build.sh o3
# Prints the module's raw and brotli sizes.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NAME="${1:-current}"
OUT="$HERE/pkg/$NAME"
export PATH="$ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
: "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"

# The bench crate keeps its own copy of the shipping profile; a copy that drifted would time another build.
profile() { awk '/^\[/ { on = index($0, "[profile.wasm-release") == 1 } on && !/^#/ && NF' "$1"; }
if ! diff <(profile "$ROOT/Cargo.toml") <(profile "$HERE/Cargo.toml") >&2; then
  echo "decode/Cargo.toml's [profile.wasm-release] differs from Cargo.toml's; copy it over" >&2
  exit 1
fi
# The product's lockfile, so the bench links the very versions the page ships with.
cp "$ROOT/Cargo.lock" "$HERE/Cargo.lock"

# shellcheck disable=SC2086 # DECODE_BENCH_CARGO_ARGS is a list of arguments
cargo build --manifest-path "$HERE/Cargo.toml" --lib --target wasm32-unknown-unknown --profile wasm-release \
  ${DECODE_BENCH_CARGO_ARGS:-} >&2
rm -rf "$OUT"
wasm-bindgen --target nodejs --out-dir "$OUT" \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/chatwire_decode_bench.wasm"
# wasm-bindgen's nodejs glue is CommonJS; end2end/package.json makes .js files ES modules.
echo '{ "type": "commonjs" }' >"$OUT/package.json"
WASM="$OUT/chatwire_decode_bench_bg.wasm"
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$WASM" -o "$WASM"
node -e '
  const fs = require("fs"), zlib = require("zlib");
  const bytes = fs.readFileSync(process.argv[1]);
  const brotli = zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } });
  console.log(`${process.argv[2]}: ${bytes.length} B raw, ${brotli.length} B brotli`);
' "$WASM" "$NAME"
