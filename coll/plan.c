/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c - topocoll's own collectives as plans (plan.h): the generators,
 * the runner, and their time in the cost model.
 *
 * Orders. The fabric's order (c->fab: leaves in the routing's host order,
 * hosts in it, a host's ranks together, tc_ring_order) puts ranks that
 * share a host, then a leaf, next to each other: a tree or exchange over
 * it keeps its short edges within hosts and leaves and crosses the
 * fabric above the leaves with few messages. Rooted algorithms take it
 * from the root: the root, its host's other ranks, its leaf's, then the
 * other leaves in the fabric's order.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "mprog.h"

#define TP_TAG 7721 /* on the private communicator: no user message can match */

/* ---- trees ------------------------------------------------------------------------ */

/* The ranks from the root in the fabric's order (see above), into ord[size]. */
static void root_order(const struct tc_comm *c, int root, int *ord)
{
	int n = c->size, k = 0, rh = c->hostof[root], rl = c->leaf_of[root];
	ord[k++] = root;
	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < n; i++) {
			int r = c->fab[i], same_h = c->hostof[r] == rh, same_l = c->leaf_of[r] == rl;
			if (r != root && (pass == 0 ? same_h : pass == 1 ? same_l && !same_h : !same_l))
				ord[k++] = r;
		}
}

/* Edges (parent, child) of a k-nomial tree on members m[0..n) (m[0] its
 * root), each parent's children far first (MVAPICH's k-nomial), appended
 * to pe/ce. k >= n: flat. */
static void knomial(const int *m, int n, int k, int *pe, int *ce, int *ne)
{
	if (k < 2)
		k = 2;
	for (int v = 0; v < n; v++) {
		long long mask = 1;
		while (mask < n && (v % (k * mask)) == 0)
			mask *= k;
		/* v's lowest non-zero digit is at `mask` (v = 0: above n) */
		for (mask /= k; mask >= 1; mask /= k)
			for (int j = 1; j < k; j++) {
				long long ch = v + j * mask;
				if (ch < n) {
					pe[*ne] = m[v];
					ce[(*ne)++] = m[ch];
				}
			}
	}
}

/* The groups of ord (runs of equal key[r]): leaders (first of each run)
 * into lead, run bounds into first. Returns the number of runs. */
static int runs(const int *ord, int n, const int *key, int *first)
{
	int g = 0;
	for (int i = 0; i < n; i++)
		if (i == 0 || key[ord[i]] != key[ord[i - 1]])
			first[g++] = i;
	first[g] = n;
	return g;
}

void tp_tree_free(struct tp_tree *t)
{
	free(t->parent);
	memset(t, 0, sizeof(*t));
}

/* One block of 11 arrays of n + 1 ints: the tree's and its building's. */
int tp_tree_alloc(struct tp_tree *t, int n)
{
	memset(t, 0, sizeof(*t));
	size_t m = (size_t)n + 1;
	int *b = malloc(11 * m * sizeof(int));
	if (!b)
		return -1;
	t->cap = n;
	t->parent = b;
	t->koff = b + m;
	t->kids = b + 2 * m;
	t->start = b + 3 * m;
	t->size = b + 4 * m;
	t->dfs = b + 5 * m;
	t->w[0] = b + 6 * m;
	t->w[1] = b + 7 * m;
	t->w[2] = b + 8 * m;
	t->w[3] = b + 9 * m;
	t->w[4] = b + 10 * m;
	return 0;
}

/* The edges of a->shape over ord[n] (root first) into pe/ce; returns their number. */
static int tree_edges(const struct tc_comm *c, const struct tp_args *a, const int *ord, int *pe, int *ce, int *first,
		      int *lead)
{
	int n = c->size, ne = 0;
	if (a->shape == TP_T_CHAIN) {
		for (int i = 1; i < n; i++) {
			pe[ne] = ord[i - 1];
			ce[ne++] = ord[i];
		}
		return ne;
	}
	if (a->shape == TP_T_KNOMIAL) {
		knomial(ord, n, a->k[0] > 0 ? a->k[0] : n, pe, ce, &ne);
		return ne;
	}
	/* by levels: leaves (TP_T_LEVELS only), hosts within them, ranks within
	 * hosts; groups are runs of ord by construction (root_order) */
	int lv0 = a->shape == TP_T_LEVELS || a->shape == TP_T_RELAY ? 0 : 1;
	for (int lv = lv0; lv < 3; lv++) {
		int ng = runs(ord, n, lv == 0 ? c->leaf_of : c->hostof, first);
		if (lv == 2) {
			for (int g = 0; g < ng; g++)
				knomial(ord + first[g], first[g + 1] - first[g], a->k[2] > 0 ? a->k[2] : n, pe, ce, &ne);
			continue;
		}
		for (int g = 0; g < ng; g++)
			lead[g] = ord[first[g]];
		if (lv == 0 && a->shape == TP_T_RELAY)
			continue; /* the leaves' leaders are dealt below */
		if (lv == 0 || lv0 == 1) {
			knomial(lead, ng, a->k[lv] > 0 ? a->k[lv] : n, pe, ce, &ne);
			continue;
		}
		/* the hosts' leaders within each leaf. TP_T_RELAY: each other
		 * leaf's leader (k[0] 1: each of its hosts' leaders) dealt
		 * round-robin to the root leaf's hosts' leaders (lead[0..nr), the
		 * root first). Under destination routing every route into a host
		 * comes down one cable into its leaf, so the blocks a Gather sends
		 * straight to the root share that cable, however many the leaf
		 * has; sent to the leaf's other hosts they come down as many
		 * cables as those hosts' routes use, and reach the root over the
		 * leaf switch. */
		int nr = 0, dealt = 0;
		while (nr < ng && c->leaf_of[lead[nr]] == c->leaf_of[lead[0]])
			nr++;
		for (int i = 0; i < ng;) {
			int j = i, x = i;
			while (j < ng && c->leaf_of[lead[j]] == c->leaf_of[lead[i]])
				j++;
			for (; i > 0 && a->shape == TP_T_RELAY && x < (a->k[0] == 1 ? j : i + 1); x++) {
				pe[ne] = lead[dealt++ % nr];
				ce[ne++] = lead[x];
			}
			if (x < j)
				knomial(lead + i, j - i, a->k[1] > 0 ? a->k[1] : n, pe, ce, &ne);
			i = j;
		}
	}
	return ne;
}

