/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule.c - all-to-all schedules and their per-step link figures; see schedule.h.
 */
#include "schedule.h"

#include "cost.h"
#include "rate.h"
#include "sched_route.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include <sys/mman.h>

#define NONE UINT32_MAX

static int fail(char err[AN_ERR_LEN], int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char err[AN_ERR_LEN], int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, AN_ERR_LEN, fmt, ap);
	va_end(ap);
	return code;
}

static const char *const algo_names[] = { "xor",   "tacs1",  "tacs2", "opt",  "allgather",
					   "route", "kshift", "agring", "ring", "agbest" };

int sched_is_allgather(enum sched_algo a)
{
	return a == SCHED_ALLGATHER || a == SCHED_KSHIFT || a == SCHED_AGRING || a == SCHED_RING || a == SCHED_AGBEST;
}

/* KSHIFT's partition size for k asked (0: the paper's 8) on P ranks: at most P. */
static uint32_t sched_kshift_k(unsigned k, uint32_t P)
{
	if (!k)
		k = 8; /* Kumar and Kalé 2004 ran k = 8 throughout */
	return k > P ? (P ? P : 1) : k;
}

const char *sched_algo_name(enum sched_algo a)
{
	return (unsigned)a < sizeof(algo_names) / sizeof(*algo_names) ? algo_names[a] : "?";
}

int sched_algo_parse(const char *s, enum sched_algo *a)
{
	for (unsigned i = 0; i < sizeof(algo_names) / sizeof(*algo_names); i++)
		if (!strcmp(s, algo_names[i])) {
			*a = (enum sched_algo)i;
			return AN_OK;
		}
	return AN_E_INVAL;
}

/* ---- the job: hosts, their ranks, and the directed links of every host pair -- */

struct job {
	const struct route_tab *rt;
	uint32_t P, H;
	uint32_t *jh;        /* [P] job host of each rank */
	uint32_t *hrank_off; /* [H + 1] ranks of job host a: hrank[hrank_off[a] ..] */
	uint32_t *hrank;
	uint32_t *host;      /* [H] route_tab host index */
	uint32_t *group;     /* [H] leaf group of the host (hosts behind one leaf share routes) */
	uint32_t ngroups;
	uint32_t *rep;       /* [ngroups] a host of the group */
	uint32_t *cable;     /* [H] dense link id of the host's own cable */
	/* route from group g to host b: links[path_off[g*H+b] .. path_off[g*H+b+1]) */
	uint32_t *path_off;
	uint32_t *links;
	uint32_t nlinks;     /* dense ids */
	uint8_t *fabric;     /* [nlinks] 1: between two switches */
	uint64_t *bps;       /* [nlinks] the cable's data rate (rate.h), 0 if unknown */
};

static void job_free(struct job *j)
{
	free(j->jh);
	free(j->hrank_off);
	free(j->hrank);
	free(j->host);
	free(j->group);
	free(j->rep);
	free(j->cable);
	free(j->path_off);
	free(j->links);
	free(j->fabric);
	free(j->bps);
}

/* Links of a -> b, excluding a's cable: count and pointer. */
static inline const uint32_t *job_route(const struct job *j, uint32_t a, uint32_t b, uint32_t *n)
{
	size_t k = (size_t)j->group[a] * j->H + b;
	*n = j->path_off[k + 1] - j->path_off[k];
	return j->links + j->path_off[k];
}

/* Scratch of job_build, indexed by the fabric, not the job. */
struct jscratch {
	uint32_t *hmap;  /* [rt->nhosts] job host of a route_tab host, or NONE */
	uint32_t *slot;  /* [s->nports] dense link id of a (node, port) slot, or NONE */
	uint32_t *leafg; /* [s->nnodes] leaf group of a leaf switch, or NONE */
	size_t lcap;     /* capacity of j->fabric */
};

/* Job hosts in order of first appearance among the ranks. */
static int job_hosts(struct job *j, const struct sched_req *req, uint32_t *hmap, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	for (uint32_t r = 0; r < j->P; r++) {
		uint32_t h = req->rank_host[r];
		if (h >= rt->nhosts)
			return fail(err, AN_E_INVAL, "rank %u: host index %u out of range", r, h);
		if (hmap[h] == NONE) {
			hmap[h] = j->H;
			j->host[j->H++] = h;
		}
		j->jh[r] = hmap[h];
	}
	return AN_OK;
}

/* The ranks of each job host, in rank order (a counting sort). */
static int job_ranks(struct job *j)
{
	uint32_t H = j->H;
	j->hrank_off = calloc((size_t)H + 1, sizeof(*j->hrank_off));
	j->hrank = malloc((size_t)j->P * sizeof(*j->hrank));
	uint32_t *fill = calloc(H, sizeof(*fill));
	if (!j->hrank_off || !j->hrank || !fill) {
		free(fill);
		return AN_E_NOMEM;
	}
	for (uint32_t r = 0; r < j->P; r++)
		j->hrank_off[j->jh[r] + 1]++;
	for (uint32_t a = 0; a < H; a++)
		j->hrank_off[a + 1] += j->hrank_off[a];
	for (uint32_t r = 0; r < j->P; r++)
		j->hrank[j->hrank_off[j->jh[r]] + fill[j->jh[r]]++] = r;
	free(fill);
	return AN_OK;
}

/* Dense link id of slot sl, numbered in order of first use. */
static int job_dense(struct job *j, struct jscratch *sc, uint32_t node, unsigned port, uint8_t isfab, uint32_t *id)
{
	const struct snap *s = j->rt->snap;
	uint32_t sl = s->nodes[node].port0 + port;
	if (sc->slot[sl] == NONE) {
		if (j->nlinks == sc->lcap) {
			uint8_t *nf = realloc(j->fabric, sc->lcap * 2);
			if (!nf)
				return AN_E_NOMEM;
			j->fabric = nf;
			uint64_t *nb = realloc(j->bps, sc->lcap * 2 * sizeof(*nb));
			if (!nb)
				return AN_E_NOMEM;
			j->bps = nb;
			sc->lcap *= 2;
		}
		j->fabric[j->nlinks] = isfab;
		j->bps[j->nlinks] = rate_cable_bps(s, node, port);
		sc->slot[sl] = j->nlinks++;
	}
	*id = sc->slot[sl];
	return AN_OK;
}

/* Each host's own cable and leaf group; a host whose default port is down
 * or has no LID cannot take part. */
