#!/usr/bin/env bash
# scripts/bench-ship.sh - shipping to a NATS JetStream cluster: a 3-node
# cluster on loopback with a 3-replica stream (nats-server, started here
# with its own directories), one ringlogd shipping to it.
#   catch-up   events stored while the cluster was down, then shipped from
#              disk: shipping's own rate (events/s, MB/s of chunks and
#              MB/s sent: ship.compress, zstd:1 by default;
#              RINGLOG_BENCH_COMPRESS=none for the chunks as they are)
#   sustained  the cluster up, one thread emitting at 250, 500, 1000, 2000, 4000
#              events/ms: the best rate from the first emit to the last
#              acknowledgement with nothing lost or left unshipped
#   delay      emit -> `ringlog tail --nats` (p50/p99 of 90 % of the events
#              a paced job emits), ship.live with
#              ship.interval 200 ms, 2,000 events/s
# Run by scripts/bench.sh --ship (or at the end of a full run); alone:
#   scripts/bench-ship.sh [BUILD_DIR] [--quick]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

build=${1:-build-release}
quick=0
[ "${2:-}" = --quick ] && quick=1
server=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$server" ] || { echo "(no nats-server: apt-get install nats-server for the shipping rows)"; exit 0; }
# A configured build directory keeps its settings (a developer's with
# tests): only the programs used here are built in it.
if [ -f "$build/CMakeCache.txt" ]; then
	cmake --build "$build" -j "$(nproc)" --target ringlogd ringlog_cli job-ringlog ship-latency \
		>/dev/null || die "build failed in $build"
else
	configure_and_build "$build" -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
fi
ldd "$build/daemon/ringlogd" | grep libnats >/dev/null ||
	{ echo "($build has no libnats: apt-get install libnats-dev for the shipping rows)"; exit 0; }

