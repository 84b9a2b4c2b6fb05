/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost.c - the cost model of cost.h.
 */
#include "cost.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate.h"

double cost_route_latency(uint32_t hops)
{
	return ((double)(hops + 1) * COST_CABLE_LAT_NS + (double)hops * COST_SWITCH_LAT_NS) * 1e-9;
}

int cost_load_time(const struct route_tab *rt, const struct load *l, struct cost_time *out,
		   char err[AN_ERR_LEN])
{
	*out = (struct cost_time){ .link = UINT32_MAX };
	for (uint32_t i = 0; i < l->nlinks; i++) {
		const struct load_link *k = &l->links[i];
		if (!k->bytes)
			continue;
		uint64_t bps = rate_cable_bps(rt->snap, k->node, k->port);
		if (!bps) {
			snprintf(err, AN_ERR_LEN, "cable 0x%016" PRIx64 ":%u has no known rate",
				 rt->snap->nodes[k->node].guid, (unsigned)k->port);
			return AN_E_RANGE;
		}
		double t = (double)k->bytes * 8.0 / (double)bps;
		/* ties go to the first cable in (node, port) order: a stable answer */
		if (t > out->bw_seconds) {
			out->bw_seconds = t;
			out->link = i;
			out->link_bps = bps;
		}
	}
	if (out->link != UINT32_MAX)
		out->lat_seconds = cost_route_latency(l->max_hops);
	out->seconds = out->bw_seconds + out->lat_seconds;
	return AN_OK;
}

/* ---- steps that overlap (cost_sim_time, cost_sim_run) ------------------------------ */

/* A flow waits for both its ranks to post it, then (cost_sim_run) for its
 * route's latency or, between ranks of one host, its loopback time (a
 * timer), then moves on its cables until its bytes are through. */
enum { SIM_WAIT, SIM_TIMER, SIM_MOVE, SIM_DONE };

#define SIM_NONE UINT32_MAX

struct sim {
	const struct cost_sim *in;
	struct cost_msg msg;
	int sized;                /* cost_sim_run: real bytes, latencies, eager sends */
	uint32_t window;
	uint32_t F;
	double now;
	uint32_t *fstep;          /* [F] step of each flow */
	/* a rank's operations in step order: flow x 2 + 1 for its receive, + 0
	 * for its send (a flow from a rank to itself is both) */
	uint32_t *roff, *rlist;
	uint32_t *pos;            /* [P] first operation of the rank's list not done */
	uint32_t *ppos;           /* [P] first operation not posted */
	uint8_t *state;           /* [F] */
	uint8_t *fpost;           /* [F] 1: its sender posted it, 2: its receiver */
	uint8_t *sdone;           /* [F] its send completed (eager: when posted) */
	/* the moving flows by slot: flow id, route, bytes left, share; act
	 * lists the slots in use, free the others */
	uint32_t nact, scap, nfree, *act, *freel, *sflow, *snc, *scab;
	double *rem, *share;
	uint8_t *inset;           /* [scap] slot is in the set being solved */
	/* per cable: its moving flows as a list of memberships (slot x
	 * COST_ROUTE_MAX + k), the sum of their shares, changed since solved */
	uint32_t *head, *mnext, *mprev;
	double *used;
	uint8_t *dirty;
	uint32_t *dlist, ndirty;
	uint32_t *set, nset;      /* the slots being solved */
	/* per cable, while shares are solved */
	uint32_t *cnt, *touched, ntouched, *cpos;
	double *capl;
	uint32_t *coff, coffcap, *clist, clistcap; /* the set's flows of each touched cable */
	double *hkey;                               /* min-heap of shares per flow, by cable */
	uint32_t *hcab, hcap, hcabcap, nheap;
	double *tkey;             /* min-heap of timers: when flow tflow's latency or copy ends */
	uint32_t *tflow, ntimer, tcap;
	uint32_t *queue, nq;      /* ranks whose next operations may be posted */
	uint8_t *queued;
	uint32_t since_full;      /* local solves since the last full one */
	unsigned long long work;
};

