#!/usr/bin/env bash
# The first seed's two figures measured inside the emulated router (`lab up --router vm`), beside
# Debian's own tools for that architecture run in the same VM boot:
#
#   1. `routerbench loopback` against Debian's iperf3 (`iperf3 -s` + `iperf3 -c 127.0.0.1`),
#      alternated (the order swaps every round), for each of MODES (P1 = -P 1, P2 = -P 2) under
#      each of CCS ("default" = the VM kernel's own, or a name given to both tools with -C);
#   2. the crypto row of each routerbench engine of the static build (openssl-speed: it runs the
#      image's `openssl` program; rustcrypto; a static binary cannot load libcrypto) beside Debian's `openssl speed` of the same algorithms,
#      imported by routerbench on the host (`crypto --import`), alternated likewise.
#
# The VM runs routerbench only, never a shell: iperf3 and openssl come from the image's extras
# (`lab up --extras iperf3,openssl`) and run through the control port (`lab exec --program`,
# iperf3's server with `--background`, killed at its timeout). CPU charged = the whole VM's busy
# CPU seconds (/proc/stat: user, nice, system, irq, softirq over both vCPUs) while the client
# command ran (`lab exec --reply-json`'s vm_cpu_s), divided by the GB received: both tools are
# charged the same way, softirq and the iperf3 server included. Beside it, the host CPU seconds
# qemu spent per GB (/proc/PID/stat of the emulator): the emulated work, which host load disturbs
# least (the guest counts a vCPU the host did not run as busy or idle, whichever it was in).
#
# Prints every run with the host's load average, then per mode the medians, the spread (min..max)
# and the ratios routerbench/iperf3 (median of the per-round ratios): throughput (> 1 is better)
# and CPU per GB (< 1 is better); then per crypto column the ratios engine/openssl speed.
#
#   bench/vm-loopback-vs-iperf3.sh                        # armv7, T=5 s, 3 rounds, P1 P2, default + cubic
#   VM_ARCH=mipsel bench/vm-loopback-vs-iperf3.sh         # the mipsel router (1 vCPU)
#   NAME=rbvm UP=0 bench/vm-loopback-vs-iperf3.sh         # a lab already up (with --extras iperf3,openssl)
#   CRYPTO=0 ROUNDS=5 bench/vm-loopback-vs-iperf3.sh      # loopback only
#   CRYPTO=only bench/vm-loopback-vs-iperf3.sh            # the crypto row only
#   ELAPSED=1 CRYPTO=only bench/vm-loopback-vs-iperf3.sh  # both sides per wall-clock second
#                                                         # (openssl speed -elapsed, crypto --elapsed):
#                                                         # the guest's CPU-time figures are coarse
#                                                         # when the host starves the VM
#   RB_ARGS="-l 128K" bench/vm-loopback-vs-iperf3.sh      # extra arguments for routerbench loopback
#
# Needs root, qemu-system-arm (or -mips), the static build from bench/cross.sh (TARGETS=armv7 or
# mipsel) and apt for the armhf/mipsel packages (docs/vm-router.md). Emulated: the ratios are
# this emulated CPU's, never a router's figures (docs/benchmarks.md, "Inside the VM routers").
# Target (issue 46): loopback >= 1.1x iperf3 at -P 1 under cubic in the armv7 VM; crypto within
# +-5 % of openssl speed there.
set -euo pipefail
cd "$(dirname "$0")/.."
VM_ARCH=${VM_ARCH:-armv7}
NAME=${NAME:-rbvb${VM_ARCH:0:1}}
UP=${UP:-1}
T=${T:-5}
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-"P1 P2"}
CCS=${CCS:-"default cubic"}
CRYPTO=${CRYPTO:-1}
CRYPTO_ROUNDS=${CRYPTO_ROUNDS:-3}
PORT=${PORT:-5301}
RB_ARGS=${RB_ARGS:-}
UP_ARGS=${UP_ARGS:-}
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
command -v python3 >/dev/null || { echo "python3 missing: apt-get install python3" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "the lab needs root" >&2; exit 1; }
if [ ! -x "$RB" ]; then
  cargo build --release
