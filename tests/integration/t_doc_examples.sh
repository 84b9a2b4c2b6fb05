#!/usr/bin/env bash
# test: lock mpi - runs real mpirun/mpiexec jobs whose ranks busy-poll, oversubscribed; two such jobs at once on
# 2 cores starve each other past their mpirun timeouts
# Every command example in README.md, docs/ and the man pages runs as
# written (tests/lib/docexamples.py finds them; its NOT_RUN list names the
# few that cannot run here, and why).
#
# "As written" means the user's paths and addresses: topod on
# 127.0.0.1:7878, its ingest and admin sockets in /run/topod, its state in
# /var/lib/topod, topology.conf in /etc/slurm, a key in /etc/topod, the
# servers topod1 and topod2. So topod and the examples run in private
# mount and network namespaces (unshare): /etc and /var/lib are overlays
# whose writes vanish with the test, /run and /tmp fresh tmpfs, loopback
# their own (port 7878 cannot collide with anything of the machine's).
# The fabric is the one the examples name: 16 leaves of 20 hosts
# (c401-101 .. c416-120) under 4 spines, simulated by ibsim and routed by
# OpenSM (ftree) with our plugin, which delivers to topod from outside the
# namespaces through a UNIX socket in the lab directory.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
command -v unshare >/dev/null || { echo "not ok - unshare missing (util-linux)"; exit 1; }
[ -x build/bin/topod ] || { echo "not ok - build/bin/topod: run make first"; exit 1; }
# The lab's directory must be outside the namespaces' fresh /tmp.
export TMPDIR=/var/tmp
. tests/lab/lab.sh
LAB_QUIET=1
lab_init
lab_fabgen xgft --h 2 --m 20,16 --w 1,4 || { echo "not ok - fabgen: $(cat "$LAB_DIR/fabgen.err")"; exit 1; }
lab_start_ibsim "$LAB_DIR/f.net" || { echo "not ok - ibsim did not start"; exit 1; }
mkdir -p "$LAB_DIR/ov/etc.u" "$LAB_DIR/ov/etc.w" "$LAB_DIR/ov/lib.u" "$LAB_DIR/ov/lib.w" "$LAB_DIR/work"
# The example files the docs name: a job's hosts, a scheduler's idle list.
python3 - "$LAB_DIR/f.json" "$LAB_DIR/work" <<'PY'
import json, sys
h = sorted(json.load(open(sys.argv[1]))["hosts"])
open(sys.argv[2] + "/job.hosts", "w").write("\n".join(h[:16]) + "\n")
open(sys.argv[2] + "/idle.hosts", "w").write("\n".join(h[3::8][:37]) + "\n")
PY

cat >"$LAB_DIR/inner.sh" <<'EOF'
# Runs inside the namespaces: $1 = lab dir, $2 = source tree.
set -u
L=$1 ROOT=$2
ip link set lo up || exit 1
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$L/ov/etc.u,workdir=$L/ov/etc.w" /etc || exit 1
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$L/ov/lib.u,workdir=$L/ov/lib.w" /var/lib || exit 1
# The source tree may itself be under /tmp or /run (a CI clone): bind it
# back in place through the fresh tmpfs.
mkdir -p "$L/src" && mount --bind "$ROOT" "$L/src" || exit 1
mount -t tmpfs none /run && mount -t tmpfs none /tmp || exit 1
case $ROOT in /tmp/*|/run/*) mkdir -p "$ROOT" && mount --bind "$L/src" "$ROOT" || exit 1 ;; esac
mkdir -p /run/topod /var/lib/topod /etc/topod /etc/slurm && chmod 700 /var/lib/topod
printf '127.0.0.1 topod1\n127.0.0.2 topod2\n' >>/etc/hosts
"$ROOT/build/bin/topod" -f -l 127.0.0.1:7878 -i "unix:$L/ingest.sock" -i unix:/run/topod/ingest.sock -a /run/topod/admin.sock \
	-d /var/lib/topod >"$L/topod.out" 2>"$L/topod.log" &
TOPOD=$!
trap 'kill $TOPOD 2>/dev/null; wait $TOPOD 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "^ready" "$L/topod.out" && break; sleep 0.1; done
grep -q "^ready" "$L/topod.out" || { echo "not ok - topod did not start in the namespaces"; exit 1; }
touch "$L/ready"
for _ in $(seq 3000); do [ -e "$L/go" ] && break; sleep 0.1; done
export PATH="$ROOT/build/bin:$PATH"
for _ in $(seq 600); do
	topoquery info 2>/dev/null | grep -q '^generation [1-9]' && break
	sleep 0.1
done
topoquery info 2>/dev/null | grep -q '^generation [1-9]' || { echo "not ok - no fabric served within 60 s"; exit 1; }
# The profiler's reports the examples read: an 8-rank all-to-all under
# topoprof (man topoprof.7), ranks on c401-101.. in order (default) and
# spread over the leaves (mapped).
head -8 "$L/work/job.hosts" >"$L/default.map"
awk 'NR % 2 == 1' "$L/work/idle.hosts" | head -8 >"$L/mapped.map"
for r in default:default mapped:mapped run1:default run2:mapped topoprof:default; do
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 90 mpirun --oversubscribe -np 8 \
		-x TII_HOSTMAP="$L/${r#*:}.map" -x LD_PRELOAD="$ROOT/build/lib/libtopoprof.so" \
		-x TOPOPROF_OUT="$L/work/${r%%:*}" "$ROOT/build/tests/mpi/prof_alltoall" >"$L/mpi.out" 2>&1 </dev/null ||
		{ echo "not ok - the profiler's report ${r%%:*}.json: mpirun failed"; sed 's/^/# /' "$L/mpi.out" | tail -5; fail=1; }
done
python3 "$ROOT/tests/lib/docexamples.py" run "$ROOT" "$L/work" || fail=1
exit ${fail:-0}
EOF

unshare --mount --net --propagation private bash "$LAB_DIR/inner.sh" "$LAB_DIR" "$ROOT" >"$LAB_DIR/inner.out" 2>&1 &
INNER=$!
lab_own "$INNER"
# A loaded machine may take a while for the namespaces and topod.
for _ in $(seq 600); do [ -e "$LAB_DIR/ready" ] && break; kill -0 "$INNER" 2>/dev/null || break; sleep 0.1; done
[ -e "$LAB_DIR/ready" ] || {
	echo "not ok - topod in the namespaces did not start"
	sed 's/^/# /' "$LAB_DIR/inner.out" "$LAB_DIR/topod.out" "$LAB_DIR/topod.log" 2>/dev/null | tail -20
	exit 1
}
LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	lab_run_opensm ftree "root_guid_file $LAB_DIR/roots" "event_plugin_name osmtopo" \
	"event_plugin_options sink=unix:$LAB_DIR/ingest.sock" || { echo "not ok - OpenSM did not route the fabric"; osm_failed=1; }
touch "$LAB_DIR/go"
rc=0
wait "$INNER" || rc=$?
cat "$LAB_DIR/inner.out"
[ "$rc" -eq 0 ] || { echo "# topod's log:"; tail -5 "$LAB_DIR/topod.log" | sed 's/^/# /'; }
[ -z "${osm_failed:-}" ] || rc=1
exit "$rc"
