/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place.c - host order, the figures of a host set, and a pick judged
 * against first-fit by the cost model (place.h). Pick is in
 * place_pick.c (its entry-link table in place_entry.c), the communication
 * graph and its cost in place_graph.c, the mapping in place_map.c.
 */
#include "place_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "cost.h"
#include "load.h"
#include "pattern.h"
#include "rate.h"
#include "share.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

long place_find_dup(const uint32_t *hosts, size_t n)
{
	/* a bitmap over host indices would need the host count; a sort of
	 * (value, position) pairs needs nothing else */
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -2;
	for (size_t i = 0; i < n; i++)
		v[i] = (uint64_t)hosts[i] << 32 | i;
	qsort(v, n, sizeof(*v), cmp_u64);
	long first = -1;
	for (size_t i = 1; i < n; i++)
		if (v[i] >> 32 == v[i - 1] >> 32) {
			long pos = (long)(v[i] & 0xFFFFFFFFu);   /* the later of the two */
			if (first < 0 || pos < first)
				first = pos;
		}
	free(v);
	return first;
}

/* ---- order ------------------------------------------------------------------ */

static int order_cmp(const void *a, const void *b, void *ctx)
{
	const struct hier *h = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	for (uint32_t l = 0; l < h->depth; l++) {
		uint32_t cx = h->anc[(size_t)x * h->depth + l], cy = h->anc[(size_t)y * h->depth + l];
		if (cx == cy)
			continue;
		uint64_t kx = h->clusters[cx].key, ky = h->clusters[cy].key;
		if (kx != ky)
			return kx < ky ? -1 : 1;
		return cx < cy ? -1 : 1;
	}
	return x < y ? -1 : x > y;   /* route_tab hosts are sorted by name */
}

int place_order(const struct route_tab *rt, const struct hier *h, uint32_t *hosts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hosts[i] >= rt->nhosts || hosts[i] >= h->nhosts)
			return AN_E_INVAL;
	qsort_r(hosts, n, sizeof(*hosts), order_cmp, (void *)h);
	return AN_OK;
}

uint32_t place_leaf_cluster(const struct hier *h, uint32_t host)
{
	return h->host_parent[host];
}

uint32_t place_pod(const struct hier *h, uint32_t host)
{
	uint32_t c = h->host_parent[host];
	if (c == HIER_NONE)
		return c;
	return h->clusters[c].parent != HIER_NONE ? h->clusters[c].parent : c;
}

/* ---- figures ---------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint32_t count_distinct(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	uint32_t d = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] != NONE32 && (i == 0 || v[i] != v[i - 1]))
			d++;
	return d;
}

int place_figures(const struct route_tab *rt, const struct hier *h, const uint32_t *hosts, size_t n,
		  struct place_figs *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return AN_OK;
	uint32_t *eps = malloc(n * sizeof(*eps));
	if (!eps)
		return AN_E_NOMEM;
	for (size_t i = 0; i < n; i++)
		eps[i] = route_host_ep(rt, hosts[i]);
	struct share *sh;
	int rc = share_build(rt, eps, n, 0, &sh);
	if (rc) {
		free(eps);
		return rc;
	}
	out->sharing = sh->nsharing;
	out->leaves = sh->nleaves;
	out->max_hops = sh->max_hops;
	out->pairs_failed = sh->npairs_failed;
	for (uint32_t l = 0; l < sh->nlinks; l++)
		if (sh->links[l].count > out->max_load)
			out->max_load = sh->links[l].count;
	share_free(sh);
	for (size_t i = 0; i < n; i++)
		eps[i] = place_pod(h, hosts[i]);
	out->pods = count_distinct(eps, n);
	free(eps);
	return AN_OK;
}

/* ---- judged against first-fit ------------------------------------------------ */

int place_first_fit(const uint32_t *free_hosts, size_t nfree, size_t want, uint32_t *out)
{
	/* route_tab hosts are sorted by name: the want smallest indices */
	uint32_t *v = malloc((nfree ? nfree : 1) * sizeof(*v));
	if (!v)
		return AN_E_NOMEM;
	memcpy(v, free_hosts, nfree * sizeof(*v));
	qsort(v, nfree, sizeof(*v), cmp_u32);
	memcpy(out, v, want * sizeof(*out));
	free(v);
	return AN_OK;
}

/* The all-to-all, the pattern of every pick without another named. */
static const struct pattern alltoall = { .kind = PAT_ALLTOALL, .dim = { 1, 1, 1 } };

_Static_assert((uint64_t)TOPO_PICK_RUN_HOSTS_MAX * (TOPO_PICK_RUN_HOSTS_MAX - 1) <= COST_SIM_FLOWS_MAX,
	       "a run judged on the most hosts is still simulated step by step");

#define PICK_JUDGE_MEMO 32

/* What a pick is judged by: the pattern's bound (cost.h, all at once), or
 * with run another than PLACE_RUN_BOUND the all-to-all the job runs
 * (place.h), simulated step by step; sims counts those simulations. */
struct judge {
	const struct pattern *pat;
	const struct hier *h;
	int run;
	uint32_t sims;
	/* > 0: the time a candidate must beat to matter. No schedule runs
	 * below the bound's bandwidth term (every cable's bytes must cross
	 * it), so a candidate whose term is already there is not simulated:
	 * its time is given as that term, which loses every comparison. */
	double cut;
	const atomic_int *cancel;   /* NULL, or raised at the caller's deadline: AN_E_CANCEL */
	/* the runs already simulated in this pick, by the ranks' hosts (a
	 * balanced or packed try often gives back the hosts it started
	 * from): FNV-1a of the sequence, and the time */
	uint32_t nmemo;
	struct { uint64_t key; double t; } memo[PICK_JUDGE_MEMO];
};

static uint64_t hosts_key(const uint32_t *hosts, size_t n)
{
	uint64_t k = 0xcbf29ce484222325ull ^ n;
	for (size_t i = 0; i < n; i++)
		k = (k ^ hosts[i]) * 0x100000001b3ull;
	return k;
}

/* The predicted time of the pattern pat (pattern.h; rank i on hosts[i];
 * a regular pattern's flows carry `bytes`, a matrix's its own) and its
 * busiest cable (cost.h): ct->seconds -1 when a loaded cable has no known
 * rate. AN_E_INVAL for a pattern that does not fit n ranks. */
