#!/usr/bin/env bash
# Soak: one `routerbench server` serves waves of real tests (TCP, -R, UDP, --bidir back to back,
# then two TCP tests and an RRUL at once) from 127.0.0.1 while hostile clients run beside them
# from 127.0.0.2: silent and half-cookie connections, a routerbench-protocol slowloris, garbage
# cookies, a client killed mid-test, slot holders (iperf3 -t long -b 8K), UDP stream floods
# (-u -P 128 --bidir -l 65507), UDP set-ups that never say hello, and a UDP -R -b 0 blast.
# Records the server's threads, fds and RSS every second; after each wave checks that threads
# and fds are back at the idle baseline. Bounded: WAVES × (WAVE_SECS + ~20 s).
#
#   bench/soak.sh                     # 3 waves of 25 s (~2.5 min)
#   WAVES=10 WAVE_SECS=60 bench/soak.sh
#
# Not run in CI (it takes minutes); the per-attack tests are tests/server/server_attacks.rs and
# tests/server/server_sending.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
WAVES=${WAVES:-3}
WAVE_SECS=${WAVE_SECS:-25}
PORT=${PORT:-27150}
RB=${RB:-${CARGO_TARGET_DIR:-target}/release/routerbench}
ATK=127.0.0.2
for tool in iperf3 python3; do
  command -v $tool >/dev/null || { echo "$tool missing: apt-get install $tool" >&2; exit 1; }
done
[ -x "$RB" ] || cargo build --release
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

"$RB" server -p "$PORT" -B 127.0.0.1 --handshake-timeout 3 --udp-hello-timeout 2 \
  --rcv-timeout 10 --control-timeout 5 >"$TMP/server.out" 2>"$TMP/server.err" &
SPID=$!
PIDS+=("$SPID")
usage() { # threads fds rss_kib
  local th rss fds
  th=$(awk '/^Threads:/{print $2}' "/proc/$SPID/status")
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$SPID/status")
  fds=$(ls "/proc/$SPID/fd" | wc -l)
  echo "$th $fds $rss"
}
sleep 1
(while kill -0 "$SPID" 2>/dev/null; do echo "$(date +%s) $(usage)"; sleep 1; done) >"$TMP/usage.log" &
PIDS+=("$!")
sleep 1
read -r B_TH B_FD B_RSS < <(usage)
echo "idle baseline: threads $B_TH, fds $B_FD, RSS $((B_RSS / 1024)) MiB"

cat >"$TMP/hostile.py" <<'PY'
import socket, struct, sys, time, random, threading
port, secs, src = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
end = time.time() + secs
ALPHA = b"abcdefghijklmnopqrstuvwxyz234567"
def conn():
    s = socket.socket(); s.settimeout(5); s.bind((src, 0)); s.connect(("127.0.0.1", port)); return s
def cookie():
    return bytes(random.choice(ALPHA) for _ in range(36)) + b"\0"
def loop(f):
    def run():
        while time.time() < end:
            try: f()
            except OSError: time.sleep(0.2)
    t = threading.Thread(target=run, daemon=True); t.start(); return t
def silent():            # connect, say nothing
    s = conn(); time.sleep(4); s.close()
def half_cookie():       # 20 bytes of a cookie, then nothing
    s = conn(); s.send(cookie()[:20]); time.sleep(4); s.close()
def garbage():           # 37 random bytes (not 0xff first)
    s = conn(); s.send(bytes(random.randrange(250) for _ in range(37))); s.recv(16); s.close()
def slowloris():         # routerbench magic, then a byte every second
    socks = []
    for _ in range(16):
        try:
            s = conn(); s.send(b"\xffRBENCH\x00\x01\x10\x00"); socks.append(s)
        except OSError: pass
    for _ in range(6):
        for s in socks:
            try: s.send(b"\0")
            except OSError: pass
        time.sleep(1)
    for s in socks: s.close()
def udp_no_hello():      # UDP set-up that never says hello
    s = conn(); s.send(cookie())
    if s.recv(1) == b"\x09":
        p = b'{"udp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":1400,"bandwidth":1048576,"pacing_timer":1000,"client_version":"3.12"}'
        s.send(struct.pack(">I", len(p)) + p)
        try:
            while s.recv(64): pass
        except OSError: pass
    s.close()
