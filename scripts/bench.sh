#!/usr/bin/env bash
# scripts/bench.sh - build in Release and print the benchmark tables.
#   scripts/bench.sh          full run (3 runs of 20M records)
#   scripts/bench.sh --quick  a few seconds, for development
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

records=20000000
emit_args=(--runs 3)
case "${1:-}" in
	--quick) records=2000000; emit_args=(--quick --runs 1) ;;
	"") ;;
	*) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac
ensure_packages $RINGLOG_BUILD_PACKAGES
step "build: Release"
configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
step "bench: ring producer"
echo
./build-release/bench/bench-ring --records "$records" --runs 3
echo
step "bench: end to end (libringlog -> ringlogd -> segments, tail)"
echo
./build-release/bench/bench-emit build-release/daemon/ringlogd build-release/client/ringlog "${emit_args[@]}"
