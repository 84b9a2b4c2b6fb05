#!/usr/bin/env bash
# `simgrid` on the real stack (ibsim -> OpenSM + osmtopo plugin -> topod):
# a 2-level fat tree (k=4: 4 leaves of 2 hosts, 2 spines) at 4x QDR with one
# 1x QDR host cable (c401-101's). topoquery simgrid exports the platform;
# its routes must equal topod's `path`; then tests/simgrid/flows.c, built
# with smpicc, runs under smpirun (tests/lib/smpi.sh) and its simulated
# times must match hand-computed ones within 5 %:
#   4x QDR = 32 Gb/s of data = 4e9 B/s, 1x QDR = 1e9 B/s; B = 4,000,000 bytes;
#   latency 100 ns per cable + 100 ns per switch (analysis/simgrid.h).
#   (a) c402-101 -> c402-102 (one leaf):           B / 4e9 + 300 ns  = 1.0003 ms
#   (b) that flow and c403-101 -> c402-102 at once: they share the leaf's
#       cable to c402-102: each B / 2e9 (+ 300 / 700 ns)              ~ 2.0 ms
#   (c) c401-101 -> c401-102 over the 1x cable:     B / 1e9 + 300 ns  = 4.0003 ms
#       i.e. four times (a).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
. tests/lab/lab.sh
. tests/lib/smpi.sh
export LAB_QUIET=1
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }

for tool in smpicc smpirun; do
	command -v $tool >/dev/null || { nok "$tool missing (make deps installs libsimgrid-dev)"; exit 1; }
