/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profile.c - `topoquery profile REPORT [REPORT2]`: prints a topoprof
 * report (the JSON file an MPI job wrote at MPI_Finalize, docs/profiler.md)
 * or compares two, e.g. a job's default placement against a topology-aware
 * one (seed 7.1.1: "post-run comparison ... of multiple jobs"). Reads only
 * the files; never asks topod. JSON parsing is Jansson's.
 *
 * Output: per report, a header line; then, for point-to-point and for the
 * collectives' logical traffic, one row per hop class ("intra-host",
 * "1 hop", ..., "unknown") with bytes, share and messages, one column group
 * per report, then "total", "mean hops per inter-host byte" and the most
 * loaded link. With two reports a last column gives B - A in bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "topoquery.h"

#define CLASSES 18   /* hops 0..16 and unknown (topoprof's PROF_NCLASS) */

struct side {
	json_t *root;
	uint64_t bytes[2][CLASSES], msgs[2][CLASSES], tb[2], tm[2];
};

static int cls_index(json_int_t hops)
{
	return hops < 0 || hops >= CLASSES - 1 ? CLASSES - 1 : (int)hops;
}

static const char *cls_name(int c, char *buf, size_t n)
{
	if (c == 0)
		snprintf(buf, n, "intra-host");
	else if (c == CLASSES - 1)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%d hop%s", c, c == 1 ? "" : "s");
	return buf;
}

/* a string member, "?" if missing or not a string (reports are input) */
static const char *jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "?";
}

