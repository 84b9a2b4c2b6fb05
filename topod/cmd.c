/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.c - the command table (see cmd.h). One row per command; keep it in
 * the order `help` should list them.
 */
#include "cmd.h"

#include <string.h>

#include "delay_cmd.h"
#include "estimate.h"
#include "history_cmd.h"
#include "inventory_cmd.h"
#include "place_cmd.h"
#include "plane_cmd.h"
#include "query.h"
#include "server_impl.h"
#include "simgrid_cmd.h"

/* Heavy: the answer grows with the request (a matrix, a walk of every pair
 * of a job) and may take milliseconds to seconds; everything else is a few
 * lookups. */
const struct cmd cmd_table[] = {
	{ "ping", 0, 0, 0, answer_ping, "ping", "liveness: OK pong", NULL, NULL, "" },
	{ "help", 0, 0, 0, answer_help, "help", "the list of commands", NULL, NULL, "" },
	{ "quit", 0, 0, 0, answer_quit, "quit", "OK bye, then close", NULL, NULL, "" },
	{ "info", 0, 0, 0, answer_info, "info", "generation, counts, SM, routing engine, source; a generation held back (held=)", NULL, NULL,
	  "gen generation nodes switches cas links hosts max_lid engine sm_guid sweep snapshot_us "
	  "received_us decode_ms build_ms depth held source" },
	{ "hops", 2, 2, CMD_FABRIC, answer_hops, "hops HOSTA HOSTB", "switches traversed from A to B", NULL, NULL, "gen hops" },
	{ "path", 2, 2, CMD_FABRIC, answer_path, "path HOSTA HOSTB", "the route from A to B, switch by switch", NULL, NULL, "gen src dst hops lines" },
	{ "query", 1, 1, CMD_FABRIC, answer_seed_query, "query HOSTA:HOSTB", "the route in the form of Subramoni 2013's query server: a 0xSW ... b", NULL, NULL, "" },
	{ "hopsbatch", 0, -1, CMD_FABRIC, answer_hopsbatch, "hopsbatch A:B [A:B ...]", "hop counts of many pairs", NULL, NULL, "gen lines" },
	{ "hopsmatrix", 1, -1, CMD_FABRIC | CMD_HEAVY, answer_hopsmatrix, "hopsmatrix HOST [HOST ...]",
	  "hop counts of every ordered pair of the hosts", est_hopsmatrix, NULL, "gen n lines" },
	{ "pathmatrix", 1, -1, CMD_FABRIC | CMD_HEAVY, answer_pathmatrix, "pathmatrix HOST [HOST ...]",
	  "routes of every ordered pair of the hosts", est_pathmatrix, NULL, "gen n groups switches lines" },
	{ "delaymatrix", 1, -1, CMD_FABRIC | CMD_HEAVY, answer_delaymatrix, "delaymatrix [bytes=B] HOST [HOST ...]",
	  "predicted ns of one B-byte message for every ordered pair: latency + B over the route's slowest cable", est_delaymatrix, NULL, "gen n bytes unit lines" },
	{ "depth", 0, 0, CMD_FABRIC, answer_depth, "depth", "levels of the switch-cluster hierarchy", NULL, NULL, "gen depth" },
	{ "clusters", 2, -1, CMD_FABRIC, answer_clusters, "clusters LEVEL HOST [HOST ...]",
	  "each host's switch cluster at LEVEL", NULL, NULL, "gen level count lines" },
	{ "tree", 0, 1, CMD_FABRIC, answer_tree, "tree [gone]",
	  "the whole hierarchy, cluster names; gone: hosts earlier generations had", NULL, NULL, "gen depth clusters hosts lines gone?" },
	{ "shared", 1, -1, CMD_FABRIC | CMD_HEAVY, answer_shared, "shared HOST [HOST ...]",
	  "link sharing inside an allocation", est_shared, NULL,
	  "gen hosts sharing avg_hosts_per_leaf leaves pairs_ok pairs_failed lines" },
	{ "order", 0, -1, CMD_FABRIC | CMD_HEAVY, answer_order, "order [HOST ...]",
	  "hosts in hierarchy order (leaf, then pod): for hostfiles", est_order, NULL, "gen hosts leaves pods lines" },
	{ "pick", 2, -1, CMD_FABRIC | CMD_HEAVY, answer_pick, "pick [bytes=B] [pattern=P] [leaves=any|fewest|auto] [run=bound|route|xor|MODEL] N HOST [HOST ...] [-- S:D:B ...] | [bytes=B] trade N A1 ... AN F1 ... Fm",
	  "choose N of the free hosts: fewest leaves and pods unless more are predicted faster, no shared links above the leaf, never slower than first-fit or random picks, judged by the bound or the all-to-all the job runs (run=); or the hosts to trade in an allocation", est_pick, NULL,
	  "gen picked? free sharing_free? sharing leaves pods max_hops max_load pairs_failed "
	  "min_leaves? min_pods? sharing_free_wider? method? reason? bytes time_us pick_time_us? "
	  "first_fit_time_us? balanced swaps bottleneck_us limit_us first_fit_bottleneck_us limit "
	  "bottleneck widened? wider_leaves? wider_time_us? random_time_us? judged? pattern? lines "
	  "alloc? trades? alloc_time_us? alloc_bottleneck_us?" },
	{ "map", 2, -1, CMD_FABRIC | CMD_HEAVY, answer_map, "map [bytes=B] GRAPH HOST[*SLOTS] ... [-- ADJ ...]",
	  "ranks of a communication graph onto hosts (Scotch), judged against block by predicted time", est_map, NULL,
	  "gen ranks hosts method hop_bytes max_load block_hop_bytes block_max_load rr_hop_bytes "
	  "rr_max_load moved pairs_failed bytes time_us block_time_us rr_time_us scotch_time_us swaps "
	  "reason bottleneck bottleneck_bps lines" },
	{ "resolve", 1, 1, CMD_FABRIC, answer_resolve, "resolve NAME", "what a name means: port, LID, leaf", NULL, NULL, "gen name host hca guid node port lid dlid lmc leaf" },
	{ "hosts", 0, 0, CMD_FABRIC, answer_hosts, "hosts", "every host and its rails", NULL, NULL, "gen lines" },
	{ "planes", 0, 1, CMD_PLANES, answer_planes, "planes [HOST]",
	  "the fabric planes (subnets) served, or those HOST is on", NULL, NULL, "gen planes lines" },
	{ "plane", 0, 1, CMD_PLANES, answer_plane, "plane [NAME|auto]",
	  "ask this connection's questions of one plane (auto: the plane the hosts are on)", NULL, NULL, "plane gen" },
	{ "watch", 1, 2, CMD_WATCH, answer_watch, "watch GEN [TIMEOUT_MS]",
	  "wait until a generation other than GEN is served (long poll): OK gen=G changed=1|0", NULL, NULL, "gen changed" },
	{ "history", 0, 0, 0, answer_history, "history", "the generations kept: time, SM, engine, counts", NULL, NULL, "gen bytes lines" },
	{ "diff", 2, -1, CMD_FABRIC | CMD_HEAVY, answer_diff, "diff G1|@TIME G2|@TIME [HOST ...]",
	  "what changed between two generations: links, nodes, LFTs, and whose routes", est_diff, NULL,
	  "gen from to links_down links_up nodes_gone nodes_new ports lft_switches lft_entries "
	  "routes_changed hosts_changed lines" },
	{ "load", 2, -1, CMD_FABRIC | CMD_HEAVY, answer_load,
	  "load [bytes=N] [links=all|max|none] SPEC RANK [RANK ...] [-- S:D:B ...]",
	  "link loads of a job's communication pattern", est_load, NULL,
	  "gen pattern ranks hosts flows msgs bytes intra_msgs intra_bytes failed_msgs failed_bytes "
	  "max_msgs max_bytes max_links max_hops time_us bottleneck bottleneck_bps links lines" },
	{ "schedule", 2, -1, CMD_FABRIC | CMD_HEAVY, answer_schedule,
	  "schedule xor|tacs1|tacs2|opt|route|allgather|kshift|agring|ring|agbest [conflicts=N] [sparsity=X] [k=N] [flows=0|1] [bytes=B] [fallback=0|1] [window=1..32|auto] [native=MODEL] [form=ranks|hosts] HOST[*N] ...",
	  "an all-to-all or allgather schedule for a rank list, with per-step link loads and its predicted time against the MPI's own (XOR, ring)", est_schedule, NULL,
	  "gen algo requested ranks steps multi host_steps extra_steps tiers flows fallback reason "
	  "bytes time_us xor_time_us bound_us window? lines ring_time_us? variants? form? hosts? "
	  "hsteps? k? native? native_algo? native_time_us?" },
	{ "simgrid", 1, -1, CMD_FABRIC | CMD_HEAVY, answer_simgrid, "simgrid all | HOST [HOST ...]",
	  "a SimGrid platform of the hosts (all: the whole fabric): LFT routes, links at their rates (smpirun -platform)", est_simgrid, NULL, "gen hosts links routes bytes lines omitted? zones?" },
	{ "switches", 0, 0, CMD_FABRIC, answer_switches, "switches",
	  "every switch: node GUID and name (the names clusters take)", NULL, NULL, "gen switches lines" },
	{ "show", 1, 1, CMD_FABRIC | CMD_PLANES, answer_show, "show HOST|HCA|SWITCH",
	  "a host, HCA or switch: GUIDs, LIDs, leaf, pod, plane, each port's neighbour, width, speed, state", NULL, NULL,
	  "gen name kind plane host nodes leaf leaf_name leaf_cluster pod leaf_cluster_name pod_name "
	  "lines" },
	{ "links", 0, 2, CMD_FABRIC | CMD_HEAVY, answer_links,
	  "links [name=SUBSTRING] [state=down|init|armed|active|notactive|up]",
	  "every cable once, like iblinkinfo: both ends, width, speed, state", est_links, NULL, "gen links shown lines" },
	/* the admin socket's own, in the order ERR UNKNOWN lists them there */
	{ "stats", 0, 0, CMD_ADMIN, NULL, "stats",
	  "the server's counters: connections, requests, errors, snapshots, heavy work, budgets", NULL, admin_stats, NULL },
	{ "reload", 0, 0, CMD_ADMIN, NULL, "reload", "read --load, --topology or the state file again", NULL,
	  admin_reload, NULL },
	{ "restore", 1, 2, CMD_ADMIN, NULL, "restore PATH [force]",
	  "serve the snapshot in PATH; force: even an older generation", NULL, admin_restore, NULL },
	{ "confirm", 1, 1, CMD_ADMIN, NULL,
	  "confirm GENERATION (the one held back: info's held=, the log, topod_generation_held)",
	  "serve the generation the shrink guard holds back", NULL, admin_confirm, NULL },
	{ "shutdown", 0, 0, CMD_ADMIN, NULL, "shutdown", "stop topod once the reply is written", NULL,
	  admin_shutdown, NULL },
};

const size_t cmd_count = sizeof(cmd_table) / sizeof(cmd_table[0]);

const struct cmd *cmd_find(const char *name)
{
	for (size_t i = 0; i < cmd_count; i++)
		if (!strcmp(cmd_table[i].name, name))
			return &cmd_table[i];
	return NULL;
}
