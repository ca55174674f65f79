#!/usr/bin/env bash
# cross.sh: static builds of routerbench for router CPUs (armv7 = IPQ8064-class, aarch64 =
# filogic-class) with Debian's rustc-web 1.85, then a smoke test of each binary under qemu-user:
# `device`, `crypto --seconds 0.2 --format openwrt`, `loopback -t 2`, a `server` under qemu
# (RUST_BACKTRACE=1, through the latency reflector's error path: qemu-user has no SO_TIMESTAMPNS)
# serving a native `iperf3 -c 127.0.0.1 -t 2` client, and a command that fails (exit 1, no crash).
#
# Two recipes, both from Debian packages alone (README "On the router"):
#   BUILD_STD=1 (default for armv7): the router build. musl libc (Debian's musl-dev:armhf/:arm64)
#     instead of glibc, and std compiled from Debian's rust-web-src 1.85 with `-Z build-std`
#     (panic_immediate_abort, optimize_for_size); RUSTC_BOOTSTRAP=1 lets the stable 1.85 compiler
#     accept those unstable flags. armv7 code is Thumb-2. Triples *-linux-musleabihf / *-linux-musl.
#   BUILD_STD=0 (default for aarch64, see use_std): the plain recipe. glibc, and the target std
#     copied out of Debian's libstd-rust-web-dev:armhf/:arm64 (spec/cross-build.md). ~2x bigger
#     (static glibc, a precompiled std with its backtrace code).
#
#   bench/cross.sh                     # both targets, full feature set
#   TARGETS=armv7 bench/cross.sh       # CI: the armv7 smoke test only
#   SETUP=0 bench/cross.sh             # skip the package installs (already done)
#   SMOKE=0 bench/cross.sh             # build and print sizes only (bench/footprint.sh)
#   FAST=1 bench/cross.sh              # CI: thin LTO, 16 codegen units (same code, ~3x quicker
#                                      # to build, a little bigger: sizes are not the shipped ones)
#   FEATURES=minimal bench/cross.sh    # --no-default-features (the router's minimal build)
#   BUILD_STD=0 bench/cross.sh         # the plain glibc recipe (Debian's precompiled std)
#   OPENSSL_ROW=0 bench/cross.sh       # without openssl_row (the static binary's OpenSSL row
#                                      # via the openssl program against native openssl speed)
#
# Figures under qemu are emulated: never quote them as the device's. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=${TARGETS:-"armv7 aarch64"}
SETUP=${SETUP:-1}
SMOKE=${SMOKE:-1}
FAST=${FAST:-0}
FEATURES=${FEATURES:-full}
# Empty: the router recipe for armv7, the plain one for aarch64 (below).
BUILD_STD=${BUILD_STD:-}
PORT=${PORT:-27011}
RUST_DEB_VERSION=1.85.0+dfsg3-1~deb12u3
RUSTC=${RUSTC_CROSS:-/usr/bin/rustc}
# Own target dir: the cross builds must not fight the native build's cache.
TARGET_DIR=${CROSS_TARGET_DIR:-target/cross}
[ "$BUILD_STD" != 0 ] && [ -z "${CROSS_TARGET_DIR:-}" ] && TARGET_DIR=target/cross-std

# Which recipe a target gets (1 = router recipe). aarch64 defaults to the plain one: its router
# build's server aborted under qemu-aarch64 when a backtrace was captured (RUST_BACKTRACE=1, in
# the reflector's error path), inside libgcc's unwinder, which finds no unwind tables through
# the _dl_find_object stub below; not root-caused yet. BUILD_STD=1 forces it.
use_std() {
  if [ -n "$BUILD_STD" ]; then echo "$BUILD_STD"
  else case "$1" in armv7) echo 1 ;; *) echo 0 ;; esac; fi
}

