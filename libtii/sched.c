/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sched.c - tii_get_schedule(): an all-to-all schedule for a rank list from
 * topod's `schedule` command (docs/protocol.md), as arrays an MPI library
 * runs step by step.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tii.h"
#include "tii_impl.h"

static const char *const algo_names[] = { "xor", "tacs1", "tacs2", "opt", "allgather", "route", "kshift", "agring", "ring", "agbest" };

/* Flows carry blocks: kPrefix, kShift and the rings (AGBEST asks, never answers). */
static int is_ag(int algo)
{
	return algo >= TII_SCHED_ALLGATHER && algo != TII_SCHED_ROUTE;
}

static int algo_of(const char *s)
{
	for (int i = 0; i < (int)(sizeof(algo_names) / sizeof(*algo_names)); i++)
		if (s && !strcmp(s, algo_names[i]))
			return i;
	return -1;
}

const char *tii_schedule_algo_name(int algo)
{
	return algo >= 0 && algo < (int)(sizeof(algo_names) / sizeof(*algo_names)) ? algo_names[algo] : NULL;
}

void tii_schedule_free(tii_schedule_t *s)
{
	if (!s)
		return;
	free(s->step_off);
	free(s->src);
	free(s->dst);
	free(s->blk);
	free(s->steps);
	free(s->level_max);
	free(s);
}

struct sc_ctx {
	tii_schedule_t *s;
	size_t nranks;
	size_t cap, n;      /* flows */
	size_t nhead;       /* TREE/LEVEL lines before the steps */
	/* form=hosts: what was asked (ranks per RANK argument) and what came */
	int asked_hosts;
	const uint32_t *tokr;
	size_t ntok;
	int hosts;          /* the reply is in host form */
	int order;          /* host form of KSHIFT/AGRING: an ORDER line after JOB */
	int *ord;           /* [nranks] the rank at each ring position */
	long k, nsteps;
	int *jh;            /* [nranks] job host of each rank */
	uint8_t *pair;      /* [H * H] host pair listed */
	int *hoff, *hsrc, *hdst;
	size_t hcap, nhf, stcap;
	size_t rstcap, offcap, lvcap;   /* form=ranks: steps grow as their lines arrive */
	size_t hoffcap;                 /* form=hosts: hoff grows with the HSTEP lines */
};

static void sc_reset(struct sc_ctx *c)
{
	tii_schedule_free(c->s);
	c->s = NULL;
	c->cap = c->n = c->nhead = 0;
	c->rstcap = c->offcap = c->lvcap = 0;
	free(c->jh);
	free(c->pair);
	free(c->hoff);
	free(c->hsrc);
	free(c->hdst);
	free(c->ord);
	c->jh = c->hoff = c->hsrc = c->hdst = c->ord = NULL;
	c->pair = NULL;
	c->hosts = c->order = 0;
	c->hcap = c->nhf = c->stcap = c->hoffcap = 0;
}

static int sc_head_hosts(struct sc_ctx *c, const struct tii__kv *kv, size_t nlines);

static const char *const native_names[] = { "smpi-ompi", "smpi-mpich", "ompi", "mpich" };

/* window= and native=, native_algo=, native_time_us= (1.7); fallback=native
 * is the MPI's own predicted faster (slower then, and reason=slower). */
static int sc_run(const struct tii__kv *kv, tii_schedule_t *s)
{
	long v;
	const char *fb = tii__kv_get(kv, "fallback"), *nat = tii__kv_get(kv, "native");
	s->window = 1;
	s->native = -1;
	s->native_time_s = -1;
	if (tii__kv_get(kv, "window") && tii__kv_int(kv, "window", 1, TOPO_SCHED_WINDOW_MAX, &v))
		return TII_E_PROTO;
	if (tii__kv_get(kv, "window"))
		s->window = (int)v;
	s->native_faster = fb && !strcmp(fb, "native");
	if (!nat)
		return s->native_faster ? TII_E_PROTO : 0;
	for (int i = 0; i < 4; i++)
		if (!strcmp(nat, native_names[i]))
			s->native = i;
	const char *al = tii__kv_get(kv, "native_algo");
	if (s->native < 0 || !al || strlen(al) >= sizeof(s->native_algo) ||
	    tii__parse_us(tii__kv_get(kv, "native_time_us"), &s->native_time_s))
		return TII_E_PROTO;
	strcpy(s->native_algo, al);
	return 0;
}

