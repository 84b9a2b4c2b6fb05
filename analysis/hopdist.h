/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hopdist.h - shortest distances from every switch to every leaf over the
 * switch graph of one route index, and the check that a generation's
 * forwarding tables route every host along a shortest path.
 *
 * Why: after a delta, fabric_index_update must prove that no hop count
 * changed before it shares the hierarchy. The general proof walks every
 * changed entry's route in the old tables (fabric.c, entry_holds), a cache
 * miss per step in hundreds of megabytes of tables. When the old tables are
 * known to route a LID along shortest paths from every switch (a subnet
 * manager's tree routing does), the old hop count from any switch to it
 * is the switch's distance to the LID's leaf plus one, so a changed entry
 * keeps every hop count exactly when it steps one closer by distance: two
 * table lookups instead of a walk. Knowing which LIDs are routed so costs
 * one pass over all tables (hopdist_cover), done once after a full build,
 * off the serving path; a delta whose entries all step closer keeps the
 * property, so it carries over.
 *
 * Covered LIDs: those of a host's or router's port that is up and cabled
 * to a switch (its leaf), routed from every switch along a shortest path.
 * Other LIDs (switches', down ports', any not routed so) are left to the
 * walks.
 */
#ifndef AN_HOPDIST_H
#define AN_HOPDIST_H

#include <stdatomic.h>
#include <stdint.h>

#include "route.h"

#define HOPDIST_INF 0xFFu

struct hopdist {
	atomic_uint refs;
	const uint32_t *pt;  /* the port codes it was built from: valid for a route index with the same */
	uint32_t nsw, nleaf;
	uint32_t covered;    /* LIDs covered (hopdist_cover) */
	uint32_t *lid_leaf;  /* [max_lid + 1]: the leaf index of a covered LID, else ROUTE_NONE
			      * (after hopdist_build: of every candidate) */
	uint8_t *d;          /* [nsw * nleaf]: d[sw * nleaf + k] switch hops from sw to leaf k (0 at
			      * it), HOPDIST_INF when no link path leads there */
};

/* The distances over rt's up links. AN_OK with *out new; AN_E_NOMEM;
 * AN_E_RANGE when the table would exceed max_bytes or a distance does not
 * fit a byte (then no fast proof: the walks remain). */
int hopdist_build(const struct route_tab *rt, uint64_t max_bytes, struct hopdist **out);
struct hopdist *hopdist_ref(struct hopdist *hd);
void hopdist_free(struct hopdist *hd); /* drops one reference; NULL is a no-op */

/* Keeps in hd->lid_leaf the LIDs that every switch able to reach their
 * leaf routes along a shortest path (each step one closer, the leaf
 * delivering to the port), and their number in hd->covered. Reads every
 * table once (OpenMP over switches). hd must be new from
 * hopdist_build(rt). AN_OK; AN_E_NOMEM or AN_E_CANCEL (cancel, may be
 * NULL, raised) leave hd unusable. */
int hopdist_cover(const struct route_tab *rt, struct hopdist *hd, const atomic_int *cancel);

/* A step's outcome (route_step_code: st, and next when it leads on) for a
 * switch dd switch hops from leaf k (not HOPDIST_INF): one closer, or the
 * leaf delivering? */
static inline int hopdist_closer(const struct hopdist *hd, uint8_t dd, int st, uint32_t next, uint32_t k)
{
	if (dd == 0)
		return st == ROUTE_STEP_DONE;
	return st == ROUTE_STEP_NEXT && hd->d[(uint64_t)next * hd->nleaf + k] == dd - 1;
}

/* The step of switch sw to covered LID l (leaf index k, owned by end port
 * dst) in rt's tables: is it one closer, or the leaf delivering? A switch
 * that cannot reach the leaf at all passes (no table can change that). */
static inline int hopdist_step_ok(const struct route_tab *rt, const struct hopdist *hd, uint32_t sw, uint16_t l,
				  uint32_t k, uint32_t dst)
{
	uint8_t dd = hd->d[(uint64_t)sw * hd->nleaf + k];
	if (dd == HOPDIST_INF)
		return 1;
	uint8_t port;
	uint32_t next = 0;
	int st = route_step(rt, sw, l, dst, &port, &next);
	return hopdist_closer(hd, dd, st, next, k);
}

#endif
