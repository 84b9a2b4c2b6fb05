#!/usr/bin/env bash
# t_slurm_place.sh - the real Slurm of this machine takes the host files
# `topoquery order` and `topoquery map` write (issue 10):
#   ibsim fat tree k=4 -> OpenSM + the osmtopo plugin -> topod ->
#   topoquery pick / order / map --format slurm -> SLURM_HOSTFILE ->
#   slurmctld (+ slurmd, when it can run here)
# munged, slurmctld and the slurmds are private: loopback ports, a temp dir,
# our own munge key and socket (tests/slurm/slurm.conf.in, with per-node
# slurmd ports, spool and log directories added here).
#
# Checked:
#   - topoquery pick 4 of the 16 hosts: one leaf cannot hold 4 (2 hosts per
#     leaf), so two leaves of one pod, sharing-free;
#   - `sbatch --distribution=arbitrary -n N --hold` with SLURM_HOSTFILE from
#     `topoquery order --format slurm --slots 2` and from `topoquery map
#     stencil:... --format slurm` is accepted, and slurmctld's job record asks
#     for exactly those nodes (ReqNodeList) and N tasks;
#   - if slurmd runs here (one per simulated node, all on 127.0.0.1, each on
#     its own port; Debian's slurmd is built with multiple-slurmd support):
#     `srun --distribution=arbitrary` under SLURM_HOSTFILE=<map's file> runs
#     task i on line i's node (SLURMD_NODENAME), for every task. If slurmd
#     cannot start, that part says so (skip line) and the rest still counts.
# Skips (exit 0) without slurmctld/sbatch/munged or ibsim/opensm.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
TQ=$ROOT/build/bin/topoquery
failed=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; failed=$((failed + 1)); }
for t in slurmctld scontrol sbatch srun munged ibsim opensm python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "skip - $t not installed (make deps)"; exit 0; }
done
. tests/lab/lab.sh
. tests/lib/slurm.bash
export LAB_QUIET=1
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PIDS=()
stop() {
	local p=$1 i
	kill -TERM "$p" 2>/dev/null
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	return 0
}
# lab_teardown calls this before killing the lab's processes: slurmds, then
# slurmctld (it saves its state on TERM), then munged.
lab_user_cleanup() {
	local i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop "${PIDS[$i]}" 10; done
	PIDS=()
}
watch() {
	PIDS+=("$1")
	echo "$1" >>"$LAB_DIR/pids"
}

lab_init || { nok "lab_init"; exit 1; }
d=$LAB_DIR
mkdir -p "$d/etc" "$d/munge" "$d/state" "$d/spool" "$d/slurmd"
lab_fabgen fattree --k 4 --levels 3 || { nok "fabgen"; exit 1; }
lab_bring_up "$d/f.net" ftree "root_guid_file $d/roots" || { nok "ibsim, OpenSM, topod (logs in $d)"; exit 1; }
S=127.0.0.1:$LAB_TOPOD_PORT
mapfile -t all < <(python3 -c 'import json, sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["hosts"])))' "$d/f.json")

# ---- pick: 4 of the 16 hosts
"$TQ" -s "$S" pick 4 "${all[@]}" >"$d/pick.txt" 2>&1
if grep -qx 'sharing_free 1' "$d/pick.txt" && grep -qx 'leaves 2' "$d/pick.txt" && grep -qx 'pods 1' "$d/pick.txt"; then
	ok "topoquery pick 4: sharing-free, 2 leaves, 1 pod ($(sed -n 's/^nodelist //p' "$d/pick.txt"))"
else
	nok "topoquery pick 4: sharing-free, 2 leaves, 1 pod"
	sed 's/^/# /' "$d/pick.txt"
fi
mapfile -t job < <("$TQ" -s "$S" pick 4 --format list "${all[@]}")

# ---- Slurm: munged, slurmctld; every simulated host a node on 127.0.0.1
chmod 711 "$d" && chmod 755 "$d/munge"
if command -v mungekey >/dev/null 2>&1; then
	mungekey -c -k "$d/munge/key" >/dev/null 2>&1
else
	dd if=/dev/urandom of="$d/munge/key" bs=1024 count=1 2>/dev/null
	chmod 600 "$d/munge/key"
fi
munged -F --socket="$d/munge/sock" --key-file="$d/munge/key" --pid-file="$d/munge/pid" \
	--log-file="$d/munge/log" --seed-file="$d/munge/seed" >"$d/munged.out" 2>&1 </dev/null &
watch $!
for ((i = 0; i < 50; i++)); do [ -S "$d/munge/sock" ] && break; sleep 0.1; done
: >"$d/nodes.conf"
declare -A port
for h in "${all[@]}"; do
	port[$h]=$(slurm_free_port)
	echo "NodeName=$h NodeAddr=127.0.0.1 NodeHostname=localhost Port=${port[$h]} CPUs=4 State=UNKNOWN" >>"$d/nodes.conf"
done
export SLURM_CONF=$d/etc/slurm.conf
# slurm_conf CTLD-PORT SLURMD-PORT: $SLURM_CONF; each slurmd its own port.
slurm_conf() {
	sed -e "s|@DIR@|$d|g" -e "s|@USER@|$(id -un)|" -e "s|@MUNGE_SOCKET@|$d/munge/sock|" \
		-e "s|@CTLD_PORT@|$1|" -e "s|@SLURMD_PORT@|$2|" \
		-e "/^@NODES@\$/{r $d/nodes.conf" -e 'd}' \
		-e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$d/slurmd/%n|" \
		-e "s|^TopologyPlugin=.*|TopologyPlugin=topology/none|" \
		"$ROOT/tests/slurm/slurm.conf.in" >"$SLURM_CONF" || return 1
	cat >>"$SLURM_CONF" <<CONF
SlurmdPidFile=$d/slurmd/%n.pid
SlurmdLogFile=$d/slurmd/%n.log
SlurmdParameters=config_overrides
CONF
}
slurm_ctld_start "$d" slurm_conf || { nok "slurmctld up on loopback"; exit 1; }
ok "munged + slurmctld up on loopback"