static int bound_cost(const struct route_tab *rt, const struct pattern *pat, const uint32_t *hosts, size_t n,
		    uint64_t bytes, int threads, struct cost_time *ct, uint32_t *node, uint8_t *port)
{
	struct pattern p = *pat;   /* shares a matrix's arrays: never cleared here */
	char err[AN_ERR_LEN];
	struct load *L = NULL;
	ct->seconds = ct->bw_seconds = -1;
	*node = ROUTE_NONE, *port = 0;
	if (n > UINT32_MAX)
		return AN_E_RANGE;
	if (p.kind != PAT_MATRIX)
		p.msg_bytes = bytes;
	if (pattern_check(&p, (uint32_t)n, err))
		return AN_E_INVAL;
	struct pat_job job = { (uint32_t)n, (uint32_t *)hosts };
	int rc = load_build(rt, &job, &p, threads > 0 ? threads : 1, &L);
	if (rc == AN_OK && cost_load_time(rt, L, ct, err) == AN_OK) {
		if (ct->link != UINT32_MAX)
			*node = L->links[ct->link].node, *port = L->links[ct->link].port;
	} else {
		ct->seconds = ct->bw_seconds = -1;   /* a cable without a rate: unknown, not an error */
	}
	load_free(L);
	return rc;
}

/* The time of the all-to-all the job runs on hosts[0..n) (rank i on
 * hosts[i]) for blocks of `bytes`, as topod's schedule command predicts it
 * (advice.h; native.h for the MPI's own): -1 when unknown (a cable without
 * a rate, past the simulation's bounds). AN_E_NOMEM, or AN_E_CANCEL once
 * cancel is raised during the route schedule's build. */
static int run_time(const struct route_tab *rt, const struct hier *h, int run, const atomic_int *cancel,
		    const uint32_t *hosts, size_t n, uint64_t bytes, int threads, double *t)
{
	char err[AN_ERR_LEN];
	int rc = AN_OK;
	*t = -1;
	if (n < 2) {
		*t = 0;
		return AN_OK;
	}
	if (run >= PLACE_RUN_NATIVE) {
		struct native_choice c;
		struct native_sched *ns = NULL;
		struct sched_job *j = NULL;
		native_alltoall((enum native_model)(run - PLACE_RUN_NATIVE), (uint32_t)n, bytes, &c);
		if ((rc = native_build(&c, (uint32_t)n, &ns, err)) == AN_OK &&
		    (rc = sched_job_new(rt, (uint32_t)n, hosts, &j, err)) == AN_OK &&
		    sched_job_time(j, ns->nsteps, ns->step_off, ns->src, ns->dst, ns->mult, (double)bytes, 1, t, err))
			*t = -1;
		sched_job_free(j);
		native_free(ns);
		return rc == AN_E_NOMEM ? rc : AN_OK;
	}
	/* `schedule route window=auto` (its fallback to XOR included) and
	 * `schedule xor`: what the job's library runs */
	struct sched_req req = { .algo = run == PLACE_RUN_ROUTE ? SCHED_ROUTE : SCHED_XOR, .nranks = (uint32_t)n,
				 .rank_host = hosts, .conflicts = 1, .cancel = cancel };
	struct advice_opts o = { .bytes = bytes, .fallback = 1, .threads = threads > 0 ? threads : 1,
				 .window = run == PLACE_RUN_ROUTE ? 0 : 1, .native = -1 };
	struct sched *s = NULL;
	struct advice a;
	rc = advice_schedule_opts(rt, h, &req, &o, &s, &a, err);
	sched_free(s);
	if (rc == AN_OK)
		*t = a.time;
	return rc == AN_E_NOMEM || rc == AN_E_CANCEL ? rc : AN_OK;
}

/* The judge's time (jd->pat's bound, or the run's) with the bound's
 * bandwidth term and busiest cable in ct and node/port: the injection
 * limit and the balancing speak of the bound. */
static int a2a_cost(const struct route_tab *rt, struct judge *jd, const uint32_t *hosts, size_t n, uint64_t bytes,
		    int threads, struct cost_time *ct, uint32_t *node, uint8_t *port)
{
	int rc = bound_cost(rt, jd->pat, hosts, n, bytes, threads, ct, node, port);
	if (rc || jd->run == PLACE_RUN_BOUND)
		return rc;
	uint64_t key = hosts_key(hosts, n);
	for (uint32_t i = 0; i < jd->nmemo && i < PICK_JUDGE_MEMO; i++)
		if (jd->memo[i].key == key) {
			ct->seconds = jd->memo[i].t;
			return AN_OK;
		}
	if (jd->cut > 0 && ct->bw_seconds >= jd->cut) {
		ct->seconds = ct->bw_seconds;
		return AN_OK;
	}
	if (jd->cancel && atomic_load(jd->cancel))
		return AN_E_CANCEL;
	jd->sims++;
	rc = run_time(rt, jd->h, jd->run, jd->cancel, hosts, n, bytes, threads, &ct->seconds);
	if (rc == AN_OK) {
		jd->memo[jd->nmemo % PICK_JUDGE_MEMO].key = key, jd->memo[jd->nmemo % PICK_JUDGE_MEMO].t = ct->seconds;
		jd->nmemo++;
	}
	return rc;
}

static int pat_time(const struct route_tab *rt, struct judge *jd, const uint32_t *hosts, size_t n, uint64_t bytes,
		    int threads, double *t)
{
	struct cost_time ct;
	uint32_t node;
	uint8_t port;
	int rc = a2a_cost(rt, jd, hosts, n, bytes, threads, &ct, &node, &port);
	*t = ct.seconds;
	return rc;
}

int place_alltoall_time(const struct route_tab *rt, const uint32_t *hosts, size_t n, uint64_t bytes,
			int threads, double *t)
{
	struct judge jd = { .pat = &alltoall, .run = PLACE_RUN_BOUND };
	return pat_time(rt, &jd, hosts, n, bytes, threads, t);
}

/* Between the sharing-aware pick and the packed one on the same leaves
 * (same leaves and pods), the one predicted faster; the sharing-aware one
 * on a tie, and with keep (leaves=fewest: the promise covers sharing too)
 * whenever the packed one shares more. Sets out->pick_time. */
