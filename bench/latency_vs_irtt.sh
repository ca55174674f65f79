#!/usr/bin/env bash
# Kernel-timestamped probes against irtt (user-space timestamps), in the same run, on loopback:
# routerbench `ping` (UDP + ICMP, every 10 ms) and `irtt client` (every 10 ms) run side by side,
# first on an idle machine, then with 4 busy loops per core. Prints each tool's RTT percentiles and
# the ratio irtt p99 / routerbench kernel p99 (how much false latency user-space stamps add).
#
# usage: bench/latency_vs_irtt.sh [path/to/routerbench]   (needs irtt; loopback only)
set -euo pipefail
RB=${1:-${CARGO_TARGET_DIR:-target}/release/routerbench}
command -v irtt >/dev/null || { echo "irtt not installed (apt-get install irtt)"; exit 1; }
[ -x "$RB" ] || { echo "build first: cargo build --release ($RB missing)"; exit 1; }
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT

"$RB" latency-server --bind 127.0.0.1 -p 15299 2>"$DIR/rb-server.log" & PIDS+=($!)
irtt server -b 127.0.0.1:15298 >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5

run_pair() { # $1 = label
  irtt client -i 10ms -d 5s -Q -o "$DIR/irtt-$1.json" 127.0.0.1:15298 &
  local ip=$!
  "$RB" ping 127.0.0.1 -p 15299 --length 5 --interval 0.01 -q --json "$DIR/rb-$1.json" >/dev/null
  wait "$ip"
}

run_pair idle
BUSY=()
for _ in $(seq $((4 * $(nproc)))); do sh -c 'while :; do :; done' & BUSY+=($!); PIDS+=($!); done
run_pair busy
for p in "${BUSY[@]}"; do kill "$p"; done

python3 - "$DIR" <<'EOF'
import json, sys
d = sys.argv[1]
def pct(v, q):
    v = sorted(v); pos = q / 100 * (len(v) - 1); lo = int(pos); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)
print(f"{'condition':<6} {'series':<34} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
for cond in ("idle", "busy"):
    irtt = json.load(open(f"{d}/irtt-{cond}.json"))
    irtt_rtt = [rt["delay"]["rtt"] / 1e6 for rt in irtt["round_trips"] if "rtt" in rt.get("delay", {})]
    rb = json.load(open(f"{d}/rb-{cond}.json"))["latency"]
    udp = next(p for p in rb["probes"] if p["kind"] == "udp")
    icmp = next((p for p in rb["probes"] if p["kind"] == "icmp"), None)
    rows = [("irtt (user-space stamps)", irtt_rtt),
            ("routerbench UDP, kernel stamps", [s["rtt_ms"] for s in udp["samples"] if s["rtt_ms"] is not None]),
            ("routerbench UDP, user-space stamps", [s["rtt_user_ms"] for s in udp["samples"] if s["rtt_user_ms"] is not None])]
    if icmp and icmp["received"]:
        rows.append(("routerbench ICMP, kernel stamps", [s["rtt_ms"] for s in icmp["samples"] if s["rtt_ms"] is not None]))
    for name, v in rows:
        print(f"{cond:<6} {name:<34} {len(v):>5} {pct(v,50):>9.3f} {pct(v,99):>9.3f} {max(v):>9.3f}")
    ratio = pct(rows[0][1], 99) / max(pct(rows[1][1], 99), 1e-6)
    print(f"{cond:<6} ratio irtt p99 / routerbench kernel p99 = {ratio:.0f}x")
EOF
