/*
 * allgather.c - MPI_Allgather and MPI_Allgatherv as a ring in the order of
 * the fabric's routing (seed 002, the cyclic shift; docs/collectives.md,
 * "Allgather").
 *
 * In step s every rank passes on the block it received in step s-1 to the
 * next rank of the ring: P-1 steps, each a shift by one. A shift by one is
 * contention-free on a fat tree's up*-down* routes when the ring follows
 * the order the routing numbers the hosts in (under ftree and D-mod-K the
 * order of hosts on the leaves): then each leaf sends one flow up and
 * receives one down per step, and each host's cable carries one flow each
 * way. In rank order, a job placed cyclically or on a fragmented
 * allocation sends every rank's flow off its leaf at once, piling them on
 * the leaf's few uplinks of an over-subscribed tree. The ring's order is
 * the leaves by their first host in the platform (topod's host order), the
 * hosts by their place in it, a host's ranks together: several ranks of a
 * host pass blocks through shared memory, and only one flow a step leaves
 * and enters the host.
 *
 * Blocks travel as their type signature's bytes (MPI_Pack; in a
 * homogeneous job the same on every rank), straight in the receive buffer
 * where the receive type is one dense run, else in a packed copy unpacked
 * at the end with the receive type: results are byte-equal to the MPI's.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define TC_AG_TAG 7719 /* on the private communicator: no user message can match */

struct rkey {
	int leaf, host, rank;
};