int tp_tree_build(const struct tc_comm *c, const struct tp_args *a, struct tp_tree *t)
{
	int n = c->size;
	int *ord = t->w[0], *pe = t->w[1], *ce = t->w[2], *first = t->w[3], *lead = t->w[4];
	if (t->cap < n)
		return -1;
	t->n = n;
	root_order(c, a->root, ord);
	if (tree_edges(c, a, ord, pe, ce, first, lead) != n - 1)
		return -1;
	/* children per parent in the order emitted (a stable bucket) */
	for (int r = 0; r <= n; r++)
		t->koff[r] = 0;
	for (int e = 0; e < n - 1; e++) {
		t->parent[ce[e]] = pe[e];
		t->koff[pe[e] + 1]++;
	}
	t->parent[a->root] = -1;
	for (int r = 0; r < n; r++)
		t->koff[r + 1] += t->koff[r];
	for (int r = 0; r < n; r++)
		first[r] = t->koff[r];
	for (int e = 0; e < n - 1; e++)
		t->kids[first[pe[e]]++] = ce[e];
	/* depth-first order, each rank's start in it and subtree size */
	int *stack = lead, *next = first, sp = 0, pos = 0;
	for (int r = 0; r < n; r++)
		next[r] = t->koff[r];
	stack[sp++] = a->root;
	t->start[a->root] = pos;
	t->dfs[pos++] = a->root;
	while (sp) {
		int r = stack[sp - 1];
		if (next[r] < t->koff[r + 1]) {
			int ch = t->kids[next[r]++];
			t->start[ch] = pos;
			t->dfs[pos++] = ch;
			stack[sp++] = ch;
		} else {
			t->size[r] = pos - t->start[r];
			sp--;
		}
	}
	return pos == n ? 0 : -1;
}

/* ---- the generators --------------------------------------------------------------- */

/* One rank's ops as they are generated. */
struct gen {
	struct tp_op **ops;
	int *n, *cap;
	int nposts, fail;
	int sync;              /* sends synchronous (tp_args sync) */
};

static void put(struct gen *g, struct tp_op o)
{
	if (g->fail)
		return;
	if (*g->n == *g->cap) {
		int c = *g->cap ? 2 * *g->cap : 64;
		struct tp_op *q = c > *g->cap ? realloc(*g->ops, (size_t)c * sizeof(*q)) : NULL;
		if (!q) {
			g->fail = 1;
			return;
		}
		*g->ops = q;
		*g->cap = c;
	}
	(*g->ops)[(*g->n)++] = o;
}

static int isend(struct gen *g, int peer, int buf, long long off, long long n)
{
	put(g, (struct tp_op){ .kind = (unsigned char)(g->sync ? TP_SSEND : TP_SEND), .buf = (unsigned char)buf,
			       .peer = peer, .off = off, .n = n });
	return g->nposts++;
}

static int irecv(struct gen *g, int peer, int buf, long long off, long long n)
{
	put(g, (struct tp_op){ .kind = TP_RECV, .buf = (unsigned char)buf, .peer = peer, .off = off, .n = n });
	return g->nposts++;
}

static void wait_(struct gen *g, int req)
{
	put(g, (struct tp_op){ .kind = TP_WAIT, .peer = req });
}

static void send_(struct gen *g, int peer, int buf, long long off, long long n)
{
	wait_(g, isend(g, peer, buf, off, n));
}

static void recv_(struct gen *g, int peer, int buf, long long off, long long n)
{
	wait_(g, irecv(g, peer, buf, off, n));
}

