/* SPDX-License-Identifier: BSD-3-Clause */
/* xgft.c - see xgft.h. */
#include "xgft.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static int xerr(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, XGFT_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

static uint32_t uf_find(uint32_t *p, uint32_t a)
{
	while (p[a] != a) {
		p[a] = p[p[a]];
		a = p[a];
	}
	return a;
}

static void uf_union(uint32_t *p, uint32_t a, uint32_t b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a != b)
		p[a < b ? b : a] = a < b ? a : b;   /* the smaller index (GUID order) is the root */
}

static const struct snap_port *port_at(const struct snap *s, uint32_t n, unsigned p)
{
	return &s->ports[s->nodes[n].port0 + p];
}

static int linked(const struct snap *s, uint32_t n, unsigned p)
{
	const struct snap_port *pt = port_at(s, n, p);
	return pt->present && pt->peer_node != SNAP_NONE;
}

static const char *nm(const struct snap *s, uint32_t n)
{
	return s->nodes[n].desc[0] ? s->nodes[n].desc : "(no description)";
}

void xgft_describe(const struct xgft *x, char *buf, size_t n)
{
	size_t o = (size_t)snprintf(buf, n, "XGFT(%d; ", x->h);
	for (int l = 1; l <= x->h && o < n; l++)
		o += (size_t)snprintf(buf + o, n - o, "%u%s", x->m[l], l < x->h ? "," : "; ");
	for (int l = 1; l <= x->h && o < n; l++)
		o += (size_t)snprintf(buf + o, n - o, "%u%s", x->w[l], l < x->h ? "," : ")");
}

void xgft_free(struct xgft *x)
{
	for (int l = 0; l <= XGFT_HMAX; l++) {
		free(x->node[l]);
		free(x->up[l]);
		free(x->down[l]);
	}
	free(x->level_of);
	free(x->id_of);
	memset(x, 0, sizeof(*x));
}

/* Class bookkeeping for one level: compact ids, the related classes of the
 * neighbouring level, and the smallest member (for a deterministic order). */
struct cls {
	uint32_t n;          /* classes */
	uint32_t *of;        /* snapshot node -> class at this level, NONE */
	uint32_t *minnode;   /* class -> smallest member node index */
	uint32_t *link;      /* class -> the one related class on the other side */
	uint32_t *index;     /* class -> final MT or WT index */
};

static void cls_free(struct cls *c)
{
	free(c->of); free(c->minnode); free(c->link); free(c->index);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The state the recognition phases share; lvl passes to x->level_of once
 * the numbering is complete. */
struct rec {
	const struct snap *s;
	struct xgft *x;
	char *err;
	uint32_t n;          /* snapshot nodes */
	int h;               /* switch levels */
	uint32_t *lvl;       /* snapshot node -> level, NONE */
	uint32_t *queue;     /* the BFS queue, later scratch for class ids */
	uint32_t *uf;        /* union-find parents */
	struct cls mt[XGFT_HMAX + 1], wt[XGFT_HMAX + 1];
	uint64_t *sortbuf;
	uint64_t found;      /* links between levels that are links of the XGFT */
};

/* 1. hosts: level 0, the BFS sources; returns how many were queued */
static int rec_hosts(struct rec *r, uint32_t *nq)
{
	const struct snap *s = r->s;
	uint32_t qt = 0, nhosts = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		r->lvl[i] = NONE;
		const struct snap_node *nd = &s->nodes[i];
		if (nd->type == SNAP_NODE_ROUTER)
			return xerr(r->err, "not an XGFT: router %s (routers are not tree nodes)", nm(s, i));
		if (nd->type != SNAP_NODE_CA)
			continue;
		unsigned nl = 0;
		for (unsigned p = 1; p <= nd->nports; p++)
			nl += linked(s, i, p) != 0;
		if (nl == 0)
			continue;
		if (nl > 1)
			return xerr(r->err, "not an XGFT with w1 = 1: host %s has %u linked ports (multi-rail "
				    "hosts are not supported)", nm(s, i), nl);
		r->lvl[i] = 0;
		r->queue[qt++] = i;
		nhosts++;
	}
	if (nhosts < 2)
		return xerr(r->err, "not an XGFT: %u linked hosts", nhosts);
	*nq = qt;
	return 0;
}

