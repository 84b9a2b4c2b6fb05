/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * load.c - `topoquery load`: a job's pattern, its link loads (libtii
 * tii_get_pattern_load / tii_get_matrix_load), and a picture of the fabric's
 * hierarchy with the links drawn by their load (graphviz `dot`).
 *
 *   topoquery load [--bytes N] [--links] [--matrix FILE] [--plot FILE.svg|.png]
 *                  [--dot FILE] PATTERN HOSTS...
 *
 * HOSTS are ranks in order: a host (or hostlist) word gives one rank per
 * host; "WORD*N" gives N consecutive ranks on each of its hosts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "picture.h"
#include "topoquery.h"

/* ranks: expands each word, repeating each host N times for WORD*N */
static int collect_ranks(struct tq *q, int argc, char **argv, struct strv *out)
{
	for (int i = 0; i < argc; i++) {
		char *w = argv[i], *star = strrchr(w, '*');
		long n = 1;
		struct strv one = { 0 };
		const char *why = NULL;
		if (star) {
			char *end;
			errno = 0;
			n = strtol(star + 1, &end, 10);
			if (errno || *end || end == star + 1 || n < 1 || n > TII_RANKS_MAX)
				return tq_usage_error("%s: WORD*N needs 1 <= N <= %d", w, TII_RANKS_MAX);
			*star = '\0';
		}
		int rc = hostlist_expand(&one, w, &why);
		if (star)
			*star = '*';
		if (rc) {
			strv_free(&one);
			return tq_usage_error("%s: %s", w, why);
		}
		for (size_t h = 0; h < one.n; h++)
			for (long k = 0; k < n; k++)
				if (out->n >= TII_RANKS_MAX + 1 || strv_push(out, one.v[h], strlen(one.v[h]))) {
					strv_free(&one);
					return tq_usage_error("more than %d ranks", TII_RANKS_MAX);
				}
		strv_free(&one);
	}
	for (size_t i = 0; i < q->hosts.n; i++)
		if (strv_push(out, q->hosts.v[i], strlen(q->hosts.v[i])))
			return tq_nomem();
	if (!out->n)
		return tq_usage_error("no ranks given");
	if (out->n > TII_RANKS_MAX)
		return tq_usage_error("%zu ranks, at most %d", out->n, TII_RANKS_MAX);
	return EXIT_OK;
}

/* One "SRC DST BYTES" line (its comment cut): three unsigned decimal
 * numbers, ranks below nranks, BYTES at most 2^53 (what topod takes; a
 * "-1" or a number past 2^64 must not wrap into a plausible one). 1 for a
 * blank line, 0 for a flow, -1 otherwise. */
static int matrix_line(const char *p, size_t nranks, struct tii_flow *f)
{
	unsigned long long v[3];
	int k = 0;
	for (;; k++) {
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!*p || k == 3)
			break;
		if (*p < '0' || *p > '9')
			return -1;
		char *end;
		errno = 0;
		v[k] = strtoull(p, &end, 10);
		if (errno || (*end && !strchr(" \t\r\n", *end)))
			return -1;
		p = end;
	}
	if (k == 0 && !*p)
		return 1;
	if (k != 3 || *p || v[0] >= nranks || v[1] >= nranks || v[2] > TII_MSG_BYTES_MAX)
		return -1;
	*f = (struct tii_flow){ (uint32_t)v[0], (uint32_t)v[1], v[2] };
	return 0;
}

/* "src dst bytes" per line, '#' comments. */
static int read_matrix(const char *path, size_t nranks, struct tii_flow **out, size_t *n)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f) {
		fprintf(stderr, "topoquery: %s: %s\n", path, strerror(errno));
		return EXIT_FAIL;
	}
	char line[256];
	size_t cap = 0, ln = 0;
	int st = EXIT_OK;
	*out = NULL;
	*n = 0;
	while (!st && fgets(line, sizeof(line), f)) {
		ln++;
		char *h = strchr(line, '#');
		if (h)
			*h = '\0';
		struct tii_flow fl;
		int k = matrix_line(line, nranks, &fl);
		if (k < 0) {
			st = tq_usage_error("%s:%zu: want 'SRC DST BYTES' with ranks < %zu and BYTES <= 2^53", path, ln,
					    nranks);
		} else if (k == 0 && *n == cap) {
			cap = cap ? cap * 2 : 256;
			struct tii_flow *nf = realloc(*out, cap * sizeof(*nf));
			if (!nf)
				st = tq_nomem();
			else
				*out = nf;
		}
		if (!st && k == 0)
			(*out)[(*n)++] = fl;
	}
	if (f != stdin)
		fclose(f);
	if (st) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return st;
}