done
lab_init || { nok "lab_init"; exit 1; }
lab_fabgen fattree --k 4 --levels 2 || { nok "fabgen"; exit 1; }
# Every port line gets its rate, bitmasks as PortInfo (w=2 4x, w=1 1x, s=4 QDR),
# tab-separated (ibsim ignores them otherwise); c401-101's cable (both ends) is 1x.
awk '/^(Ca|Switch)/ { node = $0 }
     /^\[[0-9]+\]/ {
	w = 2
	if (node ~ /"c401-101 HCA-1"/ && $1 == "[1]") w = 1
	if (node ~ /"ibsw-L1-001"/ && $1 == "[1]") w = 1
	sub(/\t#.*/, "\tw=" w "\ts=4")
     } { print }' "$LAB_DIR/f.net" >"$LAB_DIR/rated.net"
if ! lab_bring_up "$LAB_DIR/rated.net" ftree; then
	nok "lab bring-up"
	exit 1
fi
export TII_SERVERS=127.0.0.1:$LAB_TOPOD_PORT
HOSTS=(c401-101 c401-102 c402-101 c402-102 c403-101)
P=$LAB_DIR/platform.xml
if "$ROOT/build/bin/topoquery" simgrid "${HOSTS[@]}" >"$P" 2>"$LAB_DIR/sg.err" && grep -q '</platform>' "$P"; then
	ok "topoquery simgrid wrote $(wc -l <"$P") lines"
else
	nok "topoquery simgrid: $(head -c 300 "$LAB_DIR/sg.err")"
	exit 1
fi
grep -q 'id="0x0002c90300000010:1" bandwidth="8000000000bps"' "$P" &&
	grep -q 'id="0x0002c90300000030:1" bandwidth="32000000000bps"' "$P" &&
	ok "c401-101's cable is 1x QDR (8 Gb/s), c402-101's 4x QDR (32 Gb/s)" ||
	nok "link rates: $(grep -m3 '<link ' "$P")"
"$ROOT/build/bin/topoquery" simgrid -o "$LAB_DIR/p2.xml" "${HOSTS[@]}" >"$LAB_DIR/o.out" 2>&1 &&
	cmp -s "$P" "$LAB_DIR/p2.xml" && [ ! -s "$LAB_DIR/o.out" ] &&
	ok "topoquery simgrid -o FILE writes the same platform to FILE, nothing to stdout" ||
	nok "simgrid -o: $(head -c 200 "$LAB_DIR/o.out")"
"$ROOT/build/bin/topoquery" simgrid c401-101 c401-101 >/dev/null 2>"$LAB_DIR/dup.err"
[ $? = 2 ] && grep -q c401-101 "$LAB_DIR/dup.err" && ok "a host named twice is refused (exit 2, usage): $(cat "$LAB_DIR/dup.err")" ||
	nok "duplicate host: $(cat "$LAB_DIR/dup.err")"

# Routes against topod's `path`: the XML lists the source's cable, then
# each switch's out port, exactly as path walks them.
python3 - "$P" "$LAB_TOPOD_PORT" "${HOSTS[@]}" <<'PY' || failed=$((failed + 1))
import re, socket, sys
xml, port, hosts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
routes = {}
for m in re.finditer(r'<route src="([^"]+)" dst="([^"]+)" symmetrical="NO">(.*?)</route>', open(xml).read()):
    routes[(m.group(1), m.group(2))] = re.findall(r'<link_ctn id="([^"]+)"/>', m.group(3))
s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rw")
bad = 0
for a in hosts:
    for b in hosts:
        if a == b:
            continue
        f.write("path %s %s\n" % (a, b)); f.flush()
        head = f.readline().split()
        n = int([w for w in head if w.startswith("lines=")][0][6:])
        sw = [f.readline().split() for _ in range(n)]
        want = ["%s:%s" % (l[0], l[2][4:]) for l in sw]
        got = routes.get((a, b), [])
        if got[1:] != want or len(got) != n + 1:
            bad += 1
            print("# %s -> %s: xml %s, path %s" % (a, b, got, want))
print("%s - %d routes of the platform equal topod's path (switch by switch, out ports)"
      % ("ok" if not bad and len(routes) == len(hosts) * (len(hosts) - 1) else "not ok", len(routes)))
sys.exit(1 if bad else 0)
PY

BIN=$LAB_DIR/flows
if ! smpicc -O1 -o "$BIN" tests/simgrid/flows.c >"$LAB_DIR/smpicc.log" 2>&1; then
	nok "smpicc: $(tail -c 300 "$LAB_DIR/smpicc.log")"
	exit 1
fi
printf '%s\n' "${HOSTS[@]}" >"$LAB_DIR/hostfile"
# run FLOWS... -> "SRC DST SECONDS" per flow on stdout
run() {
	timeout 120 smpirun "${SMPI_CFG[@]}" -platform "$P" -hostfile "$LAB_DIR/hostfile" -np ${#HOSTS[@]} \
		"$BIN" 4000000 "$@" 2>>"$LAB_DIR/smpirun.log" | awk '$1 == "flow" { print $2, $3, $4 }'
}
# near MEASURED EXPECTED -> 0 if within 5 %
near() { awk -v m="$1" -v e="$2" 'BEGIN { d = m - e; if (d < 0) d = -d; exit !(m > 0 && d <= 0.05 * e) }'; }

ta=$(run 2:3 | awk '{ print $3 }')
near "${ta:-0}" 0.0010003 && ok "(a) 4 MB over a 4x QDR cable: ${ta} s, hand-computed 0.0010003 s" ||
	nok "(a) one flow: ${ta:-none} s, want 0.0010003 s ($(tail -c 300 "$LAB_DIR/smpirun.log"))"
tb=$(run 2:3 4:3 | awk '{ print $3 }' | sort -g | tail -1)
near "${tb:-0}" 0.0020007 && ok "(b) two flows sharing the cable to c402-102: ${tb} s, hand-computed 0.0020007 s (2x)" ||
	nok "(b) two flows: ${tb:-none} s, want 0.0020007 s"
tc=$(run 0:1 | awk '{ print $3 }')
near "${tc:-0}" 0.0040003 && ok "(c) the same 4 MB from the 1x QDR cable: ${tc} s, hand-computed 0.0040003 s" ||
	nok "(c) 1x: ${tc:-none} s, want 0.0040003 s"
# topod's own prediction (load's time_us, analysis/cost.h) of the same
# flows beside SMPI's times: within 15 % (here the fluid model and the
# cost model agree to a fraction of a percent).
predict() { # RANK_HOSTS... -- S:D:B... -> seconds
	printf 'load links=max matrix %s\n' "$*" | nc -q 2 127.0.0.1 "$LAB_TOPOD_PORT" |
		sed -n '1s/.* time_us=\([0-9.]*\) .*/\1/p' | awk '{ printf "%.9f", $1 / 1e6 }'
}
near15() { awk -v m="$1" -v e="$2" 'BEGIN { d = m - e; if (d < 0) d = -d; exit !(m > 0 && d <= 0.15 * e) }'; }
pb=$(predict c402-101 c402-102 c403-101 -- 0:1:4000000 2:1:4000000)
near15 "${pb:-0}" "${tb:-0}" && ok "topod predicts (b) at ${pb} s, SMPI ${tb} s" || nok "(b) predicted ${pb:-none} s, SMPI ${tb:-none} s"
pc=$(predict c401-101 c401-102 -- 0:1:4000000)
near15 "${pc:-0}" "${tc:-0}" && ok "topod predicts (c) at ${pc} s, SMPI ${tc} s (the 1x cable is the bottleneck)" ||
	nok "(c) predicted ${pc:-none} s, SMPI ${tc:-none} s"
# The same figure through libtii (topoquery load: tii_load_t.time_s and the
# bottleneck), for a ring of two over the 1x cable: 4 MB each way, 4 ms.
# (topoquery names the cable's end, "c401-101 (0x...) port 1"; the protocol gives 0x...:1)
tq=$("$ROOT/build/bin/topoquery" load --bytes 4000000 shift:1 c401-101 c401-102 2>&1 | grep '^time ' |
	sed 's/ bottleneck [^ ]* (\(0x[0-9a-f]*\)) port \([0-9]*\)/ bottleneck \1:\2/')
want=$(printf 'load bytes=4000000 links=max shift:1 c401-101 c401-102\n' | nc -q 2 127.0.0.1 "$LAB_TOPOD_PORT" |
	sed -n '1s/.* time_us=\([0-9.]*\) bottleneck=\(0x[0-9a-f]*:[0-9]*\) .*/time \1 us bottleneck \2 at 8 Gb\/s/p')
[ -n "$want" ] && [ "$tq" = "$want" ] && ok "topoquery load (libtii): $tq" || nok "topoquery load: '$tq', protocol: '$want'"
ratio=$(awk -v a="${ta:-0}" -v c="${tc:-0}" 'BEGIN { if (a > 0) printf "%.3f", c / a; else print 0 }')
near "$ratio" 4 && ok "(c)/(a) = $ratio: a 1x link takes four times as long as a 4x one" || nok "(c)/(a) = $ratio, want 4"
lab_teardown
exit $((failed != 0))
