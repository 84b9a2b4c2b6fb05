/*
 * wrap.c - the MPI entry points topocoll takes (PMPI interposition), and
 * the choice each call makes: one of topocoll's algorithms, or the MPI's
 * own (PMPI_*) untouched.
 *
 * The choice uses only what every rank of the communicator holds alike
 * (its leaf table and delays, the root, the message's type signature size,
 * the operation), so all ranks choose the same. By default it is the
 * prediction of model.c, made once per communicator, collective and size
 * class: topocoll's algorithm runs only where it is predicted faster than
 * the MPI's own by TOPOCOLL_MARGIN. Unsupported cases stay the MPI's:
 * intercommunicators, a user-defined reduction or datatype in Allreduce,
 * floating-point sums and products (their result depends on the order of
 * additions: TOPOCOLL_ALLREDUCE_FLOAT=1 allows it), MPI_IN_PLACE in
 * Alltoall, Allgather(v) blocks beyond an int count of bytes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* TOPOCOLL_ALLTOALL_MIN (tc_g.a2a_min, 256 KiB): below this block size the steps' latencies and the MPIs' own small-block
 * algorithms (Bruck, all at once), which topod's predictions for 1 MiB
 * blocks do not describe, decide: in SMPI a schedule predicted 1.34x at
 * 1 MiB ran 0.96x at 64 KiB (docs/performance.md). */

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

/* What runs: the size rule (TOPOCOLL_MIN_BYTES), a forced way
 * (TOPOCOLL_CHOICE), or the prediction; *seg the pipelined Bcast's
 * segment. */
