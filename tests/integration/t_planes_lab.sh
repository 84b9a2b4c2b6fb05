#!/usr/bin/env bash
# Several subnets in one topod (issue 13 item 4), with real OpenSM on ibsim:
#   plane "default": a 3-level fat tree (k=4, 16 hosts, HCA-1), plane
#   "rail2": a 2-level one (8 hosts with the same hostnames, HCA-2, other
#   GUIDs), each simulated by its own ibsim and routed by its own OpenSM
#   whose osmtopo plugin feeds its own ingest socket of one topod.
#   - `planes` lists both; a host with an HCA on each is found on both;
#   - paths on each plane equal ibtracert on that plane's fabric, with both
#     fabrics live, asked through `plane NAME` (tracecheck --plane);
#   - without a chosen plane a request is answered from the plane its
#     hosts are on; topoquery --plane picks one; topoquery slurm writes one
#     topology.conf per plane;
#   - each plane has its own generations and history, and both are served
#     again after a restart from the state directory.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. tests/lib/tap.bash
TQ=$ROOT/build/bin/topoquery

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
lab_fabgen fattree --k 4 --levels 3 || { nok "fabgen A"; exit 1; }
# Fabric B: the same hostnames on their second HCA, GUIDs of its own.
python3 tests/lab/fabgen.py fattree --k 4 --levels 2 -o "$d/b.raw" --root-guid-file "$d/b.roots.raw" \
	>/dev/null 2>&1 || { nok "fabgen B"; exit 1; }
sed 's/0x0002c903/0x0002c904/g; s/0x0008f105/0x0008f106/g; s/HCA-1/HCA-2/g' "$d/b.raw" >"$d/b.net"
sed 's/0x0008f105/0x0008f106/g' "$d/b.roots.raw" >"$d/b.roots"

lab_start_topod -i "rail2=unix:$d/ingest2.sock" || { nok "topod"; exit 1; }
ask() { python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "$@"; } # REQUEST...: the whole last reply
plane_gen() { ask "plane $1" info 2>/dev/null | sed -n 's/.* generation=\([0-9]*\) .*/\1/p'; }
wait_plane() { # PLANE: waits for its first generation
	local i g
	for ((i = 0; i < 300; i++)); do
		g=$(plane_gen "$1")
		[ -n "$g" ] && [ "$g" != 0 ] && { echo "$g"; return 0; }
		sleep 0.1
	done
	return 1
}
# PLANE, after its OpenSM ran once and exited: the generation it ends on.
# The plugin publishes the routing pass and, when OpenSM reaches subnet up
# before it exits, a second generation; topod may still be building that
# one when the first is served. Settled: unchanged for 3 s (within 30 s).
settle_plane() {
	local i g last same=0
	last=$(wait_plane "$1") || return 1
	for ((i = 0; i < 300 && same < 30; i++)); do
		sleep 0.1
		g=$(plane_gen "$1")
		if [ "$g" = "$last" ]; then same=$((same + 1)); else same=0 last=$g; fi
	done
	echo "$last"
}

# Fabric A, its OpenSM and plugin -> the default plane.
lab_start_ibsim "$d/f.net" || { nok "ibsim A"; exit 1; }
SOCK_A=$IBSIM_SOCKNAME
lab_run_opensm ftree "root_guid_file $d/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest.sock" >/dev/null 2>&1 || nok "OpenSM on fabric A"
ga=$(settle_plane default) || { nok "plane default got no fabric (see $d/topod.log)"; exit 1; }
ok "plane default serves fabric A (generation $ga)"

# Fabric B beside it: a second ibsim (own socket name), a second OpenSM.
LAB_IBSIM_PID_A=$LAB_IBSIM_PID
LAB_IBSIM_PID= LAB_IBSIM_FD=
export IBSIM_SOCKNAME=$SOCK_A-b
SOCK_B=$IBSIM_SOCKNAME
lab_start_ibsim "$d/b.net" || { nok "ibsim B"; exit 1; }
lab_run_opensm ftree "root_guid_file $d/b.roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest2.sock" >/dev/null 2>&1 || nok "OpenSM on fabric B"
gb=$(settle_plane rail2) || { nok "plane rail2 got no fabric"; exit 1; }
ok "plane rail2 serves fabric B (generation $gb)"
check "plane default still serves generation $ga" [ "$(plane_gen default)" = "$ga" ]

ask planes >"$d/planes"
check "planes lists both, with their hosts" \
	grep -q "^default generation=$ga .* hosts=16 " "$d/planes"
check "... and rail2's 8" grep -q "^rail2 generation=$gb .* hosts=8 " "$d/planes"
ask "planes c401-101" >"$d/planes1"
check "a host with an HCA on each rail is found on both planes" \
	[ "$(grep -c ' lid=' "$d/planes1")" = 2 ]
