/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_search.c - pick's exact search (place_impl.h): among the sets of
 * `want` free hosts on at most kmax leaves and pmax pods, the fewest hosts
 * sharing a link just above the leaves, then the most free hosts on the
 * set's leaves; or whether any set shares nothing.
 *
 * A branch and bound over the hosts, leaf by leaf. It is exact because:
 *   - sharing only grows with a set (ingress sets grow with its leaves,
 *     and a code held by two hosts stays held), so the sharing hosts of a
 *     partial set bound every set grown from it;
 *   - a partial set can still reach want only with the hosts left on its
 *     current leaf and those of as many later leaves as kmax leaves room
 *     for (the fullest of them): a bound;
 *   - hosts of one leaf whose entry codes from every free leaf are the
 *     same are interchangeable, so of such twins only prefixes are tried.
 * The state is kept incrementally (an undo log): adding a host costs the
 * set's size plus its leaves, so the search visits millions of sets in
 * well under a second; `budget` bounds the sets visited (each at most
 * once: there are at most 2^nf).
 */
#include "place_impl.h"

#include <stdlib.h>
#include <string.h>

struct sr {
	const struct psearch_in *in;
	uint32_t kcap;          /* columns of ts */
	uint64_t *ts;           /* [(nl + 1) * kcap]: the r largest leaf_n among leaves g.. */
	uint32_t *dist;         /* exist: [nl * nl] distinct entry codes of leaf g's hosts from leaf l */
	uint32_t *cap;          /* exist: [nl] the most hosts of a leaf a sharing-free set grown
				 * from this one can hold (distinct codes from the set's leaves) */
	uint64_t *capsum;       /* exist: [(want + 1) * (nl + 1)] per depth: cap of leaves g.. added up */
	uint32_t *twin;         /* [nf] an earlier position on the same leaf with the same codes, or NONE32 */
	uint8_t *in_set;        /* [nf] */
	uint32_t *owner;        /* [ncodes] the first host holding a code, or NONE32 */
	uint8_t *multi;         /* [ncodes] two hosts or more hold it */
	uint8_t *shar;          /* [nf] sharing */
	uint32_t *lused;        /* [nl] chosen hosts per leaf */
	uint32_t *podused;      /* [npods] chosen leaves per pod */
	uint32_t *S, ns;        /* the set */
	uint32_t *src, nsrc;    /* its leaves */
	uint32_t npods;         /* its pods */
	uint64_t fsum;          /* free hosts on its leaves */
	uint32_t nshar;
	struct undo { uint32_t code, owner; uint8_t multi, kind; } *log;
	size_t nlog, caplog;
	/* the best so far */
	uint32_t *best, best_s;
	uint64_t best_f;
	int have, found;
	long budget;
};

static uint32_t code_of(const struct psearch_in *in, uint32_t i, uint32_t l)
{
	return in->code[(size_t)i * in->nl + l];
}

static void flag(struct sr *s, uint32_t j)
{
	if (s->shar[j])
		return;
	s->shar[j] = 1;
	s->nshar++;
	s->log[s->nlog++] = (struct undo){ j, 0, 0, 1 };
}

/* Host j now holds code c (from one more source leaf). */
static void hold(struct sr *s, uint32_t j, uint32_t c)
{
	if (c == NONE32)
		return;
	s->log[s->nlog++] = (struct undo){ c, s->owner[c], s->multi[c], 0 };
	if (s->owner[c] == NONE32) {
		s->owner[c] = j;
	} else if (s->owner[c] != j) {
		if (!s->multi[c]) {
			s->multi[c] = 1;
			flag(s, s->owner[c]);
		}
		flag(s, j);
	}
}

static void undo_to(struct sr *s, size_t mark)
{
	while (s->nlog > mark) {
		struct undo u = s->log[--s->nlog];
		if (u.kind == 2) {
			s->cap[u.code] = u.owner;
		} else if (u.kind) {
			s->shar[u.code] = 0;
			s->nshar--;
		} else {
			s->owner[u.code] = u.owner;
			s->multi[u.code] = u.multi;
		}
	}
}

/* Adds position i (its leaf has room under kmax and pmax: checked by the
 * caller). */
static void add(struct sr *s, uint32_t i)
{
	const struct psearch_in *in = s->in;
	uint32_t l = in->lf[i];
	if (!s->lused[l]) {
		for (uint32_t a = 0; a < s->ns; a++)
			hold(s, s->S[a], code_of(in, s->S[a], l));
		for (uint32_t x = 0; in->exist && x < in->nl; x++) {   /* l is one of the set's leaves now */
			uint32_t d = s->dist[(size_t)x * in->nl + l];
			if (x != l && d < s->cap[x]) {
				s->log[s->nlog++] = (struct undo){ x, s->cap[x], 0, 2 };
				s->cap[x] = d;
			}
		}
		s->src[s->nsrc++] = l;
		s->npods += s->podused[in->lpod[l]]++ == 0;
		s->fsum += in->leaf_n[l];
	}
	for (uint32_t b = 0; b < s->nsrc; b++)
		if (s->src[b] != l)
			hold(s, i, code_of(in, i, s->src[b]));
	s->lused[l]++;
	s->S[s->ns++] = i;
	s->in_set[i] = 1;
}

