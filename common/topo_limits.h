/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_limits.h - the query protocol's limits, the one definition that topod
 * (which enforces them) and libtii (which checks requests before sending and
 * bounds what it accepts) both include. Installed beside tii.h.
 *
 * Every value is a bound on untrusted input, with its reason.
 */
#ifndef TOPO_LIMITS_H
#define TOPO_LIMITS_H

/* The query port topod listens on and clients try when none is given
 * ("-s host" means host:7878). A string: it goes into address specs. */
#define TOPO_PORT_DEFAULT "7878"

/* One request line, without its newline. A 4,096-host job's host list
 * (hostnames of ~16 bytes, ~70 KiB) fits with room for a rank list; a
 * longer line is an error, not a reason to buffer without end. */
#define TOPO_LINE_MAX (256 * 1024)

/* Words after the command in one request: a rank list of 16,384 ranks. */
#define TOPO_ARGS_MAX 16384

/* Hosts in one matrix-shaped request (hopsmatrix, pathmatrix, shared, and
 * the job analyses): their answers grow as hosts^2, and 4,096 hosts is 16M
 * cells. */
#define TOPO_MATRIX_MAX 4096

/* Ranks in one job request (several ranks may share a host). */
#define TOPO_RANKS_MAX 16384
/* Bytes of one message: `load bytes=`, a traffic matrix's S:D:BYTES, a
 * schedule's block, `pick bytes=`, `map bytes=` (per unit of edge
 * weight), `delaymatrix bytes=`. 2^53 (8 PiB): the largest count a double
 * still holds exactly, so that predictions, JSON readers and Python see the
 * number that was asked; far beyond a real message (a long run's traffic
 * matrix per pair, MPI-4's large counts). Not a cap on real inputs: what
 * can overflow is the sums, bounded below. */
#define TOPO_MSG_BYTES_MAX (1ull << 53)

/* The most bytes any total of one request may reach: a job's flows, one
 * link's or one level's load, a mapping's traffic. 2^62 (4.6 EB): every
 * total is then exact in the signed and unsigned 64-bit fields of the
 * replies and of libtii, with room for one more term before a check. A
 * request whose totals would pass it is refused (ERR RANGE), never wrapped:
 * 16,384 ranks all-to-all may send up to 2^34 bytes per pair, 1,024 ranks
 * 2^42, a single pair 2^53. */
#define TOPO_BYTES_TOTAL_MAX (1ull << 62)

/* A hostname or HCA label: a NodeDescription is 64 bytes, so no token of
 * it is longer. */
#define TOPO_NAME_MAX 64

/* A name as a request may spell it: "host/HCA", a GUID, "lid:N", with
 * slack; a longer argument can name nothing. */
#define TOPO_QUERY_NAME_MAX 160

/* Fabric planes (subnets) one topod serves: each rail of a multi-rail
 * cluster, or a compute and a storage fabric, has its own subnet manager,
 * generations, routes and hierarchy. A plane's name is 1..TOPO_PLANE_NAME_MAX
 * of [A-Za-z0-9_-]. */
#define TOPO_PLANES_MAX 8
#define TOPO_PLANE_NAME_MAX 32
#define TOPO_PLANE_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

/* `watch`: how long a request waits for a new generation when it names no
 * timeout, and at most. Holding one costs a connection and a timer. */
#define TOPO_WATCH_DEFAULT_MS 60000
#define TOPO_WATCH_MAX_MS 3600000

/* `simgrid`: hosts of one exported SimGrid platform (every ordered pair is
 * a route: 65,280 at 256), the platform's bytes (about 30 MiB at 256 hosts
 * on a 3-level tree), and switches on one route (so that a route's line
 * stays far below a reply line's limit; real routes have a handful). */
#define TOPO_SIMGRID_HOSTS_MAX 256
#define TOPO_SIMGRID_BYTES_MAX (64u * 1024 * 1024)
#define TOPO_SIMGRID_HOPS_MAX 64
/* A platform link's rate and latency as a reader accepts them: far above
 * any cable (an XDR 12x port is about 2.4e12 bit/s) and any latency, yet
 * low enough that a rate in bytes/s still fits a uint64_t and a float. */
#define TOPO_LINK_BPS_MAX 1e15
#define TOPO_LINK_LAT_NS_MAX 1e12

/* `schedule`: a rank-level reply (form=ranks with its flows) lists every
 * ordered rank pair: at most this many (2,048 ranks: 32 MiB of flows in
 * topod and about 40 MiB of reply; 4,096 ranks were 128 MiB + 159 MB). Larger
 * jobs ask form=hosts (libtii does): steps of host pairs that the client
 * expands, with figures computed per host pair. */
#define TOPO_SCHED_RANK_FLOWS_MAX (2048u * 2047u)

/* `schedule` tacs1/tacs2: job hosts at most. The host-level algorithm holds
 * H^2 pair states and candidates and (H-1) x links loads, and its reply
 * lists H(H-1) host flows: about 30 MiB in all at 1,024 hosts. */
#define TOPO_SCHED_HOSTS_MAX 1024

/* `schedule window=`: the most steps a rank keeps in flight (window=auto
 * tries 1, 2, 4, ... up to it). With one block each way per step, 32 steps
 * are MPICH's own throttle for a medium Alltoall (32 pairs in flight);
 * Open MPI's linear Alltoall keeps every pair in flight. */
#define TOPO_SCHED_WINDOW_MAX 32

/* `schedule conflicts=`: conflicts allowed per link (beyond that TACS is
 * XOR); `schedule k=`: kShift's shift. */
#define TOPO_SCHED_CONFLICTS_MAX 64
#define TOPO_SCHED_K_MAX 16384

/* pick run=route|xor|MODEL judges every candidate by simulating the
 * all-to-all step by step (a few dozen schedules a pick): up to this many
 * hosts, where the simulation is bounded (cost.h COST_SIM_FLOWS_MAX). */
#define TOPO_PICK_RUN_HOSTS_MAX 256

/* `links`: cable lines one reply lists. The largest fabrics built have
 * ~60k nodes of 36 to 64 ports: about 1M cables, each listed once; past it
 * the request must filter (ERR TOOMANY), and libtii refuses more lines. */
#define TOPO_LINKS_MAX (1u << 20)

/* `show HOST`: HCAs (nodes) listed for one host; a host of more shows its
 * first ones by rail order (real hosts have 1 to 8). */
#define TOPO_SHOW_NODES_MAX 64

/* Heavy requests (those topod runs on its worker pool): the deadline by
 * which each is answered, whether it waited or ran, unless the operator
 * sets another (topod --request-timeout): past it the answer is
 * ERR TIMEOUT and the work is cancelled. A client waiting for a heavy
 * reply needs no longer timeout than this. */
#define TOPO_HEAVY_TIMEOUT_DEFAULT_S 60

/* `simgrid all`: the whole fabric in one platform (analysis/simgrid.h:
 * one zone per leaf, so routes grow as leaves x hosts, not hosts^2).
 * Measured: a synthetic 3,456-host 3-level fat tree (k=24, 288 leaves of 12)
 * is 1.12M route elements, 193 MB of XML, 2.4 s in topod; SimGrid 3.32 loads
 * it in 7.6 s and 420 MB. The bytes bound the memory of one request in topod
 * and of the reply in libtii; the hosts, a fabric of that size with room. */
#define TOPO_SIMGRID_ALL_HOSTS_MAX 4096
#define TOPO_SIMGRID_ALL_BYTES_MAX (256u * 1024 * 1024)

#endif
