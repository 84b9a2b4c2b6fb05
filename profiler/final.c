/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * final.c - the end of a profile (MPI_Finalize or MPI_Pcontrol(2)): every
 * rank names its host, rank 0 gathers the names, asks topod once about the
 * job's hosts, receives each rank's counters in turn (folding them as they
 * come, so rank 0 never holds the n x n matrix), and writes the report.
 *
 * Which host a rank is on: common/mpihost.h (TII_HOST, TII_HOSTMAP, the
 * short hostname).
 *
 * Nothing here may make the job fail: a rank whose host cannot be named is
 * reported as "?", topod down or ignorant of the hosts leaves the report
 * without its fabric part (and it says why), a report that cannot be written
 * is one line on rank 0's stderr. All traffic of the profiler itself goes
 * through PMPI_* on a private communicator, so it is never counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "mpihost.h"
#include "prof.h"


static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long env_long(const char *var, long def, long lo, long hi)
{
	const char *s = getenv(var);
	char *end;
	if (!s || !*s)
		return def;
	long v = strtol(s, &end, 10);
	return (*end || v < lo || v > hi) ? def : v;
}

/* What every rank contributes besides its row, reduced to rank 0. */
enum { X_HEAP, X_UNTRACKED, X_UNTRANSLATED, X_BADHOST, X_N };

void prof_report(const char *tag)
{
	if (!prof.active)
		return;
	int was_paused = prof.paused;
	prof.paused = 1;   /* the report's own traffic is never counted */
	double t0 = now();

	MPI_Comm comm;
	PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
	int me = prof.me, n = prof.n;

	char name[PROF_NAME_SLOT] = "", why[PROF_WHY] = "";
	int bad = mpihost_name(me, name, PROF_NAME_SLOT, why, PROF_WHY) != 0;
	if (bad)
		strcpy(name, "?");
	/* rank 0's buffers first, and everyone told whether there are any: a
	 * rank 0 out of memory ends the report on every rank, not the job */
	size_t rowlen = (size_t)ROW_NARRAYS * (size_t)n;
	char *names = NULL;
	uint64_t *buf = NULL;
	int can = 1;
	if (me == 0) {
		names = malloc((size_t)n * PROF_NAME_SLOT);
		buf = malloc(rowlen * sizeof(uint64_t));
		can = names && buf;
	}
	PMPI_Bcast(&can, 1, MPI_INT, 0, comm);
	if (!can) {
		if (me == 0)
			fprintf(stderr, "topoprof: rank 0: out of memory for the report of %d ranks; no report\n", n);
		free(names);
		free(buf);
		PMPI_Comm_free(&comm);
		prof.paused = was_paused;
		return;
	}
	PMPI_Gather(name, PROF_NAME_SLOT, MPI_CHAR, names, PROF_NAME_SLOT, MPI_CHAR, 0, comm);

	uint64_t x[X_N] = { prof.heap, prof.untracked, prof.untranslated, (uint64_t)bad }, xs[X_N], xmax = 0;
	uint64_t calls[C_NCOLL];
	PMPI_Reduce(x, xs, X_N, MPI_UINT64_T, MPI_SUM, 0, comm);
	PMPI_Reduce(&x[X_HEAP], &xmax, 1, MPI_UINT64_T, MPI_MAX, 0, comm);
	PMPI_Reduce(prof.coll_calls, calls, C_NCOLL, MPI_UINT64_T, MPI_SUM, 0, comm);
	if (bad)   /* each rank says its own reason once */
		fprintf(stderr, "topoprof: rank %d: host unknown (%s); its traffic is reported as host \"?\"\n", me,
			why);

	if (me != 0) {
		PMPI_Send(prof.row, (int)rowlen, MPI_UINT64_T, 0, 0, comm);
		PMPI_Comm_free(&comm);
		prof.paused = was_paused;
		return;
	}

	/* rank 0 */
	struct prof_rep R;
	int ok = rep_init(&R, n, names) == 0;
	free(names);
	void *h = NULL;
	double t1 = now();
	if (ok) {
		R.max_rank_heap = xmax;
		R.untracked = xs[X_UNTRACKED];
		R.untranslated = xs[X_UNTRANSLATED];
		memcpy(R.coll_calls, calls, sizeof(calls));
		fab_query(&R, &h);
	}
	double t2 = now();
	for (int r = 0; r < n; r++) {
		const uint64_t *row = prof.row;
		if (r) {   /* every rank sends, so rank 0 receives all even when it cannot use them */
			PMPI_Recv(buf, (int)rowlen, MPI_UINT64_T, r, 0, comm, MPI_STATUS_IGNORE);
			row = buf;
		}
		if (ok)
			rep_add_row(&R, r, row);
	}
	PMPI_Comm_free(&comm);
	free(buf);
	if (!ok) {
		fprintf(stderr, "topoprof: rank 0: out of memory for the report of %d ranks; no report\n", n);
		prof.paused = was_paused;
		return;
	}
	double t3 = now();
	if (R.fab.ok && env_long("TOPOPROF_LINKS", 1, 0, 1))
		links_compute(&R, h, (int)env_long("TOPOPROF_TOP", 10, 1, 1000));
	else if (R.fab.ok)
		snprintf(R.fab.links_why, PROF_WHY, "not asked (TOPOPROF_LINKS=0)");
	else
		snprintf(R.fab.links_why, PROF_WHY, "no fabric part");
	fab_close(h);
	double t4 = now();
	R.secs_gather = (t1 - t0) + (t3 - t2);
	R.secs_fabric = (t2 - t1) + (t4 - t3);

	const char *prefix = getenv("TOPOPROF_OUT");
	char path[4096];
	snprintf(path, sizeof(path), "%s%s", prefix && *prefix ? prefix : "topoprof", tag);
	char werr[PROF_WHY] = "";
	/* TOPOPROF_QUIET silences every "report in" line (the report itself
	 * says what it lacks and why); a report not written is always said. */
	int quiet = env_long("TOPOPROF_QUIET", 0, 0, 1) != 0;
	if (rep_write(&R, path, werr))
		fprintf(stderr, "topoprof: cannot write the report: %s\n", werr);
	else if (quiet)
		;
	else if (!R.fab.ok)
		fprintf(stderr, "topoprof: report in %s.txt WITHOUT its fabric part: %s\n", path, R.fab.why);
	else if (!R.fab.links_ok)
		fprintf(stderr, "topoprof: report in %s.txt (no link loads: %s)\n", path, R.fab.links_why);
	else
		fprintf(stderr, "topoprof: report in %s.txt, %s.json and %s-*.svg\n", path, path, path);
	rep_free(&R);
	prof.paused = was_paused;
}
