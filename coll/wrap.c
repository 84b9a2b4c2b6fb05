/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap.c - the MPI entry points topocoll takes (PMPI interposition), and
 * the choice each call makes: one of topocoll's algorithms, or the MPI's
 * own (PMPI_*) untouched.
 *
 * The choice uses only what every rank of the communicator holds alike
 * (its leaf table and delays, the root, the message's type signature size,
 * the operation), so all ranks choose the same. By default it is the
 * prediction of model.c, made once per communicator, collective and size
 * class: topocoll's plan runs only where it is predicted faster than the
 * MPI's own, both predictions' errors counted against it (model.c keeps).
 * Unsupported cases stay the MPI's: intercommunicators, a derived datatype
 * in Allreduce, floating-point reductions with TOPOCOLL_ALLREDUCE_FLOAT=0
 * (their last bits depend on the order of additions, as between the MPI's
 * own algorithms), MPI_IN_PLACE in Alltoall, Allgather(v) blocks beyond an
 * int count of bytes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"


int TC_ENTRY(MPI_Init)(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		tc_init();
	return rc;
}

int TC_ENTRY(MPI_Init_thread)(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		tc_init();
	return rc;
}

int TC_ENTRY(MPI_Finalize)(void)
{
	tc_finalize();
	return PMPI_Finalize();
}

/* The communicator's state if op may run topocoll's way on it, else NULL. */
static struct tc_comm *candidate(MPI_Comm comm, enum tc_op op)
{
	int inter = 0;
	tc_last(TC_V_NATIVE, -1, -1);
	if (!tc_g.enabled[op] || comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return NULL;
	struct tc_comm *c = tc_comm_get(comm);
	if (c && !c->usable) {
		c->native[op]++;
		tc_tell(c, op, 0, NULL, c->why, NULL);
		return NULL;
	}
	return c;
}

/* TOPOCOLL_CHOICE's family for op: `sched` names topod's schedule of the
 * collective that has one, Allgather's its own variant. */
static int choice_for(enum tc_op op)
{
	if (tc_g.choice_mode != 1)
		return -1;
	return op == TC_ALLGATHER && tc_g.force == TC_V_SCHED ? TC_V_AGSCHED : tc_g.force;
}

/* The family a call is forced to, -1 by prediction. TOPOCOLL_MIN_BYTES's
 * size rule says when (from N bytes up; the MPI's own below), and
 * TOPOCOLL_CHOICE which family (`hier` where it names none). */
static int forced_family(enum tc_op op, long long bytes)
{
	int f = choice_for(op);
	if (tc_g.min_set)
		return bytes < (long long)tc_g.min_bytes[op] ? TC_V_NATIVE : f >= 0 ? f : TC_V_HIER;
	if (tc_g.choice_mode == 2)
		return TC_V_NATIVE;
	return f;
}

/* Whether family v has an algorithm for op (else a forced call takes the
 * op's first: hier; Allreduce in rank order where the operation does not
 * commute; Allgather(v): the ring, also where its plans do not apply:
 * uneven blocks, empty calls, `hier` with one rank per host and leaves of
 * different sizes: no host leaders and no grid). */
static int family_of(const struct tc_comm *c, const struct tc_call *k, int v)
{
	switch (k->op) {
	case TC_BCAST:
		return v == TC_V_HIER || v == TC_V_TREE || v == TC_V_PIPE || v == TC_V_SCAG || v == TC_V_HOSTS ? v : TC_V_HIER;
	case TC_GATHER:
	case TC_SCATTER:
		return v == TC_V_HIER || v == TC_V_TREE || v == TC_V_HOSTS ? v : TC_V_HIER;
	case TC_ALLREDUCE:
		if (!k->commute)
			return TC_V_RANKORD;
		return v == TC_V_HIER || v == TC_V_TREE ? v : TC_V_HIER;
	default:
		if (v >= TC_V_RING && v <= TC_V_AGSCHED)
			return v;
		if ((v == TC_V_TREE || (v == TC_V_HIER && (c->maxfh > 1 || c->gridm))) && !k->blen && k->bytes > 0)
			return v;
		return TC_V_RING;
	}
}

/* What runs, and its parameters in *chp: a forced family (with its
 * predicted best parameters), or the prediction. */
static enum tc_variant decide(struct tc_comm *c, struct tc_call *k, struct tc_choice **chp)
{
	char why[320] = "";
	enum tc_variant v;
	int f = forced_family(k->op, k->bytes);
	/* Only rank 0 under TOPOCOLL_VERBOSE says why: every other call
	 * formats nothing (a few snprintf of doubles cost as much as a small
	 * Allreduce on one host). */
	int talk = tc_g.verbose && c->rank == 0;
	*chp = NULL;
	/* Gather, Scatter, Allgather move the whole communicator's blocks (the
	 * root's buffer) as one int count of bytes, Bcast the message: beyond
	 * that, whatever is asked, the MPI's own. */
	if ((k->op == TC_GATHER || k->op == TC_SCATTER || k->op == TC_ALLGATHER) && k->bytes > INT_MAX / 2 / c->size) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "the communicator's blocks together exceed an int count");
	} else if (k->bytes > INT_MAX / 2) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "the message exceeds an int count of bytes");
	} else if (f == TC_V_NATIVE) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "%s", tc_g.min_set ? "below TOPOCOLL_MIN_BYTES" : "TOPOCOLL_CHOICE=native");
	} else if (f < 0 && (!c->world || !tc_g.topo.nworld || !tc_g.topo.nroutes)) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "no routes to predict with (%.150s)",
			 tc_g.topo.source[0] ? tc_g.topo.source : "not known");
	} else {
		v = tc_choose(c, k, f >= 0 ? family_of(c, k, f) : -1, talk ? why : NULL, sizeof(why), chp);
	}
	if (v == TC_V_AGSCHED && !c->agsched) {
		v = TC_V_RING;
		snprintf(why + strlen(why), sizeof(why) - strlen(why), ", no schedule (%.100s)",
			 c->agsched_asked ? c->agsched_why : "not asked");
	} else if (v == TC_V_AGSCHED && talk) {
		const struct tc_agsched *s = c->agsched;
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; topod: %s %.1f us, the ring in rank order %.1f us, for %llu-byte blocks", s->algo, s->time_s * 1e6,
			 s->ring_s * 1e6, s->bytes);
	}
	if (k->op == TC_ALLGATHER && v == TC_V_HOSTS && !c->nhosts)
		v = TC_V_RING;
	/* every rank has the same v here (rank 0's choice, broadcast) */
	if (v != TC_V_NATIVE && !tc_private_comm(c)) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "no private communicator");
	}
	if (v == TC_V_NATIVE)
		c->native[k->op]++;
	else
		c->hier[k->op]++;
	tc_last(v, *chp ? (*chp)->t_native : -1, *chp ? (*chp)->t_best : -1);
	if (talk) {
		char name[160];
		tc_describe(k->op, v, *chp, name, sizeof(name));
		tc_tell(c, k->op, v != TC_V_NATIVE, name, why, *chp);
	}
	return v;
}

