/*
 * build.c - see build.h.
 */
#include "build.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "log.h"

struct builder {
	struct store *st;
	const struct route_namemap *map; /* borrowed from main, lives as long as we do */
	int threads;
	char state_file[4096];

	pthread_t thr;
	int started;
	pthread_mutex_t lock; /* covers pending, stop and stats */
	pthread_cond_t cond;
	struct ingest_job *pending;
	int stop;
	struct builder_stats stats;
};

static double ms_since(uint64_t t0)
{
	return (double)(snap_now_us() - t0) / 1000.0;
}

struct builder *builder_new(struct store *st, const char *state_dir, int threads,
			    const struct route_namemap *map)
{
	struct builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->st = st;
	b->map = map;
	b->threads = threads;
	if (state_dir && *state_dir)
		snprintf(b->state_file, sizeof(b->state_file), "%s/fabric.snap", state_dir);
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	return b;
}

static void job_free(struct ingest_job *j)
{
	if (!j)
		return;
	free(j->buf);
	snap_free(j->snap);
	free(j);
}

static void record_error(struct builder *b, const char *msg)
{
	pthread_mutex_lock(&b->lock);
	b->stats.rejected++;
	snprintf(b->stats.last_error, sizeof(b->stats.last_error), "%s", msg);
	b->stats.last_error_us = snap_now_us();
	pthread_mutex_unlock(&b->lock);
}

int builder_run(struct builder *b, struct ingest_job *j)
{
	char err[SNAP_ERR_LEN], msg[SNAP_ERR_LEN + 32];
	uint64_t t0 = snap_now_us();
	struct snap *s = j->snap;
	j->snap = NULL;
	if (!s && snap_decode(j->buf, j->len, &s, err)) {
		/* The previous fabric stays served: a bad snapshot only costs a
		 * log line and an error reply to its producer. */
		tlog(LOG_ERR, "rejected snapshot from %s (%zu bytes): %s", j->source, j->len, err);
		record_error(b, err);
		snprintf(msg, sizeof(msg), "ERR INVALID %s", err);
		if (j->done)
			j->done(j->arg, 0, msg);
		job_free(j);
		return -1;
	}
	double decode_ms = ms_since(t0);
	snprintf(msg, sizeof(msg), "OK %" PRIu64, s->generation);
	if (j->done) {
		/* Tell the producer as soon as the snapshot is known good; the
		 * build that follows is our business, not the SM's. */
		j->done(j->arg, 1, msg);
		j->done = NULL;
	}

	uint64_t t1 = snap_now_us();
	struct fabric_index *x = fabric_index_build(s, b->map, b->threads, err);
	if (!x) {
		tlog(LOG_ERR, "cannot build fabric generation %" PRIu64 " from %s: %s", s->generation,
		     j->source, err);
		record_error(b, err);
		snap_free(s);
		job_free(j);
		return -1;
	}
	double build_ms = ms_since(t1);

	/* Persist before publishing, so that what we serve is what a restart
	 * would serve again. A failed write is logged, not fatal: serving the
	 * new fabric matters more than remembering it. */
	if (j->persist && b->state_file[0]) {
		int rc;
		if (j->buf)
			rc = snap_write_atomic(b->state_file, j->buf, j->len, err);
		else
			rc = snap_write_file(s, b->state_file, err);
		if (rc)
			tlog(LOG_WARN, "cannot persist generation %" PRIu64 ": %s", s->generation, err);
	}

	uint64_t gen = s->generation;
	uint32_t nnodes = s->nnodes;
	struct fabric *f = fabric_new(s, j->source);
	if (!f) {
		fabric_index_free(x);
		record_error(b, "out of memory");
		job_free(j);
		return -1;
	}
	f->index = x;
	f->decode_ms = decode_ms;
	f->build_ms = build_ms;
	store_publish(b->st, f);
	tlog(LOG_INFO,
	     "serving generation %" PRIu64 " from %s: %u nodes (%u switches, %u CAs, %u links, %u hosts, depth %u), "
	     "decode %.1f ms, build %.1f ms (routes %.1f, hierarchy %.1f)",
	     gen, j->source, nnodes, x->switches, x->cas, x->links, x->rt->nhosts, hier_depth(x->hier), decode_ms,
	     build_ms, x->route_ms, x->hier_ms);
	pthread_mutex_lock(&b->lock);
	b->stats.accepted++;
	b->stats.published++;
	b->stats.last_decode_ms = decode_ms;
	b->stats.last_build_ms = build_ms;
	pthread_mutex_unlock(&b->lock);
	job_free(j);
	return 0;
}

static void *builder_main(void *arg)
{
	struct builder *b = arg;
	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->pending && !b->stop)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		struct ingest_job *j = b->pending;
		b->pending = NULL;
		pthread_mutex_unlock(&b->lock);
		builder_run(b, j);
		pthread_mutex_lock(&b->lock);
	}
	struct ingest_job *left = b->pending;
	b->pending = NULL;
	pthread_mutex_unlock(&b->lock);
	if (left) {
		if (left->done)
			left->done(left->arg, 0, "ERR SHUTDOWN topod is stopping");
		job_free(left);
	}
	return NULL;
}

int builder_start(struct builder *b)
{
	if (pthread_create(&b->thr, NULL, builder_main, b))
		return -1;
	b->started = 1;
	return 0;
}

void builder_submit(struct builder *b, struct ingest_job *j)
{
	pthread_mutex_lock(&b->lock);
	b->stats.received++;
	struct ingest_job *old = b->pending;
	b->pending = j;
	if (old)
		b->stats.superseded++;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (old) {
		/* Never validated, but a newer snapshot of the same fabric is
		 * queued behind it: the producer has nothing to resend. */
		tlog(LOG_INFO, "snapshot from %s superseded by a newer one before it was built", old->source);
		if (old->done)
			old->done(old->arg, 1, "OK superseded");
		job_free(old);
	}
}

void builder_stop(struct builder *b)
{
	if (!b->started)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = 1;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thr, NULL);
	b->started = 0;
}

void builder_free(struct builder *b)
{
	if (!b)
		return;
	builder_stop(b);
	job_free(b->pending);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}

void builder_note_rejected(struct builder *b, const char *why)
{
	pthread_mutex_lock(&b->lock);
	b->stats.received++;
	pthread_mutex_unlock(&b->lock);
	record_error(b, why);
}

void builder_get_stats(struct builder *b, struct builder_stats *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->stats;
	pthread_mutex_unlock(&b->lock);
}

const char *builder_state_file(const struct builder *b)
{
	return b->state_file;
}
