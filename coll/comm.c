/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c - what topocoll knows about a communicator, made on its first
 * collective and kept as an MPI attribute (freed with the communicator).
 *
 * No question to topod here: every rank already knows its leaf from
 * MPI_Init (init.c), so the ranks of any communicator, however it was made
 * (split, dup, create, from a group), find their leaf IDs in the world's
 * (an allgather only for ranks outside MPI_COMM_WORLD) and number the
 * leaves alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "plan.h"

struct idrank {
	uint64_t id;
	int rank;
};

static int cmp_idrank(const void *a, const void *b)
{
	const struct idrank *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Leaves numbered by their lowest rank, so leaf L's leader is leader[L]
 * and the leaders' communicator (split with key L) puts it at rank L. */
static int number_leaves(struct tc_comm *c, const uint64_t *ids)
{
	int n = c->size;
	struct idrank *v = malloc((size_t)n * sizeof(*v));
	int *first = malloc((size_t)n * sizeof(*first)), *order = malloc((size_t)n * sizeof(*order));
	c->leaf_of = malloc((size_t)n * sizeof(*c->leaf_of));
	if (!v || !first || !order || !c->leaf_of) {
		free(v);
		free(first);
		free(order);
		return -1;
	}
	for (int r = 0; r < n; r++)
		v[r] = (struct idrank){ ids[r], r };
	qsort(v, (size_t)n, sizeof(*v), cmp_idrank);
	/* group g (by ID) has lowest rank v[start].rank: first[rank] = group */
	int ng = 0;
	for (int i = 0; i < n; i++) {
		if (i == 0 || v[i].id != v[i - 1].id)
			order[ng++] = v[i].rank;      /* lowest rank of each group */
		first[v[i].rank] = ng - 1;
	}
	/* renumber groups by their lowest rank */
	int *rank_of_group = order, *leaf_of_group = malloc((size_t)ng * sizeof(int));
	if (!leaf_of_group) {
		free(v);
		free(first);
		free(order);
		return -1;
	}
	int L = 0;
	for (int r = 0; r < n; r++)
		if (rank_of_group[first[r]] == r)
			leaf_of_group[first[r]] = L++;
	c->nleaves = ng;
	c->leader = malloc((size_t)ng * sizeof(int));
	c->leaf_size = calloc((size_t)ng, sizeof(int));
	int ok = c->leader && c->leaf_size;
	for (int r = 0; ok && r < n; r++) {
		int l = leaf_of_group[first[r]];
		c->leaf_of[r] = l;
		if (!c->leaf_size[l]++)
			c->leader[l] = r;
		if (c->leaf_size[l] > c->maxleaf)
			c->maxleaf = c->leaf_size[l];
	}
	free(v);
	free(first);
	free(order);
	free(leaf_of_group);
	return ok ? 0 : -1;
}

/* Each rank's MPI_COMM_WORLD rank, for the delays between them and its
 * host's name (NULL when memory is short: no prediction, no schedule). */
static void world_ranks(struct tc_comm *c)
{
	MPI_Group g, wg;
	int *mine = malloc((size_t)c->size * sizeof(int)), nw = 0;
	PMPI_Comm_size(MPI_COMM_WORLD, &nw);
	c->world = malloc((size_t)c->size * sizeof(int));
	if (mine && c->world && PMPI_Comm_group(c->ucomm, &g) == MPI_SUCCESS) {
		if (PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS) {
			for (int r = 0; r < c->size; r++)
				mine[r] = r;
			PMPI_Group_translate_ranks(g, c->size, mine, wg, c->world);
			PMPI_Group_free(&wg);
		}
		PMPI_Group_free(&g);
	}
	for (int r = 0; c->world && r < c->size; r++)
		if (c->world[r] < 0 || c->world[r] >= nw) {
			free(c->world);
			c->world = NULL;
		}
	free(mine);
}

/* What collectives would otherwise allocate in a call, made here where the
 * ranks agree on failure: a failed malloc inside a call would send one rank
 * to the MPI (or out of a split) and leave the others waiting. -1: out of
 * memory (tc_comm_free frees what was made). */
/* The leaves' blocks in leaf order, members in rank order (hier.c's order:
 * leaf L at rank L of the leaders' communicator, its leader first). */
static void leaf_groups(struct tc_comm *c)
{
	int k = 0;
	for (int L = 0; L < c->nleaves; L++) {
		c->lfirst[L] = k;
		for (int r = 0; r < c->size; r++)
			if (c->leaf_of[r] == L)
				c->lorder[k++] = r;
	}
	c->lfirst[c->nleaves] = k;
}

/* The hosts in the ring's order (allgather.c), each host's ranks together
 * in rank order, its leader the lowest. Hosts are known from the delays
 * (every rank holds them alike); without them, or with no host holding two
 * ranks, nhosts stays 0 and the host variant is not offered. -1: memory. */
static int host_groups(struct tc_comm *c)
{
	const struct tc_topo *t = &tc_g.topo;
	int n = c->size;
	if (!c->world || !t->nworld || !t->host_of)
		return 0;
	int *ring = malloc((size_t)n * sizeof(int)), *local = malloc((size_t)t->nhosts * sizeof(int));
	int *cnt = calloc((size_t)n + 1, sizeof(int));
	if (!ring || !local || !cnt) {
		free(ring);
		free(local);
		free(cnt);
		return -1;
	}
	for (int h = 0; h < t->nhosts; h++)
		local[h] = -1;
	if (tc_ring_order(c, ring)) {
		free(ring);
		free(local);
		free(cnt);
		return -1;
	}
	/* hosts numbered by their first rank in the ring: its order */
	int nh = 0;
	for (int i = 0; i < n; i++) {
		int h = t->host_of[c->world[ring[i]]];
		if (local[h] < 0)
			local[h] = nh++;
		cnt[local[h] + 1]++;
	}
	for (int g = 0; g < nh; g++)
		cnt[g + 1] += cnt[g];
	memcpy(c->hfirst, cnt, ((size_t)nh + 1) * sizeof(int));
	c->maxhost = 0;
	for (int g = 0; g < nh; g++)
		if (cnt[g + 1] - cnt[g] > c->maxhost)
			c->maxhost = cnt[g + 1] - cnt[g];
	/* within a host, rank order: ranks are in rank order in the ring */
	for (int r = 0; r < n; r++)
		c->horder[cnt[local[t->host_of[c->world[r]]]]++] = r;
	c->nhosts = nh >= 2 && c->maxhost >= 2 ? nh : 0;
	free(ring);
	free(local);
	free(cnt);
	return 0;
}

static int make_scratch(struct tc_comm *c)
{
	size_t n = (size_t)c->nleaves;
	size_t g = (size_t)(c->size > c->nleaves ? c->size : c->nleaves);
	c->horder = malloc((size_t)c->size * sizeof(int));
	c->hfirst = malloc(((size_t)c->size + 1) * sizeof(int));
	c->lorder = malloc((size_t)c->size * sizeof(int));
	c->lfirst = malloc((n + 1) * sizeof(int));
	c->gscratch = malloc((2 * (size_t)c->size + 2 * g) * sizeof(int));
	c->agcd = malloc(2 * (size_t)c->size * sizeof(int));
	c->blen = malloc((size_t)c->size * sizeof(long long));
	if (!c->agcd || !c->blen || !c->horder || !c->hfirst || !c->lorder ||
	    !c->lfirst || !c->gscratch)
		return -1;
	leaf_groups(c);
	return host_groups(c);
}

/* The host variant's communicators: my host's ranks, and the hosts'
 * leaders in the ring's order (host h at rank h), for Allgather(v). */
static void host_comms(struct tc_comm *c)
{
	int h = -1, lead = 0;
	if (!c->nhosts)
		return;
	for (int g = 0; g < c->nhosts && h < 0; g++)
		for (int i = c->hfirst[g]; i < c->hfirst[g + 1]; i++)
			if (c->horder[i] == c->rank) {
				h = g;
				lead = i == c->hfirst[g];
			}
	PMPI_Comm_split(c->pcomm, h, c->rank, &c->hostcomm);
	PMPI_Comm_split(c->pcomm, lead ? 0 : MPI_UNDEFINED, h, &c->hleadcomm);
}

void tc_group_comms(struct tc_comm *c)
{
	if (c->group_comms)
		return;
	c->group_comms = 1;
	PMPI_Comm_split(c->pcomm, c->leaf_of[c->rank], c->rank, &c->leafcomm);
	int lead = c->leader[c->myleaf] == c->rank;
	PMPI_Comm_split(c->pcomm, lead ? 0 : MPI_UNDEFINED, c->myleaf, &c->leadcomm);
	host_comms(c);
}

/* The fabric's order and its hosts (plan.c), the plans' tree and a first
 * room (hier.c grows it where the ranks agree). Hosts from the delays;
 * without them each rank counts as its own host. -1: out of memory. */
static int plan_state(struct tc_comm *c)
{
	const struct tc_topo *t = &tc_g.topo;
	int n = c->size, have = c->world && t->nworld && t->host_of;
	c->fab = malloc((size_t)n * sizeof(int));
	c->fpos = malloc((size_t)n * sizeof(int));
	c->hostof = malloc((size_t)n * sizeof(int));
	c->fhfirst = malloc(((size_t)n + 1) * sizeof(int));
	c->hlead = malloc((size_t)n * sizeof(int));
	c->ident = malloc((size_t)n * sizeof(int));
	c->tree = calloc(1, sizeof(*c->tree));
	if (!c->fab || !c->fpos || !c->hostof || !c->fhfirst || !c->hlead || !c->ident || !c->tree ||
	    tp_tree_alloc(c->tree, n))
		return -1;
	if (tc_ring_order(c, c->fab))
		return -1;
	c->nfh = 0;
	c->maxfh = 0;
	for (int i = 0; i < n; i++) {
		int r = c->fab[i];
		c->fpos[r] = i;
		c->ident[r] = r;
		int same = i > 0 && (have ? t->host_of[c->world[r]] == t->host_of[c->world[c->fab[i - 1]]] : 0);
		if (!same) {
			c->fhfirst[c->nfh] = i;
			c->hlead[c->nfh++] = r;
		}
		c->hostof[r] = c->nfh - 1;
	}
	c->fhfirst[c->nfh] = n;
	for (int h = 0; h < c->nfh; h++)
		if (c->fhfirst[h + 1] - c->fhfirst[h] > c->maxfh)
			c->maxfh = c->fhfirst[h + 1] - c->fhfirst[h];
	c->gridm = tp_grid(c);
	return 0;
}

int tc_private_comm(struct tc_comm *c)
{
	if (c->pcomm != MPI_COMM_NULL)
		return 1;
	/* A split, not a dup: a dup would run every keyval's copy callback
	 * and hand other libraries' attributes to our private communicator. */
	int bad = PMPI_Comm_split(c->ucomm, 0, c->rank, &c->pcomm) != MPI_SUCCESS, any;
	PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->ucomm);
	if (any) {
		if (c->pcomm != MPI_COMM_NULL)
			PMPI_Comm_free(&c->pcomm);
		c->pcomm = MPI_COMM_NULL;
	}
	return !any;
}

