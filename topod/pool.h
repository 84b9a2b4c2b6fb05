/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.h - the bounded pool of worker threads that runs heavy requests
 * (CMD_HEAVY rows of cmd_table) off the event loop.
 *
 * Sizing: `threads` workers, and `threads` thread tokens shared by every
 * job's OpenMP team: a job runs with one token plus whatever tokens are free
 * when it starts and no other job is waiting, less one kept back for the
 * next heavy job (it starts at once, not after this one), so workers and their OpenMP
 * threads together never exceed `threads` (the --threads bound). Workers run
 * at a lower scheduling priority (nice +10) than the event loop, so a matrix
 * being computed never delays a cheap answer by a full time slice.
 *
 * Memory: every job says what it will hold at its peak (j->mem, the
 * server's estimate, topod/estimate.h); a job starts only when that fits
 * what the running jobs have left of mem_budget, so the jobs in flight
 * together never reserve more. pool_submit() refuses a job that could never
 * fit (POOL_TOOBIG); one that does not fit now waits its turn.
 *
 * Two lanes (Redis answers small requests first; memcached keeps a worker
 * for them): light jobs (j->light: a few milliseconds and at most
 * light_mem bytes, by the estimate) have a queue of their own, served
 * before the heavy queue by every worker, and one more worker that takes
 * only light jobs, at normal priority, with light_mem of the budget set
 * apart for it. So a small matrix never waits behind a long schedule. The
 * heavy queue is FIFO: a big job at its head is not overtaken by later
 * heavy ones (it would starve).
 *
 * Deadlines: pool_expire(), called periodically, answers queued jobs past
 * j->deadline_ns without running them (done() with expired set) and raises
 * j->stop of running ones, which the analyses read between steps
 * (cooperative cancellation: a running job is never killed).
 *
 * Jobs are queued at most `queue_max` (both lanes together); pool_submit()
 * refuses beyond that (POOL_FULL), and the server answers ERR BUSY. run()
 * executes on a worker with the OpenMP team size it may use; done() is
 * then called on the same worker to hand the result back (the server
 * queues it for its loop).
 *
 * Errors: pool_new() returns NULL (ENOMEM, or a thread could not start).
 */
#ifndef TOPOD_POOL_H
#define TOPOD_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct pool_job {
	void (*run)(struct pool_job *j, int threads);
	void (*done)(struct pool_job *j);   /* always called once; cancelled or expired set if run() was not */
	int cancelled;          /* the pool is stopping */
	int expired;            /* its deadline passed while it was queued */
	uint64_t mem;           /* bytes reserved while it runs (the submitter's estimate) */
	int light;              /* may take the light lane */
	uint64_t deadline_ns;   /* CLOCK_MONOTONIC (pool_now_ns); 0: none */
	atomic_int stop;        /* raised once it runs past deadline_ns */
	struct pool_job *next;  /* the pool's */
};

struct pool_config {
	int threads;            /* heavy workers and thread tokens */
	unsigned queue_max;     /* jobs waiting, both lanes */
	uint64_t mem_budget;    /* bytes all running jobs may reserve together; 0: no bound */
	uint64_t light_mem;     /* of it, set apart for the light worker; also a light job's most */
};

struct pool_stats {
	uint64_t submitted, refused, completed, expired, stopped, light_done;
	unsigned queued, running, light_queued;
	uint64_t reserved, budget;
};

#define POOL_FULL (-1)
#define POOL_TOOBIG (-2)

struct pool;

struct pool *pool_new(const struct pool_config *cfg);
/* Finishes the running jobs, cancels the queued ones (done() with
 * cancelled set, on the calling thread), joins the workers. NULL is a no-op. */
void pool_free(struct pool *p);
/* 0 queued; POOL_FULL when the queue is full, POOL_TOOBIG when j->mem is
 * more than a job of its lane may ever reserve (the job is untouched, the
 * caller still owns it). Callable from any thread. */
int pool_submit(struct pool *p, struct pool_job *j);
/* The most one job may reserve: a heavy job, or (light) a light one. */
uint64_t pool_job_max(const struct pool *p, int light);
/* Deadlines (see above), as of now_ns. Returns the number of queued jobs
 * it expired. Callable from any thread; done() runs on the calling one. */
unsigned pool_expire(struct pool *p, uint64_t now_ns);
void pool_get_stats(struct pool *p, struct pool_stats *out);
int pool_threads(const struct pool *p);
uint64_t pool_now_ns(void);

#endif