check "with a different port on each" [ "$(awk '{for(i=1;i<=NF;i++) if ($i ~ /^port_guid=/) print $i}' "$d/planes1" | sort -u | wc -l)" = 2 ]
check "a host on no plane: NOTFOUND" grep -q '^ERR NOTFOUND' <<<"$(ask 'planes nosuch')"

# Paths on each plane against ibtracert on that plane's fabric, both live.
IBSIM_SOCKNAME=$SOCK_A lab_umad python3 tests/lib/tracecheck.py --port "$LAB_TOPOD_PORT" --pairs 60 \
	--plane default --label "plane default (fabric A)" | grep -E '^(not )?ok' | head -1 | tee "$d/tc.a"
grep -q '^ok' "$d/tc.a" || failed=$((failed + 1))
IBSIM_SOCKNAME=$SOCK_B lab_umad python3 tests/lib/tracecheck.py --port "$LAB_TOPOD_PORT" --pairs 40 \
	--plane rail2 --label "plane rail2 (fabric B)" | grep -E '^(not )?ok' | head -1 | tee "$d/tc.b"
grep -q '^ok' "$d/tc.b" || failed=$((failed + 1))

# No plane chosen: the plane the hosts are on. c408-101 is on A only (B has
# 8 hosts, c401..c404); c401-101 is on both: the first plane.
ha=$(ask "plane default" "hops c408-101 c401-101" | tail -1)
h_auto=$(ask "hops c408-101 c401-101")
check "a host only on plane default is answered there without choosing ($h_auto)" [ "$h_auto" = "$ha" ]
hb=$(ask "plane rail2" "hops c401-101 c404-101" | sed 's/.* hops=//')
hb_tq=$(TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" --plane rail2 hops c401-101 c404-101)
ha_tq=$(TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" hops c401-101 c404-101)
check "topoquery --plane rail2 asks rail2 ($hb_tq hops there, $ha_tq on the first plane)" [ "$hb_tq" = "$hb" ]
check "the two planes differ for that pair (the check has teeth)" [ "$hb_tq" != "$ha_tq" ]
gq=$(TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" --plane rail2 --json info)
check "topoquery --plane rail2 info is rail2's generation" grep -q "\"generation\":$gb" <<<"$gq"
TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" --plane nosuch info >/dev/null 2>"$d/tq.err"
check "topoquery --plane with an unknown plane fails naming the planes" grep -q "rail2" "$d/tq.err"
TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" planes >"$d/tq.planes"
check "topoquery planes" [ "$(wc -l <"$d/tq.planes")" = 2 ]
TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT "$TQ" slurm -o "$d/topology.conf" || nok "topoquery slurm"
check "topoquery slurm writes one topology.conf per plane" [ -s "$d/topology.conf.default" ] && [ -s "$d/topology.conf.rail2" ]
check "each with its plane's hosts (c408 only on default)" \
	bash -c "grep -q c408 '$d/topology.conf.default' && ! grep -q c408 '$d/topology.conf.rail2'"
# Each plane's history holds only its own fabric's generations: one or two
# from its one OpenSM run (see settle_plane), all with its hosts.
ask "plane rail2" history | tail -n +2 >"$d/hist.b"
ask "plane default" history | tail -n +2 >"$d/hist.a"
n=$(grep -c . "$d/hist.b")
check "each plane has its own history (rail2: $n generations, all of fabric B's 8 hosts; default: all of A's 16)" \
	bash -c "[ $n -ge 1 ] && [ $n -le 2 ] && ! grep -qv ' hosts=8 ' '$d/hist.b' && [ -s '$d/hist.a' ] && ! grep -qv ' hosts=16 ' '$d/hist.a'"

# Restart: both planes come back from the state directory.
kill "$LAB_TOPOD_PID"; wait "$LAB_TOPOD_PID" 2>/dev/null
lab_start_topod -i "rail2=unix:$d/ingest2.sock" || { nok "topod restart"; exit 1; }
ra=$(wait_plane default 2>/dev/null)
rb=$(wait_plane rail2 2>/dev/null)
check "after a restart plane default serves generation $ga again (${ra:-none})" [ "$ra" = "$ga" ]
check "and plane rail2 generation $gb (STATE/plane.rail2; ${rb:-none})" [ "$rb" = "$gb" ]
if [ "$ra" != "$ga" ] || [ "$rb" != "$gb" ]; then
	echo "# topod pid $LAB_TOPOD_PID alive: $(kill -0 "$LAB_TOPOD_PID" 2>/dev/null && echo yes || echo no), port $LAB_TOPOD_PORT"
	tail -n 5 "$d/topod.log" | sed 's/^/# /'
fi
[ "$failed" -eq 0 ]
