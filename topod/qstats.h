/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qstats.h - the counters the metrics endpoint (http.h) reports that no
 * other part of topod keeps: requests by command and outcome, how long
 * they took, and what decoding and building each generation served cost.
 *
 * Loop thread only: the server notes every answer as it sends it (and
 * every generation as the loop hears of it); the endpoint copies the whole
 * struct on the loop and renders the copy on a worker. Fixed size, so a
 * scrape never allocates on the loop and no request can grow it.
 */
#ifndef TOPOD_QSTATS_H
#define TOPOD_QSTATS_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "topo_limits.h"

struct cmd;
struct fabric;

/* Commands are counted by their row in cmd_table; anything else (admin
 * verbs, unknown words, malformed lines) under QSTATS_OTHER. */
#define QSTATS_CMDS 64
#define QSTATS_OTHER QSTATS_CMDS

enum qstats_outcome {
	QS_OK,      /* an OK reply */
	QS_ERROR,   /* an ERR the request earned (usage, unknown host, no route) */
	QS_REFUSED, /* an ERR of topod's limits: BUSY, TOOBIG, TIMEOUT, NOMEM, SHUTDOWN */
	QS_OUTCOMES
};

/* Upper bounds (seconds) of the histograms' buckets; +Inf is implicit. */
#define QSTATS_BUCKETS 16
extern const double qstats_le[QSTATS_BUCKETS];

struct qstats_hist {
	uint64_t bucket[QSTATS_BUCKETS + 1]; /* not cumulative; the last is +Inf */
	uint64_t count;
	double sum;
};

enum { QS_LANE_LOOP, QS_LANE_POOL, QS_LANES };

struct qstats {
	uint64_t n[QSTATS_CMDS + 1][QS_OUTCOMES];
	struct qstats_hist latency[QS_LANES]; /* answered on the loop, or on the worker pool */
	struct qstats_hist decode, build;     /* per generation served */
	uint64_t last_gen[TOPO_PLANES_MAX];   /* counted once each */
};

/* The outcome of the reply that starts at offset `from` of out. */
enum qstats_outcome qstats_outcome(struct evbuffer *out, size_t from);
/* One answered request of command k (NULL: QSTATS_OTHER). */
void qstats_note(struct qstats *q, const struct cmd *k, enum qstats_outcome o, int lane, uint64_t ns);
/* Plane p serves f: its decode and build times, once per generation. */
void qstats_note_gen(struct qstats *q, int p, const struct fabric *f);

#endif