static void lvl(FILE *o, int l)
{
	if (l == TII_LOAD_LEVEL_NONE)
		fputc('x', o);
	else
		fprintf(o, "%d", l);
}

/* The ranks, the matrix file if any, and the load from topod: a status;
 * *out is set on EXIT_OK. Links are asked for only when something shows them. */
static int fetch_load(struct tq *q, const char *pattern, int argc, char **argv, tii_load_t **out)
{
	struct strv ranks = { 0 };
	int status = collect_ranks(q, argc, argv, &ranks);
	if (status) {
		strv_free(&ranks);
		return status;
	}
	unsigned flags = (q->load_links || q->plot || q->load_dot) ? 0 : TII_LOAD_NOLINKS;
	if (q->json)
		flags = 0;
	int rc;
	if (!strcmp(pattern, "matrix")) {
		if (!q->load_matrix) {
			strv_free(&ranks);
			return tq_usage_error("load matrix needs --matrix FILE");
		}
		struct tii_flow *fl;
		size_t nf;
		status = read_matrix(q->load_matrix, ranks.n, &fl, &nf);
		if (status) {
			strv_free(&ranks);
			return status;
		}
		rc = tii_get_matrix_load(q->t, (const char *const *)ranks.v, ranks.n, fl, nf, flags, out);
		free(fl);
	} else {
		rc = tii_get_pattern_load(q->t, (const char *const *)ranks.v, ranks.n, pattern, q->load_bytes,
					  flags, out);
	}
	strv_free(&ranks);
	if (rc)
		return tq_fail(q, "load", rc);
	return EXIT_OK;
}

/* A link end's name: the switch's (topod's `switches`), else the job
 * host whose CA it is, else NULL. */
static const char *load_name(const struct swnames *sn, const tii_load_t *l, uint64_t g)
{
	const char *nm = tii_switch_name_of(sn->v, sn->n, g);
	for (size_t i = 0; !nm && g && i < l->nhostnames; i++)
		if (l->hostnames[i].guid == g)
			nm = l->hostnames[i].name;
	return nm;
}

static void json_name(FILE *o, const char *nm)
{
	if (nm)
		json_str(o, nm);
	else
		fputs("null", o);
}

static void json_link(FILE *o, const struct swnames *sn, const tii_load_t *l, const struct tii_load_link *k,
		      int first)
{
	fputs(first ? "{\"node\":" : ",{\"node\":", o);
	json_guid(o, k->guid);
	fputs(",\"name\":", o);
	json_name(o, load_name(sn, l, k->guid));
	fprintf(o, ",\"port\":%d,\"from\":%d,\"to\":%d,\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64, k->port, k->from,
		k->to, k->msgs, k->bytes);
}

