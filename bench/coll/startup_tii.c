/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * startup_tii.c - rank 0's part of MPI_Init under topocoll for N ranks,
 * without N processes (bench/coll/startup.sh): the same questions to topod
 * (coll/init.c's tc_learn: every host's leaf, then the delays) for the
 * host names of a TII_HOSTMAP-style file, timed REPS times.
 *
 *   startup_tii HOSTMAP N [REPS]
 *
 * Built with mpicc and the coll/ sources (it runs as a one-rank job, the
 * library's MPI_Init wrapper inside it is harmless).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int n = argc > 2 ? atoi(argv[2]) : 0, reps = argc > 3 ? atoi(argv[3]) : 5;
	FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
	char *names = n > 0 ? calloc((size_t)n, TC_NAME) : NULL;
	uint64_t *ids = n > 0 ? calloc((size_t)n, sizeof(*ids)) : NULL;
	if (!f || !names || !ids || reps < 1) {
		fprintf(stderr, "usage: startup_tii HOSTMAP N [REPS]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	char line[TC_NAME];
	for (int r = 0; r < n && fgets(line, sizeof(line), f); r++) {
		line[strcspn(line, "\r\n")] = '\0';
		snprintf(names + (size_t)r * TC_NAME, TC_NAME, "%s", line);
	}
	fclose(f);
	for (int i = 0; i < reps; i++) {
		double ms[4] = { 0 };
		tc_topo_free(&tc_g.topo);
		int rc = tc_learn(names, n, ids, ms);
		printf("startup_tii ranks=%d rc=%d leaves_ms=%.2f delays_ms=%.2f nodes=%d source=%s%s%s\n", n, rc, ms[1],
		       ms[2], tc_g.topo.nnodes, tc_g.topo.source, rc ? " why=" : "", rc ? tc_g.why : "");
	}
	free(names);
	free(ids);
	MPI_Finalize();
	return 0;
}
