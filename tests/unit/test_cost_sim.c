/*
 * test_cost_sim.c - steps that overlap (analysis/cost.h, cost_sim_time):
 * hand-computed cases on abstract cables (rates in bits per second, one
 * byte per flow), then the cost on real schedules:
 *   - two flows on one cable take twice as long as one;
 *   - a pair of ranks on fast cables runs ahead of a slow pair: the time is
 *     the slow chain, not the sum of the steps' maxima;
 *   - a flow waits for its receiver to finish the step before;
 *   - max-min shares: what a flow held back elsewhere leaves of a cable goes
 *     to the others (equal shares alone would be a third slower);
 *   - bad input: a rank out of range, a cable without a rate;
 *   - the cheaper solve (only the changed cables' flows, a full solve
 *     every COST_SIM_FULL_EVERY events) within 3 % of the exact one at
 *     256 ranks, in less time;
 *   - 64 and 256 ranks of XOR and route on a 2:1 tree: how long it takes.
 */
#include <math.h>
#include <time.h>

#include "cost.h"
#include "schedule.h"
#include "testfab.h"

/* route of each ordered pair of up to 8 ranks: up to 3 cables, -1 ends */
struct pairs {
	int cab[8][8][3];
};

static uint32_t pair_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	const struct pairs *p = ctx;
	uint32_t n = 0;
	while (n < 3 && p->cab[a][b][n] >= 0) {
		out[n] = (uint32_t)p->cab[a][b][n];
		n++;
	}
	return n;
}

static void pairs_clear(struct pairs *p)
{
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b++)
			for (int k = 0; k < 3; k++)
				p->cab[a][b][k] = -1;
}

/* One byte per flow at bps bits/s is 8/bps seconds: rates 8, 16, 24, 32
 * bits/s are 1, 2, 3, 4 bytes/s. */
static double sim(const struct pairs *p, uint32_t P, const uint32_t *off, uint32_t nsteps, const uint32_t *src,
		  const uint32_t *dst, const uint64_t *bps, uint32_t ncab, int *rc, char err[AN_ERR_LEN])
{
	struct cost_sim in = { .nranks = P, .nsteps = nsteps, .ncables = ncab, .step_off = off, .src = src,
			       .dst = dst, .bps = bps, .route = pair_route, .ctx = p, .exact = 1 };
	double t = -1;
	*rc = cost_sim_time(&in, &t, err);
	return t;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b);
}