triple() {
  case "$1:$(use_std "$1")" in
    armv7:1) echo armv7-unknown-linux-musleabihf ;;
    aarch64:1) echo aarch64-unknown-linux-musl ;;
    armv7:*) echo armv7-unknown-linux-gnueabihf ;;
    aarch64:*) echo aarch64-unknown-linux-gnu ;;
    *) echo "unknown target $1 (armv7 or aarch64)" >&2; exit 2 ;;
  esac
}
debarch() { case "$1" in armv7) echo armhf ;; aarch64) echo arm64 ;; esac; }
# The glibc cross gcc; musl-dev:ARCH's <triplet>-gcc wraps it with musl's specs (crt files, libc.a).
gcc_linker() { case "$1" in armv7) echo arm-linux-gnueabihf-gcc ;; aarch64) echo aarch64-linux-gnu-gcc ;; esac; }
linker() {
  if [ "$(use_std "$1")" = 1 ]; then
    case "$1" in armv7) echo arm-linux-musleabihf-gcc ;; aarch64) echo aarch64-linux-musl-gcc ;; esac
  else
    gcc_linker "$1"
  fi
}
qemu() { case "$1" in armv7) echo qemu-arm-static ;; aarch64) echo qemu-aarch64-static ;; esac; }
gccpkg() { case "$1" in armv7) echo gcc-arm-linux-gnueabihf ;; aarch64) echo gcc-aarch64-linux-gnu ;; esac; }

# The toolchain: Debian's rustc 1.85 (host), the cross linker, qemu-user, and either (BUILD_STD=1)
# std's source (rust-web-src, pinned to the compiler's version: a newer one does not build with
# it) and musl for the target, or (BUILD_STD=0) the target's std copied out of the Debian package
# (an `apt-get install` of libstd-rust-web-dev:armhf fails on libllvm19/libzstd1 version skew, so
# the .deb is downloaded and unpacked instead).
add_arch() {
  if ! dpkg --print-foreign-architectures | grep -qx "$1"; then
    dpkg --add-architecture "$1"
    apt-get update -qq || echo "apt-get update reported errors; going on" >&2
  fi
}
setup() {
  local t=$1 tr arch
  tr=$(triple "$t")
  arch=$(debarch "$t")
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v "$(gcc_linker "$t")" >/dev/null || ! command -v "$(qemu "$t")" >/dev/null \
     || ! command -v iperf3 >/dev/null || [ ! -x "$RUSTC" ]; then
    apt-get update -qq || echo "apt-get update reported errors (bookworm-security index for a foreign arch fails here); going on" >&2
    apt-get install -y -qq "$(gccpkg "$t")" qemu-user-static iperf3 \
      "rustc-web=$RUST_DEB_VERSION" "libstd-rust-web-dev=$RUST_DEB_VERSION" \
      "libstd-rust-web-1.85=$RUST_DEB_VERSION" >/dev/null
  fi
  if [ "$(use_std "$t")" = 1 ]; then
    if [ ! -d "$("$RUSTC" --print sysroot)/lib/rustlib/src/rust/library/std" ]; then
      apt-get install -y -qq "rust-web-src=$RUST_DEB_VERSION" >/dev/null
    fi
    if ! command -v "$(linker "$t")" >/dev/null; then
      add_arch "$arch"
      apt-get install -y -qq "musl-dev:$arch" >/dev/null
    fi
    return
  fi
  if [ ! -d "/usr/lib/rustlib/$tr/lib" ]; then
    add_arch "$arch"
    local dl
    dl=$(mktemp -d)
    (cd "$dl" && apt-get download -qq "libstd-rust-web-dev:$arch=$RUST_DEB_VERSION")
    dpkg-deb -x "$dl"/libstd-rust-web-dev_*.deb "$dl/x"
    cp -a "$dl/x/usr/lib/rustlib/$tr" /usr/lib/rustlib/
    rm -rf "$dl"
  fi
}