ts = [loop(f) for f in (silent, half_cookie, garbage, garbage, slowloris, udp_no_hello)]
for t in ts: t.join()
PY

run_real() { # name args... -> appends "name ok|FAIL" to $TMP/real.log
  local name=$1; shift
  if timeout 60 "$@" >"$TMP/$name.out" 2>&1; then echo "$name ok" >>"$TMP/real.log"
  else echo "$name FAIL" >>"$TMP/real.log"; tail -2 "$TMP/$name.out" | sed "s/^/  $name: /" >>"$TMP/real.log"; fi
}

I3="iperf3 -c 127.0.0.1 -p $PORT"
A3="iperf3 -c 127.0.0.1 -B $ATK -p $PORT"
printf "%-5s %8s %8s %9s %8s %8s %9s %7s %s\n" wave peak_th peak_fd peak_rss after_th after_fd after_rss real idle
ALL_IDLE=yes
for w in $(seq 1 "$WAVES"); do
  : >"$TMP/real.log"
  W0=$(date +%s)
  HP=()
  python3 "$TMP/hostile.py" "$PORT" "$WAVE_SECS" "$ATK" & HP+=("$!")
  for i in 1 2 3 4; do $A3 -t "$WAVE_SECS" -b 8K >/dev/null 2>&1 & HP+=("$!"); done     # slot holders
  $A3 -u -P 128 --bidir -l 65507 -b 1K -t 10 >/dev/null 2>&1 & HP+=("$!")              # UDP flood
  $A3 -u -R -b 0 -t 5 >/dev/null 2>&1 & HP+=("$!")                                      # UDP -R blast
  $A3 -t 20 >/dev/null 2>&1 & VP=$!                                                     # vanishes
  PIDS+=("${HP[@]}" "$VP")
  sleep 1
  run_real tcp $I3 -t 3
  { kill -9 "$VP"; wait "$VP"; } 2>/dev/null || true                                   # mid-test
  run_real reverse $I3 -t 3 -R
  run_real udp $I3 -t 3 -u -b 50M
  run_real bidir $I3 -t 3 --bidir
  run_real tcp_a $I3 -t 3 -P 2 & CA=$!
  run_real tcp_b $I3 -t 3 & CB=$!
  run_real rrul "$RB" rrul 127.0.0.1 -p "$PORT" -l 5 --delay 1 -q
  wait "$CA" "$CB" || true
  for p in "${HP[@]}"; do wait "$p" 2>/dev/null || true; done
  # Back to idle: threads and fds at the baseline within 20 s of the wave's end.
  IDLE=no
  for _ in $(seq 1 40); do
    read -r TH FD RSS < <(usage)
    if [ "$TH" -le "$B_TH" ] && [ "$FD" -le "$B_FD" ]; then IDLE=yes; break; fi
    sleep 0.5
  done
  [ "$IDLE" = yes ] || ALL_IDLE=no
  W1=$(date +%s)
  read -r PTH PFD PRSS < <(awk -v a="$W0" -v b="$W1" '$1>=a && $1<=b {if($2>t)t=$2; if($3>f)f=$3; if($4>r)r=$4} END{print t+0, f+0, r+0}' "$TMP/usage.log")
  OK=$(grep -c " ok$" "$TMP/real.log" || true); N=$(grep -cE " (ok|FAIL)$" "$TMP/real.log" || true)
  printf "%-5s %8s %8s %7sMiB %8s %8s %7sMiB %4s/%-2s %s\n" "$w" "$PTH" "$PFD" "$((PRSS / 1024))" "$TH" "$FD" "$((RSS / 1024))" "$OK" "$N" "$IDLE"
  grep FAIL -A2 "$TMP/real.log" || true
done
kill -0 "$SPID" || { echo "server died"; exit 1; }
echo "server log: $(wc -l <"$TMP/server.err") lines, $(grep -c refused "$TMP/server.err" || true) refusals written, $(grep -o '[0-9]* more refusals not logged' "$TMP/server.err" | awk '{s+=$1} END{print s+0}') more summarised"
read -r _ _ E_RSS < <(usage)
echo "RSS: idle $((B_RSS / 1024)) MiB, end $((E_RSS / 1024)) MiB"
echo "back to idle after every wave: $ALL_IDLE"
[ "$ALL_IDLE" = yes ]