/* bytes, time_us, xor_time_us, bound_us and reason (1.2). */
static int sc_times(const struct tii__kv *kv, tii_schedule_t *s)
{
	const char *reason = tii__kv_get(kv, "reason");
	if (tii__kv_u64(kv, "bytes", &s->bytes) || !s->bytes || tii__parse_us(tii__kv_get(kv, "time_us"), &s->time_s) ||
	    tii__parse_us(tii__kv_get(kv, "xor_time_us"), &s->xor_time_s) || tii__parse_us(tii__kv_get(kv, "bound_us"), &s->bound_s) ||
	    !reason)
		return TII_E_PROTO;
	s->slower = !strcmp(reason, "slower");
	if (s->slower != (s->fallback && strcmp(reason, "sparse")))
		return TII_E_PROTO;   /* a fallback always says why */
	return sc_run(kv, s);
}

/* ring_time_us= and variants=NAME:STATE:TIME,... of the allgathers (1.5). */
static int sc_ag(const struct tii__kv *kv, tii_schedule_t *s)
{
	static const char *const state[] = { "offered", "slower", "notapplicable" };
	const char *v = tii__kv_get(kv, "variants");
	char buf[256];
	s->ring_time_s = -1;
	if (!is_ag(s->requested))
		return v || tii__kv_get(kv, "ring_time_us") ? TII_E_PROTO : 0;
	/* a topod before 1.5 answers kPrefix without them */
	if (!v && !tii__kv_get(kv, "ring_time_us") && s->requested == TII_SCHED_ALLGATHER)
		return 0;
	if (!is_ag(s->algo) || !v || strlen(v) >= sizeof(buf) || tii__parse_us(tii__kv_get(kv, "ring_time_us"), &s->ring_time_s))
		return TII_E_PROTO;
	/* The answer is what was asked, or its fallback: the ring (kPrefix's
	 * spelled as kPrefix, k = 1); agbest is a request, never an answer. */
	int rq = s->requested, fits = s->algo == rq || (rq == TII_SCHED_AGBEST) ||
				      (s->fallback && s->algo == TII_SCHED_RING && rq != TII_SCHED_ALLGATHER);
	if (!fits || s->algo == TII_SCHED_AGBEST)
		return TII_E_PROTO;
	if (!strcmp(v, "none"))
		return rq == TII_SCHED_RING ? 0 : TII_E_PROTO;
	strcpy(buf, v);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(w, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || s->nvariants == 3)
			return TII_E_PROTO;
		*c1++ = 0;
		*c2++ = 0;
		struct tii_schedule_variant *x = &s->variants[s->nvariants++];
		x->algo = algo_of(w);
		x->state = -1;
		for (int i = 0; i < 3; i++)
			if (!strcmp(c1, state[i]))
				x->state = i;
		if (!is_ag(x->algo) || x->algo == TII_SCHED_AGBEST || x->state < 0 || tii__parse_us(c2, &x->time_s))
			return TII_E_PROTO;
	}
	/* agbest's three, else the one asked for; no empty item (",,") */
	int commas = 0;
	for (const char *q = v; *q; q++)
		commas += *q == ',';
	if (commas + 1 != s->nvariants || s->nvariants != (rq == TII_SCHED_AGBEST ? 3 : 1) ||
	    (rq != TII_SCHED_AGBEST && s->variants[0].algo != rq))
		return TII_E_PROTO;
	return 0;
}

static int sc_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct sc_ctx *c = ctx;
	long v;
	sc_reset(c);
	tii_schedule_t *s = calloc(1, sizeof(*s));
	if (!s)
		return TII_E_NOMEM;
	c->s = s;
	s->algo = algo_of(tii__kv_get(kv, "algo"));
	s->requested = algo_of(tii__kv_get(kv, "requested"));
	const char *fb = tii__kv_get(kv, "fallback");
	if (s->algo < 0 || s->requested < 0 || !fb)
		return TII_E_PROTO;
	s->fallback = strcmp(fb, "none") != 0;
	if (tii__kv_int(kv, "ranks", 2, 1 << 20, &v) || (size_t)v != c->nranks)
		return TII_E_PROTO;
	s->nranks = (int)v;
	if (tii__kv_int(kv, "steps", 0, 1 << 24, &v))
		return TII_E_PROTO;
	s->nsteps = (int)v;
	if (tii__kv_int(kv, "multi", 0, 1, &v))
		return TII_E_PROTO;
	s->multi = (int)v;
	if (tii__kv_int(kv, "host_steps", 0, 1 << 24, &v))
		return TII_E_PROTO;
	s->host_steps = (int)v;
	if (tii__kv_int(kv, "extra_steps", 0, 1 << 24, &v))
		return TII_E_PROTO;
	s->extra_steps = (int)v;
	/* "tiers"; an older topod said "levels" (and LEVEL, L below) */
	if (tii__kv_int(kv, tii__kv_get(kv, "tiers") ? "tiers" : "levels", 0, 16, &v))
		return TII_E_PROTO;
	s->nlevels = (int)v;
	if (tii__kv_int(kv, "flows", 1, 1, &v))
		return TII_E_PROTO;
	if (sc_times(kv, s) || sc_ag(kv, s))
		return TII_E_PROTO;
	const char *form = tii__kv_get(kv, "form");
	if (form && !strcmp(form, "hosts"))
		return sc_head_hosts(c, kv, nlines);
	c->nhead = s->nlevels ? (size_t)s->nlevels + 1 : 0;
	/* Every step has a flow: more steps than ordered pairs is a lie. The
	 * arrays grow as step lines arrive (sc_line), never by this count. */
	if (nlines != (size_t)s->nsteps + c->nhead || (uint64_t)s->nsteps > (uint64_t)s->nranks * (s->nranks - 1))
		return TII_E_PROTO;
	if (tii__grow((void **)&s->step_off, &c->offcap, 1, sizeof(*s->step_off)) ||
	    tii__grow((void **)&s->steps, &c->rstcap, 1, sizeof(*s->steps)))
		return TII_E_NOMEM;
	s->step_off[0] = 0;
	return 0;
}