static enum tc_variant decide(struct tc_comm *c, enum tc_op op, long long bytes, int root, long long *seg)
{
	char why[320];
	struct tc_choice *ch = NULL;
	enum tc_variant v;
	/* Gather and Scatter move the whole communicator's blocks (the root's
	 * buffer, a leaf's message), the pipelined Bcast the message, as one
	 * int count of bytes: beyond that, whatever is asked, the MPI's own. */
	if ((op == TC_GATHER || op == TC_SCATTER) && bytes * c->size > INT_MAX) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "the communicator's blocks together exceed an int count");
	} else if (op == TC_BCAST && bytes > INT_MAX) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "the message exceeds an int count of bytes");
	} else if (tc_g.min_set) {
		v = bytes >= (long long)tc_g.min_bytes[op] ? TC_V_HIER : TC_V_NATIVE;
		snprintf(why, sizeof(why), "%s TOPOCOLL_MIN_BYTES (%zu bytes per rank)", v ? "at or above" : "below",
			 tc_g.min_bytes[op]);
	} else if (tc_g.choice_mode) {
		v = tc_g.choice_mode == 2 ? TC_V_NATIVE : TC_V_HIER;
		/* the forced variant where it is one of op's, else op's one way */
		if (v != TC_V_NATIVE && (op == TC_BCAST ? tc_g.force < TC_V_RING : op == TC_ALLGATHER && tc_g.force >= TC_V_RING))
			v = (enum tc_variant)tc_g.force;
		snprintf(why, sizeof(why), "TOPOCOLL_CHOICE=%s", getenv("TOPOCOLL_CHOICE"));
	} else if (!c->world || !tc_g.topo.nworld) {
		v = TC_V_NATIVE;
		snprintf(why, sizeof(why), "no delays to predict with (%.150s)",
			 tc_g.topo.source[0] ? tc_g.topo.source : "not known");
	} else {
		v = tc_choose(c, op, bytes, root, why, sizeof(why), &ch);
	}
	/* Allgather forced (or by the size rule): TOPOCOLL_CHOICE's variant, or
	 * the ring; gathered at leaders only where the groups exist and the
	 * whole result fits an int count of bytes (one Bcast, one buffer) */
	if (op == TC_ALLGATHER && v != TC_V_NATIVE && !ch) {
		v = tc_g.force >= TC_V_RING ? (enum tc_variant)tc_g.force : TC_V_RING;
		if (v == TC_V_HOSTS && !c->nhosts)
			v = TC_V_RING;
		if (v == TC_V_AGSCHED && !c->agsched) {
			v = TC_V_RING;
			snprintf(why + strlen(why), sizeof(why) - strlen(why), ", no schedule (%.100s)",
				 c->agsched_asked ? c->agsched_why : "not asked");
		}
	}
	if (v == TC_V_AGSCHED) {
		const struct tc_agsched *s = c->agsched;
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; topod: %s %.1f us, the ring in rank order %.1f us, for %llu-byte blocks", s->algo, s->time_s * 1e6,
			 s->ring_s * 1e6, s->bytes);
	}
	if (op == TC_ALLGATHER && (v == TC_V_HOSTS || v == TC_V_LEAVES) && bytes * c->size > INT_MAX) {
		v = TC_V_RING;
		snprintf(why, sizeof(why), "the blocks together exceed an int count of bytes");
	}
	if (v == TC_V_NATIVE)
		c->native[op]++;
	else
		c->hier[op]++;
	if (seg)
		*seg = ch ? ch->seg : tc_pipe_segment(bytes, c->size);
	tc_last(v, ch ? ch->t_native : -1, ch ? ch->t_best : -1);
	tc_tell(c, op, v != TC_V_NATIVE, tc_variant_name[v], why, ch);
	return v;
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
		long long b = sig_bytes(count, dt);
		long long seg = 0;
		enum tc_variant v = decide(c, TC_BCAST, b, root, &seg);
		switch (v) {
		case TC_V_HIER:
			return tc_bcast(c, buf, count, dt, root);
		case TC_V_DFS:
		case TC_V_BFS:
			return tc_bcast_ordered(c, buf, count, dt, root, v == TC_V_BFS);
		case TC_V_PIPE:
			return tc_bcast_pipe(c, buf, count, dt, root, seg);
		default:
			break;
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
		long long b = in_place ? sig_bytes(rcount, rt) : sig_bytes(scount, st);
		if (decide(c, TC_GATHER, b, root, NULL) != TC_V_NATIVE)
			return tc_gather(c, sbuf, scount, st, rbuf, rcount, rt, root);
	}
	return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int TC_ENTRY(MPI_Scatter)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			  int root, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_SCATTER);
	if (c && root >= 0 && root < c->size) {
		long long b = c->rank == root ? sig_bytes(scount, st) : sig_bytes(rcount, rt);
		if (decide(c, TC_SCATTER, b, root, NULL) != TC_V_NATIVE)
			return tc_scatter(c, sbuf, scount, st, rbuf, rcount, rt, root);
	}
	return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

/* Predefined operations on predefined types whose result does not depend
 * on the order of application: every integer operation, and for floating
 * point only with TOPOCOLL_ALLREDUCE_FLOAT=1. */
static int exact(MPI_Datatype dt, MPI_Op op)
{
	static const MPI_Datatype ints[] = {
		MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG,
		MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T,
		MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T,
	};
	static const MPI_Datatype floats[] = { MPI_FLOAT, MPI_DOUBLE };
	static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
				      MPI_BAND, MPI_BOR, MPI_BXOR };
	int known = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		known |= op == ops[i];
	if (!known)
		return 0;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (dt == ints[i])
			return 1;
	for (size_t i = 0; tc_g.float_reduce && i < sizeof(floats) / sizeof(floats[0]); i++)
		if (dt == floats[i])
			return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN;
	return 0;
}

int TC_ENTRY(MPI_Allreduce)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_ALLREDUCE);
	if (c && !exact(dt, op)) {
		c->native[TC_ALLREDUCE]++;
		tc_tell(c, TC_ALLREDUCE, 0, NULL, "an operation or type whose result could depend on the order", NULL);
		c = NULL;
	}
	if (c && decide(c, TC_ALLREDUCE, sig_bytes(count, dt), 0, NULL) != TC_V_NATIVE)
		return tc_allreduce(c, sbuf, rbuf, count, dt, op);
	return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