static uint64_t juint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* Loads and checks one report; returns 0 or prints why and returns -1. */
static int load(const char *path, struct side *s)
{
	json_error_t e;
	memset(s, 0, sizeof(*s));
	s->root = json_load_file(path, 0, &e);
	if (!s->root) {
		fprintf(stderr, "topoquery: %s: %s (line %d)\n", path, e.text, e.line);
		return -1;
	}
	const char *fmt = json_string_value(json_object_get(s->root, "format"));
	if (!fmt || strcmp(fmt, "topoprof/1")) {
		fprintf(stderr, "topoquery: %s: not a topoprof report (format \"%s\", want \"topoprof/1\")\n", path,
			fmt ? fmt : "");
		return -1;
	}
	static const char *const part[2] = { "p2p", "collective" };
	for (int k = 0; k < 2; k++) {
		json_t *p = json_object_get(s->root, part[k]), *hops = json_object_get(p, "by_hops"), *x;
		size_t i;
		if (!json_is_object(p) || !json_is_array(hops)) {
			fprintf(stderr, "topoquery: %s: no \"%s.by_hops\"\n", path, part[k]);
			return -1;
		}
		s->tb[k] = juint(p, "bytes");
		s->tm[k] = juint(p, "messages");
		json_array_foreach(hops, i, x) {
			int c = cls_index(json_integer_value(json_object_get(x, "hops")));
			s->bytes[k][c] += juint(x, "bytes");
			s->msgs[k][c] += juint(x, "messages");
		}
	}
	return 0;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* bytes-weighted mean hop count of the inter-host bytes with a known route */
static double mean_hops(const struct side *s, int k)
{
	double w = 0, b = 0;
	for (int c = 1; c < CLASSES - 1; c++) {
		w += (double)c * (double)s->bytes[k][c];
		b += (double)s->bytes[k][c];
	}
	return b ? w / b : 0.0;
}

static void header(FILE *o, const char *tag, const char *path, const struct side *s)
{
	json_t *f = json_object_get(s->root, "fabric");
	json_t *hosts = json_object_get(s->root, "hosts");
	fprintf(o, "%s %s: %" PRIu64 " ranks on %zu hosts, ", tag, path, juint(s->root, "ranks"), json_array_size(hosts));
	if (json_is_true(json_object_get(f, "ok")))
		fprintf(o, "fabric generation %" PRIu64 " from %s\n", juint(f, "generation"), jstr(f, "server"));
	else
		fprintf(o, "NO fabric part: %s\n", jstr(f, "why"));
}

static void top_link(FILE *o, const char *tag, const struct side *s)
{
	json_t *l = json_object_get(s->root, "links"), *top = json_object_get(l, "top");
	json_t *t0 = json_array_get(top, 0);
	if (!json_is_true(json_object_get(l, "ok")) || !t0) {
		const char *why = jstr(l, "why");
		fprintf(o, "  %s most loaded link: none (%s)\n", tag, *why && strcmp(why, "?") ? why : "no inter-host traffic");
		return;
	}
	fprintf(o, "  %s most loaded link: %s -> %s, %" PRIu64 " bytes, %" PRIu64 " host pairs (%" PRIu64
		   " links loaded)\n",
		tag, jstr(t0, "from"), jstr(t0, "to"), juint(t0, "bytes"), juint(t0, "pairs"), juint(l, "loaded"));
}

int cmd_profile(struct tq *q, int argc, char **argv)
{
	if (argc < 1 || argc > 2)
		return tq_usage_error("profile takes one report (print) or two (compare)");
	if (q->json)
		return tq_usage_error("profile has no --json output: the report itself is JSON");
	struct side s[2];
	int ns = argc;
	for (int i = 0; i < ns; i++)
		if (load(argv[i], &s[i])) {
			for (int j = 0; j <= i; j++)
				json_decref(s[j].root);
			return EXIT_FAIL;
		}
	FILE *o = q->out;
	static const char *const tag[2] = { "A", "B" };
	for (int i = 0; i < ns; i++)
		header(o, ns == 2 ? tag[i] : "report", argv[i], &s[i]);
	static const char *const title[2] = { "point-to-point (measured at the sender)",
					      "collectives (logical traffic)" };
	char nm[32];
	for (int k = 0; k < 2; k++) {
		fprintf(o, "\n%s\n  %-11s", title[k], "hops");
		for (int i = 0; i < ns; i++)
			fprintf(o, " %15s%s %7s %10s", "bytes", ns == 2 ? tag[i] : " ", "%", "messages");
		if (ns == 2)
			fprintf(o, " %16s", "B-A bytes");
		fputc('\n', o);
		for (int c = 0; c < CLASSES; c++) {
			int any = 0;
			for (int i = 0; i < ns; i++)
				any |= s[i].bytes[k][c] || s[i].msgs[k][c];
			if (!any)
				continue;
			fprintf(o, "  %-11s", cls_name(c, nm, sizeof(nm)));
			for (int i = 0; i < ns; i++)
				fprintf(o, " %16" PRIu64 " %6.2f%% %10" PRIu64, s[i].bytes[k][c], pct(s[i].bytes[k][c], s[i].tb[k]),
					s[i].msgs[k][c]);
			if (ns == 2)
				fprintf(o, " %+16" PRId64, (int64_t)(s[1].bytes[k][c] - s[0].bytes[k][c]));
			fputc('\n', o);
		}
		fprintf(o, "  %-11s", "total");
		for (int i = 0; i < ns; i++)
			fprintf(o, " %16" PRIu64 " %7s %10" PRIu64, s[i].tb[k], "", s[i].tm[k]);
		if (ns == 2)
			fprintf(o, " %+16" PRId64, (int64_t)(s[1].tb[k] - s[0].tb[k]));
		fprintf(o, "\n  mean hops per inter-host byte:");
		for (int i = 0; i < ns; i++)
			fprintf(o, " %s%.3f", ns == 2 ? (i ? "B " : "A ") : "", mean_hops(&s[i], k));
		fputc('\n', o);
	}
	fputc('\n', o);
	for (int i = 0; i < ns; i++)
		top_link(o, ns == 2 ? tag[i] : "", &s[i]);
	for (int i = 0; i < ns; i++)
		json_decref(s[i].root);
	return EXIT_OK;
}
