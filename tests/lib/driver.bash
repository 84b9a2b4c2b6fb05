# driver.bash - for tests that run one of bench/'s Python drivers (run.py,
# sizes.py, pickrun.py...) in the background on a lab of their own: source
# it after cd to the repository. It checks SMPI and the build, makes the
# results folder $R (gone at exit), and on exit, TERM or INT ends the one
# driver running (DRIVER_PID; it ends its smpirun and its lab itself).
# tap.bash's ok/nok/check and $failed come with it.
# shellcheck source=tests/lib/tap.bash
. "$(dirname "${BASH_SOURCE[0]}")/tap.bash"

# driver_init NAME: the checks and $R (NAME.XXXXXX); exits on a missing tool.
driver_init() {
	local tool
	for tool in smpicc smpirun; do
		command -v $tool >/dev/null || { nok "$tool missing (make deps installs libsimgrid-dev)"; exit 1; }
	done
	[ -x build/bin/topod ] && [ -x build/bin/topoquery ] || { nok "build/bin/topod, topoquery: run make first"; exit 1; }
	R=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	DRIVER_PID=
	trap driver_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
}

driver_cleanup() {
	if [ -n "$DRIVER_PID" ] && kill -0 "$DRIVER_PID" 2>/dev/null; then
		kill -TERM "$DRIVER_PID" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$DRIVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$DRIVER_PID" 2>/dev/null && kill -KILL "$DRIVER_PID" 2>/dev/null
	fi
	rm -rf "$R"
}

# driver TAG SCRIPT ARGS...: python3 SCRIPT in the background, its PID in
# DRIVER_PID, its output in $R/TAG.out and .err (one pair per run: no stale
# lines to match).
driver() {
	local tag=$1
	shift
	python3 "$@" >"$R/$tag.out" 2>"$R/$tag.err" </dev/null &
	DRIVER_PID=$!
}

# wait_driver SECS -> the driver's exit status, 124 if it is still running
wait_driver() {
	local i rc
	for ((i = 0; i < $1 * 10; i++)); do
		if ! kill -0 "$DRIVER_PID" 2>/dev/null; then
			wait "$DRIVER_PID"
			rc=$?
			DRIVER_PID=
			return $rc
		fi
		sleep 0.1
	done
	return 124
}

# labdir_of TAG: the lab folder the driver named in $R/TAG.err
labdir_of() { sed -n 's/.*(topod port [0-9]*, lab \([^)]*\)).*/\1/p' "$R/$1.err" | tail -1; }
