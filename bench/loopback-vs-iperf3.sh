#!/usr/bin/env bash
# Loopback throughput: Debian's iperf3 3.12 (`iperf3 -s` + `iperf3 -c 127.0.0.1`) against
# `routerbench loopback`, alternated A/B with the same -t and 128 KiB writes, for -P 1 and -P 2.
# Prints each run, the medians, and the ratios routerbench/iperf3 for throughput and for CPU
# per Gbit/s (sender + receiver CPU %, lower is better).
#
#   bench/loopback-vs-iperf3.sh            # T=5 s, 3 rounds
#   T=3 ROUNDS=2 bench/loopback-vs-iperf3.sh
#
# Targets (issue 3): >= 1.0x iperf3 at -P 1, >= 1.5x at -P 2 on a 2-core box.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${T:-5}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-5399}
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
command -v iperf3 >/dev/null || { echo "iperf3 missing: apt-get install iperf3" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing: apt-get install python3" >&2; exit 1; }
if [ ! -x "$RB" ]; then
  cargo build --release
fi
TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# Prints "gbps sender_cpu receiver_cpu" from an iperf3-schema JSON file.
extract() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["end"]
c = e["cpu_utilization_percent"]
print("%.3f %.1f %.1f" % (e["sum_received"]["bits_per_second"] / 1e9, c["host_total"], c["remote_total"]))
PY
}

run_iperf3() { # $1 = streams, $2 = out file
  iperf3 -s -p "$PORT" -1 >/dev/null 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    grep -q ":$(printf '%04X' "$PORT") .* 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
    sleep 0.05
  done
  timeout $((T + 30)) iperf3 -c 127.0.0.1 -p "$PORT" -t "$T" -P "$1" -l 128K -J >"$2"
  timeout 10 tail --pid="$SERVER_PID" -f /dev/null || kill "$SERVER_PID"
  SERVER_PID=""
}

run_rb() { # $1 = streams, $2 = out file
  timeout $((T + 30)) "$RB" loopback -t "$T" -P "$1" -l 128K --json >"$2"
}

echo "machine: $(nproc) cores, $(uname -r), cc $(cat /proc/sys/net/ipv4/tcp_congestion_control), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "iperf3: $(iperf3 --version | head -1)"
echo "routerbench: $("$RB" --version)"
echo "T=$T s, $ROUNDS rounds, 128 KiB writes"
for P in 1 2; do
  : >"$TMP/ip3-$P" ; : >"$TMP/rb-$P"
  for r in $(seq 1 "$ROUNDS"); do
    run_iperf3 "$P" "$TMP/j"; line=$(extract "$TMP/j"); echo "$line" >>"$TMP/ip3-$P"
    echo "P=$P round $r iperf3      : $line  (Gbit/s, sender CPU %, receiver CPU %)"
    run_rb "$P" "$TMP/j"; line=$(extract "$TMP/j"); echo "$line" >>"$TMP/rb-$P"
    echo "P=$P round $r routerbench : $line"
  done
done
python3 - "$TMP" <<'PY'
import statistics, sys
tmp = sys.argv[1]
def load(name):
    rows = [list(map(float, l.split())) for l in open(f"{tmp}/{name}") if l.strip()]
    gbps = statistics.median(r[0] for r in rows)
    cpu_per_gbit = statistics.median((r[1] + r[2]) / r[0] for r in rows if r[0] > 0)
    return gbps, cpu_per_gbit
print()
print("| -P | iperf3 Gbit/s | routerbench Gbit/s | throughput ratio | iperf3 CPU%/Gbit/s | routerbench CPU%/Gbit/s | CPU-per-Gbit ratio |")
print("|---|---|---|---|---|---|---|")
for p in (1, 2):
    i, ic = load(f"ip3-{p}")
    r, rc = load(f"rb-{p}")
    print(f"| {p} | {i:.2f} | {r:.2f} | {r / i:.2f}x | {ic:.1f} | {rc:.1f} | {rc / ic:.2f}x |")
print("(medians; CPU = sender + receiver CPU % of one core, per Gbit/s received; ratio < 1 is better)")
PY
