/*
 * prof_truth.h - the ground truth the profiler test programs keep: every
 * rank tallies, by hand, what it sends to each world rank (point-to-point)
 * and the logical traffic of its collectives, then prints one line:
 *
 *   truth rank=R p2p=W:BYTES:MSGS,... coll=W:BYTES:MSGS,...
 *
 * tests/integration/t_profiler.sh sums these and compares topoprof's report
 * with them. Plain C, no profiler involved.
 */
#ifndef PROF_TRUTH_H
#define PROF_TRUTH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

struct truth {
	int n;
	uint64_t *v;   /* [4 * n]: p2p bytes, p2p msgs, coll bytes, coll msgs */
};

static inline void truth_init(struct truth *t)
{
	MPI_Comm_size(MPI_COMM_WORLD, &t->n);
	t->v = calloc(4 * (size_t)t->n, sizeof(uint64_t));
	if (!t->v)
		MPI_Abort(MPI_COMM_WORLD, 2);
}

static inline void truth_p2p(struct truth *t, int w, uint64_t bytes)
{
	t->v[w] += bytes;
	t->v[t->n + w]++;
}

static inline void truth_coll(struct truth *t, int w, uint64_t bytes)
{
	t->v[2 * t->n + w] += bytes;
	t->v[3 * t->n + w]++;
}

static inline void truth_print(struct truth *t)
{
	int me;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	size_t cap = 64 + (size_t)t->n * 2 * 64, len = 0;
	char *line = malloc(cap);
	if (!line)
		MPI_Abort(MPI_COMM_WORLD, 2);
	len += (size_t)snprintf(line + len, cap - len, "truth rank=%d p2p=", me);
	for (int k = 0; k < 2; k++) {
		int first = 1;
		if (k)
			len += (size_t)snprintf(line + len, cap - len, " coll=");
		for (int w = 0; w < t->n; w++)
			if (t->v[2 * k * t->n + w] || t->v[(2 * k + 1) * t->n + w]) {
				len += (size_t)snprintf(line + len, cap - len, "%s%d:%llu:%llu", first ? "" : ",", w,
							(unsigned long long)t->v[2 * k * t->n + w],
							(unsigned long long)t->v[(2 * k + 1) * t->n + w]);
				first = 0;
			}
	}
	printf("%s\n", line);   /* one write per rank: mpirun never interleaves it */
	fflush(stdout);
	free(line);
	free(t->v);
}

#endif
