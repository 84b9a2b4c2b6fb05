/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_balance.c - which hosts of each chosen leaf a pick takes (step 4 of
 * docs/protocol.md's `pick`; place.h's place_pick_balance).
 *
 * Routes are by destination, so every packet to host j that comes from
 * another leaf L follows the LFT walk from L's switch to j's LID, whatever
 * host of L sent it; and two hosts of one leaf send along the same routes.
 * For a job's all-to-all (one block per ordered pair) the load on every
 * switch-to-switch cable is therefore the sum over its hosts j of j's
 * "profile": the walks from every other chosen leaf L to j, each weighted
 * by the number of job hosts on L. Trading host j for j' on the same leaf
 * changes j's profile for j''s and nothing else, so with the leaves and
 * their counts fixed (the pick's promises) the choice is a balancing of
 * profiles, judged as cost.h judges a phase: the busiest cable's load over
 * its rate. A greedy fill spreads the profiles (most distinct upper
 * switches per leaf, whatever routing engine or tree depth made them),
 * then swaps relieve the busiest cable while any can. The walks are the
 * real ones, so 3-level trees (the route down depends on the source pod),
 * failed links and mixed rates need nothing special; a host whose walk
 * from some chosen leaf fails is taken last.
 */
#include "place_impl.h"

#include <stdlib.h>
#include <string.h>

#include "rate.h"

/* Swaps tried at most: each costs two profiles' length. */
#define BAL_SWAP_BUDGET 200000L
/* Relative slack under which two loads count as equal (rates are doubles). */
#define BAL_EPS 1e-9

struct bal {
	const struct route_tab *rt;
	size_t nc;             /* candidates: free hosts on the chosen leaves */
	uint32_t *cand;        /* [nc] host index */
	uint32_t *cleaf;       /* [nc] leaf number (0..nl) */
	uint32_t *pstart;      /* [nc + 1] profile of candidate c: pcode/pw[pstart[c] ..) */
	uint32_t *pcode;
	uint32_t *pw;
	uint32_t *fails;       /* [nc] source leaves whose walk to it fails */
	uint8_t *chosen;       /* [nc] */
	uint32_t nl;
	uint32_t *lsw;         /* [nl] leaf switch index */
	uint32_t *lcount;      /* [nl] hosts the job takes on it */
	uint32_t *lfirst;      /* [nl + 1] its candidates: lfirst[l] .. lfirst[l + 1) */
	uint32_t ncodes;
	double *load;          /* [ncodes] weight of the chosen profiles, over the rate */
	double *inv;           /* [ncodes] 1 / rate (relative) */
};

static void bal_free(struct bal *b)
{
	free(b->cand), free(b->cleaf), free(b->pstart), free(b->pcode), free(b->pw), free(b->fails);
	free(b->chosen), free(b->lsw), free(b->lcount), free(b->lfirst), free(b->load), free(b->inv);
}

static uint32_t bal_code(const struct route_tab *rt, uint32_t sw, uint8_t port)
{
	return rt->pt_off[sw] + port;
}

/* The walk from leaf switch sw to host's LID: its cables' codes appended
 * to pcode/pw with weight w, into the arrays at *k (cap entries). 0, or -1
 * if the walk fails. */
static int bal_walk(struct bal *b, uint32_t sw, uint32_t host, uint32_t w, size_t *k, size_t cap)
{
	const struct route_tab *rt = b->rt;
	uint32_t ep = route_host_ep(rt, host);
	uint16_t dlid = rt->eps[ep].lid;
	for (uint32_t step = 0; step <= rt->nsw; step++) {
		uint8_t port;
		uint32_t next;
		int rc = route_step(rt, sw, dlid, ep, &port, &next);
		if (rc < 0)
			return -1;
		if (*k < cap) {
			b->pcode[*k] = bal_code(rt, sw, port);
			b->pw[*k] = w;
		}
		(*k)++;
		if (rc == ROUTE_STEP_DONE)
			return 0;
		sw = next;
	}
	return -1;
}

/* Candidate c's entries from k0 to *k with one entry per cable, weights
 * summed: walks from several leaves often end on the same cables (the
 * spine's cable down to the leaf), and a cable counted apart would look
 * less loaded than it will be. seen/at: [ncodes] scratch. */
static void bal_merge(struct bal *b, uint32_t c, size_t k0, size_t *k, uint32_t *seen, uint32_t *at)
{
	size_t w = k0;
	for (size_t q = k0; q < *k; q++) {
		uint32_t code = b->pcode[q];
		if (seen[code] == c + 1) {
			b->pw[at[code]] += b->pw[q];
			continue;
		}
		seen[code] = c + 1;
		at[code] = (uint32_t)w;
		b->pcode[w] = code;
		b->pw[w++] = b->pw[q];
	}
	*k = w;
}

/* Every candidate's profile, in two passes (count, then fill and merge). */
static int bal_profiles(struct bal *b)
{
	size_t cap = 0, k = 0;
	uint32_t *seen = calloc(b->ncodes, sizeof(*seen)), *at = malloc(b->ncodes * sizeof(*at));
	if (!seen || !at) {
		free(seen), free(at);
		return AN_E_NOMEM;
	}
	for (int pass = 0; pass < 2; pass++) {
		k = 0;
		for (size_t c = 0; c < b->nc; c++) {
			b->pstart[c] = (uint32_t)k;
			b->fails[c] = 0;
			for (uint32_t l = 0; l < b->nl; l++) {
				if (l == b->cleaf[c] || !b->lcount[l])
					continue;
				size_t k0 = k;
				if (bal_walk(b, b->lsw[l], b->cand[c], b->lcount[l], &k, cap) < 0) {
					b->fails[c]++;
					k = k0;
				}
			}
			if (pass == 1)
				bal_merge(b, (uint32_t)c, b->pstart[c], &k, seen, at);
		}
		b->pstart[b->nc] = (uint32_t)k;
		if (pass == 0) {
			cap = k;
			b->pcode = malloc((k + 1) * sizeof(*b->pcode));
			b->pw = malloc((k + 1) * sizeof(*b->pw));
			if (k > UINT32_MAX || !b->pcode || !b->pw) {
				free(seen), free(at);
				return k > UINT32_MAX ? AN_E_RANGE : AN_E_NOMEM;
			}
		}
	}
	free(seen), free(at);
	return AN_OK;
}

/* 1 / rate of every switch port's cable, relative to the fastest; all 1
 * when any loaded cable's rate is unknown (then loads are compared as
 * counts, which is what the cost model cannot do either). */
static int bal_rates(struct bal *b)
{
	const struct route_tab *rt = b->rt;
	b->inv = malloc(b->ncodes * sizeof(*b->inv));
	b->load = calloc(b->ncodes, sizeof(*b->load));
	if (!b->inv || !b->load)
		return AN_E_NOMEM;
	for (uint32_t c = 0; c < b->ncodes; c++)
		b->inv[c] = 0;
	uint64_t top = 0;
	int unknown = 0;
	for (size_t q = 0; q < b->pstart[b->nc]; q++) {
		uint32_t c = b->pcode[q];
		if (b->inv[c] != 0)
			continue;
		uint32_t lo = 0, hi = rt->nsw;   /* the switch whose ports hold code c */
		while (hi - lo > 1) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (rt->pt_off[mid] <= c)
				lo = mid;
			else
				hi = mid;
		}
		uint32_t sw = lo;
		uint64_t bps = rate_cable_bps(rt->snap, rt->sw_node[sw], c - rt->pt_off[sw]);
		unknown |= bps == 0;
		b->inv[c] = bps ? (double)bps : 1;
		if (bps > top)
			top = bps;
	}
	for (uint32_t c = 0; c < b->ncodes; c++)
		b->inv[c] = unknown || b->inv[c] == 0 ? 1 : (double)top / b->inv[c];
	return AN_OK;
}

