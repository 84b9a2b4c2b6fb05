/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * estimate.c - see estimate.h. Coefficients are bytes or microseconds per
 * unit, measured on the k=24 fat tree (3,456 hosts, 720 switches; 2 cores)
 * with a fresh topod per request and rounded up by a third or more:
 *
 *   request (largest within the limits)      peak RSS   time
 *   hopsmatrix 3,456 hosts                    45 MiB    0.2 s
 *   pathmatrix 3,456 hosts                    60 MiB    0.4 s
 *   schedule xor 2,048 ranks (rank flows)     67 MiB    0.5 s
 *   schedule tacs1 form=hosts 1,024 x 4       42 MiB    4.2 s
 *   schedule route 1,024 ranks                23 MiB   55 s
 *   simgrid 256 hosts                         33 MiB    0.1 s
 *   map stencil:128x128 on 3,456 x 5           7 MiB    0.7 s
 *   load alltoall 16,380 ranks                 2 MiB    0.1 s
 *   delaymatrix 3,456 hosts                  (84 MB of reply)  0.7 s
 *   simgrid all, 3,456 hosts                 (193 MB of XML)   2.4 s
 */
#include "estimate.h"

#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "route.h"
#include "schedule.h"

#define MIB (1ull << 20)

/* Ranks of the words argv[from..to): HOST is one, HOST*N is N. */
static uint64_t rank_words(const struct proto_req *r, size_t from, size_t to)
{
	uint64_t P = 0;
	for (size_t i = from; i < to; i++) {
		const char *star = strchr(r->argv[i], '*');
		unsigned long n = star ? strtoul(star + 1, NULL, 10) : 1;
		P += n > TOPO_RANKS_MAX ? TOPO_RANKS_MAX : n;
	}
	/* beyond the protocol's limit the handler answers TOOMANY: the
	 * estimate must not refuse first with TOOBIG */
	return P > TOPO_RANKS_MAX ? TOPO_RANKS_MAX : P;
}

/* Host words, at most the protocol's TOPO_MATRIX_MAX (same reason). */
static uint64_t nhosts_arg(const struct proto_req *r)
{
	return r->argc > TOPO_MATRIX_MAX ? TOPO_MATRIX_MAX : r->argc;
}

/* The first word at or after i that is not OPTION=V. */
static size_t skip_options(const struct proto_req *r, size_t i)
{
	while (i < r->argc && strchr(r->argv[i], '='))
		i++;
	return i;
}

/* Index of the word "--", or argc. */
static size_t dashes(const struct proto_req *r, size_t from)
{
	for (size_t i = from; i < r->argc; i++)
		if (!strcmp(r->argv[i], "--"))
			return i;
	return r->argc;
}

static int has_word(const struct proto_req *r, size_t to, const char *w)
{
	for (size_t i = 0; i < to && i < r->argc; i++)
		if (!strcmp(r->argv[i], w))
			return 1;
	return 0;
}

static uint64_t sq(uint64_t n)
{
	return n * n;
}

void est_hopsmatrix(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	/* int16 cells, then the reply's "N " per cell */
	e->mem = 2 * MIB + sq(nhosts_arg(r)) * 5;
	e->work_us = 200 + sq(nhosts_arg(r)) / 20;
}

void est_pathmatrix(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	/* the sharing structure, then ~2.3 reply bytes per pair */
	e->mem = 4 * MIB + sq(nhosts_arg(r)) * 7;
	e->work_us = 500 + sq(nhosts_arg(r)) / 10;
}

void est_shared(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	/* measured 0.9 MiB at 3,456 hosts: the pairs' sharing bits */
	e->mem = 4 * MIB + sq(nhosts_arg(r));
	e->work_us = 200 + sq(nhosts_arg(r)) / 50;
}

void est_order(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	uint64_t n = r->argc ? r->argc : f->index->rt->nhosts;
	e->mem = 1 * MIB + n * 256;
	e->work_us = 100 + n * 2;
}

void est_pick(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	/* the pod table of the exact leaf/pod count: 5.4 MiB measured at 3,456 free */
	e->mem = 3 * MIB + (uint64_t)r->argc * 1536;
	e->work_us = 500 + (uint64_t)r->argc * 40;
}

/* Ranks of a map GRAPH word: stencil:XxYxZ or csr:m. */
static uint64_t graph_ranks(const char *g)
{
	uint64_t n = 1;
	if (!strncmp(g, "csr:", 4))
		return strtoull(g + 4, NULL, 10);
	if (strncmp(g, "stencil:", 8))
		return 0;
	const char *p = g + 8;
	for (int d = 0; d < 3 && *p >= '0' && *p <= '9'; d++) {
		char *end;
		unsigned long long x = strtoull(p, &end, 10);
		n *= x > TOPO_RANKS_MAX ? TOPO_RANKS_MAX : x;
		p = *end == 'x' ? end + 1 : end;
	}
	return n;
}

