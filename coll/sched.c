/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched.c - MPI_Alltoall's schedule: asked of topod once per communicator
 * and its dups (the first Alltoall of any of them; coll.h's tc_a2a), under topod's rule (docs/cost-model.md: `route`,
 * kept only where predicted at least as fast as XOR with the model's
 * measured errors against it, else topod answers XOR and the MPI's own
 * runs), or read from TOPOCOLL_SCHEDULE's file where topod is out of reach
 * (SMPI). Rank 0 of the communicator gets it; every rank gets topod's
 * predictions at once (one broadcast), but its own part of the steps (per
 * step whom it sends to and receives from) only at the first call that
 * runs the schedule. Libraries make many communicators whose Alltoalls
 * stay the MPI's (FFTW's plans each dup MPI_COMM_WORLD), and sharing
 * steps nobody runs cost each of them about ten collectives.
 *
 * The schedule is untrusted: every ordered pair of distinct ranks must be
 * in it exactly once, or the Alltoall would lose or double a block; any
 * other schedule is refused and the MPI's own runs.
 *
 * MPI_Allgather's schedule the same way (its first call with blocks of
 * TOPOCOLL_ALLGATHER_MIN or more; TOPOCOLL_ALLGATHER_SCHEDULE's file):
 * topod's `schedule agbest`, the fastest it predicts of kPrefix, kShift
 * (Kumar and Kalé 2004) and the ring in the fabric's order, flows naming
 * the block they carry. Untrusted too: every rank must end with every
 * other rank's block exactly once, and send only a block it held before
 * the step (its own, or one received in an earlier step); else refused,
 * and the ring or the MPI's own runs.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "native.h"
#ifndef TOPOCOLL_SMPI
#include "tii.h"
#endif

#define TC_SCHED_RANKS_MAX 1024   /* ranks of a communicator that gets a schedule */
#define TC_SCHED_LINE 65536

struct tc_whole {
	int n, nsteps, nflows;
	int ag;                /* an allgather's: blk says each flow's block */
	int *off, *src, *dst, *blk;
	double time_s, native_s, agring_s; /* an allgather's: its time, the ring in rank order's, agring's */
	unsigned long long bytes;
	char algo[16];
	/* an all-to-all's predictions per size class: from topod's reply, or
	 * from each `# OK` header of a schedule file */
	struct tc_a2a_pred pred[TC_CLASSES];
};

static void whole_free(struct tc_whole *f)
{
	free(f->off);
	free(f->src);
	free(f->dst);
	free(f->blk);
}

/* Every rank ends with every other rank's block once, and sends only a
 * block it held before the step; at most TC_SCHED_MULTI sends and
 * receives of one rank in a step. got[r * n + b]: the step in which rank r
 * received block b (-1 its own, INT_MAX not yet). */
static int valid_ag(const struct tc_whole *f, char *why, size_t whyn)
{
	size_t n = (size_t)f->n;
	/* kPrefix, kShift and the rings take P-1 steps: a hostile count would
	 * size every rank's step arrays (mine_ag) for the communicator's life. */
	if ((size_t)f->nsteps > 2 * n + 8) {
		snprintf(why, whyn, "schedule: %d steps for %d ranks", f->nsteps, f->n);
		return -1;
	}
	int *got = malloc(n * n * sizeof(int)), *cnt = calloc(2 * n, sizeof(int)), bad = !got || !cnt;
	if (bad)
		snprintf(why, whyn, "out of memory");
	for (size_t i = 0; !bad && i < n * n; i++)
		got[i] = i % (n + 1) ? INT_MAX : -1;
	for (int s = 0; !bad && s < f->nsteps; s++) {
		memset(cnt, 0, 2 * n * sizeof(int));
		for (int i = f->off[s]; i < f->off[s + 1] && !bad; i++) {
			int a = f->src[i], b = f->dst[i], k = f->blk[i];
			const char *e = NULL;
			if (a < 0 || b < 0 || k < 0 || a >= f->n || b >= f->n || k >= f->n || a == b)
				e = "a rank out of range";
			else if (got[(size_t)a * n + k] >= s)
				e = "a block sent before its sender has it";
			else if (got[(size_t)b * n + k] != INT_MAX)
				e = "a block its receiver already has";
			else if (++cnt[a] > TC_SCHED_MULTI || ++cnt[n + b] > TC_SCHED_MULTI)
				e = "too many flows of one rank";
			if (e) {
				snprintf(why, whyn, "schedule: step %d flow %d:%d:%d: %s", s, a, b, k, e);
				bad = 1;
			} else {
				got[(size_t)b * n + k] = s;
			}
		}
	}
	for (size_t i = 0; !bad && i < n * n; i++)
		if (got[i] == INT_MAX) {
			snprintf(why, whyn, "schedule: rank %zu never gets block %zu", i / n, i % n);
			bad = 1;
		}
	free(got);
	free(cnt);
	return bad ? -1 : 0;
}