static void bal_add(struct bal *b, size_t c, int sign)
{
	for (uint32_t q = b->pstart[c]; q < b->pstart[c + 1]; q++)
		b->load[b->pcode[q]] += sign * (double)b->pw[q] * b->inv[b->pcode[q]];
	b->chosen[c] = sign > 0;
}

/* What adding candidate c does: the highest load it leaves on its cables,
 * and how much the sum of squares grows (the spread). */
static void bal_eval(const struct bal *b, size_t c, double *top, double *dsq)
{
	*top = 0, *dsq = 0;
	for (uint32_t q = b->pstart[c]; q < b->pstart[c + 1]; q++) {
		double w = b->pw[q] * b->inv[b->pcode[q]], x = b->load[b->pcode[q]];
		if (x + w > *top)
			*top = x + w;
		*dsq += 2 * x * w + w * w;
	}
}

/* Greedy fill: round by round, each leaf that still needs hosts takes the
 * candidate that raises the busiest cable least, then the spread least;
 * hosts with failing walks last; ties by position (hierarchy order). */
static void bal_greedy(struct bal *b)
{
	uint32_t most = 0;
	double cur = 0;
	for (uint32_t l = 0; l < b->nl; l++)
		if (b->lcount[l] > most)
			most = b->lcount[l];
	for (uint32_t r = 0; r < most; r++)
		for (uint32_t l = 0; l < b->nl; l++) {
			if (b->lcount[l] <= r)
				continue;
			long best = -1;
			double bt = 0, bd = 0;
			uint32_t bf = 0;
			for (uint32_t c = b->lfirst[l]; c < b->lfirst[l + 1]; c++) {
				if (b->chosen[c])
					continue;
				double t, d;
				bal_eval(b, c, &t, &d);
				if (t < cur)
					t = cur;
				if (best < 0 || b->fails[c] < bf ||
				    (b->fails[c] == bf && (t < bt * (1 - BAL_EPS) ||
							   (t <= bt * (1 + BAL_EPS) && d < bd * (1 - BAL_EPS))))) {
					best = c, bt = t, bd = d, bf = b->fails[c];
				}
			}
			bal_add(b, (size_t)best, 1);
			if (bt > cur)
				cur = bt;
		}
}

