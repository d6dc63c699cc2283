#!/usr/bin/env bash
# scripts/bench.sh - build in Release and print the benchmark tables: the
# ring alone, then the whole path through ringlog and, side by side, the
# same workload through LTTng-UST 2.13 (installed when run as root).
#   scripts/bench.sh           full run (3 runs of each figure, ~20 minutes)
#   scripts/bench.sh --quick   one short run of each, for development
#   scripts/bench.sh --ship    only shipping to a 3-node NATS JetStream
#                              cluster (scripts/bench-ship.sh, ~1 minute)
#   scripts/bench.sh --docs    full run, then docs/PERFORMANCE.md and its
#                              plot are rewritten with the results
#   scripts/bench.sh --scale   only the scale rows (1 to 1,000 writers; idle
#                              rings), ~1 minute
#   scripts/bench.sh --export  only `ringlog export`: a store of 10.5 M events
#                              (RINGLOG_BENCH_EXPORT_EVENTS) exported to CTF
#                              and to Perfetto; events/s, bytes per event and
#                              max RSS, on half the store and on all of it
#                              (flat memory: the two RSS agree)
#   scripts/bench.sh --flight [--quick]
#                              only the flight recorder's rows (issue 26):
#                              ringlog_trigger(), a 256 MiB snapshot, the
#                              daemon's CPU per flight-only event
# Results also go to bench-results/: table.md and emit-latency.png (gnuplot),
# export.md, scale.md, flight.md.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

records=20000000
emit_args=(--runs 3)
docs=0
flight_only=0
if [ "${1:-}" = --flight ]; then
	flight_only=1
	shift
fi
only=
export_only=0
case "${1:-}" in
	--quick) records=2000000; emit_args=(--quick --runs 1) ;;
	--docs) docs=1 ;;
	--ship)
		ensure_packages $RINGLOG_BUILD_PACKAGES
		ensure_optional_packages nats-server libnats-dev libzstd-dev
		configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
		out=bench-results
		mkdir -p "$out"
		out=$out exec scripts/bench-ship.sh build-release "${2:-}" ;;
	--scale) only=scale ;;
	--export) export_only=1 ;;
	"") ;;
	*) echo "usage: scripts/bench.sh [--quick | --docs | --scale | --export | --flight [--quick] | --ship [--quick]]" >&2; exit 2 ;;
esac
ensure_packages $RINGLOG_BUILD_PACKAGES
# LTTng-UST is the end-to-end comparison's: not needed for --flight
[ "$flight_only" = 1 ] || ensure_optional_packages $RINGLOG_BENCH_PACKAGES
step "build: Release"
configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
out=bench-results
flight_args=()
[ "$records" = 2000000 ] && flight_args=(--quick)
if [ "$flight_only" = 1 ]; then
	mkdir -p "$out"
	step "bench: the flight recorder"
	echo
	./build-release/bench/bench-flight build-release/daemon/ringlogd build-release/client/ringlog \
		"${flight_args[@]}" | tee "$out/flight.md"
	exit "${PIPESTATUS[0]}"
fi

