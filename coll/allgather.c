/* SPDX-License-Identifier: BSD-3-Clause */
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
 *
 * tc_allgather_sched runs topod's allgather schedule (kPrefix, kShift;
 * sched.c asks and checks it) over the same layout of blocks.
 *
 * tc_allgather_grouped (below) gathers each host's or leaf's blocks at one
 * rank first, and runs the ring (or the MPI's own) among those.
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

int tc_ring_order(const struct tc_comm *c, int *order)
{
	const struct tc_topo *t = &tc_g.topo;
	int n = c->size, have = c->world && t->nworld && t->pos_of_host;
	struct rkey *k = malloc((size_t)n * sizeof(*k));
	int *first = malloc((size_t)(c->nleaves > 0 ? c->nleaves : 1) * sizeof(int));
	if (!k || !first) {
		/* No fallback to rank order here: the other ranks would use the
		 * fabric's, and one ring with two orders hangs or mixes blocks. */
		free(k);
		free(first);
		return -1;
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
	return 0;
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

/* topod's schedule (sched.c, checked there): per step, this rank's
 * receives and sends of the named blocks at once. Two flows between the
 * same ranks in a step are posted in the schedule's order on both sides,
 * so they match in that order. */
static int sched_steps(struct tc_comm *c, const struct ring *g, const struct tc_agsched *s)
{
	MPI_Request rq[2 * TC_SCHED_MULTI];
	MPI_Status sts[2 * TC_SCHED_MULTI];
	int rc = MPI_SUCCESS;
	for (int i = 0; i < s->nsteps && rc == MPI_SUCCESS; i++) {
		int nq = 0, w;
		for (int j = s->roff[i]; j < s->roff[i + 1] && rc == MPI_SUCCESS; j++) {
			int b = s->rblk[j];
			rc = PMPI_Irecv(g->base + g->off[b], g->len[b], MPI_BYTE, s->from[j], TC_AG_TAG, c->pcomm, &rq[nq]);
			nq += rc == MPI_SUCCESS; /* a failed post set no request to wait on */
		}
		for (int j = s->soff[i]; j < s->soff[i + 1] && rc == MPI_SUCCESS; j++) {
			int b = s->sblk[j];
			rc = PMPI_Isend(g->base + g->off[b], g->len[b], MPI_BYTE, s->to[j], TC_AG_TAG, c->pcomm, &rq[nq]);
			nq += rc == MPI_SUCCESS;
		}
		w = nq ? PMPI_Waitall(nq, rq, sts) : MPI_SUCCESS;
		rc = rc == MPI_SUCCESS ? w : rc;
	}
	return rc;
}

/* My own block packed into `to` (len bytes): from sbuf, or (in place)
 * from rbuf; already there where in place and direct. */
static int pack_mine(struct tc_comm *c, char *to, int len, const void *sbuf, int scount, MPI_Datatype st,
		     const void *mine_in_rbuf, int rcount, MPI_Datatype rt, int direct)
{
	int pos = 0, rc = MPI_SUCCESS;
	if (sbuf == MPI_IN_PLACE) {
		if (!direct)
			rc = PMPI_Pack(mine_in_rbuf, rcount, rt, to, len, &pos, c->pcomm);
		else
			pos = len;
	} else {
		rc = PMPI_Pack(sbuf, scount, st, to, len, &pos, c->pcomm);
	}
	return rc == MPI_SUCCESS && pos == len ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

static int place_mine(struct tc_comm *c, const struct ring *g, const void *sbuf, int scount, MPI_Datatype st,
		      const void *mine_in_rbuf, int rcount, MPI_Datatype rt, int direct)
{
	return pack_mine(c, g->base + g->off[c->rank], g->len[c->rank], sbuf, scount, st, mine_in_rbuf, rcount, rt,
			 direct);
}

/* Every rank says whether it can go on: all run the ring, or none. */
static int all_ok(const struct tc_comm *c, int ok)
{
	int all = 0;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->pcomm);
	return all;
}

/* The ring (s NULL) or topod's schedule s, over the blocks as bytes. */
static int blocks_run(struct tc_comm *c, const struct tc_agsched *s, const void *sbuf, int scount, MPI_Datatype st,
		      void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up)
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
		direct &= tc_type_dense(rcounts[r], rt, g.len[r]);
		total += (size_t)g.len[r];
	}
	if (g.off && g.len && g.order) {
		size_t at = 0;
		for (int r = 0; r < n; r++) {
			g.off[r] = direct ? (MPI_Aint)displs[r] * ext : (MPI_Aint)at;
			at += (size_t)g.len[r];
		}
		g.base = direct ? rbuf : malloc(total ? total : 1);
		/* the fabric's order, made when the communicator was (plan_state) */
		memcpy(g.order, c->fab, (size_t)n * sizeof(int));
		while (!s && g.order[g.me] != c->rank)
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
	rc = s ? sched_steps(c, &g, s) : ring_steps(c, &g);
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

int tc_allgather_ring(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		      const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up)
{
	return blocks_run(c, NULL, sbuf, scount, st, rbuf, rcounts, displs, rt, give_up);
}

int tc_allgather_sched(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		       const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up)
{
	return blocks_run(c, c->agsched, sbuf, scount, st, rbuf, rcounts, displs, rt, give_up);
}

/*
 * Gathered at group leaders (TC_V_HOSTS, TC_V_LEAVES): each group's ranks
 * hand their blocks to its leader (MPI_Gatherv on the group's
 * communicator: shared memory within a host), the leaders exchange whole
 * groups' blocks, and each leader hands the whole result to its group
 * (MPI_Bcast). Hosts: the leaders' ring in the fabric's order, hosts-1
 * steps of a host's blocks where the plain ring has P-1 of one block, a
 * host's cable carrying one message a step either way (Kumar and Kalé
 * 2004's shift, on the hosts). Leaves: the MPI's own Allgatherv among the
 * leaf leaders (recursive doubling, Bruck) on one rank per leaf, for short
 * blocks whose cost is latencies (Subramoni 2013's leaf leaders, hier.c's).
 * Every rank holds the blocks packed in the groups' order, group by group,
 * and unpacks them with its receive type at the end. Not straight into a
 * member's buffer with a type over its blocks: the MPIs' and SMPI's
 * segmented Bcasts cut a message by elements, a count of bytes at the
 * leader against one such element at a member, and wait for each other
 * (SMPI at 1 MiB per rank).
 */
struct grouped {
	int ng, g, lead;       /* groups, mine, whether I lead it */
	const int *order;      /* [size] ranks in the buffer's order */
	const int *first;      /* [ng + 1] group g's ranks at order[first[g] .. first[g + 1]) */
	MPI_Comm member, leaders; /* my group (leader 0); the leaders (group g at g) or MPI_COMM_NULL */
	int *gcnt, *gdsp;      /* [ng] a group's bytes and offset */
	int *mcnt, *mdsp;      /* [my group's size] its members' bytes and offsets from the group's */
	char *base;            /* the packed blocks */
	char *mine;            /* my block, packed in its place */
	MPI_Aint *off;         /* [size] rank r's block in the packed order */
	int *len;              /* [size] */
};

/* The leaders' ring in group order: in step s, group g - s goes right. */
static int leaders_ring(const struct grouped *x)
{
	int rc = MPI_SUCCESS, n = x->ng, right = (x->g + 1) % n, left = (x->g + n - 1) % n;
	for (int s = 0; s + 1 < n && rc == MPI_SUCCESS; s++) {
		int sg = (x->g + n - s) % n, rg = (x->g + 2 * n - s - 1) % n;
		rc = PMPI_Sendrecv(x->base + x->gdsp[sg], x->gcnt[sg], MPI_BYTE, right, TC_AG_TAG, x->base + x->gdsp[rg],
				   x->gcnt[rg], MPI_BYTE, left, TC_AG_TAG, x->leaders, MPI_STATUS_IGNORE);
	}
	return rc;
}

/* Offsets in the groups' order; my group's members' counts and offsets. */
static void grouped_layout(struct tc_comm *c, struct grouped *x, const int *rcounts, int tsz)
{
	int at = 0;
	for (int g = 0; g < x->ng; g++) {
		x->gdsp[g] = at;
		for (int i = x->first[g]; i < x->first[g + 1]; i++) {
			int r = x->order[i];
			x->len[r] = rcounts[r] * tsz;
			x->off[r] = at;
			at += x->len[r];
			if (r == c->rank) {
				x->g = g;
				x->lead = i == x->first[g];
			}
		}
		x->gcnt[g] = at - x->gdsp[g];
	}
	for (int i = x->first[x->g]; i < x->first[x->g + 1]; i++) {
		int r = x->order[i];
		x->mcnt[i - x->first[x->g]] = x->len[r];
		x->mdsp[i - x->first[x->g]] = (int)(x->off[r] - x->gdsp[x->g]);
	}
}

static int grouped_steps(struct tc_comm *c, struct grouped *x, int total)
{
	int rc;
	/* the leader's own block is first in its group's, already in place */
	rc = PMPI_Gatherv(x->lead ? MPI_IN_PLACE : x->mine, x->len[c->rank], MPI_BYTE, x->base + x->gdsp[x->g], x->mcnt,
			  x->mdsp, MPI_BYTE, 0, x->member);
	if (rc == MPI_SUCCESS && x->lead)
		rc = x->leaders == c->hleadcomm ? leaders_ring(x)
					      : PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x->base, x->gcnt,
								x->gdsp, MPI_BYTE, x->leaders);
	if (rc == MPI_SUCCESS)
		rc = PMPI_Bcast(x->base, total, MPI_BYTE, 0, x->member);
	return rc;
}

int tc_allgather_grouped(struct tc_comm *c, enum tc_variant v, const void *sbuf, int scount, MPI_Datatype st,
			 void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rt, int *give_up)
{
	int n = c->size, tsz = 0, hosts = v == TC_V_HOSTS, rc;
	MPI_Aint lb, ext;
	*give_up = 0;
	tc_group_comms(c);
	PMPI_Type_size(rt, &tsz);
	PMPI_Type_get_extent(rt, &lb, &ext);
	struct grouped x = { .ng = hosts ? c->nhosts : c->nleaves, .order = hosts ? c->horder : c->lorder,
			     .first = hosts ? c->hfirst : c->lfirst, .member = hosts ? c->hostcomm : c->leafcomm,
			     .leaders = hosts ? c->hleadcomm : c->leadcomm };
	/* the communicator's scratch: made where the ranks agree it exists */
	x.gcnt = c->gscratch;
	x.gdsp = x.gcnt + x.ng;
	x.mcnt = x.gdsp + x.ng;
	x.mdsp = x.mcnt + n;
	x.off = malloc((size_t)n * sizeof(*x.off));
	x.len = malloc((size_t)n * sizeof(int));
	long long total = 0;
	for (int r = 0; r < n; r++)
		total += (long long)rcounts[r] * tsz;   /* wrap.c: within an int */
	rc = x.off && x.len ? MPI_SUCCESS : MPI_ERR_NO_MEM;
	if (rc == MPI_SUCCESS) {
		grouped_layout(c, &x, rcounts, tsz);
		x.base = malloc(total ? (size_t)total : 1);
		x.mine = x.base ? x.base + x.off[c->rank] : NULL;
		if (!x.base)
			rc = MPI_ERR_NO_MEM;
	}
	if (rc == MPI_SUCCESS)
		rc = pack_mine(c, x.mine, x.len[c->rank], sbuf, scount, st,
			       (const char *)rbuf + (MPI_Aint)displs[c->rank] * ext, rcounts[c->rank], rt, 0);
	if (!all_ok(c, rc == MPI_SUCCESS)) {
		*give_up = 1;
		rc = MPI_SUCCESS;
	} else {
		rc = grouped_steps(c, &x, (int)total);
	}
	for (int r = 0; !*give_up && rc == MPI_SUCCESS && r < n; r++) {
		int pos = 0;
		if (r == c->rank && sbuf == MPI_IN_PLACE)
			continue;
		rc = PMPI_Unpack(x.base + x.off[r], x.len[r], &pos, (char *)rbuf + (MPI_Aint)displs[r] * ext, rcounts[r],
				 rt, c->pcomm);
	}
	free(x.base);
	free(x.off);
	free(x.len);
	return rc;
}
