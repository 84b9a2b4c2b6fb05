/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nativecoll_reduce.c - the MPIs' own Reduce and Allreduce as programs
 * (nativecoll.h): Open MPI's segmented tree reduces and the Allreduces of
 * both selectors, a family of their own because they combine data on the
 * way and call the selected Reduce and Bcast again. Every algorithm
 * follows its SMPI source rank by rank, as nativecoll.c says.
 */
#include "nativecoll_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- Reduce (Open MPI's generic segmented tree reduce) ------------------------------ */

struct tree {
	uint32_t prev;        /* NC_NONE at the root */
	uint32_t n, next[32];
};

static uint64_t ipow(uint64_t f, uint32_t e)
{
	uint64_t p = 1;
	while (e--)
		p *= f;
	return p;
}

/* ompi_coll_tuned_topo_build_tree: fanout f, levels of f^l ranks */
static void tree_fanout(uint32_t f, uint32_t k, uint32_t root, uint32_t i, struct tree *t)
{
	uint32_t sr = (i + k - root) % k, level = 0;
	uint64_t num = 0;
	for (; num <= sr; level++)
		num += ipow(f, level);
	level--;
	uint64_t delta = ipow(f, level);
	t->n = 0;
	for (uint32_t j = 0; j < f && j < 32; j++) {
		uint64_t ch = sr + delta * (j + 1);
		if (ch >= k)
			break;
		t->next[t->n++] = (uint32_t)((ch + root) % k);
	}
	uint64_t slimit = f > 1 ? (ipow(f, level) - 1) / (f - 1) : 0, sp = sr;
	if (sp < f)
		sp = 0;
	else
		while (sp >= slimit)
			sp -= delta / f;
	t->prev = sr ? (uint32_t)((sp + root) % k) : NC_NONE;
}

/* ompi_coll_tuned_topo_build_chain: fanout chains from the root */
static void tree_chain(uint32_t f, uint32_t k, uint32_t root, uint32_t i, struct tree *t)
{
	uint32_t sr = (i + k - root) % k;
	if (f < 1)
		f = 1;
	if (f > 32)
		f = 32;
	t->n = 0;
	t->prev = NC_NONE;
	if (k - 1 < f)
		f = k - 1;
	if (f <= 1) {
		t->prev = sr ? (sr - 1 + root) % k : NC_NONE;
		if (sr + 1 < k)
			t->next[t->n++] = (sr + 1 + root) % k;
		return;
	}
	uint32_t maxlen = (k - 1) / f, mark;
	if ((k - 1) % f) {
		maxlen++;
		mark = (k - 1) % f;
	} else {
		mark = f + 1;
	}
	if (sr) {
		uint32_t col, head, len;
		if (sr - 1 < mark * maxlen) {
			col = (sr - 1) / maxlen;
			head = 1 + col * maxlen;
			len = maxlen;
		} else {
			col = mark + (sr - 1 - mark * maxlen) / (maxlen - 1);
			head = mark * maxlen + 1 + (col - mark) * (maxlen - 1);
			len = maxlen - 1;
		}
		t->prev = ((sr == head ? 0 : sr - 1) + root) % k;
		if (sr != head + len - 1 && sr + 1 < k)
			t->next[t->n++] = (sr + 1 + root) % k;
		return;
	}
	t->next[0] = (root + 1) % k;
	for (uint32_t j = 1; j < f; j++) {
		uint32_t v = t->next[j - 1] + maxlen;
		if (j > mark)
			v--;
		t->next[j] = v % k;
	}
	t->n = f;
}

