/* test_sched.c - all-to-all schedules: completeness (independent checker),
 * figures against a brute-force walk, TACS vs XOR on an over-subscribed tree,
 * OPT against seed 000's bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "cost.h"
#include "hier.h"
#include "load.h"
#include "pattern.h"
#include "route.h"
#include "rate.h"
#include "schedule.h"
#include "testfab.h"

struct fab {
	struct snap *s;
	struct route_tab *rt;
	struct hier *h;
};

static void fab_open(struct fab *f)
{
	if (route_build(f->s, NULL, &f->rt))
		tf_die("route_build");
	if (hier_build(f->rt, &f->h))
		tf_die("hier_build");
}

static void fab_close(struct fab *f)
{
	hier_free(f->h);
	route_free(f->rt);
	snap_free(f->s);
}

/* Brute force: walk every inter-host flow of the step with route_walk and
 * count per (node, port) slot. */
static int brute_step(const struct route_tab *rt, const struct sched *s, const uint32_t *rh, uint32_t st,
		      struct sched_fig *out)
{
	const struct snap *sn = rt->snap;
	uint32_t *load = calloc(sn->nports, sizeof(*load));
	/* distinct (src host, dst host) pairs per link, as a small set each */
	uint64_t(*pairs)[4] = calloc(sn->nports, sizeof(*pairs));
	uint8_t *np = calloc(sn->nports, 1);
	memset(out, 0, sizeof(*out));
	for (uint32_t f = s->step_off[st]; f < s->step_off[st + 1]; f++) {
		uint32_t a = rh[s->src[f]], b = rh[s->dst[f]];
		out->flows++;
		if (a == b)
			continue;
		uint32_t ea = route_host_ep(rt, a), eb = route_host_ep(rt, b);
		uint32_t slots[40], ns = 0;
		slots[ns++] = sn->nodes[rt->eps[ea].node].port0 + rt->eps[ea].port;
		struct route_hop hops[32];
		struct route_res res;
		if (route_walk(rt, ea, rt->eps[eb].lid, hops, 32, &res))
			return -1;
		if (res.hops > out->max_hops)
			out->max_hops = res.hops;
		for (uint32_t k = 0; k < res.hops; k++)
			slots[ns++] = sn->nodes[hops[k].node].port0 + hops[k].out;
		uint64_t pid = (uint64_t)a << 32 | b;
		for (uint32_t i = 0; i < ns; i++) {
			uint32_t sl = slots[i];
			load[sl]++;
			int have = 0;
			for (unsigned q = 0; q < np[sl] && q < 4; q++)
				have |= pairs[sl][q] == pid;
			if (!have && np[sl] < 4)
				pairs[sl][np[sl]++] = pid;
		}
	}
	for (uint32_t n = 0; n < sn->nnodes; n++)
		for (uint32_t p = 0; p <= sn->nodes[n].nports; p++) {
			uint32_t sl = sn->nodes[n].port0 + p, v = load[sl];
			out->maxload = v > out->maxload ? v : out->maxload;
			uint64_t bps = v ? rate_cable_bps(sn, n, p) : 1;
			if (!bps)
				out->unrated = 1;
			else if ((double)v * 8.0 / (double)bps > out->s_per_byte)
				out->s_per_byte = (double)v * 8.0 / (double)bps;
			if (np[sl] > 1) {
				out->conflicts++;
				if (sn->nodes[n].type == SNAP_NODE_SWITCH) {
					uint32_t sw = rt->sw_of_node[n];
					out->fabric_conflicts += rt->pt[rt->pt_off[sw] + p] < ROUTE_PT_EP;
				}
			}
		}
	free(load);
	free(pairs);
	free(np);
	return 0;
}

static long total_fabric_conflicts(const struct sched *s)
{
	long t = 0;
	for (uint32_t i = 0; i < s->nsteps; i++)
		t += s->fig[i].fabric_conflicts;
	return t;
}

