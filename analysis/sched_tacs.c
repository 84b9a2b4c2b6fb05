/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched_tacs.c - TACS1 and TACS2 (schedule.h; seed 004, section 6.2.3,
 * Algorithm 2): host steps of symmetric exchanges, the farthest pairs
 * first, within a bound on the flows sharing a link, expanded to ranks.
 * The two differ only in what they do with the pairs left over, so they
 * are one file; the compact form keeps the host steps (c_tacs) and the
 * expansion lists their rank flows again (x_tacs).
 */
#include "sched_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Switches between hosts a and b (a != b). */
static inline uint32_t job_dist(const struct job *j, uint32_t a, uint32_t b)
{
	uint32_t n;
	job_route(j, a, b, &n);
	return n - 1;
}

static int sb_mark_same(struct sbuild *b, uint8_t v)
{
	uint32_t i = b->s->nsteps; /* the step about to be closed */
	if (i >= b->samecap) {
		uint32_t nc = b->samecap * 2 + 1024;
		uint8_t *ns = realloc(b->same, nc);
		if (!ns)
			return AN_E_NOMEM;
		memset(ns + b->samecap, 0, nc - b->samecap);
		b->same = ns;
		b->samecap = nc;
	}
	b->same[i] = v;
	return AN_OK;
}

struct hflow {
	uint32_t step, a, b;
};

struct tacs {
	const struct job *j;
	uint32_t H, nsteps;    /* normal host steps: H - 1 */
	uint32_t *partner;     /* [nsteps * H] or NONE */
	uint16_t *load;        /* [nsteps * nlinks] */
	uint8_t *done;         /* [H * H] pair exchanged */
	uint32_t *cand;        /* [H * (H-1)] partners by distance desc, then ring order */
	uint32_t *dist;        /* [H * (H-1)] distance of cand[] */
	uint32_t *pend;        /* [H] pending partners */
	uint32_t *cur;         /* [H] scan start per host for distance cur_d */
	uint32_t cur_d;
	uint32_t *drow;        /* [H] distances from one host, capped at 65535 */
	uint8_t *dset;         /* [65536] distances that occur */
	uint32_t *extra;       /* [H] partners in an extra step */
	uint16_t *xload;       /* [nlinks] loads of an extra step */
	struct hflow *hf;      /* the result, grouped by step */
	size_t nhf, hcap;
};

static int tacs_fits(const struct tacs *t, const uint16_t *load, uint32_t a, uint32_t b, unsigned limit)
{
	const struct job *j = t->j;
	uint32_t n;
	if (load[j->cable[a]] + 1u > limit || load[j->cable[b]] + 1u > limit)
		return 0;
	const uint32_t *l = job_route(j, a, b, &n);
	for (uint32_t k = 0; k < n; k++)
		if (load[l[k]] + 1u > limit)
			return 0;
	l = job_route(j, b, a, &n);
	for (uint32_t k = 0; k < n; k++)
		if (load[l[k]] + 1u > limit)
			return 0;
	return 1;
}

static void tacs_add(const struct tacs *t, uint16_t *load, uint32_t a, uint32_t b)
{
	const struct job *j = t->j;
	uint32_t n;
	load[j->cable[a]]++;
	load[j->cable[b]]++;
	const uint32_t *l = job_route(j, a, b, &n);
	for (uint32_t k = 0; k < n; k++)
		load[l[k]]++;
	l = job_route(j, b, a, &n);
	for (uint32_t k = 0; k < n; k++)
		load[l[k]]++;
}

static void tacs_pair(struct tacs *t, uint32_t *partner, uint32_t a, uint32_t b)
{
	partner[a] = b;
	partner[b] = a;
	t->done[(size_t)a * t->H + b] = t->done[(size_t)b * t->H + a] = 1;
	t->pend[a]--;
	t->pend[b]--;
}

/* cand_cmp's context: the qsort_r argument, so that concurrent builds
 * share nothing. */
struct cand_ctx {
	uint32_t H, self;
	const uint32_t *dist;
};

static int cand_cmp(const void *x, const void *y, void *arg)
{
	const struct cand_ctx *c = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	uint32_t da = c->dist[a], db = c->dist[b];
	if (da != db)
		return da > db ? -1 : 1;
	uint32_t ra = (a + c->H - c->self) % c->H, rb = (b + c->H - c->self) % c->H;
	return ra < rb ? -1 : ra > rb;
}

