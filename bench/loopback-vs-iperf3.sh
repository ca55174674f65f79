#!/usr/bin/env bash
# Loopback throughput and CPU per GB: iperf3 (`iperf3 -s` + `iperf3 -c 127.0.0.1`, default the
# newest release, 3.21, from ../shared/peers, else Debian's) against `routerbench loopback`, in
# the same run, alternated (the order swaps every round), repeated ROUNDS times per mode.
#
# CPU is measured from outside: user + system seconds of every process of the test (iperf3's
# server and client, routerbench's one process) from wait4(2), divided by the GB received. So
# both tools are charged the same way, whatever they report about themselves.
#
# Prints every run with the load average, then per mode the medians, the spread (min..max) and
# the ratios routerbench/iperf3 (median of the per-round ratios): throughput (> 1 is better)
# and CPU per GB (< 1 is better).
#
#   bench/loopback-vs-iperf3.sh                         # T=5 s, 5 rounds, MODES below
#   MODES="P1 R" ROUNDS=7 bench/loopback-vs-iperf3.sh
#   IPERF3=iperf3 bench/loopback-vs-iperf3.sh           # against Debian's 3.12
#   CC=cubic bench/loopback-vs-iperf3.sh                # both tools with -C cubic (default:
#                                                       # the kernel's, printed as "cc")
#   RB_ARGS="-l 256K" MODES=P4 bench/loopback-vs-iperf3.sh  # extra arguments for routerbench
#                                                       # only (to try its own settings)
#
# Modes: P1 P2 P4 (TCP streams), R (-R), Z (-Z: iperf3 sendfile, routerbench MSG_ZEROCOPY),
# SKIP (--skip-rx-copy), ZSKIP (both), UDP (-u --gsro -b $UDP_RATE -l $UDP_LEN: routerbench
# loopback with GSO/GRO vs iperf3 --gsro; the loss of each is printed).
#
# Target (issue 22): >= 1.1x throughput and <= 1.0x CPU per GB at the median, in every TCP mode.
set -euo pipefail
cd "$(dirname "$0")/.."
T=${T:-5}
ROUNDS=${ROUNDS:-5}
PORT=${PORT:-5399}
MODES=${MODES:-"P1 P2 P4 R Z SKIP"}
UDP_RATE=${UDP_RATE:-2G}
UDP_LEN=${UDP_LEN:-1400}
CC=${CC:-}
RB_ARGS=${RB_ARGS:-}
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
PEER=../shared/peers/iperf3-3.21
if [ -z "${IPERF3:-}" ]; then
  if [ -x "$PEER" ]; then IPERF3=$PEER; else IPERF3=iperf3; fi
