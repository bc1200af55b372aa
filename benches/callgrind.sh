#!/usr/bin/env bash
# Instructions per event of map + encode (issue 3, item 4): (Ir(2N) − Ir(N)) / N under callgrind, counting only
# `map_events::map_and_encode`, so setup and the bench's own copying of events are left out.
#
#   benches/callgrind.sh [N]        # N defaults to 20000
#
# Needs valgrind (`apt-get install -y valgrind`). Builds the bench (release profile).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-20000}
binary=$(cargo bench --features ssr --bench map_events --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*map_events[^"]*\)".*/\1/p' | tail -n 1)
[ -x "$binary" ] || { echo "could not build the map_events bench" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
instructions() {
  valgrind --tool=callgrind --toggle-collect='map_events::map_and_encode' \
    --callgrind-out-file="$work/out.$1" "$binary" --events "$1" >/dev/null 2>"$work/log.$1"
  sed -n 's/^summary: //p' "$work/out.$1"
}
single=$(instructions "$events")
double=$(instructions $((events * 2)))
echo "Ir($events) = $single, Ir($((events * 2))) = $double"
echo "instructions per event (map + encode): $(((double - single) / events))"