/* The schedule runs where topod (or the schedule file) predicts it faster
 * than XOR's steps, the MPIs' own large-block algorithm, by the margin. */
static int a2a_decide(struct tc_comm *c, long long b)
{
	char why[224];
	int forced = tc_g.min_set ? b >= (long long)tc_g.min_bytes[TC_ALLTOALL] : tc_g.choice_mode == 1;
	int run = 0;
	if (!c->sched_asked && (forced || (tc_g.choice_mode == 0 && !tc_g.min_set && b >= tc_g.a2a_min)))
		tc_sched_get(c);
	const struct tc_sched *s = c->sched;
	if (tc_g.choice_mode == 2 && !tc_g.min_set)
		snprintf(why, sizeof(why), "TOPOCOLL_CHOICE=native");
	else if (!s)
		snprintf(why, sizeof(why), "%s", c->sched_asked ? c->sched_why : "blocks below TOPOCOLL_ALLTOALL_MIN");
	else if (forced || tc_g.choice_mode == 1) {
		run = 1;
		snprintf(why, sizeof(why), "%s, forced", s->algo);
	} else if (tc_g.min_set || b < tc_g.a2a_min) {
		snprintf(why, sizeof(why), "%lld bytes per block: below %s", b,
			 tc_g.min_set ? "TOPOCOLL_MIN_BYTES" : "TOPOCOLL_ALLTOALL_MIN");
	} else {
		run = s->time_s > 0 && s->native_s >= s->time_s * tc_g.margin;
		snprintf(why, sizeof(why), "topod predicts %.1f us %s, %.1f us XOR's steps for 1 MiB blocks (%.2fx%s)",
			 s->time_s * 1e6, s->algo, s->native_s * 1e6, s->time_s > 0 ? s->native_s / s->time_s : 0.0,
			 run ? "" : ", below the margin");
	}
	if (run)
		c->hier[TC_ALLTOALL]++;
	else
		c->native[TC_ALLTOALL]++;
	tc_last(run ? TC_V_SCHED : TC_V_NATIVE, s ? s->native_s : -1, s ? s->time_s : -1);
	tc_tell(c, TC_ALLTOALL, run, run ? "topod's schedule" : NULL, why, &c->choice[TC_ALLTOALL][tc_size_class(b)]);
	return run;
}

int TC_ENTRY(MPI_Alltoall)(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
			   MPI_Comm comm)
{
	struct tc_comm *c = sbuf == MPI_IN_PLACE ? NULL : candidate(comm, TC_ALLTOALL);
	if (c && a2a_decide(c, sig_bytes(scount, st)))
		return tc_alltoall(c, sbuf, scount, st, rbuf, rcount, rt);
	return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

/* Whether topod's allgather schedule is asked now (once per communicator,
 * on a call every rank makes with the same block): forced
 * (TOPOCOLL_CHOICE=sched, from TOPOCOLL_MIN_BYTES up where set), or by
 * prediction from TOPOCOLL_ALLGATHER_MIN up where there are delays to
 * compare it with. */
static int ag_sched_wanted(const struct tc_comm *c, long long b)
{
	if (tc_g.choice_mode == 1 && tc_g.force == TC_V_AGSCHED)
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
	enum tc_variant v = decide(c, TC_ALLGATHER, sum / c->size, 0, NULL);
	int rc;
	if (v == TC_V_NATIVE)
		return -1;
	if (v == TC_V_AGSCHED)
		rc = tc_allgather_sched(c, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	else if (v == TC_V_RING || sum > INT_MAX)
		rc = tc_allgather_ring(c, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	else
		rc = tc_allgather_grouped(c, v, sbuf, scount, st, rbuf, rcounts, displs, rt, &give_up);
	if (give_up) {
		c->hier[TC_ALLGATHER]--;
		c->native[TC_ALLGATHER]++;
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
	if (c && (long long)rcount * (tsz ? tsz : 1) * c->size > INT_MAX) {
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