static int grow(struct sc_ctx *c)
{
	size_t nc = c->cap ? c->cap * 2 : 65536;
	tii_schedule_t *s = c->s;
	int *a = realloc(s->src, nc * sizeof(*a));
	if (!a)
		return TII_E_NOMEM;
	s->src = a;
	a = realloc(s->dst, nc * sizeof(*a));
	if (!a)
		return TII_E_NOMEM;
	s->dst = a;
	if (is_ag(s->algo)) {
		a = realloc(s->blk, nc * sizeof(*a));
		if (!a)
			return TII_E_NOMEM;
		s->blk = a;
	}
	c->cap = nc;
	return 0;
}

static int num(char *w, long max, long *v)
{
	return tii__parse_long(w, 0, max, v);
}

static int sc_line_hosts(struct sc_ctx *c, size_t i, char *p);

static int sc_line(void *ctx, size_t i, char *line, size_t len)
{
	struct sc_ctx *c = ctx;
	tii_schedule_t *s = c->s;
	char *p = line, *w;
	long v;
	(void)len;
	if (c->hosts)
		return sc_line_hosts(c, i, line);
	if (i < c->nhead) {
		w = tii__word(&p);
		if (i == 0)
			return w && !strcmp(w, "TREE") ? 0 : TII_E_PROTO;
		long l, b;
		struct tii__kv kv;
		if (!w || (strcmp(w, "TIER") && strcmp(w, "LEVEL")) || !(w = tii__word(&p)) || num(w, 16, &l) || l != (long)i ||
		    tii__kv_parse(p, &kv) || tii__kv_int(&kv, "bound", 0, 1 << 30, &b))
			return TII_E_PROTO;
		s->level_bound[l < TII_SCHED_LEVELS ? l : 0] = (int)b;
		return 0;
	}
	size_t st = i - c->nhead;
	long f[5];
	if (!(w = tii__word(&p)) || strcmp(w, "STEP"))
		return TII_E_PROTO;
	for (int k = 0; k < 5; k++)
		if (!(w = tii__word(&p)) || num(w, 1 << 30, &f[k]))
			return TII_E_PROTO;
	if ((size_t)f[0] != st)
		return TII_E_PROTO;
	if (tii__grow((void **)&s->steps, &c->rstcap, st + 1, sizeof(*s->steps)) ||
	    tii__grow((void **)&s->step_off, &c->offcap, st + 2, sizeof(*s->step_off)) ||
	    (s->nlevels &&
	     tii__grow((void **)&s->level_max, &c->lvcap, (st + 1) * (size_t)s->nlevels, sizeof(*s->level_max))))
		return TII_E_NOMEM;
	s->steps[st].flows = (int)f[1];
	s->steps[st].maxload = (int)f[2];
	s->steps[st].conflicts = (int)f[3];
	s->steps[st].fabric_conflicts = (int)f[4];
	s->step_off[st] = (int)c->n;
	if (s->nlevels) {
		if (!(w = tii__word(&p)) || (w[0] != 'T' && w[0] != 'L'))
			return TII_E_PROTO;
		char *q = w + 1;
		for (int l = 1; l <= s->nlevels; l++) {
			char *comma = strchr(q, ',');
			if (comma)
				*comma = 0;
			if (num(q, 1 << 30, &v))
				return TII_E_PROTO;
			s->level_max[st * (size_t)s->nlevels + (size_t)l - 1] = (int)v;
			if (l < s->nlevels && !comma)
				return TII_E_PROTO;
			q = comma ? comma + 1 : q;
		}
	}
	size_t nf = 0;
	while ((w = tii__word(&p))) {
		char *c1 = strchr(w, ':'), *c2;
		long a, b, o = 0;
		if (!c1)
			return TII_E_PROTO;
		*c1++ = 0;
		c2 = strchr(c1, ':');
		if (c2)
			*c2++ = 0;
		if ((c2 != NULL) != is_ag(s->algo) || num(w, s->nranks - 1, &a) ||
		    num(c1, s->nranks - 1, &b) || a == b || (c2 && num(c2, s->nranks - 1, &o)))
			return TII_E_PROTO;
		if (c->n == c->cap && grow(c))
			return TII_E_NOMEM;
		s->src[c->n] = (int)a;
		s->dst[c->n] = (int)b;
		if (s->blk)
			s->blk[c->n] = (int)o;
		c->n++;
		nf++;
	}
	if (nf != (size_t)f[1])
		return TII_E_PROTO;
	s->step_off[st + 1] = (int)c->n;
	return 0;
}