/* --json: one object on one line. */
static void print_json(FILE *o, const struct swnames *sn, const tii_load_t *l, const char *pattern)
{
	fprintf(o, "{\"generation\":%" PRIu64 ",\"pattern\":", l->generation);
	json_str(o, pattern);
	fprintf(o, ",\"ranks\":%zu,\"hosts\":%zu,\"flows\":%" PRIu64 ",\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"intra_msgs\":%" PRIu64 ",\"intra_bytes\":%" PRIu64 ",\"failed_msgs\":%" PRIu64
		",\"failed_bytes\":%" PRIu64 ",\"max_msgs\":%" PRIu64 ",\"max_bytes\":%" PRIu64
		",\"max_hops\":%d,",
		l->nranks, l->nhosts, l->flows, l->msgs, l->bytes, l->intra_msgs, l->intra_bytes,
		l->failed_msgs, l->failed_bytes, l->max_msgs, l->max_bytes, l->max_hops);
	if (l->time_s < 0)
		fputs("\"time_s\":null,\"bottleneck\":null,", o);
	else if (!l->bottleneck_guid)
		fprintf(o, "\"time_s\":%.9g,\"bottleneck\":null,", l->time_s);
	else {
		fprintf(o, "\"time_s\":%.9g,\"bottleneck\":{\"node\":\"0x%016" PRIx64 "\",\"name\":", l->time_s,
			l->bottleneck_guid);
		json_name(o, load_name(sn, l, l->bottleneck_guid));
		fprintf(o, ",\"port\":%d,\"bps\":%" PRIu64 "},", l->bottleneck_port, l->bottleneck_bps);
	}
	fputs("\"tiers\":[", o);
	for (size_t i = 0; i < l->nlevels; i++) {
		const struct tii_load_level *v = &l->levels[i];
		fprintf(o, "%s{\"from\":%d,\"to\":%d,\"links\":%zu,\"used\":%zu,\"max_msgs\":%" PRIu64
			",\"max_bytes\":%" PRIu64 ",\"total_msgs\":%" PRIu64 ",\"total_bytes\":%" PRIu64,
			i ? "," : "", v->from, v->to, v->nlinks, v->nused, v->max_msgs, v->max_bytes,
			v->total_msgs, v->total_bytes);
		if (v->bound_msgs >= 0)
			fprintf(o, ",\"bound_msgs\":%" PRId64 ",\"bound_bytes\":%" PRId64 "}", v->bound_msgs,
				v->bound_bytes);
		else
			fputs(",\"bound_msgs\":null,\"bound_bytes\":null}", o);
	}
	fputs("],\"hops\":[", o);
	int first = 1;
	for (int h = 0; h <= TII_LOAD_HOPS_MAX; h++)
		if (l->hop_msgs[h]) {
			fprintf(o, "%s{\"hops\":%d,\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", first ? "" : ",", h,
				l->hop_msgs[h], l->hop_bytes[h]);
			first = 0;
		}
	fputs("],\"max\":[", o);
	for (size_t i = 0; i < l->nmax; i++) {
		const struct tii_load_max *m = &l->max[i];
		json_link(o, sn, l, &m->link, !i);
		fputs(",\"behind\":[", o);
		for (size_t k = 0; k < m->nbehind; k++) {
			if (k)
				fputc(',', o);
			json_str(o, m->behind[k]);
		}
		fputs("]}", o);
	}
	fputs("],\"links\":[", o);
	for (size_t i = 0; i < l->nlinks; i++) {
		json_link(o, sn, l, &l->links[i], !i);
		fputs(",\"head\":", o);
		json_guid(o, l->links[i].head);
		fputs(",\"head_name\":", o);
		json_name(o, load_name(sn, l, l->links[i].head));
		fputc('}', o);
	}
	fputs("]}\n", o);
}

/* "NAME (GUID)", or the GUID alone for an end without a name. */
static void text_end(FILE *o, const char *nm, uint64_t g)
{
	if (nm) {
		text_str(o, nm);
		fprintf(o, " (0x%016" PRIx64 ")", g);
	} else {
		fprintf(o, "0x%016" PRIx64, g);
	}
}

/* "NAME (GUID) port P F>T" of a link ("GUID:PORT F>T" without a name). */
static void text_link(FILE *o, const struct swnames *sn, const tii_load_t *l, const char *what,
		      const struct tii_load_link *k)
{
	const char *nm = load_name(sn, l, k->guid);
	fprintf(o, "%s ", what);
	text_end(o, nm, k->guid);
	if (nm)
		fprintf(o, " port %d ", k->port);
	else
		fprintf(o, ":%d ", k->port);
	lvl(o, k->from);
	fputc('>', o);
	lvl(o, k->to);
}