/* levels: BFS distance from the hosts */
static void rec_bfs(struct rec *r, uint32_t qt)
{
	const struct snap *s = r->s;
	uint32_t qh = 0;
	while (qh < qt) {
		uint32_t a = r->queue[qh++];
		for (unsigned p = 1; p <= s->nodes[a].nports; p++) {
			if (!linked(s, a, p))
				continue;
			uint32_t b = port_at(s, a, p)->peer_node;
			if (r->lvl[b] == NONE) {
				r->lvl[b] = r->lvl[a] + 1;
				r->queue[qt++] = b;
			}
		}
	}
}

/* every switch is levelled, no link stays within a level, h fits */
static int rec_check_levels(struct rec *r)
{
	const struct snap *s = r->s;
	const uint32_t *lvl = r->lvl;
	int h = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		if (lvl[i] == NONE) {
			if (s->nodes[i].type == SNAP_NODE_SWITCH)
				return xerr(r->err, "not an XGFT: switch %s is not connected to any host",
					    nm(s, i));
			continue;
		}
		if ((int)lvl[i] > h)
			h = (int)lvl[i];
		for (unsigned p = 1; p <= s->nodes[i].nports; p++) {
			if (!linked(s, i, p))
				continue;
			uint32_t b = port_at(s, i, p)->peer_node;
			if (lvl[b] == lvl[i])
				return xerr(r->err, "not an XGFT: %s and %s are linked on the same level %u",
					    nm(s, i), nm(s, b), lvl[i]);
		}
	}
	if (h < 1 || h > XGFT_HMAX)
		return xerr(r->err, "not an XGFT this program handles: %d switch levels (1..%d)", h,
			    XGFT_HMAX);
	r->h = h;
	r->x->h = h;
	return 0;
}

/* The nodes of level l linked to one class nc of level nl are one class c
 * (nc NULL: every node is a class of its own). */
static int rec_group(struct rec *r, int l, int nl, const struct cls *nc, struct cls *c)
{
	const struct snap *s = r->s;
	const uint32_t *lvl = r->lvl;
	uint32_t n = r->n;
	uint32_t *first = malloc((size_t)n * sizeof(*first));  /* neighbour class -> first node */
	if (!first)
		return xerr(r->err, "out of memory");
	for (uint32_t i = 0; i < n; i++) { r->uf[i] = i; first[i] = NONE; }
	if (nc)
		for (uint32_t i = 0; i < n; i++) {
			if (lvl[i] != (uint32_t)l)
				continue;
			for (unsigned p = 1; p <= s->nodes[i].nports; p++) {
				if (!linked(s, i, p))
					continue;
				uint32_t b = port_at(s, i, p)->peer_node;
				if (lvl[b] != (uint32_t)nl)
					continue;
				uint32_t k = nc->of[b];
				if (first[k] == NONE)
					first[k] = i;
				else
					uf_union(r->uf, first[k], i);
			}
		}
	free(first);
	c->n = 0;
	uint32_t *cid = r->queue;   /* reuse: root -> class id */
	for (uint32_t i = 0; i < n; i++) { cid[i] = NONE; c->of[i] = NONE; }
	for (uint32_t i = 0; i < n; i++) {
		if (lvl[i] != (uint32_t)l)
			continue;
		uint32_t root = uf_find(r->uf, i);
		if (cid[root] == NONE)
			cid[root] = c->n++;
		c->of[i] = cid[root];
	}
	return 0;
}

/* 2. MT classes bottom-up: switches with a child in the same class are one
 * class; WT classes top-down: switches with a parent in the same class are
 * one class */
static int rec_classes(struct rec *r)
{
	int h = r->h;
	for (int l = 0; l <= h; l++) {
		r->mt[l].of = malloc((size_t)r->n * sizeof(uint32_t));
		r->wt[l].of = malloc((size_t)r->n * sizeof(uint32_t));
		if (!r->mt[l].of || !r->wt[l].of)
			return xerr(r->err, "out of memory");
	}
	for (int l = 0; l <= h; l++)
		if (rec_group(r, l, l - 1, l > 0 ? &r->mt[l - 1] : NULL, &r->mt[l]))
			return -1;
	for (int l = h; l >= 0; l--)
		if (rec_group(r, l, l + 1, l < h ? &r->wt[l + 1] : NULL, &r->wt[l]))
			return -1;
	return 0;
}