fi
if [ "$UP" = 1 ]; then
  # shellcheck disable=SC2086
  "$RB" lab up --router vm --vm-arch "$VM_ARCH" --name "$NAME" --extras iperf3,openssl $UP_ARGS >&2
  trap '"$RB" lab down --name "$NAME" >&2 || true' EXIT
fi
ELAPSED=${ELAPSED:-0}
export VM_ARCH NAME T ROUNDS MODES CCS CRYPTO CRYPTO_ROUNDS PORT RB RB_ARGS ELAPSED
python3 - <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

E = os.environ
RB, NAME, T = E["RB"], E["NAME"], int(E["T"])
ROUNDS, CROUNDS, PORT = int(E["ROUNDS"]), int(E["CRYPTO_ROUNDS"]), int(E["PORT"])
MODES, CCS, RB_ARGS = E["MODES"].split(), E["CCS"].split(), E["RB_ARGS"].split()

def load():
    return open("/proc/loadavg").read().split()[0]

QEMU = json.load(open(f"/run/routerbench-lab/{NAME}.json"))["router_vm"]["qemu_pid"]
TCK = os.sysconf("SC_CLK_TCK")

def qemu_cpu():
    """Host CPU seconds qemu (every vCPU thread and its I/O) has used: the emulated work."""
    f = open(f"/proc/{QEMU}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TCK

def lab_exec(args, program=None, background=False, timeout=None):
    """One command in the VM through its control port; the reply (status, stdout, vm_cpu_s…)."""
    cmd = [RB, "lab", "exec", "--name", NAME, "--reply-json",
           "--timeout", str(timeout or T + 60)]
    if program:
        cmd += ["--program", program]
    if background:
        cmd += ["--background"]
    p = subprocess.run(cmd + ["--"] + args, capture_output=True, text=True,
                       timeout=(timeout or T + 60) + 60)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception:
        raise RuntimeError(f"lab exec {' '.join(args)}: {p.stderr.strip()[-400:]}")

def received(doc):
    e = doc["end"]
    s = e.get("sum_received") or e["sum"]
    return s["bytes"], s["seconds"], e.get("sender_tcp_congestion")

def run_iperf3(args):
    srv = lab_exec(["-s", "-1", "-p", str(PORT)], program="iperf3", background=True,
                   timeout=T + 60)
    if srv.get("error"):
        raise RuntimeError(srv["error"])
    for attempt in range(5):
        time.sleep(1.0)
        r = lab_exec(["-c", "127.0.0.1", "-p", str(PORT), "-t", str(T), "-J"] + args,
                     program="iperf3")
        if r.get("status") == 0:
            return r
        if "refused" not in r.get("stdout", "") + r.get("stderr", ""):
            break
    raise RuntimeError(f"iperf3 -c: status {r.get('status')}: {r.get('stderr','')[-300:]}"
                       f"{r.get('stdout','')[-300:]}")

def run_rb(args):
    r = lab_exec(["loopback", "-t", str(T), "--json"] + args + RB_ARGS)
    if r.get("status") != 0:
        raise RuntimeError(f"loopback: status {r.get('status')}: {r.get('stderr','')[-300:]}")
    return r

def spread(xs, f="{:.2f}"):
    return (f + " (" + f + ".." + f + ")").format(statistics.median(xs), min(xs), max(xs))

ident = lab_exec(["device"], timeout=60).get("stdout", "")
print(f"VM router {NAME} ({E['VM_ARCH']}): " + "; ".join(
    l.strip() for l in ident.splitlines()
    if l.strip().split(" ")[0] in ("Arch", "CPU", "Cores", "Kernel")))
for prog in ("iperf3", "openssl"):
    v = lab_exec(["--version"] if prog == "iperf3" else ["version"], program=prog, timeout=60)
    print(f"{prog} in the VM: " + (v.get("stdout") or v.get("error") or "?").splitlines()[0])
print(f"routerbench in the VM: " + lab_exec(["--version"], timeout=60).get("stdout", "").strip()
      + (" with " + " ".join(RB_ARGS) if RB_ARGS else ""))
print(f"T={T} s, {ROUNDS} rounds, modes {' '.join(MODES)}, cc {' '.join(CCS)}; host load {load()};"
      " CPU = the VM's busy CPU-s (all vCPUs) while the client ran, per GB received")

rows = {}
for cc in (CCS if E["CRYPTO"] != "only" else []):
    for m in MODES:
        args = ["-P", m[1:]] + ([] if cc == "default" else ["-C", cc])
        key = f"{m} {cc}"
        rows[key] = []
        for r in range(ROUNDS):
            res = {}
            order = [("iperf3", run_iperf3), ("routerbench", run_rb)]
            if r % 2:
                order.reverse()
            for name, fn in order:
                la = load()
                try:
                    q0 = qemu_cpu()
                    rep = fn(args)
                    qcpu = qemu_cpu() - q0
                    rx, secs, got_cc = received(json.loads(rep["stdout"]))
                except Exception as e:
                    print(f"{key} round {r+1} {name:11}: failed ({e}); load {la}", flush=True)
                    res = None
                    break
                mbps = rx * 8 / secs / 1e6
                cpu = rep.get("vm_cpu_s") or 0.0
                cpu_gb = cpu / (rx / 1e9) if rx > 0 else float("inf")
                q_gb = qcpu / (rx / 1e9) if rx > 0 else float("inf")
                res[name] = (mbps, cpu_gb, float(la), got_cc, q_gb)
                print(f"{key} round {r+1} {name:11}: {mbps:8.1f} Mbit/s, VM CPU {cpu:5.2f} s "
                      f"in {rep.get('wall_s', 0):.1f} s, {cpu_gb:6.2f} CPU-s/GB, qemu "
                      f"{q_gb:6.1f} host-CPU-s/GB, cc {got_cc}; load {la}", flush=True)
            if res:
                rows[key].append(res)

print() if rows else None
rows and print("| mode | cc | iperf3 Mbit/s | routerbench Mbit/s | throughput ratio | iperf3 CPU-s/GB | "
      "routerbench CPU-s/GB | CPU/GB ratio | qemu host-CPU/GB ratio | host load |")
rows and print("|---|---|---|---|---|---|---|---|---|---|")
for key, rs in rows.items():
    m, cc = key.split()
    if not rs:
        print(f"| {m} | {cc} | no complete round | | | | | | | |")
        continue
    ccs = {x[n][3] for x in rs for n in ("iperf3", "routerbench")}
    ccname = cc if cc != "default" else "default: " + "/".join(sorted(str(c) for c in ccs))
    ig = [x["iperf3"][0] for x in rs]; rg = [x["routerbench"][0] for x in rs]
    ic = [x["iperf3"][1] for x in rs]; rc = [x["routerbench"][1] for x in rs]
    tr = [x["routerbench"][0] / x["iperf3"][0] for x in rs if x["iperf3"][0] > 0]
    cr = [x["routerbench"][1] / x["iperf3"][1] for x in rs if x["iperf3"][1] > 0]
    qr = [x["routerbench"][4] / x["iperf3"][4] for x in rs if x["iperf3"][4] > 0]
    la = [v for x in rs for v in (x["iperf3"][2], x["routerbench"][2])]
    print(f"| {m} | {ccname} | {spread(ig, '{:.0f}')} | {spread(rg, '{:.0f}')} | **{spread(tr)}x** | "
          f"{spread(ic)} | {spread(rc)} | **{spread(cr)}x** | {spread(qr)}x | {spread(la, '{:.1f}')} |")
rows and print(f"(median (min..max) of {ROUNDS} rounds; ratios are medians of the per-round ratios "
      "routerbench/iperf3; CPU-s/GB < 1x is better: the VM's own busy time, and the host CPU "
      "qemu spent per GB, which a loaded host disturbs least)")

if E["CRYPTO"] not in ("1", "only"):
    sys.exit(0)

ALGS = "md5 sha1 sha256 sha512 des des-ede3 aes-128-cbc aes-192-cbc aes-256-cbc rsa2048 dsa2048".split()
COLS = ["MD5", "SHA-1", "SHA-256", "SHA-512", "DES", "3DES", "AES-128", "AES-192", "AES-256",
        "RSA-sign", "RSA-verify", "DSA-sign", "DSA-verify"]
tmp = tempfile.mkdtemp()

def cells(row):
    """The 13 numbers of an OpenWrt wiki row without identity (`| engine | MD5 | … |`)."""
    f = [x.strip() for x in row.strip().split("|")]
    vals = []
    for x in f[2:15]:
        try:
            vals.append(float(x.replace(",", "").rstrip("k")) * (1000 if x.endswith("k") else 1))
        except ValueError:
            vals.append(float("nan"))
    if len(vals) != 13:
        raise RuntimeError(f"not a row: {row[:120]}")
    return vals

def last_row(text):
    rows_ = [l for l in text.splitlines() if l.startswith("|") and "---" not in l]
    if not rows_:
        raise RuntimeError(f"no row in: {text[-300:]}")
    return rows_[-1]

legacy = lab_exec(["speed", "-seconds", "1", "-provider", "legacy", "-provider", "default",
                   "-bytes", "16", "des-ede3"], program="openssl", timeout=120)
ELAPSED = E.get("ELAPSED", "0") == "1"
speed_args = ["speed", "-seconds", "1"] + (["-elapsed"] if ELAPSED else []) + (
    ["-provider", "legacy", "-provider", "default"] if legacy.get("status") == 0 else [])
print(f"\ncrypto: {CROUNDS} rounds of `openssl speed {' '.join(speed_args[1:])} {' '.join(ALGS)}` "
      f"in the VM against `routerbench crypto --row-only --seconds 1` per engine; host load {load()}")
crows = {"openssl speed": [], "rb openssl-speed": [], "rb rustcrypto": []}
engine_cell = {}

def speed_row(r):
    rep = lab_exec(speed_args + ALGS, program="openssl", timeout=900)
    if rep.get("status") != 0:
        raise RuntimeError(f"openssl speed: {rep.get('stderr','')[-300:]}")
    path = f"{tmp}/speed.{r}"
    open(path, "w").write(rep["stdout"])
    out = subprocess.run([RB, "crypto", "--no-identity", "--format", "openwrt", "-q",
                          "--import", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"crypto --import: {out.stderr.strip()[-300:]}")
    return cells(last_row(out.stdout))

def engine_row(engine):
    rep = lab_exec(["crypto", "--no-identity", "--format", "openwrt", "-q", "--engine", engine,
                    "--seconds", "1", "--row-only"] + (["--elapsed"] if ELAPSED else []),
                   timeout=900)
    if rep.get("status") != 0:
        raise RuntimeError(f"crypto --engine {engine}: {rep.get('stderr','')[-300:]}")
    row = last_row(rep["stdout"])
    engine_cell[engine] = row.split("|")[1].strip()
    return cells(row)

for r in range(CROUNDS):
    order = [("openssl speed", lambda: speed_row(r)),
             ("rb openssl-speed", lambda: engine_row("openssl-speed")),
             ("rb rustcrypto", lambda: engine_row("rustcrypto"))]
    if r % 2:
        order.reverse()
    for name, fn in order:
        la = load()
        t0 = time.time()
        try:
            crows[name].append(fn())
        except Exception as e:
            print(f"crypto round {r+1} {name}: failed ({e}); load {la}", flush=True)
            continue
        print(f"crypto round {r+1} {name:13}: {time.time() - t0:5.1f} s; load {la}", flush=True)

print(f"\nengines: " + "; ".join(f"{k}: {v}" for k, v in engine_cell.items()))
n = min(len(v) for v in crows.values())
if n == 0:
    sys.exit("no complete crypto round")
print("| column | openssl speed | rb openssl-speed engine | ratio (spread) | rb rustcrypto | ratio (spread) |")
print("|---|---|---|---|---|---|")
for i, c in enumerate(COLS):
    ref = [crows["openssl speed"][k][i] for k in range(n)]
    unit = 1e6 if i < 9 else 1
    out = f"| {c} | {statistics.median(ref) / unit:.2f} |"
    for eng in ("rb openssl-speed", "rb rustcrypto"):
        v = [crows[eng][k][i] for k in range(n)]
        rat = [a / b for a, b in zip(v, ref) if b > 0]
        out += f" {statistics.median(v) / unit:.2f} | " + (
            f"**{spread(rat)}x** |" if rat else "n/a |")
    print(out)
print(f"(MB/s for MD5..AES-256: hashes at 1024 B, ciphers at 8192 B; ops/s for RSA/DSA; medians of "
      f"{n} rounds; ratios are medians of the per-round ratios engine/openssl speed)")
PY