/* SMPI 3.32's message costs (cost.h struct cost_msg). */
static void cost_msg_smpi(struct cost_msg *m)
{
	/* smpi_request.cpp: payload = size + 16 (the envelope); detached below
	 * smpi/send-is-detached-thresh; network/loopback-bw 10 GB/s, latency 0 */
	*m = (struct cost_msg){ .envelope = 16, .eager_below = 65536, .local_Bps = 1e10 };
}

static void sim_free(struct sim *m)
{
	void *p[] = { m->fstep, m->roff, m->rlist, m->pos, m->ppos, m->state, m->fpost, m->sdone, m->act,
		      m->freel, m->sflow, m->snc, m->scab, m->rem, m->share, m->inset, m->head, m->mnext,
		      m->mprev, m->used, m->dirty, m->dlist, m->set, m->cnt, m->touched, m->capl, m->cpos,
		      m->coff, m->clist, m->hkey, m->hcab, m->tkey, m->tflow, m->queue, m->queued };
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		free(p[i]);
}

/* Programs: every operation names a flow of its own rank's side, each
 * flow's send and receive are posted once each, and a rank's program
 * counter (pos) starts at its first operation. */
static int prog_check(struct sim *m, char err[AN_ERR_LEN])
{
	const struct cost_sim *in = m->in;
	uint32_t P = in->nranks;
	if (in->prog_off[0] != 0 || !in->bytes) {
		snprintf(err, AN_ERR_LEN, "a program without its start or its flows' bytes");
		return AN_E_INVAL;
	}
	memset(m->fpost, 0, m->F);
	for (uint32_t r = 0; r < P; r++) {
		if (in->prog_off[r + 1] < in->prog_off[r]) {
			snprintf(err, AN_ERR_LEN, "rank %u's program ends before it starts", r);
			return AN_E_INVAL;
		}
		m->pos[r] = in->prog_off[r];
		for (uint32_t i = in->prog_off[r]; i < in->prog_off[r + 1]; i++) {
			uint32_t f = in->prog[i] / 4, k = in->prog[i] % 4, side = k == COST_OP_SEND || k == COST_OP_WAIT_SEND;
			if (f >= m->F || (side ? in->src[f] : in->dst[f]) != r || !(in->bytes[f] >= 0)) {
				snprintf(err, AN_ERR_LEN, "rank %u's operation %u names flow %u of another rank", r,
					 i - in->prog_off[r], f);
				return AN_E_INVAL;
			}
			uint8_t bit = side ? 1 : 2;
			if (k < COST_OP_WAIT_SEND && (m->fpost[f] & bit)) {
				snprintf(err, AN_ERR_LEN, "flow %u -> %u is posted twice", in->src[f], in->dst[f]);
				return AN_E_INVAL;
			}
			if (k < COST_OP_WAIT_SEND)
				m->fpost[f] |= bit;
		}
	}
	memset(m->fpost, 0, m->F);
	m->work += in->prog_off[P];
	return AN_OK;
}