static int pick_packed_if_faster(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
				 const uint32_t *free_hosts, size_t nfree, size_t want, struct judge *jd, uint64_t bytes,
				 int threads, int keep, struct place_pick *out, char why[AN_ERR_LEN])
{
	struct place_pick alt;
	int rc = pat_time(rt, jd, out->hosts, want, bytes, threads, &out->pick_time);
	if (rc || out->min_leaves < 2)
		goto done;
	if ((rc = place_pick_mode(ctx, rt, h, free_hosts, nfree, want, 1, &alt, why)))
		goto done;
	jd->cut = out->pick_time;   /* only a faster alternative matters */
	rc = pat_time(rt, jd, alt.hosts, want, bytes, threads, &alt.pick_time);
	jd->cut = 0;
	if (rc == AN_OK &&
	    alt.pick_time >= 0 && out->pick_time >= 0 && alt.pick_time < out->pick_time * (1 - 1e-6) &&
	    (!keep || alt.figs.sharing <= out->figs.sharing)) {
		/* the same leaves: what is proven of the pick's holds for it */
		alt.exhaustive = out->exhaustive && alt.figs.sharing <= out->figs.sharing;
		alt.sf_exists = out->sf_exists;
		alt.sharing_free_wider = !alt.sharing_free && alt.sf_exists;
		place_pick_free(out);
		*out = alt;
		return AN_OK;
	}
	place_pick_free(&alt);
done:
	if (rc) {
		place_pick_free(out);
		snprintf(why, AN_ERR_LEN, "predicting the pick: %s", an_strerror(rc));
	}
	return rc;
}

/* The free hosts on the leaf switches of hosts[0..n): the promise's last
 * criterion (docs/protocol.md, `pick`). AN_E_NOMEM. */
static int free_on_leaves(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, const uint32_t *hosts,
			  size_t n, uint64_t *count)
{
	uint8_t *mark = calloc(rt->nsw + 1, 1);
	if (!mark)
		return AN_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t sw = place_host_leaf_sw(rt, hosts[i]);
		if (sw != ROUTE_NONE)
			mark[sw] = 1;
	}
	*count = 0;
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, free_hosts[i]);
		*count += sw != ROUTE_NONE && mark[sw];
	}
	free(mark);
	return AN_OK;
}

/* leaves=fewest: whether hosts[] (figures fg) keep the promise as well as
 * the pick does: no more leaves, then pods, then sharing hosts, and on one
 * leaf no more free hosts on it (best fit). Into *ok. (The most free hosts
 * on several leaves is how the pick chooses among equals, not a promise
 * worth a slower job.) */
static int pick_no_worse(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, const uint32_t *hosts,
			 const struct place_figs *fg, const struct place_pick *pick, int *ok)
{
	const struct place_figs *pf = &pick->figs;
	uint64_t a, b;
	int rc;
	*ok = 0;
	if (fg->leaves != pf->leaves || fg->pods != pf->pods || fg->sharing != pf->sharing) {
		*ok = fg->leaves < pf->leaves ||
		      (fg->leaves == pf->leaves && (fg->pods < pf->pods || (fg->pods == pf->pods && fg->sharing < pf->sharing)));
		return AN_OK;
	}
	if (fg->leaves != 1) {
		*ok = 1;
		return AN_OK;
	}
	if ((rc = free_on_leaves(rt, free_hosts, nfree, hosts, pick->n, &a)) ||
	    (rc = free_on_leaves(rt, free_hosts, nfree, pick->hosts, pick->n, &b)))
		return rc;
	*ok = a <= b;
	return AN_OK;
}

/* The cables of a leaf switch that lead to other switches: how many, their
 * summed rate and the fastest. */
static void leaf_up(const struct route_tab *rt, uint32_t sw, uint32_t *count, uint64_t *sum, uint64_t *top)
{
	uint32_t node = rt->sw_node[sw];
	*count = 0, *sum = 0, *top = 0;
	for (unsigned p = 1; p <= rt->snap->nodes[node].nports; p++)
		if (rt->pt[rt->pt_off[sw] + p] < ROUTE_PT_EP) {
			uint64_t bps = rate_cable_bps(rt->snap, node, p);
			(*count)++, *sum += bps;
			if (bps > *top)
				*top = bps;
		}
}

/* The injection limit of the answer, and why its busiest cable sits above
 * it. A leaf with c of the n hosts and u uplinks: its uplinks carry
 * c (n - c) blocks each way, and, routes being by destination, each of its
 * hosts receives its n - c blocks from other leaves over one cable down,
 * so some cable down carries ceil(c / u) (n - c) blocks: either above the
 * limit is the leaves' (uplinks), else the routes'. */
static void pick_limit(const struct route_tab *rt, const struct place_pick *out, uint64_t bytes, double *limit,
		       enum place_limit_why *why)
{
	uint64_t slowest = UINT64_MAX;
	*limit = -1;
	*why = PLACE_NOLIMIT;
	for (size_t i = 0; i < out->n; i++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, out->hosts[i])];
		uint64_t bps = rate_cable_bps(rt->snap, e->node, e->port);
		if (!bps)
			return;
		if (bps < slowest)
			slowest = bps;
	}
	if (slowest == UINT64_MAX || out->bw_time < 0)
		return;
	*limit = (double)(out->n - 1) * (double)bytes * 8 / (double)slowest;
	if (out->bw_time <= *limit * PLACE_LIMIT_SLACK) {
		*why = PLACE_AT_LIMIT;
		return;
	}
	*why = PLACE_ROUTES;
	for (size_t i = 0; i < out->n;) {   /* hierarchy order: a leaf's hosts are a run */
		uint32_t sw = place_host_leaf_sw(rt, out->hosts[i]), u = 0;
		size_t j = i + 1;
		while (j < out->n && place_host_leaf_sw(rt, out->hosts[j]) == sw)
			j++;
		uint64_t sum = 0, top = 0;
		if (sw != ROUTE_NONE)
			leaf_up(rt, sw, &u, &sum, &top);
		double c = (double)(j - i), rest = (double)(out->n - (j - i)) * (double)bytes * 8;
		double need = sum ? c * rest / (double)sum : 0;
		double down = top ? (double)((j - i + u - 1) / u) * rest / (double)top : 0;
		if (need > *limit * PLACE_LIMIT_SLACK || down > *limit * PLACE_LIMIT_SLACK)
			*why = PLACE_UPLINKS;
		i = j;
	}
}

/* The pick's hosts traded within their leaves (place_pick_balance), from
 * the pick's counts per leaf and from counts as even as the free hosts
 * allow, when predicted faster: same leaves, so the promises of leaves and
 * pods hold; with keep (leaves=fewest) only hosts sharing no more than the
 * pick's. Sets out->swaps, out->balanced and, when taken, out->pick_time. */
