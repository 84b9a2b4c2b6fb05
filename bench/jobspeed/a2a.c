/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a2a.c - the all-to-all variants of the job-speed benchmark
 * (docs/performance.md, "Job speed in SMPI"), one program so that every
 * variant shares the buffers, the timing and the output line;
 * bench/jobspeed/run.py builds it with smpicc and runs it under smpirun on a
 * platform exported by `topoquery simgrid`.
 *
 *   a2a BYTES sched FILE [W]  (a) a schedule: one line per step, "SRC:DST ..." (ranks),
 *                          W steps in flight (a sliding window: step s+W is posted
 *                          once step s is done; default the header's window=, else 1)
 *   a2a BYTES xor          (b) XOR exchange (P a power of two), else pairwise
 *   a2a BYTES alltoall     (c) MPI_Alltoall (smpirun --cfg=smpi/coll-selector:ompi|mpich)
 *   a2a BYTES allatonce    (d) every Isend/Irecv posted at once, one Waitall
 *
 * BYTES is the message of one ordered pair. Rank 0 prints one line:
 *   a2a MODE ranks=P bytes=B steps=S time=SECONDS
 * where SECONDS is the latest end minus the earliest start over all ranks
 * (under SMPI MPI_Wtime is simulated time). It also builds with a real mpicc,
 * so the same variants can be timed on the cluster the platform describes.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared buffers: SMPI runs every rank in one process, and 64 ranks with
 * 2 x 64 MiB each would not fit; shared blocks also skip the payload copy,
 * whose host-machine cost is no part of the simulated network time. */
#ifdef SMPI_SHARED_MALLOC
#define BUF_ALLOC(n) SMPI_SHARED_MALLOC(n)
#define BUF_FREE(p) SMPI_SHARED_FREE(p)
#else
#define BUF_ALLOC(n) malloc(n)
#define BUF_FREE(p) free(p)
#endif

struct op {
	int step, peer, send;
};

static void die(int me, const char *msg)
{
	if (!me)
		fprintf(stderr, "a2a: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* This rank's flows of the schedule in FILE, in step order; returns the
 * number of steps (lines) or -1. Every rank parses the whole file: steps
 * must be numbered alike everywhere, as the tags are the step numbers. */
static int read_schedule(const char *path, int me, int nranks, struct op **ops, int *nops, int *window)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t cap = 64, n = 0;
	struct op *o = malloc(cap * sizeof *o);
	char *line = NULL;
	size_t len = 0;
	int step = 0, bad = 0;
	while (!bad && getline(&line, &len, f) > 0) {
		if (line[0] == '#') {
			/* topod's reply head: the window its time is predicted for */
			const char *w = strstr(line, " window=");
			if (w && *window <= 0)
				*window = atoi(w + 8);
			continue;
		}
		for (char *p = line; *p;) {
			char *end;
			long s = strtol(p, &end, 10);
			if (end == p) {
				p++;
				continue;
			}
			if (*end != ':') {
				bad = 1;
				break;
			}
			p = end + 1;
			long d = strtol(p, &end, 10);
			if (end == p || s < 0 || d < 0 || s >= nranks || d >= nranks || s == d) {
				bad = 1;
				break;
			}
			p = end;
			if (s != me && d != me)
				continue;
			if (n == cap) {
				cap *= 2;
				o = realloc(o, cap * sizeof *o);
			}
			o[n++] = (struct op){ step, s == me ? (int)d : (int)s, s == me };
		}
		step++;
	}
	free(line);
	fclose(f);
	if (bad) {
		free(o);
		return -1;
	}
	*ops = o;
	*nops = (int)n;
	return step;
}

/* One step's operations: Sendrecv where the rank has one flow each way (as
 * pairwise Alltoall implementations do), otherwise everything posted and
 * waited for together (TACS2 steps give a rank several flows). */
static void run_step(const struct op *o, int n, int tag, char *sbuf, char *rbuf, int bytes,
		     MPI_Request *req)
{
	if (n == 2 && o[0].send != o[1].send) {
		const struct op *s = o[0].send ? &o[0] : &o[1], *r = o[0].send ? &o[1] : &o[0];
		MPI_Sendrecv(sbuf, bytes, MPI_BYTE, s->peer, tag, rbuf, bytes, MPI_BYTE, r->peer, tag,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		return;
	}
	for (int i = 0; i < n; i++) {
		/* Distinct receive blocks per flow: the buffers hold P blocks. */
		if (o[i].send)
			MPI_Isend(sbuf + (size_t)o[i].peer * bytes, bytes, MPI_BYTE, o[i].peer, tag,
				  MPI_COMM_WORLD, &req[i]);
		else
			MPI_Irecv(rbuf + (size_t)o[i].peer * bytes, bytes, MPI_BYTE, o[i].peer, tag,
				  MPI_COMM_WORLD, &req[i]);
	}
	MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

/* The schedule with `window` steps in flight: every rank keeps the steps
 * from its oldest unfinished one up to window - 1 beyond it posted
 * (Irecv/Isend), and waits for them in step order, as libtopocoll runs a
 * windowed schedule (docs/collectives.md). */
static void run_window(const struct op *o, int n, int window, char *sbuf, char *rbuf, int bytes, MPI_Request *req)
{
	int nst = n ? o[n - 1].step + 1 : 0, posted = 0, k = 0;
	int *first = malloc(((size_t)nst + 1) * sizeof(int));
	for (int s = 0, i = 0; s <= nst; s++) {
		first[s] = i;
		while (i < n && o[i].step == s)
			i++;
	}
	for (int s = 0; s < nst; s++) {
		for (; posted < nst && posted < s + window; posted++)
			for (k = first[posted]; k < first[posted + 1]; k++) {
				if (o[k].send)
					MPI_Isend(sbuf + (size_t)o[k].peer * bytes, bytes, MPI_BYTE, o[k].peer, o[k].step,
						  MPI_COMM_WORLD, &req[k]);
				else
					MPI_Irecv(rbuf + (size_t)o[k].peer * bytes, bytes, MPI_BYTE, o[k].peer, o[k].step,
						  MPI_COMM_WORLD, &req[k]);
			}
		MPI_Waitall(first[s + 1] - first[s], req + first[s], MPI_STATUSES_IGNORE);
	}
	free(first);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int me, np;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	if (argc < 3)
		die(me, "usage: a2a BYTES sched FILE | xor | alltoall | allatonce");
	long lbytes = atol(argv[1]);
	const char *mode = argv[2];
	if (lbytes <= 0 || lbytes > (1L << 30))
		die(me, "BYTES must be 1 .. 2^30");
	int bytes = (int)lbytes;
	size_t total = (size_t)bytes * (size_t)np;
	char *sbuf = BUF_ALLOC(total), *rbuf = BUF_ALLOC(total);
	if (!sbuf || !rbuf)
		die(me, "out of memory");
	MPI_Request *req = malloc(2 * (size_t)np * sizeof *req);
	struct op *ops = NULL;
	int nops = 0, steps = 0, window = 1;
	if (!strcmp(mode, "sched")) {
		if (argc < 4)
			die(me, "sched needs a FILE");
		window = argc > 4 ? atoi(argv[4]) : 0;
		steps = read_schedule(argv[3], me, np, &ops, &nops, &window);
		if (window < 1)
			window = 1;
		if (steps < 0)
			die(me, "unreadable schedule file");
	} else if (strcmp(mode, "xor") && strcmp(mode, "alltoall") && strcmp(mode, "allatonce")) {
		die(me, "unknown mode");
	}

	/* The barrier's own messages end at slightly different times per rank;
	 * timing from the earliest start keeps the figure an upper bound. */
	MPI_Barrier(MPI_COMM_WORLD);
#ifdef SMPI_SHARED_MALLOC
	/* Under SMPI every rank starts at one simulated instant: the barrier's
	 * skew (up to a microsecond: its last messages take routes of other
	 * lengths) is a tenth of a 1 KiB exchange on 16 ranks, and no part of
	 * the exchange the model predicts. Each rank computes (simulated, no
	 * network) until 100 us after the latest rank left the barrier; the
	 * allreduce that finds it ends long before. Flops on the platform's
	 * 1 Gf hosts (topoquery simgrid), not smpi_execute(), whose seconds
	 * are scaled by smpi/host-speed and left the ranks 2 us apart. */
	double left = MPI_Wtime(), latest;
	MPI_Allreduce(&left, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	for (int i = 0; i < 4 && latest + 100e-6 > MPI_Wtime(); i++)
		smpi_execute_flops((latest + 100e-6 - MPI_Wtime()) * 1e9);
#endif
	double t0 = MPI_Wtime();
	if (ops && window > 1) {
		run_window(ops, nops, window, sbuf, rbuf, bytes, req);
	} else if (ops) {
		for (int i = 0; i < nops;) {
			int j = i;
			while (j < nops && ops[j].step == ops[i].step)
				j++;
			run_step(ops + i, j - i, ops[i].step, sbuf, rbuf, bytes, req);
			i = j;
		}
	} else if (!strcmp(mode, "xor")) {
		int pow2 = (np & (np - 1)) == 0;
		steps = np - 1;
		for (int i = 1; i < np; i++) {
			int to = pow2 ? me ^ i : (me + i) % np, from = pow2 ? me ^ i : (me - i + np) % np;
			MPI_Sendrecv(sbuf + (size_t)to * bytes, bytes, MPI_BYTE, to, i,
				     rbuf + (size_t)from * bytes, bytes, MPI_BYTE, from, i, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
		}
	} else if (!strcmp(mode, "alltoall")) {
		MPI_Alltoall(sbuf, bytes, MPI_BYTE, rbuf, bytes, MPI_BYTE, MPI_COMM_WORLD);
	} else {
		int n = 0;
		steps = 1;
		/* Receives first, then sends in a rotated order, so that no
		 * destination sees every sender's first message at once. */
		for (int i = 1; i < np; i++) {
			int from = (me - i + np) % np;
			MPI_Irecv(rbuf + (size_t)from * bytes, bytes, MPI_BYTE, from, 0, MPI_COMM_WORLD, &req[n++]);
		}
		for (int i = 1; i < np; i++) {
			int to = (me + i) % np;
			MPI_Isend(sbuf + (size_t)to * bytes, bytes, MPI_BYTE, to, 0, MPI_COMM_WORLD, &req[n++]);
		}
		MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
	}
	double t1 = MPI_Wtime(), start, end;
	MPI_Reduce(&t0, &start, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t1, &end, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (!me)
		printf("a2a %s ranks=%d bytes=%d window=%d steps=%d time=%.9f\n", mode, np, bytes, window, steps,
		       end - start);
	fflush(stdout);
	free(ops);
	free(req);
	BUF_FREE(sbuf);
	BUF_FREE(rbuf);
	MPI_Finalize();
	return 0;
}
