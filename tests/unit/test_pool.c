/*
 * test_pool.c - the worker pool's bounds (topod/pool.h): the memory budget
 * holds for jobs in flight, a job that could never fit is refused, a light
 * job runs while every heavy worker is busy, and deadlines expire queued
 * jobs without running them and raise a running job's stop flag.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "tap.h"

struct tj {
	struct pool_job pj;
	atomic_int ran, done, *gate;   /* gate: run() waits until it is set, or stop */
	atomic_int started, threads;   /* run() entered, with this many threads */
	atomic_int *in_flight, *peak;  /* reserved bytes of running test jobs */
};

static void tj_run(struct pool_job *pj, int threads)
{
	struct tj *j = (struct tj *)pj;
	atomic_store(&j->threads, threads);
	atomic_store(&j->started, 1);
	int now = atomic_fetch_add(j->in_flight, (int)pj->mem) + (int)pj->mem;
	for (int p = atomic_load(j->peak); now > p && !atomic_compare_exchange_weak(j->peak, &p, now);)
		;
	while (j->gate && !atomic_load(j->gate) && !atomic_load(&pj->stop))
		usleep(1000);
	usleep(2000);
	atomic_fetch_sub(j->in_flight, (int)pj->mem);
	atomic_store(&j->ran, 1);
}

static void tj_done(struct pool_job *pj)
{
	atomic_store(&((struct tj *)pj)->done, 1);
}

static atomic_int in_flight, peak;

static void tj_init(struct tj *j, uint64_t mem, int light, atomic_int *gate)
{
	memset(j, 0, sizeof(*j));
	j->pj.run = tj_run;
	j->pj.done = tj_done;
	j->pj.mem = mem;
	j->pj.light = light;
	j->gate = gate;
	j->in_flight = &in_flight;
	j->peak = &peak;
}

static int wait_for(atomic_int *flag, int ms)
{
	for (int i = 0; i < ms && !atomic_load(flag); i++)
		usleep(1000);
	return atomic_load(flag);
}

static void budget(void)
{
	struct pool_config pc = { 4, 64, 100, 10 };
	struct pool *p = pool_new(&pc);
	struct tj j[8], big;
	for (int i = 0; i < 8; i++) {
		tj_init(&j[i], 40, 0, NULL);
		pool_submit(p, &j[i].pj);
	}
	tj_init(&big, 91, 0, NULL);
	CHECK(pool_submit(p, &big.pj) == POOL_TOOBIG && pool_job_max(p, 0) == 90,
	      "a job of 91 bytes where heavy jobs may reserve 90 (100 less the light lane's 10) is refused: TOOBIG");
	int all = 1;
	for (int i = 0; i < 8; i++)
		all &= wait_for(&j[i].done, 5000);
	CHECK(all && atomic_load(&peak) <= 90,
	      "eight 40-byte jobs on four workers under a 90-byte budget: all done, at most %d bytes at once (two jobs)",
	      atomic_load(&peak));
	pool_free(p);
}

static void light_lane(void)
{
	atomic_int gate = 0;
	struct pool_config pc = { 1, 64, 1000, 100 };
	struct pool *p = pool_new(&pc);
	struct tj hv[2], lt;
	tj_init(&hv[0], 500, 0, &gate);
	tj_init(&hv[1], 500, 0, &gate);
	tj_init(&lt, 50, 1, NULL);
	pool_submit(p, &hv[0].pj);
	pool_submit(p, &hv[1].pj);
	usleep(20000);
	pool_submit(p, &lt.pj);
	int got = wait_for(&lt.done, 2000);
	struct pool_stats st;
	pool_get_stats(p, &st);
	CHECK(got && !atomic_load(&hv[0].done) && st.light_done == 1,
	      "a light job is answered while the only heavy worker is held and another heavy job waits");
	atomic_store(&gate, 1);
	CHECK(wait_for(&hv[1].done, 2000), "the heavy jobs finish once released");
	pool_free(p);
}

static void deadlines(void)
{
	atomic_int gate = 0;
	struct pool_config pc = { 1, 64, 0, 0 };
	struct pool *p = pool_new(&pc);
	struct tj run, queued, later;
	uint64_t now = pool_now_ns();
	tj_init(&run, 1, 0, &gate);
	run.pj.deadline_ns = now + 50000000; /* 50 ms */
	tj_init(&queued, 1, 0, &gate);
	queued.pj.deadline_ns = now + 50000000;
	tj_init(&later, 1, 0, &gate);
	later.pj.deadline_ns = now + 60000000000ull;
	pool_submit(p, &run.pj);
	/* run must hold the only worker before the others are queued; the
	 * clock is passed to pool_expire, so a loaded machine that stalls
	 * this thread past 50 ms cannot expire anything early. */
	CHECK(wait_for(&run.started, 5000), "the first job runs on the only worker");
	pool_submit(p, &queued.pj);
	pool_submit(p, &later.pj);
	CHECK(pool_expire(p, run.pj.deadline_ns - 1) == 0 && !atomic_load(&run.pj.stop),
	      "nothing expires before its deadline");
	unsigned n = pool_expire(p, run.pj.deadline_ns);
	CHECK(n == 1 && queued.pj.expired && atomic_load(&queued.done) && !atomic_load(&queued.ran),
	      "the queued job past its deadline is answered expired without running");
	CHECK(wait_for(&run.done, 2000) && atomic_load(&run.pj.stop),
	      "the running job past its deadline has its stop flag raised and returns");
	atomic_store(&gate, 1);
	CHECK(wait_for(&later.done, 2000) && !later.pj.expired && atomic_load(&later.ran), "a job within its deadline runs");
	struct pool_stats st;
	pool_get_stats(p, &st);
	CHECK(st.expired == 1 && st.stopped == 1, "stats: expired %llu, stopped %llu", (unsigned long long)st.expired,
	      (unsigned long long)st.stopped);
	pool_free(p);
}

/* A heavy job that starts alone must not take every token: a second heavy
 * job that comes while it runs starts at once on a free worker. */
static void tokens_kept(void)
{
	atomic_int gate = 0;
	struct pool_config pc = { 4, 64, 0, 0 };
	struct pool *p = pool_new(&pc);
	struct tj a, b;
	tj_init(&a, 1, 0, &gate);
	tj_init(&b, 1, 0, &gate);
	pool_submit(p, &a.pj);
	int a_on = wait_for(&a.started, 2000);
	pool_submit(p, &b.pj);
	int b_on = wait_for(&b.started, 2000);
	CHECK(a_on && b_on && !atomic_load(&a.done),
	      "a second heavy job starts while the first (started alone) still runs");
	CHECK(atomic_load(&a.threads) == 3 && atomic_load(&b.threads) == 1,
	      "the first took 3 of 4 thread tokens (one kept back), the second 1: %d, %d",
	      atomic_load(&a.threads), atomic_load(&b.threads));
	atomic_store(&gate, 1);
	CHECK(wait_for(&a.done, 2000) && wait_for(&b.done, 2000), "both finish once released");
	pool_free(p);
	struct pool_config one = { 1, 64, 0, 0 };
	p = pool_new(&one);
	tj_init(&a, 1, 0, NULL);
	pool_submit(p, &a.pj);
	CHECK(wait_for(&a.done, 2000) && atomic_load(&a.threads) == 1, "with one thread a job still runs, on 1");
	pool_free(p);
}

int main(void)
{
	tokens_kept();
	budget();
	light_lane();
	deadlines();
	return TAP_DONE();
}
