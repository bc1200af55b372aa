#!/usr/bin/env bash
# Size profile of the main WASM module (issue 39, item 2; not a test): what the first load's module holds, by crate,
# its largest items and its dominator tree, from twiggy (`cargo install twiggy`; `./x size` installs it).
#
#   CARGO_TARGET_DIR=… end2end/bench/size.sh [--no-build]
#
# The shipped module has no names: cargo-leptos' wasm-opt drops the name section. So this rebuilds the module with
# names from what the release build leaves behind, without compiling again: cargo-leptos splits rustc's output into
# front/…/wasm-release/chatwire_split.wasm (the main module, names kept), runs wasm-bindgen on it and then wasm-opt.
# This runs the same wasm-bindgen and wasm-opt, with the same flags, plus `-g` so that wasm-opt keeps the names. The
# result has the shipped module's code and data section byte for byte (size.mjs checks and says so), plus names.
#
# First builds the site as it ships (frontend only, as bundle.sh); --no-build profiles the last build instead, which
# must be the one in target/site (the front directory is shared by every clone using the same CARGO_TARGET_DIR).
# Writes its files to target/size-profile/. SIZE_TOP: how many items to list (default 30).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
: "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"
command -v twiggy >/dev/null || { echo "twiggy not found: cargo install twiggy (or ./x size)" >&2; exit 1; }

if [ "${1:-}" != --no-build ]; then
  cargo leptos build --release --precompress --split --frontend-only >&2
fi

SPLIT="$CARGO_TARGET_DIR/front/wasm32-unknown-unknown/wasm-release/chatwire_split.wasm"
OUT="$ROOT/target/size-profile"
rm -rf "$OUT"
mkdir -p "$OUT"
# cargo-leptos 0.3.10's flags (src/compile/front.rs): wasm-bindgen for a split build, and the wasm-opt flags of
# Cargo.toml's `wasm-opt-features`, or LEPTOS_WASM_OPT_FEATURES when set, as cargo-leptos reads it.
wasm-bindgen --target=web --keep-lld-exports --no-demangle --out-name=chatwire --out-dir="$OUT" "$SPLIT"
IFS=, read -ra OPT <<<"${LEPTOS_WASM_OPT_FEATURES:--Oz,--converge,--enable-bulk-memory,--enable-nontrapping-float-to-int}"
wasm-opt "${OPT[@]}" -g "$OUT/chatwire_bg.wasm" -o "$OUT/named.wasm"
twiggy top --format json "$OUT/named.wasm" >"$OUT/top.json"
twiggy dominators --format json "$OUT/named.wasm" >"$OUT/dominators.json"
node "$ROOT/end2end/bench/size.mjs" "$OUT" "$ROOT/target/site/pkg"
