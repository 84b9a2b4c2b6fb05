#!/usr/bin/env bash
# One error vocabulary (issue 36, item 3), as a user of topoquery sees it
# against a lab topod fed by a real OpenSM: each refusal names what was not
# found or not valid, in the right category, with the documented exit
# status (topoquery(1), EXIT STATUS: 1 "no", 2 usage, 4 no server could
# answer) and nothing on standard output:
#   - info before the first fabric: no fabric yet (4), not a 1970 date;
#   - diff of generations not held: no such generation, naming those held;
#   - --plane nosuch: no such plane, naming the planes;
#   - a host in the wrong case, with a domain suffix, a switch for a host,
#     and show of a switch in the wrong case: the name meant is suggested;
#   - schedule conflicts=99999999999 / 4294967297: refused with the option
#     and its range (never wrapped to 1215752191 or 1), by topoquery and
#     by topod;
#   - links nosuch: no such host or switch (1), not an empty success;
#   - hops to a host that went down: known but down since when, as slurm
#     knows it, not "no such host".
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
for t in ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
. tests/lib/tap.bash
TQ=$ROOT/build/bin/topoquery

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
lab_fabgen xgft --h 3 --m 4,2,2 --w 1,2,2 || { nok "fabgen"; exit 1; }
lab_start_ibsim "$d/f.net" || { nok "ibsim"; exit 1; }
lab_start_topod || { nok "topod"; exit 1; }
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT
ask() { python3 tests/lib/topodask.py "$LAB_TOPOD_PORT" "$@"; }

# tq WANT_RC CMD...: runs topoquery; $out, $err, $rc; checks nothing on
# stdout for a failure and the exit status.
tq() {
	local want=$1
	shift
	out=$("$TQ" "$@" 2>"$d/err")
	rc=$?
	err=$(cat "$d/err")
	echo "# topoquery $* -> $rc: $err"
	[ "$rc" -eq "$want" ] && { [ "$want" -eq 0 ] || [ -z "$out" ]; }
}
has() { grep -qF -- "$1" <<<"$err"; }
lacks() { ! grep -qF -- "$1" <<<"$err"; }

# --- before the first fabric ------------------------------------------------
check "info with no fabric: exit 4, nothing on stdout" tq 4 info
check "info with no fabric: says so" has "topoquery: info: topod has no fabric yet"
check "info with no fabric: no 1970 date" lacks "1970"

if ! LAB_OSM_SWEEP=0 lab_start_opensm ftree "root_guid_file $d/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$d/ingest.sock"; then
	nok "OpenSM did not come up"; exit 1
fi

# settle PRED: waits (60 s at most) until PRED holds and the generation has
# not moved for 2 s (OpenSM may publish in several sweeps).
settle() {
	local i g last= same=0
	for ((i = 0; i < 600; i++)); do
		g=$(lab_topod_generation)
		if [ -n "$g" ] && [ "$g" != 0 ] && "$@"; then
			[ "$g" = "$last" ] && same=$((same + 1)) || same=0
			last=$g
			[ "$same" -ge 20 ] && return 0
		fi
		sleep 0.1
	done
	return 1
}
hosts_now() { ask hosts | tail -n +2 | awk '{print $1}' | sort; }
has_host() { hosts_now | grep -qx "$1"; }
lacks_host() { ! has_host "$1"; }
victim=c402-103
other=c401-101
settle has_host "$victim" || { nok "no first generation with $victim (see $d/topod.log)"; exit 1; }
check "info with a fabric: exit 0" tq 0 info
g=$(lab_topod_generation)

# --- generations and planes -------------------------------------------------
check "diff of generations not held: exit 1" tq 1 diff 99990 99991
check "diff: category 'no such generation'" has "topoquery: diff: no such generation"
check "diff: names the generation and those held" \
	has "generation 99990 is not in the history (it holds"
check "diff: not 'no such host'" lacks "no such host"
check "diff @TIME before any: exit 1, no such generation" tq 1 diff @1 "$g"
check "diff @1: category and text" has "no such generation (no generation in the history was served at @1)"

check "--plane nosuch: exit 1" tq 1 --plane nosuch hops "$other" "$victim"
check "--plane nosuch: category 'no such plane'" has ": no such plane"
check "--plane nosuch: names the planes served" has ": no such plane (127.0.0.1:$LAB_TOPOD_PORT: no plane 'nosuch' (planes: default, or auto))"
check "--plane nosuch: not 'no such host'" lacks "no such host"

# --- names: suggestions -----------------------------------------------------
upper=$(tr a-z A-Z <<<"$other")
check "hops in the wrong case: exit 1" tq 1 hops "$upper" "$victim"
check "hops in the wrong case: no such host, the right case suggested" \
	has "no such host (no host, HCA, GUID or LID '$upper'; did you mean '$other'?)"