static void drop(struct sr *s, uint32_t i, size_t mark)
{
	const struct psearch_in *in = s->in;
	uint32_t l = in->lf[i];
	undo_to(s, mark);
	s->in_set[i] = 0;
	s->ns--;
	if (--s->lused[l] == 0) {
		s->nsrc--;
		s->npods -= --s->podused[in->lpod[l]] == 0;
		s->fsum -= in->leaf_n[l];
	}
}

static uint64_t topsum(const struct sr *s, uint32_t g, uint32_t r)
{
	return s->ts[(size_t)g * s->kcap + (r < s->kcap ? r : s->kcap - 1)];
}

/* The set is complete: the best so far? */
static void complete(struct sr *s)
{
	const struct psearch_in *in = s->in;
	if (in->exist) {
		s->found = 1;
	} else if (!s->have || s->nshar < s->best_s || (s->nshar == s->best_s && s->fsum > s->best_f)) {
		memcpy(s->best, s->S, in->want * sizeof(*s->best));
		s->best_s = s->nshar, s->best_f = s->fsum, s->have = 1;
	}
}

/* 1 when nothing grown from the set can beat the best: more sharing, or
 * as much and no more free hosts reachable on at most kmax leaves. */
static int beaten(const struct sr *s, uint32_t g)
{
	if (s->in->exist)
		return s->nshar > 0;
	if (!s->have || s->nshar < s->best_s)
		return 0;
	return s->nshar > s->best_s || s->fsum + topsum(s, g + 1, s->in->kmax - s->nsrc) <= s->best_f;
}

/* Grows the set with positions from lhosts[t] on. */
static void grow(struct sr *s, uint32_t t)
{
	const struct psearch_in *in = s->in;
	if (s->ns == in->want) {
		complete(s);
		return;
	}
	uint64_t *cs = in->exist ? s->capsum + (size_t)s->ns * (in->nl + 1) : NULL;
	if (cs) {
		cs[in->nl] = 0;
		for (uint32_t g = in->nl; g-- > 0;)
			cs[g] = cs[g + 1] + (in->leaf_n[g] < s->cap[g] ? in->leaf_n[g] : s->cap[g]);
	}
	while (t < in->nlh && !s->found && s->budget >= 0) {
		uint32_t i = in->lhosts[t], g = in->lf[i];
		uint32_t end = in->leaf_first[g] + in->leaf_n[g];
		int used = s->lused[g] > 0;
		int newpod = !used && !s->podused[in->lpod[g]];
		if (!used && (s->nsrc >= in->kmax || s->npods + newpod > in->pmax)) {
			t = end;   /* no room for this leaf */
			continue;
		}
		uint32_t room = in->kmax - s->nsrc - (used ? 0 : 1);
		uint64_t here = end - t;
		if (cs)
			here = s->lused[g] >= s->cap[g] ? 0 : here < s->cap[g] - s->lused[g] ? here : s->cap[g] - s->lused[g];
		if (s->ns + here + (cs ? cs[g + 1] : topsum(s, g + 1, room)) < in->want) {
			if (used)
				return;   /* later leaves hold fewer than this one and the room left */
			t = end;
			continue;
		}
		if (s->twin[i] != NONE32 && !s->in_set[s->twin[i]]) {
			t++;
			continue;
		}
		size_t mark = s->nlog;
		s->budget--;
		add(s, i);
		if (!beaten(s, g))
			grow(s, t + 1);
		drop(s, i, mark);
		t++;
	}
}

/* exist: a sharing-free set on two leaves or more (one leaf holding want
 * is found at once) has, on leaf g, hosts whose entry codes from every
 * other of its leaves l differ: at most dist(g, l), the distinct codes of
 * g's free hosts from l (a host without a route from l conflicts with
 * none), so at most the largest over l before the set's leaves are known,
 * the smallest over its leaves after. */
static int sr_caps(struct sr *s)
{
	const struct psearch_in *in = s->in;
	uint32_t nl = in->nl, *stamp = calloc(in->ncodes + 1, sizeof(*stamp)), epoch = 0;
	if (!stamp)
		return AN_E_NOMEM;
	for (uint32_t g = 0; g < nl; g++) {
		uint32_t best = 0;
		for (uint32_t l = 0; l < nl; l++) {
			uint32_t n = 0;
			epoch++;
			for (uint32_t a = 0; a < in->leaf_n[g] && l != g; a++) {
				uint32_t c = code_of(in, in->lhosts[in->leaf_first[g] + a], l);
				if (c == NONE32 || stamp[c] != epoch)
					n++;
				if (c != NONE32)
					stamp[c] = epoch;
			}
			s->dist[(size_t)g * nl + l] = l == g ? in->leaf_n[g] : n;
			best = l != g && n > best ? n : best;
		}
		s->cap[g] = nl > 1 && best < in->leaf_n[g] ? best : in->leaf_n[g];
	}
	free(stamp);
	return AN_OK;
}

