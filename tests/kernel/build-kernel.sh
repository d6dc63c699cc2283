#!/usr/bin/env bash
# tests/kernel/build-kernel.sh - build the small kernel the user_events test
# boots, from Debian's linux-source-6.12: tinyconfig + config.fragment.
# Cached under $RINGLOG_KERNEL_CACHE (default ~/.cache/ringlog-kernel), keyed
# by the fragment and the source tarball, so a second run costs nothing.
# Prints the bzImage path on success; on failure prints why on stderr and
# exits 77 (the "skip" code the test understands).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/src/linux-source-6.12.tar.xz
cache=${RINGLOG_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringlog-kernel}

skip() { echo "build-kernel: $*" >&2; exit 77; }

# scripts/test.sh installs linux-source-6.12 and the build tools when root.
[ -r "$src" ] || skip "$src is missing (apt-get install linux-source-6.12, as root)"
for t in make gcc flex bison bc; do
	command -v $t >/dev/null || skip "$t is missing (needed to build the test kernel)"
done
[ -r /usr/include/libelf.h ] || skip "libelf.h is missing: the kernel's objtool needs it (apt-get install libelf-dev)"

key=$( (cat "$here/config.fragment"; stat -c '%s %Y' "$src") | sha256sum | cut -c1-16)
out=$cache/$key
if [ -s "$out/bzImage" ]; then
	echo "$out/bzImage"
	exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-kernel: building the test kernel in $work (about 7 minutes on 2 cores)" >&2
tar -xf "$src" -C "$work"
k=$(echo "$work"/linux-source-*)
make -C "$k" -s tinyconfig >&2
"$k/scripts/kconfig/merge_config.sh" -m -O "$k" "$k/.config" "$here/config.fragment" >/dev/null
make -C "$k" -s olddefconfig >&2
# every option of the fragment must have survived olddefconfig
while IFS= read -r line; do
	case $line in CONFIG_*=*) grep -qx "$line" "$k/.config" ||
		skip "the kernel config lost $line (a dependency is missing)";; esac
done <"$here/config.fragment"
make -C "$k" -s -j"$(nproc)" bzImage >&2 || skip "the kernel build failed"
mkdir -p "$out"
cp "$k/arch/x86/boot/bzImage" "$out/bzImage.tmp"
cp "$k/.config" "$out/config"
mv "$out/bzImage.tmp" "$out/bzImage"
echo "$out/bzImage"