static int job_cables(struct job *j, struct jscratch *sc, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	uint32_t H = j->H;
	j->group = malloc((size_t)H * sizeof(*j->group));
	j->rep = malloc((size_t)H * sizeof(*j->rep));
	j->cable = malloc((size_t)H * sizeof(*j->cable));
	sc->lcap = 1024;
	j->fabric = malloc(sc->lcap);
	j->bps = malloc(sc->lcap * sizeof(*j->bps));
	if (!j->group || !j->rep || !j->cable || !j->fabric || !j->bps)
		return AN_E_NOMEM;
	for (uint32_t a = 0; a < H; a++) {
		uint32_t ep = route_host_ep(rt, j->host[a]);
		const struct route_ep *e = &rt->eps[ep];
		if (e->up != AN_OK || e->lid == 0)
			return fail(err, AN_E_ROUTE, "host %s: default port %s", rt->hosts[j->host[a]].name,
				    e->lid ? an_strerror(e->up) : "has no LID");
		if (job_dense(j, sc, e->node, e->port, 0, &j->cable[a]))
			return AN_E_NOMEM;
		if (sc->leafg[e->leaf] == NONE) {
			sc->leafg[e->leaf] = j->ngroups;
			j->rep[j->ngroups++] = a;
		}
		j->group[a] = sc->leafg[e->leaf];
	}
	return AN_OK;
}

/* Appends the links of the route from end port ep (group g's) to host b at
 * j->links[*n ..]. */
static int job_path(struct job *j, struct jscratch *sc, uint32_t g, uint32_t ep, uint32_t b, size_t *n,
		    size_t *cap, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	struct route_hop hops[64];
	uint16_t dl = rt->eps[route_host_ep(rt, j->host[b])].lid;
	struct route_res res;
	int w = route_walk(rt, ep, dl, hops, 64, &res);
	if (w == AN_OK && res.hops > 64)
		w = AN_E_RANGE;
	if (w != AN_OK)
		return fail(err, AN_E_ROUTE, "route %s -> %s: %s", rt->hosts[j->host[j->rep[g]]].name,
			    rt->hosts[j->host[b]].name, an_strerror(w));
	if (*n + res.hops > *cap) {
		*cap = *cap * 2 + res.hops;
		uint32_t *nl = realloc(j->links, *cap * sizeof(*nl));
		if (!nl)
			return AN_E_NOMEM;
		j->links = nl;
	}
	for (uint32_t k = 0; k < res.hops; k++) {
		uint32_t sw = rt->sw_of_node[hops[k].node];
		int isfab = sw != ROUTE_NONE && rt->pt[rt->pt_off[sw] + hops[k].out] < ROUTE_PT_EP;
		if (job_dense(j, sc, hops[k].node, hops[k].out, (uint8_t)isfab, &j->links[*n]))
			return AN_E_NOMEM;
		(*n)++;
	}
	return AN_OK;
}

/* The route from every leaf group to every job host. */
static int job_paths(struct job *j, struct jscratch *sc, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = j->rt;
	uint32_t H = j->H;
	size_t npairs = (size_t)j->ngroups * H;
	j->path_off = malloc((npairs + 1) * sizeof(*j->path_off));
	size_t cap = npairs * 4 + 16, n = 0;
	j->links = malloc(cap * sizeof(*j->links));
	if (!j->path_off || !j->links)
		return AN_E_NOMEM;
	for (uint32_t g = 0; g < j->ngroups; g++) {
		/* Walk from the leaf switch itself (its port 0), so that the route
		 * to every host of the group, the first one included, is known. */
		uint32_t rep_ep = route_host_ep(rt, j->host[j->rep[g]]), ep = rep_ep;
		uint32_t lsw = rt->sw_of_node[rt->eps[rep_ep].leaf];
		if (lsw != ROUTE_NONE && rt->pt[rt->pt_off[lsw]] >= ROUTE_PT_EP && rt->pt[rt->pt_off[lsw]] < ROUTE_PT_DOWN)
			ep = rt->pt[rt->pt_off[lsw]] - ROUTE_PT_EP;
		for (uint32_t b = 0; b < H; b++) {
			j->path_off[(size_t)g * H + b] = (uint32_t)n;
			if (ep == rep_ep && b == j->rep[g])
				continue;
			int rc = job_path(j, sc, g, ep, b, &n, &cap, err);
			if (rc)
				return rc;
		}
	}
	j->path_off[npairs] = (uint32_t)n;
	return AN_OK;
}

static int job_build(struct job *j, const struct route_tab *rt, const struct sched_req *req,
		     char err[AN_ERR_LEN])
{
	memset(j, 0, sizeof(*j));
	j->rt = rt;
	j->P = req->nranks;
	const struct snap *s = rt->snap;
	struct jscratch sc = {
		.hmap = malloc((size_t)rt->nhosts * sizeof(*sc.hmap)),
		.slot = malloc((size_t)s->nports * sizeof(*sc.slot)),
		.leafg = malloc((size_t)s->nnodes * sizeof(*sc.leafg)),
	};
	j->jh = malloc((size_t)j->P * sizeof(*j->jh));
	j->host = malloc((size_t)j->P * sizeof(*j->host));
	int rc = AN_E_NOMEM;
	if (sc.hmap && sc.slot && sc.leafg && j->jh && j->host) {
		memset(sc.hmap, 0xff, (size_t)rt->nhosts * sizeof(*sc.hmap));
		memset(sc.slot, 0xff, (size_t)s->nports * sizeof(*sc.slot));
		memset(sc.leafg, 0xff, (size_t)s->nnodes * sizeof(*sc.leafg));
		rc = job_hosts(j, req, sc.hmap, err);
		if (!rc)
			rc = job_ranks(j);
		if (!rc)
			rc = job_cables(j, &sc, err);
		if (!rc)
			rc = job_paths(j, &sc, err);
	}
	if (rc == AN_E_NOMEM)
		fail(err, rc, "no memory for a %u-rank job", j->P);
	free(sc.hmap);
	free(sc.slot);
	free(sc.leafg);
	return rc;
}

/* Switches between hosts a and b (a != b). */
static inline uint32_t job_dist(const struct job *j, uint32_t a, uint32_t b)
{
	uint32_t n;
	job_route(j, a, b, &n);
	return n - 1;
}

/* ---- schedule storage ------------------------------------------------------- */

struct sbuild {
	struct sched *s;
	size_t cap, n;       /* flows */
	uint32_t scap;       /* steps */
	/* same[i] = 1: step i moves the same host pairs with the same weights as
	 * step i-1 and every rank of those hosts takes part in both, so its
	 * figures and multi-ness are step i-1's (expand_hosts sets it). */
	uint8_t *same;
	uint32_t samecap;
};

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

/* Flows are preallocated (a complete exchange has exactly P(P-1)), so
 * adding one is a store, not a call that may grow. */
/* Big flow arrays (a 4,096-rank exchange is 16.7M flows, 64 MiB per array)
 * ask for transparent huge pages: first-touch faults dominate otherwise. */
static uint32_t *big_alloc(size_t n)
{
	size_t bytes = (n + 1) * sizeof(uint32_t), huge = 2u << 20;
	if (bytes < 4 * huge)
		return malloc(bytes);
	void *p = NULL;
	if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge))
		return NULL;
	madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
	return p;
}

static int sb_alloc(struct sbuild *b, size_t n)
{
	b->s->src = big_alloc(n);
	b->s->dst = big_alloc(n);
	int ag = sched_is_allgather(b->s->algo);
	if (ag)
		b->s->blk = big_alloc(n);
	if (!b->s->src || !b->s->dst || (ag && !b->s->blk))
		return AN_E_NOMEM;
	b->cap = n;
	return AN_OK;
}

