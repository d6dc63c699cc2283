# tests/kernel/guest-lib.sh - sourced by the guest scripts: one line per
# check, "ok ..." or "FAIL ...", and the "RESULT ..." line run.sh looks for.
fails=0
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # DESCRIPTION COMMAND...
	d=$1; shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}
result() {
	if [ $fails -eq 0 ]; then echo "RESULT pass"; else echo "RESULT fail"; fi
}
