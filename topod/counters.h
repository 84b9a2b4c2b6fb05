/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * counters.h - topod's counters, described once: the admin `stats` line,
 * the Prometheus families of /metrics (http_metrics.c) and `topod
 * --counters` (which the docs are checked against) all read these tables.
 */
#ifndef TOPOD_COUNTERS_H
#define TOPOD_COUNTERS_H

#include <stddef.h>
#include <stdio.h>

#include "server.h"

struct evbuffer;

/* A Prometheus family as /metrics renders it, in the order it does. One
 * fed by counter rows is rendered from them; any other by hand
 * (http_metrics.c), from what struct server_metrics does not hold. */
struct metric_family {
	const char *name, *type, *help;
	const char *labels; /* the label names, space-separated (docs); NULL: none */
	const char *values; /* a counter-fed family's label values, in the order rendered */
};

enum counter_kind { CK_UNS, CK_INT, CK_U64, CK_MS, CK_TEXT };

/* A field of struct server_metrics: its `stats` key (NULL: /metrics only)
 * and the family and label value it is a sample of (NULL: `stats` only).
 * Rows of one family and label value are summed into one sample; a
 * per-plane row's field is in `all`, and each plane's own is rendered
 * with plane="NAME". help describes a key outside a family (the family's
 * HELP describes the others). */
struct counter {
	const char *key;
	size_t off;
	enum counter_kind kind;
	const char *family, *value;
	int per_plane;
	const char *help;
};

extern const struct metric_family metric_families[];
extern const size_t metric_family_count;
extern const struct counter counters[];
extern const size_t counter_count;

/* The family called name, or NULL. */
const struct metric_family *metric_family_find(const char *name);
/* " key=value" for every row with a key, in the table's order. */
void counters_stats(const struct server_metrics *m, struct evbuffer *out);
/* Family f's samples from its counter rows (its HELP and TYPE are the
 * caller's). Returns how many rows fed it: 0 for a hand-rendered family. */
size_t counters_render(const struct metric_family *f, const struct server_metrics *m,
		       const char *const *plane_name, struct evbuffer *out);
/* Both tables, tab-separated, for the docs' checks (tests/lib/countertable.py). */
void counters_print(FILE *out);

#endif
