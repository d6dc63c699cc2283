#!/bin/sh
# tests/kernel/guest-test.sh BUILD_DIR [TRACEFS] - runs inside the test
# kernel (chroot of the host's root over 9p, a fresh tmpfs at $TMPDIR,
# tracefs mounted at TRACEFS, not where ringlogd looks first):
# ringlogd forwards to user_events while a tracer enables and disables the
# tracepoints through tracefs. One line per check: "ok ..." or "FAIL ...";
# the last line is "RESULT pass" or "RESULT fail".
B=$1
tr=${2:-/sys/kernel/tracing} # where init.sh mounted tracefs
ue=$tr/events/user_events
T=${TMPDIR:?init.sh gives the guest a scratch TMPDIR}/rl
. "$(dirname "$0")/guest-lib.sh"
count() { grep -c "$1" $tr/trace; }

mkdir -p $T
[ -e $tr/user_events_data ] || { echo "FAIL no user_events_data in tracefs"; echo "RESULT fail"; exit 1; }
[ "$tr" = /sys/kernel/tracing ] ||
	check "tracefs only at $tr: ringlogd has to find it through /proc/mounts" \
		test ! -e /sys/kernel/tracing/user_events_data
echo 0 > $tr/tracing_on
echo > $tr/trace
echo 1 > $tr/tracing_on