static int pick_balanced_if_faster(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts,
				   size_t nfree, struct judge *jd, uint64_t bytes, int threads, int keep,
				   struct place_pick *out)
{
	if (out->figs.leaves < 2 || out->pick_time < 0)
		return AN_OK;
	/* already at the injection limit: no choice of hosts does better */
	struct cost_time ct;
	double limit, best = out->pick_time * (1 - 1e-6);
	enum place_limit_why lw;
	int rc = bound_cost(rt, jd->pat, out->hosts, out->n, bytes, threads, &ct, &out->bott_node, &out->bott_port);
	if (rc)
		return rc;
	out->bw_time = ct.bw_seconds;
	pick_limit(rt, out, bytes, &limit, &lw);
	if (jd->run == PLACE_RUN_BOUND && jd->pat->kind == PAT_ALLTOALL && lw == PLACE_AT_LIMIT &&
	    out->bw_time <= limit * (1 + 1e-9))
		return AN_OK;   /* (a stepped schedule's time may still differ: judged by it, tried) */
	uint32_t *bh = malloc(out->n * sizeof(*bh)), *win = NULL, swaps;
	if (!bh)
		return AN_E_NOMEM;
	for (int even = 0; even < 2 && rc == AN_OK; even++) {
		double t = -1;
		memcpy(bh, out->hosts, out->n * sizeof(*bh));
		rc = even ? place_pick_even(rt, free_hosts, nfree, bh, out->n) : AN_OK;
		if (rc == AN_OK)
			rc = place_pick_balance(rt, free_hosts, nfree, bh, out->n, &swaps);
		if (rc == AN_E_RANGE) {   /* a host off the leaves: the pick stays */
			rc = AN_OK;
			break;
		}
		/* the pattern's rank order: hierarchy order, as answered */
		if (rc || (rc = place_order(rt, h, bh, out->n)))
			break;
		jd->cut = best;
		rc = pat_time(rt, jd, bh, out->n, bytes, threads, &t);
		jd->cut = 0;
		if (rc)
			break;
		if (!even)
			out->swaps = swaps;
		struct place_figs bf;
		if (t >= 0 && t < best && keep && (rc = place_figures(rt, h, bh, out->n, &bf)) == AN_OK &&
		    bf.sharing > out->figs.sharing)
			continue;   /* faster, but it breaks the promise of the fewest sharing hosts */
		if (rc)
			break;
		if (t >= 0 && t < best) {
			uint32_t *sw = win ? win : malloc(out->n * sizeof(*sw));
			if (!sw) {
				rc = AN_E_NOMEM;
				break;
			}
			memcpy(sw, bh, out->n * sizeof(*sw));
			win = sw, best = t, out->swaps = swaps;
		}
	}
	if (rc == AN_OK && win) {
		struct place_figs figs;
		if ((rc = place_order(rt, h, win, out->n)) || (rc = place_figures(rt, h, win, out->n, &figs)))
			goto out;
		free(out->hosts);
		out->hosts = win;
		win = NULL;
		out->figs = figs;
		out->sharing_free = figs.sharing == 0;
		out->sf_exists |= out->sharing_free;
		out->sharing_free_wider = !out->sharing_free && out->sf_exists;
		out->balanced = 1;
		out->pick_time = best;
	}
out:
	free(bh);
	free(win);
	return rc;
}

/* The answer's bandwidth term, busiest cable, limit and why. */
static int pick_figures_of_answer(const struct route_tab *rt, struct judge *jd, uint64_t bytes, int threads,
				  struct place_pick *out)
{
	struct cost_time ct;
	int rc = bound_cost(rt, jd->pat, out->hosts, out->n, bytes, threads, &ct, &out->bott_node, &out->bott_port);
	if (rc)
		return rc;
	out->bw_time = ct.bw_seconds;
	/* the injection limit as stated is the all-to-all's */
	if (jd->pat->kind != PAT_ALLTOALL)
		out->limit_time = -1, out->limit_why = PLACE_NOLIMIT;
	else
		pick_limit(rt, out, bytes, &out->limit_time, &out->limit_why);
	return AN_OK;
}

/* ---- wider picks: what the promise of fewest leaves costs (docs/protocol.md, `pick`) ---- */

/* Tries of a wider pick at most, each a balancing and a prediction: the
 * leaf counts grow geometrically, so few tries span min_leaves to want. */
#define PICK_WIDE_TRIES 8
/* Judged by a simulated run (struct judge), each try costs two schedules
 * simulated: fewer tries, the widest still the last. */
#define PICK_RUN_WIDE_TRIES 4

/* The free hosts on leaves, grouped by leaf switch, and the order in which
 * a wider pick takes the leaves. */
struct wide {
	uint32_t nl;
	uint32_t *first, *cnt;   /* [nl] leaf l's free hosts: fh[first[l] .. + cnt[l]), hierarchy order */
	uint32_t *fh;
	uint32_t *ord;           /* [nl] leaves, the first taken first */
	uint64_t *up;            /* [nl] uplinks x the slowest one's rate */
	uint64_t *usum, *utop;   /* [nl] their summed rate, the fastest's (pick_limit's terms) */
	uint32_t *ucnt;          /* [nl] how many */
	uint8_t *key;            /* [nl] 2: a leaf of the answer, 1: of its pods, 0 */
};

static void wide_free(struct wide *w)
{
	free(w->first), free(w->cnt), free(w->fh), free(w->ord), free(w->up), free(w->key);
	free(w->usum), free(w->utop), free(w->ucnt);
}

/* Leaves with the most uplink capacity first (a leaf whose cables up are
 * few or slow is what the all-to-all waits on), then the answer's own
 * leaves, then those of its pods (traffic between pods crosses one more
 * level), then the most free hosts, then hierarchy order. */