/* ompi_coll_tuned_topo_build_in_order_bintree: root k - 1 */
static void tree_inorder_bin(uint32_t k, uint32_t i, struct tree *t)
{
	int64_t size = k, myrank = i, parent = k - 1, delta = 0;
	t->prev = NC_NONE;
	t->n = 0;
	for (;;) {
		int64_t right = size >> 1, lchild = -1, rchild = -1;
		if (size - 1 > 0) {
			lchild = parent - 1;
			if (lchild > 0)
				rchild = right - 1;
		}
		if (myrank == parent) {
			if (lchild >= 0)
				t->next[t->n++] = (uint32_t)(lchild + delta);
			if (rchild >= 0)
				t->next[t->n++] = (uint32_t)(rchild + delta);
			break;
		}
		if (myrank > rchild) {
			if (myrank == lchild)
				t->prev = (uint32_t)(parent + delta);
			size = size - right - 1;
			delta += right;
			myrank -= right;
			parent = size - 1;
		} else {
			if (myrank == rchild)
				t->prev = (uint32_t)(parent + delta);
			size = right;
			parent = rchild;
		}
	}
}

enum { TR_FANOUT, TR_CHAIN, TR_BMTREE, TR_INORDER_BIN };

static void tree_of(int kind, uint32_t f, uint32_t k, uint32_t root, uint32_t i, struct tree *t)
{
	if (kind == TR_FANOUT) {
		tree_fanout(f, k, root, i, t);
	} else if (kind == TR_CHAIN) {
		tree_chain(f, k, root, i, t);
	} else if (kind == TR_INORDER_BIN) {
		tree_inorder_bin(k, i, t);
	} else {
		uint32_t v = (i + k - root) % k, kids[32], parent;
		t->n = bm_children(v, k, kids, &parent);
		for (uint32_t j = 0; j < t->n; j++)
			t->next[j] = (kids[j] + root) % k;
		t->prev = parent == NC_NONE ? NC_NONE : (parent + root) % k;
	}
}

/* smpi_coll_tuned_ompi_reduce_generic: an inner rank receives each
 * child's segment (the next receive posted before the last one is waited
 * for), and sends its reduced segment up one step behind; a leaf sends
 * its segments up one after the other. */
static void reduce_generic(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts,
			   int kind, uint32_t f, uint64_t cbs)
{
	uint32_t k = c->k;
	uint64_t nseg = (count + cbs - 1) / cbs;
	for (uint32_t i = 0; i < k; i++) {
		struct tree t;
		tree_of(kind, f, k, root, i, &t);
		if (!t.n) {
			for (uint64_t left = count, seg = cbs; left > 0; left -= seg) {
				if (left < seg)
					seg = left;
				S(x, c, i, t.prev, (double)seg * ts);
			}
			continue;
		}
		uint64_t rcnt = 0, pcnt;
		uint32_t last = NC_NONE;
		for (uint64_t seg = 0; seg <= nseg; seg++) {
			pcnt = rcnt;
			rcnt = seg == nseg - 1 ? count - cbs * seg : cbs;
			int stop = 0;
			for (uint32_t j = 0; j < t.n && !stop; j++) {
				uint32_t cur = seg < nseg ? IR(x, c, i, t.next[j], (double)rcnt * ts) : NC_NONE;
				W(x, c, i, last);
				last = cur;
				if (j == 0 && seg > 0) {
					if (i != root)
						S(x, c, i, t.prev, (double)pcnt * ts);
					stop = seg == nseg;
				}
			}
		}
	}
}

static void reduce_linear(struct ncx *x, const struct nc_comm *c, uint32_t root, double b)
{
	uint32_t k = c->k;
	for (uint32_t i = 0; i < k; i++) {
		if (i != root) {
			S(x, c, i, root, b);
			continue;
		}
		R(x, c, i, k - 1, b);
		for (uint32_t j = k - 1; j-- > 0;)
			R(x, c, i, j, b);
	}
}

/* reduce__ompi's tables, one for operations that do not commute and one
 * for those that do: 1 linear, 2 chain, 3 pipeline, 4 binary, 5
 * binomial, 6 in-order binary, 7 linear. */
