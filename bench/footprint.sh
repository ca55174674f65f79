#!/usr/bin/env bash
# footprint.sh: how big routerbench is, and how much memory its server takes while it works.
#
# 1. Sizes of `--profile router` builds: this host's (dynamic), and the static builds of
#    bench/cross.sh (armv7, aarch64, mipsel, mips) when its toolchain is installed, each with
#    every default feature ("full") and with --no-default-features ("minimal": server, client,
#    loopback, latency tests, crypto, monitor; no lab, no plots), in the router recipe
#    (BUILD_STD=1: musl, std built for size, Thumb-2 on armv7, non-PIC MIPS) and, for the ARM
#    targets, the plain one (BUILD_STD=0: glibc, Debian's precompiled std). Targets (issues 8
#    and 18), on the router build of every target: full < 2.0 MB, minimal < 1.2 MB.
#    RECIPES="1" measures the router build only; CROSS_TARGETS picks the targets.
# 2. Peak RSS (VmHWM of /proc/PID/status) of `routerbench server` (this host's minimal router
#    build) while it serves one RRUL test (routerbench's own client) and one `iperf3 -P 4`
#    (Debian's iperf3) at the same time, against its own VmHWM when idle. Target: < 16 MB.
#
#   bench/footprint.sh                 # T=10 s of load
#   CROSS=0 bench/footprint.sh         # this host only (no cross builds)
set -euo pipefail
cd "$(dirname "$0")/.."

T=${T:-10}
PORT=${PORT:-27031}
CROSS=${CROSS:-1}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
FOOT_DIR=${FOOT_DIR:-target/footprint}
command -v iperf3 >/dev/null || { echo "iperf3 missing: apt-get install iperf3" >&2; exit 1; }

mb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e6 }'; }

# NATIVE_BIN=path: measure that binary's server instead of building the minimal router one.
if [ -n "${NATIVE_BIN:-}" ]; then
  native_min=$NATIVE_BIN
else
  echo "== building --profile router --no-default-features for $(uname -m)" >&2
  CARGO_TARGET_DIR="$FOOT_DIR/minimal" cargo build -q --profile router --no-default-features >&2
  native_min="$FOOT_DIR/minimal/router/routerbench"
fi

sizes=()
[ -n "${NATIVE_BIN:-}" ] || sizes+=("$(uname -m)-linux-gnu (dynamic) minimal $(stat -c %s "$native_min")")
if [ "$CROSS" = 1 ]; then
  for t in ${CROSS_TARGETS:-armv7 aarch64 mipsel mips}; do
    for std in ${RECIPES:-1 0}; do
      case "$t:$std" in
        mips:0 | mipsel:0) continue ;; # no Debian std for MIPS: the router recipe only
        armv7:0) plain=armv7-unknown-linux-gnueabihf ;;
        *:0) plain=$t-unknown-linux-gnu ;;
      esac
      if [ "$std" = 0 ] && [ ! -d "/usr/lib/rustlib/$plain" ]; then
        echo "no $t std installed for the plain recipe: run BUILD_STD=0 bench/cross.sh once" >&2
        continue
      fi
      case "$t" in
        armv7) musl_gcc=arm-linux-musleabihf-gcc ;; aarch64) musl_gcc=aarch64-linux-musl-gcc ;;
        *) musl_gcc=target/musl/$t/bin/musl-gcc ;;
      esac
      if [ "$std" = 1 ] && ! command -v "$musl_gcc" >/dev/null; then
        echo "no musl for $t: run TARGETS=$t bench/cross.sh once (or CROSS=0)" >&2
        continue
      fi
      for f in full minimal; do
        # The same target dirs as bench/cross.sh, so its builds are reused.
        dir=target/cross; [ "$std" = 1 ] && dir=target/cross-std
        [ "$f" = minimal ] && dir=$dir-minimal
        out=$(BUILD_STD=$std CROSS_TARGET_DIR="$dir" FEATURES=$f TARGETS=$t SETUP=0 SMOKE=0 bench/cross.sh 2>&1 | awk '$1 ~ /-linux-/ && $2 != "features" { print $1, $3 }')
        [ -n "$out" ] || { echo "bench/cross.sh BUILD_STD=$std FEATURES=$f TARGETS=$t failed" >&2; exit 1; }
        tr=${out% *}
        sizes+=("$tr (static) $f ${out##* }")
      done
    done
  done
fi

# --- peak RSS of the server under one RRUL and one iperf3 -P 4 at once ---
work=$(mktemp -d)
srv=""
cleanup() {
  if [ -n "$srv" ] && kill -0 "$srv" 2>/dev/null; then kill "$srv"; wait "$srv" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$native_min" server -p "$PORT" --bind 127.0.0.1 -q &
srv=$!
for _ in $(seq 1 50); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  sleep 0.1
done
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$srv/status"; }
idle_kb=$(hwm)
echo "== server pid $srv: idle VmHWM ${idle_kb} kB; load: rrul -l $T and iperf3 -P 4 -t $T at once" >&2
"$native_min" rrul 127.0.0.1 -p "$PORT" -l "$T" --delay 1 -q --json "$work/rrul.json" >"$work/rrul.txt" 2>&1 &
rrul=$!
sleep 1
iperf3 -c 127.0.0.1 -p "$PORT" -P 4 -t "$T" -J >"$work/iperf3.json" 2>&1 &
ip=$!
peak_kb=$idle_kb
while kill -0 "$rrul" 2>/dev/null || kill -0 "$ip" 2>/dev/null; do
  now=$(hwm); [ "$now" -gt "$peak_kb" ] && peak_kb=$now
  sleep 0.5
done
rrul_rc=0; wait "$rrul" || rrul_rc=$?
ip_rc=0; wait "$ip" || ip_rc=$?
peak_kb=$(hwm)
rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$srv/status")
threads=$(awk '/^Threads/ { print $2 }' "/proc/$srv/status")
gbps=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))' "$work/iperf3.json" 2>/dev/null || echo "?")

printf '\n%-48s %-8s %12s %8s %8s\n' build features bytes MB target
for s in "${sizes[@]}"; do
  read -r name link feat bytes <<<"$s"
  target="-"
  case "$name $feat" in
    *musl*" full") target="< 2.0 $( [ "$bytes" -lt 2000000 ] && echo ok || echo MISSED)" ;;
    *musl*" minimal") target="< 1.2 $( [ "$bytes" -lt 1200000 ] && echo ok || echo MISSED)" ;;
  esac
  printf '%-48s %-8s %12s %8s %s\n' "$name $link" "$feat" "$bytes" "$(mb "$bytes")" "$target"
done
printf '\nserver peak RSS (VmHWM): idle %.1f MB, under rrul + iperf3 -P 4: %.1f MB (target < 16 MB: %s)\n' \
  "$(awk -v k="$idle_kb" 'BEGIN { print k / 1024 }')" "$(awk -v k="$peak_kb" 'BEGIN { print k / 1024 }')" \
  "$( [ "$peak_kb" -lt 16384 ] && echo ok || echo MISSED)"
echo "  (MiB of 2^20 B; VmRSS at the end ${rss_kb} kB, ${threads} threads; rrul exit $rrul_rc, iperf3 exit $ip_rc at $gbps Gbit/s)"
[ "$rrul_rc" = 0 ] && [ "$ip_rc" = 0 ] || { echo "a load client failed:" >&2; tail -5 "$work/rrul.txt" "$work/iperf3.json" >&2; exit 1; }
