#!/usr/bin/env bash
# What each way of doing the page's texts adds to the first load's WASM and JS glue: builds the variants with
# chatwire's `[profile.wasm-release]`, runs wasm-bindgen --target web and wasm-opt -Oz as cargo-leptos does, and
# prints raw and brotli (quality 11) bytes, the differences, and whether any Chinese text is in each WASM.
#   (a) plain       `&'static str` literals, no switch: what no i18n costs
#   (b) table       chatwire's own table (src/i18n's pattern): the zh-CN texts are fetched at the switch
#   (c) leptos_i18n 0.6 as it comes (both locales compiled in)
#   (d) leptos_i18n 0.6 with `dynamic_load` (strings out of the WASM; the server inlines the page's locale)
#   (e) as (d) without its `cookie` feature (the switch sets the cookie by hand, as (b) does)
# Needs wasm-bindgen (the CLI at the version pinned in Cargo.toml, as the product's), wasm-opt (end2end's
# node_modules) and node. docs/decisions.md, "A second language", has the figures of a run.
# Env: CARGO (e.g. "flock /tmp/chatwire-cargo.lock cargo" on a shared machine), WASM_BINDGEN, WASM_OPT,
# CARGO_TARGET_DIR. The texts are copied from src/i18n by gen.py (run it again to follow the table).
#
#   end2end/bench/i18n-compare/build.sh            (SKIP_BUILD=1: only print the figures of the last build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$here"
export PATH="$root/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
CARGO=${CARGO:-cargo}
WASM_BINDGEN=${WASM_BINDGEN:-wasm-bindgen}
WASM_OPT=${WASM_OPT:-wasm-opt}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}

# The bench keeps its own copy of the shipping profile (it is a workspace of its own); a drifted copy would measure
# another build.
profile() { awk '/^\[/ { on = index($0, "[profile.wasm-release") == 1 } on && !/^#/ && NF' "$1"; }
if ! diff <(profile "$root/Cargo.toml") <(profile "$here/Cargo.toml") >&2; then
  echo "i18n-compare/Cargo.toml's [profile.wasm-release] differs from Cargo.toml's; copy it over" >&2
  exit 1
fi
release=$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release

build() { # name package [cargo args…]
  local name=$1 package=$2
  shift 2
  $CARGO build --quiet --target wasm32-unknown-unknown --profile wasm-release -p "$package" "$@" 2>/dev/null ||
    $CARGO build --target wasm32-unknown-unknown --profile wasm-release -p "$package" "$@"
  rm -rf "out/$name"
  "$WASM_BINDGEN" --target web --no-typescript --out-dir "out/$name" --out-name "$name" "$release/$package.wasm"
  "$WASM_OPT" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int -o "out/$name/${name}_bg.wasm" \
    "out/$name/${name}_bg.wasm"
}

if [ "${SKIP_BUILD:-}" != 1 ]; then
  build plain i18n_bench_plain
  build table i18n_bench_table
  build leptos_i18n i18n_bench_leptos_i18n
  # Its generated module (the strings per locale), for what `dynamic_load` has the server inline.
  cp "$(grep -l "const STRINGS" "$release"/build/i18n_bench_leptos_i18n-*/out/i18n/mod.rs | head -1)" out/leptos_i18n/i18n_mod.rs
  build leptos_i18n_dynamic i18n_bench_leptos_i18n --features dynamic
  build leptos_i18n_lean i18n_bench_leptos_i18n --no-default-features --features dynamic
fi

node "$here/measure.mjs" "$here"