$B/daemon/ringlogd --storage $T/store --socket $T/sock --verbose > $T/daemon.log 2>&1 &
dpid=$!
i=0
while [ ! -S $T/sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
export RINGLOG_SOCKET=$T/sock

mkfifo $T/in
$B/tests/test-fwd-client < $T/in > $T/out 2>&1 &
cpid=$!
exec 3> $T/in
say() { # COMMAND EXPECTED-PREFIX: send a line, wait for the reply
	n=$(wc -l < $T/out)
	echo "$1" >&3
	i=0
	while [ "$(wc -l < $T/out)" -le "$n" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	tail -n 1 $T/out
}
wait_count() { # PATTERN N: until the trace holds N lines with PATTERN (10 s)
	i=0
	while [ "$(count "$1")" -lt "$2" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}

# 1. Both tracepoints exist as soon as the program starts: Detail (level 5,
#    disabled) was never emitted, its provider's event section named it.
#    ringlogd registers them one after the other, in no set order (CI once
#    saw L5K2 before L4K1 and failed here): wait for both.
i=0
while { [ ! -d $ue/Test_Fwd_L4K1 ] || [ ! -d $ue/Test_Fwd_L5K2 ]; } && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "tracepoint Test_Fwd_L4K1 registered" test -d $ue/Test_Fwd_L4K1
check "tracepoint Test_Fwd_L5K2 registered before any Detail event" test -d $ue/Test_Fwd_L5K2
fmt=$(cat $ue/Test_Fwd_L4K1/format 2>/dev/null)
check "the command string declares the EventHeader fields" sh -c '
	for f in "u8 eventheader_flags" "u8 version" "u16 id" "u16 tag" "u8 opcode" "u8 level"; do
		echo "$1" | grep -q "field:$f;" || exit 1
	done' - "$fmt"
echo "$fmt" | grep "field:" | sed 's/^/  format: /'

# 2. No tracer: nothing is written, Detail is filtered at the source.
r=$(say "emit 10")
check "no tracer: Info enabled, Detail filtered in the program ($r)" test "$r" = "emitted 10 0"
sleep 1
check "no tracer: nothing in the trace" test "$(count Test_Fwd)" -eq 0

# 3. A tracer enables both: the daemon raises Detail in the program.
echo 1 > $ue/Test_Fwd_L4K1/enable
echo 1 > $ue/Test_Fwd_L5K2/enable
r=$(say "wait-detail 1")
check "enabling Test_Fwd_L5K2 raised Detail in the program ($r)" test "$r" = "detail 1"
r=$(say "emit 20")
check "traced: both events pass the check ($r)" test "$r" = "emitted 20 20"
wait_count "Test_Fwd_L4K1:" 20
wait_count "Test_Fwd_L5K2:" 20
sleep 0.5
check "20 Info events in the trace ($(count Test_Fwd_L4K1:))" test "$(count Test_Fwd_L4K1:)" -eq 20
check "20 Detail events in the trace ($(count Test_Fwd_L5K2:))" test "$(count Test_Fwd_L5K2:)" -eq 20
check "Info header: flags=7 (ptr64|LE|ext) version 0 id 0 tag 0 opcode 0 level 4" test \
	"$(grep 'Test_Fwd_L4K1:' $tr/trace | grep -c 'eventheader_flags=(7) version=(0) id=0x0 (0) tag=0x0 (0) opcode=(0) level=(4)')" -eq 20
check "Detail header: opcode 1 (start) level 5" test \
	"$(grep 'Test_Fwd_L5K2:' $tr/trace | grep -c 'eventheader_flags=(7) version=(0) id=0x0 (0) tag=0x0 (0) opcode=(1) level=(5)')" -eq 20
grep -m 2 Test_Fwd $tr/trace | sed 's/^/  trace: /'

# 3b. Another program's provider "Test_Fwd" reduces to the same tracepoint
#     names as "Test.Fwd" (eventheader.h): it is stored, but never written
#     into Test.Fwd's tracepoints, and status and the log name both.
$B/client/ringlog emit Test_Fwd Clash --level info --keyword 0x1 n:u32=7 > $T/emit.out 2>&1
rc=$?
check "ringlog emit Test_Fwd Clash exited 0 ($rc: $(head -c 200 $T/emit.out))" test $rc -eq 0
sleep 1
check "Test_Fwd's event kept out of Test.Fwd's tracepoint ($(count Test_Fwd_L4K1:) events, 20 wanted)" \
	test "$(count Test_Fwd_L4K1:)" -eq 20
st=$($B/client/ringlog status --json --socket $T/sock 2>&1 | tr -d '\n')
check "status --json: Test_Fwd refused, owner Test.Fwd" sh -c '
	echo "$1" | grep -q "\"refused\": *\[ *{ *\"provider\": *\"Test_Fwd\", *\"owner\": *\"Test.Fwd\", *\"target\": *\"tracepoints Test_Fwd_L\*K\*\" *} *\]"' - "$st"
hs=$($B/client/ringlog status --socket $T/sock 2>&1 | grep 'is not forwarded')
echo "  status: $hs"
check "ringlog status has a line naming both providers" sh -c '
	echo "$1" | grep -q "provider \"Test_Fwd\" is not forwarded: it would share tracepoints Test_Fwd_L\*K\* with provider \"Test.Fwd\""' - "$hs"
check "the log names both providers, once" test \
	"$(grep -c 'provider "Test_Fwd" is not forwarded: it would share tracepoints Test_Fwd_L\*K\* with provider "Test.Fwd"' $T/daemon.log)" -eq 1

# 4. The tracer goes away: nothing more is written, Detail drops back.
echo 0 > $ue/Test_Fwd_L4K1/enable
echo 0 > $ue/Test_Fwd_L5K2/enable
r=$(say "wait-detail 0")
check "disabling restored Detail's enablement ($r)" test "$r" = "detail 0"
r=$(say "emit 10")
check "after the tracer: Detail filtered again ($r)" test "$r" = "emitted 10 0"
sleep 1
check "after the tracer: the trace still holds 40 events" test "$(count Test_Fwd)" -eq 40

# 4b. The bytes the kernel received, from the ring buffer (this reads it
#     empty): each Detail event as Microsoft's eventheader_write() lays it
#     out: header (flags 07, opcode 1, level 5), then the activity-id
#     extension (size 16, kind 2 | chain 0x8000) and the id 1..16, then the
#     metadata extension (size 26, kind 1, unchained) and "Detail\0".
want=0700000000000105100002800102030405060708090a0b0c0d0e0f101a00010044657461696c00
timeout 3 cat $tr/per_cpu/cpu0/trace_pipe_raw > $T/raw 2>/dev/null
n=$(od -An -tx1 -v $T/raw | tr -d ' \n' | grep -o "$want" | wc -l)
check "20 Detail events in eventheader_write()'s extension order in the ring buffer ($n)" \
	test "$n" -eq 20

# 5. status counts what was forwarded; the store has every stored event.
st=$($B/client/ringlog status --json --socket $T/sock 2>&1)
fw=$(echo "$st" | tr -d '\n' | grep -o '"forwarding": *{[^}]*}')
echo "  $fw"
[ -n "$fw" ] || echo "  status said: $st" | head -c 600
check "status: user_events on, 2 tracepoints, 40 forwarded, none lost" sh -c '
	for k in "\"user_events\": *\"on\"" "\"targets\": *2" "\"forwarded\": *40" \
		"\"lost_disabled\": *0" "\"lost_tracer\": *0" "\"lost_other\": *0"; do
		echo "$1" | grep -q "$k" || exit 1
	done' - "$fw"
echo quit >&3
exec 3>&-
wait $cpid
kill -TERM $dpid
wait $dpid
check "ringlogd exited 0" test $? -eq 0
n=$($B/client/ringlog read --dir $T/store | grep -cF "Test.Fwd")
check "store: 40 Info + 20 Detail ($n)" test "$n" -eq 60
n=$($B/client/ringlog read --dir $T/store | grep -cF "Test_Fwd")
check "store: Test_Fwd's Clash, stored though not forwarded ($n)" test "$n" -eq 1
check "no tracepoint left behind" test ! -d $ue/Test_Fwd_L4K1
sed 's/^/  daemon: /' $T/daemon.log | grep -v "^  daemon: $" | tail -20

result
