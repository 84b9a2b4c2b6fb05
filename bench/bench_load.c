/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_load.c - time and memory of load_build (its target, docs/performance.md
 * "Link loads of a job's pattern": all-to-all link loads for all 3,456 hosts
 * of k=24 and 4,096 hosts of k=32 within 100 ms) on an in-memory k-ary
 * 3-level fat tree with d-mod-k LFTs (tests/unit/testfab.h).
 *
 *   bench_load K [HOSTS [RANKS_PER_HOST [THREADS [PATTERN]]]]
 *       HOSTS default all (capped at 4,096), 1 rank per host, 2 threads,
 *       alltoall. Prints the best of 5 runs and the memory the load holds.
 *
 * Build: make tests (build/bench/bench_load)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "load.h"
#include "testfab.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	unsigned k = argc > 1 ? (unsigned)atoi(argv[1]) : 24;
	unsigned nh = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	unsigned rph = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
	int threads = argc > 4 ? atoi(argv[4]) : 2;
	const char *spec = argc > 5 ? argv[5] : "alltoall";
	if (k < 4 || k % 2 || k > 56 || !rph || threads < 1) {
		fprintf(stderr, "usage: bench_load K [HOSTS [RANKS_PER_HOST [THREADS [PATTERN]]]]\n");
		return 2;
	}
	double t0 = now_ms();
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	tf_fattree3_finish(s, k);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		return 1;
	double t1 = now_ms();
	if (!nh || nh > rt->nhosts)
		nh = rt->nhosts;
	if (nh > TOPO_MATRIX_MAX)
		nh = TOPO_MATRIX_MAX;
	uint32_t n = nh * rph;
	uint32_t *host = malloc(n * sizeof *host);
	for (uint32_t i = 0; i < n; i++)
		host[i] = i / rph;
	struct pat_job job = { n, host };
	struct pattern p;
	char err[AN_ERR_LEN];
	if (pattern_parse(spec, &p, err) || pattern_check(&p, n, err)) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	double best = 1e9;
	struct load *L = NULL;
	for (int r = 0; r < 5; r++) {
		double a = now_ms();
		load_free(L);
		if (load_build(rt, &job, &p, threads, &L))
			return 1;
		double b = now_ms() - a;
		if (b < best)
			best = b;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("k=%u fabric: %u hosts, %u switches, %u port slots (built in %.0f ms)\n", k, rt->nhosts,
	       rt->nsw, s->nports, t1 - t0);
	printf("%s: %u hosts x %u ranks = %u ranks, %u threads: best of 5 %.1f ms\n", spec, nh, rph, n,
	       threads, best);
	printf("  %u loaded links, max %llu msgs, %u levels, max hops %u, peak RSS %.1f MiB\n",
	       L->nlinks, (unsigned long long)L->max_msgs, L->nlevels, L->max_hops,
	       ru.ru_maxrss / 1024.0);
	for (uint32_t i = 0; i < L->nlevels; i++)
		printf("  tier %u>%u: %u links, max %llu, bound %lld\n", L->levels[i].from,
		       L->levels[i].to, L->levels[i].nlinks, (unsigned long long)L->levels[i].max_msgs,
		       (long long)L->levels[i].bound_msgs);
	load_free(L);
	free(host);
	route_free(rt);
	snap_free(s);
	return 0;
}
