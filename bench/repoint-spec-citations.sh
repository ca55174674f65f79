#!/usr/bin/env bash
# repoint-spec-citations.sh: rewrites the citations of the research notes that lived outside the
# repository (a sibling folder named "spec", which a clone does not have) to the documents in the
# repository that carry the same facts under the same section numbers:
#
#   <notes>/iperf3.md      -> docs/protocols/iperf3.md
#   <notes>/latency.md     -> docs/protocols/latency.md
#   <notes>/crypto.md      -> docs/protocols/openssl-speed.md
#   <notes>/monitor-aqm.md -> docs/protocols/router-signals.md
#   <notes>/netns-lab.md   -> docs/protocols/netns-lab.md   (and its reference shell script)
#   <notes>/vm-router.md   -> docs/protocols/vm-router.md
#   <notes>/cross-build.md -> docs/cross-build.md
#   <notes>/samples/iperf3-*.json -> tests/fixtures/iperf3/iperf3-*.json; other samples ->
#                                    tests/fixtures/
#   "../shared/<notes>/…" and "../../shared/<notes>/…" (fuzz/run-all.sh) likewise, relative to the
#   file's own directory; the bare "spec §N" references whose document is clear from N; and the
#   mention of the style notes in .ci/run, which a clone does not have either.
#
#   bench/repoint-spec-citations.sh           # rewrite in place, then run the check
#   bench/repoint-spec-citations.sh --check   # rewrite nothing: list what is left and check that
#                                             # every docs/protocols citation names an existing
#                                             # file and section
#   ROOT=/tmp/copy bench/repoint-spec-citations.sh   # work on another tree
#
# Idempotent: a second run changes nothing (no rewritten text matches a pattern again). Only
# text files under the folders below are touched, never target/ or .git/, nor this script. The
# folder name is kept in a variable so that this file itself never matches the check's grep.
set -euo pipefail
export LC_ALL=C.UTF-8
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT"
S=spec
SELF=bench/repoint-spec-citations.sh
PLACES=(src tests bench .ci docs README.md fuzz aqm openwrt)
existing=()
for p in "${PLACES[@]}"; do [ -e "$p" ] && existing+=("$p"); done

# The sed program, in order: the sibling-folder prefixes first, then the samples, then the
# documents, then the bare references.
SED=(
  -e "s#\\.\\./\\.\\./shared/${S}/#../${S}/#g"
  -e "s#\\.\\./shared/${S}/#${S}/#g"
  -e "s#, from ${S}/samples/)#, iperf3 3.12's own -J output)#g"
  -e "s#\\b${S}/samples/iperf3-#tests/fixtures/iperf3/iperf3-#g"
  -e "s#\\b${S}/samples/openssl-speed-sample\\.txt#tests/fixtures/openssl/#g"
  -e "s#\\b${S}/samples/#tests/fixtures/#g"
  -e "s#\\b${S}/iperf3\\.md#docs/protocols/iperf3.md#g"
  -e "s#\\b${S}/latency\\.md#docs/protocols/latency.md#g"
  -e "s#\\b${S}/crypto\\.md#docs/protocols/openssl-speed.md#g"
  -e "s#\\b${S}/monitor-aqm\\.md#docs/protocols/router-signals.md#g"
  -e "s#\\b${S}/netns-lab\\.reference\\.sh#docs/protocols/netns-lab.md#g"
  -e "s#\\b${S}/netns-lab\\.md#docs/protocols/netns-lab.md#g"
  -e "s#\\b${S}/vm-router\\.md#docs/protocols/vm-router.md#g"
  -e "s#\\b${S}/cross-build\\.md#docs/cross-build.md#g"
  -e "s#\\b${S} §A#docs/protocols/router-signals.md §A#g"
  -e "s#(${S} §0)#(docs/protocols/router-signals.md §0)#g"
  -e "s#\\b${S} §16#docs/protocols/iperf3.md §16#g"
  -e "s#\\b${S} §7\\.3#docs/protocols/iperf3.md §7.3#g"
  -e "s#\\b${S} §2\\.3#docs/protocols/latency.md §2.3#g"
  -e "s#row (${S} §1\\.3)#row (docs/protocols/openssl-speed.md §1.3)#g"
  -e "s#The ${S}'s awk row of this sample (§1\\.3)#The wiki awk's row of this sample (docs/protocols/openssl-speed.md §1.3)#g"
  -e "s# (STYLE\\.md's habits)##g"
)

