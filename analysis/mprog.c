/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mprog.c - ranks' programs for the cost model (mprog.h).
 */
#include "mprog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MP_SEND, MP_RECV, MP_WAIT, MP_SSEND };

int mp_init(struct mprog *p, uint32_t P)
{
	*p = (struct mprog){ .P = P };
	p->n = calloc((size_t)P + 1, sizeof(uint32_t));
	p->cap = calloc((size_t)P + 1, sizeof(uint32_t));
	p->op = calloc((size_t)P + 1, sizeof(*p->op));
	if (!p->n || !p->cap || !p->op) {
		mp_free(p);
		return AN_E_NOMEM;
	}
	return AN_OK;
}

void mp_free(struct mprog *p)
{
	for (uint32_t r = 0; p->op && r < p->P; r++)
		free(p->op[r]);
	free(p->n);
	free(p->cap);
	free(p->op);
	memset(p, 0, sizeof(*p));
}

static uint32_t add(struct mprog *p, uint32_t r, uint8_t kind, uint32_t peer, double bytes)
{
	if (p->failed || r >= p->P || (kind != MP_WAIT && (peer >= p->P || peer == r)) || p->total >= MP_OPS_MAX) {
		p->failed = 1;
		return 0;
	}
	if (p->n[r] == p->cap[r]) {
		uint32_t c = p->cap[r] ? 2 * p->cap[r] : 16;
		struct mp_op *q = realloc(p->op[r], (size_t)c * sizeof(*q));
		if (!q) {
			p->failed = 1;
			return 0;
		}
		p->op[r] = q;
		p->cap[r] = c;
	}
	if (kind == MP_WAIT && (peer >= p->n[r] || p->op[r][peer].kind == MP_WAIT)) {
		p->failed = 1;
		return 0;
	}
	p->op[r][p->n[r]] = (struct mp_op){ kind, peer, bytes };
	p->total++;
	return p->n[r]++;
}

uint32_t mp_isend(struct mprog *p, uint32_t r, uint32_t to, double bytes)
{
	return add(p, r, MP_SEND, to, bytes);
}

uint32_t mp_irecv(struct mprog *p, uint32_t r, uint32_t from, double bytes)
{
	return add(p, r, MP_RECV, from, bytes);
}

uint32_t mp_issend(struct mprog *p, uint32_t r, uint32_t to, double bytes)
{
	return add(p, r, MP_SSEND, to, bytes);
}

void mp_wait(struct mprog *p, uint32_t r, uint32_t req)
{
	add(p, r, MP_WAIT, req, 0);
}

void mp_send(struct mprog *p, uint32_t r, uint32_t to, double bytes)
{
	mp_wait(p, r, mp_isend(p, r, to, bytes));
}

void mp_recv(struct mprog *p, uint32_t r, uint32_t from, double bytes)
{
	mp_wait(p, r, mp_irecv(p, r, from, bytes));
}

void mp_sendrecv(struct mprog *p, uint32_t r, uint32_t to, double sbytes, uint32_t from, double rbytes)
{
	uint32_t s = mp_isend(p, r, to, sbytes), q = mp_irecv(p, r, from, rbytes);
	mp_wait(p, r, s);
	mp_wait(p, r, q);
}

void mp_built_free(struct mp_built *b)
{
	free(b->src);
	free(b->dst);
	free(b->bytes);
	free(b->sync);
	free(b->prog_off);
	free(b->prog);
	memset(b, 0, sizeof(*b));
}

