#!/usr/bin/env bash
# scripts/demo.sh - build ringlog and run the main job.
# Today the daemon (ringlogd) and the command (ringlog) are not written yet;
# until they land this runs what exists: the shared-memory ring between a
# producer thread and a draining consumer, and prints what it measured.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

ensure_packages $RINGLOG_BUILD_PACKAGES
step "build: Release"
configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
step "run: one producer thread writing 48-byte records into a ring, one consumer draining it"
echo "(ringlogd, ringlog tail and ringlog status join this demo when they exist)"
echo
./build-release/bench/bench-ring --records 4000000 --runs 1
