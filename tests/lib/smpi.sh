# shellcheck shell=bash
# tests/lib/smpi.sh - the one place the SMPI settings for timing MPI programs
# on a topod-exported platform live (docs/performance.md, "Simulating a
# job", says why each is there). Source it, then:
#   smpirun "${SMPI_CFG[@]}" -platform P.xml -hostfile H -np N PROGRAM ...
# The platform itself carries the network settings (network/optim:Full,
# network/solver:fairbottleneck, network/crosstraffic:0; analysis/simgrid.h);
# they are repeated here so that a platform written by hand gets them too.
SMPI_CFG=(
	# Full update: Lazy mis-times many flows that start at once (issue 19).
	--cfg=network/optim:Full
	# Equal shares of a cable per flow, whatever the flows' latencies (InfiniBand
	# arbitrates per packet; CM02's max-min weights shares by route latency like TCP).
	--cfg=network/solver:fairbottleneck
	# No reverse ACK flow: IB credits do not load the data direction's reverse link
	# (and fairbottleneck would count such a 5 % flow as a full sharer).
	--cfg=network/crosstraffic:0
	# No TCP window bound (gamma / 2 latency): InfiniBand has no TCP window.
	--cfg=network/TCP-gamma:0
	# SMPI's bandwidth and latency factors are fitted to a 2009 Ethernet/TCP
	# cluster; the platform's rates are the cables' own: factor 1 at every size.
	--cfg=smpi/bw-factor:0:1
	--cfg=smpi/lat-factor:0:1
	# The program's own CPU time is not part of a network-only study: without
	# this, the host machine's speed leaks into the simulated times.
	--cfg=smpi/simulate-computation:no
)
