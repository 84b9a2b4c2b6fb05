#!/usr/bin/env bash
# /metrics scraped by a real Prometheus (Debian's prometheus) in the lab
# (issue 23, "Done when" 1): ibsim's k=4 fat tree (16 hosts, 20 switches)
# routed by a long-running OpenSM whose osmtopo plugin delivers to topod
# --http; Prometheus scrapes topod every second. Through Prometheus's query
# API (not topod's):
#   - hosts, switches and cables equal what ibnetdiscover finds;
#   - after a leaf uplink is unlinked in ibsim and OpenSM reroutes, the
#     generation went up to the one topod serves, topod_links is one less
#     (ibnetdiscover's count again), topod_links_lost is 1 and
#     topod_link_lost names that cable by both ends; the query
#     counter moved with the queries asked;
#   - the alert rules printed in docs/admin-guide.md pass promtool, are
#     loaded, and their TopodLinksDown and TopodLinkLost go pending;
#   - after ReLink the cable is back and topod_links_lost is 0 again.
# Prometheus is the lab's (lab_own): torn down by PID on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. tests/lib/tap.bash

[ -x /usr/bin/prometheus ] || { nok "prometheus is installed (make deps: Debian's prometheus)"; exit 1; }
lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
lab_fabgen fattree --k 4 --levels 3 || { nok "fabgen"; exit 1; }
lab_start_ibsim "$d/f.net" || { nok "ibsim"; exit 1; }
lab_start_topod --http 127.0.0.1:0 || { nok "topod"; exit 1; }
HP=$(sed -n 's/^http port=//p' "$d/topod.out")
[ -n "$HP" ] || { nok "topod printed its HTTP port"; exit 1; }
if ! LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $d/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest.sock"; then
	nok "OpenSM did not come up"; exit 1
fi

# wait_gen_above G: waits until topod serves a generation above G, then until
# it stays the same for 3 s, and prints it. A routing pass is followed by the
# plugin's subnet-up generation (true port states) a moment later, so the
# first generation above G is not yet the one the fabric settles on.
wait_gen_above() {
	local g i same=0 last=
	for ((i = 0; i < 600; i++)); do
		g=$(lab_topod_generation)
		if [ -n "$g" ] && [ "$g" -gt "$1" ] 2>/dev/null; then
			if [ "$g" = "$last" ]; then
				same=$((same + 1))
				[ "$same" -ge 30 ] && { echo "$g"; return 0; }
			else
				same=0 last=$g
			fi
		fi
		sleep 0.1
	done
	[ -n "$last" ] && { echo "$last"; return 0; }
	return 1
}
# ibnd_counts: "CAs switches cables" as ibnetdiscover sees the fabric now
# (every cable is listed from both ends).
ibnd_counts() {
	lab_umad ibnetdiscover >"$d/ibnd.out" 2>"$d/ibnd.err" || return 1
	awk '/^Ca/ { c++ } /^Switch/ { s++ } /^\[[0-9]+\].*"/ { l++ } END { print c + 0, s + 0, l / 2 }' "$d/ibnd.out"
}

g1=$(wait_gen_above 0) || { nok "no first generation (see $d/topod.log)"; exit 1; }
ok "OpenSM's first routing pass is served (generation $g1)"
read -r cas sws cables < <(ibnd_counts) || { nok "ibnetdiscover"; exit 1; }
echo "# ibnetdiscover: $cas CAs, $sws switches, $cables cables"

PP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The alert rules of docs/admin-guide.md, as printed there.
python3 - docs/admin-guide.md "$d/rules.yml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("groups:")]
open(sys.argv[2], "w").write(blocks[0] if blocks else "")
PY
n=$(promtool check rules "$d/rules.yml" 2>&1 | sed -n 's/^ *SUCCESS: \([0-9]*\) rules found/\1/p')
check "the admin guide's alert rules pass promtool check rules (${n:-0} rules)" [ "${n:-0}" -ge 4 ]
cat >"$d/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ['$d/rules.yml']
scrape_configs:
  - job_name: topod
    static_configs:
      - targets: ['127.0.0.1:$HP']
EOF
prometheus --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/tsdb" \
	--web.listen-address="127.0.0.1:$PP" </dev/null >"$d/prometheus.log" 2>&1 &
lab_own $!

# until QUERY OP VALUE [SECS]: Prometheus's query API answers QUERY with
# one sample that compares OP (== != > <) to VALUE within SECS (30); the
# last value read is in $V.
cat >"$d/q.py" <<'PY'
import json, sys, urllib.parse, urllib.request
try:
    u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
    with urllib.request.urlopen(u, timeout=5) as r:
        res = json.load(r)["data"]["result"]
    v = float(res[0]["value"][1]) if len(res) == 1 else None
    print("none" if v is None else int(v) if v.is_integer() else v)
except (OSError, ValueError, KeyError):
    print("none")
PY
until_q() {
	local q=$1 op=$2 want=$3 secs=${4:-30} i
	for ((i = 0; i < secs * 2; i++)); do
		V=$(python3 "$d/q.py" "$PP" "$q")
		if [ "$V" != none ] && awk -v v="$V" -v w="$want" -v op="$op" 'BEGIN {
			exit !((op == "==" && v == w) || (op == "!=" && v != w) || (op == ">" && v > w) || (op == "<" && v < w)) }'; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}
