/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * queue.h - hands encoded snapshots from OpenSM's sweep thread to the sinks.
 *
 * The queue is one slot, not a list: it holds only the newest snapshot, and a
 * push replaces an older one that no sink has taken yet. A snapshot is a
 * complete fabric, so an undelivered older one has no value once a newer
 * exists, and a dead sink can never make memory grow.
 *
 * Each sink has its own worker thread and remembers the generation it last
 * received, so that every sink gets the newest snapshot however slow the
 * others are: a black-holed TCP sink costs its own worker timeout_ms per
 * attempt, never the UNIX sink's. A spool (the full snapshot written to a
 * file, a copy for later) first lets the UNIX sinks that are not failing
 * acknowledge the generation, for at most timeout_ms from when it began to
 * wait, and its worker runs ten nice levels lower: writing it must not
 * slow topod down on the same host. A black-holed UNIX sink thus delays
 * the spool once per outage, and the spool skips generations that come
 * while it waits (counted as superseded).
 *
 * Nothing here knows about OpenSM; messages go through the caller's log
 * function, so the queue can be driven by unit tests without an SM.
 *
 * Errors: tpq_start() returns NULL with a reason in err[SNAP_ERR_LEN].
 * Nothing here prints, exits or installs signal handlers.
 */
#ifndef TOPOD_OSM_PLUGIN_QUEUE_H
#define TOPOD_OSM_PLUGIN_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "sink.h"

enum tpq_level { TPQ_ERROR, TPQ_INFO, TPQ_VERBOSE, TPQ_DEBUG };

/* Called from worker threads and from tpq_stop(); must be thread safe.
 * msg has no trailing newline. */
typedef void (*tpq_log_fn)(void *arg, enum tpq_level level, const char *msg);

/* First wait after a failure; doubles up to backoff_max_ms. */
#define TPQ_BACKOFF_FIRST_MS 100
/* Floor on the wait between attempts, so that backoff_max_ms=0 does not turn
 * a refused connect into a busy loop inside OpenSM's process. */
#define TPQ_BACKOFF_MIN_MS 10

struct tpq;

/* Starts one worker per sink in o (o is copied). Caller stops and frees the
 * queue with tpq_stop(). NULL on failure (err says why); no thread is left
 * running then. */
struct tpq *tpq_start(const struct sink_opts *o, tpq_log_fn log, void *log_arg,
		      char err[SNAP_ERR_LEN]);

/* Publishes an encoded snapshot. Takes ownership of buf (malloc'd; freed by
 * the queue). generation must be greater than any pushed before; an older or
 * equal one is dropped. Never does I/O and waits only for the slot's mutex,
 * which no one holds across I/O. */
void tpq_push(struct tpq *q, uint8_t *buf, size_t len, uint64_t generation);

/* The same with a delta (delta.h) of it against base_gen, the generation
 * pushed before (takes ownership of delta too). A socket sink whose last
 * acknowledged generation is base_gen gets the delta; if the sink refuses
 * it (topod lost the base: ERR NOBASE, or anything else) the worker sends
 * the full snapshot at once. Spools always get the full one.
 *
 * drop(garbage), unless drop is NULL, is what the caller gives up with
 * this push (the plugin's previous snapshot). It and the snapshot this
 * push replaces are freed on a worker thread once every sink but the
 * spools has answered for the newest generation (acknowledged it, or its
 * last attempt failed); by this push when every such sink is failing
 * already; by the push after the next one if still unanswered then (two
 * are kept: a routing pass's and the subnet-up copy that may follow it);
 * in tpq_stop(); at once when the push is dropped. Freed at once on
 * OpenSM's thread, at k=56 they unmapped 400 MB while topod waited for the
 * delta, and on a VM such an unmap stalled every CPU for 24 ms. */
void tpq_push_delta(struct tpq *q, uint8_t *buf, size_t len, uint64_t generation, uint8_t *delta, size_t dlen,
		    uint64_t base_gen, void (*drop)(void *), void *garbage);

/*
 * Shuts down: every worker whose sink lacks the newest snapshot gets one
 * more immediate attempt and keeps retrying until linger_ms has passed since
 * this call; then it gives up (and logs so). Joins the workers and frees q.
 * An attempt already in flight when the linger ends is bounded by its own
 * timeout, so this returns within about linger_ms + timeout_ms at worst.
 * NULL is a no-op.
 */
void tpq_stop(struct tpq *q);

/* Counters for logs and tests; any thread. */
struct tpq_stats {
	uint64_t pushed;     /* snapshots accepted by tpq_push */
	uint64_t superseded; /* replaced in the slot before every sink had it */
	uint64_t deltas;     /* deliveries made as a delta */
	uint64_t delta_refused; /* deltas a sink refused, followed by the full snapshot */
};
void tpq_get_stats(struct tpq *q, struct tpq_stats *st);

#endif