# `ringlog export` to CTF and to Perfetto: ringlogd stores at least N
# standard events (bench/job.h: three u64 and a 15-character string) from 2
# threads, in rounds until it holds N (a loaded machine loses some), then
# each format exports half of the segments, then all of them. Memory must
# not grow with the store: the max RSS of the two runs agree.
bench_export() {
	local n=${RINGLOG_BENCH_EXPORT_EVENTS:-10500000} dir bin=build-release stored=0 round
	dir=$(mktemp -d -p "${TMPDIR:-/tmp}" ringlog-bench-export.XXXXXX)
	printf '{ "max_disk": "16G", "min_free": "1G" }\n' > "$dir/ringlogd.json"
	for round in 1 2 3 4; do
		"$bin/daemon/ringlogd" --config "$dir/ringlogd.json" --storage "$dir/store" \
			--socket "$dir/sock" 2>>"$dir/ringlogd.log" &
		local dpid=$!
		for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.05; done
		# 2 threads x 800 events/ms: about what ringlogd stores here
		# without loss when the machine is shared
		RINGLOG_SOCKET="$dir/sock" "$bin/bench/job-ringlog" 2 $(( (n - stored) / 2 + 1000 )) 800 \
			0 0 1 >/dev/null || echo "job-ringlog failed" >&2
		kill -TERM "$dpid" && wait "$dpid"
		stored=$(RINGLOG_SOCKET="$dir/none" "$bin/client/ringlog" status --dir "$dir/store" 2>/dev/null |
			sed -n 's/^store holds *\([0-9]*\) events stored.*/\1/p')
		stored=${stored:-0}
		[ "$stored" -ge "$n" ] && break
	done
	local segs half
	mapfile -t segs < <(ls "$dir"/store/*.rlseg)
	half=$(( (${#segs[@]} + 1) / 2 ))
	{
		echo "## Export (\`ringlog export\`, $(nproc) CPUs, the store on $(df --output=fstype "$dir" | tail -1))"
		echo
		echo "| format | segments | events | wall s | CPU s | M events/s (wall) | M events/s (CPU) | bytes/event | max RSS (MiB) |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
		local fmt part files res ev by el us sy rss lost
		for fmt in ctf perfetto; do
			for part in half all; do
				if [ $part = half ]; then files=("${segs[@]:0:$half}"); else files=("${segs[@]}"); fi
				rm -rf "$dir/out"
				res=$( { /usr/bin/time -f "TIME %e %U %S %M" "$bin/client/ringlog" export \
					--format "$fmt" --output "$dir/out" "${files[@]}" >/dev/null; } 2>&1 )
				ev=$(sed -n 's/^ringlog export: \([0-9]*\) events.*/\1/p' <<<"$res")
				lost=$(sed -n 's/.* events, \([0-9]*\) lost events.*/\1/p' <<<"$res")
				by=$(sed -n 's/.* \([0-9]*\) bytes to .*/\1/p' <<<"$res")
				read -r el us sy rss < <(sed -n 's/^TIME //p' <<<"$res")
				# CPU: user + system, what the machine's other load does
				# not stretch (wall time does, on a shared machine)
				awk -v f="$fmt" -v s="${#files[@]}" -v e="$ev" -v b="$by" -v t="$el" \
					-v c="$(awk -v u="$us" -v y="$sy" 'BEGIN { print u + y }')" -v r="$rss" \
					'BEGIN { printf "| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n",
						f, s, e, t, c, e / t / 1e6, e / c / 1e6, b / e, r / 1024 }'
			done
		done
		echo
		echo "Lost while the store was written (the daemon's counts, exported too): $lost."
	} | tee "$out/export.md"
	rm -rf "$dir"
}

if [ $export_only -eq 1 ]; then
	mkdir -p "$out"
	step "bench: ringlog export (CTF, Perfetto)"
	echo
	bench_export
	exit 0
fi
rm -rf "$out" && mkdir -p "$out"

