/*
 * tii_alltoall.c - an MPI all-to-all run step by step along the schedule
 * libtii returns, checked against MPI_Alltoall.
 *
 *   mpirun -np N -x TII_SERVERS -x TII_HOSTMAP=hosts.map [-x TII_ALLTOALL_ASIS=1] ./tii_alltoall ALGO [CONFLICTS]
 *
 * TII_ALLTOALL_ASIS=1 asks for the algorithm as named (fallback=0), to test
 * its mechanics; without it topod may answer XOR where it predicts ALGO
 * slower, as an MPI library would be told.
 *
 * Every rank reads its simulated host from line `rank` of $TII_HOSTMAP
 * (blank and '#' lines skipped); rank 0 gathers them, asks topod for the
 * schedule (tii_get_schedule: ALGO = xor, tacs1, tacs2, opt), broadcasts it,
 * and every rank runs it: per step one MPI_Sendrecv with its partner (or
 * MPI_Isend/MPI_Irecv for all its flows when the schedule says multi=1).
 * Each block carries (source, destination, index) in every word. Checks on
 * every rank: every other rank's block arrived exactly once, and the whole
 * receive buffer equals MPI_Alltoall's. Rank 0 prints
 *   tii_alltoall algo=A requested=R ranks=N steps=S multi=M gen=G result=ok|FAIL errors=E
 * and the per-step figures as "step I flows maxload conflicts fabric".
 * Exit status 0 only if every rank found no error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tii.h"

#define NAME_SLOT (TII_NAME_MAX + 1)
#define BLOCK 64 /* ints per block */

