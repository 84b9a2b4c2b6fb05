/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hier.c - topocoll's algorithms run: the plan of the choice (plan.c) for
 * this rank, over the call's buffers, with the room it needs.
 *
 *   Bcast      a tree from the root over the fabric's order (k-nomial, by
 *              levels of leaves, hosts and ranks, a chain), segments passed
 *              on as they come; or a scatter of pieces then their ring
 *              allgather.
 *   Gather     subtrees' blocks up such a tree to the root (also one that
 *              relays other leaves' blocks through the root leaf's hosts).
 *   Scatter    the mirror image.
 *   Allreduce  recursive doubling, Rabenseifner or the ring over the
 *              fabric's order (or rank order, for operations that do not
 *              commute), or each host's ranks reduced at its leader first.
 *   Allgather  recursive doubling, Bruck or the ring over the fabric's
 *              order, each host's blocks gathered at its leader first, or
 *              a grid of the leaves' columns, then each leaf.
 *
 * Data moves as bytes where ranks' types may differ (Bcast, Gather,
 * Scatter, Allgather: each rank packs and unpacks with its own type, or
 * works in place where its type is one dense run) and in the call's
 * predefined type for Allreduce (reduced by MPI_Reduce_local: every
 * predefined and user-defined operation as the MPI applies it). Every
 * byte ends where the MPI's own algorithm puts it.
 *
 * Room: a plan's ops, requests and scratch come from the communicator
 * (comm.c), grown where every rank agrees it could (a 4-byte Allreduce:
 * all run the plan, or all give the call to the MPI), so a rank short of
 * memory never leaves the others waiting; scratch up to TC_ARENA_KEEP is
 * kept, and calls that fit run without agreeing again.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "plan.h"

#define TC_TAG 7717 /* on the private communicator: no user message can match */

/* Whether a type's bytes lie in the buffer in the order MPI_Pack gives
 * them: a named type, or contiguous/dup of one. Extents alone cannot tell:
 * MPI_Type_indexed(2, {1,1}, {1,0}, MPI_INT) has no holes and its extent
 * is its size, but its first element lies second. */
int tc_type_in_order(MPI_Datatype dt)
{
	int ni, na, nd, comb;
	if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
		return 0;
	if (comb == MPI_COMBINER_NAMED)
		return 1;
	if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) || nd != 1 || ni > 1 || na > 0)
		return 0;
	int count;
	MPI_Datatype inner;
	if (PMPI_Type_get_contents(dt, ni, 0, 1, &count, NULL, &inner) != MPI_SUCCESS)
		return 0;
	int in_order = tc_type_in_order(inner);
	if (PMPI_Type_get_envelope(inner, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED)
		PMPI_Type_free(&inner);
	return in_order;
}

/* Every rank says whether it can go on: all go on, or all give up. */
static int all_ok(const struct tc_comm *c, int ok)
{
	int all = 0;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->pcomm);
	return all;
}

/* Room for a plan of at most nops ops and scratch bytes (the most any rank
 * uses); *tmp the scratch. Agrees first where the communicator holds less
 * than asked (every rank decides that alike); 0 when all can run it, -1
 * when some rank cannot (none runs it). *own: a scratch of this call only. */
static int room(struct tc_comm *c, long long nops, long long scratch, char **tmp, int *own)
{
	*own = 0;
	if (nops <= c->ops_cap && scratch <= c->arena_ok) {
		*tmp = c->arena;
		return 0;
	}
	int ok = nops < INT_MAX / 2;
	if (ok && nops > c->ops_cap) {
		struct tp_op *o = realloc(c->ops, (size_t)nops * sizeof(*o));
		MPI_Request *q = o ? realloc(c->rq, (size_t)nops * sizeof(*q)) : NULL;
		if (o)
			c->ops = o;
		if (q)
			c->rq = q;
		ok = o && q;
		if (ok)
			c->nops = (int)nops;
	}
	char *t = c->arena;
	if (ok && scratch > c->arena_cap && scratch <= TC_ARENA_KEEP) {
		t = realloc(c->arena, (size_t)scratch);
		if (t) {
			c->arena = t;
			c->arena_cap = scratch;
		}
		ok = t != NULL;
	} else if (ok && scratch > TC_ARENA_KEEP) {
		t = malloc((size_t)scratch);
		ok = t != NULL;
		*own = 1;
	}
	if (!all_ok(c, ok)) {
		if (*own)
			free(t);
		*own = 0;
		return -1;
	}
	if (nops > c->ops_cap)
		c->ops_cap = (int)nops;
	if (scratch <= TC_ARENA_KEEP && scratch > c->arena_ok)
		c->arena_ok = scratch;
	*tmp = t;
	return 0;
}