/* Text: the totals one per line, then tier, hops, max (and link) lines. */
static void print_text(const struct tq *q, const struct swnames *sn, FILE *o, const tii_load_t *l,
		       const char *pattern)
{
	fprintf(o, "generation %" PRIu64 "\npattern %s\nranks %zu\nhosts %zu\nflows %" PRIu64 "\nmsgs %" PRIu64
		"\nbytes %" PRIu64 "\nintra_msgs %" PRIu64 "\nintra_bytes %" PRIu64 "\nfailed_msgs %" PRIu64
		"\nfailed_bytes %" PRIu64 "\nmax_msgs %" PRIu64 "\nmax_bytes %" PRIu64 "\nmax_hops %d\n",
		l->generation, pattern, l->nranks, l->nhosts, l->flows, l->msgs, l->bytes, l->intra_msgs,
		l->intra_bytes, l->failed_msgs, l->failed_bytes, l->max_msgs, l->max_bytes, l->max_hops);
	/* the pattern posted at once, on the real routes and rates (cost model) */
	if (l->time_s < 0)
		fputs("time - (a loaded cable has no known rate)\n", o);
	else if (!l->bottleneck_guid)
		fprintf(o, "time %.3f us\n", l->time_s * 1e6);
	else {
		const char *nm = load_name(sn, l, l->bottleneck_guid);
		fprintf(o, "time %.3f us bottleneck ", l->time_s * 1e6);
		text_end(o, nm, l->bottleneck_guid);
		fprintf(o, nm ? " port %d at %.3g Gb/s\n" : ":%d at %.3g Gb/s\n", l->bottleneck_port,
			(double)l->bottleneck_bps / 1e9);
	}
	for (size_t i = 0; i < l->nlevels; i++) {
		const struct tii_load_level *v = &l->levels[i];
		fputs("tier ", o);
		lvl(o, v->from);
		fputc('>', o);
		lvl(o, v->to);
		fprintf(o, " links=%zu used=%zu max_msgs=%" PRIu64 " max_bytes=%" PRIu64 " total_msgs=%" PRIu64
			" total_bytes=%" PRIu64, v->nlinks, v->nused, v->max_msgs, v->max_bytes, v->total_msgs,
			v->total_bytes);
		if (v->bound_msgs >= 0)
			fprintf(o, " bound_msgs=%" PRId64 " bound_bytes=%" PRId64 "\n", v->bound_msgs, v->bound_bytes);
		else
			fputs(" bound_msgs=- bound_bytes=-\n", o);
	}
	for (int h = 0; h <= TII_LOAD_HOPS_MAX; h++)
		if (l->hop_msgs[h])
			fprintf(o, "hops %d msgs=%" PRIu64 " bytes=%" PRIu64 "\n", h, l->hop_msgs[h], l->hop_bytes[h]);
	for (size_t i = 0; i < l->nmax; i++) {
		const struct tii_load_max *m = &l->max[i];
		text_link(o, sn, l, "max", &m->link);
		fprintf(o, " msgs=%" PRIu64 " bytes=%" PRIu64 " behind=", m->link.msgs, m->link.bytes);
		for (size_t k = 0; k < m->nbehind; k++)
			fprintf(o, "%s%s", k ? "," : "", m->behind[k]);
		fputs(m->nbehind ? "\n" : "-\n", o);
	}
	if (q->load_links)
		for (size_t i = 0; i < l->nlinks; i++) {
			const struct tii_load_link *k = &l->links[i];
			text_link(o, sn, l, "link", k);
			fprintf(o, " %" PRIu64 " %" PRIu64 " ", k->msgs, k->bytes);
			text_end(o, load_name(sn, l, k->head), k->head);
			fputc('\n', o);
		}
}

/* --dot FILE ("-": stdout). */
static int save_dot(const struct tq *q, const tii_load_t *l, const char *title)
{
	FILE *d = strcmp(q->load_dot, "-") ? fopen(q->load_dot, "w") : stdout;
	if (!d) {
		fprintf(stderr, "topoquery: %s: %s\n", q->load_dot, strerror(errno));
		return EXIT_FAIL;
	}
	size_t dropped = 0;
	if (pic_load_dot(d, l, title, &dropped)) {
		fprintf(stderr, "topoquery: %s: out of memory\n", q->load_dot);
		/* picture.h promises nothing written: not an empty file */
		if (d != stdout) {
			fclose(d);
			unlink(q->load_dot);
		}
		return EXIT_ERROR;
	}
	if (dropped)
		fprintf(stderr, "topoquery: %s: the %d heaviest of %zu loaded links drawn (at most %d)\n",
			q->load_dot, PIC_DOT_LINKS_MAX, l->nlinks, PIC_DOT_LINKS_MAX);
	if (d != stdout && fclose(d)) {
		fprintf(stderr, "topoquery: %s: %s\n", q->load_dot, strerror(errno));
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

/* --plot FILE: picture.c draws it. */
static int plot(struct tq *q, const tii_load_t *l, const char *title)
{
	return pic_load_plot(q, l, title);
}

int cmd_load(struct tq *q, int argc, char **argv)
{
	if (argc < 1)
		return tq_usage_error("load: PATTERN HOSTS...");
	const char *pattern = argv[0];
	tii_load_t *l = NULL;
	int status = fetch_load(q, pattern, argc - 1, argv + 1, &l);
	if (status)
		return status;
	struct swnames sn = { 0 };
	swnames_get(q->t, &sn);
	if (q->json)
		print_json(q->out, &sn, l, pattern);
	else
		print_text(q, &sn, q->out, l, pattern);
	swnames_free(&sn);
	char title[200];
	snprintf(title, sizeof(title), "%s: %zu ranks on %zu hosts, generation %" PRIu64, pattern, l->nranks,
		 l->nhosts, l->generation);
	if (q->load_dot)
		status = save_dot(q, l, title);
	if (!status && q->plot)
		status = plot(q, l, title);
	tii_load_free(l);
	return status;
}
