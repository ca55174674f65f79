#!/usr/bin/env bash
# bench/lab-accuracy.sh - how close the netns lab comes to theory (run as root).
#
# For each (rate, buffer) point, direction and NAT setting: build the lab, run one bulk TCP
# transfer (cubic) through the tbf bottleneck with 10 Hz round-trip probes alongside, and print
# one row: configured rate and buffer, theory buffer*8/rate, measured median and p99 increase over
# idle, their ratios to theory, and goodput / rate (theory 1448/1514 = 0.957).
#
#   sudo bench/lab-accuracy.sh                       # 20mbit x 64000 and 50mbit x 300000, up+down, NAT off+on
#   POINTS="100mbit:64000" DIRS=up NATS=off LENGTH=10 FLOWS=4 sudo -E bench/lab-accuracy.sh
#
# Env: ROUTERBENCH (binary; default: build release into $CARGO_TARGET_DIR or target/),
#      POINTS ("rate:buffer ..."), DIRS ("up down"), NATS ("off on"), FLOWS (1), LENGTH (10 s),
#      METHOD (measure = iperf3 + UDP probes).
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
NAME=rbacc$$
trap '"$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT INT TERM

header_done=0
for point in $POINTS; do
  rate=${point%%:*} buffer=${point#*:}
  for nat in $NATS; do
    natflag=""; [ "$nat" = on ] && natflag="--nat"
    "$RB" lab up --name "$NAME" --rate "$rate" --buffer "$buffer" --cc cubic $natflag >/dev/null
    for dir in $DIRS; do
      if [ $header_done = 0 ]; then
        "$RB" lab measure --name "$NAME" --dir "$dir" --flows "$FLOWS" --length "$LENGTH" --cc cubic
        header_done=1
      else
        "$RB" lab measure --name "$NAME" --dir "$dir" --flows "$FLOWS" --length "$LENGTH" --cc cubic --row
      fi
    done
  done
done
echo
echo "theory: queue delay = buffer*8/rate; goodput = 1448/1514 = 0.957 x rate; median below theory is cubic's sawtooth (spec/netns-lab.md)"