fi
command -v "$IPERF3" >/dev/null || { echo "$IPERF3 missing: apt-get install iperf3" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing: apt-get install python3" >&2; exit 1; }
if [ ! -x "$RB" ]; then
  cargo build --release
fi
export T ROUNDS PORT MODES UDP_RATE UDP_LEN RB IPERF3 CC RB_ARGS
exec python3 - <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

T, ROUNDS, PORT = int(os.environ["T"]), int(os.environ["ROUNDS"]), int(os.environ["PORT"])
RB, IPERF3 = os.environ["RB"], os.environ["IPERF3"]
UDP = ["-u", "-b", os.environ["UDP_RATE"], "-l", os.environ["UDP_LEN"]]
MODES = {
    "P1": (["-P", "1"], ["-P", "1"]),
    "P2": (["-P", "2"], ["-P", "2"]),
    "P4": (["-P", "4"], ["-P", "4"]),
    "R": (["-R"], ["-R"]),
    "Z": (["-Z"], ["-Z"]),
    "SKIP": (["--skip-rx-copy"], ["--skip-rx-copy"]),
    "ZSKIP": (["-Z", "--skip-rx-copy"], ["-Z", "--skip-rx-copy"]),
    "UDP": (UDP + ["--gsro"], UDP + ["--gsro"]),
}
modes = os.environ["MODES"].split()
CC = os.environ["CC"]
if CC:  # the same congestion control for both tools (iperf3's client sets it on both ends)
    MODES = {m: (a, b) if m == "UDP" else (a + ["-C", CC], b + ["-C", CC])
             for m, (a, b) in MODES.items()}
RB_ARGS = os.environ["RB_ARGS"].split()
MODES = {m: (a, b + RB_ARGS) for m, (a, b) in MODES.items()}
for m in modes:
    if m not in MODES:
        sys.exit(f"unknown mode {m}; known: {' '.join(MODES)}")

def load():
    return open("/proc/loadavg").read().split()[0]

def cpu_of(ru):
    return ru.ru_utime + ru.ru_stime

def wait(p, limit):
    """Waits for p (at most `limit` s, then kills it); returns its CPU seconds."""
    t0 = time.time()
    while time.time() - t0 < limit:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return cpu_of(ru)
        time.sleep(0.02)
    p.kill()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = -9
    return cpu_of(ru)

def listening(port):
    want = ":%04X" % port
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(f).readlines()[1:]:
                parts = line.split()
                if parts[1].endswith(want) and parts[3] == "0A":
                    return True
        except OSError:
            pass
    return False

def parse(path):
    d = json.load(open(path))
    e = d["end"]
    udp = d["start"]["test_start"]["protocol"] == "UDP"
    loss = None
    if udp:  # the client's merged sum: the receiver's loss over the sender's datagrams
        s = e["sum"]
        loss = s.get("lost_percent", 0.0)
    if "sum_received" in e and e["sum_received"].get("bytes"):
        rx = e["sum_received"]["bytes"]; secs = e["sum_received"]["seconds"]
    else:
        s = e["sum"]; rx = s["bytes"] * (1 - (loss or 0) / 100); secs = s["seconds"]
    return rx, secs, loss

def run_iperf3(args, out):
    srv = subprocess.Popen([IPERF3, "-s", "-p", str(PORT), "-1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    for _ in range(200):
        if listening(PORT):
            break
        time.sleep(0.02)
    with open(out, "w") as f:
        cli = subprocess.Popen([IPERF3, "-c", "127.0.0.1", "-p", str(PORT), "-t", str(T), "-J"]
                               + args, stdout=f, stderr=subprocess.DEVNULL)
        c = wait(cli, T + 30)
    s = wait(srv, 10)
    return c + s

def run_rb(args, out):
    with open(out, "w") as f:
        p = subprocess.Popen([RB, "loopback", "-t", str(T), "--json"] + args, stdout=f,
                             stderr=subprocess.DEVNULL)
        return wait(p, T + 30)

def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
    except Exception:
        return "?"

print(f"machine: {os.cpu_count()} cores, {os.uname().release}, cc "
      f"{open('/proc/sys/net/ipv4/tcp_congestion_control').read().strip()}"
      f"{f' (both tools run with -C {CC})' if CC else ''}, load {load()}")
print(f"peer: {IPERF3} ({version([IPERF3, '--version'])})")
print(f"routerbench: {version([RB, '--version'])}" + (" with " + " ".join(RB_ARGS) if RB_ARGS else ""))
print(f"T={T} s, {ROUNDS} rounds, modes {' '.join(modes)}; CPU = user+sys s of all processes (wait4)")
tmp = tempfile.mkdtemp()
rows = {}
for m in modes:
    ip_args, rb_args = MODES[m]
    rows[m] = []
    for r in range(ROUNDS):
        res = {}
        order = [("iperf3", run_iperf3, ip_args), ("routerbench", run_rb, rb_args)]
        if r % 2:
            order.reverse()
        for name, fn, args in order:
            la = load()
            out = f"{tmp}/{m}-{r}-{name}.json"
            cpu = fn(args, out)
            try:
                rx, secs, loss = parse(out)
            except Exception as e:
                print(f"{m} round {r+1} {name:11}: failed ({e}); load {la}")
                res = None
                break
            gbps = rx * 8 / secs / 1e9
            cpu_gb = cpu / (rx / 1e9) if rx > 0 else float("inf")
            res[name] = (gbps, cpu_gb, loss, float(la))
            extra = f", loss {loss:.4f} %" if loss is not None else ""
            print(f"{m} round {r+1} {name:11}: {gbps:7.2f} Gbit/s, {cpu:5.2f} CPU-s, "
                  f"{cpu_gb:.3f} CPU-s/GB{extra}; load {la}", flush=True)
        if res:
            rows[m].append(res)

def spread(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})"

print()
print("| mode | iperf3 Gbit/s | routerbench Gbit/s | throughput ratio | iperf3 CPU-s/GB | "
      "routerbench CPU-s/GB | CPU/GB ratio | load avg |")
print("|---|---|---|---|---|---|---|---|")
for m in modes:
    rs = rows[m]
    if not rs:
        print(f"| {m} | no complete round | | | | | | |")
        continue
    ig = [x["iperf3"][0] for x in rs]; rg = [x["routerbench"][0] for x in rs]
    ic = [x["iperf3"][1] for x in rs]; rc = [x["routerbench"][1] for x in rs]
    tr = [x["routerbench"][0] / x["iperf3"][0] for x in rs if x["iperf3"][0] > 0]
    cr = [x["routerbench"][1] / x["iperf3"][1] for x in rs if x["iperf3"][1] > 0]
    la = [v for x in rs for v in (x["iperf3"][3], x["routerbench"][3])]
    loss = ""
    if rs[0]["iperf3"][2] is not None:
        il = [x["iperf3"][2] for x in rs]; rl = [x["routerbench"][2] for x in rs]
        loss = f" (loss % iperf3 {spread(il)}, routerbench {spread(rl)})"
    print(f"| {m}{loss} | {spread(ig)} | {spread(rg)} | **{spread(tr)}x** | {spread(ic)} | "
          f"{spread(rc)} | **{spread(cr)}x** | {spread(la)} |")
print(f"(median (min..max) of {ROUNDS} rounds; ratios are medians of the per-round ratios "
      "routerbench/iperf3; CPU-s/GB < 1x is better; load = 1-min load average before each run)")
PY