/* A call some rank could not run (memory) is the MPI's after all. */
static void gave_up(struct tc_comm *c, enum tc_op op)
{
	c->hier[op]--;
	c->native[op]++;
}

static long long sig_bytes(int count, MPI_Datatype dt)
{
	int sz = 0;
	if (count <= 0 || PMPI_Type_size(dt, &sz) != MPI_SUCCESS)
		return 0;
	return (long long)count * sz;
}

int TC_ENTRY(MPI_Bcast)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_BCAST);
	if (c && root >= 0 && root < c->size) {
		struct tc_call k = { .op = TC_BCAST, .bytes = sig_bytes(count, dt), .tsize = 1, .root = root };
		struct tc_choice *ch;
		k.count = k.bytes;
		if (k.bytes > 0 && decide(c, &k, &ch) != TC_V_NATIVE) {
			int give_up = 0, rc = tc_bcast(c, ch, &k, buf, count, dt, &give_up);
			if (!give_up)
				return rc;
			gave_up(c, TC_BCAST);
		}
	}
	return PMPI_Bcast(buf, count, dt, root, comm);
}

int TC_ENTRY(MPI_Gather)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			 int root, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_GATHER);
	if (c && root >= 0 && root < c->size) {
		/* per-rank bytes, from the side that has them (the root in place) */
		int in_place = c->rank == root && sbuf == MPI_IN_PLACE;
		struct tc_call k = { .op = TC_GATHER, .tsize = 1, .root = root };
		struct tc_choice *ch;
		k.bytes = k.count = in_place ? sig_bytes(rcount, rt) : sig_bytes(scount, st);
		if (k.bytes > 0 && decide(c, &k, &ch) != TC_V_NATIVE) {
			int give_up = 0, rc = tc_gather(c, ch, &k, sbuf, scount, st, rbuf, rcount, rt, &give_up);
			if (!give_up)
				return rc;
			gave_up(c, TC_GATHER);
		}
	}
	return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int TC_ENTRY(MPI_Scatter)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			  int root, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_SCATTER);
	if (c && root >= 0 && root < c->size) {
		struct tc_call k = { .op = TC_SCATTER, .tsize = 1, .root = root };
		struct tc_choice *ch;
		k.bytes = k.count = c->rank == root ? sig_bytes(scount, st) : sig_bytes(rcount, rt);
		if (k.bytes > 0 && decide(c, &k, &ch) != TC_V_NATIVE) {
			int give_up = 0, rc = tc_scatter(c, ch, &k, sbuf, scount, st, rbuf, rcount, rt, &give_up);
			if (!give_up)
				return rc;
			gave_up(c, TC_SCATTER);
		}
	}
	return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

