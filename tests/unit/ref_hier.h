/*
 * ref_hier.h - the plain reference for hier.c, for tests only: the full
 * N x N host distance matrix from per-pair route walks, then the clustering
 * of hier.h done literally on single hosts, with complete linkage computed
 * from the original matrix (max over member pairs) rather than updated in
 * place. Slow on purpose (O(N^2) walks, O(N^2) per round): it must be
 * obviously right, not fast.
 */
#ifndef REF_HIER_H
#define REF_HIER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"

#define REF_INF 0xFFFFu
#define REF_NONE UINT32_MAX

struct ref_hier {
	uint32_t nh, depth, nroots, nclusters;
	uint64_t *anc;   /* [nh * depth] cluster ID per host and level */
};

/* hier.h's ID formula, written out again so that the test does not trust
 * the code under test for it. */
static inline uint64_t ref_mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static inline void ref_hier_free(struct ref_hier *r)
{
	free(r->anc);
	r->anc = NULL;
}

struct ref_cl {
	uint32_t *mem;   /* member hosts */
	uint32_t n;
	uint32_t node;   /* tree cluster, or REF_NONE for a bare host */
};

static inline int ref_hier_build(const struct route_tab *rt, struct ref_hier *r)
{
	uint32_t N = rt->nhosts;
	memset(r, 0, sizeof(*r));
	r->nh = N;
	uint16_t *d = malloc((size_t)N * N * sizeof(*d) + 1);
	uint64_t *key = malloc((N + 1) * sizeof(*key));
	uint32_t *order = malloc((N + 1) * sizeof(*order));
	uint32_t *hp = malloc((N + 1) * sizeof(*hp));          /* host -> parent cluster */
	uint32_t *par = malloc((2 * N + 1) * sizeof(*par));     /* cluster -> parent */
	struct ref_cl *act = calloc(N + 1, sizeof(*act));
	if (!d || !key || !order || !hp || !par || !act)
		return -1;
	for (uint32_t a = 0; a < N; a++) {
		key[a] = rt->eps[route_host_ep(rt, a)].guid;
		for (uint32_t b = 0; b < N; b++) {
			int x = route_hops(rt, route_host_ep(rt, a), rt->eps[route_host_ep(rt, b)].lid);
			int y = route_hops(rt, route_host_ep(rt, b), rt->eps[route_host_ep(rt, a)].lid);
			int m = x < 0 || y < 0 ? (int)REF_INF : x > y ? x : y;
			d[(size_t)a * N + b] = m >= (int)REF_INF ? REF_INF : (uint16_t)m;
		}
	}
	/* key order: (GUID, host index); a plain insertion sort will do */
	for (uint32_t i = 0; i < N; i++) {
		uint32_t j = i;
		while (j > 0 && (key[order[j - 1]] > key[i] || (key[order[j - 1]] == key[i] && order[j - 1] > i))) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	uint32_t na = N, ncl = 0;
	for (uint32_t i = 0; i < N; i++) {
		act[i].mem = malloc(sizeof(uint32_t));
		act[i].mem[0] = order[i];
		act[i].n = 1;
		act[i].node = REF_NONE;
	}
	uint16_t *cd = malloc((size_t)N * N * sizeof(*cd) + 1);
	uint8_t *asg = malloc(N + 1);
	uint32_t *G = malloc((N + 1) * sizeof(*G));
	for (;;) {
		/* complete linkage, straight from the definition */
		uint16_t m = REF_INF;
		for (uint32_t x = 0; x < na; x++)
			for (uint32_t y = 0; y < na; y++) {
				uint16_t v = 0;
				for (uint32_t i = 0; i < act[x].n; i++)
					for (uint32_t j = 0; j < act[y].n; j++) {
						uint16_t w = d[(size_t)act[x].mem[i] * N + act[y].mem[j]];
						v = w > v ? w : v;
					}
				cd[(size_t)x * na + y] = v;
				if (x < y && v < m)
					m = v;
			}
		if (m == REF_INF)
			break;
		memset(asg, 0, na);
		for (uint32_t x = 0; x < na; x++) {
			if (asg[x])
				continue;
			uint32_t ng = 0;
			G[ng++] = x;
			for (uint32_t y = x + 1; y < na; y++) {
				if (asg[y])
					continue;
				uint32_t g = 0;
				while (g < ng && cd[(size_t)y * na + G[g]] == m)
					g++;
				if (g == ng)
					G[ng++] = y;
			}
			if (ng < 2)
				continue;
			uint32_t c = ncl++;
			par[c] = REF_NONE;
			uint32_t total = 0;
			for (uint32_t g = 0; g < ng; g++) {
				struct ref_cl *k = &act[G[g]];
				asg[G[g]] = 1;
				total += k->n;
				if (k->node != REF_NONE)
					par[k->node] = c;
				else
					hp[k->mem[0]] = c;
			}
			uint32_t *mem = malloc(total * sizeof(*mem)), t = 0;
			for (uint32_t g = 0; g < ng; g++) {
				memcpy(mem + t, act[G[g]].mem, act[G[g]].n * sizeof(*mem));
				t += act[G[g]].n;
				if (g) {
					free(act[G[g]].mem);
					act[G[g]].mem = NULL;
					act[G[g]].n = 0;
				}
			}
			free(act[x].mem);
			act[x].mem = mem;
			act[x].n = total;
			act[x].node = c;
		}
		uint32_t w = 0;
		for (uint32_t x = 0; x < na; x++)
			if (act[x].n)
				act[w++] = act[x];
		na = w;
	}
	for (uint32_t x = 0; x < na; x++) {
		if (act[x].node == REF_NONE) {
			par[ncl] = REF_NONE;
			hp[act[x].mem[0]] = ncl++;
		}
		free(act[x].mem);
	}
	uint32_t *lvl = malloc((ncl + 1) * sizeof(*lvl));
	uint64_t *id = calloc(ncl + 1, sizeof(*id));
	for (uint32_t c = 0; c < ncl; c++) {
		uint32_t l = 0;
		for (uint32_t q = c; par[q] != REF_NONE; q = par[q])
			l++;
		lvl[c] = l;
		r->nroots += par[c] == REF_NONE;
	}
	for (uint32_t h = 0; h < N; h++) {
		for (uint32_t q = hp[h]; q != REF_NONE; q = par[q])
			id[q] += ref_mix(key[h]);
		if (lvl[hp[h]] + 1 > r->depth)
			r->depth = lvl[hp[h]] + 1;
	}
	r->nclusters = ncl;
	r->anc = malloc(((size_t)N * r->depth + 1) * sizeof(*r->anc));
	for (uint32_t h = 0; h < N; h++) {
		uint64_t *a = r->anc + (size_t)h * r->depth;
		for (uint32_t l = lvl[hp[h]]; l < r->depth; l++)
			a[l] = id[hp[h]];
		for (uint32_t q = hp[h]; q != REF_NONE; q = par[q])
			a[lvl[q]] = id[q];
	}
	free(lvl);
	free(id);
	free(cd);
	free(asg);
	free(G);
	free(d);
	free(key);
	free(order);
	free(hp);
	free(par);
	free(act);
	return 0;
}

#endif
