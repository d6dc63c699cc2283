#!/usr/bin/env bash
# scripts/win-deps.sh - libuv and jansson for the Windows build, cross-built
# with mingw-w64 from Debian's own source packages. Debian ships neither for
# mingw, and the project downloads nothing but Debian packages, so:
#
#   1. a private apt configuration (under the cache, never the system's)
#      with deb-src lines for the system's Debian mirror and suite;
#   2. apt-get source libuv1 jansson (the .dsc, checked against the
#      archive's signed index, and dpkg-source unpacks it);
#   3. each built with CMake and the mingw-w64 toolchain, as static
#      libraries, installed into a prefix.
#
# The prefix is cached under ${XDG_CACHE_HOME:-~/.cache}/ringlog-win/, keyed
# by the compiler and the source versions; a second run only prints it.
# Prints the prefix on its last line. Usage: scripts/win-deps.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

quiet=0
[ "${1:-}" = --quiet ] && quiet=1
say() { [ $quiet -eq 1 ] || step "$@"; }

command -v x86_64-w64-mingw32-gcc >/dev/null || die "x86_64-w64-mingw32-gcc not found: install gcc-mingw-w64-x86-64"
command -v dpkg-source >/dev/null || die "dpkg-source not found: install dpkg-dev"

cache=${XDG_CACHE_HOME:-$HOME/.cache}/ringlog-win
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/src"

# The system's Debian mirror and release, from its own deb822 or one-line
# sources; only deb-src lines are added, to our private list.
mirror=$(grep -hoE 'https?://[^ ]*/debian/?( |$)' /etc/apt/sources.list.d/*.sources \
	/etc/apt/sources.list 2>/dev/null | head -1 | tr -d ' ' || true)
mirror=${mirror:-http://deb.debian.org/debian}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
	"$mirror" "$suite" >"$apt_dir/sources.list"

apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
	-o "Dir::State::Status=/var/lib/dpkg/status" -o "Debug::NoLocking=1"
	-o "APT::Sandbox::User=$(id -un)")

# Versions decide the cache key; refresh the private index once a day.
if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*Sources*' -mtime -1 2>/dev/null)" ]; then
	say "win-deps: apt-get update (private deb-src index: $mirror $suite)"
	apt-get "${apt_opts[@]}" update -q >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update of the private deb-src index failed: see $apt_dir/update.log"
fi
version() {
	apt-cache "${apt_opts[@]}" showsrc "$1" 2>/dev/null | awk '/^Version:/ { print $2; exit }'
}
uv_v=$(version libuv1)
js_v=$(version jansson)
[ -n "$uv_v" ] && [ -n "$js_v" ] || die "no source package for libuv1 or jansson in $mirror $suite"
cc_v=$(x86_64-w64-mingw32-gcc -dumpfullversion)
key="mingw-$cc_v-libuv-$uv_v-jansson-$js_v"
prefix=$cache/$key
if [ -f "$prefix/.done" ]; then
	[ $quiet -eq 1 ] || printf 'win-deps: cached in %s\n' "$prefix"
	echo "$prefix"
	exit 0
fi

say "win-deps: apt-get source libuv1=$uv_v jansson=$js_v"
src=$apt_dir/src
rm -rf "$src" && mkdir -p "$src"
(cd "$src" && apt-get "${apt_opts[@]}" source -q "libuv1=$uv_v" "jansson=$js_v" >"$apt_dir/source.log" 2>&1) ||
	die "apt-get source failed: see $apt_dir/source.log"
uv_src=$(find "$src" -maxdepth 1 -type d -name 'libuv1-*' | head -1)
js_src=$(find "$src" -maxdepth 1 -type d -name 'jansson-*' | head -1)
[ -d "$uv_src" ] && [ -d "$js_src" ] || die "unpacked sources not found under $src"

toolchain=$PWD/cmake/mingw-w64.cmake
build() { # name srcdir cmake-args...
	local name=$1 dir=$2
	shift 2
	say "win-deps: building $name for Windows (x86_64-w64-mingw32)"
	cmake -S "$dir" -B "$src/build-$name" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
		-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix.tmp" "$@" \
		>"$src/$name.log" 2>&1 &&
		cmake --build "$src/build-$name" -j "$(nproc)" >>"$src/$name.log" 2>&1 &&
		cmake --install "$src/build-$name" >>"$src/$name.log" 2>&1 ||
		die "building $name failed: see $src/$name.log"
}
rm -rf "$prefix.tmp"
build libuv "$uv_src" -DLIBUV_BUILD_TESTS=OFF -DLIBUV_BUILD_BENCH=OFF -DBUILD_TESTING=OFF
build jansson "$js_src" -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF \
	-DJANSSON_WITHOUT_TESTS=ON -DJANSSON_BUILD_SHARED_LIBS=OFF
touch "$prefix.tmp/.done"
rm -rf "$prefix" && mv "$prefix.tmp" "$prefix"
[ $quiet -eq 1 ] || printf 'win-deps: built into %s\n' "$prefix"
echo "$prefix"
