#!/usr/bin/env bash
# The userspace AQM forwarder's CPU per packet, before and after (two routerbench binaries),
# in one run, alternated, ROUNDS times: a lab (`lab up --qdisc Q --aqm userspace --rate R`),
# 4 cubic upload flows for T s (`lab measure`), and the forwarder's own counters (thread CPU and
# frames, both directions) from its stats file. Beside them, in the same run, the kernel's
# unshaped forwarding through the same lab (no qdisc, no forwarder). Then, with CAPACITY=1,
# `lab capacity` (the SQM capacity search) of both binaries. Needs root.
#
#   RB_BEFORE=/tmp/routerbench-main bench/forwarder-cost.sh
#   QDISCS="cake fq_codel" RATE=1gbit ROUNDS=5 T=5 CAPACITY=1 bench/forwarder-cost.sh
#
# HOST_NAPI=1 (default) gives both binaries' labs the same hosts: GRO and threaded NAPI on the
# LAN and WAN hosts' veth ends (what `lab up --aqm userspace` does since the forwarder change,
# docs/aqm.md), so the far host's TCP receive runs in its own kernel thread in both, and the
# comparison is of the forwarders alone. HOST_NAPI=0 leaves each lab as its binary makes it.
#
# Goal (issue 22): >= 2x the packets per CPU-second of the forwarder at 1 Gbit/s.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
RB_BEFORE=${RB_BEFORE:?set RB_BEFORE to the routerbench binary to compare with}
ROUNDS=${ROUNDS:-5}
T=${T:-5}
RATE=${RATE:-1gbit}
QDISCS=${QDISCS:-"cake fq_codel"}
NAME=${NAME:-rb22fwd}
CAPACITY=${CAPACITY:-0}
BUDGET=${BUDGET:-120}
HOST_NAPI=${HOST_NAPI:-1}
export RB RB_BEFORE ROUNDS T RATE QDISCS NAME CAPACITY BUDGET HOST_NAPI
trap '"$RB" lab down --name "$NAME" >/dev/null 2>&1 || true' EXIT
exec python3 - <<'PY'
import json, os, statistics, subprocess, sys, time
RB, BEFORE = os.environ["RB"], os.environ["RB_BEFORE"]
ROUNDS, T, RATE, NAME = int(os.environ["ROUNDS"]), os.environ["T"], os.environ["RATE"], os.environ["NAME"]
QDISCS = os.environ["QDISCS"].split()
STATS = f"/run/routerbench-lab/{NAME}.shape-stats.json"

def load():
    return float(open("/proc/loadavg").read().split()[0])

def sh(args, timeout=300):
    env = dict(os.environ, ROUTERBENCH_BIN=os.path.abspath(args[0]))
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()[-400:]}")
    return r.stdout

def fwd_counts():
    try:
        d = json.load(open(STATS))
    except (OSError, ValueError):
        return None
    return (d["up"]["cpu_ms"] + d["down"]["cpu_ms"], d["up"]["rx_frames"] + d["down"]["rx_frames"])

def measure(exe):
    out = f"/tmp/{NAME}-measure.json"
    sh([exe, "lab", "measure", "--name", NAME, "--flows", "4", "--length", T, "-J", out])
    d = json.load(open(out))
    return d["lab"]["accuracy"][0]

def goodput(m):
    return m["goodput_bps"]

def host_napi():
    """GRO and threaded NAPI on the hosts' ends, in their namespaces."""
    for ns, dev in ((NAME + "-lan", "lan0"), (NAME + "-wan", "wan0")):
        code = (f"import ctypes,fcntl,socket,struct;s=socket.socket(2,2);"
                f"e=ctypes.create_string_buffer(struct.pack('II',0x2c,1));"
                f"fcntl.ioctl(s,0x8946,struct.pack('16sP',b'{dev}',ctypes.addressof(e))+bytes(16));"
                f"open('/sys/class/net/{dev}/threaded','w').write('1')")
        subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", code], check=True, timeout=30)

def one(exe, qdisc):
    sh([exe, "lab", "up", "--name", NAME, "--rate", RATE, "--qdisc", qdisc, "--aqm", "userspace"])
    if os.environ["HOST_NAPI"] == "1":
        host_napi()
    time.sleep(0.6)
    b = fwd_counts()
    la = load()
    m = measure(exe)
    time.sleep(0.7)  # the stats file is rewritten every 0.5 s
    a = fwd_counts()
    if not a or not b or a[1] <= b[1]:
        raise RuntimeError("no forwarder counts")
    cpu_s, frames = (a[0] - b[0]) / 1e3, a[1] - b[1]
    return {"us_per_pkt": cpu_s * 1e6 / frames, "pkts_per_cpu_s": frames / cpu_s,
            "goodput": goodput(m), "load": la}

def kernel(exe):
    """The kernel's unshaped forwarding (`lab capacity`, its own lab; no NAT, 4 flows)."""
    sh([exe, "lab", "down", "--name", NAME])
    la = load()
    out = f"/tmp/{NAME}-kernel.json"
    sh([exe, "lab", "capacity", "--name", NAME + "k", "--flows", "4", "--length", T, "-J", out])
    def points(v):
        if isinstance(v, dict):
            if "goodput_bps" in v and "nat" in v:
                yield v
            for x in v.values():
                yield from points(x)
        elif isinstance(v, list):
            for x in v:
                yield from points(x)
    best = max(p["goodput_bps"] for p in points(json.load(open(out))) if not p["nat"])
    return {"goodput": best, "load": la}

