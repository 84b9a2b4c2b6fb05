/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_delta.c - what a reroute costs as a delta snapshot versus a full
 * one, on an in-memory k-ary 3-level fat tree (tests/unit/testfab.h).
 *
 *   bench_delta K PERMILLE [OUTDIR [CHAIN]]
 *
 * The reroute changes PERMILLE/1000 of all 64-entry LFT blocks (leaf and
 * aggregation switches: the up-port choice of their remote destinations
 * moves to the next up port, so every route stays valid). Prints the bytes
 * and the time of each step topod and the plugin take: full encode,
 * decode+validate, delta encode, delta apply (copy + records + validate),
 * routes, hierarchy, the history's delta back (told the apply's blocks or
 * not). OUTDIR: also writes base.snap (generation 1),
 * new.delta (generation 2 against 1) and new.snap (the same fabric as
 * generation 3) for bench/bench_delta.py to send to a real topod, and
 * CHAIN more reroutes as chain.NNN.delta, each against the one before
 * (generations 10, 11, ...; the first against base.snap). DELTA_FAULT=1:
 * the chain's first delta is a cable fault instead (pod 0's leaves lose
 * their cables to aggregation switch 0, rerouted round them), and the
 * reroutes after it avoid the lost cables.
 *
 *   bench_delta --files BASE.snap NEW.snap
 *
 * The same steps for two snapshot files, e.g. the plugin's spool before
 * and after a real fault (bench/real_fault.sh with REAL_FAULT_KEEP).
 * DELTA_REPS=N repeats the delta; DELTA_IDLE=S leaves the base alone S
 * seconds before each, as topod is between two routing passes; and
 * DELTA_WARM=MS reads the base, its index and the pool's spare every MS
 * meanwhile, as topod's --warm-interval does. malloc is set as topod
 * sets it.
 *
 * Build: make bench (build/bench/bench_delta)
 */
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "delta.h"
#include "fabric.h"
#include "hier.h"
#include "testfab.h"
#include "util.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench_delta: %s: %s\n", what, err);
	exit(1);
}

/* Changes about want LFT blocks of leaf and aggregation switches, spread
 * over the fabric as a reroute after a link fault touches many switches a
 * little: remote destinations move to the next up port, so every route
 * keeps its length. Returns the blocks changed. */