static const struct nc_band ompi_reduce_noncommute[] = {
	{ 4, { { 8, 6 }, { NC_ANY, 1 } } },
	{ 8, { { NC_ANY, 1 } } },
	{ 16, { { 1024, 6 }, { 8192, 1 }, { 16384, 6 }, { 262144, 1 }, { NC_ANY, 6 } } },
	{ 128, { { NC_ANY, 6 } } },
	{ 256, { { 512, 6 }, { 1024, 1 }, { NC_ANY, 6 } } },
	{ NC_ANY, { { NC_ANY, 6 } } },
};

static const struct nc_band ompi_reduce_commute[] = {
	{ 4, { { 8, 7 }, { 16, 4 }, { 32, 3 }, { 262144, 1 }, { 524288, 3 }, { 1048576, 2 }, { NC_ANY, 3 } } },
	{ 8, { { 4096, 4 }, { 65536, 2 }, { 262144, 5 }, { 524288, 1 }, { 1048576, 5 }, { NC_ANY, 1 } } },
	{ 16, { { 8192, 4 }, { NC_ANY, 5 } } },
	{ 32, { { 4096, 4 }, { NC_ANY, 5 } } },
	{ 256, { { NC_ANY, 5 } } },
	{ 512, { { 8192, 5 }, { 16384, 6 }, { NC_ANY, 5 } } },
	{ 2048, { { NC_ANY, 5 } } },
	{ 4096, { { 512, 5 }, { 1024, 6 }, { 8192, 5 }, { 16384, 6 }, { NC_ANY, 5 } } },
	{ NC_ANY, { { 16, 5 }, { 32, 6 }, { 1024, 5 }, { 2048, 6 }, { 8192, 5 }, { 16384, 6 },
		{ NC_ANY, 5 } } },
};

static int reduce_ompi(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts,
		       int commute)
{
	uint32_t k = c->k;
	double msg = (double)count * ts;
	switch (nc_rule_alg(commute ? ompi_reduce_commute : ompi_reduce_noncommute, k, count * ts)) {
	case 2:
		reduce_generic(x, c, root, count, ts, TR_CHAIN, k / 2, segcount(64 * 1024, ts, count));
		break;
	case 3: {
		uint64_t seg = k > 0.0410 / 1024 * msg + 9.7128 ? 1024 : k > 0.0033 / 1024 * msg + 1.6761 ? 32768 : 65536;
		reduce_generic(x, c, root, count, ts, TR_CHAIN, 1, segcount(seg, ts, count));
		break;
	}
	case 4:
		reduce_generic(x, c, root, count, ts, TR_FANOUT, 2, segcount(32 * 1024, ts, count));
		break;
	case 5: {
		uint64_t seg = ((k < 8 && msg < 20480) || msg < 2048 || count <= 1) ? 0
			       : k > 0.6016 / 1024 * msg + 1.3496 ? 1024 : 0;
		reduce_generic(x, c, root, count, ts, TR_BMTREE, 0, segcount(seg, ts, count));
		break;
	}
	case 6:
		reduce_generic(x, c, k - 1, count, ts, TR_INORDER_BIN, 2, count);
		if (root != k - 1) {
			R(x, c, root, k - 1, msg);
			S(x, c, k - 1, root, msg);
		}
		break;
	default:
		reduce_linear(x, c, root, msg);
		break;
	}
	return AN_OK;
}

static int reduce_sel(struct ncx *x, const struct nc_comm *c, uint32_t root, uint64_t count, uint32_t ts,
		      int commute)
{
	if (c->k < 2 || !count)
		return AN_OK;
	if (smpi_mpich(x))
		return unmodelled(x, "MPICH's Reduce", c->k);
	return reduce_ompi(x, c, root, count, ts, commute);
}

int nc_reduce(enum native_model md, struct mprog *p, const struct nc_comm *c, uint32_t root, uint64_t count,
	      uint32_t tsize, int commutative, char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	if (root >= c->k || !tsize)
		return unmodelled(&x, "a Reduce to no root", c->k);
	return reduce_sel(&x, c, root, count, tsize, commutative);
}

