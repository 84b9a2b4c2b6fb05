/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.c - see pool.h.
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <omp.h>

/* After a job that reserved this much, its freed memory is handed back to
 * the system: glibc keeps a freed arena's pages otherwise, and a worker's
 * arena is not reused by the others, so RSS would follow the sum of every
 * worker's largest job instead of the budget. */
#define TRIM_AFTER (8u << 20)

struct queue {
	struct pool_job *head, *tail;
};

struct worker {
	struct pool *p;
	int light;                /* the light lane's own worker */
	struct pool_job *job;     /* running, or NULL */
	pthread_t thr;
};

struct pool {
	pthread_mutex_t lock;     /* covers everything below */
	pthread_cond_t work;      /* a job was queued, tokens or memory came back, or stop */
	struct queue light, heavy;
	unsigned queued, light_queued, running, queue_max;
	int tokens;               /* free thread tokens */
	int nthreads;
	uint64_t budget, light_mem;
	uint64_t reserved;        /* by running jobs on the heavy workers */
	uint64_t light_reserved;  /* by the light worker's job */
	int stop;
	struct worker *w;         /* nthreads heavy workers, then the light one */
	int started;
	struct pool_stats st;
};

uint64_t pool_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void q_push(struct queue *q, struct pool_job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static struct pool_job *q_pop(struct queue *q)
{
	struct pool_job *j = q->head;
	q->head = j->next;
	if (!q->head)
		q->tail = NULL;
	return j;
}

/* What the heavy workers may reserve together. */
static uint64_t heavy_cap(const struct pool *p)
{
	return p->budget > p->light_mem ? p->budget - p->light_mem : 0;
}

static int fits(const struct pool *p, const struct pool_job *j)
{
	return !p->budget || p->reserved + j->mem <= heavy_cap(p);
}

/* The next job this worker may start now, dequeued and reserved, or NULL. */
static struct pool_job *pick(struct pool *p, struct worker *w)
{
	struct pool_job *j = NULL;
	if (w->light) {
		if (!p->light.head)
			return NULL;
		j = q_pop(&p->light);
		p->light_queued--;
		p->light_reserved += j->mem;
	} else {
		if (p->tokens == 0)
			return NULL;
		/* The heavy queue first: the light lane has its own worker, and
		 * a stream of light requests must not keep a heavy one waiting
		 * until its deadline. A heavy worker helps with light ones only
		 * when no heavy job can start. */
		if (p->heavy.head && fits(p, p->heavy.head)) {
			j = q_pop(&p->heavy);
		} else if (p->light.head && fits(p, p->light.head)) {
			j = q_pop(&p->light);
			p->light_queued--;
		} else {
			return NULL;
		}
		p->reserved += j->mem;
	}
	p->queued--;
	p->running++;
	w->job = j;
	return j;
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	/* Heavy answers are background work: below the event loop's
	 * priority, so a cheap request is answered at once even when every
	 * core is computing a matrix. Linux applies nice per thread. The
	 * light lane's jobs are short and waited for: normal priority. */
	if (!w->light)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pool_job *j = NULL;
		while (!p->stop && !(j = pick(p, w)))
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		/* One token to run at all; a job started while others wait
		 * takes only that, so the queue drains fairly. One started
		 * alone takes the free tokens but one: an OpenMP team cannot
		 * shrink, and a heavy job that came a moment later would
		 * otherwise wait for the whole of the first. */
		int take = 0;
		if (!w->light) {
			take = p->light.head || p->heavy.head || j->light ? 1 : p->tokens - (p->tokens > 1);
			p->tokens -= take;
		}
		pthread_mutex_unlock(&p->lock);

		/* nthreads-var is per thread: this sets only our own
		 * teams, never the builder's or another worker's. */
		int nt = take ? take : 1;
		omp_set_num_threads(nt);
		j->run(j, nt);
		uint64_t mem = j->mem;
		int light = j->light, stopped = atomic_load(&j->stop);
		/* Unlisted before the hand-off: once done() has passed j to the
		 * loop it may be freed there, and pool_expire (on the loop)
		 * must never find it in w->job again. */
		pthread_mutex_lock(&p->lock);
		w->job = NULL;
		p->st.completed++;   /* counted before the reply can reach anyone */
		p->st.light_done += (uint64_t)light;
		p->st.stopped += (uint64_t)!!stopped;
		pthread_mutex_unlock(&p->lock);
		j->done(j); /* j may be gone from here on */
#ifdef __GLIBC__
		if (mem >= TRIM_AFTER)
			malloc_trim(0);
#endif

		pthread_mutex_lock(&p->lock);
		p->tokens += take;
		if (w->light)
			p->light_reserved -= mem;
		else
			p->reserved -= mem;
		p->running--;
		pthread_cond_broadcast(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct pool *pool_new(const struct pool_config *cfg)
{
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	int threads = cfg->threads < 1 ? 1 : cfg->threads;
	p->nthreads = threads;
	p->tokens = threads;
	p->queue_max = cfg->queue_max ? cfg->queue_max : 1;
	p->budget = cfg->mem_budget;
	p->light_mem = cfg->light_mem;
	if (p->budget && p->light_mem > p->budget / 2)
		p->light_mem = p->budget / 2;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->w = calloc((size_t)threads + 1, sizeof(*p->w));
	if (!p->w) {
		pool_free(p);
		return NULL;
	}
	for (int i = 0; i <= threads; i++) {
		p->w[i].p = p;
		p->w[i].light = i == threads;
		if (pthread_create(&p->w[i].thr, NULL, worker, &p->w[i])) {
			pool_free(p);
			return NULL;
		}
		p->started++;
	}
	return p;
}

static void cancel_queue(struct pool_job *j)
{
	while (j) {
		struct pool_job *next = j->next;
		j->cancelled = 1;
		j->done(j);
		j = next;
	}
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	struct pool_job *lj = p->light.head, *hj = p->heavy.head;
	p->light.head = p->light.tail = p->heavy.head = p->heavy.tail = NULL;
	p->queued = p->light_queued = 0;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->w[i].thr, NULL);
	cancel_queue(lj);
	cancel_queue(hj);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	free(p->w);
	free(p);
}

uint64_t pool_job_max(const struct pool *p, int light)
{
	if (!p->budget)
		return UINT64_MAX;
	return light ? p->light_mem : heavy_cap(p);
}

int pool_submit(struct pool *p, struct pool_job *j)
{
	pthread_mutex_lock(&p->lock);
	int rc = 0;
	if (p->stop || p->queued >= p->queue_max)
		rc = POOL_FULL;
	else if (p->budget && j->mem > (j->light ? p->light_mem : heavy_cap(p)))
		rc = POOL_TOOBIG;
	if (rc) {
		p->st.refused++;
		pthread_mutex_unlock(&p->lock);
		return rc;
	}
	j->cancelled = j->expired = 0;
	atomic_store(&j->stop, 0);
	if (j->light) {
		q_push(&p->light, j);
		p->light_queued++;
	} else {
		q_push(&p->heavy, j);
	}
	p->queued++;
	p->st.submitted++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* Unlinks q's jobs past now into *out (a list through next). */
static unsigned expire_queue(struct queue *q, uint64_t now, struct pool_job **out)
{
	unsigned n = 0;
	struct pool_job *prev = NULL;
	for (struct pool_job *j = q->head, *next; j; j = next) {
		next = j->next;
		if (!j->deadline_ns || j->deadline_ns > now) {
			prev = j;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			q->head = next;
		if (q->tail == j)
			q->tail = prev;
		j->next = *out;
		*out = j;
		n++;
	}
	return n;
}

unsigned pool_expire(struct pool *p, uint64_t now_ns)
{
	struct pool_job *gone = NULL;
	pthread_mutex_lock(&p->lock);
	unsigned nl = expire_queue(&p->light, now_ns, &gone);
	unsigned n = nl + expire_queue(&p->heavy, now_ns, &gone);
	p->light_queued -= nl;
	p->queued -= n;
	p->st.expired += n;
	for (int i = 0; i < p->started; i++) {
		struct pool_job *j = p->w[i].job;
		if (j && j->deadline_ns && j->deadline_ns <= now_ns)
			atomic_store_explicit(&j->stop, 1, memory_order_relaxed);
	}
	if (n)
		pthread_cond_broadcast(&p->work); /* the queue's head may have changed */
	pthread_mutex_unlock(&p->lock);
	while (gone) {
		struct pool_job *next = gone->next;
		gone->expired = 1;
		gone->done(gone);
		gone = next;
	}
	return n;
}

void pool_get_stats(struct pool *p, struct pool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->queued = p->queued;
	out->light_queued = p->light_queued;
	out->running = p->running;
	out->reserved = p->reserved + p->light_reserved;
	out->budget = p->budget;
	pthread_mutex_unlock(&p->lock);
}

int pool_threads(const struct pool *p)
{
	return p->nthreads;
}