# Text files that mention any of the patterns (grep -I skips binaries such as the PNGs in docs/).
candidates() {
  grep -rlIZ --exclude-dir=target --exclude-dir=.git \
    -e "${S}/" -e "${S} §" -e "STYLE\\.md" "${existing[@]}" 2>/dev/null || true
}

rewrite() {
  local n=0 f before
  while IFS= read -r -d '' f; do
    [ "$f" = "$SELF" ] && continue
    before=$(cksum <"$f")
    sed -i "${SED[@]}" "$f"
    if [ "$(cksum <"$f")" != "$before" ]; then
      n=$((n + 1))
      echo "rewrote $f"
    fi
  done < <(candidates)
  echo "$n file(s) changed"
}

# Does doc $1 have section $2 (a heading "## 5.", "### 5.4 …", "## A8.", "# Part A", or for
# netns-lab's gotchas a numbered item)?
has_section() {
  local doc=$1 sec=$2
  case "$sec" in
    part\ [AB]) grep -qE "^# Part ${sec#part }\b" "$doc" ;;
    gotcha\ *) grep -qE "^${sec#gotcha }\. " "$doc" ;;
    *) grep -qE "^#+ ${sec//./\\.}([. ]|$)" "$doc" ;;
  esac
}

check() {
  local bad=0 line file doc rest sec
  echo "== references to the old folder or the style notes still in the tree (expected: none)"
  if grep -rnI --exclude-dir=target --exclude-dir=.git -e "${S}/" -e "STYLE\\.md" \
      "${existing[@]}" | grep -v "^${SELF}:"; then
    bad=1
  fi
  echo "== citations of docs/protocols/*.md, docs/cross-build.md and tests/fixtures/: files and sections"
  # A citation: the document, then the sections right after it ("§5.4, §7.2", "§A11–§A13",
  # "§A8.7 B4", "B4", "part A", "gotcha 9").
  local tok='(§[AB]?[0-9]+(\.[0-9]+)?|B[0-9]+)'
  local cite="docs/(protocols/[a-z0-9-]+|cross-build)\\.md([^A-Za-z§)]*(${tok}|part [AB]|gotcha [0-9]+)([^A-Za-z§)]*${tok})*)?"
  while IFS= read -r line; do
    file=${line%%:*}
    rest=${line#*:}
    doc=$(grep -oE '^docs/(protocols/[a-z0-9-]+|cross-build)\.md' <<<"$rest")
    [ -f "$doc" ] || { echo "MISSING FILE $doc (cited in $file)"; bad=1; continue; }
    rest=${rest#"$doc"}
    while IFS= read -r sec; do
      [ -n "$sec" ] || continue
      sec=${sec#§}
      if ! has_section "$doc" "$sec"; then
        echo "MISSING SECTION $doc $sec (cited in $file)"
        bad=1
      fi
    done < <(grep -oE "${tok}|part [AB]|gotcha [0-9]+" <<<"$rest" || true)
  done < <(grep -rnoIE --exclude-dir=target --exclude-dir=.git "$cite" "${existing[@]}" \
      | grep -v "^${SELF}:" | grep -v '^docs/protocols/' | sed -E 's/^([^:]*):[0-9]+:/\1:/')
  while IFS= read -r path; do
    # shellcheck disable=SC2086
    compgen -G "$path" >/dev/null || { echo "MISSING FIXTURE $path"; bad=1; }
  done < <(grep -rHoIE --exclude-dir=target --exclude-dir=.git \
      'tests/fixtures/[A-Za-z0-9_./*-]*[A-Za-z0-9_*/]' "${existing[@]}" \
      | grep -v "^${SELF}:" | sed 's/^[^:]*://' | sort -u)
  if [ "$bad" = 0 ]; then echo "ok: every citation names an existing file and section"; fi
  return "$bad"
}

case "${1:-}" in
  --check) check ;;
  "") rewrite; check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
