/*
 * pool.c - see pool.h.
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <omp.h>

struct pool {
	pthread_mutex_t lock;     /* covers everything below */
	pthread_cond_t work;      /* a job was queued, or stop */
	pthread_cond_t tokens_cv; /* tokens were returned */
	struct pool_job *head, *tail;
	unsigned queued, running, queue_max;
	int tokens;               /* free thread tokens */
	int nthreads;
	int stop;
	pthread_t *thr;
	int started;
	struct pool_stats st;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	/* Heavy answers are background work: below the event loop's
	 * priority, so a cheap request is answered at once even when every
	 * core is computing a matrix. Linux applies nice per thread. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		/* One token to run at all; a job started while others wait
		 * takes only that, so the queue drains fairly. */
		while (p->tokens == 0 && !p->stop)
			pthread_cond_wait(&p->tokens_cv, &p->lock);
		if (p->stop || !p->head)
			continue;
		struct pool_job *j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		int take = p->head ? 1 : p->tokens;
		p->tokens -= take;
		p->running++;
		pthread_mutex_unlock(&p->lock);

		/* nthreads-var is per thread: this sets only our own
		 * teams, never the builder's or another worker's. */
		omp_set_num_threads(take);
		j->run(j, take);
		j->done(j);

		pthread_mutex_lock(&p->lock);
		p->tokens += take;
		p->running--;
		p->st.completed++;
		pthread_cond_broadcast(&p->tokens_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct pool *pool_new(int threads, unsigned queue_max)
{
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (threads < 1)
		threads = 1;
	p->nthreads = threads;
	p->tokens = threads;
	p->queue_max = queue_max ? queue_max : 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->tokens_cv, NULL);
	p->thr = calloc((size_t)threads, sizeof(*p->thr));
	if (!p->thr) {
		pool_free(p);
		return NULL;
	}
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&p->thr[i], NULL, worker, p)) {
			pool_free(p);
			return NULL;
		}
		p->started++;
	}
	return p;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	struct pool_job *j = p->head;
	p->head = p->tail = NULL;
	p->queued = 0;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->tokens_cv);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->thr[i], NULL);
	while (j) {
		struct pool_job *next = j->next;
		j->cancelled = 1;
		j->done(j);
		j = next;
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->tokens_cv);
	free(p->thr);
	free(p);
}

int pool_submit(struct pool *p, struct pool_job *j)
{
	pthread_mutex_lock(&p->lock);
	if (p->stop || p->queued >= p->queue_max) {
		p->st.refused++;
		pthread_mutex_unlock(&p->lock);
		return -1;
	}
	j->next = NULL;
	j->cancelled = 0;
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	p->st.submitted++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void pool_get_stats(struct pool *p, struct pool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->queued = p->queued;
	out->running = p->running;
	pthread_mutex_unlock(&p->lock);
}

int pool_threads(const struct pool *p)
{
	return p->nthreads;
}
