/*
 * test_cost_msg.c - every message size (analysis/cost.h cost_sim_run,
 * native.h): hand-computed cases on abstract cables, then the MPIs' own
 * Alltoall and topod's schedules on a real tree:
 *   - one message: its route's latency, then its bytes plus the envelope;
 *   - below the eager limit a send completes when posted, so its sender's
 *     next step starts at once; above, the next step waits for it;
 *   - a window of two steps runs a slow pair's next step beside it;
 *   - ranks of one host: the loopback's rate, shared with nothing;
 *   - a flow carrying several blocks (Bruck's);
 *   - the selectors' tables at their edges, and the algorithms' shapes;
 *   - on a 2:1 tree: the sized time of XOR at 1 MiB within a few percent
 *     of the fluid model's (both are SMPI's at that size), and the steps'
 *     latencies dominating at 1 KiB.
 */
#include <math.h>

#include "cost.h"
#include "native.h"
#include "schedule.h"
#include "testfab.h"

/* Ranks 0..7; route a -> b: cables cab[a][b][..], -1 ends (none: one host). */
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

static double run(const struct pairs *p, uint32_t P, const uint32_t *off, uint32_t nsteps, const uint32_t *src,
		  const uint32_t *dst, const uint32_t *mult, const uint64_t *bps, uint32_t ncab, double block,
		  uint32_t window, int *rc, char err[AN_ERR_LEN])
{
	struct cost_sim in = { .nranks = P, .nsteps = nsteps, .ncables = ncab, .step_off = off, .src = src,
			       .dst = dst, .bps = bps, .route = pair_route, .ctx = p, .exact = 1, .block = block,
			       .mult = mult, .window = window };
	double t = -1;
	*rc = cost_sim_run(&in, &t, err);
	return t;
}

static int near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

static void hand(void)
{
	struct pairs p;
	char err[AN_ERR_LEN];
	int rc;
	uint64_t bps[] = { 8000000000ull, 8000000000ull, 8000000000ull }; /* 1e9 bytes/s each */
	/* one message over two cables: 300 ns (two cables, one switch), then
	 * 1000 + 16 bytes at 1e9 bytes/s */
	pairs_clear(&p);
	p.cab[0][1][0] = 0;
	p.cab[0][1][1] = 1;
	{
		uint32_t off[] = { 0, 1 }, src[] = { 0 }, dst[] = { 1 };
		double t = run(&p, 2, off, 1, src, dst, NULL, bps, 2, 1000, 1, &rc, err);
		tf_check(!rc && near(t, 300e-9 + 1016e-9, 1e-9), "one message: latency then bytes + envelope (%g s)", t);
		uint32_t mult[] = { 3 };
		t = run(&p, 2, off, 1, src, dst, mult, bps, 2, 1000, 1, &rc, err);
		tf_check(!rc && near(t, 300e-9 + 3016e-9, 1e-9), "three blocks in one message (%g s)", t);
	}
	/* rank 0 sends to 1 (step 0, cable 0) then to 2 (step 1, cable 1):
	 * eager, both at once (100 ns + 1016 ns); rendezvous, one after the
	 * other (2 x (100 ns + 100016 ns)) */
	pairs_clear(&p);
	p.cab[0][1][0] = 0;
	p.cab[0][2][0] = 1;
	{
		uint32_t off[] = { 0, 1, 2 }, src[] = { 0, 0 }, dst[] = { 1, 2 };
		double t = run(&p, 3, off, 2, src, dst, NULL, bps, 2, 1000, 1, &rc, err);
		tf_check(!rc && near(t, 100e-9 + 1016e-9, 1e-9), "below the eager limit the next step starts at once (%g)",
			 t);
		t = run(&p, 3, off, 2, src, dst, NULL, bps, 2, 100000, 1, &rc, err);
		tf_check(!rc && near(t, 2 * (100e-9 + 100016e-9), 1e-9),
			 "above it the sender waits for its message (%g s)", t);
		t = run(&p, 3, off, 2, src, dst, NULL, bps, 2, 100000, 2, &rc, err);
		tf_check(!rc && near(t, 100e-9 + 100016e-9, 1e-9), "two steps in flight: both at once (%g s)", t);
	}
	/* a receiver's step: 1 -> 2 (step 0, cable 0) slow by 4 blocks, 0 -> 2
	 * (step 1, cable 1): rank 2 posts its step 1 receive only when step 0
	 * is in; a window of 2 posts it at once */
	pairs_clear(&p);
	p.cab[1][2][0] = 0;
	p.cab[0][2][0] = 1;
	{
		uint32_t off[] = { 0, 1, 2 }, src[] = { 1, 0 }, dst[] = { 2, 2 }, mult[] = { 4, 1 };
		double one = 100e-9 + 100016e-9, four = 100e-9 + 400016e-9;
		double t = run(&p, 3, off, 2, src, dst, mult, bps, 2, 100000, 1, &rc, err);
		tf_check(!rc && near(t, four + one, 1e-9), "a receive waits for the receiver's step before (%g s)", t);
		t = run(&p, 3, off, 2, src, dst, mult, bps, 2, 100000, 2, &rc, err);
		tf_check(!rc && near(t, four, 1e-9), "a window of two runs it beside the slow one (%g s)", t);
	}
	/* ranks 0 and 1 on one host (no cable), 2 elsewhere: two loopback
	 * messages at once, each at the loopback's 1e10 bytes/s */
	pairs_clear(&p);
	p.cab[2][0][0] = 0;
	{
		uint32_t off[] = { 0, 2 }, src[] = { 0, 1 }, dst[] = { 1, 0 };
		double t = run(&p, 3, off, 1, src, dst, NULL, bps, 1, 1000000, 1, &rc, err);
		tf_check(!rc && near(t, 1000016 / 1e10, 1e-9), "ranks of one host: the loopback, unshared (%g s)", t);
		uint64_t none[] = { 0 };
		uint32_t s2[] = { 2 }, d2[] = { 0 }, o2[] = { 0, 1 };
		t = run(&p, 3, o2, 1, s2, d2, NULL, none, 1, 1000, 1, &rc, err);
		tf_check(rc == AN_E_RANGE, "a cable without a rate: AN_E_RANGE (%s)", err);
	}
}