static int rec_alloc_relations(struct rec *r)
{
	struct cls *mt = r->mt, *wt = r->wt;
	for (int l = 0; l <= r->h; l++) {
		mt[l].minnode = malloc((size_t)mt[l].n * sizeof(uint32_t));
		mt[l].link = malloc((size_t)mt[l].n * sizeof(uint32_t));
		mt[l].index = malloc((size_t)mt[l].n * sizeof(uint32_t));
		wt[l].minnode = malloc((size_t)wt[l].n * sizeof(uint32_t));
		wt[l].link = malloc((size_t)wt[l].n * sizeof(uint32_t));
		wt[l].index = malloc((size_t)wt[l].n * sizeof(uint32_t));
		if (!mt[l].minnode || !mt[l].link || !mt[l].index || !wt[l].minnode || !wt[l].link ||
		    !wt[l].index)
			return xerr(r->err, "out of memory");
		for (uint32_t k = 0; k < mt[l].n; k++) mt[l].minnode[k] = mt[l].link[k] = NONE;
		for (uint32_t k = 0; k < wt[l].n; k++) wt[l].minnode[k] = wt[l].link[k] = NONE;
	}
	return 0;
}

/* 3. class relations: each MT class has one parent class, each WT class
 * one child class, the top is one MT class and the hosts one WT class */
static int rec_relations(struct rec *r)
{
	const struct snap *s = r->s;
	struct cls *mt = r->mt, *wt = r->wt;
	if (rec_alloc_relations(r))
		return -1;
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->lvl[i] == NONE)
			continue;
		int l = (int)r->lvl[i];
		uint32_t mc = mt[l].of[i], wc = wt[l].of[i];
		if (mt[l].minnode[mc] == NONE) mt[l].minnode[mc] = i;
		if (wt[l].minnode[wc] == NONE) wt[l].minnode[wc] = i;
		for (unsigned p = 1; p <= s->nodes[i].nports; p++) {
			if (!linked(s, i, p))
				continue;
			uint32_t b = port_at(s, i, p)->peer_node;
			if (r->lvl[b] != (uint32_t)l + 1)
				continue;
			uint32_t pm = mt[l + 1].of[b], pw = wt[l + 1].of[b];
			if (mt[l].link[mc] == NONE)
				mt[l].link[mc] = pm;   /* parent MT class */
			else if (mt[l].link[mc] != pm)
				return xerr(r->err, "not an XGFT: the hosts below %s are reached from two "
					    "disjoint parts of level %d", nm(s, i), l + 1);
			if (wt[l + 1].link[pw] == NONE)
				wt[l + 1].link[pw] = wc; /* child WT class */
			else if (wt[l + 1].link[pw] != wc)
				return xerr(r->err, "not an XGFT: the switches above %s (level %d) do not "
					    "form the WT tree of an XGFT", nm(s, i), l);
		}
	}
	if (mt[r->h].n != 1)
		return xerr(r->err, "not an XGFT: the top level has %u disjoint parts", mt[r->h].n);
	if (wt[0].n != 1)
		return xerr(r->err, "not an XGFT with w1 = 1: the hosts reach %u disjoint sets of roots",
			    wt[0].n);
	return 0;
}

/* m_l: children per MT class at level l; w_l: parents per WT class at
 * level l-1; both must be uniform */
static int rec_fanout(struct rec *r, int l)
{
	struct cls *mt = r->mt, *wt = r->wt;
	struct xgft *x = r->x;
	uint32_t *cnt = calloc(mt[l].n > wt[l - 1].n ? mt[l].n : wt[l - 1].n, sizeof(uint32_t));
	if (!cnt)
		return xerr(r->err, "out of memory");
	for (uint32_t k = 0; k < mt[l - 1].n; k++)
		cnt[mt[l - 1].link[k]]++;
	x->m[l] = cnt[0];
	for (uint32_t k = 0; k < mt[l].n; k++)
		if (cnt[k] != x->m[l]) {
			xerr(r->err, "not an XGFT: level-%d switches cover %u and %u level-%d groups "
			     "(m_%d is not uniform)", l, cnt[k], x->m[l], l - 1, l);
			free(cnt);
			return -1;
		}
	memset(cnt, 0, (mt[l].n > wt[l - 1].n ? mt[l].n : wt[l - 1].n) * sizeof(uint32_t));
	for (uint32_t k = 0; k < wt[l].n; k++)
		cnt[wt[l].link[k]]++;
	x->w[l] = cnt[0];
	for (uint32_t k = 0; k < wt[l - 1].n; k++)
		if (cnt[k] != x->w[l]) {
			xerr(r->err, "not an XGFT: level-%d nodes have %u and %u kinds of parents "
			     "(w_%d is not uniform)", l - 1, cnt[k], x->w[l], l);
			free(cnt);
			return -1;
		}
	free(cnt);
	return 0;
}

