/*
 * prof_stencil.c - a 3-D halo exchange whose traffic is known exactly, for
 * tests/integration/t_profiler.sh (run with libtopoprof.so in LD_PRELOAD).
 *
 * The ranks form a periodic px x py x pz grid (MPI_Dims_create) on a
 * communicator whose ranks are MPI_COMM_WORLD's REVERSED (so the profiler
 * must translate communicator ranks to world ranks). Each iteration sends
 * the six faces of a local NX x NY x NZ block of doubles (face sizes differ
 * per axis, so a wrong axis shows), with a different send form each
 * iteration: blocking MPI_Send, MPI_Isend, persistent (MPI_Send_init +
 * MPI_Start), MPI_Sendrecv, MPI_Issend. Receives: MPI_Recv, MPI_Irecv,
 * persistent receives (never counted: the sender counts). An MPI_Allreduce
 * of one double per iteration, a final MPI_Bcast from rank 0 and an
 * MPI_Neighbor_alltoall on the Cartesian communicator (NX doubles to each
 * of the six neighbours, in MPI_Cart_shift order) add collective traffic.
 * Every rank tallies what it sent (prof_truth.h).
 */
#include "prof_truth.h"

#define NX 6
#define NY 5
#define NZ 4
#define ITERS 5

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int w, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &w);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	struct truth T;
	truth_init(&T);

	MPI_Comm rev, cart;
	MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - w, &rev);   /* rank in rev = n-1-w */
	int dims[3] = { 0, 0, 0 }, periods[3] = { 1, 1, 1 };
	MPI_Dims_create(n, 3, dims);
	MPI_Cart_create(rev, 3, dims, periods, 0, &cart);
	/* face sizes in doubles: the face normal to axis a */
	const int face[3] = { NY * NZ, NX * NZ, NX * NY };
	double *sbuf = calloc(6 * NX * NY, sizeof(double)), *rbuf = calloc(6 * NX * NY, sizeof(double));
	int nb[6];   /* neighbours in cart: axis a, direction -1 / +1 */
	for (int a = 0; a < 3; a++)
		MPI_Cart_shift(cart, a, 1, &nb[2 * a], &nb[2 * a + 1]);
	MPI_Request rq[12], prq[12];
	/* persistent requests, made once, started in iteration 2 */
	for (int k = 0; k < 6; k++) {
		int a = k / 2, to = nb[k], from = nb[k ^ 1];
		MPI_Send_init(sbuf + k * NX * NY, face[a], MPI_DOUBLE, to, k, cart, &prq[k]);
		MPI_Recv_init(rbuf + k * NX * NY, face[a], MPI_DOUBLE, from, k, cart, &prq[6 + k]);
	}
	double x = w, sum;
	for (int it = 0; it < ITERS; it++) {
		for (int k = 0; k < 6; k++) {
			int a = k / 2, to = nb[k], from = nb[k ^ 1];
			double *s = sbuf + k * NX * NY, *r = rbuf + k * NX * NY;
			switch (it) {
			case 0:   /* blocking; even/odd coordinate order avoids deadlock in any size */
				MPI_Irecv(r, face[a], MPI_DOUBLE, from, k, cart, &rq[k]);
				MPI_Send(s, face[a], MPI_DOUBLE, to, k, cart);
				MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
				break;
			case 1:
				MPI_Irecv(r, face[a], MPI_DOUBLE, from, k, cart, &rq[6 + k]);
				MPI_Isend(s, face[a], MPI_DOUBLE, to, k, cart, &rq[k]);
				break;
			case 2:
				if (k == 0)
					MPI_Startall(12, prq);
				break;
			case 3:
				MPI_Sendrecv(s, face[a], MPI_DOUBLE, to, k, r, face[a], MPI_DOUBLE, from, k, cart,
					     MPI_STATUS_IGNORE);
				break;
			default:
				MPI_Irecv(r, face[a], MPI_DOUBLE, from, k, cart, &rq[6 + k]);
				MPI_Issend(s, face[a], MPI_DOUBLE, to, k, cart, &rq[k]);
			}
			/* cart rank c is world rank n-1-c */
			truth_p2p(&T, n - 1 - to, (uint64_t)face[a] * sizeof(double));
		}
		if (it == 1 || it >= 4)
			MPI_Waitall(12, rq, MPI_STATUSES_IGNORE);
		if (it == 2)
			MPI_Waitall(12, prq, MPI_STATUSES_IGNORE);
		MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		for (int p = 0; p < n; p++)   /* logical: my contribution to every other rank */
			if (p != w)
				truth_coll(&T, p, sizeof(double));
	}
	for (int k = 0; k < 12; k++)
		MPI_Request_free(&prq[k]);
	int params[4] = { dims[0], dims[1], dims[2], ITERS };
	MPI_Bcast(params, 4, MPI_INT, 0, MPI_COMM_WORLD);
	for (int p = 0; w == 0 && p < n; p++)
		if (p != 0)
			truth_coll(&T, p, sizeof(params));
	/* one block per out-neighbour: per axis the -1 then the +1 neighbour */
	MPI_Neighbor_alltoall(sbuf, NX, MPI_DOUBLE, rbuf, NX, MPI_DOUBLE, cart);
	for (int k = 0; k < 6; k++)
		truth_coll(&T, n - 1 - nb[k], NX * sizeof(double));
	truth_print(&T);
	free(sbuf);
	free(rbuf);
	MPI_Comm_free(&cart);
	MPI_Comm_free(&rev);
	MPI_Finalize();
	return 0;
}
