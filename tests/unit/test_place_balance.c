/*
 * test_place_balance.c - pick's hosts within their leaves (issue 27):
 * place_pick_balance and place_pick_advise on a 2:1 two-level tree whose
 * LFTs send each host's traffic down through one spine (BFS LFTs: LID mod
 * the spines). What the tests assert is read from the LFTs here, not from
 * the code under test: the spine a leaf's traffic to a host goes up to is
 * the source leaf's LFT entry for that host's LID.
 */
#include <stdlib.h>
#include <time.h>

#include "cost.h"
#include "load.h"
#include "pattern.h"
#include "place.h"
#include "testfab.h"

#define HPL 8
#define NSPINE 4

struct fab {
	struct snap *s;
	struct route_tab *rt;
	struct hier *h;
};

/* tree2 4 leaves x 8 hosts, 4 spines; slow0: leaf 0's cable to spine 0 at 1x. */
static void fab_up(struct fab *f, int slow0)
{
	f->s = snap_new();
	tf_tree2(f->s, 4, HPL, NSPINE, 1);
	tf_finish(f->s, 0);
	if (slow0) {
		int64_t l0 = snap_find_node(f->s, TF_SW_GUID + 0);
		if (l0 < 0)
			tf_die("leaf 0");
		tf_cable_width(f->s, (uint32_t)l0, HPL + 1, 1);
	}
	if (route_build(f->s, NULL, &f->rt) || hier_build(f->rt, &f->h))
		tf_die("route/hier");
}

static void fab_down(struct fab *f)
{
	hier_free(f->h);
	route_free(f->rt);
	snap_free(f->s);
}

static uint32_t leaf_sw(const struct route_tab *rt, uint32_t host)
{
	return rt->sw_of_node[rt->eps[route_host_ep(rt, host)].leaf];
}

/* The port by which leaf switch `from` sends to host: its spine. */
static unsigned up_port(const struct route_tab *rt, uint32_t from, uint32_t host)
{
	return route_lft(rt, from, rt->eps[route_host_ep(rt, host)].lid);
}

/* Host numbers are names h0000..: route_tab index = number; leaf = n / HPL. */
static uint32_t other_leaf_sw(const struct route_tab *rt, uint32_t host)
{
	uint32_t other = (host / HPL + 1) % 4 * HPL;
	return leaf_sw(rt, other);
}

/* Two of hosts[] on leaf l come down through one spine from leaf `from`. */
static int collide(const struct route_tab *rt, const uint32_t *hosts, size_t n)
{
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (hosts[a] / HPL == hosts[b] / HPL &&
			    up_port(rt, other_leaf_sw(rt, hosts[a]), hosts[a]) ==
				    up_port(rt, other_leaf_sw(rt, hosts[b]), hosts[b]))
				return 1;
	return 0;
}

/* Leaf 0 and 1 fully free; start from 4 hosts per leaf in colliding pairs. */
static void test_collisions(void)
{
	struct fab f;
	fab_up(&f, 0);
	uint32_t fr[16], hosts[8], k = 0;
	for (uint32_t i = 0; i < 16; i++)
		fr[i] = i;
	for (uint32_t l = 0; l < 2; l++) {
		/* by spine: the pairs of hosts that share one */
		uint32_t taken = 0;
		for (uint32_t a = l * HPL; a < (l + 1) * HPL && taken < 4; a++)
			for (uint32_t b = a + 1; b < (l + 1) * HPL && taken < 4; b++) {
				int used = 0;
				for (uint32_t q = 0; q < k; q++)
					used |= hosts[q] == a || hosts[q] == b;
				if (!used && up_port(f.rt, other_leaf_sw(f.rt, a), a) == up_port(f.rt, other_leaf_sw(f.rt, b), b))
					hosts[k++] = a, hosts[k++] = b, taken += 2;
			}
	}
	tf_check(k == 8 && collide(f.rt, hosts, 8), "balance: the start has hosts sharing a spine down (BFS LFTs)");
	double before, after;
	place_alltoall_time(f.rt, hosts, 8, 1u << 20, 1, &before);
	uint32_t swaps;
	int rc = place_pick_balance(f.rt, fr, 16, hosts, 8, &swaps);
	int perleaf = 1;
	for (uint32_t i = 0; i < 8; i++)
		perleaf &= hosts[i] / HPL == i / 4;
	tf_check(rc == AN_OK && perleaf, "balance: 4 hosts on each of the same two leaves (rc %d)", rc);
	tf_check(!collide(f.rt, hosts, 8), "balance: no two hosts of a leaf come down through one spine");
	place_alltoall_time(f.rt, hosts, 8, 1u << 20, 1, &after);
	/* at the injection limit: 7 MiB over the host's 4x QDR cable (32 Gb/s),
	 * plus the latency of 3 switches */
	double limit = 7.0 * (1u << 20) * 8 / 32e9 + cost_route_latency(3);
	tf_check(after < before && after < limit * (1 + 1e-9) && after > limit * (1 - 1e-9),
		 "balance: predicted %.1f us, the injection limit %.1f us (was %.1f us)", after * 1e6, limit * 1e6,
		 before * 1e6);
	fab_down(&f);
}