static int maxkids(const struct tp_tree *t)
{
	int m = 0;
	for (int r = 0; r < t->n; r++)
		if (t->koff[r + 1] - t->koff[r] > m)
			m = t->koff[r + 1] - t->koff[r];
	return m;
}

/* The plan's tree (rooted algorithms), its room, this rank's ops. */
static int prepare(struct tc_comm *c, const struct tp_args *a, const struct tc_call *k, char **tmp, int *own)
{
	int mk = 0;
	if (a->alg <= TP_A_TREE_SCATTER) {
		struct tp_args ta = *a;
		if (a->alg == TP_A_SCAG_BCAST)
			ta.shape = TP_T_CHAIN;
		if (tp_tree_build(c, &ta, c->tree))
			return -1; /* alike on every rank: a shape that does not apply */
		mk = maxkids(c->tree);
	}
	if (room(c, tc_plan_ops(c, a, mk), tc_plan_scratch(c, a, k), tmp, own))
		return -1;
	int n = 0, cap = c->ops_cap;
	/* within the room: tp_gen grows nothing */
	if (tp_gen(c, a, c->tree, c->rank, &c->ops, &n, &cap) || cap != c->ops_cap)
		return -2;
	c->nops = n;
	return 0;
}

static void done(char *tmp, int own)
{
	if (own)
		free(tmp);
}

/* A type whose data is one contiguous run of its size from the buffer, in
 * order: no holes, and for several elements an extent equal to the data's
 * (a resized type's elements lie apart however dense each is). */
int tc_type_dense(int count, MPI_Datatype dt, long long bytes)
{
	MPI_Aint lb, ext, tlb, text;
	if (count == 0)
		return 1;
	if (!tc_type_in_order(dt) || PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS || tlb != 0 ||
	    PMPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS)
		return 0;
	return count <= 1 ? text == bytes : lb == 0 && ext == text && (long long)ext * count == bytes;
}

/* A rank's block: its type signature's bytes, the same on every rank by
 * MPI's matching rule; wrap.c keeps size x this within an int. */
static long long block_bytes(int count, MPI_Datatype dt)
{
	int sz = 0;
	PMPI_Type_size(dt, &sz);
	return (long long)count * sz;
}

