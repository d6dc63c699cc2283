#!/usr/bin/env bash
# scripts/win-build.sh - cross-build the Windows programs into build-win/
# with mingw-w64: libuv and jansson from scripts/win-deps.sh (Debian source
# packages, cached), then ringlog.exe (read) and the Windows unit tests
# (build-win/tests/win/test-win.exe). tests/test-windows.c runs them under
# Wine. Installs gcc-mingw-w64-x86-64, dpkg-dev and wine when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages $RINGLOG_WIN_PACKAGES
prefix=$(scripts/win-deps.sh | tail -1)
step "build: Windows (mingw-w64, build-win/)"
cmake -S . -B build-win --no-warn-unused-cli -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake \
	-DRINGLOG_WIN_DEPS="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
	die "cmake failed for build-win"
cmake --build build-win -j "$(nproc)" -- --no-print-directory 2>&1 |
	grep -vE '^\[ *[0-9]+%\]' | grep -v '^$' || true
[ -f build-win/client/ringlog.exe ] && [ -f build-win/client/ringlog.dll ] &&
	[ -f build-win/tests/win/test-win.exe ] && [ -f build-win/tests/win/emit-win.exe ] &&
	[ -f build-win/daemon/ringlogd.exe ] ||
	die "the Windows build failed (above)"
ls -l build-win/daemon/ringlogd.exe build-win/client/ringlog.exe build-win/client/ringlog.dll build-win/client/ringlog.lib build-win/tests/win/test-win.exe | awk '{ print "  " $NF ": " $5 " bytes" }'
