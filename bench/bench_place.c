/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_place.c - order, pick and map (analysis/place.h) on an in-memory k-ary
 * 3-level fat tree (testfab.h, d-mod-k LFTs): the work topod does per
 * request, without the protocol. Figures, not asserts.
 *
 *   bench_place K      (K = 24: 3,456 hosts, 288 leaves, the fabric of
 *                       docs/performance.md "Placement: order, pick, map")
 *   bench_place K small  (only picks from small free lists, where the exact
 *                         search runs)
 *   bench_place 0 run    (picks judged by the job's all-to-all: run=bound
 *                         against run=route and xor, 64 and 256 of twice as
 *                         many free hosts, on trees of the lab's ft2 and
 *                         ft2-big shapes)
 *
 * Build: make bench  (build/bench/bench_place)
 */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"
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

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Picks from small free lists, where the exact search runs
 * (up to 40 hosts): random lists crowded on a few leaves of a 2:1 tree with
 * BFS routes (the entry into a leaf varies with the source), a torus and a
 * random graph; the median and the slowest pick (CPU time: run with
 * OMP_NUM_THREADS=1), and how many were proven optimal. The first pick
 * on each fabric builds the context's entry table. */
static void small_lists(struct place_ctx *pc)
{
	for (int fab = 0; fab < 3; fab++) {
		struct snap *s = snap_new();
		const char *name = fab == 0 ? "2:1 tree 16x8, BFS routes" : fab == 1 ? "torus 6x6, 3 hosts a switch" : "random graph 32x4x3";
		if (fab == 0) {
			tf_tree2(s, 16, 8, 4, 1);
			tf_finish(s, 0);
			tf_bfs_lft(s);
		} else if (fab == 1) {
			tf_torus(s, 6, 6, 3);
			tf_finish(s, 0);
		} else {
			tf_rrg(s, 32, 4, 3, 5);
			tf_finish(s, 0);
		}
		struct route_tab *rt;
		struct hier *h;
		if (route_build(s, NULL, &rt) || hier_build(rt, &h))
			exit(1);
		for (unsigned nf = 20; nf <= 40; nf += 20) {
			double t[200], worst = 0;
			unsigned proven = 0, shared = 0, runs = 200;
			uint32_t *fr = malloc(rt->nhosts * sizeof(*fr));
			for (unsigned r = 0; r < runs; r++) {
				for (uint32_t i = 0; i < rt->nhosts; i++)
					fr[i] = i;
				/* crowded: a window of hosts (neighbouring leaves), shuffled */
				uint32_t w = 2 * nf < rt->nhosts ? 2 * nf : rt->nhosts;
				uint32_t base = (uint32_t)(tf_rand() % (rt->nhosts - w + 1));
				for (uint32_t i = 0; i < w; i++) {
					uint32_t j = i + (uint32_t)(tf_rand() % (w - i)), x = fr[base + i];
					fr[base + i] = fr[base + j], fr[base + j] = x;
				}
				size_t want = 2 + tf_rand() % (nf - 2);
				struct place_pick p;
				char why[AN_ERR_LEN];
				double t0 = cpu_ms();
				if (place_pick(pc, rt, h, fr + base, nf, want, &p, why))
					exit(1);
				t[r] = cpu_ms() - t0;
				worst = t[r] > worst ? t[r] : worst;
				proven += p.exhaustive, shared += p.figs.sharing > 0;
				place_pick_free(&p);
			}
			for (unsigned a = 0; a < runs; a++)
				for (unsigned b = a + 1; b < runs; b++)
					if (t[b] < t[a]) {
						double x = t[a];
						t[a] = t[b], t[b] = x;
					}
			printf("pick from %u free, %s: median %.3f ms, slowest %.1f ms CPU (%u runs, %u sharing, %u proven optimal)\n",
			       nf, name, t[runs / 2], worst, runs, shared, proven);
			free(fr);
		}
		hier_free(h);
		route_free(rt);
		snap_free(s);
	}
}

/* A 2:1 over-subscribed two-level tree of as many hosts: 144 leaves x 24
 * hosts, 12 spines; big picks cannot avoid sharing (the fill path). all:
 * host indices 0.. (at least 3,456). */
static int tree21(struct place_ctx *pc, const uint32_t *all)
{
	struct route_tab *rt;
	struct hier *h;
	char why[AN_ERR_LEN];
	double ms;
	struct snap *s = snap_new();
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
	/* the whole leaves=fewest answer where sharing cannot be avoided: the
	 * balanced hosts are weighed against the promise's sharing (step 4 of
	 * docs/protocol.md's `pick`) */
	struct place_pick q;
	double best = 1e9;
	for (int r = 0; r < 3; r++) {
		double t0 = cpu_ms();
		if (place_pick_advise(pc, rt, h, all, rt->nhosts, 1024, 1u << 20, 1, &q, why))
			return 1;
		best = cpu_ms() - t0 < best ? cpu_ms() - t0 : best;
		if (r < 2)
			place_pick_free(&q);
	}
	printf("pick+balance 1024 of %u free  %8.2f ms CPU (best of 3)   sharing=%u leaves=%u balanced=%d swaps=%u\n",
	       rt->nhosts, best, q.figs.sharing, q.figs.leaves, q.balanced, q.swaps);
	place_pick_free(&q);
	hier_free(h);
	route_free(rt);
	snap_free(s);
	return 0;
}