/* ---- Allreduce ---------------------------------------------------------------------- */

static int allreduce_sel(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts, int commute,
			 int smpcomm);

/* allreduce__rdb and allreduce__rab_rdb fold the first 2 x rem ranks
 * in pairs, so that a power of two take part: an even one sends its
 * vector to the odd one above it and sits out (-1); the others get
 * their new rank, which fold_in returns. */
static int64_t fold_in(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t rem, double b)
{
	if (i >= 2 * rem)
		return i - rem;
	if (i % 2 == 0) {
		S(x, c, i, i + 1, b);
		return -1;
	}
	R(x, c, i, i - 1, b);
	return i / 2;
}

/* The rank that new rank nd stands for: the odd one of a folded pair. */
static uint32_t fold_rank(uint32_t nd, uint32_t rem)
{
	return nd < rem ? nd * 2 + 1 : nd + rem;
}

/* The unfolding: each odd rank of a pair hands the result back. */
static void fold_out(struct ncx *x, const struct nc_comm *c, uint32_t i, uint32_t rem, double b)
{
	if (i >= 2 * rem)
		return;
	if (i % 2)
		S(x, c, i, i - 1, b);
	else
		R(x, c, i, i + 1, b);
}

/* allreduce__rdb: fold the ranks beyond a power of two into their
 * neighbours, exchange whole vectors by recursive doubling, unfold. */
static void allreduce_rdb(struct ncx *x, const struct nc_comm *c, double b)
{
	uint32_t k = c->k, pof2 = pof2_le(k), rem = k - pof2;
	for (uint32_t i = 0; i < k; i++) {
		int64_t nr = fold_in(x, c, i, rem, b);
		if (nr >= 0)
			for (uint32_t mask = 1; mask < pof2; mask <<= 1) {
				uint32_t nd = (uint32_t)nr ^ mask, dst = fold_rank(nd, rem);
				SR(x, c, i, dst, b, dst, b);
			}
		fold_out(x, c, i, rem, b);
	}
}

/* Elements of pieces [from, to). */
static uint64_t span(const uint64_t *cnt, uint32_t from, uint32_t to)
{
	uint64_t n = 0;
	for (uint32_t j = from; j < to; j++)
		n += cnt[j];
	return n;
}

/* allreduce__rab_rdb: Rabenseifner, recursive halving then doubling over
 * pof2 pieces (the last takes the rest), folded like rdb. */
static int allreduce_rab(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts)
{
	uint32_t k = c->k, pof2 = pof2_le(k), rem = k - pof2;
	uint64_t *cnt = malloc(((size_t)pof2 + 1) * sizeof(uint64_t));
	double b = (double)count * ts;
	if (!cnt)
		return AN_E_NOMEM;
	for (uint32_t j = 0; j + 1 < pof2; j++)
		cnt[j] = count / pof2;
	cnt[pof2 - 1] = count - count / pof2 * (pof2 - 1);
	for (uint32_t i = 0; i < k; i++) {
		int64_t nr = fold_in(x, c, i, rem, b);
		if (nr >= 0) {
			uint32_t mask = 1, sidx = 0, ridx = 0, last = pof2;
			for (; mask < pof2;) {
				uint32_t nd = (uint32_t)nr ^ mask, dst = fold_rank(nd, rem);
				uint64_t sc, rcnt;
				if ((uint32_t)nr < nd) {
					sidx = ridx + pof2 / (mask * 2);
					sc = span(cnt, sidx, last);
					rcnt = span(cnt, ridx, sidx);
				} else {
					ridx = sidx + pof2 / (mask * 2);
					sc = span(cnt, sidx, ridx);
					rcnt = span(cnt, ridx, last);
				}
				SR(x, c, i, dst, (double)sc * ts, dst, (double)rcnt * ts);
				sidx = ridx;
				mask <<= 1;
				if (mask < pof2)
					last = ridx + pof2 / mask;
			}
			for (mask >>= 1; mask > 0; mask >>= 1) {
				uint32_t nd = (uint32_t)nr ^ mask, dst = fold_rank(nd, rem);
				uint64_t sc, rcnt;
				if ((uint32_t)nr < nd) {
					if (mask != pof2 / 2)
						last = last + pof2 / (mask * 2);
					ridx = sidx + pof2 / (mask * 2);
					sc = span(cnt, sidx, ridx);
					rcnt = span(cnt, ridx, last);
				} else {
					ridx = sidx - pof2 / (mask * 2);
					sc = span(cnt, sidx, last);
					rcnt = span(cnt, ridx, sidx);
				}
				SR(x, c, i, dst, (double)sc * ts, dst, (double)rcnt * ts);
				if ((uint32_t)nr > nd)
					sidx = ridx;
			}
		}
		fold_out(x, c, i, rem, b);
	}
	free(cnt);
	return AN_OK;
}

