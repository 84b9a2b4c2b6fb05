/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_build.c - build times and memory of the route index, the hierarchy
 * and a job's link-sharing analysis on an in-memory k-ary 3-level fat tree
 * (d-mod-k LFTs, as tests/unit/testfab.h builds it).
 *
 *   bench_build K [JOB [SNAPFILE]]   K even; JOB hosts for the share step
 *                                    (1024); SNAPFILE: also save the fabric
 *                                    (for bench/bench_query.py)
 *   HIER_REPS=N bench_build K        also N more hierarchy builds: min and
 *                                    median, each checked equal to the first
 *
 * "received -> served" is what topod does with a snapshot once it has
 * arrived: decode + validate (snap_decode), route_build, the distances and
 * cover (hopdist.h), hier_build_cover; hier_build with every hop count
 * walked follows for comparison. The tables copied while the bytes arrive
 * (room, then snap_early_feed, every SNAP_EARLY_STEP bytes, as topod's
 * builder does) are timed apart: they are off that path where the receive
 * takes at least as long, and the last step's bytes are decoded after it.
 *
 * Build: make bench  (build/bench/bench_build)
 *
 * The largest k that fits one subnet is 56: k^3/4 hosts plus 5k^2/4
 * switches must fit the 49,151 unicast LIDs, so k = 64 (65,536 hosts)
 * cannot exist as one IB subnet and is refused.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hier.h"
#include "hopdist.h"
#include "share.h"
#include "testfab.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double peak_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024.0;
}

static double rss_mib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * 4096.0 / (1 << 20);
}

/* FNV-1a over the hierarchy's arrays: equal before and after a change to
 * hier.c means the same tree, ancestors and names. */
static uint64_t fnv(uint64_t x, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x = (x ^ ((const unsigned char *)p)[i]) * 0x100000001B3ull;
	return x;
}

static uint64_t hier_sum(const struct hier *h)
{
	uint64_t x = 0xCBF29CE484222325ull;
	for (uint32_t c = 0; c < h->nclusters; c++) {
		const struct hier_cluster *k = &h->clusters[c];
		uint64_t f[] = { k->id, k->key, k->parent, k->level, k->dist, k->nhosts, k->nchildren };
		x = fnv(x, f, sizeof(f));
	}
	x = fnv(x, h->anc, (size_t)h->nhosts * h->depth * sizeof(*h->anc));
	x = fnv(x, h->host_parent, (size_t)h->nhosts * sizeof(*h->host_parent));
	/* names as strings: the bytes after a name's NUL are not part of it */
	for (uint32_t c = 0; c < h->nclusters; c++)
		x = fnv(x, h->names[c], strnlen(h->names[c], HIER_NAME_LEN) + 1);
	for (uint32_t i = 0; i < h->nsw; i++)
		x = fnv(x, h->swnames[i], strnlen(h->swnames[i], HIER_NAME_LEN) + 1);
	return x;
}

/* CPU time of the process (all threads), ms: on a shared machine the wall
 * time of a 2-thread build doubles when another job takes a core; this
 * does not. */
static double cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Where hier_build's time goes: its hop table (route_switch_hops from the
 * hosts' leaf switches to every host, as hier.c asks for it) timed alone,
 * and HIER_REPS more builds (env, default 0) checked equal to the first
 * and timed, min and median. */
