#!/usr/bin/env bash
# package.sh: the packages a router owner installs, from the static binaries bench/cross.sh built:
# for each target found, an .ipk for OpenWrt <= 24.10 (opkg) and an .apk for OpenWrt 25.12
# (apk-tools v3), each with /usr/bin/routerbench, the procd init script and the UCI config of
# openwrt/routerbench/files/. Layout and scripts follow OpenWrt's own packaging
# (scripts/ipkg-build and include/package-pack.mk); docs/packages.md says what is in each file
# and why. The packages' tests are tests/openwrt/openwrt_packages.rs (ROUTERBENCH_PACKAGES=OUT).
#
#   bench/package.sh                 # every target bench/cross.sh built, into target/packages/
#   OUT=/tmp/pkgs bench/package.sh   # elsewhere
#   BINS="mipsel_24kc=/path/to/routerbench …" bench/package.sh   # given binaries (static!)
#   APK=/path/to/apk bench/package.sh   # apk-tools >= 3 for the .apk (default: `apk` on PATH if
#                                       # it is v3, else ../shared/peers/apk-3.0.6)
#   NO_APK=1 bench/package.sh        # only the .ipk files
#   FEATURES=full bench/package.sh   # the full build instead (lab, plots): over 1.5 MiB on MIPS
#
# The packages carry the router's build by default: `FEATURES=minimal bench/cross.sh`
# (--no-default-features, in target/cross-std-minimal/), the set openwrt/routerbench/Makefile
# builds in the OpenWrt SDK: everything but the netns lab (a Linux host's, with root, nft and
# the VM) and the readers of saved results (report, plot, compare: a PC's). Every package is
# then under 1.5 MiB (docs/packages.md, "Sizes").
#
# Why a script and not `routerbench package`: packaging needs tar, gzip and apk-tools on the
# build machine, never on the router; a subcommand would put that code into the router's binary.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/packages}
FILES=openwrt/routerbench/files
NAME=routerbench
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
RELEASE=$(sed -n 's/^PKG_RELEASE:=//p' openwrt/routerbench/Makefile)
LICENSE=$(sed -n 's/^PKG_LICENSE:=//p' openwrt/routerbench/Makefile)
MAINTAINER=$(sed -n 's/^PKG_MAINTAINER:=//p' openwrt/routerbench/Makefile)
DESCRIPTION="Router benchmark in one static binary: the openssl speed suite as the OpenWrt table row, an iperf3-compatible client and server, the in-device loopback test, RRUL latency under load with the router's own CPU and queue view."
[ -n "$VERSION" ] && [ -n "$RELEASE" ] || { echo "package.sh: no version in Cargo.toml or PKG_RELEASE in openwrt/routerbench/Makefile" >&2; exit 2; }
# Reproducible: every mtime is the last commit's time.
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

die() { echo "package.sh: $*" >&2; exit 1; }

# OpenWrt's package architecture for a Rust target triple.
owrt_arch() {
  case "$1" in
    mipsel-*) echo mipsel_24kc ;;
    mips-*) echo mips_24kc ;;
    armv7-*) echo arm_cortex-a15_neon-vfpv4 ;;
    aarch64-*) echo aarch64_cortex-a53 ;;
    *) return 1 ;;
  esac
}

FEATURES=${FEATURES:-minimal}
case "$FEATURES" in
  minimal) SUFFIX=-minimal ;;
  full) SUFFIX= ;;
  *) die "FEATURES=$FEATURES: minimal (the router's build, the default) or full" ;;
esac

# "arch=path" for every static binary bench/cross.sh left with $FEATURES (the router recipe's
# first).
find_bins() {
  local seen=" " f triple arch
  for f in target/cross-std$SUFFIX/*/router/routerbench target/cross$SUFFIX/*/router/routerbench; do
    [ -f "$f" ] || continue
    triple=$(basename "$(dirname "$(dirname "$f")")")
    arch=$(owrt_arch "$triple") || continue
    case "$seen" in *" $arch "*) continue ;; esac
    seen="$seen$arch "
    echo "$arch=$f"
  done
}