static void hand(void)
{
	struct pairs p;
	char err[AN_ERR_LEN];
	int rc;
	pairs_clear(&p);
	/* two flows into rank 2 over cable 0 (1 byte/s) */
	p.cab[0][2][0] = 0;
	p.cab[1][2][0] = 0;
	{
		uint64_t bps[] = { 8 };
		uint32_t off[] = { 0, 2 }, src[] = { 0, 1 }, dst[] = { 2, 2 };
		double t = sim(&p, 3, off, 1, src, dst, bps, 1, &rc, err);
		tf_check(!rc && near(t, 2), "two flows sharing one cable take twice as long (%g s, want 2)", t);
		uint32_t off1[] = { 0, 1 };
		t = sim(&p, 3, off1, 1, src, dst, bps, 1, &rc, err);
		tf_check(!rc && near(t, 1), "one flow alone: 1 s (%g)", t);
	}
	/* ranks 0,1 on a 1x cable (cable 1, 1 byte/s); 2,3 on 4x ones (0, 2:
	 * 4 bytes/s). Step 0: 0->1 slow, 2->3 fast; step 1: 3->2 fast, 1->0
	 * slow. Steps one after another: 1 + 1 = 2 s; overlapping: the slow
	 * pair's 2 s, the fast pair done at 0.5 s. Then step 2: 2->3 again,
	 * 0.75 s: still under the slow chain. */
	pairs_clear(&p);
	p.cab[0][1][0] = 1;
	p.cab[1][0][0] = 3;
	p.cab[2][3][0] = 0;
	p.cab[3][2][0] = 2;
	{
		uint64_t bps[] = { 32, 8, 32, 8 };
		uint32_t off[] = { 0, 2, 4, 5 }, src[] = { 0, 2, 1, 3, 2 }, dst[] = { 1, 3, 0, 2, 3 };
		double t = sim(&p, 4, off, 3, src, dst, bps, 4, &rc, err);
		tf_check(!rc && near(t, 2), "a fast pair runs ahead of a slow one: 2 s, not the steps' 2.25 (%g)", t);
	}
	/* A flow waits for its receiver: step 0: 1->2 on slow cable 0
	 * (1 byte/s), 0->3 on fast cable 1 (4 bytes/s); step 1: 0->1 on fast
	 * cable 2 starts when rank 1 is done at 1 s: 1.25 s. */
	pairs_clear(&p);
	p.cab[1][2][0] = 0;
	p.cab[0][3][0] = 1;
	p.cab[0][1][0] = 2;
	{
		uint64_t bps[] = { 8, 32, 32 };
		uint32_t off[] = { 0, 2, 3 }, src[] = { 0, 1, 0 }, dst[] = { 3, 2, 1 };
		double t = sim(&p, 4, off, 2, src, dst, bps, 3, &rc, err);
		tf_check(!rc && near(t, 1.25), "a flow waits for its receiver's step before: 1.25 s (%g)", t);
	}
	/* Max-min: cable a (0) 3 bytes/s, cable b (1) 1 byte/s. Step 0: 0->1
	 * on a, 2->3 on a and b; step 1: 0->1 on a again. 2->3 is held to
	 * 1 byte/s by b, so 0->1 gets 2 bytes/s: done at 0.5, again at 1.0,
	 * 2->3 at 1.0. Equal shares would give 0->1 1.5 bytes/s (1.33 s); the
	 * steps one after another 1 + 1/3. */
	pairs_clear(&p);
	p.cab[0][1][0] = 0;
	p.cab[2][3][0] = 0;
	p.cab[2][3][1] = 1;
	{
		uint64_t bps[] = { 24, 8 };
		uint32_t off[] = { 0, 2, 3 }, src[] = { 0, 2, 0 }, dst[] = { 1, 3, 1 };
		double t = sim(&p, 4, off, 2, src, dst, bps, 2, &rc, err);
		tf_check(!rc && near(t, 1), "max-min shares: what a held-back flow leaves goes to the others: 1 s (%g)", t);
		uint32_t bad[] = { 0, 9, 0 };
		t = sim(&p, 4, off, 2, bad, dst, bps, 2, &rc, err);
		tf_check(rc == AN_E_INVAL, "a rank out of range: AN_E_INVAL (%s)", err);
		uint64_t none[] = { 24, 0 };
		t = sim(&p, 4, off, 2, src, dst, none, 2, &rc, err);
		tf_check(rc == AN_E_RANGE, "a cable without a rate: AN_E_RANGE (%s)", err);
	}
}

/* An abstract 2-level tree: 16 leaves of 16 hosts with 4 uplinks (4:1),
 * rank r on host (r x 7) mod 256 (leaves mixed), a leaf's uplinks 1 byte/s
 * where odd, else every cable 4 bytes/s. Cables: host up h, host down
 * 256 + h, leaf uplink 512 + 4 leaf + u, spine downlink 576 + 4 leaf + u. */
static uint32_t tree_route(const void *ctx, uint32_t a, uint32_t b, uint32_t *out)
{
	(void)ctx;
	uint32_t ha = (a * 7) % 256, hb = (b * 7) % 256, la = ha / 16, lb = hb / 16, u = hb % 4;
	out[0] = ha;
	if (la == lb) {
		out[1] = 256 + hb;
		return 2;
	}
	out[1] = 512 + 4 * la + u;
	out[2] = 576 + 4 * lb + u;
	out[3] = 256 + hb;
	return 4;
}

static double cpu_ms(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e3 + (b->tv_nsec - a->tv_nsec) / 1e6;
}