# Scale: the same total rate from 1 to 1,000 writers, and idle rings.
scale() {
	step "bench: scale, 1 to 1,000 writers (ringlog)"
	echo
	# 10 s a case: the daemon's CPU is read in 10 ms ticks, and one
	# writer's steady state (~25 ns an event at 1 M/s) was 9 ticks in 5 s
	./build-release/bench/bench-scale build-release/daemon/ringlogd build-release/client/ringlog \
		$([ "${emit_args[0]}" = --quick ] && echo --quick || echo --seconds 10) --out "$out"
	echo
	# each figure over its 1-writer value, against the number of writers
	[ -s "$out/scale.dat" ] && command -v gnuplot >/dev/null && gnuplot <<-GP 2>/dev/null &&
		set terminal pngcairo size 900,560 noenhanced
		set output '$out/scale.png'
		set title 'Scale: each figure over its 1-writer value, 1 M events/s in all'
		set xlabel 'writer threads'
		set ylabel 'x the 1-writer figure (log scale)'
		set logscale xy
		set xrange [0.7:1500]
		set key top left
		set grid
		first(col) = (\$1 == 1 ? (b = column(col), 1) : column(col) / b)
		plot '$out/scale.dat' using 1:(first(3)) with linespoints lw 2 title 'daemon CPU per event, whole run', \
		     '' using 1:(first(4)) with linespoints lw 2 title 'daemon CPU per event, steady state', \
		     '' using 1:(first(5)) with linespoints lw 2 title 'emit p99', \
		     '' using 1:(first(7)) with linespoints lw 2 title 'emit p99 after a burst''s first call', \
		     '' using 1:(first(6)) with linespoints lw 2 title 'emit -> tail p99', \
		     '' using 1:(first(8)) with linespoints lw 2 title 'emit -> tail p99, steady state', \
		     2 with lines dt 2 lc rgb 'gray' title 'goal (<= 2)'
	GP
		echo "plot: $out/scale.png"
}
if [ "$only" = scale ]; then
	scale
	exit 0
fi

step "bench: ring producer"
echo
./build-release/bench/bench-ring --records "$records" --runs 5 | tee "$out/ring.md"
echo
step "bench: end to end, ringlog and LTTng-UST (this machine, same workload)"
echo
./build-release/bench/bench-emit build-release/daemon/ringlogd build-release/client/ringlog \
	"${emit_args[@]}" --out "$out"

step "bench: the flight recorder"
echo
./build-release/bench/bench-flight build-release/daemon/ringlogd build-release/client/ringlog \
	"${flight_args[@]}" | tee "$out/flight.md"
echo

scale

# What the disk alone costs in CPU on this machine: the kernel's time to
# write 2 GiB with O_DIRECT in 16 MiB requests, with no daemon and no
# checksums, per 64 bytes (one stored standard event). The daemon's CPU per
# event includes this, so it bounds from below what any collector that
# writes its events to this disk can reach.
step "bench: ringlog export (CTF, Perfetto)"
echo
bench_export
echo

step "bench: the disk's floor (kernel CPU to write the bytes; no collector)"
floor=$(mktemp -p "${TMPDIR:-/tmp}" ringlog-floor.XXXXXX)
TIMEFORMAT="%S %R"
t=$( { time dd if=/dev/zero of="$floor" bs=16M count=128 oflag=direct 2>/dev/null; } 2>&1 ) ||
	t=$( { time dd if=/dev/zero of="$floor" bs=16M count=128 2>/dev/null; } 2>&1 )
rm -f "$floor"
# Its bandwidth, for scale: a sustained rate needs rate x bytes per event
# (above) of it. This VM's disk absorbs half-second bursts faster than dd's
# 2 GiB stream, so it is not a hard ceiling on the ladder's rates.
echo
{
	echo "## The disk's floor"
	echo
	echo "| figure | measured |"
	echo "|---|---:|"
	awk -v t="$t" 'BEGIN { split(t, x, " ");
		printf "| kernel CPU to write 64 bytes, O_DIRECT, 16 MiB requests (dd, 2 GiB) (ns) | %.2f |\n", x[1] * 1e9 / (2^31 / 64);
		printf "| the same for 35 bytes, the 48-byte event as stored (packed) (ns) | %.2f |\n", x[1] * 1e9 / (2^31 / 35);
		printf "| disk write bandwidth, same dd (GB/s) | %.2f |\n", 2^31 / x[2] / 1e9 }'
} | tee "$out/floor.md"
echo