static inline int sb_flow(struct sbuild *b, uint32_t src, uint32_t dst, uint32_t blk)
{
	if (__builtin_expect(b->n == b->cap, 0))
		return AN_E_NOMEM; /* more than a complete exchange: a bug, refused */
	b->s->src[b->n] = src;
	b->s->dst[b->n] = dst;
	if (b->s->blk)
		b->s->blk[b->n] = blk;
	b->n++;
	return AN_OK;
}

/* Closes the current step (drops it if empty). */
static int sb_step(struct sbuild *b)
{
	struct sched *s = b->s;
	if (b->n == s->step_off[s->nsteps])
		return AN_OK;
	if (s->nsteps + 1 >= b->scap) {
		uint32_t nc = b->scap * 2 + 64;
		uint32_t *no = realloc(s->step_off, (size_t)(nc + 1) * sizeof(*no));
		if (!no)
			return AN_E_NOMEM;
		s->step_off = no;
		b->scap = nc;
	}
	s->step_off[++s->nsteps] = (uint32_t)b->n;
	return AN_OK;
}

/* ---- XOR / pairwise ------------------------------------------------------------ */

static int build_xor(struct sbuild *b, uint32_t P)
{
	int pow2 = P && !(P & (P - 1));
	uint32_t *src = b->s->src, *dst = b->s->dst;
	for (uint32_t i = 1; i < P; i++) {
		size_t o = b->n;
		if (o + P > b->cap)
			return AN_E_NOMEM;
		if (pow2)
			for (uint32_t r = 0; r < P; r++) {
				src[o + r] = r;
				dst[o + r] = r ^ i;
			}
		else
			for (uint32_t r = 0; r < P; r++) {
				src[o + r] = r;
				dst[o + r] = r + i < P ? r + i : r + i - P;
			}
		b->n = o + P;
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

/* ---- kPrefix allgather (seed 002) ---------------------------------------------- */

static int build_allgather(struct sbuild *b, uint32_t P, unsigned k, char err[AN_ERR_LEN])
{
	if (!k) {
		k = 8;
		while (k > 1 && (P % k || k > P))
			k /= 2;
	}
	if (!k || (k & (k - 1)) || P % k)
		return fail(err, AN_E_NOTAPPLIC,
			    "kPrefix needs a partition size k that is a power of two dividing the %u ranks (k=%u)", P, k);
	b->s->k = k;
	for (uint32_t t = 0; t < P / k; t++) {
		for (uint32_t i = 1; i < k; i++) {
			for (uint32_t r = 0; r < P; r++)
				if (sb_flow(b, r, r ^ i, (uint32_t)((r + (uint64_t)P * k - (uint64_t)t * k) % P)))
					return AN_E_NOMEM;
			if (sb_step(b))
				return AN_E_NOMEM;
		}
		if (t + 1 == P / k)
			break;
		for (uint32_t r = 0; r < P; r++)
			if (sb_flow(b, r, (r + k) % P, (uint32_t)((r + (uint64_t)P * k - (uint64_t)t * k) % P)))
				return AN_E_NOMEM;
		if (sb_step(b))
			return AN_E_NOMEM;
	}
	return AN_OK;
}

/* ---- rings and kShift (Kumar and Kalé 2004) ------------------------------------- */

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

/* The host-cable bound of an allgather (schedule.h bound_s_per_byte). */
static double job_ag_bound(const struct job *j)
{
	double w = 0;
	for (uint32_t a = 0; a < j->H; a++) {
		uint64_t bps = j->bps[j->cable[a]];
		uint32_t blocks = j->P - (j->hrank_off[a + 1] - j->hrank_off[a]);
		if (!bps)
			return -1;
		if ((double)blocks * 8.0 / (double)bps > w)
			w = (double)blocks * 8.0 / (double)bps;
	}
	return w;
}

/* ---- TACS (seed 004, Algorithm 2) ----------------------------------------------- */

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
			return fail(err, AN_E_CHECK, "TACS2 left pairs after %u steps", t->nsteps);
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
		return fail(err, AN_E_INVAL, "TACS for %u hosts over %u links is beyond its memory bound", H,
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
		fail(err, rc, "no memory for TACS on %u hosts", H);
	else if (rc == AN_E_CANCEL)
		fail(err, rc, "TACS on %u hosts cancelled", H);
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

/* ---- OPT (seed 000) ------------------------------------------------------------------ */

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
		return fail(err, AN_E_NOTAPPLIC, "OPT needs the fabric's hierarchy");
	uint32_t r0 = j->hrank_off[1] - j->hrank_off[0];
	for (uint32_t a = 1; a < H; a++)
		if (j->hrank_off[a + 1] - j->hrank_off[a] != r0)
			return fail(err, AN_E_NOTAPPLIC,
				    "OPT needs the same number of ranks on every host (%s has %u, %s has %u)",
				    j->rt->hosts[j->host[0]].name, r0, j->rt->hosts[j->host[a]].name,
				    j->hrank_off[a + 1] - j->hrank_off[a]);
	if (D + 2 > SCHED_LEVELS_MAX)
		return fail(err, AN_E_NOTAPPLIC, "hierarchy of %u levels is deeper than OPT supports", D);
	uint32_t *ord = malloc((size_t)H * sizeof(*ord));
	if (!ord)
		return fail(err, AN_E_NOMEM, "no memory");
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
				return fail(err, AN_E_NOTAPPLIC,
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
			return fail(err, AN_E_NOTAPPLIC, "the job spans %u disconnected parts of the fabric", roots);
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

/* ---- figures --------------------------------------------------------------------------- */

/* Level of every link used by the job (+l up, -l down; 0 unknown, 127 inconsistent) from its
 * position on the routes; cables per level. Only for OPT. */
static int opt_levels(struct sched *s, const struct job *j, int8_t *lvl)
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

static int figures(struct sched *s, const struct job *j, const uint8_t *same, uint32_t samecap, int threads)
{
	int8_t *lvl = NULL;
	uint32_t L = s->nlevels;
	s->fig = calloc((size_t)s->nsteps + 1, sizeof(*s->fig));
	if (!s->fig)
		return AN_E_NOMEM;
	if (L) {
		lvl = calloc((size_t)j->nlinks + 1, 1);
		s->level_max = calloc((size_t)s->nsteps * L + 1, sizeof(*s->level_max));
		if (!lvl || !s->level_max || opt_levels(s, j, lvl)) {
			free(lvl);
			return AN_E_NOMEM;
		}
	}
	int nt = threads > 0 ? threads : 1;
	int rc = AN_OK, multi = 0;
	uint32_t nlinks = j->nlinks, P = s->nranks;
#pragma omp parallel num_threads(nt) reduction(| : multi)
	{
		uint32_t *load = calloc((size_t)nlinks + 1, sizeof(*load));
		uint32_t *touched = malloc(((size_t)nlinks + 1) * sizeof(*touched));
		/* per link: the last host pair seen (a * H + b + 1) and whether a
		 * second, different pair came: "two nodes share the link" */
		uint64_t *lastp = calloc((size_t)nlinks + 1, sizeof(*lastp));
		uint8_t *shared = calloc((size_t)nlinks + 1, 1);
		/* step + 1 of a rank's last send / receive: the exact multi flag */
		uint32_t *ss = calloc((size_t)P + 1, sizeof(*ss)), *rs = calloc((size_t)P + 1, sizeof(*rs));
		if (!load || !touched || !ss || !rs || !lastp || !shared) {
#pragma omp atomic write
			rc = AN_E_NOMEM;
		}
#pragma omp for schedule(dynamic, 8)
		for (uint32_t st = 0; st < s->nsteps; st++) {
			if (!load || !touched || !ss || !rs || !lastp || !shared)
				continue;
			if (same && st < samecap && same[st])
				continue; /* copied below */
			struct sched_fig *fg = &s->fig[st];
			uint32_t nt_ = 0;
			uint32_t lo = s->step_off[st], hi = s->step_off[st + 1];
			fg->flows = hi - lo;
			/* Runs of flows between the same two hosts are added at once. */
			for (uint32_t f = lo; f < hi;) {
				uint32_t a = j->jh[s->src[f]], bb = j->jh[s->dst[f]], w = 0;
				/* one pass: the run, and the exact multi flag */
				while (f < hi) {
					uint32_t x = s->src[f], y = s->dst[f];
					if (j->jh[x] != a || j->jh[y] != bb)
						break;
					multi |= ss[x] == st + 1 || rs[y] == st + 1;
					ss[x] = rs[y] = st + 1;
					w++;
					f++;
				}
				if (a == bb)
					continue;
				uint32_t n;
				const uint32_t *l = job_route(j, a, bb, &n);
				if (n > fg->max_hops)
					fg->max_hops = n;
				uint64_t pid = (uint64_t)a * j->H + bb + 1;
				for (uint32_t k = 0; k <= n; k++) {
					uint32_t id = k ? l[k - 1] : j->cable[a];
					if (!load[id])
						touched[nt_++] = id;
					else if (lastp[id] != pid)
						shared[id] = 1;
					lastp[id] = pid;
					load[id] += w;
				}
			}
			for (uint32_t i = 0; i < nt_; i++) {
				uint32_t id = touched[i], v = load[id];
				if (v > fg->maxload)
					fg->maxload = v;
				/* the cost model (cost.h): the busiest cable by bytes over rate */
				if (!j->bps[id])
					fg->unrated = 1;
				else if ((double)v * 8.0 / (double)j->bps[id] > fg->s_per_byte)
					fg->s_per_byte = (double)v * 8.0 / (double)j->bps[id];
				if (shared[id]) {
					fg->conflicts++;
					fg->fabric_conflicts += j->fabric[id];
				}
				if (lvl) {
					int lv = lvl[id] < 0 ? -lvl[id] : lvl[id];
					if (lv > 0 && (uint32_t)lv < L && v > s->level_max[(size_t)st * L + lv])
						s->level_max[(size_t)st * L + lv] = v;
				}
				load[id] = 0;
				lastp[id] = 0;
				shared[id] = 0;
			}
		}
		free(load);
		free(touched);
		free(ss);
		free(rs);
		free(lastp);
		free(shared);
	}
	free(lvl);
	for (uint32_t st = 1; same && st < s->nsteps && st < samecap; st++)
		if (same[st])
			s->fig[st] = s->fig[st - 1];
	s->multi = multi;
	return rc;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	free(s->step_off);
	free(s->src);
	free(s->dst);
	free(s->blk);
	free(s->ord);
	free(s->fig);
	free(s->level_max);
	free(s->rank_jhost);
	free(s->hstep_off);
	free(s->hsrc);
	free(s->hdst);
	sched_free(s->wide);
	free(s);
}

static int build_compact(struct sched *s, const struct job *j, const struct sched_req *req, int threads,
			 char err[AN_ERR_LEN]);

/* cost_sim_time's view of the job's routes: a's cable, then the links of
 * route_walk to b (job_route). */
static uint32_t sim_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	const struct job *j = ctx;
	uint32_t ja = j->jh[a], jb = j->jh[b], n;
	if (ja == jb)
		return 0;
	const uint32_t *l = job_route(j, ja, jb, &n);
	if (n > COST_ROUTE_MAX - 1)
		n = COST_ROUTE_MAX - 1; /* never on a real fabric: routes have < 64 hops */
	out[0] = j->cable[ja];
	memcpy(out + 1, l, (size_t)n * sizeof(*l));
	return n + 1;
}

/* The schedule's time with steps overlapping (cost.h), where it is cheap
 * enough: a compact schedule is listed rank by rank for it. */
static void overlap(struct sched *s, const struct job *j)
{
	char err[AN_ERR_LEN];
	struct sched *e = NULL;
	const struct sched *x = s;
	s->sim_s_per_byte = 0;
	if ((uint64_t)s->nranks * (s->nranks - 1) > COST_SIM_FLOWS_MAX)
		return;
	for (uint32_t st = 0; st < s->nsteps; st++)
		if (s->fig[st].unrated)
			return;
	if (s->compact) {
		if (sched_expand(s, &e, err))
			return;
		x = e;
	}
	struct cost_sim in = { .nranks = x->nranks, .nsteps = x->nsteps, .ncables = j->nlinks, .step_off = x->step_off,
			       .src = x->src, .dst = x->dst, .bps = j->bps, .route = sim_route, .ctx = j,
			       .exact = (uint64_t)x->nranks * (x->nranks - 1) <= COST_SIM_EXACT_FLOWS_MAX };
	double t;
	if (!cost_sim_time(&in, &t, err))
		s->sim_s_per_byte = t;
	sched_free(e);
}

/* On whole leaves of a 2:1 tree the greedy loses to regular orders
 * (docs/performance.md "The route-aware schedule"): where seed 000's OPT
 * applies and keeps its per-cable bound on these routes, its steps are one
 * more candidate beside route's own, answered if the model predicts them
 * faster for 1 MiB blocks (the block sched_route.c scores at). */
static void route_or_opt(struct sched *s, const struct route_tab *rt, const struct hier *h,
			 const struct sched_req *req, int threads)
{
	char err[AN_ERR_LEN];
	struct sched_req o = *req;
	struct sched *x = NULL;
	o.algo = SCHED_OPT;
	o.compact = 0;
	if (!h || sched_build(rt, h, &o, threads, &x, err))
		return;
	int broken = x->multi || !x->level_max;
	for (uint32_t st = 0; !broken && st < x->nsteps; st++)
		for (uint32_t l = 1; l < x->nlevels; l++)
			broken |= x->level_max[(size_t)st * x->nlevels + l] > x->cable_bound[l];
	double to = sched_time(x, 1 << 20), tr = sched_time(s, 1 << 20);
	if (!broken && to >= 0 && tr >= 0 && to < tr * (1 - 1e-9)) {
		struct sched t = *s;
		s->step_off = x->step_off, x->step_off = t.step_off;
		s->src = x->src, x->src = t.src;
		s->dst = x->dst, x->dst = t.dst;
		s->fig = x->fig, x->fig = t.fig;
		s->nsteps = x->nsteps;
		s->multi = x->multi;
		s->sim_s_per_byte = x->sim_s_per_byte;
	}
	sched_free(x);
}

/* Route's steps in the order of stride k: step i of the answer is step
 * (i x k) mod nsteps of s (k coprime with nsteps). Figures follow. */
static int route_stride(struct sched *s, uint32_t k, struct sched *out)
{
	uint32_t n = s->nsteps, F = s->step_off[n];
	out->step_off = malloc(((size_t)n + 1) * sizeof(uint32_t));
	out->src = malloc(((size_t)F + 1) * sizeof(uint32_t));
	out->dst = malloc(((size_t)F + 1) * sizeof(uint32_t));
	out->fig = malloc(((size_t)n + 1) * sizeof(*out->fig));
	if (!out->step_off || !out->src || !out->dst || !out->fig)
		return AN_E_NOMEM;
	uint32_t f = 0;
	out->step_off[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t st = (uint32_t)(((uint64_t)i * k) % n), a = s->step_off[st], b = s->step_off[st + 1];
		memcpy(out->src + f, s->src + a, (size_t)(b - a) * sizeof(uint32_t));
		memcpy(out->dst + f, s->dst + a, (size_t)(b - a) * sizeof(uint32_t));
		out->fig[i] = s->fig[st];
		f += b - a;
		out->step_off[i + 1] = f;
	}
	out->nsteps = n;
	out->nranks = s->nranks;
	return AN_OK;
}

static uint32_t gcd32(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Steps in flight (advice.h window) fill a step's idle cables with the
 * next steps' flows, but route's greedy puts the blocks of one slow cable
 * into neighbouring steps, where a window cannot spread them (on ft2-mixed,
 * 64 hosts, 1 MiB: 1.11x the bound with 32 steps in flight, 1.000x with
 * the same steps taken seven apart and 8 in flight). The steps' order is
 * chosen once, for any block size: the stride (1, 3, 5, 7, 11, 13) whose
 * steps run fastest for 1 MiB blocks with ROUTE_SPREAD_WINDOW steps in
 * flight, among those no slower than the given order one step at a time
 * (what a client without a window runs); the given order on ties. */
#define ROUTE_SPREAD_WINDOW 8
static int spread_time(const struct sched *y, const struct job *j, uint32_t window, double *t)
{
	char err[AN_ERR_LEN];
	struct cost_sim in = { .nranks = y->nranks, .nsteps = y->nsteps, .ncables = j->nlinks, .step_off = y->step_off,
			       .src = y->src, .dst = y->dst, .bps = j->bps, .route = sim_route, .ctx = j,
			       .exact = (uint64_t)y->step_off[y->nsteps] <= COST_SIM_EXACT_FLOWS_MAX, .block = SCHED_ORDER_BLOCK,
			       .window = window };
	return cost_sim_run(&in, t, err);
}

/* Frees a step order's arrays (route_stride's, or a schedule's own before
 * another order takes their place) and forgets them. */
static void order_free(struct sched *x)
{
	free(x->step_off), free(x->src), free(x->dst), free(x->fig);
	x->step_off = x->src = x->dst = NULL;
	x->fig = NULL;
}

/* The stride order x (route_stride's) as a whole schedule beside s: s's
 * scalars, x's steps, its own overlap time. NULL on ENOMEM. */
static struct sched *route_wide(const struct sched *s, struct sched *x, const struct job *j)
{
	struct sched *w = malloc(sizeof(*w));
	if (!w)
		return NULL;
	*w = (struct sched){ .algo = s->algo, .nranks = s->nranks, .nsteps = x->nsteps, .step_off = x->step_off,
			     .src = x->src, .dst = x->dst, .fig = x->fig, .multi = s->multi,
			     .bound_s_per_byte = s->bound_s_per_byte, .tree_routes = s->tree_routes };
	memcpy(w->note, s->note, sizeof(w->note));
	*x = (struct sched){ 0 };
	overlap(w, j);
	return w;
}

static void route_spread(struct sched *s, const struct job *j)
{
	static const uint32_t stride[] = { 1, 3, 5, 7, 11, 13 };
	uint32_t n = s->nsteps, best = 1, wbest = 1;
	double tbest = -1, one = -1, wtbest = -1;
	if (n < 3 || s->compact || (uint64_t)s->step_off[n] > COST_SIM_FLOWS_MAX || spread_time(s, j, 1, &one))
		return;
	/* t: the fastest in flight among orders no slower one at a time; w: among all */
	struct sched t = { 0 }, w = { 0 };
	for (size_t i = 0; i < sizeof(stride) / sizeof(stride[0]); i++) {
		uint32_t k = stride[i];
		double tk, t1 = one;
		if (k >= n || gcd32(k, n) != 1)
			continue;
		struct sched x = { 0 };
		int rc = k == 1 ? AN_OK : route_stride(s, k, &x);
		const struct sched *y = k == 1 ? s : &x;
		if (!rc)
			rc = spread_time(y, j, ROUTE_SPREAD_WINDOW, &tk);
		if (!rc && k != 1)
			rc = spread_time(y, j, 1, &t1);
		if (rc && k == 1)
			return;
		if (rc) {
			order_free(&x);
			continue;
		}
		int slow1 = t1 > one * (1 + 1e-6);
		if (!slow1 && (tbest < 0 || tk < tbest * (1 - 1e-6))) {
			tbest = tk;
			best = k;
		}
		if (wtbest < 0 || tk < wtbest * (1 - 1e-6)) {
			wtbest = tk;
			wbest = k;
		}
		/* keep x where it is the best of either kind; k = 1 is s itself */
		if (k == best && k != 1) {
			order_free(&t);
			t = x;
			if (k == wbest)
				order_free(&w);
		} else if (k == wbest && k != 1) {
			order_free(&w);
			w = x;
		} else {
			order_free(&x);
		}
	}
	if (wbest != best && wbest != 1)
		s->wide = route_wide(s, &w, j);
	order_free(&w);
	if (best == 1)
		return;
	order_free(s);
	s->step_off = t.step_off, s->src = t.src, s->dst = t.dst, s->fig = t.fig;
	/* the overlap's fluid time of the new order */
	overlap(s, j);
}

/* The route-aware schedule (sched_route.c) on this job's routes; XOR above
 * its rank limit, as TACS falls back on sparse jobs. */
static int build_route(struct sbuild *b, const struct job *j, const atomic_int *cancel, char err[AN_ERR_LEN])
{
	if (j->P > SR_RANKS_MAX) {
		snprintf(b->s->note, sizeof(b->s->note), "fallback=xor ranks=%u route_max=%d", j->P, SR_RANKS_MAX);
		b->s->algo = SCHED_XOR;
		return build_xor(b, j->P);
	}
	struct sr_job in = { j->P, j->H, j->nlinks, j->jh, j->group, j->cable, j->path_off, j->links, j->bps, cancel };
	uint32_t *ends = NULL, n = 0;
	int rc = sr_build(&in, b->s->src, b->s->dst, b->cap, &ends, &n, err);
	for (uint32_t i = 0; !rc && i < n; i++) {
		b->n = ends[i];
		rc = sb_step(b);
	}
	free(ends);
	return rc;
}

int sched_build(const struct route_tab *rt, const struct hier *h, const struct sched_req *req, int threads,
		struct sched **out, char err[AN_ERR_LEN])
{
	if (!rt || !req || !out || !req->rank_host || req->nranks < 1)
		return fail(err, AN_E_INVAL, "empty rank list");
	if (req->nranks > SCHED_RANKS_MAX)
		return fail(err, AN_E_INVAL, "more than %d ranks", SCHED_RANKS_MAX);
	if ((unsigned)req->algo > SCHED_RING)
		return fail(err, AN_E_INVAL, req->algo == SCHED_AGBEST ? "agbest is a choice among schedules (advice.h)"
									 : "unknown algorithm");
	if (req->conflicts > SCHED_CONFLICTS_MAX)
		return fail(err, AN_E_INVAL, "conflicts must be 0..%d", SCHED_CONFLICTS_MAX);
	if (!(req->sparsity >= 0 && req->sparsity <= 1e6))
		return fail(err, AN_E_INVAL, "bad sparsity threshold");
	struct job j;
	int rc = job_build(&j, rt, req, err);
	struct sched *s = calloc(1, sizeof(*s));
	struct sbuild b = { .s = s };
	struct hflow *hf = NULL;
	uint32_t *task = NULL;
	if (rc)
		goto out;
	rc = AN_E_NOMEM;
	if (!s)
		goto out;
	s->algo = req->algo;
	s->nranks = j.P;
	s->step_off = calloc(65, sizeof(*s->step_off));
	b.scap = 64;
	/* compact: no rank flows held (OPT and route have no compact form:
	 * their steps are chosen rank by rank) */
	int compact = req->compact && req->algo != SCHED_OPT && req->algo != SCHED_ROUTE;
	if (!s->step_off || (!compact && sb_alloc(&b, (size_t)j.P * (j.P - 1))))
		goto out;
	if (s->algo == SCHED_TACS1 || s->algo == SCHED_TACS2) {
		/* The printed guard: sparse jobs run the default. */
		uint32_t *perleaf = calloc(rt->snap->nnodes, sizeof(*perleaf));
		if (!perleaf)
			goto out;
		uint32_t sharing = 0, leaves = 0;
		for (uint32_t a = 0; a < j.H; a++)
			if (!perleaf[rt->eps[route_host_ep(rt, j.host[a])].leaf]++)
				leaves++;
		for (uint32_t a = 0; a < j.H; a++)
			if (perleaf[rt->eps[route_host_ep(rt, j.host[a])].leaf] > 1)
				sharing++;
		free(perleaf);
		double avg = leaves ? (double)j.H / leaves : 0;
		if (!sharing || avg < req->sparsity) {
			snprintf(s->note, sizeof(s->note),
				 "fallback=xor hosts_sharing_links=%u avg_hosts_per_leaf=%.2f sparsity=%.2f", sharing,
				 avg, req->sparsity);
			s->algo = SCHED_XOR;
		}
	}
	if (compact) {
		free(s->step_off);
		s->step_off = NULL;
		rc = build_compact(s, &j, req, threads, err);
		goto built;
	}
	switch (s->algo) {
	case SCHED_XOR:
		rc = build_xor(&b, j.P);
		break;
	case SCHED_ALLGATHER:
		rc = build_allgather(&b, j.P, req->k, err);
		break;
	case SCHED_TACS1:
	case SCHED_TACS2: {
		size_t nhf = 0;
		rc = build_tacs(s, &j, req, &hf, &nhf, err);
		if (!rc)
			rc = expand_hosts(&b, &j, hf, nhf);
		break;
	}
	case SCHED_OPT:
		task = malloc((size_t)j.P * sizeof(*task));
		rc = task ? build_opt(&b, &j, h, task, err) : AN_E_NOMEM;
		break;
	case SCHED_ROUTE:
		rc = build_route(&b, &j, req->cancel, err);
		break;
	case SCHED_KSHIFT:
	case SCHED_AGRING:
	case SCHED_RING:
		rc = shift_setup(s, &j, req->k);
		rc = rc ? rc : build_shifts(&b, j.P, s->ord, s->k);
		break;
	default:
		rc = fail(err, AN_E_INVAL, "unknown algorithm");
		break;
	}
	if (rc)
		goto out;
	rc = figures(s, &j, b.same, b.samecap, threads);
built:
	if (rc)
		goto out;
	if (sched_is_allgather(s->algo))
		s->bound_s_per_byte = job_ag_bound(&j);
	overlap(s, &j);
	if (s->algo == SCHED_ROUTE)
		route_or_opt(s, rt, h, req, threads);
	if (s->algo == SCHED_ROUTE)
		route_spread(s, &j);
	*out = s;
	s = NULL;
out:
	if (rc == AN_E_NOMEM)
		fail(err, rc, "no memory for a %u-rank schedule", req->nranks);
	sched_free(s);
	free(hf);
	free(task);
	free(b.same);
	job_free(&j);
	return rc;
}

/* ---- the checker --------------------------------------------------------------- */

int sched_check(const struct sched *s, char err[AN_ERR_LEN])
{
	uint32_t P = s->nranks;
	size_t bits = (size_t)P * P;
	uint8_t *seen = calloc(bits / 8 + 1, 1);
	uint32_t *ss = malloc(((size_t)P + 1) * sizeof(*ss));
	uint32_t *rs = malloc(((size_t)P + 1) * sizeof(*rs));
	int rc = AN_E_NOMEM, needmulti = 0;
	size_t count = 0;
	if (!seen || !ss || !rs) {
		fail(err, rc, "no memory");
		goto out;
	}
	memset(ss, 0xff, (size_t)P * sizeof(*ss));
	memset(rs, 0xff, (size_t)P * sizeof(*rs));
	/* allgather: seen[r][o] = rank r holds block o (own block from the start) */
	if (s->blk)
		for (uint32_t r = 0; r < P; r++)
			seen[((size_t)r * P + r) / 8] |= (uint8_t)(1u << (((size_t)r * P + r) % 8));
	rc = AN_E_CHECK;
	if (s->step_off[0] != 0) {
		fail(err, rc, "step 0 does not start at flow 0");
		goto out;
	}
	for (uint32_t st = 0; st < s->nsteps; st++) {
		uint32_t lo = s->step_off[st], hi = s->step_off[st + 1];
		if (hi < lo) {
			fail(err, rc, "step %u: bad offsets", st);
			goto out;
		}
		for (uint32_t f = lo; f < hi; f++) {
			uint32_t a = s->src[f], b = s->dst[f];
			if (a >= P || b >= P || a == b) {
				fail(err, rc, "step %u: flow %u -> %u out of range or to itself", st, a, b);
				goto out;
			}
			if (ss[a] == st || rs[b] == st)
				needmulti = 1;
			ss[a] = st;
			rs[b] = st;
			size_t k;
			if (s->blk) {
				uint32_t o = s->blk[f];
				if (o >= P) {
					fail(err, rc, "step %u: block %u out of range", st, o);
					goto out;
				}
				/* the sender must hold it before this step: blocks received
				 * in this step are marked after the step (bit 2 pass below). */
				size_t ka = (size_t)a * P + o;
				if (!(seen[ka / 8] & (1u << (ka % 8)))) {
					fail(err, rc, "step %u: rank %u forwards block %u it does not hold", st, a, o);
					goto out;
				}
				k = (size_t)b * P + o;
			} else {
				k = (size_t)a * P + b;
			}
			if (seen[k / 8] & (1u << (k % 8))) {
				fail(err, rc, "step %u: %s %u -> %u twice", st, s->blk ? "block to rank" : "pair",
				     s->blk ? s->blk[f] : a, b);
				goto out;
			}
			count++;
		}
		/* mark after the step, so that a block cannot be forwarded in the step it arrives */
		for (uint32_t f = lo; f < hi; f++) {
			size_t k = s->blk ? (size_t)s->dst[f] * P + s->blk[f] : (size_t)s->src[f] * P + s->dst[f];
			if (seen[k / 8] & (1u << (k % 8))) {
				fail(err, rc, "step %u: %u -> %u twice in one step", st, s->src[f], s->dst[f]);
				goto out;
			}
			seen[k / 8] |= (uint8_t)(1u << (k % 8));
		}
	}
	if (count != (size_t)P * (P - 1)) {
		fail(err, rc, "%zu transfers, a complete exchange of %u ranks has %zu", count, P, (size_t)P * (P - 1));
		goto out;
	}
	if (needmulti && !s->multi) {
		fail(err, rc, "a rank sends or receives twice in one step but multi=0");
		goto out;
	}
	if (!needmulti && s->multi) {
		fail(err, rc, "multi=1 but no rank sends or receives twice in a step");
		goto out;
	}
	rc = AN_OK;
out:
	free(seen);
	free(ss);
	free(rs);
	return rc;
}

double sched_time(const struct sched *s, uint64_t bytes)
{
	double t = 0, bw = 0;
	for (uint32_t st = 0; st < s->nsteps; st++) {
		const struct sched_fig *fg = &s->fig[st];
		if (fg->unrated)
			return -1;
		if (fg->flows) {
			bw += fg->s_per_byte * (double)bytes;
			t += fg->s_per_byte > 0 ? cost_route_latency(fg->max_hops) : 0;
		}
	}
	if (s->sim_s_per_byte > 0)
		bw = s->sim_s_per_byte * (double)bytes;
	return t + bw;
}

/* ---- predictions at a block size (sched_job) ------------------------------------- */

struct sched_job {
	struct job j;
};

int sched_job_new(const struct route_tab *rt, uint32_t nranks, const uint32_t *rank_host, struct sched_job **out,
		  char err[AN_ERR_LEN])
{
	*out = NULL;
	if (!rt || !rank_host || nranks < 1 || nranks > SCHED_RANKS_MAX)
		return fail(err, AN_E_INVAL, "a job of 1 to %d ranks", SCHED_RANKS_MAX);
	struct sched_job *sj = calloc(1, sizeof(*sj));
	if (!sj)
		return fail(err, AN_E_NOMEM, "no memory for a %u-rank job", nranks);
	struct sched_req req = { .nranks = nranks, .rank_host = rank_host };
	int rc = job_build(&sj->j, rt, &req, err);
	if (rc) {
		job_free(&sj->j);
		free(sj);
		return rc;
	}
	*out = sj;
	return AN_OK;
}

void sched_job_free(struct sched_job *j)
{
	if (!j)
		return;
	job_free(&j->j);
	free(j);
}

int sched_job_time(const struct sched_job *sj, uint32_t nsteps, const uint32_t *step_off, const uint32_t *src,
		   const uint32_t *dst, const uint32_t *mult, double block, uint32_t window, double *seconds,
		   char err[AN_ERR_LEN])
{
	const struct job *j = &sj->j;
	uint64_t F = step_off[nsteps];
	*seconds = -1;
	if (F > COST_SIM_FLOWS_MAX + (uint64_t)j->P)
		return fail(err, AN_E_RANGE, "%llu flows: more than the simulation takes (%u)", (unsigned long long)F,
			    COST_SIM_FLOWS_MAX + j->P);
	struct cost_sim in = { .nranks = j->P, .nsteps = nsteps, .ncables = j->nlinks, .step_off = step_off,
			       .src = src, .dst = dst, .bps = j->bps, .route = sim_route, .ctx = j,
			       .exact = F <= COST_SIM_EXACT_FLOWS_MAX, .block = block, .mult = mult,
			       .window = window };
	return cost_sim_run(&in, seconds, err);
}

int sched_job_sched_time(const struct sched_job *sj, const struct sched *s, double block, uint32_t window,
			 double *seconds, char err[AN_ERR_LEN])
{
	struct sched *e = NULL;
	const struct sched *x = s;
	*seconds = -1;
	if (s->nranks != sj->j.P)
		return fail(err, AN_E_INVAL, "a schedule of %u ranks on a job of %u", s->nranks, sj->j.P);
	if ((uint64_t)s->nranks * (s->nranks - 1) > COST_SIM_FLOWS_MAX)
		return fail(err, AN_E_RANGE, "%u ranks: more than the simulation takes", s->nranks);
	if (s->compact) {
		int rc = sched_expand(s, &e, err);
		if (rc)
			return rc;
		x = e;
	}
	int rc = sched_job_time(sj, x->nsteps, x->step_off, x->src, x->dst, NULL, block, window, seconds, err);
	sched_free(e);
	return rc;
}

/* ---- the compact (host-level) form ------------------------------------------------ */

/* One run of a rank step: w flows from ranks of job host a to ranks of b. */
struct crun {
	uint32_t a, b, w;
};

/* Where a compact rank step comes from: TACS host step h (NONE: the
 * intra-host step y) and its substep y; XOR and ALLGATHER need neither. */
struct cplan {
	uint32_t *hstep, *y;
	uint32_t *shift;  /* RING, AGRING, KSHIFT: each step's shift of positions (shift_plan's d) */
	uint8_t *same;  /* figures equal the previous step's (expand_hosts' rule) */
};

static inline uint32_t c_nr(const struct job *j, uint32_t a)
{
	return j->hrank_off[a + 1] - j->hrank_off[a];
}

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
	uint32_t *load, *touched, *outst, *inst;
	uint64_t *lastp;
	uint8_t *shared;
	struct crun *run;
};

/* figures() of one step from its runs. */
static void c_fig(const struct job *j, const struct crun *run, uint32_t n, struct cscratch *w, struct sched_fig *fg)
{
	uint32_t nt = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = run[i].a, b = run[i].b;
		fg->flows += run[i].w;
		if (a == b)
			continue;
		uint32_t nl;
		const uint32_t *l = job_route(j, a, b, &nl);
		if (nl > fg->max_hops)
			fg->max_hops = nl;
		uint64_t pid = (uint64_t)a * j->H + b + 1;
		for (uint32_t k = 0; k <= nl; k++) {
			uint32_t id = k ? l[k - 1] : j->cable[a];
			if (!w->load[id])
				w->touched[nt++] = id;
			else if (w->lastp[id] != pid)
				w->shared[id] = 1;
			w->lastp[id] = pid;
			w->load[id] += run[i].w;
		}
	}
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t id = w->touched[i], v = w->load[id];
		if (v > fg->maxload)
			fg->maxload = v;
		if (!j->bps[id])
			fg->unrated = 1;
		else if ((double)v * 8.0 / (double)j->bps[id] > fg->s_per_byte)
			fg->s_per_byte = (double)v * 8.0 / (double)j->bps[id];
		if (w->shared[id]) {
			fg->conflicts++;
			fg->fabric_conflicts += j->fabric[id];
		}
		w->load[id] = 0;
		w->lastp[id] = 0;
		w->shared[id] = 0;
	}
}

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
			.load = calloc((size_t)nlinks + 1, sizeof(uint32_t)),
			.touched = malloc(((size_t)nlinks + 1) * sizeof(uint32_t)),
			.outst = calloc((size_t)H + 1, sizeof(uint32_t)),
			.inst = calloc((size_t)H + 1, sizeof(uint32_t)),
			.lastp = calloc((size_t)nlinks + 1, sizeof(uint64_t)),
			.shared = calloc((size_t)nlinks + 1, 1),
			.run = malloc(((size_t)nrun + 1) * sizeof(struct crun)),
		};
		int ok = w.load && w.touched && w.outst && w.inst && w.lastp && w.shared && w.run;
		if (!ok) {
#pragma omp atomic write
			rc = AN_E_NOMEM;
		}