/* allreduce__redbcast: the selected Reduce to 0, then the selected Bcast. */
static int allreduce_redbcast(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts, int commute)
{
	int rc = reduce_sel(x, c, 0, count, ts, commute);
	return rc ? rc : nc_bcast_sel(x, c, 0, count, ts, 0);
}

/* allreduce__lr: a ring reduce-scatter and allgather of count / k
 * elements a step; fewer elements than ranks: reduce + bcast; a remainder
 * goes to the selected Allreduce. */
static int allreduce_lr(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts, int commute)
{
	uint32_t k = c->k;
	if (count < k)
		return allreduce_redbcast(x, c, count, ts, commute);
	double b = (double)(count / k) * ts;
	for (uint32_t i = 0; i < k; i++)
		for (uint32_t s = 0; s < 2 * (k - 1); s++)
			SR(x, c, i, (i + 1) % k, b, (i + k - 1) % k, b);
	if (count % k)
		return allreduce_sel(x, c, count % k, ts, commute, 0);
	return AN_OK;
}

/* allreduce__mvapich2_two_level (SMPI's MPICH selector, commutative
 * operations): each host's ranks by MPICH's Allreduce, the hosts' leaders
 * by recursive doubling, each host's leader's Bcast. */
static int allreduce_two_level(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts, int commute)
{
	struct smp s;
	if (!count)
		return AN_OK;
	if (nc_smp_make(&s, c))
		return AN_E_NOMEM;
	int rc = AN_OK;
	for (uint32_t h = 0; !rc && h < s.nh; h++) {
		struct subc sc;
		if (!(rc = nc_sub_make(&sc, c, s.order + s.first[h], s.first[h + 1] - s.first[h]))) {
			rc = allreduce_sel(x, &sc.c, count, ts, commute, 1);
			nc_sub_free(&sc);
		}
	}
	if (!rc && s.first[1] != c->k) {
		struct subc sc;
		rc = nc_sub_make(&sc, c, s.leaders, s.nh);
		if (!rc) {
			allreduce_rdb(x, &sc.c, (double)count * ts);
			nc_sub_free(&sc);
		}
	}
	for (uint32_t h = 0; !rc && h < s.nh; h++) {
		struct subc sc;
		if (!(rc = nc_sub_make(&sc, c, s.order + s.first[h], s.first[h + 1] - s.first[h]))) {
			rc = nc_bcast_sel(x, &sc.c, 0, count, ts, 1);
			nc_sub_free(&sc);
		}
	}
	nc_smp_free(&s);
	return rc;
}

/* allreduce__ompi's tables, for operations that do not commute and for
 * those that do: 1, 2 reduce + bcast, 3 rdb, 4 lr, 5 segmented ring, 6
 * Rabenseifner. */