/* One pass over the hosts of a step: pair each free host with its first
 * pending, free partner in cand[lo_d..] whose distance is d (d == NONE: any)
 * and that keeps every link at <= limit flows. */
static void tacs_pass(struct tacs *t, uint32_t *partner, uint16_t *load, uint32_t d, unsigned limit)
{
	uint32_t H = t->H;
	if (t->cur_d != d) {
		/* candidates are by distance, descending: start at the first <= d */
		for (uint32_t a = 0; a < H; a++) {
			const uint32_t *cd = t->dist + (size_t)a * (H - 1);
			uint32_t lo = 0, hi = H - 1;
			while (d != NONE && lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (cd[mid] > d)
					lo = mid + 1;
				else
					hi = mid;
			}
			t->cur[a] = lo;
		}
		t->cur_d = d;
	}
	for (uint32_t a = 0; a < H; a++) {
		if (partner[a] != NONE || !t->pend[a])
			continue;
		const uint32_t *c = t->cand + (size_t)a * (H - 1);
		const uint32_t *cd = t->dist + (size_t)a * (H - 1);
		/* cur[a]: the first candidate at distance d (or any, d == NONE) not
		 * yet exchanged; pairs only ever become done, so it only advances. */
		uint32_t i = t->cur[a];
		while (i < H - 1 && (d == NONE || cd[i] == d) && t->done[(size_t)a * H + c[i]])
			i++;
		t->cur[a] = i;
		for (; i < H - 1; i++) {
			if (d != NONE && cd[i] != d)
				break;
			uint32_t b = c[i];
			if (partner[b] != NONE || t->done[(size_t)a * H + b] || !tacs_fits(t, load, a, b, limit))
				continue;
			tacs_pair(t, partner, a, b);
			tacs_add(t, load, a, b);
			break;
		}
	}
}

static void tacs_free(struct tacs *t)
{
	free(t->partner);
	free(t->load);
	free(t->done);
	free(t->cand);
	free(t->dist);
	free(t->pend);
	free(t->cur);
	free(t->drow);
	free(t->extra);
	free(t->xload);
	free(t->dset);
	free(t->hf);
}

static int tacs_alloc(struct tacs *t)
{
	uint32_t H = t->H, nlinks = t->j->nlinks;
	t->partner = malloc(((size_t)t->nsteps * H + 1) * sizeof(*t->partner));
	t->load = calloc((size_t)t->nsteps * nlinks + 1, sizeof(*t->load));
	t->done = calloc((size_t)H * H + 1, 1);
	t->cand = malloc(((size_t)H * (H ? H - 1 : 0) + 1) * sizeof(*t->cand));
	t->dist = malloc(((size_t)H * (H ? H - 1 : 0) + 1) * sizeof(*t->dist));
	t->pend = malloc(((size_t)H + 1) * sizeof(*t->pend));
	t->cur = malloc(((size_t)H + 1) * sizeof(*t->cur));
	t->drow = malloc(((size_t)H + 1) * sizeof(*t->drow));
	t->extra = malloc(((size_t)H + 1) * sizeof(*t->extra));
	t->xload = calloc((size_t)nlinks + 1, sizeof(*t->xload));
	t->dset = calloc(65536, 1);
	if (!t->partner || !t->load || !t->done || !t->cand || !t->dist || !t->pend || !t->cur || !t->drow ||
	    !t->extra || !t->xload || !t->dset)
		return AN_E_NOMEM;
	memset(t->partner, 0xff, (size_t)t->nsteps * H * sizeof(*t->partner));
	return AN_OK;
}

/* Every host's partners, farthest first (ties in ring order from the
 * host), and the set of distances that occur. */
static void tacs_candidates(struct tacs *t)
{
	const struct job *j = t->j;
	uint32_t H = t->H, *drow = t->drow;
	for (uint32_t a = 0; a < H; a++) {
		t->pend[a] = H - 1;
		for (uint32_t b = 0; b < H; b++) {
			drow[b] = a == b ? 0 : job_dist(j, a, b);
			if (drow[b] > 65535)
				drow[b] = 65535;
			t->dset[drow[b]] = 1;
		}
		uint32_t *c = t->cand + (size_t)a * (H - 1), n = 0;
		for (uint32_t b = 0; b < H; b++)
			if (b != a)
				c[n++] = b;
		struct cand_ctx ctx = { .H = H, .self = a, .dist = drow };
		qsort_r(c, n, sizeof(*c), cand_cmp, &ctx);
		for (uint32_t i = 0; i < n; i++)
			t->dist[(size_t)a * (H - 1) + i] = drow[c[i]];
	}
}