static void sendrecv(struct gen *g, int to, int sbuf, long long soff, long long sn, int from, int rbuf, long long roff,
		     long long rn)
{
	int a = isend(g, to, sbuf, soff, sn), b = irecv(g, from, rbuf, roff, rn);
	wait_(g, a);
	wait_(g, b);
}

/* buf[off, +n) = sbuf[soff, +n) op buf[off, +n) */
static void reduce_(struct gen *g, int buf, long long off, int sbuf, long long soff, long long n)
{
	put(g, (struct tp_op){ .kind = TP_REDUCE, .buf = (unsigned char)buf, .sbuf = (unsigned char)sbuf, .off = off,
			       .soff = soff, .n = n });
}

static void copy_(struct gen *g, int buf, long long off, int sbuf, long long soff, long long n)
{
	put(g, (struct tp_op){ .kind = TP_COPY, .buf = (unsigned char)buf, .sbuf = (unsigned char)sbuf, .off = off,
			       .soff = soff, .n = n });
}

/* A tree's Bcast: the segments posted to be received first; each one, once
 * in, goes to every child (posted together, or one after the other: seq),
 * with one segment in flight per child: a rendezvous segment's send ends
 * when it is in, which paces the next (posted together, segments would
 * share the cable and arrive together). */
static void gen_tree_bcast(struct gen *g, const struct tp_args *a, const struct tp_tree *t, int r)
{
	long long S = a->count, sz = a->seg > 0 && a->seg < S ? a->seg : S;
	long long nseg = S ? (S + sz - 1) / sz : 0;
	int p = t->parent[r], k0 = t->koff[r], nk = t->koff[r + 1] - k0, first_recv = g->nposts, prev = -1;
	for (long long s = 0; p >= 0 && s < nseg; s++)
		irecv(g, p, TP_DATA, s * sz, s + 1 < nseg ? sz : S - s * sz);
	for (long long s = 0; s < nseg; s++) {
		long long off = s * sz, len = s + 1 < nseg ? sz : S - off;
		if (p >= 0)
			wait_(g, first_recv + (int)s);
		if (a->seq) {
			for (int j = 0; j < nk; j++)
				send_(g, t->kids[k0 + j], TP_DATA, off, len);
			continue;
		}
		for (int j = 0; prev >= 0 && j < nk; j++)
			wait_(g, prev + j);
		prev = g->nposts;
		for (int j = 0; j < nk; j++)
			isend(g, t->kids[k0 + j], TP_DATA, off, len);
	}
	for (int j = 0; !a->seq && prev >= 0 && j < nk; j++)
		wait_(g, prev + j);
}

/* Bytes of pieces [a, b) of a message of S in pieces of ss (the last ones
 * may be short or empty). */
static long long pieces(long long S, long long ss, long long a, long long b)
{
	long long lo = a * ss, hi = b * ss;
	lo = lo < S ? lo : S;
	hi = hi < S ? hi : S;
	return hi - lo;
}

/* Van de Geijn's Bcast over the order from the root (t: a chain, whose
 * depth-first order it is): a binomial scatter of P pieces (MPICH's
 * scatter_for_bcast, largest subtree first), then a ring allgather of
 * them in that order (k[0] 1: recursive doubling, P a power of two). */
