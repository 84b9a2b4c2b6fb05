/*
 * bench_place.c - order, pick and map (analysis/place.h) on an in-memory k-ary
 * 3-level fat tree (testfab.h, d-mod-k LFTs): the work topod does per
 * request, without the protocol. Figures, not asserts.
 *
 *   bench_place K      (K = 24: 3,456 hosts, 288 leaves, the fabric)
 *
 * Build: make bench  (build/bench/bench_place)
 */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "place.h"
#include "testfab.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* median of reps runs of the same call */
#define TIME(reps, med, stmt)                                              \
	do {                                                               \
		double ts_[32];                                            \
		for (int r_ = 0; r_ < (reps); r_++) {                      \
			double t0_ = now_ms();                             \
			stmt;                                              \
			ts_[r_] = now_ms() - t0_;                          \
		}                                                          \
		for (int a_ = 0; a_ < (reps); a_++)                        \
			for (int b_ = a_ + 1; b_ < (reps); b_++)           \
				if (ts_[b_] < ts_[a_]) {                   \
					double x_ = ts_[a_];               \
					ts_[a_] = ts_[b_];                 \
					ts_[b_] = x_;                      \
				}                                          \
		(med) = ts_[(reps) / 2];                                   \
	} while (0)

int main(int argc, char **argv)
{
	unsigned k = argc > 1 ? (unsigned)atoi(argv[1]) : 24;
	if (k < 4 || k % 2 || k > 40) {
		fprintf(stderr, "usage: bench_place K (even, 4..40)\n");
		return 2;
	}
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	tf_fattree3_finish(s, k);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		return 1;
	/* one context for the run, as topod has: picks reuse its entry table */
	struct place_ctx *pc = place_ctx_new();
	if (!pc)
		return 1;
	uint32_t n = rt->nhosts, *all = malloc(n * sizeof(*all)), *v = malloc(n * sizeof(*v));
	for (uint32_t i = 0; i < n; i++)
		all[i] = i;
	printf("k=%u: %u hosts, %d threads (median of repeated runs)\n", k, n, omp_get_max_threads());
	double ms;
	TIME(9, ms, {
		for (uint32_t i = 0; i < n; i++)
			v[i] = all[(i * 7919u) % n];   /* a scrambled list: 7919 is prime */
		place_order(rt, h, v, n);
	});
	printf("order %u hosts                 %8.2f ms\n", n, ms);

	char why[AN_ERR_LEN];
	unsigned wants[] = { 8, 100, 500, 1024 };
	for (unsigned w = 0; w < 4; w++) {
		struct place_pick p;
		TIME(5, ms, {
			if (place_pick(pc, rt, h, all, n, wants[w], &p, why))
				return 1;
			if (r_ + 1 < 5)
				place_pick_free(&p);
		});
		printf("pick %4u of %u free          %8.2f ms   sharing=%u leaves=%u pods=%u max_hops=%u max_load=%u\n",
		       wants[w], n, ms, p.figs.sharing, p.figs.leaves, p.figs.pods, p.figs.max_hops, p.figs.max_load);
		place_pick_free(&p);
	}
	/* issue 27: the whole answer topod gives (compact pick, hosts balanced
	 * within their leaves, judged against first-fit), all free and a
	 * scrambled half free */
	for (unsigned half = 0; half < 2; half++) {
		uint32_t nh = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!half || (i * 2654435761u) % 7 < 4)
				v[nh++] = i;
		unsigned want = half ? 512 : 1024;
		struct place_pick p;
		TIME(5, ms, {
			if (place_pick_advise(pc, rt, h, v, nh, want, 1u << 20, 1, &p, why))
				return 1;
			if (r_ + 1 < 5)
				place_pick_free(&p);
		});
		printf("pick+balance %4u of %u free  %8.2f ms   leaves=%u pods=%u swaps=%u balanced=%d busiest %.1f us"
		       " limit %.1f us first-fit %.1f us\n", want, nh, ms, p.figs.leaves, p.figs.pods, p.swaps, p.balanced,
		       p.bw_time * 1e6, p.limit_time * 1e6, p.ff_bw_time * 1e6);
		place_pick_free(&p);
	}
	/* a fragmented free list: every third host */
	uint32_t nf = 0;
	for (uint32_t i = 0; i < n; i += 3)
		v[nf++] = i;
	struct place_pick p;
	TIME(5, ms, {
		if (place_pick(pc, rt, h, v, nf, 200, &p, why))
			return 1;
		if (r_ + 1 < 5)
			place_pick_free(&p);
	});
	printf("pick  200 of %u (every third) %8.2f ms   sharing=%u leaves=%u pods=%u max_hops=%u max_load=%u\n", nf, ms,
	       p.figs.sharing, p.figs.leaves, p.figs.pods, p.figs.max_hops, p.figs.max_load);
	place_pick_free(&p);

	/* map: the seed's case (1,024 ranks on 128 hosts) and the (4,096 on 256) */
	struct { uint32_t dx, dy, dz, nh, stride; } cases[] = { { 16, 8, 8, 128, 1 }, { 16, 16, 16, 256, 1 },
								 { 16, 16, 16, 256, 13 } };
	for (unsigned c = 0; c < 3; c++) {
		struct place_graph g;
		place_graph_stencil(&g, cases[c].dx, cases[c].dy, cases[c].dz, 0);
		uint32_t *hs = malloc(cases[c].nh * sizeof(*hs)), *sl = malloc(cases[c].nh * sizeof(*sl));
		for (uint32_t i = 0; i < cases[c].nh; i++)
			hs[i] = (i * cases[c].stride) % n, sl[i] = g.n / cases[c].nh;
		struct place_map m;
		TIME(3, ms, {
			if (place_map(pc, rt, h, &g, hs, sl, cases[c].nh, &m, why)) {
				fprintf(stderr, "%s\n", why);
				return 1;
			}
			if (r_ + 1 < 3)
				place_map_free(&m);
		});
		printf("map %ux%ux%u (%u ranks) on %u hosts%s %8.1f ms   hop-bytes %s %" PRIu64 " block %" PRIu64
		       " rr %" PRIu64 "; max load %" PRIu64 " / %" PRIu64 " / %" PRIu64 "\n",
		       cases[c].dx, cases[c].dy, cases[c].dz, g.n, cases[c].nh, cases[c].stride > 1 ? " (spread)" : "",
		       ms, m.method == PLACE_SCOTCH ? "scotch" : "block(fallback)", m.cost.hop_bytes, m.block.hop_bytes,
		       m.rr.hop_bytes, m.cost.max_load, m.block.max_load, m.rr.max_load);
		place_map_free(&m);
		place_graph_free(&g);
		free(hs);
		free(sl);
	}
	hier_free(h);
	route_free(rt);
	snap_free(s);

	/* a 2:1 over-subscribed two-level tree of as many hosts: 144 leaves x 24
	 * hosts, 12 spines; big picks cannot avoid sharing (the fill path) */
	s = snap_new();
	tf_tree2(s, 144, 24, 12, 1);
	tf_finish(s, 0);
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		return 1;
	printf("2:1 tree, 144 leaves x 24 hosts, 12 spines: %u hosts\n", rt->nhosts);
	unsigned wants2[] = { 100, 1000, 3000 };
	for (unsigned w = 0; w < 3; w++) {
		struct place_pick q;
		TIME(3, ms, {
			if (place_pick(pc, rt, h, all, rt->nhosts, wants2[w], &q, why))
				return 1;
			if (r_ + 1 < 3)
				place_pick_free(&q);
		});
		printf("pick %4u of %u free          %8.2f ms   sharing=%u leaves=%u pods=%u max_hops=%u max_load=%u\n",
		       wants2[w], rt->nhosts, ms, q.figs.sharing, q.figs.leaves, q.figs.pods, q.figs.max_hops,
		       q.figs.max_load);
		place_pick_free(&q);
	}
	hier_free(h);
	route_free(rt);
	snap_free(s);
	free(all);
	free(v);
	place_ctx_free(pc);
	return 0;
}
