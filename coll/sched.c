/*
 * sched.c - MPI_Alltoall's schedule: asked of topod once per communicator
 * (its first Alltoall), under topod's rule (docs/cost-model.md: `route`,
 * kept only where predicted at least as fast as XOR with the model's
 * measured errors against it, else topod answers XOR and the MPI's own
 * runs), or read from TOPOCOLL_SCHEDULE's file where topod is out of reach
 * (SMPI). Rank 0 of the communicator gets it and every rank keeps its own
 * part: per step whom it sends to and receives from.
 *
 * The schedule is untrusted: every ordered pair of distinct ranks must be
 * in it exactly once, or the Alltoall would lose or double a block; any
 * other schedule is refused and the MPI's own runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#ifndef TOPOCOLL_SMPI
#include "tii.h"
#endif

#define TC_SCHED_RANKS_MAX 1024   /* ranks of a communicator that gets a schedule */
#define TC_SCHED_LINE 65536

struct full {
	int n, nsteps, nflows;
	int *off, *src, *dst;
	double time_s, native_s;
	char algo[16];
};

static void full_free(struct full *f)
{
	free(f->off);
	free(f->src);
	free(f->dst);
}

/* Every ordered pair of distinct ranks once; at most TC_SCHED_MULTI sends
 * and receives of one rank in a step. */
static int valid(const struct full *f, char *why, size_t whyn)
{
	size_t n = (size_t)f->n;
	unsigned char *seen = calloc(n * n, 1);
	int *cnt = calloc(2 * n, sizeof(int)), bad = !seen || !cnt;
	if (bad)
		snprintf(why, whyn, "out of memory");
	for (int s = 0; !bad && s < f->nsteps; s++) {
		memset(cnt, 0, 2 * n * sizeof(int));
		for (int i = f->off[s]; i < f->off[s + 1] && !bad; i++) {
			int a = f->src[i], b = f->dst[i];
			if (a < 0 || b < 0 || a >= f->n || b >= f->n || a == b || seen[(size_t)a * n + b]++ ||
			    ++cnt[a] > TC_SCHED_MULTI || ++cnt[n + b] > TC_SCHED_MULTI) {
				snprintf(why, whyn, "schedule: step %d flow %d:%d bad, repeated or too many for a rank", s,
					 a, b);
				bad = 1;
			}
		}
	}
	if (!bad && f->nflows != f->n * (f->n - 1)) {
		snprintf(why, whyn, "schedule: %d flows, not every pair of %d ranks", f->nflows, f->n);
		bad = 1;
	}
	free(seen);
	free(cnt);
	return bad ? -1 : 0;
}

/* bench/jobspeed's form: "# OK ... algo=A time_us=T xor_time_us=X", then a
 * line of SRC:DST per step. */
static int from_file(struct full *f, const char *path, char *why, size_t whyn)
{
	FILE *fp = fopen(path, "r");
	char *line = malloc(TC_SCHED_LINE);
	size_t cap = (size_t)f->n * (f->n - 1);
	f->off = malloc(((size_t)f->n + 8) * sizeof(int));
	f->src = malloc((cap ? cap : 1) * sizeof(int));
	f->dst = malloc((cap ? cap : 1) * sizeof(int));
	int rc = -1;
	if (!fp || !line || !f->off || !f->src || !f->dst) {
		snprintf(why, whyn, "TOPOCOLL_SCHEDULE %.100s: %s", path, fp ? "out of memory" : "cannot open");
		goto out;
	}
	f->off[0] = 0;
	while (fgets(line, TC_SCHED_LINE, fp)) {
		if (line[0] == '#') {
			char *p;
			if ((p = strstr(line, " time_us=")))
				f->time_s = strtod(p + 9, NULL) * 1e-6;
			if ((p = strstr(line, "xor_time_us=")))
				f->native_s = strtod(p + 12, NULL) * 1e-6;
			if ((p = strstr(line, "algo=")))
				sscanf(p + 5, "%15s", f->algo);
			continue;
		}
		if (f->nsteps >= f->n + 6) {
			snprintf(why, whyn, "schedule: more than %d steps", f->n + 6);
			goto out;
		}
		int a, b, used;
		for (char *p = line; sscanf(p, "%d:%d%n", &a, &b, &used) == 2; p += used) {
			if ((size_t)f->nflows >= cap) {
				snprintf(why, whyn, "schedule: more flows than pairs");
				goto out;
			}
			f->src[f->nflows] = a;
			f->dst[f->nflows++] = b;
		}
		f->off[++f->nsteps] = f->nflows;
	}
	rc = 0;
out:
	if (fp)
		fclose(fp);
	free(line);
	return rc;
}

