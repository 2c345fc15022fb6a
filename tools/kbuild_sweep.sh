#!/bin/sh
# Coverage of real kernel headers by the compiler front-end: runs
#   cachelayout show include/linux/H.h --struct S --kbuild KBUILD
# for every `struct S {` at the start of a line of the source tree's
# include/linux/*.h, and counts the successes and the kinds of failure.
#
# usage: tools/kbuild_sweep.sh KBUILD SRCTREE OUTDIR [JOBS] [BINARY]
#   KBUILD   a configured tree (e.g. /usr/src/linux-headers-6.1.0-57-amd64)
#   SRCTREE  its sources (e.g. /usr/src/linux-headers-6.1.0-57-common)
#   OUTDIR   results.tsv (header, struct, exit status, first error line,
#            first note line) and summary.txt; OUTDIR/cache is the probe cache
#   JOBS     headers run in parallel (default 2)
#   BINARY   default: target/release/cachelayout of this checkout
# environment:
#   HEADERS=FILE  only the headers listed in FILE (one a line, as
#                 include/linux/x.h): e.g. `cut -f1 OLD/results.tsv | sort -u`
#                 to compare two sweeps on the same headers
#
# Headers run in a fixed pseudo-random order (by checksum of the name), all
# structs of one header in a row (its probe is compiled once, then read from
# the cache); results are appended as they come, so a sweep stopped early is
# a sample, and run again it resumes. Run it under `nice` on a shared
# machine: a first sweep compiles every header (an hour on two busy cores).
set -eu
[ $# -ge 3 ] || { sed -n 2,24p "$0" >&2; exit 2; }
kbuild=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)
jobs=${4:-2}
bin=${5:-$(cd "$(dirname "$0")/.." && pwd)/target/release/cachelayout}
[ -x "$bin" ] || { echo "no binary $bin: cargo build --release" >&2; exit 2; }
touch "$out/results.tsv"

# The headers, in checksum order, less those already done.
todo="$out/todo.txt"
(cd "$src" && for h in include/linux/*.h; do
	printf '%s %s\n' "$(printf '%s' "$h" | cksum | cut -d' ' -f1)" "$h"
done) | sort -n | cut -d' ' -f2 >"$todo.all"
if [ -n "${HEADERS:-}" ]; then
	grep -Fxf "$HEADERS" "$todo.all" >"$todo.sel" || true
	mv "$todo.sel" "$todo.all"
fi
cut -f1 "$out/results.tsv" | sort -u >"$out/done.txt"
grep -vFxf "$out/done.txt" "$todo.all" >"$todo" || true

# One header: every `struct S {` at a line start, one line of results each.
one='h=$1
for s in $(sed -n "s/^struct \([A-Za-z0-9_][A-Za-z0-9_]*\)[ 	]*{.*/\1/p" "$h"); do
	err=$("$BIN" show "$h" --struct "$s" --kbuild "$KBUILD" --format json 2>&1 >/dev/null) && rc=0 || rc=$?
	first=$(printf "%s\n" "$err" | grep -v "^note: " | head -n 1 | tr "\t" " ")
	note=$(printf "%s\n" "$err" | grep "^note: " | head -n 1 | tr "\t" " ")
	printf "%s\t%s\t%s\t%s\t%s\n" "$h" "$s" "$rc" "$first" "$note" >>"$RESULTS"
done'
export BIN="$bin" KBUILD="$kbuild" XDG_CACHE_HOME="$out/cache" RESULTS="$out/results.tsv"
start=$(date +%s)
(cd "$src" && xargs -d '\n' -n 1 -P "$jobs" sh -c "$one" sh <"$todo")
end=$(date +%s)

# Exit 0 and 1 (a hard conflict in the declared layout) lay the struct out.
keep="$out/keep.txt"
cp "$todo.all" "$keep"
awk -F '\t' -v secs=$((end - start)) '
function kind(m) {
	if (m ~ /unknown type name/) return "unknown type name"
	if (m ~ /incomplete type|storage size .* isn.t known|undefined type/) return "incomplete type"
	if (m ~ /leaves out/) return "#if the configuration leaves out"
	if (m ~ /no struct or union named/) return "not in the probe"
	if (m ~ /inconsistent/) return "inconsistent layout"
	if (m ~ /#error/) return "#error"
	if (m ~ /undeclared/) return "undeclared name"
	if (m ~ /compiler .* failed/) return "other compiler error"
	return "other"
}
FNR == NR { keep[$0] = 1; next }
!($1 in keep) { next }
{ total++; headers[$1] = 1
  if ($3 == 0 || $3 == 1) { ok++; if ($5 != "") prelude++ }
  else { k = kind($4); n[k]++ }
}
END {
	for (h in headers) nh++
	printf "%d of %d struct definitions lay out (%.1f%%), %d headers, %d s this run\n", ok, total, total ? 100 * ok / total : 0, nh, secs
	printf "  %5d  of them after a prelude\n", prelude
	for (k in n) printf "  %5d  %s\n", n[k], k
}' "$keep" "$out/results.tsv" | tee "$out/summary.txt"
