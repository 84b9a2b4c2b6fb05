/*
 * test_place_run.c - picks judged by the all-to-all the job runs (issue 34,
 * item 3: place_pick_run). On small over-subscribed fabrics whose LFTs
 * spread traffic unevenly (a 2:1 tree with BFS LFTs, one with a slow
 * uplink, a random regular graph), random free lists: every time the
 * answer states under run=route is recomputed here from the hosts it names,
 * as `schedule route window=auto` predicts it (advice_schedule_opts, its
 * fallback included), and
 *   - run=route's answer is no slower, by that prediction, than run=bound's
 *     answer, than first-fit's hosts and than the random picks' mean;
 *   - run=bound answers exactly as place_pick_pat (the default's meaning);
 *   - the two judges disagree on some lists (else the test proves nothing).
 * Also run=xor and run=smpi-mpich against their own predictions, and the
 * refusals (another pattern, too many hosts).
 */
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "native.h"
#include "pattern.h"
#include "place.h"
#include "schedule.h"
#include "testfab.h"

struct fab {
	struct snap *s;
	struct route_tab *rt;
	struct hier *h;
	const char *name;
};

static void fab_up(struct fab *f, int kind)
{
	f->s = snap_new();
	if (kind == 0 || kind == 1) {
		tf_tree2(f->s, 6, 8, 4, 1);   /* 2:1 */
		tf_finish(f->s, 0);
		if (kind == 1) {
			int64_t l0 = snap_find_node(f->s, TF_SW_GUID + 1);
			if (l0 < 0)
				tf_die("leaf 1");
			tf_cable_width(f->s, (uint32_t)l0, 8 + 2, 1);
		}
		tf_bfs_lft(f->s);
		f->name = kind ? "2:1 tree, BFS LFTs, a slow uplink" : "2:1 tree, BFS LFTs";
	} else {
		tf_rrg(f->s, 12, 3, 4, 7);
		tf_finish(f->s, 0);
		f->name = "random regular graph 12x3x4";
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

/* The job's all-to-all on hosts[0..n) (rank i on hosts[i]) as topod's
 * schedule command predicts it: route with window=auto and its fallback,
 * or XOR's steps. */
static double sched_pred(const struct fab *f, enum sched_algo a, const uint32_t *hosts, size_t n, uint64_t bytes)
{
	struct sched_req req = { .algo = a, .nranks = (uint32_t)n, .rank_host = hosts, .conflicts = 1 };
	struct advice_opts o = { .bytes = bytes, .fallback = 1, .threads = 1, .window = a == SCHED_ROUTE ? 0 : 1,
				 .native = -1 };
	struct sched *s = NULL;
	struct advice av;
	char err[AN_ERR_LEN];
	if (advice_schedule_opts(f->rt, f->h, &req, &o, &s, &av, err))
		tf_die(err);
	sched_free(s);
	return av.time;
}

/* SMPI's MPICH selector's Alltoall on hosts, through the schedule job. */
static double native_pred(const struct fab *f, const uint32_t *hosts, size_t n, uint64_t bytes)
{
	struct native_choice c;
	struct native_sched *ns = NULL;
	struct sched_job *j = NULL;
	char err[AN_ERR_LEN];
	double t = -1;
	native_alltoall(NATIVE_SMPI_MPICH, (uint32_t)n, bytes, &c);
	if (native_build(&c, (uint32_t)n, &ns, err) || sched_job_new(f->rt, (uint32_t)n, hosts, &j, err) ||
	    sched_job_time(j, ns->nsteps, ns->step_off, ns->src, ns->dst, ns->mult, (double)bytes, 1, &t, err))
		tf_die(err);
	sched_job_free(j);
	native_free(ns);
	return t;
}

static void draw(uint32_t nhosts, uint32_t *fr, uint32_t nf)
{
	uint32_t *all = malloc(nhosts * sizeof(*all));
	if (!all)
		tf_die("nomem");
	for (uint32_t i = 0; i < nhosts; i++)
		all[i] = i;
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t j = i + (uint32_t)(tf_rand() % (nhosts - i)), x = all[i];
		all[i] = all[j], all[j] = x;
		fr[i] = all[i];
	}
	free(all);
}

static int same_pick(const struct place_pick *a, const struct place_pick *b)
{
	return a->n == b->n && !memcmp(a->hosts, b->hosts, a->n * sizeof(*a->hosts)) && a->time == b->time &&
	       a->ff_time == b->ff_time && a->random_time == b->random_time && a->first_fit == b->first_fit &&
	       a->widened == b->widened;
}

static const double EPS = 1 + 1e-6;

/* run=route against run=bound, first-fit and the random picks on random
 * lists of fabric f; counts the lists where the judges disagree. */
static void route_vs_bound(struct place_ctx *pc, const struct fab *f, int leaves, uint64_t bytes, int *disagree,
			   int *gain)
{
	struct pattern a2a;
	char why[AN_ERR_LEN];
	if (pattern_parse("alltoall", &a2a, why))
		tf_die(why);
	uint32_t fr[64], ff[64];
	int ok_faster = 1, ok_times = 1, ok_bound = 1, lists = 0;
	double worst_ff = 9, worst_rnd = 9;
	for (int it = 0; it < 6; it++) {
		uint32_t nf = 16 + (uint32_t)(tf_rand() % 9), want = 6 + (uint32_t)(tf_rand() % 5);
		if (nf > f->rt->nhosts)
			nf = f->rt->nhosts;
		draw(f->rt->nhosts, fr, nf);
		struct place_pick pr, pb, pp;
		if (place_pick_run(pc, f->rt, f->h, fr, nf, want, &a2a, bytes, 1, leaves, PLACE_RUN_ROUTE, NULL, &pr, why) ||
		    place_pick_run(pc, f->rt, f->h, fr, nf, want, &a2a, bytes, 1, leaves, PLACE_RUN_BOUND, NULL, &pb, why) ||
		    place_pick_pat(pc, f->rt, f->h, fr, nf, want, &a2a, bytes, 1, leaves, &pp, why))
			tf_die(why);
		lists++;
		ok_bound &= same_pick(&pb, &pp) && pb.run == PLACE_RUN_BOUND && pb.sims == 0;
		double t_r = sched_pred(f, SCHED_ROUTE, pr.hosts, want, bytes);
		double t_b = sched_pred(f, SCHED_ROUTE, pb.hosts, want, bytes);
		if (place_first_fit(fr, nf, want, ff))
			tf_die("first fit");
		double t_ff = sched_pred(f, SCHED_ROUTE, ff, want, bytes);
		/* the stated times are the route schedule's, recomputed here */
		ok_times &= pr.run == PLACE_RUN_ROUTE && pr.sims > 0 && t_r > 0 && pr.time > 0 &&
			    pr.time <= t_r * EPS && t_r <= pr.time * EPS && pr.ff_time <= t_ff * EPS &&
			    t_ff <= pr.ff_time * EPS;
		/* leaves=fewest keeps its promise first: first-fit and the
		 * random picks judge only the default, leaves=any */
		ok_faster &= t_r <= t_b * EPS && (leaves == PLACE_LEAVES_FEWEST ||
						  (t_r <= t_ff * EPS && (pr.random_time < 0 || t_r <= pr.random_time * EPS)));
		if (pr.random_time > 0 && pr.random_time / t_r < worst_rnd)
			worst_rnd = pr.random_time / t_r;
		if (t_ff / t_r < worst_ff)
			worst_ff = t_ff / t_r;
		if (memcmp(pr.hosts, pb.hosts, want * sizeof(*pr.hosts))) {
			(*disagree)++;
			*gain += t_r < t_b / EPS;
		}
		if (!ok_faster || !ok_times)
			tf_check(0, "%s nf=%u want=%u: route %.6g (stated %.6g) bound's pick %.6g first-fit %.6g (stated %.6g) random %.6g",
				 f->name, nf, want, t_r, pr.time, t_b, t_ff, pr.ff_time, pr.random_time);
		place_pick_free(&pr), place_pick_free(&pb), place_pick_free(&pp);
		if (!ok_faster || !ok_times)
			break;
	}
	tf_check(ok_bound, "%s, %llu B, leaves=%s: run=bound answers as place_pick_pat", f->name,
		 (unsigned long long)bytes, leaves ? "any" : "fewest");
	tf_check(ok_times, "%s, %llu B, leaves=%s: the times run=route states are the route schedule's", f->name,
		 (unsigned long long)bytes, leaves ? "any" : "fewest");
	tf_check(ok_faster,
		 "%s, %llu B, leaves=%s: run=route's pick no slower than run=bound's%s (%d lists; worst first-fit %.3fx, random %.3fx)",
		 f->name, (unsigned long long)bytes, leaves ? "any" : "fewest",
		 leaves ? ", first-fit or the random mean" : "", lists, worst_ff, worst_rnd);
	pattern_clear(&a2a);
}

/* run=xor and run=smpi-mpich: the stated times are those runs'. */
static void other_runs(struct place_ctx *pc, const struct fab *f)
{
	struct pattern a2a;
	char why[AN_ERR_LEN];
	uint32_t fr[64];
	if (pattern_parse("alltoall", &a2a, why))
		tf_die(why);
	draw(f->rt->nhosts, fr, 20);
	struct place_pick px, pm;
	int run;
	if (place_run_parse("smpi-mpich", &run))
		tf_die("parse");
	if (place_pick_run(pc, f->rt, f->h, fr, 20, 8, &a2a, 32768, 1, PLACE_LEAVES_ANY, PLACE_RUN_XOR, NULL, &px, why) ||
	    place_pick_run(pc, f->rt, f->h, fr, 20, 8, &a2a, 32768, 1, PLACE_LEAVES_ANY, run, NULL, &pm, why))
		tf_die(why);
	double tx = sched_pred(f, SCHED_XOR, px.hosts, 8, 32768), tm = native_pred(f, pm.hosts, 8, 32768);
	tf_check(px.run == PLACE_RUN_XOR && px.time > 0 && px.time <= tx * EPS && tx <= px.time * EPS,
		 "run=xor states XOR's steps' time (%.6g, recomputed %.6g)", px.time, tx);
	tf_check(pm.run == run && pm.time > 0 && pm.time <= tm * EPS && tm <= pm.time * EPS,
		 "run=smpi-mpich states the MPI's own Alltoall's time (%.6g, recomputed %.6g)", pm.time, tm);
	tf_check(!strcmp(place_run_name(run), "smpi-mpich") && !strcmp(place_run_name(PLACE_RUN_ROUTE), "route") &&
			 place_run_parse("nosuch", &run) == AN_E_INVAL,
		 "run names parse and print");
	place_pick_free(&px), place_pick_free(&pm);
	struct pattern ring;
	if (pattern_parse("ring", &ring, why))
		tf_die(why);
	struct place_pick q;
	int rc = place_pick_run(pc, f->rt, f->h, fr, 20, 8, &ring, 32768, 1, PLACE_LEAVES_ANY, PLACE_RUN_ROUTE, NULL, &q, why);
	tf_check(rc == AN_E_INVAL && strstr(why, "run=bound"), "run=route with pattern=ring is refused: %s", why);
	rc = place_pick_run(pc, f->rt, f->h, fr, 20, 8, &ring, 32768, 1, PLACE_LEAVES_ANY, PLACE_NRUNS, NULL, &q, why);
	tf_check(rc == AN_E_INVAL, "an unknown run is refused");
	pattern_clear(&ring);
	pattern_clear(&a2a);
}

int main(void)
{
	struct place_ctx *pc = place_ctx_new();
	if (!pc)
		tf_die("ctx");
	int disagree = 0, gain = 0;
	tf_rng_state = 34;
	for (int kind = 0; kind < 3; kind++) {
		struct fab f;
		fab_up(&f, kind);
		uint64_t seed = tf_rng_state;
		route_vs_bound(pc, &f, PLACE_LEAVES_ANY, 32768, &disagree, &gain);
		route_vs_bound(pc, &f, PLACE_LEAVES_FEWEST, 1u << 20, &disagree, &gain);
		tf_rng_state = seed + 1;
		if (kind == 0)
			other_runs(pc, &f);
		fab_down(&f);
	}
	tf_check(disagree > 0 && gain > 0,
		 "the judges disagree on %d lists, run=route's pick predicted faster on %d of them", disagree, gain);
	place_ctx_free(pc);
	return tf_failures ? 1 : 0;
}