/* What a pick judged by the job's all-to-all costs (docs/performance.md,
 * "Picks judged by the job's all-to-all"). 2:1
 * two-level trees shaped as the lab's ft2 (16 leaves of 8 hosts, 4
 * spines: 128 hosts) and ft2-big (32 of 16, 8 spines: 512), the routes
 * tf_finish programs; a free list of 2N hosts drawn at random, N = 64
 * and 256 (ft2-big only), 32 KiB blocks; the pick's wall and CPU time
 * with run=bound, route and xor, how many schedules were simulated, and
 * the predicted times of the answers by the route schedule's judge. */
static void run_judges(struct place_ctx *pc)
{
	static const struct { unsigned nleaf, hpl, nspine; const char *name; } fabs[] = {
		{ 16, 8, 4, "ft2 shape (128 hosts)" }, { 32, 16, 8, "ft2-big shape (512 hosts)" } };
	struct pattern a2a;
	char why[AN_ERR_LEN];
	if (pattern_parse("alltoall", &a2a, why))
		exit(1);
	for (int f = 0; f < 2; f++) {
		struct snap *s = snap_new();
		tf_tree2(s, fabs[f].nleaf, fabs[f].hpl, fabs[f].nspine, 1);
		tf_finish(s, 0);
		struct route_tab *rt;
		struct hier *h;
		if (route_build(s, NULL, &rt) || hier_build(rt, &h))
			exit(1);
		printf("%s, %d threads\n", fabs[f].name, omp_get_max_threads());
		for (unsigned want = 64; want <= 256 && 2 * want <= rt->nhosts; want *= 4) {
			uint32_t n = rt->nhosts, *fr = malloc(n * sizeof(*fr));
			for (uint32_t i = 0; i < n; i++)
				fr[i] = i;
			tf_rng_state = 34 + want;
			for (uint32_t i = 0; i < 2 * want; i++) {
				uint32_t j = i + (uint32_t)(tf_rand() % (n - i)), x = fr[i];
				fr[i] = fr[j], fr[j] = x;
			}
			double t_route_of[2] = { -1, -1 };
			for (int run = PLACE_RUN_BOUND; run <= PLACE_RUN_XOR; run++) {
				struct place_pick p, q;
				double w0 = now_ms(), c0 = cpu_ms();
				if (place_pick_run(pc, rt, h, fr, 2 * want, want, &a2a, 32768, omp_get_max_threads(),
						   PLACE_LEAVES_ANY, run, NULL, &p, why)) {
					printf("  %u of %u run=%s: %s\n", want, 2 * want, place_run_name(run), why);
					continue;
				}
				double wall = now_ms() - w0, cpu = cpu_ms() - c0;
				/* the answer's route time, whatever judged it */
				if (run != PLACE_RUN_ROUTE && run != PLACE_RUN_BOUND) {
					printf("  %u of %u run=%-5s  wall %9.1f ms  cpu %9.1f ms  sims %2u  time %.3f ms "
					       "first-fit %.3f random %.3f\n",
					       want, 2 * want, place_run_name(run), wall, cpu, p.sims, p.time * 1e3,
					       p.ff_time * 1e3, p.random_time * 1e3);
					place_pick_free(&p);
					continue;
				}
				struct place_pick *r = &p;
				if (run == PLACE_RUN_BOUND) {
					/* the bound's answer judged by the route schedule: first
					 * the bound's own pick, then its route time */
					if (place_pick_run(pc, rt, h, p.hosts, want, want, &a2a, 32768, omp_get_max_threads(),
							   PLACE_LEAVES_ANY, PLACE_RUN_ROUTE, NULL, &q, why))
						exit(1);
					t_route_of[0] = q.ff_time;
					place_pick_free(&q);
				} else {
					t_route_of[1] = r->time;
				}
				printf("  %u of %u run=%-5s  wall %9.1f ms  cpu %9.1f ms  sims %2u  time %.3f ms first-fit %.3f "
				       "random %.3f%s\n",
				       want, 2 * want, place_run_name(run), wall, cpu, p.sims, p.time * 1e3, p.ff_time * 1e3,
				       p.random_time * 1e3, run == PLACE_RUN_BOUND ? " (bound's times)" : "");
				place_pick_free(&p);
			}
			printf("  %u of %u: the answers by the route schedule: bound's %.3f ms, route's %.3f ms\n", want,
			       2 * want, t_route_of[0] * 1e3, t_route_of[1] * 1e3);
			free(fr);
		}
		hier_free(h);
		route_free(rt);
		snap_free(s);
	}
	pattern_clear(&a2a);
}

int main(int argc, char **argv)
{
	unsigned k = argc > 1 ? (unsigned)atoi(argv[1]) : 24;
	if (argc > 2 && !strcmp(argv[2], "run")) {
		struct place_ctx *rc = place_ctx_new();
		if (!rc)
			return 1;
		run_judges(rc);
		place_ctx_free(rc);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[2], "small")) {   /* only the picks from small free lists */
		struct place_ctx *sc = place_ctx_new();
		if (!sc)
			return 1;
		small_lists(sc);
		place_ctx_free(sc);
		return 0;
	}
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
	/* the whole answer topod gives (compact pick, hosts balanced
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

	if (tree21(pc, all))
		return 1;
	small_lists(pc);
	free(all);
	free(v);
	place_ctx_free(pc);
	return 0;
}