#ifndef TOPOCOLL_SMPI
static int from_topod(struct full *f, const struct tc_comm *c, char *why, size_t whyn)
{
	const char **hosts = malloc((size_t)c->size * sizeof(*hosts));
	tii_t *t = NULL;
	tii_schedule_t *s = NULL;
	int e = hosts ? 0 : TII_E_NOMEM;
	for (int r = 0; !e && r < c->size; r++)
		hosts[r] = tc_g.hostnames + (size_t)c->world[r] * TC_NAME;
	struct tii_schedule_params p = { .algo = TII_SCHED_ROUTE };
	if (!e)
		e = tii_open(&t, NULL);
	/* the same bound as MPI_Init's question: every rank waits for it */
	if (!e)
		e = tii_set_timeout(t, tc_g.timeout_ms);
	if (!e)
		e = tii_set_schedule_advice(t, 1 << 20, 1);
	if (!e)
		e = tii_get_schedule(t, &p, hosts, (size_t)c->size, &s);
	if (e) {
		snprintf(why, whyn, "topod: %s (%.80s)", tii_strerror(e), t ? tii_last_message(t) : "");
	} else {
		f->nsteps = s->nsteps;
		f->nflows = s->step_off[s->nsteps];
		f->time_s = s->time_s;
		f->native_s = s->xor_time_s;
		snprintf(f->algo, sizeof(f->algo), "%s", tii_schedule_algo_name(s->algo) ? tii_schedule_algo_name(s->algo) : "?");
		f->off = malloc(((size_t)f->nsteps + 1) * sizeof(int));
		f->src = malloc(((size_t)f->nflows + 1) * sizeof(int));
		f->dst = malloc(((size_t)f->nflows + 1) * sizeof(int));
		if (!f->off || !f->src || !f->dst) {
			snprintf(why, whyn, "out of memory");
			e = -1;
		} else {
			memcpy(f->off, s->step_off, ((size_t)f->nsteps + 1) * sizeof(int));
			memcpy(f->src, s->src, (size_t)f->nflows * sizeof(int));
			memcpy(f->dst, s->dst, (size_t)f->nflows * sizeof(int));
		}
	}
	tii_schedule_free(s);
	tii_close(t);
	free(hosts);
	return e ? -1 : 0;
}
#endif

/* This rank's part of the whole schedule. */
static struct tc_sched *mine(const struct full *f, int me)
{
	struct tc_sched *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->nsteps = f->nsteps;
	s->soff = calloc((size_t)f->nsteps + 1, sizeof(int));
	s->roff = calloc((size_t)f->nsteps + 1, sizeof(int));
	s->to = malloc(((size_t)f->n + 1) * sizeof(int));
	s->from = malloc(((size_t)f->n + 1) * sizeof(int));
	if (!s->soff || !s->roff || !s->to || !s->from) {
		tc_sched_free(s);
		return NULL;
	}
	int ns = 0, nr = 0;
	for (int i = 0; i < f->nsteps; i++) {
		for (int k = f->off[i]; k < f->off[i + 1]; k++) {
			if (f->src[k] == me)
				s->to[ns++] = f->dst[k];
			if (f->dst[k] == me)
				s->from[nr++] = f->src[k];
		}
		s->soff[i + 1] = ns;
		s->roff[i + 1] = nr;
	}
	s->time_s = f->time_s;
	s->native_s = f->native_s;
	memcpy(s->algo, f->algo, sizeof(s->algo));
	return s;
}

