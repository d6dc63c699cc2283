#!/usr/bin/env bash
# scripts/bench.sh - build in Release and print the benchmark tables.
#   scripts/bench.sh          full run (3 runs of 20M records)
#   scripts/bench.sh --quick  a few seconds, for development
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

records=20000000
case "${1:-}" in
	--quick) records=2000000 ;;
	"") ;;
	*) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac
ensure_packages $RINGLOG_BUILD_PACKAGES
step "build: Release"
configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGLOG_BUILD_TESTS=OFF
step "bench: ring producer"
echo
./build-release/bench/bench-ring --records "$records" --runs 3