print(f"machine: {os.cpu_count()} cores, {os.uname().release}, load {load()}")
print(f"after: {RB}; before: {BEFORE}; rate {RATE}, {ROUNDS} rounds of {T} s, 4 cubic uploads; "
      f"hosts' NAPI threads in both labs: {'yes' if os.environ['HOST_NAPI'] == '1' else 'as each binary sets'}")
rows = {q: {"before": [], "after": []} for q in QDISCS}
kern = []
for r in range(ROUNDS):
    for q in QDISCS:
        order = [("before", BEFORE), ("after", RB)]
        if r % 2:
            order.reverse()
        for name, exe in order:
            try:
                x = one(exe, q)
            except Exception as e:
                print(f"round {r+1} {q} {name}: failed: {e}", flush=True)
                continue
            rows[q][name].append(x)
            print(f"round {r+1} {q:8} {name:6}: {x['us_per_pkt']:6.2f} us/pkt, "
                  f"{x['pkts_per_cpu_s']/1e3:7.1f} k pkt per CPU-s, goodput "
                  f"{x['goodput']/1e6:7.1f} Mbit/s; load {x['load']}", flush=True)
    try:
        k = kernel(RB)
        kern.append(k)
        print(f"round {r+1} kernel unshaped forwarding: {k['goodput']/1e9:.2f} Gbit/s; load {k['load']}", flush=True)
    except Exception as e:
        print(f"round {r+1} kernel: failed: {e}")

def med(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})" if xs else "-"

print()
print(f"| qdisc at {RATE} | before us/pkt | after us/pkt | before k pkt/CPU-s | after k pkt/CPU-s | after/before pkt per CPU-s | before goodput Mbit/s | after goodput Mbit/s | load |")
print("|---|---|---|---|---|---|---|---|---|")
for q in QDISCS:
    b, a = rows[q]["before"], rows[q]["after"]
    n = min(len(a), len(b))
    ratio = [a[i]["pkts_per_cpu_s"] / b[i]["pkts_per_cpu_s"] for i in range(n)]
    print(f"| {q} | {med([x['us_per_pkt'] for x in b])} | {med([x['us_per_pkt'] for x in a])} | "
          f"{med([x['pkts_per_cpu_s']/1e3 for x in b])} | {med([x['pkts_per_cpu_s']/1e3 for x in a])} | "
          f"**{med(ratio)}x** | {med([x['goodput']/1e6 for x in b])} | {med([x['goodput']/1e6 for x in a])} | "
          f"{med([x['load'] for x in a + b])} |")
print(f"kernel unshaped forwarding, same lab and run: {med([k['goodput']/1e9 for k in kern])} Gbit/s "
      f"(load {med([k['load'] for k in kern])})")
print("(median (min..max); CPU = the forwarder's forwarding thread(s): one since 2026-12-05, one per direction before; frames = both directions)")

if os.environ["CAPACITY"] == "1":
    print()
    print("| SQM capacity (lab capacity, userspace) | before | after | load |")
    print("|---|---|---|---|")
    for q in QDISCS:
        res = {}
        for name, exe in (("before", BEFORE), ("after", RB)):
            la = load()
            out = f"/tmp/{NAME}-cap-{q}-{name}.json"
            try:
                sh([exe, "lab", "capacity", "--name", NAME, "--qdisc", q, "--aqm", "userspace",
                    "--max-rate", "20gbit", "--budget", os.environ["BUDGET"], "-J", out], timeout=900)
                c = json.load(open(out))
                # `lab capacity -J` writes the SqmCapacity at the top level under
                # "sqm_capacity" (older builds: inside "lab", or the bare object).
                cap = c.get("sqm_capacity") or c.get("lab", {}).get("sqm_capacity") or c
                bps = cap.get("capacity_bps")
                pts = cap.get("points", [])
                bound = "at least " if pts and all(p.get("pass") for p in pts) else ""
                stop = cap.get("stopped_by", {}).get("reason", "not recorded")
                top = max((p for p in pts if p.get("pass")), key=lambda p: p["rate_bps"], default={})
                cpu = top.get("forwarder_cpu_us_per_packet")
                res[name] = (f"{bound}{bps/1e9:.2f} Gbit/s" if bps else "below the floor") + \
                    f" ({len(pts)} points, stopped by: {stop}" + \
                    (f", {cpu:.2f} µs/pkt there" if cpu else "") + ")"
                print(f"  {q} {name}: " + " · ".join(
                    f"{p['rate_bps']/1e6:g}: {p['goodput_of_theory']:.2f}"
                    + ("" if p.get("pass") else " FAIL")
                    + (f" {p['forwarder_cpu_us_per_packet']:.1f} µs" if p.get("forwarder_cpu_us_per_packet") else "")
                    for p in pts) + f"  (JSON: {out})", flush=True)
            except Exception as e:
                res[name] = f"failed: {e}"
            res[name + "_load"] = la
        print(f"| {q} | {res['before']} | {res['after']} | {res['before_load']}, {res['after_load']} |", flush=True)
PY