/* Floating-point predefined types (and pairs with a floating-point value):
 * their sums and products depend on the order of application, their
 * extrema on it where NaNs or signed zeros meet (docs/collectives.md,
 * "What equal means"). */
static int floating(MPI_Datatype dt)
{
	static const MPI_Datatype fl[] = {
		MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT,
		MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_REAL, MPI_DOUBLE_PRECISION,
		MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_2REAL, MPI_2DOUBLE_PRECISION,
	};
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if (dt == fl[i])
			return 1;
	return 0;
}

/* Open MPI 4.1's op/avx adds 8- and 16-bit integers with saturation in
 * its vector loop and wrapping in its scalar tail (ompi#8045, closed
 * "won't fix"): such a SUM depends on the grouping, so no other order of
 * reduction can give its bytes. MPICH wraps. */
static int saturating(MPI_Datatype dt, MPI_Op op)
{
#ifdef OPEN_MPI
	static const MPI_Datatype small[] = { MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT,
					      MPI_UNSIGNED_SHORT, MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T };
	for (size_t i = 0; op == MPI_SUM && i < sizeof(small) / sizeof(small[0]); i++)
		if (dt == small[i])
			return 1;
#endif
	(void)dt, (void)op;
	return 0;
}

/* Whether topocoll may run this reduction, and whether it commutes: a
 * predefined (named) type, any operation the MPI applies
 * (MPI_Reduce_local: predefined and user-defined; one that does not
 * commute runs in rank order); floating point only with
 * TOPOCOLL_ALLREDUCE_FLOAT (default on). why: when not. */
static int reducible(MPI_Datatype dt, MPI_Op op, int *commute, const char **why)
{
	int ni, na, nd, comb;
	*why = NULL;
	if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS || comb != MPI_COMBINER_NAMED)
		*why = "a derived datatype";
	else if (PMPI_Op_commutative(op, commute) != MPI_SUCCESS)
		*why = "an operation the MPI does not describe";
	else if (!tc_g.float_reduce && floating(dt))
		*why = "a floating-point reduction, and TOPOCOLL_ALLREDUCE_FLOAT=0";
	else if (saturating(dt, op))
		*why = "Open MPI's SUM of 8- and 16-bit integers saturates where it vectorizes (ompi#8045): its result "
		       "depends on how the vector is cut";
	return *why == NULL;
}

int TC_ENTRY(MPI_Allreduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_ALLREDUCE);
	int commute = 1, tsz = 0;
	const char *why = NULL;
	if (c && !reducible(dt, op, &commute, &why)) {
		c->native[TC_ALLREDUCE]++;
		tc_tell(c, TC_ALLREDUCE, 0, NULL, why, NULL);
		c = NULL;
	}
	if (c && count > 0 && PMPI_Type_size(dt, &tsz) == MPI_SUCCESS && tsz > 0) {
		MPI_Aint lb, ext;
		PMPI_Type_get_extent(dt, &lb, &ext);
		struct tc_call k = { .op = TC_ALLREDUCE, .bytes = (long long)count * tsz, .count = count, .tsize = tsz,
				     .ext = ext, .commute = commute };
		struct tc_choice *ch;
		if (decide(c, &k, &ch) != TC_V_NATIVE) {
			int give_up = 0, rc = tc_allreduce(c, ch, &k, sbuf, rbuf, count, dt, op, &give_up);
			if (!give_up)
				return rc;
			gave_up(c, TC_ALLREDUCE);
		}
	}
	return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

