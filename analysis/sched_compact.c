/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_compact.c - the host-level (compact) form of a schedule
 * (schedule.h; docs/protocol.md "schedule", form=hosts): its per-step
 * figures computed from runs of flows between two hosts, without the
 * P(P-1) rank flows, and sched_expand, which lists them again. Each
 * algorithm with a compact form fills the plan (sched_impl.h struct cplan)
 * its steps are read from here, and expands itself through its row.
 */
#include "sched_impl.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

/* The destination of rank r in rank step st of XOR or ALLGATHER. */
static inline uint32_t c_dst(const struct sched *s, uint32_t st, uint32_t r)
{
	uint32_t P = s->nranks;
	if (s->algo == SCHED_XOR) {
		uint32_t i = st + 1;
		if (!(P & (P - 1)))
			return r ^ i;
		return r + i < P ? r + i : r + i - P;
	}
	uint32_t k = s->k, i = st % k + 1; /* allgather: k-1 XOR steps, then a ring step */
	return i < k ? r ^ i : (uint32_t)(((uint64_t)r + k) % P);
}

/* The runs of rank step st (run[] holds P and a host step's flows); *multi |= a rank sends or
 * receives twice. Returns the number of runs. */
static uint32_t c_runs(const struct sched *s, const struct job *j, const struct cplan *pl, uint32_t st,
		       struct crun *run, uint32_t *outst, uint32_t *inst, int *multi)
{
	uint32_t n = 0;
	if (pl->shift) {
		uint32_t P = s->nranks, d = pl->shift[st];
		for (uint32_t p = 0; p < P; p++) {
			uint32_t a = j->jh[s->ord[p]], b = j->jh[s->ord[p + d < P ? p + d : p + d - P]];
			if (n && run[n - 1].a == a && run[n - 1].b == b)
				run[n - 1].w++;
			else
				run[n++] = (struct crun){ a, b, 1 };
		}
		return n;
	}
	if (s->algo == SCHED_XOR || s->algo == SCHED_ALLGATHER) {
		for (uint32_t r = 0; r < s->nranks; r++) {
			uint32_t a = j->jh[r], b = j->jh[c_dst(s, st, r)];
			if (n && run[n - 1].a == a && run[n - 1].b == b)
				run[n - 1].w++;
			else
				run[n++] = (struct crun){ a, b, 1 };
		}
		return n;
	}
	uint32_t h = pl->hstep[st], y = pl->y[st];
	if (h == NONE) {
		for (uint32_t a = 0; a < j->H; a++)
			if (c_nr(j, a) > y)
				run[n++] = (struct crun){ a, a, c_nr(j, a) };
		return n;
	}
	for (uint32_t f = s->hstep_off[h]; f < s->hstep_off[h + 1]; f++) {
		uint32_t a = s->hsrc[f], b = s->hdst[f], ra = c_nr(j, a), rb = c_nr(j, b);
		uint32_t w = ra <= rb ? (y < rb ? ra : 0) : (y < ra ? rb : 0);
		if (!w)
			continue;
		/* every sender set of a host in a substep contains a[y mod ra],
		 * every receiver set b[y mod rb]: two flows of one host overlap */
		*multi |= outst[a] == st + 1 || inst[b] == st + 1;
		outst[a] = inst[b] = st + 1;
		run[n++] = (struct crun){ a, b, w };
	}
	return n;
}

/* Per-thread scratch of c_figures. */
struct cscratch {
	struct fig_work f;
	uint32_t *outst, *inst;
	struct crun *run;
};

