#!/usr/bin/env bash
# t_systemd.sh - systemd/topod.service, systemd/topod.conf and
# systemd/opensm-osmtopo.conf against the built topod, without a running
# systemd (this container has none; nothing here needs one):
#   - the unit has the settings the admin guide promises, and
#     systemd-analyze verify accepts it without a warning;
#   - every key of the example topod.conf, commented out or not, is a topod
#     option, and topod runs from the example (paths moved to a temp dir)
#     with the unit's command line;
#   - Type=notify: topod sends READY=1 to $NOTIFY_SOCKET once it serves,
#     STOPPING=1 and exit status 0 on SIGTERM;
#   - as systemd's DynamicUser would run it (an unprivileged uid, no
#     capabilities, no_new_privs, the unit's directory modes): root, as
#     OpenSM is, delivers a snapshot through the 0660 ingest socket and uses
#     the 0600 admin socket; another unprivileged user can use neither;
#     the state file is written;
#   - every system call topod makes (strace, through start, ingest with an
#     OpenMP build, queries, admin, stop) is allowed by the unit's
#     SystemCallFilter=;
#   - the opensm.conf lines use keys OpenSM knows (opensm -c).
# Prints "ok - " / "not ok - " / "skip - " lines; cleans up on any exit.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
UNIT=systemd/topod.service
CONF=systemd/topod.conf
SNIPPET=systemd/opensm-osmtopo.conf
TOPOD=$ROOT/build/bin/topod
SNAP=$ROOT/build/bin/topo-snap
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "skip - $*"; }
check() { if [ "$1" -eq 0 ]; then ok "$2"; else nok "$2"; fi; }

for f in "$UNIT" "$CONF" "$SNIPPET"; do
	[ -f "$f" ] || { nok "$f exists"; exit 1; }
done
for f in "$TOPOD" "$SNAP"; do
	[ -x "$f" ] || { nok "$f built (make all)"; exit 1; }
done
command -v python3 >/dev/null 2>&1 || { echo "skip - python3 not installed"; exit 0; }

TMP=$(mktemp -d /tmp/t_systemd.XXXXXX) || exit 1
chmod 755 "$TMP"   # the unprivileged topod below must reach its directories
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	PIDS=()
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 130' INT

# ---- the unit ----------------------------------------------------------------
u() { sed -n "s/^$1=//p" "$UNIT"; }
EXEC=$(u ExecStart)
[ "$EXEC" = "/usr/local/sbin/topod --foreground --config /etc/topod/topod.conf" ]
check $? "ExecStart=$EXEC"
want="Type=notify Restart=on-failure DynamicUser=yes RuntimeDirectory=topod StateDirectory=topod
ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes NoNewPrivileges=yes
CapabilityBoundingSet= RestrictAddressFamilies=AF_UNIX&AF_INET&AF_INET6 SystemCallFilter=@system-service
MemoryDenyWriteExecute=yes LockPersonality=yes ProtectKernelTunables=yes ProtectKernelModules=yes
ProtectKernelLogs=yes ProtectControlGroups=yes ProtectClock=yes RestrictNamespaces=yes RestrictRealtime=yes
RestrictSUIDSGID=yes SystemCallArchitectures=native"
miss=
for kv in $want; do
	grep -qx -- "${kv//&/ }" "$UNIT" || miss="$miss ${kv//&/ }"