static void cheaper(void)
{
	enum { P = 256, C = 640 };
	static uint32_t off[P], src[P * (P - 1)], dst[P * (P - 1)];
	static uint64_t bps[C];
	for (uint32_t c = 0; c < C; c++)
		bps[c] = c >= 512 && ((c - 512) % 64) / 4 % 2 ? 8 : 32;
	uint32_t f = 0;
	for (uint32_t s = 1; s < P; s++) {
		off[s - 1] = f;
		for (uint32_t r = 0; r < P; r++) {
			src[f] = r;
			dst[f++] = r ^ s;
		}
	}
	off[P - 1] = f;
	double t[2], ms[2];
	for (int exact = 1; exact >= 0; exact--) {
		struct cost_sim in = { .nranks = P, .nsteps = P - 1, .ncables = C, .step_off = off, .src = src,
				       .dst = dst, .bps = bps, .route = tree_route, .exact = exact };
		char err[AN_ERR_LEN];
		struct timespec t0, t1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
		int rc = cost_sim_time(&in, &t[exact], err);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
		tf_check(!rc, "XOR on 256 ranks, %s: simulated (%s)", exact ? "exact" : "cheaper", rc ? err : "ok");
		ms[exact] = cpu_ms(&t0, &t1);
		printf("# XOR 256 ranks, mixed rates, %s: %.4g s per byte, %.1f ms of CPU\n",
		       exact ? "exact" : "cheaper", t[exact], ms[exact]);
	}
	tf_check(ms[0] < ms[1], "the cheaper solve takes less CPU (%.1f against %.1f ms)", ms[0], ms[1]);
	tf_check(fabs(t[0] / t[1] - 1) <= 0.03, "the cheaper solve within 3 %% of the exact one (%.4f)", t[0] / t[1]);
}

static double lat(const struct sched *x)
{
	double t = 0;
	for (uint32_t st = 0; st < x->nsteps; st++)
		if (x->fig[st].s_per_byte > 0)
			t += cost_route_latency(x->fig[st].max_hops);
	return t;
}

/* The cost on real schedules: sched_build runs the simulation. */
static void cost(void)
{
	struct snap *s = snap_new();
	struct route_tab *rt = NULL;
	tf_tree2(s, 16, 16, 8, 1); /* 256 hosts, 2:1 */
	tf_finish(s, 0);
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	uint32_t rh[256];
	char err[AN_ERR_LEN];
	for (uint32_t P = 64; P <= 256; P *= 2) {
		for (uint32_t i = 0; i < P; i++)
			rh[i] = (i * 3) % 256; /* fragmented: every third host */
		for (int a = SCHED_XOR; a <= SCHED_ROUTE; a += SCHED_ROUTE - SCHED_XOR) {
			struct sched_req req = { .algo = (enum sched_algo)a, .nranks = P, .rank_host = rh };
			struct sched *x = NULL;
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			int rc = sched_build(rt, NULL, &req, 1, &x, err);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (rc) {
				tf_check(0, "%s %u ranks builds: %s", sched_algo_name((enum sched_algo)a), P, err);
				continue;
			}
			double sum = 0;
			for (uint32_t st = 0; st < x->nsteps; st++)
				sum += x->fig[st].s_per_byte;
			double sp = x->sim_s_per_byte;
			printf("# %s %u ranks: build %.1f ms; overlap %.4g s/MiB, steps' sum %.4g s/MiB (%.3f)\n",
			       sched_algo_name(x->algo), P,
			       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, sp * 1048576,
			       sum * 1048576, sp / sum);
			if ((uint64_t)P * (P - 1) <= COST_SIM_FLOWS_MAX)
				tf_check(sp > 0 && sp <= sum * 1.25, "%s %u ranks: simulated, within the steps' sum x 1.25",
					 sched_algo_name(x->algo), P);
			else
				tf_check(sp == 0 && fabs(sched_time(x, 1) - sum - lat(x)) <= 1e-9 * sum,
					 "%s %u ranks: above COST_SIM_FLOWS_MAX, the steps' sum", sched_algo_name(x->algo), P);
			sched_free(x);
		}
	}
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	hand();
	cheaper();
	cost();
	return tf_failures != 0;
}