/* ---- form=hosts (docs/protocol.md): host steps, expanded here ------------- */

static int sc_head_hosts(struct sc_ctx *c, const struct tii__kv *kv, size_t nlines)
{
	tii_schedule_t *s = c->s;
	long H, hs;
	c->order = s->algo == TII_SCHED_KSHIFT || s->algo == TII_SCHED_AGRING;
	if (!c->asked_hosts || s->nlevels || tii__kv_int(kv, "hosts", 1, s->nranks, &H) ||
	    tii__kv_int(kv, "hsteps", 0, (long)H * (H - 1), &hs) || tii__kv_int(kv, "k", 0, s->nranks, &c->k) ||
	    nlines != 1 + (size_t)c->order + (size_t)s->nsteps + (size_t)hs)
		return TII_E_PROTO;
	c->hosts = 1;
	c->nsteps = s->nsteps;
	s->form = TII_SCHED_FORM_HOSTS;
	s->nhosts = (int)H;
	s->nhsteps = (int)hs;
	/* sized by what was asked (H <= ranks), not by announced counts */
	c->jh = malloc(c->nranks * sizeof(*c->jh));
	c->pair = calloc((size_t)H * (size_t)H, 1);
	/* hoff grows as HSTEP lines arrive (sc_hstep), not by hsteps= */
	if (!c->jh || !c->pair)
		return TII_E_NOMEM;
	return 0;
}

/* JOB: the job host of each RANK argument, numbered by first appearance. */
static int sc_job(struct sc_ctx *c, char *p)
{
	char *w = tii__word(&p);
	long v, next = 0;
	size_t r = 0;
	if (!w || strcmp(w, "JOB"))
		return TII_E_PROTO;
	for (size_t a = 0; a < c->ntok; a++) {
		if (!(w = tii__word(&p)) || tii__parse_long(w, 0, next < c->s->nhosts - 1 ? next : c->s->nhosts - 1, &v))
			return TII_E_PROTO;
		next += v == next;
		for (uint32_t x = 0; x < c->tokr[a]; x++)
			c->jh[r++] = (int)v;
	}
	return tii__word(&p) || next != c->s->nhosts ? TII_E_PROTO : 0;
}

/* STEP i FLOWS MAXLOAD CONFLICTS FABRIC: figures only. */
static int sc_fig(struct sc_ctx *c, size_t st, char *p)
{
	tii_schedule_t *s = c->s;
	char *w = tii__word(&p);
	long f[5];
	if (!w || strcmp(w, "STEP"))
		return TII_E_PROTO;
	for (int k = 0; k < 5; k++)
		if (!(w = tii__word(&p)) || tii__parse_long(w, 0, 1 << 30, &f[k]))
			return TII_E_PROTO;
	if ((size_t)f[0] != st || tii__word(&p))
		return TII_E_PROTO;
	if (st == c->stcap) { /* grows by lines received */
		size_t nc = c->stcap ? c->stcap * 2 : 1024;
		struct tii_schedule_step *ns = realloc(s->steps, nc * sizeof(*ns));
		if (!ns)
			return TII_E_NOMEM;
		s->steps = ns;
		c->stcap = nc;
	}
	s->steps[st] = (struct tii_schedule_step){ (int)f[1], (int)f[2], (int)f[3], (int)f[4] };
	return 0;
}