static double bal_max(const struct bal *b, uint32_t *at)
{
	double m = 0;
	*at = NONE32;
	for (uint32_t c = 0; c < b->ncodes; c++)
		if (b->load[c] > m)
			m = b->load[c], *at = c;
	return m;
}

static int bal_touches(const struct bal *b, size_t c, uint32_t code)
{
	for (uint32_t q = b->pstart[c]; q < b->pstart[c + 1]; q++)
		if (b->pcode[q] == code)
			return 1;
	return 0;
}

/* The highest load on the cables of x and y once x is swapped for y. */
static double bal_swap_top(struct bal *b, size_t x, size_t y)
{
	bal_add(b, x, -1);
	double top, d;
	bal_eval(b, y, &top, &d);
	for (uint32_t q = b->pstart[x]; q < b->pstart[x + 1]; q++)
		if (b->load[b->pcode[q]] > top)
			top = b->load[b->pcode[q]];
	bal_add(b, x, 1);
	return top;
}

/* Local search: while a swap within a leaf takes load off the busiest
 * cable without loading any cable of the two up to its level, make the
 * best such swap. Every swap lowers (busiest load, cables at it), so it
 * ends; the budget bounds its time. Returns the swaps made. */
static uint32_t bal_swaps(struct bal *b)
{
	long budget = BAL_SWAP_BUDGET;
	uint32_t made = 0, at;
	double m;
	while ((m = bal_max(b, &at)) > 0 && budget > 0) {
		long bx = -1, by = -1;
		double bt = m * (1 - BAL_EPS);
		for (size_t x = 0; x < b->nc && budget > 0; x++) {
			if (!b->chosen[x] || b->fails[x] || !bal_touches(b, x, at))
				continue;
			uint32_t l = b->cleaf[x];
			for (uint32_t y = b->lfirst[l]; y < b->lfirst[l + 1] && budget > 0; y++) {
				if (b->chosen[y] || b->fails[y])
					continue;
				budget--;
				double t = bal_swap_top(b, x, y);
				if (t < bt)
					bt = t, bx = (long)x, by = (long)y;
			}
		}
		if (bx < 0)
			break;
		bal_add(b, (size_t)bx, -1);
		bal_add(b, (size_t)by, 1);
		made++;
	}
	return made;
}

static int bal_cmp32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Leaves of hosts[], their counts, and the candidates (free hosts on them,
 * by host index) grouped by leaf. */
