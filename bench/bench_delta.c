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
 * routes, hierarchy. OUTDIR: also writes base.snap (generation 1),
 * new.delta (generation 2 against 1) and new.snap (the same fabric as
 * generation 3) for bench/bench_delta.py to send to a real topod, and
 * CHAIN more reroutes as chain.NNN.delta, each against the one before
 * (generations 10, 11, ...; the first against base.snap).
 *
 * Build: make bench (build/bench/bench_delta)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "delta.h"
#include "fabric.h"
#include "hier.h"
#include "testfab.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Changes about want LFT blocks of leaf and aggregation switches, spread
 * over the fabric as a reroute after a link fault touches many switches a
 * little: remote destinations move to the next up port, so every route
 * keeps its length. Returns the blocks changed. */
static uint64_t reroute(struct snap *b, uint64_t blocks, uint64_t want, unsigned h)
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
			uint8_t *e = b->lft + n->lft_off + (uint64_t)blk * SNAP_DELTA_BLOCK;
			uint32_t len = n->lft_len - blk * SNAP_DELTA_BLOCK;
			int any = 0;
			for (uint32_t l = 0; l < len && l < SNAP_DELTA_BLOCK; l++)
				if (e[l] != SNAP_LFT_NONE && e[l] > h) {
					e[l] = (uint8_t)(h + 1 + (e[l] - h) % h);
					any = 1;
				}
			changed += any;
		}
	}
	return changed;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench_delta: %s: %s\n", what, err);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_delta K PERMILLE [OUTDIR]\n");
		return 2;
	}
	unsigned k = (unsigned)atoi(argv[1]), permille = (unsigned)atoi(argv[2]), h = k / 2;
	const char *outdir = argc > 3 ? argv[3] : NULL;
	unsigned chain = argc > 4 ? (unsigned)atoi(argv[4]) : 0;
	if (k < 4 || k % 2 || k > 56 || permille > 1000) {
		fprintf(stderr, "bench_delta: K even 4..56, PERMILLE 0..1000\n");
		return 2;
	}
	char err[SNAP_ERR_LEN];
	struct snap *a = snap_new();
	tf_fattree3(a, k);
	tf_fattree3_finish(a, k);
	a->generation = 1;
	a->timestamp = 1;
	snprintf(a->engine, sizeof(a->engine), "ftree");

	struct snap *b = snap_dup(a);
	if (!b)
		die("dup", "out of memory");
	b->generation = 2;
	b->timestamp = 2;
	uint64_t blocks = 0;
	for (uint32_t i = 0; i < b->nnodes; i++)
		if (b->nodes[i].type == SNAP_NODE_SWITCH)
			blocks += (b->nodes[i].lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
	uint64_t want = blocks * permille / 1000;
	tf_rng_state = 42;
	uint64_t changed = reroute(b, blocks, want, h);
	printf("k=%u: %u nodes, %lu LFT blocks, %lu changed (%.2f %%)\n", k, a->nnodes, (unsigned long)blocks,
	       (unsigned long)changed, 100.0 * changed / blocks);

	double t = now_ms();
	uint8_t *full;
	size_t flen;
	if (snap_encode(b, &full, &flen, err))
		die("encode", err);
	double t_enc = now_ms() - t;
	t = now_ms();
	struct snap *c;
	if (snap_decode(full, flen, &c, err))
		die("decode", err);
	double t_dec = now_ms() - t;
	snap_free(c);

	t = now_ms();
	uint8_t *d;
	size_t dlen;
	if (snap_delta_encode(a, b, &d, &dlen, err))
		die("delta encode", err);
	double t_denc = now_ms() - t;
	t = now_ms();
	struct snap *e = snap_dup(a);
	double t_dup = now_ms() - t;
	snap_free(e);
	t = now_ms();
	if (snap_validate(a, err))
		die("validate", err);
	double t_val = now_ms() - t;
	t = now_ms();
	struct snap_delta_info info = { 0 };
	if (snap_delta_apply(a, d, dlen, &c, &info, err))
		die("delta apply", err);
	double t_app = now_ms() - t;
	if (snap_diff(b, c, SNAP_DIFF_STATE, NULL, NULL))
		die("delta apply", "result differs from the target");

	t = now_ms();
	struct route_tab *rt;
	if (route_build(c, NULL, &rt))
		die("route_build", "failed");
	double t_rt = now_ms() - t;
	t = now_ms();
	struct hier *hi;
	if (hier_build(rt, &hi))
		die("hier_build", "failed");
	double t_hi = now_ms() - t;

	/* What topod does: the base's index exists; the delta's reuses what
	 * the change cannot affect (fabric_index_update). */
	struct fabric_index *xa = NULL;
	fabric_index_build(a, NULL, 0, &xa, err);
	if (!xa)
		die("index", err);
	snap_free(c);
	struct snap_delta_info winfo = { .want_blocks = 1 };
	t = now_ms();
	if (snap_delta_apply(a, d, dlen, &c, &winfo, err))
		die("delta apply", err);
	double t_app2 = now_ms() - t;
	int reused;
	t = now_ms();
	struct fabric_index *xc = NULL;
	fabric_index_update(c, xa, &winfo, NULL, 0, &reused, &xc, err);
	if (!xc)
		die("update", err);
	double t_upd = now_ms() - t;
	printf("incremental index      %8.1f ms (routes %.1f, hop check%s %.1f)\n", t_upd, xc->route_ms, reused ? " and shared hierarchy" : " and new hierarchy", xc->hier_ms);
	printf("served after the delta %8.1f ms in topod's order: apply %.1f + index %.1f (before persisting)\n",
	       t_app2 + t_upd, t_app2, t_upd);
	free(winfo.block);
	fabric_index_free(xc);
	fabric_index_free(xa);

	printf("full snapshot          %10zu bytes   encode %8.1f ms   decode+validate %8.1f ms\n", flen, t_enc, t_dec);
	printf("delta                  %10zu bytes   encode %8.1f ms   apply %8.1f ms (copy %.1f, validate %.1f)\n",
	       dlen, t_denc, t_app, t_dup, t_val);
	printf("delta / full           %10.4f %%\n", 100.0 * dlen / flen);
	printf("route_build %8.1f ms   hier_build %8.1f ms\n", t_rt, t_hi);
	printf("from scratch: after a full snapshot %8.1f ms (decode + routes + hierarchy)\n", t_dec + t_rt + t_hi);

	if (outdir) {
		char p[4096];
		uint8_t *base;
		size_t blen;
		if (snap_encode(a, &base, &blen, err))
			die("encode", err);
		snprintf(p, sizeof(p), "%s/base.snap", outdir);
		if (snap_write_atomic(p, base, blen, err))
			die(p, err);
		snprintf(p, sizeof(p), "%s/new.delta", outdir);
		if (snap_write_atomic(p, d, dlen, err))
			die(p, err);
		free(full);
		b->generation = 3;
		b->timestamp = 3;
		if (snap_encode(b, &full, &flen, err))
			die("encode", err);
		snprintf(p, sizeof(p), "%s/new.snap", outdir);
		if (snap_write_atomic(p, full, flen, err))
			die(p, err);
		free(base);
		/* A chain of reroutes, each a delta against the one before
		 * (generations 10, 11, ...), for bench/bench_delta.py's history. */
		struct snap *prev = snap_dup(a);
		for (unsigned i = 0; i < chain; i++) {
			struct snap *next = snap_dup(prev);
			next->generation = next->timestamp = 10 + i;
			prev->generation = prev->timestamp = i ? 10 + i - 1 : 1;
			reroute(next, blocks, want, h);
			uint8_t *cd;
			size_t cl;
			if (snap_delta_encode(prev, next, &cd, &cl, err))
				die("chain", err);
			snprintf(p, sizeof(p), "%s/chain.%03u.delta", outdir, i);
			if (snap_write_atomic(p, cd, cl, err))
				die(p, err);
			free(cd);
			snap_free(prev);
			prev = next;
		}
		snap_free(prev);
	}
	hier_free(hi);
	route_free(rt);
	free(full);
	free(d);
	snap_free(a);
	snap_free(b);
	snap_free(c);
	return 0;
}