find_apk() {
  if [ -n "${APK:-}" ]; then
    [ -x "$APK" ] || die "APK=$APK is not an executable"
    echo "$APK"; return
  fi
  if command -v apk >/dev/null && apk --version 2>/dev/null | grep -q '^apk-tools 3\.'; then
    command -v apk; return
  fi
  if [ -x ../shared/peers/apk-3.0.6 ]; then
    echo "$(cd ../shared/peers && pwd)/apk-3.0.6"; return
  fi
  return 1
}

# tar as OpenWrt's ipkg-build runs it (GNU format, numeric root owner, sorted, fixed mtime), then
# gzip without a name or time stamp.
tgz() { # DIR OUTFILE [MEMBERS...]
  local dir=$1 out=$2; shift 2
  (cd "$dir" && tar --format=gnu --numeric-owner --owner=0 --group=0 --sort=name \
    --mtime="@$EPOCH" -cf - "${@:-.}") | gzip -n -9 >"$out"
}

# The package's files: binary 0755, init script 0755, UCI config 0600 (OpenWrt's INSTALL_BIN
# and INSTALL_CONF).
stage_root() { # DIR BINARY
  local root=$1 bin=$2
  install -d -m 0755 "$root/usr/bin" "$root/etc/init.d" "$root/etc/config"
  install -m 0755 "$bin" "$root/usr/bin/$NAME"
  install -m 0755 "$FILES/$NAME.init" "$root/etc/init.d/$NAME"
  install -m 0600 "$FILES/$NAME.config" "$root/etc/config/$NAME"
}

