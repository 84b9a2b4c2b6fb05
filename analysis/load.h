/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * load.h - the load a job's communication pattern puts on every directed
 * link, from the LFT routes of one generation (docs/protocol.md, `load`).
 *
 * Input: a route_tab, a job (rank -> host index, pattern.h) and a pattern.
 * Each host sends and receives on its default rail (route_host_ep()); ranks
 * on one host talk through memory (intra-host, no link). A flow from rank r
 * on host a to rank s on host b != a follows route_walk(ep(a) -> base LID of
 * ep(b)) and adds its bytes, and one message, to every directed link it
 * crosses: a's cable, each switch's out port, the last switch's port to b.
 * A directed link is named by the node and the port it leaves by (share.h).
 * Flows whose route fails are counted apart and load nothing.
 *
 * Levels. Every node gets a level: CA/router ports 0, a switch 1 + the
 * smallest level among its up neighbours (BFS from the hosts over up links:
 * leaf switches 1, the switches above them 2, ...); a switch no host reaches
 * has level LOAD_LVL_NONE. A link's class is (level of its tail, level of its
 * head): 0>1 host-to-leaf, 1>2 leaf-to-spine, 2>1 spine-to-leaf, 1>0
 * leaf-to-host, and a>a for lateral links (a torus or a random regular graph
 * has every switch at level 1: its switch links are all 1>1).
 *
 * Seed 000's bound (dense patterns only: alltoall, allgather). below(x) is
 * the set of job hosts a node reaches by going only down (a host: itself).
 * For an up class a>a+1, switches at level a with equal below-sets form a
 * group S (a leaf; a pod's spine switches); every message from S's ranks to
 * the others must leave S by one of the group's u up links, so some up link
 * carries at least ceil(R_S (R - R_S) / u) messages (R = ranks of the job,
 * R_S = ranks in S): the whole-exchange form of the seed's U(l) = Pi_l (Pi_L
 * - Pi_l). The same holds for the down class a+1>a into S. The bound of a
 * class is the largest over its groups. It is defined when every switch
 * link joins adjacent levels (no a>a class) and the below-sets at each level
 * are equal or disjoint (a fat tree, full, over-subscribed or with failed
 * links); else it is reported as undefined (-1). The host cables (0>1, 1>0)
 * carry c_h (R - c_h) exactly, which is their bound.
 *
 * The hosts behind a link: the job's hosts in below() of its lower end (for
 * a lateral link, of its tail): for a host cable, that host; for a leaf's up
 * link, the job's hosts on that leaf.
 *
 * Cost. Routes are by destination, and hosts on one leaf share their route
 * after their cable, so the work is per (destination host, source leaf):
 * per destination, the pattern's weights are summed per source leaf and one
 * walk per loaded leaf adds them up the route. Dense patterns never
 * enumerate rank pairs: a leaf's weight is c_d * (ranks on the leaf).
 * Time O(H_d * (L_s * hops + flows to d)), memory O(links + ranks + flows of
 * an explicit or sparse pattern) per thread, never ranks^2. OpenMP over
 * destination hosts with per-thread link arrays.
 *
 * Bytes. A message may carry up to TOPO_MSG_BYTES_MAX (2^53); the sums are
 * checked, not the addends: the pattern's total (pattern_total_bytes) must
 * stay within TOPO_BYTES_TOTAL_MAX (2^62). Every other figure but a
 * level's total is then within it too, since a flow crosses a directed
 * link at most once (a route that revisits a switch fails) and lands in
 * one hop bucket; a level's total can count a flow once per link of the
 * class and is checked as it is summed.
 *
 * Errors: AN_E_* (route.h): AN_E_NOMEM, AN_E_INVAL (a bad job or a
 * pattern that does not fit; check with pattern_check/pattern_job_check to
 * get the reason), AN_E_RANGE (the bytes total more than
 * TOPO_BYTES_TOTAL_MAX; pattern_total_bytes says why). Lifetime: a load holds no pointer into the route_tab.
 */
#ifndef AN_LOAD_H
#define AN_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "pattern.h"
#include "route.h"

#define LOAD_LVL_NONE 255u
#define LOAD_HOPS_MAX 64       /* hop counts above it are added to the last bucket */

struct load_link {
	uint32_t node;          /* node it leaves from */
	uint8_t port;           /* port it leaves by */
	uint8_t from, to;       /* levels of its ends */
	uint32_t head;          /* node it leads to, ROUTE_NONE if unknown */
	uint64_t msgs, bytes;
};

struct load_level {
	uint8_t from, to;
	uint32_t nlinks;        /* directed links of this class in the fabric */
	uint32_t nused;         /* of those, loaded */
	uint64_t max_msgs, max_bytes, tot_msgs, tot_bytes;
	int64_t bound_msgs;     /* seed 000's lower bound on max_msgs, -1 if undefined */
	int64_t bound_bytes;
};

struct load {
	uint32_t nranks, nhosts;      /* ranks; distinct hosts of the job */
	uint64_t flows, msgs, bytes;  /* all flows of the pattern */
	uint64_t intra_msgs, intra_bytes;   /* same host */
	uint64_t fail_msgs, fail_bytes;     /* route failed */
	uint32_t max_hops;
	uint64_t hop_msgs[LOAD_HOPS_MAX + 1], hop_bytes[LOAD_HOPS_MAX + 1]; /* by switches crossed */

	uint32_t nlinks;
	struct load_link *links;      /* loaded links, by (node, port) */
	uint64_t max_msgs, max_bytes; /* over links */
	uint32_t nmax;
	uint32_t *max;                /* [nmax] indices into links[] with bytes == max_bytes */
	uint32_t *behind_off;         /* [nmax + 1] hosts behind max link i: */
	uint32_t *behind;             /* behind[behind_off[i] .. behind_off[i+1]), host indices, ascending */

	uint32_t nlevels;
	struct load_level *levels;    /* by (from, to) */
};

/* threads: OpenMP team size (>= 1). On success *out is new (load_free). */
int load_build(const struct route_tab *rt, const struct pat_job *job, const struct pattern *p,
	       int threads, struct load **out);
void load_free(struct load *l);  /* NULL is a no-op */

#endif