events=4000000
[ $quick -eq 1 ] && events=1000000
# ship.compress: the default, or RINGLOG_BENCH_COMPRESS=none to compare
compress=${RINGLOG_BENCH_COMPRESS:-zstd:1}
dir=$(mktemp -d -p "${TMPDIR:-/tmp}" ringlog-ship-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
urls=""
for i in 0 1 2; do
	urls+="${urls:+,}nats://127.0.0.1:$((base + i))"
done
start_node() {
	local i=$1 routes=""
	for k in 0 1 2; do
		[ "$k" = "$i" ] || routes+="${routes:+, }nats-route://127.0.0.1:$((base + 10 + k))"
	done
	cat >"$dir/n$i.conf" <<-EOF
		server_name: n$i
		listen: 127.0.0.1:$((base + i))
		max_payload: 8MB
		jetstream { store_dir: "$dir/js$i" }
		cluster { name: bench, listen: 127.0.0.1:$((base + 10 + i)), routes: [ $routes ] }
	EOF
	"$server" -c "$dir/n$i.conf" >"$dir/n$i.log" 2>&1 &
	pids+=($!)
}
# "field": N from ringlog status --json
status_num() {
	RINGLOG_SOCKET="$dir/sock" "$build/client/ringlog" status --json 2>/dev/null |
		tr ',' '\n' | sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" | head -1
}
now() { date +%s.%N; }
json_servers=$(echo "$urls" | sed 's/,/", "/g')
cat >"$dir/ringlogd.json" <<-EOF
	{ "max_disk": "8G", "min_free": "1%", "flush_interval": "200ms",
	  "forward": { "user_events": false, "etw": false },
	  "ship": { "servers": ["$json_servers"], "stream": "BENCH", "host": "bench",
	            "create_stream": true, "replicas": 3, "live": true, "interval": "200ms",
	            "max_backlog": "4G", "max_pending": 256, "compress": "$compress" } }
EOF
"$build/daemon/ringlogd" --config "$dir/ringlogd.json" --storage "$dir/store" --socket "$dir/sock" \
	--foreground >"$dir/ringlogd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.05; done
job="$build/bench/job-ringlog"
export RINGLOG_SOCKET="$dir/sock"
# 64 MiB rings, as bench-emit's: three JetStream servers replicating share
# the two cores with ringlogd, whose drain a 1 MiB ring does not outlast
export RINGLOG_RING_SIZE=64M

# 1. catch-up: store with the cluster down, then start it
step "bench: shipping catch-up from disk, $events events, 3 nodes x 3 replicas"
"$job" 2 $((events / 2)) 0 0 0 1 >/dev/null
stored=$(status_num stored_events)
for i in 0 1 2; do start_node $i; done
t0="" e0=0
for _ in $(seq 1200); do
	acked=$(status_num shipped_events)
	if [ -z "$t0" ] && [ "${acked:-0}" -gt 0 ]; then
		t0=$(now) e0=$acked b0=$(status_num shipped_bytes) r0=$(status_num shipped_chunk_bytes)
	fi
	[ "${acked:-0}" -ge "$stored" ] && break
	sleep 0.1
done
t1=$(now)
bytes=$(status_num shipped_bytes)
raw=$(status_num shipped_chunk_bytes)
# events/s, MB/s of chunks, MB/s sent (compressed)
catchup=$(awk -v e="$stored" -v e0="$e0" -v b="$bytes" -v b0="${b0:-0}" -v r="$raw" -v r0="${r0:-0}" \
	-v t0="$t0" -v t1="$t1" 'BEGIN { d = t1 - t0; if (d <= 0) d = 1e-9
	printf "%.0f %.1f %.1f", (e - e0) / d, (r - r0) / d / 1e6, (b - b0) / d / 1e6 }')
read -r cu_rate cu_raw cu_sent <<<"$catchup"

# 2. sustained: the cluster up, one thread emitting at a pace, up a
# ladder; the best pace with nothing lost in the daemon and nothing left
# unshipped, from the first emit to the last acknowledgement
lost_total() {
	RINGLOG_SOCKET="$dir/sock" "$build/client/ringlog" status --json | tr ',' '\n' |
		sed -n 's/.*"total": *\([0-9]*\).*/\1/p' | head -1
}
sustained="-" sustained_pace="-" sustained_mbs="-"
paces="250 500 1000 2000 4000"
[ $quick -eq 1 ] && paces="250 500"
for pace in $paces; do
	step "bench: shipping sustained, $events events at $pace events/ms"
	before=$(status_num shipped_events)
	sb0=$(status_num shipped_bytes) sr0=$(status_num shipped_chunk_bytes)
	lost0=$(lost_total)
	t0=$(now)
	"$job" 1 "$events" "$pace" 0 0 1 >/dev/null
	lost1=$(lost_total)
	# everything stored is shipped: the Start event of the job included
	target=$((before + events + 1 - (lost1 - lost0)))
	for _ in $(seq 1200); do
		[ "$(status_num shipped_events)" -ge "$target" ] && break
		sleep 0.05
	done
	t1=$(now)
	rate=$(awk -v e="$((events - (lost1 - lost0)))" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "%.0f", e / (t1 - t0) }')
	# MB/s of chunks; MB/s sent, over the same time
	mbs=$(awk -v r="$(status_num shipped_chunk_bytes)" -v r0="$sr0" -v b="$(status_num shipped_bytes)" \
		-v b0="$sb0" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "%.1f; %.1f", (r - r0) / (t1 - t0) / 1e6, (b - b0) / (t1 - t0) / 1e6 }')
	echo "  $pace events/ms: $rate events/s stored and shipped, $((lost1 - lost0)) lost in the daemon"
	if [ "$((lost1 - lost0))" -eq 0 ] && [ "$(status_num shipped_events)" -ge "$target" ] &&
		{ [ "$sustained" = - ] || [ "$rate" -gt "$sustained" ]; }; then
		sustained=$rate sustained_pace=$pace sustained_mbs=$mbs
	fi
done
notshipped=$(status_num not_shipped)

# 3. delay emit -> tail --nats
step "bench: delay from emit to ringlog tail --nats (ship.live, interval 200 ms)"
n=20000
[ $quick -eq 1 ] && n=6000
sleep 2 # the replicas settle after the ladder
mkfifo "$dir/tail.fifo"
"$build/client/ringlog" tail -n 0 --nats "$urls" --stream BENCH --json >"$dir/tail.fifo" &
tailpid=$!
pids+=($tailpid)
"$build/bench/ship-latency" "$((n * 9 / 10))" <"$dir/tail.fifo" >"$dir/delay.txt" &
latpid=$!
sleep 1
"$job" 1 "$n" 2 0 0 1 >/dev/null
for _ in $(seq 300); do [ -s "$dir/delay.txt" ] && break; sleep 0.1; done
kill "$tailpid" 2>/dev/null
wait "$latpid" 2>/dev/null
delay=$(cat "$dir/delay.txt")

echo
{
	echo "## Shipping to NATS JetStream (3 nodes, 3 replicas, loopback)"
	echo
	echo "| figure | measured |"
	echo "|---|---:|"
	echo "| catch-up from disk (events/s) | $cu_rate |"
	echo "| catch-up from disk (MB/s of chunks; MB/s sent as $compress) | $cu_raw; $cu_sent |"
	echo "| sustained with zero loss, emit to last ack (events/s; 1 thread at $sustained_pace events/ms) | $sustained |"
	echo "| the same: MB/s of chunks; MB/s sent as $compress | $sustained_mbs |"
	echo "| not shipped (all runs) | ${notshipped:-?} |"
	echo "| emit -> tail --nats at 2,000 events/s | $delay |"
} | tee "${out:-$dir}/ship.md"
