/*
 * test_place_search.c - pick's exact search (place_search.c) against brute
 * force on thousands of random instances: leaves of 1-6 hosts, entry codes
 * drawn from each leaf's few incoming links (twins, failed walks and
 * source-dependent codes included), random pods and bounds on leaves and
 * pods. For each: every subset of want hosts is enumerated and its sharing
 * hosts counted from the definition (share.h: two hosts share when their
 * ingress sets from the set's other leaves meet); the search must find the
 * fewest sharing hosts, then the most free hosts on the leaves, with and
 * without a starting set, and say exactly whether a sharing-free set exists
 * on any leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "place_impl.h"
#include "testfab.h"

#define MAXH 18
#define MAXL 10

struct inst {
	uint32_t nf, nl, nlh, want, kmax, pmax, ncodes;
	uint32_t lhosts[MAXH], leaf_first[MAXL], leaf_n[MAXL], lf[MAXH], lpod[MAXL];
	uint32_t code[MAXH * MAXL];
};

/* Sharing hosts and free hosts on the leaves of the subset mask; leaves
 * and pods into *nl, *np. */
static uint32_t eval(const struct inst *x, uint32_t mask, uint32_t *fsum, uint32_t *nl, uint32_t *np)
{
	uint32_t lv = 0, pv = 0, nsh = 0;
	for (uint32_t i = 0; i < x->nf; i++)
		if (mask >> i & 1)
			lv |= 1u << x->lf[i], pv |= 1u << x->lpod[x->lf[i]];
	*nl = (uint32_t)__builtin_popcount(lv), *np = (uint32_t)__builtin_popcount(pv), *fsum = 0;
	for (uint32_t l = 0; l < x->nl; l++)
		if (lv >> l & 1)
			*fsum += x->leaf_n[l];
	for (uint32_t i = 0; i < x->nf; i++) {
		if (!(mask >> i & 1))
			continue;
		int sh = 0;
		for (uint32_t j = 0; j < x->nf && !sh; j++) {
			if (j == i || !(mask >> j & 1) || x->lf[j] != x->lf[i])
				continue;
			for (uint32_t a = 0; a < x->nl && !sh; a++)
				for (uint32_t b = 0; b < x->nl && !sh; b++) {
					uint32_t ci = x->code[i * x->nl + a], cj = x->code[j * x->nl + b];
					sh = (lv >> a & 1) && (lv >> b & 1) && a != x->lf[i] && b != x->lf[j] && ci != NONE32 &&
					     ci == cj;
				}
		}
		nsh += sh;
	}
	return nsh;
}

static void make(struct inst *x)
{
	memset(x, 0, sizeof(*x));
	x->nl = 1 + (uint32_t)(tf_rand() % 7);
	uint32_t npods = 1 + (uint32_t)(tf_rand() % 3), links[MAXL], base[MAXL], nc = 0;
	for (uint32_t l = 0; l < x->nl; l++) {
		uint32_t n = 1 + (uint32_t)(tf_rand() % 6);
		if (x->nf + n > 16)
			n = 16 - x->nf;
		if (!n) {
			x->nl = l;
			break;
		}
		x->leaf_first[l] = x->nf, x->leaf_n[l] = n, x->lpod[l] = (uint32_t)(tf_rand() % npods);
		links[l] = 1 + (uint32_t)(tf_rand() % 4), base[l] = nc, nc += links[l];
		for (uint32_t a = 0; a < n; a++)
			x->lhosts[x->nf] = x->nf, x->lf[x->nf] = l, x->nf++;
	}
	/* dense pods */
	uint32_t map[3] = { NONE32, NONE32, NONE32 }, np = 0;
	for (uint32_t l = 0; l < x->nl; l++) {
		if (map[x->lpod[l]] == NONE32)
			map[x->lpod[l]] = np++;
		x->lpod[l] = map[x->lpod[l]];
	}
	int same_src = tf_rand() % 3 == 0;   /* ftree-like: the same code from every source */
	for (uint32_t i = 0; i < x->nf; i++) {
		uint32_t A = x->lf[i], one = base[A] + (uint32_t)(tf_rand() % links[A]);
		int twin = i > x->leaf_first[A] && tf_rand() % 4 == 0;
		for (uint32_t l = 0; l < x->nl; l++) {
			uint32_t c = l == A ? NONE32 : same_src ? one : base[A] + (uint32_t)(tf_rand() % links[A]);
			if (l != A && tf_rand() % 10 == 0)
				c = NONE32;   /* a failed walk */
			x->code[i * x->nl + l] = twin ? x->code[(i - 1) * x->nl + l] : c;
		}
	}
	x->ncodes = nc, x->nlh = x->nf;
	x->want = 1 + (uint32_t)(tf_rand() % x->nf);
}