static void gen_scag_bcast(struct gen *g, const struct tp_args *a, const struct tp_tree *t, int r)
{
	long long S = a->count;
	int P = t->n, q = t->start[r];
	long long ss = (S + P - 1) / P;
	int mask = 1;
	while (mask < P && !(q & mask))
		mask <<= 1;
	if (q) {
		long long b = pieces(S, ss, q, q + mask < P ? q + mask : P);
		if (b > 0)
			recv_(g, t->dfs[q - mask], TP_DATA, q * ss, b);
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (q + mask < P) {
			long long hi = q + 2 * mask < P ? q + 2 * mask : P, b = pieces(S, ss, q + mask, hi);
			if (b > 0)
				send_(g, t->dfs[q + mask], TP_DATA, (q + mask) * ss, b);
		}
	if (a->k[0] == 1) {
		/* recursive doubling of the pieces (P a power of two) */
		for (int m = 1; m < P; m <<= 1) {
			int d = q ^ m, mt = q / m * m, dt = d / m * m;
			long long sb = pieces(S, ss, mt, mt + m), rb = pieces(S, ss, dt, dt + m);
			int x = sb > 0 ? isend(g, t->dfs[d], TP_DATA, mt * ss, sb) : -1;
			int y = rb > 0 ? irecv(g, t->dfs[d], TP_DATA, dt * ss, rb) : -1;
			if (x >= 0)
				wait_(g, x);
			if (y >= 0)
				wait_(g, y);
		}
		return;
	}
	int right = t->dfs[(q + 1) % P], left = t->dfs[(q + P - 1) % P];
	for (int s = 0; s + 1 < P; s++) {
		int sp = (q + P - s) % P, rp = (q + 2 * P - s - 1) % P;
		long long sb = pieces(S, ss, sp, sp + 1), rb = pieces(S, ss, rp, rp + 1);
		int x = sb > 0 ? isend(g, right, TP_DATA, sp * ss, sb) : -1;
		int y = rb > 0 ? irecv(g, left, TP_DATA, rp * ss, rb) : -1;
		if (x >= 0)
			wait_(g, x);
		if (y >= 0)
			wait_(g, y);
	}
}

/* Gather up a tree: each rank's subtree's blocks of B bytes in TP_TMP in
 * depth-first order, its own first (placed there before); the children's
 * subtrees received at once, then the whole subtree to the parent. */
static void gen_tree_gather(struct gen *g, const struct tp_args *a, const struct tp_tree *t, int r)
{
	long long B = a->count;
	int k0 = t->koff[r], nk = t->koff[r + 1] - k0, first = g->nposts;
	for (int j = 0; j < nk; j++) {
		int ch = t->kids[k0 + j];
		irecv(g, ch, TP_TMP, (long long)(t->start[ch] - t->start[r]) * B, (long long)t->size[ch] * B);
	}
	for (int j = 0; j < nk; j++)
		wait_(g, first + j);
	if (t->parent[r] >= 0)
		send_(g, t->parent[r], TP_TMP, 0, (long long)t->size[r] * B);
}

/* Scatter down a tree: the subtree's blocks from the parent into TP_TMP,
 * then each child's (posted together, or one after the other: seq). */
static void gen_tree_scatter(struct gen *g, const struct tp_args *a, const struct tp_tree *t, int r)
{
	long long B = a->count;
	int k0 = t->koff[r], nk = t->koff[r + 1] - k0, first;
	if (t->parent[r] >= 0)
		recv_(g, t->parent[r], TP_TMP, 0, (long long)t->size[r] * B);
	first = g->nposts;
	for (int j = 0; j < nk; j++) {
		int ch = t->kids[k0 + j];
		long long off = (long long)(t->start[ch] - t->start[r]) * B, len = (long long)t->size[ch] * B;
		if (a->seq)
			send_(g, ch, TP_TMP, off, len);
		else
			isend(g, ch, TP_TMP, off, len);
	}
	for (int j = 0; !a->seq && j < nk; j++)
		wait_(g, first + j);
}

/* ---- Allreduce: over members m[0..n) of which I am m[i], on TP_DATA[0, count) ----- */

/* The reduction of the lower-ranked operand (in m's order) into the
 * higher's place: every rank that combines the same two partials gets the
 * same bytes, whatever the operation (MPICH's recursive doubling does
 * the same). mine_lower: my partial in TP_DATA is the lower one. */
static void combine(struct gen *g, long long off, long long n, int mine_lower)
{
	if (mine_lower) {
		reduce_(g, TP_TMP, off, TP_DATA, off, n);
		copy_(g, TP_DATA, off, TP_TMP, off, n);
	} else {
		reduce_(g, TP_DATA, off, TP_TMP, off, n);
	}
}

/* MPICH's recursive doubling: the first 2 x rem fold pairwise, then whole
 * vectors at distance 1, 2, 4 ... */
static void ar_rdb(struct gen *g, const int *m, int n, int i, long long count)
{
	int pof2 = 1, rem, nr;
	while (pof2 * 2 <= n)
		pof2 *= 2;
	rem = n - pof2;
	if (i < 2 * rem) {
		if (i % 2 == 0) {
			send_(g, m[i + 1], TP_DATA, 0, count);
			nr = -1;
		} else {
			recv_(g, m[i - 1], TP_TMP, 0, count);
			combine(g, 0, count, 0);
			nr = i / 2;
		}
	} else {
		nr = i - rem;
	}
	for (int mask = 1; nr >= 0 && mask < pof2; mask <<= 1) {
		int nd = nr ^ mask, dst = nd < rem ? nd * 2 + 1 : nd + rem;
		sendrecv(g, m[dst], TP_DATA, 0, count, m[dst], TP_TMP, 0, count);
		combine(g, 0, count, dst > i);
	}
	if (i < 2 * rem) {
		if (i % 2)
			send_(g, m[i - 1], TP_DATA, 0, count);
		else
			recv_(g, m[i + 1], TP_DATA, 0, count);
	}
}

/* pieces [a, b) of Rabenseifner's pof2: count / pof2 each, the last the rest */
static long long rab_cnt(long long count, int pof2, int a, int b)
{
	long long q = count / pof2;
	return (long long)(b - a) * q + (b == pof2 ? count - q * pof2 : 0);
}

/* Rabenseifner (MPICH's rab_rdb): fold like rdb, halve the vector by
 * recursive halving (each step the kept half reduced), then double it back. */
static void ar_rab(struct gen *g, const int *m, int n, int i, long long count)
{
	int pof2 = 1, rem, nr;
	while (pof2 * 2 <= n)
		pof2 *= 2;
	rem = n - pof2;
	long long q = count / pof2;
	if (i < 2 * rem) {
		if (i % 2 == 0) {
			send_(g, m[i + 1], TP_DATA, 0, count);
			nr = -1;
		} else {
			recv_(g, m[i - 1], TP_TMP, 0, count);
			combine(g, 0, count, 0);
			nr = i / 2;
		}
	} else {
		nr = i - rem;
	}
	if (nr >= 0) {
		int mask = 1, sidx = 0, ridx = 0, last = pof2;
		while (mask < pof2) {
			int nd = nr ^ mask, dst = nd < rem ? nd * 2 + 1 : nd + rem, s0, s1, r0, r1;
			if (nr < nd) {
				sidx = ridx + pof2 / (mask * 2);
				s0 = sidx, s1 = last, r0 = ridx, r1 = sidx;
			} else {
				ridx = sidx + pof2 / (mask * 2);
				s0 = sidx, s1 = ridx, r0 = ridx, r1 = last;
			}
			sendrecv(g, m[dst], TP_DATA, s0 * q, rab_cnt(count, pof2, s0, s1), m[dst], TP_TMP, r0 * q,
				 rab_cnt(count, pof2, r0, r1));
			combine(g, r0 * q, rab_cnt(count, pof2, r0, r1), dst > i);
			sidx = ridx;
			mask <<= 1;
			if (mask < pof2)
				last = ridx + pof2 / mask;
		}
		for (mask >>= 1; mask > 0; mask >>= 1) {
			int nd = nr ^ mask, dst = nd < rem ? nd * 2 + 1 : nd + rem, s0, s1, r0, r1;
			if (nr < nd) {
				if (mask != pof2 / 2)
					last = last + pof2 / (mask * 2);
				ridx = sidx + pof2 / (mask * 2);
				s0 = sidx, s1 = ridx, r0 = ridx, r1 = last;
			} else {
				ridx = sidx - pof2 / (mask * 2);
				s0 = sidx, s1 = last, r0 = ridx, r1 = sidx;
			}
			sendrecv(g, m[dst], TP_DATA, s0 * q, rab_cnt(count, pof2, s0, s1), m[dst], TP_DATA, r0 * q,
				 rab_cnt(count, pof2, r0, r1));
			if (nr > nd)
				sidx = ridx;
		}
	}
	if (i < 2 * rem) {
		if (i % 2)
			send_(g, m[i - 1], TP_DATA, 0, count);
		else
			recv_(g, m[i + 1], TP_DATA, 0, count);
	}
}

/* chunk j of n: count / n elements, the first count % n one more */
static long long chunk_off(long long count, int n, int j)
{
	long long q = count / n, rm = count % n;
	return (long long)j * q + (j < rm ? j : rm);
}

static long long chunk_len(long long count, int n, int j)
{
	return count / n + (j < count % n);
}

/* The ring: n - 1 steps of reduce-scatter (rank i ends with chunk i + 1
 * whole), n - 1 of allgather. Each chunk is reduced at one rank only. */
static void ar_ring(struct gen *g, const int *m, int n, int i, long long count)
{
	int right = m[(i + 1) % n], left = m[(i + n - 1) % n];
	for (int s = 0; s + 1 < n; s++) {
		int sj = (i + n - s) % n, rj = (i + 2 * n - s - 1) % n;
		sendrecv(g, right, TP_DATA, chunk_off(count, n, sj), chunk_len(count, n, sj), left, TP_TMP, 0,
			 chunk_len(count, n, rj));
		reduce_(g, TP_DATA, chunk_off(count, n, rj), TP_TMP, 0, chunk_len(count, n, rj));
	}
	for (int s = 0; s + 1 < n; s++) {
		int sj = (i + 1 + n - s) % n, rj = (i + n - s) % n;
		sendrecv(g, right, TP_DATA, chunk_off(count, n, sj), chunk_len(count, n, sj), left, TP_DATA,
			 chunk_off(count, n, rj), chunk_len(count, n, rj));
	}
}

static void ar_run(struct gen *g, enum tp_alg alg, const int *m, int n, int i, long long count)
{
	if (n < 2)
		return;
	if (alg == TP_A_RDB_ALLRED)
		ar_rdb(g, m, n, i, count);
	else if (alg == TP_A_RAB_ALLRED)
		ar_rab(g, m, n, i, count);
	else
		ar_ring(g, m, n, i, count);
}

/* Allreduce: over the ranks (the fabric's order, or rank order), or each
 * host's ranks reduced at its leader by a binomial tree first, the
 * leaders' allreduce, the leader's result to its ranks at once. */
static void gen_allreduce(struct gen *g, const struct tc_comm *c, const struct tp_args *a, int r)
{
	long long count = a->count;
	if (!a->hier) {
		ar_run(g, a->alg, a->rankorder ? c->ident : c->fab, c->size, a->rankorder ? r : c->fpos[r], count);
		return;
	}
	int h = c->hostof[r], f0 = c->fhfirst[h], hs = c->fhfirst[h + 1] - f0, j = c->fpos[r] - f0;
	const int *mem = c->fab + f0;
	for (int mask = 1; mask < hs; mask <<= 1) {
		if (j & mask) {
			send_(g, mem[j - mask], TP_DATA, 0, count);
			break;
		}
		if (j + mask < hs) {
			recv_(g, mem[j + mask], TP_TMP, 0, count);
			reduce_(g, TP_DATA, 0, TP_TMP, 0, count);
		}
	}
	if (j == 0)
		ar_run(g, a->alg, c->hlead, c->nfh, h, count);
	if (j == 0) {
		int first = g->nposts;
		for (int x = 1; x < hs; x++)
			isend(g, mem[x], TP_DATA, 0, count);
		for (int x = 1; x < hs; x++)
			wait_(g, first + x - 1);
	} else {
		recv_(g, mem[0], TP_DATA, 0, count);
	}
}

/* ---- Allgather: blocks of B bytes in TP_DATA in the fabric's order ---------------- */

/* Units over members m[0], m[ms], .. m[(n - 1) ms] (I am the i-th): unit
 * j is places [U(j), U(j + 1)) of the buffer `at`, U(j) = U[j], or u0 +
 * j uw where U is NULL; B bytes a place. Bruck stages its units in
 * `stage`. Strides, not index arrays, so that the grid's columns need no
 * memory of their own (nothing is allocated while a call runs). */
struct agx {
	const int *m, *U;
	int ms, n, i;
	long long u0, uw, B;
	unsigned char at, stage;
};

static long long uat(const struct agx *x, int j)
{
	return x->U ? x->U[j] : x->u0 + j * x->uw;
}

static int mem(const struct agx *x, int j)
{
	return x->m[(long long)j * x->ms];
}

static void ag_rdb(struct gen *g, const struct agx *x)
{
	long long B = x->B;
	for (int mask = 1; mask < x->n; mask <<= 1) {
		int dst = x->i ^ mask, mt = x->i / mask * mask, dt = dst / mask * mask;
		sendrecv(g, mem(x, dst), x->at, uat(x, mt) * B, (uat(x, mt + mask) - uat(x, mt)) * B, mem(x, dst), x->at,
			 uat(x, dt) * B, (uat(x, dt + mask) - uat(x, dt)) * B);
	}
}

/* units [a, b) counted from i, wrapping: their bytes */
static long long ubytes(const struct agx *x, int a, int b)
{
	long long sum = 0;
	for (int j = a; j < b; j++) {
		int u = (x->i + j) % x->n;
		sum += (uat(x, u + 1) - uat(x, u)) * x->B;
	}
	return sum;
}

/* Bruck: in the stage the units from mine on, unit i + j at the j-th
 * place; then rotated into place. */
static void ag_bruck(struct gen *g, const struct agx *x)
{
	int n = x->n, i = x->i;
	long long B = x->B, mine = (uat(x, i + 1) - uat(x, i)) * B, base = uat(x, 0) * B;
	copy_(g, x->stage, 0, x->at, uat(x, i) * B, mine);
	int pof2 = 1;
	for (; pof2 <= n / 2; pof2 *= 2) {
		long long have = ubytes(x, 0, pof2);
		sendrecv(g, mem(x, (i + n - pof2) % n), x->stage, 0, have, mem(x, (i + pof2) % n), x->stage, have,
			 ubytes(x, pof2, 2 * pof2));
	}
	if (n - pof2) {
		long long have = ubytes(x, 0, pof2);
		sendrecv(g, mem(x, (i + n - pof2) % n), x->stage, 0, ubytes(x, 0, n - pof2), mem(x, (i + pof2) % n),
			 x->stage, have, ubytes(x, pof2, n));
	}
	long long tail = ubytes(x, 0, n - i);
	copy_(g, x->at, uat(x, i) * B, x->stage, 0, tail);
	if (i)
		copy_(g, x->at, base, x->stage, tail, uat(x, i) * B - base);
}

static void ag_ring(struct gen *g, const struct agx *x)
{
	int n = x->n, i = x->i, right = mem(x, (i + 1) % n), left = mem(x, (i + n - 1) % n);
	long long B = x->B;
	for (int s = 0; s + 1 < n; s++) {
		int sj = (i + n - s) % n, rj = (i + 2 * n - s - 1) % n;
		sendrecv(g, right, x->at, uat(x, sj) * B, (uat(x, sj + 1) - uat(x, sj)) * B, left, x->at,
			 uat(x, rj) * B, (uat(x, rj + 1) - uat(x, rj)) * B);
	}
}

static void ag_run(struct gen *g, enum tp_alg alg, const struct agx *x)
{
	if (x->n < 2)
		return;
	if (alg == TP_A_RDB_ALLGATHER)
		ag_rdb(g, x);
	else if (alg == TP_A_BRUCK_ALLGATHER)
		ag_bruck(g, x);
	else
		ag_ring(g, x);
}

/* The grid (c->gridm: L leaves of m ranks each, a leaf's ranks together in
 * the fabric's order; place L m + i is the i-th rank of the L-th leaf in
 * that order): the columns (the i-th ranks of every leaf) allgather their
 * own blocks over the leaves, then each leaf allgathers its ranks'
 * columns. Every block enters every other leaf once, the least any
 * allgather sends down a leaf's cables; the fabric's order's recursive
 * doubling sends each one into a leaf once per rank there in its last
 * steps, which an over-subscribed tree's uplinks serve at a fraction of
 * the hosts' rate. In TP_TMP block (L, i) lies at (i nl + L) B (nl
 * leaves), so that a column's blocks, and the bundle a rank holds after
 * the first phase, are contiguous, and there they stay (tp_ag_where): a
 * copy into TP_DATA's order would move the whole result once more, which
 * at large blocks costs a real MPI as much as a good part of the network
 * time, and the model counts no copies. Bruck stages in TP_DATA. */
static void gen_grid(struct gen *g, const struct tc_comm *c, const struct tp_args *a, int r)
{
	int P = c->size, m = c->gridm, nl = m ? P / m : 0, p = c->fpos[r], L = m ? p / m : 0, i = m ? p % m : 0;
	long long B = a->count;
	if (!m) {
		g->fail = 1;
		return;
	}
	copy_(g, TP_TMP, ((long long)i * nl + L) * B, TP_DATA, (long long)p * B, B);
	ag_run(g, (enum tp_alg)a->alg,
	       &(struct agx){ .m = c->fab + i, .ms = m, .n = nl, .i = L, .u0 = (long long)i * nl, .uw = 1, .B = B,
			      .at = TP_TMP, .stage = TP_DATA });
	ag_run(g, (enum tp_alg)a->alg,
	       &(struct agx){ .m = c->fab + L * m, .ms = 1, .n = m, .i = i, .u0 = 0, .uw = nl, .B = B, .at = TP_TMP,
			      .stage = TP_DATA });
}

int tp_ag_where(const struct tc_comm *c, const struct tp_args *a, int q, long long *off)
{
	if (a->hier == TP_GRID && c->gridm) {
		int m = c->gridm, nl = c->size / m;
		*off = ((long long)(q % m) * nl + q / m) * a->count;
		return TP_TMP;
	}
	*off = (long long)q * a->count;
	return TP_DATA;
}

int tp_grid(const struct tc_comm *c)
{
	int P = c->size, nl = c->nleaves;
	if (nl < 2 || !c->fab || !c->leaf_of || P % nl || P / nl < 2)
		return 0;
	int m = P / nl;
	/* nl runs of m places, each of one leaf, over nl leaves: each run is
	 * a whole leaf (the fabric's order keeps a leaf's ranks together, so
	 * this fails only where leaves differ in size) */
	for (int p = 0; p < P; p++)
		if (c->leaf_of[c->fab[p]] != c->leaf_of[c->fab[p - p % m]])
			return 0;
	return m;
}

/* Allgather over the fabric's order, or each host's blocks gathered at its
 * leader (all received at once), the leaders' allgather of hosts' blocks,
 * the whole result from the leader to its ranks at once, or the grid. */
static void gen_allgather(struct gen *g, const struct tc_comm *c, const struct tp_args *a, int r)
{
	long long B = a->count;
	enum tp_alg alg = (enum tp_alg)a->alg;
	if (a->hier == TP_GRID) {
		gen_grid(g, c, a, r);
		return;
	}
	if (!a->hier) {
		ag_run(g, alg, &(struct agx){ .m = c->fab, .ms = 1, .n = c->size, .i = c->fpos[r], .uw = 1, .B = B,
					      .at = TP_DATA, .stage = TP_TMP });
		return;
	}
	int h = c->hostof[r], f0 = c->fhfirst[h], hs = c->fhfirst[h + 1] - f0, j = c->fpos[r] - f0;
	const int *mem = c->fab + f0;
	if (j) {
		send_(g, mem[0], TP_DATA, (long long)(f0 + j) * B, B);
		recv_(g, mem[0], TP_DATA, 0, (long long)c->size * B);
		return;
	}
	int first = g->nposts;
	for (int x = 1; x < hs; x++)
		irecv(g, mem[x], TP_DATA, (long long)(f0 + x) * B, B);
	for (int x = 1; x < hs; x++)
		wait_(g, first + x - 1);
	ag_run(g, alg, &(struct agx){ .m = c->hlead, .U = c->fhfirst, .ms = 1, .n = c->nfh, .i = h, .B = B,
				      .at = TP_DATA, .stage = TP_TMP });
	first = g->nposts;
	for (int x = 1; x < hs; x++)
		isend(g, mem[x], TP_DATA, 0, (long long)c->size * B);
	for (int x = 1; x < hs; x++)
		wait_(g, first + x - 1);
}

int tp_gen(const struct tc_comm *c, const struct tp_args *a, const struct tp_tree *tree, int r, struct tp_op **ops,
	   int *n, int *cap)
{
	struct gen g = { ops, n, cap, 0, 0, a->sync };
	*n = 0;
	switch (a->alg) {
	case TP_A_TREE_BCAST: gen_tree_bcast(&g, a, tree, r); break;
	case TP_A_SCAG_BCAST: gen_scag_bcast(&g, a, tree, r); break;
	case TP_A_TREE_GATHER: gen_tree_gather(&g, a, tree, r); break;
	case TP_A_TREE_SCATTER: gen_tree_scatter(&g, a, tree, r); break;
	case TP_A_RDB_ALLRED:
	case TP_A_RAB_ALLRED:
	case TP_A_RING_ALLRED: gen_allreduce(&g, c, a, r); break;
	default: gen_allgather(&g, c, a, r); break;
	}
	return g.fail ? -1 : 0;
}

/* ---- every rank's ops for the cost model ------------------------------------------ */

int tp_prog(const struct tc_comm *c, const struct tp_args *a, double esize, struct mprog *mp)
{
	struct tp_tree t = { 0 };
	struct tp_op *ops = NULL;
	int n = 0, cap = 0, rc = 0;
	uint32_t *req = NULL;
	int rqcap = 0;
	int rooted = a->alg <= TP_A_TREE_SCATTER;
	if (rooted) {
		struct tp_args ta = *a;
		if (a->alg == TP_A_SCAG_BCAST)
			ta.shape = TP_T_CHAIN;
		if (tp_tree_alloc(&t, c->size) || tp_tree_build(c, &ta, &t))
			rc = -1;
	}
	for (int r = 0; !rc && r < c->size; r++) {
		if (tp_gen(c, a, rooted ? &t : NULL, r, &ops, &n, &cap)) {
			rc = -1;
			break;
		}
		int np = 0;
		for (int i = 0; i < n; i++) {
			const struct tp_op *o = &ops[i];
			if (o->kind == TP_SEND || o->kind == TP_SSEND || o->kind == TP_RECV) {
				if (np == rqcap) {
					int nc = rqcap ? 2 * rqcap : 64;
					uint32_t *q = realloc(req, (size_t)nc * sizeof(*q));
					if (!q) {
						rc = -1;
						break;
					}
					req = q;
					rqcap = nc;
				}
				double b = (double)o->n * esize;
				req[np++] = o->kind == TP_SEND	  ? mp_isend(mp, (uint32_t)r, (uint32_t)o->peer, b)
					    : o->kind == TP_SSEND ? mp_issend(mp, (uint32_t)r, (uint32_t)o->peer, b)
								  : mp_irecv(mp, (uint32_t)r, (uint32_t)o->peer, b);
			} else if (o->kind == TP_WAIT) {
				if (o->peer < 0 || o->peer >= np) {
					rc = -1;
					break;
				}
				mp_wait(mp, (uint32_t)r, req[o->peer]);
			}
		}
	}
	free(ops);
	free(req);
	tp_tree_free(&t);
	return rc;
}

/* ---- running this rank's ops ------------------------------------------------------ */

/* A typed copy that writes only the type's bytes (a pair type's padding in
 * the caller's buffer stays as it was, as the MPI's own leaves it). */
static int typed_copy(const struct tc_comm *c, const char *from, char *to, long long n, MPI_Datatype dt)
{
	if (from == to || n == 0)
		return MPI_SUCCESS;
	return PMPI_Sendrecv(from, (int)n, dt, c->rank, TP_TAG + 1, to, (int)n, dt, c->rank, TP_TAG + 1, c->pcomm,
			     MPI_STATUS_IGNORE);
}

int tp_run(const struct tc_comm *c, const struct tp_op *ops, int n, MPI_Request *rq, char *const *base,
	   MPI_Datatype dt, MPI_Aint ext, MPI_Op op)
{
	int rc = MPI_SUCCESS, np = 0;
	for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
		const struct tp_op *o = &ops[i];
		char *p = base[o->buf] + o->off * ext;
		switch (o->kind) {
		case TP_SEND:
			rc = PMPI_Isend(p, (int)o->n, dt, o->peer, TP_TAG, c->pcomm, &rq[np++]);
			break;
		case TP_SSEND:
			rc = PMPI_Issend(p, (int)o->n, dt, o->peer, TP_TAG, c->pcomm, &rq[np++]);
			break;
		case TP_RECV:
			rc = PMPI_Irecv(p, (int)o->n, dt, o->peer, TP_TAG, c->pcomm, &rq[np++]);
			break;
		case TP_WAIT:
			rc = PMPI_Wait(&rq[o->peer], MPI_STATUS_IGNORE);
			break;
		case TP_REDUCE:
			rc = o->n ? PMPI_Reduce_local(base[o->sbuf] + o->soff * ext, p, (int)o->n, dt, op) : MPI_SUCCESS;
			break;
		default:
			if (dt == MPI_BYTE)
				memmove(p, base[o->sbuf] + o->soff, (size_t)o->n);
			else
				rc = typed_copy(c, base[o->sbuf] + o->soff * ext, p, o->n, dt);
			break;
		}
	}
	/* an error leaves requests posted: wait for them before the buffers go */
	for (int i = 0; rc != MPI_SUCCESS && i < np; i++)
		if (rq[i] != MPI_REQUEST_NULL)
			PMPI_Wait(&rq[i], MPI_STATUS_IGNORE);
	return rc;
}