/* An allocation that exists: its colliding hosts traded for free ones on
 * the same leaves; a balanced one left alone. */
static void test_trade(void)
{
	struct fab f;
	fab_up(&f, 0);
	uint32_t alloc[8], fr[8], k = 0, nf = 0;
	/* per leaf: two pairs that share a spine down */
	for (uint32_t l = 0; l < 2; l++)
		for (uint32_t a = l * HPL; a < (l + 1) * HPL; a++)
			for (uint32_t b = a + 1; b < (l + 1) * HPL; b++) {
				int used = 0;
				for (uint32_t q = 0; q < k; q++)
					used |= alloc[q] == a || alloc[q] == b;
				if (!used && k < 4 * (l + 1) &&
				    up_port(f.rt, other_leaf_sw(f.rt, a), a) == up_port(f.rt, other_leaf_sw(f.rt, b), b))
					alloc[k++] = a, alloc[k++] = b;
			}
	for (uint32_t i = 0; i < 2 * HPL; i++) {
		int in = 0;
		for (uint32_t q = 0; q < k; q++)
			in |= alloc[q] == i;
		if (!in)
			fr[nf++] = i;
	}
	struct place_pick p;
	size_t trades;
	char why[AN_ERR_LEN];
	int rc = place_pick_trade(f.rt, f.h, alloc, 8, fr, nf, 1u << 20, 1, &p, &trades, why);
	size_t moved = 0;
	for (size_t i = 0; rc == AN_OK && i < p.n; i++) {
		int kept = 0;
		for (uint32_t q = 0; q < 8; q++)
			kept |= p.hosts[i] == alloc[q];
		moved += !kept;
	}
	tf_check(rc == AN_OK && k == 8 && trades > 0 && trades == moved && p.balanced && !collide(f.rt, p.hosts, 8) &&
			 p.time < p.ff_time && p.figs.leaves == 2,
		 "trade: %zu of 8 hosts traded on the same 2 leaves, no spine shared down, %.1f us from %.1f us", trades,
		 p.time * 1e6, p.ff_time * 1e6);
	uint32_t again[8];
	for (uint32_t i = 0; i < 8 && rc == AN_OK; i++)
		again[i] = p.hosts[i];
	uint32_t fr2[8], nf2 = 0;
	for (uint32_t i = 0; i < 2 * HPL; i++) {
		int in = 0;
		for (uint32_t q = 0; q < 8; q++)
			in |= again[q] == i;
		if (!in)
			fr2[nf2++] = i;
	}
	place_pick_free(&p);
	rc = place_pick_trade(f.rt, f.h, again, 8, fr2, nf2, 1u << 20, 1, &p, &trades, why);
	tf_check(rc == AN_OK && trades == 0 && !p.balanced && p.time == p.ff_time,
		 "trade: a balanced allocation is left as it is (%zu trades)", trades);
	place_pick_free(&p);
	fab_down(&f);
}

