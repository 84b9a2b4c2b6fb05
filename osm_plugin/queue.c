/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * queue.c - the one-slot snapshot queue and its per-sink workers.
 * See queue.h for the contract.
 */
#include "queue.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

/* An encoded snapshot shared by the slot and the workers sending it. */
struct blob {
	unsigned refs;      /* under tpq.lock */
	uint64_t gen;
	size_t len;
	uint8_t *data;
	uint8_t *delta;     /* NULL, or data as a delta against base_gen */
	size_t dlen;
	uint64_t base_gen;
};

struct worker {
	struct tpq *q;
	struct sink sink;
	char name[SINK_ADDR_LEN + 16];
	pthread_t tid;

	/* Written by the worker under q->lock, read by tpq_push for stats
	 * and by the spool's worker (spool_waits). */
	uint64_t have_gen;  /* newest generation the sink acknowledged */
	int failing;        /* its last attempt failed */

	/* Worker thread only. */
	uint64_t next_try_ms; /* monotonic; no attempt before this */
	unsigned backoff_ms;  /* 0 while the sink is healthy */
	uint64_t failures;    /* consecutive failed attempts */
	uint64_t failing_since_ms;
	int stop_seen;
	int waiting;           /* a spool: waiting for the UNIX sinks (spool_waits) */
	uint64_t wait_from_ms; /* since then, whatever was pushed meanwhile */
	char last_err[SNAP_ERR_LEN];
};

/* What a push gave up: the blob it replaced (when no worker held it) and
 * the caller's drop(arg) (tpq_push_delta). */
struct grave {
	struct blob *blob;
	void (*drop)(void *);
	void *arg;
};

/* Graves kept until the sinks answer: a routing pass's and the subnet-up
 * copy that may follow it before topod has answered the first. A third
 * push frees the oldest on its own thread. */
#define GRAVES 2

struct tpq {
	pthread_mutex_t lock; /* never held across I/O or logging */
	pthread_cond_t cond;  /* CLOCK_MONOTONIC: backoff must not jump with settimeofday */

	/* Under lock. */
	struct blob *cur;     /* newest snapshot, NULL before the first push */
	struct grave grave[GRAVES]; /* what the last pushes gave up, oldest first, until the sinks answer (reap) */
	int stopping;
	uint64_t deadline_ms; /* monotonic end of the shutdown linger */
	struct tpq_stats stats;

	/* Set once in tpq_start. */
	unsigned timeout_ms, backoff_max_ms, linger_ms, delta;
	tpq_log_fn log;
	void *log_arg;
	int nworkers;
	struct worker w[SINK_MAX];
};

static void say(struct tpq *q, enum tpq_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct tpq *q, enum tpq_level level, const char *fmt, ...)
{
	char msg[SNAP_ERR_LEN + SINK_ADDR_LEN + 256];
	va_list ap;

	if (!q->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	q->log(q->log_arg, level, msg);
}

/* Caller holds q->lock. Returns the blob if this was the last reference:
 * the caller frees it with blob_free() after unlocking, so that freeing a
 * multi-megabyte buffer never happens under the lock. */
static struct blob *blob_unref_locked(struct blob *b)
{
	if (b && --b->refs == 0)
		return b;
	return NULL;
}

static void blob_free(struct blob *b)
{
	if (b) {
		free(b->data);
		free(b->delta);
		free(b);
	}
}

static int grave_empty(const struct grave *g)
{
	return !g->blob && !g->drop;
}

static void grave_free(struct grave *g, int n)
{
	for (int i = 0; i < n; i++) {
		blob_free(g[i].blob);
		if (g[i].drop)
			g[i].drop(g[i].arg);
		g[i] = (struct grave){ 0 };
	}
}

/*
 * Moves the graves into out[GRAVES] once every sink but the spools has
 * answered for cur (acknowledged it, or its last attempt failed); the
 * caller frees them (grave_free) after unlocking. Freed in topod's
 * window, the previous snapshot's unmaps stalled the delivery
 * (tpq_push_delta). A spool's worker leaves them to the other sinks'
 * workers, which see the last answer: it runs ten nice levels down, and
 * freeing a snapshot takes the table pool's lock, which OpenSM's thread
 * may want next. by: the worker asking, NULL for a push. Caller holds
 * q->lock; 1 when out holds them.
 */
static int reap(struct tpq *q, const struct worker *by, struct grave out[GRAVES])
{
	int others = 0;
	for (int i = 0; i < q->nworkers; i++) {
		const struct worker *o = &q->w[i];
		if (o->sink.kind == SINK_SPOOL)
			continue;
		others = 1;
		if (q->cur && o->have_gen < q->cur->gen && !o->failing)
			return 0;
	}
	if (by && by->sink.kind == SINK_SPOOL && others)
		return 0;
	memcpy(out, q->grave, sizeof(q->grave));
	memset(q->grave, 0, sizeof(q->grave));
	return 1;
}

static void wait_until(struct tpq *q, uint64_t until_ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until_ms / 1000u),
		.tv_nsec = (long)(until_ms % 1000u) * 1000000L,
	};
	pthread_cond_timedwait(&q->cond, &q->lock, &ts);
}