static int cmp_rkey(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;
	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

void tc_ring_order(const struct tc_comm *c, int *order)
{
	const struct tc_topo *t = &tc_g.topo;
	int n = c->size, have = c->world && t->nworld && t->pos_of_host;
	struct rkey *k = malloc((size_t)n * sizeof(*k));
	int *first = malloc((size_t)(c->nleaves > 0 ? c->nleaves : 1) * sizeof(int));
	if (!k || !first) {
		/* rank order: a valid ring, whatever its speed */
		for (int r = 0; r < n; r++)
			order[r] = r;
		free(k);
		free(first);
		return;
	}
	for (int L = 0; L < c->nleaves; L++)
		first[L] = INT_MAX;
	for (int r = 0; r < n; r++) {
		int h = have ? t->host_of[c->world[r]] : r, pos = have ? t->pos_of_host[h] : r;
		/* a host's place: its platform index, then (big jobs, one
		 * platform host per leaf) its first world rank's host index */
		k[r] = (struct rkey){ 0, have ? pos * 4096 + (h & 4095) : r, r };
		if (c->leaf_of && k[r].host < first[c->leaf_of[r]])
			first[c->leaf_of[r]] = k[r].host;
	}
	for (int r = 0; r < n; r++)
		k[r].leaf = c->leaf_of ? first[c->leaf_of[r]] : 0;
	qsort(k, (size_t)n, sizeof(*k), cmp_rkey);
	for (int i = 0; i < n; i++)
		order[i] = k[i].rank;
	free(k);
	free(first);
}

/* A type whose count elements are one dense run of `bytes` from the
 * buffer, in MPI_Pack's order (tc_type_in_order). */
static int dense(int count, MPI_Datatype dt, long long bytes)
{
	MPI_Aint lb, ext, tlb, text;
	if (count == 0)
		return 1;
	if (!tc_type_in_order(dt) || PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS || tlb != 0 ||
	    PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS)
		return 0;
	return count == 1 ? text == bytes : lb == 0 && ext == text && (long long)ext * count == bytes;
}

/* Where the blocks lie as bytes: in rbuf (dense) or in a packed copy. */
struct ring {
	char *base;            /* rbuf or the copy */
	MPI_Aint *off;         /* [size] block r's offset from base */
	int *len;              /* [size] block r's bytes */
	int *order, me;        /* the ring, my place in it */
};

static int ring_steps(struct tc_comm *c, const struct ring *g)
{
	int n = c->size, rc = MPI_SUCCESS;
	int right = g->order[(g->me + 1) % n], left = g->order[(g->me + n - 1) % n];
	for (int s = 0; s + 1 < n && rc == MPI_SUCCESS; s++) {
		int sb = g->order[(g->me + n - s) % n], rb = g->order[(g->me + 2 * n - s - 1) % n];
		rc = PMPI_Sendrecv(g->base + g->off[sb], g->len[sb], MPI_BYTE, right, TC_AG_TAG, g->base + g->off[rb],
				   g->len[rb], MPI_BYTE, left, TC_AG_TAG, c->pcomm, MPI_STATUS_IGNORE);
	}
	return rc;
}

/* My own block into its place: packed from sbuf, or (in place) from rbuf. */
static int place_mine(struct tc_comm *c, const struct ring *g, const void *sbuf, int scount, MPI_Datatype st,
		      const void *mine_in_rbuf, int rcount, MPI_Datatype rt, int direct)
{
	int pos = 0, rc = MPI_SUCCESS, me = c->rank;
	if (sbuf == MPI_IN_PLACE) {
		if (!direct)
			rc = PMPI_Pack(mine_in_rbuf, rcount, rt, g->base + g->off[me], g->len[me], &pos, c->pcomm);
		else
			pos = g->len[me];
	} else {
		rc = PMPI_Pack(sbuf, scount, st, g->base + g->off[me], g->len[me], &pos, c->pcomm);
	}
	return rc == MPI_SUCCESS && pos == g->len[me] ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

/* Every rank says whether it can go on: all run the ring, or none. */
static int all_ok(const struct tc_comm *c, int ok)
{
	int all = 0;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->pcomm);
	return all;
}

int tc_allgather_ring(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		      const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up)
{
	int n = c->size, tsz = 0, direct = 1, rc = MPI_SUCCESS;
	*give_up = 0;
	MPI_Aint lb, ext;
	PMPI_Type_size(rt, &tsz);
	PMPI_Type_get_extent(rt, &lb, &ext);
	struct ring g = { 0 };
	g.off = malloc((size_t)n * sizeof(*g.off));
	g.len = malloc((size_t)n * sizeof(int));
	g.order = malloc((size_t)n * sizeof(int));
	size_t total = 0;
	for (int r = 0; g.len && r < n; r++) {
		/* wrap.c checked each block's bytes fit an int */
		g.len[r] = rcounts[r] * tsz;
		direct &= dense(rcounts[r], rt, g.len[r]);
		total += (size_t)g.len[r];
	}
	if (g.off && g.len && g.order) {
		size_t at = 0;
		for (int r = 0; r < n; r++) {
			g.off[r] = direct ? (MPI_Aint)displs[r] * ext : (MPI_Aint)at;
			at += (size_t)g.len[r];
		}
		g.base = direct ? rbuf : malloc(total ? total : 1);
		tc_ring_order(c, g.order);
		while (g.order[g.me] != c->rank)
			g.me++;
	}
	const void *mine = (const char *)rbuf + (MPI_Aint)displs[c->rank] * ext;
	if (!g.off || !g.len || !g.order || !g.base)
		rc = MPI_ERR_NO_MEM;
	else
		rc = place_mine(c, &g, sbuf, scount, st, mine, rcounts[c->rank], rt, direct);
	if (!all_ok(c, rc == MPI_SUCCESS)) {
		if (!direct)
			free(g.base);
		free(g.off);
		free(g.len);
		free(g.order);
		*give_up = 1;
		return MPI_SUCCESS;
	}
	rc = ring_steps(c, &g);
	for (int r = 0; !direct && rc == MPI_SUCCESS && r < n; r++) {
		int pos = 0;
		if (r == c->rank && sbuf == MPI_IN_PLACE)
			continue;
		rc = PMPI_Unpack(g.base + g.off[r], g.len[r], &pos, (char *)rbuf + (MPI_Aint)displs[r] * ext, rcounts[r],
				 rt, c->pcomm);
	}
	if (!direct)
		free(g.base);
	free(g.off);
	free(g.len);
	free(g.order);
	return rc;
}