done
[ -z "$miss" ]
check $? "unit has the settings of the admin guide${miss:+ (missing:$miss)}"
n=$(u LimitNOFILE)
[ -n "$n" ] && [ "$n" -ge 10256 ]
check $? "LimitNOFILE=$n lets topod size max-conns to at least 10,000"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify checks that ExecStart's binary and the Documentation= pages
	# exist: point it at the build and at man/ laid out as a MANPATH.
	for p in man/*.[0-9]; do
		[ -f "$p" ] || continue
		mkdir -p "$TMP/man/man${p##*.}"
		ln -s "$ROOT/$p" "$TMP/man/man${p##*.}/"
	done
	mkdir -p "$TMP/unit"
	sed "s|^ExecStart=/usr/local/sbin/topod|ExecStart=$TOPOD|" "$UNIT" >"$TMP/unit/topod.service"
	out=$(MANPATH=$TMP/man systemd-analyze verify "$TMP/unit/topod.service" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && [ -z "$out" ]
	check $? "systemd-analyze verify: no error, no warning${out:+ ($(echo $out | cut -c1-300))}"
	# Filter groups for the system call check below.
	systemd-analyze syscall-filter >"$TMP/groups" 2>/dev/null
else
	skip "systemd-analyze not installed"
fi

# ---- the example configuration ---------------------------------------------------
keys=$(sed -n 's/^#\{0,1\}\([a-z][a-z-]*\)\( *=.*\)\{0,1\}$/\1/p' "$CONF" | sort -u)
help=$("$TOPOD" --help)
bad=
for k in $keys; do
	grep -q -- "--$k\b" <<<"$help" || bad="$bad $k"
done
[ -n "$keys" ] && [ -z "$bad" ]
check $? "every key of topod.conf (set or commented out) is a topod option: $(echo $keys)${bad:+ (unknown:$bad)}"
osmkeys=$(opensm -c "$TMP/osm-defaults.conf" >/dev/null 2>&1 && awk '!/^#/ && NF { print $1 }' "$TMP/osm-defaults.conf")
if [ -n "$osmkeys" ]; then
	bad=
	for k in $(awk '!/^#/ && NF { print $1 }' "$SNIPPET"); do
		grep -qx -- "$k" <<<"$osmkeys" || bad="$bad $k"
	done
	[ -z "$bad" ]
	check $? "opensm-osmtopo.conf uses keys OpenSM knows${bad:+ (unknown:$bad)}"
else
	skip "opensm not installed: opensm.conf keys not checked"
fi

# A fixture snapshot to deliver.
"$SNAP" from-text tests/fixtures/2sw4hca.topo tests/fixtures/2sw4hca.lfts "$TMP/fx.snap" 2>"$TMP/snap.err"
check $? "fixture snapshot (topo-snap from-text)"
GEN=$("$SNAP" info "$TMP/fx.snap" | sed -n 's/^generation //p')

# topod.conf with a temp dir for /run/topod and /var/lib/topod. The modes
# are those systemd gives RuntimeDirectory= and StateDirectory=.
adapt() { # DIR -> DIR/topod.conf
	mkdir -p "$1/run" "$1/state"
	chmod "$(u RuntimeDirectoryMode)" "$1/run"
	chmod "$(u StateDirectoryMode)" "$1/state"
	sed -e "s|/run/topod/|$1/run/|g" -e "s|/var/lib/topod|$1/state|g" \
		-e 's|^listen *=.*|listen = 127.0.0.1:0|' "$CONF" >"$1/topod.conf"
}
wait_ready() { # OUTFILE -> port on stdout
	local p=
	for _ in $(seq 100); do
		p=$(sed -n 's/^ready port=//p' "$1" 2>/dev/null)
		[ -n "$p" ] && break
		sleep 0.1
	done
	echo "$p"
}
ask() { # PORT LINE
	python3 - "$@" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall((sys.argv[2] + "\n").encode())
print(s.makefile().readline().strip())
EOF
}

# ---- Type=notify --------------------------------------------------------------------
A=$TMP/notify
mkdir -p "$A"
adapt "$A"
python3 - "$A/notify.sock" "$A/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        f.write(m.replace("\n", " ") + "\n")
        if "STOPPING=1" in m:
            break
EOF
PIDS+=($!)
for _ in $(seq 50); do [ -S "$A/notify.sock" ] && break; sleep 0.1; done
read -r -a cmd <<<"$EXEC"
cmd[0]=$TOPOD
cmd=("${cmd[@]/\/etc\/topod\/topod.conf/$A/topod.conf}")
NOTIFY_SOCKET=$A/notify.sock "${cmd[@]}" >"$A/out" 2>"$A/log" &
TP=$!
PIDS+=($TP)
port=$(wait_ready "$A/out")
[ -n "$port" ]
check $? "topod runs from the example config with the unit's command line"
for _ in $(seq 50); do grep -q READY=1 "$A/notify.log" 2>/dev/null && break; sleep 0.1; done
grep -qx 'READY=1' "$A/notify.log" 2>/dev/null
check $? "READY=1 on \$NOTIFY_SOCKET"
[ "$(ask "$port" ping)" = "OK pong" ] && [ -S "$A/run/ingest.sock" ] && [ -S "$A/run/admin.sock" ]
check $? "answers queries; ingest and admin sockets in the RuntimeDirectory"
kill -TERM "$TP"
wait "$TP"
rc=$?
for _ in $(seq 50); do grep -q STOPPING=1 "$A/notify.log" 2>/dev/null && break; sleep 0.1; done
[ $rc -eq 0 ] && grep -qx 'STOPPING=1' "$A/notify.log"
check $? "SIGTERM: STOPPING=1, exit status $rc"

# ---- as DynamicUser runs it: unprivileged, no capabilities ---------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "not root or no setpriv: the unprivileged run is not tested"
	[ "$failed" -eq 0 ]
	exit
fi
UID1=61871 UID2=61872   # unused uids, as DynamicUser allocates (61184-65519)
B=$TMP/dyn
mkdir -p "$B"
adapt "$B"
chown "$UID1:$UID1" "$B/run" "$B/state"
STRACE=
command -v strace >/dev/null 2>&1 && [ -s "$TMP/groups" ] && STRACE="strace -f -qq -o $B/strace"
read -r -a cmd <<<"$EXEC"
cmd[0]=$TOPOD
cmd=("${cmd[@]/\/etc\/topod\/topod.conf/$B/topod.conf}")
$STRACE setpriv --reuid="$UID1" --regid="$UID1" --clear-groups --bounding-set=-all --inh-caps=-all \
	--no-new-privs -- "${cmd[@]}" >"$B/out" 2>"$B/log" &
TP=$!
PIDS+=($TP)
port=$(wait_ready "$B/out")
[ -n "$port" ]
check $? "topod starts as uid $UID1 without capabilities"
tpid=$(pgrep -u "$UID1" -x topod | head -1)
# Under strace, $TP is strace: signals go to topod itself.
[ -n "$tpid" ] && PIDS+=("$tpid")
caps=$(sed -n 's/^CapEff:\s*//p' "/proc/$tpid/status" 2>/dev/null)
[ "$caps" = 0000000000000000 ]
check $? "it holds no capability (CapEff $caps)"
[ "$(stat -c '%a %u' "$B/run/ingest.sock")" = "660 $UID1" ] && [ "$(stat -c '%a %u' "$B/run/admin.sock")" = "600 $UID1" ]
check $? "ingest socket 0660 and admin socket 0600, owned by topod's user"
out=$("$SNAP" send "sink=unix:$B/run/ingest.sock" "$TMP/fx.snap" 2>&1)
check $? "root (as OpenSM runs) delivers through the ingest socket: $out"
gen=
for _ in $(seq 50); do
	gen=$(ask "$port" info | sed -n 's/.* generation=\([0-9]*\).*/\1/p')
	[ "$gen" = "$GEN" ] && break
	sleep 0.1
