#!/bin/busybox sh
# tests/kernel/init.sh - /init of the test kernel's initramfs (busybox):
# mount the host's root read-only over 9p, give it /proc, /sys, /dev and a
# scratch tmpfs (TMPDIR, with tracefs in it), run the guest script named on
# the kernel command line (ringlog.script, default guest-test.sh) in it
# with the checkout (ringlog.src) and the build dir (ringlog.build), stop.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for a in $(cat /proc/cmdline); do
	case $a in
	ringlog.src=*) src=${a#ringlog.src=} ;;
	ringlog.build=*) build=${a#ringlog.build=} ;;
	ringlog.script=*) script=${a#ringlog.script=} ;;
	esac
done
mkdir -p /host
if mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot /host; then
	mount -t proc proc /host/proc
	mount -t sysfs sys /host/sys
	mount -t devtmpfs dev /host/dev
	# The scratch is a tmpfs over a directory the host's root has (it is
	# read-only here) that holds neither the checkout nor the build dir:
	# a tmpfs over /tmp hid a checkout in /tmp/x. run.sh gives their
	# physical paths, which are what a mount hides.
	scratch=
	for d in /run /tmp /var/tmp /media /srv /mnt /opt; do
		case "$src/" in "$d"/*) continue ;; esac
		case "$build/" in "$d"/*) continue ;; esac
		[ -d "/host$d" ] && [ ! -L "/host$d" ] || continue
		mount -t tmpfs scratch "/host$d" && mkdir "/host$d/ringlog-guest" || continue
		scratch=$d/ringlog-guest
		break
	done
	# Not at /sys/kernel/tracing: ringlogd must find it through /proc/mounts
	[ -n "$scratch" ] && mkdir "/host$scratch/tracefs" &&
		mount -t tracefs nodev "/host$scratch/tracefs"
	echo "RINGLOG-GUEST-START"
	if [ -z "$scratch" ]; then
		echo "FAIL no directory for the guest's scratch outside $src and $build"
		echo "RESULT fail"
	elif [ ! -r "/host$src/tests/kernel/${script:-guest-test.sh}" ] ||
		[ ! -x "/host$build/daemon/ringlogd" ]; then
		echo "FAIL the checkout $src or the build dir $build is not visible in the guest"
		echo "RESULT fail"
	else
		echo "scratch (TMPDIR) $scratch"
		TMPDIR=$scratch chroot /host /bin/sh "$src/tests/kernel/${script:-guest-test.sh}" \
			"$build" "$scratch/tracefs" 2>&1
	fi
else
	echo "FAIL cannot mount the host's root over 9p"
	echo "RESULT fail"
fi
echo "RINGLOG-GUEST-END"
# No ACPI in this kernel: a reboot is how it stops (qemu -no-reboot exits).
reboot -f