P='plane="default"'
until_q 'up{job="topod"}' == 1 60
check "Prometheus scrapes topod in the lab (up == $V)" [ "$V" = 1 ]
until_q "topod_generation{$P}" == "$g1"
check "topod_generation == $g1, the generation topod serves ($V)" [ "$V" = "$g1" ]
until_q "topod_hosts{$P}" == "$cas"
check "topod_hosts == ibnetdiscover's $cas CAs ($V)" [ "$V" = "$cas" ]
until_q "topod_switches{$P}" == "$sws"
check "topod_switches == ibnetdiscover's $sws switches ($V)" [ "$V" = "$sws" ]
until_q "topod_links{$P}" == "$cables"
check "topod_links == ibnetdiscover's $cables cables ($V)" [ "$V" = "$cables" ]
until_q "topod_links_down{$P} + topod_links_lost{$P}" == 0
check "no cable down or lost yet ($V)" [ "$V" = 0 ]

# Queries through the lab's topod: counted by command and outcome.
python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "path c401-101 c408-102" >/dev/null
python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "path c401-101 nosuch" >/dev/null
until_q 'topod_queries_total{command="path",outcome="ok"}' == 1
check "topod_queries_total{command=path,outcome=ok} == 1 ($V)" [ "$V" = 1 ]
until_q 'topod_queries_total{command="path",outcome="error"}' == 1
check "topod_queries_total{command=path,outcome=error} == 1 ($V)" [ "$V" = 1 ]

# The first leaf uplink in fabgen's meta.
read -r leaf port peer pport < <(python3 - "$d/f.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
sw = {s["node"] for s in m["switches"]}
for a, pa, b, pb in m["links"]:
    if a.startswith("ibsw-L1") and b in sw:
        print(a, pa, b, pb)
        break
PY
)
[ -n "${leaf:-}" ] || { nok "no leaf uplink in f.json"; exit 1; }
lab_ibsim_cmd "Unlink \"$leaf\"[$port]" >/dev/null || nok "ibsim Unlink $leaf[$port]"
g2=$(wait_gen_above "$g1") || { nok "no generation after the Unlink (see $d/topod.log)"; exit 1; }
ok "OpenSM rerouted around $leaf[$port]: topod serves generation $g2"
read -r cas2 sws2 cables2 < <(ibnd_counts) || nok "ibnetdiscover after the Unlink"
until_q "topod_generation{$P}" == "$g2"
check "after the reroute Prometheus reads topod_generation == $g2 ($V)" [ "$V" = "$g2" ]
until_q "max_over_time(topod_generation{$P}[10m]) - min_over_time(topod_generation{$P}[10m])" == $((g2 - g1))
check "its series went up from $g1 to $g2 (by $V)" [ "$V" = $((g2 - g1)) ]
until_q "topod_links{$P}" == "$cables2"
check "topod_links == ibnetdiscover's $cables2 cables now (one less: $((cables - cables2))) ($V)" \
	[ "$V" = "$cables2" ] && [ "$cables2" -eq $((cables - 1)) ]
until_q "topod_links_lost{$P}" == 1
check "topod_links_lost == 1: the pulled cable ($V)" [ "$V" = 1 ]
until_q "count(topod_link_lost{$P})" == 1
check "one topod_link_lost series ($V)" [ "$V" = 1 ]
named() { # A PA B PB: the series names the cable A[PA] - B[PB], either way round
	echo "topod_link_lost{$P,a=\"$1\",a_port=\"$2\",b=\"$3\",b_port=\"$4\"} or" \
		"topod_link_lost{$P,a=\"$3\",a_port=\"$4\",b=\"$1\",b_port=\"$2\"}"
}
until_q "$(named "$leaf" "$port" "$peer" "$pport")" == 1
check "topod_link_lost names the pulled cable: $leaf[$port] - $peer[$pport] ($V)" [ "$V" = 1 ]
for a in TopodLinksDown TopodLinkLost; do
	until_q "count(ALERTS{alertname=\"$a\",alertstate=\"pending\"})" == 1
	check "the admin guide's $a alert is pending ($V)" [ "$V" = 1 ]
done
until_q "topod_hosts{$P}" == "$cas2"
check "the hosts are all still there ($V == $cas2)" [ "$V" = "$cas2" ] && [ "$cas2" = "$cas" ]
until_q "topod_snapshots_accepted_total{$P}" ">" 1
check "topod_snapshots_accepted_total counts the reroute ($V)" [ "$V" != none ]
until_q 'sum(topod_snapshots_refused_total)' == 0
check "no snapshot refused ($V)" [ "$V" = 0 ]
until_q "count(topod_links_down{$P} + topod_links_lost{$P} > 0)" == 1
check "the admin guide's TopodLinksDown expression fires ($V)" [ "$V" = 1 ]

lab_ibsim_cmd "ReLink \"$leaf\"[$port]" >/dev/null || nok "ibsim ReLink $leaf[$port]"
g3=$(wait_gen_above "$g2") || { nok "no generation after the ReLink"; exit 1; }
until_q "topod_generation{$P}" == "$g3"
check "after ReLink: topod_generation == $g3 ($V)" [ "$V" = "$g3" ]
until_q "topod_links_lost{$P}" == 0
check "topod_links_lost is 0 again ($V)" [ "$V" = 0 ]
until_q "count(topod_link_lost{$P}) or vector(0)" == 0
check "and no topod_link_lost series is left ($V)" [ "$V" = 0 ]
until_q "topod_links{$P}" == "$cables"
check "topod_links is back to $cables ($V)" [ "$V" = "$cables" ]
[ "$failed" -eq 0 ]