static const struct nc_band ompi_allreduce_noncommute[] = {
	{ 4, { { 131072, 3 }, { NC_ANY, 1 } } },
	{ 8, { { NC_ANY, 3 } } },
	{ 16, { { 1048576, 3 }, { NC_ANY, 2 } } },
	{ 128, { { NC_ANY, 3 } } },
	{ 256, { { 131072, 2 }, { 524288, 3 }, { NC_ANY, 2 } } },
	{ 512, { { 4096, 2 }, { 524288, 3 }, { NC_ANY, 2 } } },
	{ NC_ANY, { { 2048, 2 }, { NC_ANY, 3 } } },
};

static const struct nc_band ompi_allreduce_commute[] = {
	{ 4, { { 8, 4 }, { 4096, 3 }, { 8192, 4 }, { 16384, 3 }, { 65536, 4 }, { 262144, 5 }, { NC_ANY, 6 } } },
	{ 8, { { 16, 4 }, { 8192, 3 }, { NC_ANY, 6 } } },
	{ 16, { { 8192, 3 }, { NC_ANY, 6 } } },
	{ 32, { { 64, 5 }, { 4096, 3 }, { NC_ANY, 6 } } },
	{ 64, { { 128, 5 }, { NC_ANY, 6 } } },
	{ 128, { { 262144, 3 }, { NC_ANY, 6 } } },
	{ 256, { { 131072, 2 }, { 262144, 3 }, { NC_ANY, 6 } } },
	{ 512, { { 4096, 2 }, { NC_ANY, 6 } } },
	{ 2048, { { 2048, 2 }, { 16384, 3 }, { NC_ANY, 6 } } },
	{ 4096, { { 2048, 2 }, { 4096, 5 }, { 16384, 3 }, { NC_ANY, 6 } } },
	{ NC_ANY, { { 2048, 2 }, { 16384, 5 }, { 32768, 3 }, { NC_ANY, 6 } } },
};

static int allreduce_sel(struct ncx *x, const struct nc_comm *c, uint64_t count, uint32_t ts, int commute,
			 int smpcomm)
{
	uint32_t k = c->k;
	double b = (double)count * ts;
	if (k < 2 || !count)
		return AN_OK;
	if (++x->depth > NC_DEPTH)
		return unmodelled(x, "an Allreduce within Allreduces", k);
	int rc = AN_OK;
	if (smpi_mpich(x)) {
		if (!smpcomm && commute && x->md == NATIVE_SMPI_MPICH)
			rc = allreduce_two_level(x, c, count, ts, commute);
		else if (b > 2048 && count >= pof2_le(k) && commute)
			rc = allreduce_rab(x, c, count, ts);
		else
			allreduce_rdb(x, c, b);
	} else {
		switch (nc_rule_alg(commute ? ompi_allreduce_commute : ompi_allreduce_noncommute, k, count * ts)) {
		case 1:
		case 2: rc = allreduce_redbcast(x, c, count, ts, commute); break;
		case 3: allreduce_rdb(x, c, b); break;
		case 4: rc = allreduce_lr(x, c, count, ts, commute); break;
		case 5:
			/* the segmented ring takes 1 MB segments: below k of them it is lr */
			if (count < k * segcount(1 << 20, ts, count))
				rc = allreduce_lr(x, c, count, ts, commute);
			else
				rc = unmodelled(x, "Open MPI's segmented ring Allreduce", k);
			break;
		default: rc = allreduce_rab(x, c, count, ts); break;
		}
	}
	x->depth--;
	return rc;
}

int nc_allreduce(enum native_model md, struct mprog *p, const struct nc_comm *c, uint64_t count, uint32_t tsize,
		 int commutative, char err[AN_ERR_LEN])
{
	struct ncx x = { md, p, err, 0 };
	if (!tsize)
		return unmodelled(&x, "an Allreduce of empty elements", c->k);
	return allreduce_sel(&x, c, count, tsize, commutative, 0);
}