void tc_sched_free(struct tc_sched *s)
{
	if (!s)
		return;
	free(s->soff);
	free(s->roff);
	free(s->to);
	free(s->from);
	free(s);
}

/* Rank 0 gets the schedule: the file (for a communicator of the world's
 * ranks in the world's order), or topod. */
static int fetch(struct full *f, const struct tc_comm *c, char *why, size_t whyn)
{
	int nw = 0;
	PMPI_Comm_size(MPI_COMM_WORLD, &nw);
	if (!c->world) {
		snprintf(why, whyn, "out of memory");
		return -1;
	}
	if (tc_g.sched_file[0]) {
		for (int r = 0; r < c->size; r++)
			if (c->world[r] != r || c->size != nw) {
				snprintf(why, whyn, "TOPOCOLL_SCHEDULE is for MPI_COMM_WORLD's ranks only");
				return -1;
			}
		return from_file(f, tc_g.sched_file, why, whyn);
	}
#ifdef TOPOCOLL_SMPI
	snprintf(why, whyn, "no TOPOCOLL_SCHEDULE (topod is out of reach in a simulation)");
	return -1;
#else
	if (!tc_g.hostnames) {
		snprintf(why, whyn, "the ranks' hosts are not known");
		return -1;
	}
	return from_topod(f, c, why, whyn);
#endif
}

void tc_sched_get(struct tc_comm *c)
{
	struct full f = { .n = c->size };
	int ok = 0;
	c->sched_asked = 1;
	if (c->rank == 0) {
		if (c->size > TC_SCHED_RANKS_MAX)
			snprintf(c->sched_why, sizeof(c->sched_why), "more than %d ranks", TC_SCHED_RANKS_MAX);
		else if (!fetch(&f, c, c->sched_why, sizeof(c->sched_why)) && !valid(&f, c->sched_why, sizeof(c->sched_why)))
			ok = 1;
	}
	double times[2] = { f.time_s, f.native_s };
	int hdr[3] = { ok, f.nsteps, f.nflows };
	PMPI_Bcast(hdr, 3, MPI_INT, 0, c->pcomm);
	PMPI_Bcast(c->sched_why, (int)sizeof(c->sched_why), MPI_CHAR, 0, c->pcomm);
	if (hdr[0]) {
		PMPI_Bcast(times, 2, MPI_DOUBLE, 0, c->pcomm);
		PMPI_Bcast(f.algo, (int)sizeof(f.algo), MPI_CHAR, 0, c->pcomm);
		f.nsteps = hdr[1];
		f.nflows = hdr[2];
		f.time_s = times[0];
		f.native_s = times[1];
		if (c->rank) {
			f.off = malloc(((size_t)f.nsteps + 1) * sizeof(int));
			f.src = malloc(((size_t)f.nflows + 1) * sizeof(int));
			f.dst = malloc(((size_t)f.nflows + 1) * sizeof(int));
		}
		int bad = !f.off || !f.src || !f.dst, any;
		PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->pcomm);
		if (!any) {
			PMPI_Bcast(f.off, f.nsteps + 1, MPI_INT, 0, c->pcomm);
			PMPI_Bcast(f.src, f.nflows, MPI_INT, 0, c->pcomm);
			PMPI_Bcast(f.dst, f.nflows, MPI_INT, 0, c->pcomm);
			c->sched = mine(&f, c->rank);
		}
		/* every rank must hold its part, or none runs it */
		bad = !c->sched;
		PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->pcomm);
		if (any) {
			tc_sched_free(c->sched);
			c->sched = NULL;
			snprintf(c->sched_why, sizeof(c->sched_why), "out of memory");
		}
	}
	full_free(&f);
}
