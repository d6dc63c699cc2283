#!/bin/sh
# tests/kernel/guest-slow-disk.sh BUILD_DIR - runs inside the test kernel
# (see init.sh): ringlogd's store is ext2 on a device-mapper "delay" target
# over a loop device, so every write to it takes DELAY_MS longer. Checks:
#  1. `tail -n` still shows events that were only in the daemon's memory
#     (its open chunk) when the tail started: the daemon seals that chunk
#     and answers once the slow write has completed.
#  2. A program emitting faster than the slow disk takes never blocks; the
#     daemon's own memory stays bounded (its chunk pool, not a growing
#     queue) and its fds bounded (rotated segments waiting for their sync
#     round, at most 64) and flat once the round is done; what could not
#     be stored is counted, so
#     stored + counted lost == emitted; status answers throughout; SIGTERM
#     completes the slow writes and exits 0.
# One line per check: "ok ..." or "FAIL ..."; the last is "RESULT ...".
B=$1
T=${TMPDIR:?init.sh gives the guest a scratch TMPDIR}/rl
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
DELAY_MS=300
. "$(dirname "$0")/guest-lib.sh"
field() { # FILE KEY: the number after "KEY:" in a /proc status file
	awk -v k="$2:" '$1 == k { print $2 }' "$1"
}
end() {
	result
	exit 0
}
mkdir -p $T/store
export DM_DISABLE_UDEV=1 # no udev here: dmsetup makes its own nodes

# The slow disk: 256 MiB of tmpfs, ext2 made before the delay goes on top.
dd if=/dev/zero of=$T/disk.img bs=1M count=0 seek=256 2>/dev/null
loop=$(losetup -f --show $T/disk.img) || { fail "losetup"; end; }
mke2fs -q -F -t ext2 "$loop" || { fail "mke2fs on $loop"; end; }
sectors=$(blockdev --getsz "$loop")
dmsetup create slow --table "0 $sectors delay $loop 0 $DELAY_MS" || { fail "dmsetup create"; end; }
dmsetup mknodes slow 2>/dev/null
mount -t ext2 /dev/mapper/slow $T/store || { fail "mount the delayed disk"; end; }
t0=$(date +%s%N)
dd if=/dev/zero of=$T/store/probe bs=4k count=1 oflag=direct 2>/dev/null
t1=$(date +%s%N)
rm -f $T/store/probe
echo "  one 4 KiB O_DIRECT write to the store: $(((t1 - t0) / 1000000)) ms (delay target: $DELAY_MS ms)"
check "the store's writes are slow (>= $DELAY_MS ms)" test $(((t1 - t0) / 1000000)) -ge $DELAY_MS