/* the fan-outs, and every level's class counts are those of XGFT(m; w) */
static int rec_shape(struct rec *r)
{
	struct xgft *x = r->x;
	int h = r->h;
	for (int l = 1; l <= h; l++)
		if (rec_fanout(r, l))
			return -1;
	x->m[h + 1] = 1;
	x->w[h + 1] = 0;
	for (int l = 0; l <= h; l++) {
		uint64_t a = 1, b = 1;
		for (int i = l + 1; i <= h; i++) a *= x->m[i];
		for (int i = 1; i <= l; i++) b *= x->w[i];
		if (a != r->mt[l].n || b != r->wt[l].n || a * b > r->n)
			return xerr(r->err, "not an XGFT: level %d has %u x %u groups, XGFT(m, w) needs "
				    "%llu x %llu", l, r->mt[l].n, r->wt[l].n, (unsigned long long)a,
				    (unsigned long long)b);
		x->mtn[l] = (uint32_t)a;
		x->wtn[l] = (uint32_t)b;
	}
	x->nhosts = x->mtn[0];
	return 0;
}

/* 4. numbering: MT top-down, WT bottom-up, children in GUID order */
static int rec_number(struct rec *r)
{
	struct cls *mt = r->mt, *wt = r->wt;
	uint64_t *sortbuf = r->sortbuf = malloc((size_t)r->n * sizeof(*sortbuf));
	if (!sortbuf)
		return xerr(r->err, "out of memory");
	mt[r->h].index[0] = 0;
	for (int l = r->h; l >= 1; l--) {
		/* sort child classes by (parent index, min node) */
		uint32_t k, cnt = mt[l - 1].n;
		for (k = 0; k < cnt; k++)
			sortbuf[k] = ((uint64_t)mt[l].index[mt[l - 1].link[k]] << 32) | mt[l - 1].minnode[k];
		qsort(sortbuf, cnt, sizeof(*sortbuf), cmp_u64);
		for (k = 0; k < cnt; k++) {
			uint32_t node = (uint32_t)sortbuf[k];
			mt[l - 1].index[mt[l - 1].of[node]] = k;  /* = parent*m_l + rank within parent */
		}
	}
	wt[0].index[0] = 0;
	for (int l = 0; l < r->h; l++) {
		uint32_t k, cnt = wt[l + 1].n;
		for (k = 0; k < cnt; k++)
			sortbuf[k] = ((uint64_t)wt[l].index[wt[l + 1].link[k]] << 32) | wt[l + 1].minnode[k];
		qsort(sortbuf, cnt, sizeof(*sortbuf), cmp_u64);
		for (k = 0; k < cnt; k++)
			wt[l + 1].index[wt[l + 1].of[(uint32_t)sortbuf[k]]] = k;
	}
	return 0;
}

/* 5. node tables: every place of the XGFT holds exactly one node */
static int rec_place(struct rec *r)
{
	const struct snap *s = r->s;
	struct xgft *x = r->x;
	x->level_of = r->lvl;
	r->lvl = NULL;
	x->id_of = malloc((size_t)r->n * sizeof(uint32_t));
	if (!x->id_of)
		return xerr(r->err, "out of memory");
	for (int l = 0; l <= r->h; l++) {
		size_t cnt = (size_t)x->mtn[l] * x->wtn[l];
		x->node[l] = malloc(cnt * sizeof(uint32_t));
		if (!x->node[l])
			return xerr(r->err, "out of memory");
		for (size_t k = 0; k < cnt; k++) x->node[l][k] = NONE;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		x->id_of[i] = NONE;
		uint32_t l = x->level_of[i];
		if (l == NONE)
			continue;
		uint32_t id = r->mt[l].index[r->mt[l].of[i]] * x->wtn[l] + r->wt[l].index[r->wt[l].of[i]];
		if (x->node[l][id] != NONE)
			return xerr(r->err, "not an XGFT: %s and %s have the same place on level %u",
				    nm(s, x->node[l][id]), nm(s, i), l);
		x->node[l][id] = i;
		x->id_of[i] = id;
	}
	for (int l = 0; l <= r->h; l++)
		for (size_t k = 0; k < (size_t)x->mtn[l] * x->wtn[l]; k++)
			if (x->node[l][k] == NONE)
				return xerr(r->err, "not an XGFT: level %d lacks the node at MT %zu WT %zu", l,
					    k / x->wtn[l], k % x->wtn[l]);
	return 0;
}