static int sim_alloc(struct sim *m, const struct cost_sim *in, char err[AN_ERR_LEN])
{
	uint32_t P = in->nranks, F = in->step_off[in->nsteps], C = in->ncables;
	m->in = in;
	m->F = F;
	if ((uint64_t)F * 2 + 2 > UINT32_MAX) {
		snprintf(err, AN_ERR_LEN, "%u flows are too many to simulate", F);
		return AN_E_RANGE;
	}
	m->fstep = malloc(((size_t)F + 1) * sizeof(uint32_t));
	m->roff = calloc((size_t)P + 2, sizeof(uint32_t));
	m->rlist = malloc((2 * (size_t)F + 1) * sizeof(uint32_t));
	m->pos = malloc(((size_t)P + 1) * sizeof(uint32_t));
	m->ppos = malloc(((size_t)P + 1) * sizeof(uint32_t));
	m->state = calloc((size_t)F + 1, 1);
	m->fpost = calloc((size_t)F + 1, 1);
	m->sdone = calloc((size_t)F + 1, 1);
	m->cnt = calloc((size_t)C + 1, sizeof(uint32_t));
	m->touched = malloc(((size_t)C + 1) * sizeof(uint32_t));
	m->capl = malloc(((size_t)C + 1) * sizeof(double));
	m->cpos = malloc(((size_t)C + 1) * sizeof(uint32_t));
	m->head = malloc(((size_t)C + 1) * sizeof(uint32_t));
	m->used = calloc((size_t)C + 1, sizeof(double));
	m->dirty = calloc((size_t)C + 1, 1);
	m->dlist = malloc(((size_t)C + 1) * sizeof(uint32_t));
	m->queue = malloc(((size_t)P + 1) * sizeof(uint32_t));
	m->queued = calloc((size_t)P + 1, 1);
	if (!m->fstep || !m->roff || !m->rlist || !m->pos || !m->ppos || !m->state || !m->fpost || !m->sdone ||
	    !m->cnt || !m->touched || !m->capl || !m->cpos || !m->head || !m->used || !m->dirty || !m->dlist ||
	    !m->queue || !m->queued)
		return AN_E_NOMEM;
	for (uint32_t c = 0; c <= C; c++)
		m->head[c] = SIM_NONE;
	for (uint32_t s = 0; s < in->nsteps; s++)
		for (uint32_t f = in->step_off[s]; f < in->step_off[s + 1]; f++) {
			if (in->src[f] >= P || in->dst[f] >= P) {
				snprintf(err, AN_ERR_LEN, "flow %u of step %u names a rank >= %u", f, s, P);
				return AN_E_INVAL;
			}
			m->fstep[f] = s;
			m->roff[in->src[f] + 2]++;
			m->roff[in->dst[f] + 2]++;
		}
	for (uint32_t r = 0; r < P; r++)
		m->roff[r + 2] += m->roff[r + 1];
	/* flows in step order land in each rank's list in step order */
	for (uint32_t f = 0; f < F; f++) {
		m->rlist[m->roff[in->src[f] + 1]++] = 2 * f;
		m->rlist[m->roff[in->dst[f] + 1]++] = 2 * f + 1;
	}
	memcpy(m->pos, m->roff, (size_t)P * sizeof(uint32_t));
	memcpy(m->ppos, m->roff, (size_t)P * sizeof(uint32_t));
	return in->prog ? prog_check(m, err) : AN_OK;
}

/* The bytes flow f carries: one per flow in the fluid form. */
static double sim_bytes(const struct sim *m, uint32_t f)
{
	if (!m->sized)
		return 1;
	if (m->in->bytes)
		return m->in->bytes[f] + m->msg.envelope;
	return m->in->block * (m->in->mult ? (double)m->in->mult[f] : 1.0) + m->msg.envelope;
}

/* Operation e (a send or a receive of flow e / 2) is complete. */
static int sim_op_done(const struct sim *m, uint32_t e)
{
	return m->state[e / 2] == SIM_DONE || (!(e & 1) && m->sdone[e / 2]);
}

static void sim_enqueue(struct sim *m, uint32_t r)
{
	if (!m->queued[r]) {
		m->queued[r] = 1;
		m->queue[m->nq++] = r;
	}
}

static void sim_done(struct sim *m, uint32_t f)
{
	m->state[f] = SIM_DONE;
	sim_enqueue(m, m->in->src[f]);
	sim_enqueue(m, m->in->dst[f]);
}

static void sim_dirty(struct sim *m, uint32_t c)
{
	if (!m->dirty[c]) {
		m->dirty[c] = 1;
		m->dlist[m->ndirty++] = c;
	}
}

/* Resizes *p to n elements of size sz; *p is kept if that fails. */
static int sim_regrow(void **p, size_t n, size_t sz)
{
	void *q = realloc(*p, n * sz);
	if (!q)
		return AN_E_NOMEM;
	*p = q;
	return AN_OK;
}

/* A free slot for one more moving flow: a rank moves the flows of one step
 * at a time, so the slots stay near P (TACS2's several flows per step: a
 * few P). */