/* Leaf 0's cable to spine 0 at 1x: three hosts per leaf stay off it. */
static void test_rates(void)
{
	struct fab f;
	fab_up(&f, 1);
	uint32_t fr[16], hosts[6], k = 0;
	for (uint32_t i = 0; i < 16; i++)
		fr[i] = i;
	uint32_t l0 = leaf_sw(f.rt, 0), l1 = leaf_sw(f.rt, HPL);
	/* the start: hosts whose routes cross the slow cable first */
	for (uint32_t i = 0; i < HPL && k < 3; i++)
		if (up_port(f.rt, l1, i) == HPL + 1)
			hosts[k++] = i;
	for (uint32_t i = 0; i < HPL && k < 3; i++)
		if (up_port(f.rt, l1, i) != HPL + 1)
			hosts[k++] = i;
	for (uint32_t i = HPL; i < 2 * HPL && k < 6; i++)
		if (up_port(f.rt, l0, i) == HPL + 1)
			hosts[k++] = i;
	for (uint32_t i = HPL; i < 2 * HPL && k < 6; i++)
		if (up_port(f.rt, l0, i) != HPL + 1)
			hosts[k++] = i;
	double before, after;
	place_alltoall_time(f.rt, hosts, 6, 1u << 20, 1, &before);
	uint32_t swaps;
	int rc = place_pick_balance(f.rt, fr, 16, hosts, 6, &swaps);
	int slow = 0;
	for (uint32_t i = 0; i < 6; i++)
		slow += hosts[i] < HPL ? up_port(f.rt, l1, hosts[i]) == HPL + 1 : up_port(f.rt, l0, hosts[i]) == HPL + 1;
	place_alltoall_time(f.rt, hosts, 6, 1u << 20, 1, &after);
	tf_check(rc == AN_OK && slow == 0, "balance: no route crosses the 1x cable (%d do)", slow);
	double limit = 5.0 * (1u << 20) * 8 / 32e9 + cost_route_latency(3);
	tf_check(after < before && after < limit * (1 + 1e-9), "balance: 1x cable avoided: %.1f us, limit %.1f us (was %.1f us)",
		 after * 1e6, limit * 1e6, before * 1e6);
	fab_down(&f);
}

/* The whole answer: 6 free on each of two leaves, 8 wanted. */
static void test_advise(void)
{
	struct fab f;
	fab_up(&f, 0);
	struct place_ctx *pc = place_ctx_new();
	uint32_t fr[12], k = 0;
	for (uint32_t i = 0; i < 6; i++)
		fr[k++] = i, fr[k++] = HPL + i;
	struct place_pick p;
	char why[AN_ERR_LEN];
	int rc = place_pick_advise(pc, f.rt, f.h, fr, 12, 8, 1u << 20, 1, &p, why);
	tf_check(rc == AN_OK && p.n == 8 && p.figs.leaves == 2 && p.min_leaves == 2 && p.figs.pods == p.min_pods,
		 "advise: 8 of 12 on two leaves, the fewest (rc %d)", rc);
	/* on each leaf as many distinct spines down as its free hosts offer */
	int spread = 1;
	for (uint32_t l = 0; l < 2 && rc == AN_OK; l++) {
		unsigned seenfree[64] = { 0 }, seenpick[64] = { 0 }, dfree = 0, dpick = 0, c = 0;
		for (uint32_t i = 0; i < 12; i++)
			if (fr[i] / HPL == l) {
				unsigned pt = up_port(f.rt, other_leaf_sw(f.rt, fr[i]), fr[i]);
				dfree += !seenfree[pt]++;
			}
		for (size_t i = 0; i < p.n; i++)
			if (p.hosts[i] / HPL == l) {
				unsigned pt = up_port(f.rt, other_leaf_sw(f.rt, p.hosts[i]), p.hosts[i]);
				dpick += !seenpick[pt]++;
				c++;
			}
		spread &= dpick == (c < dfree ? c : dfree);
	}
	tf_check(spread, "advise: each leaf's hosts come down through as many spines as its free hosts allow");
	tf_check(p.time >= 0 && p.ff_time >= 0 && p.time <= p.ff_time * (1 + 1e-6),
		 "advise: never predicted slower than first-fit (%.1f vs %.1f us)", p.time * 1e6, p.ff_time * 1e6);
	tf_check(p.limit_time > 0 && p.bw_time >= p.limit_time * (1 - 1e-9) && p.ff_bw_time >= p.limit_time * (1 - 1e-9),
		 "advise: busiest cable %.1f us, first-fit %.1f us, never below the injection limit %.1f us",
		 p.bw_time * 1e6, p.ff_bw_time * 1e6, p.limit_time * 1e6);
	tf_check((p.limit_why == PLACE_AT_LIMIT) == (p.bw_time <= p.limit_time * PLACE_LIMIT_SLACK) &&
			 p.bott_node != ROUTE_NONE,
		 "advise: why %d matches busiest/limit %.2f; the busiest cable is named", (int)p.limit_why,
		 p.bw_time / p.limit_time);
	/* the free list's order does not matter */
	struct place_pick q;
	uint32_t rev[12];
	for (uint32_t i = 0; i < 12; i++)
		rev[i] = fr[11 - i];
	int same = place_pick_advise(pc, f.rt, f.h, rev, 12, 8, 1u << 20, 1, &q, why) == AN_OK && q.n == p.n;
	for (size_t i = 0; same && i < p.n; i++)
		same = p.hosts[i] == q.hosts[i];
	tf_check(same, "advise: the same answer for the free list in any order");
	place_pick_free(&q);
	place_pick_free(&p);
	place_ctx_free(pc);
	fab_down(&f);
}

