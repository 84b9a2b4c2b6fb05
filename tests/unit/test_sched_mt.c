/* test_sched_mt.c - sched_build from several threads at once (topod's
 * workers answer `schedule` requests concurrently): every TACS and OPT
 * schedule equals the one built alone. The sorts inside sched_build once
 * took their context from file-scope variables, which concurrent builds
 * overwrote under each other. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier.h"
#include "route.h"
#include "schedule.h"
#include "testfab.h"

#define NTHREADS 6
#define ROUNDS 12
#define MAXJOBS 16

struct fab {
	struct snap *s;
	struct route_tab *rt;
	struct hier *h;
};

/* One request and the schedule it gives when built alone. */
struct job {
	const struct fab *f;
	struct sched_req req;
	uint32_t rh[256];
	struct sched *ref;
};

static struct job jobs[MAXJOBS];
static unsigned njobs;

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

/* Equal in everything a reader may look at (M and friends up to nlevels). */
static int same_sched(const struct sched *a, const struct sched *b)
{
	if (a->algo != b->algo || a->nranks != b->nranks || a->nsteps != b->nsteps || a->multi != b->multi ||
	    a->host_steps != b->host_steps || a->extra_steps != b->extra_steps || a->nlevels != b->nlevels ||
	    a->tree_routes != b->tree_routes || strcmp(a->note, b->note) || !a->blk != !b->blk)
		return 0;
	size_t nf = a->step_off[a->nsteps], L = a->nlevels;
	if (memcmp(a->step_off, b->step_off, ((size_t)a->nsteps + 1) * sizeof(*a->step_off)) ||
	    memcmp(a->src, b->src, nf * sizeof(*a->src)) || memcmp(a->dst, b->dst, nf * sizeof(*a->dst)) ||
	    (a->blk && memcmp(a->blk, b->blk, nf * sizeof(*a->blk))) ||
	    memcmp(a->fig, b->fig, a->nsteps * sizeof(*a->fig)))
		return 0;
	if (L && (memcmp(a->M, b->M, L * sizeof(*a->M)) || memcmp(a->bmin, b->bmin, L * sizeof(*a->bmin)) ||
		  memcmp(a->cables, b->cables, L * sizeof(*a->cables)) ||
		  memcmp(a->cable_bound, b->cable_bound, L * sizeof(*a->cable_bound)) ||
		  memcmp(a->level_max, b->level_max, a->nsteps * L * sizeof(*a->level_max))))
		return 0;
	return 1;
}

/* Hosts first, first + stride, ... (n of them), rph ranks each. */
static void add_job(const struct fab *f, enum sched_algo algo, uint32_t first, uint32_t stride, uint32_t n,
		    uint32_t rph)
{
	if (njobs == MAXJOBS || n * rph > 256)
		tf_die("too many jobs");
	struct job *j = &jobs[njobs++];
	j->f = f;
	uint32_t P = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t x = 0; x < rph; x++)
			j->rh[P++] = (first + i * stride) % f->rt->nhosts;
	j->req = (struct sched_req){ .algo = algo, .nranks = P, .rank_host = j->rh, .conflicts = 1 };
	char err[AN_ERR_LEN];
	if (sched_build(f->rt, f->h, &j->req, 1, &j->ref, err)) {
		fprintf(stderr, "%s: %s\n", sched_algo_name(algo), err);
		tf_die("reference build");
	}
}

struct worker {
	unsigned id;
	int bad, builds;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char err[AN_ERR_LEN];
	for (unsigned round = 0; round < ROUNDS; round++)
		for (unsigned k = 0; k < njobs; k++) {
			/* each thread walks the jobs from its own start, so that
			 * different jobs (other hosts, other distances) overlap */
			const struct job *j = &jobs[(k + w->id * 3 + round) % njobs];
			struct sched *s = NULL;
			if (sched_build(j->f->rt, j->f->h, &j->req, 1, &s, err) || !same_sched(s, j->ref))
				w->bad++;
			w->builds++;
			sched_free(s);
		}
	return NULL;
}

int main(void)
{
	/* TACS: the 5:4 over-subscribed tree, hosts sharing leaves; OPT: a
	 * k=4 fat tree, whole pods and the whole fabric. */
	struct fab t2 = { .s = snap_new() }, ft = { .s = snap_new() };
	tf_tree2(t2.s, 8, 5, 4, 1);
	tf_finish(t2.s, 0);
	fab_open(&t2);
	tf_fattree3(ft.s, 4);
	tf_fattree3_finish(ft.s, 4);
	fab_open(&ft);
	add_job(&t2, SCHED_TACS1, 0, 1, 40, 1);
	add_job(&t2, SCHED_TACS2, 0, 1, 40, 1);
	add_job(&t2, SCHED_TACS1, 3, 7, 40, 1);
	add_job(&t2, SCHED_TACS2, 5, 3, 40, 2);
	add_job(&t2, SCHED_TACS1, 1, 1, 30, 2);
	add_job(&t2, SCHED_TACS1, 2, 11, 25, 1);
	add_job(&ft, SCHED_OPT, 0, 1, 16, 1);
	add_job(&ft, SCHED_OPT, 0, 1, 16, 2);
	add_job(&ft, SCHED_OPT, 8, 1, 8, 3);
	add_job(&ft, SCHED_OPT, 4, 1, 12, 1);
	tf_check(jobs[0].ref->algo == SCHED_TACS1 && jobs[6].ref->algo == SCHED_OPT && jobs[9].ref->nlevels > 1,
		 "references: TACS ran (no fallback), OPT found the tree");

	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .id = i };
		if (pthread_create(&th[i], NULL, work, &w[i]))
			tf_die("pthread_create");
	}
	int bad = 0, builds = 0;
	for (unsigned i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		bad += w[i].bad;
		builds += w[i].builds;
	}
	tf_check(!bad, "%d TACS1/TACS2/OPT builds on %d threads at once equal the single-threaded schedules (%d differ)",
		 builds, NTHREADS, bad);

	for (unsigned k = 0; k < njobs; k++)
		sched_free(jobs[k].ref);
	fab_close(&t2);
	fab_close(&ft);
	return tf_failures != 0;
}
