#!/usr/bin/env bash
# tests/kernel/run.sh BUILD_DIR [SCRIPT] - a test on a real kernel: build
# (or take from the cache) the small kernel of build-kernel.sh, boot it
# under qemu (TCG, so no KVM needed) with a busybox initramfs and the host's
# root filesystem over virtio-9p, and run SCRIPT (in tests/kernel; default
# guest-test.sh, the user_events test; guest-slow-disk.sh; guest-paths.sh)
# inside.
# Exit 0: passed; 77: cannot run here (the reason is printed); else failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
# Physical paths: the guest's mounts (init.sh) must not hide them.
src=$(cd "$here/../.." && pwd -P)
build=$(cd "${1:?usage: run.sh BUILD_DIR [SCRIPT]}" && pwd -P)
script=${2:-guest-test.sh}
skip() { echo "SKIP: $*"; exit 77; }

[ -r "$here/$script" ] || { echo "FAIL: no $here/$script"; exit 1; }
for f in daemon/ringlogd client/ringlog tests/test-fwd-client tests/test-emitter; do
	[ -x "$build/$f" ] || { echo "FAIL: $build/$f is not built"; exit 1; }
done
if ! command -v qemu-system-x86_64 >/dev/null || [ ! -x /bin/busybox ] ||
	! /bin/busybox --list 2>/dev/null | grep -qx chroot; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-x86 \
			busybox-static >/dev/null 2>&1
	fi
fi
command -v qemu-system-x86_64 >/dev/null ||
	skip "qemu-system-x86_64 is missing (apt-get install qemu-system-x86, as root)"
file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
	skip "/bin/busybox is not the static one (apt-get install busybox-static, as root)"
case $src$build in *' '*) skip "paths with spaces cannot go on a kernel command line";; esac
if [ "$script" = guest-slow-disk.sh ]; then
	for t in losetup mke2fs dmsetup blockdev; do
		PATH=$PATH:/usr/sbin:/sbin command -v $t >/dev/null ||
			skip "$t is missing in the host's root, which the guest runs from (apt-get install dmsetup e2fsprogs util-linux, as root)"
	done
fi

kernel=$("$here/build-kernel.sh")
rc=$?
[ $rc -eq 0 ] || skip "no test kernel (see build-kernel's message above)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/bin" "$work/root/proc" "$work/root/sys" "$work/root/dev"
cp /bin/busybox "$work/root/bin/busybox"
cp "$here/init.sh" "$work/root/init"
chmod +x "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

timeout 600 qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -nographic -no-reboot \
	-kernel "$kernel" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet ringlog.src=$src ringlog.build=$build ringlog.script=$script" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	</dev/null >"$work/console.log" 2>&1
q=$?
# The guest's own lines, without the kernel's.
sed -n '/RINGLOG-GUEST-START/,/RINGLOG-GUEST-END/p' "$work/console.log" | tr -d '\r' |
	grep -v '^RINGLOG-GUEST' > "$work/guest.log"
cat "$work/guest.log"
if grep -qx 'RESULT pass' "$work/guest.log"; then
	exit 0
fi
echo "--- console (qemu exit $q), last 40 lines:"
tail -n 40 "$work/console.log" | tr -d '\r'
exit 1