/* Every ordered pair of distinct ranks once; at most TC_SCHED_MULTI sends
 * and receives of one rank in a step. */
static int valid(const struct tc_whole *f, char *why, size_t whyn)
{
	if (f->ag)
		return valid_ag(f, why, whyn);
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

/* An all-to-all header's predictions, "# OK ... bytes=B time_us=T
 * window=W native=M native_algo=A native_time_us=N" (fallback=native: the
 * MPI's own is predicted no slower), for the size class of B. A header
 * without native_time_us (topod before 1.7, or no model asked) gives no
 * prediction for its class: the MPI's own runs there. */
static void a2a_header(struct tc_whole *f, const char *line)
{
	const char *p = strstr(line, " bytes=");
	long long b = p ? strtoll(p + 7, NULL, 10) : 0;
	if (b <= 0 || !(p = strstr(line, " native_time_us=")) || p[16] == '-')
		return;
	struct tc_a2a_pred *x = &f->pred[tc_size_class(b)];
	*x = (struct tc_a2a_pred){ .state = 1, .window = 1, .bytes = (unsigned long long)b, .native_s = -1,
				   .time_s = -1 };
	x->native_s = strtod(p + 16, NULL) * 1e-6;
	if ((p = strstr(line, " time_us=")) && p[9] != '-')
		x->time_s = strtod(p + 9, NULL) * 1e-6;
	if ((p = strstr(line, " window=")))
		x->window = (unsigned char)atoi(p + 8);
	if ((p = strstr(line, " native_algo=")))
		sscanf(p + 13, "%15s", x->native_algo);
	x->keep = !strstr(line, " fallback=native") && x->time_s > 0;
	if (x->window < 1 || x->window > TC_WINDOW_MAX)
		x->state = -1;
}

/* The header's figures: "# OK ... algo=A time_us=T xor_time_us=X" (an
 * allgather's: ring_time_us=R variants=...,agring:STATE:T2). */
static void file_header(struct tc_whole *f, const char *line)
{
	const char *p;
	if (!f->ag)
		a2a_header(f, line);
	if ((p = strstr(line, " time_us=")))
		f->time_s = strtod(p + 9, NULL) * 1e-6;
	if ((p = strstr(line, f->ag ? "ring_time_us=" : "xor_time_us=")))
		f->native_s = strtod(p + (f->ag ? 13 : 12), NULL) * 1e-6;
	if (f->ag && (p = strstr(line, "agring:")) && (p = strchr(p + 7, ':')))
		f->agring_s = strtod(p + 1, NULL) * 1e-6;
	if ((p = strstr(line, " bytes=")))
		f->bytes = strtoull(p + 7, NULL, 10);
	if ((p = strstr(line, "algo=")))
		sscanf(p + 5, "%15s", f->algo);
}

/* bench/jobspeed's form: the header, then a line of SRC:DST (an
 * allgather's: SRC:DST:BLOCK) per step. */
static int from_file(struct tc_whole *f, const char *path, char *why, size_t whyn)
{
	FILE *fp = fopen(path, "r");
	char *line = malloc(TC_SCHED_LINE);
	size_t cap = (size_t)f->n * (f->n - 1);
	f->off = malloc(((size_t)f->n + 8) * sizeof(int));
	f->src = malloc((cap ? cap : 1) * sizeof(int));
	f->dst = malloc((cap ? cap : 1) * sizeof(int));
	f->blk = f->ag ? malloc((cap ? cap : 1) * sizeof(int)) : NULL;
	int rc = -1;
	if (!fp || !line || !f->off || !f->src || !f->dst || (f->ag && !f->blk)) {
		snprintf(why, whyn, "%s %.100s: %s", f->ag ? "TOPOCOLL_ALLGATHER_SCHEDULE" : "TOPOCOLL_SCHEDULE", path,
			 fp ? "out of memory" : "cannot open");
		goto out;
	}
	f->off[0] = 0;
	while (fgets(line, TC_SCHED_LINE, fp)) {
		if (line[0] == '#') {
			file_header(f, line);
			continue;
		}
		if (f->nsteps >= f->n + 6) {
			snprintf(why, whyn, "schedule: more than %d steps", f->n + 6);
			goto out;
		}
		int a, b, k = 0, used;
		for (char *p = line; f->ag ? sscanf(p, "%d:%d:%d%n", &a, &b, &k, &used) == 3
					   : sscanf(p, "%d:%d%n", &a, &b, &used) == 2;
		     p += used) {
			if ((size_t)f->nflows >= cap) {
				snprintf(why, whyn, "schedule: more flows than pairs");
				goto out;
			}
			if (f->ag)
				f->blk[f->nflows] = k;
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
/* The reply's figures and flows, copied (f->ag: the blocks too; an
 * allgather's baseline is the ring in rank order, and the variants list
 * gives the ring in the fabric's order). */
static int from_reply(struct tc_whole *f, const tii_schedule_t *s, char *why, size_t whyn)
{
	f->nsteps = s->nsteps;
	f->nflows = s->step_off[s->nsteps];
	f->time_s = s->time_s;
	f->native_s = f->ag ? s->ring_time_s : s->xor_time_s;
	f->bytes = s->bytes;
	for (int i = 0; f->ag && i < s->nvariants && i < 3; i++)
		if (s->variants[i].algo == TII_SCHED_AGRING)
			f->agring_s = s->variants[i].time_s;
	const char *name = tii_schedule_algo_name(s->algo);
	snprintf(f->algo, sizeof(f->algo), "%s", name ? name : "?");
	if (!f->ag && s->native >= 0 && s->bytes) {
		struct tc_a2a_pred *x = &f->pred[tc_size_class((long long)s->bytes)];
		*x = (struct tc_a2a_pred){ .state = 1, .window = (unsigned char)s->window, .keep = !s->native_faster,
					   .time_s = s->time_s, .native_s = s->native_time_s, .bytes = s->bytes };
		snprintf(x->native_algo, sizeof(x->native_algo), "%s", s->native_algo);
		if (s->window < 1 || s->window > TC_WINDOW_MAX || s->time_s <= 0)
			x->state = -1;
	}
	f->off = malloc(((size_t)f->nsteps + 1) * sizeof(int));
	f->src = malloc(((size_t)f->nflows + 1) * sizeof(int));
	f->dst = malloc(((size_t)f->nflows + 1) * sizeof(int));
	f->blk = f->ag ? malloc(((size_t)f->nflows + 1) * sizeof(int)) : NULL;
	if (!f->off || !f->src || !f->dst || (f->ag && (!f->blk || !s->blk))) {
		snprintf(why, whyn, f->ag && f->blk && !s->blk ? "topod's schedule names no blocks" : "out of memory");
		return -1;
	}
	memcpy(f->off, s->step_off, ((size_t)f->nsteps + 1) * sizeof(int));
	memcpy(f->src, s->src, (size_t)f->nflows * sizeof(int));
	memcpy(f->dst, s->dst, (size_t)f->nflows * sizeof(int));
	if (f->ag)
		memcpy(f->blk, s->blk, (size_t)f->nflows * sizeof(int));
	return 0;
}

/* TOPOCOLL_MODEL as topod names it (docs/protocol.md `schedule native=`). */
static int native_model(void)
{
	switch (tc_g.nmodel) {
	case NATIVE_MPICH: return TII_NATIVE_MPICH;
	case NATIVE_SMPI_MPICH: return TII_NATIVE_SMPI_MPICH;
	case NATIVE_SMPI_OMPI: return TII_NATIVE_SMPI_OMPI;
	default: return TII_NATIVE_OMPI;
	}
}

/* Alltoall: `route` for the call's blocks, with the steps in flight topod
 * predicts fastest and the MPI's own Alltoall (TOPOCOLL_MODEL) beside it;
 * allgather: `agbest` for the call's blocks. Under topod's rule either way
 * (advice 1: never one it predicts slower than the MPIs' own). */
static int from_topod(struct tc_whole *f, const struct tc_comm *c, char *why, size_t whyn)
{
	const char **hosts = malloc((size_t)c->size * sizeof(*hosts));
	tii_t *t = NULL;
	tii_schedule_t *s = NULL;
	int e = hosts ? 0 : TII_E_NOMEM;
	for (int r = 0; !e && r < c->size; r++)
		hosts[r] = tc_g.hostnames + (size_t)c->world[r] * TC_NAME;
	struct tii_schedule_params p = { .algo = f->ag ? TII_SCHED_AGBEST : TII_SCHED_ROUTE };
	if (!e)
		e = tii_open(&t, NULL);
	/* the same bound as MPI_Init's question: every rank waits for it */
	if (!e)
		e = tii_set_timeout(t, tc_g.timeout_ms);
	if (!e)
		e = tii_set_schedule_advice(t, f->bytes ? f->bytes : 1 << 20, 1);
	if (!e && !f->ag)
		e = tii_set_schedule_run(t, TII_SCHED_WINDOW_AUTO, native_model());
	if (!e)
		e = tii_get_schedule(t, &p, hosts, (size_t)c->size, &s);
	if (e)
		snprintf(why, whyn, "topod: %s (%.80s)", tii_strerror(e), t ? tii_last_message(t) : "");
	else if (from_reply(f, s, why, whyn))
		e = -1;
	tii_schedule_free(s);
	tii_close(t);
	free(hosts);
	return e ? -1 : 0;
}
#endif

/* Room for one rank's part of f: nsteps + 1 offsets and n + 1 peers each
 * way (valid() allows each ordered pair once). -1: out of memory. */
static int mine_room(struct tc_sched *s, const struct tc_whole *f)
{
	s->soff = malloc(((size_t)f->nsteps + 1) * sizeof(int));
	s->roff = malloc(((size_t)f->nsteps + 1) * sizeof(int));
	s->to = malloc(((size_t)f->n + 1) * sizeof(int));
	s->from = malloc(((size_t)f->n + 1) * sizeof(int));
	return s->soff && s->roff && s->to && s->from ? 0 : -1;
}

/* This rank's part of the whole schedule, into s's room (mine_room). */
static void mine(struct tc_sched *s, const struct tc_whole *f, int me)
{
	int ns = 0, nr = 0;
	s->soff[0] = s->roff[0] = 0;
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
	s->held = 1;
}

void tc_sched_free(struct tc_sched *s)
{
	if (!s)
		return;
	free(s->soff);
	free(s->roff);
	free(s->to);
	free(s->from);
	if (s->whole)
		whole_free(s->whole);
	free(s->whole);
	*s = (struct tc_sched){ 0 };
}

/* This rank's part of an allgather's: its sends and receives with their
 * blocks (valid_ag bounds them: TC_SCHED_MULTI each a step). */
static struct tc_agsched *mine_ag(const struct tc_whole *f, int me)
{
	struct tc_agsched *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	size_t cap = (size_t)f->nsteps * TC_SCHED_MULTI + 1;
	s->nsteps = f->nsteps;
	s->soff = calloc((size_t)f->nsteps + 1, sizeof(int));
	s->roff = calloc((size_t)f->nsteps + 1, sizeof(int));
	s->to = malloc(cap * sizeof(int));
	s->sblk = malloc(cap * sizeof(int));
	s->from = malloc(cap * sizeof(int));
	s->rblk = malloc(cap * sizeof(int));
	if (!s->soff || !s->roff || !s->to || !s->sblk || !s->from || !s->rblk) {
		tc_agsched_free(s);
		return NULL;
	}
	int ns = 0, nr = 0;
	for (int i = 0; i < f->nsteps; i++) {
		for (int k = f->off[i]; k < f->off[i + 1]; k++) {
			if (f->src[k] == me) {
				s->to[ns] = f->dst[k];
				s->sblk[ns++] = f->blk[k];
			}
			if (f->dst[k] == me) {
				s->from[nr] = f->src[k];
				s->rblk[nr++] = f->blk[k];
			}
		}
		s->soff[i + 1] = ns;
		s->roff[i + 1] = nr;
	}
	s->time_s = f->time_s;
	s->ring_s = f->native_s;
	s->agring_s = f->agring_s;
	s->bytes = f->bytes;
	memcpy(s->algo, f->algo, sizeof(s->algo));
	return s;
}

void tc_agsched_free(struct tc_agsched *s)
{
	if (!s)
		return;
	free(s->soff);
	free(s->roff);
	free(s->to);
	free(s->sblk);
	free(s->from);
	free(s->rblk);
	free(s);
}

/* Rank 0 gets the schedule: the file (for a communicator of the world's
 * ranks in the world's order), or topod. */
static int fetch(struct tc_whole *f, const struct tc_comm *c, char *why, size_t whyn)
{
	int nw = 0;
	const char *file = f->ag ? tc_g.agsched_file : tc_g.sched_file;
	PMPI_Comm_size(MPI_COMM_WORLD, &nw);
	if (!c->world) {
		snprintf(why, whyn, "out of memory");
		return -1;
	}
	if (file[0]) {
		for (int r = 0; r < c->size; r++)
			if (c->world[r] != r || c->size != nw) {
				snprintf(why, whyn, "%s is for MPI_COMM_WORLD's ranks only",
					 f->ag ? "TOPOCOLL_ALLGATHER_SCHEDULE" : "TOPOCOLL_SCHEDULE");
				return -1;
			}
		return from_file(f, file, why, whyn);
	}
#ifdef TOPOCOLL_SMPI
	snprintf(why, whyn, "no %s (topod is out of reach in a simulation)",
		 f->ag ? "TOPOCOLL_ALLGATHER_SCHEDULE" : "TOPOCOLL_SCHEDULE");
	return -1;
#else
	if (!tc_g.hostnames) {
		snprintf(why, whyn, "the ranks' hosts are not known");
		return -1;
	}
	return from_topod(f, c, why, whyn);
#endif
}

/* What every rank learns of rank 0's schedule in one broadcast: whether
 * there is one, its size, topod's predictions and why not. */
struct head {
	long long ok, nsteps, nflows, bytes;
	double time_s, native_s, agring_s;
	char algo[16];
	struct tc_a2a_pred pred[TC_CLASSES];
	char why[160];
};

/* Rank 0 fetches and checks the whole schedule; every rank gets its
 * figures into f and why: 1 if there is one (on every rank), else 0. */
static int share_head(struct tc_comm *c, struct tc_whole *f, char *why, size_t whyn)
{
	struct head h = { 0 };
	if (c->rank == 0) {
		if (c->size > TC_SCHED_RANKS_MAX)
			snprintf(why, whyn, "more than %d ranks", TC_SCHED_RANKS_MAX);
		else if (!fetch(f, c, why, whyn) && !valid(f, why, whyn))
			h.ok = 1;
		h = (struct head){ .ok = h.ok, .nsteps = f->nsteps, .nflows = f->nflows, .bytes = (long long)f->bytes,
				   .time_s = f->time_s, .native_s = f->native_s, .agring_s = f->agring_s };
		memcpy(h.algo, f->algo, sizeof(h.algo));
		memcpy(h.pred, f->pred, sizeof(h.pred));
		snprintf(h.why, sizeof(h.why), "%s", why);
	}
	PMPI_Bcast(&h, (int)sizeof(h), MPI_BYTE, 0, c->ucomm);
	snprintf(why, whyn, "%s", h.why);
	if (!h.ok)
		return 0;
	if (c->rank) {
		f->nsteps = (int)h.nsteps;
		f->nflows = (int)h.nflows;
		f->bytes = (unsigned long long)h.bytes;
		f->time_s = h.time_s;
		f->native_s = h.native_s;
		f->agring_s = h.agring_s;
		memcpy(f->algo, h.algo, sizeof(f->algo));
		memcpy(f->pred, h.pred, sizeof(f->pred));
	}
	return 1;
}

/* Every rank gets rank 0's steps into f (share_head's figures say their
 * size) and, for an all-to-all (s), its own part of them into s: 1 if
 * every rank holds them, else 0 on every rank. */
static int share_steps(struct tc_comm *c, struct tc_whole *f, struct tc_sched *s, char *why, size_t whyn)
{
	if (c->rank) {
		f->off = malloc(((size_t)f->nsteps + 1) * sizeof(int));
		f->src = malloc(((size_t)f->nflows + 1) * sizeof(int));
		f->dst = malloc(((size_t)f->nflows + 1) * sizeof(int));
		f->blk = f->ag ? malloc(((size_t)f->nflows + 1) * sizeof(int)) : NULL;
	}
	int bad = !f->off || !f->src || !f->dst || (f->ag && !f->blk), any;
	if (s && mine_room(s, f))
		bad = 1;
	PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->ucomm);
	if (any) {
		snprintf(why, whyn, "out of memory");
		return 0;
	}
	PMPI_Bcast(f->off, f->nsteps + 1, MPI_INT, 0, c->ucomm);
	PMPI_Bcast(f->src, f->nflows, MPI_INT, 0, c->ucomm);
	PMPI_Bcast(f->dst, f->nflows, MPI_INT, 0, c->ucomm);
	if (f->ag)
		PMPI_Bcast(f->blk, f->nflows, MPI_INT, 0, c->ucomm);
	if (s)
		mine(s, f, c->rank);
	return 1;
}

/* Every rank must hold its part, or none runs it. */
static int all_hold(struct tc_comm *c, int held, char *why, size_t whyn)
{
	int bad = !held, any;
	PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->ucomm);
	if (any)
		snprintf(why, whyn, "out of memory");
	return !any;
}

/* Rank 0 asks topod again for a new size class's predictions: the same
 * request with the class's block (the steps do not depend on it; a reply
 * with other steps, the fabric having changed, gives none). */
static void again(const struct tc_comm *c, long long bytes, struct tc_a2a_pred *got)
{
	struct tc_whole f = { .n = c->size, .bytes = (unsigned long long)bytes };
	char why[160];
	int k = tc_size_class(bytes);
	*got = (struct tc_a2a_pred){ .state = -1 };
	if (!tc_g.sched_file[0] && !fetch(&f, c, why, sizeof(why)) && f.nsteps == c->a2a->sched->nsteps &&
	    !strcmp(f.algo, c->a2a->sched->algo) && f.pred[k].state == 1)
		*got = f.pred[k];
	whole_free(&f);
}

void tc_sched_get(struct tc_comm *c, long long bytes)
{
	struct tc_a2a *a = c->a2a;
	if (!a->asked) {
		struct tc_whole g = { .n = c->size, .bytes = bytes > 0 ? (unsigned long long)bytes : 1 << 20 };
		a->asked = 1;
		if (share_head(c, &g, a->why, sizeof(a->why))) {
			struct tc_sched *s = &a->s;
			*s = (struct tc_sched){ .nsteps = g.nsteps, .nflows = g.nflows };
			memcpy(s->algo, g.algo, sizeof(s->algo));
			memcpy(s->pred, g.pred, sizeof(s->pred));
			a->sched = s;
			/* rank 0 keeps every rank's steps until one runs them; without
			 * room for that, tc_sched_steps finds none and all agree */
			if (c->rank == 0 && (s->whole = malloc(sizeof(*s->whole)))) {
				*s->whole = g;
				g = (struct tc_whole){ 0 };
			}
		}
		whole_free(&g);
	}
	struct tc_a2a_pred *x = a->sched ? &a->sched->pred[tc_size_class(bytes)] : NULL;
	if (!x || x->state)
		return;
	struct tc_a2a_pred got = { .state = -1 };
	if (c->rank == 0)
		again(c, bytes, &got);
	PMPI_Bcast(&got, (int)sizeof(got), MPI_BYTE, 0, c->ucomm);
	*x = got;
}

int tc_sched_steps(struct tc_comm *c)
{
	struct tc_sched *s = c->a2a->sched;
	if (!s || s->held)
		return s != NULL;
	struct tc_whole mine_f = { .n = c->size, .nsteps = s->nsteps, .nflows = s->nflows };
	/* rank 0 lacks its copy only if it had no room for one (tc_sched_get) */
	struct tc_whole *f = c->rank == 0 && s->whole ? s->whole : &mine_f;
	int ok = share_steps(c, f, s, c->a2a->why, sizeof(c->a2a->why));
	whole_free(&mine_f);
	if (s->whole) {
		whole_free(s->whole);
		free(s->whole);
		s->whole = NULL;
	}
	if (!ok) {
		tc_sched_free(s);
		c->a2a->sched = NULL;
	}
	return ok;
}

void tc_agsched_get(struct tc_comm *c, long long bytes)
{
	struct tc_whole f = { .n = c->size, .ag = 1, .bytes = bytes > 0 ? (unsigned long long)bytes : 1 << 20,
			      .agring_s = -1 };
	c->agsched_asked = 1;
	if (share_head(c, &f, c->agsched_why, sizeof(c->agsched_why)) &&
	    share_steps(c, &f, NULL, c->agsched_why, sizeof(c->agsched_why))) {
		c->agsched = mine_ag(&f, c->rank);
		if (!all_hold(c, c->agsched != NULL, c->agsched_why, sizeof(c->agsched_why))) {
			tc_agsched_free(c->agsched);
			c->agsched = NULL;
		}
	}
	/* refused or out of reach: rank 0 says why once (TOPOCOLL_VERBOSE) */
	if (!c->agsched && tc_g.verbose && c->rank == 0)
		fprintf(stderr, "topocoll: allgather on a communicator of %d ranks: no schedule from topod: %s\n", c->size,
			c->agsched_why);
	whole_free(&f);
}