/* The communicator's own Alltoall schedule, unless it shares a parent's
 * (tc_comm_copy). -1: out of memory. */
static int a2a_new(struct tc_comm *c)
{
	if (!c->a2a && (c->a2a = calloc(1, sizeof(*c->a2a))))
		c->a2a->refs = 1;
	return c->a2a ? 0 : -1;
}

/* From every rank's leaf ID (ids[rank]): the leaves, the scratch and the
 * plans' state; c->usable, or c->why. */
static void settle(struct tc_comm *c, const uint64_t *ids)
{
	int unknown = -1;
	for (int r = 0; r < c->size && unknown < 0; r++)
		if (!ids[r])
			unknown = r;
	if (unknown >= 0)
		snprintf(c->why, sizeof(c->why), "no leaf for rank %d (%.120s)", unknown,
			 tc_g.why[0] ? tc_g.why : "topod was not asked");
	else if (number_leaves(c, ids))
		snprintf(c->why, sizeof(c->why), "out of memory");
	else if (c->size < 2)
		snprintf(c->why, sizeof(c->why), "one rank");
	else if (make_scratch(c) || plan_state(c) || a2a_new(c))
		snprintf(c->why, sizeof(c->why), "out of memory");
	else
		c->usable = 1;
}

/* Where a rank is outside MPI_COMM_WORLD (spawned, connected) or MPI_Init
 * lacked memory for the leaf map: the IDs are gathered. Two agreements. */
