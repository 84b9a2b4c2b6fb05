/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * share.c - path matrix, link loads and ingress sharing for one job.
 * Definitions are in share.h. Routes to one destination from all source
 * leaves form an in-tree over switches; each column of the matrix keeps
 * that tree, so a switch is walked once per destination however many
 * leaves route through it.
 */
#include "share.h"

#include <stdlib.h>
#include <string.h>
#include "util.h"

#define TN_PENDING 1   /* on the chain being walked; ROUTE_* codes are <= 0 */
/* Destinations handled together, in LID order: every source leaf's LFT
 * entries for them share one or two cache lines, read once per block
 * instead of once per route (the first step of a route is the one that is
 * never shared with other sources, so it dominates the misses). */
#define COL_BLOCK 64

struct tn {
	uint32_t node;   /* switch node index */
	uint32_t next;   /* next tree node towards the destination, or ROUTE_NONE */
	uint32_t len;    /* switches from here to the end of the walk */
	uint8_t port;    /* out port (LFT entry) */
	int8_t status;   /* outcome of the walk from here */
	uint8_t seen;    /* already counted as an ingress link of this column */
};

struct share_col {
	struct tn *tn;
	uint32_t ntn;
	size_t cap;
};

struct ingress {
	uint32_t slot;   /* port slot of the link's leaving side */
	uint32_t j;
};

