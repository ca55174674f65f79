#!/usr/bin/env bash
# bench/lab-capacity.sh - forwarding capacity of the netns lab's router namespace (run as root).
#
# Unshaped lab, LAN host -> router namespace -> WAN host, NAT off and on, 1 and 4 flows, offloads
# off (MTU-sized packets: what a router's CPU sees) and on (64 KB GSO packets), measured with
# routerbench's own iperf3 client/server and, as the peer, Debian's iperf3 in the same run.
# Prints the capacity table, the ratio NAT on / NAT off (the cost of conntrack + masquerade), and
# the ratio routerbench / iperf3 per point.
#
#   sudo bench/lab-capacity.sh
#   LENGTH=10 OFFLOADS="off" LOADS=routerbench sudo -E bench/lab-capacity.sh
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
LOADS=${LOADS:-"routerbench iperf3"}
NAME=rbcap$$
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; "$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT INT TERM

for load in $LOADS; do
  for off in $OFFLOADS; do
    "$RB" lab capacity --name "$NAME" --offloads "$off" --length "$LENGTH" --load "$load" --json \
      >"$tmp/$load-$off.json"
  done
done

# goodput of (load, offloads, flows, nat) in Gbit/s
gbps() {
  jq -r --argjson f "$3" --argjson n "$4" \
    '[.lab.capacity.points[] | select(.flows == $f and .nat == $n)][0].goodput_bps / 1e9' "$tmp/$1-$2.json"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo "| load | offloads | flows | NAT off Gbit/s | NAT on Gbit/s | NAT on / NAT off |"
echo "|---|---|---|---|---|---|"
for load in $LOADS; do
  for off in $OFFLOADS; do
    for f in $(jq -r '[.lab.capacity.points[].flows] | unique | .[]' "$tmp/$load-$off.json"); do
      a=$(gbps "$load" "$off" "$f" false) b=$(gbps "$load" "$off" "$f" true)
      printf "| %s | %s | %s | %.2f | %.2f | %s |\n" "$load" "$off" "$f" "$a" "$b" "$(ratio "$b" "$a")"
    done
  done
done
set -- $LOADS
if [ $# -ge 2 ]; then
  echo
  echo "| offloads | flows | NAT | $1 / $2 |"
  echo "|---|---|---|---|"
  for off in $OFFLOADS; do
    for f in $(jq -r '[.lab.capacity.points[].flows] | unique | .[]' "$tmp/$1-$off.json"); do
      for n in false true; do
        printf "| %s | %s | %s | %s |\n" "$off" "$f" "$([ $n = true ] && echo on || echo off)" \
          "$(ratio "$(gbps "$1" "$off" "$f" $n)" "$(gbps "$2" "$off" "$f" $n)")"
      done
    done
  done
fi
echo
for load in $LOADS; do
  echo "$load: $(jq -r '.lab.capacity.generator' "$tmp/$load-$(echo $OFFLOADS | cut -d' ' -f1).json")"
done
echo "${LENGTH} s per point, cubic; unshaped lab on a shared 2-vCPU VM: figures are lower bounds and noisy"