static uint64_t reroute(struct snap *b, uint64_t blocks, uint64_t want, unsigned h, int faulted)
{
	uint64_t changed = 0;
	for (uint32_t i = 0; i < b->nnodes && changed < want; i++) {
		struct snap_node *n = &b->nodes[i];
		if (n->type != SNAP_NODE_SWITCH || n->guid - TF_SW_GUID >= 200000)
			continue;
		uint32_t nb = (n->lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
		for (uint32_t blk = 0; blk < nb && changed < want; blk++) {
			if (tf_rand() % blocks >= want * 2)
				continue;
			uint32_t len = n->lft_len - blk * SNAP_DELTA_BLOCK;
			uint8_t *e = snap_lft_own(b, i, blk * SNAP_DELTA_BLOCK, len < SNAP_DELTA_BLOCK ? len : SNAP_DELTA_BLOCK);
			if (!e)
				die("reroute", "snap_lft_own");
			int any = 0;
			for (uint32_t l = 0; l < len && l < SNAP_DELTA_BLOCK; l++)
				if (e[l] != SNAP_LFT_NONE && e[l] > h) {
					uint8_t to = (uint8_t)(h + 1 + (e[l] - h) % h);
					/* After tf_fault_pod0: never towards the lost cables. */
					if (faulted && to == h + 1 &&
					    (n->guid - TF_SW_GUID < h || blk * SNAP_DELTA_BLOCK + l <= h * h))
						to = (uint8_t)(h + 1 + (to - h) % h);
					any |= to != e[l];
					e[l] = to;
				}
			changed += any;
		}
	}
	return changed;
}

/* What the steps below share: the two fabrics, their encodings, the
 * timings (ms) they print. */
struct bench {
	unsigned k, h;
	uint64_t blocks, want;
	struct snap *a, *b, *c; /* base, rerouted, b rebuilt from a + delta */
	uint8_t *full, *d;
	size_t flen, dlen;
	struct route_tab *rt;
	struct hier *hi;
	double t_enc, t_dec, t_denc, t_dup, t_val, t_app, t_rt, t_hi;
};

/* The base fabric (generation 1) and its reroute (generation 2). */
static void make_fabrics(struct bench *x, unsigned permille)
{
	x->a = snap_new();
	tf_fattree3(x->a, x->k);
	tf_fattree3_finish(x->a, x->k);
	x->a->generation = 1;
	x->a->timestamp = 1;
	snprintf(x->a->engine, sizeof(x->a->engine), "ftree");

	x->b = snap_dup(x->a);
	if (!x->b)
		die("dup", "out of memory");
	x->b->generation = 2;
	x->b->timestamp = 2;
	x->blocks = 0;
	for (uint32_t i = 0; i < x->b->nnodes; i++)
		if (x->b->nodes[i].type == SNAP_NODE_SWITCH)
			x->blocks += (x->b->nodes[i].lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
	x->want = x->blocks * permille / 1000;
	tf_rng_state = 42;
	uint64_t changed = reroute(x->b, x->blocks, x->want, x->h, 0);
	printf("k=%u: %u nodes, %lu LFT blocks, %lu changed (%.2f %%)\n", x->k, x->a->nnodes,
	       (unsigned long)x->blocks, (unsigned long)changed, 100.0 * changed / x->blocks);
}

/* Full encode and decode, delta encode and apply (with the copy and the
 * validation apply spends its time on), then routes and hierarchy of the
 * result. */
static void time_from_scratch(struct bench *x)
{
	char err[SNAP_ERR_LEN];
	double t = now_ms();
	if (snap_encode(x->b, &x->full, &x->flen, err))
		die("encode", err);
	x->t_enc = now_ms() - t;
	t = now_ms();
	struct snap *c;
	if (snap_decode(x->full, x->flen, &c, err))
		die("decode", err);
	x->t_dec = now_ms() - t;
	snap_free(c);

	t = now_ms();
	if (snap_delta_encode(x->a, x->b, &x->d, &x->dlen, err))
		die("delta encode", err);
	x->t_denc = now_ms() - t;
	t = now_ms();
	struct snap *e = snap_dup(x->a);
	x->t_dup = now_ms() - t;
	snap_free(e);
	t = now_ms();
	if (snap_validate(x->a, err))
		die("validate", err);
	x->t_val = now_ms() - t;
	t = now_ms();
	struct snap_delta_info info = { 0 };
	if (snap_delta_apply(x->a, x->d, x->dlen, &x->c, &info, err))
		die("delta apply", err);
	x->t_app = now_ms() - t;
	if (snap_diff(x->b, x->c, SNAP_DIFF_STATE, NULL, NULL))
		die("delta apply", "result differs from the target");

	t = now_ms();
	if (route_build(x->c, NULL, &x->rt))
		die("route_build", "failed");
	x->t_rt = now_ms() - t;
	t = now_ms();
	if (hier_build(x->rt, &x->hi))
		die("hier_build", "failed");
	x->t_hi = now_ms() - t;
}

/* Page faults the process took: fresh memory (or memory given back and
 * taken again) costs one each. */
static long minflt(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt + u.ru_majflt;
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* DELTA_WARM=MS: what topod's preparation thread does between snapshots
 * (--warm-interval): the base, its index and the kept buffers read one
 * byte a page every MS. */
struct warmer {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, on;
	unsigned ms;
	const struct snap *s;
	const struct fabric_index *x;
	uint64_t rounds, bytes;
	double last_ms, max_ms;
};

static void *warmer_main(void *arg)
{
	struct warmer *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec until = util_deadline(CLOCK_REALTIME, w->ms);
		pthread_cond_timedwait(&w->cv, &w->mu, &until);
		if (w->stop)
			break;
		double t = now_ms();
		w->bytes = snap_touch(w->s, NULL) + fabric_index_touch(w->x, NULL) + snap_lft_touch_spare(NULL) +
			   snap_bytes_touch_kept();
		w->last_ms = now_ms() - t;
		w->max_ms = w->last_ms > w->max_ms ? w->last_ms : w->max_ms;
		w->rounds++;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void start_warm(struct warmer *w, const struct snap *s, const struct fabric_index *x)
{
	const char *we = getenv("DELTA_WARM");
	memset(w, 0, sizeof(*w));
	if (!we || atoi(we) <= 0)
		return;
	w->ms = (unsigned)atoi(we);
	w->s = s;
	w->x = x;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->on = !pthread_create(&w->th, NULL, warmer_main, w);
}

static void stop_warm(struct warmer *w)
{
	if (!w->on)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	printf("kept mapped: %" PRIu64 " readings of %.1f MB, the last %.1f ms (longest %.1f ms)\n", w->rounds,
	       w->bytes / 1e6, w->last_ms, w->max_ms);
}

/* What topod does: the base's index exists with its cover (a full build
 * makes it; timed here apart, the build's cover dropped and made again;
 * DELTA_WALK=1: dropped, so the proof walks); the delta's reuses what the
 * change cannot affect (fabric_index_update).
 * DELTA_REPS (default 1) repetitions, each with wall and CPU time (both
 * threads), so that on a shared machine the steadier CPU figure is there
 * too. */
static void time_incremental(struct bench *x)
{
	char err[SNAP_ERR_LEN];
	struct fabric_index *xa = NULL;
	fabric_index_build(x->a, NULL, 0, &xa, err);
	if (!xa)
		die("index", err);
	hopcover_free(xa->hc);
	xa->hc = NULL;
	const char *w = getenv("DELTA_WALK");
	if (!w || strcmp(w, "1")) {
		/* The distances (the links alone) apart, then all of it: the
		 * rest is the cover, a pass over every table. */
		double t = now_ms(), c = cpu_ms();
		struct hopdist *hd = NULL;
		int rc = hopdist_build(xa->rt, UINT64_MAX, &hd);
		hopdist_free(hd);
		double t_d = now_ms() - t, c_d = cpu_ms() - c;
		t = now_ms();
		c = cpu_ms();
		rc = rc ? rc : fabric_index_prepare(xa, NULL);
		printf("cover (in a full build) %7.1f ms, CPU %.1f ms (of which distances %.1f ms, CPU %.1f): %u LIDs "
		       "covered%s%s\n", now_ms() - t, cpu_ms() - c, t_d, c_d, xa->hc ? xa->hc->covered : 0,
		       rc ? ", " : "", rc ? an_strerror(rc) : "");
	}
	const char *e = getenv("DELTA_REPS");
	int reps = e && atoi(e) > 0 ? atoi(e) : 1;
	const char *ie = getenv("DELTA_IDLE");
	unsigned idle = ie ? (unsigned)atoi(ie) : 0;
	struct warmer wm;
	start_warm(&wm, x->a, xa);
	for (int r = 0; r < reps; r++) {
		snap_free(x->c);
		x->c = NULL;
		if (idle) {
			/* As topod between two passes: minutes apart. */
			printf("idle %u s\n", idle);
			fflush(stdout);
			sleep(idle);
		}
		/* topod's reading waits while a snapshot is built (prep_pause):
		 * holding its lock keeps the next one from starting. */
		if (wm.on)
			pthread_mutex_lock(&wm.mu);
		struct snap_delta_info winfo = { .want_blocks = 1 };
		long f0 = minflt();
		double t = now_ms(), c = cpu_ms();
		if (snap_delta_apply(x->a, x->d, x->dlen, &x->c, &winfo, err))
			die("delta apply", err);
		double t_app2 = now_ms() - t, c_app = cpu_ms() - c;
		long f_app = minflt() - f0;
		uint64_t copied = 0;
		uint32_t ncopied = 0;
		for (uint32_t i = 0; i < x->c->nnodes; i++)
			if (x->c->nodes[i].lft != x->a->nodes[i].lft) {
				const struct snap_lft *p = x->c->nodes[i].lft, *q = x->a->nodes[i].lft;
				for (uint32_t k = 0; k < p->nchunks; k++)
					copied += p->chunk[k] != q->chunk[k] ? SNAP_LFT_CHUNK : 0;
				ncopied++;
			}
		printf("copy-on-write          %u tables touched, %.2f of %.1f MB copied in %u-entry chunks; "
		       "%.1f MB shared with its base\n",
		       ncopied, copied / 1e6, snap_lft_held(x->c) / 1e6, SNAP_LFT_CHUNK,
		       (snap_lft_held(x->c) - copied) / 1e6);
		int reused;
		t = now_ms();
		c = cpu_ms();
		struct fabric_index *xc = NULL;
		fabric_index_update(x->c, xa, &winfo, NULL, 0, &reused, &xc, err);
		if (!xc)
			die("update", err);
		double t_upd = now_ms() - t, c_upd = cpu_ms() - c;
		long f_upd = minflt() - f0 - f_app;
		if (wm.on)
			pthread_mutex_unlock(&wm.mu);
		printf("incremental index      %8.1f ms (routes %.1f, hop check%s %.1f), CPU %.1f ms\n", t_upd,
		       xc->route_ms, reused ? " and shared hierarchy" : " and new hierarchy", xc->hier_ms, c_upd);
		printf("served after the delta %8.1f ms in topod's order: apply %.1f + index %.1f (before persisting); "
		       "CPU apply %.1f + index %.1f ms; page faults %ld + %ld\n",
		       t_app2 + t_upd, t_app2, t_upd, c_app, c_upd, f_app, f_upd);
		/* Then the history keeps the generation before as the delta
		 * back (topod/history.c, retire_head), on the builder thread. */
		uint8_t *rd;
		size_t rl;
		t = now_ms();
		if (snap_delta_encode(x->c, x->a, &rd, &rl, err))
			die("delta back", err);
		double t_back = now_ms() - t;
		free(rd);
		t = now_ms();
		if (snap_delta_encode_hint(x->c, x->a, winfo.block, winfo.blocks, &rd, &rl, err))
			die("delta back", err);
		printf("history entry          %8.1f ms comparing every copied table, %.1f ms told the apply's %u "
		       "blocks (%zu bytes)\n", t_back, now_ms() - t, winfo.blocks, rl);
		free(rd);
		snap_delta_info_keep(&winfo); /* as topod does: the next repetition lists in it */
		fabric_index_free(xc);
	}
	stop_warm(&wm);
	fabric_index_free(xa);
}

static void print_summary(const struct bench *x)
{
	printf("full snapshot          %10zu bytes   encode %8.1f ms   decode+validate %8.1f ms\n", x->flen, x->t_enc,
	       x->t_dec);
	printf("delta                  %10zu bytes   encode %8.1f ms   apply %8.1f ms (copy %.1f, validate %.1f)\n",
	       x->dlen, x->t_denc, x->t_app, x->t_dup, x->t_val);
	printf("delta / full           %10.4f %%\n", 100.0 * x->dlen / x->flen);
	printf("route_build %8.1f ms   hier_build %8.1f ms\n", x->t_rt, x->t_hi);
	printf("from scratch: after a full snapshot %8.1f ms (decode + routes + hierarchy)\n",
	       x->t_dec + x->t_rt + x->t_hi);
}

/* base.snap, new.delta, new.snap (generation 3) and the chain for
 * bench/bench_delta.py. */
static void write_outputs(struct bench *x, const char *outdir, unsigned chain)
{
	char p[4096], err[SNAP_ERR_LEN];
	uint8_t *base;
	size_t blen;
	if (snap_encode(x->a, &base, &blen, err))
		die("encode", err);
	snprintf(p, sizeof(p), "%s/base.snap", outdir);
	if (snap_write_atomic(p, base, blen, err))
		die(p, err);
	snprintf(p, sizeof(p), "%s/new.delta", outdir);
	if (snap_write_atomic(p, x->d, x->dlen, err))
		die(p, err);
	free(x->full);
	x->b->generation = 3;
	x->b->timestamp = 3;
	if (snap_encode(x->b, &x->full, &x->flen, err))
		die("encode", err);
	snprintf(p, sizeof(p), "%s/new.snap", outdir);
	if (snap_write_atomic(p, x->full, x->flen, err))
		die(p, err);
	free(base);
	/* A chain of reroutes, each a delta against the one before
	 * (generations 10, 11, ...), for bench/bench_delta.py's history. */
	struct snap *prev = snap_dup(x->a);
	const char *fe = getenv("DELTA_FAULT");
	int faulted = fe && !strcmp(fe, "1");
	/* topod's journal entry for each: the previous one composed with it
	 * (snap_delta_compose), timed here on its own. */
	uint8_t *cum = NULL;
	size_t cuml = 0;
	double tc_max = 0, tc_sum = 0;
	for (unsigned i = 0; i < chain; i++) {
		struct snap *next = snap_dup(prev);
		next->generation = next->timestamp = 10 + i;
		prev->generation = prev->timestamp = i ? 10 + i - 1 : 1;
		if (faulted && i == 0)
			tf_fault_pod0(next, x->h);
		else
			reroute(next, x->blocks, x->want, x->h, faulted);
		uint8_t *cd;
		size_t cl;
		if (snap_delta_encode(prev, next, &cd, &cl, err))
			die("chain", err);
		snprintf(p, sizeof(p), "%s/chain.%03u.delta", outdir, i);
		if (snap_write_atomic(p, cd, cl, err))
			die(p, err);
		if (!cum) {
			cum = cd;
			cuml = cl;
		} else {
			uint8_t *nc;
			double t = now_ms();
			if (snap_delta_compose(next, cum, cuml, cd, cl, &nc, &cuml, err))
				die("compose", err);
			t = now_ms() - t;
			tc_sum += t;
			tc_max = t > tc_max ? t : tc_max;
			free(cum);
			free(cd);
			cum = nc;
		}
		snap_free(prev);
		prev = next;
	}
	if (chain > 1)
		printf("journal entry (composed) %8zu bytes after %u deltas (%.2f %% of the snapshot); compose mean %.2f ms, "
		       "max %.2f ms\n",
		       cuml, chain, 100.0 * cuml / x->flen, tc_sum / (chain - 1), tc_max);
	free(cum);
	snap_free(prev);
}

static uint64_t count_blocks(const struct snap *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].type == SNAP_NODE_SWITCH)
			n += (s->nodes[i].lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
	return n;
}

/* Two snapshot files as base and reroute: the delta is what the subnet
 * manager really changed. */
static void read_fabrics(struct bench *x, const char *base, const char *new)
{
	char err[SNAP_ERR_LEN];
	if (snap_read_file(base, &x->a, err))
		die(base, err);
	if (snap_read_file(new, &x->b, err))
		die(new, err);
	x->blocks = count_blocks(x->b);
	printf("%s -> %s: %u nodes, %lu LFT blocks\n", base, new, x->b->nnodes, (unsigned long)x->blocks);
}

int main(int argc, char **argv)
{
	/* topod's own settings (topod/main.c): an array of 1 MB and more
	 * is mapped apart, so fresh pages each time, as there */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	if (argc == 4 && !strcmp(argv[1], "--files")) {
		struct bench f = { 0 };
		read_fabrics(&f, argv[2], argv[3]);
		time_from_scratch(&f);
		time_incremental(&f);
		print_summary(&f);
		hier_free(f.hi);
		route_free(f.rt);
		free(f.full);
		free(f.d);
		snap_free(f.a);
		snap_free(f.b);
		snap_free(f.c);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: bench_delta K PERMILLE [OUTDIR [CHAIN]] | bench_delta --files BASE NEW\n");
		return 2;
	}
	struct bench x = { 0 };
	x.k = (unsigned)atoi(argv[1]);
	x.h = x.k / 2;
	unsigned permille = (unsigned)atoi(argv[2]);
	const char *outdir = argc > 3 ? argv[3] : NULL;
	unsigned chain = argc > 4 ? (unsigned)atoi(argv[4]) : 0;
	if (x.k < 4 || x.k % 2 || x.k > 56 || permille > 1000) {
		fprintf(stderr, "bench_delta: K even 4..56, PERMILLE 0..1000\n");
		return 2;
	}
	make_fabrics(&x, permille);
	time_from_scratch(&x);
	time_incremental(&x);
	print_summary(&x);
	if (outdir)
		write_outputs(&x, outdir, chain);
	hier_free(x.hi);
	route_free(x.rt);
	free(x.full);
	free(x.d);
	snap_free(x.a);
	snap_free(x.b);
	snap_free(x.c);
	return 0;
}
