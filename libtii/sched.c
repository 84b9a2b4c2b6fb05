/*
 * sched.c - tii_get_schedule(): an all-to-all schedule for a rank list from
 * topod's `schedule` command (docs/protocol.md), as arrays an MPI library
 * runs step by step.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tii.h"
#include "tii_impl.h"

static const char *const algo_names[] = { "xor", "tacs1", "tacs2", "opt", "allgather" };

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
};

static void sc_reset(struct sc_ctx *c)
{
	tii_schedule_free(c->s);
	c->s = NULL;
	c->cap = c->n = c->nhead = 0;
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
	if (tii__kv_int(kv, "levels", 0, 16, &v))
		return TII_E_PROTO;
	s->nlevels = (int)v;
	if (tii__kv_int(kv, "flows", 1, 1, &v))
		return TII_E_PROTO;
	if (sc_times(kv, s))
		return TII_E_PROTO;
	c->nhead = s->nlevels ? (size_t)s->nlevels + 1 : 0;
	if (nlines != (size_t)s->nsteps + c->nhead)
		return TII_E_PROTO;
	s->step_off = calloc((size_t)s->nsteps + 1, sizeof(*s->step_off));
	s->steps = calloc((size_t)s->nsteps + 1, sizeof(*s->steps));
	if (s->nlevels)
		s->level_max = calloc((size_t)s->nsteps * s->nlevels + 1, sizeof(*s->level_max));
	if (!s->step_off || !s->steps || (s->nlevels && !s->level_max))
		return TII_E_NOMEM;
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
	if (s->algo == TII_SCHED_ALLGATHER) {
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

static int sc_line(void *ctx, size_t i, char *line, size_t len)
{
	struct sc_ctx *c = ctx;
	tii_schedule_t *s = c->s;
	char *p = line, *w;
	long v;
	(void)len;
	if (i < c->nhead) {
		w = tii__word(&p);
		if (i == 0)
			return w && !strcmp(w, "TREE") ? 0 : TII_E_PROTO;
		long l, b;
		struct tii__kv kv;
		if (!w || strcmp(w, "LEVEL") || !(w = tii__word(&p)) || num(w, 16, &l) || l != (long)i ||
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
	s->steps[st].flows = (int)f[1];
	s->steps[st].maxload = (int)f[2];
	s->steps[st].conflicts = (int)f[3];
	s->steps[st].fabric_conflicts = (int)f[4];
	s->step_off[st] = (int)c->n;
	if (s->nlevels) {
		if (!(w = tii__word(&p)) || w[0] != 'L')
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
		if ((c2 != NULL) != (s->algo == TII_SCHED_ALLGATHER) || num(w, s->nranks - 1, &a) ||
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

int tii_get_schedule(tii_t *t, const struct tii_schedule_params *par, const char *const *rank_hosts, size_t n,
		     tii_schedule_t **out)
{
	if (!t || !par || !rank_hosts || n < 2 || !out || !tii_schedule_algo_name(par->algo) || par->conflicts < 0 ||
	    par->k < 0 || !(par->sparsity >= 0 && par->sparsity <= 1e6))
		return TII_E_INVAL;
	if (n > TII_SCHED_RANKS_MAX)
		return TII_E_TOOMANY;
	char opt[64];
	int rc = tii__req_begin(t, "schedule");
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
	/* Consecutive ranks on one host travel as HOST*N. */
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
		i = e;
	}
	if (rc)
		return rc;
	struct sc_ctx c = { .nranks = n };
	static const struct tii__handler h = { sc_head, sc_line, 0 };
	rc = tii__request(t, &h, &c);
	if (rc) {
		sc_reset(&c);
		return rc;
	}
	c.s->generation = tii_last_generation(t);
	*out = c.s;
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

int tii_set_schedule_advice(tii_t *t, uint64_t bytes, int advice)
{
	if (!t || bytes > (1ull << 40))
		return TII_E_INVAL;
	t->sched_bytes = bytes;
	t->sched_asis = !advice;
	return 0;
}
