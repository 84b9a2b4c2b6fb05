#!/usr/bin/env bash
# real_fault.sh - a real fault, end to end (docs/performance.md "A real fault
# through OpenSM"): ibsim simulates a
# 3-level fat tree, OpenSM (ftree) routes it with the osmtopo plugin
# delivering to topod (with a state directory, so every OK is journalled
# and fsynced first), and a leaf uplink is taken down and brought back
# through ibsim's console REROUTES times.  Unlike bench_delta's synthetic
# 0.5 % of whole blocks, the delta is what OpenSM really rewrote.
#
#   bash bench/real_fault.sh [K] [REROUTES]      (defaults 24, 4; needs make)
#
# Prints one line per generation (a routing pass, or the plugin's copy at
# SUBNET UP that follows one when port states changed): the plugin's side
# (which pass, lock held in all, longest slice and its CPU time, encode,
# bytes sent), topod's side (LFT blocks the delta carries, delta applied,
# route index, hierarchy ("kept": its clusters proven unchanged and kept),
# journal entry, and their sum: what topod spends before OK) and the wall
# time from the plugin's log line (snapshot encoded, handed to its sender)
# to topod's publication (its "serving" line, logged once persisted, less
# the persist time).
# With REAL_FAULT_KEEP=DIR the full snapshot of every pass (the plugin's
# spool) is kept as DIR/pass.N.snap, for `bench_delta --files` to time the
# index update in process (CPU time, repeated) on the real fault.
# REAL_FAULT_TOPOD_ARGS: more topod options (e.g. "--warm-interval 0");
# REAL_FAULT_PLUGIN_OPTS: more event_plugin_options (e.g. "delta=0").
# REAL_FAULT_PERF=FILE: perf records every CPU (wall-clock timestamps) from
# the first fault's command until it settles, to see what competes with
# topod between the plugin's line and its publication:
#   perf report -i FILE --sort comm --time START,END   (epoch seconds)
# K=32 needs ~3 GB and minutes per pass; K=56 see bench/lock_hold.sh.
set -u
cd "$(dirname "$0")/.." || exit 1
K=${1:-24}
N=${2:-4}
for tool in ibsim opensm python3; do
	command -v "$tool" >/dev/null || { echo "skip - $tool not installed"; exit 0; }
done
[ -x build/bin/topod ] && [ -f build/lib/libosmtopo.so ] || { echo "build first (make)"; exit 1; }
export LAB_QUIET=1 LAB_OSM_TIMEOUT=1200 LAB_IBSIM_TIMEOUT=600
# shellcheck source=tests/lab/lab.sh
. tests/lab/lab.sh
lab_init || exit 1
D=$LAB_DIR
lab_fabgen fattree --k "$K" --levels 3 || { echo "fabgen failed"; exit 1; }
lab_start_ibsim "$D/f.net" || { echo "ibsim did not load k=$K"; exit 1; }
# shellcheck disable=SC2086 # options, split on purpose
lab_start_topod ${REAL_FAULT_TOPOD_ARGS:-} || exit 1
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$D/spool"
KEEP=${REAL_FAULT_KEEP:-}
keep() { # N: the spool's snapshot of the pass topod just served
	[ -n "$KEEP" ] || return 0
	mkdir -p "$KEEP" && sleep 1 && cp "$D/spool/fabric.snap" "$KEEP/pass.$1.snap"
}
t0=$(date +%s)
LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $D/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$D/ingest.sock spool=$D/spool ${REAL_FAULT_PLUGIN_OPTS:-}" || { echo "OpenSM did not come up"; exit 1; }
# The waits below neither fork nor exec: tail -F and grep follow each log
# once (tail ends with this script), the few lines they pass are counted
# with bash's mapfile, and a nap is a read with a timeout on a FIFO. A
# grep of OpenSM's log and a sleep every 0.1 s took a fifth to half of
# the core topod had in a k=56 fault's window (perf: bash, grep and sleep
# beside OpenSM's sweep), which no subnet manager's host has.
follow() { # FILE PATTERN OUT
	tail --pid=$$ -n +1 -F "$1" 2>/dev/null | grep --line-buffered -F "$2" >"$3" &
}
lines() { # FILE VAR: the number of lines of FILE into VAR
	local -a l=()
	[ -f "$1" ] && mapfile -t l <"$1"
	printf -v "$2" %d "${#l[@]}"
}
mkfifo "$D/nap" && exec {nap_fd}<>"$D/nap" || exit 1
nap() { read -r -t "$1" -u "$nap_fd" _ || :; }
follow "$D/topod.log" 'serving generation' "$D/served.lines"
follow "$LAB_OSM_LOG" 'osmtopo: generation' "$D/gens.lines"
served() { lines "$D/served.lines" n_served; }
plugin_gens() { lines "$D/gens.lines" n_gens; }
wait_served() { # COUNT TIMEOUT_S: until topod has served more than COUNT generations
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		served
		((n_served > $1)) && return 0
		nap 0.1
	done
	return 1
}
wait_served 0 1200 || { echo "topod served nothing (see $D/topod.log)"; exit 1; }
echo "# k=$K: first generation served $(( $(date +%s) - t0 )) s after OpenSM started"
# A command's routing pass is followed by the plugin's subnet-up copy when
# port states change (the first pass's too: ports are Init when routing
# ends), each a generation: wait until the plugin has been quiet for
# QUIET seconds and topod has served all it sent, so that the next
# command's passes are not counted as this one's.
settle() { # TIMEOUT_S
	local i last=-1 still=0
	for ((i = 0; i < $1; i++)); do
		plugin_gens
		served
		if ((n_gens == last && n_served >= n_gens)); then
			((++still >= ${QUIET:-20})) && return 0
		else
			still=0
		fi
		last=$n_gens
		nap 1
	done
	return 1
}
settle 1200 || echo "# the first passes did not settle"
keep 0
read -r leaf port _ < <(lab_leaf_uplink "$D/f.json")
for ((i = 1; i <= N; i++)); do
	plugin_gens
	before=$n_gens
	if ((i % 2)); then cmd="Unlink \"$leaf\"[$port]"; else cmd="ReLink \"$leaf\"[$port]"; fi
	perf_pid=
	if [ "$i" = 1 ] && [ -n "${REAL_FAULT_PERF:-}" ]; then
		perf record -a -g -k realtime -F 499 -o "$REAL_FAULT_PERF" >/dev/null 2>&1 &
		perf_pid=$!
		sleep 2
	fi
	lab_ibsim_cmd "$cmd" >/dev/null || echo "# ibsim: $cmd failed"
	for ((w = 0; w < 12000; w++)); do
		plugin_gens
		((n_gens > before)) && break
		nap 0.1
	done
	settle 1200 || echo "# no quiet after: $cmd"
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid"
		wait "$perf_pid"
	fi
	keep "$i"
