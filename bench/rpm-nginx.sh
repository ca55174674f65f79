#!/usr/bin/env bash
# bench/rpm-nginx.sh - `routerbench rpm --url` against Debian's nginx (HTTP/2 over TLS, the
# draft's four endpoints from tests/support/nginx.conf.in) beside `routerbench rpm`
# against routerbench's own latency-server, over loopback, alternated and repeated; medians.
# No root. Needs nginx and openssl, and a build with the `https` feature:
#
#   cargo build --release --features https
#   bench/rpm-nginx.sh                 # 5 rounds, ID 1 s, 30 s per run at most, download
#   ROUNDS=3 MODE=upload INTERVAL=0.5 bench/rpm-nginx.sh
#   LAB=NAME bench/rpm-nginx.sh        # through a lab made with `routerbench lab up --name NAME`
#                                      # (root): servers on NAME-wan at 10.201.2.2, client on NAME-lan
#   WAN_SYSCTL="net.ipv4.tcp_notsent_lowat=16384" LAB=NAME bench/rpm-nginx.sh
#                                      # a sysctl set in the server's namespace first (then restored)
#
# Ports 24443-24446 (nginx) and 24201 (latency-server), on 127.0.0.1 (or in the lab) only.
set -euo pipefail
cd "$(dirname "$0")/.."
RB=${RB:-target/release/routerbench}
ROUNDS=${ROUNDS:-5}
MODE=${MODE:-download}
INTERVAL=${INTERVAL:-1}
MAXTIME=${MAXTIME:-30}
PORT=24443
LAB=${LAB:-}
WAN_SYSCTL=${WAN_SYSCTL:-}
if [ -n "$LAB" ]; then
  IP=10.201.2.2
  srv_ns=(ip netns exec "$LAB-wan")
  cli_ns=(ip netns exec "$LAB-lan")
else
  IP=127.0.0.1
  srv_ns=()
  cli_ns=()
fi
command -v nginx >/dev/null || { echo "nginx not installed: apt-get install nginx" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl not installed" >&2; exit 1; }
[ -x "$RB" ] || { echo "$RB missing: cargo build --release --features https" >&2; exit 1; }
dir=$(mktemp -d /tmp/rb-rpm-nginx.XXXXXX)
chmod 755 "$dir"  # nginx workers (www-data when started as root) read the objects
mkdir -p "$dir/tmp" "$dir/out"
ng=""; srv=""; restore=""
cleanup() {
  [ -n "$restore" ] && "${srv_ns[@]}" sysctl -qw "$restore" || true
  [ -n "$ng" ] && kill -TERM "$ng" 2>/dev/null && wait "$ng" 2>/dev/null || true
  [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
(
  cd "$dir"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=rb bench CA" 2>/dev/null
  openssl req "${ec[@]}" -keyout key.pem -out srv.csr -subj /CN=rpm-bench 2>/dev/null
  printf 'subjectAltName=IP:%s\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' "$IP" >ext.cnf
  openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 \
    -extfile ext.cnf 2>/dev/null
  printf x >small
  truncate -s 8G large
  for f in config:upload limited:upload-limited; do
    printf '{"version": 1, "urls": {"large_download_url": "https://%s:%s/large", "small_download_url": "https://%s:%s/small", "upload_url": "https://%s:%s/%s"}}\n' \
      "$IP" $PORT "$IP" $PORT "$IP" $PORT "${f#*:}" >"${f%%:*}.json"
  done
)
sed -e "s|@DIR@|$dir|g" -e "s|@LISTEN@|$IP|g" -e "s|@PORT@|$PORT|g" \
  -e "s|@PORT_H1@|24444|g" -e "s|@PORT_PLAIN@|24445|g" -e "s|@PORT_SILENT@|24446|g" \
  -e "s|@UPLOAD_BODY@|4m|g" tests/support/nginx.conf.in >"$dir/nginx.conf"
if [ -n "$WAN_SYSCTL" ]; then
  restore="${WAN_SYSCTL%%=*}=$("${srv_ns[@]}" sysctl -n "${WAN_SYSCTL%%=*}")"
  "${srv_ns[@]}" sysctl -qw "$WAN_SYSCTL"
fi
"${srv_ns[@]}" nginx -c "$dir/nginx.conf" -e "$dir/error.log" >/dev/null 2>&1 &
ng=$!
"${srv_ns[@]}" "$RB" latency-server --bind "$IP" -p 24201 >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do [ -e "$dir/nginx.pid" ] && break; sleep 0.1; done
[ -e "$dir/nginx.pid" ] || { cat "$dir/error.log" >&2; exit 1; }
sleep 0.5
common=(--mode "$MODE" --interval "$INTERVAL" --max-time "$MAXTIME" ${CC:+--cc "$CC"} -q)
for r in $(seq "$ROUNDS"); do
  "${cli_ns[@]}" "$RB" rpm --url "https://$IP:$PORT/.well-known/nq" --ca "$dir/ca.pem" "${common[@]}" \
    --json "$dir/out/h2-$r.json" >/dev/null || true
  "${cli_ns[@]}" "$RB" rpm "$IP" -p 24201 "${common[@]}" --json "$dir/out/rb-$r.json" >/dev/null || true
done
where="over loopback"; [ -n "$LAB" ] && where="through lab $LAB"
echo "## rpm $where${WAN_SYSCTL:+, server side $WAN_SYSCTL}, $MODE, ID ${INTERVAL} s, $ROUNDS rounds alternated (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
python3 - "$dir/out" "$ROUNDS" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
keys = [("rpm", "RPM"), ("foreign_rpm", "foreign RPM"), ("loaded_rpm", "loaded RPM"),
        ("tm_tcp_ms", "TM tcp_f ms"), ("tm_tls_ms", "TM tls_f ms"),
        ("tm_http_foreign_ms", "TM http_f ms"), ("tm_http_self_ms", "TM http_l ms")]
def runs(tag):
    out = []
    for i in range(1, n + 1):
        try:
            out.append(json.load(open(f"{d}/{tag}-{i}.json"))["rpm"]["runs"][0])
        except Exception as e:
            print(f"{tag} round {i}: no result ({e})", file=sys.stderr)
    return out
cols = {"h2": runs("h2"), "rb": runs("rb")}
def med(rs, f):
    v = [f(r) for r in rs if f(r) is not None]
    return statistics.median(v) if v else None
def fmt(x):
    return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.3g}")
print("| median of runs | --url nginx (HTTP/2, TLS 1.3) | routerbench protocol (TCP only) |")
print("|---|---|---|")
for k, name in keys:
    print(f"| {name} | " + " | ".join(fmt(med(cols[t], lambda r: r['score'].get(k))) for t in ("h2", "rb")) + " |")
for k, name in [("download_mbps", "goodput Mbit/s (download)"), ("upload_mbps", "goodput Mbit/s (upload)")]:
    print(f"| {name} | " + " | ".join(fmt(med(cols[t], lambda r: r.get(k))) for t in ("h2", "rb")) + " |")
print("| connections (median) | " + " | ".join(fmt(med(cols[t], lambda r: r.get("connections"))) for t in ("h2", "rb")) + " |")
print("| RPM confidence | " + " | ".join(",".join(r.get("rpm_confidence", "?") for r in cols[t]) for t in ("h2", "rb")) + " |")
PY