/* HSTEP h A:B ...: each ordered host pair at most once. */
static int sc_hstep(struct sc_ctx *c, size_t h, char *p)
{
	long H = c->s->nhosts, v, a, b;
	char *w = tii__word(&p);
	if (!w || strcmp(w, "HSTEP") || !(w = tii__word(&p)) || tii__parse_long(w, 0, 1 << 30, &v) || (size_t)v != h)
		return TII_E_PROTO;
	if (tii__grow((void **)&c->hoff, &c->hoffcap, h + 2, sizeof(*c->hoff)))
		return TII_E_NOMEM;
	c->hoff[h] = (int)c->nhf;
	while ((w = tii__word(&p))) {
		char *colon = strchr(w, ':');
		if (!colon)
			return TII_E_PROTO;
		*colon = 0;
		if (tii__parse_long(w, 0, H - 1, &a) || tii__parse_long(colon + 1, 0, H - 1, &b) || a == b ||
		    c->pair[a * H + b]++)
			return TII_E_PROTO;
		if (c->nhf == c->hcap) {
			size_t nc = c->hcap ? c->hcap * 2 : 4096;
			int *ns = realloc(c->hsrc, nc * sizeof(*ns));
			if (!ns)
				return TII_E_NOMEM;
			c->hsrc = ns;
			ns = realloc(c->hdst, nc * sizeof(*ns));
			if (!ns)
				return TII_E_NOMEM;
			c->hdst = ns;
			c->hcap = nc;
		}
		c->hsrc[c->nhf] = (int)a;
		c->hdst[c->nhf++] = (int)b;
	}
	c->hoff[h + 1] = (int)c->nhf;
	return c->hoff[h + 1] > c->hoff[h] ? 0 : TII_E_PROTO;
}

/* ORDER A B ...: every job host once, in ring order; their ranks follow
 * each other in rank order (c->ord). */
static int sc_order(struct sc_ctx *c, char *p)
{
	size_t H = (size_t)c->s->nhosts, P = c->nranks, n = 0;
	int *off = calloc(H + 2, sizeof(int)), *rk = malloc(P * sizeof(int));
	uint8_t *seen = calloc(H + 1, 1);
	char *w = tii__word(&p);
	long a;
	int rc = !off || !rk || !seen || !(c->ord = malloc(P * sizeof(int))) ? TII_E_NOMEM : 0;
	if (!rc && (!w || strcmp(w, "ORDER")))
		rc = TII_E_PROTO;
	if (!rc) { /* each host's ranks in rank order */
		for (size_t r = 0; r < P; r++)
			off[c->jh[r] + 2]++;
		for (size_t x = 0; x < H; x++)
			off[x + 2] += off[x + 1];
		for (size_t r = 0; r < P; r++)
			rk[off[c->jh[r] + 1]++] = (int)r;
	}
	for (size_t i = 0; !rc && i < H; i++) {
		if (!(w = tii__word(&p)) || tii__parse_long(w, 0, (long)H - 1, &a) || seen[a]++)
			rc = TII_E_PROTO;
		for (int x = rc ? 0 : off[a]; !rc && x < off[a + 1]; x++)
			c->ord[n++] = rk[x];
	}
	if (!rc && tii__word(&p))
		rc = TII_E_PROTO;
	free(off);
	free(rk);
	free(seen);
	return rc;
}

static int sc_line_hosts(struct sc_ctx *c, size_t i, char *p)
{
	if (i == 0)
		return sc_job(c, p);
	if (c->order && i == 1)
		return sc_order(c, p);
	i -= (size_t)c->order;
	if (i <= (size_t)c->nsteps)
		return sc_fig(c, i - 1, p);
	return sc_hstep(c, i - 1 - (size_t)c->nsteps, p);
}

/* Appends flow a -> b (block o) to the current step; TII_E_PROTO past a
 * complete exchange (the server's host steps repeat or overlap). */
static int sx_flow(struct sc_ctx *c, int a, int b, int o)
{
	tii_schedule_t *s = c->s;
	if (c->n == c->cap)
		return TII_E_PROTO;
	s->src[c->n] = a;
	s->dst[c->n] = b;
	if (s->blk)
		s->blk[c->n] = o;
	c->n++;
	return 0;
}

/* Closes rank step st: its flows must be the ones the server counted. */
static int sx_step(struct sc_ctx *c, int *st)
{
	tii_schedule_t *s = c->s;
	if (*st >= s->nsteps || (size_t)s->steps[*st].flows != c->n - (size_t)s->step_off[*st])
		return TII_E_PROTO;
	s->step_off[++*st] = (int)c->n;
	return 0;
}

