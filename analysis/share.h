/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * share.h - routes and link sharing inside one job's allocation (seed
 * sections 6.2.1 and 8.2.2): tii_get_network_path_matrix,
 * tii_get_num_hosts_sharing_links, tii_get_hosts_sharing_links and
 * tii_get_avg_hosts_per_leaf_switch.
 *
 * Input: H, a list of n distinct end ports (normally each host's default
 * port, route_host_ep()), in the caller's order; results refer to hosts by
 * position 0..n-1 in that list. Routes are the LFT walks of route.h.
 *
 * Definitions
 *   leaf(h)     the switch h is cabled to, if that link is ACTIVE (a switch
 *               end port is its own leaf); hosts without one have no leaf.
 *   path(i, j)  the switches of route_walk(H[i] -> base LID of H[j]),
 *               including i == j (which goes to the leaf and back).
 *   load        every ordered pair i != j whose route succeeds adds one to
 *               each directed link it uses: the source's own cable, each
 *               switch-to-switch link and the last switch's link to j. A
 *               directed link is named by the node and port it leaves by.
 *               Failed routes add nothing and are counted in npairs_failed.
 *   ingress(j)  the set of last switch-to-switch links on the successful
 *               routes to j from hosts of H on other leaf switches.
 *   sharing     j and j' share a link when ingress(j) and ingress(j')
 *               intersect (both then hang off the same leaf). groups[] lists,
 *               per such link, the hosts whose ingress contains it (two or
 *               more); sharing[] is their union, nsharing its size
 *               (tii_get_num_hosts_sharing_links).
 *   avg_hosts_per_leaf  hosts of H that have a leaf / distinct leaves among
 *               them (0 if none): tii_get_avg_hosts_per_leaf_switch.
 *
 * Cost. Hosts on one leaf switch have the same route to any destination
 * after their first cable (LFT routing is by destination), so routes are
 * walked once per (source leaf, destination), memoised per destination over
 * switches: O(G * n * hops) time with G = distinct source leaves (<= n),
 * spread over OpenMP threads. Memory O(G * n) for the path matrix when
 * SHARE_KEEP_PATHS is asked for, else O(n + switches + ports) per thread;
 * nothing depends on the fabric's total host count beyond one pass over its
 * port table.
 *
 * Errors: AN_E_* from route.h. Lifetime: the share holds no pointer into
 * the route_tab or snapshot; it is read-only after share_build().
 */
#ifndef AN_SHARE_H
#define AN_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"

#define SHARE_KEEP_PATHS 1u   /* keep the path matrix for share_path() */
/* (source leaves x hosts) cells of a kept path matrix: 4,096 hosts on as
 * many leaves. Beyond it the matrix is O(GiB): ask without the flag. */
#define SHARE_MAX_PATH_CELLS (1u << 24)

struct share_link {
	uint32_t node;   /* the node it leaves from */
	uint32_t count;  /* ordered pairs routed over it */
	uint8_t port;    /* the port it leaves by */
};

struct share_group {
	uint32_t node;   /* the shared ingress link, as in share_link */
	uint8_t port;
	uint32_t first;  /* its hosts: members[first .. first + n), ascending positions */
	uint32_t n;
};

struct share_col;

struct share {
	uint32_t n;                 /* hosts in H */
	uint64_t npairs_ok;         /* ordered pairs i != j with a route */
	uint64_t npairs_failed;
	uint32_t max_hops;          /* longest successful path (switches) */

	uint32_t nlinks;
	struct share_link *links;   /* nonzero loads, by (node, port) */

	uint32_t nsharing;
	uint32_t *sharing;          /* positions, ascending */
	uint32_t ngroups;
	struct share_group *groups; /* by (node, port) */
	uint32_t *members;

	uint32_t nleaves;           /* distinct leaves of H */
	double avg_hosts_per_leaf;

	/* path matrix (SHARE_KEEP_PATHS): internal, use share_path() */
	uint32_t G;                 /* source groups */
	uint32_t *grp_of;           /* [n] */
	uint32_t *start;            /* [n][G] first tree node of the route, or ROUTE_NONE */
	int8_t *status;             /* [n][G] */
	struct share_col *cols;     /* [n] per-destination route trees */
	uint8_t *loopback;          /* [n] 1: a CA port, 0 switches to itself */
};

/* eps: n distinct end-port indices of rt. flags: 0 or SHARE_KEEP_PATHS.
 * On success *out is new (free with share_free); on error untouched.
 * AN_E_INVAL for a bad or repeated end port; AN_E_RANGE if the path
 * matrix would exceed SHARE_MAX_PATH_CELLS. */
int share_build(const struct route_tab *rt, const uint32_t *eps, size_t n, unsigned flags,
		struct share **out);
void share_free(struct share *sh);  /* NULL is a no-op */

/*
 * The route from H[i] to H[j] (built with SHARE_KEEP_PATHS): stores up to
 * cap switch node indices into sw, their total into *nsw, returns the walk's
 * status (AN_OK or the route_walk() error; on error the switches are
 * those walked, except after AN_E_LOOP, where *nsw is 0). O(hops). A CA
 * port to itself (i == j) is AN_OK with no switch, as in route_walk().
 * AN_E_INVAL if i or j is out of range or paths were not kept.
 */
int share_path(const struct share *sh, size_t i, size_t j, uint32_t *sw, size_t cap, size_t *nsw);

#endif