/* The steps in flight the schedule runs with (0: the MPI's own runs).
 * The schedule runs where topod (or the schedule file) predicts it, with
 * its steps in flight, faster than the MPI's own Alltoall at this block
 * size by topod's rule (docs/cost-model.md "Every message size"): the
 * prediction is asked once per communicator and size class, for every
 * block of TOPOCOLL_ALLTOALL_MIN bytes or more. */
static int a2a_decide(struct tc_comm *c, long long b)
{
	char why[224];
	int forced = tc_g.min_set ? b >= (long long)tc_g.min_bytes[TC_ALLTOALL] : tc_g.choice_mode == 1;
	int run = 0;
	if (forced || (tc_g.choice_mode == 0 && !tc_g.min_set && b >= tc_g.a2a_min))
		tc_sched_get(c, b);
	const struct tc_sched *s = c->a2a->sched;
	const struct tc_a2a_pred *x = s ? &s->pred[tc_size_class(b)] : NULL;
	if (tc_g.choice_mode == 2 && !tc_g.min_set)
		snprintf(why, sizeof(why), "TOPOCOLL_CHOICE=native");
	else if (!s)
		snprintf(why, sizeof(why), "%s", c->a2a->asked ? c->a2a->why : "blocks below TOPOCOLL_ALLTOALL_MIN");
	else if (forced || tc_g.choice_mode == 1) {
		run = 1;
		snprintf(why, sizeof(why), "%s, forced", s->algo);
	} else if (tc_g.min_set || b < tc_g.a2a_min) {
		snprintf(why, sizeof(why), "%lld bytes per block: below %s", b,
			 tc_g.min_set ? "TOPOCOLL_MIN_BYTES" : "TOPOCOLL_ALLTOALL_MIN");
	} else if (x->state != 1) {
		snprintf(why, sizeof(why), "topod predicts nothing for %lld-byte blocks against the MPI's own", b);
	} else {
		run = x->keep;
		snprintf(why, sizeof(why),
			 "topod predicts %.1f us %s with %d step%s in flight, %.1f us the MPI's own (%s) for %llu-byte "
			 "blocks (%.2fx%s)",
			 x->time_s * 1e6, s->algo, x->window, x->window > 1 ? "s" : "", x->native_s * 1e6,
			 x->native_algo, x->bytes, x->time_s > 0 ? x->native_s / x->time_s : 0.0,
			 run ? "" : ", not faster by topod's rule");
	}
	/* every rank reaches this with the same run: the steps are shared now */
	if (run && !tc_private_comm(c)) {
		run = 0;
		snprintf(why, sizeof(why), "no private communicator");
	} else if (run && !tc_sched_steps(c)) {
		run = 0;
		snprintf(why, sizeof(why), "no schedule: %s", c->a2a->why);
		x = NULL;
	}
	if (run)
		c->hier[TC_ALLTOALL]++;
	else
		c->native[TC_ALLTOALL]++;
	tc_last(run ? TC_V_SCHED : TC_V_NATIVE, x && x->state == 1 ? x->native_s : -1,
		x && x->state == 1 ? x->time_s : -1);
	tc_tell(c, TC_ALLTOALL, run, run ? "topod's schedule" : NULL, why, &c->choice[TC_ALLTOALL][tc_size_class(b)]);
	return !run ? 0 : x && x->state == 1 && x->window >= 1 && x->window <= TC_WINDOW_MAX ? x->window : 1;
}

