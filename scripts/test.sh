#!/usr/bin/env bash
# scripts/test.sh - build and run the whole test suite, twice: a -Werror build
# and an AddressSanitizer + UndefinedBehaviorSanitizer build. Installs the
# Debian packages it needs when run as root. Ends with one summary line.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

ensure_packages $RINGLOG_BUILD_PACKAGES $RINGLOG_TEST_PACKAGES
ensure_optional_packages $RINGLOG_KERNEL_TEST_PACKAGES $RINGLOG_FUZZ_PACKAGES $RINGLOG_WIN_PACKAGES

passed=0 failed=0 skipped=0
run_suite() { # NAME DIR CMAKE_ARGS...
	local name=$1 dir=$2 out; shift 2
	step "build: $name"
	configure_and_build "$dir" "$@"
	step "test: $name"
	out=$(ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" \
		--output-log "$dir/ctest-output.log" 2>&1)
	printf '%s\n' "$out" | grep -vE '^(Test project|\s*$)'
	# Criterion hides skips from its summary: show each with its reason.
	# (LastTest.log has every test's output; --output-log only failures'.)
	local s
	s=$(grep -ah '\[SKIP\]' "$dir/Testing/Temporary/LastTest.log" |
		sed -E 's/^.*\[SKIP\] /  skipped: /' | sort -u)
	if [ -n "$s" ]; then
		printf '%s\n' "$s"
		skipped=$((skipped + $(printf '%s\n' "$s" | wc -l)))
	fi
	local line p f
	line=$(printf '%s\n' "$out" | grep -E 'tests passed, [0-9]+ tests failed out of' | tail -1)
	[ -n "$line" ] || die "ctest printed no summary for $name"
	f=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
	p=$(( $(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line") - f ))
	passed=$((passed + p)) failed=$((failed + f))
}

# The user_events test boots a kernel built from Debian's linux-source
# (cached): build it now, before the suites, so that its minutes of
# compiling do not run beside timing-sensitive tests.
step "test kernel for user_events (tests/kernel/build-kernel.sh)"
tests/kernel/build-kernel.sh || echo "(the user_events kernel test will skip)"

# The Windows programs, cross-built with mingw-w64 for tests/test-windows.c
# (run under Wine by the suites). With mingw installed a failed build fails
# the run; without it the Windows tests skip and say why.
rm -f build-win/client/ringlog.exe build-win/tests/win/test-win.exe build-win/daemon/ringlogd.exe
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
	if scripts/win-build.sh; then
		passed=$((passed + 1))
	else
		echo "  FAILED: the Windows cross-build"
		failed=$((failed + 1))
	fi
else
	step "build: Windows: skipped, gcc-mingw-w64-x86-64 is not installed"
fi

run_suite "release (-O2, -Werror)" build -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The memory soak (RINGLOG_SOAK_SECONDS, 600) needs time, not CPU: it runs
# in the background beside the sanitizer suite and the fuzzers.
soak_seconds=${RINGLOG_SOAK_SECONDS:-600}
step "memory soak: ${soak_seconds} s in the background (build/soak.log)"
RINGLOG_SOAK_SECONDS=$soak_seconds build/tests/test-soak --verbose >build/soak.log 2>&1 &
soak_pid=$!
run_suite "ASan + UBSan" build-asan -DCMAKE_BUILD_TYPE=Debug -DRINGLOG_SANITIZE=ON \
	-DRINGLOG_BUILD_BENCH=OFF

# Fuzzing: each libFuzzer target for RINGLOG_FUZZ_SECONDS (30) from its
# committed corpus (tests/fuzz/corpus/<target>, which it only reads), with
# ASan+UBSan. A crash or a hang fails; the input is kept under build-fuzz/.
fuzz_seconds=${RINGLOG_FUZZ_SECONDS:-30}
if command -v clang >/dev/null; then
	step "build: fuzz targets (clang, libFuzzer + ASan + UBSan)"
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DRINGLOG_FUZZ=ON -DRINGLOG_WERROR=ON \
		-DRINGLOG_BUILD_TESTS=OFF -DRINGLOG_BUILD_BENCH=OFF >/dev/null || die "cmake failed for build-fuzz"
	cmake --build build-fuzz -j "$(nproc)" --target fuzz-ring fuzz-segment fuzz-config \
		fuzz-eventheader fuzz-tracelogging fuzz-ctl fuzz-ship-codec -- --no-print-directory 2>&1 | grep -vE '^\[ *[0-9]+%\]' | grep -v '^$'
	step "fuzz: ${fuzz_seconds} s per target"
	for t in ring segment config eventheader tracelogging ctl ship-codec; do
		work=build-fuzz/run-$t
		rm -rf "$work" && mkdir -p "$work/corpus"
		( cd "$work" && ../tests/fuzz/fuzz-$t -max_total_time="$fuzz_seconds" -timeout=10 \
			-print_final_stats=1 corpus ../../tests/fuzz/corpus/$t ) >"$work/log" 2>&1
		rc=$?
		runs=$(grep -o 'number_of_executed_units: [0-9]*' "$work/log" | grep -o '[0-9]*$')
		if [ $rc -eq 0 ]; then
			printf '  fuzz-%-12s passed: %s executions, nothing found\n' "$t" "${runs:-?}"
			passed=$((passed + 1))
		else
			printf '  fuzz-%-12s FAILED (exit %d): see %s/log; the input is in %s/\n' \
				"$t" "$rc" "$work" "$work"
			grep -E 'ERROR|SUMMARY|deadly|timeout' "$work/log" | head -5
			failed=$((failed + 1))
		fi
	done
else
	echo "  skipped: fuzzing needs clang (apt-get install clang, as root)"
	skipped=$((skipped + 1))
fi

step "memory soak: waiting for it"
if wait $soak_pid; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "  FAILED:"
	grep -vE '^soak: +[0-9]+ s' build/soak.log | tail -20
fi
grep -E '^soak: [0-9.]+ s,' build/soak.log | sed 's/^/  /'

echo
echo "tests: $passed passed, $failed failed, $skipped test cases skipped (reasons above)"
[ "$failed" -eq 0 ]