/* the ports of the up links of level-l node id, 0 where a link failed */
static int rec_node_links(struct rec *r, int l, size_t id)
{
	const struct snap *s = r->s;
	struct xgft *x = r->x;
	uint32_t W = x->w[l + 1], M = x->m[l + 1];
	uint32_t mti = (uint32_t)(id / x->wtn[l]), wti = (uint32_t)(id % x->wtn[l]);
	uint32_t a = x->node[l][id];
	for (uint32_t w = 0; w < W; w++) {
		uint32_t pid = (mti / M) * x->wtn[l + 1] + wti * W + w;
		uint32_t b = x->node[l + 1][pid];
		unsigned pa = 0, pb = 0;
		for (unsigned p = 1; p <= s->nodes[a].nports; p++)
			if (linked(s, a, p) && port_at(s, a, p)->peer_node == b) {
				if (pa)
					return xerr(r->err, "parallel links between %s and %s are not "
						    "supported", nm(s, a), nm(s, b));
				pa = p;
				pb = port_at(s, a, p)->peer_port;
			}
		if (!pa) {
			if (l == 0)
				return xerr(r->err, "host %s is not linked to its leaf", nm(s, a));
			x->nfailed++;
			continue;
		}
		r->found++;
		x->up[l][id * W + w] = (uint8_t)pa;
		x->down[l + 1][(size_t)pid * M + mti % M] = (uint8_t)pb;
	}
	return 0;
}

/* 6. ports of the expected links; every real link must be one of them */
static int rec_ports(struct rec *r)
{
	const struct snap *s = r->s;
	struct xgft *x = r->x;
	uint64_t real = 0;
	for (uint32_t i = 0; i < r->n; i++)
		if (x->level_of[i] != NONE)
			for (unsigned p = 1; p <= s->nodes[i].nports; p++)
				real += linked(s, i, p) && x->level_of[port_at(s, i, p)->peer_node] ==
							   x->level_of[i] + 1;
	for (int l = 0; l < r->h; l++) {
		size_t cnt = (size_t)x->mtn[l] * x->wtn[l];
		x->up[l] = calloc(cnt * x->w[l + 1], 1);
		x->down[l + 1] = calloc((size_t)x->mtn[l + 1] * x->wtn[l + 1] * x->m[l + 1], 1);
		if (!x->up[l] || !x->down[l + 1])
			return xerr(r->err, "out of memory");
		for (size_t id = 0; id < cnt; id++)
			if (rec_node_links(r, l, id))
				return -1;
	}
	if (r->found != real)
		return xerr(r->err, "not an XGFT: %llu of the fabric's %llu links between levels are "
			    "not links of XGFT(m; w) (extra or cross cables)",
			    (unsigned long long)(real - r->found), (unsigned long long)real);
	return 0;
}

int xgft_recognise(const struct snap *s, struct xgft *x, char err[XGFT_ERR_LEN])
{
	memset(x, 0, sizeof(*x));
	struct rec r = { .s = s, .x = x, .err = err, .n = s->nnodes };
	int rc = -1;
	r.lvl = malloc((size_t)r.n * sizeof(*r.lvl));
	r.queue = malloc((size_t)r.n * sizeof(*r.queue));
	r.uf = malloc((size_t)r.n * sizeof(*r.uf));
	uint32_t nq = 0;
	if (!r.lvl || !r.queue || !r.uf)
		xerr(err, "out of memory");
	else if (!rec_hosts(&r, &nq)) {
		rec_bfs(&r, nq);
		if (!rec_check_levels(&r) && !rec_classes(&r) && !rec_relations(&r) && !rec_shape(&r) &&
		    !rec_number(&r) && !rec_place(&r) && !rec_ports(&r))
			rc = 0;
	}
	for (int l = 0; l <= XGFT_HMAX; l++) {
		cls_free(&r.mt[l]);
		cls_free(&r.wt[l]);
	}
	free(r.sortbuf);
	free(r.lvl);
	free(r.queue);
	free(r.uf);
	if (rc)
		xgft_free(x);
	return rc;
}

/* ---- a synthetic XGFT, as tests/lab/fabgen.py builds it ----------------- */

static int parse_list(const char **p, uint32_t *v, int h)
{
	char *end;
	for (int i = 1; i <= h; i++) {
		unsigned long a = strtoul(*p, &end, 10);
		if (end == *p || a < 1 || a > 254)
			return -1;
		v[i] = (uint32_t)a;
		*p = end;
		if (i < h) {
			if (**p != ',')
				return -1;
			(*p)++;
		}
	}
	return 0;
}

