/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hier.c - the switch-cluster hierarchy; the algorithm is specified in
 * hier.h, this file says how it is made fast and why that stays exact.
 *
 * Why twins may be clustered as one block: LFT routing is by destination
 * only, so a host a cabled to leaf A has hops(a -> b) = hops from switch A
 * to LID(b), H[b][A] below. Two hosts a, a' on A with equal rows H[a][.] =
 * H[a'][.] are then at the same distance from every other host, and at
 * t = H[a][A] from each other. In a round whose minimum m equals t the
 * greedy grouping (hier.h) always puts all twins into the same group: the
 * first twin's fate decides, and every later twin passes exactly the same
 * tests plus the one against its twins, which is m. Replacing the twins by
 * one block that has a "self-distance" t, is keyed by its smallest member
 * and is expanded into host children when it joins, therefore gives the
 * same tree. The only divergence is a round with m < t that groups one of
 * the twins (the block would carry all of them along): that is detected,
 * the block is split into single hosts, and the clustering rerun.
 * Under LFT routing that guard never fires: a route from a host's own leaf
 * to it is one switch or fails (it cannot leave the leaf and come back
 * without a loop), so t is 1 or infinite; every distance involving a
 * leaf-attached host is >= 1, and a host its own leaf cannot reach is at
 * infinity from everyone, so it is never grouped. The guard stays because
 * exactness should not rest on that argument alone, and it costs nothing.
 */
#include "hier.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hopdist.h"
#include "util.h"

uint64_t hier_guid_hash(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

struct hier *hier_ref(struct hier *h)
{
	atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
	return h;
}

void hier_free(struct hier *h)
{
	/* acq_rel: the freeing thread must see what other holders wrote. */
	if (!h || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(h->clusters);
	free(h->host_parent);
	free(h->anc);
	free(h->names);
	free(h->swnames);
	free(h);
}

int hier_cluster_at(const struct hier *h, uint32_t host, uint32_t level, uint64_t *id)
{
	if (host >= h->nhosts || level >= h->depth)
		return AN_E_INVAL;
	*id = h->clusters[h->anc[(size_t)host * h->depth + level]].id;
	return AN_OK;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int hier_count_at(const struct hier *h, const uint32_t *hosts, size_t n, uint32_t level, size_t *count)
{
	if (level >= h->depth && n)
		return AN_E_INVAL;
	uint32_t *c = malloc((n ? n : 1) * sizeof(*c));
	if (!c)
		return AN_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (hosts[i] >= h->nhosts) {
			free(c);
			return AN_E_INVAL;
		}
		c[i] = h->anc[(size_t)hosts[i] * h->depth + level];
	}
	qsort(c, n, sizeof(*c), cmp_u32);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += !i || c[i] != c[i - 1];
	free(c);
	*count = k;
	return AN_OK;
}

/* ---- build state ---------------------------------------------------------------- */

struct hb {
	const struct route_tab *rt;
	uint32_t nh;           /* hosts */
	uint32_t *dep;         /* [nh] default end port */
	uint64_t *hkey;        /* [nh] default-port GUID (ties: host index, by position) */
	uint32_t *aidx;        /* [nh] leaf switch index into leaves[], or HIER_NONE */
	uint32_t nleaf;
	uint32_t *leaves;      /* [nleaf] leaf switch node indices */
	uint16_t *H;           /* [nrows][nleaf] hops from each leaf switch to a host */
	uint32_t *hrow;        /* [nh] the host's row of H: hosts on one leaf of a
				  complete cover share theirs */
	uint32_t nrows;
	uint64_t *rowhash;     /* [nh] */
	uint8_t *single;       /* [nh] forced out of blocks by a split */

	/* classes, in key order */
	uint32_t C;
	uint32_t *cls_first;   /* [C+1]: class c is cls_host[cls_first[c] .. cls_first[c+1]) */
	uint32_t *cls_host;    /* [nh] hosts of each class, in key order */
	uint32_t *host_cls;    /* [nh] */
	uint16_t *D;           /* [C][C] */
	uint16_t *sd;          /* [C] self-distance of a block of >= 2, else HIER_INF */

	/* output under construction */
	struct hier_cluster *cl;
	uint32_t ncl;
	size_t capcl;
	uint32_t *host_parent;
};

static int host_less(const struct hb *b, uint32_t x, uint32_t y)
{
	return b->hkey[x] != b->hkey[y] ? b->hkey[x] < b->hkey[y] : x < y;
}

static int cmp_host_key(const void *pa, const void *pb, void *arg)
{
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
	return x == y ? 0 : host_less(arg, x, y) ? -1 : 1;
}

/* Blocks: same leaf, same row; within that, key order. */
static int cmp_host_block(const void *pa, const void *pb, void *arg)
{
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
	const struct hb *b = arg;
	if (b->aidx[x] != b->aidx[y])
		return b->aidx[x] < b->aidx[y] ? -1 : 1;
	if (b->rowhash[x] != b->rowhash[y])
		return b->rowhash[x] < b->rowhash[y] ? -1 : 1;
	return cmp_host_key(pa, pb, arg);
}

/* qsort_r (glibc, POSIX 2024): the comparators get the build's context
 * instead of a global, so concurrent builds need no lock. */
static void sort_hosts(const struct hb *b, uint32_t *v, size_t n, int (*cmp)(const void *, const void *, void *))
{
	qsort_r(v, n, sizeof(*v), cmp, (void *)b);
}

static uint16_t sat16(int v)
{
	return v < 0 || v >= (int)HIER_INF ? HIER_INF : (uint16_t)v;
}

/* hops(x -> y) for hosts. */
static uint16_t host_hops(const struct hb *b, uint32_t x, uint32_t y)
{
	if (b->aidx[x] != HIER_NONE)
		return b->H[(size_t)b->hrow[y] * b->nleaf + b->aidx[x]];
	const struct route_tab *rt = b->rt;
	return sat16(route_hops(rt, b->dep[x], rt->eps[b->dep[y]].lid));
}

static uint16_t host_dist(const struct hb *b, uint32_t x, uint32_t y)
{
	uint16_t p = host_hops(b, x, y), q = host_hops(b, y, x);
	return p > q ? p : q;
}

static int same_row(const struct hb *b, uint32_t x, uint32_t y)
{
	uint32_t p = b->hrow[x], q = b->hrow[y];
	return p == q || !memcmp(b->H + (size_t)p * b->nleaf, b->H + (size_t)q * b->nleaf, b->nleaf * sizeof(*b->H));
}

/* Runs of (leaf, row hash): classes by exact row comparison with the class
 * representatives seen in the run (one, unless hashes collide or rows
 * differ only where the hash cannot tell). The ids are unsorted for now:
 * b->host_cls[h] = class of h, reps[c] = its first member seen. v: [nh]
 * scratch. Returns the number of classes. */
static uint32_t classes_by_row(struct hb *b, uint32_t *v, uint32_t *reps)
{
	uint32_t nh = b->nh, C = 0;
	uint32_t *tmp = b->host_cls;
	for (uint32_t i = 0; i < nh; i++)
		v[i] = i;
	sort_hosts(b, v, nh, cmp_host_block);
	for (uint32_t i = 0; i < nh;) {
		uint32_t j = i;
		while (j < nh && b->aidx[v[j]] == b->aidx[v[i]] && b->rowhash[v[j]] == b->rowhash[v[i]])
			j++;
		uint32_t c0 = C;
		for (uint32_t k = i; k < j; k++) {
			uint32_t h = v[k], c = HIER_NONE;
			if (b->aidx[h] != HIER_NONE && !b->single[h])
				for (uint32_t r = c0; r < C && c == HIER_NONE; r++)
					if (!b->single[reps[r]] && same_row(b, h, reps[r]))
						c = r;
			if (c == HIER_NONE) {
				c = C++;
				reps[c] = h;
			}
			tmp[h] = c;
		}
		i = j;
	}
	return C;
}

/* Renumbers the C classes of b->host_cls in key order: the greedy rounds
 * then walk slot indices in key order, and a merged cluster keeps its
 * starter's slot (the smallest key of its group), so the order never needs
 * resorting. */
static int classes_in_key_order(struct hb *b, const uint32_t *reps, uint32_t C)
{
	uint32_t nh = b->nh, *tmp = b->host_cls;
	uint32_t *rk = malloc(((size_t)C + 1) * sizeof(*rk)), *newid = malloc(((size_t)C + 1) * sizeof(*newid));
	uint32_t *ord = rk && newid ? malloc(((size_t)C + 1) * sizeof(*ord)) : NULL;
	if (!ord) {
		free(rk), free(newid);
		return AN_E_NOMEM;
	}
	/* the class's smallest member, found by scanning all hosts */
	for (uint32_t c = 0; c < C; c++)
		rk[c] = reps[c];
	for (uint32_t h = 0; h < nh; h++)
		if (host_less(b, h, rk[tmp[h]]))
			rk[tmp[h]] = h;
	for (uint32_t c = 0; c < C; c++)
		ord[c] = rk[c];
	sort_hosts(b, ord, C, cmp_host_key);
	for (uint32_t c = 0; c < C; c++)
		newid[tmp[ord[c]]] = c;
	for (uint32_t h = 0; h < nh; h++)
		b->host_cls[h] = newid[tmp[h]];
	free(ord);
	free(rk);
	free(newid);
	return AN_OK;
}

/* Members per class, in key order: first[C + 2] becomes b->cls_first. */
static int class_members(struct hb *b, uint32_t *first, uint32_t C)
{
	uint32_t nh = b->nh;
	memset(first, 0, ((size_t)C + 2) * sizeof(*first));
	for (uint32_t h = 0; h < nh; h++)
		first[b->host_cls[h] + 2]++;
	for (uint32_t c = 0; c < C; c++)
		first[c + 2] += first[c + 1];
	uint32_t *byk = malloc(((size_t)nh + 1) * sizeof(*byk));
	if (!byk) {
		free(first);
		return AN_E_NOMEM;
	}
	for (uint32_t i = 0; i < nh; i++)
		byk[i] = i;
	sort_hosts(b, byk, nh, cmp_host_key);
	for (uint32_t i = 0; i < nh; i++) {
		uint32_t h = byk[i];
		b->cls_host[first[b->host_cls[h] + 1]++] = h;
	}
	free(byk);
	free(b->cls_first);
	b->cls_first = first;
	b->C = C;
	return AN_OK;
}

/* The classes' self-distances and distance matrix, from one member each. */
static int class_distances(struct hb *b)
{
	uint32_t C = b->C;
	const uint32_t *first = b->cls_first;
	free(b->D);
	free(b->sd);
	b->D = malloc((size_t)C * C * sizeof(*b->D) + 1);
	b->sd = malloc(((size_t)C + 1) * sizeof(*b->sd));
	if (!b->D || !b->sd)
		return AN_E_NOMEM;
	for (uint32_t c = 0; c < C; c++) {
		uint32_t r = b->cls_host[first[c]];
		b->sd[c] = first[c + 1] - first[c] >= 2 ? host_hops(b, r, r) : HIER_INF;
	}
	/* Only the upper triangle is computed; pairs are symmetric. */
#pragma omp parallel for schedule(dynamic, 16)
	for (uint32_t c = 0; c < C; c++) {
		uint32_t r = b->cls_host[b->cls_first[c]];
		b->D[(size_t)c * C + c] = HIER_INF;
		for (uint32_t e = c + 1; e < C; e++)
			b->D[(size_t)c * C + e] = host_dist(b, r, b->cls_host[b->cls_first[e]]);
	}
	for (uint32_t c = 0; c < C; c++)
		for (uint32_t e = c + 1; e < C; e++)
			b->D[(size_t)e * C + c] = b->D[(size_t)c * C + e];
	return AN_OK;
}

/* Twin classes and their distance matrix, honouring b->single. */
static int make_classes(struct hb *b)
{
	uint32_t nh = b->nh;
	uint32_t *v = malloc(((size_t)nh + 1) * sizeof(*v));
	uint32_t *reps = malloc(((size_t)nh + 1) * sizeof(*reps));
	uint32_t *first = malloc(((size_t)nh + 2) * sizeof(*first));
	if (!v || !reps || !first) {
		free(v), free(reps), free(first);
		return AN_E_NOMEM;
	}
	uint32_t C = classes_by_row(b, v, reps);
	free(v);
	int rc = C > HIER_MAX_CLASSES ? AN_E_RANGE : classes_in_key_order(b, reps, C);
	free(reps);
	if (rc) {
		free(first);
		return rc;
	}
	rc = class_members(b, first, C);   /* first is b's now, or freed */
	return rc ? rc : class_distances(b);
}

static int new_cluster(struct hb *b, uint16_t dist, uint64_t key)
{
	if (util_grow((void **)&b->cl, &b->capcl, (size_t)b->ncl + 1, sizeof(*b->cl)))
		return -1;
	struct hier_cluster *x = &b->cl[b->ncl++];
	memset(x, 0, sizeof(*x));
	x->parent = HIER_NONE;
	x->dist = dist;
	x->key = key;
	return 0;
}

#define ABSORBED (HIER_NONE - 1)   /* slot merged into another slot's cluster */

/* State of cluster_rounds, slots indexed by class. */
struct rounds {
	uint32_t C;
	uint16_t *D;           /* b->D: complete-linkage distances, kept up to date */
	uint32_t *act;         /* [nact] active slots, in key order */
	uint32_t nact;
	uint32_t *node;        /* slot -> cluster, NONE, or ABSORBED */
	uint8_t *blk;          /* slot is a not yet joined block of >= 2 */
	uint8_t *asg;          /* slot grouped in this round */
	uint32_t *G;           /* [ng] the group being formed, its starter first */
	uint32_t ng;
};

/* The round's minimum: over active pairs and unjoined blocks' self-distances. */
static uint16_t round_min(const struct hb *b, const struct rounds *r)
{
	uint16_t m = HIER_INF;
	for (uint32_t x = 0; x < r->nact; x++) {
		uint32_t i = r->act[x];
		if (r->blk[i] && b->sd[i] < m)
			m = b->sd[i];
		const uint16_t *row = r->D + (size_t)i * r->C;
		for (uint32_t y = x + 1; y < r->nact; y++)
			if (row[r->act[y]] < m)
				m = row[r->act[y]];
	}
	return m;
}

/* The greedy group of starter act[x]: every later free slot at distance m
 * from all slots already in it. */
static void round_group(struct rounds *r, uint32_t x, uint16_t m)
{
	r->ng = 0;
	r->G[r->ng++] = r->act[x];
	for (uint32_t y = x + 1; y < r->nact; y++) {
		uint32_t j = r->act[y];
		if (r->asg[j])
			continue;
		const uint16_t *row = r->D + (size_t)j * r->C;
		uint32_t g = 0;
		while (g < r->ng && row[r->G[g]] == m)
			g++;
		if (g == r->ng)
			r->G[r->ng++] = j;
	}
}

/* 1 if the group holds a block whose twins the per-host run would separate
 * (they are marked single), else 0. */
static int group_splits(struct hb *b, const struct rounds *r, uint16_t m)
{
	int split = 0;
	for (uint32_t g = 0; g < r->ng; g++)
		if (r->blk[r->G[g]] && b->sd[r->G[g]] != m) {
			for (uint32_t k = b->cls_first[r->G[g]]; k < b->cls_first[r->G[g] + 1]; k++)
				b->single[b->cls_host[k]] = 1;
			split = 1;
		}
	return split;
}

/* A new cluster at distance m over the group: its slots' clusters, or
 * their hosts, become its children. */
static int group_join(struct hb *b, struct rounds *r, uint16_t m)
{
	uint32_t i = r->G[0];
	if (new_cluster(b, m, b->hkey[b->cls_host[b->cls_first[i]]]))
		return AN_E_NOMEM;
	uint32_t nc = b->ncl - 1;
	for (uint32_t g = 0; g < r->ng; g++) {
		uint32_t s = r->G[g];
		r->asg[s] = 1;
		if (r->node[s] != HIER_NONE) {
			b->cl[r->node[s]].parent = nc;
			b->cl[nc].nchildren++;
		} else {
			for (uint32_t k = b->cls_first[s]; k < b->cls_first[s + 1]; k++) {
				b->host_parent[b->cls_host[k]] = nc;
				b->cl[nc].nchildren++;
			}
		}
	}
	for (uint32_t g = 1; g < r->ng; g++)
		r->node[r->G[g]] = ABSORBED;
	return AN_OK;
}

/* Complete linkage, into the starter's slot. Clusters made earlier in this
 * round are updated too: their rows already hold maxima over their own
 * members. */
static void group_linkage(struct rounds *r)
{
	uint32_t i = r->G[0], C = r->C;
	uint16_t *D = r->D, *ri = D + (size_t)i * C;
	for (uint32_t y = 0; y < r->nact; y++) {
		uint32_t z = r->act[y];
		if (z == i || r->node[z] == ABSORBED)
			continue;
		uint16_t v = ri[z];
		for (uint32_t g = 1; g < r->ng; g++) {
			uint16_t w = D[(size_t)r->G[g] * C + z];
			if (w > v)
				v = w;
		}
		ri[z] = v;
		D[(size_t)z * C + i] = v;
	}
}

/* One round at minimum m: groups in key order of their starters. */
static int one_round(struct hb *b, struct rounds *r, uint16_t m)
{
	memset(r->asg, 0, r->C);
	for (uint32_t x = 0; x < r->nact; x++) {
		uint32_t i = r->act[x];
		if (r->asg[i])
			continue;
		round_group(r, x, m);
		if (r->ng < 2 && !(r->blk[i] && b->sd[i] == m))
			continue;
		if (group_splits(b, r, m))
			return 1;
		if (group_join(b, r, m))
			return AN_E_NOMEM;
		group_linkage(r);
		r->node[i] = b->ncl - 1;
		r->blk[i] = 0;
	}
	uint32_t w = 0;
	for (uint32_t x = 0; x < r->nact; x++)
		if (r->node[r->act[x]] != ABSORBED)
			r->act[w++] = r->act[x];
	r->nact = w;
	return AN_OK;
}

/* Whatever is left meets nothing at a finite distance: roots. */
static int lone_roots(struct hb *b, const struct rounds *r)
{
	for (uint32_t x = 0; x < r->nact; x++) {
		uint32_t s = r->act[x];
		if (r->node[s] != HIER_NONE)
			continue;
		for (uint32_t k = b->cls_first[s]; k < b->cls_first[s + 1]; k++) {
			uint32_t h = b->cls_host[k];
			if (new_cluster(b, HIER_INF, b->hkey[h]))
				return AN_E_NOMEM;
			b->host_parent[h] = b->ncl - 1;
			b->cl[b->ncl - 1].nchildren = 1;
		}
	}
	return AN_OK;
}

/*
 * The rounds of hier.h over classes. Returns AN_OK, a negative error, or
 * 1 when a block had to be split (b->single updated: rerun).
 */
static int cluster_rounds(struct hb *b)
{
	uint32_t C = b->C;
	struct rounds r = {
		.C = C,
		.D = b->D,
		.act = malloc(((size_t)C + 1) * sizeof(*r.act)),
		.node = malloc(((size_t)C + 1) * sizeof(*r.node)),
		.blk = malloc((size_t)C + 1),
		.asg = malloc((size_t)C + 1),
		.G = malloc(((size_t)C + 1) * sizeof(*r.G)),
		.nact = C,
	};
	int rc = AN_E_NOMEM;
	if (r.act && r.node && r.blk && r.asg && r.G) {
		for (uint32_t c = 0; c < C; c++) {
			r.act[c] = c;
			r.node[c] = HIER_NONE;
			r.blk[c] = b->cls_first[c + 1] - b->cls_first[c] >= 2;
		}
		b->ncl = 0;
		rc = AN_OK;
		for (uint16_t m; !rc && (m = round_min(b, &r)) != HIER_INF;)
			rc = one_round(b, &r, m);
		if (!rc)
			rc = lone_roots(b, &r);
	}
	free(r.act);
	free(r.node);
	free(r.blk);
	free(r.asg);
	free(r.G);
	return rc;
}

static int cmp_id(const void *pa, const void *pb)
{
	const uint64_t *x = pa, *y = pb;   /* {id, level << 32 | index} */
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Levels, depth, ancestors, IDs. */
static int finish(struct hb *b, struct hier *h)
{
	uint32_t n = b->ncl;
	struct hier_cluster *cl = b->cl;
	/* children are created before parents: reverse order is top-down */
	for (uint32_t c = n; c-- > 0;)
		cl[c].level = cl[c].parent == HIER_NONE ? 0 : cl[cl[c].parent].level + 1;
	uint32_t depth = 0;
	for (uint32_t x = 0; x < b->nh; x++) {
		uint32_t p = b->host_parent[x];
		if (cl[p].level + 1 > depth)
			depth = cl[p].level + 1;
		cl[p].nhosts++;
		cl[p].id += hier_guid_hash(b->hkey[x]);
		if (b->hkey[x] < cl[p].key)
			cl[p].key = b->hkey[x];
	}
	for (uint32_t c = 0; c < n; c++) {
		if (cl[c].parent == HIER_NONE) {
			h->nroots++;
			continue;
		}
		struct hier_cluster *p = &cl[cl[c].parent];
		p->nhosts += cl[c].nhosts;
		p->id += cl[c].id;
		if (cl[c].key < p->key)
			p->key = cl[c].key;
	}
	uint64_t (*ids)[2] = malloc(((size_t)n + 1) * sizeof(*ids));
	if (!ids)
		return AN_E_NOMEM;
	for (int again = 1; again;) {
		again = 0;
		for (uint32_t c = 0; c < n; c++) {
			ids[c][0] = cl[c].id;
			ids[c][1] = (uint64_t)cl[c].level << 32 | c;
		}
		qsort(ids, n, sizeof(*ids), cmp_id);
		for (uint32_t c = 1; c < n; c++)
			if (ids[c][0] == ids[c - 1][0]) {
				uint32_t k = (uint32_t)ids[c][1];
				cl[k].id = hier_guid_hash(cl[k].id + 1);
				again = 1;
			}
	}
	free(ids);

	h->anc = malloc(((size_t)b->nh * depth + 1) * sizeof(*h->anc));
	if (!h->anc)
		return AN_E_NOMEM;
	for (uint32_t x = 0; x < b->nh; x++) {
		uint32_t p = b->host_parent[x], *a = h->anc + (size_t)x * depth;
		for (uint32_t l = cl[p].level; l < depth; l++)
			a[l] = p;
		for (uint32_t q = p; cl[q].parent != HIER_NONE;) {
			q = cl[q].parent;
			a[cl[q].level] = q;
		}
	}
	h->depth = depth;
	h->nclusters = n;
	h->clusters = cl;
	b->cl = NULL;
	h->host_parent = b->host_parent;
	b->host_parent = NULL;
	return AN_OK;
}

/* ---- names (hier.h, "Names") ---------------------------------------------- */

static int name_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
	       ch == '_' || ch == '-';
}

void hier_sanitize(const char *desc, char out[HIER_NAME_LEN])
{
	size_t n = 0;
	int gap = 0;
	for (const unsigned char *p = (const unsigned char *)desc; *p; p++) {
		if (!name_char(*p)) {
			gap = 1;
			continue;
		}
		if (n + 1 + gap > ROUTE_NAME_MAX)
			break;
		if (gap && n)
			out[n++] = '_';
		out[n++] = (char)*p;
		gap = 0;
	}
	out[n] = 0;
}

/* Names that would shadow a GUID or a fallback are not names. */
static int name_usable(const char *s)
{
	if (!s[0] || !strncmp(s, "sw_", 3) || !strncmp(s, "cl_", 3))
		return 0;
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
		return 1;
	for (const char *p = s + 2; *p; p++)
		if (util_hexval((unsigned char)*p) < 0)
			return 1;
	return 0;
}

static int cmp_name_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int switch_names(const struct route_tab *rt, struct hier *h)
{
	uint32_t n = rt->nsw;
	h->nsw = n;
	h->swnames = calloc((size_t)n + 1, sizeof(*h->swnames)); /* zeroed: names are copied whole */
	const char **ord = malloc(((size_t)n + 1) * sizeof(*ord));
	uint8_t *dup = calloc((size_t)n + 1, 1);
	if (!h->swnames || !ord || !dup) {
		free(ord);
		free(dup);
		return AN_E_NOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		hier_sanitize(rt->snap->nodes[rt->sw_node[i]].desc, h->swnames[i]);
		if (!name_usable(h->swnames[i]))
			h->swnames[i][0] = 0;
		ord[i] = h->swnames[i];
	}
	qsort(ord, n, sizeof(*ord), cmp_name_ptr);
	/* every member of a run of equal names loses it, not all but one */
	for (uint32_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(ord[i], ord[j]); j++)
			;
		for (uint32_t k = i; j - i > 1 && k < j; k++)
			dup[(const char(*)[HIER_NAME_LEN])ord[k] - h->swnames] = 1;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!h->swnames[i][0] || dup[i])
			snprintf(h->swnames[i], HIER_NAME_LEN, "sw_%016" PRIx64, rt->snap->nodes[rt->sw_node[i]].guid);
	free(ord);
	free(dup);
	return AN_OK;
}

/* rank[] as in hier.h: BFS over up switch links from the switches hosts
 * are cabled to. queue has room for nsw. */
static void switch_ranks(const struct route_tab *rt, uint32_t *rank, uint32_t *queue)
{
	uint32_t head = 0, tail = 0;
	for (uint32_t i = 0; i < rt->nsw; i++)
		rank[i] = HIER_NONE;
	for (uint32_t e = 0; e < rt->neps; e++) {
		const struct route_ep *ep = &rt->eps[e];
		if (ep->host == ROUTE_NONE || ep->leaf == ROUTE_NONE)
			continue;
		uint32_t sw = rt->sw_of_node[ep->leaf];
		if (sw != ROUTE_NONE && rank[sw] == HIER_NONE) {
			rank[sw] = 0;
			queue[tail++] = sw;
		}
	}
	while (head < tail) {
		uint32_t sw = queue[head++], np = rt->snap->nodes[rt->sw_node[sw]].nports;
		for (uint32_t p = 1; p <= np; p++) {
			uint32_t u = rt->pt[rt->pt_off[sw] + p];
			if (u < rt->nsw && rank[u] == HIER_NONE) {
				rank[u] = rank[sw] + 1;
				queue[tail++] = u;
			}
		}
	}
}

struct namer {
	const struct route_tab *rt;
	struct hier *h;
	uint32_t *rank, *queue, *stamp;
	uint8_t *taken;
	uint32_t *pair_sw;     /* leaves(C) of every cluster, by GUID: see leaf_pairs */
	size_t npairs;
	uint32_t *first;       /* [nclusters + 1] into pair[] */
};

static uint64_t sw_guid(const struct route_tab *rt, uint32_t sw)
{
	return rt->snap->nodes[rt->sw_node[sw]].guid;
}

struct leaf_key {
	uint64_t guid;
	uint32_t sw;
};

static int cmp_leaf_key(const void *pa, const void *pb)
{
	const struct leaf_key *x = pa, *y = pb;
	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	return (x->sw > y->sw) - (x->sw < y->sw);
}

/* leaves(C) for every cluster: the leaf switches of its hosts by GUID,
 * cluster after cluster, with first[] indexing each cluster's run. The
 * (host, ancestor) pairs are bucketed by cluster and each bucket's
 * switches deduplicated before sorting: only the distinct leaves of a
 * cluster are sorted (a few thousand at k=56), not the nhosts * depth
 * pairs (131,712), which took a third of a cable fault's index update. */
static int leaf_pairs(struct namer *m)
{
	const struct route_tab *rt = m->rt;
	struct hier *h = m->h;
	uint32_t nc = h->nclusters;
	size_t cap = (size_t)h->nhosts * (h->depth ? h->depth : 1) + 1, n = 0;
	uint32_t *at = calloc((size_t)nc + 2, sizeof(*at)), *sw_of = malloc(cap * sizeof(*sw_of));
	uint32_t *seen = calloc((size_t)rt->nsw + 1, sizeof(*seen));
	struct leaf_key *key = malloc(cap * sizeof(*key));
	m->first = calloc((size_t)nc + 2, sizeof(*m->first));
	m->pair_sw = malloc(cap * sizeof(*m->pair_sw));
	int rc = at && sw_of && seen && key && m->first && m->pair_sw ? AN_OK : AN_E_NOMEM;
	/* Two passes over the hosts' ancestors: count per cluster, then place. */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		n = 0;
		for (uint32_t x = 0; x < h->nhosts; x++) {
			const struct route_ep *e = &rt->eps[route_host_ep(rt, x)];
			uint32_t sw = e->leaf == ROUTE_NONE ? ROUTE_NONE : rt->sw_of_node[e->leaf];
			if (sw == ROUTE_NONE)
				continue;
			for (uint32_t q = h->host_parent[x]; q != HIER_NONE && n < cap; q = h->clusters[q].parent, n++)
				if (pass)
					sw_of[at[q]++] = sw;
				else
					at[q + 1]++;
		}
		for (uint32_t c = 0; !pass && c < nc; c++)
			at[c + 1] += at[c];
	}
	/* at[c] is now where cluster c's run ends, at[c - 1] where it began. */
	size_t k = 0;
	for (uint32_t c = 0; c < nc && !rc; c++) {
		size_t nk = 0;
		for (uint32_t i = c ? at[c - 1] : 0; i < at[c]; i++)
			if (seen[sw_of[i]] != c + 1) {
				seen[sw_of[i]] = c + 1;
				key[nk++] = (struct leaf_key){ sw_guid(rt, sw_of[i]), sw_of[i] };
			}
		qsort(key, nk, sizeof(*key), cmp_leaf_key);
		for (size_t i = 0; i < nk; i++)
			m->pair_sw[k++] = key[i].sw;
		m->first[c + 1] = (uint32_t)k;
	}
	m->npairs = k;
	free(at);
	free(sw_of);
	free(seen);
	free(key);
	return rc;
}

/* The rank-t switch with the smallest GUID not yet taken that climbs one
 * rank per hop from cluster c's leaves, or ROUTE_NONE. */
static uint32_t climb(struct namer *m, uint32_t c, uint32_t t, uint32_t mark)
{
	const struct route_tab *rt = m->rt;
	uint32_t head = 0, tail = 0, best = ROUTE_NONE;
	for (uint32_t i = m->first[c]; i < m->first[c + 1]; i++) {
		uint32_t sw = m->pair_sw[i];
		if (m->rank[sw] == 0 && m->stamp[sw] != mark) {
			m->stamp[sw] = mark;
			m->queue[tail++] = sw;
		}
	}
	while (head < tail) {
		uint32_t sw = m->queue[head++];
		if (m->rank[sw] == t) {
			if (!m->taken[sw] && (best == ROUTE_NONE || sw_guid(rt, sw) < sw_guid(rt, best)))
				best = sw;
			continue;
		}
		uint32_t np = rt->snap->nodes[rt->sw_node[sw]].nports;
		for (uint32_t p = 1; p <= np; p++) {
			uint32_t u = rt->pt[rt->pt_off[sw] + p];
			if (u < rt->nsw && m->rank[u] == m->rank[sw] + 1 && m->stamp[u] != mark) {
				m->stamp[u] = mark;
				m->queue[tail++] = u;
			}
		}
	}
	return best;
}

static uint32_t turn_rank(const struct hier_cluster *cl)
{
	return cl->dist == HIER_INF || cl->dist == 0 ? HIER_NONE : (uint32_t)(cl->dist - 1) / 2;
}

static int cmp_order(const void *pa, const void *pb)
{
	const uint64_t *x = pa, *y = pb;   /* {t, smallest leaf GUID, level << 32 | cluster} */
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* Each cluster takes its switch, in the order hier.h gives. */
static int choose_names(struct namer *m)
{
	struct hier *h = m->h;
	uint32_t n = h->nclusters;
	uint64_t (*ord)[3] = malloc(((size_t)n + 1) * sizeof(*ord));
	uint32_t *t = malloc(((size_t)n + 1) * sizeof(*t));
	if (!ord || !t) {
		free(ord);
		free(t);
		return AN_E_NOMEM;
	}
	for (uint32_t c = 0; c < n; c++)
		t[c] = turn_rank(&h->clusters[c]);
	/* a parent turns above its children (two leaves cabled to each other
	 * have no switch above them): children come first in clusters[] */
	for (uint32_t c = 0; c < n; c++) {
		uint32_t p = h->clusters[c].parent;
		if (p != HIER_NONE && t[c] != HIER_NONE && t[p] != HIER_NONE && t[p] <= t[c])
			t[p] = t[c] + 1;
	}
	for (uint32_t c = 0; c < n; c++) {
		const struct hier_cluster *cl = &h->clusters[c];
		int has = m->first[c] < m->first[c + 1];
		ord[c][0] = t[c];
		ord[c][1] = has ? sw_guid(m->rt, m->pair_sw[m->first[c]]) : cl->key;
		ord[c][2] = (uint64_t)cl->level << 32 | c;
	}
	qsort(ord, n, sizeof(*ord), cmp_order);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = (uint32_t)ord[i][2], tc = (uint32_t)ord[i][0];
		uint32_t sw = tc == HIER_NONE ? ROUTE_NONE : climb(m, c, tc, i + 1);
		if (sw != ROUTE_NONE) {
			m->taken[sw] = 1;
			memcpy(h->names[c], h->swnames[sw], HIER_NAME_LEN);
		} else {
			snprintf(h->names[c], HIER_NAME_LEN, "cl_%016" PRIx64 "_%u", ord[i][1],
				 tc == HIER_NONE ? h->clusters[c].level : tc);
		}
	}
	free(ord);
	free(t);
	return AN_OK;
}

/* Switch and cluster names; the clusters must be final (finish()). */
static int name_all(const struct route_tab *rt, struct hier *h)
{
	struct namer m = { .rt = rt, .h = h };
	int rc = switch_names(rt, h);
	if (rc)
		return rc;
	size_t ns = (size_t)rt->nsw + 1;
	h->names = calloc((size_t)h->nclusters + 1, sizeof(*h->names));
	m.rank = malloc(ns * sizeof(*m.rank));
	m.queue = malloc(ns * sizeof(*m.queue));
	m.stamp = calloc(ns, sizeof(*m.stamp));
	m.taken = calloc(ns, 1);
	rc = AN_E_NOMEM;
	if (h->names && m.rank && m.queue && m.stamp && m.taken) {
		switch_ranks(rt, m.rank, m.queue);
		rc = leaf_pairs(&m);
		if (!rc)
			rc = choose_names(&m);
	}
	/* a name still shared (two fallbacks alike) becomes the unique ID */
	const char **ord = rc ? NULL : malloc(((size_t)h->nclusters + 1) * sizeof(*ord));
	if (!rc && !ord)
		rc = AN_E_NOMEM;
	for (uint32_t c = 0; ord && c < h->nclusters; c++)
		ord[c] = h->names[c];
	if (ord)
		qsort(ord, h->nclusters, sizeof(*ord), cmp_name_ptr);
	for (uint32_t i = 1; ord && i < h->nclusters; i++)
		if (!strcmp(ord[i], ord[i - 1])) {
			uint32_t c = (uint32_t)((const char(*)[HIER_NAME_LEN])ord[i] - h->names);
			snprintf(h->names[c], HIER_NAME_LEN, "cl_%016" PRIx64, h->clusters[c].id);
		}
	free(ord);
	free(m.rank);
	free(m.queue);
	free(m.stamp);
	free(m.taken);
	free(m.first);
	free(m.pair_sw);
	return rc;
}

/* Four independent lanes: a single multiply chain waits on each product,
 * and at k=56 this runs over 69 million entries. Any function of the row
 * gives the same classes (equal rows hash alike, and classes are decided
 * by comparing rows within a run of equal hashes), so the tree does not
 * depend on which. */
static uint64_t row_hash(const uint16_t *r, uint32_t n)
{
	uint64_t x[4] = { 0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull };
	uint32_t i = 0;
	for (; i + 4 <= n; i += 4)
		for (int k = 0; k < 4; k++)
			x[k] = (x[k] ^ r[i + k]) * 0x100000001B3ull;
	for (; i < n; i++)
		x[0] = (x[0] ^ r[i]) * 0x100000001B3ull;
	return x[0] ^ (x[1] * 0x9E3779B97F4A7C15ull) ^ (x[2] >> 17 | x[2] << 47) ^ (x[3] * 0xC2B2AE3D27D4EB4Full);
}

/* The clusters are a function of the hop table alone, so a generation
 * whose hop counts fabric.c proved equal copies them; only the names climb
 * the links, which may have changed (a cable down: the smallest GUID a
 * cluster's leaves reach one rank up can be another switch). */
int hier_rename(const struct hier *old, const struct route_tab *rt, struct hier **out)
{
	if (old->nhosts != rt->nhosts)
		return AN_E_INVAL;
	struct hier *h = calloc(1, sizeof(*h));
	if (!h)
		return AN_E_NOMEM;
	atomic_init(&h->refs, 1);
	h->nhosts = old->nhosts;
	h->depth = old->depth;
	h->nclusters = old->nclusters;
	h->nroots = old->nroots;
	h->nclasses = old->nclasses;
	h->nrestarts = old->nrestarts;
	size_t nc = (size_t)old->nclusters * sizeof(*h->clusters), nh = (size_t)old->nhosts * sizeof(*h->host_parent),
	       na = (size_t)old->nhosts * old->depth * sizeof(*h->anc);
	h->clusters = malloc(nc + 1);
	h->host_parent = malloc(nh + 1);
	h->anc = malloc(na + 1);
	int rc = AN_E_NOMEM;
	if (h->clusters && h->host_parent && h->anc) {
		memcpy(h->clusters, old->clusters, nc);
		memcpy(h->host_parent, old->host_parent, nh);
		memcpy(h->anc, old->anc, na);
		rc = name_all(rt, h);
	}
	if (rc) {
		hier_free(h);
		return rc;
	}
	*out = h;
	return AN_OK;
}

/* Row k of the hop table: from every leaf to the hosts on leaf k of hc,
 * the leaves' distances to it (a column of hc's table, one cache line per
 * leaf), plus one. */
static void row_by_distance(const struct hb *b, const struct hopdist *hd, const uint32_t *leaf_sw, uint32_t k)
{
	uint16_t *row = b->H + (size_t)k * b->nleaf;
	const uint8_t *apart = hd->ocol ? hd->ocol[k] : NULL; /* the column kept apart (hopdist_relink) */
	for (uint32_t j = 0; j < b->nleaf; j++) {
		uint8_t d = apart ? apart[leaf_sw[j]] : hd->d[(uint64_t)leaf_sw[j] * hd->nleaf + k];
		row[j] = d == HOPDIST_INF ? ROUTE_HOPS_INF : (uint16_t)(d + 1);
	}
}

/* Host y's leaf in hc when hc covers the LID its default port answers to
 * (one whose LMC range another port's base LID falls in is walked, as
 * its route to that LID leads elsewhere), else ROUTE_NONE. */
static uint32_t host_leaf(const struct hb *b, const struct hopcover *hc, uint32_t y)
{
	const struct route_tab *rt = b->rt;
	uint32_t lid = rt->eps[b->dep[y]].lid;
	if (!lid || lid > rt->max_lid || rt->lid_ep[lid] != b->dep[y])
		return ROUTE_NONE;
	return hopcover_leaf(hc, lid);
}

/* Walks (route_switch_hops) the rows of the hosts by[0..n) into b->H from
 * row r0 on, a bounded number at a time: with few hosts covered, a second
 * table as large as b->H would double the build's peak. */
#define HOP_WALK_CHUNK 4096u
static int rows_walked(struct hb *b, const uint32_t *by, uint32_t n, uint32_t r0)
{
	uint32_t cap = n < HOP_WALK_CHUNK ? n : HOP_WALK_CHUNK;
	uint16_t *w = malloc(((size_t)cap * b->nleaf + 1) * sizeof(*w));
	uint32_t *walk = malloc(((size_t)cap + 1) * sizeof(*walk));
	int rc = w && walk ? AN_OK : AN_E_NOMEM;
	for (uint32_t i0 = 0; !rc && i0 < n; i0 += cap) {
		uint32_t m = n - i0 < cap ? n - i0 : cap;
		for (uint32_t i = 0; i < m; i++)
			walk[i] = b->dep[by[i0 + i]];
		rc = route_switch_hops(b->rt, b->leaves, b->nleaf, walk, m, w);
		for (uint32_t i = 0; !rc && i < m; i++) {
			b->hrow[by[i0 + i]] = r0 + i0 + i;
			memcpy(b->H + (size_t)(r0 + i0 + i) * b->nleaf, w + (size_t)i * b->nleaf,
			       (size_t)b->nleaf * sizeof(*w));
		}
	}
	free(w);
	free(walk);
	return rc;
}

static int alloc_rows(struct hb *b, uint32_t nrows)
{
	size_t cells = (size_t)nrows * b->nleaf;
	if ((b->nleaf && cells / b->nleaf != nrows) || cells > (SIZE_MAX - 1) / sizeof(*b->H))
		return AN_E_NOMEM;
	size_t bytes = (cells + 1) * sizeof(*b->H);
	b->H = util_alloc_huge(bytes, bytes);
	b->nrows = nrows;
	return b->H ? AN_OK : AN_E_NOMEM;
}

/* The hop table b->H and each host's row of it: one row per leaf of hc,
 * by distance, shared by the hosts hc covers on that leaf (their rows are
 * equal, a function of the leaf's distances alone), and one walked row
 * per other host. At k=56 that is 5 MB where a row per host took 138 MB,
 * written and hashed. Without a complete cover every row is walked. */
static int hop_table(struct hb *b, const struct hopcover *hc)
{
	const struct route_tab *rt = b->rt;
	int rc;
	if (!hopcover_complete(hc) || !hc->covered || hc->hd->pt != rt->pt || hc->hd->nsw != rt->nsw) {
		rc = alloc_rows(b, b->nh);
		for (uint32_t y = 0; !rc && y < b->nh; y++)
			b->hrow[y] = y;
		return rc ? rc : route_switch_hops(rt, b->leaves, b->nleaf, b->dep, b->nh, b->H);
	}
	const struct hopdist *hd = hc->hd;
	uint32_t *leaf_sw = malloc(((size_t)b->nleaf + 1) * sizeof(*leaf_sw));
	uint32_t *walk = malloc(((size_t)b->nh + 1) * sizeof(*walk)), nwalk = 0;
	rc = AN_E_NOMEM;
	if (!leaf_sw || !walk)
		goto out;
	for (uint32_t j = 0; j < b->nleaf; j++)
		leaf_sw[j] = rt->sw_of_node[b->leaves[j]];
	for (uint32_t y = 0; y < b->nh; y++) {
		uint32_t k = host_leaf(b, hc, y);
		if (k == ROUTE_NONE)
			walk[nwalk++] = y;
		else
			b->hrow[y] = k;
	}
	rc = alloc_rows(b, hd->nleaf + nwalk);
	if (rc)
		goto out;
#pragma omp parallel for schedule(static)
	for (uint32_t k = 0; k < hd->nleaf; k++)
		row_by_distance(b, hd, leaf_sw, k);
	rc = nwalk ? rows_walked(b, walk, nwalk, hd->nleaf) : AN_OK;
out:
	free(leaf_sw);
	free(walk);
	return rc;
}

/* Each host's row hash, from one hash per row. */
static int row_hashes(struct hb *b)
{
	uint64_t *rh = malloc(((size_t)b->nrows + 1) * sizeof(*rh));
	if (!rh)
		return AN_E_NOMEM;
#pragma omp parallel for schedule(static)
	for (uint32_t r = 0; r < b->nrows; r++)
		rh[r] = row_hash(b->H + (size_t)r * b->nleaf, b->nleaf);
	for (uint32_t x = 0; x < b->nh; x++)
		b->rowhash[x] = rh[b->hrow[x]];
	free(rh);
	return AN_OK;
}

int hier_build(const struct route_tab *rt, struct hier **out)
{
	return hier_build_cover(rt, NULL, out);
}

int hier_build_cover(const struct route_tab *rt, const struct hopcover *hc, struct hier **out)
{
	struct hb b;
	memset(&b, 0, sizeof(b));
	b.rt = rt;
	b.nh = rt->nhosts;
	struct hier *h = calloc(1, sizeof(*h));
	if (h)
		atomic_init(&h->refs, 1);
	uint32_t *leaf_of_node = NULL;
	int rc = AN_E_NOMEM;
	size_t nh1 = (size_t)b.nh + 1;
	if (!h)
		return AN_E_NOMEM;
	h->nhosts = b.nh;
	b.dep = malloc(nh1 * sizeof(*b.dep));
	b.hkey = malloc(nh1 * sizeof(*b.hkey));
	b.aidx = malloc(nh1 * sizeof(*b.aidx));
	b.rowhash = malloc(nh1 * sizeof(*b.rowhash));
	b.hrow = malloc(nh1 * sizeof(*b.hrow));
	b.single = calloc(nh1, 1);
	b.cls_host = malloc(nh1 * sizeof(*b.cls_host));
	b.host_cls = malloc(nh1 * sizeof(*b.host_cls));
	b.host_parent = malloc(nh1 * sizeof(*b.host_parent));
	b.leaves = malloc(nh1 * sizeof(*b.leaves));
	leaf_of_node = malloc(((size_t)rt->snap->nnodes + 1) * sizeof(*leaf_of_node));
	if (!b.dep || !b.hkey || !b.aidx || !b.rowhash || !b.hrow || !b.single || !b.cls_host || !b.host_cls ||
	    !b.host_parent || !b.leaves || !leaf_of_node)
		goto out;
	for (uint32_t i = 0; i < rt->snap->nnodes; i++)
		leaf_of_node[i] = HIER_NONE;
	for (uint32_t x = 0; x < b.nh; x++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, x)];
		b.dep[x] = route_host_ep(rt, x);
		b.hkey[x] = e->guid;
		b.aidx[x] = HIER_NONE;
		if (e->up == AN_OK && e->leaf != ROUTE_NONE) {
			if (leaf_of_node[e->leaf] == HIER_NONE) {
				leaf_of_node[e->leaf] = b.nleaf;
				b.leaves[b.nleaf++] = e->leaf;
			}
			b.aidx[x] = leaf_of_node[e->leaf];
		}
	}
	free(leaf_of_node);
	leaf_of_node = NULL;

	/* every leaf is at least one class: refuse before the big allocation */
	if (b.nleaf > HIER_MAX_CLASSES) {
		rc = AN_E_RANGE;
		goto out;
	}
	rc = hop_table(&b, hc);
	if (!rc)
		rc = row_hashes(&b);
	if (rc)
		goto out;

	for (;;) {
		rc = make_classes(&b);
		if (rc)
			goto out;
		rc = cluster_rounds(&b);
		if (rc < 0)
			goto out;
		if (rc == 0)
			break;
		h->nrestarts++;
	}
	h->nclasses = b.C;
	rc = finish(&b, h);
	if (!rc)
		rc = name_all(rt, h);
out:
	free(leaf_of_node);
	free(b.dep);
	free(b.hkey);
	free(b.aidx);
	free(b.rowhash);
	free(b.hrow);
	free(b.single);
	free(b.cls_first);
	free(b.cls_host);
	free(b.host_cls);
	free(b.host_parent);
	free(b.leaves);
	free(b.H);
	free(b.D);
	free(b.sd);
	free(b.cl);
	if (rc) {
		hier_free(h);
		return rc;
	}
	*out = h;
	return AN_OK;
}