static int my_host(int rank, char *name)
{
	const char *map = getenv("TII_HOSTMAP");
	FILE *f = map ? fopen(map, "r") : NULL;
	char line[1024];
	int i = 0, found = 0;
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (i++ == rank && strlen(line) < NAME_SLOT) {
			strcpy(name, line);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static int word(int src, int dst, int k)
{
	return src * 1000003 + dst * 1009 + k;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, np;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	const char *algo_name = argc > 1 ? argv[1] : "tacs1";
	int algo = -1;
	for (int a = 0; a < 5; a++)
		if (tii_schedule_algo_name(a) && !strcmp(tii_schedule_algo_name(a), algo_name))
			algo = a;
	char name[NAME_SLOT] = "";
	int bad = my_host(rank, name) || algo < 0 || algo == TII_SCHED_ALLGATHER;
	char *all = rank == 0 ? malloc((size_t)np * NAME_SLOT) : NULL;
	MPI_Gather(name, NAME_SLOT, MPI_CHAR, all, NAME_SLOT, MPI_CHAR, 0, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (bad) {
		if (rank == 0)
			fprintf(stderr, "tii_alltoall: a rank has no host in $TII_HOSTMAP, or bad algorithm '%s'\n",
				algo_name);
		MPI_Finalize();
		return 1;
	}
	/* head: nsteps, nflows, multi, algo, requested, generation (lo, hi), rc */
	int head[8] = { 0 };
	tii_schedule_t *s = NULL;
	if (rank == 0) {
		const char **hosts = malloc((size_t)np * sizeof(*hosts));
		for (int r = 0; r < np; r++)
			hosts[r] = all + (size_t)r * NAME_SLOT;
		tii_t *t = NULL;
		struct tii_schedule_params p = { .algo = algo, .conflicts = argc > 2 ? atoi(argv[2]) : 1 };
		int rc = tii_open(&t, NULL);
		const char *asis = getenv("TII_ALLTOALL_ASIS");
		if (!rc && asis && !strcmp(asis, "1"))
			rc = tii_set_schedule_advice(t, 0, 0);
		rc = rc ? rc : tii_get_schedule(t, &p, hosts, (size_t)np, &s);
		if (rc) {
			fprintf(stderr, "tii_alltoall: tii_get_schedule: %s (%s)\n", tii_strerror(rc),
				t ? tii_last_message(t) : "");
			head[7] = rc;
		} else {
			head[0] = s->nsteps;
			head[1] = s->step_off[s->nsteps];
			head[2] = s->multi;
			head[3] = s->algo;
			head[4] = s->requested;
			head[5] = (int)(s->generation & 0x7fffffff);
		}
		tii_close(t);
		free(hosts);
	}
	MPI_Bcast(head, 8, MPI_INT, 0, MPI_COMM_WORLD);
	if (head[7]) {
		MPI_Finalize();
		return 1;
	}
	int nsteps = head[0], nflows = head[1], multi = head[2];
	int *off = malloc(((size_t)nsteps + 1) * sizeof(*off));
	int *src = malloc(((size_t)nflows + 1) * sizeof(*src));
	int *dst = malloc(((size_t)nflows + 1) * sizeof(*dst));
	if (rank == 0) {
		memcpy(off, s->step_off, ((size_t)nsteps + 1) * sizeof(*off));
		memcpy(src, s->src, (size_t)nflows * sizeof(*src));
		memcpy(dst, s->dst, (size_t)nflows * sizeof(*dst));
	}
	MPI_Bcast(off, nsteps + 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Bcast(src, nflows, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Bcast(dst, nflows, MPI_INT, 0, MPI_COMM_WORLD);

	int *sbuf = malloc((size_t)np * BLOCK * sizeof(int));
	int *rbuf = malloc((size_t)np * BLOCK * sizeof(int));
	int *ref = malloc((size_t)np * BLOCK * sizeof(int));
	int *got = calloc((size_t)np, sizeof(int));
	MPI_Request *req = malloc(2 * ((size_t)np + 1) * sizeof(*req));
	for (int d = 0; d < np; d++)
		for (int k = 0; k < BLOCK; k++)
			sbuf[d * BLOCK + k] = word(rank, d, k);
	memset(rbuf, 0xff, (size_t)np * BLOCK * sizeof(int));
	memcpy(rbuf + rank * BLOCK, sbuf + rank * BLOCK, BLOCK * sizeof(int)); /* the self block */
	got[rank] = 1;
	int errors = 0;
	for (int st = 0; st < nsteps; st++) {
		int to = MPI_PROC_NULL, from = MPI_PROC_NULL, nto = 0, nfrom = 0;
		for (int f = off[st]; f < off[st + 1]; f++) {
			if (src[f] == rank) {
				to = dst[f];
				nto++;
			}
			if (dst[f] == rank) {
				from = src[f];
				nfrom++;
			}
		}
		if (!multi && (nto > 1 || nfrom > 1))
			errors++; /* the schedule said one partner per step */
		if (nto <= 1 && nfrom <= 1) {
			MPI_Sendrecv(to == MPI_PROC_NULL ? sbuf : sbuf + to * BLOCK, BLOCK, MPI_INT, to, st,
				     from == MPI_PROC_NULL ? ref : rbuf + from * BLOCK, BLOCK, MPI_INT, from, st,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (from != MPI_PROC_NULL)
				got[from]++;
		} else {
			int n = 0;
			for (int f = off[st]; f < off[st + 1]; f++) {
				if (dst[f] == rank) {
					MPI_Irecv(rbuf + src[f] * BLOCK, BLOCK, MPI_INT, src[f], st, MPI_COMM_WORLD, &req[n++]);
					got[src[f]]++;
				}
				if (src[f] == rank)
					MPI_Isend(sbuf + dst[f] * BLOCK, BLOCK, MPI_INT, dst[f], st, MPI_COMM_WORLD, &req[n++]);
			}
			MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
		}
	}
	for (int r = 0; r < np; r++)
		if (got[r] != 1)
			errors++;
	MPI_Alltoall(sbuf, BLOCK, MPI_INT, ref, BLOCK, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < np * BLOCK; i++)
		if (rbuf[i] != ref[i] || ref[i] != word(i / BLOCK, rank, i % BLOCK))
			errors++;
	MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("tii_alltoall algo=%s requested=%s ranks=%d steps=%d multi=%d gen=%d result=%s errors=%d\n",
		       tii_schedule_algo_name(head[3]), tii_schedule_algo_name(head[4]), np, nsteps, multi, head[5],
		       errors ? "FAIL" : "ok", errors);
		for (int st = 0; st < nsteps; st++)
			printf("step %d %d %d %d %d\n", st, s->steps[st].flows, s->steps[st].maxload, s->steps[st].conflicts,
			       s->steps[st].fabric_conflicts);
		tii_schedule_free(s);
	}
	free(all);
	free(off);
	free(src);
	free(dst);
	free(sbuf);
	free(rbuf);
	free(ref);
	free(got);
	free(req);
	MPI_Finalize();
	return errors ? 1 : 0;
}
