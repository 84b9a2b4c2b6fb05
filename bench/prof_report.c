/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof_report.c - the end-of-job report of topoprof for a large job,
 * offline: synthetic per-rank counters fed to the report builder that rank 0
 * runs at MPI_Finalize (profiler/report.c), timed phase by phase. No MPI:
 * the gather itself is n-1 receives of 32 x n bytes, measured under mpirun
 * by the report's own "seconds.gather" instead.
 *
 *   build/bench/prof_report N PPH OUTPREFIX [HOSTFILE]
 *
 * N ranks, PPH ranks per host. Traffic: every rank sends a 3-D stencil's six
 * halos (point-to-point, 64 KiB each, 10 messages) and takes part in an
 * all-to-all (logical collective, 4 KiB per pair) - a dense n x n matrix,
 * the worst case for the report. With HOSTFILE (one host per line, at least
 * N/PPH of them) the hosts are those and the fabric part comes from the real
 * topod at $TII_SERVERS (hop matrix, tree, link loads); without it the hosts
 * are synthetic and the report has no fabric part (the hop split is then
 * timed with a synthetic fat-tree hop matrix, 16 hosts per leaf).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: prof_report N RANKS_PER_HOST OUTPREFIX [HOSTFILE]\n");
		return 2;
	}
	int n = atoi(argv[1]), pph = atoi(argv[2]);
	if (n < 2 || pph < 1) {
		fprintf(stderr, "prof_report: bad N or RANKS_PER_HOST\n");
		return 2;
	}
	int nh = (n + pph - 1) / pph;
	char *names = calloc((size_t)n, PROF_NAME_SLOT);
	char (*hl)[PROF_NAME_SLOT] = calloc((size_t)nh, PROF_NAME_SLOT);
	if (!names || !hl)
		return 1;
	if (argc > 4) {
		FILE *f = fopen(argv[4], "r");
		int k = 0;
		char line[PROF_NAME_SLOT];
		while (f && k < nh && fgets(line, sizeof(line), f)) {
			line[strcspn(line, " \t\r\n")] = '\0';
			if (line[0] && line[0] != '#')
				strcpy(hl[k++], line);
		}
		if (f)
			fclose(f);
		if (k < nh) {
			fprintf(stderr, "prof_report: %s: %d hosts, need %d\n", argv[4], k, nh);
			return 1;
		}
	} else
		for (int h = 0; h < nh; h++)
			snprintf(hl[h], PROF_NAME_SLOT, "synth%05d", h);
	for (int r = 0; r < n; r++)
		strcpy(names + (size_t)r * PROF_NAME_SLOT, hl[r / pph]);

	double t0 = now();
	struct prof_rep R;
	if (rep_init(&R, n, names)) {
		fprintf(stderr, "prof_report: out of memory\n");
		return 1;
	}
	void *h = NULL;
	if (argc > 4)
		fab_query(&R, &h);
	else {
		/* a synthetic two-level fat tree: 16 hosts per leaf */
		R.fab.hops = malloc((size_t)nh * nh * sizeof(uint16_t));
		for (int a = 0; a < nh; a++)
			for (int b = 0; b < nh; b++)
				R.fab.hops[(size_t)a * nh + b] = a == b ? 0 : a / 16 == b / 16 ? 1 : 3;
		R.fab.ok = 1;
		snprintf(R.fab.server, sizeof(R.fab.server), "synthetic");
		snprintf(R.fab.levels_why, PROF_WHY, "synthetic fabric");
		snprintf(R.fab.links_why, PROF_WHY, "synthetic fabric");
	}
	double t1 = now();

	/* the 3-D grid for the stencil */
	int d[3] = { 1, 1, 1 };
	for (int p = n, i = 0; p > 1; i = (i + 1) % 3) {
		int f = 2;
		while (p % f)
			f++;
		d[i] *= f;
		p /= f;
	}
	uint64_t *row = calloc((size_t)ROW_NARRAYS * n, sizeof(uint64_t));
	double tadd = 0;
	for (int r = 0; r < n; r++) {
		memset(row, 0, (size_t)ROW_NARRAYS * n * sizeof(uint64_t));
		int c[3] = { r % d[0], (r / d[0]) % d[1], r / (d[0] * d[1]) };
		for (int a = 0; a < 3; a++)
			for (int s = -1; s <= 1; s += 2) {
				int cc[3] = { c[0], c[1], c[2] };
				cc[a] = (cc[a] + s + d[a]) % d[a];
				int w = cc[0] + d[0] * (cc[1] + d[1] * cc[2]);
				row[(size_t)ROW_P2P_BYTES * n + w] += 10 * 65536;
				row[(size_t)ROW_P2P_MSGS * n + w] += 10;
			}
		for (int w = 0; w < n; w++)
			if (w != r) {
				row[(size_t)ROW_COLL_BYTES * n + w] = 4096;
				row[(size_t)ROW_COLL_MSGS * n + w] = 1;
			}
		double a0 = now();
		rep_add_row(&R, r, row);
		tadd += now() - a0;
	}
	double t2 = now();
	if (argc > 4 && R.fab.ok)
		links_compute(&R, h, 10);
	fab_close(h);
	double t3 = now();
	R.secs_gather = tadd;
	R.secs_fabric = (t1 - t0) + (t3 - t2);
	char why[PROF_WHY];
	if (rep_write(&R, argv[3], why)) {
		fprintf(stderr, "prof_report: %s\n", why);
		return 1;
	}
	double t4 = now();
	printf("prof_report ranks=%d hosts=%d fabric=%s links=%s topod_s=%.3f fold_s=%.3f links_s=%.3f write_s=%.3f "
	       "total_s=%.3f p2p_bytes=%" PRIu64 " coll_bytes=%" PRIu64 "\n",
	       n, nh, R.fab.ok ? "yes" : "no", R.fab.links_ok ? "yes" : "no", t1 - t0, tadd, t3 - t2, t4 - t3,
	       t4 - t0, R.total[0], R.total[2]);
	if (!R.fab.ok)
		printf("prof_report: no fabric part: %s\n", R.fab.why);
	rep_free(&R);
	free(row);
	free(names);
	free(hl);
	return 0;
}