void est_map(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	size_t g = skip_options(r, 0), dd = dashes(r, g);
	uint64_t ranks = g < r->argc ? graph_ranks(r->argv[g]) : 0;
	if (ranks > TOPO_RANKS_MAX)
		ranks = TOPO_RANKS_MAX;
	uint64_t hosts = dd > g ? dd - g - 1 : 0, adj = r->argc - dd;
	/* Scotch's graphs and target, three candidates' figures, the swap pass */
	e->mem = 8 * MIB + ranks * 1024 + hosts * 1024 + adj * 256;
	e->work_us = 50000 + ranks * 50 + hosts * 20;
}

void est_load(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	size_t s = skip_options(r, 0), dd = dashes(r, s);
	uint64_t ranks = s + 1 < dd ? rank_words(r, s + 1, dd) : 0, triples = r->argc - dd;
	/* per directed port: loads, levels; per rank and triple: the job */
	e->mem = 4 * MIB + (uint64_t)f->snap->nports * 64 + ranks * 64 + triples * 96;
	e->work_us = 5000 + ranks * 5 + triples * 4;
}

void est_schedule(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	size_t first = skip_options(r, 1);
	uint64_t P = rank_words(r, first, r->argc), H = r->argc - first;
	if (H > f->index->rt->nhosts)
		H = f->index->rt->nhosts;
	/* a name that is no algorithm is refused by the handler; it is
	 * estimated as a plain all-to-all with XOR beside it (two schedules of
	 * 8 bytes a pair) */
	struct sched_algo_props a = { .pair_bytes = 16 };
	if (r->argc)
		sched_algo_props(r->argv[0], &a);
	int compact = !a.ranks_only && (has_word(r, first, "form=hosts") || has_word(r, first, "flows=0"));
	int flows = !has_word(r, first, "flows=0");
	uint64_t pairs = P ? P * (P - 1) : 0;
	e->mem = 4 * MIB + H * 4096 + (uint64_t)f->snap->nports * 16;
	e->work_us = 1000 + sq(H);
	if (a.tacs) {
		/* pair states, candidates, per-step link loads, host flows */
		e->mem += sq(H) * 48;
		e->work_us += sq(H) * 5;
	}
	if (!compact) {
		/* the schedules held in rank form (the answer, advice's
		 * baseline beside it, agbest's candidates); ~10 reply bytes per
		 * flow */
		e->mem += pairs * a.pair_bytes;
		e->mem += flows ? pairs * 12 : 0;
		e->work_us += pairs / 2;
	}
	if (a.search) {
		/* four greedy variants' scratch copies and pending lists; O(P^3) */
		e->mem += pairs * 20;
		e->work_us += P * P * 55;
	}
}

void est_simgrid(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	/* `simgrid all`: one zone per leaf, routes grow as leaves x hosts
	 * (193 MB of XML, 2.4 s at 3,456 hosts and 288 leaves): switches x
	 * hosts bounds it. Else every ordered pair's route, ~240 bytes each. */
	if (r->argc == 1 && !strcmp(r->argv[0], "all")) {
		uint64_t hs = (uint64_t)f->index->rt->nhosts * f->index->switches;
		e->mem = 2 * MIB + hs * 100;
		e->work_us = 1000 + hs;
		return;
	}
	e->mem = 2 * MIB + sq(nhosts_arg(r)) * 700;
	e->work_us = 1000 + sq(nhosts_arg(r)) * 3;
}

void est_delaymatrix(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)f;
	/* uint64 cells, then ~7 reply bytes per cell (84 MB at 3,456 hosts, 0.7 s) */
	e->mem = 2 * MIB + sq(nhosts_arg(r)) * 16;
	e->work_us = 200 + sq(nhosts_arg(r)) / 16;
}

/* `links`: every cable once, ~90 reply bytes each. */
void est_links(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	(void)r;
	e->mem = 2 * MIB + (uint64_t)f->snap->nports * 100;
	e->work_us = 1000 + f->snap->nports;
}

void est_diff(const struct proto_req *r, const struct fabric *f, struct estimate *e)
{
	/* both generations rebuilt from the history (LFTs, ports, route
	 * tables), their comparison and the named hosts' pair walks */
	const struct snap *s = f->snap;
	uint64_t names = r->argc > 2 ? r->argc - 2 : 0;
	e->mem = 8 * MIB + 3 * (s->nlft + (uint64_t)s->nports * 96 + (uint64_t)s->nnodes * 256) + sq(names) * 16;
	e->work_us = 200000 + s->nlft / 10 + sq(names);
}

int estimate_request(const struct cmd *k, const struct proto_req *req, const struct fabric *f, struct estimate *e)
{
	if (!k->estimate)
		return -1;
	k->estimate(req, f, e);
	return 0;
}

int estimate_light(const struct estimate *e)
{
	return e->work_us <= ESTIMATE_LIGHT_US && e->mem <= ESTIMATE_LIGHT_MEM;
}