build() {
  local t=$1 tr var feat=()
  tr=$(triple "$t")
  var="CARGO_TARGET_$(echo "$tr" | tr 'a-z-' 'A-Z_')_LINKER"
  [ "$FEATURES" = minimal ] && feat=(--no-default-features)
  echo "== build $tr ($FEATURES) with $("$RUSTC" --version)" >&2
  local t0=$SECONDS
  local fast=() rustflags="-C target-feature=+crt-static" std=()
  [ "$FAST" = 1 ] && fast=(CARGO_PROFILE_ROUTER_LTO=thin CARGO_PROFILE_ROUTER_CODEGEN_UNITS=16)
  if [ "$(use_std "$t")" = 1 ]; then
    # std from source, without its backtrace code and panic messages (a panic aborts at once).
    std=(-Z build-std=std,panic_abort
      -Z build-std-features=panic_immediate_abort,optimize_for_size)
    # musl's std links -lunwind statically (rustup ships LLVM's libunwind.a for it); GCC's
    # libgcc_eh.a is the same unwinder. No rustup self-contained crt files here: musl-gcc's.
    local unw="$TARGET_DIR/unwind-$t"
    mkdir -p "$unw"
    cp "$("$(gcc_linker "$t")" -print-file-name=libgcc_eh.a)" "$unw/libunwind.a"
    # Debian's aarch64 libgcc_eh finds unwind tables with glibc's _dl_find_object, which musl
    # lacks: a stub that finds none. Nothing unwinds here (panic_immediate_abort, no backtrace
    # feature); armv7's EHABI unwinder does not call it.
    if nm "$unw/libunwind.a" 2>/dev/null | grep ' U _dl_find_object' >/dev/null; then
      echo 'int _dl_find_object(void *pc, void *result) { (void)pc; (void)result; return -1; }' \
        | "$(gcc_linker "$t")" -x c -O2 -c -o "$unw/dl_find_object_stub.o" -
      ar rs "$unw/libunwind.a" "$unw/dl_find_object_stub.o" 2>/dev/null
    fi
    rustflags+=" -C link-self-contained=no -L $PWD/$TARGET_DIR/unwind-$t"
    # Thumb-2: ~20 % smaller code; every ARMv7-A core runs it (the feature is unstable-marked
    # in rustc 1.85, which prints a warning).
    [ "$t" = armv7 ] && rustflags+=" -C target-feature=+thumb-mode"
  fi
  # RUSTC_BOOTSTRAP=1: a stable compiler accepts -Z flags (what OpenWrt's rust-package.mk and
  # distribution builds of Rust's own std rely on too).
  [ "$(use_std "$t")" = 1 ] && fast+=(RUSTC_BOOTSTRAP=1)
  env RUSTC="$RUSTC" "$var=$(linker "$t")" RUSTFLAGS="$rustflags" "${fast[@]}" \
    CARGO_TARGET_DIR="$TARGET_DIR" \
    cargo build --profile router --target "$tr" "${feat[@]}" "${std[@]}" >&2
  echo "   built in $((SECONDS - t0)) s" >&2
}

bin_path() { echo "$TARGET_DIR/$(triple "$1")/router/routerbench"; }

fail() { echo "FAIL ($1): $2" >&2; exit 1; }

smoke() {
  local t=$1 bin q out srv_pid
  bin=$(bin_path "$t")
  q=$(qemu "$t")
  echo "== smoke test $t under $q" >&2
  file -b "$bin" 2>/dev/null | grep -q 'statically linked' || fail "$t" "$bin is not a static executable"

  out=$("$q" "$bin" device --json)
  echo "$out" | grep -q '"arch": *"\(arm\|aarch64\)' || fail "$t" "device does not print arm/aarch64: $out"
  echo "   device: $(echo "$out" | grep -m1 '"arch"' | tr -s ' ')" >&2

  # RustCrypto here (ROUTERBENCH_OPENSSL=none): the openssl program's row is openssl_row's.
  out=$(ROUTERBENCH_OPENSSL=none "$q" "$bin" crypto --seconds 0.2 --format openwrt --no-identity -q 2>/dev/null)
  local cells
  cells=$(echo "$out" | awk -F'|' '{ n = 0; for (i = 2; i < NF; i++) { v = $i; gsub(/ /, "", v); if (v ~ /^[0-9]+(\.[0-9]+)?k?$/) n++ } print n }')
  [ "$cells" = 13 ] || fail "$t" "crypto row has $cells numeric cells, want 13: $out"
  echo "   crypto row: 13 numeric cells; engine: $(echo "$out" | awk -F'|' '{ print $2 }' | sed 's/^ *//; s/ *$//')" >&2

  out=$("$q" "$bin" loopback -t 2 2>&1) || fail "$t" "loopback failed: $out"
  echo "   loopback: $(echo "$out" | grep -m1 -i 'receiver' || echo "$out" | tail -n1)" >&2

  # An error with RUST_BACKTRACE=1: anyhow captures a backtrace, which walks the stack up through
  # main (on ARM a noreturn main once made that walk loop: segfault with opt-level "z", a hang
  # with Thumb-2). Nothing listens on PORT+1, so the client must fail cleanly with exit 1.
  local rc=0
  out=$(RUST_BACKTRACE=1 timeout 60 "$q" "$bin" client 127.0.0.1 -p "$((PORT + 1))" -t 1 2>&1) || rc=$?
  [ "$rc" = 1 ] && echo "$out" | grep -q 'routerbench: error' \
    || fail "$t" "a failing client with RUST_BACKTRACE=1 exited $rc (want 1 and an error line): $out"
  echo "   error path with RUST_BACKTRACE=1: exit 1, $(echo "$out" | grep -m1 'routerbench: error' | cut -c1-80)" >&2

  # The server's latency reflector cannot start under qemu-user (no SO_TIMESTAMPNS): that error
  # path, with a backtrace captured, must still end in a serving iperf3 server.
  RUST_BACKTRACE=1 "$q" "$bin" server -p "$PORT" --bind 127.0.0.1 >/dev/null 2>&1 &
  srv_pid=$!
  local ok=0 i
  for i in $(seq 1 100); do
    if iperf3 -c 127.0.0.1 -p "$PORT" -t 2 >"$TARGET_DIR/iperf3-$t.txt" 2>&1; then ok=1; break; fi
    grep -q 'Connection refused' "$TARGET_DIR/iperf3-$t.txt" || break
    sleep 0.2
  done
  kill "$srv_pid" 2>/dev/null || true
  for i in $(seq 1 30); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" 2>/dev/null || true
  [ "$ok" = 1 ] || fail "$t" "native iperf3 against the qemu server: $(tail -n3 "$TARGET_DIR/iperf3-$t.txt")"
  echo "   iperf3 -c 127.0.0.1 -t 2 against the qemu-run server: exit 0, $(grep receiver "$TARGET_DIR/iperf3-$t.txt" | awk '{ print $7, $8 }')" >&2
}

