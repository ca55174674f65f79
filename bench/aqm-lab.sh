#!/usr/bin/env bash
# bench/aqm-lab.sh - RRUL through the lab with fifo, codel, fq_codel and cake (run as root).
#
# 50 Mbit/s both ways, 300 KB buffer (buffer·8/rate = 48 ms), offloads off, cubic; routerbench's
# own rrul (4 up + 4 down TCP flows, UDP and ICMP probes) for LENGTH s, RUNS times per qdisc.
# The kernel's qdisc when it has it, else routerbench's userspace forwarder (the table says
# which). The peer is the FIFO in the same run: goodput is also given as a ratio to the FIFO's
# mean. "sparse" = the UDP probes' loaded round trip (median), "bulk" = the TCP flows' own RTT
# (median over the flows' kernel srtt samples): under fq_codel/cake the sparse probes skip the
# bulk flows' queues.
#
#   sudo bench/aqm-lab.sh
#   RUNS=3 LENGTH=30 QDISCS="fifo fq_codel" sudo -E bench/aqm-lab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "aqm-lab: not root: the lab needs CAP_NET_ADMIN; run as root" >&2; exit 1; }
command -v jq >/dev/null || { echo "aqm-lab: jq not found: apt-get install jq" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
RB=${ROUTERBENCH:-$target/release/routerbench}
if [ -z "${ROUTERBENCH:-}" ]; then
  cargo build --release --quiet || { echo "aqm-lab: cargo build failed" >&2; exit 1; }
fi
RUNS=${RUNS:-2}
LENGTH=${LENGTH:-20}
QDISCS=${QDISCS:-"fifo codel fq_codel cake"}
NAME=rbaqm$$
tmp=$(mktemp -d)
trap '"$RB" lab down --name "$NAME" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

echo "| qdisc | where | run | RTT p99 increase ms | up OWD p99 +ms | down OWD p99 +ms | sparse (UDP probe) RTT median ms | bulk (TCP) RTT median ms | goodput up+down Mbit/s | goodput / fifo | forwarder max sojourn up/down ms | rx socket drops |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
fifo_sum=0; fifo_n=0
rows=()
for q in $QDISCS; do
  for r in $(seq 1 "$RUNS"); do
    # A fresh forwarder per run, so its counters cover this run only.
    "$RB" lab up --name "$NAME" --rate 50mbit --buffer 300000 --qdisc "$q" >/dev/null
    where=$("$RB" lab status --name "$NAME" --json | jq -r '.aqm.place // "kernel"')
    f=$tmp/$q-$r.json
    "$RB" lab run rrul --name "$NAME" -l "$LENGTH" -q --json "$f" >/dev/null 2>&1 || { echo "aqm-lab: $q run $r failed" >&2; continue; }
    line=$(jq -r '
      def chk(d): (.lab.checks[] | select(.direction == d));
      [ (chk("both").p99_increase_ms),
        (chk("up").p99_increase_ms), (chk("down").p99_increase_ms),
        (chk("both").loaded.median_ms // .latency.summary.loaded_rtt_ms),
        ([.latency.flows[].tcp_rtt_ms.median | select(. != null)] | if length > 0 then add / length else null end),
        ((chk("up").goodput_bps + chk("down").goodput_bps) / 1e6) ] | @tsv' "$f")
    read -r p99 up down sparse bulk gp <<<"$line"
    fwd="-|-"
    st=/run/routerbench-lab/$NAME.shape-stats.json
    if [ "$where" = userspace ] && [ -f "$st" ]; then
      fwd=$(jq -r '"\(.up.sojourn_max_run_ms * 100 | round / 100) / \(.down.sojourn_max_run_ms * 100 | round / 100)|\(.up.rx_socket_drops + .down.rx_socket_drops)"' "$st")
    fi
    if [ "$q" = fifo ]; then fifo_sum=$(echo "$fifo_sum + $gp" | bc -l); fifo_n=$((fifo_n + 1)); fi
    rows+=("$q|$where|$r|$p99|$up|$down|$sparse|$bulk|$gp|$fwd")
  done
done
fifo_mean=$( [ "$fifo_n" -gt 0 ] && echo "$fifo_sum / $fifo_n" | bc -l || echo 0)
for row in "${rows[@]}"; do
  IFS='|' read -r q where r p99 up down sparse bulk gp fsoj fdrops <<<"$row"
  ratio=$( [ "$fifo_n" -gt 0 ] && printf '%.3f' "$(echo "$gp / $fifo_mean" | bc -l)" || echo n/a)
  printf '| %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %s | %s | %s |\n' "$q" "$where" "$r" "$p99" "$up" "$down" "$sparse" "$bulk" "$gp" "$ratio" "$fsoj" "$fdrops"
done
