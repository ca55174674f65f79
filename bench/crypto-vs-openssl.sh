#!/usr/bin/env bash
# crypto-vs-openssl.sh: `openssl speed -seconds 1` against `routerbench crypto` on the same host,
# alternating, ROUNDS rounds (default 5), per column of the OpenWrt row the median rate of each
# source over the rounds (and the best), and the ratios routerbench/openssl for both engines.
# Target for the openssl engine: every column's median ratio 0.95-1.05. Both sides divide by user
# CPU time, which on a loaded host is misaccounted both ways in single runs (here openssl speed
# once read AES-192 at 2.7x its own median), so the best of several is NOT safe: the median is.
#
# Usage: bench/crypto-vs-openssl.sh            (builds target/release)
#        ROUNDS=5 ROUTERBENCH=/path/to/routerbench bench/crypto-vs-openssl.sh
# The openssl speed output of each round is imported by routerbench itself (`--import`), so
# both sides are read the same way: hashes at 1024 B, ciphers at 8192 B (bytes/s), RSA/DSA ops/s.
# Then the WireGuard columns: `openssl speed -evp chacha20-poly1305|aes-128-gcm -bytes 1456`
# against `routerbench crypto --algorithms wireguard` on both engines (medians, ratio printed).
# Both engines run speed.c's -evp loops (docs/crypto.md): ChaCha20-Poly1305 streams one context,
# AES-128-GCM encrypts one whole message per block with the key set again; target 0.95-1.05 for
# the openssl engine.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-1}
ALGS="md5 sha1 sha256 sha512 des des-ede3 aes-128-cbc aes-192-cbc aes-256-cbc rsa2048 dsa2048"
if [ -z "${ROUTERBENCH:-}" ]; then
  cargo build --release >&2
  ROUTERBENCH="${CARGO_TARGET_DIR:-target}/release/routerbench"
