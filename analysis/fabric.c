/*
 * fabric.c - see fabric.h.
 */
#include "fabric.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"

static struct fabric_index *index_new(int threads, char err[AN_ERR_LEN])
{
	struct fabric_index *x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, AN_ERR_LEN, "out of memory");
		return NULL;
	}
	/* The builder thread is the only one that runs OpenMP regions, so
	 * setting its team size here affects nothing else. */
	if (threads > 0)
		omp_set_num_threads(threads);
	return x;
}

int fabric_index_build(const struct snap *s, const struct route_namemap *map, int threads,
		       struct fabric_index **out, char err[AN_ERR_LEN])
{
	struct fabric_index *x = index_new(threads, err);
	if (!x)
		return AN_E_NOMEM;
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
		snprintf(err, AN_ERR_LEN, "route index: %s", an_strerror(rc));
		goto bad;
	}
	uint64_t t1 = snap_now_us();
	rc = hier_build(x->rt, &x->hier);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "hierarchy: %s", an_strerror(rc));
		goto bad;
	}
	x->route_ms = (double)(t1 - t0) / 1000.0;
	x->hier_ms = (double)(snap_now_us() - t1) / 1000.0;
	*out = x;
	return AN_OK;
bad:
	fabric_index_free(x);
	return rc;
}

void fabric_index_free(struct fabric_index *x)
{
	if (!x)
		return;
	hier_free(x->hier);
	route_free(x->rt);
	free(x);
}

/* Does the changed entry (switch node, lid) lead to the same end in the
 * same number of hops in both tables? */
static int same_walk(const struct route_tab *a, const struct route_tab *b, uint32_t node, uint32_t lid)
{
	const struct snap_port *p0 = &b->snap->ports[b->snap->nodes[node].port0];
	if (!p0->lid || p0->lid > b->max_lid || p0->lid > a->max_lid)
		return 0;
	uint32_t ea = a->lid_ep[p0->lid], eb = b->lid_ep[p0->lid];
	if (ea == ROUTE_NONE || eb == ROUTE_NONE)
		return 0;
	struct route_res ra, rb;
	int ca = route_walk(a, ea, (uint16_t)lid, NULL, 0, &ra), cb = route_walk(b, eb, (uint16_t)lid, NULL, 0, &rb);
	return ca == cb && ra.hops == rb.hops;
}

int fabric_index_update(const struct snap *s, const struct fabric_index *old,
			const struct snap_delta_info *info, const struct route_namemap *map, int threads,
			int *reused, struct fabric_index **out, char err[AN_ERR_LEN])
{
	*reused = 0;
	if (!old || !info || info->ports || info->descs || (info->blocks && !info->block))
		return fabric_index_build(s, map, threads, out, err);
	struct fabric_index *x = index_new(threads, err);
	if (!x)
		return AN_E_NOMEM;
	x->switches = old->switches;
	x->cas = old->cas;
	x->routers = old->routers;
	x->links = old->links;
	uint64_t t0 = snap_now_us();
	int rc = route_build(s, map, &x->rt);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "route index: %s", an_strerror(rc));
		fabric_index_free(x);
		return rc;
	}
	uint64_t t1 = snap_now_us();
	const struct route_tab *ra = old->rt, *rb = x->rt;
	const struct snap *a = ra->snap;
	int differ = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(| : differ)
	for (uint32_t k = 0; k < info->blocks; k++) {
		if (differ)
			continue;
		uint32_t node = (uint32_t)(info->block[k] >> 16), blk = (uint32_t)(info->block[k] & 0xFFFF);
		const struct snap_node *n = &s->nodes[node];
		uint32_t l0 = blk * SNAP_DELTA_BLOCK, l1 = l0 + SNAP_DELTA_BLOCK;
		if (l1 > n->lft_len)
			l1 = n->lft_len;
		for (uint32_t l = l0; l < l1 && !differ; l++) {
			if (a->lft[a->nodes[node].lft_off + l] == s->lft[n->lft_off + l])
				continue;
			/* A LID nobody owns is no host's or switch's destination. */
			if (l > rb->max_lid || rb->lid_ep[l] == ROUTE_NONE)
				continue;
			if (!same_walk(ra, rb, node, l))
				differ = 1;
		}
	}
	if (!differ) {
		x->hier = hier_ref(old->hier);
		*reused = 1;
	} else {
		rc = hier_build(x->rt, &x->hier);
		if (rc) {
			snprintf(err, AN_ERR_LEN, "hierarchy: %s", an_strerror(rc));
			fabric_index_free(x);
			return rc;
		}
	}
	x->route_ms = (double)(t1 - t0) / 1000.0;
	x->hier_ms = (double)(snap_now_us() - t1) / 1000.0;
	*out = x;
	return AN_OK;
}