done
python3 - "$LAB_OSM_LOG" "$D/topod.log" "$K" <<'PY'
import re, sys, datetime
osm, tlog, k = sys.argv[1], sys.argv[2], sys.argv[3]
year = datetime.date.today().year
plug = {}
for l in open(osm, errors="replace"):
    m = re.search(r"osmtopo: generation (\d+) \((\S+ ?\S*) #\d+.*held ([\d.]+) ms.*longest ([\d.]+) ms \(([\d.]+) ms CPU\).*encode ([\d.]+) ms; (\d+) bytes; delta (\d+) bytes.*LFTs: (\d+) whole, (\d+) kept \+ (\d+) blocks", l)
    if not m:
        continue
    ts = datetime.datetime.strptime(f"{year} " + l[:22], "%Y %b %d %H:%M:%S %f")
    plug[int(m[1])] = dict(t=ts, how=m[2], held=float(m[3]), longest=float(m[4]), lcpu=float(m[5]),
                           enc=float(m[6]), full=int(m[7]), delta=int(m[8]), blocks=int(m[11]))
top = {}
blocks = {}
recv = {}
for l in open(tlog, errors="replace"):
    m = re.search(r"delta from .*: generation (\d+) from \d+, (\d+) bytes(?: \(received in ([\d.]+) ms, ([\d.]+) ms "
                  r"before this\))?, (\d+) ports, (\d+) LFT blocks", l)
    if m:
        blocks[int(m[1])] = int(m[6])
        if m[3]:  # logged after the apply: when its last byte was read, and how long that took
            ts = datetime.datetime.strptime(l[:23], "%Y-%m-%dT%H:%M:%S.%f")
            recv[int(m[1])] = (ts - datetime.timedelta(milliseconds=float(m[4])), float(m[3]))
    m = re.search(r"serving generation (\d+) .*?(delta applied in|decode) ([\d.]+) ms, build ([\d.]+) ms(?: on \d+ threads?)? \(routes ([\d.]+), hierarchy ([\d.]+)(, reused[^)]*)?\).*persisted in ([\d.]+) ms", l)
    if not m:
        continue
    ts = datetime.datetime.strptime(l[:23], "%Y-%m-%dT%H:%M:%S.%f")
    top[int(m[1])] = dict(t=ts, delta=m[2] != "decode", apply=float(m[3]), build=float(m[4]),
                          routes=float(m[5]), hier=float(m[6]), reused=bool(m[7]), persist=float(m[8]))
print(f"# k={k}: per routing pass (times in ms; 'topod' = apply/decode + index + journal, before OK)")
print("gen  kind  pass         plugin: held longest (CPU) encode sent(bytes)  | topod: blocks  apply  routes  hierarchy   journal  topod  | plugin line -> served (of which: -> last byte read, first byte -> last)")
for g in sorted(top):
    t, p = top[g], plug.get(g)
    tot = t["apply"] + t["build"] + t["persist"]
    # topod logs after persisting, and published before it did
    e2e = f"{(t['t'] - p['t']).total_seconds() * 1000 - t['persist']:8.1f}" if p else "       -"
    pl = (f"{p['how'][:11]:11} {p['held']:7.1f} {p['longest']:6.1f} ({p['lcpu']:5.1f}) {p['enc']:7.1f} {p['delta'] or p['full']:12d}"
          if p else " " * 55)
    hier = f"{t['hier']:6.1f}" + (" kept" if t["reused"] else "     ")
    rv = recv.get(g)
    inn = (f" ({(rv[0] - p['t']).total_seconds() * 1000:6.1f}, {rv[1]:6.1f})" if rv and p else "")
    print(f"{g:<4} {'delta' if t['delta'] else 'full ':5} {pl}  | {blocks.get(g, 0):7d} {t['apply']:6.1f} {t['routes']:7.1f}  {hier:>9} {t['persist']:8.1f} {tot:7.1f}  | {e2e}{inn}")
PY
cp "$D/topod.log" "${REAL_FAULT_LOG:-/dev/null}" 2>/dev/null
lab_teardown