static int pack(const struct tc_comm *c, const void *buf, int count, MPI_Datatype dt, char *to, long long len)
{
	int pos = 0, rc = PMPI_Pack(buf, count, dt, to, (int)len, &pos, c->pcomm);
	return rc == MPI_SUCCESS && pos == len ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

static int unpack(const struct tc_comm *c, const char *from, long long len, void *buf, int count, MPI_Datatype dt)
{
	int pos = 0;
	return PMPI_Unpack(from, (int)len, &pos, buf, count, dt, c->pcomm);
}

int tc_bcast(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, void *buf, int count,
	     MPI_Datatype dt, int *give_up)
{
	struct tp_args a;
	char *tmp = NULL;
	int own = 0, rc;
	long long S = block_bytes(count, dt);
	tc_plan_args(ch, k, &a);
	*give_up = 0;
	if ((rc = prepare(c, &a, k, &tmp, &own))) {
		*give_up = rc == -1;
		return rc == -1 ? MPI_SUCCESS : MPI_ERR_INTERN;
	}
	int direct = tc_type_dense(count, dt, S);
	char *data = direct ? buf : tmp;
	rc = MPI_SUCCESS;
	if (!direct && c->rank == k->root)
		rc = pack(c, buf, count, dt, data, S);
	char *base[TP_NBUF] = { data, data, data };
	if (rc == MPI_SUCCESS)
		rc = tp_run(c, c->ops, c->nops, c->rq, base, MPI_BYTE, 1, MPI_OP_NULL);
	if (rc == MPI_SUCCESS && !direct && c->rank != k->root)
		rc = unpack(c, data, S, buf, count, dt);
	done(tmp, own);
	return rc;
}

int tc_gather(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, int scount,
	      MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int *give_up)
{
	struct tp_args a;
	char *tmp = NULL;
	int own = 0, rc, root = k->root, me = c->rank, in_place = me == root && sbuf == MPI_IN_PLACE;
	MPI_Aint lb, rext = 0;
	tc_plan_args(ch, k, &a);
	*give_up = 0;
	if ((rc = prepare(c, &a, k, &tmp, &own))) {
		*give_up = rc == -1;
		return rc == -1 ? MPI_SUCCESS : MPI_ERR_INTERN;
	}
	long long B = k->bytes;
	if (me == root)
		PMPI_Type_get_extent(rt, &lb, &rext);
	/* my block first in my subtree's */
	rc = in_place ? pack(c, (char *)rbuf + (MPI_Aint)me * rcount * rext, rcount, rt, tmp, B)
		      : pack(c, sbuf, scount, st, tmp, B);
	char *base[TP_NBUF] = { tmp, tmp, tmp };
	if (rc == MPI_SUCCESS)
		rc = tp_run(c, c->ops, c->nops, c->rq, base, MPI_BYTE, 1, MPI_OP_NULL);
	for (int i = 0; me == root && rc == MPI_SUCCESS && i < c->size; i++) {
		int r = c->tree->dfs[i];
		if (!(in_place && r == me))
			rc = unpack(c, tmp + (long long)i * B, B, (char *)rbuf + (MPI_Aint)r * rcount * rext, rcount, rt);
	}
	done(tmp, own);
	return rc;
}

int tc_scatter(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, int scount,
	       MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int *give_up)
{
	struct tp_args a;
	char *tmp = NULL;
	int own = 0, rc = MPI_SUCCESS, root = k->root, me = c->rank, in_place = me == root && rbuf == MPI_IN_PLACE;
	MPI_Aint lb, sext = 0;
	tc_plan_args(ch, k, &a);
	*give_up = 0;
	if ((rc = prepare(c, &a, k, &tmp, &own))) {
		*give_up = rc == -1;
		return rc == -1 ? MPI_SUCCESS : MPI_ERR_INTERN;
	}
	long long B = k->bytes;
	if (me == root) {
		PMPI_Type_get_extent(st, &lb, &sext);
		for (int i = 0; rc == MPI_SUCCESS && i < c->size; i++) {
			int r = c->tree->dfs[i];
			rc = pack(c, (const char *)sbuf + (MPI_Aint)r * scount * sext, scount, st, tmp + (long long)i * B, B);
		}
	}
	char *base[TP_NBUF] = { tmp, tmp, tmp };
	if (rc == MPI_SUCCESS)
		rc = tp_run(c, c->ops, c->nops, c->rq, base, MPI_BYTE, 1, MPI_OP_NULL);
	if (rc == MPI_SUCCESS && !in_place)
		rc = unpack(c, tmp, B, rbuf, rcount, rt);
	done(tmp, own);
	return rc;
}

int tc_allreduce(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf, void *rbuf,
		 int count, MPI_Datatype dt, MPI_Op op, int *give_up)
{
	struct tp_args a;
	char *tmp = NULL;
	int own = 0, rc;
	MPI_Aint lb, ext, tlb, text;
	tc_plan_args(ch, k, &a);
	*give_up = 0;
	if ((rc = prepare(c, &a, k, &tmp, &own))) {
		*give_up = rc == -1;
		return rc == -1 ? MPI_SUCCESS : MPI_ERR_INTERN;
	}
	PMPI_Type_get_extent(dt, &lb, &ext);
	PMPI_Type_get_true_extent(dt, &tlb, &text);
	rc = MPI_SUCCESS;
	if (sbuf != MPI_IN_PLACE && count > 0)
		rc = PMPI_Sendrecv(sbuf, count, dt, c->rank, TC_TAG, rbuf, count, dt, c->rank, TC_TAG, c->pcomm,
				   MPI_STATUS_IGNORE);
	/* element i at base + i x ext, for TP_TMP as for the caller's buffer */
	char *base[TP_NBUF] = { rbuf, tmp - tlb, (char *)(uintptr_t)(sbuf == MPI_IN_PLACE ? rbuf : sbuf) };
	if (rc == MPI_SUCCESS)
		rc = tp_run(c, c->ops, c->nops, c->rq, base, dt, ext, op);
	done(tmp, own);
	return rc;
}

int tc_allgather_plan(struct tc_comm *c, const struct tc_choice *ch, const struct tc_call *k, const void *sbuf,
		      int scount, MPI_Datatype st, void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rt,
		      int *give_up)
{
	struct tp_args a;
	char *tmp = NULL;
	int own = 0, rc, n = c->size, me = c->rank;
	MPI_Aint lb, ext;
	tc_plan_args(ch, k, &a);
	*give_up = 0;
	if ((rc = prepare(c, &a, k, &tmp, &own))) {
		*give_up = rc == -1;
		return rc == -1 ? MPI_SUCCESS : MPI_ERR_INTERN;
	}
	PMPI_Type_get_extent(rt, &lb, &ext);
	long long B = k->bytes;
	char *data = tmp, *work = tmp + (long long)n * B;
	const void *mine = sbuf == MPI_IN_PLACE ? (const char *)rbuf + (MPI_Aint)displs[me] * ext : sbuf;
	rc = sbuf == MPI_IN_PLACE ? pack(c, mine, rcounts[me], rt, data + (long long)c->fpos[me] * B, B)
				  : pack(c, mine, scount, st, data + (long long)c->fpos[me] * B, B);
	char *base[TP_NBUF] = { data, work, data };
	if (rc == MPI_SUCCESS)
		rc = tp_run(c, c->ops, c->nops, c->rq, base, MPI_BYTE, 1, MPI_OP_NULL);
	for (int i = 0; rc == MPI_SUCCESS && i < n; i++) {
		int r = c->fab[i];
		long long off;
		const char *from = (tp_ag_where(c, &a, i, &off) == TP_TMP ? work : data) + off;
		if (!(r == me && sbuf == MPI_IN_PLACE))
			rc = unpack(c, from, B, (char *)rbuf + (MPI_Aint)displs[r] * ext, rcounts[r], rt);
	}
	done(tmp, own);
	return rc;
}

/* topod's schedule, step by step: this rank's sends and receives of a step
 * posted at once (a TACS2 step may give it two of each). */
/* The schedule with `window` steps in flight (topod's prediction for the
 * call's size class, 1 where there is none): the steps from the oldest unfinished
 * one to window - 1 beyond it are posted (MPI_Irecv, MPI_Isend), and waited
 * for in step order, a sliding window that keeps the cables busy across a
 * step's slow pair (docs/cost-model.md "Steps in flight"). Every pair is in
 * one step (sched.c checks), so the steps in flight never match each
 * other's messages. */
int tc_alltoall(struct tc_comm *c, int window, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount,
		MPI_Datatype rt)
{
	const struct tc_sched *s = c->a2a->sched;
	if (window < 1 || window > TC_WINDOW_MAX)
		window = 1;
	MPI_Aint lb, sext, rext;
	PMPI_Type_get_extent(st, &lb, &sext);
	PMPI_Type_get_extent(rt, &lb, &rext);
	int rc = PMPI_Sendrecv((const char *)sbuf + (MPI_Aint)c->rank * scount * sext, scount, st, c->rank, TC_TAG,
			       (char *)rbuf + (MPI_Aint)c->rank * rcount * rext, rcount, rt, c->rank, TC_TAG, c->pcomm,
			       MPI_STATUS_IGNORE);
	/* a ring of window slots of one step's requests each */
	enum { SLOT = 2 * TC_SCHED_MULTI };
	MPI_Request rq[TC_WINDOW_MAX * SLOT];
	/* statuses, not MPI_STATUSES_IGNORE: MPICH's Waitall is declared to
	 * write them, and gcc refuses the constant */
	MPI_Status sts[SLOT];
	int nrq[TC_WINDOW_MAX] = { 0 }, posted = 0;
	for (int i = 0; i < s->nsteps && rc == MPI_SUCCESS; i++) {
		for (; posted < s->nsteps && posted < i + window && rc == MPI_SUCCESS; posted++) {
			MPI_Request *q = rq + (posted % window) * SLOT;
			int n = 0;
			for (int f = s->roff[posted]; f < s->roff[posted + 1] && rc == MPI_SUCCESS; f++)
				rc = PMPI_Irecv((char *)rbuf + (MPI_Aint)s->from[f] * rcount * rext, rcount, rt, s->from[f],
						TC_TAG, c->pcomm, &q[n++]);
			for (int f = s->soff[posted]; f < s->soff[posted + 1] && rc == MPI_SUCCESS; f++)
				rc = PMPI_Isend((const char *)sbuf + (MPI_Aint)s->to[f] * scount * sext, scount, st, s->to[f],
						TC_TAG, c->pcomm, &q[n++]);
			nrq[posted % window] = n;
		}
		if (rc == MPI_SUCCESS)
			rc = PMPI_Waitall(nrq[i % window], rq + (i % window) * SLOT, sts);
	}
	return rc;
}