static int bal_setup(struct bal *b, const uint32_t *free_hosts, size_t nfree, const uint32_t *hosts, size_t n)
{
	const struct route_tab *rt = b->rt;
	uint32_t *lof = malloc((rt->nsw + 1) * sizeof(*lof));
	b->lsw = malloc((n + 1) * sizeof(*b->lsw));
	b->lcount = calloc(n + 1, sizeof(*b->lcount));
	b->lfirst = calloc(n + 2, sizeof(*b->lfirst));
	b->cand = malloc((nfree + 1) * sizeof(*b->cand));
	b->cleaf = malloc((nfree + 1) * sizeof(*b->cleaf));
	b->pstart = malloc((nfree + 1) * sizeof(*b->pstart));
	b->fails = malloc((nfree + 1) * sizeof(*b->fails));
	b->chosen = calloc(nfree + 1, 1);
	if (!lof || !b->lsw || !b->lcount || !b->lfirst || !b->cand || !b->cleaf || !b->pstart || !b->fails ||
	    !b->chosen) {
		free(lof);
		return AN_E_NOMEM;
	}
	for (uint32_t s = 0; s < rt->nsw; s++)
		lof[s] = NONE32;
	for (size_t i = 0; i < n; i++) {
		uint32_t sw = place_host_leaf_sw(rt, hosts[i]);
		if (sw == ROUTE_NONE) {
			free(lof);
			return AN_E_RANGE;   /* a host off the leaves: nothing to balance */
		}
		if (lof[sw] == NONE32) {
			lof[sw] = b->nl;
			b->lsw[b->nl++] = sw;
		}
		b->lcount[lof[sw]]++;
	}
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, free_hosts[i]);
		if (sw != ROUTE_NONE && lof[sw] != NONE32)
			b->lfirst[lof[sw] + 1]++;
	}
	for (uint32_t l = 0; l < b->nl; l++)
		b->lfirst[l + 1] += b->lfirst[l];
	uint32_t *fill = calloc(b->nl + 1, sizeof(*fill));
	if (!fill) {
		free(lof);
		return AN_E_NOMEM;
	}
	for (size_t i = 0; i < nfree; i++) {
		uint32_t sw = place_host_leaf_sw(rt, free_hosts[i]);
		if (sw == ROUTE_NONE || lof[sw] == NONE32)
			continue;
		uint32_t l = lof[sw], c = b->lfirst[l] + fill[l]++;
		b->cand[c] = free_hosts[i];
		b->cleaf[c] = l;
	}
	b->nc = b->lfirst[b->nl];
	for (uint32_t l = 0; l < b->nl; l++)   /* the free list's order must not matter */
		qsort(b->cand + b->lfirst[l], b->lfirst[l + 1] - b->lfirst[l], sizeof(*b->cand), bal_cmp32);
	free(fill);
	free(lof);
	b->ncodes = rt->nsw ? rt->pt_off[rt->nsw - 1] + rt->snap->nodes[rt->sw_node[rt->nsw - 1]].nports + 1 : 1;
	return AN_OK;
}

int place_pick_balance(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, uint32_t *hosts,
		       size_t n, uint32_t *swaps)
{
	struct bal b = { .rt = rt };
	*swaps = 0;
	int rc = bal_setup(&b, free_hosts, nfree, hosts, n);
	/* The profiles are a walk per (candidate, other leaf): a wide pick
	 * from a large free list (4,096 free hosts over 1,568 leaves at k=56)
	 * would hold some 200 MB of them. */
	if (rc == AN_OK && (uint64_t)b.nc * b.nl > PLACE_BALANCE_CELLS_MAX)
		rc = AN_E_RANGE;
	if (rc == AN_OK)
		rc = bal_profiles(&b);
	if (rc == AN_OK)
		rc = bal_rates(&b);
	if (rc == AN_OK) {
		bal_greedy(&b);
		*swaps = bal_swaps(&b);
		size_t k = 0;
		for (size_t c = 0; c < b.nc; c++)
			if (b.chosen[c])
				hosts[k++] = b.cand[c];
		rc = k == n ? AN_OK : AN_E_RANGE;
	}
	bal_free(&b);
	return rc;
}

int place_pick_even(const struct route_tab *rt, const uint32_t *free_hosts, size_t nfree, uint32_t *hosts, size_t n)
{
	struct bal b = { .rt = rt };
	int rc = bal_setup(&b, free_hosts, nfree, hosts, n);
	if (rc == AN_OK) {
		/* water-filling: one more host to every leaf with room, round by
		 * round, until n; the leaves' candidates are sorted by host index */
		for (uint32_t l = 0; l < b.nl; l++)
			b.lcount[l] = 0;
		size_t k = 0;
		while (k < n) {
			size_t before = k;
			for (uint32_t l = 0; l < b.nl && k < n; l++)
				if (b.lfirst[l] + b.lcount[l] < b.lfirst[l + 1])
					b.lcount[l]++, k++;
			if (k == before)
				break;
		}
		k = 0;
		for (uint32_t l = 0; l < b.nl; l++)
			for (uint32_t t = 0; t < b.lcount[l]; t++)
				hosts[k++] = b.cand[b.lfirst[l] + t];
		rc = k == n ? AN_OK : AN_E_RANGE;
	}
	bal_free(&b);
	return rc;
}