/* Builds and checks; returns the schedule or NULL. */
static struct sched *run(const struct fab *f, enum sched_algo algo, const uint32_t *rh, uint32_t P, unsigned conf,
			 const char *what)
{
	struct sched_req req = { .algo = algo, .nranks = P, .rank_host = rh, .conflicts = conf };
	struct sched *s;
	char err[AN_ERR_LEN];
	int rc = sched_build(f->rt, f->h, &req, 2, &s, err);
	if (rc) {
		tf_check(0, "%s %s P=%u: build: %s", sched_algo_name(algo), what, P, err);
		return NULL;
	}
	rc = sched_check(s, err);
	if (rc)
		tf_check(0, "%s %s P=%u: check: %s", sched_algo_name(algo), what, P, err);
	return rc ? (sched_free(s), NULL) : s;
}

static void completeness(void)
{
	struct fab f = { .s = snap_new() };
	tf_tree2(f.s, 6, 4, 3, 1); /* 24 hosts, 4:3 */
	tf_finish(f.s, 0);
	fab_open(&f);
	uint32_t rh[256];
	int bad = 0, runs = 0, multi2 = 0, brute_bad = 0;
	for (uint32_t H = 1; H <= 24; H += (H < 8 ? 1 : 5)) {
		for (uint32_t rph = 1; rph <= 5; rph++) {
			/* uneven: host i gets rph + (i % 3 == 1) ranks, blocks interleaved */
			uint32_t P = 0;
			for (uint32_t i = 0; i < H; i++)
				for (uint32_t x = 0; x < rph + (i % 3 == 1); x++)
					rh[P++] = (i * 7) % 24;
			if (P < 2)
				continue;
			for (int a = SCHED_XOR; a <= SCHED_TACS2; a++) {
				for (unsigned conf = 0; conf <= 1; conf++) {
					struct sched *s = run(&f, (enum sched_algo)a, rh, P, conf, "uneven");
					runs++;
					if (!s) {
						bad++;
						continue;
					}
					if (a == SCHED_TACS2)
						multi2 += s->multi;
					if (a != SCHED_TACS2 && s->multi)
						bad++;
					for (uint32_t st = 0; st < s->nsteps; st += 3) {
						struct sched_fig b;
						const struct sched_fig *g = &s->fig[st];
						if (brute_step(f.rt, s, rh, st, &b) || b.flows != g->flows || b.maxload != g->maxload ||
						    b.conflicts != g->conflicts || b.fabric_conflicts != g->fabric_conflicts ||
						    b.max_hops != g->max_hops || b.unrated != g->unrated || b.s_per_byte != g->s_per_byte) {
							if (!brute_bad++)
								printf("# step %u: brute %u %u %u %u, sched %u %u %u %u\n", st, b.flows, b.maxload, b.conflicts, b.fabric_conflicts, s->fig[st].flows, s->fig[st].maxload, s->fig[st].conflicts, s->fig[st].fabric_conflicts);
						}
					}
					sched_free(s);
				}
			}
		}
	}
	tf_check(!bad, "%d schedules (xor/tacs1/tacs2, 1..24 hosts, uneven ranks) are complete exchanges", runs);
	tf_check(!brute_bad, "per-step max load and conflicts (links shared by two host pairs) equal a brute-force walk");
	tf_check(multi2 > 0, "TACS2 says multi=1 where a rank exchanges twice in a step (%d runs)", multi2);
	/* Contiguous non-powers of two and powers of two for XOR and allgather. */
	bad = 0;
	for (uint32_t P = 2; P <= 96; P += (P < 20 ? 1 : 13)) {
		for (uint32_t r = 0; r < P; r++)
			rh[r] = r / 4;
		struct sched *s = run(&f, SCHED_XOR, rh, P, 0, "contiguous");
		bad += !s || s->nsteps != P - 1;
		sched_free(s);
		if (P % 2 == 0) {
			s = run(&f, SCHED_ALLGATHER, rh, P, 0, "contiguous");
			bad += !s || s->nsteps != P - 1;
			sched_free(s);
		}
	}
	tf_check(!bad, "xor (pairwise for non-powers of two) and kPrefix allgather: P-1 steps, complete");
	/* An odd count: kPrefix does not apply, and says so. */
	{
		for (uint32_t r = 0; r < 7; r++)
			rh[r] = r;
		struct sched_req req = { .algo = SCHED_ALLGATHER, .nranks = 7, .rank_host = rh, .k = 4 };
		struct sched *s;
		char err[AN_ERR_LEN];
		int rc = sched_build(f.rt, f.h, &req, 1, &s, err);
		tf_check(rc == AN_E_NOTAPPLIC, "kPrefix k=4 on 7 ranks: not applicable (%s)", err);
	}
	/* The checker catches a broken schedule. */
	{
		for (uint32_t r = 0; r < 8; r++)
			rh[r] = r;
		struct sched *s = run(&f, SCHED_XOR, rh, 8, 0, "mutate");
		char err[AN_ERR_LEN];
		if (s) {
			s->dst[3] = s->dst[4];
			tf_check(sched_check(s, err) == AN_E_CHECK, "checker rejects a duplicated pair (%s)", err);
			s->multi = 0;
			sched_free(s);
		}
	}
	fab_close(&f);
}

