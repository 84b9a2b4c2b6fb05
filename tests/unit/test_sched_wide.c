/*
 * test_sched_wide.c - route's two step orders (schedule.h sched.wide): the
 * answer's order is never slower one step at a time than route's greedy
 * order, and where an order runs faster with steps in flight only at that
 * price, it is kept beside it (wide) and answered to a client with a
 * window, exactly when the model predicts it faster at that window for
 * 1 MiB blocks (SCHED_ORDER_BLOCK); a client that runs one step after the
 * other still gets the answer's order, and a client asking for another
 * block size gets the same steps (libtopocoll asks once per size class
 * and runs the steps it got first).
 */
#include <string.h>

#include "advice.h"
#include "testfab.h"

struct fab {
	struct snap *s;
	struct route_tab *rt;
	struct hier *h;
};

/* s's time for 1 MiB blocks at window w (0: the fastest of 1, 2, ... 32). */
static double at(const struct sched_job *j, const struct sched *s, uint32_t w)
{
	char err[AN_ERR_LEN];
	double best = -1, t;
	for (uint32_t k = w ? w : 1; k <= (w ? w : ADVICE_WINDOW_MAX); k *= 2) {
		if (sched_job_sched_time(j, s, 1 << 20, k, &t, err))
			tf_die(err);
		/* a wider window only for a gain beyond rounding, as advice does */
		if (best < 0 || t < best * (1 - 1e-6))
			best = t;
	}
	return best;
}

static int same_steps(const struct sched *a, const struct sched *b)
{
	if (a->nsteps != b->nsteps || a->step_off[a->nsteps] != b->step_off[b->nsteps])
		return 0;
	size_t n = a->step_off[a->nsteps];
	return !memcmp(a->step_off, b->step_off, (a->nsteps + 1) * sizeof(uint32_t)) &&
	       !memcmp(a->src, b->src, n * sizeof(uint32_t)) && !memcmp(a->dst, b->dst, n * sizeof(uint32_t));
}

/* One job: counts wide orders, answers that took one, and failures. */
static void job(const struct fab *f, const uint32_t *rh, uint32_t P, int *wides, int *taken, int *bad)
{
	char err[AN_ERR_LEN];
	struct sched_req req = { .algo = SCHED_ROUTE, .nranks = P, .rank_host = rh, .conflicts = 1 };
	struct sched *s = NULL, *a1 = NULL, *aw = NULL, *as = NULL;
	struct sched_job *j = NULL;
	struct advice v1, vw, vs;
	struct advice_opts o1 = { .bytes = 1 << 20, .fallback = 0, .threads = 2, .window = 1, .native = -1 };
	struct advice_opts ow = o1;
	ow.window = 0;
	struct advice_opts os = ow;
	os.bytes = 32768;
	if (sched_build(f->rt, f->h, &req, 2, &s, err) || sched_job_new(f->rt, P, rh, &j, err) ||
	    advice_schedule_opts(f->rt, f->h, &req, &o1, &a1, &v1, err) ||
	    advice_schedule_opts(f->rt, f->h, &req, &ow, &aw, &vw, err) ||
	    advice_schedule_opts(f->rt, f->h, &req, &os, &as, &vs, err))
		tf_die(err);
	if (s->algo != SCHED_ROUTE)
		goto out;
	/* the same steps at every size, for a client with a window */
	int ok = same_steps(aw, as) && vs.time > 0;
	double one = at(j, s, 1), best = at(j, s, 0);
	/* window 1: the answer's order, as built */
	ok &= same_steps(a1, s) && v1.window == 1 && v1.time <= one * (1 + 1e-9) && v1.time >= one * (1 - 1e-9);
	double wone = -1, wbest = -1;
	if (s->wide) {
		(*wides)++;
		wone = at(j, s->wide, 1), wbest = at(j, s->wide, 0);
		/* kept only because it is slower one step at a time */
		ok &= wone > one * (1 + 1e-6) && s->wide->nsteps == s->nsteps &&
		      s->wide->step_off[s->nsteps] == s->step_off[s->nsteps];
		/* window=auto: the faster of the two orders at their best windows */
		int wins = wbest < best * (1 - 1e-6);
		double want = wins ? wbest : best;
		ok &= vw.time <= want * (1 + 1e-9) && vw.time >= want * (1 - 1e-9) && same_steps(aw, wins ? s->wide : s);
		*taken += wins && same_steps(aw, s->wide);
	} else {
		ok &= vw.time <= best * (1 + 1e-9) && vw.time >= best * (1 - 1e-9) && same_steps(aw, s);
	}
	if (!ok) {
		(*bad)++;
		printf("# P=%u: one %.9g best %.9g, wide one %.9g best %.9g; window 1 %.9g (w %u), auto %.9g (w %u)\n",
		       P, one, best, wone, wbest, v1.time, v1.window, vw.time, vw.window);
	}
out:
	sched_free(s);
	sched_free(a1);
	sched_free(aw);
	sched_free(as);
	sched_job_free(j);
}

int main(void)
{
	struct fab f = { .s = snap_new() };
	tf_tree2(f.s, 8, 8, 4, 1);   /* 2:1 over-subscribed, 64 hosts */
	tf_finish(f.s, 0);
	if (route_build(f.s, NULL, &f.rt) || hier_build(f.rt, &f.h))
		tf_die("build");
	int wides = 0, taken = 0, bad = 0, jobs = 0;
	uint32_t rh[64];
	for (uint32_t P = 16; P <= 48; P += 16) {
		for (int rep = 0; rep < 4; rep++) {
			/* P distinct hosts drawn at random, in the drawn order */
			uint8_t used[64] = { 0 };
			for (uint32_t i = 0; i < P; i++) {
				uint32_t h;
				do
					h = (uint32_t)(tf_rand() % f.rt->nhosts);
				while (used[h]);
				used[h] = 1;
				rh[i] = h;
			}
			job(&f, rh, P, &wides, &taken, &bad);
			jobs++;
		}
	}
	tf_check(!bad, "%d route jobs: window 1 answers the order no slower one step at a time; window=auto the "
		       "faster of it and the wide order at their best windows, the same steps for 32 KiB blocks", jobs);
	tf_check(wides > 0 && taken > 0, "the wide order exists on %d of %d jobs and is answered on %d", wides, jobs,
		 taken);
	hier_free(f.h);
	route_free(f.rt);
	snap_free(f.s);
	return tf_failures != 0;
}