/* XOR and ALLGATHER: a function of the rank count (and k). */
static int sx_generated(struct sc_ctx *c, int *st)
{
	tii_schedule_t *s = c->s;
	int P = s->nranks, k = (int)c->k, rc = 0;
	if (s->algo == TII_SCHED_ALLGATHER && (k < 1 || (k & (k - 1)) || P % k))
		return TII_E_PROTO;
	for (int i = 1; i < P && !rc; i++) {
		int t = s->algo == TII_SCHED_ALLGATHER ? (i - 1) / k : 0, x = s->algo == TII_SCHED_ALLGATHER ? (i - 1) % k + 1 : i;
		for (int r = 0; r < P && !rc; r++) {
			int d = s->algo == TII_SCHED_ALLGATHER ? (x < k ? r ^ x : (r + k) % P)
							       : !(P & (P - 1)) ? r ^ i : (r + i) % P;
			rc = sx_flow(c, r, d, (int)(((long)r + (long)P * k - (long)t * k) % P));
		}
		rc = rc ? rc : sx_step(c, st);
	}
	return rc;
}

/* RING, AGRING, KSHIFT (docs/protocol.md): Kumar and Kalé 2004's kShift
 * over ring positions, k = 1 for the rings; in step s position p sends to
 * p + d the block that started at p - h. */
static int sx_shifts(struct sc_ctx *c, int *st)
{
	tii_schedule_t *s = c->s;
	long P = s->nranks, k = c->k, a = k / 2, b = k - 1 - a, q, rem, H = 0;
	int rc = 0;
	if (k < 1 || k > P || (s->algo != TII_SCHED_KSHIFT && k != 1) || (s->algo != TII_SCHED_RING && !c->ord))
		return TII_E_PROTO;
	q = P / k;
	rem = P % k;
	for (long t = 0; t <= q && !rc; t++) {
		/* t == q: the last window of rem positions, after a shift by b+1+a' */
		long lo = t < q ? a : rem / 2, hi = t < q ? b : rem - 1 - lo;
		if (t == q && !rem)
			break;
		for (long j = -lo; j <= hi + 1 && !rc; j++) {
			long d = j, h = H;
			if (j == 0)
				continue;
			if (j == hi + 1) { /* the ring step, not after the last window */
				if (t == q || (t + 1 == q && !rem))
					break;
				d = t + 1 < q ? k : b + 1 + rem / 2;
			}
			for (long p = 0; p < P && !rc; p++) {
				long to = ((p + d) % P + P) % P, from = ((p - h) % P + P) % P;
				int r = c->ord ? c->ord[p] : (int)p;
				rc = sx_flow(c, r, c->ord ? c->ord[to] : (int)to, c->ord ? c->ord[from] : (int)from);
			}
			rc = rc ? rc : sx_step(c, st);
			if (j == hi + 1)
				H += d;
		}
	}
	return rc;
}

/* TACS: the rule of docs/protocol.md (analysis/schedule.h sched_expand). */
static int sx_tacs(struct sc_ctx *c, const int *off, const int *rk, int *st)
{
	tii_schedule_t *s = c->s;
	int R = 0, H = s->nhosts, rc = 0;
	for (int a = 0; a < H; a++)
		R = off[a + 1] - off[a] > R ? off[a + 1] - off[a] : R;
	for (int y = 1; y < R && !rc; y++) {
		for (int a = 0; a < H && !rc; a++)
			for (int x = 0, r = off[a + 1] - off[a]; y < r && x < r && !rc; x++)
				rc = sx_flow(c, rk[off[a] + x], rk[off[a] + (x + y) % r], 0);
		rc = rc ? rc : sx_step(c, st);
	}
	for (int h = 0; h < s->nhsteps && !rc; h++) {
		int smax = 0;
		for (int f = c->hoff[h]; f < c->hoff[h + 1]; f++) {
			int ra = off[c->hsrc[f] + 1] - off[c->hsrc[f]], rb = off[c->hdst[f] + 1] - off[c->hdst[f]];
			smax = ra > smax ? ra : smax;
			smax = rb > smax ? rb : smax;
		}
		for (int y = 0; y < smax && !rc; y++) {
			for (int f = c->hoff[h]; f < c->hoff[h + 1] && !rc; f++) {
				const int *ka = rk + off[c->hsrc[f]], *kb = rk + off[c->hdst[f]];
				int ra = off[c->hsrc[f] + 1] - off[c->hsrc[f]], rb = off[c->hdst[f] + 1] - off[c->hdst[f]];
				for (int x = 0; ra <= rb && y < rb && x < ra && !rc; x++)
					rc = sx_flow(c, ka[x], kb[(x + y) % rb], 0);
				for (int z = 0; ra > rb && y < ra && z < rb && !rc; z++)
					rc = sx_flow(c, ka[(z + y) % ra], kb[z], 0);
			}
			rc = rc ? rc : sx_step(c, st);
		}
	}
	return rc;
}