/* The 5:4 over-subscribed two-level tree of the lab: TACS1 vs XOR. */
static void oversub(void)
{
	struct fab f = { .s = snap_new() };
	tf_tree2(f.s, 8, 5, 4, 1); /* 40 hosts, 5 down : 4 up */
	tf_finish(f.s, 0);
	fab_open(&f);
	uint32_t rh[160];
	for (uint32_t r = 0; r < 160; r++)
		rh[r] = r / 4;
	struct sched *x = run(&f, SCHED_XOR, rh, 160, 0, "5:4");
	struct sched *t = run(&f, SCHED_TACS1, rh, 160, 1, "5:4");
	if (x && t) {
		double ax = (double)total_fabric_conflicts(x) / x->nsteps;
		double at = (double)total_fabric_conflicts(t) / t->nsteps;
		printf("# 5:4 tree 40 hosts x 4 ranks: xor %u steps %.2f fabric conflicts/step, tacs1 %u steps %.2f\n",
		       x->nsteps, ax, t->nsteps, at);
		tf_check(at < ax, "5:4 tree: TACS1 has fewer conflicting switch links per step than XOR (%.2f < %.2f)",
			 at, ax);
	}
	sched_free(x);
	sched_free(t);
	fab_close(&f);
}

/* k=4 and k=8 fat trees: OPT applies to the full job, its aggregate per
 * level is seed 000's bound; and it does not apply to an uneven job. */
static void opt(void)
{
	for (unsigned k = 4; k <= 8; k += 4) {
		struct fab f = { .s = snap_new() };
		tf_fattree3(f.s, k);
		tf_fattree3_finish(f.s, k);
		fab_open(&f);
		uint32_t H = k * k * k / 4, P = H * 2;
		uint32_t *rh = malloc(P * sizeof(*rh));
		for (uint32_t r = 0; r < P; r++)
			rh[r] = (r * 37 % P) / 2 % H; /* scrambled order: OPT must find the tree */
		for (uint32_t r = 0; r < P; r++)
			rh[r] = r % H;
		struct sched *s = run(&f, SCHED_OPT, rh, P, 0, "fat tree");
		if (s) {
			tf_check(s->nlevels == 4 && s->M[0] == 2 && s->M[1] == k / 2 && s->M[2] == k / 2 && s->M[3] == k,
				 "k=%u: OPT tree FT(4; %u,%u,%u,%u)", k, s->M[0], s->M[1], s->M[2], s->M[3]);
			tf_check(s->tree_routes, "k=%u: d-mod-k routes climb and descend the tree", k);
			uint32_t worst[SCHED_LEVELS_MAX] = { 0 };
			for (uint32_t st = 0; st < s->nsteps; st++)
				for (uint32_t l = 1; l < s->nlevels; l++)
					if (s->level_max[st * s->nlevels + l] > worst[l])
						worst[l] = s->level_max[st * s->nlevels + l];
			printf("# k=%u OPT: level 1 bound %u worst %u; level 2 bound %u (Bmin %u / %u cables) worst %u; "
			       "level 3 bound %u (Bmin %u / %u) worst %u\n",
			       k, s->cable_bound[1], worst[1], s->cable_bound[2], s->bmin[2], s->cables[2], worst[2],
			       s->cable_bound[3], s->bmin[3], s->cables[3], worst[3]);
			tf_check(worst[1] == s->cable_bound[1], "k=%u: OPT loads each host cable exactly at the bound", k);
		}
		sched_free(s);
		rh[0] = rh[1]; /* one host with 3 ranks, one with 1 */
		struct sched_req req = { .algo = SCHED_OPT, .nranks = P, .rank_host = rh };
		char err[AN_ERR_LEN];
		tf_check(sched_build(f.rt, f.h, &req, 1, &s, err) == AN_E_NOTAPPLIC,
			 "k=%u: OPT on uneven ranks per host is not applicable (%s)", k, err);
		free(rh);
		fab_close(&f);
	}
}