static int sim_slot(struct sim *m, uint32_t *slot)
{
	if (!m->nfree) {
		size_t n = m->scap ? 2 * (size_t)m->scap : 64, R = COST_ROUTE_MAX;
		if (n * R > UINT32_MAX || sim_regrow((void **)&m->act, n, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->freel, n, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->sflow, n, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->snc, n, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->set, n, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->inset, n, 1) || sim_regrow((void **)&m->rem, n, sizeof(double)) ||
		    sim_regrow((void **)&m->share, n, sizeof(double)) ||
		    sim_regrow((void **)&m->scab, n * R, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->mnext, n * R, sizeof(uint32_t)) ||
		    sim_regrow((void **)&m->mprev, n * R, sizeof(uint32_t)))
			return AN_E_NOMEM;
		for (size_t i = n; i > m->scap; i--) {
			m->freel[m->nfree++] = (uint32_t)i - 1;
			m->inset[i - 1] = 0;
		}
		m->scap = (uint32_t)n;
	}
	*slot = m->freel[--m->nfree];
	return AN_OK;
}

/* Timers (cost_sim_run): flow f's latency or loopback copy ends at t. */
static int timer_push(struct sim *m, double t, uint32_t f)
{
	if (m->ntimer == m->tcap) {
		size_t n = m->tcap ? 2 * (size_t)m->tcap : 64;
		if (n > UINT32_MAX || sim_regrow((void **)&m->tkey, n, sizeof(double)) ||
		    sim_regrow((void **)&m->tflow, n, sizeof(uint32_t)))
			return AN_E_NOMEM;
		m->tcap = (uint32_t)n;
	}
	uint32_t i = m->ntimer++;
	while (i && m->tkey[(i - 1) / 2] > t) {
		m->tkey[i] = m->tkey[(i - 1) / 2];
		m->tflow[i] = m->tflow[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->tkey[i] = t;
	m->tflow[i] = f;
	return AN_OK;
}

static uint32_t timer_pop(struct sim *m)
{
	uint32_t top = m->tflow[0], f = m->tflow[--m->ntimer], i = 0;
	double key = m->tkey[m->ntimer];
	for (;;) {
		uint32_t k = 2 * i + 1;
		if (k >= m->ntimer)
			break;
		if (k + 1 < m->ntimer && m->tkey[k + 1] < m->tkey[k])
			k++;
		if (m->tkey[k] >= key)
			break;
		m->tkey[i] = m->tkey[k];
		m->tflow[i] = m->tflow[k];
		i = k;
	}
	m->tkey[i] = key;
	m->tflow[i] = f;
	return top;
}

/* The directed cables of flow f's route, each with a known rate. */
static int sim_route(struct sim *m, uint32_t f, uint32_t *cab, uint32_t *nc, char err[AN_ERR_LEN])
{
	const struct cost_sim *in = m->in;
	*nc = in->route(in->ctx, in->src[f], in->dst[f], cab);
	for (uint32_t k = 0; k < *nc; k++)
		if (cab[k] >= in->ncables || !in->bps[cab[k]]) {
			snprintf(err, AN_ERR_LEN, "flow %u -> %u crosses cable %u with no known rate", in->src[f],
				 in->dst[f], cab[k]);
			return AN_E_RANGE;
		}
	return AN_OK;
}

/* Flow f moves on its nc cables from now on. */
static int sim_join(struct sim *m, uint32_t f, const uint32_t *cab, uint32_t nc)
{
	uint32_t i;
	if (sim_slot(m, &i))
		return AN_E_NOMEM;
	m->state[f] = SIM_MOVE;
	m->sflow[i] = f;
	m->snc[i] = nc;
	m->rem[i] = sim_bytes(m, f);
	m->share[i] = 0;
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t node = i * COST_ROUTE_MAX + k, c = cab[k];
		m->scab[node] = c;
		m->mprev[node] = SIM_NONE;
		m->mnext[node] = m->head[c];
		if (m->head[c] != SIM_NONE)
			m->mprev[m->head[c]] = node;
		m->head[c] = node;
		sim_dirty(m, c);
	}
	m->act[m->nact++] = i;
	return AN_OK;
}

/* Both ranks have posted flow f: a copy within one host, or its route's
 * latency first (cost_sim_run), or its cables at once. */
static int sim_start(struct sim *m, uint32_t f, char err[AN_ERR_LEN])
{
	uint32_t cab[COST_ROUTE_MAX], nc;
	int rc = sim_route(m, f, cab, &nc, err);
	if (rc)
		return rc;
	double wait = !m->sized ? 0 : nc ? cost_route_latency(nc - 1)
				      : m->msg.local_Bps > 0 ? sim_bytes(m, f) / m->msg.local_Bps : 0;
	if (wait > 0) {
		m->state[f] = SIM_TIMER;
		return timer_push(m, m->now + wait, f);
	}
	if (!nc) {
		sim_done(m, f); /* a local copy */
		return AN_OK;
	}
	return sim_join(m, f, cab, nc);
}

/* Flow f's timer has run out: a copy is done, a message starts moving. */
static int sim_timer_end(struct sim *m, uint32_t f, char err[AN_ERR_LEN])
{
	uint32_t cab[COST_ROUTE_MAX], nc;
	int rc = sim_route(m, f, cab, &nc, err);
	if (rc)
		return rc;
	if (!nc) {
		sim_done(m, f);
		return AN_OK;
	}
	return sim_join(m, f, cab, nc);
}

/* Flow of slot i (at act[a]) has ended: its cables are freed. */
static void sim_end(struct sim *m, uint32_t a)
{
	uint32_t i = m->act[a];
	for (uint32_t k = 0; k < m->snc[i]; k++) {
		uint32_t node = i * COST_ROUTE_MAX + k, c = m->scab[node];
		if (m->mprev[node] != SIM_NONE)
			m->mnext[m->mprev[node]] = m->mnext[node];
		else
			m->head[c] = m->mnext[node];
		if (m->mnext[node] != SIM_NONE)
			m->mprev[m->mnext[node]] = m->mprev[node];
		/* an empty cable starts again from nothing: no rounding left over */
		m->used[c] = m->head[c] == SIM_NONE ? 0 : m->used[c] - m->share[i];
		sim_dirty(m, c);
	}
	m->act[a] = m->act[--m->nact];
	m->freel[m->nfree++] = i;
	sim_done(m, m->sflow[i]);
}

/* A posted operation e (flow e / 2, its receive when odd): a send below
 * the eager limit is complete at once; a flow both of whose ends are posted
 * starts. */
static int sim_posted(struct sim *m, uint32_t e, int *moved, char err[AN_ERR_LEN])
{
	uint32_t f = e / 2;
	m->fpost[f] |= e & 1 ? 2 : 1;
	if (!(e & 1) && m->sized && sim_bytes(m, f) - m->msg.envelope < m->msg.eager_below &&
	    !(m->in->sync && m->in->sync[f]))
		m->sdone[f] = *moved = 1;
	m->work++;
	return m->fpost[f] == 3 ? sim_start(m, f, err) : AN_OK;
}

/* Rank r's program (cost_sim prog) from its counter on: posts go on, a
 * wait for an operation not yet complete stops it. */
static int prog_run(struct sim *m, uint32_t r, char err[AN_ERR_LEN])
{
	const uint32_t *prog = m->in->prog;
	for (uint32_t end = m->in->prog_off[r + 1]; m->pos[r] < end; m->pos[r]++) {
		uint32_t f = prog[m->pos[r]] / 4, k = prog[m->pos[r]] % 4;
		int moved = 0;
		if (k == COST_OP_SEND || k == COST_OP_RECV) {
			int rc = sim_posted(m, 2 * f + (k == COST_OP_RECV), &moved, err);
			if (rc)
				return rc;
		} else if (!sim_op_done(m, 2 * f + (k == COST_OP_WAIT_RECV))) {
			return AN_OK;
		}
	}
	return AN_OK;
}

/* Rank r posts what its window allows: every operation of the steps below
 * its first incomplete one + window. A send below the eager limit is
 * complete once posted, which may let the window move on at once. */
static int sim_post(struct sim *m, uint32_t r, char err[AN_ERR_LEN])
{
	if (m->in->prog)
		return prog_run(m, r, err);
	uint32_t end = m->roff[r + 1];
	for (;;) {
		while (m->pos[r] < end && sim_op_done(m, m->rlist[m->pos[r]]))
			m->pos[r]++;
		if (m->ppos[r] == end)
			return AN_OK;
		uint64_t lim = m->pos[r] == end ? UINT64_MAX : (uint64_t)m->fstep[m->rlist[m->pos[r]] / 2] + m->window;
		int moved = 0;
		while (m->ppos[r] < end && m->fstep[m->rlist[m->ppos[r]] / 2] < lim) {
			int rc = sim_posted(m, m->rlist[m->ppos[r]++], &moved, err);
			if (rc)
				return rc;
		}
		if (!moved)
			return AN_OK;
	}
}

/* Ranks whose operations completed: post what is now allowed. */
static int sim_drain(struct sim *m, char err[AN_ERR_LEN])
{
	/* a stack: a local copy ends at once and queues its ranks again */
	while (m->nq) {
		uint32_t r = m->queue[--m->nq];
		m->queued[r] = 0;
		int rc = sim_post(m, r, err);
		if (rc)
			return rc;
	}
	return AN_OK;
}

/* Grows a workspace array to n elements of size sz. */
static int sim_grow(void **p, uint32_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return AN_OK;
	size_t c = (size_t)*cap * 2 > n ? (size_t)*cap * 2 : n;
	if (c > UINT32_MAX)
		return AN_E_NOMEM;
	void *q = realloc(*p, c * sz);
	if (!q)
		return AN_E_NOMEM;
	*p = q;
	*cap = (uint32_t)c;
	return AN_OK;
}

static void heap_push(struct sim *m, double key, uint32_t c)
{
	uint32_t i = m->nheap++;
	while (i && m->hkey[(i - 1) / 2] > key) {
		m->hkey[i] = m->hkey[(i - 1) / 2];
		m->hcab[i] = m->hcab[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->hkey[i] = key;
	m->hcab[i] = c;
}

static void heap_pop(struct sim *m)
{
	double key = m->hkey[--m->nheap];
	uint32_t c = m->hcab[m->nheap], i = 0;
	for (;;) {
		uint32_t k = 2 * i + 1;
		if (k >= m->nheap)
			break;
		if (k + 1 < m->nheap && m->hkey[k + 1] < m->hkey[k])
			k++;
		if (m->hkey[k] >= key)
			break;
		m->hkey[i] = m->hkey[k];
		m->hcab[i] = m->hcab[k];
		i = k;
	}
	m->hkey[i] = key;
	m->hcab[i] = c;
}

/* The set to solve: every moving flow (full), or those on the cables
 * changed since the last solve. Their shares leave their cables' sums. */
static void sim_set(struct sim *m, int full)
{
	m->nset = 0;
	if (full) {
		memcpy(m->set, m->act, (size_t)m->nact * sizeof(uint32_t));
		m->nset = m->nact;
	} else {
		for (uint32_t d = 0; d < m->ndirty; d++)
			for (uint32_t n = m->head[m->dlist[d]]; n != SIM_NONE; n = m->mnext[n]) {
				uint32_t i = n / COST_ROUTE_MAX;
				if (!m->inset[i]) {
					m->inset[i] = 1;
					m->set[m->nset++] = i;
				}
			}
		m->work += m->ndirty;
	}
	for (uint32_t d = 0; d < m->ndirty; d++)
		m->dirty[m->dlist[d]] = 0;
	m->ndirty = 0;
	for (uint32_t j = 0; j < m->nset; j++) {
		uint32_t i = m->set[j];
		m->inset[i] = 0;
		for (uint32_t k = 0; k < m->snc[i]; k++) {
			uint32_t c = m->scab[i * COST_ROUTE_MAX + k];
			m->used[c] = full ? 0 : m->used[c] - m->share[i];
		}
	}
}

/* The set's flows of each cable they touch (m->coff/clist by touched rank),
 * and what those cables have left beside the flows outside the set. */
static int sim_csr(struct sim *m)
{
	size_t total = 0;
	m->ntouched = 0;
	for (uint32_t j = 0; j < m->nset; j++) {
		uint32_t i = m->set[j];
		m->share[i] = -1;
		for (uint32_t k = 0; k < m->snc[i]; k++) {
			uint32_t c = m->scab[i * COST_ROUTE_MAX + k];
			if (!m->cnt[c]++) {
				m->cpos[c] = m->ntouched;
				m->touched[m->ntouched++] = c;
				double left = (double)m->in->bps[c] / 8.0 - m->used[c];
				m->capl[c] = left > 0 ? left : 0;
			}
		}
		total += m->snc[i];
	}
	if (sim_grow((void **)&m->coff, &m->coffcap, (size_t)m->ntouched + 1, sizeof(uint32_t)) ||
	    sim_grow((void **)&m->clist, &m->clistcap, total + 1, sizeof(uint32_t)) ||
	    sim_grow((void **)&m->hkey, &m->hcap, m->ntouched + total + 1, sizeof(double)) ||
	    sim_grow((void **)&m->hcab, &m->hcabcap, m->ntouched + total + 1, sizeof(uint32_t)))
		return AN_E_NOMEM;
	uint32_t o = 0;
	for (uint32_t t = 0; t < m->ntouched; t++) {
		m->coff[t] = o;
		o += m->cnt[m->touched[t]];
	}
	m->coff[m->ntouched] = o;
	for (uint32_t j = 0; j < m->nset; j++) {
		uint32_t i = m->set[j];
		for (uint32_t k = 0; k < m->snc[i]; k++)
			m->clist[m->coff[m->cpos[m->scab[i * COST_ROUTE_MAX + k]]]++] = j;
	}
	for (uint32_t t = m->ntouched; t > 0; t--)
		m->coff[t] = m->coff[t - 1];
	m->coff[0] = 0;
	m->work += total;
	return AN_OK;
}

/* Max-min fair shares of the set's flows in what their cables have left
 * (progressive filling): the cable with the least share per unfixed flow
 * fixes its flows at that share, which leaves every other cable's share
 * per flow no smaller, so a heap of shares updated lazily (a popped share
 * below the cable's current one goes back in) finds the next. */
static int sim_fill(struct sim *m)
{
	if (sim_csr(m))
		return AN_E_NOMEM;
	m->nheap = 0;
	for (uint32_t t = 0; t < m->ntouched; t++) {
		uint32_t c = m->touched[t];
		heap_push(m, m->capl[c] / m->cnt[c], c);
	}
	while (m->nheap) {
		uint32_t c = m->hcab[0];
		double key = m->hkey[0];
		heap_pop(m);
		if (!m->cnt[c])
			continue;
		double low = m->capl[c] / m->cnt[c];
		if (low > key * (1 + 1e-12)) {
			heap_push(m, low, c);
			continue;
		}
		uint32_t t = m->cpos[c];
		for (uint32_t k = m->coff[t]; k < m->coff[t + 1]; k++) {
			uint32_t i = m->set[m->clist[k]];
			if (m->share[i] >= 0)
				continue;
			m->share[i] = low;
			for (uint32_t q = 0; q < m->snc[i]; q++) {
				uint32_t cq = m->scab[i * COST_ROUTE_MAX + q];
				m->capl[cq] -= low;
				m->cnt[cq]--;
			}
			m->work += m->snc[i];
		}
	}
	return AN_OK;
}

/* The shares after flows started or ended. Exact: every moving flow's
 * share solved again (full). Cheaper (cost.h): only the flows on the
 * cables that changed, the others' shares kept, and a full solve every
 * COST_SIM_FULL_EVERY events or when a local one starves a flow. */
static int sim_shares(struct sim *m, int exact)
{
	int full = exact || m->since_full + 1 >= COST_SIM_FULL_EVERY;
	for (;;) {
		sim_set(m, full);
		if (sim_fill(m))
			return AN_E_NOMEM;
		int starved = 0;
		for (uint32_t j = 0; j < m->nset; j++) {
			uint32_t i = m->set[j];
			starved |= !(m->share[i] > 1e-9 * (double)m->in->bps[m->scab[i * COST_ROUTE_MAX]]);
			for (uint32_t k = 0; k < m->snc[i]; k++)
				m->used[m->scab[i * COST_ROUTE_MAX + k]] += m->share[i];
		}
		if (!starved || full)
			break;
		full = 1;
	}
	m->since_full = full ? 0 : m->since_full + 1;
	return AN_OK;
}

/* Moves the clock to the next end of a moving flow or of a timer, ends
 * those, and starts the flows whose timers ran out. */
static int sim_advance(struct sim *m, char err[AN_ERR_LEN])
{
	double dt = -1;
	for (uint32_t a = 0; a < m->nact; a++) {
		uint32_t i = m->act[a];
		if (dt < 0 || m->rem[i] / m->share[i] < dt)
			dt = m->rem[i] / m->share[i];
	}
	if (m->ntimer && (dt < 0 || m->tkey[0] - m->now < dt))
		dt = m->tkey[0] > m->now ? m->tkey[0] - m->now : 0;
	for (uint32_t a = m->nact; a-- > 0;) {
		uint32_t i = m->act[a];
		m->rem[i] -= m->share[i] * dt;
		/* flows that end together (to a billionth of the flow) end at once */
		if (m->rem[i] <= 1e-9 * sim_bytes(m, m->sflow[i]))
			sim_end(m, a);
	}
	m->now += dt;
	/* timers due within a billionth of the clock end with it */
	while (m->ntimer && m->tkey[0] <= m->now * (1 + 1e-12)) {
		int rc = sim_timer_end(m, timer_pop(m), err);
		if (rc)
			return rc;
	}
	return AN_OK;
}

/* The simulation of cost_sim_time (sized 0) and cost_sim_run (sized 1):
 * the time the last flow ends. */
static int sim_run(const struct cost_sim *in, int sized, double *out, char err[AN_ERR_LEN])
{
	struct sim m = { .sized = sized, .window = sized && in->window > 1 ? in->window : 1 };
	*out = -1;
	if (sized) {
		if (in->msg)
			m.msg = *in->msg;
		else
			cost_msg_smpi(&m.msg);
		if (!(in->block >= 0) || !(m.msg.envelope >= 0) || !(m.msg.local_Bps >= 0)) {
			snprintf(err, AN_ERR_LEN, "a negative message size or rate");
			return AN_E_INVAL;
		}
	}
	int rc = sim_alloc(&m, in, err);
	for (uint32_t r = 0; !rc && r < in->nranks; r++)
		sim_enqueue(&m, r);
	if (!rc)
		rc = sim_drain(&m, err);
	while (!rc && (m.nact || m.ntimer)) {
		rc = m.nact ? sim_shares(&m, in->exact) : AN_OK;
		if (!rc)
			rc = sim_advance(&m, err);
		if (!rc)
			rc = sim_drain(&m, err);
		if (!rc && m.work > COST_SIM_WORK_MAX) {
			snprintf(err, AN_ERR_LEN, "overlap simulation past %llu cable visits", COST_SIM_WORK_MAX);
			rc = AN_E_RANGE;
		}
	}
	for (uint32_t f = 0; !rc && f < m.F; f++)
		if (m.state[f] != SIM_DONE) {
			snprintf(err, AN_ERR_LEN, "flow %u -> %u of step %u never starts", in->src[f], in->dst[f],
				 m.fstep[f]);
			rc = AN_E_INVAL;
		}
	if (!rc)
		*out = m.now;
	else if (rc == AN_E_NOMEM)
		snprintf(err, AN_ERR_LEN, "no memory to simulate %u flows", m.F);
	sim_free(&m);
	return rc;
}

int cost_sim_time(const struct cost_sim *in, double *s_per_byte, char err[AN_ERR_LEN])
{
	return sim_run(in, 0, s_per_byte, err);
}

int cost_sim_run(const struct cost_sim *in, double *seconds, char err[AN_ERR_LEN])
{
	return sim_run(in, 1, seconds, err);
}