ipk() { # ARCH BINARY
  local arch=$1 bin=$2 work ver="$VERSION-$RELEASE"
  work=$(mktemp -d)
  stage_root "$work/data" "$bin"
  tgz "$work/data" "$work/data.tar.gz"
  local size
  size=$(gzip -dc "$work/data.tar.gz" | wc -c)
  mkdir -p "$work/control"
  {
    echo "Package: $NAME"
    echo "Version: $ver"
    echo "SourceName: $NAME"
    echo "License: $LICENSE"
    echo "Section: utils"
    echo "Maintainer: $MAINTAINER"
    echo "Architecture: $arch"
    echo "Installed-Size: $size"
    echo "Description:  $DESCRIPTION"
  } >"$work/control/control"
  echo "/etc/config/$NAME" >"$work/control/conffiles"
  # OpenWrt's default postinst/prerm (include/package-pack.mk): enable and start the init
  # scripts the package lists, or disable and stop them; nothing when IPKG_INSTROOT is an image.
  cat >"$work/control/postinst" <<'EOF'
#!/bin/sh
[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_postinst $0 $@
EOF
  cat >"$work/control/prerm" <<'EOF'
#!/bin/sh
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_prerm $0 $@
EOF
  chmod 0644 "$work/control/control" "$work/control/conffiles"
  chmod 0755 "$work/control/postinst" "$work/control/prerm"
  tgz "$work/control" "$work/control.tar.gz"
  echo "2.0" >"$work/debian-binary"
  # The outer archive is a gzip'd tar, which is what opkg (OpenWrt's opkg-lede: libbb's
  # deb_extract walks a gzip'd tar) reads; it has no ar reader.
  tgz "$work" "$OUT/${NAME}_${ver}_${arch}.ipk" ./debian-binary ./data.tar.gz ./control.tar.gz
  rm -rf "$work"
  echo "$OUT/${NAME}_${ver}_${arch}.ipk"
}

apk_pkg() { # ARCH BINARY APKTOOL
  local arch=$1 bin=$2 apk=$3 work ver="$VERSION-r$RELEASE"
  work=$(mktemp -d)
  stage_root "$work/root" "$bin"
  local meta="$work/root/lib/apk/packages"
  install -d -m 0755 "$meta"
  # OpenWrt 25.12's package metadata in the data (include/package-pack.mk): the file list, the
  # conffiles, and each conffile's sha256 as shipped (to tell a user-edited config).
  (cd "$work/root" && find . -type f ! -path './lib/apk/*' -printf '/%P\n' | LC_ALL=C sort) >"$meta/$NAME.list"
  echo "/etc/config/$NAME" >"$meta/$NAME.conffiles"
  echo "/etc/config/$NAME $(sha256sum "$work/root/etc/config/$NAME" | cut -d' ' -f1)" >"$meta/$NAME.conffiles_static"
  local post="$work/post-install" upgrade="$work/post-upgrade" prerm="$work/pre-deinstall"
  cat >"$post" <<EOF
#!/bin/sh
[ "\${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s \${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. \${IPKG_INSTROOT}/lib/functions.sh
export root="\${IPKG_INSTROOT}"
export pkgname="$NAME"
add_group_and_user
default_postinst
EOF
  { echo "#!/bin/sh"; echo "export PKG_UPGRADE=1"; sed '1d' "$post"; } >"$upgrade"
  cat >"$prerm" <<EOF
#!/bin/sh
[ -s \${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. \${IPKG_INSTROOT}/lib/functions.sh
export root="\${IPKG_INSTROOT}"
export pkgname="$NAME"
default_prerm
EOF
  local out="$OUT/${NAME}-${ver}_${arch}.apk"
  rm -f "$out"
  "$apk" mkpkg \
    --info "name:$NAME" --info "version:$ver" --info "arch:$arch" \
    --info "description:$DESCRIPTION" --info "license:$LICENSE" \
    --info "origin:$NAME" --info "maintainer:$MAINTAINER" \
    --script "post-install:$post" --script "post-upgrade:$upgrade" \
    --script "pre-deinstall:$prerm" \
    --files "$work/root" --output "$out" >&2
  rm -rf "$work"
  echo "$out"
}

BINS=${BINS:-$(find_bins)}
[ -n "$BINS" ] || die "no static $FEATURES routerbench binary found under target/cross-std$SUFFIX or target/cross$SUFFIX: build one with bench/cross.sh (e.g. FEATURES=$FEATURES TARGETS=armv7 bench/cross.sh), or give BINS=\"ARCH=PATH …\""
APKTOOL=""
if [ "${NO_APK:-0}" != 1 ]; then
  APKTOOL=$(find_apk) || die "no apk-tools v3 for the .apk files: set APK=/path/to/apk (apk-tools >= 3.0; \
OpenWrt 25.12's host apk or a build of alpinelinux/apk-tools v3), put it on PATH, keep ../shared/peers/apk-3.0.6 \
beside the checkout, or set NO_APK=1 to build only the .ipk files"
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
made=()
for pair in $BINS; do
  arch=${pair%%=*}
  bin=${pair#*=}
  [ -f "$bin" ] || die "$bin: no such file"
  case "$arch" in mipsel_24kc | mips_24kc | arm_cortex-a15_neon-vfpv4 | aarch64_cortex-a53) ;;
    *) die "$arch: not one of mipsel_24kc mips_24kc arm_cortex-a15_neon-vfpv4 aarch64_cortex-a53" ;;
  esac
  file -b "$bin" | grep -Eq 'statically linked|static-pie linked' || die "$bin is not statically linked: a package must not need the router's libraries (bench/cross.sh builds static binaries)"
  made+=("$(ipk "$arch" "$bin")")
  [ -n "$APKTOOL" ] && made+=("$(apk_pkg "$arch" "$bin" "$APKTOOL")")
done
# OpenWrt keeps an installed package compressed, so this is the flash it costs: at most 1.5 MiB
# each (docs/packages.md). FAST=1 builds (CI) are bigger than the shipped ones.
LIMIT=1572864
printf '\n%-60s %10s %16s\n' package bytes "of 1.5 MiB"
over=0
for f in "${made[@]}"; do
  n=$(stat -c %s "$f")
  printf '%-60s %10s %15s%%\n' "$(basename "$f")" "$n" "$((n * 100 / LIMIT))"
  [ "$n" -le "$LIMIT" ] || over=$((over + 1))
done
[ "$over" = 0 ] || echo "package.sh: warning: $over package(s) over 1.5 MiB ($LIMIT bytes): a router owner pays that in flash (docs/packages.md)" >&2
echo "package.sh: ${#made[@]} package(s) in $OUT"