/* A 3-level fat tree (k = 8, d-mod-k): whole answers from random free
 * lists (place_pick_advise: leaves=fewest) keep fewest leaves and pods and
 * are never predicted slower than the compact pick before balancing, nor
 * than first-fit unless first-fit's hosts break the promise (more leaves,
 * pods or sharing hosts). */
static void test_fattree(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 8);
	tf_fattree3_finish(s, 8);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		tf_die("route/hier");
	struct place_ctx *pc = place_ctx_new();
	uint32_t n = rt->nhosts, *fr = malloc(n * sizeof(*fr));
	int ok = 1, cases = 0, kept = 0;
	for (int r = 0; r < 20; r++) {
		uint32_t nf = 0;
		for (uint32_t i = 0; i < n; i++)
			if (tf_rand() % 2)
				fr[nf++] = i;
		size_t want = 8 + tf_rand() % 40;
		struct place_pick p, q;
		char why[AN_ERR_LEN];
		if (place_pick_advise(pc, rt, h, fr, nf, want, 1u << 20, 1, &p, why) ||
		    place_pick(pc, rt, h, fr, nf, want, &q, why)) {
			ok = 0;
			break;
		}
		double tq;
		place_alltoall_time(rt, q.hosts, want, 1u << 20, 1, &tq);
		if (!p.first_fit && (p.figs.leaves != q.min_leaves || p.figs.pods != q.min_pods))
			ok = 0;
		if (p.time > tq * (1 + 1e-6) || p.figs.sharing > q.figs.sharing)
			ok = 0;
		if (p.time > p.ff_time * (1 + 1e-6)) {
			uint32_t *ff = malloc(want * sizeof(*ff));
			struct place_figs fg;
			if (!ff || place_first_fit(fr, nf, want, ff) || place_figures(rt, h, ff, want, &fg))
				tf_die("first-fit");
			kept++;
			ok &= !p.first_fit && (fg.leaves > p.figs.leaves || fg.pods > p.figs.pods || fg.sharing > p.figs.sharing);
			free(ff);
		}
		cases++;
		place_pick_free(&p);
		place_pick_free(&q);
	}
	tf_check(ok && cases == 20, "advise fat tree k=8: fewest leaves and pods, never slower than the unbalanced pick, "
		 "nor than first-fit unless it breaks the promise (%d of %d cases)", kept, cases);
	free(fr);
	place_ctx_free(pc);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

/* The pattern's predicted time on hosts (rank i on hosts[i]), computed
 * here from load.h and cost.h, not through place. */
static double ring_time(const struct route_tab *rt, const uint32_t *hosts, uint32_t n)
{
	struct pattern pat;
	char err[AN_ERR_LEN];
	struct load *L = NULL;
	struct cost_time ct = { .seconds = -1 };
	if (pattern_parse("ring", &pat, err))
		tf_die("ring");
	pat.msg_bytes = 1u << 20;
	struct pat_job job = { n, (uint32_t *)hosts };
	if (load_build(rt, &job, &pat, 1, &L) || cost_load_time(rt, L, &ct, err))
		ct.seconds = -2;
	load_free(L);
	pattern_clear(&pat);
	return ct.seconds;
}

