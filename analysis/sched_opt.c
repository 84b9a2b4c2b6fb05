/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_opt.c - seed 000's bandwidth-optimal all-to-all (schedule.h
 * SCHED_OPT) on the job's tree FT(L; M1..ML) read from the hierarchy, and
 * the level of every link on the routes, by which its figures say whether
 * each step keeps the per-cable bound (schedule.h level_max). It applies
 * only to a homogeneous tree and has no compact form: its steps are chosen
 * rank by rank.
 */
#include "sched_impl.h"

#include <stdlib.h>
#include <string.h>

/* host_key_cmp's context, passed through qsort_r. */
struct host_key_ctx {
	const struct hier *h;
	const struct job *j;
};

/* Job hosts by their ancestors from the root down, then by index. */
static int host_key_cmp(const void *x, const void *y, void *arg)
{
	const struct host_key_ctx *c = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const uint32_t *pa = c->h->anc + (size_t)c->j->host[a] * c->h->depth;
	const uint32_t *pb = c->h->anc + (size_t)c->j->host[b] * c->h->depth;
	for (uint32_t l = 0; l < c->h->depth; l++)
		if (pa[l] != pb[l])
			return pa[l] < pb[l] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* task[t] = rank at tree position t; fills s->M / nlevels; sub[l][t]. */
static int opt_tree(struct sched *s, const struct job *j, const struct hier *h, uint32_t *task,
		    char err[AN_ERR_LEN])
{
	uint32_t H = j->H, D = h ? h->depth : 0;
	if (!h || !D || h->nhosts != j->rt->nhosts)
		return sched_fail(err, AN_E_NOTAPPLIC, "OPT needs the fabric's hierarchy");
	uint32_t r0 = j->hrank_off[1] - j->hrank_off[0];
	for (uint32_t a = 1; a < H; a++)
		if (j->hrank_off[a + 1] - j->hrank_off[a] != r0)
			return sched_fail(err, AN_E_NOTAPPLIC,
				    "OPT needs the same number of ranks on every host (%s has %u, %s has %u)",
				    j->rt->hosts[j->host[0]].name, r0, j->rt->hosts[j->host[a]].name,
				    j->hrank_off[a + 1] - j->hrank_off[a]);
	if (D + 2 > SCHED_LEVELS_MAX)
		return sched_fail(err, AN_E_NOTAPPLIC, "hierarchy of %u levels is deeper than OPT supports", D);
	uint32_t *ord = malloc((size_t)H * sizeof(*ord));
	if (!ord)
		return sched_fail(err, AN_E_NOMEM, "no memory");
	for (uint32_t a = 0; a < H; a++)
		ord[a] = a;
	struct host_key_ctx kc = { .h = h, .j = j };
	qsort_r(ord, H, sizeof(*ord), host_key_cmp, &kc);
	/* Children per node, level by level from the leaf clusters up: at
	 * prefix length L (L = D: hosts themselves), count distinct children
	 * of each prefix of length L-1; all must be equal. */
	uint32_t M[SCHED_LEVELS_MAX] = { 0 }, nl = 0; /* all of it is copied to s->M */
	M[nl++] = r0;
	for (uint32_t q = D; q >= 1; q--) {
		/* groups: hosts sharing anc[0 .. q); children: distinct anc[0 .. q]
		 * prefixes (q == D: the hosts themselves) */
		uint32_t want = 0, i = 0;
		while (i < H) {
			const uint32_t *pi = h->anc + (size_t)j->host[ord[i]] * D;
			uint32_t e = i, cnt = 0;
			while (e < H) {
				const uint32_t *pe = h->anc + (size_t)j->host[ord[e]] * D;
				if (memcmp(pi, pe, (size_t)q * sizeof(*pi)))
					break;
				if (q == D || e == i ||
				    memcmp(h->anc + (size_t)j->host[ord[e - 1]] * D, pe, ((size_t)q + 1) * sizeof(*pe)))
					cnt++;
				e++;
			}
			if (!want)
				want = cnt;
			if (cnt != want) {
				free(ord);
				return sched_fail(err, AN_E_NOTAPPLIC,
					    "OPT needs a homogeneous tree: at hierarchy level %u one cluster holds %u "
					    "parts of the job and another %u",
					    q - 1, want, cnt);
			}
			i = e;
		}
		M[nl++] = want;
	}
	/* The roots: several (a disconnected fabric) act as one virtual root. */
	{
		uint32_t roots = 1;
		for (uint32_t i = 1; i < H; i++)
			if (h->anc[(size_t)j->host[ord[i]] * D] != h->anc[(size_t)j->host[ord[i - 1]] * D])
				roots++;
		if (roots > 1) {
			free(ord);
			return sched_fail(err, AN_E_NOTAPPLIC, "the job spans %u disconnected parts of the fabric", roots);
		}
	}
	memcpy(s->M, M, sizeof(M));
	s->nlevels = nl;
	for (uint32_t i = 0; i < H; i++)
		for (uint32_t x = 0; x < r0; x++)
			task[(size_t)i * r0 + x] = j->hrank[j->hrank_off[ord[i]] + x];
	free(ord);
	return AN_OK;
}

static int build_opt(struct sbuild *b, const struct job *j, const struct hier *h, uint32_t *task,
		     char err[AN_ERR_LEN])
{
	struct sched *s = b->s;
	int rc = opt_tree(s, j, h, task, err);
	if (rc)
		return rc;
	uint32_t L = s->nlevels, P = j->P;
	/* Theta_k = M_{L+1-k}: theta digits (base M_L first); alpha digit l of d
	 * has base M_l. d's alpha_{L+1-k} = (theta_k(s) + theta_k(p)) mod M_{L+1-k}. */
	uint32_t pi[SCHED_LEVELS_MAX + 1];
	pi[0] = 1;
	for (uint32_t l = 0; l < L; l++)
		pi[l + 1] = pi[l] * s->M[l];
	/* P phases; in each, some sources draw themselves (a local copy, not listed). */
	for (uint32_t p = 0; p < P; p++) {
		uint32_t tp[SCHED_LEVELS_MAX], x = p;
		for (uint32_t k = 0; k < L; k++) {  /* theta_{k+1}: base M[L-1-k] */
			tp[k] = x % s->M[L - 1 - k];
			x /= s->M[L - 1 - k];
		}
		for (uint32_t t = 0; t < P; t++) {
			uint32_t y = t, d = 0;
			for (uint32_t k = 0; k < L; k++) {
				uint32_t base = s->M[L - 1 - k];
				uint32_t ts = y % base;
				y /= base;
				d += ((ts + tp[k]) % base) * pi[L - 1 - k];
			}
			if (d != t && sb_flow(b, task[t], task[d], 0))
				return AN_E_NOMEM;
		}
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	/* Bmin(l) for the up link of a level-l subtree, l = 1 .. L-1. */
	for (uint32_t l = 1; l < L; l++)
		s->bmin[l] = pi[l] - pi[l] / (pi[L] / pi[l]);
	return AN_OK;
}

/* Level of every link used by the job (+l up, -l down; 0 unknown, 127 inconsistent) from its
 * position on the routes; cables per level. Only for OPT. */
int sched_opt_levels(struct sched *s, const struct job *j, int8_t *lvl)
{
	uint32_t H = j->H;
	s->tree_routes = 1;
	uint32_t *upcount = calloc(SCHED_LEVELS_MAX, sizeof(*upcount));
	if (!upcount)
		return AN_E_NOMEM;
	for (uint32_t a = 0; a < H; a++) {
		for (uint32_t b = 0; b < H; b++) {
			if (a == b)
				continue;
			uint32_t n;
			const uint32_t *l = job_route(j, a, b, &n);
			uint32_t tot = n + 1;
			if (tot % 2) {
				s->tree_routes = 0;
				continue;
			}
			for (uint32_t k = 0; k < tot; k++) {
				uint32_t id = k ? l[k - 1] : j->cable[a];
				int v = k < tot / 2 ? (int)k + 1 : -(int)(tot - k);
				if (v >= SCHED_LEVELS_MAX || v <= -SCHED_LEVELS_MAX) {
					s->tree_routes = 0;
					continue;
				}
				if (lvl[id] == 0) {
					lvl[id] = (int8_t)v;
					if (v > 0)
						upcount[v]++;
				} else if (lvl[id] != v) {
					s->tree_routes = 0;
				}
			}
		}
	}
	uint32_t pi = 1;
	for (uint32_t l = 1; l < s->nlevels; l++) {
		pi *= s->M[l - 1];
		uint32_t nsub = j->P / pi;
		s->cables[l] = upcount[l] / (nsub ? nsub : 1);
		s->cable_bound[l] = s->cables[l] ? (s->bmin[l] + s->cables[l] - 1) / s->cables[l] : s->bmin[l];
	}
	free(upcount);
	return AN_OK;
}

int sched_build_opt(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
		    char err[AN_ERR_LEN])
{
	uint32_t *task = malloc((size_t)j->P * sizeof(*task));
	int rc = task ? build_opt(b, j, h, task, err) : AN_E_NOMEM;
	free(task);
	return rc;
}