static int c_figures(struct sched *s, const struct job *j, const struct cplan *pl, int threads)
{
	s->fig = calloc((size_t)s->nsteps + 1, sizeof(*s->fig));
	if (!s->fig)
		return AN_E_NOMEM;
	int nt = threads > 0 ? threads : 1, rc = AN_OK, multi = 0;
	uint32_t nlinks = j->nlinks, H = j->H, P = s->nranks, nrun = P;
	for (uint32_t h = 0; h < s->nhsteps; h++) /* TACS2: a step may move more than P */
		nrun = s->hstep_off[h + 1] - s->hstep_off[h] > nrun ? s->hstep_off[h + 1] - s->hstep_off[h] : nrun;
#pragma omp parallel num_threads(nt) reduction(| : multi)
	{
		struct cscratch w = {
			.f = {
				.load = calloc((size_t)nlinks + 1, sizeof(uint32_t)),
				.touched = malloc(((size_t)nlinks + 1) * sizeof(uint32_t)),
				.lastp = calloc((size_t)nlinks + 1, sizeof(uint64_t)),
				.shared = calloc((size_t)nlinks + 1, 1),
			},
			.outst = calloc((size_t)H + 1, sizeof(uint32_t)),
			.inst = calloc((size_t)H + 1, sizeof(uint32_t)),
			.run = malloc(((size_t)nrun + 1) * sizeof(struct crun)),
		};
		int ok = w.f.load && w.f.touched && w.outst && w.inst && w.f.lastp && w.f.shared && w.run;
		if (!ok) {
#pragma omp atomic write
			rc = AN_E_NOMEM;
		}
#pragma omp for schedule(dynamic, 8)
		for (uint32_t st = 0; st < s->nsteps; st++) {
			if (!ok || (pl->same && pl->same[st]))
				continue;
			uint32_t n = c_runs(s, j, pl, st, w.run, w.outst, w.inst, &multi);
			sched_step_fig(j, w.run, n, &w.f, &s->fig[st], NULL, 0, NULL);
		}
		free(w.f.load);
		free(w.f.touched);
		free(w.outst);
		free(w.inst);
		free(w.f.lastp);
		free(w.f.shared);
		free(w.run);
	}
	for (uint32_t st = 1; pl->same && st < s->nsteps; st++)
		if (pl->same[st])
			s->fig[st] = s->fig[st - 1];
	s->multi = multi;
	return rc;
}

/* sched_build's compact branch: s->algo is the one to run (not OPT). */
int sched_build_compact(struct sched *s, const struct job *j, const struct hier *h, const struct sched_req *req,
			int threads, char err[AN_ERR_LEN])
{
	struct cplan pl = { 0 };
	struct sbuild b = { .s = s, .pl = &pl };
	uint32_t P = j->P;
	s->compact = 1;
	s->nhosts = j->H;
	s->rank_jhost = malloc((size_t)P * sizeof(uint32_t));
	if (!s->rank_jhost)
		return AN_E_NOMEM;
	memcpy(s->rank_jhost, j->jh, (size_t)P * sizeof(uint32_t));
	int rc = sched_algo_row(s->algo)->build(&b, j, h, req, err);
	if (!rc)
		rc = c_figures(s, j, &pl, threads);
	free(pl.hstep);
	free(pl.y);
	free(pl.same);
	free(pl.shift);
	return rc;
}

/* ---- expansion of the compact form (sched_expand) ---------------------------------- */

int sched_expand(const struct sched *c, struct sched **out, char err[AN_ERR_LEN])
{
	const struct sched_algo_row *w = c ? sched_algo_row(c->algo) : NULL;
	if (!c || !out || !c->compact || c->nranks < 2 || !w || !w->expand)
		return sched_fail(err, AN_E_INVAL, "not a compact schedule");
	uint32_t P = c->nranks;
	struct sched *s = calloc(1, sizeof(*s));
	struct sbuild b = { .s = s, .scap = 64 };
	int rc = AN_E_NOMEM;
	if (!s || !(s->step_off = calloc(65, sizeof(uint32_t))))
		goto out;
	s->algo = c->algo;
	s->nranks = P;
	if (sb_alloc(&b, (size_t)P * (P - 1)))
		goto out;
	rc = w->expand(&b, c);
	if (!rc && s->nsteps != c->nsteps)
		rc = sched_fail(err, AN_E_CHECK, "expansion has %u steps, the compact form %u", s->nsteps, c->nsteps);
	if (rc)
		goto out;
	rc = AN_E_NOMEM;
	s->fig = malloc(((size_t)c->nsteps + 1) * sizeof(*s->fig));
	if (!s->fig)
		goto out;
	memcpy(s->fig, c->fig, (size_t)c->nsteps * sizeof(*s->fig));
	s->multi = c->multi;
	s->bound_s_per_byte = c->bound_s_per_byte;
	s->host_steps = c->host_steps;
	s->extra_steps = c->extra_steps;
	memcpy(s->note, c->note, sizeof(s->note));
	*out = s;
	s = NULL;
	rc = AN_OK;
out:
	if (rc == AN_E_NOMEM)
		sched_fail(err, rc, "no memory for a %u-rank schedule", P);
	sched_free(s);
	return rc;
}