static void hier_parts(const struct route_tab *rt, const struct hier *h0, double th)
{
	uint32_t nh = rt->nhosts, nleaf = 0;
	uint32_t *dep = malloc(((size_t)nh + 1) * sizeof(*dep)), *leaves = malloc(((size_t)nh + 1) * sizeof(*leaves));
	uint8_t *seen = calloc((size_t)rt->snap->nnodes + 1, 1);
	for (uint32_t x = 0; x < nh; x++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, x)];
		dep[x] = route_host_ep(rt, x);
		if (e->up == AN_OK && e->leaf != ROUTE_NONE && !seen[e->leaf]) {
			seen[e->leaf] = 1;
			leaves[nleaf++] = e->leaf;
		}
	}
	uint16_t *H = malloc(((size_t)nh * nleaf + 1) * sizeof(*H));
	double t = now_ms(), c0 = cpu_ms();
	int rc = route_switch_hops(rt, leaves, nleaf, dep, nh, H);
	double tr = now_ms() - t;
	printf("  of which hop table   %9.1f ms   (%.1f ms CPU; route_switch_hops, %u leaves x %u hosts%s); the rest"
	       " %.1f ms\n", tr, cpu_ms() - c0, nleaf, nh, rc ? ", FAILED" : "", th - tr);
	free(H);
	free(dep);
	free(leaves);
	free(seen);

	const char *env = getenv("HIER_REPS");
	int reps = env ? atoi(env) : 0;
	if (reps <= 0)
		return;
	double *ts = malloc((size_t)reps * sizeof(*ts)), *cs = malloc((size_t)reps * sizeof(*cs));
	int same = 1;
	for (int i = 0; i < reps; i++) {
		struct hier *h;
		double c = cpu_ms();
		t = now_ms();
		if (hier_build(rt, &h)) {
			fprintf(stderr, "hier_build failed\n");
			exit(1);
		}
		ts[i] = now_ms() - t;
		cs[i] = cpu_ms() - c;
		same = same && hier_sum(h) == hier_sum(h0);
		hier_free(h);
	}
	qsort(ts, (size_t)reps, sizeof(*ts), cmp_dbl);
	qsort(cs, (size_t)reps, sizeof(*cs), cmp_dbl);
	printf("hier_build x %d        min %.1f ms, median %.1f ms, max %.1f ms wall; CPU min %.1f, median %.1f ms;"
	       " %s\n", reps, ts[0], ts[reps / 2], ts[reps - 1], cs[0], cs[reps / 2],
	       same ? "every build equal to the first" : "BUILDS DIFFER");
	free(ts);
	free(cs);
}

/* Where decode's time goes (docs/performance.md, "Decode and validate"):
 * DECODE_REPS (env, default 0) more decodes of the same bytes, CPU min and
 * median of the whole, of the payload's checksum alone and of snap_validate
 * alone. */
static void decode_parts(const uint8_t *wire, size_t wlen)
{
	const char *env = getenv("DECODE_REPS");
	int reps = env ? atoi(env) : 0;
	if (reps <= 0)
		return;
	double *c[3];
	for (int k = 0; k < 3; k++)
		c[k] = malloc((size_t)reps * sizeof(double));
	char err[SNAP_ERR_LEN];
	for (int i = 0; i < reps; i++) {
		struct snap *s;
		/* topod's received bytes: already written, so mapped */
		uint8_t *rx = snap_bytes_realloc(NULL, wlen);
		if (!rx)
			exit(1);
		memcpy(rx, wire, wlen);
		double c0 = cpu_ms();
		if (snap_decode(rx, wlen, &s, err)) {
			fprintf(stderr, "decode: %s\n", err);
			exit(1);
		}
		free(rx);
		double c1 = cpu_ms();
		volatile uint32_t sum = snap_crc32c(0, wire + SNAP_HEADER_LEN, wlen - SNAP_HEADER_LEN);
		(void)sum;
		double c2 = cpu_ms();
		if (snap_validate(s, err))
			exit(1);
		double c3 = cpu_ms();
		snap_free(s);
		c[0][i] = c1 - c0;
		c[1][i] = c2 - c1;
		c[2][i] = c3 - c2;
	}
	for (int k = 0; k < 3; k++)
		qsort(c[k], (size_t)reps, sizeof(double), cmp_dbl);
	printf("snap_decode x %d        CPU min %.1f, median %.1f ms; of which checksum %.1f, %.1f, validate %.1f, %.1f\n",
	       reps, c[0][0], c[0][reps / 2], c[1][0], c[1][reps / 2], c[2][0], c[2][reps / 2]);
	for (int k = 0; k < 3; k++)
		free(c[k]);
}