#pragma omp for schedule(dynamic, 8)
		for (uint32_t st = 0; st < s->nsteps; st++) {
			if (!ok || (pl->same && pl->same[st]))
				continue;
			uint32_t n = c_runs(s, j, pl, st, w.run, w.outst, w.inst, &multi);
			c_fig(j, w.run, n, &w, &s->fig[st]);
		}
		free(w.load);
		free(w.touched);
		free(w.outst);
		free(w.inst);
		free(w.lastp);
		free(w.shared);
		free(w.run);
	}
	for (uint32_t st = 1; pl->same && st < s->nsteps; st++)
		if (pl->same[st])
			s->fig[st] = s->fig[st - 1];
	s->multi = multi;
	return rc;
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

/* sched_build's compact branch: s->algo is the one to run (not OPT). */
static int build_compact(struct sched *s, const struct job *j, const struct sched_req *req, int threads,
			 char err[AN_ERR_LEN])
{
	struct cplan pl = { 0 };
	struct hflow *hf = NULL;
	size_t nhf = 0;
	uint32_t P = j->P;
	int rc = AN_OK;
	s->compact = 1;
	s->nhosts = j->H;
	s->rank_jhost = malloc((size_t)P * sizeof(uint32_t));
	if (!s->rank_jhost)
		return AN_E_NOMEM;
	memcpy(s->rank_jhost, j->jh, (size_t)P * sizeof(uint32_t));
	if (s->algo == SCHED_ALLGATHER) {
		unsigned k = req->k;
		if (!k) {
			k = 8;
			while (k > 1 && (P % k || k > P))
				k /= 2;
		}
		if (!k || (k & (k - 1)) || P % k)
			return fail(err, AN_E_NOTAPPLIC,
				    "kPrefix needs a partition size k that is a power of two dividing the %u ranks (k=%u)",
				    P, k);
		s->k = k;
	}
	if (s->algo == SCHED_KSHIFT || s->algo == SCHED_AGRING || s->algo == SCHED_RING) {
		uint32_t *h = malloc(((size_t)P + 1) * sizeof(*h));
		pl.shift = malloc(((size_t)P + 1) * sizeof(*pl.shift));
		rc = h && pl.shift ? shift_setup(s, j, req->k) : AN_E_NOMEM;
		if (!rc)
			shift_plan(P, s->k, pl.shift, h);
		s->nsteps = P - 1;
		free(h);
	} else if (s->algo == SCHED_XOR || s->algo == SCHED_ALLGATHER) {
		s->nsteps = P - 1;
	} else {
		rc = build_tacs(s, j, req, &hf, &nhf, err);
		if (!rc)
			rc = c_tacs(s, j, hf, nhf, &pl);
	}
	if (!rc)
		rc = c_figures(s, j, &pl, threads);
	free(hf);
	free(pl.hstep);
	free(pl.y);
	free(pl.same);
	free(pl.shift);
	return rc;
}