/* A post: (src, dst, n-th between them), and where it is. */
struct key {
	uint32_t src, dst, seq, rank, op;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Every post of kind k, numbered per pair in program order. */
static int of_kind(uint8_t kind, uint8_t k)
{
	return kind == k || (k == MP_SEND && kind == MP_SSEND);
}

static void keys_of(const struct mprog *p, uint8_t k, struct key *out, uint32_t *cnt, size_t *n)
{
	*n = 0;
	for (uint32_t r = 0; r < p->P; r++) {
		for (uint32_t i = 0; i < p->n[r]; i++) {
			const struct mp_op *o = &p->op[r][i];
			if (!of_kind(o->kind, k))
				continue;
			uint32_t s = k == MP_SEND ? r : o->peer, d = k == MP_SEND ? o->peer : r;
			out[(*n)++] = (struct key){ s, d, cnt[o->peer]++, r, i };
		}
		for (uint32_t i = 0; i < p->n[r]; i++)
			if (of_kind(p->op[r][i].kind, k))
				cnt[p->op[r][i].peer] = 0;
	}
	qsort(out, *n, sizeof(*out), cmp_key);
}

/* Flows in (src, dst, seq) order; fl[rank][op] their flow. */
static int match(const struct mprog *p, struct mp_built *b, uint32_t **fl, char err[AN_ERR_LEN])
{
	size_t nops = 0, ns, nr;
	for (uint32_t r = 0; r < p->P; r++)
		nops += p->n[r];
	struct key *snd = malloc((nops + 1) * sizeof(*snd)), *rcv = malloc((nops + 1) * sizeof(*rcv));
	uint32_t *cnt = calloc((size_t)p->P + 1, sizeof(uint32_t));
	int rc = AN_E_NOMEM;
	if (!snd || !rcv || !cnt)
		goto out;
	keys_of(p, MP_SEND, snd, cnt, &ns);
	keys_of(p, MP_RECV, rcv, cnt, &nr);
	rc = AN_E_INVAL;
	for (size_t i = 0; i < ns || i < nr; i++)
		if (i >= ns || i >= nr || cmp_key(&snd[i], &rcv[i])) {
			const struct key *k = i >= ns || (i < nr && cmp_key(&rcv[i], &snd[i]) < 0) ? &rcv[i] : &snd[i];
			snprintf(err, AN_ERR_LEN, "%s %u -> %u number %u has no %s", k == &snd[i] ? "send" : "receive",
				 k->src, k->dst, k->seq, k == &snd[i] ? "receive" : "send");
			goto out;
		}
	rc = AN_E_NOMEM;
	b->F = (uint32_t)ns;
	b->src = malloc((ns + 1) * sizeof(uint32_t));
	b->dst = malloc((ns + 1) * sizeof(uint32_t));
	b->bytes = malloc((ns + 1) * sizeof(double));
	b->sync = malloc(ns + 1);
	if (!b->src || !b->dst || !b->bytes || !b->sync)
		goto out;
	for (size_t i = 0; i < ns; i++) {
		b->src[i] = snd[i].src;
		b->dst[i] = snd[i].dst;
		b->bytes[i] = p->op[snd[i].rank][snd[i].op].bytes;
		b->sync[i] = p->op[snd[i].rank][snd[i].op].kind == MP_SSEND;
		fl[snd[i].rank][snd[i].op] = (uint32_t)i;
		fl[rcv[i].rank][rcv[i].op] = (uint32_t)i;
	}
	rc = AN_OK;
out:
	free(snd);
	free(rcv);
	free(cnt);
	return rc;
}

int mp_build(const struct mprog *p, struct mp_built *b, char err[AN_ERR_LEN])
{
	memset(b, 0, sizeof(*b));
	if (p->failed || !p->n) {
		snprintf(err, AN_ERR_LEN, "a program with a rank out of range, a wait for nothing, or past %u operations",
			 MP_OPS_MAX);
		return AN_E_INVAL;
	}
	uint32_t **fl = calloc((size_t)p->P + 1, sizeof(*fl));
	int rc = fl ? AN_OK : AN_E_NOMEM;
	for (uint32_t r = 0; !rc && r < p->P; r++)
		if (!(fl[r] = malloc(((size_t)p->n[r] + 1) * sizeof(uint32_t))))
			rc = AN_E_NOMEM;
	if (!rc)
		rc = match(p, b, fl, err);
	if (!rc) {
		b->P = p->P;
		b->prog_off = malloc(((size_t)p->P + 1) * sizeof(uint32_t));
		b->prog = malloc((p->total + 1) * sizeof(uint32_t));
		if (!b->prog_off || !b->prog)
			rc = AN_E_NOMEM;
	}
	for (uint32_t r = 0, k = 0; !rc && r < p->P; r++) {
		b->prog_off[r] = k;
		for (uint32_t i = 0; i < p->n[r]; i++) {
			const struct mp_op *o = &p->op[r][i];
			if (o->kind == MP_WAIT)
				b->prog[k++] = fl[r][o->peer] * 4 + (p->op[r][o->peer].kind != MP_RECV ? COST_OP_WAIT_SEND
													 : COST_OP_WAIT_RECV);
			else
				b->prog[k++] = fl[r][i] * 4 + (o->kind != MP_RECV ? COST_OP_SEND : COST_OP_RECV);
		}
		b->prog_off[r + 1] = k;
	}
	for (uint32_t r = 0; fl && r < p->P; r++)
		free(fl[r]);
	free(fl);
	if (rc == AN_E_NOMEM)
		snprintf(err, AN_ERR_LEN, "no memory for %llu operations", (unsigned long long)p->total);
	if (rc)
		mp_built_free(b);
	else
		b->step_off[1] = b->F;
	return rc;
}

int mp_time(const struct mp_built *b, uint32_t (*route)(const void *, uint32_t, uint32_t, uint32_t *),
	    const void *ctx, uint32_t ncables, const uint64_t *bps, const struct cost_msg *msg, double *seconds,
	    char err[AN_ERR_LEN])
{
	struct cost_sim in = { .nranks = b->P, .nsteps = 1, .ncables = ncables, .step_off = b->step_off,
			       .src = b->src, .dst = b->dst, .bps = bps, .route = route, .ctx = ctx,
			       .exact = b->F <= COST_SIM_EXACT_FLOWS_MAX, .msg = msg, .prog_off = b->prog_off,
			       .prog = b->prog, .bytes = b->bytes, .sync = b->sync };
	*seconds = 0;
	if (!b->F)
		return AN_OK;
	return cost_sim_run(&in, seconds, err);
}