int xgft_build_snap(const char *spec, struct snap **out, char err[XGFT_ERR_LEN])
{
	uint32_t m[XGFT_HMAX + 2] = { 0 }, w[XGFT_HMAX + 2] = { 0 };
	char *end;
	const char *p = spec;
	long h = strtol(p, &end, 10);
	if (end == p || h < 1 || h > XGFT_HMAX || *end != ';')
		return xerr(err, "--xgft wants \"h;m1,..,mh;w1,..,wh\" with 1 <= h <= %d", XGFT_HMAX);
	p = end + 1;
	if (parse_list(&p, m, (int)h) || *p++ != ';' || parse_list(&p, w, (int)h) || *p || w[1] != 1)
		return xerr(err, "--xgft \"%s\": want h;m1,..,mh;w1,..,wh, values 1..254, w1 = 1", spec);
	uint64_t cnt[XGFT_HMAX + 1], total = 0, off[XGFT_HMAX + 1];
	for (int l = 0; l <= h; l++) {
		uint64_t a = 1;
		for (int i = l + 1; i <= h; i++) a *= m[i];
		for (int i = 1; i <= l; i++) a *= w[i];
		cnt[l] = a;
		off[l] = total;
		total += a;
	}
	if (total > 200000)
		return xerr(err, "--xgft \"%s\" has %llu nodes (limit 200000)", spec,
			    (unsigned long long)total);
	struct snap *s = snap_new();
	if (!s)
		return xerr(err, "out of memory");
	snprintf(s->engine, sizeof(s->engine), "none");
	char desc[64];
	/* node k of level l, coordinates: mt = k / WT(l), wt = k % WT(l) */
	for (int l = 0; l <= h; l++) {
		uint32_t wtn = 1;
		for (int i = 1; i <= l; i++) wtn *= w[i];
		for (uint64_t k = 0; k < cnt[l]; k++) {
			unsigned np = l == 0 ? 1 : m[l] + (l < h ? w[l + 1] : 0);
			int dl = l == 0 ? snprintf(desc, sizeof(desc), "h%llu HCA-1", (unsigned long long)k)
					: snprintf(desc, sizeof(desc), "sw-L%d-%llu", l, (unsigned long long)k);
			uint64_t guid = (l == 0 ? 0x0002c90300000000ull : 0x0008f10500000000ull) + off[l] + k + 1;
			int64_t idx = snap_add_node(s, l == 0 ? SNAP_NODE_CA : SNAP_NODE_SWITCH, guid, guid,
						    (uint8_t)np, desc, (size_t)dl);
			if (idx < 0) {
				snap_free(s);
				return xerr(err, "out of memory");
			}
			struct snap_port *p0 = snap_port_of(s, (uint32_t)idx, l == 0 ? 1 : 0);
			p0->present = 1;
			p0->guid = guid + (l == 0);
			p0->lid = (uint16_t)(off[l] + k + 1 <= SNAP_MAX_LID ? off[l] + k + 1 : 0);
			p0->state = SNAP_PORT_ACTIVE;
			for (unsigned q = 1; l > 0 && q <= np; q++) {
				struct snap_port *pq = snap_port_of(s, (uint32_t)idx, q);
				pq->present = 1;
				pq->guid = guid;
				pq->state = SNAP_PORT_ACTIVE;
			}
			(void)wtn;
		}
	}
	for (int l = 0; l < h; l++) {
		uint32_t wtl = 1, wtu;
		for (int i = 1; i <= l; i++) wtl *= w[i];
		wtu = wtl * w[l + 1];
		for (uint64_t k = 0; k < cnt[l]; k++) {
			uint32_t mti = (uint32_t)(k / wtl), wti = (uint32_t)(k % wtl);
			for (uint32_t u = 0; u < w[l + 1]; u++) {
				uint64_t pk = (uint64_t)(mti / m[l + 1]) * wtu + wti * w[l + 1] + u;
				unsigned pa = l == 0 ? 1 : m[l] + 1 + u;
				unsigned pb = mti % m[l + 1] + 1;
				if (snap_link(s, (uint32_t)(off[l] + k), pa, (uint32_t)(off[l + 1] + pk), pb)) {
					snap_free(s);
					return xerr(err, "cannot link");
				}
			}
		}
	}
	char e2[SNAP_ERR_LEN];
	if (snap_canonicalize(s) || snap_validate(s, e2)) {
		snap_free(s);
		return xerr(err, "synthetic XGFT invalid");
	}
	*out = s;
	return 0;
}
