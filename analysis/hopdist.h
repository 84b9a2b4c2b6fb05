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
 * one pass over all tables (hopcover_run), made in a full build (whose
 * hierarchy reads its hop table from the distances for those LIDs:
 * hier_build_cover); a delta carries it over at the cost of its changed
 * entries.
 *
 * Covered LIDs: those of a host's or router's port that is up and cabled
 * to a switch (its leaf), routed from every switch along a shortest path.
 * Other LIDs (switches', down ports', any not routed so) are left to the
 * walks. The distances depend on the links alone; the cover on the
 * tables, and a delta's changed entries update it (struct hopcover).
 */
#ifndef AN_HOPDIST_H
#define AN_HOPDIST_H

#include <stdatomic.h>
#include <stdint.h>

#include "route.h"

#define HOPDIST_INF 0xFFu
/* Columns a relinked table keeps apart before it copies the whole (at
 * k=56, 64 of 1,568 leaves: 250 KB against 6 MB). */
#define HOPDIST_OCOL_MAX 64u

struct hopdist {
	atomic_uint refs;
	const uint32_t *pt;  /* the port codes it was built from: valid for a route index with the same */
	uint32_t nsw, nleaf;
	uint32_t nlid;       /* max_lid + 1 of the route index it was built from */
	uint32_t *lid_leaf;  /* [nlid]: the leaf index of a candidate LID (a host's or router's port
			      * that is up and cabled to a switch), else ROUTE_NONE */
	uint8_t *d;          /* [nsw * nleaf]: d[sw * nleaf + k] switch hops from sw to leaf k (0 at
			      * it), HOPDIST_INF when no link path leads there; but see ocol */
	struct hopdist *owner; /* a reference to the one whose lid_leaf and d these are (hopdist_relink),
				* NULL when they are this one's */
	/* The leaves whose distances d (the owner's) no longer has right, a
	 * column each, this one's own: ocol[k][sw] for leaf k when ocol[k]
	 * is set. A cable fault moves a few leaves' columns; copying the
	 * 6 MB table for them cost 2.5 ms in process and up to 40 ms of
	 * fresh pages in topod beside a busy OpenSM (hopdist_relink). */
	uint8_t **ocol;      /* [nleaf], or NULL when none */
	uint32_t *okey;      /* [nocol]: the leaves ocol sets, in order */
	uint32_t nocol;
};

/* Switch sw's distance to leaf k. */
static inline uint8_t hopdist_at(const struct hopdist *hd, uint32_t sw, uint32_t k)
{
	return hd->ocol && hd->ocol[k] ? hd->ocol[k][sw] : hd->d[(uint64_t)sw * hd->nleaf + k];
}

/* The distances over rt's up links. AN_OK with *out new; AN_E_NOMEM;
 * AN_E_RANGE when the table would exceed max_bytes, a distance does not
 * fit a byte or there are 65535 leaves or more (then no fast proof: the
 * walks remain). */
int hopdist_build(const struct route_tab *rt, uint64_t max_bytes, struct hopdist **out);
struct hopdist *hopdist_ref(struct hopdist *hd);
void hopdist_free(struct hopdist *hd); /* drops one reference; NULL is a no-op */
/* Do a and b hold the same distances (the same switches and leaves)? */
int hopdist_same(const struct hopdist *a, const struct hopdist *b);
/* Reads every page of hd's arrays (util_touch); returns the bytes. */
uint64_t hopdist_touch(const struct hopdist *hd);

/*
 * hd's distances for rt, a route index whose links differ from those of
 * was (the one hd was built from: a cable down or back, a port's state)
 * while its switches, end ports and LIDs are the same. A search from
 * every leaf costs what a full build's distances do; instead only the
 * switches whose links changed are checked (a distance table is exact
 * when every switch's row is one more than the least of its linked
 * neighbours' rows, the leaf's own 0, and only the changed switches'
 * neighbours changed), and the leaves whose column broke are searched
 * again. moved[nleaf] gets those leaves. AN_OK with *out new, sharing
 * hd's table: the moved leaves' columns (and those hd kept apart) are
 * its own, apart (ocol), dropped where they came back to the table's,
 * and past HOPDIST_OCOL_MAX of them all is copied into a table of its
 * own; AN_E_NOTAPPLIC when the leaves
 * or their LIDs differ, or more than max_moved leaves moved (found before
 * anything is copied or searched); AN_E_RANGE when a distance no longer
 * fits a byte;
 * AN_E_INVAL when rt has other switches or LIDs; AN_E_NOMEM.
 */
int hopdist_relink(struct hopdist *hd, const struct route_tab *was, const struct route_tab *rt, uint32_t max_moved,
		   uint8_t *moved, struct hopdist **out);

