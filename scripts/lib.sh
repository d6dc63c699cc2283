# scripts/lib.sh - sourced by the other scripts: messages and package checks.
# Every package the project needs is named here, once.

RINGLOG_BUILD_PACKAGES="gcc make cmake pkg-config libuv1-dev liburing-dev libjansson-dev"
# babeltrace2: test-export checks `ringlog export --format ctf` with it (skips without).
# nats-server, libnats-dev, libzstd-dev: test-ship runs a JetStream cluster
# (skips without the server; without the libraries ringlogd and ringlog build
# without shipping, whose messages are zstd-compressed);
# openssl makes its TLS certificates.
# protobuf-compiler: test-export-perfetto decodes `--format perfetto` with protoc.
RINGLOG_TEST_PACKAGES="libcriterion-dev g++ systemd procps zsh babeltrace2 nats-server libnats-dev libzstd-dev openssl protobuf-compiler"
# Optional: without them the kernel tests (user_events, slow disk) skip, saying why.
# Optional for scripts/bench.sh: the peer we compare with, and the plot.
# time: GNU time's max RSS for the export row (scripts/bench.sh --export).
RINGLOG_BENCH_PACKAGES="lttng-tools liblttng-ust-dev babeltrace2 gnuplot-nox time"
RINGLOG_FUZZ_PACKAGES="clang libclang-rt-14-dev"
# Optional: the Windows cross-build (scripts/win-build.sh) and Wine to run it.
RINGLOG_WIN_PACKAGES="gcc-mingw-w64-x86-64 dpkg-dev wine wine64"
# libelf-dev: the kernel builds objtool; libssl-dev: its host tools
RINGLOG_KERNEL_TEST_PACKAGES="qemu-system-x86 busybox-static linux-source-6.12 bc flex bison libelf-dev libssl-dev cpio xz-utils file dmsetup e2fsprogs"

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# missing_packages PKG...: those of PKG that are not installed, on one line.
missing_packages() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || printf '%s ' "$p"
	done
}

# ensure_packages PKG...: install what is missing when root; otherwise print
# the exact command to run and stop.
ensure_packages() {
	local missing
	read -ra missing <<<"$(missing_packages "$@")"
	((${#missing[@]})) || return 0
	if [ "$(id -u)" -ne 0 ]; then
		printf 'Missing Debian packages: %s\nRun as root:\n  apt-get update && apt-get install -y %s\n' \
			"${missing[*]}" "${missing[*]}" >&2
		exit 1
	fi
	step "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Try without a fresh index first (fast on a warm machine), then update.
	apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}"; } ||
		die "apt-get could not install: ${missing[*]}"
}

# ensure_optional_packages PKG...: install what is missing when root;
# otherwise say what the tests that need them will skip.
ensure_optional_packages() {
	local missing
	read -ra missing <<<"$(missing_packages "$@")"
	((${#missing[@]})) || return 0
	if [ "$(id -u)" -ne 0 ]; then
		printf 'Optional Debian packages missing (some tests will skip): %s\n' "${missing[*]}" >&2
		return 0
	fi
	step "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null &&
		  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } ||
		printf 'apt-get could not install %s: some tests will skip\n' "${missing[*]}" >&2
}

# configure_and_build DIR [cmake args...]
configure_and_build() {
	local dir=$1; shift
	cmake -S . -B "$dir" -DRINGLOG_WERROR=ON "$@" >/dev/null || die "cmake configure failed for $dir"
	local log rc
	log=$(cmake --build "$dir" -j "$(nproc)" -- --no-print-directory 2>&1)
	rc=$?
	printf '%s\n' "$log" | grep -vE '^\[ *[0-9]+%\]' | grep -v '^$' || true
	[ "$rc" -eq 0 ] || die "build failed in $dir (exit $rc)"
}
