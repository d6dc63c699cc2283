#!/bin/sh
# tests/kernel/guest-paths.sh BUILD_DIR [TRACEFS] - runs inside the test
# kernel (see init.sh) from a copy of tests/kernel that test-kernel.c put
# under /tmp, with a build dir under /run: the guest's scratch (TMPDIR, a
# tmpfs) and tracefs must hide neither, wherever they are. A tmpfs over
# /tmp hid a checkout in /tmp/x ("cannot open .../guest-test.sh").
# One line per check: "ok ..." or "FAIL ..."; the last is "RESULT ...".
B=$1
tr=${2:-/sys/kernel/tracing}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/guest-lib.sh"

check "the checkout's tests/kernel ($here) is visible" test -r "$here/guest-lib.sh"
check "the build dir ($B) is visible" test -x "$B/daemon/ringlogd"
check "TMPDIR ($TMPDIR) is set and writable" sh -c '[ -n "$TMPDIR" ] && echo x > "$TMPDIR/probe"'
check "TMPDIR is outside the checkout and the build dir" sh -c '
	for p in "$1" "$2"; do
		case "$p/" in "${TMPDIR%/*}"/*) exit 1 ;; esac
	done' - "$here" "$B"
check "tracefs is mounted at $tr" test -e "$tr/user_events_data"
# The daemon from the build dir, with its socket and store in TMPDIR.
T=$TMPDIR/rl
mkdir -p $T
$B/daemon/ringlogd --storage $T/store --socket $T/sock > $T/daemon.log 2>&1 &
dpid=$!
i=0
while [ ! -S $T/sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "ringlogd from the build dir answers status on $T/sock" \
	env RINGLOG_SOCKET=$T/sock $B/client/ringlog status
kill -TERM $dpid
wait $dpid
check "ringlogd exited 0" test $? -eq 0
result
