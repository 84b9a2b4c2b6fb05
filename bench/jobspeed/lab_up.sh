#!/usr/bin/env bash
# bench/jobspeed/lab_up.sh NETFILE ROUTING [OSM_CONF_LINE...]
# One lab fabric for run.py: ibsim on NETFILE, this tree's topod, one OpenSM
# run (engine ROUTING) whose osmtopo plugin feeds topod (tests/lab/lab.sh,
# lab_bring_up). Prints "ready port=PORT dir=LAB_DIR" once topod serves the
# snapshot, then holds the lab until its stdin closes: run.py keeps the pipe
# open while it measures, and whatever way run.py ends (exit, exception,
# kill), the EOF or lab.sh's watchdog tears everything down by PID.
# LAB_UP_TOPOD_ARGS: more topod options (split on spaces).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lab/lab.sh
export LAB_QUIET=1
net=$1 routing=$2
shift 2
lab_init || { echo "fail lab_init"; exit 1; }
read -r -a LAB_BRING_UP_TOPOD_ARGS <<<"${LAB_UP_TOPOD_ARGS:-}"
if ! lab_bring_up "$net" "$routing" "$@" >"$LAB_DIR/bring_up.err" 2>&1; then
	echo "fail bring-up: $(tail -c 400 "$LAB_DIR/bring_up.err" | tr '\n' ' ')"
	exit 1
fi
# A silent fallback (ftree -> minhop) would measure another engine's routes.
if ! why=$(lab_osm_check_engine "$routing" 2>&1); then
	echo "fail engine: $(echo "$why" | tr '\n' ' ')"
	exit 1
fi
echo "ready port=$LAB_TOPOD_PORT dir=$LAB_DIR"
# Until run.py closes our stdin (or dies). The builtin read, not cat: a
# TERM then reaches lab.sh's trap at once instead of after a child exits.
while IFS= read -r _; do :; done
exit 0