static int wide_cmp(const void *a, const void *b, void *ctx)
{
	const struct wide *w = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (w->up[x] != w->up[y])
		return w->up[x] > w->up[y] ? -1 : 1;
	if (w->key[x] != w->key[y])
		return w->key[x] > w->key[y] ? -1 : 1;
	if (w->cnt[x] != w->cnt[y])
		return w->cnt[x] > w->cnt[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}


static int wide_setup(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      const struct place_pick *ans, struct wide *w)
{
	uint32_t *lof = malloc((rt->nsw + 1) * sizeof(*lof)), *lsw = malloc((nfree + 1) * sizeof(*lsw));
	uint32_t *f = malloc((nfree + 1) * sizeof(*f));
	w->first = calloc(nfree + 1, sizeof(*w->first)), w->cnt = calloc(nfree + 1, sizeof(*w->cnt));
	w->fh = malloc((nfree + 1) * sizeof(*w->fh)), w->ord = malloc((nfree + 1) * sizeof(*w->ord));
	w->up = calloc(nfree + 1, sizeof(*w->up)), w->key = calloc(nfree + 1, 1);
	w->usum = calloc(nfree + 1, sizeof(*w->usum)), w->utop = calloc(nfree + 1, sizeof(*w->utop));
	w->ucnt = calloc(nfree + 1, sizeof(*w->ucnt));
	int rc = AN_E_NOMEM;
	if (!lof || !lsw || !f || !w->first || !w->cnt || !w->fh || !w->ord || !w->up || !w->key || !w->usum ||
	    !w->utop || !w->ucnt)
		goto out;
	memcpy(f, free_hosts, nfree * sizeof(*f));
	if ((rc = place_order(rt, h, f, nfree)))
		goto out;
	for (uint32_t s = 0; s < rt->nsw; s++)
		lof[s] = NONE32;
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, f[i]);
		if (sw == ROUTE_NONE)
			continue;
		if (lof[sw] == NONE32)
			lsw[w->nl] = sw, lof[sw] = w->nl++;
		w->cnt[lof[sw]]++;
	}
	for (uint32_t l = 1; l < w->nl; l++)
		w->first[l] = w->first[l - 1] + w->cnt[l - 1];
	memset(w->cnt, 0, w->nl * sizeof(*w->cnt));
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, f[i]);
		if (sw != ROUTE_NONE)
			w->fh[w->first[lof[sw]] + w->cnt[lof[sw]]++] = f[i];
	}
	for (uint32_t l = 0; l < w->nl; l++) {
		w->ord[l] = l;
		w->up[l] = place_leaf_uplinks(rt, lsw[l]);
		leaf_up(rt, lsw[l], &w->ucnt[l], &w->usum[l], &w->utop[l]);
		uint32_t pod = place_pod(h, w->fh[w->first[l]]);
		for (size_t i = 0; i < ans->n && w->key[l] < 2; i++) {
			uint32_t sw = place_host_leaf_sw(rt, ans->hosts[i]);
			if (sw == lsw[l])
				w->key[l] = 2;
			else if (place_pod(h, ans->hosts[i]) == pod)
				w->key[l] = 1;
		}
	}
	qsort_r(w->ord, w->nl, sizeof(*w->ord), wide_cmp, w);
	rc = AN_OK;
out:
	free(lof), free(lsw), free(f);
	return rc;
}

/* want hosts over the first nl leaves of w->ord, as evenly as their free
 * hosts allow (one more to every leaf with room, round by round), each
 * leaf's first in hierarchy order: into hosts. 0 if they hold too few. */
static int wide_fill(const struct wide *w, uint32_t nl, size_t want, uint32_t *hosts, uint32_t *take)
{
	size_t k = 0;
	memset(take, 0, nl * sizeof(*take));
	while (k < want) {
		size_t before = k;
		for (uint32_t a = 0; a < nl && k < want; a++)
			if (take[a] < w->cnt[w->ord[a]])
				take[a]++, k++;
		if (k == before)
			return 0;
	}
	k = 0;
	for (uint32_t a = 0; a < nl; a++)
		for (uint32_t t = 0; t < take[a]; t++)
			hosts[k++] = w->fh[w->first[w->ord[a]] + t];
	return 1;
}

/* The fewest leaves (more than from) over which wide_fill's counts pass
 * pick_limit's test on every leaf: c hosts of n on a leaf send c (n - c)
 * blocks up its uplinks and ceil(c / u) (n - c) down one of its cables,
 * both within the injection limit. 0 if none does (or no rates). Cheap
 * (fills, no routes): where to start trying. */
static uint32_t wide_cap(const struct wide *w, uint32_t from, uint32_t nmax, size_t n, uint64_t bytes, double limit,
			 uint32_t *hosts, uint32_t *take)
{
	for (uint32_t L = from + 1; limit > 0 && L <= nmax; L++) {
		if (!wide_fill(w, L, n, hosts, take))
			continue; /* a slow or dead uplink's leaf ranks last: a wider L may hold n */
		int fits = 1;
		for (uint32_t a = 0; a < L && fits; a++) {
			uint32_t l = w->ord[a], u = w->ucnt[l];
			double c = take[a], rest = (double)(n - take[a]) * (double)bytes * 8;
			fits = u && w->usum[l] && w->utop[l] && c * rest / (double)w->usum[l] <= limit * (1 + 1e-9) &&
			       (double)((take[a] + u - 1) / u) * rest / (double)w->utop[l] <= limit * (1 + 1e-9);
		}
		if (fits)
			return L;
	}
	return 0;
}

/* The best wider pick found: its hosts (malloc'ed, hierarchy order) and
 * the figures of its prediction. */
struct wbest {
	uint32_t *hosts;
	double t, bw;
	uint32_t leaves, node, swaps;
	uint8_t port;
	int balanced;
};

/* One try on the first L leaves of w->ord: the even fill in hierarchy
 * order predicted first (ftree numbers ports so that it often spreads over
 * the upper switches already: at the limit, no balancing does better),
 * then balanced (place_pick_balance) when above it. Keeps it in *b when
 * faster than *target. *at: the try reached the limit. */
static int wide_try(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		    struct judge *jd, uint64_t bytes, int threads, double limit, uint32_t L, uint32_t *hosts, size_t n,
		    double *target, struct wbest *b, int *at)
{
	int rc = AN_OK;
	*at = 0;
	for (int bal = 0; bal < 2 && rc == AN_OK && !*at; bal++) {
		struct cost_time ct;
		uint32_t node, swaps = 0;
		uint8_t port;
		if (bal && (rc = place_pick_balance(rt, free_hosts, nfree, hosts, n, &swaps))) {
			if (rc == AN_E_RANGE) /* beyond the balancing's bound: the even fill stands */
				rc = AN_OK;
			break;
		}
		if ((rc = place_order(rt, h, hosts, n)))
			break;
		jd->cut = *target;
		rc = a2a_cost(rt, jd, hosts, n, bytes, threads, &ct, &node, &port);
		jd->cut = 0;
		if (rc)
			break;
		*at = limit > 0 && ct.bw_seconds >= 0 && ct.bw_seconds <= limit * (1 + 1e-9);
		if (ct.seconds < 0 || ct.seconds >= *target)
			continue;
		uint32_t *keep = b->hosts ? b->hosts : malloc(n * sizeof(*keep));
		if (!keep)
			return AN_E_NOMEM;
		memcpy(keep, hosts, n * sizeof(*keep));
		*b = (struct wbest){ keep, ct.seconds, ct.bw_seconds, L, node, swaps, port, bal };
		*target = ct.seconds * (1 - 1e-6);
	}
	return rc;
}

