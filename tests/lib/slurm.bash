# tests/lib/slurm.bash - a private slurmctld on loopback, for t_slurm.sh and
# t_slurm_place.sh. The caller defines `watch PID` (hand a PID to the lab's
# teardown) and `stop PID SECS`, and exports SLURM_CONF.

slurm_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# slurm_ctld_start DIR WRITE-CONF: runs `WRITE-CONF CTLD-PORT SLURMD-PORT`
# (it writes $SLURM_CONF), starts slurmctld -D on it and sets CTLD_PID;
# 0 once `scontrol ping` says UP. A port that was free when chosen can be
# taken before slurmctld binds it (by another test's listener or the local
# end of its connections when tests run in parallel): slurmctld then dies at
# once, and a new pair of ports is tried.
slurm_ctld_start() {
	local d=$1 write=$2 try i
	for try in 1 2 3 4 5; do
		"$write" "$(slurm_free_port)" "$(slurm_free_port)" || return 1
		: >"$d/slurmctld.log"
		slurmctld -D -f "$SLURM_CONF" >"$d/slurmctld.out" 2>&1 </dev/null &
		CTLD_PID=$!
		watch "$CTLD_PID"
		for ((i = 0; i < 300; i++)); do
			scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
			kill -0 "$CTLD_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop "$CTLD_PID" 10
		CTLD_PID=
		grep -q 'Address already in use' "$d/slurmctld.out" "$d/slurmctld.log" 2>/dev/null || break
		echo "# slurmctld: port taken (try $try)"
	done
	echo "# slurmctld did not come up:"
	grep -hE 'error|fatal' "$d/slurmctld.out" "$d/slurmctld.log" 2>/dev/null | tail -5 | sed 's/^/#   /'
	return 1
}
