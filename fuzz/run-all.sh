#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), seeded from the protocol captures in
# docs/protocols/iperf3.md when that file is present, and prints one line per target.
#
#   fuzz/run-all.sh                  # 60 s per target
#   SECONDS_PER_TARGET=300 fuzz/run-all.sh iperf3_params rb_frame
#
# cargo fuzz needs a nightly compiler (-Zsanitizer=address). Where only stable is installed,
# RUSTC_BOOTSTRAP=1 lets stable rustc take the -Z flags; the ASan runtime ships with stable's
# rust-std. A crash leaves its input under fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")"
T=${SECONDS_PER_TARGET:-60}
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install cargo-fuzz" >&2; exit 1; }
if ! rustc --version | grep -q nightly; then
  export RUSTC_BOOTSTRAP=1
fi
SPEC=../docs/protocols/iperf3.md
seed() { # $1 = target, $2 = name, stdin = bytes
  mkdir -p "corpus/$1"
  cat >"corpus/$1/$2"
}
if [ -f "$SPEC" ]; then
  i=0
  grep -o '{"\(tcp\|udp\)":true[^}]*}' "$SPEC" | sort -u | while read -r j; do
    i=$((i + 1)); printf '%s' "$j" | seed iperf3_params "spec-$i"
  done
  grep -o '{"cpu_util_total".*}]}' "$SPEC" | sort -u | while read -r j; do
    i=$((i + 1)); printf '%s' "$j" | seed iperf3_results "spec-$i"
  done
fi
# A 37-byte cookie, and a length-framed JSON body.
printf 'abcdefghijklmnopqrstuvwxyz234567abcd\0' | seed iperf3_control cookie
printf '\0\0\0\x02{}' | seed iperf3_control frame
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  if cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$T" -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    echo "$t: ok, $runs inputs in ${T}s, coverage $cov edges, corpus $(ls "corpus/$t" | wc -l) files"
    rm -f "$log"
  else
    echo "$t: FAILED, log in $log" >&2
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" >&2 || tail -20 "$log" >&2
    exit 1
  fi
done
