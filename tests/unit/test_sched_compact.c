/* test_sched_compact.c - the host-level (compact) schedule and its rank
 * expansion (schedule.h: req.compact, sched_expand): for XOR, TACS1, TACS2,
 * the kPrefix and kShift allgathers and both rings on an over-subscribed tree, even and uneven rank
 * counts, interleaved hosts and non-powers of two, the compact build's steps,
 * per-step figures, multi flag and predicted time equal the rank-level
 * build's, its expansion lists exactly the rank-level flows step by step,
 * and the expansion passes the independent checker (every ordered pair once,
 * no rank twice in a step unless multi). The compact form holds no rank
 * flows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier.h"
#include "route.h"
#include "schedule.h"
#include "testfab.h"

/* 0 if a and b list the same flows in the same steps. */
static int same_flows(const struct sched *a, const struct sched *b)
{
	if (a->nsteps != b->nsteps || a->nranks != b->nranks)
		return 1;
	for (uint32_t st = 0; st <= a->nsteps; st++)
		if (a->step_off[st] != b->step_off[st])
			return 2;
	size_t n = a->step_off[a->nsteps];
	if (memcmp(a->src, b->src, n * sizeof(*a->src)) || memcmp(a->dst, b->dst, n * sizeof(*a->dst)))
		return 3;
	if ((a->blk != NULL) != (b->blk != NULL) || (a->blk && memcmp(a->blk, b->blk, n * sizeof(*a->blk))))
		return 4;
	if ((a->ord != NULL) != (b->ord != NULL) || (a->ord && memcmp(a->ord, b->ord, a->nranks * sizeof(*a->ord))))
		return 5;
	return 0;
}

static int same_figs(const struct sched *a, const struct sched *b)
{
	if (a->nsteps != b->nsteps || a->multi != b->multi || a->algo != b->algo || a->host_steps != b->host_steps ||
	    a->extra_steps != b->extra_steps)
		return 1;
	for (uint32_t st = 0; st < a->nsteps; st++) {
		const struct sched_fig *x = &a->fig[st], *y = &b->fig[st];
		if (x->flows != y->flows || x->maxload != y->maxload || x->conflicts != y->conflicts ||
		    x->fabric_conflicts != y->fabric_conflicts || x->max_hops != y->max_hops ||
		    x->unrated != y->unrated || x->s_per_byte != y->s_per_byte)
			return 2;
	}
	if (a->bound_s_per_byte != b->bound_s_per_byte || a->k != b->k)
		return 4;
	return sched_time(a, 1 << 20) != sched_time(b, 1 << 20) ? 3 : 0;
}

