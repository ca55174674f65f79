#!/usr/bin/env bash
# bench/lab-accuracy.sh - how close the netns lab comes to theory (run as root).
#
# For each (rate, buffer) point and NAT setting: build the lab and run routerbench's own latency
# tests through the tbf bottleneck with cubic (METHOD=run, default: tcp_nup, tcp_ndown and rrul,
# 4 flows per loaded direction, probes every 0.1 s), and print one row per direction: configured
# rate and buffer, theory buffer*8/rate, measured median and p99 increase over idle, their ratios
# to theory, and goodput / rate against theory (1448/1514 = 0.957 with one direction loaded,
# 1448/(1514+33) = 0.936 when the link also carries the other direction's ACKs).
# METHOD=measure instead runs `lab measure` (bulk TCP + the lab's UDP probes) per direction, with
# LOAD=routerbench (default) or LOAD=iperf3 (Debian's iperf3).
#
#   sudo bench/lab-accuracy.sh                       # 20mbit x 64000 and 50mbit x 300000, NAT off+on
#   POINTS="100mbit:64000" NATS=off LENGTH=15 sudo -E bench/lab-accuracy.sh
#
# Env: ROUTERBENCH (binary; default: build release into $CARGO_TARGET_DIR or target/),
#      POINTS ("rate:buffer ..."), NATS ("off on"), TESTS ("tcp_nup tcp_ndown rrul"), LENGTH (10 s),
#      METHOD (run|measure), DIRS and FLOWS (measure only), LOAD (measure only).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "lab-accuracy: not root: the lab needs CAP_NET_ADMIN; run as root" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
RB=${ROUTERBENCH:-$target/release/routerbench}
if [ -z "${ROUTERBENCH:-}" ]; then
  cargo build --release --quiet || { echo "lab-accuracy: cargo build failed" >&2; exit 1; }
fi
POINTS=${POINTS:-"20mbit:64000 50mbit:300000"}
DIRS=${DIRS:-"up down"}
NATS=${NATS:-"off on"}
FLOWS=${FLOWS:-1}
LENGTH=${LENGTH:-10}
METHOD=${METHOD:-run}
TESTS=${TESTS:-"tcp_nup tcp_ndown rrul"}
LOAD=${LOAD:-routerbench}
NAME=rbacc$$
log=$(mktemp)
trap 'rm -f "$log"; "$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT INT TERM

header_done=0
for point in $POINTS; do
  rate=${point%%:*} buffer=${point#*:}
  for nat in $NATS; do
    natflag=""; [ "$nat" = on ] && natflag="--nat"
    "$RB" lab up --name "$NAME" --rate "$rate" --buffer "$buffer" --cc cubic $natflag >/dev/null
    if [ "$METHOD" = run ]; then
      if [ $header_done = 0 ]; then
        echo "| test | NAT | direction | metric | rate | buffer B | theory ms | idle median ms | loaded med / p99 ms | median +ms | p99 +ms | median/theory | p99/theory | qdisc backlog med / p99 ms | goodput | goodput/rate | goodput/theory |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        header_done=1
      fi
      for t in $TESTS; do
        "$RB" lab run "$t" --name "$NAME" --length "$LENGTH" --delay 1 --cc cubic --quiet --rows 2>"$log" ||
          { echo "lab-accuracy: lab run $t failed:" >&2; grep -v "latency-server" "$log" >&2; exit 1; }
      done
      continue
    fi
    for dir in $DIRS; do
      if [ $header_done = 0 ]; then
        "$RB" lab measure --name "$NAME" --dir "$dir" --flows "$FLOWS" --length "$LENGTH" --cc cubic --load "$LOAD"
        header_done=1
      else
        "$RB" lab measure --name "$NAME" --dir "$dir" --flows "$FLOWS" --length "$LENGTH" --cc cubic --load "$LOAD" --row
      fi
    done
  done
done
echo
echo "theory: queue delay = buffer*8/rate per loaded direction (round trips: the sum); median below theory is cubic's sawtooth,"
echo "deeper with both directions loaded (the other queue adds to every flow's RTT); the ratio columns are the check."
