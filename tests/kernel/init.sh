#!/bin/busybox sh
# tests/kernel/init.sh - /init of the test kernel's initramfs (busybox):
# mount the host's root read-only over 9p, give it /proc, /sys, /dev,
# tracefs (at /mnt) and a fresh /tmp, run the guest script named on the
# kernel command line (ringlog.script, default guest-test.sh) in it, stop.
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
	# Not at /sys/kernel/tracing: ringlogd must find it through /proc/mounts
	mount -t tracefs nodev /host/mnt
	mount -t tmpfs tmp /host/tmp
	echo "RINGLOG-GUEST-START"
	chroot /host /bin/sh "$src/tests/kernel/${script:-guest-test.sh}" "$build" /mnt 2>&1
else
	echo "FAIL cannot mount the host's root over 9p"
	echo "RESULT fail"
fi
echo "RINGLOG-GUEST-END"
# No ACPI in this kernel: a reboot is how it stops (qemu -no-reboot exits).
reboot -f