void share_free(struct share *sh)
{
	if (!sh)
		return;
	if (sh->cols)
		for (uint32_t j = 0; j < sh->n; j++)
			free(sh->cols[j].tn);
	free(sh->cols);
	free(sh->links);
	free(sh->sharing);
	free(sh->groups);
	free(sh->members);
	free(sh->grp_of);
	free(sh->start);
	free(sh->status);
	free(sh->loopback);
	free(sh);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_ingress(const void *a, const void *b)
{
	const struct ingress *x = a, *y = b;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

/* Adds the walk from switch x (switch index) to the column's tree and
 * returns its first tree node, or ROUTE_NONE on ENOMEM. first is x's LFT
 * entry for dlid, read beforehand (see COL_BLOCK). */
static uint32_t walk_tree(const struct route_tab *rt, struct share_col *c, uint32_t *stamp,
			  uint32_t *tidx, uint32_t *stack, uint32_t cur, uint32_t x, uint8_t first,
			  uint16_t dlid, uint32_t dst)
{
	uint32_t top = 0, rnext = ROUTE_NONE, rlen = 0;
	int st;
	for (;;) {
		if (stamp[x] == cur) {
			uint32_t t = tidx[x];
			if (c->tn[t].status == TN_PENDING) {
				st = AN_E_LOOP;
			} else {
				st = c->tn[t].status;
				rnext = t;
				rlen = c->tn[t].len;
			}
			break;
		}
		if (util_grow((void **)&c->tn, &c->cap, (size_t)c->ntn + 1, sizeof(*c->tn)))
			return ROUTE_NONE;
		uint32_t t = c->ntn++;
		struct tn *n = &c->tn[t];
		uint32_t next = 0;
		n->port = top ? route_lft(rt, x, dlid) : first;
		int r = route_step_port(rt, x, n->port, dst, &next);
		n->node = rt->sw_node[x];
		n->next = ROUTE_NONE;
		n->len = 0;
		n->status = TN_PENDING;
		n->seen = 0;
		stamp[x] = cur;
		tidx[x] = t;
		stack[top++] = t;
		if (r == ROUTE_STEP_NEXT) {
			x = next;
			continue;
		}
		st = r == ROUTE_STEP_DONE ? AN_OK : r;
		break;
	}
	if (!top)
		return rnext;
	while (top) {
		uint32_t t = stack[--top];
		c->tn[t].next = rnext;
		c->tn[t].len = ++rlen;
		c->tn[t].status = (int8_t)st;
		rnext = t;
	}
	return rnext;
}

/* Read-only inputs of the per-destination work. */
struct ctx {
	const struct route_tab *rt;
	const uint32_t *eps;
	struct share *sh;
	const uint32_t *grp_sw;   /* [G] leaf switch index, ROUTE_NONE for a leafless host */
	const uint32_t *grp_n;    /* [G] hosts in the group */
	const uint32_t *grp_rep;  /* [G] first position in the group */
	uint8_t *selfok;          /* [n] written once per destination, by its thread */
	uint32_t G;
	int keep;
};

/* One thread's workspace and partial results. */
struct tws {
	uint32_t *stamp, *tidx, *stack;  /* [nsw] walk memo, see walk_tree() */
	uint32_t *tload;                 /* [nports] link loads */
	uint64_t *tok;                   /* [G] successful routes per source group */
	uint32_t *lstart;                /* [G] column scratch without SHARE_KEEP_PATHS */
	int8_t *lstat;
	uint8_t *fp;                     /* [G][COL_BLOCK] first-hop LFT entries */
	struct share_col scratch;
	struct ingress *ting;
	size_t nting, capting;
	uint64_t pairs_ok, pairs_failed;
	uint32_t max_hops;
};

static void tws_free(struct tws *w)
{
	free(w->stamp);
	free(w->tidx);
	free(w->stack);
	free(w->tload);
	free(w->tok);
	free(w->lstart);
	free(w->lstat);
	free(w->fp);
	free(w->scratch.tn);
	free(w->ting);
}

static int tws_init(struct tws *w, const struct route_tab *rt, uint32_t G, int keep)
{
	memset(w, 0, sizeof(*w));
	size_t nsw = (size_t)rt->nsw + 1;
	w->stamp = calloc(nsw, sizeof(*w->stamp));
	w->tidx = malloc(nsw * sizeof(*w->tidx));
	w->stack = malloc(nsw * sizeof(*w->stack));
	w->tload = calloc((size_t)rt->snap->nports + 1, sizeof(*w->tload));
	w->tok = calloc((size_t)G + 1, sizeof(*w->tok));
	w->fp = malloc(((size_t)G + 1) * COL_BLOCK);
	if (!keep) {
		w->lstart = malloc(((size_t)G + 1) * sizeof(*w->lstart));
		w->lstat = malloc((size_t)G + 1);
	}
	return w->stamp && w->tidx && w->stack && w->tload && w->tok && w->fp &&
	       (keep || (w->lstart && w->lstat)) ? 0 : -1;
}

/* Routes from every source group to destination position j (slot k of its
 * block), then their loads and ingress links. -1 on ENOMEM. */
static int do_column(const struct ctx *c, struct tws *w, uint32_t j, size_t k)
{
	const struct route_tab *rt = c->rt;
	const struct snap *s = rt->snap;
	struct share *sh = c->sh;
	const uint32_t G = c->G;
	struct share_col *col = c->keep ? &sh->cols[j] : &w->scratch;
	uint32_t *cs = c->keep ? sh->start + (size_t)j * G : w->lstart;
	int8_t *cst = c->keep ? sh->status + (size_t)j * G : w->lstat;
	uint32_t dst = c->eps[j], gj = sh->grp_of[j];
	uint16_t dlid = rt->eps[dst].lid;
	col->ntn = 0;
	for (uint32_t g = 0; g < G; g++) {
		cs[g] = ROUTE_NONE;
		if (c->grp_sw[g] == ROUTE_NONE) {
			cst[g] = (int8_t)route_walk(rt, c->eps[c->grp_rep[g]], dlid, NULL, 0, NULL);
		} else if (!dlid) {
			cst[g] = AN_E_NOLID;
		} else {
			/* stamps: one per destination, so a thread never clears them */
			uint32_t t = walk_tree(rt, col, w->stamp, w->tidx, w->stack, j + 1, c->grp_sw[g],
					       w->fp[(size_t)g * COL_BLOCK + k], dlid, dst);
			if (t == ROUTE_NONE)
				return -1;
			cs[g] = t;
			cst[g] = col->tn[t].status;
		}
	}
	c->selfok[j] = cst[gj] == AN_OK;
	int jleaf = c->grp_sw[gj] != ROUTE_NONE;
	for (uint32_t g = 0; g < G; g++) {
		uint32_t mult = c->grp_n[g] - (g == gj);   /* a host is no pair with itself */
		if (cst[g] != AN_OK) {
			w->pairs_failed += mult;
			continue;
		}
		w->tok[g]++;
		w->pairs_ok += mult;
		if (cs[g] == ROUTE_NONE)
			continue;
		if (col->tn[cs[g]].len > w->max_hops)
			w->max_hops = col->tn[cs[g]].len;
		if (mult)
			for (uint32_t t = cs[g]; t != ROUTE_NONE; t = col->tn[t].next)
				w->tload[s->nodes[col->tn[t].node].port0 + col->tn[t].port] += mult;
		if (!jleaf || g == gj || c->grp_sw[g] == ROUTE_NONE || col->tn[cs[g]].len < 2)
			continue;
		/* the last switch-to-switch link: leaving the second-to-last switch */
		uint32_t t = cs[g];
		while (col->tn[t].len > 2)
			t = col->tn[t].next;
		if (col->tn[t].seen)
			continue;
		col->tn[t].seen = 1;
		if (util_grow((void **)&w->ting, &w->capting, w->nting + 1, sizeof(*w->ting)))
			return -1;
		w->ting[w->nting++] = (struct ingress){ s->nodes[col->tn[t].node].port0 + col->tn[t].port, j };
	}
	return 0;
}

/* share_build()'s temporaries, freed together. */
struct sbuild {
	const struct route_tab *rt;
	const uint32_t *eps;
	size_t n;
	struct share *sh;
	uint32_t *grp_sw, *grp_n, *grp_rep;  /* [G], see struct ctx */
	uint8_t *selfok;                     /* [n] */
	uint32_t *load;                      /* [nports] */
	uint64_t *okcnt;                     /* [G] */
	struct ingress *ing;                 /* every thread's ingress links */
	size_t ning;
};

static void sbuild_free(struct sbuild *b)
{
	free(b->grp_sw);
	free(b->grp_n);
	free(b->grp_rep);
	free(b->selfok);
	free(b->load);
	free(b->okcnt);
	free(b->ing);
}

/* Source groups: one per leaf switch, one per host without a leaf, in
 * (leaf, position) order. AN_E_INVAL for a bad or repeated end port. */
static int make_groups(struct sbuild *b)
{
	const struct route_tab *rt = b->rt;
	size_t n = b->n;
	struct share *sh = b->sh;
	uint64_t *key = malloc((n + 1) * sizeof(*key));
	uint32_t *chk = malloc((n + 1) * sizeof(*chk));
	int rc = AN_E_NOMEM;
	if (!key || !chk)
		goto out;
	/* key = leaf node << 32 | position, or all ones in the high half. */
	for (size_t i = 0; i < n; i++) {
		rc = AN_E_INVAL;
		if (b->eps[i] >= rt->neps)
			goto out;
		const struct route_ep *e = &rt->eps[b->eps[i]];
		uint64_t hi = e->up == AN_OK && e->leaf != ROUTE_NONE ? e->leaf : UINT32_MAX;
		key[i] = hi << 32 | i;
		chk[i] = b->eps[i];
	}
	qsort(chk, n, sizeof(*chk), cmp_u32);
	for (size_t i = 1; i < n; i++)
		if (chk[i] == chk[i - 1]) {
			rc = AN_E_INVAL;
			goto out;
		}
	qsort(key, n, sizeof(*key), cmp_u64);
	rc = AN_E_NOMEM;
	sh->grp_of = malloc((n + 1) * sizeof(*sh->grp_of));
	b->grp_sw = malloc((n + 1) * sizeof(*b->grp_sw));
	b->grp_n = malloc((n + 1) * sizeof(*b->grp_n));
	b->grp_rep = malloc((n + 1) * sizeof(*b->grp_rep));
	b->selfok = calloc(n + 1, 1);
	if (!sh->grp_of || !b->grp_sw || !b->grp_n || !b->grp_rep || !b->selfok)
		goto out;
	uint32_t G = 0, inleaf = 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t leaf = (uint32_t)(key[k] >> 32), i = (uint32_t)key[k];
		if (!k || leaf == UINT32_MAX || leaf != (uint32_t)(key[k - 1] >> 32)) {
			b->grp_sw[G] = leaf == UINT32_MAX ? ROUTE_NONE : rt->sw_of_node[leaf];
			b->grp_n[G] = 0;
			b->grp_rep[G] = i;
			sh->nleaves += leaf != UINT32_MAX;
			G++;
		}
		b->grp_n[G - 1]++;
		inleaf += leaf != UINT32_MAX;
		sh->grp_of[i] = G - 1;
	}
	sh->G = G;
	sh->avg_hosts_per_leaf = sh->nleaves ? (double)inleaf / sh->nleaves : 0.0;
	rc = AN_OK;
out:
	free(key);
	free(chk);
	return rc;
}

/* Every destination column, in LID order over OpenMP threads: link loads,
 * successful routes per source group, ingress links, and the kept paths. */
static int walk_columns(struct sbuild *b, int keep)
{
	const struct route_tab *rt = b->rt;
	const struct snap *s = rt->snap;
	struct share *sh = b->sh;
	size_t n = b->n;
	uint32_t G = sh->G;
	b->load = calloc((size_t)s->nports + 1, sizeof(*b->load));
	b->okcnt = calloc((size_t)G + 1, sizeof(*b->okcnt));
	uint64_t *ord = malloc((n + 1) * sizeof(*ord));   /* lid << 32 | position: columns in LID order */
	if (!b->load || !b->okcnt || !ord) {
		free(ord);
		return AN_E_NOMEM;
	}
	for (size_t j = 0; j < n; j++)
		ord[j] = (uint64_t)rt->eps[b->eps[j]].lid << 32 | j;
	qsort(ord, n, sizeof(*ord), cmp_u64);
	const size_t nblocks = (n + COL_BLOCK - 1) / COL_BLOCK;
	int failed = 0;
	uint64_t pairs_ok = 0, pairs_failed = 0;
	uint32_t max_hops = 0;
	const struct ctx cx = { rt, b->eps, sh, b->grp_sw, b->grp_n, b->grp_rep, b->selfok, G, keep };
#pragma omp parallel reduction(+ : pairs_ok, pairs_failed) reduction(max : max_hops)
	{
		struct tws w;
		int ok = tws_init(&w, rt, G, keep) == 0;
#pragma omp for schedule(dynamic, 1)
		for (size_t blk = 0; blk < nblocks; blk++) {
			size_t b0 = blk * COL_BLOCK, cnt = n - b0 < COL_BLOCK ? n - b0 : COL_BLOCK;
			for (uint32_t g = 0; ok && g < G; g++)
				if (b->grp_sw[g] != ROUTE_NONE)
					for (size_t k = 0; k < cnt; k++)
						w.fp[(size_t)g * COL_BLOCK + k] =
							route_lft(rt, b->grp_sw[g], rt->eps[b->eps[(uint32_t)ord[b0 + k]]].lid);
			for (size_t k = 0; ok && k < cnt; k++)
				ok = do_column(&cx, &w, (uint32_t)ord[b0 + k], k) == 0;
		}
#pragma omp critical
		{
			if (!ok) {
				failed = 1;
			} else {
				for (uint32_t i = 0; i < s->nports; i++)
					b->load[i] += w.tload[i];
				for (uint32_t g = 0; g < G; g++)
					b->okcnt[g] += w.tok[g];
				if (w.nting) {
					void *p = realloc(b->ing, (b->ning + w.nting) * sizeof(*b->ing));
					if (!p) {
						failed = 1;
					} else {
						b->ing = p;
						memcpy(b->ing + b->ning, w.ting, w.nting * sizeof(*b->ing));
						b->ning += w.nting;
					}
				}
			}
		}
		pairs_ok += w.pairs_ok;
		pairs_failed += w.pairs_failed;
		if (w.max_hops > max_hops)
			max_hops = w.max_hops;
		tws_free(&w);
	}
	free(ord);
	if (failed)
		return AN_E_NOMEM;
	sh->npairs_ok = pairs_ok;
	sh->npairs_failed = pairs_failed;
	sh->max_hops = max_hops;
	return AN_OK;
}

/* The nonzero link loads, each source's own cable included. */
static int collect_loads(struct sbuild *b)
{
	const struct route_tab *rt = b->rt;
	const struct snap *s = rt->snap;
	struct share *sh = b->sh;
	/* Each source's own cable carries its successful routes, minus the
	 * one to itself, which is not a pair. */
	for (size_t i = 0; i < b->n; i++) {
		const struct route_ep *e = &rt->eps[b->eps[i]];
		if (s->nodes[e->node].type == SNAP_NODE_SWITCH || e->up != AN_OK)
			continue;
		uint64_t c = b->okcnt[sh->grp_of[i]] - b->selfok[i];
		b->load[s->nodes[e->node].port0 + e->port] += (uint32_t)c;
	}
	for (uint32_t i = 0; i < s->nports; i++)
		sh->nlinks += b->load[i] != 0;
	sh->links = malloc(((size_t)sh->nlinks + 1) * sizeof(*sh->links));
	if (!sh->links)
		return AN_E_NOMEM;
	for (uint32_t x = 0, k = 0; x < s->nnodes; x++)
		for (unsigned p = 0; p <= s->nodes[x].nports; p++) {
			uint32_t c = b->load[s->nodes[x].port0 + p];
			if (c)
				sh->links[k++] = (struct share_link){ x, c, (uint8_t)p };
		}
	return AN_OK;
}

/* Sharing: runs of one ingress link with two or more hosts. */
static int collect_sharing(struct sbuild *b)
{
	const struct snap *s = b->rt->snap;
	struct share *sh = b->sh;
	size_t ning = b->ning;
	struct ingress *ing = b->ing;
	if (ning)
		qsort(ing, ning, sizeof(*ing), cmp_ingress);
	sh->groups = malloc((ning + 1) * sizeof(*sh->groups));
	sh->members = malloc((ning + 1) * sizeof(*sh->members));
	sh->sharing = malloc((b->n + 1) * sizeof(*sh->sharing));
	uint8_t *mark = calloc(b->n + 1, 1);
	if (!sh->groups || !sh->members || !sh->sharing || !mark) {
		free(mark);
		return AN_E_NOMEM;
	}
	uint32_t nm = 0;
	for (size_t a = 0; a < ning;) {
		size_t e = a;
		while (e < ning && ing[e].slot == ing[a].slot)
			e++;
		if (e - a >= 2) {
			uint32_t node = snap_node_of_slot(s, ing[a].slot);
			sh->groups[sh->ngroups++] = (struct share_group){
				node, (uint8_t)(ing[a].slot - s->nodes[node].port0), nm, (uint32_t)(e - a) };
			for (size_t k = a; k < e; k++) {
				sh->members[nm++] = ing[k].j;
				mark[ing[k].j] = 1;
			}
		}
		a = e;
	}
	for (size_t i = 0; i < b->n; i++)
		if (mark[i])
			sh->sharing[sh->nsharing++] = (uint32_t)i;
	free(mark);
	return AN_OK;
}

int share_build(const struct route_tab *rt, const uint32_t *eps, size_t n, unsigned flags,
		struct share **out)
{
	if (n > rt->neps)
		return AN_E_INVAL;
	struct sbuild b = { .rt = rt, .eps = eps, .n = n };
	b.sh = calloc(1, sizeof(*b.sh));
	if (!b.sh)
		return AN_E_NOMEM;
	b.sh->n = (uint32_t)n;
	const int keep = (flags & SHARE_KEEP_PATHS) != 0;
	int rc = make_groups(&b);
	if (!rc && keep) {
		struct share *sh = b.sh;
		if ((uint64_t)n * sh->G > SHARE_MAX_PATH_CELLS) {
			rc = AN_E_RANGE;
		} else {
			sh->start = malloc(((size_t)n * sh->G + 1) * sizeof(*sh->start));
			sh->status = malloc((size_t)n * sh->G + 1);
			sh->cols = calloc(n + 1, sizeof(*sh->cols));
			sh->loopback = malloc(n + 1);
			if (!sh->start || !sh->status || !sh->cols || !sh->loopback)
				rc = AN_E_NOMEM;
			for (size_t i = 0; !rc && i < n; i++)
				sh->loopback[i] = rt->snap->nodes[rt->eps[eps[i]].node].type != SNAP_NODE_SWITCH;
		}
	}
	if (!rc)
		rc = walk_columns(&b, keep);
	if (!rc)
		rc = collect_loads(&b);
	if (!rc)
		rc = collect_sharing(&b);
	sbuild_free(&b);
	if (rc) {
		share_free(b.sh);
		return rc;
	}
	*out = b.sh;
	return AN_OK;
}

int share_path(const struct share *sh, size_t i, size_t j, uint32_t *sw, size_t cap, size_t *nsw)
{
	*nsw = 0;
	if (!sh->cols || i >= sh->n || j >= sh->n)
		return AN_E_INVAL;
	size_t cell = j * sh->G + sh->grp_of[i];
	/* A CA port to itself crosses nothing (route.h); its group's route
	 * would be the leaf's, and a switch's port 0 keeps its own walk. */
	if (i == j && sh->loopback[i])
		return AN_OK;
	int st = sh->status[cell];
	if (st == AN_E_LOOP)
		return st;
	const struct share_col *c = &sh->cols[j];
	size_t k = 0;
	for (uint32_t t = sh->start[cell]; t != ROUTE_NONE; t = c->tn[t].next, k++)
		if (k < cap)
			sw[k] = c->tn[t].node;
	*nsw = k;
	return st;
}
