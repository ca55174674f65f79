#!/usr/bin/env bash
# bench/aqm-cost.sh - what the userspace AQM costs per packet (no root, no network).
#
# ns per packet (one enqueue + one dequeue, 64 packets standing) for fifo, codel, fq_codel and
# cake (triple-isolate, unlimited and shaped at 9 Gbit/s), for 1, 16 and 1024 flows and 64 and
# 1500-byte packets (flows spread over 32 LAN hosts and 200 destinations; CAKE's triple-isolate
# divides its DRR quantum by the flows per host, so cost grows with flows per host), next to a
# plain VecDeque FIFO as the floor (the peer in the same run), and
# the once-per-packet receive work (parse + keyed flow/host hashes). Then what those costs would
# allow on an 880 MHz MIPS 1004Kc (MT7621) under a stated scaling assumption.
#
#   bench/aqm-cost.sh              # 300000 packets per cell, best of 3
#   ITER=100000 MIPS_FACTOR=14 bench/aqm-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ITER=${ITER:-300000}
# Scaling assumption: per-packet time scales with clock x IPC. This VM's core runs at about
# 2.6 GHz (AMD EPYC here) with an out-of-order core (IPC ~3 on this branchy integer code); the 1004Kc is
# in-order, single-issue at 880 MHz (IPC ~0.65). 2.95x clock x ~4.7x IPC = ~14x.
MIPS_FACTOR=${MIPS_FACTOR:-14}
out=$(cargo run --release --quiet -p aqm --example cost "$ITER")
echo "## AQM cost per packet on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) CPUs)"
echo
echo "$out"
echo
echo "## What it would mean on an 880 MHz MIPS 1004Kc (assumption: ${MIPS_FACTOR}x this VM's ns per packet)"
echo
echo "| qdisc | flows | ns/packet here (parse+hash + qdisc) | est. ns/packet on 1004Kc | max packets/s on one 1004Kc core | max shaped rate at 1500 B | at 64 B |"
echo "|---|---|---|---|---|---|---|"
echo "$out" | awk -F'|' -v f="$MIPS_FACTOR" '
  NR > 2 && $3+0 == 1500 {
    flows = $2+0; parse = $5+0
    split("fq_codel cake", names, " ")
    cost["fq_codel"] = $8+0; cost["cake"] = $9+0
    for (i = 1; i <= 2; i++) {
      n = names[i]; here = parse + cost[n]; mips = here * f; pps = 1e9 / mips
      printf("| %s | %d | %.0f | %.0f | %.0f k | %.0f Mbit/s | %.0f Mbit/s |\n", n, flows, here, mips, pps / 1000, (pps * 1514 * 8) / 1e6, (pps * 64 * 8) / 1e6)
    }
  }'
echo
echo "The qdisc and parse cost only: on a router the kernel's receive, forwarding and transmit work"
echo "comes on top (the lab's forwarder pays it as recvmsg/send system calls; see 'lab capacity --qdisc')."