static void settle_gathered(struct tc_comm *c, uint64_t *ids)
{
	int have[2] = { c->world != NULL, ids != NULL }, all[2];
	PMPI_Allreduce(have, all, 2, MPI_INT, MPI_MIN, c->ucomm);
	if (!all[0]) {
		free(c->world);
		c->world = NULL;
	}
	if (!all[1]) {
		snprintf(c->why, sizeof(c->why), "out of memory");
		return;
	}
	uint64_t mine = tc_g.have_leaf ? tc_g.leaf_id : 0;
	PMPI_Allgather(&mine, 1, MPI_UINT64_T, ids, 1, MPI_UINT64_T, c->ucomm);
	settle(c, ids);
	int usable;
	PMPI_Allreduce(&c->usable, &usable, 1, MPI_INT, MPI_MIN, c->ucomm);
	if (c->usable && !usable)
		snprintf(c->why, sizeof(c->why), "out of memory on another rank");
	c->usable = usable;
}

/* A communicator's state before anything is known of it: no communicator
 * of its own, no choice made. */
static struct tc_comm *fresh(int size, int rank)
{
	struct tc_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ucomm = c->pcomm = c->leafcomm = c->leadcomm = c->hostcomm = c->hleadcomm = MPI_COMM_NULL;
	c->size = size;
	c->rank = rank;
	for (int op = 0; op < TC_NOPS; op++)
		for (int k = 0; k < TC_CLASSES; k++)
			c->choice[op][k].variant = c->choice_nc[k].variant = -1;
	return c;
}

