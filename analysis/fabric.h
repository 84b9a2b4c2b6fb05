/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fabric.h - the query structures built from one snapshot: counts, the route
 * index (route.h) and the hierarchy (hier.h). Built off the event loop by the
 * builder thread (OpenMP inside), then immutable and shared by every reader
 * of its struct fabric.
 */
#ifndef AN_FABRIC_H
#define AN_FABRIC_H

#include <stdint.h>

#include "hier.h"
#include "hopdist.h"
#include "route.h"
#include "snapshot.h"

struct fabric_index {
	uint32_t switches, cas, routers, links;
	struct route_tab *rt;
	struct hier *hier;
	const struct route_namemap *map; /* the one rt was built with */
	double route_ms, hier_ms;
	/* The updater's, not the readers': made by fabric_index_prepare() and
	 * carried over by fabric_index_update(). The distances over rt's
	 * links and, once complete, the LIDs rt's tables route along
	 * shortest paths (hopdist.h), for which a delta's proof needs no
	 * walks; NULL: not begun. */
	struct hopcover *hc;
	/* Why x can have none (AN_E_RANGE: the distances would not fit, or
	 * no leaf), so that nobody tries again on these links; 0: it can. */
	int cover_rc;
};

/* Builds the index of s with up to threads OpenMP threads (0: OpenMP's
 * default): the routes, the cover (fabric_index_prepare), and the
 * hierarchy, its hop table read from the distances where the cover
 * allows (hier_build_cover). map (may be NULL) names hosts as in route.h.
 * AN_OK with *out new, or a negative AN_E_* with err set and *out
 * untouched. s and map must outlive the index. */
int fabric_index_build(const struct snap *s, const struct route_namemap *map, int threads,
		       struct fabric_index **out, char err[AN_ERR_LEN]);
void fabric_index_free(struct fabric_index *x); /* NULL is a no-op */

/* Makes the next delta's proof cheap: the distances over x's links and
 * the LIDs x's tables route along shortest paths (hopdist.h). Reads every
 * table once (at k=56 a few hundred ms of CPU). fabric_index_build and a
 * rebuilding fabric_index_update call it themselves; an index updated
 * with its clusters renamed (new links) from a base without a complete
 * cover, or whose links moved more leaves' distances than it carries
 * (fabric.c, RELINK_MOVED_MAX), has none, and its caller runs
 * this off the serving path, after publishing x: it writes only x->hc
 * (and x->cover_rc), which no reader of a published index reads, and no
 * index may be updated from x meanwhile. Resumable: after AN_E_CANCEL (cancel, may be NULL, raised)
 * the switches checked are kept, a call on x goes on from there, and so
 * does one on an index updated from x (fabric_index_update carries the
 * cover). AN_OK when x's cover is complete; else an AN_E_* (the walks
 * remain): AN_E_NOTAPPLIC when no LID is routed so, AN_E_CANCEL, or
 * AN_E_NOMEM / AN_E_RANGE (no distances; AN_E_RANGE is kept in
 * x->cover_rc and answered at once from then on). */
int fabric_index_prepare(struct fabric_index *x, const atomic_int *cancel);

/* Reads every table of x (routes, hierarchy, and the cover and distances
 * when x has them) one byte a page (util_touch), so that under shadow
 * paging they stay mapped for the next delta; returns the bytes covered.
 * Stops early when *stop (may be NULL) is raised. Reads x->hc: call it
 * where fabric_index_prepare could be called, never beside it. */
uint64_t fabric_index_touch(const struct fabric_index *x, const atomic_int *stop);

struct snap_delta_info;
/*
 * The index of s, which a delta (info, with its changed blocks) made from
 * the snapshot old was built from. When no description changed and every
 * changed step still leads to the same end in the same number of hops
 * (then no route between any two end ports changed its hop count: a route
 * that meets a changed step keeps its prefix and the rest has the same
 * length), the hierarchy's clusters, which depend on hop counts alone, are
 * old's: shared when only LFT blocks changed, copied and renamed
 * (hier_rename) when cables went down or up or the map is another, since
 * names climb the links; otherwise, or when it cannot tell, everything is
 * built as fabric_index_build() does. *reused says which: 1 shared, 2
 * kept and renamed, 0 built. A changed step is a changed LFT entry or one naming a port
 * whose link changed (a real fault: OpenSM rewrites the entries that used
 * the dead cable). The check costs what changed: the walks of those
 * entries' LIDs only, memoised per LID (fabric.c, entry_holds, has the
 * proof; it is exact). When old was prepared (fabric_index_prepare), its
 * cover is carried over the changed entries first (hopcover_carry), and
 * the LIDs it covers are decided from that, without walks; the new index
 * shares old's cover when nothing it covers changed. A delta that changed
 * switch-to-switch links carries the distances too (hopdist_relink) and
 * the cover with them, unless more leaves' distances moved than
 * RELINK_MOVED_MAX; its moved leaves' LIDs, and those the carried cover
 * marks, are walked.
 * With no port or description changed and the same map, the route index
 * shares old's tables (route_repoint); with only switch-to-switch links
 * changed, all but the port codes (route_relink).
 */
int fabric_index_update(const struct snap *s, const struct fabric_index *old,
			const struct snap_delta_info *info, const struct route_namemap *map, int threads,
			int *reused, struct fabric_index **out, char err[AN_ERR_LEN]);

#endif
