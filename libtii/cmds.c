/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmds.c - the commands libtii sends and the keys of their replies' heads
 * it reads: the one place libtii names a command or a head key.
 *
 * tii__req_begin() takes a row's index, so a request can only start with a
 * command written here; request.c tags the head it hands a parser with the
 * row, and tii__kv_get() (parse.c) sees in a tagged head only the keys the
 * row declares: a parser reading a key not written here reads nothing.
 *
 * tests/integration/t_tii_rows.py compares this table with topod's
 * (`topod --commands`, topod/cmd.c): every command here is one of topod's
 * query commands, every key one its row declares for the reply's head.
 * "legacy" keys are what an older topod sent in place of a current key
 * (read for compatibility): the test requires that topod's row no longer
 * has them. The generic keys request.c reads of every reply (gen or
 * generation, lines) are outside the rows.
 *
 * Body lines (after "OK ... lines=N") are not heads: their keys are the
 * parsers' own (docs/protocol.md describes them per command).
 */
#include "tii_impl.h"

#include <string.h>

const struct tii__cmd_row tii__cmds[TII__NCMDS] = {
	[TII__PING] = { "ping", "", "" },
	[TII__INFO] = { "info",
			"generation nodes switches cas links max_lid hosts sm_guid sweep snapshot_us received_us "
			"depth held engine source", "" },
	[TII__DEPTH] = { "depth", "depth", "" },
	[TII__HOPS] = { "hops", "hops", "" },
	[TII__PATH] = { "path", "src dst hops", "" },
	[TII__HOPSBATCH] = { "hopsbatch", "", "" },
	[TII__HOPSMATRIX] = { "hopsmatrix", "n", "" },
	[TII__PATHMATRIX] = { "pathmatrix", "n switches groups", "" },
	[TII__DELAYMATRIX] = { "delaymatrix", "n bytes unit", "" },
	[TII__CLUSTERS] = { "clusters", "level count", "" },
	[TII__TREE] = { "tree", "depth clusters hosts gone", "" },
	[TII__SHARED] = { "shared", "hosts sharing avg_hosts_per_leaf leaves pairs_ok pairs_failed", "" },
	[TII__ORDER] = { "order", "", "" },
	[TII__PICK] = { "pick",
			"sharing_free sharing leaves pods max_hops max_load min_leaves min_pods sharing_free_wider "
			"method reason time_us pick_time_us first_fit_time_us balanced swaps bottleneck_us limit_us "
			"first_fit_bottleneck_us limit bottleneck widened wider_leaves wider_time_us random_time_us "
			"judged alloc trades alloc_time_us", "" },
	[TII__MAP] = { "map",
		       "method hop_bytes max_load block_hop_bytes block_max_load rr_hop_bytes rr_max_load moved "
		       "bytes time_us block_time_us rr_time_us scotch_time_us swaps reason bottleneck bottleneck_bps",
		       "" },
	[TII__RESOLVE] = { "resolve", "name host hca guid node port lid dlid lmc leaf", "" },
	[TII__HOSTS] = { "hosts", "", "" },
	[TII__PLANES] = { "planes", "", "" },
	[TII__PLANE] = { "plane", "plane", "" },
	[TII__WATCH] = { "watch", "gen changed", "" },
	[TII__HISTORY] = { "history", "bytes", "" },
	[TII__DIFF] = { "diff",
			"from to links_down links_up nodes_gone nodes_new ports lft_switches lft_entries "
			"routes_changed hosts_changed", "" },
	[TII__LOAD] = { "load",
			"ranks hosts flows msgs bytes intra_msgs intra_bytes failed_msgs failed_bytes max_msgs "
			"max_bytes max_links max_hops time_us bottleneck bottleneck_bps links", "" },
	[TII__SCHEDULE] = { "schedule",
			    "algo requested ranks steps multi host_steps extra_steps tiers flows fallback reason "
			    "bytes time_us xor_time_us bound_us window ring_time_us variants form hosts hsteps k "
			    "native native_algo native_time_us",
			    "levels" },
	[TII__SIMGRID] = { "simgrid", "hosts links routes bytes omitted zones", "" },
	[TII__SWITCHES] = { "switches", "switches", "" },
	[TII__SHOW] = { "show",
			"name kind plane host nodes leaf leaf_name leaf_cluster pod leaf_cluster_name pod_name", "" },
	[TII__LINKS] = { "links", "links shown", "" },
};

/* 1 if the space-separated list has the word key. */
static int has_word(const char *list, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = list; *p;) {
		while (*p == ' ')
			p++;
		size_t w = strcspn(p, " ");
		if (w == n && !memcmp(p, key, n))
			return 1;
		p += w;
	}
	return 0;
}

int tii__cmd_reads(const struct tii__cmd_row *row, const char *key)
{
	return has_word(row->keys, key) || has_word(row->legacy, key);
}
