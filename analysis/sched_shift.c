/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_shift.c - the allgathers that shift blocks along a ring of
 * positions (schedule.h SCHED_RING, SCHED_AGRING, SCHED_KSHIFT): the MPIs'
 * ring in rank order, the same ring in the fabric's order, and Kumar and
 * Kalé 2004's kShift. One plan of shifts (shift_plan) makes all three, in
 * the rank-level form, the compact form and the expansion alike.
 */
#include "sched_impl.h"

#include <stdlib.h>
#include <string.h>

/* KSHIFT's partition size for k asked (0: the paper's 8) on P ranks: at most P. */
static uint32_t sched_kshift_k(unsigned k, uint32_t P)
{
	if (!k)
		k = 8; /* Kumar and Kalé 2004 ran k = 8 throughout */
	return k > P ? (P ? P : 1) : k;
}

/*
 * The steps of RING, AGRING and KSHIFT over ring positions (schedule.h): in
 * step s position p sends to p + d[s] the block that started at p - h[s]
 * (mod P). d and h have P entries (P - 1 are used).
 */
static void shift_plan(uint32_t P, uint32_t k, uint32_t *d, uint32_t *h)
{
	uint32_t a = k / 2, b = k - 1 - a, q = P / k, rem = P % k, H = 0, n = 0;
	for (uint32_t t = 0; t < q; t++) {
		for (uint32_t j = a; j >= 1; j--, n++)
			d[n] = P - j, h[n] = H;
		for (uint32_t j = 1; j <= b; j++, n++)
			d[n] = j, h[n] = H;
		if (t + 1 < q) {
			d[n] = k, h[n++] = H;
			H += k;
		}
	}
	if (rem) {
		/* the window of the rem positions no block has reached yet; the
		 * ring step lands a' into it (a' <= a: it is never past P) */
		uint32_t a2 = rem / 2, b2 = rem - 1 - a2, sh = b + 1 + a2;
		d[n] = sh, h[n++] = H;
		H += sh;
		for (uint32_t j = a2; j >= 1; j--, n++)
			d[n] = P - j, h[n] = H;
		for (uint32_t j = 1; j <= b2; j++, n++)
			d[n] = j, h[n] = H;
	}
}

/* ord_cmp's context: the leaf key of each job host's group. */
struct ord_ctx {
	const struct job *j;
	const uint32_t *lk;
};

static int ord_cmp(const void *x, const void *y, void *arg)
{
	const struct ord_ctx *c = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	uint32_t la = c->lk[c->j->group[a]], lb = c->lk[c->j->group[b]];
	if (la != lb)
		return la < lb ? -1 : 1;
	return c->j->host[a] < c->j->host[b] ? -1 : c->j->host[a] > c->j->host[b];
}

/* The fabric's order (coll/allgather.c's): leaves by their first job host
 * in route_tab order (by name), hosts by name, a host's ranks together in
 * rank order. */
static int job_order(const struct job *j, uint32_t *ord)
{
	uint32_t *lk = malloc(((size_t)j->ngroups + 1) * sizeof(*lk)), *ha = malloc(((size_t)j->H + 1) * sizeof(*ha));
	if (!lk || !ha) {
		free(lk);
		free(ha);
		return AN_E_NOMEM;
	}
	memset(lk, 0xff, ((size_t)j->ngroups + 1) * sizeof(*lk));
	for (uint32_t a = 0; a < j->H; a++) {
		ha[a] = a;
		if (j->host[a] < lk[j->group[a]])
			lk[j->group[a]] = j->host[a];
	}
	struct ord_ctx c = { j, lk };
	qsort_r(ha, j->H, sizeof(*ha), ord_cmp, &c);
	uint32_t n = 0;
	for (uint32_t i = 0; i < j->H; i++)
		for (uint32_t x = j->hrank_off[ha[i]]; x < j->hrank_off[ha[i] + 1]; x++)
			ord[n++] = j->hrank[x];
	free(lk);
	free(ha);
	return AN_OK;
}

/* s->k and s->ord of RING, AGRING and KSHIFT. */
static int shift_setup(struct sched *s, const struct job *j, unsigned k)
{
	s->k = s->algo == SCHED_KSHIFT ? sched_kshift_k(k, j->P) : 1;
	s->ord = malloc(((size_t)j->P + 1) * sizeof(*s->ord));
	if (!s->ord)
		return AN_E_NOMEM;
	if (s->algo != SCHED_RING)
		return job_order(j, s->ord);
	for (uint32_t r = 0; r < j->P; r++)
		s->ord[r] = r;
	return AN_OK;
}

static int build_shifts(struct sbuild *b, uint32_t P, const uint32_t *ord, uint32_t k)
{
	uint32_t *d = malloc(((size_t)P + 1) * sizeof(*d)), *h = malloc(((size_t)P + 1) * sizeof(*h));
	int rc = d && h ? AN_OK : AN_E_NOMEM;
	if (!rc)
		shift_plan(P, k, d, h);
	for (uint32_t st = 0; !rc && st + 1 < P; st++) {
		for (uint32_t p = 0; !rc && p < P; p++)
			rc = sb_flow(b, ord[p], ord[(uint32_t)(((uint64_t)p + d[st]) % P)],
				     ord[(uint32_t)(((uint64_t)p + P - h[st]) % P)]);
		rc = rc ? rc : sb_step(b);
	}
	free(d);
	free(h);
	return rc;
}

int sched_build_shift(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
		      char err[AN_ERR_LEN])
{
	struct sched *s = b->s;
	uint32_t P = j->P;
	if (b->pl) {
		uint32_t *hh = malloc(((size_t)P + 1) * sizeof(*hh));
		b->pl->shift = malloc(((size_t)P + 1) * sizeof(*b->pl->shift));
		int rc = hh && b->pl->shift ? shift_setup(s, j, req->k) : AN_E_NOMEM;
		if (!rc)
			shift_plan(P, s->k, b->pl->shift, hh);
		s->nsteps = P - 1;
		free(hh);
		return rc;
	}
	int rc = shift_setup(s, j, req->k);
	return rc ? rc : build_shifts(b, P, s->ord, s->k);
}

int sched_expand_shift(struct sbuild *b, const struct sched *c)
{
	struct sched *s = b->s;
	uint32_t P = c->nranks;
	s->k = c->k;
	s->ord = malloc((size_t)P * sizeof(*s->ord));
	if (!s->ord)
		return AN_E_NOMEM;
	memcpy(s->ord, c->ord, (size_t)P * sizeof(*s->ord));
	return build_shifts(b, P, s->ord, s->k);
}