int TC_ENTRY(MPI_Alltoall)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			   MPI_Comm comm)
{
	struct tc_comm *c = sbuf == MPI_IN_PLACE ? NULL : candidate(comm, TC_ALLTOALL);
	int window = c ? a2a_decide(c, sig_bytes(scount, st)) : 0;
	if (window)
		return tc_alltoall(c, window, sbuf, scount, st, rbuf, rcount, rt);
	return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

/* Whether topod's allgather schedule is asked now (once per communicator,
 * on a call every rank makes with the same block): forced
 * (TOPOCOLL_CHOICE=sched, from TOPOCOLL_MIN_BYTES up where set), or by
 * prediction from TOPOCOLL_ALLGATHER_MIN up where there are delays to
 * compare it with. */
static int ag_sched_wanted(const struct tc_comm *c, long long b)
{
	if (choice_for(TC_ALLGATHER) == TC_V_AGSCHED)
		return !tc_g.min_set || b >= (long long)tc_g.min_bytes[TC_ALLGATHER];
	return tc_g.choice_mode == 0 && !tc_g.min_set && b >= tc_g.ag_min && c->world && tc_g.topo.nworld;
}

/* Allgather(v) by the ring (allgather.c) where decide() says so: -1 when
 * the call stays the MPI's. Every block's bytes must fit an int (and, for
 * Allgather, the whole buffer's elements: its displacements are ints). */
static int ag_run(struct tc_comm *c, const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int *rcounts,
		  const int *displs, MPI_Datatype rt)
{
	int tsz = 0, give_up = 0;
	long long sum = 0, max = 0;
	const char *bad = NULL;
	if (PMPI_Type_size(rt, &tsz) != MPI_SUCCESS)
		bad = "a receive type the MPI does not know";
	for (int r = 0; !bad && r < c->size; r++) {
		long long b = (long long)rcounts[r] * tsz;
		if (rcounts[r] < 0)
			bad = "a negative count";
		sum += b;
		max = b > max ? b : max;
	}
	if (!bad && max > INT_MAX)
		bad = "a block exceeds an int count of bytes";
	if (bad) {
		c->native[TC_ALLGATHER]++;
		tc_tell(c, TC_ALLGATHER, 0, NULL, bad, NULL);
		return -1;
	}
	if (!c->agsched_asked && ag_sched_wanted(c, sum / c->size))
		tc_agsched_get(c, sum / c->size);
	/* uneven blocks (Allgatherv): each rank's bytes, for the model */
	long long *blen = c->blen;
	int uneven = 0;
	for (int r = 0; r < c->size; r++) {
		blen[r] = (long long)rcounts[r] * tsz;
		uneven |= blen[r] != blen[0];
	}
	struct tc_call k = { .op = TC_ALLGATHER, .bytes = sum / c->size, .count = sum / c->size, .tsize = 1,
			     .blen = uneven ? blen : NULL };
	struct tc_choice *ch;
	enum tc_variant v = decide(c, &k, &ch);
	int rc;
	if (v == TC_V_NATIVE)
		return -1;
	/* the plans need blocks: an empty call (counted, as every call is)
	 * takes the ring, which has nothing to send */
	if ((v == TC_V_HIER || v == TC_V_TREE) && (uneven || !ch || !sum))
		v = TC_V_RING;
	if (v == TC_V_AGSCHED)
		rc = tc_allgather_sched(c, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	else if (v == TC_V_HIER || v == TC_V_TREE)
		rc = tc_allgather_plan(c, ch, &k, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	else if (v == TC_V_RING || sum > INT_MAX)
		rc = tc_allgather_ring(c, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	else
		rc = tc_allgather_grouped(c, v, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	if (give_up) {
		gave_up(c, TC_ALLGATHER);
		return -1;
	}
	return rc;
}

int TC_ENTRY(MPI_Allgather)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			    MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_ALLGATHER);
	int tsz = 0;
	if (c)
		PMPI_Type_size(rt, &tsz);
	/* In signature bytes, which every rank has alike (rcount and rt may
	 * differ from rank to rank): an element count would send some ranks
	 * to the MPI and others into the ring. Bytes bound elements (an
	 * element has at least one byte; an empty type has none to place). */
	if (c && (long long)rcount * (tsz ? tsz : 1) > INT_MAX / c->size) {
		c->native[TC_ALLGATHER]++;
		tc_tell(c, TC_ALLGATHER, 0, NULL, "the receive buffer's bytes exceed an int count", NULL);
		c = NULL;
	}
	int rc = -1;
	if (c) {
		int *cd = c->agcd;
		for (int r = 0; r < c->size; r++) {
			cd[r] = rcount;
			cd[c->size + r] = r * rcount;
		}
		rc = ag_run(c, sbuf, scount, st, rbuf, cd, cd + c->size, rt);
	}
	return rc >= 0 ? rc : PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int TC_ENTRY(MPI_Allgatherv)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, const int *rcounts,
			     const int *displs, MPI_Datatype rt, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_ALLGATHER);
	int rc = c && rcounts && displs ? ag_run(c, sbuf, scount, st, rbuf, rcounts, displs, rt) : -1;
	return rc >= 0 ? rc : PMPI_Allgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, comm);
}

#ifdef TOPOCOLL_SMPI
/* The benchmark's view of the last call: what ran, and the predictions. */
int topocoll_last(double *t_native, double *t_best);
int topocoll_last(double *t_native, double *t_best)
{
	*t_native = tc_g.last_native;
	*t_best = tc_g.last_best;
	return tc_g.last_variant;
}
#endif
