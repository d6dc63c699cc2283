#!/usr/bin/env bash
# scripts/ab-scale.sh - compare two ringlogd builds on one scale case, both
# at once, so that the host's placement and load are the same for both.
#
#   scripts/ab-scale.sh DAEMON_A DAEMON_B [WRITERS [SECONDS [ROUNDS]]]
#
# e.g. after copying the daemon of the commit before to /tmp/a/ringlogd:
#   scripts/ab-scale.sh /tmp/a/ringlogd build-release/daemon/ringlogd 1000 10 3
#
# Why: on a shared 2-vCPU VM the daemon's CPU per event with 1,000 writers
# moves by +-10 ns from one run to the next (where the host puts the vCPUs,
# what else it runs), more than most changes move it; runs one after the
# other cannot tell a 10 % change. Two bench-scale runs side by side, each
# with its own daemon, store and socket, see the same conditions; each
# round swaps which starts first. Both together are twice the load of one
# (2,000 writers for 1000), so the figures are higher than bench-scale's
# own and only the difference between A and B means anything.
#
# Prints, per round, each daemon's CPU per event over the whole run and in
# the steady state, the emit p99, the emit -> tail p50 / p99 and its p99 in
# the steady state (bench-scale's columns), and the drain's visits per writer
# burst.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if [ $# -lt 2 ]; then
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
a=$(realpath "$1") b=$(realpath "$2")
writers=${3:-1000} seconds=${4:-10} rounds=${5:-3}
scale=build-release/bench/bench-scale
cli=build-release/client/ringlog
for f in "$a" "$b" "$scale" "$cli"; do
	[ -x "$f" ] || { echo "ab-scale: $f: not an executable (build-release first: scripts/bench.sh --scale builds it)" >&2; exit 1; }
done
out=$(mktemp -d /tmp/ringlog-ab.XXXXXX) || exit 1
trap 'rm -rf "$out"' EXIT

row() { # file: the case's row and its drain row
	local r d
	r=$(grep -E "^\| $writers \(" "$1" | awk -F'|' '{printf "%s | %s | %s | %s | %s", $3, $5, $7, $11, $13}')
	d=$(grep -E "^\| $writers \|" "$1" | awk -F'|' '{print $6}')
	echo "$r | $d"
}

echo "| round | daemon | CPU/event whole (ns) | steady (ns) | emit p99 (ns) | tail p50 / p99 (ms) | tail p99, steady (ms) | visits a burst |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for i in $(seq "$rounds"); do
	if [ $((i % 2)) = 1 ]; then first=$a second=$b; else first=$b second=$a; fi
	"$scale" "$first" "$cli" --only "$writers" --seconds "$seconds" > "$out/1" 2>&1 &
	p1=$!
	"$scale" "$second" "$cli" --only "$writers" --seconds "$seconds" > "$out/2" 2>&1 &
	p2=$!
	wait "$p1" "$p2"
	for n in 1 2; do
		d=$first
		[ $n = 2 ] && d=$second
		name=A
		[ "$d" = "$b" ] && name=B
		echo "| $i | $name | $(row "$out/$n") |"
	done
done
echo
echo "A: $a"
echo "B: $b"