/* pick judged by a named pattern (issue 27: the patterns `load` knows):
 * the figures are the ring's, computed independently; never predicted
 * slower than first-fit's ring unless first-fit's hosts break the promise
 * of leaves=fewest (more leaves, pods or sharing hosts); no injection limit
 * stated; alltoall is place_pick_advise; a pattern that does not fit the
 * hosts is refused. */
static void test_pattern(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 8);
	tf_fattree3_finish(s, 8);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		tf_die("route/hier");
	struct place_ctx *pc = place_ctx_new();
	uint32_t n = rt->nhosts, *fr = malloc(n * sizeof(*fr)), *ff = malloc(n * sizeof(*ff));
	int ok = 1, cases = 0, same = 1;
	char why[AN_ERR_LEN];
	for (int r = 0; r < 10 && ok; r++) {
		uint32_t nf = 0;
		for (uint32_t i = 0; i < n; i++)
			if (tf_rand() % 2)
				fr[nf++] = i;
		size_t want = 8 + tf_rand() % 24;
		struct place_pick p, q, a;
		if (place_pick_pattern(pc, rt, h, fr, nf, want, "ring", 1u << 20, 1, &p, why) ||
		    place_first_fit(fr, nf, want, ff) ||
		    place_pick_pattern(pc, rt, h, fr, nf, want, "alltoall", 1u << 20, 1, &q, why) ||
		    place_pick_advise(pc, rt, h, fr, nf, want, 1u << 20, 1, &a, why)) {
			ok = 0;
			break;
		}
		double tp = ring_time(rt, p.hosts, (uint32_t)want), tf = ring_time(rt, ff, (uint32_t)want);
		struct place_figs fg;
		if (place_figures(rt, h, ff, want, &fg))
			tf_die("figures");
		int ff_worse = fg.leaves > p.figs.leaves || fg.pods > p.figs.pods || fg.sharing > p.figs.sharing;
		if (tp < 0 || tp != p.time || tf != p.ff_time || (p.time > p.ff_time * (1 + 1e-6) && !ff_worse) ||
		    p.limit_time != -1 || p.limit_why != PLACE_NOLIMIT)
			ok = 0;
		if (q.n != a.n || memcmp(q.hosts, a.hosts, q.n * sizeof(*q.hosts)) || q.time != a.time)
			same = 0;
		cases++;
		place_pick_free(&p);
		place_pick_free(&q);
		place_pick_free(&a);
	}
	tf_check(ok && cases == 10, "pick pattern=ring, k=8: time and first-fit's are the ring's (load.h), never slower "
		 "than first-fit unless it breaks the promise, no limit stated (%d cases)", cases);
	tf_check(same, "pick pattern=alltoall answers as place_pick_advise");
	struct place_pick p;
	for (uint32_t i = 0; i < n; i++)
		fr[i] = i;
	int rc = place_pick_pattern(pc, rt, h, fr, n, 9, "stencil2d:3,3", 1u << 20, 1, &p, why);
	tf_check(rc == AN_OK && p.n == 9 && p.time > 0, "pick pattern=stencil2d:3,3 for 9 hosts answered");
	if (rc == AN_OK)
		place_pick_free(&p);
	rc = place_pick_pattern(pc, rt, h, fr, n, 8, "stencil2d:3,3", 1u << 20, 1, &p, why);
	tf_check(rc == AN_E_INVAL, "pick pattern=stencil2d:3,3 for 8 hosts refused: %s", why);
	rc = place_pick_pattern(pc, rt, h, fr, n, 8, "nosuch", 1u << 20, 1, &p, why);
	tf_check(rc == AN_E_INVAL, "pick pattern=nosuch refused: %s", why);
	free(fr);
	free(ff);
	place_ctx_free(pc);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Issue 27's bound: 1,024 of 3,456 hosts (k=24 fat tree) within 100 ms,
 * the whole answer (compact pick, balancing, three predictions) on one
 * thread with the context warm, as topod holds it. CPU time, not the wall
 * clock: the machine running make check is shared. Sanitizers slow this
 * several-fold; their bound is 10x. */