/* Bookkeeping after one attempt; worker thread, q->lock not held. */
static void note_result(struct worker *w, int rc, uint64_t gen, size_t len,
			uint64_t started_ms, const char *err)
{
	struct tpq *q = w->q;
	uint64_t now = (uint64_t)util_now_ms();

	if (rc == 0) {
		if (w->failures)
			say(q, TPQ_INFO, "sink %s recovered: delivered generation %" PRIu64
			    " after %" PRIu64 " failed attempts over %.1f s", w->name, gen,
			    w->failures, (double)(now - w->failing_since_ms) / 1000.0);
		else
			say(q, TPQ_VERBOSE, "sink %s: delivered generation %" PRIu64
			    " (%zu bytes) in %" PRIu64 " ms", w->name, gen, len, now - started_ms);
		w->failures = 0;
		w->backoff_ms = 0;
		w->next_try_ms = 0;
		return;
	}

	snprintf(w->last_err, sizeof w->last_err, "%s", err);
	if (w->failures++ == 0) {
		/* Once per outage: a dead topod must not flood OpenSM's log, one
		 * line every backoff period for hours. */
		w->failing_since_ms = started_ms;
		say(q, TPQ_ERROR, "sink %s: delivery of generation %" PRIu64
		    " failed: %s; retrying with backoff up to %u ms, logging again"
		    " when it recovers", w->name, gen, err, q->backoff_max_ms);
	} else {
		say(q, TPQ_DEBUG, "sink %s: attempt %" PRIu64 " failed: %s",
		    w->name, w->failures, err);
	}

	unsigned cap = q->backoff_max_ms < TPQ_BACKOFF_MIN_MS ? TPQ_BACKOFF_MIN_MS
							      : q->backoff_max_ms;
	if (w->backoff_ms == 0)
		w->backoff_ms = TPQ_BACKOFF_FIRST_MS;
	else
		w->backoff_ms = w->backoff_ms > cap / 2 ? cap : w->backoff_ms * 2;
	if (w->backoff_ms > cap)
		w->backoff_ms = cap;
	w->next_try_ms = now + w->backoff_ms;
}

/* One attempt: the delta when this sink has its base, else (or when the
 * delta is refused) the full snapshot. Worker thread, q->lock not held. */
