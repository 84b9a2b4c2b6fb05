/*
 * fabric.c - see fabric.h.
 */
#include "fabric.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fabric_index *fabric_index_build(const struct snap *s, const struct route_namemap *map, int threads,
					char err[SNAP_ERR_LEN])
{
	struct fabric_index *x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	/* The builder thread is the only one that runs OpenMP regions, so
	 * setting its team size here affects nothing else. */
	if (threads > 0)
		omp_set_num_threads(threads);
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		x->switches += n->type == SNAP_NODE_SWITCH;
		x->cas += n->type == SNAP_NODE_CA;
		x->routers += n->type == SNAP_NODE_ROUTER;
	}
	x->links = snap_count_links(s);
	uint64_t t0 = snap_now_us();
	int rc = route_build(s, map, &x->rt);
	if (rc) {
		snprintf(err, SNAP_ERR_LEN, "route index: %s", route_strerror(rc));
		goto bad;
	}
	uint64_t t1 = snap_now_us();
	rc = hier_build(x->rt, &x->hier);
	if (rc) {
		snprintf(err, SNAP_ERR_LEN, "hierarchy: %s", route_strerror(rc));
		goto bad;
	}
	x->route_ms = (double)(t1 - t0) / 1000.0;
	x->hier_ms = (double)(snap_now_us() - t1) / 1000.0;
	return x;
bad:
	fabric_index_free(x);
	return NULL;
}

void fabric_index_free(struct fabric_index *x)
{
	if (!x)
		return;
	hier_free(x->hier);
	route_free(x->rt);
	free(x);
}