/* The fastest pick on more leaves than the answer's: for growing leaf
 * counts (from wide_cap's), the leaves wide_cmp ranks first, hosts as even
 * over them as their free hosts allow, balanced within them when that
 * helps (wide_try), judged by the pattern's predicted time; stops once the
 * all-to-all's busiest cable is at the injection limit (more leaves cannot
 * beat it). b->hosts when one is predicted faster than the answer by more
 * than a millionth, else NULL. */
static int pick_wider(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      struct judge *jd, uint64_t bytes, int threads, const struct place_pick *ans, struct wbest *b)
{
	struct wide w = { 0 };
	size_t n = ans->n;
	uint32_t *hosts = malloc((n + 1) * sizeof(*hosts)), *take = malloc((nfree + 1) * sizeof(*take));
	double limit = -1, target = ans->time * (1 - 1e-6);
	int rc = hosts && take ? wide_setup(rt, h, free_hosts, nfree, ans, &w) : AN_E_NOMEM, at = 0;
	*b = (struct wbest){ 0 };
	if (jd->pat->kind == PAT_ALLTOALL && ans->limit_time > 0)
		limit = ans->limit_time;
	uint32_t nmax = w.nl < n ? w.nl : (uint32_t)n, L = ans->figs.leaves + 1;
	/* fewer leaves than wide_cap's cannot reach the limit: start there */
	uint32_t cap = rc == AN_OK ? wide_cap(&w, ans->figs.leaves, nmax, n, bytes, limit, hosts, take) : 0;
	L = cap > L ? cap : L;
	uint32_t ntries = jd->run == PLACE_RUN_BOUND ? PICK_WIDE_TRIES : PICK_RUN_WIDE_TRIES;
	/* the limit ends the tries only where the bound judges: a stepped
	 * schedule may still gain on more leaves */
	double stop = jd->run == PLACE_RUN_BOUND ? limit : -1;
	for (uint32_t tries = 0; rc == AN_OK && !at && L <= nmax && tries < ntries;) {
		/* the first L leaves may hold too few hosts (wide_cmp ranks a
		 * leaf with a slow or dead uplink last): then the next L */
		if (wide_fill(&w, L, n, hosts, take)) {
			rc = wide_try(rt, h, free_hosts, nfree, jd, bytes, threads, stop, L, hosts, n, &target, b, &at);
			tries++;
		}
		/* not monotone: a leaf of c hosts and u uplinks sends ceil(c / u)
		 * hosts' traffic down one cable, so a count between two that
		 * help can hurt; the growth stays geometric, the tries few, and
		 * the widest (fewest hosts on each leaf) is always the last */
		uint32_t next = L + 1 > L * 3 / 2 ? L + 1 : L * 3 / 2;
		L = L < nmax && (next > nmax || tries + 1 == ntries) ? nmax : next;
	}
	free(hosts), free(take);
	wide_free(&w);
	if (rc) {
		free(b->hosts);
		b->hosts = NULL;
	}
	return rc;
}

/* The answer becomes b (a wider or a random pick): its hosts, figures and
 * prediction; pick_time stays the fewest-leaves pick's. */