/* The H-1 normal steps, filled distance by distance, the farthest first:
 * conflict-free pairs, then pairs within the conflict limit. */
static int tacs_normal_steps(struct tacs *t, unsigned limit, const atomic_int *cancel)
{
	uint32_t H = t->H, nlinks = t->j->nlinks;
	for (uint32_t d = 65535; d >= 1; d--) {
		if (!t->dset[d])
			continue;
		for (uint32_t st = 0; st < t->nsteps; st++) {
			/* a step's two passes are O(H^2) at most: a cheap place to look */
			if (AN_CANCELLED(cancel))
				return AN_E_CANCEL;
			uint32_t *p = t->partner + (size_t)st * H;
			uint16_t *ld = t->load + (size_t)st * nlinks;
			tacs_pass(t, p, ld, d, 1);
			tacs_pass(t, p, ld, d, limit);
		}
	}
	return AN_OK;
}

/* Host flows a -> b and b -> a in host step st. */
static int tacs_push(struct tacs *t, uint32_t st, uint32_t a, uint32_t b)
{
	if (t->nhf + 2 > t->hcap) {
		size_t nc = t->hcap * 2 + 1024;
		struct hflow *nh = realloc(t->hf, nc * sizeof(*nh));
		if (!nh)
			return AN_E_NOMEM;
		t->hf = nh;
		t->hcap = nc;
	}
	t->hf[t->nhf++] = (struct hflow){ st, a, b };
	t->hf[t->nhf++] = (struct hflow){ st, b, a };
	return AN_OK;
}

/* TACS2: a host left idle in step st takes its first pending partner,
 * whatever the conflicts and even if that partner is busy in this step. */
static int tacs2_fill(struct tacs *t, uint32_t st, uint32_t *p)
{
	uint32_t H = t->H;
	for (uint32_t a = 0; a < H; a++) {
		if (p[a] != NONE || !t->pend[a])
			continue;
		const uint32_t *c = t->cand + (size_t)a * (H - 1);
		for (uint32_t i = 0; i < H - 1; i++) {
			uint32_t b = c[i];
			if (t->done[(size_t)a * H + b])
				continue;
			t->done[(size_t)a * H + b] = t->done[(size_t)b * H + a] = 1;
			t->pend[a]--;
			t->pend[b]--;
			p[a] = b;  /* a is busy now; b keeps its own partner */
			if (tacs_push(t, st, a, b))
				return AN_E_NOMEM;
			break;
		}
	}
	return AN_OK;
}