fi
command -v openssl >/dev/null || { echo "openssl not found: apt-get install openssl" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Single DES needs the legacy provider on OpenSSL 3; fall back to the plain command without it.
speed_args=(-seconds "$SECS")
if openssl speed -seconds 1 -provider legacy -provider default -bytes 16 des-ede3 >/dev/null 2>&1; then
  speed_args+=(-provider legacy -provider default)
fi

row() { "$ROUTERBENCH" crypto --no-identity --format openwrt -q "$@"; }

# `ChaCha20-Poly1305  1336005.22k` / `AES-128-GCM …` lines of --format openssl: "chacha gcm" B/s.
aead_cells() {
  awk 'function v(x) { if (x ~ /k$/) { sub(/k$/, "", x); return x * 1000 } return x + 0 }
       $1 == "ChaCha20-Poly1305" { c = v($2) } $1 == "AES-128-GCM" { g = v($2) }
       END { printf "%.0f %.0f\n", c, g }'
}

echo "host: $(uname -m), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(openssl version)" >&2
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: openssl speed" >&2
  # shellcheck disable=SC2086
  # On a loaded host openssl speed sometimes prints `infk` (no user CPU time measured) for a
  # 16-byte cell, which the importer refuses: such a run is repeated (at most 3 tries).
  for try in 1 2 3; do
    openssl speed "${speed_args[@]}" $ALGS >"$work/speed.$r" 2>/dev/null
    ! grep -q 'infk' "$work/speed.$r" && break
    echo "round $r/$ROUNDS: openssl speed printed infk (try $try), again" >&2
  done
  row --import "$work/speed.$r" >"$work/openssl-speed.$r"
  echo "round $r/$ROUNDS: routerbench --engine openssl" >&2
  row --engine openssl --seconds "$SECS" --row-only >"$work/engine-openssl.$r"
  echo "round $r/$ROUNDS: routerbench --engine rustcrypto" >&2
  row --engine rustcrypto --seconds "$SECS" --row-only >"$work/engine-rustcrypto.$r"
  echo "round $r/$ROUNDS: WireGuard AEADs at 1456 B" >&2
  for a in chacha20-poly1305 aes-128-gcm; do
    openssl speed -seconds "$SECS" -bytes 1456 -evp "$a" 2>/dev/null
  done >"$work/aead-speed.$r"
  "$ROUTERBENCH" crypto --import "$work/aead-speed.$r" --format openssl -q | aead_cells >"$work/aead-openssl-speed.$r"
  for e in openssl rustcrypto; do
    "$ROUTERBENCH" crypto --engine "$e" --seconds "$SECS" --algorithms wireguard --format openssl -q \
      | aead_cells >"$work/aead-engine-$e.$r"
  done
done

# Median (or with best=1 the highest) per column over the rounds of one source; 13 numbers.
medians() {
  cat "$work/$1".* | awk -F'|' -v rounds="$ROUNDS" -v best="${2:-0}" '
    { for (i = 3; i <= 15; i++) { v = $i; gsub(/ /, "", v); col[i - 2, NR] = v } }
    END {
      for (c = 1; c <= 13; c++) {
        n = 0
        for (r = 1; r <= rounds; r++) a[++n] = col[c, r] + 0
        for (i = 2; i <= n; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
        printf "%s%s", (c > 1 ? " " : ""), (best ? a[n] : a[int((n + 1) / 2)])
      }
      print ""
    }'
}

# Per-round ratio src/openssl-speed for each column: "min-max" of the rounds (the noise).
spread() {
  for r in $(seq 1 "$ROUNDS"); do
    paste -d'|' "$work/$1.$r" "$work/openssl-speed.$r"
  done | awk -F'|' '
    { for (i = 3; i <= 15; i++) { a = $i + 0; b = $(i + 16) + 0; if (b > 0) { x = a / b
        if (!(i in lo) || x < lo[i]) lo[i] = x; if (!(i in hi) || x > hi[i]) hi[i] = x } } }
    END { for (i = 3; i <= 15; i++) printf "%s%.2f-%.2f", (i > 3 ? " " : ""), lo[i], hi[i]; print "" }'
}

ref=$(medians openssl-speed)
ossl=$(medians engine-openssl)
rc=$(medians engine-rustcrypto)
ref_med=$(medians openssl-speed 1)
ossl_med=$(medians engine-openssl 1)
ossl_spread=$(spread engine-openssl)

printf '\n%-11s %13s %13s %7s %7s %11s %13s %7s\n' column "openssl med" "rb ossl med" ratio best "per round" "rb rustcrypto" ratio
awk -v ref="$ref" -v ossl="$ossl" -v rc="$rc" -v sp="$ossl_spread" -v refm="$ref_med" -v osslm="$ossl_med" 'BEGIN {
  split("MD5 SHA-1 SHA-256 SHA-512 DES 3DES AES-128 AES-192 AES-256 RSA-sign RSA-verify DSA-sign DSA-verify", name, " ")
  split(ref, a, " "); split(ossl, b, " "); split(rc, c, " "); split(sp, s, " ")
  split(refm, am, " "); split(osslm, bm, " ")
  bad = 0
  for (i = 1; i <= 13; i++) {
    r1 = (a[i] > 0) ? sprintf("%.2f", b[i] / a[i]) : "n/a"
    rm = (am[i] > 0) ? sprintf("%.2f", bm[i] / am[i]) : "n/a"
    r2 = (a[i] > 0) ? sprintf("%.2f", c[i] / a[i]) : "n/a"
    if (r1 != "n/a" && (r1 < 0.95 || r1 > 1.05)) { bad++; r1 = r1 "*" }
    unit = (i <= 9) ? 1e6 : 1
    printf "%-11s %13.1f %13.1f %7s %7s %11s %13.1f %7s\n", name[i], a[i] / unit, b[i] / unit, r1, rm, s[i], c[i] / unit, r2
  }
  printf "\nMB/s (10^6 B/s) for MD5..AES-256 (hashes at 1024 B, ciphers at 8192 B), ops/s for RSA/DSA;\n"
  printf "medians of the rounds on each side (\"best\": the ratio of the highest of each side).\n"
  printf "openssl engine columns outside 0.95-1.05 (median vs median): %d (marked *); \"per round\": range\n", bad
  printf "of the per-round ratios of the openssl engine (the host noise).\n"
}'

# WireGuard AEADs: median per column over the rounds of each source.
aead_med() {
  cat "$work/$1".* | awk -v rounds="$ROUNDS" '
    { c[NR] = $1 + 0; g[NR] = $2 + 0 }
    function med(a,   n, i, j, x) { n = rounds
      for (i = 2; i <= n; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
      return a[int((n + 1) / 2)] }
    END { printf "%s %s\n", med(c), med(g) }'
}
awk -v ref="$(aead_med aead-openssl-speed)" -v ossl="$(aead_med aead-engine-openssl)" -v rc="$(aead_med aead-engine-rustcrypto)" 'BEGIN {
  split("chacha20-poly1305 aes-128-gcm", name, " ")
  split(ref, a, " "); split(ossl, b, " "); split(rc, c, " ")
  printf "\n%-18s %13s %13s %7s %13s %7s\n", "WireGuard 1456 B", "openssl -evp", "rb openssl", "ratio", "rb rustcrypto", "ratio"
  for (i = 1; i <= 2; i++) {
    r1 = (a[i] > 0) ? sprintf("%.2f", b[i] / a[i]) : "n/a"
    if (r1 != "n/a" && (r1 < 0.95 || r1 > 1.05)) r1 = r1 "*"
    r2 = (a[i] > 0) ? sprintf("%.2f", c[i] / a[i]) : "n/a"
    printf "%-18s %13.1f %13.1f %7s %13.1f %7s\n", name[i], a[i] / 1e6, b[i] / 1e6, r1, c[i] / 1e6, r2
  }
  printf "MB/s, medians of the rounds; openssl speed -evp NAME -bytes 1456 against routerbench --algorithms\n"
  printf "wireguard, both timed with speed.c loops (ChaCha20-Poly1305 streamed, AES-128-GCM per message).\n"
}'
