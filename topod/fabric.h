/*
 * fabric.h - the query structures built from one snapshot: counts, the route
 * index (route.h) and the hierarchy (hier.h). Built off the event loop by the
 * builder thread (OpenMP inside), then immutable and shared by every reader
 * of its struct fabric.
 */
#ifndef TOPOD_FABRIC_H
#define TOPOD_FABRIC_H

#include <stdint.h>

#include "hier.h"
#include "route.h"
#include "snapshot.h"

struct fabric_index {
	uint32_t switches, cas, routers, links;
	struct route_tab *rt;
	struct hier *hier;
	double route_ms, hier_ms;
};

/* Builds the index of s with up to threads OpenMP threads (0: OpenMP's
 * default). map (may be NULL) names hosts as in route.h. Returns NULL with
 * err set. s and map must outlive the index. */
struct fabric_index *fabric_index_build(const struct snap *s, const struct route_namemap *map, int threads,
					char err[SNAP_ERR_LEN]);
void fabric_index_free(struct fabric_index *x); /* NULL is a no-op */

#endif