for t in $TARGETS; do
  triple "$t" >/dev/null
  [ "$SETUP" = 1 ] && setup "$t"
done
mkdir -p "$TARGET_DIR"
for t in $TARGETS; do
  build "$t"
done
printf '\n%-32s %-8s %10s\n' target features bytes
for t in $TARGETS; do
  printf '%-32s %-8s %10s\n' "$(triple "$t")" "$FEATURES" "$(stat -c %s "$(bin_path "$t")")"
done
echo
[ "$SMOKE" = 1 ] || exit 0
# ---- The wiki's row from the static binary through the openssl program (issue 18, part 3) ----
# A static binary cannot load libcrypto, so `--engine auto` runs the `openssl` program. Under
# qemu-user the program it runs is this host's native openssl (qemu-user executes a host binary
# natively), so its row must match a native `openssl speed` run beside it: the Engine cell names
# OpenSSL, and every one of the 13 columns is within 10 % of the native figure, on the medians of
# up to ROW_ROUNDS (3) alternating rounds (one round when the first is already within). The
# WireGuard columns are printed beside them. OPENSSL_ROW=0 skips this.
openssl_row() {
  local t=$1 bin q dir r native_algs legacy=() ok=0
  bin=$(bin_path "$t")
  q=$(qemu "$t")
  dir="$TARGET_DIR/openssl-row-$t"
  rm -rf "$dir" && mkdir -p "$dir"
  command -v openssl >/dev/null || fail "$t" "no native openssl program: apt-get install openssl"
  echo "== the wiki's row from the static $t binary via the openssl program (vs native openssl speed)" >&2
  openssl list -provider legacy -provider default -providers >/dev/null 2>&1 \
    && legacy=(-provider legacy -provider default)
  native_algs="md5 sha1 sha256 sha512 rsa2048 dsa2048"
  for r in $(seq 1 "${ROW_ROUNDS:-3}"); do
    "$q" "$bin" crypto --engine auto --row-only --seconds 1 --no-identity --format openssl -q \
      >"$dir/rb-openssl.$r" 2>"$dir/rb-err.$r" || fail "$t" "crypto via the openssl program: $(tail -n3 "$dir/rb-err.$r")"
    # shellcheck disable=SC2086
    { openssl speed -seconds 1 -bytes 1024 $native_algs
      openssl speed -seconds 1 "${legacy[@]}" -bytes 8192 des-cbc des-ede3 aes-128-cbc aes-192-cbc aes-256-cbc
      openssl speed -seconds 1 -bytes 1456 -evp chacha20-poly1305
      openssl speed -seconds 1 -bytes 1456 -evp aes-128-gcm; } >"$dir/native.$r" 2>/dev/null
    # Both read by the same importer, so both rows are the same columns of the same format.
    "$q" "$bin" crypto --import "$dir/rb-openssl.$r" --format openwrt --no-identity -q >"$dir/rb-row.$r"
    "$q" "$bin" crypto --import "$dir/native.$r" --format openwrt --no-identity -q >"$dir/native-row.$r"
    for f in rb-openssl native; do
      awk 'function v(x) { if (x ~ /k$/) { sub(/k$/, "", x); return x * 1000 } return x + 0 }
           $1 == "ChaCha20-Poly1305" { c = v($2) } $1 == "AES-128-GCM" { g = v($2) }
           END { printf "%.0f %.0f\n", c, g }' "$dir/$f.$r" >"$dir/$f-aead.$r"
    done
    # The Engine cell of the static binary's own row (its `--format openssl` first line).
    engine=$(head -n1 "$dir/rb-openssl.$r" | sed 's/ (routerbench [^)]*)$//')
    case "$engine" in
      "OpenSSL "*"(openssl speed)") ;;
      *) fail "$t" "the static binary's Engine cell is \`$engine\`, not OpenSSL via the openssl program: $(cat "$dir/rb-err.$r")" ;;
    esac
    if openssl_row_compare "$dir" "$r" >"$dir/table" 2>&1; then ok=1; break; fi
    echo "   round $r: a column outside 10 %, another round" >&2
  done
  sed 's/^/   /' "$dir/table" >&2
  [ "$ok" = 1 ] || fail "$t" "the openssl-program row is not within 10 % of native openssl speed (medians of $r rounds)"
  echo "   Engine cell: $engine; all 13 columns within 10 % of native openssl speed ($r round(s))" >&2
}

