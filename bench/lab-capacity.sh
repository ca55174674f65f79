#!/usr/bin/env bash
# bench/lab-capacity.sh - forwarding capacity of the netns lab's router namespace (run as root).
#
# Unshaped lab, LAN host -> router namespace -> WAN host, NAT off and on, 1 and 4 flows, offloads
# off (MTU-sized packets: what a router's CPU sees) and on (64 KB GSO packets). Prints the
# capacity tables and the ratios NAT/no-NAT (the cost of conntrack + masquerade) and 4/1 flows.
#
#   sudo bench/lab-capacity.sh
#   LENGTH=10 OFFLOADS="off" sudo -E bench/lab-capacity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "lab-capacity: not root: the lab needs CAP_NET_ADMIN; run as root" >&2; exit 1; }
command -v jq >/dev/null || { echo "lab-capacity: jq not found: apt-get install jq" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
RB=${ROUTERBENCH:-$target/release/routerbench}
if [ -z "${ROUTERBENCH:-}" ]; then
  cargo build --release --quiet || { echo "lab-capacity: cargo build failed" >&2; exit 1; }
fi
LENGTH=${LENGTH:-5}
OFFLOADS=${OFFLOADS:-"off on"}
NAME=rbcap$$
trap '"$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT INT TERM
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT INT TERM

for off in $OFFLOADS; do
  "$RB" lab capacity --name "$NAME" --offloads "$off" --length "$LENGTH" --json >"$tmp/$off.json"
done
echo "| offloads | flows | NAT off | NAT on | NAT on / NAT off |"
echo "|---|---|---|---|---|"
for off in $OFFLOADS; do
  jq -r --arg off "$off" '
    .lab.capacity.points as $p
    | ($p | map(.flows) | unique)[] as $f
    | ($p | map(select(.flows == $f and .nat == false)) | .[0].goodput_bps) as $a
    | ($p | map(select(.flows == $f and .nat == true)) | .[0].goodput_bps) as $b
    | "| \($off) | \($f) | \($a / 1e9 * 100 | round / 100) Gbit/s | \($b / 1e9 * 100 | round / 100) Gbit/s | \(if $a > 0 then ($b / $a * 100 | round / 100) else "n/a" end) |"' "$tmp/$off.json"
done
gen=$(jq -r '.lab.capacity.generator' "$tmp/$(echo $OFFLOADS | cut -d' ' -f1).json")
echo
echo "load generator: $gen; ${LENGTH} s per point, cubic; figures are lower bounds on a shared VM"