/* The normal steps' pairs as host flows (TACS2: plus the idle hosts'). */
static int tacs_emit_steps(struct tacs *t, enum sched_algo algo)
{
	uint32_t H = t->H;
	for (uint32_t st = 0; st < t->nsteps; st++) {
		uint32_t *p = t->partner + (size_t)st * H;
		for (uint32_t a = 0; a < H; a++)
			if (p[a] != NONE && a < p[a] && tacs_push(t, st, a, p[a]))
				return AN_E_NOMEM;
		if (algo == SCHED_TACS2 && tacs2_fill(t, st, p))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

/* TACS1: extra steps, bounded conflicts, any distance, until done. */
static int tacs_extra_steps(struct tacs *t, struct sched *s, const struct sched_req *req, unsigned limit,
			    char err[AN_ERR_LEN])
{
	uint32_t H = t->H, hstep = t->nsteps;
	enum sched_algo algo = req->algo;
	for (;;) {
		if (AN_CANCELLED(req->cancel))
			return AN_E_CANCEL;
		int left = 0;
		for (uint32_t a = 0; a < H && !left; a++)
			left = t->pend[a] != 0;
		if (!left)
			break;
		if (algo == SCHED_TACS2)
			return sched_fail(err, AN_E_CHECK, "TACS2 left pairs after %u steps", t->nsteps);
		memset(t->extra, 0xff, (size_t)H * sizeof(*t->extra));
		memset(t->xload, 0, (size_t)t->j->nlinks * sizeof(*t->xload));
		tacs_pass(t, t->extra, t->xload, NONE, limit);
		for (uint32_t a = 0; a < H; a++)
			if (t->extra[a] != NONE && a < t->extra[a] && tacs_push(t, hstep, a, t->extra[a]))
				return AN_E_NOMEM;
		hstep++;
		s->extra_steps++;
	}
	s->host_steps = hstep;
	return AN_OK;
}

static int build_tacs(struct sched *s, const struct job *j, const struct sched_req *req,
		      struct hflow **hf_out, size_t *nhf_out, char err[AN_ERR_LEN])
{
	uint32_t H = j->H;
	struct tacs t = { .j = j, .H = H, .nsteps = H ? H - 1 : 0, .cur_d = NONE - 1 };
	unsigned limit = 1 + req->conflicts;
	if ((uint64_t)t.nsteps * j->nlinks > (64u << 20) || (uint64_t)H * H > (64u << 20)) {
		return sched_fail(err, AN_E_INVAL, "TACS for %u hosts over %u links is beyond its memory bound", H,
			    j->nlinks);
	}
	int rc = tacs_alloc(&t);
	if (!rc) {
		tacs_candidates(&t);
		rc = tacs_normal_steps(&t, limit, req->cancel);
	}
	if (!rc)
		rc = tacs_emit_steps(&t, req->algo);
	if (!rc)
		rc = tacs_extra_steps(&t, s, req, limit, err);
	if (!rc) {
		*hf_out = t.hf;
		*nhf_out = t.nhf;
		t.hf = NULL;
	}
	if (rc == AN_E_NOMEM)
		sched_fail(err, rc, "no memory for TACS on %u hosts", H);
	else if (rc == AN_E_CANCEL)
		sched_fail(err, rc, "TACS on %u hosts cancelled", H);
	tacs_free(&t);
	return rc;
}

/* Host steps -> rank steps (see schedule.h). hf is grouped by step. */
static int expand_hosts(struct sbuild *b, const struct job *j, const struct hflow *hf, size_t nhf)
{
	uint32_t R = 0;
	for (uint32_t a = 0; a < j->H; a++) {
		uint32_t r = j->hrank_off[a + 1] - j->hrank_off[a];
		R = r > R ? r : R;
	}
	for (uint32_t y = 1; y < R; y++) {
		for (uint32_t a = 0; a < j->H; a++) {
			const uint32_t *rk = j->hrank + j->hrank_off[a];
			uint32_t r = j->hrank_off[a + 1] - j->hrank_off[a];
			if (y < r)
				for (uint32_t x = 0; x < r; x++)
					if (sb_flow(b, rk[x], rk[(x + y) % r], 0))
						return AN_E_NOMEM;
		}
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	for (size_t i = 0; i < nhf;) {
		size_t e = i;
		uint32_t smax = 0;
		int equal = 1;
		while (e < nhf && hf[e].step == hf[i].step) {
			uint32_t ra = j->hrank_off[hf[e].a + 1] - j->hrank_off[hf[e].a];
			uint32_t rb = j->hrank_off[hf[e].b + 1] - j->hrank_off[hf[e].b];
			smax = ra > smax ? ra : smax;
			smax = rb > smax ? rb : smax;
			equal &= ra == rb;
			e++;
		}
		for (uint32_t e2 = (uint32_t)i; equal && e2 < e; e2++)
			equal = j->hrank_off[hf[e2].a + 1] - j->hrank_off[hf[e2].a] == smax;
		for (uint32_t y = 0; y < smax; y++) {
			/* all flows of the host step have smax ranks at both ends: every
			 * substep moves the same host pairs, all ranks busy */
			if (sb_mark_same(b, (uint8_t)(equal && y > 0)))
				return AN_E_NOMEM;
			for (size_t f = i; f < e; f++) {
				const uint32_t *ka = j->hrank + j->hrank_off[hf[f].a];
				const uint32_t *kb = j->hrank + j->hrank_off[hf[f].b];
				uint32_t ra = j->hrank_off[hf[f].a + 1] - j->hrank_off[hf[f].a];
				uint32_t rb = j->hrank_off[hf[f].b + 1] - j->hrank_off[hf[f].b];
				if (ra <= rb) {
					if (y < rb)
						for (uint32_t x = 0; x < ra; x++)
							if (sb_flow(b, ka[x], kb[(x + y) % rb], 0))
								return AN_E_NOMEM;
				} else if (y < ra) {
					for (uint32_t z = 0; z < rb; z++)
						if (sb_flow(b, ka[(z + y) % ra], kb[z], 0))
							return AN_E_NOMEM;
				}
			}
			if (sb_step(b))
				return AN_E_NOMEM;
		}
		i = e;
	}
	return AN_OK;
}

/* TACS's host flows as host steps (empty ones dropped), and the plan of
 * rank steps expand_hosts() would make of them. */
static int c_tacs(struct sched *s, const struct job *j, const struct hflow *hf, size_t nhf, struct cplan *pl)
{
	uint32_t R = 0, nh = 0;
	for (uint32_t a = 0; a < j->H; a++)
		R = c_nr(j, a) > R ? c_nr(j, a) : R;
	for (size_t i = 0; i < nhf; i++)
		nh += !i || hf[i].step != hf[i - 1].step;
	s->hstep_off = malloc(((size_t)nh + 1) * sizeof(uint32_t));
	s->hsrc = malloc((nhf + 1) * sizeof(uint32_t));
	s->hdst = malloc((nhf + 1) * sizeof(uint32_t));
	if (!s->hstep_off || !s->hsrc || !s->hdst)
		return AN_E_NOMEM;
	/* rank steps: R-1 intra-host ones, then max(ra, rb) per host step */
	size_t nsteps = R ? R - 1 : 0;
	s->nhsteps = 0;
	for (size_t i = 0; i < nhf; i++) {
		if (!i || hf[i].step != hf[i - 1].step)
			s->hstep_off[s->nhsteps++] = (uint32_t)i;
		s->hsrc[i] = hf[i].a;
		s->hdst[i] = hf[i].b;
	}
	s->hstep_off[s->nhsteps] = (uint32_t)nhf;
	uint32_t *smax = calloc((size_t)nh + 1, sizeof(*smax));
	uint8_t *eq = malloc((size_t)nh + 1);
	if (!smax || !eq) {
		free(smax);
		free(eq);
		return AN_E_NOMEM;
	}
	for (uint32_t h = 0; h < nh; h++) {
		eq[h] = 1;
		for (uint32_t f = s->hstep_off[h]; f < s->hstep_off[h + 1]; f++) {
			uint32_t ra = c_nr(j, s->hsrc[f]), rb = c_nr(j, s->hdst[f]);
			smax[h] = ra > smax[h] ? ra : smax[h];
			smax[h] = rb > smax[h] ? rb : smax[h];
			eq[h] &= ra == rb && ra == c_nr(j, s->hsrc[s->hstep_off[h]]);
		}
		nsteps += smax[h];
	}
	pl->hstep = malloc((nsteps + 1) * sizeof(uint32_t));
	pl->y = malloc((nsteps + 1) * sizeof(uint32_t));
	pl->same = calloc(nsteps + 1, 1);
	int rc = AN_E_NOMEM;
	if (pl->hstep && pl->y && pl->same) {
		size_t st = 0;
		for (uint32_t y = 1; y < R; y++, st++) {
			pl->hstep[st] = NONE;
			pl->y[st] = y;
		}
		for (uint32_t h = 0; h < nh; h++)
			for (uint32_t y = 0; y < smax[h]; y++, st++) {
				pl->hstep[st] = h;
				pl->y[st] = y;
				/* all flows with smax ranks at both ends: the same host
				 * pairs in every substep (expand_hosts' same[]) */
				pl->same[st] = eq[h] && y > 0 && c_nr(j, s->hsrc[s->hstep_off[h]]) == smax[h];
			}
		s->nsteps = (uint32_t)nsteps;
		rc = AN_OK;
	}
	free(smax);
	free(eq);
	return rc;
}

/* The ranks of each job host, in rank order, from rank_jhost. */
static int x_hosts(const struct sched *c, uint32_t **off, uint32_t **rk)
{
	uint32_t H = c->nhosts, P = c->nranks;
	*off = calloc((size_t)H + 2, sizeof(uint32_t));
	*rk = malloc(((size_t)P + 1) * sizeof(uint32_t));
	if (!*off || !*rk)
		return AN_E_NOMEM;
	for (uint32_t r = 0; r < P; r++)
		(*off)[c->rank_jhost[r] + 2]++;
	for (uint32_t a = 0; a < H; a++)
		(*off)[a + 2] += (*off)[a + 1];
	for (uint32_t r = 0; r < P; r++)
		(*rk)[(*off)[c->rank_jhost[r] + 1]++] = r;
	return AN_OK; /* (*off)[a] .. (*off)[a+1]: ranks of a */
}

/* TACS's rank flows, expand_hosts' order. */
static int x_tacs(struct sbuild *b, const struct sched *c, const uint32_t *off, const uint32_t *rk)
{
	uint32_t R = 0;
	for (uint32_t a = 0; a < c->nhosts; a++)
		R = off[a + 1] - off[a] > R ? off[a + 1] - off[a] : R;
	for (uint32_t y = 1; y < R; y++) {
		for (uint32_t a = 0; a < c->nhosts; a++) {
			uint32_t r = off[a + 1] - off[a];
			for (uint32_t x = 0; y < r && x < r; x++)
				if (sb_flow(b, rk[off[a] + x], rk[off[a] + (x + y) % r], 0))
					return AN_E_NOMEM;
		}
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	for (uint32_t h = 0; h < c->nhsteps; h++) {
		uint32_t smax = 0;
		for (uint32_t f = c->hstep_off[h]; f < c->hstep_off[h + 1]; f++) {
			uint32_t ra = off[c->hsrc[f] + 1] - off[c->hsrc[f]], rb = off[c->hdst[f] + 1] - off[c->hdst[f]];
			smax = ra > smax ? ra : smax;
			smax = rb > smax ? rb : smax;
		}
		for (uint32_t y = 0; y < smax; y++) {
			for (uint32_t f = c->hstep_off[h]; f < c->hstep_off[h + 1]; f++) {
				const uint32_t *ka = rk + off[c->hsrc[f]], *kb = rk + off[c->hdst[f]];
				uint32_t ra = off[c->hsrc[f] + 1] - off[c->hsrc[f]], rb = off[c->hdst[f] + 1] - off[c->hdst[f]];
				for (uint32_t x = 0; ra <= rb && y < rb && x < ra; x++)
					if (sb_flow(b, ka[x], kb[(x + y) % rb], 0))
						return AN_E_NOMEM;
				for (uint32_t z = 0; ra > rb && y < ra && z < rb; z++)
					if (sb_flow(b, ka[(z + y) % ra], kb[z], 0))
						return AN_E_NOMEM;
			}
			if (sb_step(b))
				return AN_E_NOMEM;
		}
	}
	return AN_OK;
}

/* The printed guard: if no two job hosts share a leaf, or the job has
 * fewer hosts per used leaf than the sparsity threshold, TACS runs the
 * default (XOR) and note says so. 1: sparse. */
static int tacs_sparse(struct sched *s, const struct job *j, const struct sched_req *req, int *rc)
{
	const struct route_tab *rt = j->rt;
	uint32_t *perleaf = calloc(rt->snap->nnodes, sizeof(*perleaf));
	*rc = perleaf ? AN_OK : AN_E_NOMEM;
	if (!perleaf)
		return 0;
	uint32_t sharing = 0, leaves = 0;
	for (uint32_t a = 0; a < j->H; a++)
		if (!perleaf[rt->eps[route_host_ep(rt, j->host[a])].leaf]++)
			leaves++;
	for (uint32_t a = 0; a < j->H; a++)
		if (perleaf[rt->eps[route_host_ep(rt, j->host[a])].leaf] > 1)
			sharing++;
	free(perleaf);
	double avg = leaves ? (double)j->H / leaves : 0;
	if (sharing && avg >= req->sparsity)
		return 0;
	snprintf(s->note, sizeof(s->note), "fallback=xor hosts_sharing_links=%u avg_hosts_per_leaf=%.2f sparsity=%.2f",
		 sharing, avg, req->sparsity);
	return 1;
}

int sched_build_tacs(struct sbuild *b, const struct job *j, const struct hier *h, const struct sched_req *req,
		     char err[AN_ERR_LEN])
{
	struct sched *s = b->s;
	int rc;
	if (tacs_sparse(s, j, req, &rc)) {
		s->algo = SCHED_XOR;
		return sched_build_xor(b, j, h, req, err);
	}
	if (rc)
		return rc;
	struct hflow *hf = NULL;
	size_t nhf = 0;
	rc = build_tacs(s, j, req, &hf, &nhf, err);
	if (!rc)
		rc = b->pl ? c_tacs(s, j, hf, nhf, b->pl) : expand_hosts(b, j, hf, nhf);
	free(hf);
	return rc;
}

int sched_expand_tacs(struct sbuild *b, const struct sched *c)
{
	uint32_t *off = NULL, *rk = NULL;
	int rc = x_hosts(c, &off, &rk);
	if (!rc)
		rc = x_tacs(b, c, off, rk);
	free(off);
	free(rk);
	return rc;
}
