/*
 * flows.c - an SMPI program for t_simgrid_lab: every listed flow starts at
 * simulated time 0 and each receiver prints when its flow completed, so the
 * test can compare simulated transfer times with hand-computed ones.
 *
 *   flows BYTES SRC:DST [SRC:DST ...]     (ranks; a rank may appear in several)
 *
 * Output, one line per flow, from its receiver: "flow SRC DST SECONDS".
 * No barrier first: a barrier's own messages would finish at different
 * times on different ranks and blur the start.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define FLOWS_MAX 64

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int me;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (argc < 3 || argc - 2 > FLOWS_MAX) {
		if (!me)
			fprintf(stderr, "usage: flows BYTES SRC:DST ... (at most %d flows)\n", FLOWS_MAX);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long bytes = atol(argv[1]);
	if (bytes <= 0 || bytes > (1L << 30))
		MPI_Abort(MPI_COMM_WORLD, 2);
	char *buf = calloc((size_t)bytes, FLOWS_MAX);
	MPI_Request req[FLOWS_MAX];
	int src[FLOWS_MAX], dst[FLOWS_MAX], isrecv[FLOWS_MAX], n = 0;
	for (int i = 2; i < argc; i++) {
		int s, d;
		if (sscanf(argv[i], "%d:%d", &s, &d) != 2)
			MPI_Abort(MPI_COMM_WORLD, 2);
		if (s != me && d != me)
			continue;
		src[n] = s;
		dst[n] = d;
		isrecv[n] = d == me;
		/* The tag is the flow's index, so two flows between one pair stay apart. */
		if (isrecv[n])
			MPI_Irecv(buf + (size_t)n * bytes, (int)bytes, MPI_BYTE, s, i, MPI_COMM_WORLD, &req[n]);
		else
			MPI_Isend(buf + (size_t)n * bytes, (int)bytes, MPI_BYTE, d, i, MPI_COMM_WORLD, &req[n]);
		n++;
	}
	for (int k = 0; k < n; k++) {
		int idx;
		MPI_Waitany(n, req, &idx, MPI_STATUS_IGNORE);
		if (idx != MPI_UNDEFINED && isrecv[idx])
			printf("flow %d %d %.9f\n", src[idx], dst[idx], MPI_Wtime());
	}
	fflush(stdout);
	free(buf);
	MPI_Finalize();
	return 0;
}
