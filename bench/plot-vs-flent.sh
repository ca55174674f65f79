#!/usr/bin/env bash
# Plots and size: the same RRUL drawn by flent (`flent -i X.flent.gz -p all_scaled -o X.svg`,
# matplotlib) and by `routerbench plot --kind all_scaled`, alternated, median wall time and the
# ratio routerbench/flent; then the whole HTML report's time; then, with SIZE=1, the size a
# `--profile router` binary gains from the `plots` feature (both builds, ratio).
#
#   bench/plot-vs-flent.sh              # ROUNDS=5, uses a fresh `routerbench run --quick`
#   SIZE=1 bench/plot-vs-flent.sh       # also builds the router profile twice (minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
command -v flent >/dev/null || { echo "flent missing: apt-get install flent" >&2; exit 1; }
/usr/bin/env -S "$(head -1 "$(command -v flent)" | cut -c3-)" -c 'import matplotlib' 2>/dev/null || { echo "flent plots need matplotlib: apt-get install python3-matplotlib" >&2; exit 1; }
if [ ! -x "$RB" ]; then
  cargo build --release
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$RB" run --quick --quiet --skip crypto --out-dir "$TMP/run" >/dev/null
JSON=$TMP/run/latest.json
FLENT=$(ls "$TMP"/run/rrul-*.flent.gz)

now() { python3 -c 'import time; print(time.monotonic())'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$TMP/flent.t"; : >"$TMP/rb.t"; : >"$TMP/html.t"
for i in $(seq "$ROUNDS"); do
  a=$(now); flent -i "$FLENT" -p all_scaled -o "$TMP/f.svg" >/dev/null 2>&1; b=$(now)
  echo "$b - $a" | bc -l >>"$TMP/flent.t"
  a=$(now); "$RB" plot "$JSON" --kind all_scaled -o "$TMP/r.svg" >/dev/null; b=$(now)
  echo "$b - $a" | bc -l >>"$TMP/rb.t"
  a=$(now); "$RB" report "$JSON" -o "$TMP/r.html" >/dev/null; b=$(now)
  echo "$b - $a" | bc -l >>"$TMP/html.t"
  printf 'round %d: flent %.3f s, routerbench plot %.3f s, report %.3f s\n' "$i" \
    "$(tail -1 "$TMP/flent.t")" "$(tail -1 "$TMP/rb.t")" "$(tail -1 "$TMP/html.t")"
done
F=$(median <"$TMP/flent.t"); R=$(median <"$TMP/rb.t"); H=$(median <"$TMP/html.t")
printf '\n| all_scaled of one RRUL | flent (matplotlib) | routerbench plot | ratio routerbench/flent | whole HTML report |\n|---|---|---|---|---|\n'
printf '| median of %d, s | %.3f | %.3f | **%.3f** | %.3f |\n' "$ROUNDS" "$F" "$R" "$(echo "$R / $F" | bc -l)" "$H"
printf 'SVG size: flent %d bytes, routerbench %d bytes; report %d bytes\n' \
  "$(stat -c %s "$TMP/f.svg")" "$(stat -c %s "$TMP/r.svg")" "$(stat -c %s "$TMP/r.html")"

if [ "${SIZE:-0}" = 1 ]; then
  cargo build --profile router >/dev/null 2>&1
  WITH=$(stat -c %s target/router/routerbench)
  cargo build --profile router --no-default-features >/dev/null 2>&1
  WITHOUT=$(stat -c %s target/router/routerbench)
  printf '\n| router profile | without plots | with plots | added | ratio |\n|---|---|---|---|---|\n'
  printf '| bytes | %d | %d | %d | **%.3f** |\n' "$WITHOUT" "$WITH" "$((WITH - WITHOUT))" "$(echo "$WITH / $WITHOUT" | bc -l)"
fi
