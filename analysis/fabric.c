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
	x->map = map;
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

/* Hop counts to one destination in one generation's tables, memoised per
 * LID: val[] is valid for switches whose stamp is cur. */
struct hop_memo {
	uint16_t *val;
	uint32_t *stamp, *stack;
	uint32_t cur;
};

#define MEMO_PENDING 0xFFFEu

/* Switches traversed from switch x (entered from outside) to lid, owned by
 * end port dst, in rt's tables; ROUTE_HOPS_INF when that walk fails or
 * loops. Iterative, as route.c's dp_eval, for the same reason. */
static uint16_t memo_hops(const struct route_tab *rt, struct hop_memo *m, uint32_t x, uint16_t lid, uint32_t dst)
{
	uint32_t top = 0, r;
	for (;;) {
		if (m->stamp[x] == m->cur) {
			r = m->val[x] == MEMO_PENDING ? ROUTE_HOPS_INF : m->val[x];
			break;
		}
		m->stamp[x] = m->cur;
		m->val[x] = MEMO_PENDING;
		m->stack[top++] = x;
		uint8_t port;
		uint32_t next = 0;
		int st = route_step(rt, x, lid, dst, &port, &next);
		if (st == ROUTE_STEP_NEXT) {
			x = next;
			continue;
		}
		r = st == ROUTE_STEP_DONE ? 0 : ROUTE_HOPS_INF;
		break;
	}
	while (top) {
		if (r != ROUTE_HOPS_INF)
			r = r + 1 >= MEMO_PENDING ? ROUTE_HOPS_INF : r + 1;
		m->val[m->stack[--top]] = (uint16_t)r;
	}
	return (uint16_t)r;
}

/*
 * Does the changed entry (switch sw, lid) keep every hop count? With d the
 * old tables' hop counts and d' the new ones': when d(sw) is finite, the
 * new entry must deliver if d(sw) = 1, else lead to a switch nxt with
 * d(nxt) = d(sw) - 1; when d(sw) is infinite, d'(sw) must be too. If every
 * changed entry does, induction on d shows that a switch with a finite d
 * keeps it (its next switch, changed or not, is one closer by d), and a
 * switch with an infinite d cannot reach one with a finite d' (the last
 * switch before it on the way would be a changed entry with d infinite
 * and d' finite); so no hop count to any LID changed. Conversely, if none
 * changed, every changed entry passes: the check is exact. Both tables'
 * switch and port codes are equal: no port changed.
 */
static int entry_holds(const struct route_tab *ra, const struct route_tab *rb, struct hop_memo *ma,
		       struct hop_memo *mb, uint32_t sw, uint16_t lid)
{
	uint32_t dst = rb->lid_ep[lid];
	uint16_t d = memo_hops(ra, ma, sw, lid, dst);
	if (d == ROUTE_HOPS_INF)
		return memo_hops(rb, mb, sw, lid, dst) == ROUTE_HOPS_INF;
	uint8_t port;
	uint32_t next = 0;
	int st = route_step(rb, sw, lid, dst, &port, &next);
	if (st == ROUTE_STEP_DONE)
		return d == 1;
	return st == ROUTE_STEP_NEXT && memo_hops(ra, ma, next, lid, dst) == d - 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Is any hop count different in rb than in ra, which differ only in the
 * LFT blocks listed? Blocks are taken by LID block, so that the walks of
 * one LID block share their 64-byte LFT lines, and each LID's old walks
 * are memoised over all switches. -1: out of memory. */
static int hops_differ(const struct route_tab *ra, const struct route_tab *rb, const uint64_t *block, uint32_t n)
{
	const struct snap *a = ra->snap, *s = rb->snap;
	uint64_t *by_lid = malloc(((size_t)n + 1) * sizeof(*by_lid));
	uint32_t *grp = malloc(((size_t)n + 1) * sizeof(*grp));
	if (!by_lid || !grp) {
		free(by_lid);
		free(grp);
		return -1;
	}
	for (uint32_t k = 0; k < n; k++)
		by_lid[k] = (block[k] & 0xFFFF) << 32 | block[k] >> 16;
	qsort(by_lid, n, sizeof(*by_lid), cmp_u64);
	uint32_t ngrp = 0;
	for (uint32_t k = 0; k < n; k++)
		if (!k || by_lid[k] >> 32 != by_lid[k - 1] >> 32)
			grp[ngrp++] = k;
	grp[ngrp] = n;
	const uint32_t nsw = rb->nsw ? rb->nsw : 1;
	int differ = 0;
	/* Below ~1,000 blocks (a few ms of walks; a real link fault rewrites
	 * far fewer) one thread is quicker than waking a team, whose barrier
	 * waits for its slowest thread on a loaded machine. */
#pragma omp parallel if (n >= 1024) reduction(| : differ)
	{
		struct hop_memo m[2];
		for (int i = 0; i < 2; i++)
			m[i] = (struct hop_memo){ malloc(nsw * sizeof(*m[i].val)), calloc(nsw, sizeof(*m[i].stamp)),
						  malloc(nsw * sizeof(*m[i].stack)), 0 };
		if (!m[0].val || !m[0].stamp || !m[0].stack || !m[1].val || !m[1].stamp || !m[1].stack)
			differ = 1;
#pragma omp for schedule(dynamic, 1)
		for (uint32_t g = 0; g < ngrp; g++) {
			uint32_t blk = (uint32_t)(by_lid[grp[g]] >> 32);
			uint32_t l0 = blk * SNAP_DELTA_BLOCK;
			for (uint32_t l = l0; l < l0 + SNAP_DELTA_BLOCK && !differ; l++) {
				/* A LID nobody owns is no host's or switch's destination. */
				if (l > rb->max_lid || rb->lid_ep[l] == ROUTE_NONE)
					continue;
				m[0].cur++;
				m[1].cur++;
				for (uint32_t k = grp[g]; k < grp[g + 1] && !differ; k++) {
					uint32_t node = (uint32_t)by_lid[k];
					const struct snap_node *na = &a->nodes[node], *nb = &s->nodes[node];
					if (l >= nb->lft_len || a->lft[na->lft_off + l] == s->lft[nb->lft_off + l])
						continue;
					uint32_t sw = rb->sw_of_node[node];
					if (sw == ROUTE_NONE || !entry_holds(ra, rb, &m[0], &m[1], sw, (uint16_t)l))
						differ = 1;
				}
			}
		}
		for (int i = 0; i < 2; i++) {
			free(m[i].val);
			free(m[i].stamp);
			free(m[i].stack);
		}
	}
	free(by_lid);
	free(grp);
	return differ;
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
	x->map = map;
	uint64_t t0 = snap_now_us();
	/* Names come from descriptions and the map, end ports and links from
	 * the ports: with none of them changed, the index is old's. */
	int rc = map == old->map ? route_repoint(old->rt, s, &x->rt) : route_build(s, map, &x->rt);
	if (rc) {
		snprintf(err, AN_ERR_LEN, "route index: %s", an_strerror(rc));
		fabric_index_free(x);
		return rc;
	}
	uint64_t t1 = snap_now_us();
	if (!hops_differ(old->rt, x->rt, info->block, info->blocks)) {
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
