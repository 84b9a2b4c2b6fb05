/*
 * test_sched_cancel.c - cooperative cancellation of the longest analyses
 * (an_err.h, AN_CANCELLED): a schedule (TACS1, TACS2, route) built with a
 * cancel flag that is never raised is identical, flow by flow and figure
 * by figure, to one built without; with the flag raised it stops with
 * AN_E_CANCEL and returns nothing.
 */
#include <string.h>

#include "schedule.h"
#include "testfab.h"

static int same(const struct sched *a, const struct sched *b)
{
	if (a->algo != b->algo || a->nsteps != b->nsteps || a->nranks != b->nranks || a->multi != b->multi ||
	    a->host_steps != b->host_steps || a->extra_steps != b->extra_steps)
		return 0;
	size_t nf = a->step_off[a->nsteps];
	if (memcmp(a->step_off, b->step_off, (a->nsteps + 1) * sizeof(*a->step_off)))
		return 0;
	if (nf && (memcmp(a->src, b->src, nf * sizeof(*a->src)) || memcmp(a->dst, b->dst, nf * sizeof(*a->dst))))
		return 0;
	return !memcmp(a->fig, b->fig, a->nsteps * sizeof(*a->fig));
}

int main(void)
{
	struct snap *s = snap_new();
	struct route_tab *rt;
	struct hier *h;
	tf_tree2(s, 8, 8, 4, 1);
	tf_finish(s, 0);
	if (route_build(s, NULL, &rt) || hier_build(rt, &h))
		tf_die("build");
	uint32_t rh[128];
	for (uint32_t i = 0; i < 128; i++)
		rh[i] = (i * 5) % 64;
	const enum sched_algo algos[] = { SCHED_TACS1, SCHED_TACS2, SCHED_ROUTE };
	for (size_t a = 0; a < 3; a++) {
		atomic_int flag = 0;
		uint32_t P = algos[a] == SCHED_ROUTE ? 64 : 128;
		struct sched_req req = { .algo = algos[a], .nranks = P, .rank_host = rh, .conflicts = 1 };
		struct sched *plain = NULL, *watched = NULL, *stopped = NULL;
		char err[AN_ERR_LEN];
		int r1 = sched_build(rt, h, &req, 2, &plain, err);
		req.cancel = &flag;
		int r2 = sched_build(rt, h, &req, 2, &watched, err);
		tf_check(!r1 && !r2 && same(plain, watched), "%s, %u ranks: with a cancel flag never raised, the same schedule",
			 sched_algo_name(algos[a]), P);
		atomic_store(&flag, 1);
		int r3 = sched_build(rt, h, &req, 2, &stopped, err);
		tf_check(r3 == AN_E_CANCEL && !stopped, "%s: with the flag raised, AN_E_CANCEL (%s) and no schedule",
			 sched_algo_name(algos[a]), err);
		sched_free(plain);
		sched_free(watched);
	}
	hier_free(h);
	route_free(rt);
	snap_free(s);
	return tf_failures ? 1 : 0;
}
