/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_impl.h - what the placement files share and nobody else sees:
 * the placement context (defined in place_entry.c) and the entry-link
 * table that pick reads (place_entry.c; the idea is at the top of
 * place_pick.c).
 */
#ifndef AN_PLACE_IMPL_H
#define AN_PLACE_IMPL_H

#include <pthread.h>

#include "place.h"

#define NONE32 UINT32_MAX

struct etab;

/* Held by the caller (place.h): the cache of the last fabric's entry table,
 * and the lock that serialises Scotch, whose random generator is
 * process-wide. */
struct place_ctx {
	pthread_mutex_t etab_lock;   /* guards etab_cur and every table's refs */
	struct etab *etab_cur;
	pthread_mutex_t scotch_lock;
};

/* The entry table of every host from every leaf switch of one fabric. */
struct etab {
	uint64_t fp;
	uint32_t nhosts, ncols;
	uint32_t *col_of_sw;   /* [nsw] column or NONE32 */
	uint32_t *e;           /* [nhosts * ncols] */
	int refs;
};

/* Leaf switch index of a host, or ROUTE_NONE when its port is down or has
 * no leaf. */
uint32_t place_host_leaf_sw(const struct route_tab *rt, uint32_t host);

/* Entry codes of hosts (rows) from source leaf switches cols[0..ncols):
 * e[r * ncols + c], NONE32 where none. leaf[r] is row r's own leaf switch
 * or ROUTE_NONE. */
int place_etab_fill(const struct route_tab *rt, const uint32_t *hosts, const uint32_t *leaf, size_t nrows,
		    const uint32_t *cols, uint32_t ncols, uint32_t *e);

/* The cached table for rt (built if the fabric changed), shared: give it
 * back with place_etab_unref. NULL if too large to cache (*rc AN_OK) or
 * out of memory (*rc AN_E_NOMEM). */
struct etab *place_etab_get(struct place_ctx *ctx, const struct route_tab *rt, int *rc);
void place_etab_unref(struct place_ctx *ctx, struct etab *t);

/* place_pick, or with packed set its alternative on the same leaves (the
 * fullest first, each filled whole): place_pick_advise predicts both. */
int place_pick_mode(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		    const uint32_t *free_hosts, size_t nfree, size_t want, int packed, struct place_pick *out,
		    char why[AN_ERR_LEN]);

/* pick's exact search (place_search.c). Positions 0..nf of the free
 * list; those on leaves grouped by leaf: leaf g's at lhosts[leaf_first[g]
 * .. + leaf_n[g]), nlh in all. code[i * nl + l]: host i's entry code from
 * leaf l (dense, < ncodes), NONE32 where none. lpod: dense pod per leaf.
 * Sets of want positions on at most kmax leaves and pmax pods: with exist,
 * whether one shares nothing (found); else the one with the fewest sharing
 * hosts, then the most free hosts on its leaves, into best[want] (with
 * incumbent, best[] holds a set to beat on entry). complete: the search
 * ended within budget (sets visited), so the answer is exact. */
struct psearch_in {
	uint32_t nf, nl, nlh;
	const uint32_t *lhosts, *leaf_first, *leaf_n, *lf, *lpod, *code;
	uint32_t ncodes, want, kmax, pmax;
	long budget;
	int incumbent, exist;
};
struct psearch_out {
	int complete, found;
	uint32_t sharing;   /* the best set's sharing hosts */
	uint64_t fsum;      /* free hosts on its leaves */
};
int place_search(const struct psearch_in *in, uint32_t *best, struct psearch_out *out);

/* Rewrites hosts[0..n) to as even a count per leaf as the free hosts on
 * the same leaves allow (every leaf keeps at least one when it had one),
 * the lowest-indexed free hosts of each: a start for place_pick_balance
 * when the pick's counts pile traffic on a few leaves' uplinks. */
int place_pick_even(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, uint32_t *hosts, size_t n);
/* A leaf switch (route_tab switch index sw)'s uplink capacity, bits/s:
 * its uplinks x the slowest one's rate (place_pick.c). */
uint64_t place_leaf_uplinks(const struct route_tab *rt, uint32_t sw);

#endif
