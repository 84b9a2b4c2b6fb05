/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qstats.c - see qstats.h.
 */
#include "qstats.h"

#include <string.h>

#include "cmd.h"
#include "store.h"

/* From 100 us (a lookup) to a minute (the default request deadline). */
const double qstats_le[QSTATS_BUCKETS] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					   0.05,   0.1,     0.25,   0.5,   1,      2.5,   10,   60 };

static void qstats_observe(struct qstats_hist *h, double seconds)
{
	int i = 0;
	while (i < QSTATS_BUCKETS && seconds > qstats_le[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

enum qstats_outcome qstats_outcome(struct evbuffer *out, size_t from)
{
	static const char *const limits[] = { "BUSY ", "TOOBIG ", "TIMEOUT ", "NOMEM ", "SHUTDOWN " };
	/* evbuffer_peek, not copyout: a bufferevent's output is frozen at its
	 * start, and copyout refuses a frozen buffer. */
	char head[16] = "";
	struct evbuffer_ptr p;
	struct evbuffer_iovec v[4];
	if (evbuffer_ptr_set(out, &p, from, EVBUFFER_PTR_SET))
		return QS_ERROR;
	int nv = evbuffer_peek(out, sizeof(head) - 1, &p, v, 4);
	size_t have = 0;
	for (int i = 0; i < nv && i < 4 && have < sizeof(head) - 1; i++) {
		size_t n = v[i].iov_len < sizeof(head) - 1 - have ? v[i].iov_len : sizeof(head) - 1 - have;
		memcpy(head + have, v[i].iov_base, n);
		have += n;
	}
	if (have < 2)
		return QS_ERROR;
	if (!strncmp(head, "OK", 2))
		return QS_OK;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (!strncmp(head + 4, limits[i], strlen(limits[i])))
			return QS_REFUSED;
	return QS_ERROR;
}

void qstats_note(struct qstats *q, const struct cmd *k, enum qstats_outcome o, int lane, uint64_t ns)
{
	size_t row = k ? (size_t)(k - cmd_table) : QSTATS_OTHER;
	if (row >= cmd_count || row >= QSTATS_CMDS)
		row = QSTATS_OTHER;
	q->n[row][o]++;
	qstats_observe(&q->latency[lane], (double)ns / 1e9);
}

void qstats_note_gen(struct qstats *q, int p, const struct fabric *f)
{
	uint64_t g = f->snap->generation;
	if (p < 0 || p >= TOPO_PLANES_MAX || !f->index || g == q->last_gen[p])
		return;
	q->last_gen[p] = g;
	qstats_observe(&q->decode, f->decode_ms / 1e3);
	qstats_observe(&q->build, f->build_ms / 1e3);
}
