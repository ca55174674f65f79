#!/usr/bin/env bash
# monitor-cost.sh: the monitor's own CPU use with the queues on, at 5 Hz and 10 Hz, against a
# peer in the same script: a shell loop forking `tc -s -j qdisc show` at the same rate (how the
# monitor read qdiscs before rtnetlink, and how LibreQoS and flent-over-ssh loops still do).
# Also counts the PIDs the monitor used (processes and threads): it runs as PID 2 of a fresh PID
# namespace, and the PID the next process there gets tells how many were created in between.
# Runs of 1 s and 3 s: the same count for both means nothing is spawned per sample (the one
# PID is the sampler thread).
#
# Usage: bench/monitor-cost.sh                 (builds target/release)
#        SECONDS_PER_RUN=30 ROUNDS=3 ROUTERBENCH=/path/to/routerbench bench/monitor-cost.sh
# Root is needed for the PID namespace count only (else it prints n/a).
set -euo pipefail
cd "$(dirname "$0")/.."

D=${SECONDS_PER_RUN:-20}
ROUNDS=${ROUNDS:-3}
if [ -z "${ROUTERBENCH:-}" ]; then
  cargo build --release >&2
  ROUTERBENCH="${CARGO_TARGET_DIR:-target}/release/routerbench"
fi
command -v tc >/dev/null || { echo "tc not found: apt-get install iproute2" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CPU seconds (user+sys) of the command's whole process tree, from bash's `times`.
cpu_of() {
  ( "$@" >/dev/null 2>&1; times ) | awk 'NR==2 {
      split($1,a,/[ms]/); split($2,b,/[ms]/); printf "%.4f\n", a[1]*60+a[2]+b[1]*60+b[2] }'
}

tc_loop() { # rate_hz seconds
  local n i iv
  n=$(awk -v h="$1" -v d="$2" 'BEGIN{printf "%d", h*d}')
  iv=$(awk -v h="$1" 'BEGIN{printf "%.4f", 1/h}')
  for ((i = 0; i < n; i++)); do tc -s -j qdisc show >/dev/null; sleep "$iv"; done
}

pids_used() { # interval seconds: PIDs (processes + threads) the monitor took, via a PID namespace
  if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then echo n/a; return; fi
  local last
  last=$(unshare -pf sh -c "\"$ROUTERBENCH\" monitor -t $2 -i $1 --queue-interval $1 -q >/dev/null; sh -c 'echo \$\$'")
  # PID 1 = sh, 2 = routerbench, then whatever it created, then the echo.
  echo $((last - 3))
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "host: $(uname -m), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(tc -V 2>&1 | head -1)" >&2
echo "| rate | routerbench monitor CPU % of one core | tc-fork loop CPU % | ratio | PIDs the monitor used in a 1 s / 3 s run |"
echo "|---|---|---|---|---|"
for hz in 5 10; do
  iv=$(awk -v h="$hz" 'BEGIN{printf "%.3f", 1/h}')
  for r in $(seq 1 "$ROUNDS"); do
    echo "$hz Hz round $r/$ROUNDS" >&2
    cpu_of "$ROUTERBENCH" monitor -t "$D" -i "$iv" --queue-interval "$iv" -q >>"$work/ours.$hz"
    cpu_of tc_loop "$hz" "$D" >>"$work/tc.$hz"
  done
  ours=$(median <"$work/ours.$hz")
  peer=$(median <"$work/tc.$hz")
  used="$(pids_used "$iv" 1) / $(pids_used "$iv" 3)"
  awk -v o="$ours" -v p="$peer" -v d="$D" -v hz="$hz" -v s="$used" 'BEGIN {
      printf "| %d Hz | %.3f %% | %.2f %% | %.3f | %s |\n", hz, 100*o/d, 100*p/d, (p > 0 ? o/p : 0), s }'
done
echo "(medians of $ROUNDS runs of $D s; target: under 0.5 % of one core at 5 Hz, no process spawned per sample)"