check "hops with a domain suffix: exit 1" tq 1 hops "$other.example.com" "$victim"
check "hops with a domain suffix: the short name suggested" \
	has "no host, HCA, GUID or LID '$other.example.com'; did you mean '$other'?"
check "hops HCA in the wrong case: the host/HCA suggested" tq 1 hops "$upper/HCA-1" "$victim"
check "  ... as '$other/HCA-1'" has "did you mean '$other/HCA-1'?"
check "hops to a switch: exit 1" tq 1 hops "$other" ibsw-L1-001
check "hops to a switch: says it is a switch, by GUID" \
	has "'ibsw-L1-001' is a switch (0x"
check "show a switch in the wrong case: exit 1" tq 1 show ibsw-l1-001
check "show in the wrong case: no such host or switch, the switch suggested" \
	has "topoquery: show ibsw-l1-001: no such host or switch (no host, HCA, switch, GUID or LID 'ibsw-l1-001'; did you mean the switch 'ibsw-L1-001'?)"
check "show with the suggested name works" tq 0 show ibsw-L1-001

# --- numbers: exact range checks --------------------------------------------
check "schedule conflicts=99999999999: exit 2" tq 2 schedule xor conflicts=99999999999 "$other" "$victim"
check "  ... names the option, the value and its range" \
	has "topoquery: conflicts=99999999999: not a whole number 0..64"
check "  ... never wrapped to 1215752191" lacks "1215752191"
check "schedule conflicts=4294967297: exit 2 (not taken as 1)" \
	tq 2 schedule xor conflicts=4294967297 "$other" "$victim"
check "  ... names it" has "conflicts=4294967297: not a whole number 0..64"
check "schedule window=4294967297: exit 2" tq 2 schedule xor window=4294967297 "$other" "$victim"
check "schedule k=-1: exit 2" tq 2 schedule kshift k=-1 "$other" "$victim"
check "--slots 4294967297: exit 2" tq 2 --slots 4294967297 order "$other"
check "schedule conflicts=64 (the top of the range) is answered" tq 0 schedule xor conflicts=64 "$other" "$victim"
r=$(ask "schedule xor conflicts=4294967297 $other $victim" | head -1)
echo "# topod: $r"
check "topod: conflicts=4294967297 is ERR USAGE naming the option and range" \
	grep -q "^ERR USAGE conflicts=4294967297: conflicts must be a whole number 0..64$" <<<"$r"
r=$(ask "schedule xor bytes=18446744073709551617 $other $victim" | head -1)
echo "# topod: $r"
check "topod: bytes=2^64+1 is ERR USAGE with the range" \
	grep -q "^ERR USAGE bytes=18446744073709551617: bytes must be a whole number 1..9007199254740992 (2^53)$" <<<"$r"

# --- links ------------------------------------------------------------------
check "links nosuch: exit 1, not an empty success" tq 1 links nosuch
check "links nosuch: no such host or switch, naming it" \
	has "topoquery: links nosuch: no such host or switch (no host, HCA or switch whose name, description or GUID contains 'nosuch')"
check "links of a host whose cables the state filter drops: exit 0" tq 0 links --state down "$other"
check "  ... and nothing listed" [ -z "$out" ]
check "links of a host: exit 0, its cable" tq 0 links "$other"
check "  ... listed" grep -q "$other" <<<"$out"

# --- a host that went down --------------------------------------------------
last=$(lab_topod_generation)
lab_ibsim_cmd "Unlink \"$victim HCA-1\"" >/dev/null || nok "ibsim Unlink $victim"
settle lacks_host "$victim" || nok "$victim is not gone from topod's hosts after Unlink"
"$TQ" slurm >"$d/conf" 2>/dev/null
seen=$(sed -n "s/^# $victim: not in the fabric now (last seen in generation \([0-9]*\)).*/\1/p" "$d/conf")
echo "# slurm: $victim last seen in generation ${seen:-?} (before the Unlink: $last)"
check "slurm knows when $victim was last seen" [ -n "$seen" ]
check "hops to the host that went down: exit 1" tq 1 hops "$other" "$victim"
check "  ... category 'host is down', not 'no such host'" has "topoquery: hops $other $victim: host is down ("
check "  ... known but down since a generation and its UTC time, last seen as slurm says" \
	grep -Eq "host '$victim' is known but down: not in the fabric since generation [0-9]+ \\([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC\\), last seen in generation $seen\\)" <<<"$err"
check "  ... not 'no such host'" lacks "no such host"
check "show of the host that went down: exit 1, host is down" tq 1 show "$victim"
check "  ... says so" has "host is down (host '$victim' is known but down"
r=$(ask "hops $other $victim" | head -1)
echo "# topod: $r"
check "topod: ERR GONE" grep -q "^ERR GONE host '$victim' is known but down" <<<"$r"

echo "# $failed failed"
[ "$failed" -eq 0 ]