/* ---- expansion of the compact form (sched_expand) ---------------------------------- */

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

int sched_expand(const struct sched *c, struct sched **out, char err[AN_ERR_LEN])
{
	if (!c || !out || !c->compact || c->nranks < 2)
		return fail(err, AN_E_INVAL, "not a compact schedule");
	uint32_t P = c->nranks, *off = NULL, *rk = NULL;
	struct sched *s = calloc(1, sizeof(*s));
	struct sbuild b = { .s = s, .scap = 64 };
	int rc = AN_E_NOMEM;
	if (!s || !(s->step_off = calloc(65, sizeof(uint32_t))))
		goto out;
	s->algo = c->algo;
	s->nranks = P;
	if (sb_alloc(&b, (size_t)P * (P - 1)))
		goto out;
	if (c->algo == SCHED_XOR) {
		rc = build_xor(&b, P);
	} else if (c->algo == SCHED_ALLGATHER) {
		char e2[AN_ERR_LEN];
		rc = build_allgather(&b, P, c->k, e2);
	} else if (c->ord) {
		s->k = c->k;
		s->ord = malloc((size_t)P * sizeof(*s->ord));
		rc = s->ord ? AN_OK : AN_E_NOMEM;
		if (!rc) {
			memcpy(s->ord, c->ord, (size_t)P * sizeof(*s->ord));
			rc = build_shifts(&b, P, s->ord, s->k);
		}
	} else {
		rc = x_hosts(c, &off, &rk);
		if (!rc)
			rc = x_tacs(&b, c, off, rk);
	}
	if (!rc && s->nsteps != c->nsteps)
		rc = fail(err, AN_E_CHECK, "expansion has %u steps, the compact form %u", s->nsteps, c->nsteps);
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
		fail(err, rc, "no memory for a %u-rank schedule", P);
	sched_free(s);
	free(off);
	free(rk);
	return rc;
}
