/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sched.c - schedule build time (seed 004 Table 6.1: 11.67 s for 256
 * hosts x 16 ranks) on an in-memory k-ary 3-level fat tree with d-mod-k LFTs.
 *
 *   bench_sched K HOSTS RANKS_PER_HOST [THREADS]
 *
 * Hosts 0..HOSTS-1 (consecutive leaves), ranks in host-major order. Times
 * sched_build (schedule + per-step figures from the LFT routes) per
 * algorithm, best of 5, and prints steps and mean conflicts per step.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hier.h"
#include "schedule.h"
#include "testfab.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: bench_sched K HOSTS RANKS_PER_HOST [THREADS]\n");
		return 2;
	}
	unsigned k = (unsigned)atoi(argv[1]), H = (unsigned)atoi(argv[2]), R = (unsigned)atoi(argv[3]);
	int threads = argc > 4 ? atoi(argv[4]) : 1;
	if (k < 2 || k % 2 || k > 64 || !H || H > k * k * k / 4 || !R || (size_t)H * R > 65536) {
		fprintf(stderr, "bench_sched: bad sizes\n");
		return 2;
	}
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	tf_fattree3_finish(s, k);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h)) {
		fprintf(stderr, "bench_sched: fabric\n");
		return 1;
	}
	uint32_t P = H * R, *rh = malloc(P * sizeof(*rh));
	for (uint32_t r = 0; r < P; r++)
		rh[r] = r / R;
	printf("k=%u (%u hosts), job %u hosts x %u ranks = %u ranks, %d thread(s)\n", k, rt->nhosts, H, R, P,
	       threads);
	for (int a = SCHED_XOR; a <= SCHED_ALLGATHER; a++) {
		struct sched_req req = { .algo = (enum sched_algo)a, .nranks = P, .rank_host = rh, .conflicts = 1 };
		double best = 1e18;
		struct sched *sc = NULL;
		char err[AN_ERR_LEN];
		for (int rep = 0; rep < 5; rep++) {
			sched_free(sc);
			sc = NULL;
			double t = now_ms();
			int rc = sched_build(rt, h, &req, threads, &sc, err);
			double dt = now_ms() - t;
			if (rc) {
				printf("%-9s  %s\n", sched_algo_name((enum sched_algo)a), err);
				break;
			}
			best = dt < best ? dt : best;
		}
		if (!sc)
			continue;
		double conf = 0, fconf = 0;
		for (uint32_t i = 0; i < sc->nsteps; i++) {
			conf += sc->fig[i].conflicts;
			fconf += sc->fig[i].fabric_conflicts;
		}
		double tc = now_ms();
		int ok = sched_check(sc, err) == AN_OK;
		printf("%-9s %8.1f ms  steps %5u  conflicts/step %7.1f  switch-link conflicts/step %7.1f  check %s "
		       "(%.0f ms)\n",
		       sched_algo_name((enum sched_algo)a), best, sc->nsteps, conf / sc->nsteps, fconf / sc->nsteps,
		       ok ? "ok" : err, now_ms() - tc);
		sched_free(sc);
	}
	free(rh);
	hier_free(h);
	route_free(rt);
	snap_free(s);
	return 0;
}
