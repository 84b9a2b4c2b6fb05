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

/* ---- steps that overlap (cost_sim_time) ----------------------------------------- */

enum { SIM_WAIT, SIM_MOVE, SIM_DONE };

#define SIM_NONE UINT32_MAX

struct sim {
	const struct cost_sim *in;
	uint32_t F;
	uint32_t *fstep;          /* [F] step of each flow */
	uint32_t *roff, *rlist;   /* a rank's flows (sent or received) in step order */
	uint32_t *pos;            /* [P] first flow of the rank's list not done */
	uint8_t *state;           /* [F] */
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
	uint32_t *queue, nq;      /* ranks whose next flows may start */
	uint8_t *queued;
	uint32_t since_full;      /* local solves since the last full one */
	unsigned long long work;
};

static void sim_free(struct sim *m)
{
	void *p[] = { m->fstep, m->roff, m->rlist, m->pos, m->state, m->act, m->freel, m->sflow, m->snc,
		      m->scab, m->rem, m->share, m->inset, m->head, m->mnext, m->mprev, m->used, m->dirty,
		      m->dlist, m->set, m->cnt, m->touched, m->capl, m->cpos, m->coff, m->clist, m->hkey,
		      m->hcab, m->queue, m->queued };
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		free(p[i]);
}

static int sim_alloc(struct sim *m, const struct cost_sim *in, char err[AN_ERR_LEN])
{
	uint32_t P = in->nranks, F = in->step_off[in->nsteps], C = in->ncables;
	m->in = in;
	m->F = F;
	m->fstep = malloc(((size_t)F + 1) * sizeof(uint32_t));
	m->roff = calloc((size_t)P + 2, sizeof(uint32_t));
	m->rlist = malloc((2 * (size_t)F + 1) * sizeof(uint32_t));
	m->pos = malloc(((size_t)P + 1) * sizeof(uint32_t));
	m->state = calloc((size_t)F + 1, 1);
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
	if (!m->fstep || !m->roff || !m->rlist || !m->pos || !m->state || !m->cnt || !m->touched || !m->capl ||
	    !m->cpos || !m->head || !m->used || !m->dirty || !m->dlist || !m->queue || !m->queued)
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
		m->rlist[m->roff[in->src[f] + 1]++] = f;
		m->rlist[m->roff[in->dst[f] + 1]++] = f;
	}
	memcpy(m->pos, m->roff, (size_t)P * sizeof(uint32_t));
	return AN_OK;
}

/* Rank r has finished every flow of the steps before s. */
static int sim_ready(const struct sim *m, uint32_t r, uint32_t s)
{
	return m->pos[r] == m->roff[r + 1] || m->fstep[m->rlist[m->pos[r]]] >= s;
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

/* Starts flow f if both its ranks have posted its step. */
static int sim_try(struct sim *m, uint32_t f, char err[AN_ERR_LEN])
{
	const struct cost_sim *in = m->in;
	uint32_t s = m->fstep[f], i, cab[COST_ROUTE_MAX];
	if (m->state[f] != SIM_WAIT || !sim_ready(m, in->src[f], s) || !sim_ready(m, in->dst[f], s))
		return AN_OK;
	uint32_t nc = in->route(in->ctx, in->src[f], in->dst[f], cab);
	if (!nc) {
		sim_done(m, f); /* a local copy */
		return AN_OK;
	}
	for (uint32_t k = 0; k < nc; k++)
		if (cab[k] >= in->ncables || !in->bps[cab[k]]) {
			snprintf(err, AN_ERR_LEN, "flow %u -> %u crosses cable %u with no known rate", in->src[f],
				 in->dst[f], cab[k]);
			return AN_E_RANGE;
		}
	if (sim_slot(m, &i))
		return AN_E_NOMEM;
	m->state[f] = SIM_MOVE;
	m->sflow[i] = f;
	m->snc[i] = nc;
	m->rem[i] = 1;
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

/* Ranks whose flows ended: skip their done flows, start what is now ready. */
static int sim_drain(struct sim *m, char err[AN_ERR_LEN])
{
	/* a stack: a local copy ends at once and queues its ranks again */
	while (m->nq) {
		uint32_t r = m->queue[--m->nq], end = m->roff[r + 1];
		m->queued[r] = 0;
		while (m->pos[r] < end && m->state[m->rlist[m->pos[r]]] == SIM_DONE)
			m->pos[r]++;
		if (m->pos[r] == end)
			continue;
		uint32_t s = m->fstep[m->rlist[m->pos[r]]];
		for (uint32_t k = m->pos[r]; k < end && m->fstep[m->rlist[k]] == s; k++) {
			int rc = sim_try(m, m->rlist[k], err);
			if (rc)
				return rc;
		}
		m->work += end - m->pos[r];
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

/* Moves the clock to the next end of a flow; returns the time it took. */
static double sim_advance(struct sim *m)
{
	double dt = -1;
	for (uint32_t a = 0; a < m->nact; a++) {
		uint32_t i = m->act[a];
		if (dt < 0 || m->rem[i] / m->share[i] < dt)
			dt = m->rem[i] / m->share[i];
	}
	for (uint32_t a = m->nact; a-- > 0;) {
		uint32_t i = m->act[a];
		m->rem[i] -= m->share[i] * dt;
		/* flows that end together (to a billionth of the block) end at once */
		if (m->rem[i] <= 1e-9)
			sim_end(m, a);
	}
	return dt;
}

int cost_sim_time(const struct cost_sim *in, double *s_per_byte, char err[AN_ERR_LEN])
{
	struct sim m = { 0 };
	double t = 0;
	*s_per_byte = -1;
	int rc = sim_alloc(&m, in, err);
	for (uint32_t r = 0; !rc && r < in->nranks; r++)
		sim_enqueue(&m, r);
	if (!rc)
		rc = sim_drain(&m, err);
	while (!rc && m.nact) {
		rc = sim_shares(&m, in->exact);
		if (!rc) {
			t += sim_advance(&m);
			rc = sim_drain(&m, err);
		}
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
		*s_per_byte = t;
	else if (rc == AN_E_NOMEM)
		snprintf(err, AN_ERR_LEN, "no memory to simulate %u flows", m.F);
	sim_free(&m);
	return rc;
}