if command -v gnuplot >/dev/null; then
	plots=()
	for c in ringlog LTTng-UST; do
		# x: the percentile as 1/(1-p), so that 90, 99, 99.9 ... are
		# evenly spaced and the tail is as wide as the median
		[ -s "$out/latency-$c.dat" ] &&
			plots+=("'$out/latency-$c.dat' using (1/(1.00001-\$1/100)):2 with lines lw 2 title '$c'")
	done
	gnuplot <<-GP 2>/dev/null && echo && echo "plot: $out/emit-latency.png"
		set terminal pngcairo size 900,560 noenhanced
		set output '$out/emit-latency.png'
		set title 'Emit cost per call by percentile, 1 thread, 10 M events/s (batches of 64, TSC)'
		set xlabel 'percentile'
		set ylabel 'ns per call (log scale)'
		set logscale xy
		set xrange [1:100000]
		set xtics ('0' 1, '90' 10, '99' 100, '99.9' 1000, '99.99' 10000, 'max' 100000)
		set key top left
		set grid
		plot $(IFS=,; echo "${plots[*]}")
	GP
	# Collector CPU per stored event against the paced rate: every
	# lossless step of the 48-byte event's ladders, every run
	plots=()
	for c in ringlog LTTng-UST; do
		for t in 1 2; do
			[ -s "$out/ladder-$c.dat" ] &&
				plots+=("'$out/ladder-$c.dat' using 2:((\$1 == $t && \$4 == 0) ? \$3 : 1/0) with points pt $([ $t = 1 ] && echo 7 || echo 5) ps 0.8 title '$c, $t thread$([ $t = 2 ] && echo s)'")
		done
	done
	[ ${#plots[@]} -gt 0 ] && gnuplot <<-GP 2>/dev/null && echo "plot: $out/collector-cpu.png"
		set terminal pngcairo size 900,560 noenhanced
		set output '$out/collector-cpu.png'
		set title 'Collector CPU per stored event against the paced rate (48-byte event, lossless steps of every run)'
		set xlabel 'paced rate (M events/s in all)'
		set ylabel 'collector CPU per stored event (ns, log scale)'
		set logscale y
		set yrange [4:128]
		set ytics (4, 8, 16, 32, 64, 128)
		set key top right
		set grid
		plot $(IFS=,; echo "${plots[*]}"), 8 with lines dt 2 lc rgb 'gray' title 'goal at the lossless rate, 1 thread (<= 8)'
	GP
else
	echo "(no gnuplot: apt-get install gnuplot-nox for the plots)"
fi

# Shipping to a 3-node NATS JetStream cluster (skips without nats-server).
out=$out scripts/bench-ship.sh build-release $([ "${emit_args[0]}" = --quick ] && echo --quick)

if [ $docs -eq 1 ]; then
	{
		echo "# Performance"
		echo
		echo "Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs of \"$(grep -m1 'model name' /proc/cpuinfo |
			cut -d: -f2 | sed 's/^ //')\", Linux $(uname -r), with \`scripts/bench.sh --docs\`."
		echo "Reproduce with \`scripts/bench.sh\` (about 20 minutes on 2 CPUs; \`--quick\` for a short run)."
		echo
		sed 's/^## /### /' "$out/ring.md"
		echo
		sed 's/^## /### /' "$out/table.md"
		echo
		sed 's/^## /### /' "$out/floor.md"
		echo
		sed 's/^## /### /' "$out/scale.md"
		echo
		sed 's/^## /### /' "$out/export.md"
		echo
		sed 's/^## /### /' "$out/flight.md"
		echo
		[ -s "$out/ship.md" ] && sed 's/^## /### /' "$out/ship.md" && echo
		echo "![emit cost distributions](emit-latency.png)"
		echo
		echo "![collector CPU against the paced rate](collector-cpu.png)"
		echo
		echo "![scale rows against the number of writers](scale.png)"
	} > docs/PERFORMANCE.md
	for png in emit-latency collector-cpu scale; do
		cp "$out/$png.png" "docs/$png.png" 2>/dev/null
	done
	echo "docs/PERFORMANCE.md rewritten"
fi