/* One request both ways; counts what differed. */
static int compare(const struct route_tab *rt, struct sched_req *req, const char *what, int *multi)
{
	char err[AN_ERR_LEN];
	struct sched *full = NULL, *c = NULL, *x = NULL;
	int bad = 0, rc;
	req->compact = 0;
	rc = sched_build(rt, NULL, req, 1, &full, err);
	req->compact = 1;
	int rc2 = sched_build(rt, NULL, req, 2, &c, err);
	if (rc || rc2) {
		bad = rc != rc2; /* both refuse (kPrefix k) or neither */
		goto out;
	}
	if (!c->compact || c->src || c->dst || c->step_off) {
		printf("# %s %s P=%u: compact form holds rank flows\n", what, sched_algo_name(req->algo), req->nranks);
		bad++;
	}
	int d = same_figs(full, c);
	if (d) {
		printf("# %s %s P=%u: figures differ (%d)\n", what, sched_algo_name(req->algo), req->nranks, d);
		bad++;
	}
	*multi += c->multi;
	if (sched_expand(c, &x, err)) {
		printf("# %s: expand: %s\n", what, err);
		bad++;
		goto out;
	}
	d = same_flows(full, x);
	if (d) {
		printf("# %s %s P=%u: expansion differs from the rank-level build (%d)\n", what, sched_algo_name(req->algo),
		       req->nranks, d);
		bad++;
	}
	if (sched_check(x, err)) {
		printf("# %s: expansion: %s\n", what, err);
		bad++;
	}
out:
	sched_free(full);
	sched_free(c);
	sched_free(x);
	return bad;
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 6, 4, 3, 1); /* 24 hosts, 4 down : 3 up */
	tf_finish(s, 0);
	struct route_tab *rt;
	if (route_build(s, NULL, &rt))
		tf_die("route_build");
	uint32_t rh[256];
	int bad = 0, runs = 0, multi = 0;
	for (uint32_t H = 2; H <= 24; H += (H < 8 ? 1 : 5)) {
		for (uint32_t rph = 1; rph <= 4; rph++) {
			for (int uneven = 0; uneven <= 1; uneven++) {
				/* uneven: host i gets rph + (i % 3 == 1) ranks, hosts interleaved */
				uint32_t P = 0;
				for (uint32_t i = 0; i < H; i++)
					for (uint32_t x = 0; x < rph + (uneven && i % 3 == 1); x++)
						rh[P++] = (i * 7) % 24;
				if (uneven && P > 4) { /* and one rank moved away from its host's block */
					uint32_t t = rh[1];
					rh[1] = rh[P - 1];
					rh[P - 1] = t;
				}
				for (int a = SCHED_XOR; a <= SCHED_RING; a++) {
					if (a == SCHED_OPT || a == SCHED_ROUTE)
						continue;
					/* kShift: the paper's k = 8, and 3 (P often no multiple) */
					struct sched_req req = { .algo = (enum sched_algo)a, .nranks = P, .rank_host = rh,
								 .conflicts = (unsigned)(rph & 1),
								 .k = a == SCHED_KSHIFT && uneven ? 3 : 0 };
					bad += compare(rt, &req, uneven ? "uneven" : "even", &multi);
					runs++;
				}
			}
		}
	}
	tf_check(!bad, "%d compact schedules (xor/tacs1/tacs2/allgather/kshift/agring/ring, 2..24 hosts, 1..5 ranks per host, even and "
		       "uneven): steps, figures, multi and time equal the rank-level build; the expansion equals its "
		       "flows and is a complete exchange (%d differences)",
		 runs, bad);
	tf_check(multi > 0, "some compact TACS2 schedules say multi=1, and equal the rank-level flag (%d)", multi);

	/* The sparsity guard and TACS falling back: the compact form is XOR's. */
	for (uint32_t r = 0; r < 6; r++)
		rh[r] = r * 4; /* one host per leaf */
	struct sched_req req = { .algo = SCHED_TACS1, .nranks = 6, .rank_host = rh, .conflicts = 1 };
	bad = compare(rt, &req, "sparse", &multi);
	char err[AN_ERR_LEN];
	struct sched *c = NULL;
	req.compact = 1;
	int rc = sched_build(rt, NULL, &req, 1, &c, err);
	tf_check(!bad && !rc && c->algo == SCHED_XOR && c->note[0], "sparse job: compact TACS falls back to XOR as the "
								       "rank-level build does (%s)", rc ? err : c->note);
	sched_free(c);

	/* OPT has no compact form: asked compact, it is built rank-level. */
	struct hier *h;
	if (hier_build(rt, &h))
		tf_die("hier_build");
	for (uint32_t r = 0; r < 24; r++)
		rh[r] = r;
	req = (struct sched_req){ .algo = SCHED_OPT, .nranks = 24, .rank_host = rh, .compact = 1 };
	c = NULL;
	rc = sched_build(rt, h, &req, 1, &c, err);
	tf_check(!rc && !c->compact && c->src && sched_expand(c, &(struct sched *){ NULL }, err) == AN_E_INVAL,
		 "OPT asked compact is rank-level, and sched_expand refuses it");
	sched_free(c);
	hier_free(h);
	route_free(rt);
	snap_free(s);
	return tf_failures ? 1 : 0;
}