/*
 * Which candidate LIDs one generation's tables route along shortest paths
 * (every switch able to reach the LID's leaf steps one closer, the leaf
 * delivering to the port), found switch by switch so that the work
 * survives interruptions: a snapshot that arrives meanwhile pauses it, and
 * the next generation carries what was found (hopcover_carry), re-checking
 * only its changed entries. Complete (ndone == nsw): a LID is covered
 * when it is a candidate and no switch's step to it failed. Shared by
 * reference once complete, when no longer written.
 */
struct hopcover {
	atomic_uint refs;
	struct hopdist *hd;  /* a reference */
	uint32_t ndone;      /* switches checked against (or carried to) these tables */
	uint32_t covered;    /* when complete: the LIDs covered */
	uint8_t *done;       /* [nsw] */
	uint8_t *bad;        /* [nlid]: some checked switch does not route it so */
};

/* An empty cover over hd's distances (takes a reference). AN_OK or
 * AN_E_NOMEM. */
int hopcover_new(struct hopdist *hd, struct hopcover **out);
struct hopcover *hopcover_ref(struct hopcover *c);
void hopcover_free(struct hopcover *c); /* drops one reference; NULL is a no-op */

static inline int hopcover_complete(const struct hopcover *c)
{
	return c && c->ndone == c->hd->nsw;
}

/* Checks the switches of [sw0, sw1) that c lacks against rt's tables
 * (every entry once, OpenMP over switches), rt having the links c's
 * distances were built from. AN_OK when all of them are done (c is
 * complete when they were the last: hopcover_complete); AN_E_CANCEL when
 * cancel (may be NULL) was raised, the switches checked so far kept;
 * AN_E_NOMEM; AN_E_INVAL when rt has other links or LIDs than c's
 * distances. c must be held by its caller alone. */
int hopcover_run(const struct route_tab *rt, struct hopcover *c, uint32_t sw0, uint32_t sw1,
		 const atomic_int *cancel);

/* c's cover for rt, the tables of a delta from c's generation that
 * changed only the LFT blocks block[n] ((node index << 16) | block, as
 * snap_delta_info lists them) and the codes of the switch ports chg marks
 * (by rt->pt_off, as links_changed in fabric.c marks them; may be NULL):
 * a new cover over hd, rt's distances (c's own, or relinked from them:
 * hopdist_relink, whose moved leaves' LIDs are checked again at every
 * switch c had checked; moved NULL when none), in which the changed
 * entries of the switches c had checked are checked again: in the blocks
 * listed, and in every block of a switch with a marked port. With
 * mask[n] (the entries of each block whose value changed, as
 * snap_delta_apply lists them; may be NULL) or else was (the tables c's
 * generation had; may be NULL) only the entries of those blocks that
 * changed, or name a marked port, are: a verdict depends on the entry,
 * its port's code and the distances alone. AN_OK with *out new;
 * AN_E_NOMEM; AN_E_INVAL when hd is not for rt's links or c's LIDs. */
int hopcover_carry(const struct hopcover *c, struct hopdist *hd, const uint8_t *moved, const struct route_tab *rt,
		   const struct route_tab *was, const uint8_t *chg, const uint64_t *block, const uint64_t *mask,
		   uint32_t n, struct hopcover **out);

/* The leaf index of LID l when complete cover c covers it, else
 * ROUTE_NONE. */
static inline uint32_t hopcover_leaf(const struct hopcover *c, uint32_t l)
{
	return l < c->hd->nlid && !c->bad[l] ? c->hd->lid_leaf[l] : ROUTE_NONE;
}

/* A step's outcome (route_step_code: st, and next when it leads on) for a
 * switch dd switch hops from leaf k (not HOPDIST_INF): one closer, or the
 * leaf delivering? */
static inline int hopdist_closer(const struct hopdist *hd, uint8_t dd, int st, uint32_t next, uint32_t k)
{
	if (dd == 0)
		return st == ROUTE_STEP_DONE;
	return st == ROUTE_STEP_NEXT && hopdist_at(hd, next, k) == dd - 1;
}

/* The step of switch sw to covered LID l (leaf index k, owned by end port
 * dst) in rt's tables: is it one closer, or the leaf delivering? A switch
 * that cannot reach the leaf at all passes (no table can change that). */
static inline int hopdist_step_ok(const struct route_tab *rt, const struct hopdist *hd, uint32_t sw, uint16_t l,
				  uint32_t k, uint32_t dst)
{
	uint8_t dd = hopdist_at(hd, sw, k);
	if (dd == HOPDIST_INF)
		return 1;
	uint8_t port;
	uint32_t next = 0;
	int st = route_step(rt, sw, l, dst, &port, &next);
	return hopdist_closer(hd, dd, st, next, k);
}

#endif
