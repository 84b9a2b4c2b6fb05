/*
 * wrap.c - the MPI entry points topocoll takes (PMPI interposition), and
 * the choice each call makes: hierarchical, or the MPI's own (PMPI_*)
 * untouched.
 *
 * The choice uses only what every rank of the communicator holds alike
 * (its leaf table, the root, the message's type signature size, the
 * operation), so all ranks choose the same. Unsupported cases stay the
 * MPI's: intercommunicators, a user-defined reduction or datatype in
 * Allreduce, floating-point sums and products (their result depends on the
 * order of additions: TOPOCOLL_ALLREDUCE_FLOAT=1 allows it), messages below
 * the per-collective threshold.
 */
#include <limits.h>
#include <stdio.h>

#include "coll.h"

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		tc_init();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		tc_init();
	return rc;
}

int MPI_Finalize(void)
{
	tc_finalize();
	return PMPI_Finalize();
}

/* The communicator's state if op may go hierarchical on it, else NULL. */
static struct tc_comm *candidate(MPI_Comm comm, enum tc_op op)
{
	int inter = 0;
	if (!tc_g.enabled[op] || comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return NULL;
	struct tc_comm *c = tc_comm_get(comm);
	if (c && !c->usable) {
		c->native[op]++;
		tc_tell(c, op, 0, c->why);
		return NULL;
	}
	return c;
}

/* Large enough to pay for a second level of messages, and, for Gather
 * and Scatter, small enough that the whole communicator's blocks (the
 * root's buffer, a leaf's message) are an int count of bytes? */
static int big_enough(struct tc_comm *c, enum tc_op op, long long bytes)
{
	if ((op == TC_GATHER || op == TC_SCATTER) && bytes * c->size > INT_MAX) {
		c->native[op]++;
		tc_tell(c, op, 0, "the communicator's blocks together exceed an int count");
		return 0;
	}
	if (bytes >= (long long)tc_g.min_bytes[op]) {
		c->hier[op]++;
		tc_tell(c, op, 1, NULL);
		return 1;
	}
	c->native[op]++;
	char why[96];
	snprintf(why, sizeof(why), "below TOPOCOLL_MIN_BYTES (%zu bytes per rank)", tc_g.min_bytes[op]);
	tc_tell(c, op, 0, why);
	return 0;
}

static long long sig_bytes(int count, MPI_Datatype dt)
{
	int sz = 0;
	if (count <= 0 || PMPI_Type_size(dt, &sz) != MPI_SUCCESS)
		return 0;
	return (long long)count * sz;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_BCAST);
	if (c && root >= 0 && root < c->size && big_enough(c, TC_BCAST, sig_bytes(count, dt)))
		return tc_bcast(c, buf, count, dt, root);
	return PMPI_Bcast(buf, count, dt, root, comm);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
	       MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_GATHER);
	if (c && root >= 0 && root < c->size) {
		/* per-rank bytes, from the side that has them (the root in place) */
		int in_place = c->rank == root && sbuf == MPI_IN_PLACE;
		long long b = in_place ? sig_bytes(rcount, rt) : sig_bytes(scount, st);
		if (big_enough(c, TC_GATHER, b))
			return tc_gather(c, sbuf, scount, st, rbuf, rcount, rt, root);
	}
	return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt, int root,
		MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_SCATTER);
	if (c && root >= 0 && root < c->size) {
		long long b = c->rank == root ? sig_bytes(scount, st) : sig_bytes(rcount, rt);
		if (big_enough(c, TC_SCATTER, b))
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

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	struct tc_comm *c = candidate(comm, TC_ALLREDUCE);
	if (c && !exact(dt, op)) {
		c->native[TC_ALLREDUCE]++;
		tc_tell(c, TC_ALLREDUCE, 0, "an operation or type whose result could depend on the order");
		c = NULL;
	}
	if (c && big_enough(c, TC_ALLREDUCE, sig_bytes(count, dt)))
		return tc_allreduce(c, sbuf, rbuf, count, dt, op);
	return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}