static void selectors(void)
{
	static const struct {
		enum native_model m;
		uint32_t P;
		uint64_t b;
		enum native_algo a;
		uint32_t throttle;
	} want[] = {
		{ NATIVE_SMPI_OMPI, 64, 511, NATIVE_BRUCK, 0 },     { NATIVE_SMPI_OMPI, 64, 1024, NATIVE_LINEAR, 0 },
		{ NATIVE_SMPI_OMPI, 64, 32768, NATIVE_LINEAR, 0 },  { NATIVE_SMPI_OMPI, 64, 262143, NATIVE_LINEAR, 0 },
		{ NATIVE_SMPI_OMPI, 64, 262144, NATIVE_PAIR, 0 },   { NATIVE_SMPI_OMPI, 16, 1048576, NATIVE_LINEAR, 0 },
		{ NATIVE_SMPI_OMPI, 32, 1048576, NATIVE_LINEAR, 0 }, { NATIVE_SMPI_OMPI, 128, 1023, NATIVE_BRUCK, 0 },
		{ NATIVE_SMPI_OMPI, 256, 1048576, NATIVE_PAIR, 0 }, { NATIVE_SMPI_OMPI, 5000, 100000, NATIVE_LINEAR, 0 },
		{ NATIVE_OMPI, 64, 1048576, NATIVE_SHIFT, 0 },      { NATIVE_SMPI_MPICH, 64, 255, NATIVE_BRUCK, 0 },
		{ NATIVE_SMPI_MPICH, 4, 100, NATIVE_SCATTER, 4 },   { NATIVE_SMPI_MPICH, 64, 32767, NATIVE_SCATTER, 4 },
		{ NATIVE_SMPI_MPICH, 64, 32768, NATIVE_SHIFT, 0 },  { NATIVE_SMPI_MPICH, 63, 32768, NATIVE_PAIR, 0 },
		{ NATIVE_MPICH, 64, 256, NATIVE_BRUCK, 0 },         { NATIVE_MPICH, 64, 32768, NATIVE_SCATTER, 32 },
		{ NATIVE_MPICH, 64, 32769, NATIVE_PAIR, 0 },        { NATIVE_MPICH, 48, 65536, NATIVE_SHIFT, 0 },
		{ NATIVE_MPICH, 16, 1024, NATIVE_SCATTER, 16 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct native_choice c;
		native_alltoall(want[i].m, want[i].P, want[i].b, &c);
		tf_check(c.algo == want[i].a && (c.algo != NATIVE_SCATTER || c.throttle == want[i].throttle),
			 "%s on %u ranks, %llu bytes: %s (got %s:%u)", native_model_name(want[i].m), want[i].P,
			 (unsigned long long)want[i].b, native_algo_name(want[i].a), native_algo_name(c.algo), c.throttle);
	}
	enum native_model m;
	tf_check(!native_model_parse("smpi-mpich", &m) && m == NATIVE_SMPI_MPICH && native_model_parse("lam", &m),
		 "model names parse, and only those");
	char err[AN_ERR_LEN];
	struct native_sched *s = NULL;
	struct native_choice c = { NATIVE_BRUCK, 0 };
	int rc = native_build(&c, 5, &s, err);
	tf_check(!rc && s->nsteps == 3 && s->mult[0] == 2 && s->mult[5] == 2 && s->mult[10] == 1 && s->dst[0] == 1 &&
			 s->dst[5] == 2 && s->dst[10] == 4,
		 "Bruck on 5 ranks: 3 steps of 2, 2, 1 blocks to r+1, r+2, r+4");
	native_free(s);
	c = (struct native_choice){ NATIVE_SCATTER, 4 };
	rc = native_build(&c, 6, &s, err);
	tf_check(!rc && s->nsteps == 2 && s->step_off[1] == 24 && s->step_off[2] == 36 && s->src[0] == 0 &&
			 s->dst[0] == 0 && s->dst[1] == 5,
		 "the scattered exchange on 6 ranks, 4 in flight: 2 batches, a message to itself first");
	native_free(s);
	c = (struct native_choice){ NATIVE_PAIR, 0 };
	tf_check(native_build(&c, 6, &s, err) == AN_E_NOTAPPLIC && !s, "pair on 6 ranks does not apply (%s)", err);
	c = (struct native_choice){ NATIVE_LINEAR, 0 };
	rc = native_build(&c, 4, &s, err);
	tf_check(!rc && s->nsteps == 1 && s->step_off[1] == 12, "linear on 4 ranks: one step of 12 flows");
	native_free(s);
}

/* On a 2:1 tree of 128 hosts, 64 ranks every other host. */
static void tree(void)
{
	struct snap *s = snap_new();
	struct route_tab *rt = NULL;
	tf_tree2(s, 16, 8, 4, 1);
	tf_finish(s, 0);
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	uint32_t rh[64];
	for (uint32_t i = 0; i < 64; i++)
		rh[i] = 2 * i;
	char err[AN_ERR_LEN];
	struct sched_req req = { .algo = SCHED_XOR, .nranks = 64, .rank_host = rh };
	struct sched *x = NULL;
	struct sched_job *j = NULL;
	int rc = sched_build(rt, NULL, &req, 1, &x, err);
	rc = rc ? rc : sched_job_new(rt, 64, rh, &j, err);
	tf_check(!rc, "XOR and the job build (%s)", rc ? err : "ok");
	if (rc) {
		sched_free(x);
		route_free(rt);
		snap_free(s);
		return;
	}
	double big, small, w8;
	rc = sched_job_sched_time(j, x, 1048576, 1, &big, err);
	rc = rc ? rc : sched_job_sched_time(j, x, 1024, 1, &small, err);
	rc = rc ? rc : sched_job_sched_time(j, x, 1024, 8, &w8, err);
	double fluid = sched_time(x, 1048576);
	tf_check(!rc && near(big, fluid, 0.03), "XOR at 1 MiB: %.4g s, the fluid model's %.4g (within 3 %%)", big,
		 fluid);
	/* 63 steps of at least one route's latency each */
	tf_check(!rc && small > 63 * cost_route_latency(1) && w8 < small,
		 "XOR at 1 KiB: %.3g us, above 63 latencies; 8 steps in flight %.3g us", small * 1e6, w8 * 1e6);
	struct native_choice c;
	struct native_sched *n = NULL;
	native_alltoall(NATIVE_SMPI_OMPI, 64, 32768, &c);
	double lin = -1;
	rc = native_build(&c, 64, &n, err);
	rc = rc ? rc : sched_job_time(j, n->nsteps, n->step_off, n->src, n->dst, n->mult, 32768, 1, &lin, err);
	tf_check(!rc && c.algo == NATIVE_LINEAR && lin > 0, "linear at 32 KiB on 64 ranks: %.4g s (%s)", lin,
		 rc ? err : "ok");
	native_free(n);
	uint32_t bad[64];
	for (uint32_t i = 0; i < 64; i++)
		bad[i] = 100000;
	struct sched_job *jb = NULL;
	tf_check(sched_job_new(rt, 64, bad, &jb, err) == AN_E_INVAL && !jb, "a host out of range (%s)", err);
	sched_job_free(j);
	sched_free(x);
	route_free(rt);
	snap_free(s);
}

int main(void)
{
	hand();
	selectors();
	tree();
	return tf_failures != 0;
}