done
[ "$gen" = "$GEN" ]
check $? "topod serves the delivered generation ($gen)"
[ "$(stat -c %u "$B/state/fabric.snap" 2>/dev/null)" = "$UID1" ]
check $? "the unprivileged topod wrote state-dir/fabric.snap"
st=$(printf 'stats\n' | python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"stats\n")
print(s.makefile().readline().strip())' "$B/run/admin.sock" 2>&1)
case "$st" in "OK connections="*"accepted=1"*) ok "root uses the admin socket: stats";; *) nok "root uses the admin socket (got: $st)";; esac
out=$(setpriv --reuid="$UID2" --regid="$UID2" --clear-groups "$SNAP" send "sink=unix:$B/run/ingest.sock" "$TMP/fx.snap" 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q 'Permission denied' <<<"$out"
check $? "another unprivileged user cannot deliver: $out"
out=$(setpriv --reuid="$UID2" --regid="$UID2" --clear-groups python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$B/run/admin.sock" 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q 'Permission denied' <<<"$out"
check $? "another unprivileged user cannot use the admin socket"
out=$(setpriv --reuid="$UID2" --regid="$UID1" --clear-groups "$SNAP" send "sink=unix:$B/run/ingest.sock" "$TMP/fx.snap" 2>&1)
check $? "a member of topod's group can deliver: $out"
for q in "hops 0x0002c90300000011 0x0002c90300000021" "clusters 0 0x0002c90300000011" tree; do
	ask "$port" "$q" >/dev/null 2>&1
done
kill -TERM "${tpid:-$TP}" 2>/dev/null
wait "$TP"
rc=$?
[ $rc -eq 0 ] && [ ! -e "$B/run/ingest.sock" ]
check $? "SIGTERM: exit status $rc, sockets removed"

# ---- SystemCallFilter= ---------------------------------------------------------------------
if [ -n "$STRACE" ] && [ -s "$B/strace" ]; then
	python3 - "$TMP/groups" "$B/strace" "$UNIT" "$TOPOD" <<'EOF'
import re, sys
groups, cur = {}, None
for line in open(sys.argv[1]):
    s = line.strip()
    if not s or s.startswith("#"):
        continue
    if line[0] == "@":
        cur = s
        groups[cur] = set()
    elif cur:
        groups[cur].add(s)

def expand(name, seen=()):
    out = set()
    for m in groups.get(name, {name}) if name.startswith("@") else {name}:
        out |= expand(m, seen + (name,)) if m.startswith("@") and m not in seen else {m}
    return out

allowed = set()
for line in open(sys.argv[3]):
    if line.startswith("SystemCallFilter="):
        v = line.split("=", 1)[1].split()
        deny = v and v[0].startswith("~")
        names = set()
        for w in v:
            names |= expand(w.lstrip("~"))
        allowed = allowed - names if deny else allowed | names
used, started = set(), False
for line in open(sys.argv[2]):
    # setpriv's own calls (setresuid, capset, ...) come before it execs topod
    if not started:
        started = 'execve("%s"' % sys.argv[4] in line
        continue
    m = re.match(r"^\d+\s+([a-z_0-9]+)\(", line)
    if m:
        used.add(m.group(1))
bad = sorted(used - allowed)
print("%s - every system call topod made (%d kinds) is in SystemCallFilter=%s" % (
    "not ok" if bad else "ok", len(used), " (not allowed: %s)" % " ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
EOF
	[ $? -eq 0 ] || failed=$((failed + 1))
else
	skip "strace or systemd-analyze missing: SystemCallFilter= not checked"
fi

[ "$failed" -eq 0 ]