/* As fabric_index_build: the distances and which LIDs the tables route
 * along shortest paths, then the hierarchy with its hop table read from
 * them (printed with received -> served since t_recv, and with t_room
 * added); then the same hierarchy walked, its time in *th. NULL on
 * failure. */
static struct hier *time_hierarchy(const struct route_tab *rt, double t_recv, double t_room, double *th)
{
	double before = rss_mib(), t = now_ms(), c_cov = cpu_ms();
	struct hopdist *hd = NULL;
	struct hopcover *hc = NULL;
	if (hopdist_build(rt, UINT64_MAX, &hd) || hopcover_new(hd, &hc) || hopcover_run(rt, hc, 0, rt->nsw, NULL)) {
		fprintf(stderr, "cover failed\n");
		return NULL;
	}
	hopdist_free(hd);
	printf("distances + cover      %9.1f ms   (%.1f ms CPU; %u of %u hosts' LIDs routed along shortest paths)\n",
	       now_ms() - t, cpu_ms() - c_cov, hc->covered, rt->nhosts);
	t = now_ms();
	struct hier *h, *hw;
	int rc = hier_build_cover(rt, hc, &h);
	hopcover_free(hc);
	if (rc) {
		fprintf(stderr, "hier_build_cover: %s\n", an_strerror(rc));
		return NULL;
	}
	printf("hier_build_cover       %9.1f ms   peak %7.1f MiB (rss before %.1f)   depth %u, %u classes, "
	       "%u clusters, checksum %016llx\n", now_ms() - t, peak_mib(), before, h->depth, h->nclasses,
	       h->nclusters, (unsigned long long)hier_sum(h));
	double served = now_ms() - t_recv;
	printf("received -> served     %9.1f ms   (decode + routes + cover + hierarchy; %.1f ms with the tables "
	       "made as they arrive)\n", served, served + t_room);
	t = now_ms();
	rc = hier_build(rt, &hw);
	*th = now_ms() - t;
	printf("hier_build (walked)    %9.1f ms   checksum %016llx%s\n", *th, rc ? 0ull : (unsigned long long)hier_sum(hw),
	       !rc && hier_sum(hw) == hier_sum(h) ? ", the same" : ", DIFFERENT");
	hier_free(hw);
	return h;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_build K [JOB]\n");
		return 2;
	}
	unsigned k = (unsigned)atoi(argv[1]), job = argc > 2 ? (unsigned)atoi(argv[2]) : 1024;
	const char *save = argc > 3 ? argv[3] : NULL;
	unsigned long hosts = (unsigned long)k * k * k / 4, sws = 5ul * k * k / 4;
	if (k < 2 || k % 2 || k > 254) {
		fprintf(stderr, "bench_build: K must be even, 2..254\n");
		return 2;
	}
	if (hosts + sws > SNAP_MAX_LID) {
		fprintf(stderr, "bench_build: k=%u needs %lu LIDs, one subnet has %u\n", k, hosts + sws, SNAP_MAX_LID);
		return 2;
	}
	if (job > hosts)
		job = (unsigned)hosts;
	printf("k=%u: %lu hosts, %lu switches, %d threads\n", k, hosts, sws, omp_get_max_threads());

	double t = now_ms();
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	tf_fattree3_finish(s, k);
	printf("fabric (test harness)  %9.1f ms   rss %7.1f MiB   LFTs %.1f MiB\n", now_ms() - t, rss_mib(),
	       s->nlft / 1048576.0);

	/* Decode what a producer would send: the daemon starts from bytes. */
	uint8_t *wire;
	size_t wlen;
	char err[SNAP_ERR_LEN];
	s->generation = 1;
	if (snap_encode(s, &wire, &wlen, err)) {
		fprintf(stderr, "encode: %s\n", err);
		return 1;
	}
	if (save && snap_write_atomic(save, wire, wlen, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	snap_free(s);
	decode_parts(wire, wlen);
	/* As topod receives: the bytes in a buffer of its kind */
	uint8_t *rx = snap_bytes_realloc(NULL, wlen);
	if (!rx)
		return 1;
	memcpy(rx, wire, wlen);
	free(wire);
	wire = rx;
	/* As topod's builder while the bytes arrive (builder_feed): at every
	 * SNAP_EARLY_STEP received, room for the tables, then the tables of
	 * the records in, copied into chunks; in fresh memory. */
	double t_room = now_ms();
	struct snap_early *early = wlen >= 2 * SNAP_EARLY_STEP ? snap_early_new() : NULL;
	for (size_t have = SNAP_EARLY_STEP, fed = 0; early && have < wlen; fed = have, have += SNAP_EARLY_STEP)
		if (snap_make_room(have - fed) || snap_early_feed(early, wire, have))
			return 1;
	t_room = now_ms() - t_room;
	uint64_t made = snap_early_entries(early);
	printf("tables as they arrive  %9.1f ms   (topod's builder, every %zu MiB received: room, then copies)\n", t_room,
	       SNAP_EARLY_STEP >> 20);
	/* As topod decodes after the last byte: the tables not made yet
	 * copied into chunks, the received bytes kept until written to the
	 * state directory. */
	double t_recv = now_ms(), c_recv = cpu_ms();
	if (snap_decode_early(wire, wlen, early, &s, err)) {
		fprintf(stderr, "decode: %s\n", err);
		return 1;
	}
	snap_early_free(early);
	double td = now_ms() - t_recv;
	printf("snap_decode+validate   %9.1f ms   (%.1f ms CPU; %.1f MiB on the wire; %llu of %llu table entries "
	       "made before)\n", td, cpu_ms() - c_recv, wlen / 1048576.0, (unsigned long long)made,
	       (unsigned long long)s->nlft);

	t = now_ms();
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		return 1;
	printf("route_build            %9.1f ms   rss %7.1f MiB\n", now_ms() - t, rss_mib());

	double th;
	struct hier *h = time_hierarchy(rt, t_recv, t_room, &th);
	if (!h)
		return 1;
	hier_parts(rt, h, th);

	uint32_t *H = malloc(job * sizeof(*H));
	for (unsigned i = 0; i < job; i++)
		H[i] = route_host_ep(rt, (uint32_t)((unsigned long)i * hosts / job));
	for (int keep = 1; keep >= 0; keep--) {
		t = now_ms();
		struct share *sh;
		int rc = share_build(rt, H, job, keep ? SHARE_KEEP_PATHS : 0, &sh);
		if (rc) {
			fprintf(stderr, "share_build: %s\n", an_strerror(rc));
			return 1;
		}
		printf("share_build %5u hosts %9.1f ms   (%s; %u leaves, %u links loaded, %u sharing)\n", job,
		       now_ms() - t, keep ? "with path matrix" : "loads and sharing only", sh->nleaves, sh->nlinks,
		       sh->nsharing);
		share_free(sh);
	}
	/* one pair query, as the daemon answers it */
	t = now_ms();
	unsigned long sum = 0;
	for (unsigned i = 0; i < 100000; i++) {
		uint32_t a = route_host_ep(rt, (uint32_t)(i * 7919ul % hosts)), b = route_host_ep(rt, (uint32_t)(i * 104729ul % hosts));
		sum += (unsigned long)route_hops(rt, a, rt->eps[b].lid);
	}
	printf("route_hops             %9.3f us per pair (checksum %lu)\n", (now_ms() - t) / 100.0, sum);
	printf("peak RSS               %9.1f MiB\n", peak_mib());
	free(H);
	hier_free(h);
	route_free(rt);
	snap_free(s);
	return 0;
}