/* OPT on many homogeneous jobs of two-level trees: complete, and the host
 * cables never carry more than seed 000's Bmin(1). */
static void opt_sizes(void)
{
	int bad = 0, runs = 0;
	for (unsigned nleaf = 2; nleaf <= 5; nleaf++)
		for (unsigned hpl = 1; hpl <= 3; hpl++) {
			struct fab f = { .s = snap_new() };
			tf_tree2(f.s, nleaf, hpl, 2, 1);
			tf_finish(f.s, 0);
			fab_open(&f);
			for (unsigned rph = 1; rph <= 3; rph++) {
				uint32_t P = nleaf * hpl * rph, rh[64];
				if (P < 2)
					continue;
				for (uint32_t r = 0; r < P; r++)
					rh[r] = (r * 7 + 3) % P / rph; /* shuffled ranks */
				struct sched *s = run(&f, SCHED_OPT, rh, P, 0, "tree2");
				runs++;
				if (!s) {
					bad++;
					continue;
				}
				for (uint32_t st = 0; st < s->nsteps; st++)
					if (s->nlevels > 1 && s->level_max[st * s->nlevels + 1] > s->bmin[1])
						bad++;
				sched_free(s);
			}
			fab_close(&f);
		}
	tf_check(!bad, "OPT on %d homogeneous jobs (2..5 leaves x 1..3 hosts x 1..3 ranks, shuffled): complete, host "
		       "cables within Bmin(1)", runs);
}

/* sched_time against the cost model computed the other way: each step as
 * an explicit traffic matrix through load_build and cost_load_time. A 5:4
 * tree with one 1x host cable, so rates decide some steps. */
static void predicted_times(void)
{
	struct fab f = { .s = snap_new() };
	tf_tree2(f.s, 4, 5, 4, 1);
	tf_finish(f.s, 0);
	fab_open(&f);
	const struct route_ep *e0 = &f.rt->eps[route_host_ep(f.rt, 0)];
	tf_cable_width(f.s, e0->node, e0->port, 1);
	uint32_t rh[13];
	for (uint32_t i = 0; i < 13; i++)
		rh[i] = (i * 7) % f.rt->nhosts;   /* spread over the leaves, in no tree order */
	const uint64_t B = 1 << 20;
	int bad = 0, n = 0;
	for (int a = SCHED_XOR; a <= SCHED_TACS2; a++) {
		struct sched *s = run(&f, (enum sched_algo)a, rh, 13, 1, "predicted");
		if (!s)
			continue;
		double want = 0;
		for (uint32_t st = 0; st < s->nsteps; st++) {
			struct pat_triple t[64];
			size_t nt = 0;
			for (uint32_t k = s->step_off[st]; k < s->step_off[st + 1] && nt < 64; k++)
				t[nt++] = (struct pat_triple){ s->src[k], s->dst[k], B };
			struct pattern p;
			struct pat_job job = { 13, rh };
			struct load *L = NULL;
			struct cost_time ct;
			char err[AN_ERR_LEN];
			if (pattern_set_matrix(&p, t, nt, 13, err) || load_build(f.rt, &job, &p, 1, &L) ||
			    cost_load_time(f.rt, L, &ct, err))
				bad++;
			else
				want += ct.seconds;
			pattern_clear(&p);
			load_free(L);
		}
		/* the steps one after another: sched_time without the overlap
		 * (test_cost_sim.c checks that) */
		s->sim_s_per_byte = 0;
		double got = sched_time(s, B);
		n++;
		if (!(got > 0 && fabs(got - want) <= 1e-9 * want)) {
			bad++;
			printf("# %s: sched_time %.9g s, steps as load %.9g s\n", sched_algo_name(s->algo), got, want);
		}
		sched_free(s);
	}
	tf_check(n == 3 && !bad, "sched_time without the overlap equals the cost of each step as a traffic matrix (load + cost), %d algorithms", n);
	fab_close(&f);
}

int main(void)
{
	predicted_times();
	opt_sizes();
	completeness();
	oversub();
	opt();
	return tf_failures != 0;
}