static int deliver(struct worker *w, const struct blob *b, unsigned tmo, char err[SNAP_ERR_LEN])
{
	struct tpq *q = w->q;
	if (b->delta && q->delta && w->sink.kind != SINK_SPOOL && w->have_gen == b->base_gen) {
		if (sink_deliver(&w->sink, b->delta, b->dlen, tmo, err) == 0) {
			pthread_mutex_lock(&q->lock);
			q->stats.deltas++;
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		say(q, TPQ_INFO, "sink %s: delta of generation %" PRIu64 " refused (%s); sending the full snapshot",
		    w->name, b->gen, err);
		pthread_mutex_lock(&q->lock);
		q->stats.delta_refused++;
		pthread_mutex_unlock(&q->lock);
	}
	return sink_deliver(&w->sink, b->data, b->len, tmo, err);
}

/*
 * A spool writes the full snapshot while topod applies the delta of the
 * same pass, on the same host: at k=56 that is 195 MB copied into the page
 * cache, 250 ms of CPU, and on two cores it was the largest share of what
 * competed with topod between the plugin's line and topod serving a cable
 * fault. So a spool waits until every UNIX sink (a topod on this host)
 * that is not failing has acknowledged the generation (topod answers once
 * it serves it): at most timeout_ms from when it began to wait, however
 * many generations come meanwhile, and never at shutdown. Caller holds
 * q->lock; 1 and *until when it is to wait.
 */
static int spool_waits(struct worker *w, const struct blob *b, uint64_t now, uint64_t *until)
{
	struct tpq *q = w->q;
	if (w->sink.kind != SINK_SPOOL || q->stopping)
		return 0;
	if (!w->waiting) {
		w->waiting = 1;
		w->wait_from_ms = now;
	}
	*until = w->wait_from_ms + q->timeout_ms;
	if (now >= *until)
		return 0;
	for (int i = 0; i < q->nworkers; i++) {
		const struct worker *o = &q->w[i];
		if (o->sink.kind == SINK_UNIX && o->have_gen < b->gen && !o->failing)
			return 1;
	}
	return 0;
}

/* A spool is a copy for later: ten nice levels below the thread that
 * started it (OpenSM's), within what an unprivileged thread may set. */
static void spool_lower_priority(void)
{
	id_t tid = (id_t)syscall(SYS_gettid); /* Linux: per-thread nice */
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, tid);
	if (nice == -1 && errno)
		return;
	(void)setpriority(PRIO_PROCESS, tid, nice + 10 < 19 ? nice + 10 : 19);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tpq *q = w->q;
	char err[SNAP_ERR_LEN];

	if (w->sink.kind == SINK_SPOOL)
		spool_lower_priority();
	pthread_mutex_lock(&q->lock);
	for (;;) {
		uint64_t now = (uint64_t)util_now_ms();
		struct blob *b = q->cur;
		int want = b && b->gen > w->have_gen;

		if (q->stopping) {
			if (!want)
				break;
			if (!w->stop_seen) {
				/* A sink deep in backoff still deserves one try before
				 * OpenSM exits: it may have come back since. */
				w->stop_seen = 1;
				w->next_try_ms = 0;
			}
			if (now >= q->deadline_ms) {
				uint64_t gen = b->gen;
				pthread_mutex_unlock(&q->lock);
				say(q, TPQ_ERROR, "sink %s: giving up at shutdown after linger_ms=%u;"
				    " generation %" PRIu64 " not delivered%s%s", w->name,
				    q->linger_ms, gen, w->failures ? ": " : "",
				    w->failures ? w->last_err : "");
				pthread_mutex_lock(&q->lock);
				break;
			}
		} else if (!want) {
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}

		if (now < w->next_try_ms) {
			uint64_t until = w->next_try_ms;
			if (q->stopping && q->deadline_ms < until)
				until = q->deadline_ms;
			wait_until(q, until);
			continue;
		}

		uint64_t until;
		if (spool_waits(w, b, now, &until)) {
			wait_until(q, until);
			continue;
		}

		unsigned tmo = q->timeout_ms;
		if (q->stopping && q->deadline_ms - now < tmo)
			tmo = (unsigned)(q->deadline_ms - now);
		b->refs++;
		pthread_mutex_unlock(&q->lock);

		int rc = deliver(w, b, tmo, err);
		note_result(w, rc, b->gen, b->len, now, err);

		pthread_mutex_lock(&q->lock);
		if (rc == 0 && b->gen > w->have_gen)
			w->have_gen = b->gen;
		w->failing = rc != 0;
		w->waiting = 0;
		pthread_cond_broadcast(&q->cond); /* a spool may wait for this */
		struct grave g[GRAVES];
		int reaped = reap(q, w, g);
		struct blob *dead = blob_unref_locked(b);
		if (dead || reaped) {
			pthread_mutex_unlock(&q->lock);
			blob_free(dead);
			grave_free(g, reaped ? GRAVES : 0);
			pthread_mutex_lock(&q->lock);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct tpq *tpq_start(const struct sink_opts *o, tpq_log_fn log, void *log_arg,
		      char err[SNAP_ERR_LEN])
{
	struct tpq *q = calloc(1, sizeof *q);
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc, i;

	if (!q) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return NULL;
	}
	q->timeout_ms = o->timeout_ms;
	q->backoff_max_ms = o->backoff_max_ms;
	q->linger_ms = o->linger_ms;
	q->delta = o->delta;
	q->log = log;
	q->log_arg = log_arg;

	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);

	/* Workers block every signal, so that OpenSM's SIGTERM/SIGHUP handlers
	 * run on OpenSM's own threads and our connects and writes are never
	 * interrupted. The mask is inherited from the creating thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < o->nsinks && i < SINK_MAX; i++) {
		struct worker *w = &q->w[i];
		w->q = q;
		w->sink = o->sinks[i];
		sink_describe(&w->sink, w->name, sizeof w->name);
		rc = pthread_create(&w->tid, NULL, worker_main, w);
		if (rc) {
			snprintf(err, SNAP_ERR_LEN, "cannot start delivery thread for %s: %s",
				 w->name, strerror(rc));
			break;
		}
		q->nworkers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if (q->nworkers < o->nsinks) {
		q->linger_ms = 0;
		tpq_stop(q);
		return NULL;
	}
	return q;
}

void tpq_push(struct tpq *q, uint8_t *buf, size_t len, uint64_t generation)
{
	tpq_push_delta(q, buf, len, generation, NULL, 0, 0, NULL, NULL);
}

void tpq_push_delta(struct tpq *q, uint8_t *buf, size_t len, uint64_t generation, uint8_t *delta, size_t dlen,
		    uint64_t base_gen, void (*drop)(void *), void *garbage)
{
	struct blob *b = calloc(1, sizeof *b);
	/* old[0]: the oldest grave when all are taken; old[1..]: all, when
	 * reaped at once */
	struct grave old[GRAVES + 1] = { { 0 } }, given = { .drop = drop, .arg = garbage };
	int i;

	if (!b) {
		/* Dropping this snapshot is the only choice that keeps OpenSM
		 * sweeping; the next routing pass will try again. */
		say(q, TPQ_ERROR, "out of memory: snapshot generation %" PRIu64 " dropped",
		    generation);
		free(buf);
		free(delta);
		grave_free(&given, 1);
		return;
	}
	b->refs = 1; /* the slot's reference */
	b->gen = generation;
	b->len = len;
	b->data = buf;
	b->delta = delta;
	b->dlen = dlen;
	b->base_gen = base_gen;

	pthread_mutex_lock(&q->lock);
	if (q->cur && generation <= q->cur->gen) {
		uint64_t newest = q->cur->gen;
		pthread_mutex_unlock(&q->lock);
		say(q, TPQ_ERROR, "generation %" PRIu64 " not newer than %" PRIu64 "; dropped",
		    generation, newest);
		blob_free(b);
		grave_free(&given, 1);
		return;
	}
	if (q->cur) {
		for (i = 0; i < q->nworkers; i++)
			if (q->w[i].have_gen < q->cur->gen) {
				q->stats.superseded++;
				break;
			}
		given.blob = blob_unref_locked(q->cur);
	}
	if (!grave_empty(&given)) {
		/* the oldest, when GRAVES pushes in a row were not answered;
		 * the rest stay packed from the first */
		if (!grave_empty(&q->grave[GRAVES - 1])) {
			old[0] = q->grave[0];
			memmove(q->grave, q->grave + 1, (GRAVES - 1) * sizeof(q->grave[0]));
			q->grave[GRAVES - 1] = (struct grave){ 0 };
		}
		for (i = 0; !grave_empty(&q->grave[i]); i++)
			;
		q->grave[i] = given;
	}
	q->cur = b;
	q->stats.pushed++;
	/* every sink failing: no one waits, and no attempt may come for a while */
	int now = reap(q, NULL, old + 1);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	grave_free(old, now ? GRAVES + 1 : 1);
}

void tpq_stop(struct tpq *q)
{
	int i;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = 1;
	q->deadline_ms = (uint64_t)util_now_ms() + q->linger_ms;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);

	for (i = 0; i < q->nworkers; i++)
		pthread_join(q->w[i].tid, NULL);

	/* Workers are gone: the slot holds the only reference left. */
	blob_free(blob_unref_locked(q->cur));
	grave_free(q->grave, GRAVES);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

void tpq_get_stats(struct tpq *q, struct tpq_stats *st)
{
	pthread_mutex_lock(&q->lock);
	*st = q->stats;
	pthread_mutex_unlock(&q->lock);
}