static int pick_take(const struct route_tab *rt, const struct hier *h, uint64_t bytes, int a2a, struct wbest *b,
		     struct place_pick *out)
{
	struct place_figs figs;
	int rc = place_figures(rt, h, b->hosts, out->n, &figs);
	if (rc)
		return rc;
	free(out->hosts);
	out->hosts = b->hosts;
	b->hosts = NULL;
	out->figs = figs;
	out->sharing_free = figs.sharing == 0;
	out->sharing_free_wider = 0;
	out->first_fit = 0;
	out->balanced = b->balanced;
	out->swaps = b->swaps;
	/* the promise covers pods too: a random pick on the fewest leaves
	 * but more pods breaks it as well */
	out->widened = figs.leaves > out->min_leaves || figs.pods > out->min_pods;
	out->wider_time = out->widened ? b->t : -1, out->wider_leaves = out->widened ? figs.leaves : 0;
	out->time = b->t;
	/* the pick's prediction is the answer's: its busiest cable, the limit */
	out->bw_time = b->bw, out->bott_node = b->node, out->bott_port = b->port;
	if (a2a)
		pick_limit(rt, out, bytes, &out->limit_time, &out->limit_why);
	return AN_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* What a scheduler blind to the fabric may take: PICK_RANDOM_TRIES draws
 * of n hosts, uniform over the free list. Drawn from the list sorted by
 * host with a seed of nfree and n, so the answer still depends on the free
 * set alone. *mean: their predicted times' mean (-1 if one is unknown);
 * b: the fastest of them. */
#define PICK_RANDOM_TRIES 3
static int pick_random(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		       size_t n, struct judge *jd, uint64_t bytes, int threads, double *mean, struct wbest *b)
{
	uint32_t *pool = malloc((nfree + 1) * sizeof(*pool)), *hosts = malloc((n + 1) * sizeof(*hosts));
	int rc = pool && hosts ? AN_OK : AN_E_NOMEM;
	double sum = 0;
	*b = (struct wbest){ 0 };
	*mean = -1;
	if (rc == AN_OK) {
		memcpy(pool, free_hosts, nfree * sizeof(*pool));
		qsort(pool, nfree, sizeof(*pool), cmp_u32);
	}
	uint64_t seed = ((uint64_t)nfree << 32) ^ n;
	for (int t = 0; rc == AN_OK && t < PICK_RANDOM_TRIES; t++) {
		struct cost_time ct;
		uint32_t node;
		uint8_t port;
		for (size_t i = 0; i < n; i++) {   /* a partial Fisher-Yates shuffle */
			size_t j = i + (size_t)(splitmix64(&seed) % (nfree - i));
			uint32_t x = pool[i];
			pool[i] = pool[j], pool[j] = x;
		}
		memcpy(hosts, pool, n * sizeof(*hosts));
		if ((rc = place_order(rt, h, hosts, n)) || (rc = a2a_cost(rt, jd, hosts, n, bytes, threads, &ct, &node, &port)))
			break;
		sum = sum < 0 || ct.seconds < 0 ? -1 : sum + ct.seconds;
		if (ct.seconds < 0 || (b->hosts && ct.seconds >= b->t))
			continue;
		uint32_t *keep = b->hosts ? b->hosts : malloc(n * sizeof(*keep));
		if (!keep) {
			rc = AN_E_NOMEM;
			break;
		}
		memcpy(keep, hosts, n * sizeof(*keep));
		*b = (struct wbest){ keep, ct.seconds, ct.bw_seconds, 0, node, 0, port, 0 };
	}
	free(pool), free(hosts);
	if (rc) {
		free(b->hosts);
		b->hosts = NULL;
	} else if (sum >= 0) {
		*mean = sum / PICK_RANDOM_TRIES;
	}
	return rc;
}

/* The rule on leaves, once the answer is judged against first-fit. Above
 * the injection limit, AUTO predicts random picks first (random_time: what
 * a scheduler blind to the fabric may give the job), ANY after its wider
 * pick. PLACE_LEAVES_ANY, and PLACE_LEAVES_AUTO when the answer is
 * predicted slower than those random picks' mean: the fastest pick on
 * more leaves answers when predicted faster, and if the answer is still
 * slower than that mean, the fastest random pick does.
 * PLACE_LEAVES_FEWEST (and AUTO otherwise): a faster
 * pick on more leaves is only stated (wider_time, wider_leaves) when the
 * all-to-all's leaves hold it above the limit, so that a scheduler sees
 * what the promise costs. */
static int pick_widen(const struct route_tab *rt, const struct hier *h, const uint32_t *free_hosts, size_t nfree,
		      struct judge *jd, uint64_t bytes, int threads, int rule, struct place_pick *out)
{
	int a2a = jd->pat->kind == PAT_ALLTOALL, bound = jd->run == PLACE_RUN_BOUND;
	out->wider_time = -1, out->wider_leaves = 0, out->widened = 0, out->random_time = -1;
	/* (one host a leaf: no wider pick, but random picks may be faster);
	 * the limit is the bound's: a run judged step by step goes on */
	int at = a2a && out->bw_time >= 0 && out->bw_time <= out->limit_time * (1 + 1e-9);
	if (out->time < 0 || (bound && at))
		return AN_OK;
	struct wbest r = { 0 }, b = { 0 };
	/* judged by a run, random picks' time is always stated */
	int drawn = rule == PLACE_LEAVES_AUTO || !bound;
	int rc = drawn ? pick_random(rt, h, free_hosts, nfree, out->n, jd, bytes, threads, &out->random_time, &r) : AN_OK;
	/* slower than the blind picks by more than a millionth: not the
	 * rounding of a maximum */
	int any = rule == PLACE_LEAVES_ANY ||
		  (rc == AN_OK && rule == PLACE_LEAVES_AUTO && out->random_time >= 0 &&
		   out->time > out->random_time * (1 + 1e-6));
	if (rc == AN_OK && (any || (a2a && out->limit_why == PLACE_UPLINKS)) &&
	    (rc = pick_wider(rt, h, free_hosts, nfree, jd, bytes, threads, out, &b)) == AN_OK && b.hosts) {
		if (any)
			rc = pick_take(rt, h, bytes, a2a, &b, out);
		else
			out->wider_time = b.t, out->wider_leaves = b.leaves;
	}
	/* any: never slower than the blind picks' mean either (ANY predicts
	 * them only now, and not once at the limit: nothing beats it) */
	if (rc == AN_OK && rule == PLACE_LEAVES_ANY && !drawn &&
	    !(a2a && out->bw_time >= 0 && out->bw_time <= out->limit_time * (1 + 1e-9)))
		rc = pick_random(rt, h, free_hosts, nfree, out->n, jd, bytes, threads, &out->random_time, &r);
	if (rc == AN_OK && any && out->random_time >= 0 && out->time > out->random_time * (1 + 1e-6) && r.hosts &&
	    r.t < out->time)
		rc = pick_take(rt, h, bytes, a2a, &r, out);
	free(b.hosts), free(r.hosts);
	return rc;
}

int place_pick_advise(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, uint64_t bytes, int threads,
		      struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_pat(ctx, rt, h, free_hosts, nfree, want, &alltoall, bytes, threads, PLACE_LEAVES_FEWEST, out,
			      why);
}

int place_pick_pattern(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		       const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		       int threads, struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_leaves(ctx, rt, h, free_hosts, nfree, want, spec, bytes, threads, PLACE_LEAVES_FEWEST, out,
				 why);
}

int place_pick_leaves(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		      const uint32_t *free_hosts, size_t nfree, size_t want, const char *spec, uint64_t bytes,
		      int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN])
{
	struct pattern pc;
	int rc = pattern_parse(spec, &pc, why);
	if (rc)
		return rc;
	rc = place_pick_pat(ctx, rt, h, free_hosts, nfree, want, &pc, bytes, threads, leaves, out, why);
	pattern_clear(&pc);
	return rc;
}

int place_pick_pat(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		   const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
		   int threads, int leaves, struct place_pick *out, char why[AN_ERR_LEN])
{
	return place_pick_run(ctx, rt, h, free_hosts, nfree, want, pat, bytes, threads, leaves, PLACE_RUN_BOUND, NULL,
			      out, why);
}

static const char *const run_names[] = { "bound", "route", "xor" };   /* enum place_run, then the models */

const char *place_run_name(int run)
{
	if (run >= 0 && run < PLACE_RUN_NATIVE)
		return run_names[run];
	if (run >= PLACE_RUN_NATIVE && run < PLACE_NRUNS)
		return native_model_name((enum native_model)(run - PLACE_RUN_NATIVE));
	return "?";
}

int place_run_parse(const char *s, int *run)
{
	enum native_model m;
	for (int i = 0; i < PLACE_RUN_NATIVE; i++)
		if (!strcmp(s, run_names[i])) {
			*run = i;
			return AN_OK;
		}
	if (native_model_parse(s, &m))
		return AN_E_INVAL;
	*run = PLACE_RUN_NATIVE + (int)m;
	return AN_OK;
}