/* settle() from the leaves MPI_Init told every rank of every world rank
 * (c->world and tc_g.world_leaf known); ids[c->size] is room. */
static void settle_world(struct tc_comm *c, uint64_t *ids)
{
	for (int r = 0; r < c->size; r++)
		ids[r] = tc_g.world_leaf[c->world[r]];
	settle(c, ids);
}

static struct tc_comm *make(MPI_Comm comm)
{
	int size, rank;
	PMPI_Comm_size(comm, &size);
	PMPI_Comm_rank(comm, &rank);
	struct tc_comm *c = fresh(size, rank);
	if (!c)
		return NULL;
	c->ucomm = comm;
	world_ranks(c);
	/* Every rank knows every world rank's leaf since MPI_Init (init.c): a
	 * communicator of world ranks numbers its leaves without an exchange,
	 * and its ranks agree once (every test in settle is on data all ranks
	 * hold alike, but for memory; they must agree, or some would wait in
	 * a collective forever). Quick or not is the same on every rank but
	 * where memory ran short; then none uses the communicator. */
	uint64_t *ids = malloc((size_t)c->size * sizeof(*ids));
	int quick = c->world && ids && tc_g.world_leaf;
	if (quick)
		settle_world(c, ids);
	int mine[3] = { quick, quick && c->usable, -quick }, all[3];
	PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, c->ucomm);
	if (all[0]) {
		if (c->usable && !all[1])
			snprintf(c->why, sizeof(c->why), "out of memory on another rank");
		c->usable = all[1];
	} else if (all[2] == 0) {
		settle_gathered(c, ids);
	} else {
		snprintf(c->why, sizeof(c->why), "out of memory on %s rank", quick ? "another" : "this");
		c->usable = 0;
	}
	free(ids);
	if (c->usable)
		c->myleaf = c->leaf_of[c->rank];
	return c;
}