/* An expanded flow array (64 MiB each at 4,096 ranks) on transparent huge
 * pages where the kernel has them: first-touch faults of 4 KiB pages cost
 * more than writing the flows. free() releases it. */
static int *sx_alloc(size_t n)
{
	size_t bytes = (n + 1) * sizeof(int), huge = (size_t)2 << 20;
	void *p = NULL;
	if (bytes < 4 * huge)
		return malloc(bytes);
	bytes = (bytes + huge - 1) / huge * huge;
	if (posix_memalign(&p, huge, bytes))
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

/* The rank-level flows of a host-form reply: exactly P(P-1), in the steps
 * and counts the server announced, or TII_E_PROTO. */
static int sc_expand(struct sc_ctx *c)
{
	tii_schedule_t *s = c->s;
	size_t P = (size_t)s->nranks, H = (size_t)s->nhosts;
	int st = 0, rc;
	int tacs = s->algo == TII_SCHED_TACS1 || s->algo == TII_SCHED_TACS2;
	if (tacs ? c->nhf != H * (H - 1) : s->nhsteps != 0 || (s->algo != TII_SCHED_XOR && !is_ag(s->algo)))
		return TII_E_PROTO; /* every ordered host pair once (TACS), none otherwise */
	c->cap = P * (P - 1);
	s->src = sx_alloc(c->cap);
	s->dst = sx_alloc(c->cap);
	s->step_off = calloc((size_t)s->nsteps + 1, sizeof(int));
	if (is_ag(s->algo))
		s->blk = sx_alloc(c->cap);
	int *off = calloc(H + 2, sizeof(int)), *rk = malloc(P * sizeof(int));
	rc = !s->src || !s->dst || !s->step_off || (is_ag(s->algo) && !s->blk) || !off || !rk
		     ? TII_E_NOMEM
		     : 0;
	if (!rc && tacs) { /* each host's ranks in rank order */
		for (size_t r = 0; r < P; r++)
			off[c->jh[r] + 2]++;
		for (size_t a = 0; a < H; a++)
			off[a + 2] += off[a + 1];
		for (size_t r = 0; r < P; r++)
			rk[off[c->jh[r] + 1]++] = (int)r;
		rc = sx_tacs(c, off, rk, &st);
	} else if (!rc && s->algo != TII_SCHED_XOR && s->algo != TII_SCHED_ALLGATHER) {
		rc = sx_shifts(c, &st);
	} else if (!rc) {
		rc = sx_generated(c, &st);
	}
	free(off);
	free(rk);
	if (!rc && (st != s->nsteps || c->n != c->cap))
		rc = TII_E_PROTO;
	return rc;
}

int tii_set_schedule_form(tii_t *t, int form)
{
	if (!t || (form != TII_SCHED_FORM_RANKS && form != TII_SCHED_FORM_HOSTS))
		return TII_E_INVAL;
	t->sched_ranks = form == TII_SCHED_FORM_RANKS;
	return 0;
}

/* Sends the request; tokr[] gets the ranks of each RANK argument. */
static int sc_send(tii_t *t, const struct tii_schedule_params *par, const char *const *rank_hosts, size_t n,
		   int hosts, uint32_t *tokr, size_t *ntok)
{
	char opt[64];
	int rc = tii__req_begin(t, TII__SCHEDULE);
	rc = rc ? rc : tii__req_host(t, tii_schedule_algo_name(par->algo));
	snprintf(opt, sizeof(opt), "conflicts=%d", par->conflicts);
	rc = rc ? rc : tii__req_host(t, opt);
	snprintf(opt, sizeof(opt), "sparsity=%.17g", par->sparsity);
	rc = rc ? rc : tii__req_host(t, opt);
	snprintf(opt, sizeof(opt), "k=%d", par->k);
	rc = rc ? rc : tii__req_host(t, opt);
	/* only when set: a topod before 1.2 knows neither option */
	if (t->sched_bytes) {
		snprintf(opt, sizeof(opt), "bytes=%" PRIu64, t->sched_bytes);
		rc = rc ? rc : tii__req_host(t, opt);
	}
	if (t->sched_asis)
		rc = rc ? rc : tii__req_host(t, "fallback=0");
	/* only when set: a topod before 1.7 knows neither */
	if (t->sched_window >= 0) {
		if (t->sched_window == TII_SCHED_WINDOW_AUTO)
			snprintf(opt, sizeof(opt), "window=auto");
		else
			snprintf(opt, sizeof(opt), "window=%d", t->sched_window);
		rc = rc ? rc : tii__req_host(t, opt);
	}
	if (t->sched_native >= 0) {
		snprintf(opt, sizeof(opt), "native=%s", native_names[t->sched_native]);
		rc = rc ? rc : tii__req_host(t, opt);
	}
	if (hosts)
		rc = rc ? rc : tii__req_host(t, "form=hosts");
	/* Consecutive ranks on one host travel as HOST*N. */
	*ntok = 0;
	for (size_t i = 0; i < n && !rc;) {
		size_t e = i + 1;
		if (!rank_hosts[i] || tii__check_name(rank_hosts[i]) || strpbrk(rank_hosts[i], "*=")) {
			tii__set_msg(t, "rank %zu: invalid host name", i);
			return TII_E_INVAL;
		}
		while (e < n && rank_hosts[e] && !strcmp(rank_hosts[e], rank_hosts[i]))
			e++;
		char tok[TII_NAME_MAX + 32];
		if (e - i > 1)
			snprintf(tok, sizeof(tok), "%s*%zu", rank_hosts[i], e - i);
		else
			snprintf(tok, sizeof(tok), "%s", rank_hosts[i]);
		rc = tii__req_host(t, tok);
		tokr[(*ntok)++] = (uint32_t)(e - i);
		i = e;
	}
	return rc;
}

int tii_get_schedule(tii_t *t, const struct tii_schedule_params *par, const char *const *rank_hosts, size_t n,
		     tii_schedule_t **out)
{
	if (!t || !par || !rank_hosts || n < 2 || !out || !tii_schedule_algo_name(par->algo) || par->conflicts < 0 ||
	    par->k < 0 || !(par->sparsity >= 0 && par->sparsity <= 1e6))
		return TII_E_INVAL;
	if (n > TII_SCHED_RANKS_MAX)
		return TII_E_TOOMANY;
	uint32_t *tokr = malloc(n * sizeof(*tokr));
	if (!tokr)
		return TII_E_NOMEM;
	struct sc_ctx c = { .nranks = n, .tokr = tokr, .asked_hosts = !t->sched_ranks && par->algo != TII_SCHED_OPT && par->algo != TII_SCHED_ROUTE };
	static const struct tii__handler h = { sc_head, sc_line, 0 };
	int rc = sc_send(t, par, rank_hosts, n, c.asked_hosts, tokr, &c.ntok);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (rc == TII_E_SERVER && c.asked_hosts && strstr(tii_last_message(t), "form=")) {
		/* a topod before form=hosts: the rank form */
		sc_reset(&c);
		c.asked_hosts = 0;
		rc = sc_send(t, par, rank_hosts, n, 0, tokr, &c.ntok);
		rc = rc ? rc : tii__request(t, &h, &c);
	}
	if (!rc && c.hosts)
		rc = sc_expand(&c);
	c.tokr = NULL;
	free(tokr);
	if (rc) {
		sc_reset(&c);
		return rc;
	}
	c.s->generation = tii_last_generation(t);
	*out = c.s;
	c.s = NULL;
	sc_reset(&c);
	return 0;
}

int tii_schedule_partners(const tii_schedule_t *s, int step, int *sendto, int *recvfrom)
{
	if (!s || step < 0 || step >= s->nsteps || !sendto || !recvfrom)
		return TII_E_INVAL;
	for (int r = 0; r < s->nranks; r++)
		sendto[r] = recvfrom[r] = -1;
	for (int f = s->step_off[step]; f < s->step_off[step + 1]; f++) {
		if (sendto[s->src[f]] >= 0 || recvfrom[s->dst[f]] >= 0)
			return TII_E_INVAL; /* a multi step: use the flow list */
		sendto[s->src[f]] = s->dst[f];
		recvfrom[s->dst[f]] = s->src[f];
	}
	return 0;
}

int tii_set_schedule_run(tii_t *t, int window, int native)
{
	if (!t || window < 0 || window > TOPO_SCHED_WINDOW_MAX || native < -1 || native > TII_NATIVE_MPICH)
		return TII_E_INVAL;
	t->sched_window = window;
	t->sched_native = native;
	return 0;
}

int tii_set_schedule_advice(tii_t *t, uint64_t bytes, int advice)
{
	if (!t || bytes > TII_MSG_BYTES_MAX)
		return TII_E_INVAL;
	t->sched_bytes = bytes;
	t->sched_asis = !advice;
	return 0;
}
