/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hier.h - the switch-cluster hierarchy (the seed's "neighbour-joined tree",
 * section 2.8.1, Algorithm 1), which the TII calls tii_get_network_depth,
 * tii_num_switch_clusters_at_depth and tii_connected_switch_cluster_at_depth
 * read.
 *
 * Input: every host of the route index, each represented by its default
 * port (route.h), and the distance
 *     d(a, b) = max(hops(a -> b), hops(b -> a))
 * with hops from the LFT walk of route.h, and infinity when either walk fails
 * (so d is symmetric even where routing is not).
 *
 * Clustering: agglomerative, complete linkage, with multi-joins, in rounds:
 *   1. m = the smallest distance between two active clusters. Stop if there
 *      is none or it is infinite.
 *   2. Visit the active clusters in ascending key order (key = smallest
 *      (default-port GUID, host index) among the member hosts; a bare host
 *      is a cluster of one for this purpose). An unassigned cluster i starts
 *      a group G = {i}; every later unassigned cluster j at distance m from
 *      all members of G joins G, in key order. A G of two or more becomes a
 *      new cluster whose children are G's members (hosts and clusters).
 *   3. Complete linkage: d(new, x) = max over g in G of d(g, x).
 * Unlike the printed Algorithm 1 (one group per iteration, every new
 * distance set to one constant), all disjoint groups at the current minimum
 * are formed in the same round, so a cluster made early in a round cannot
 * capture members of another group at the same distance.
 * Clusters that never meet at a finite distance become separate roots: a
 * disconnected fabric, or a host whose routes fail, gives several roots, and
 * a host left alone gets a root cluster holding just itself.
 *
 * Levels: level 0 is the roots; a cluster's level is its distance from its
 * root. A host's chain is its ancestors from the root down to its parent
 * cluster; at levels below its parent's, a host reports its parent again.
 * depth = the longest chain (levels 0 .. depth-1; 0 when there are no
 * hosts). On a 3-level fat tree: 0 = whole fabric, 1 = pods, 2 = leaf
 * switches; on a 2-level tree: 0 = whole fabric, 1 = leaf switches.
 *
 * Cluster IDs: id = sum over member hosts h (mod 2^64) of
 * hier_guid_hash(default-port GUID of h), a hash of the member GUID set: it
 * does not depend on build order, thread count or host names, and is the
 * same at every level the cluster appears at. Distinct clusters have
 * distinct member sets; in the (~2^-64) event that two sums still collide,
 * the later one in (level, key) order is rehashed with hier_guid_hash(id + 1)
 * until unique, which is just as deterministic.
 *
 * Names (for people and Slurm; the IDs above stay what the protocol and
 * libtii hand out). A switch's name is its NodeDescription with every run
 * of bytes outside [A-Za-z0-9._-] turned into one '_' (trimmed at both
 * ends, cut at 64 bytes): "MF0;sw-a:MQM8700/U1" is "MF0_sw-a_MQM8700_U1".
 * A switch whose name comes out empty, GUID-shaped ("0x" and hex), starts
 * with the reserved "sw_" or "cl_", or equals another switch's name (the
 * vendor default "MF0;..." on every unnamed switch) is named
 * "sw_<node GUID, 16 hex digits>" instead: never a guess between two.
 * A cluster is named after one real switch, chosen from switches alone so
 * that a host going away or a redundant link failing renames nothing:
 *   - leaves(C): the switches C's hosts' default ports are cabled to;
 *   - rank: 0 for a switch some host is cabled to, else 1 + the lowest
 *     rank among its up-linked neighbours (BFS; leaf 0, spine 1, core 2);
 *   - t = (dist - 1) / 2, the rank where C's routes turn (dist 1: hosts
 *     on one leaf, t = 0; dist 3: through a spine, t = 1; ...), raised to
 *     one above its child clusters' t where it is not already above;
 *   - candidates: rank-t switches reached from leaves(C) by climbing one
 *     rank per hop (the leaf itself for t = 0);
 *   - C takes the candidate with the smallest node GUID that no other
 *     cluster has taken; clusters choose in order of (t, smallest leaf
 *     GUID, level), none of which depends on which hosts are up.
 * So a leaf cluster is its leaf switch, a pod its smallest-GUID spine, a
 * 3-level fabric's root its smallest-GUID core switch. A cluster without
 * a candidate (dist inf, or no switch at rank t climbs from its leaves) is
 * "cl_<smallest leaf GUID, else its key>_<t or level>"; a name still
 * equal to another cluster's becomes "cl_<ID>". Names only change when
 * switches, their descriptions, or a leaf's last host come or go.
 *
 * Cost. Hosts with the same leaf switch and identical hop counts to and
 * from every leaf switch ("twins", normally all hosts of a leaf) are
 * clustered as one block, so the quadratic part of the work is in C, the
 * number of such classes (= leaf switches on regular fabrics), not in the
 * host count N. Time O(N * nsw + C^2 * rounds); memory O(N * A + C^2) with
 * A = number of leaf switches. The block shortcut is exact: a block is
 * split into single hosts (and the clustering rerun) whenever a round would
 * join one of its hosts at a distance below the block's internal distance,
 * which is the only case where the per-host algorithm separates twins.
 *
 * Errors: AN_E_* from route.h. Lifetime: a hier is independent of the
 * route_tab and snapshot once built; it is read-only, any thread may query.
 */