void tc_comm_free(struct tc_comm *c)
{
	if (!c)
		return;
	if (c->leafcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->leafcomm);
	if (c->leadcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->leadcomm);
	if (c->hostcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->hostcomm);
	if (c->hleadcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->hleadcomm);
	if (c->pcomm != MPI_COMM_NULL)
		PMPI_Comm_free(&c->pcomm);
	if (c->a2a && --c->a2a->refs == 0) {
		tc_sched_free(c->a2a->sched);
		free(c->a2a);
	}
	tc_agsched_free(c->agsched);
	free(c->world);
	free(c->agcd);
	free(c->horder);
	free(c->hfirst);
	free(c->lorder);
	free(c->lfirst);
	free(c->gscratch);
	free(c->leaf_of);
	free(c->leader);
	free(c->leaf_size);
	free(c->fab);
	free(c->fpos);
	free(c->hostof);
	free(c->fhfirst);
	free(c->hlead);
	free(c->ident);
	free(c->blen);
	if (c->tree)
		tp_tree_free(c->tree);
	free(c->tree);
	free(c->ops);
	free(c->rq);
	free(c->arena);
	free(c);
}

int tc_comm_copy(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
	(void)oldcomm;
	(void)keyval;
	(void)extra;
	const struct tc_comm *p = in;
	*flag = 0;
	/* Agreed on every rank: usable, and a communicator of world ranks
	 * (its world array) whose leaves MPI_Init told every rank. Else the
	 * copy makes its own on its first collective, as any other. */
	if (!p || !p->usable || !p->world || !tc_g.world_leaf)
		return MPI_SUCCESS;
	struct tc_comm *c = fresh(p->size, p->rank);
	uint64_t *ids = malloc((size_t)p->size * sizeof(*ids));
	if (c) {
		c->world = malloc((size_t)p->size * sizeof(int));
		c->a2a = p->a2a;
		c->a2a->refs++;
	}
	if (c && c->world && ids) {
		memcpy(c->world, p->world, (size_t)p->size * sizeof(int));
		settle_world(c, ids);
	}
	free(ids);
	/* the parent's data settled on every rank: only memory can fail here,
	 * and the MPI then fails this rank's dup (no rank may go on alone) */
	if (!c || !c->usable) {
		tc_comm_free(c);
		return MPI_ERR_NO_MEM;
	}
	c->myleaf = c->leaf_of[c->rank];
	memcpy(c->choice, p->choice, sizeof(c->choice));
	memcpy(c->choice_nc, p->choice_nc, sizeof(c->choice_nc));
	/* TOPOCOLL_VERBOSE says each choice once per communicator */
	for (int k = 0; k < TC_CLASSES; k++) {
		for (int op = 0; op < TC_NOPS; op++)
			c->choice[op][k].told = 0;
		c->choice_nc[k].told = 0;
	}
	*(struct tc_comm **)out = c;
	*flag = 1;
	return MPI_SUCCESS;
}

struct tc_comm *tc_comm_get(MPI_Comm comm)
{
	struct tc_comm *c = NULL;
	int flag = 0;
	if (PMPI_Comm_get_attr(comm, tc_g.keyval, &c, &flag) == MPI_SUCCESS && flag) {
		/* a dup's copy (tc_comm_copy) learns its communicator here */
		if (c && c->ucomm == MPI_COMM_NULL)
			c->ucomm = comm;
		return c;
	}
	c = make(comm);
	if (c && PMPI_Comm_set_attr(comm, tc_g.keyval, c) != MPI_SUCCESS)
		c->usable = 0;
	return c;
}
