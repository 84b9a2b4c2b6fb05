/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sched_e2e.c - a `schedule` request end to end: topod's server runs
 * in this process (its event loop and worker pool on loopback TCP), the
 * client is libtii (tii_get_schedule: request, reply, parse, and the rank
 * expansion of a host-level reply). The job is hosts 0..HOSTS-1 of an
 * in-memory k-ary 3-level fat tree with d-mod-k LFTs, RANKS_PER_HOST ranks
 * each, host-major.
 *
 *   bench_sched_e2e K HOSTS RANKS_PER_HOST ALGO [REPS] [FORM]
 *
 * FORM: "hosts" (libtii's default: the host-level reply where topod has
 * one) or "ranks" (the rank-level reply old clients get). Prints the best
 * and median wall time of tii_get_schedule over REPS requests (default 7),
 * the reply's bytes and topod's own time (the same request sent raw, best
 * of 3), and the process's peak RSS
 * before the first request and after the last (VmHWM: topod's and libtii's
 * memory for one request at a time, since requests run one after another).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "fabric.h"
#include "server.h"
#include "store.h"
#include "testfab.h"
#include "tii.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long hwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static void *run(void *arg)
{
	server_run(arg);
	return NULL;
}

/* The reply's bytes for one raw request line. */
static size_t raw_bytes(int port, const char *req)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return 0;
	size_t n = 0, len = strlen(req);
	if (write(fd, req, len) != (ssize_t)len)
		return 0;
	shutdown(fd, SHUT_WR);
	static char buf[1 << 16];
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		n += (size_t)r;
	close(fd);
	return n;
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bench_sched_e2e K HOSTS RANKS_PER_HOST ALGO [REPS] [hosts|ranks]\n");
		return 2;
	}
	unsigned k = (unsigned)atoi(argv[1]), H = (unsigned)atoi(argv[2]), R = (unsigned)atoi(argv[3]);
	int reps = argc > 5 ? atoi(argv[5]) : 7;
	const char *form = argc > 6 ? argv[6] : "hosts";
	struct tii_schedule_params par = { .algo = -1, .conflicts = 1 };
	for (int a = 0; tii_schedule_algo_name(a); a++)
		if (!strcmp(argv[4], tii_schedule_algo_name(a)))
			par.algo = a;
	if (k < 2 || k % 2 || k > 64 || !H || H > k * k * k / 4 || !R || H * R > 16384 || par.algo < 0 || reps < 1 ||
	    reps > 100) {
		fprintf(stderr, "bench_sched_e2e: bad arguments\n");
		return 2;
	}
	struct store st;
	store_init(&st);
	struct snap *s = snap_new();
	tf_fattree3(s, k);
	tf_fattree3_finish(s, k);
	char err[SNAP_ERR_LEN];
	struct fabric_index *x = NULL;
	if (fabric_index_build(s, NULL, 2, &x, err)) {
		fprintf(stderr, "bench_sched_e2e: %s\n", err);
		return 1;
	}
	struct fabric *f = fabric_new(s, "bench");
	f->index = x;
	store_publish(&st, f);
	struct builder *b = builder_new(&st, NULL, 1, NULL);
	struct server_config cfg = {
		.listen = { "127.0.0.1:0" }, .nlisten = 1, .max_conns = 8, .idle_timeout_s = 60,
		.max_snapshot = 1 << 20, .ingest_timeout_s = 5, .out_hard = 1ull << 30, .out_soft = 1ull << 30,
		.out_soft_s = 60, .write_timeout_s = 60, .out_budget = 1ull << 31, .threads = 2, .heavy_queue = 8,
	};
	struct server_plane pl = { "default", &st, b };
	struct server *srv = server_new(&cfg, &pl, 1, err);
	if (!srv) {
		fprintf(stderr, "bench_sched_e2e: %s\n", err);
		return 1;
	}
	int port = server_query_port(srv, 0);
	pthread_t thr;
	pthread_create(&thr, NULL, run, srv);

	uint32_t P = H * R;
	char (*names)[16] = malloc((size_t)H * sizeof(*names));
	const char **rh = malloc((size_t)P * sizeof(*rh));
	size_t rawcap = (size_t)H * 24 + 256, ro;
	char *raw = malloc(rawcap);
	ro = (size_t)snprintf(raw, rawcap, "schedule %s%s", argv[4], strcmp(form, "hosts") ? "" : " form=hosts");
	for (uint32_t h = 0; h < H; h++) {
		snprintf(names[h], sizeof(names[h]), "h%04u", h);
		ro += (size_t)snprintf(raw + ro, rawcap - ro, R > 1 ? " %s*%u" : " %s", names[h], R);
	}
	snprintf(raw + ro, rawcap - ro, "\n");
	for (uint32_t r = 0; r < P; r++)
		rh[r] = names[r / R];

	char sp[32];
	snprintf(sp, sizeof(sp), "127.0.0.1:%d", port);
	tii_t *t = NULL;
	if (tii_open(&t, sp) || tii_set_timeout(t, 60000) || tii_set_max_reply_bytes(t, (size_t)1 << 30)) {
		fprintf(stderr, "bench_sched_e2e: tii_open\n");
		return 1;
	}
#ifdef TII_SCHED_FORM_RANKS
	if (!strcmp(form, "ranks"))
		tii_set_schedule_form(t, TII_SCHED_FORM_RANKS);
#endif
	long hwm0 = hwm_kb();
	double *ms = malloc((size_t)reps * sizeof(*ms));
	tii_schedule_t *sc = NULL;
	int rc = 0;
	for (int i = 0; i < reps && !rc; i++) {
		tii_schedule_free(sc);
		sc = NULL;
		double t0 = now_ms();
		rc = tii_get_schedule(t, &par, rh, P, &sc);
		ms[i] = now_ms() - t0;
	}
	if (rc) {
		fprintf(stderr, "bench_sched_e2e: %s: %s\n", tii_strerror(rc), tii_last_message(t));
		return 1;
	}
	long hwm1 = hwm_kb();
	qsort(ms, (size_t)reps, sizeof(*ms), cmp_d);
	double traw = 1e18;
	size_t bytes = 0;
	for (int i = 0; i < 3; i++) { /* topod alone: the raw request, its reply read and dropped */
		double t0 = now_ms();
		bytes = raw_bytes(port, raw);
		traw = now_ms() - t0 < traw ? now_ms() - t0 : traw;
	}
	printf("k=%u, %u hosts x %u ranks = %u ranks, %s (answered %s), form=%s: best %.1f ms, median %.1f ms over %d; "
	       "steps %d, time_us %.0f, bound_us %.0f; reply %zu bytes (topod alone best %.1f ms); peak RSS %ld MiB before, %ld MiB after\n",
	       k, H, R, P, argv[4], tii_schedule_algo_name(sc->algo), form, ms[0], ms[reps / 2], reps, sc->nsteps,
	       sc->time_s * 1e6, sc->bound_s * 1e6, bytes, traw, hwm0 / 1024, hwm1 / 1024);
	tii_schedule_free(sc);
	tii_close(t);
	free(ms);
	free(raw);
	free(rh);
	free(names);
	return 0;
}