/* ts and twins. */
static int sr_tables(struct sr *s)
{
	const struct psearch_in *in = s->in;
	uint32_t nl = in->nl, *srt = malloc((nl + 1) * sizeof(*srt)), m = 0;
	if (!srt)
		return AN_E_NOMEM;
	for (uint32_t r = 0; r < s->kcap; r++)
		s->ts[(size_t)nl * s->kcap + r] = 0;
	for (uint32_t g = nl; g-- > 0;) {
		uint32_t v = in->leaf_n[g], k = m++;   /* insertion, descending */
		while (k > 0 && srt[k - 1] < v) {
			srt[k] = srt[k - 1];
			k--;
		}
		srt[k] = v;
		uint64_t acc = 0;
		for (uint32_t r = 0; r < s->kcap; r++) {
			s->ts[(size_t)g * s->kcap + r] = acc;
			acc += r < m ? srt[r] : 0;
		}
	}
	free(srt);
	for (uint32_t g = 0; g < nl; g++)
		for (uint32_t a = 0; a < in->leaf_n[g]; a++) {
			uint32_t i = in->lhosts[in->leaf_first[g] + a];
			s->twin[i] = NONE32;
			for (uint32_t b = a; b-- > 0 && s->twin[i] == NONE32;) {
				uint32_t j = in->lhosts[in->leaf_first[g] + b];
				if (!memcmp(in->code + (size_t)i * nl, in->code + (size_t)j * nl, nl * sizeof(*in->code)))
					s->twin[i] = j;
			}
		}
	return AN_OK;
}

int place_search(const struct psearch_in *in, uint32_t *best, struct psearch_out *out)
{
	struct sr s = { .in = in, .budget = in->budget };
	uint32_t npods = 0;
	for (uint32_t l = 0; l < in->nl; l++)
		npods = in->lpod[l] + 1 > npods ? in->lpod[l] + 1 : npods;
	s.kcap = in->kmax + 1;
	/* an add logs at most 3 entries per host of the set and per leaf */
	size_t logcap = (size_t)3 * in->want * (in->want + in->kmax + 1) + (size_t)in->want * in->nl + 8;
	s.ts = malloc((size_t)(in->nl + 1) * s.kcap * sizeof(*s.ts));
	s.twin = malloc((in->nf + 1) * sizeof(*s.twin));
	s.in_set = calloc(in->nf + 1, 1), s.shar = calloc(in->nf + 1, 1);
	s.owner = malloc((in->ncodes + 1) * sizeof(*s.owner)), s.multi = calloc(in->ncodes + 1, 1);
	s.lused = calloc(in->nl + 1, sizeof(*s.lused)), s.podused = calloc(npods + 1, sizeof(*s.podused));
	s.S = malloc((in->want + 1) * sizeof(*s.S)), s.src = malloc((in->nl + 1) * sizeof(*s.src));
	s.log = malloc(logcap * sizeof(*s.log));
	s.cap = malloc((in->nl + 1) * sizeof(*s.cap));
	s.capsum = malloc(((size_t)in->want + 1) * (in->nl + 1) * sizeof(*s.capsum));
	s.dist = malloc(((size_t)in->nl * in->nl + 1) * sizeof(*s.dist));
	s.best = best;
	int rc = AN_E_NOMEM;
	if (!s.ts || !s.twin || !s.in_set || !s.shar || !s.owner || !s.multi || !s.lused || !s.podused || !s.S ||
	    !s.src || !s.log || !s.cap || !s.capsum || !s.dist || (rc = sr_tables(&s)) || (in->exist && (rc = sr_caps(&s))))
		goto out;
	for (uint32_t c = 0; c < in->ncodes; c++)
		s.owner[c] = NONE32;
	if (in->incumbent && !in->exist) {   /* its figures: the bound to beat */
		for (uint32_t a = 0; a < in->want; a++)
			add(&s, best[a]);
		s.best_s = s.nshar, s.best_f = s.fsum, s.have = 1;
		for (uint32_t a = in->want; a-- > 0;)
			drop(&s, s.S[a], 0);
	}
	for (uint32_t l = 0; l < in->nl && in->exist; l++)
		s.found |= in->leaf_n[l] >= in->want;   /* one leaf: no other leaf's traffic, nothing shared */
	grow(&s, 0);
	out->complete = s.budget >= 0;
	out->found = in->exist ? s.found : s.have;
	out->sharing = s.best_s;
	out->fsum = s.best_f;
	rc = AN_OK;
out:
	free(s.ts), free(s.twin), free(s.in_set), free(s.shar), free(s.owner), free(s.multi);
	free(s.lused), free(s.podused), free(s.S), free(s.src), free(s.log), free(s.cap), free(s.capsum), free(s.dist);
	return rc;
}
