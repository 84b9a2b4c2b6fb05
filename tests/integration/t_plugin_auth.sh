#!/usr/bin/env bash
# Authenticated ingest end to end: the osmtopo plugin inside real OpenSM (on
# ibsim) proves the shared key to topod's TCP ingest (challenge-response,
# snapshot/auth.h) and topod serves its snapshot; the same plugin without
# the key is refused (ERR AUTH in OpenSM's log), and one told plane=rail2
# does not deliver to topod's plane "default" at all; topod keeps serving
# what it had.
. "$(dirname "$0")/t_plugin_common.bash"
. "$TP_ROOT/tests/lab/lab.sh"
cd "$TP_ROOT" || exit 1
lab_init || { tp_fail "lab_init"; tp_finish; }
export LD_LIBRARY_PATH=$TP_ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
D=$LAB_DIR
lab_fabgen fattree --k 4 --levels 2 || { tp_fail "fabgen"; tp_finish; }
lab_start_ibsim "$D/f.net" || { tp_fail "ibsim starts"; tp_finish; }
"$TP_SNAP" keygen "$D/key" >/dev/null || { tp_fail "topo-snap keygen"; tp_finish; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
lab_start_topod -i "tcp:127.0.0.1:$port" --ingest-key "$D/key" || { tp_fail "topod starts"; tp_finish; }

lab_run_opensm ftree "event_plugin_name osmtopo" \
	"event_plugin_options sink=tcp:127.0.0.1:$port key_file=$D/key plane=default timeout_ms=5000 linger_ms=5000" \
	"root_guid_file $D/roots"
grep -q "osmtopo: sink tcp:127.0.0.1:$port (.* key_file: challenge-response plane=default)" "$LAB_OSM_LOG" &&
	tp_ok "the plugin logs its sink with the key and the plane" ||
	tp_fail "the plugin logs its sink with the key and the plane ($(grep -m1 'osmtopo: sink' "$LAB_OSM_LOG"))"
# The last generation the plugin published: a routing pass is followed by its
# subnet-up generation (the ports' true states).
gen=$(grep -o 'osmtopo: generation [0-9]*' "$LAB_OSM_LOG" | tail -1 | awk '{print $3}')
served=0
for _ in $(seq 50); do
	served=$(lab_topod_generation)
	[ "$served" = "$gen" ] && break
	sleep 0.1
done
[ -n "$gen" ] && [ "$served" = "$gen" ] &&
	tp_ok "the plugin's signed snapshot over TCP is served (generation $gen)" ||
	tp_fail "the plugin's signed snapshot over TCP is served (plugin $gen, topod $served)"

lab_run_opensm ftree "event_plugin_name osmtopo" \
	"event_plugin_options sink=tcp:127.0.0.1:$port timeout_ms=3000 linger_ms=2000" \
	"root_guid_file $D/roots"
grep -q 'rejected: ERR AUTH' "$LAB_OSM_LOG" &&
	tp_ok "without key_file the plugin's delivery is refused, and OpenSM's log says why" ||
	tp_fail "without key_file the plugin's delivery is refused (log: $(grep -m1 osmtopo.*tcp "$LAB_OSM_LOG"))"
[ "$(lab_topod_generation)" = "$gen" ] && tp_ok "topod still serves generation $gen" ||
	tp_fail "topod still serves generation $gen (now $(lab_topod_generation))"
grep -q "rejected snapshot from ingest tcp:127.0.0.1" "$D/topod.log" &&
	tp_ok "topod logs the refusal with the peer" || tp_fail "topod logs the refusal with the peer"

lab_run_opensm ftree "event_plugin_name osmtopo" \
	"event_plugin_options sink=tcp:127.0.0.1:$port key_file=$D/key plane=rail2 timeout_ms=3000 linger_ms=2000" \
	"root_guid_file $D/roots"
grep -q 'receiver serves plane default, not plane rail2 (plane=): not sent' "$LAB_OSM_LOG" &&
	tp_ok "with plane=rail2 the plugin does not deliver to plane default, and says so" ||
	tp_fail "with plane=rail2 the plugin does not deliver to plane default (log: $(grep -m1 'osmtopo.*tcp.*:' "$LAB_OSM_LOG"))"
[ "$(lab_topod_generation)" = "$gen" ] && tp_ok "topod still serves generation $gen" ||
	tp_fail "topod still serves generation $gen (now $(lab_topod_generation))"
lab_teardown
tp_finish