#ifndef AN_HIER_H
#define AN_HIER_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "route.h"

#define HIER_NONE UINT32_MAX
#define HIER_INF 0xFFFFu
/* Twin classes (and so leaf switches) beyond this are AN_E_RANGE: the
 * distance matrix would pass 512 MiB and the hop table (hosts x leaves)
 * 1.5 GiB. Real IB fabrics have a few thousand leaves at most; a fabric of
 * 16k+ switches with one host each needs another algorithm. */
#define HIER_MAX_CLASSES 16384u
/* A switch or cluster name and its NUL: 64 bytes of name, or a fallback
 * "cl_" + 16 hex digits + "_" + a number. */
#define HIER_NAME_LEN 72

struct hier_cluster {
	uint64_t id;        /* stable ID, see the top */
	uint64_t key;       /* smallest default-port GUID among the members */
	uint32_t parent;    /* cluster index, HIER_NONE for a root */
	uint32_t level;     /* 0 for roots */
	uint32_t nhosts;    /* hosts below it */
	uint32_t nchildren; /* clusters and hosts directly below it */
	uint16_t dist;      /* distance at which it was joined; HIER_INF for a lone host's root */
};

struct hier {
	atomic_uint refs;            /* fabrics sharing it (hier_ref); the last hier_free frees it */
	uint32_t nhosts;             /* as in the route_tab it was built from */
	uint32_t depth;
	uint32_t nclusters;
	struct hier_cluster *clusters; /* children before parents */
	uint32_t *host_parent;       /* [nhosts] the cluster each host hangs off */
	uint32_t *anc;               /* [nhosts * depth] cluster index per host and level */
	uint32_t nroots;
	uint32_t nclasses;           /* twin classes of the last run */
	uint32_t nrestarts;          /* blocks split and reruns (0 on regular fabrics) */
	char (*names)[HIER_NAME_LEN];   /* [nclusters] cluster names, see "Names" above */
	uint32_t nsw;                   /* switches of the route_tab it was built from */
	char (*swnames)[HIER_NAME_LEN]; /* [nsw] switch names, by route_tab switch index */
};

/* Stable 64-bit mix (splitmix64 finaliser of guid + golden ratio). */
uint64_t hier_guid_hash(uint64_t guid);

/* A NodeDescription as a name: runs of bytes outside [A-Za-z0-9._-]
 * become one '_', trimmed, at most 64 bytes; out may come back empty. The
 * fallbacks for empty, reserved and duplicate names are hier_build's. */
void hier_sanitize(const char *desc, char out[HIER_NAME_LEN]);

/* Builds the hierarchy for all hosts of rt, with OpenMP threads. On success
 * *out is new (free with hier_free); on error *out is untouched. */
int hier_build(const struct route_tab *rt, struct hier **out);
struct hopcover;
/* The same, its hop table from a complete cover of rt's tables over rt's
 * links (hopdist.h) where it covers a host: the distance to the host's
 * leaf plus one, as the walks would find (a lookup instead of a walk per
 * leaf and host); the other hosts walked. hc NULL or incomplete: as
 * hier_build. */
int hier_build_cover(const struct route_tab *rt, const struct hopcover *hc, struct hier **out);
void hier_free(struct hier *h);  /* drops a reference; NULL is a no-op */
/* Another reference, for a generation whose change cannot move any host
 * (fabric.c decides); returns h. */
struct hier *hier_ref(struct hier *h);

/* A hierarchy for rt with old's clusters and names made anew from rt's
 * links: for a generation with the same hosts, leaves and port states as
 * the one old was built from, whose hop counts from every leaf switch to
 * every host's default port equal that one's (fabric.c proves it), it
 * equals hier_build(rt). AN_E_INVAL if the host counts differ, AN_E_NOMEM. */
int hier_rename(const struct hier *old, const struct route_tab *rt, struct hier **out);

/* tii_get_network_depth. */
static inline uint32_t hier_depth(const struct hier *h) { return h->depth; }

/* tii_connected_switch_cluster_at_depth: the ID of host's cluster at level.
 * AN_E_INVAL if host or level is out of range. O(1). */
int hier_cluster_at(const struct hier *h, uint32_t host, uint32_t level, uint64_t *id);

/* tii_num_switch_clusters_at_depth: distinct clusters at level among hosts
 * (duplicates allowed). O(n log n); AN_E_INVAL for a bad host or level. */
int hier_count_at(const struct hier *h, const uint32_t *hosts, size_t n, uint32_t level,
		  size_t *count);

#endif