static void test_speed(void)
{
#ifdef __SANITIZE_ADDRESS__
	const double bound = 1000;
#else
	const double bound = 100;
#endif
	struct snap *s = snap_new();
	tf_fattree3(s, 24);
	tf_fattree3_finish(s, 24);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		tf_die("k=24 route/hier");
	struct place_ctx *pc = place_ctx_new();
	uint32_t *v = malloc(rt->nhosts * sizeof(*v));
	if (!pc || !v)
		tf_die("nomem");
	for (uint32_t i = 0; i < rt->nhosts; i++)
		v[i] = i;
	char why[AN_ERR_LEN];
	struct place_pick p;
	double best = 1e9;
	int ok = 1;
	for (int r = 0; r < 4 && ok; r++) {
		double t0 = cpu_ms();
		ok = !place_pick_advise(pc, rt, h, v, rt->nhosts, 1024, 1u << 20, 1, &p, why) && p.n == 1024;
		double ms = cpu_ms() - t0;
		if (r && ms < best)   /* the first call builds the context's entry table */
			best = ms;
		if (ok)
			place_pick_free(&p);
	}
	tf_check(ok && rt->nhosts == 3456 && best <= bound, "pick 1,024 of %u hosts (k=24): %.1f ms CPU, bound %.0f ms",
		 rt->nhosts, best, bound);
	free(v);
	place_ctx_free(pc);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

/* leaves=any (issue 27) on a 2:1 two-level tree of 3,456 hosts (144
 * leaves of 24, 12 spines), every host free: 1,024 hosts on the fewest
 * leaves (43, full) send more up each leaf than its 12 uplinks carry at a
 * host's own rate. fewest keeps the fewest leaves and states the wider
 * pick; any takes more leaves, and place_alltoall_time (asked apart from
 * pick) predicts them faster; auto, the protocol's default, does as any
 * because random picks are predicted faster than the fewest leaves;
 * within issue 27's 100 ms. */
static void test_wide(void)
{
#ifdef __SANITIZE_ADDRESS__
	const double bound = 1000;
#else
	const double bound = 100;
#endif
	struct snap *s = snap_new();
	tf_tree2(s, 144, 24, 12, 1);
	tf_finish(s, 0);
	struct route_tab *rt;
	struct hier *h;
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		tf_die("tree2 144x24 route/hier");
	struct place_ctx *pc = place_ctx_new();
	uint32_t *v = malloc(rt->nhosts * sizeof(*v));
	if (!pc || !v)
		tf_die("nomem");
	for (uint32_t i = 0; i < rt->nhosts; i++)
		v[i] = i;
	char why[AN_ERR_LEN];
	struct place_pick d, a, u;
	double ms = 1e9, msu = 1e9;
	int rc = place_pick_leaves(pc, rt, h, v, rt->nhosts, 1024, "alltoall", 1u << 20, 1, PLACE_LEAVES_FEWEST, &d, why);
	for (int r = 0; r < 3 && rc == AN_OK; r++) {
		double t0 = cpu_ms();
		rc = place_pick_leaves(pc, rt, h, v, rt->nhosts, 1024, "alltoall", 1u << 20, 1, PLACE_LEAVES_ANY, &a, why);
		if (cpu_ms() - t0 < ms)
			ms = cpu_ms() - t0;
		t0 = cpu_ms();
		if (rc == AN_OK)
			rc = place_pick_leaves(pc, rt, h, v, rt->nhosts, 1024, "alltoall", 1u << 20, 1, PLACE_LEAVES_AUTO,
					       &u, why);
		if (cpu_ms() - t0 < msu)
			msu = cpu_ms() - t0;
		if (rc == AN_OK && r < 2)
			place_pick_free(&a), place_pick_free(&u);
	}
	if (rc)
		tf_die(why);
	double td, ta;
	place_alltoall_time(rt, d.hosts, d.n, 1u << 20, 1, &td);
	place_alltoall_time(rt, a.hosts, a.n, 1u << 20, 1, &ta);
	tf_check(d.figs.leaves == d.min_leaves && d.min_leaves == 43 && !d.widened && d.limit_why == PLACE_UPLINKS,
		 "leaves=fewest: 1,024 on the fewest leaves (%u, min %u), limit=uplinks (%d)", d.figs.leaves, d.min_leaves,
		 (int)d.limit_why);
	tf_check(a.widened && a.figs.leaves > d.figs.leaves && ta < td * (1 - 1e-6) && a.time == ta &&
			 a.time <= a.ff_time && a.pick_time == d.time,
		 "leaves=any: %u leaves, predicted %.1f ms against %.1f ms on the fewest (first-fit %.1f ms)", a.figs.leaves,
		 ta * 1e3, td * 1e3, a.ff_time * 1e3);
	tf_check(d.wider_time == a.time && d.wider_leaves == a.figs.leaves,
		 "leaves=fewest states the wider pick: %u leaves, %.1f ms", d.wider_leaves, d.wider_time * 1e3);
	/* auto widens only where the fewest leaves are predicted slower than
	 * random picks: here the random picks (about 7 hosts a leaf, unevenly,
	 * unbalanced) are slower still, so the promise holds */
	int slower = u.random_time > 0 && d.time > u.random_time * (1 + 1e-6);
	const struct place_pick *same = slower ? &a : &d;
	tf_check(d.random_time < 0 && u.random_time > 0 && u.widened == slower && u.n == same->n &&
			 !memcmp(u.hosts, same->hosts, u.n * sizeof(*u.hosts)) && u.wider_time == d.wider_time,
		 "leaves=auto (the default): fewest predicted %.1f ms, random picks %.1f ms: answers leaves=%s's %u leaves",
		 d.time * 1e3, u.random_time * 1e3, slower ? "any" : "fewest", u.figs.leaves);
	tf_check(ms <= bound && msu <= bound,
		 "pick leaves=any / auto 1,024 of 3,456 (2:1 tree, widening): %.1f / %.1f ms CPU, bound %.0f ms", ms, msu,
		 bound);
	place_pick_free(&u);
	place_pick_free(&a);
	place_pick_free(&d);
	free(v);
	place_ctx_free(pc);
	hier_free(h);
	route_free(rt);
	snap_free(s);
}

/* The balancing's memory bound: a profile per (candidate, leaf). One host
 * on each of the 338 leaves of a k=26 fat tree with every host free is
 * 4,394 candidates x 338 leaves, past PLACE_BALANCE_CELLS_MAX: refused with
 * the hosts untouched (the callers keep their pick); with two free hosts a
 * leaf it balances. */
static void test_balance_cap(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 26);
	tf_fattree3_finish(s, 26);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("k=26 route");
	const uint32_t hpl = 13, nl = 338;
	uint32_t *fr = malloc(rt->nhosts * sizeof(*fr)), *hosts = malloc(nl * sizeof(*hosts));
	uint32_t *keep = malloc(nl * sizeof(*keep)), *two = malloc(2 * nl * sizeof(*two)), swaps = 7, nt = 0;
	if (!fr || !hosts || !keep || !two)
		tf_die("nomem");
	for (uint32_t i = 0; i < rt->nhosts; i++)
		fr[i] = i;
	/* host indices are sorted by name, h0000.. in leaf order */
	for (uint32_t l = 0; l < nl; l++) {
		hosts[l] = keep[l] = l * hpl;
		two[nt++] = l * hpl, two[nt++] = l * hpl + 1;
	}
	int rc = place_pick_balance(rt, fr, rt->nhosts, hosts, nl, &swaps);
	tf_check(rc == AN_E_RANGE && !memcmp(hosts, keep, nl * sizeof(*hosts)),
		 "balance: %u candidates x %u leaves (> %u) refused, the hosts untouched (rc %d)", rt->nhosts, nl,
		 PLACE_BALANCE_CELLS_MAX, rc);
	rc = place_pick_balance(rt, two, nt, hosts, nl, &swaps);
	tf_check(rc == AN_OK, "balance: %u candidates x %u leaves balanced (rc %d)", nt, nl, rc);
	free(fr), free(hosts), free(keep), free(two);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	test_collisions();
	test_rates();
	test_trade();
	test_advise();
	test_fattree();
	test_pattern();
	test_speed();
	test_wide();
	test_balance_cap();
	return tf_failures ? 1 : 0;
}