daemon() { # NAME CONFIG-JSON: start ringlogd on $T/store/NAME
	echo "$2" > $T/$1.json
	$B/daemon/ringlogd --config $T/$1.json --storage $T/store/$1 --socket $T/$1.sock \
		> $T/$1.log 2>&1 &
	dpid=$!
	i=0
	while [ ! -S $T/$1.sock ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	export RINGLOG_SOCKET=$T/$1.sock
}

# 1. tail -n: a program that stays alive emits 30 events; they are drained
#    into the open chunk, which nothing seals (the flush timer is an hour
#    away, the ring is far from a quarter full). A tail then asks for the
#    last 5, which it reads from disk.
daemon backlog '{ "flush_interval": "1h" }'
mkfifo $T/in
$B/tests/test-fwd-client < $T/in > $T/fwd.out 2>&1 &
cpid=$!
exec 3> $T/in
echo "emit 30" >&3
i=0
while ! grep -q emitted $T/fwd.out && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5 # drained
$B/client/ringlog tail -n 5 --provider Test.Fwd > $T/tail.out 2>&1 &
tpid=$!
# The live event only once the tail is attached (30 s at most: a fixed
# 2 s was a race in this slow guest), then until it is printed (30 s).
i=0
while ! $B/client/ringlog status --json 2>/dev/null | grep -Eq '"tails": *[1-9]' &&
	[ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
echo "emit 1" >&3 # and one live event after the backlog
i=0
while [ "$(grep -c ' seq=' $T/tail.out)" -lt 6 ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -INT $tpid
wait $tpid
got=$(sed -n 's/.* seq=\([0-9]*\).*/\1/p' $T/tail.out | tr '\n' ' ')
check "tail -n 5 with every write delayed printed the last 5, then the live one ($got)" \
	test "$got" = "25 26 27 28 29 0 "
echo quit >&3
exec 3>&-
wait $cpid
kill -TERM $dpid
wait $dpid
check "ringlogd (backlog) exited 0" test $? -eq 0

# 2. Faster than the disk.
daemon flood '{ "flush_interval": "100ms", "max_segment_size": "1M", "max_disk": "64M", "min_free": "0" }'
sleep 0.5
rss0=$(field /proc/$dpid/status RssAnon)
fds0=$(ls /proc/$dpid/fd | wc -l)
$B/tests/test-emitter 1 0 --pause-us 20 > $T/emitter.out 2>&1 &
epid=$!
rss_max=$rss0
status_fail=0
for s in $(seq 1 16); do
	sleep 0.5
	r=$(field /proc/$dpid/status RssAnon)
	[ "$r" -gt "$rss_max" ] && rss_max=$r
	if [ $((s % 4)) -eq 0 ]; then
		timeout 10 $B/client/ringlog status > /dev/null 2>&1 || status_fail=$((status_fail + 1))
	fi
done
kill -USR1 $epid
wait $epid
check "the emitter exited 0" test $? -eq 0
sleep 1
rss1=$(field /proc/$dpid/status RssAnon)
[ "$rss1" -gt "$rss_max" ] && rss_max=$rss1
# Rotated segments keep their descriptor until their sync round (at most
# one per sync_interval, 5 s by default; ringlogd(8) Durability): wait for
# it, then nothing more may be open than at the start and the current one.
fds_peak=$(ls /proc/$dpid/fd | wc -l)
for i in $(seq 1 40); do
	fds1=$(ls /proc/$dpid/fd | wc -l)
	[ "$fds1" -gt "$fds_peak" ] && fds_peak=$fds1
	[ "$fds1" -le $((fds0 + 1)) ] && break
	sleep 0.5
done
$B/client/ringlog status --json > $T/status.json 2>&1
t0=$(date +%s%N)
kill -TERM $dpid
wait $dpid
rc=$?
t1=$(date +%s%N)
check "ringlogd (flood) exited 0 after completing its writes ($(((t1 - t0) / 1000000)) ms)" test $rc -eq 0
check "status answered every time while writes were slow" test $status_fail -eq 0

emitted=$(sed -n 's/.* emitted \([0-9]*\) .*/\1/p' $T/emitter.out)
blocked=$(sed -n 's/.* blocked \([0-9]*\).*/\1/p' $T/emitter.out)
maxemit=$(sed -n 's/.* max_emit_ns \([0-9]*\) .*/\1/p' $T/emitter.out)
$B/client/ringlog read --json --dir $T/store/flood > $T/read.json 2> $T/read.err
stored=$(grep -c '"event":"Tick"' $T/read.json)
# Loss objects: {"type":"loss",...,"lost":N,"reason":"...",...} (ringlog(1)).
lost=$(sed -n 's/^{"type":"loss".*"lost":\([0-9]*\),.*/\1/p' $T/read.json | awk '{ s += $1 } END { print s + 0 }')
reasons=$(sed -n 's/^{"type":"loss".*"reason":"\([^"]*\)".*/\1/p' $T/read.json | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "  emitted $emitted, stored $stored, counted lost $lost ($reasons)"
echo "  longest emit $maxemit ns, waits inside emits: $blocked"
echo "  daemon RssAnon: $rss0 kB at start, at most $rss_max kB, $rss1 kB at the end; fds $fds0 -> $fds1 (at most $fds_peak before the sync round)"
check "stored + counted lost == emitted ($stored + $lost vs $emitted)" test $((stored + lost)) -eq "${emitted:-0}"
check "the slow disk made the program lose events, and they were counted" test "$lost" -gt 0
check "the program never waited inside an emit ($blocked)" test "${blocked:-1}" -eq 0
# The chunk pool and the write queue are fixed; 24 MiB of headroom covers
# malloc arenas and metadata, and nothing grows with what was lost.
check "daemon memory bounded: RssAnon grew by $((rss_max - rss0)) kB (<= 24 MiB)" \
	test $((rss_max - rss0)) -le 24576
# At the start no segment was open yet; at the end the current one is.
check "daemon fds bounded before the sync round ($fds_peak <= $fds0 + 1 + 64)" \
	test "$fds_peak" -le $((fds0 + 65))
check "daemon fds flat after the sync round ($fds0 -> $fds1, the current segment included)" test "$fds1" -le $((fds0 + 1))
check "the store reads back without damage" test ! -s $T/read.err
sed 's/^/  daemon: /' $T/flood.log | grep -v "^  daemon: $" | tail -8
umount $T/store
dmsetup remove slow
losetup -d "$loop"
end