# ---- host files
"$TQ" -s "$S" order --format slurm --slots 2 "${job[@]}" >"$d/order.hosts"
"$TQ" -s "$S" map stencil:4x2 --format slurm "${job[0]}*2" "${job[1]}*2" "${job[2]}*2" "${job[3]}*2" >"$d/map.hosts"
for f in order map; do
	n=$(wc -l <"$d/$f.hosts")
	jid=$(SLURM_HOSTFILE=$d/$f.hosts sbatch --parsable --hold --distribution=arbitrary -n "$n" -o /dev/null \
		--wrap true 2>"$d/$f.sbatch.err")
	rec=$(scontrol -o show job "$jid" 2>/dev/null)
	want=$(sort -u "$d/$f.hosts" | paste -sd, -)
	req=$(scontrol show hostnames "$(sed -n 's/.* ReqNodeList=\([^ ]*\) .*/\1/p' <<<"$rec")" 2>/dev/null | sort | paste -sd, -)
	if [ -n "$jid" ] && [ "$req" = "$want" ] && grep -q "NumTasks=$n " <<<"$rec"; then
		ok "sbatch --distribution=arbitrary takes topoquery $f's SLURM_HOSTFILE: job $jid asks for $want, $n tasks"
	else
		nok "sbatch --distribution=arbitrary takes topoquery $f's SLURM_HOSTFILE (job '$jid', ReqNodeList '$req', want '$want')"
		sed 's/^/# /' "$d/$f.sbatch.err" | head -5
	fi
	[ -n "$jid" ] && scancel "$jid" 2>/dev/null
done

# ---- slurmd, one per job node, if it can run here
if ! command -v slurmd >/dev/null 2>&1; then
	echo "skip - slurmd not installed: tasks not run (the job records above are what slurmctld accepted)"
	exit $((failed != 0))
fi
for h in "${job[@]}"; do
	slurmd -D -N "$h" -f "$SLURM_CONF" >"$d/slurmd/$h.out" 2>&1 </dev/null &
	watch $!
done
ready=
for ((i = 0; i < 200; i++)); do
	idle=$(sinfo -h -N -o '%N %t' -n "$(IFS=,; echo "${job[*]}")" 2>/dev/null | grep -c ' idle')
	[ "$idle" = "${#job[@]}" ] && { ready=1; break; }
	sleep 0.1
done
if [ -z "$ready" ]; then
	echo "skip - slurmd could not serve ${#job[@]} node names on this machine: tasks not run"
	sinfo -N 2>&1 | head -8 | sed 's/^/# /'
	grep -hE 'error|fatal' "$d"/slurmd/*.out "$d"/slurmd/*.log 2>/dev/null | head -5 | sed 's/^/# /'
	exit $((failed != 0))
fi
ok "${#job[@]} slurmds up on loopback, one per node name (each its own port)"
n=$(wc -l <"$d/map.hosts")
SLURM_HOSTFILE=$d/map.hosts timeout 60 srun --distribution=arbitrary -n "$n" \
	bash -c 'echo "$SLURM_PROCID $SLURMD_NODENAME"' >"$d/srun.out" 2>"$d/srun.err"
rc=$?
got=$(sort -n "$d/srun.out" | awk '{print $2}')
if [ "$rc" -eq 0 ] && [ "$got" = "$(cat "$d/map.hosts")" ]; then
	ok "srun --distribution=arbitrary runs each of the $n tasks on the node line i of map's SLURM_HOSTFILE names"
else
	nok "srun --distribution=arbitrary (exit $rc): tasks on the hostfile's nodes"
	paste <(sort -n "$d/srun.out") "$d/map.hosts" | head -10 | sed 's/^/# /'
	sed 's/^/# /' "$d/srun.err" | head -5
fi

# ---- the sbatch wrapper: idle nodes (those with a slurmd) are the free list
want=$(TOPOQUERY=$TQ TII_SERVERS=$S "$TQ" pick --format hostlist 2 $(sinfo -h -N -t idle -o '%N' | sort -u))
jid=$(TOPOQUERY=$TQ TII_SERVERS=$S sh "$ROOT/clients/slurm/sbatch-topo" -N 2 --parsable --hold -o /dev/null \
	--wrap true 2>"$d/wrap.err")
req=$(scontrol -o show job "$jid" 2>/dev/null | sed -n 's/.* ReqNodeList=\([^ ]*\) .*/\1/p')
if [ -n "$jid" ] && [ -n "$want" ] && [ "$req" = "$want" ]; then
	ok "clients/slurm/sbatch-topo -N 2: job $jid asks for the nodes topoquery pick chose among the idle ones ($req)"
else
	nok "clients/slurm/sbatch-topo -N 2: job '$jid' ReqNodeList '$req', pick chose '$want'"
	sed 's/^/# /' "$d/wrap.err" | head -5
fi
[ -n "$jid" ] && scancel "$jid" 2>/dev/null
exit $((failed != 0))
