/*
 * pool.h - the bounded pool of worker threads that runs heavy requests
 * (CMD_HEAVY rows of cmd_table) off the event loop.
 *
 * Sizing: `threads` workers, and `threads` thread tokens shared by every
 * job's OpenMP team: a job runs with one token plus whatever tokens are free
 * when it starts and no other job is waiting, so workers and their OpenMP
 * threads together never exceed `threads` (the --threads bound). Workers run
 * at a lower scheduling priority (nice +10) than the event loop, so a matrix
 * being computed never delays a cheap answer by a full time slice.
 *
 * Jobs are queued FIFO, at most `queue_max`; pool_submit() refuses beyond
 * that, and the server answers ERR BUSY. run() executes on a worker with the
 * OpenMP team size it may use; done() is then called on the same worker to
 * hand the result back (the server queues it for its loop).
 *
 * Errors: pool_new() returns NULL (ENOMEM, or a thread could not start).
 */
#ifndef TOPOD_POOL_H
#define TOPOD_POOL_H

#include <stddef.h>
#include <stdint.h>

struct pool_job {
	void (*run)(struct pool_job *j, int threads);
	void (*done)(struct pool_job *j);   /* always called once; cancelled set if run() was not */
	int cancelled;
	struct pool_job *next;   /* the pool's */
};

struct pool_stats {
	uint64_t submitted, refused, completed;
	unsigned queued, running;
};

struct pool;

struct pool *pool_new(int threads, unsigned queue_max);
/* Finishes the running jobs, cancels the queued ones (done() with
 * cancelled set, on the calling thread), joins the workers. NULL is a no-op. */
void pool_free(struct pool *p);
/* 0 queued; -1 when the queue is full (the job is untouched, the caller
 * still owns it). Callable from any thread. */
int pool_submit(struct pool *p, struct pool_job *j);
void pool_get_stats(struct pool *p, struct pool_stats *out);
int pool_threads(const struct pool *p);

#endif
