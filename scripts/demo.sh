#!/usr/bin/env bash
# scripts/demo.sh - build ringlog and run the main job: ringlogd on built-in
# defaults in a local directory, a demo program emitting, a live
# `ringlog tail`, `ringlog status`, then a clean stop.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

ensure_packages $RINGLOG_BUILD_PACKAGES
step "build: Release"
configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF || exit 1

B=build-release
DIR=$(pwd)/demo-run
rm -rf "$DIR" && mkdir -p "$DIR"
export RINGLOG_SOCKET=$DIR/ringlog.sock

step "start: ringlogd --storage $DIR/store --socket $RINGLOG_SOCKET"
$B/daemon/ringlogd --storage "$DIR/store" --socket "$RINGLOG_SOCKET" 2> "$DIR/ringlogd.log" &
DAEMON=$!
for _ in $(seq 50); do [ -S "$RINGLOG_SOCKET" ] && break; sleep 0.1; done
[ -S "$RINGLOG_SOCKET" ] || { cat "$DIR/ringlogd.log"; exit 1; }

step "live: ringlog tail (for 3 s) while ringlog-demo emits 20 requests"
timeout -s INT 3 $B/client/ringlog tail &
TAIL=$!
sleep 0.3
$B/client/ringlog-demo 20 100
$B/client/ringlog emit Acme.Script Done --level info files:u32=3 note="from a shell script"
wait $TAIL

step "status: ringlog status"
$B/client/ringlog status

step "stop: SIGTERM drains every ring and seals the segment"
kill -TERM $DAEMON
wait $DAEMON
echo "ringlogd exited with $?; its log:"
cat "$DIR/ringlogd.log"

step "offline: ringlog read --dir $DIR/store | tail -3"
$B/client/ringlog read --dir "$DIR/store" | tail -3