static struct psearch_in input(const struct inst *x)
{
	return (struct psearch_in){ .nf = x->nf, .nl = x->nl, .nlh = x->nlh, .lhosts = x->lhosts,
				    .leaf_first = x->leaf_first, .leaf_n = x->leaf_n, .lf = x->lf, .lpod = x->lpod,
				    .code = x->code, .ncodes = x->ncodes, .want = x->want, .kmax = x->kmax,
				    .pmax = x->pmax, .budget = 1L << 22 };
}

int main(void)
{
	tf_rng_state = 34;
	unsigned cases = 0, bad = 0, badset = 0, badinc = 0, badex = 0, incomplete = 0, sharing = 0, none = 0, feasible;
	for (unsigned r = 0; r < 2500; r++) {
		struct inst x;
		make(&x);
		/* the fewest leaves that hold want, then bounds at or above them */
		uint32_t bl = UINT32_MAX, bp = UINT32_MAX;
		int any_free = 0;
		for (uint32_t m = 0; m < (1u << x.nf); m++) {
			if ((uint32_t)__builtin_popcount(m) != x.want)
				continue;
			uint32_t f, nl, np, s = eval(&x, m, &f, &nl, &np);
			any_free |= s == 0;
			if (nl < bl || (nl == bl && np < bp))
				bl = nl, bp = np;
		}
		x.kmax = bl + (uint32_t)(tf_rand() % 2), x.pmax = bp + (uint32_t)(tf_rand() % 2);
		/* brute force within the bounds */
		uint32_t bs = UINT32_MAX, bf = 0, inc = 0;
		feasible = 0;
		for (uint32_t m = 0; m < (1u << x.nf); m++) {
			if ((uint32_t)__builtin_popcount(m) != x.want)
				continue;
			uint32_t f, nl, np, s = eval(&x, m, &f, &nl, &np);
			if (nl > x.kmax || np > x.pmax)
				continue;
			if (!feasible++ || tf_rand() % 8 == 0)
				inc = m;   /* a random feasible start */
			if (s < bs || (s == bs && f > bf))
				bs = s, bf = f;
		}
		cases++;
		sharing += bs > 0;
		none += !any_free;
		struct psearch_in in = input(&x);
		struct psearch_out o;
		uint32_t best[MAXH];
		for (int with = 0; with < 2; with++) {
			in.incumbent = with;
			if (with) {
				uint32_t k = 0;
				for (uint32_t i = 0; i < x.nf; i++)
					if (inc >> i & 1)
						best[k++] = i;
			}
			if (place_search(&in, best, &o))
				tf_die("search");
			incomplete += !o.complete;
			if (!o.found || o.sharing != bs || o.fsum != bf)
				*(with ? &badinc : &bad) += 1;
			uint32_t m = 0, f, nl, np;
			for (uint32_t k = 0; k < x.want && o.found; k++)
				m |= 1u << best[k];
			if (o.found && ((uint32_t)__builtin_popcount(m) != x.want || eval(&x, m, &f, &nl, &np) != o.sharing ||
					f != o.fsum || nl > x.kmax || np > x.pmax))
				badset++;
		}
		in.incumbent = 0, in.exist = 1, in.kmax = x.nl, in.pmax = x.nl;
		if (place_search(&in, best, &o))
			tf_die("search");
		incomplete += !o.complete;
		badex += o.found != any_free;
	}
	tf_check(!bad && !incomplete, "search: the fewest sharing hosts, then the most free hosts on the leaves, as brute "
		 "force's on %u random instances (%u where sharing is unavoidable; %u differ, %u not ended)", cases, sharing,
		 bad, incomplete);
	tf_check(!badinc, "search from a starting set: the same optimum (%u differ)", badinc);
	tf_check(!badset, "search: the answered set has the figures it reports, within the bounds (%u wrong)", badset);
	tf_check(!badex, "search: a sharing-free set on any leaves exists exactly when brute force finds one (%u of %u "
		 "without; %u wrong)", none, cases, badex);
	return tf_failures != 0;
}