int place_pick_run(struct place_ctx *ctx, const struct route_tab *rt, const struct hier *h,
		   const uint32_t *free_hosts, size_t nfree, size_t want, const struct pattern *pat, uint64_t bytes,
		   int threads, int leaves, int run, const atomic_int *cancel, struct place_pick *out,
		   char why[AN_ERR_LEN])
{
	int rc = AN_OK;
	if (want > UINT32_MAX || pattern_check(pat, (uint32_t)want, why))
		return AN_E_INVAL;
	if (run < 0 || run >= PLACE_NRUNS || (run != PLACE_RUN_BOUND && pat->kind != PAT_ALLTOALL)) {
		snprintf(why, AN_ERR_LEN, "run=%s times the job's all-to-all: another pattern is judged by run=bound",
			 place_run_name(run));
		return AN_E_INVAL;
	}
	if (run != PLACE_RUN_BOUND && want > TOPO_PICK_RUN_HOSTS_MAX) {
		snprintf(why, AN_ERR_LEN, "run=%s simulates the schedule on at most %d hosts, asked for %zu",
			 place_run_name(run), TOPO_PICK_RUN_HOSTS_MAX, want);
		return AN_E_RANGE;
	}
	struct judge jdv = { .pat = pat, .h = h, .run = run, .cancel = cancel }, *jd = &jdv;
	if ((rc = place_pick(ctx, rt, h, free_hosts, nfree, want, out, why)))
		return rc;
	/* leaves=fewest keeps the whole promise: no alternative that breaks it */
	int keep = leaves == PLACE_LEAVES_FEWEST;
	if ((rc = pick_packed_if_faster(ctx, rt, h, free_hosts, nfree, want, jd, bytes, threads, keep, out, why)))
		return rc;
	struct cost_time ffc;
	uint32_t ffn;
	uint8_t ffp;
	uint32_t *ff = malloc(want * sizeof(*ff));
	if (!ff) {
		rc = AN_E_NOMEM;
		goto fail;
	}
	if ((rc = pick_balanced_if_faster(rt, h, free_hosts, nfree, jd, bytes, threads, keep, out)) ||
	    (rc = place_first_fit(free_hosts, nfree, want, ff)) ||
	    (rc = a2a_cost(rt, jd, ff, want, bytes, threads, &ffc, &ffn, &ffp)))
		goto fail;
	out->ff_time = ffc.seconds;
	out->ff_bw_time = ffc.bw_seconds;
	out->time = out->pick_time;
	/* slower by more than a millionth: not the rounding of a maximum */
	if (out->pick_time >= 0 && out->ff_time >= 0 && out->pick_time > out->ff_time * (1 + 1e-6)) {
		struct place_figs ffg;
		int take = 1;
		if ((rc = place_order(rt, h, ff, want)) || (rc = place_figures(rt, h, ff, want, &ffg)) ||
		    (keep && (rc = pick_no_worse(rt, free_hosts, nfree, ff, &ffg, out, &take))))
			goto fail;
		if (take) {   /* (under keep, first-fit's hosts keep the promise too) */
			free(out->hosts);
			out->hosts = ff;
			ff = NULL;
			out->figs = ffg;
			out->sharing_free = out->figs.sharing == 0;
			out->sharing_free_wider = keep && !out->sharing_free && out->sf_exists;
			out->first_fit = 1;
			out->balanced = 0;
			out->time = out->ff_time;
		}
	}
	if ((rc = pick_figures_of_answer(rt, jd, bytes, threads, out)) ||
	    (rc = pick_widen(rt, h, free_hosts, nfree, jd, bytes, threads, leaves, out)))
		goto fail;
	out->run = run, out->sims = jd->sims;
	free(ff);
	return AN_OK;
fail:
	free(ff);
	place_pick_free(out);
	snprintf(why, AN_ERR_LEN, "predicting the pick: %s", an_strerror(rc));
	return rc;
}

int place_pick_trade(const struct route_tab *rt, const struct hier *h, const uint32_t *alloc, size_t n,
		     const uint32_t *free_hosts, size_t nfree, uint64_t bytes, int threads, struct place_pick *out,
		     size_t *trades, char why[AN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	out->wider_time = out->random_time = -1;
	*trades = 0;
	struct cost_time ct;
	struct judge jd = { .pat = &alltoall, .h = h, .run = PLACE_RUN_BOUND };
	uint32_t *all = malloc((n + nfree + 1) * sizeof(*all));
	out->hosts = malloc((n + 1) * sizeof(*out->hosts));
	int rc = AN_E_NOMEM;
	if (!all || !out->hosts)
		goto fail;
	memcpy(all, alloc, n * sizeof(*all));
	memcpy(all + n, free_hosts, nfree * sizeof(*all));
	memcpy(out->hosts, alloc, n * sizeof(*out->hosts));
	out->n = n;
	if ((rc = place_order(rt, h, out->hosts, n)) ||
	    (rc = a2a_cost(rt, &jd, out->hosts, n, bytes, threads, &ct, &out->bott_node, &out->bott_port)))
		goto fail;
	out->ff_time = out->pick_time = ct.seconds;
	out->ff_bw_time = ct.bw_seconds;
	if ((rc = place_figures(rt, h, out->hosts, n, &out->figs)))
		goto fail;
	out->min_leaves = out->figs.leaves, out->min_pods = out->figs.pods;
	/* the pick's balancing, with the allocation as the pick and the union
	 * as the free list */
	if ((rc = pick_balanced_if_faster(rt, h, all, n + nfree, &jd, bytes, threads, 0, out)) ||
	    (rc = pick_figures_of_answer(rt, &jd, bytes, threads, out)))
		goto fail;
	out->time = out->pick_time;
	out->sharing_free = out->figs.sharing == 0;
	memcpy(all, alloc, n * sizeof(*all));   /* sorted: who stays */
	qsort(all, n, sizeof(*all), cmp_u32);
	for (size_t i = 0; i < n; i++)
		*trades += !bsearch(&out->hosts[i], all, n, sizeof(*all), cmp_u32);
	free(all);
	return AN_OK;
fail:
	free(all);
	place_pick_free(out);
	snprintf(why, AN_ERR_LEN, "predicting the trade: %s", an_strerror(rc));
	return rc;
}