# Per column, the median over rounds 1..N of each side and their ratio; exit 1 if one of the 13
# row columns is outside 0.90-1.10 (a column 0 on both sides, e.g. DES without the legacy
# provider, counts as equal).
openssl_row_compare() {
  local dir=$1 n=$2
  for i in $(seq 1 "$n"); do
    paste -d'|' "$dir/rb-row.$i" "$dir/native-row.$i" | tr -d '\n'
    printf '|%s|%s\n' "$(cat "$dir/rb-openssl-aead.$i")" "$(cat "$dir/native-aead.$i")"
  done | awk -F'|' -v n="$n" '
    function med(a, k,   i, j, x) { for (i = 2; i <= k; i++) { x = a[i]; j = i - 1
        while (j > 0 && a[j] > x) { a[j + 1] = a[j]; j-- } a[j + 1] = x } return a[int((k + 1) / 2)] }
    { for (c = 1; c <= 13; c++) { rb[c, NR] = $(c + 2) + 0; nat[c, NR] = $(c + 18) + 0 }
      split($(NF - 1), x, " "); split($NF, y, " ")
      rb[14, NR] = x[1]; rb[15, NR] = x[2]; nat[14, NR] = y[1]; nat[15, NR] = y[2] }
    END {
      split("MD5 SHA-1 SHA-256 SHA-512 DES 3DES AES-128 AES-192 AES-256 RSA-sign RSA-verify DSA-sign DSA-verify chacha20-poly1305 aes-128-gcm", name, " ")
      printf "%-18s %14s %14s %7s\n", "column", "qemu static", "native", "ratio"
      bad = 0
      for (c = 1; c <= 15; c++) {
        for (r = 1; r <= n; r++) { a[r] = rb[c, r]; b[r] = nat[c, r] }
        ra = med(a, n); nb = med(b, n); unit = (c <= 9 || c >= 14) ? 1e6 : 1
        if (nb > 0) ratio = sprintf("%.3f", ra / nb); else ratio = (ra == 0) ? "both 0" : "n/a"
        if (c <= 13 && nb > 0 && (ra / nb < 0.90 || ra / nb > 1.10)) { bad++; ratio = ratio " *" }
        if (c <= 13 && nb == 0 && ra != 0) { bad++; ratio = ratio " *" }
        printf "%-18s %14.1f %14.1f %7s\n", name[c], ra / unit, nb / unit, ratio
      }
      printf "MB/s for the byte columns (hashes 1 KiB, ciphers 8 KiB, AEADs 1456 B), ops/s for RSA/DSA;\n"
      printf "medians of %d round(s); * = outside 0.90-1.10 (the 13 row columns are checked)\n", n
      exit bad > 0
    }'
}

for t in $TARGETS; do
  smoke "$t"
  [ "${OPENSSL_ROW:-1}" = 1 ] && openssl_row "$t"
done
echo "cross: all smoke tests passed ($TARGETS)"
